#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Faults thpshrink meets on a host, against the real programs:
#  A. /proc/kpageflags missing (a proc root of links to the real /proc without it): report
#     (text and JSON) exits 1 with a message naming the file, prints no partial report, no crash;
#  B. debugfs missing, and present but read-only (a bind mount in a private mount namespace):
#     probe says the split is out of reach and why, exit 0;
#  C. processes that exit, exec or unmap THP memory while scanned: every report still exits 0
#     with valid JSON, and a --pid of a process that execs mid-scan ends cleanly (0 or 1 with a
#     message), never by a signal.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
CLI=$top_builddir/thpshrink
TOOL=$top_builddir/tests/tools/thpshrink-secret
PY=/usr/bin/python3

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok: $*"; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (kpageflags, other processes' pagemap)"
[ -x "$CLI" ] && [ -x "$TOOL" ] || { echo "FAIL: programs not built"; exit 1; }

T=$(mktemp -d /tmp/thps-faults.XXXXXX)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

# A. No kpageflags.
mkdir "$T/proc"
for e in /proc/*; do
	b=${e#/proc/}
	case $b in kpageflags|kpagecgroup) continue ;; esac
	ln -s "$e" "$T/proc/$b"
done
for fmt in "" --json; do
	THPSHRINK_PROC_ROOT=$T/proc "$CLI" report $fmt >"$T/a.out" 2>"$T/a.err"
	rc=$?
	if [ $rc = 1 ] && grep -q "kpageflags" "$T/a.err" && [ ! -s "$T/a.out" ]; then
		pass "A: no kpageflags, report $fmt: exit 1, '$(cat "$T/a.err")'"
	else
		fail "A: no kpageflags, report $fmt: exit $rc, stderr '$(cat "$T/a.err")', $(wc -c <"$T/a.out") bytes out"
	fi
done

# B. debugfs missing, then read-only.
probe_split() { # DEBUGFS_ROOT EXPECTED-STATE
	THPSHRINK_DEBUGFS_ROOT=$1 "$CLI" probe >"$T/b.out" 2>&1
	rc=$?
	line=$(grep 'debugfs.split_huge_pages' "$T/b.out" | head -1)
	case "$line" in
	"--"*"$2"*) [ $rc = 0 ] && pass "B: probe with $3: '$(echo $line)'" || fail "B: probe with $3: exit $rc" ;;
	*) fail "B: probe with $3: expected '-- ... $2', got '$line' (exit $rc)" ;;
	esac
}
probe_split "$T/nodebugfs" "unreachable" "no debugfs"
mkdir -p "$T/debug"
: >"$T/debug/split_huge_pages"
if command -v unshare >/dev/null && unshare --mount --propagation private true 2>/dev/null; then
	unshare --mount --propagation private sh -c '
		mount --bind "$1/debug" "$1/debug" && mount -o remount,bind,ro "$1/debug" &&
		THPSHRINK_DEBUGFS_ROOT=$1/debug "$2" probe' _ "$T" "$CLI" >"$T/b.out" 2>&1
	rc=$?
	line=$(grep 'debugfs.split_huge_pages' "$T/b.out" | head -1)
	case "$line" in
	"--"*"not writable"*) [ $rc = 0 ] && pass "B: read-only debugfs: '$(echo $line)'" || fail "B: read-only debugfs: exit $rc" ;;
	*) fail "B: read-only debugfs: got '$line' (exit $rc): $(tail -3 "$T/b.out")" ;;
	esac
else
	echo "note: B: no private mount namespace here (unshare), read-only debugfs not tried"
fi

# C. Processes changing under the scan.
grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null && skip "THP mode is [never]"
for k in 1 2 3; do
	"$TOOL" --churn >/dev/null 2>&1 &
	pids="$pids $!"
done
bad=0 runs=0
for round in 1 2 3 4 5 6; do
	# short-lived THP holders that exec or exit while the report runs
	for ms in 0 20 60 150; do
		echo 0123456789abcdef0123456789abcdef | "$TOOL" --thps 8 --exec-after $ms /bin/sleep 0.3 >/dev/null 2>&1 &
		pids="$pids $!"
	done
	echo 0123456789abcdef0123456789abcdef | "$TOOL" --thps 8 --exec-after 30 /bin/true >/dev/null 2>&1 &
	epid=$!
	pids="$pids $epid"
	"$CLI" report --json >"$T/c.json" 2>"$T/c.err"
	rc=$?
	runs=$((runs + 1))
	if [ $rc != 0 ] || ! $PY -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/c.json" 2>/dev/null; then
		fail "C: round $round: report exit $rc, stderr '$(head -3 "$T/c.err")'"
		bad=$((bad + 1))
	fi
	"$CLI" report --pid "$epid" >"$T/p.out" 2>"$T/p.err"
	rc=$?
	[ $rc -le 1 ] || { fail "C: round $round: report --pid of an exec'ing process: exit $rc"; bad=$((bad + 1)); }
	[ $rc = 1 ] && ! [ -s "$T/p.err" ] && { fail "C: round $round: exit 1 without a message"; bad=$((bad + 1)); }
	wait $epid 2>/dev/null
done
[ $bad = 0 ] && pass "C: $runs reports over churning, exec'ing and exiting THP processes: all exit 0 with valid JSON; --pid of an exec'ing one ends cleanly"
[ $fails = 0 ] || exit 1
exit 0
