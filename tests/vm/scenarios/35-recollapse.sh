# SPDX-License-Identifier: GPL-2.0-or-later
# 35-recollapse: thpshrinkd splits a cgroup's low-util THPs (policy action "split"); with
# khugepaged/max_ptes_none 511 and a fast khugepaged, khugepaged rebuilds them. The daemon
# must count the cycle (thpshrink_recollapsed_thps_total > 0), log the max_ptes_none advice,
# put the count in status.json, and back off (the engine's noeffect_backoff rule) instead of
# splitting the same ranges every cooldown: counted by its metrics and by the kernel's
# thp_split_page. k612 only: on 6.1 a split frees nothing (the actuator refuses, see 30-split),
# and the RFC kernel's shrinker changes the picture.

PORT=9478
D=/tmp/thpsd-rc

if [ "$THPS_KCLASS" != upstream ]; then
	vm_skip cycle "split/re-collapse needs an upstream (6.12+) kernel, this is $THPS_KCLASS (none: a split frees nothing; rfc: its shrinker frees first)"
	return 0 2>/dev/null || exit 0
fi
mkdir -p $D/pol $D/state
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
vm_set_thp_knob khugepaged/max_ptes_none 511
vm_set_thp_knob khugepaged/scan_sleep_millisecs 100
vm_set_thp_knob khugepaged/alloc_sleep_millisecs 1
cg=$(vm_cgroup_new rc-work)
cat >$D/pol/10-split.json <<'JEOF'
{ "name": "split", "match": { "cgroup": "/rc-work" }, "mode": "enforce", "action": "split",
  "trigger": { "min_waste": "2M" }, "cooldown": "1s",
  "max_bytes_per_action": "1G", "max_bytes_per_sec": "1G" }
JEOF
chmod 644 $D/pol/*.json
# 10 utilized subpages: khugepaged (max_ptes_none 511) rebuilds a split range of them; an
# all-zero range (512 > 511 empty PTEs) it would leave alone.
if ! vm_bloat_start "$cg" --mix 10:16; then
	vm_fail start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
	return 0 2>/dev/null || exit 0
fi
thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT --interval 2 \
	--scan-cpu 100 -v >$D/daemon.log 2>&1 &
DPID=$!
T0=$(vm_uptime)
rc=0 i=0
while [ $i -lt 900 ]; do
	rc=$(vm_metric thpshrink_recollapsed_thps_total 'cgroup="/rc-work"')
	[ "$rc" -gt 0 ] && break
	sleep 0.1; i=$((i + 1))
done
T1=$(vm_uptime)
split=$(vm_metric thpshrink_actions_total 'cgroup="/rc-work",' 'action="split"')
vm_check counted "thpshrink_recollapsed_thps_total=$rc after $(awk -v a=$T0 -v b=$T1 'BEGIN{printf "%.1f", b-a}') s, $split split actions" \
	[ "$rc" -gt 0 ]
line=$(grep -m1 "khugepaged re-collapsed" $D/daemon.log)
vm_check advice-logged "${line:-no re-collapse line}" \
	vm_has "$line" "max_ptes_none 511); --set-max-ptes-none [0-9]* (thpshrink reclaim)"
i=0
until grep -q '"recollapsed_thps":[ ]*[1-9]' $D/state/status.json 2>/dev/null || [ $i -gt 50 ]; do
	sleep 0.1; i=$((i + 1))
done
vm_check status-json "$(grep -o '"recollapsed_thps":[ ]*[0-9]*' $D/state/status.json)" \
	grep -q '"recollapsed_thps":[ ]*[1-9]' $D/state/status.json
# The tug of war ends: the split after a re-collapse gave back only what khugepaged took, so
# the engine backs off (noeffect_backoff; a decision only while the stretched cooldown holds,
# which a pass after it misses), and a range rebuilt 3 times is no longer split (pinned). Once
# every range is pinned the daemon asks for no split that finds nothing to split ("failed").
backoff() { vm_metric thpshrink_decisions_total 'decision="noeffect_backoff"'; }
i=0
until [ "$(backoff)" -gt 0 ] || grep -q "no longer split" $D/daemon.log || [ $i -gt 300 ]; do
	sleep 0.1; i=$((i + 1))
done
pins=$(grep -m1 -o "[0-9]* ranges came back [0-9]* times after a split" $D/daemon.log)
vm_check backs-off "noeffect_backoff decisions $(backoff), pinned: ${pins:-none}, split actions $(vm_metric thpshrink_actions_total 'cgroup="/rc-work",' 'action="split"')" \
	[ "$(backoff)" -gt 0 -o -n "$pins" ]
# Backed off: over the next 10 s, at most 2 split actions and what 2 of them can split (16 THPs
# each) by the kernel's own count, where splitting every cooldown (1 s, one action per 2-s pass)
# would be 5 actions of up to 16 THPs.
splits() { vm_metric thpshrink_actions_total 'cgroup="/rc-work",' 'action="split"'; }
a0=$(splits) k0=$(vm_vmstat thp_split_page)
sleep 10
a1=$(splits) k1=$(vm_vmstat thp_split_page)
bounded() { vm_num "$a0" "$a1" "$k0" "$k1" && [ $((a1 - a0)) -le 2 ] && [ $((k1 - k0)) -le $(((a1 - a0) * 16)) ]; }
vm_check split-rate-bounded "over 10 s after backing off: split actions $a0 -> $a1 (bound +2), vmstat thp_split_page $k0 -> $k1 (bound 16 per action)" \
	bounded
failed=$(vm_metric thpshrink_decisions_total 'decision="failed"')
vm_check no-empty-splits "failed decisions $failed after 10 s more ($(grep -c 'nothing to split' $D/daemon.log) 'nothing to split' lines)" \
	[ "$failed" = 0 ]
vm_finish_bloat_and_daemon $DPID
grep -E "cgroup '/rc-work'" $D/daemon.log | tail -6 | sed 's/^/# /'
