#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# /init of the thpshrink VM initramfs (busybox). Mounts the kernel filesystems, cgroup2 with the
# memory controller enabled for the root's children, debugfs; then runs every
# /scenarios/NN-*.sh in order, each in its own shell with THPS_KERNEL set, restores the THP
# knobs and removes the scenario's cgroups after it; prints THPS-VM-DONE and powers off.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t devtmpfs dev /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup
# thps.nodebugfs (the lockdown boots): as on most nodes and in containers, no debugfs
grep -q 'thps\.nodebugfs=1' /proc/cmdline || mount -t debugfs debugfs /sys/kernel/debug
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
trap 'poweroff -f' EXIT # if init dies anyway: panic=-1 reboots and qemu -no-reboot exits

THPS_KERNEL=$(sed -n 's/.*thps\.kernel=\([^ ]*\).*/\1/p' /proc/cmdline)
THPS_VARIANT=$(sed -n 's/.*thps\.variant=\([^ ]*\).*/\1/p' /proc/cmdline)
export THPS_KERNEL THPS_VARIANT
. /lib.sh
echo +memory > /sys/fs/cgroup/cgroup.subtree_control ||
	vm_fail vm.cgroup "cannot enable +memory in the root's cgroup.subtree_control"

T=/sys/kernel/mm/transparent_hugepage
# What the booted kernel does, from thpshrink's probe, not from the kernel's name: scenarios
# branch on THPS_KCLASS (upstream: a split remaps zero subpages and the underused shrinker
# exists, 6.12+; rfc: the THP shrinker RFC; none: a split frees nothing, 6.1) and on
# THPS_MTHP_SIZES (the hugepages-<N>kB sizes below the PMD size this kernel offers, Linux 6.8+).
thpshrink probe --json > /tmp/boot-probe.json 2>/dev/null
THPS_KCLASS=$(sed -n 's/^  "split_kind":"\([a-z]*\)".*/\1/p' /tmp/boot-probe.json)
# measured on canary memory at boot: a kernel whose split frees nothing is "none", whatever
# its counters suggest
grep -q '"split_frees_zero_subpages":false' /tmp/boot-probe.json && THPS_KCLASS=none
THPS_MTHP_SIZES=$(for d in $T/hugepages-*kB; do [ -f "$d/enabled" ] && basename "$d"; done |
	sed 's/hugepages-\([0-9]*\)kB/\1/' | awk -v pmd=$(($(cat $T/hpage_pmd_size) / 1024)) '$1 < pmd' | sort -n | tr '\n' ' ')
export THPS_KCLASS THPS_MTHP_SIZES
[ -n "$THPS_KCLASS" ] || vm_fail vm.kclass "thpshrink probe --json named no split_kind"
mthp0=$(for d in $T/hugepages-*kB; do [ -f "$d/enabled" ] && echo "$d $(sed 's/.*\[\(.*\)\].*/\1/' "$d/enabled")"; done)
mpn0=$(cat $T/khugepaged/max_ptes_none)
scan0=$(cat $T/khugepaged/scan_sleep_millisecs)
alloc0=$(cat $T/khugepaged/alloc_sleep_millisecs)
pages0=$(cat $T/khugepaged/pages_to_scan)
enabled0=$(sed 's/.*\[\(.*\)\].*/\1/' $T/enabled)
vm_pass vm.boot "kernel=$(uname -r) uptime=$(vm_uptime)s thp=$enabled0 max_ptes_none=$mpn0" \
	"shrink_underused=$(cat $T/shrink_underused 2>/dev/null || echo n/a)" \
	"swap=$(awk 'NR>1' /proc/swaps | wc -l) cgroup2=$(cat /sys/fs/cgroup/cgroup.subtree_control)" \
	"class=$THPS_KCLASS mthp_kB=${THPS_MTHP_SIZES:-none}" \
	"lockdown=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/security/lockdown 2>/dev/null || echo n/a)"

for s in /scenarios/[0-9]*.sh; do
	[ -e "$s" ] || continue
	name=$(basename "$s" .sh)
	t0=$(vm_uptime)
	echo "== scenario $name (uptime ${t0}s)"
	# a scenario may ask for more time with a "# vm-timeout: SECONDS" line (70-node)
	st=$(sed -n 's/^# vm-timeout: *\([0-9][0-9]*\).*/\1/p' "$s" | head -1)
	VM_SCENARIO=${name#[0-9]*-} timeout ${THPS_VM_SCENARIO_TIMEOUT:-${st:-480}} sh -c ". /lib.sh; VM_SCENARIO=${name#[0-9]*-}; . $s"
	rc=$?
	[ $rc = 0 ] || vm_fail "${name#[0-9]*-}.exit" "scenario script exited with status $rc"
	# Leave the next scenario a clean machine: no leftover workload, the boot-time knobs.
	for cg in /sys/fs/cgroup/*/; do
		[ -f "$cg/cgroup.kill" ] || continue
		echo 1 > "$cg/cgroup.kill" 2>/dev/null
		i=0; while [ -s "$cg/cgroup.procs" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
		rmdir "$cg" 2>/dev/null
	done
	echo "$mpn0" > $T/khugepaged/max_ptes_none
	echo "$scan0" > $T/khugepaged/scan_sleep_millisecs
	echo "$alloc0" > $T/khugepaged/alloc_sleep_millisecs
	echo "$pages0" > $T/khugepaged/pages_to_scan
	echo "$enabled0" > $T/enabled
	echo "$mthp0" | while read -r d m; do [ -n "$d" ] && echo "$m" > "$d/enabled"; done
	echo "== scenario $name took $(awk "BEGIN{print $(vm_uptime) - $t0}")s"
done
echo "THPS-VM-DONE kernel=$THPS_KERNEL uptime=$(vm_uptime)s"
poweroff -f
