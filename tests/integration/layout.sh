#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The source layout's rules (docs/design.md, Layout), checked on the tree and the programs built:
#   - controller/core includes nothing from the other folders (every "..." include it names
#     is a file of its own folder; the build's include paths enforce it too);
#   - no source folder holds more than 20 .c files;
#   - the OCI hook links no libmicrohttpd, libmnl, libsystemd nor libcgroup (ldd);
#   - controller/ and plugins/ are formatted as .clang-format says (clang-format --dry-run).
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
S=$top_srcdir
rc=0
fail() { echo "FAIL: $*"; rc=1; }

for f in "$S"/controller/core/*.[ch]; do
	grep -o '^#include "[^"]*"' "$f" | sed 's/#include "//; s/"$//' | while read -r h; do
		[ -f "$S/controller/core/$h" ] || echo "$(basename "$f") includes $h"
	done
done >"${TMPDIR:-/tmp}/thps-layout.$$"
if [ -s "${TMPDIR:-/tmp}/thps-layout.$$" ]; then
	fail "controller/core includes from outside core: $(tr '\n' ';' <"${TMPDIR:-/tmp}/thps-layout.$$")"
else
	echo "ok: controller/core includes only its own headers"
fi
rm -f "${TMPDIR:-/tmp}/thps-layout.$$"

for d in "$S"/controller/* "$S"/plugins/*; do
	[ -d "$d" ] || continue
	n=$(find "$d" -maxdepth 1 -name '*.c' | wc -l)
	[ "$n" -le 20 ] || fail "${d#"$S"/} holds $n .c files (at most 20)"
done
echo "ok: no source folder over 20 .c files"

hook=$top_builddir/thpshrink-oci-hook
if [ ! -x "$hook" ]; then
	fail "no $hook (build it first)"
elif ! command -v ldd >/dev/null; then
	echo "SKIP: ldd not found: the hook's link list is not checked"
else
	bad=$(ldd "$hook" | grep -E 'libmicrohttpd|libmnl|libsystemd|libcgroup' || true)
	[ -z "$bad" ] && echo "ok: thpshrink-oci-hook links $(ldd "$hook" | awk '/=>/{print $1}' | tr '\n' ' ')" ||
		fail "thpshrink-oci-hook links $bad"
fi

# No circle among the source folders' own files: a file's module is its name without .c/.h;
# "A includes B.h" is an edge A -> B; tsort refuses any loop, direct or through others (the
# daemon: manager -> pass -> records <- publish, never back).
for d in "$S"/controller/* "$S"/plugins/*; do
	[ -d "$d" ] || continue
	edges=$(for f in "$d"/*.[ch]; do
		[ -e "$f" ] || continue
		a=$(basename "$f"); a=${a%.*}
		sed -n 's/^#include "\([^"/]*\)\.h"/\1/p' "$f" | while read -r b; do
			[ -e "$d/$b.h" ] && [ "$b" != "$a" ] && echo "$a $b"
		done
	done)
	if [ -n "$edges" ] && ! loop=$(echo "$edges" | tsort 2>&1 >/dev/null); then
		fail "${d#"$S"/}: its files include each other in a circle: $(echo "$loop" | grep -v 'input contains a loop' | sed 's/^tsort: //' | tr '\n' ' ')"
	fi
done
[ $rc = 0 ] && echo "ok: no circle of includes in any source folder"

if ! command -v clang-format >/dev/null; then
	echo "SKIP: clang-format not installed (Debian package clang-format): formatting not checked"
else
	out=$(clang-format --dry-run -Werror "$S"/controller/*/*.[ch] "$S"/plugins/*/*.[ch] "$S"/plugins/*.c 2>&1)
	if [ -n "$out" ]; then
		fail "clang-format would change these files ($(clang-format --version | head -1)):"
		echo "$out" | grep -E '^[^ ].*(error|warning):' | cut -d: -f1 | sort -u | sed 's/^/  /'
	else
		echo "ok: controller/ and plugins/ formatted as .clang-format says"
	fi
fi
exit $rc
