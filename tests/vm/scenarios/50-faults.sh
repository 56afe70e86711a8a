# SPDX-License-Identifier: GPL-2.0-or-later
# 50-faults: faults on a real kernel.
#  pid-reuse: the split actuator gets the low-util THP ranges a scan recorded for process A;
#    A exits and B is started with A's pid (ns_last_pid) in the same cgroup with the same mix:
#    not one of B's THPs may be split (the re-check compares pid start times), B's data stays
#    intact; control: B's own freshly recorded ranges do split where the kernel can.
#  cgroup-gone: a cgroup whose process exits and which is removed while `thpshrink report`
#    scans it (slowly, --max-thps-per-sec): the report ends cleanly (exit 0, whole JSON).
# (guest-init.sh sources lib.sh before each scenario.)

for p in thpshrink thpshrink-bloat thpshrink-split-reuse; do
	command -v $p >/dev/null 2>&1 || { vm_fail present "$p is not in the initramfs"; exit 0; }
done
D=/tmp/faults
mkdir -p $D
thp_kb() { awk '/^AnonHugePages:/ { s += $2 } END { print s + 0 }' /proc/$1/smaps 2>/dev/null; }

# --- pid reuse ---------------------------------------------------------------------------
CG=$(vm_cgroup_new thps-reuse)
vm_bloat_start thps-reuse --mix 8:8 || { vm_fail pid-reuse "workload A did not start"; exit 0; }
A=$BLOAT_PID
thpshrink-split-reuse record $A $D/ranges-a >$D/rec-a.log 2>&1
na=$(wc -l <$D/ranges-a 2>/dev/null || echo 0)
vm_bloat_stop $A
if [ "$na" -lt 1 ]; then
	vm_fail pid-reuse "no low-util THP recorded for A: $(cat $D/rec-a.log)"
elif [ ! -w /proc/sys/kernel/ns_last_pid ]; then
	vm_skip pid-reuse "no /proc/sys/kernel/ns_last_pid (CONFIG_CHECKPOINT_RESTORE): cannot reuse a pid on purpose"
else
	B=
	for try in 1 2 3 4 5; do
		rm -f $D/ready-b
		echo $((A - 1)) >/proc/sys/kernel/ns_last_pid
		sh -c "echo \$\$ > '$CG/cgroup.procs' && exec thpshrink-bloat --ready-file $D/ready-b --mix 8:8" >$D/bloat-b.log 2>&1 &
		B=$!
		[ "$B" = "$A" ] && break
		kill $B 2>/dev/null; wait $B 2>/dev/null; B=
	done
	if [ -z "$B" ]; then
		vm_skip pid-reuse "could not get pid $A again in 5 tries"
	else
		i=0; while [ ! -s $D/ready-b ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
		before=$(thp_kb $B)
		thpshrink-split-reuse split $D/ranges-a thps-reuse >$D/split-a.log 2>$D/split-a.err; echo "# $(grep -m2 recheck $D/split-a.err)"
		after=$(thp_kb $B)
		res=$(head -1 $D/split-a.log)
		echo "# pid $A reused by B; A's ranges: $res; B's AnonHugePages ${before} kB -> ${after} kB"
		vm_check pid-reuse "A's $na ranges on B (same pid $A): $res, B's THPs ${before} -> ${after} kB" \
			sh -c "echo '$res' | grep -q ' split=0 ' && [ '$after' = '$before' ] && [ '$before' -gt 0 ]"
		# The re-check itself (also where the actuator refuses to act at all, as on 6.1): every
		# one of A's ranges is seen to belong to another process now.
		nother=$(grep -c 'is another process now' $D/split-a.err)
		vm_check pid-reuse-recheck "the re-check calls $nother of A's $na ranges another process's" [ "$nother" = "$na" ]
		v=$(vm_bloat_verify $B $D/bloat-b.log)
		vm_check pid-reuse-data "B's data after the refused splits: $v" [ "${v#VERIFY OK}" != "$v" ]
		# Control: B's own ranges split (where this kernel lets the split actuator act).
		thpshrink-split-reuse record $B $D/ranges-b >/dev/null 2>&1
		thpshrink-split-reuse split $D/ranges-b thps-reuse >$D/split-b.log 2>$D/split-b.err; cat $D/split-b.err >>$D/split-b.log
		resb=$(head -1 $D/split-b.log)
		echo "# $(grep -m3 recheck $D/split-b.log)"
		if grep -q 'acted=1' $D/split-b.log; then
			vm_check pid-reuse-control "B's own ranges: $resb" sh -c "! echo '$resb' | grep -q ' split=0 '"
		else
			vm_skip pid-reuse-control "the split actuator does not act on this kernel: $(grep note $D/split-b.log)"
		fi
		vm_bloat_stop $B
	fi
fi

# --- cgroup removed mid-scan -------------------------------------------------------------
GONE=$(vm_cgroup_new thps-gone)
vm_bloat_start thps-gone --mix 8:48 || { vm_fail cgroup-gone "workload did not start"; exit 0; }
GPID=$BLOAT_PID
thpshrink report --json --max-thps-per-sec 40 >$D/gone.json 2>$D/gone.err &
RPID=$!
sleep 0.5
vm_bloat_stop $GPID
i=0; while ! rmdir "$GONE" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -d "$GONE" ] && echo "# $GONE could not be removed"
wait $RPID
rc=$?
gone=no; [ -d "$GONE" ] || gone=yes
tail1=$(tail -c 2 $D/gone.json | head -c 1)
vm_check cgroup-gone "report over a cgroup removed mid-scan (removed: $gone): exit $rc, $(wc -c <$D/gone.json) bytes of JSON, stderr '$(head -c 200 $D/gone.err)'" \
	sh -c "[ $rc = 0 ] && [ '$tail1' = '}' ] && grep -q '\"total\"' $D/gone.json && [ $gone = yes ]"
exit 0
