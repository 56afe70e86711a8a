# SPDX-License-Identifier: GPL-2.0-or-later
# 39-cold-whole: does a MADV_COLD over the whole range after a split hold it against khugepaged?
# A measurement, for docs/usage.md and for thpshrink reclaim --cold-after-split's default (off). Two
# cgroups, 24 THPs each with 10 of 512 subpages used, khugepaged at max_ptes_none 511 and fast
# (100 ms): both split by thpshrink (process_madvise), B with --cold-after-split. After 20 s,
# how many of each were rebuilt; then the same with the program touching its data every 2 s.
# Asserts only what the kernel must do: the split happened, the data is intact, and the cold
# advice never makes it worse; the figures go to docs/usage.md.
if [ "$THPS_KCLASS" != upstream ]; then
	vm_skip cold "needs an upstream 6.12+ kernel (a split that frees zero subpages), this is $THPS_KCLASS"
	return 0 2>/dev/null || exit 0
fi
# 20 s: khugepaged at 100 ms rebuilt all 24 plain ranges within it on 6.12 and 7.3 (as within 40 s)
WAIT=20
vm_set_thp_knob khugepaged/max_ptes_none 511
vm_set_thp_knob khugepaged/scan_sleep_millisecs 100
vm_set_thp_knob khugepaged/alloc_sleep_millisecs 10
# run TOUCH: prints "A_REBUILT B_REBUILT"
run() {
	ca=$(vm_cgroup_new cw-a-$1) cb=$(vm_cgroup_new cw-b-$1)
	extra=""
	[ "$1" = touch ] && extra="--touch-secs 2"
	vm_bloat_start "$ca" --mix 10:24 $extra || { vm_fail $1-start "$(cat "$BLOAT_LOG")"; return 1; }
	PA=$BLOAT_PID SA=$BLOAT_START EA=$BLOAT_END LA=$BLOAT_LOG
	vm_bloat_start "$cb" --mix 10:24 $extra || { vm_fail $1-start "$(cat "$BLOAT_LOG")"; return 1; }
	PB=$BLOAT_PID SB=$BLOAT_START EB=$BLOAT_END LB=$BLOAT_LOG
	oa=$(thpshrink reclaim --cgroup cw-a-$1 --method split 2>&1)
	ob=$(thpshrink reclaim --cgroup cw-b-$1 --method split --cold-after-split 2>&1)
	vm_check $1-split "$(echo "$oa" | grep '^split:' | cut -c1-40) / $(echo "$ob" | grep '^split:' | cut -c1-40)" \
		sh -c "echo \"\$1\" | grep -q '^split: 24 THPs split' && echo \"\$2\" | grep -q '^split: 24 THPs split'" _ "$oa" "$ob"
	sleep $WAIT
	vm_thpcheck "$PA" "$SA" "$EA"; ra=$chk_thp
	vm_thpcheck "$PB" "$SB" "$EB"; rb=$chk_thp
	vm_check_bloat $1-data-a "$PA" "$LA"
	vm_check_bloat $1-data-b "$PB" "$LB"
	vm_bloat_stop "$PA"; vm_bloat_stop "$PB"
	echo "# cold-whole $1: rebuilt after $WAIT s: plain $ra of 24, cold $rb of 24"
	vm_check $1-cold-not-worse "rebuilt after $WAIT s: plain split $ra of 24, with --cold-after-split $rb of 24" \
		[ "$rb" -le "$((ra + 2))" ]
}
run idle
grep -q -- '--touch-secs' /bin/thpshrink-bloat 2>/dev/null && run touch ||
	vm_skip touch "thpshrink-bloat has no --touch-secs"
