#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The build needs what the programs need (configure.ac, mk/tools.am, mk/ship.am): on a machine
# without Check, scdoc and protobuf-c, simulated by a pkg-config directory without check.pc and
# libprotobuf-c.pc, ac_cv_path_SCDOC=no and ac_cv_path_PROTOC_C=no,
# configure succeeds, `make` would build the programs and no man page, and the targets that
# need the tools stop at once naming the Debian package; thpshrink-nri alone is left out, said so. A full build of the programs is the
# rest of `make check`'s job; here `make -n` shows what `make` would do, and one program
# (thpshrink-bloat, libc only) is really built.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
T=$(mktemp -d /tmp/thps-buildopt.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

[ -x "$top_srcdir/configure" ] || fail "no configure in $top_srcdir (run autogen.sh)"
# configure refuses a second build directory of a source tree configured in place.
[ ! -e "$top_srcdir/config.status" ] ||
	{ echo "SKIP: $top_srcdir is configured in place: no second build directory possible"; exit 77; }
# Every .pc file the build would see, but check.pc and libprotobuf-c.pc.
mkdir "$T/pc" "$T/b"
for d in $(pkg-config --variable pc_path pkg-config | tr : ' '); do
	[ -d "$d" ] || continue
	for pc in "$d"/*.pc; do
		[ -e "$pc" ] && [ "${pc##*/}" != check.pc ] && [ "${pc##*/}" != libprotobuf-c.pc ] && [ ! -e "$T/pc/${pc##*/}" ] && ln -s "$pc" "$T/pc/"
	done
done
[ -e "$T/pc/json-c.pc" ] || fail "json-c.pc not found in pkg-config's path: the host lacks libjson-c-dev"

cd "$T/b" || exit 1
PKG_CONFIG_LIBDIR="$T/pc" ac_cv_path_SCDOC=no ac_cv_path_PROTOC_C=no "$top_srcdir/configure" >"$T/configure.log" 2>&1 ||
	{ tail -5 "$T/configure.log"; fail "configure stopped without Check and scdoc"; }
grep -q "WARNING: Check not found:.*install the Debian package 'check'" "$T/configure.log" ||
	fail "configure does not say Check is missing"
grep -q "WARNING: scdoc not found:.*install the Debian package 'scdoc'" "$T/configure.log" ||
	fail "configure does not say scdoc is missing"
grep -q "WARNING: libprotobuf-c or protoc-c not found: thpshrink-nri .*install the Debian packages 'libprotobuf-c-dev' and 'protobuf-c-compiler'" \
	"$T/configure.log" || fail "configure does not say thpshrink-nri is left out and why"

# `make` builds the programs and no man page.
make -n all >"$T/all.n" 2>&1 || { tail -5 "$T/all.n"; fail "make -n all fails"; }
for p in thpshrink thpshrinkd thpshrink-oci-hook thpshrink-bloat; do
	grep -q -- "-o $p " "$T/all.n" || fail "make would not link $p"
done
! grep -q 'scdoc\|man/thpshrink' "$T/all.n" || fail "make would build man pages without scdoc"
! grep -q 'protoc-c\|thpshrink-nri' "$T/all.n" || fail "make would build thpshrink-nri without protobuf-c"
make thpshrink-bloat >"$T/bloat.log" 2>&1 && [ -x thpshrink-bloat ] ||
	{ tail -5 "$T/bloat.log"; fail "thpshrink-bloat does not build"; }

# `make check` stops before building anything else, naming the package.
rm -f thpshrink-bloat; find . -name "*.o" -delete
make -j2 check >"$T/check.log" 2>&1 && fail "make check passed without Check"
grep -q "Check (libcheck) was not found.*install the Debian package 'check'" "$T/check.log" ||
	{ tail -5 "$T/check.log"; fail "make check's message does not name the package"; }
[ -z "$(find . -name '*.o' | head -1)" ] || fail "make check compiled before stopping: $(find . -name '*.o' | head -3)"
# So do the targets that build a Check suite outside `make check` (check-vm, check-valgrind).
make tests/unit/check-core >"$T/suite.log" 2>&1 && fail "a Check suite built without Check"
grep -q "error:.*Check (libcheck) was not found.*install the Debian package 'check'" "$T/suite.log" ||
	{ tail -5 "$T/suite.log"; fail "building a Check suite does not name the package"; }

# `make man` stops naming scdoc; `make install` installs the data without man pages and says so.
make man >"$T/man.log" 2>&1 && fail "make man passed without scdoc"
grep -q "cannot build man/.*install the Debian package 'scdoc'" "$T/man.log" ||
	{ tail -5 "$T/man.log"; fail "make man's message does not name the package"; }
make install-data DESTDIR="$T/dest" >"$T/install.log" 2>&1 || { tail -5 "$T/install.log"; fail "make install-data fails"; }
grep -q "man pages not installed: scdoc was not found" "$T/install.log" || fail "make install does not say the man pages are missing"
[ -z "$(find "$T/dest" -path '*/man/*' | head -1)" ] || fail "man pages installed without scdoc"
[ -n "$(find "$T/dest" -name 00-default-observe.json | head -1)" ] || fail "make install-data installed no default policy"
# --enable-nri insists: configure stops, naming the packages.
mkdir "$T/b2" && cd "$T/b2" || exit 1
PKG_CONFIG_LIBDIR="$T/pc" ac_cv_path_SCDOC=no ac_cv_path_PROTOC_C=no "$top_srcdir/configure" --enable-nri \
	>"$T/configure-nri.log" 2>&1 && fail "configure --enable-nri passed without protobuf-c"
grep -q "error: --enable-nri: .*install the Debian packages 'libprotobuf-c-dev' and 'protobuf-c-compiler'" \
	"$T/configure-nri.log" || { tail -3 "$T/configure-nri.log"; fail "configure --enable-nri does not name the packages"; }

echo "PASS: without Check, scdoc and protobuf-c: configure warns, make builds the programs but thpshrink-nri, make check / make man stop naming the packages, --enable-nri stops configure"
