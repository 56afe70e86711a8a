# SPDX-License-Identifier: GPL-2.0-or-later
# 40-dry-run: `thpshrink reclaim --dry-run` (both methods) reports what it would do and changes
# nothing: memory.current, the THPs and the kernel's split counters stay as they were.
cg=$(vm_cgroup_new dry-work)
if ! vm_bloat_start "$cg" --mix 0:8,512:4; then
	vm_fail start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
	return 0 2>/dev/null || exit 0
fi
vm_thpcheck "$BLOAT_PID" "$BLOAT_START" "$BLOAT_END"
thp0=$chk_thp mc0=$(vm_mem_current "$cg") sp0=$(vm_vmstat thp_split_page) mpn0=$(vm_thp_knob khugepaged/max_ptes_none)
for m in reclaim split; do
	out=$(thpshrink reclaim --cgroup dry-work --method $m --dry-run 2>&1); rc=$?
	echo "$out"
	vm_summary "$out"
	vm_check $m-reports "rc=$rc waste=$waste_before $(echo "$out" | grep '^note:')" \
		[ "$rc" = 0 -a "$waste_before" -ge $((8 * 2 * 1048576 * 9 / 10)) -a "$(vm_has "$out" 'dry run' && echo y)" = y ]
	vm_thpcheck "$BLOAT_PID" "$BLOAT_START" "$BLOAT_END"
	mc1=$(vm_mem_current "$cg")
	vm_check $m-changes-nothing "THPs $thp0->$chk_thp memory.current $mc0->$mc1 thp_split_page $sp0->$(vm_vmstat thp_split_page)" \
		[ "$chk_thp" = "$thp0" -a "$(vm_vmstat thp_split_page)" = "$sp0" -a $((mc0 - mc1)) -le 65536 -a $((mc1 - mc0)) -le 65536 ]
done
vm_check knob-unchanged "max_ptes_none=$(vm_thp_knob khugepaged/max_ptes_none)" [ "$(vm_thp_knob khugepaged/max_ptes_none)" = "$mpn0" ]
