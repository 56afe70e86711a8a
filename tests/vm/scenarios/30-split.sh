# SPDX-License-Identifier: GPL-2.0-or-later
# 30-split: `thpshrink reclaim --method split` splits exactly the almost-empty THPs of one cgroup
# through debugfs, next to a sibling cgroup with only full THPs.
#  k612: a split remaps the zero subpages to the shared zero page: the waste comes back.
#        Then khugepaged (max_ptes_none 511) re-collapses the split ranges: thpshrink reports it.
#  rfc:  the RFC's split frees the zero subpages.
#  k61:  a split frees nothing: thpshrink refuses and says why; nothing is split.
MIX=0:24,10:8,512:8
# what that lays out: the zero subpages of the 32 almost-empty THPs (63.7 MiB)
PLANTED=$(vm_planted_waste --mix $MIX)
# the scan counts zero subpages exactly: within 1 % of it (one THP more or less is 3 %)
within1() { vm_num "$1" && [ $(($1 * 100)) -ge $((PLANTED * 99)) ] && [ $(($1 * 100)) -le $((PLANTED * 101)) ]; }

sib=$(vm_cgroup_new sp-sibling)
vm_bloat_start "$sib" --mix 512:8 || vm_fail sibling-start "$(cat "$BLOAT_LOG")"
SIB_PID=$BLOAT_PID SIB_START=$BLOAT_START SIB_END=$BLOAT_END SIB_LOG=$BLOAT_LOG
cg=$(vm_cgroup_new sp-work)
if ! vm_bloat_start "$cg" --mix $MIX; then
	vm_fail start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
	return 0 2>/dev/null || exit 0
fi
vm_thpcheck "$BLOAT_PID" "$BLOAT_START" "$BLOAT_END"
full0=$chk_full thp0=$chk_thp
sib_mc0=$(vm_mem_current "$sib") sib_thp0=$(vm_memstat "$sib" anon_thp)

mc_a=$(vm_mem_current "$cg")
t0=$(vm_uptime)
out=$(thpshrink reclaim --cgroup /sys/fs/cgroup/sp-work --method split 2>&1); rc=$?
t1=$(vm_uptime)
mc_b=$(vm_mem_current "$cg")
freed=$((mc_a - mc_b))
echo "$out"
vm_summary "$out"
detail="planted=$PLANTED waste=$waste_before memory.current=$mc_a->$mc_b freed=$freed (thpshrink: given_back=$given_back) rc=$rc secs=$(awk "BEGIN{print $t1 - $t0}")"
vm_check scanned-waste "$detail (within 1 % of planted)" within1 "$waste_before"
vm_thpcheck "$BLOAT_PID" "$BLOAT_START" "$BLOAT_END"

case $THPS_KCLASS in
upstream | rfc)
	vm_check gives-back-95pct "$detail (>= 95% of planted)" \
		vm_pct_ge "$freed" "$PLANTED" 95
	vm_check split-count "$(echo "$out" | grep '^split:')" \
		vm_has "$out" '^split: 32 THPs split, 0 skipped'
	vm_check lowutil-split "lowutil chunks still THPs: $chk_lowutil_thp of $chk_lowutil" [ "$chk_lowutil_thp" = 0 ]
	vm_check exit-status "rc=$rc" [ "$rc" = 0 ]
	;;
none)
	vm_check refuses "rc=$rc $(echo "$out" | grep -m1 'refused')" \
		[ "$rc" = 1 -a "$(vm_has "$out" 'refused: a split frees nothing' && echo y)" = y ]
	vm_check nothing-split "THPs $thp0 -> $chk_thp" [ "$chk_thp" = "$thp0" ]
	vm_check frees-nothing "$detail (< 5 % of planted)" eval 'vm_num "$freed" && [ $((freed * 100)) -lt $((PLANTED * 5)) ]'
	;;
esac
vm_check full-thps-kept "full=$chk_full full_thp=$chk_full_thp (before: $full0 full)" \
	[ "$chk_full_thp" = "$full0" -a "$full0" = 8 ]
vm_check_bloat data-intact

vm_check_sibling_untouched "$sib" "$sib_mc0" "$sib_thp0"

if [ "$THPS_KCLASS" = upstream ]; then
	# khugepaged with max_ptes_none 511 rebuilds the split ranges; thpshrink must notice.
	vm_set_thp_knob khugepaged/scan_sleep_millisecs 100
	vm_set_thp_knob khugepaged/alloc_sleep_millisecs 1
	sleep 6
	out=$(thpshrink reclaim --cgroup sp-work --dry-run 2>&1)
	vm_summary "$out"
	vm_check recollapse-seen "waste back to $waste_before after khugepaged ran (memory.current $(vm_mem_current "$cg"))" \
		[ "$waste_before" -ge 2097152 ]
	out=$(thpshrink reclaim --cgroup sp-work --method split --recollapse-wait 6 2>&1)
	echo "$out"
	vm_check recollapse-reported "$(echo "$out" | grep '^re-collapse' || echo 'no re-collapse line')" \
		vm_has "$out" '^re-collapse: khugepaged rebuilt'
	vm_check recollapse-prctl-advice "$(echo "$out" | grep -m1 'PR_THP_DISABLE' || echo 'no prctl advice')" \
		vm_has "$out" 'prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED'
	vm_check_bloat data-intact-after-recollapse
fi
