#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# summary.sh BUILDDIR — one closing line over every suite that ran: the automake .trs results
# and the VM/benchmark result files (tests/*/results/*.result with "PASS|FAIL|SKIP name"), then
# every skip (tests/tools/skips-check.sh: whole tests, "SKIP:" lines inside passing ones, VM
# checks). Fails on a FAIL, and with CI=true on a skip tests/skips-allowed.txt does not list.
b=${1:-.}
here=$(cd "$(dirname "$0")" && pwd)
p=$(cat $(find "$b" -name '*.trs' 2>/dev/null) /dev/null | grep -c '^:test-result: PASS')
f=$(cat $(find "$b" -name '*.trs' 2>/dev/null) /dev/null | grep -c '^:test-result: \(FAIL\|ERROR\)')
for r in $(find "$b/tests" -maxdepth 3 -name '*.result' 2>/dev/null); do
	p=$((p + $(grep -c '^PASS ' "$r")))
	f=$((f + $(grep -c '^FAIL ' "$r")))
done
skips=$(bash "$here/tools/skips-check.sh" "$b")
src=$?
[ $src -le 1 ] || { echo "$skips"; echo "check-all: the skip check failed (status $src)"; exit 1; }
s=$(printf '%s\n' "$skips" | sed -n 's/^skips: \([0-9]*\) total.*/\1/p')
echo "check-all: $p passed, $f failed, $s skipped"
printf '%s\n' "$skips"
# the failures last, so that the tail of a long log (all CI keeps) names them
if [ "$f" != 0 ]; then
	echo "check-all: the $f failures:"
	for t in $(grep -l '^:test-result: \(FAIL\|ERROR\)' $(find "$b" -name '*.trs' 2>/dev/null) /dev/null); do
		echo "  FAIL ${t%.trs} (see ${t%.trs}.log)"
	done
	for r in $(find "$b/tests" -maxdepth 3 -name '*.result' 2>/dev/null); do
		grep '^FAIL ' "$r" | cut -c1-300 | sed "s|^|  $(basename "$r" .result): |"
	done
fi
[ "$f" = 0 ] && [ $src = 0 ]
