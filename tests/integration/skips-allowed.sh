#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/tools/skips-check.sh on made-up runs: a skip the list names passes with CI=true, one it
# does not name fails and prints the line to add, a whole VM kernel skipped fails even when
# listed; without CI=true every skip is only listed. Then the committed list parses.
set -u
src=${top_srcdir:-..}
chk=$src/tests/tools/skips-check.sh
. "$src/tests/integration/lib.sh"
thps_tmpdir skips

# run NAME WANT_RC CI LIST DIR: the checker's status must be WANT_RC; its output in $T/out
run() {
	local name=$1 want=$2 ci=$3 rc
	CI=$ci bash "$chk" -l "$4" "$5" > "$T/out" 2>&1
	rc=$?
	if [ "$rc" = "$want" ]; then pass "$name: status $rc"; else
		flunk "$name: status $rc, expected $want:"; sed 's/^/    /' "$T/out"
	fi
}

# A build tree: a skipped test, a passing one with a skipped leg and a Check case that said
# SKIP, a passing one with no skip; a VM result with one skipped check.
B=$T/build
mkdir -p "$B/tests/integration" "$B/tests/unit" "$B/tests/vm/results"
printf ':test-result: SKIP\n' > "$B/tests/integration/a.trs"
printf 'SKIP: promtool is missing (Debian package prometheus)\n' > "$B/tests/integration/a.log"
printf ':test-result: PASS\n' > "$B/tests/integration/b.trs"
printf 'ok: one\nD: SKIP read-only part: no unshare here\nok: two\n' > "$B/tests/integration/b.log"
printf ':test-result: PASS\n' > "$B/tests/unit/check-x.trs"
printf 'SKIP: test_root_only: needs root to own and chown files\n100%%: Checks: 3\n' > "$B/tests/unit/check-x.log"
printf ':test-result: PASS\n' > "$B/tests/integration/c.trs"
printf 'ok: nothing skipped\n  SKIP indented text is not a skip\n' > "$B/tests/integration/c.log"
printf 'PASS vm.boot x\nSKIP exact.page-cache no hot file over 9p\nPASS exact.y z\n' > "$B/tests/vm/results/k612.result"

cat > "$T/all.txt" <<'EOF'
# every skip above
tests/integration/a:promtool is missing* -- no promtool in the CI image
tests/integration/b:D -- no mount namespace on CI
tests/unit/check-x:test_root_only -- CI runs as root; kept for the test
*:exact:page-cache -- the 9p transport is a module the boot may lack
EOF
run listed 0 true "$T/all.txt" "$B"
out_has "listed: four skips counted" "skips: 4 total, 0 not listed"
out_has "listed: the reason shown" "SKIP k612:exact:page-cache (listed: the 9p transport"
grep -q 'indented' "$T/out" && flunk "an indented SKIP text was taken for a skip" || pass "indented text ignored"

grep -v 'check-x' "$T/all.txt" > "$T/some.txt"
run unlisted-ci 1 true "$T/some.txt" "$B"
out_has "unlisted-ci: names the list file" "not allowed by $T/some.txt"
out_has "unlisted-ci: the exact line to add" "tests/unit/check-x:test_root_only -- test_root_only: needs root to own and chown files"
echo 'tests/unit/check-x:test_root_only -- test_root_only: needs root to own and chown files' >> "$T/some.txt"
run line-added 0 true "$T/some.txt" "$B"
: > "$T/empty.txt"
run unlisted-no-ci 0 "" "$T/empty.txt" "$B"
out_has "unlisted-no-ci: listed in the summary" "SKIP tests/integration/a:promtool is missing (Debian package prometheus) (NOT LISTED)"

# The line to add escapes glob characters, so it names exactly that skip.
printf 'SKIP: [x] star* here\n' > "$B/tests/integration/a.log"
run glob-ci 1 true "$T/empty.txt" "$B"
out_has "glob: escaped" 'tests/integration/a:\[x\] star\* here -- [x] star* here'

# A whole kernel skipped: a failure with CI=true though a pattern matches it.
V=$T/vm
mkdir -p "$V/results"
printf 'SKIP vm.k73 qemu-system-x86_64 not installed (package qemu-system-x86)\n' > "$V/results/k73.result"
printf '* -- everything\n' > "$T/star.txt"
run kernel-ci 1 true "$T/star.txt" "$V"
out_has "kernel-ci: says why" "kernel k73 was skipped as a whole"
run kernel-no-ci 0 "" "$T/star.txt" "$V"

printf 'tests/integration/a:x\n' > "$T/bad.txt"
run no-reason 2 true "$T/bad.txt" "$B"

# The committed list parses (a malformed line is status 2 whatever the runs left).
mkdir -p "$T/none"
run committed-list 0 true "$src/tests/skips-allowed.txt" "$T/none"

echo "skips-allowed: $fails failure(s)"
[ $fails -eq 0 ]
