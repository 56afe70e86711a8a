# SPDX-License-Identifier: GPL-2.0-or-later
# 20-reclaim: `thpshrink reclaim --method reclaim` on a cgroup with a bimodal THP mix (most THPs
# almost empty, the rest full), next to a sibling cgroup with only full THPs.
#  k612: the underused-THP shrinker needs max_ptes_none < 511 BEFORE the THPs fault in (a THP
#        found "not underused" once leaves the split queue), so the opt-in knob is set first.
#  rfc:  the RFC's shrinker splits once its scanner has put the THPs on the low-util list.
#  k61:  no shrinker: nothing is freed, and thpshrink must say so.
MIX=0:24,10:8,512:8
# what that lays out: the zero subpages of the 32 almost-empty THPs (63.7 MiB)
PLANTED=$(vm_planted_waste --mix $MIX)
# the scan counts zero subpages exactly: within 1 % of it (one THP more or less is 3 %)
within1() { vm_num "$1" && [ $(($1 * 100)) -ge $((PLANTED * 99)) ] && [ $(($1 * 100)) -le $((PLANTED * 101)) ]; }

if [ "$THPS_KCLASS" = upstream ]; then
	out=$(thpshrink reclaim --set-max-ptes-none 409 2>&1); rc=$?
	echo "$out"
	vm_check set-max-ptes-none "rc=$rc $(echo "$out" | tail -1) now=$(vm_thp_knob khugepaged/max_ptes_none)" \
		[ "$rc" = 0 -a "$(vm_thp_knob khugepaged/max_ptes_none)" = 409 ]
fi
sib=$(vm_cgroup_new rc-sibling)
vm_bloat_start "$sib" --mix 512:8 || vm_fail sibling-start "$(cat "$BLOAT_LOG")"
SIB_PID=$BLOAT_PID SIB_START=$BLOAT_START SIB_END=$BLOAT_END SIB_LOG=$BLOAT_LOG
cg=$(vm_cgroup_new rc-work)
if ! vm_bloat_start "$cg" --mix $MIX; then
	vm_fail start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
	return 0 2>/dev/null || exit 0
fi
vm_thpcheck "$BLOAT_PID" "$BLOAT_START" "$BLOAT_END"
full0=$chk_full
sib_mc0=$(vm_mem_current "$sib") sib_thp0=$(vm_memstat "$sib" anon_thp)
split0=$(vm_vmstat thp_split_page)

if [ "$THPS_KCLASS" = rfc ]; then
	# The RFC's kernel scanner must have seen the THPs (one pass over 2 GiB takes ~9 s).
	t0=$(vm_uptime); i=0
	while [ "$(vm_lowutil_queued)" -lt 32 ] && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
	vm_check rfc-queued "low-util list holds $(vm_lowutil_queued) THPs after $(awk "BEGIN{print $(vm_uptime) - $t0}")s" \
		[ "$(vm_lowutil_queued)" -ge 32 ]
fi

mc_a=$(vm_mem_current "$cg")
t0=$(vm_uptime)
out=$(thpshrink reclaim --cgroup rc-work --method reclaim 2>&1); rc=$?
t1=$(vm_uptime)
mc_b=$(vm_mem_current "$cg")
freed=$((mc_a - mc_b))
echo "$out"
vm_summary "$out"
detail="planted=$PLANTED waste=$waste_before memory.current=$mc_a->$mc_b freed=$freed (thpshrink: given_back=$given_back) rc=$rc secs=$(awk "BEGIN{print $t1 - $t0}")"
vm_check scanned-waste "$detail (within 1 % of planted)" within1 "$waste_before"

case $THPS_KCLASS in
upstream | rfc)
	vm_check gives-back-95pct "$detail (>= 95% of planted)" \
		vm_pct_ge "$freed" "$PLANTED" 95
	vm_check waste-gone "waste after=$waste_after (< 5 % of planted)" \
		eval 'vm_num "$waste_after" && [ "$waste_after" -lt $((PLANTED / 20)) ]'
	vm_check exit-status "rc=$rc" [ "$rc" = 0 ]
	;;
none)
	vm_check says-frees-nothing "$(echo "$out" | grep '^note:')" \
		vm_has "$out" 'frees nothing'
	vm_check frees-nothing "$detail (< 5 % of planted)" eval 'vm_num "$freed" && [ $((freed * 100)) -lt $((PLANTED * 5)) ]'
	;;
esac
vm_thpcheck "$BLOAT_PID" "$BLOAT_START" "$BLOAT_END"
vm_check full-thps-kept "full=$chk_full full_thp=$chk_full_thp (before: $full0 full)" \
	[ "$chk_full_thp" = "$full0" -a "$full0" = 8 ]
vm_check_bloat data-intact

vm_check_sibling_untouched "$sib" "$sib_mc0" "$sib_thp0"
vm_check_bloat sibling-data-intact "$SIB_PID" "$SIB_LOG"
echo "# vmstat thp_split_page $split0 -> $(vm_vmstat thp_split_page)," \
	"thp_underused_split_page=$(vm_vmstat thp_underused_split_page) thp_split_free=$(vm_vmstat thp_split_free)"

if [ "$THPS_KCLASS" = upstream ]; then
	out=$(thpshrink reclaim --restore-max-ptes-none 2>&1); rc=$?
	vm_check restore-max-ptes-none "rc=$rc $(echo "$out" | tail -1)" \
		[ "$rc" = 0 -a "$(vm_thp_knob khugepaged/max_ptes_none)" = 511 ]
fi
