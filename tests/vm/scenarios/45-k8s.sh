# SPDX-License-Identifier: GPL-2.0-or-later
# 45-k8s: Kubernetes pods from cgroup paths, on a real kernel. Real cgroup v2 directories laid
# out as kubelet lays them out (systemd driver: kubepods.slice/...-pod<UID_>.slice/<rt>-<ID>.scope;
# cgroupfs driver: /kubepods/[QOS/]pod<UID>/<ID>), containerd and CRI-O ids, each with a
# THP workload of low-utilization THPs, plus a look-alike whose UID is malformed. Policies: observe
# Guaranteed pods (qos_class), enforce BestEffort ones. Checks: the daemon gives back the waste
# of the BestEffort containers only; the Guaranteed and Burstable workloads and the look-alike
# keep every THP and are never asked; /metrics names pod_uid, container_id and qos_class of each
# pod's cgroup and none of the look-alike; `thpshrink report --json` carries the same identity.

INTERVAL=4
PORT=9478
D=/tmp/thps-k8s
metrics() { wget -q -O - "http://127.0.0.1:$PORT/metrics" 2>/dev/null; }
metric() { # NAME CGROUP -> value (0 if absent)
	metrics | awk -v n="$1" -v c="cgroup=\"$2\"" 'index($0, n "{") == 1 && index($0, c) { v += $NF } END { print v + 0 }'
}

command -v thpshrinkd >/dev/null 2>&1 || { vm_fail present "thpshrinkd is not in the initramfs"; exit 0; }
if [ ! -e "$CG_ROOT/cgroup.subtree_control" ] || [ ! -e "$(vm_cgroup_new thps-k8s-probe)/memory.reclaim" ]; then
	rmdir "$CG_ROOT/thps-k8s-probe" 2>/dev/null
	vm_skip k8s "no cgroup v2 memory.reclaim on this kernel"
	exit 0
fi
rmdir "$CG_ROOT/thps-k8s-probe"
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
vm_set_thp_knob khugepaged/max_ptes_none 409
mkdir -p $D/pol $D/state

U1=0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b U2=11111111-2222-3333-4444-555555555555
U3=22222222-3333-4444-5555-666666666666 U4=33333333-4444-5555-6666-777777777777
us() { echo "$1" | tr - _; }
C1=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
C2=fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210
C3=aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbbccccccccccccccccdddddddddddddddd
C4=1111111111111111222222222222222233333333333333334444444444444444
C5=5555555555555555666666666666666677777777777777778888888888888888
# name | cgroup | QoS ("-": a look-alike, no identity) | UID | container id
SD=/kubepods.slice
cat >$D/pods <<EOF
be-sd $SD/kubepods-besteffort.slice/kubepods-besteffort-pod$(us $U1).slice/cri-containerd-$C1.scope besteffort $U1 $C1
be-fs /kubepods/besteffort/pod$U2/crio-$C2 besteffort $U2 $C2
gu-sd $SD/kubepods-pod$(us $U3).slice/crio-$C3.scope guaranteed $U3 $C3
bu-fs /kubepods/burstable/pod$U4/$C4 burstable $U4 $C4
fake /kubepods/besteffort/pod${U2}0/$C5 - - -
EOF

# cgroup v2: every level above a workload must hand the memory controller down.
mkcg() { # CGROUP (relative to the mount, leading /)
	_p=$CG_ROOT
	for _c in $(echo "$1" | tr / ' '); do
		echo +memory >"$_p/cgroup.subtree_control" 2>/dev/null
		_p=$_p/$_c
		mkdir -p "$_p" || return 1
	done
}

MIN_WASTE=2097152 # 2M, the floor the policy grammar allows
cat >$D/pol/10-k8s.json <<JEOF
{ "policies": [
  { "name": "gu-observe", "match": { "qos_class": "guaranteed" }, "mode": "observe",
    "trigger": { "min_waste": $MIN_WASTE } },
  { "name": "be-enforce", "match": { "qos_class": "besteffort" }, "mode": "enforce",
    "action": "reclaim", "trigger": { "min_waste": $MIN_WASTE }, "cooldown": "1s",
    "max_bytes_per_action": "1G", "max_bytes_per_sec": "1G" } ] }
JEOF
chmod 644 $D/pol/*.json

# 16 THPs of 8 used subpages each per workload: 16 x 504 zero subpages of waste.
mix_waste=$((16 * 504 * 4096))
started=yes
while read -r name cg qos uid id; do
	mkcg "$cg" || { vm_fail mkdir "cannot create $cg"; started=no; break; }
	vm_bloat_start "$CG_ROOT$cg" --mix 8:16 || { vm_fail bloat "$name did not start"; started=no; break; }
	echo "$name $BLOAT_PID $BLOAT_LOG $BLOAT_START $BLOAT_END $(vm_mem_current "$CG_ROOT$cg")" >>$D/pids
done <$D/pods
stop_all() { while read -r _n _p _r; do vm_bloat_stop "$_p"; done <$D/pids 2>/dev/null; }
[ $started = yes ] || { stop_all; exit 0; }

# report --json before the daemon runs (afterwards the BestEffort containers hold no THP, and a
# cgroup without THPs is not in the report): the same identity, from a scan of its own.
if thpshrink report --json >$D/report.json 2>$D/report.err; then
	while read -r name cg qos uid id; do
		[ "$qos" = - ] && continue
		vm_check "$name-report-json" "\"kubernetes\": {\"pod_uid\": \"$uid\", ... \"qos_class\": \"$qos\"}" \
			grep -q "\"kubernetes\": {\"pod_uid\": \"$uid\", \"container_id\": \"$id\", \"qos_class\": \"$qos\"}" $D/report.json
	done <$D/pods
	n=$(grep -c '"kubernetes"' $D/report.json)
	vm_check report-json-count "$n cgroups with a kubernetes object (4 pods' containers expected)" [ "$n" = 4 ]
	vm_export report.json $D/report.json
else
	vm_fail report-json "thpshrink report --json failed: $(head -3 $D/report.err)"
fi

thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT --interval $INTERVAL \
	--scan-cpu 100 -v >$D/daemon.log 2>&1 &
DPID=$!
i=0
until metrics | grep -q '^thpshrink_scans_total [1-9]'; do
	i=$((i + 1)); [ $i -le 600 ] || break; sleep 0.1
done
if ! metrics | grep -q '^thpshrink_scans_total [1-9]'; then
	vm_fail started "no pass served on :$PORT"
	sed 's/^/# daemon: /' $D/daemon.log | tail -20
	kill $DPID; wait $DPID; stop_all; exit 0
fi
if grep -q 'Sources: none' $D/daemon.log; then
	vm_skip k8s "thpshrinkd built without the scanner source"
	kill $DPID; wait $DPID; stop_all; exit 0
fi

# Both BestEffort containers: the waste given back within a few passes.
T0=$(vm_uptime)
BE1=$(awk '$1=="be-sd"{print $2}' $D/pods) BE2=$(awk '$1=="be-fs"{print $2}' $D/pods)
i=0
# Given back: each pod's waste left below the policy's min_waste, 2M, i.e. at least 15 of its 16
# THPs' waste. Not 0: memory.reclaim is not exact and may leave one THP (504 zero subpages, 1.97
# MiB), below min_waste (the floor the policy grammar allows), which the policy then leaves. Up
# to 8 intervals; the loop ends as soon as both are given back
given_back() { [ "$g1" -gt 0 ] && [ "$g2" -gt 0 ] && [ "$w1" -lt $MIN_WASTE ] && [ "$w2" -lt $MIN_WASTE ]; }
both_asked() { grep -q "cgroup '$BE1': reclaim asked" $D/daemon.log && grep -q "cgroup '$BE2': reclaim asked" $D/daemon.log; }
while [ $i -lt $((INTERVAL * 8 * 10 + 100)) ]; do
	w1=$(metric thpshrink_cgroup_waste_bytes "$BE1") w2=$(metric thpshrink_cgroup_waste_bytes "$BE2")
	g1=$(metric thpshrink_given_back_bytes_total "$BE1") g2=$(metric thpshrink_given_back_bytes_total "$BE2")
	given_back && break
	# 6.1 gives nothing back (below): once both were asked there is nothing more to wait for
	[ "$THPS_KCLASS" = none ] && both_asked && break
	sleep 0.1; i=$((i + 1))
done
secs=$(awk -v a=$T0 -v b="$(vm_uptime)" 'BEGIN{printf "%.1f", b-a}')
if [ "$THPS_KCLASS" = none ]; then
	vm_check besteffort-asked "6.1 cannot free THP zero subpages by reclaim; both BestEffort cgroups were asked" both_asked
else
	ok=no; given_back && ok=yes
	vm_check besteffort-given-back "systemd-driver containerd pod: $(vm_mib "$g1") MiB back, $w1 bytes left; cgroupfs CRI-O pod: $(vm_mib "$g2") MiB back, $w2 bytes left; of $(vm_mib $mix_waste) MiB each (bound: < $MIN_WASTE bytes left, the policy's min_waste), within $secs s" \
		[ $ok = yes ]
	# The kernel's side of it, per pod: memory.current fell by >= 95 % of the planted waste less
	# one THP's (the most min_waste lets stay), and thpshrink-thpcheck finds <= 1 of 16 THPs whole.
	for be in be-sd be-fs; do
		pid=$(awk -v n=$be '$1 == n {print $2}' $D/pids) start=$(awk -v n=$be '$1 == n {print $4}' $D/pids)
		end=$(awk -v n=$be '$1 == n {print $5}' $D/pids) mem0=$(awk -v n=$be '$1 == n {print $6}' $D/pids)
		cg=$(awk -v n=$be '$1 == n {print $2}' $D/pods)
		mem1=$(vm_mem_current "$CG_ROOT$cg")
		vm_thpcheck "$pid" "$start" "$end"
		drop=""; vm_num "$mem0" "$mem1" && drop=$((mem0 - mem1))
		vm_check $be-kernel-given-back "memory.current $mem0 -> $mem1: $(vm_mib "${drop:-0}") MiB less of $(vm_mib $mix_waste) planted (bound 95 % of $(vm_mib $((mix_waste - 504 * 4096)))); THPs whole $chk_thp of 16 (bound 1)" \
			eval 'vm_pct_ge "$drop" $((mix_waste - 504 * 4096)) 95 && vm_num "$chk_thp" && [ "$chk_thp" -le 1 ]'
	done
	[ $ok = yes ] || grep -E "cgroup '($BE1|$BE2)'" $D/daemon.log | tail -12 | sed 's/^/# daemon: /'
fi
echo "# policies: $(grep -o "cgroup '[^']*': policy '[^']*'" $D/daemon.log | sort -u | sed 's/.*\/\([^/]*\)'"'"': policy/\1:/' | tr '\n' ' ')"

# The others: never asked, every THP still whole.
while read -r name pid log start end mem0; do
	cg=$(awk -v n="$name" '$1==n{print $2}' $D/pods)
	case $name in be-*) continue ;; esac
	asked=$(metric thpshrink_requested_bytes_total "$cg")
	vm_thpcheck "$pid" "$start" "$end"
	ok=no; [ "$asked" = 0 ] && [ "$chk_thp" = 16 ] && ok=yes
	vm_check "$name-untouched" "$cg: asked $asked bytes, $chk_thp of 16 THPs whole, memory.current $mem0 -> $(vm_mem_current "$CG_ROOT$cg")" \
		[ $ok = yes ]
done <$D/pids
ok=no; grep -q "policy 'gu-observe'.*observe: would split" $D/daemon.log && ok=yes # no action: split
vm_check guaranteed-observed "$(grep -o "cgroup '[^']*crio-$C3.scope': policy 'gu-observe'[^→]*→ [a-z]*" $D/daemon.log | head -1 | cut -c1-60)..." [ $ok = yes ]

# /metrics: the identity of each pod's cgroup, none for the look-alike.
M=$(metrics)
printf '%s\n' "$M" >$D/metrics.prom
vm_export metrics.prom $D/metrics.prom
while read -r name cg qos uid id; do
	line=$(printf '%s\n' "$M" | grep "^thpshrink_cgroup_info{cgroup=\"$cg\"")
	if [ "$qos" = - ]; then
		vm_check "$name-no-labels" "look-alike $cg: ${line:-no thpshrink_cgroup_info}" [ -z "$line" ]
	else
		vm_check "$name-labels" "$(echo "$line" | sed 's/cgroup="[^"]*",//' | cut -c1-200)" \
			vm_has "$line" "pod_uid=\"$uid\",container_id=\"$id\",qos_class=\"$qos\"} 1"
	fi
done <$D/pods

# explain: the identity beside the decision.
ex=$(thpshrink explain --state-dir $D/state "$BE1" 2>&1 | grep '^kubernetes:')
vm_check explain "$ex" vm_has "$ex" "pod $U1, QoS class besteffort, container $C1"

# The data of the enforced workloads is intact after the give-back.
while read -r name pid log rest; do
	case $name in be-*) vm_check_bloat "$name-data-intact" "$pid" "$log" ;; esac
done <$D/pids
stop_all
kill -TERM $DPID
wait $DPID
rs=$?
vm_check sigterm "exit status $rs" [ $rs = 0 ]
