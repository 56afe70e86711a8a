#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Host integration test of the scanner source: a real process (thpshrink-bloat) with a
# known utilization mix must give exactly that histogram, partly mapped THPs must be seen,
# and a process exiting mid-scan must be counted as skipped, not fail the scan.
# Needs root (kpageflags, kpagecgroup) and THP mode madvise or always; skips otherwise.
set -u
THPS_KILL=pids
. "$top_srcdir/tests/integration/lib.sh"
b=$top_builddir
dump=$b/tests/tools/scan-dump
bloat=$BLOAT
pids=""
thps_tmpdir scanner-host
tmp=$T

[ "$(id -u)" = 0 ] || skip "needs root to read /proc/kpageflags and /proc/kpagecgroup"
[ -r /proc/kpageflags ] || skip "/proc/kpageflags is not readable"
grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null &&
	skip "THP mode is never"
[ -r /sys/kernel/mm/transparent_hugepage/hpage_pmd_size ] || skip "kernel without THP"
[ "$(cat /sys/kernel/mm/transparent_hugepage/hpage_pmd_size)" = 2097152 ] ||
	skip "the expected figures assume 2 MiB THPs of 4 KiB pages"

# start_bloat NAME ARGS...: starts thpshrink-bloat, waits for READY, sets $pid and $line
start_bloat() {
	name=$1; shift
	"$bloat" "$@" --ready-file "$tmp/$name.ready" >"$tmp/$name.out" 2>&1 &
	pid=$!
	pids="$pids $pid"
	i=0
	while [ ! -s "$tmp/$name.ready" ]; do
		kill -0 "$pid" 2>/dev/null || fail "thpshrink-bloat $*: exited: $(cat "$tmp/$name.out")"
		i=$((i + 1)); [ $i -lt 300 ] || fail "thpshrink-bloat $*: no READY in 30 s"
		sleep 0.1
	done
	line=$(cat "$tmp/$name.ready")
}
field() { echo "$line" | sed -n "s/.* $1=\([0-9a-fx]*\).*/\1/p"; }

# 1. the mix: 20 empty THPs, 4 with 51 utilized subpages (bucket 0), 4 with 52 (bucket 1),
#    10 full, and 2 THPs of which only 100 subpages stay mapped
start_bloat mix --mix 0:20,51:4,52:4,512:10 --partial 100:2
mixpid=$pid
thps=$(field thps); backed=$(field thp_backed)
[ "$backed" = 38 ] ||
	skip "the host gave $backed of 38 whole THPs (thps=$thps; fragmented memory?): $line"

expect="bucket 0 thps 24 zero 12084
bucket 1 thps 4 zero 1840
bucket 2 thps 0 zero 0
bucket 3 thps 0 zero 0
bucket 4 thps 0 zero 0
bucket 5 thps 0 zero 0
bucket 6 thps 0 zero 0
bucket 7 thps 0 zero 0
bucket 8 thps 0 zero 0
bucket 9 thps 10 zero 0"
for mode in "" --pagemap; do
	"$dump" --pid "$mixpid" --ranges $mode >"$tmp/dump" 2>&1 || fail "scan-dump $mode: $(cat "$tmp/dump")"
	got=$(grep '^bucket' "$tmp/dump")
	[ "$got" = "$expect" ] || fail "scan-dump $mode histogram:
$got
expected:
$expect"
	summary=$(grep '^summary' "$tmp/dump")
	echo "$mode $summary"
	case "$summary" in
	*"procs_scanned 1 procs_skipped 0 thps 38 shared 0 partial 2 bytes_read 79691776 "*) ;;
	*) fail "scan-dump $mode summary: $summary" ;;
	esac
	want_method=PAGEMAP_SCAN; [ "$mode" = --pagemap ] && want_method=pagemap
	case "$summary" in
	*"method $want_method") ;;
	*) [ "$want_method" = PAGEMAP_SCAN ] && echo "note: kernel without PAGEMAP_SCAN: $summary" ||
		fail "method: $summary" ;;
	esac
	# 2 partial THPs × 412 unmapped subpages × 4 KiB
	grep -q "^cgroup .* thps 38 partial 2 unmapped_bytes 3375104$" "$tmp/dump" ||
		fail "cgroup line: $(grep '^cgroup' "$tmp/dump")"
	n=$(grep -c "^range pid $mixpid " "$tmp/dump")
	[ "$n" = 24 ] || fail "expected 24 low-utilization ranges, got $n"
done
# --all-ranges (70-node follows the well-used THPs with it): every whole THP, each at a THP-
# aligned address with a THP-aligned head frame; the 10 full ones with 512 of 512 utilized
"$dump" --pid "$mixpid" --all-ranges >"$tmp/dump" 2>&1 || fail "scan-dump --all-ranges: $(cat "$tmp/dump")"
n=0 bad=0 full=0
while read -r _ _ p _ a _ u _ sz _ f; do
	[ "$p" = "$mixpid" ] || continue
	n=$((n + 1))
	[ $((a % 2097152)) = 0 ] && [ $((f % 512)) = 0 ] && [ "$sz" = 512 ] || bad=$((bad + 1))
	[ "$u" != 512 ] || full=$((full + 1))
done <<EOF
$(grep '^range ' "$tmp/dump")
EOF
got="$n $bad $full"
[ "$got" = "38 0 10" ] || fail "--all-ranges: ranges, misaligned, full = $got (expected 38 0 10): $(grep -m3 '^range' "$tmp/dump")"

# 2. the cgroup filter: the process's own memory cgroup (v1 here, v2 in the VM) and a
#    missing one
cg=$(awk -F: '$2 == "memory" || ($1 == "0" && $2 == "") { print $3; exit }' /proc/$mixpid/cgroup)
if [ -n "$cg" ]; then
	"$dump" --pid "$mixpid" --cgroup "$cg" >"$tmp/dump" 2>&1 || fail "--cgroup $cg: $(cat "$tmp/dump")"
	grep -q '^summary procs_scanned 1 procs_skipped 0 thps 38 ' "$tmp/dump" ||
		fail "--cgroup $cg: $(grep '^summary' "$tmp/dump")"
	"$dump" --pid "$mixpid" --cgroup "/thpshrink-no-such-cgroup-$$" >"$tmp/dump" 2>&1 &&
		fail "--cgroup of a missing cgroup succeeded"
	grep -q "No such file" "$tmp/dump" || fail "missing cgroup error: $(cat "$tmp/dump")"
fi

# 3. a process exiting mid-scan: throttled to 20 THPs/s, 60 THPs take 3 s; kill it after 1 s
start_bloat exit --mix 512:60
exitpid=$pid
"$dump" --pid "$exitpid" --max-thps-per-sec 20 >"$tmp/dump" 2>&1 &
dumppid=$!
sleep 1
kill -KILL "$exitpid"
wait "$dumppid" || fail "scan-dump failed when the process exited mid-scan: $(cat "$tmp/dump")"
summary=$(grep '^summary' "$tmp/dump")
echo "exit mid-scan: $summary"
case "$summary" in
*"procs_scanned 0 procs_skipped 1 "*) ;;
*) fail "exit mid-scan not counted as skipped: $summary" ;;
esac
case "$summary" in
*" throttled_ns 0 "*) fail "throttling never slept: $summary" ;;
esac
echo "PASS"
