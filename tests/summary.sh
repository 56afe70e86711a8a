#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# summary.sh BUILDDIR — one closing line over every suite that ran: the automake .trs results
# and the VM/benchmark result files (tests/*/results/*.result with "PASS|FAIL|SKIP name").
b=${1:-.}
p=$(cat $(find "$b" -name '*.trs' 2>/dev/null) /dev/null | grep -c '^:test-result: PASS')
f=$(cat $(find "$b" -name '*.trs' 2>/dev/null) /dev/null | grep -c '^:test-result: \(FAIL\|ERROR\)')
s=$(cat $(find "$b" -name '*.trs' 2>/dev/null) /dev/null | grep -c '^:test-result: SKIP')
for r in $(find "$b/tests" -maxdepth 3 -name '*.result' 2>/dev/null); do
	p=$((p + $(grep -c '^PASS ' "$r")))
	f=$((f + $(grep -c '^FAIL ' "$r")))
	s=$((s + $(grep -c '^SKIP ' "$r")))
done
echo "check-all: $p passed, $f failed, $s skipped"
[ "$f" = 0 ]
