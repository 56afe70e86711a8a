#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Host integration test of the vmstat source (and of the debugfs source's refusal): a real
# process (thpshrink-bloat) with 8 THPs; the source's /proc/vmstat counters must lie between
# two reads of the file around it, absent counters must be reported absent, and the
# process's memory cgroup (v2 anon_thp, or v1 total_rss_huge, read only) must hold its THPs.
set -u
THPS_KILL=pid
. "$top_srcdir/tests/integration/lib.sh"
b=$top_builddir
dump=$b/tests/tools/ksrc-dump
bloat=$BLOAT
pid=""
thps_tmpdir vmstat-host
tmp=$T
failed=0
bad() { echo "FAIL: $*"; failed=1; }

[ "$(id -u)" = 0 ] || skip "needs root to read /proc/kpageflags and /proc/kpagecgroup (the scanner finds the cgroups)"
grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null && skip "THP mode is never"
[ "$(cat /sys/kernel/mm/transparent_hugepage/hpage_pmd_size 2>/dev/null)" = 2097152 ] ||
	skip "the expected figures assume 2 MiB THPs"

"$bloat" --mix 1:8 --ready-file "$tmp/ready" > "$tmp/bloat.log" 2>&1 &
pid=$!
i=0; while [ ! -s "$tmp/ready" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$tmp/ready" ] || { echo "FAIL: thpshrink-bloat never got ready: $(cat "$tmp/bloat.log")"; exit 1; }
backed=$(sed -n 's/.*thp_backed=\([0-9]*\).*/\1/p' "$tmp/ready")
[ "${backed:-0}" -ge 1 ] || skip "the kernel gave thpshrink-bloat no THP (thp_backed=$backed)"

cp /proc/vmstat "$tmp/before"
"$dump" --pid "$pid" > "$tmp/dump" 2> "$tmp/dump.err" || bad "ksrc-dump exited $?: $(cat "$tmp/dump.err")"
cp /proc/vmstat "$tmp/after"
n=0
for key in thp_split_page thp_split_page_failed thp_deferred_split_page thp_underused_split_page \
	thp_split_pmd thp_collapse_alloc thp_split_free thp_split_unmap; do
	got=$(awk -v k="$key" '$1=="vmstat" && $2==k {print $3}' "$tmp/dump")
	lo=$(awk -v k="$key" '$1==k {print $2}' "$tmp/before")
	hi=$(awk -v k="$key" '$1==k {print $2}' "$tmp/after")
	if [ -z "$lo" ]; then
		[ "$got" = absent ] || bad "$key: not in /proc/vmstat but the source says '$got'"
	elif [ "$got" = absent ] || [ -z "$got" ] || [ "$got" -lt "$lo" ] || [ "$got" -gt "$hi" ]; then
		bad "$key: source says '$got', /proc/vmstat went $lo -> $hi"
	else
		n=$((n + 1))
	fi
done
[ $n -ge 5 ] || bad "only $n THP counters found in /proc/vmstat"

# The process's memory cgroup: v2 "0::/path", or v1 "N:...memory...:/path".
cg=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' "/proc/$pid/cgroup")
[ -n "$cg" ] || cg=$(awk -F: '$1=="0" {print $3}' "/proc/$pid/cgroup")
line=$(awk -v p="$cg" '$1=="cgroup" && $2==p' "$tmp/dump")
if [ -z "$line" ]; then
	bad "no line for the process's cgroup '$cg' in: $(grep ^cgroup "$tmp/dump" | head -3)"
else
	set -- $line
	want=$((backed * 2097152))
	[ "$4" = 1 ] || bad "cgroup $cg: memory figures not read ($line)"
	[ "$8" -ge "$want" ] || bad "cgroup $cg: anon_thp $8 < the process's $backed THPs ($want bytes)"
	[ "$6" -ge "$8" ] || bad "cgroup $cg: memory charged $6 < its THP bytes $8"
fi

if [ ! -e /sys/kernel/debug/thp_utilization ]; then
	grep -q '^debugfs unusable not usable: ' "$tmp/dump" || bad "debugfs source does not say why it is unusable"
fi
[ $failed = 0 ] && echo "vmstat source: $n counters within /proc/vmstat's, cgroup $cg: $line"
exit $failed
