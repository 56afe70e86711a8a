# SPDX-License-Identifier: GPL-2.0-or-later
# 57-tenant: the tenant boundary (thpshrink-policy(5) TENANTS), as a tenant would try it. Pods
# laid out as kubelet lays them out (systemd driver, BestEffort), each container registered
# through the real thpshrink-oci-hook with a crafted state JSON on stdin, then thpshrinkd for a
# few passes under THP=madvise. Each workload: 4 low-util THPs (8 of 512 subpages used, bloat)
# and, where promotion is in question, 4 MiB of dense small pages (dense). Verdicts come from
# memory.stat anon_thp of each cgroup, not from the daemon's counters:
#   a) pod A names "pod-b-only" (match.pod_uid: pod B): A keeps every THP, none promoted;
#   b) G's annotation "g-split\u0000x": hook exit 0, no policy registered, G keeps its THPs;
#   c) C registered with "c-split", its work in C/escape: the work's THPs are split;
#   d) mode enforce under an observe policy: nothing split or promoted; mode observe under an
#      enforce policy: split all the same; under one whose tenant_mode is "observe": kept;
#   e) pod B names "pod-b-only", whose match holds: split and promoted.
# About 15 s per kernel (6.12 and 7.3; skipped where the kernel offers no upstream split).

INTERVAL=2
PORT=9478
D=/tmp/thps-tenant
REGS=/run/thpshrink/containers
DMB=4 # dense MiB per dense workload: 2 ranges to promote
THP2M=2097152

command -v thpshrinkd >/dev/null 2>&1 || { vm_fail present "thpshrinkd is not in the initramfs"; exit 0; }
command -v thpshrink-oci-hook >/dev/null 2>&1 || { vm_fail present "thpshrink-oci-hook is not in the initramfs"; exit 0; }
if [ ! -e "$CG_ROOT/cgroup.subtree_control" ] || [ ! -e "$(vm_cgroup_new thps-tenant-probe)/memory.reclaim" ]; then
	rmdir "$CG_ROOT/thps-tenant-probe" 2>/dev/null
	vm_skip tenant "no cgroup v2 memory.reclaim on this kernel"
	exit 0
fi
rmdir "$CG_ROOT/thps-tenant-probe"
if [ "$THPS_KCLASS" != upstream ]; then
	# 6.1 splits nothing by process_madvise (its exact split is refused), and the verdicts
	# below are splits seen in memory.stat; 6.12 and 7.3 run it.
	vm_skip tenant "kernel class $THPS_KCLASS: the verdicts need the upstream split (6.12+)"
	exit 0
fi
if ! grep -q madvise $THP_SYS/enabled; then
	vm_skip tenant "THP mode madvise not offered"
	exit 0
fi
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
# madvise: bloat's THPs (it madvises) stay THPs, dense's small pages (it never does) stay small
# unless promoted; max_ptes_none 0: khugepaged never rebuilds a split 8-of-512 range.
vm_set_thp_knob enabled madvise
vm_set_thp_knob khugepaged/max_ptes_none 0
rm -rf $D /run/thpshrink
mkdir -p $D/pol $D/state $D/bundle-c $REGS

us() { echo "$1" | tr - _; }
UA=aaaaaaaa-0000-4000-8000-000000000001 UB=bbbbbbbb-0000-4000-8000-000000000002
UG=cccccccc-0000-4000-8000-000000000003 UC=dddddddd-0000-4000-8000-000000000004
UD1=eeeeeeee-0000-4000-8000-000000000005 UD2=ffffffff-0000-4000-8000-000000000006
UD3=abababab-0000-4000-8000-000000000007
BE=/kubepods.slice/kubepods-besteffort.slice
cg_of() { echo "$BE/kubepods-besteffort-pod$(us "$1").slice/crio-$2.scope"; }
id_of() { echo "$1$1$1$1$1$1$1$1"; } # a 64-hex container id from 8 hex
mkcg() { # CGROUP: every level above hands the memory controller down
	_p=$CG_ROOT
	for _c in $(echo "$1" | tr / ' '); do
		echo +memory >"$_p/cgroup.subtree_control" 2>/dev/null
		_p=$_p/$_c
		mkdir -p "$_p" || return 1
	done
}

# c-split selects C by its registration (match.container): a cgroup outside the registration's
# reach is not C's, whatever its path says.
IDC=$(id_of 0e0e0e0e) CC=$(cg_of $UC "$(id_of 0e0e0e0e)")
cat >$D/pol/10-tenant.json <<JEOF
{ "policies": [
  { "name": "pod-b-only", "match": { "pod_uid": "$UB" }, "mode": "enforce", "action": "split",
    "trigger": { "min_waste": "2M" }, "cooldown": "1s", "promote": { "max_bytes_per_pass": "1G" } },
  { "name": "g-split", "match": { "pod_uid": "00000000-0000-4000-8000-00000000000f" }, "mode": "enforce",
    "action": "split", "trigger": { "min_waste": "2M" }, "cooldown": "1s" },
  { "name": "c-split", "match": { "container": "$IDC" }, "mode": "enforce", "action": "split",
    "trigger": { "min_waste": "2M" }, "cooldown": "1s" },
  { "name": "d-observe", "match": { "pod_uid": "$UD1" }, "mode": "observe", "action": "split",
    "trigger": { "min_waste": "2M" }, "cooldown": "1s", "promote": { "max_bytes_per_pass": "1G" } },
  { "name": "d-enforce", "match": { "pod_uid": "$UD2" }, "mode": "enforce", "action": "split",
    "trigger": { "min_waste": "2M" }, "cooldown": "1s" },
  { "name": "d-optout", "match": { "pod_uid": "$UD3" }, "mode": "enforce", "tenant_mode": "observe",
    "action": "split", "trigger": { "min_waste": "2M" }, "cooldown": "1s" } ] }
JEOF
chmod 644 $D/pol/*.json

# name | pod UID | id prefix | annotations JSON | dense?
cat >$D/pods <<EOF
a $UA 0a0a0a0a {"io.thpshrink.policy":"pod-b-only"} dense
b $UB 0b0b0b0b {"io.thpshrink.policy":"pod-b-only"} dense
g $UG 0c0c0c0c {"io.thpshrink.policy":"g-split\\u0000x"} -
d1 $UD1 0d0d0d01 {"io.thpshrink.policy":"d-observe","io.thpshrink.mode":"enforce"} dense
d2 $UD2 0d0d0d02 {"io.thpshrink.policy":"d-enforce","io.thpshrink.mode":"observe"} -
d3 $UD3 0d0d0d03 {"io.thpshrink.policy":"d-optout","io.thpshrink.mode":"observe"} -
EOF
PIDS=
hook() { # NAME STATE-JSON: runs the hook as a runtime would, stdin the state
	printf '%s\n' "$2" >$D/state-$1.json
	thpshrink-oci-hook --registrations-dir $REGS createRuntime <$D/state-$1.json >$D/hook-$1.out 2>&1
	echo $? >$D/hook-$1.rc
}
started=yes
while read -r name uid pre ann dense; do
	id=$(id_of $pre) cg=$(cg_of $uid "$(id_of $pre)")
	mkcg "$cg" || { vm_fail mkdir "cannot create $cg"; started=no; break; }
	vm_bloat_start "$CG_ROOT$cg" --mix 8:4 || { vm_fail bloat "$name did not start"; started=no; break; }
	PIDS="$PIDS $BLOAT_PID"
	if [ "$dense" = dense ]; then
		sh -c "echo \$\$ > '$CG_ROOT$cg/cgroup.procs' && exec thpshrink-dense --dense-mb $DMB --sparse-mb 0 --zero-mb 0 --wait" >$D/dense-$name.out 2>&1 &
		echo "$name $!" >>$D/dense.pids
		PIDS="$PIDS $!"
	fi
	hook $name "{\"ociVersion\":\"1.0.2\",\"id\":\"$id\",\"status\":\"created\",\"pid\":$BLOAT_PID,\"bundle\":\"/tmp\",\"annotations\":$ann}"
	echo "$name $cg" >>$D/cgs
done <$D/pods
# C: registered at its container cgroup (from config.json, as a runtime creating it would);
# its init then sits in C/init and its work in C/escape (an init system inside the container).
if [ $started = yes ]; then
	mkcg "$CC/init" && mkcg "$CC/escape" || { vm_fail mkdir "cannot create $CC/{init,escape}"; started=no; }
fi
if [ $started = yes ]; then
	sh -c "echo \$\$ > '$CG_ROOT$CC/init/cgroup.procs' && exec sleep 600" &
	PIDS="$PIDS $!"
	vm_bloat_start "$CG_ROOT$CC/escape" --mix 8:4 || { vm_fail bloat "C/escape did not start"; started=no; }
	PIDS="$PIDS $BLOAT_PID"
	printf '{"ociVersion":"1.0.2","linux":{"cgroupsPath":"%s"}}\n' "$CC" >$D/bundle-c/config.json
	hook c "{\"ociVersion\":\"1.0.2\",\"id\":\"$IDC\",\"status\":\"created\",\"pid\":0,\"bundle\":\"$D/bundle-c\",\"annotations\":{\"io.thpshrink.policy\":\"c-split\"}}"
	echo "c $CC/escape" >>$D/cgs
fi
stop_all() { for _p in $PIDS; do kill "$_p" 2>/dev/null; done; wait 2>/dev/null; }
[ $started = yes ] || { stop_all; exit 0; }
i=0
while [ "$(grep -c '^before:' $D/dense-*.out 2>/dev/null | awk -F: '{n += $2} END {print n + 0}')" -lt 3 ] && [ $i -lt 600 ]; do
	sleep 0.1; i=$((i + 1))
done

cg() { awk -v n="$1" '$1==n{print $2}' $D/cgs; }
anon() { vm_memstat "$CG_ROOT$(cg "$1")" anon_thp; }
for n in a b g c d1 d2 d3; do eval "before_$n=\$(anon $n)"; done

# b: the hook itself
vm_check g-hook-exit0 "hook exit $(cat $D/hook-g.rc): $(head -c 200 $D/hook-g.out | tr '\n' ' ')" [ "$(cat $D/hook-g.rc)" = 0 ]
fg=$REGS/$(id_of 0c0c0c0c).json
vm_check g-registered-no-policy "$(tr -d ' \n' <$fg 2>/dev/null | cut -c1-200)" \
	sh -c "[ -f $fg ] && ! grep -q '\"policy\"' $fg"
vm_check g-refusal-logged "$(head -c 200 $D/hook-g.out | tr '\n' ' ')" grep -q "NUL or control character" $D/hook-g.out
vm_check c-registered-container-cgroup "$(grep cgroup $REGS/$IDC.json 2>/dev/null)" grep -q "\"cgroup\": *\"$CC\"" $REGS/$IDC.json

thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT --interval $INTERVAL \
	--scan-cpu 100 --registrations-dir $REGS -v >$D/daemon.log 2>&1 &
DPID=$!
# Until the control pod is split and promoted, C's escaped work and D2 split (or 30 s), then
# two passes more: whatever the daemon does to the others it has done by then.
T0=$(vm_uptime)
i=0
until [ "$(anon b)" = $((DMB << 20)) ] && [ "$(anon c)" = 0 ] && [ "$(anon d2)" = 0 ] || [ $i -ge 300 ]; do
	sleep 0.1; i=$((i + 1))
done
sleep $((INTERVAL * 2))
secs=$(awk -v a=$T0 -v b="$(vm_uptime)" 'BEGIN{printf "%.1f", b-a}')
for n in a b g c d1 d2 d3; do eval "after_$n=\$(anon $n)"; done
while read -r n p; do kill -USR1 "$p" 2>/dev/null; done <$D/dense.pids
sleep 1
dthp() { sed -n 's/^after:.* dense_thp=\([0-9]*\).*/\1/p' $D/dense-$1.out; }
fig() { eval "echo \"$1: anon_thp \$(vm_mib \$before_$1) -> \$(vm_mib \$after_$1) MiB\""; }
echo "# figures after $secs s (kernel $THPS_KCLASS): $(for n in a b g c d1 d2 d3; do fig $n; done | tr '\n' ';') dense THP bytes: a=$(dthp a) b=$(dthp b) d1=$(dthp d1)"
grep -o "cgroup '[^']*': policy '[^']*'" $D/daemon.log | sort -u | sed 's/^/# daemon: /'

W=$((4 * THP2M))
# a: another pod's policy: no split, no promotion
vm_check a-not-split-nor-promoted "$(fig a), dense THP $(dthp a) bytes" \
	[ "$before_a" = $W -a "$after_a" = $W -a "$(dthp a)" = 0 ]
vm_check a-refusal-logged "$(grep -o "Container '$(id_of 0a0a0a0a)': .*" $D/daemon.log | head -1 | cut -c1-200)" \
	grep -q "Container '$(id_of 0a0a0a0a)': policy 'pod-b-only' named by the container's annotation not applied" $D/daemon.log
vm_check a-refusal-in-status "status.json reason of A's cgroup" \
	grep -q "policy 'pod-b-only' named by the container's annotation not applied" $D/state/status.json
# b: the NUL-bearing name named nothing
vm_check g-not-split "$(fig g)" [ "$before_g" = $W -a "$after_g" = $W ]
# c: the escaped work is judged with C's policy
vm_check c-escape-split "$(fig c) (C/escape)" [ "$before_c" = $W -a "$after_c" = 0 ]
vm_check c-escape-policy "$(grep -o "cgroup '$CC/escape': policy '[^']*'" $D/daemon.log | tail -1)" \
	grep -q "cgroup '$CC/escape': policy 'c-split'" $D/daemon.log
info=$(vm_metrics | grep "^thpshrink_container_info{cgroup=\"$CC/escape\"")
vm_check c-escape-metrics-label "${info:-no thpshrink_container_info for C/escape}" \
	sh -c "echo '$info' | grep -q 'container=\"$IDC\",policy=\"c-split\"} 1'"
# d: modes are the operator's unless delegated
vm_check d1-enforce-under-observe "$(fig d1), dense THP $(dthp d1) bytes" \
	[ "$before_d1" = $W -a "$after_d1" = $W -a "$(dthp d1)" = 0 ]
vm_check d2-observe-under-enforce "$(fig d2)" [ "$before_d2" = $W -a "$after_d2" = 0 ]
vm_check d3-observe-delegated "$(fig d3)" [ "$before_d3" = $W -a "$after_d3" = $W ]
# e: the control: named where its match holds, split and promoted
vm_check b-control-acted "$(fig b), dense THP $(dthp b) bytes" \
	[ "$before_b" = $W -a "$after_b" = $((DMB << 20)) -a "$(dthp b)" = $((DMB << 20)) ]
for n in a b d1; do
	vm_check data-$n "$(grep '^data:' $D/dense-$n.out)" grep -q '^data: verified' $D/dense-$n.out
done
kill $DPID 2>/dev/null
wait $DPID 2>/dev/null
stop_all
