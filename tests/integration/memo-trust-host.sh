#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Host integration test of the scan memo trusting the mapping (controller/pages/memo.h): the
# real PAGEMAP_SCAN ioctl on this host's kernel, real THPs of a thpshrink-bloat process, the
# real daemon, observe-only. With PAGEMAP_SCAN (Linux 6.7+), steady passes carry most full THPs
# by their huge run alone (status.json scan.folios_trusted) with the same figures as the first,
# exact pass, and the daemon says once which way it finds them; without it, nothing is trusted.
# Runs in a PID namespace of its own (as bench-scale does): the passes then walk only this
# test's processes, whose counts it knows; nothing outside the namespace changes.
set -u
THPS_KILL="DPID BPID"
. "$top_srcdir/tests/integration/lib.sh"
need_root "pagemap PFNs, /proc/kpageflags and kpagecgroup"
need_built "$D" "$BLOAT"
grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null && skip "THP mode is never"
[ "$(cat /sys/kernel/mm/transparent_hugepage/hpage_pmd_size 2>/dev/null)" = 2097152 ] ||
	skip "the expected figures assume 2 MiB THPs"
if [ -z "${MEMO_TRUST_INNER:-}" ]; then
	unshare --pid --fork --mount-proc true 2>/dev/null ||
		skip "no PID namespace (unshare --pid --mount-proc refused): the host's other processes would be walked too"
	exec unshare --pid --fork --mount-proc env MEMO_TRUST_INNER=1 sh "$0"
fi
BPID=
thps_tmpdir memo-trust
mkdir -p "$T/pol"

# 4 THPs with 8 of 512 subpages used (candidates: read every pass), 16 full (carried)
"$BLOAT" --mix 8:4,512:16 --ready-file "$T/bloat.ready" --seconds 300 >"$T/bloat.out" 2>&1 &
BPID=$!
i=0
while [ ! -s "$T/bloat.ready" ]; do
	kill -0 "$BPID" 2>/dev/null || fail "thpshrink-bloat exited: $(cat "$T/bloat.out")"
	i=$((i + 1)); [ $i -lt 300 ] || fail "thpshrink-bloat: no READY in 30 s"
	sleep 0.1
done
backed=$(sed -n 's/.* thp_backed=\([0-9]*\).*/\1/p' "$T/bloat.ready")
[ "$backed" = 20 ] || skip "the host gave $backed of 20 whole THPs (fragmented memory?)"

"$D" --listen none --policy-dir "$T/pol" --state-dir "$T/state" --textfile "$T/m.prom" \
	--interval 1 --cgroup "$(my_cgroup)" -v >"$T/daemon.log" 2>&1 &
DPID=$!
prom() { awk -v k="$1" '$1 == k { print $2 }' "$T/m.prom" 2>/dev/null; }
scanned() { sed -n 's/.*"folios_trusted": *\([0-9]*\).*/\1/p' "$T/state/status.json"; }
# the figures a pass gives: THPs counted per bucket, summed over cgroups
figures() {
	awk '/^thpshrink_cgroup_thps\{/ { b = $1; sub(/.*bucket="/, "", b); sub(/".*/, "", b); n[b] += $2 }
		END { for (b in n) print b, n[b] }' "$T/m.prom" | sort -n | tr '\n' ' '
}
le() { [ -n "$1" ] && [ -n "$2" ] && [ "$1" -le "$2" ]; }
# waits for pass N (thpshrink_scans_total)
wait_pass() {
	i=0
	until [ "$(prom thpshrink_scans_total)" -ge "$1" ] 2>/dev/null; do
		kill -0 "$DPID" 2>/dev/null || fail "thpshrinkd exited"
		i=$((i + 1)); [ $i -lt 600 ] || fail "no pass $1 within 60 s"
		sleep 0.1
	done
}

wait_pass 1
first=$(figures)
[ -n "$first" ] || fail "no thpshrink_cgroup_thps in the first pass's textfile"
[ "$(prom thpshrink_scan_thps)" = 20 ] || fail "first pass: $(prom thpshrink_scan_thps) THPs counted, 20 planted"
trusted_max=0
for k in 2 3 4 5; do
	wait_pass "$k"
	sleep 0.2 # the textfile and status.json of one pass
	now=$(figures) tr=$(scanned) memo=$(awk '$1 == "thpshrink_scan_folios{how=\"memo\"}" { print $2 }' "$T/m.prom")
	check "pass $k figures" "$now (first: $first)" [ "$now" = "$first" ]
	check "pass $k trusted" "$tr of $memo carried" le "$tr" "$memo"
	[ -n "$tr" ] && [ "$tr" -gt "$trusted_max" ] && trusted_max=$tr
done
method=$(sed -n 's/.*"method": *"\([A-Za-z_]*\)".*/\1/p' "$T/state/status.json" | head -1)
if grep -q 'found by their PAGEMAP_SCAN runs' "$T/daemon.log"; then
	check "said once" "the PAGEMAP_SCAN line" [ "$(grep -c 'Scan memo:' "$T/daemon.log")" = 1 ]
	# 16 carried; the identity and refresh windows take a few of 20 entries a pass
	check "trusted" "at most $trusted_max THPs a pass carried by their run alone, want >= 8" [ "$trusted_max" -ge 8 ]
	check "identity turn" "thpshrink_scan_full_verify_seconds $(prom thpshrink_scan_full_verify_seconds)" \
		[ -n "$(prom thpshrink_scan_full_verify_seconds)" ]
else
	echo "note: this kernel ($(uname -r)) has no PAGEMAP_SCAN (status method: ${method:-?})"
	check "said once" "the no-PAGEMAP_SCAN line" [ "$(grep -c 'Scan memo: no PAGEMAP_SCAN' "$T/daemon.log")" = 1 ]
	check "nothing trusted" "$trusted_max" [ "$trusted_max" = 0 ]
	check "no identity turn" "no thpshrink_scan_full_verify_seconds" [ -z "$(prom thpshrink_scan_full_verify_seconds)" ]
fi
daemon_stop thpshrinkd
exit $((fails > 0))
