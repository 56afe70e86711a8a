/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Forced into every Check suite's compile when configure found no Check (mk/tools.am), so that
 * the targets building the suites outside `make check` (check-vm, check-ship, check-valgrind)
 * also stop naming the package, before the compiler's "check.h: No such file". */
#error "Check (libcheck) was not found by configure: install the Debian package 'check'"
