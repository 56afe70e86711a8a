# SPDX-License-Identifier: GPL-2.0-or-later
# 00-kernel: what the booted kernel offers, and the generator and checker work in the guest.
vm_check cgroup2-memory "controllers=$(cat $CG_ROOT/cgroup.subtree_control)" grep -qw memory $CG_ROOT/cgroup.subtree_control
vm_check debugfs-split "split_huge_pages present" [ -e /sys/kernel/debug/split_huge_pages ]
cg=$(vm_cgroup_new kernel-probe)
vm_check memory-reclaim "memory.reclaim present" [ -e "$cg/memory.reclaim" ]
if vm_bloat_start "$cg" --mix 0:2,512:2; then
	sum=$(thpshrink-thpcheck "$BLOAT_PID" "$BLOAT_START" "$BLOAT_END" | grep SUMMARY)
	vm_check thps-faulted "$sum memory.current=$(vm_mem_current "$cg")" \
		sh -c "echo '$sum' | grep -q 'thp=4 full=2 full_thp=2 lowutil=2 lowutil_thp=2'"
	vm_check_bloat bloat-verify
	vm_bloat_stop
else
	vm_fail bloat-start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
fi
