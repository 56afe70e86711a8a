/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Advice to another process's memory through a pidfd: process_madvise(2). The exact give-back:
 * MADV_COLD on one page of a large folio covers the folio only in part, so the kernel splits it
 * (PMD-mapped: always; PTE-mapped: since 6.10 only when the advice covers part of it, before
 * that always); since 6.12 every split of an anonymous folio maps its zero subpages to the
 * shared zero page, and on every kernel a split frees the subpages no process maps. It needs
 * CAP_SYS_NICE (and PTRACE_MODE_READ on the target), no debugfs, and works under lockdown.
 * The kernel skips a folio mapped by more than one process or whose lock is busy, and says
 * nothing: callers check the folio afterwards. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "context.h"

#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* Opens a pidfd for pid and checks, after opening, that pid still names the process that
 * started at starttime (field 22 of /proc/PID/stat): a pidfd opened on a reused pid refers to
 * the new process, and the check makes sure it is the one the scan saw. Returns the fd, -ESRCH
 * when the process exited or the pid is another process now, -ENOSYS without pidfd_open, or
 * -errno. */
int thps_pidfd_open(const struct thps_ctx *ctx, pid_t pid, uint64_t starttime);

/* Advises `advice` on len bytes at each of addrs[0..n) of the process behind pidfd, in calls of
 * up to THPS_PMADV_BATCH iovecs. A short return names the iovec that failed: it is retried
 * alone to learn its errno and the rest go on. err[i] gets 0 or -errno for addrs[i].
 * Returns how many were advised without error, or -errno when the process cannot be advised at
 * all (-ESRCH gone, -EPERM without CAP_SYS_NICE, -EACCES no ptrace access, -ENOSYS, -EINVAL
 * advice not allowed on another process on this kernel); err is then untouched. */
#define THPS_PMADV_BATCH 1024u
int thps_pmadvise(int pidfd, int advice, const uint64_t *addrs, size_t n, uint64_t len, int *err);

/* Whether this process may advise others: CAP_SYS_NICE in its effective set. Returns 1, 0 (why
 * says what is missing) or -errno. */
int thps_pmadvise_allowed(const struct thps_ctx *ctx, char *why, size_t size);
