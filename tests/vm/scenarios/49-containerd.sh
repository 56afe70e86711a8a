# SPDX-License-Identifier: GPL-2.0-or-later
# 49-containerd: a real containerd (Debian 13's 1.7, NRI enabled by its config line) with runc,
# driven through its CRI the way kubelet drives it (cri.py: RunPodSandbox with metadata, labels
# and annotations, CreateContainer, StartContainer, StopPodSandbox, RemovePodSandbox; host
# network; cgroupfs under kubelet's /kubepods/besteffort/pod<UID> parents), with thpshrink-nri
# registering what NRI tells it and thpshrinkd acting on it. The root is initramfs.d/
# containerd.sh's (a trixie mmdebstrap shared read-only over 9p, with tmpfs for /var, /run,
# /tmp); the images are local (a static pause, busybox + thpshrink-bloat), imported with ctr.
# Checks: the annotated pod in namespace batch is registered with its namespace, name, UID,
# labels and container name, its policy (cd-split, matching namespace batch) gives back its
# waste (memory.stat anon_thp and memory.current against its twin), the series name its
# namespace, pod and container, the unannotated pod of namespace web is untouched, removing
# the pod removes its registration and series; pods start with
# thpshrinkd killed and with the plugin killed (their CRI times printed beside the baseline);
# after a containerd restart the plugin registers again and a new pod is registered.
# k612 only in make check-vm (vm_once; thps.containerd-all=1 adds k73): nothing here depends
# on the kernel beyond 47-podman's split, and a boot costs minutes under TCG.
# vm-timeout: 900
D=/tmp/cdd
R=/cd-root
PORT=9481
INTERVAL=4
T_BEGIN=$(vm_uptime)
cd_took() { echo "# 49-containerd took $(awk -v a=$T_BEGIN -v b=$(vm_uptime) 'BEGIN{printf "%.1f", b-a}') s"; }
vm_once containerd k612 "a boot with containerd costs minutes of TCG; the plugin does not depend on the kernel" ||
	{ return 0 2>/dev/null || exit 0; }
if [ "$THPS_KCLASS" != upstream ]; then
	vm_skip containerd "needs an upstream (6.12+) kernel (zero-page remap on split), this is $THPS_KCLASS"
	return 0 2>/dev/null || exit 0
fi
if [ ! -d /cd ] || [ -s /cd/missing ]; then
	vm_skip containerd "no containerd root in this boot: $(cat /cd/missing 2>/dev/null | tr '\n' ';')"
	return 0 2>/dev/null || exit 0
fi

# The root: the share's /usr and a copy of its /etc on a tmpfs, the guest's /proc /sys /dev.
for _m in netfs 9pnet 9pnet_virtio 9p; do
	insmod /cd/9p/$_m.ko 2>/dev/null || grep -q "^$_m " /proc/modules || {
		vm_skip containerd "insmod $_m.ko failed"; return 0 2>/dev/null || exit 0; }
done
mkdir -p /cd-ro $R
if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 cdroot /cd-ro; then
	vm_skip containerd "mount of the containerd root over 9p failed"
	return 0 2>/dev/null || exit 0
fi
mount -t tmpfs -o size=512m,mode=755 cdroot-rw $R
mkdir -p $R/usr $R/proc $R/sys $R/dev $R/tmp $R/run $R/var/lib/containerd $R/var/log $R/root
mount --bind /cd-ro/usr $R/usr
for _l in bin lib lib64 sbin; do [ -L /cd-ro/$_l ] && ln -s usr/$_l $R/$_l; done
ln -s /run $R/var/run
cp -a /cd-ro/etc $R/etc
cp -a /cd-ro/cri $R/cri
cp /cd/cri.py $R/cri/cri.py
mount --bind /proc $R/proc; mount --bind /sys $R/sys; mount --bind /dev $R/dev
mount --bind /sys/fs/cgroup $R/sys/fs/cgroup
mount -t tmpfs -o mode=1777 tmp $R/tmp
mkdir -p $R/dev/shm; mountpoint -q $R/dev/shm || mount -t tmpfs -o mode=1777 shm $R/dev/shm
cp /cd/pause.tar /cd/work.tar $R/tmp/
mkdir -p $R/etc/containerd
# NRI is off in containerd 1.7 unless this section says disable = false (docs/deploy.md).
# native snapshotter: no overlay module in the initramfs; runc without pivot_root: the
# initramfs is rootfs, which cannot be pivoted (as 40-oci and 47-podman); no AppArmor, no CNI
# (every pod has the host's network).
cat > $R/etc/containerd/config.toml <<'CONF'
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.nri.v1.nri"]
  disable = false
  socket_path = "/var/run/nri/nri.sock"
  plugin_path = "/opt/nri/plugins"
  plugin_config_path = "/etc/nri/conf.d"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/thps-pause:1"
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        NoPivotRoot = true
        SystemdCgroup = false
CONF
in_root() { chroot $R /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
cri() { in_root python3 /cri/cri.py "$@"; }
mkdir -p $D/pol $D/state
: > $D/containerd.log
cd_start() {
	# a simple command, not in_root: $! must be containerd itself (a backgrounded function
	# is a subshell, and killing it would leave containerd running)
	chroot $R /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		containerd --config /etc/containerd/config.toml >> $D/containerd.log 2>&1 &
	CPID=$!
	_i=0
	until cri version > $D/cri-version 2>&1 || [ $_i -gt 120 ]; do sleep 0.5; _i=$((_i + 1)); done
}
# containerd ends on SIGTERM; its shims (and so the pods) outlive it, as on a node
cd_stop() {
	kill -TERM $CPID 2>/dev/null
	_i=0; while kill -0 $CPID 2>/dev/null && [ $_i -lt 300 ]; do sleep 0.1; _i=$((_i + 1)); done
	kill -0 $CPID 2>/dev/null && { echo "# containerd still up 30 s after SIGTERM: SIGKILL"; kill -KILL $CPID; }
	wait $CPID 2>/dev/null
}
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
echo "# $(tr '\n' ' ' < /cd/versions)"
t0=$(vm_uptime)
cd_start
vm_check containerd-up "CRI answers: $(cat $D/cri-version) after $(awk -v a=$t0 -v b=$(vm_uptime) 'BEGIN{printf "%.1f", b-a}') s" \
	vm_has "$(cat $D/cri-version)" '^containerd '
if ! vm_has "$(cat $D/cri-version)" '^containerd '; then
	tail -20 $D/containerd.log | sed 's/^/# /' | cut -c1-300
	cd_stop; umount -l $R 2>/dev/null
	return 0 2>/dev/null || exit 0
fi
in_root ctr -n k8s.io images import --snapshotter native /tmp/pause.tar > $D/import.log 2>&1 &&
	in_root ctr -n k8s.io images import --snapshotter native /tmp/work.tar >> $D/import.log 2>&1
vm_check images "ctr import rc $?: $(in_root ctr -n k8s.io images ls -q 2>&1 | grep thps | tr '\n' ' ')" \
	sh -c "[ \$(chroot $R ctr -n k8s.io images ls -q 2>/dev/null | grep -c 'localhost/thps-') = 2 ]"

REGS=/run/thpshrink/containers
# (outside the chroot: its /var/run links to /run, which from here is the guest's)
NRI_SOCK=$R/run/nri/nri.sock
UID_DB=0b5e7c1a-1111-4a2b-9c3d-00000000db00
UID_WEB=0b5e7c1a-2222-4a2b-9c3d-00000000eb00
# The annotation names the policy; the policy's own selector (the pod's namespace, which
# only the operator sets) says where it may hold. Every container NRI reports is registered,
# but 47-podman's opt-in policy (match.container "*") must hold only for containers that
# carry an io.thpshrink.* annotation: web-0 has none, and other-untouched fails if it splits.
cat > $D/pol/10-cd-split.json <<JEOF
{ "name": "cd-split", "match": { "namespace": "batch" }, "mode": "enforce", "action": "split",
  "trigger": { "min_waste": "2M" }, "cooldown": "1s",
  "max_bytes_per_action": "1G", "max_bytes_per_sec": "1G" }
JEOF
cat > $D/pol/20-cd-optin.json <<JEOF
{ "name": "cd-optin", "match": { "container": "*" }, "mode": "enforce", "action": "split",
  "trigger": { "min_waste": "2M" }, "cooldown": "1s",
  "max_bytes_per_action": "1G", "max_bytes_per_sec": "1G" }
JEOF
chmod 644 $D/pol/*.json
thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT --interval $INTERVAL \
	--scan-cpu 100 --registrations-dir $REGS -v > $D/daemon.log 2>&1 &
DPID=$!
nri_start() {
	thpshrink-nri --socket $NRI_SOCK --registrations-dir $REGS --backoff-max 1 >> $D/nri.log 2>&1 &
	NPID=$!
}
nri_registered() { grep -c 'NRI: registered as' $D/nri.log; }
: > $D/nri.log
nri_start
i=0
until { vm_metrics | grep -q '^thpshrink_scans_total [1-9]' && [ "$(nri_registered)" -ge 1 ]; } || [ $i -gt 600 ]; do
	sleep 0.1; i=$((i + 1))
done
vm_check plugin-registered "$(grep -m1 'NRI: registered as' $D/nri.log | cut -c1-200); containerd: $(grep -m1 -i 'plugin.*thpshrink' $D/containerd.log | cut -c1-200)" \
	[ "$(nri_registered)" -ge 1 ]

# run_pod NAME NAMESPACE UID [cri.py run-pod options]: sets POD CTR PID_ and the CRI times
run_pod() { # NAME NS UID ARGS...
	_n=$1 _ns=$2 _u=$3; shift 3
	cri run-pod --name $_n --namespace $_ns --uid $_u --cgroup-parent /kubepods/besteffort/pod$_u \
		--image localhost/thps-work:1 "$@" > $D/$_n.json 2> $D/$_n.err
	_rc=$?
	POD=$(sed -n 's/.*"pod": "\([0-9a-f]*\)".*/\1/p' $D/$_n.json)
	CTR=$(sed -n 's/.*"container": "\([0-9a-f]*\)".*/\1/p' $D/$_n.json)
	PID_=$(sed -n 's/.*"pid": \([0-9]*\).*/\1/p' $D/$_n.json)
	MS=$(sed -n 's/.*"run_ms": \([0-9.]*\), "create_ms": \([0-9.]*\), "start_ms": \([0-9.]*\).*/run \1 create \2 start \3 ms/p' $D/$_n.json)
	LOG=$R$(sed -n 's/.*"log": "\([^"]*\)".*/\1/p' $D/$_n.json)
	return $_rc
}
# khugepaged would re-collapse split ranges within seconds at max_ptes_none 511 (tests/vm/
# README.md): 0 keeps the kernel's anon_thp a clean witness of the split (init restores it)
vm_set_thp_knob khugepaged/max_ptes_none 0
BLOAT="-- /bin/thpshrink-bloat --mix 8:32 --seconds 600"
run_pod db-0 batch $UID_DB --label tier=db --label app=pg --container pg \
	--annotation io.thpshrink.policy=cd-split --annotation io.thpshrink.mode=enforce $BLOAT
rc1=$? POD1=$POD CTR1=$CTR PID1=$PID_ MS1=$MS LOG1=$LOG
run_pod web-0 web $UID_WEB --label tier=web $BLOAT
rc2=$? POD2=$POD CTR2=$CTR PID2=$PID_ LOG2=$LOG
pods_ok() {
	[ $rc1 = 0 ] && [ $rc2 = 0 ] && [ -n "$CTR1" ] && [ -n "$CTR2" ] && vm_num "$PID1" "$PID2" &&
		[ "$PID1" -gt 1 ] && [ "$PID2" -gt 1 ]
}
vm_check pods-started "db-0 rc $rc1 ($MS1) pod ${POD1:-none} ctr ${CTR1:-none} pid ${PID1:-none}; web-0 rc $rc2 ctr ${CTR2:-none}: $(cat $D/db-0.err $D/web-0.err | tail -c 300 | tr '\n' ' ')" \
	pods_ok
if [ $rc1 != 0 ] || [ $rc2 != 0 ] || [ -z "$CTR1" ] || [ -z "$CTR2" ]; then
	tail -30 $D/containerd.log | sed 's/^/# /' | cut -c1-300
	tail -10 $D/nri.log | sed 's/^/# nri: /' | cut -c1-300
	kill -TERM $NPID $DPID; cd_stop; cd_took
	return 0 2>/dev/null || exit 0
fi
cg1=$(sed -n 's/^0:://p' /proc/$PID1/cgroup 2>/dev/null)
C=/sys/fs/cgroup
cg2=$(sed -n 's/^0:://p' /proc/$PID2/cgroup 2>/dev/null)
i=0; until { grep -q READY $LOG1 && grep -q READY $LOG2; } 2>/dev/null || [ $i -gt 300 ]; do sleep 0.1; i=$((i + 1)); done
vm_check ready "db-0 pid $PID1 in $cg1, web-0 pid $PID2 in $cg2: $(grep -h -o 'READY.*' $LOG1 | cut -c1-100)" \
	sh -c "grep -q READY $LOG1 && grep -q READY $LOG2 && [ '$cg1' = /kubepods/besteffort/pod$UID_DB/$CTR1 ]"
reg1=$REGS/$CTR1.json reg2=$REGS/$CTR2.json
j1=$(tr -d ' \n\t' < $reg1 2>/dev/null)
vm_check registered "$(echo "${j1:-no $reg1}" | cut -c1-400)" \
	sh -c "echo '$j1' | grep -q '\"cgroup\":\"$cg1\"' && echo '$j1' | grep -q '\"policy\":\"cd-split\"' &&
		echo '$j1' | grep -q '\"namespace\":\"batch\"' && echo '$j1' | grep -q '\"pod\":\"db-0\"' &&
		echo '$j1' | grep -q '\"pod_uid\":\"$UID_DB\"' && echo '$j1' | grep -q '\"container\":\"pg\"' &&
		echo '$j1' | grep -q '\"tier\":\"db\"' && echo '$j1' | grep -q '\"app\":\"pg\"'"
j2=$(tr -d ' \n\t' < $reg2 2>/dev/null)
vm_check other-registered "web-0, no annotation: $(echo "${j2:-no $reg2}" | cut -c1-300)" \
	sh -c "echo '$j2' | grep -q '\"namespace\":\"web\"' && ! echo '$j2' | grep -q '\"policy\"'"
mc2=$(vm_mem_current $C$cg2) thp2=$(vm_memstat $C$cg2 anon_thp) thp1=$(vm_memstat $C$cg1 anon_thp)
# The waste planted is what the kernel backed with THPs at fault time (READY's thp_backed:
# 19 of 32 in one run here), 504 zero subpages each; fewer than 16 leaves nothing to judge.
backed=$(grep -o 'thp_backed=[0-9]*' $LOG1 | head -1 | cut -d= -f2)
waste= given=0 info=
vm_num "$backed" && waste=$((backed * 504 * 4096))
T0=$(vm_uptime)
i=0
while [ $i -lt $((INTERVAL * 3 * 10 + 100)) ]; do
	given=$(vm_metric thpshrink_given_back_bytes_total "cgroup=\"$cg1\"")
	info=$(vm_metrics | grep "^thpshrink_container_info{cgroup=\"$cg1\"")
	mc1b=$(vm_mem_current $C$cg1)
	[ -n "$waste" ] && vm_num "$mc1b" && [ $(((mc2 - mc1b) * 100)) -ge $((waste * 95)) ] &&
		[ -n "$info" ] && break
	sleep 0.1; i=$((i + 1))
done
T1=$(vm_uptime)
thp1b=$(vm_memstat $C$cg1 anon_thp) mc1b=$(vm_mem_current $C$cg1)
# The kernel's word: the split may have come before the first read, so the twin (the same
# workload, no policy) stands for the THPs db-0 had, and what db-0 holds less than its twin is
# what was given back. The daemon's own figure (memory.current around each action) reads low
# when the workload is still faulting in while a split runs, as on a loaded host: it must only
# say that something was given back.
given_ok() {
	vm_num "$backed" "$given" "$thp2" "$thp1b" "$mc1b" "$mc2" && [ "$backed" -ge 16 ] &&
		[ $(((mc2 - mc1b) * 100)) -ge $((waste * 95)) ] && [ "$given" -gt 0 ] &&
		[ "$thp2" -ge $((32 * 2097152)) ] && [ "$thp1b" -le $((thp2 / 8)) ]
}
vm_check given-back "given back $(vm_mib $((mc2 - mc1b))) MiB by the kernel's measure (the twin's memory.current less db-0's; the metric: $(vm_mib $given)) of $(vm_mib $waste) MiB planted waste (thp_backed=$backed of 32) $(awk -v a=$T0 -v b=$T1 'BEGIN{printf "%.1f", b-a}') s after the checks; anon_thp $(vm_mib $thp1) -> $(vm_mib $thp1b) MiB, memory.current $(vm_mib $mc1b) MiB (its twin web-0: anon_thp $(vm_mib $thp2), memory.current $(vm_mib $mc2) MiB)" \
	given_ok
vm_check container-info "${info:-no thpshrink_container_info for $cg1}" \
	sh -c "echo '$info' | grep -q 'container=\"$CTR1\",policy=\"cd-split\"' &&
		echo '$info' | grep -q 'pod_namespace=\"batch\"' && echo '$info' | grep -q 'pod_name=\"db-0\"' &&
		echo '$info' | grep -q 'container_name=\"pg\"'"
mc2b=$(vm_mem_current $C$cg2) thp2b=$(vm_memstat $C$cg2 anon_thp)
vm_check other-untouched "web-0 memory.current $mc2 -> $mc2b, anon_thp $thp2 -> $thp2b; splits logged on it: $(grep -c "cgroup '$cg2': split" $D/daemon.log)" \
	[ "$thp2b" -ge "$thp2" -a "$thp2" -ge $((32 * 2097152)) -a "$(grep -c "cgroup '$cg2': split" $D/daemon.log)" = 0 ]
kill -USR1 $PID1 2>/dev/null
i=0; until grep -q VERIFY $LOG1 || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
v=$(grep -o 'VERIFY.*' $LOG1 | tail -1)
vm_check data-intact "${v:-no VERIFY line}" vm_has "$v" '^VERIFY OK'
cri rm-pod $POD1 > $D/rm1.json 2>&1
rc=$?
i=0; until [ ! -e $reg1 ] || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
vm_check rm-unregisters "StopPodSandbox+RemovePodSandbox rc $rc ($(cat $D/rm1.json | cut -c1-200)); registrations left: $(ls $REGS | cut -c1-12 | tr '\n' ' ')" \
	[ $rc = 0 -a ! -e $reg1 -a -e $reg2 ]
i=0
until ! vm_metrics | grep -q "container=\"$CTR1\"" || [ $i -gt $((INTERVAL * 3 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
vm_check rm-series-gone "series naming $CTR1 after the pod's removal: $(vm_metrics | grep -c "container=\"$CTR1\"")" \
	[ "$(vm_metrics | grep -c "container=\"$CTR1\"")" = 0 ]

# Pods must start whatever happens to thpshrinkd or the plugin; their CRI times beside the baseline.
SLEEP="-- /bin/sleep 600"
run_pod t-base timing 0b5e7c1a-3333-4a2b-9c3d-000000000001 $SLEEP; rcb=$? MSB=$MS CTRB=$CTR
kill -KILL $DPID; wait $DPID 2>/dev/null
run_pod t-nodaemon timing 0b5e7c1a-3333-4a2b-9c3d-000000000002 $SLEEP; rcd=$? MSD=$MS CTRD=$CTR
vm_check no-daemon-pod-starts "thpshrinkd killed: rc $rcd, $MSD (with it: $MSB), registered: $([ -e $REGS/$CTRD.json ] && echo yes || echo no)" \
	[ $rcb = 0 -a $rcd = 0 -a -n "$CTRD" ]
kill -KILL $NPID; wait $NPID 2>/dev/null
run_pod t-noplugin timing 0b5e7c1a-3333-4a2b-9c3d-000000000003 $SLEEP; rcp=$? MSP=$MS CTRP=$CTR
vm_check no-plugin-pod-starts "thpshrink-nri killed: rc $rcp, $MSP (with it: $MSB), registered: $([ -e $REGS/$CTRP.json ] && echo yes || echo no)" \
	[ $rcp = 0 -a -n "$CTRP" -a ! -e "$REGS/$CTRP.json" ]
# The plugin back, then containerd restarted under it: it must register again by itself.
nri_start
i=0; until [ "$(nri_registered)" -ge 2 ] || [ $i -gt 300 ]; do sleep 0.1; i=$((i + 1)); done
n0=$(nri_registered)
t0=$(vm_uptime)
cd_stop
t_down=$(vm_uptime)
cd_start
i=0; until [ "$(nri_registered)" -gt "$n0" ] || [ $i -gt 300 ]; do sleep 0.1; i=$((i + 1)); done
t1=$(vm_uptime)
run_pod t-after timing 0b5e7c1a-3333-4a2b-9c3d-000000000004 $SLEEP; rca=$? CTRA=$CTR
i=0; until [ -e $REGS/$CTRA.json ] || [ $i -gt 50 ]; do sleep 0.1; i=$((i + 1)); done
vm_check restart-reregisters "registrations of the plugin: $n0 before the restart, $(nri_registered) after (SIGTERM to containerd down: $(awk -v a=$t0 -v b=$t_down 'BEGIN{printf "%.1f", b-a}') s, down to registered again: $(awk -v a=$t_down -v b=$t1 'BEGIN{printf "%.1f", b-a}') s); new pod rc $rca registered: $([ -e $REGS/$CTRA.json ] && echo yes || echo no)" \
	[ "$(nri_registered)" -gt "$n0" -a $rca = 0 -a -e "$REGS/$CTRA.json" ]
echo "# pod CRI times: with daemon and plugin: $MSB; thpshrinkd killed: $MSD; thpshrink-nri killed: $MSP; after restart: $MS"
for p in $(cri list 2>/dev/null | cut -d' ' -f1); do cri rm-pod $p > /dev/null 2>&1; done
kill -TERM $NPID; wait $NPID
rs=$?
vm_check plugin-sigterm "thpshrink-nri exit status $rs" [ $rs = 0 ]
cd_stop
# kubelet's pod cgroups (runc leaves the parents it made): init removes only top-level ones
find /sys/fs/cgroup/kubepods -depth -type d -exec rmdir {} \; 2>/dev/null
umount -l $R /cd-ro 2>/dev/null
grep -E 'NRI|warn|error' $D/nri.log | tail -12 | sed 's/^/# nri: /' | cut -c1-240
grep -i -E 'booted in|signal|stop|nri' $D/containerd.log | tail -8 | sed 's/^/# containerd: /' | cut -c1-240
cd_took
