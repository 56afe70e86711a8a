#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The built man pages pass `mandoc -T lint` (all levels, style included) without a message,
# and each page names every section a reader looks for.
set -u
: "${top_builddir:?}"
command -v mandoc >/dev/null 2>&1 || { echo "SKIP: mandoc is missing (Debian package mandoc)"; exit 77; }
rc=0
pages="thpshrink.8 thpshrinkd.8 thpshrink-oci-hook.8 thpshrink-policy.5 thpshrink-bloat.1"
# thpshrink-nri's page is built with the program, where configure found protobuf-c.
[ -x "$top_builddir/thpshrink-nri" ] && pages="$pages thpshrink-nri.8"
for p in $pages; do
	f=$top_builddir/man/$p
	[ -s "$f" ] || { echo "FAIL: $f was not built"; rc=1; continue; }
	out=$(mandoc -T lint "$f" 2>&1)
	if [ -n "$out" ]; then
		echo "$out"; echo "FAIL: mandoc -T lint $p"; rc=1
	else
		echo "ok: mandoc -T lint $p"
	fi
	for s in NAME SYNOPSIS DESCRIPTION 'SEE ALSO'; do
		grep -Eq "^\.SH \"?$s\"?\$" "$f" || { echo "FAIL: $p lacks section $s"; rc=1; }
	done
done
exit $rc
