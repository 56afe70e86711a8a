# SPDX-License-Identifier: GPL-2.0-or-later
# vm-timeout: 600
# 48-daemonset: the DaemonSet as a pod. The project's image (saved on the host, loaded from a 9p
# share: initramfs.d/daemonset.sh) runs under Debian's podman (the host's /usr, as in 47-podman)
# with deploy/kubernetes/daemonset.yaml's pod template as written, container by container
# (daemonset-args.py: podman 4.3's kube play ignores hostPID): not privileged, the four
# capabilities, hostPID, the host's /proc and cgroupfs, a private cgroup namespace, the memory
# limit, the init container first. What only a kubelet gives is stood in for: the ConfigMap is
# a directory laid out as kubelet's atomic writer lays it out (KEY -> ..data/KEY, ..data -> a
# version directory) and flipped the way it flips it; the two Secrets are files made on the host
# (a certificate for localhost, a token), mounted where the Secret volumes are, mode 0400 as their
# defaultMode; the pod network is a network namespace of its own (--network none: lo only), so
# /metrics is read inside it, over TLS with the token. Two workload containers of the same
# podman hold 32 low-util THPs each; ds-wl-a carries io.thpshrink.policy=ds-split (the init
# container's hooks.d file calls the hook for it). Under the shipped ConfigMap (observe) nothing
# is split; after a flip that adds ds-split (matching ds-wl-a's cgroup) and the SIGHUP the
# daemon reloads on, its next pass (the template's default interval, 60 s) gives the waste back:
# memory.stat anon_thp of the workload's cgroup, not the daemon's counters, is the judge. /metrics
# names the container; `podman stop` (SIGTERM) ends the daemon with status 0. The NRI sidecar
# starts from the image with the template's settings and waits for a runtime's socket.
R=/ds-host
D=/tmp/ds48
if [ "$THPS_KCLASS" != upstream ]; then
	vm_skip daemonset "needs an upstream (6.12+) kernel with the 9p share of the host's /usr, this is $THPS_KCLASS"
	return 0 2>/dev/null || exit 0
fi
# CI runs it on k612 only: the image load alone is 2-3 min of TCG per boot; the other kernel
# with thps.daemonset-all=1 on the command line (THPS_VM_APPEND).
if [ "$THPS_KERNEL" != k612 ] && ! grep -q 'thps\.daemonset-all=1' /proc/cmdline; then
	vm_skip daemonset "run on k612 in make check-vm (2-3 min of image load per boot); here with THPS_VM_APPEND=thps.daemonset-all=1"
	return 0 2>/dev/null || exit 0
fi
if [ ! -d /node/9p ] || [ ! -f /node/env ]; then
	vm_skip daemonset "no share of the host's /usr in this boot: $(cat /node/missing 2>/dev/null | tr '\n' ';')"
	return 0 2>/dev/null || exit 0
fi
. /node/env
if [ -z "$BIN_PODMAN" ] || [ -z "$BIN_CONMON" ] || [ -z "$BIN_CRUN" ]; then
	vm_skip daemonset "the host lacks podman, conmon or crun (Debian packages podman, conmon, crun): podman=$BIN_PODMAN conmon=$BIN_CONMON crun=$BIN_CRUN"
	return 0 2>/dev/null || exit 0
fi
# The image is part of the test: without it this fails, it does not skip.
if [ -s /ds/missing ]; then
	vm_fail image "$(tr '\n' ';' < /ds/missing)"
	return 0 2>/dev/null || exit 0
fi
vm_host_root $R || { return 0 2>/dev/null || exit 0; }
mkdir -p $D $R/dev/shm $R/etc/containers $R/var/lib/containers $R/var/tmp $R/ds-image
grep -q " $R/dev/shm " /proc/mounts || mount -t tmpfs -o mode=1777 shm $R/dev/shm
# The image (254 MB unpacked, the archive unpacked again while loading) outgrows the chroot's
# 64 MiB root: storage and podman's temporary files on tmpfs of their own.
mount -t tmpfs -o size=1200m,mode=700 ctrs $R/var/lib/containers
mount -t tmpfs -o size=400m,mode=1777 vartmp $R/var/tmp
cat > $R/etc/containers/containers.conf <<'CONF'
[containers]
apparmor_profile = "unconfined"
log_driver = "k8s-file"
netns = "none"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
no_pivot_root = true
runtime = "crun"
# CRI-O's default: the init container's hooks.d files go to the node's /etc one
hooks_dir = ["/usr/share/containers/oci/hooks.d", "/etc/containers/oci/hooks.d"]
CONF
cat > $R/etc/containers/storage.conf <<'CONF'
[storage]
driver = "vfs"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
CONF
echo '{"default": [{"type": "insecureAcceptAnything"}]}' > $R/etc/containers/policy.json
pm() { chroot $R /usr/bin/env -i PATH=/usr/sbin:/usr/bin HOME=/root TMPDIR=/var/tmp "$BIN_PODMAN" "$@"; }
# ARGS-FILE: one podman argument a line (daemonset-args.py); runs `podman run EXTRA... ARGS`
pm_run_args() { # FILE EXTRA...
	_f=$1; shift
	while IFS= read -r _a; do set -- "$@" "$_a"; done < "$_f"
	pm run "$@"
}

# The image, from the host's podman storage
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 thpsimage $R/ds-image 2>$D/mount.err
IMG=$(cut -d' ' -f1 /ds/image)
T0=$(vm_uptime)
pm load -q -i /ds-image/thpshrink.oci > $D/load.log 2>&1
rc=$?
pm image exists "$IMG" || pm tag "$(tail -1 $D/load.log | sed 's/^Loaded image[^:]*: *//')" "$IMG" >> $D/load.log 2>&1
T1=$(vm_uptime)
have=no; pm image exists "$IMG" && have=yes
[ $have = yes ] || { ls -la $R/ds-image; sed 's/^/# load: /' $D/load.log | cut -c1-300; }
vm_check image-loaded "podman load rc $rc in $(awk -v a=$T0 -v b=$T1 'BEGIN{printf "%.1f", b-a}') s: $IMG $(pm image inspect --format '{{.Id}} {{.Size}}' "$IMG" 2>&1 | head -1) $(tr '\n' ' ' < $D/mount.err; tail -2 $D/load.log | tr '\n' ' ')" \
	[ $have = yes ]
[ $have = yes ] || { return 0 2>/dev/null || exit 0; }

# The node's side of the pod's volumes: hostPath DirectoryOrCreate, the Secrets, the ConfigMap
while read -r _p; do [ -n "$_p" ] && mkdir -p "$R$_p"; done < /ds/dirs
for _s in /ds/secret/*/; do
	_n=$(basename "$_s")
	mkdir -p $R/tmp/ds/secret/$_n
	for _f in "$_s"*; do cp "$_f" $R/tmp/ds/secret/$_n/; done
	chmod "$(cat "$_s..mode")" $R/tmp/ds/secret/$_n/*
done
TOKEN=$(cat $R/tmp/ds/secret/*/token)
CA=$(ls $R/tmp/ds/secret/*/*.crt | head -1); CA=${CA#$R}
CM=$R/tmp/ds/cm/thpshrink-policies
mkdir -p $CM
# kubelet's atomic writer: a new version directory, ..data swapped to it by rename, the keys'
# links made (new keys) or dropped (gone keys), the old version removed.
cm_write() { # VERSION SRC-DIR
	mkdir $CM/..$1
	cp "$2"/* $CM/..$1/
	chmod 644 $CM/..$1/*
	ln -s ..$1 $CM/..data_tmp
	chroot $R mv -T /tmp/ds/cm/thpshrink-policies/..data_tmp /tmp/ds/cm/thpshrink-policies/..data
	for _k in $CM/..$1/*; do _k=${_k##*/}; [ -L $CM/$_k ] || ln -s ..data/$_k $CM/$_k; done
	for _k in $CM/*; do [ -e $CM/..data/${_k##*/} ] || rm -f $_k; done
	for _v in $CM/..v*; do [ "$_v" = $CM/..$1 ] || rm -rf "$_v"; done
}
cm_write v1 /ds/cm
ls -la $CM | sed 's/^/# cm: /'

# The workloads (the rootfs of 47-podman: busybox and thpshrink-bloat), before the daemon,
# so its first pass (under the shipped ConfigMap: observe) sees them.
F=$R/tmp/ds-rootfs
mkdir -p $F/bin $F/proc $F/dev $F/sys $F/tmp $F/etc
cp /bin/busybox $F/bin/busybox
for a in sh sleep cat; do ln -sf busybox $F/bin/$a; done
cp "$(command -v thpshrink-bloat)" $F/bin/thpshrink-bloat
for d in /lib /lib64 /usr/lib; do [ -d $d ] && [ ! -L $d ] && mkdir -p $F$d && cp -a $d/. $F$d/; done

# The init container: installs the hook and its hooks.d files on the "node"
pm_run_args /ds/install-oci-hook.args --rm > $D/init.log 2>&1
rc=$?
vm_check init-container "rc $rc; hooks.d: $(ls $R/etc/containers/oci/hooks.d 2>&1 | tr '\n' ' '); $(tail -3 $D/init.log | tr '\n' ' ' | cut -c1-300)" \
	sh -c "[ $rc = 0 ] && [ -s $R/etc/containers/oci/hooks.d/thpshrink-createruntime.json ] && [ -x $R/opt/thpshrink/bin/thpshrink-oci-hook ]"

run_wl() { # NAME [ARGS...]
	_n=$1; shift
	pm run -d --name $_n --network none "$@" --rootfs /tmp/ds-rootfs \
		/bin/thpshrink-bloat --mix 8:32 --seconds 900 > $D/$_n.run 2>&1
}
run_wl ds-wl-a --annotation io.thpshrink.policy=ds-split
rc1=$?
run_wl ds-wl-b
rc2=$?
pid1=$(pm inspect --format '{{.State.Pid}}' ds-wl-a 2>/dev/null)
pid2=$(pm inspect --format '{{.State.Pid}}' ds-wl-b 2>/dev/null)
id1=$(pm inspect --format '{{.Id}}' ds-wl-a 2>/dev/null)
cg1=$(sed -n 's/^0:://p' /proc/${pid1:-0}/cgroup 2>/dev/null)
cg2=$(sed -n 's/^0:://p' /proc/${pid2:-0}/cgroup 2>/dev/null)
ready() { pm logs "$1" 2>/dev/null | grep -q READY; }
i=0; until { ready ds-wl-a && ready ds-wl-b; } || [ $i -gt 300 ]; do sleep 0.1; i=$((i + 1)); done
rdy=no; ready ds-wl-a && ready ds-wl-b && rdy=yes
vm_check workloads "rc $rc1 $rc2; ds-wl-a pid $pid1 in $cg1, ds-wl-b pid $pid2 in $cg2, READY: $rdy; $(tail -c 200 $D/ds-wl-a.run | tr '\n' ' ')" \
	[ "$rc1" = 0 -a "$rc2" = 0 -a -n "$cg1" -a -n "$cg2" -a $rdy = yes ]
if [ $rdy != yes ]; then
	pm rm -f ds-wl-a ds-wl-b > /dev/null 2>&1
	return 0 2>/dev/null || exit 0
fi
REGS=$R/run/thpshrink/containers
vm_check hook-registered "the hook the init container installed registered ds-wl-a: $(tr -d ' \n' < $REGS/$id1.json 2>/dev/null | cut -c1-300 || echo "no $REGS/$id1.json; registrations: $(ls $REGS 2>&1 | tr '\n' ' ')")" \
	grep -q '"policy": *"ds-split"' $REGS/$id1.json
thp1=$(vm_memstat /sys/fs/cgroup$cg1 anon_thp) thp2=$(vm_memstat /sys/fs/cgroup$cg2 anon_thp)
echo "# anon_thp at start: ds-wl-a $thp1, ds-wl-b $thp2"

# The daemon, as the template says
T0=$(vm_uptime)
pm_run_args /ds/thpshrinkd.args -d > $D/daemon.run 2>&1
rc=$?
dpid=$(pm inspect --format '{{.State.Pid}}' ds-thpshrinkd 2>/dev/null)
scrape() { # TOKEN: /metrics inside the pod's network namespace, over TLS
	chroot $R /usr/bin/nsenter --net=/proc/${dpid:-0}/ns/net /usr/bin/curl -sS --max-time 20 --cacert "$CA" \
		-H "Authorization: Bearer $1" https://localhost:9477/metrics
}
i=0
until scrape "$TOKEN" 2>/dev/null | grep -q '^thpshrink_scans_total [1-9]' || [ $i -gt 120 ]; do sleep 0.5; i=$((i + 1)); done
T1=$(vm_uptime)
scrape "$TOKEN" > $D/m1 2>&1
vm_check daemon-serves "podman run rc $rc, host pid $dpid; first pass served over TLS with the token after $(awk -v a=$T0 -v b=$T1 'BEGIN{printf "%.1f", b-a}') s: $(grep -E '^thpshrink_(scans_total|policies) ' $D/m1 | tr '\n' ' ')$(pm logs ds-thpshrinkd 2>&1 | tail -3 | tr '\n' ' ' | cut -c1-300)" \
	grep -q '^thpshrink_scans_total [1-9]' $D/m1
code=$(chroot $R /usr/bin/nsenter --net=/proc/${dpid:-0}/ns/net /usr/bin/curl -s -o /dev/null -w '%{http_code}' --max-time 20 --cacert "$CA" https://localhost:9477/metrics)
vm_check no-token "without the token: HTTP $code" [ "$code" = 401 -o "$code" = 403 ]
# The pod's settings, seen on the daemon's process
capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/${dpid:-0}/status)
priv=$(pm inspect --format '{{.HostConfig.Privileged}}' ds-thpshrinkd 2>&1)
cgns=$(readlink /proc/${dpid:-0}/ns/cgroup) cgns0=$(readlink /proc/1/ns/cgroup)
pidns=$(readlink /proc/${dpid:-0}/ns/pid) pidns0=$(readlink /proc/1/ns/pid)
# its own view: what an exec into the container (which joins its cgroup namespace) reads
selfcg=$(pm exec ds-thpshrinkd cat /proc/self/cgroup 2>&1)
memmax=$(cat /sys/fs/cgroup$(sed -n 's/^0:://p' /proc/${dpid:-0}/cgroup)/memory.max 2>&1)
# 0xa80002: DAC_OVERRIDE, SYS_PTRACE, SYS_ADMIN, SYS_NICE (kube-play.sh checks each is needed)
vm_check pod-settings "privileged $priv; CapEff $capeff; cgroup ns $cgns (init's $cgns0), its /proc/self/cgroup '$selfcg'; pid ns $pidns (init's $pidns0); memory.max $memmax" \
	sh -c "[ '$priv' = false ] && [ '$capeff' = 0000000000a80002 ] && [ -n '$cgns' ] && [ '$cgns' != '$cgns0' ] &&
		[ '$selfcg' = 0::/ ] && [ -n '$pidns' ] && [ '$pidns' = '$pidns0' ] && [ '$memmax' = 134217728 ]"
pol1=$(sed -n 's/^thpshrink_policies \([0-9]*\)$/\1/p' $D/m1)
thp1b=$(vm_memstat /sys/fs/cgroup$cg1 anon_thp)
vm_check observe-first "under the shipped ConfigMap ($pol1 policies): ds-wl-a anon_thp $thp1 -> $thp1b after the first pass" \
	[ -n "$pol1" -a "$thp1b" = "$thp1" ]

# The flip: the shipped keys and one more, ds-split, for ds-wl-a's cgroup; then the reload.
mkdir -p $D/v2
cp /ds/cm/* $D/v2/
cat > $D/v2/50-ds-split.json <<JEOF
{ "name": "ds-split", "match": { "cgroup": "$cg1" }, "mode": "enforce", "action": "split",
  "trigger": { "min_waste": "2M" }, "cooldown": "1s",
  "max_bytes_per_action": "1G", "max_bytes_per_sec": "1G" }
JEOF
cm_write v2 $D/v2
pm kill --signal HUP ds-thpshrinkd > /dev/null 2>&1
i=0; pol2=
until [ -n "$pol2" ] && [ "$pol2" != "$pol1" ] || [ $i -gt 40 ]; do
	sleep 0.5; i=$((i + 1))
	pol2=$(scrape "$TOKEN" 2>/dev/null | sed -n 's/^thpshrink_policies \([0-9]*\)$/\1/p')
done
vm_check flip-reloaded "policies $pol1 -> $pol2 after the flip and SIGHUP; cm now: $(ls $CM | tr '\n' ' ')" \
	[ -n "$pol2" -a "$pol2" = "$((pol1 + 1))" ]
# Given back at the next pass (60 s apart): anon_thp of ds-wl-a's cgroup from the kernel
waste=$((32 * 504 * 4096))
T0=$(vm_uptime)
i=0
while [ $i -lt 900 ]; do
	t=$(vm_memstat /sys/fs/cgroup$cg1 anon_thp)
	[ "$t" -le $((thp1 / 20)) ] && break
	sleep 0.1; i=$((i + 1))
done
T1=$(vm_uptime)
thp1c=$(vm_memstat /sys/fs/cgroup$cg1 anon_thp)
vm_check given-back "ds-wl-a anon_thp $(vm_mib $thp1) -> $(vm_mib $thp1c) MiB, $(awk -v a=$T0 -v b=$T1 'BEGIN{printf "%.1f", b-a}') s after the reload; planted waste $(vm_mib $waste) MiB; $(pm logs ds-thpshrinkd 2>&1 | grep -m1 -o "cgroup '$cg1': split.*" | cut -c1-200)" \
	[ "$thp1" -gt 0 -a "$thp1c" -le $((thp1 / 20)) ]
scrape "$TOKEN" > $D/m2 2>&1
info=$(grep "^thpshrink_container_info{cgroup=\"$cg1\"" $D/m2)
vm_check names-container "${info:-no thpshrink_container_info for $cg1}" \
	sh -c "echo '$info' | grep -q 'container=\"$id1\",policy=\"ds-split\"'"
thp2b=$(vm_memstat /sys/fs/cgroup$cg2 anon_thp)
vm_check twin-untouched "ds-wl-b (no matching policy: observe) anon_thp $thp2 -> $thp2b" [ "$thp2b" -ge "$thp2" ]
[ "${pid1:-0}" -gt 1 ] && kill -USR1 "$pid1" 2>/dev/null
i=0; until pm logs ds-wl-a 2>/dev/null | grep -q VERIFY || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
v=$(pm logs ds-wl-a 2>/dev/null | grep VERIFY | tail -1)
vm_check data-intact "${v:-no VERIFY line}" vm_has "$v" '^VERIFY OK'

# The NRI sidecar (thpshrink-nri) as the template runs it: read-only root, no capability. This
# node has no NRI runtime (podman): the plugin must start from the image (its libraries in
# the runtime stage), say once that the socket is missing, keep waiting without failing the
# pod, and exit 0 on SIGTERM.
pm_run_args /ds/thpshrink-nri.args -d > $D/nri.run 2>&1
rc=$?
sleep 3
nrun=$(pm inspect --format '{{.State.Running}}' ds-thpshrink-nri 2>&1)
nlog=$(pm logs ds-thpshrink-nri 2>&1 | head -3 | tr '\n' ' ' | cut -c1-300)
nri_waits() { [ "$rc" = 0 ] && [ "$nrun" = true ] && vm_has "$nlog" "cannot connect to '/var/run/nri/nri.sock'"; }
vm_check nri-waits "podman run rc $rc; running after 3 s: $nrun; log: $nlog" nri_waits
pm stop -t 10 ds-thpshrink-nri > /dev/null 2>&1
nst=$(pm inspect --format '{{.State.ExitCode}}' ds-thpshrink-nri 2>&1)
vm_check nri-sigterm "podman stop: exit code $nst; last: $(pm logs ds-thpshrink-nri 2>&1 | tail -1 | cut -c1-200)" [ "$nst" = 0 ]
pm rm -f ds-thpshrink-nri > /dev/null 2>&1

# SIGTERM, as kubelet stops a pod
pm stop -t 20 ds-thpshrinkd > $D/stop.log 2>&1
st=$(pm inspect --format '{{.State.ExitCode}}' ds-thpshrinkd 2>&1)
last=$(pm logs ds-thpshrinkd 2>&1 | tail -2 | tr '\n' ' ')
stopped=no; pm logs ds-thpshrinkd 2>&1 | grep -q 'Terminated: stopping' && stopped=yes
vm_check sigterm "podman stop: exit code $st, 'Terminated: stopping' logged: $stopped; last log lines: $(echo "$last" | cut -c1-300)" \
	[ "$st" = 0 -a $stopped = yes ]
pm logs ds-thpshrinkd 2>&1 | grep -E "SIGHUP|Loaded|$cg1|rror" | head -8 | sed 's/^/# /' | cut -c1-300
pm rm -f ds-wl-a ds-wl-b ds-thpshrinkd > /dev/null 2>&1
umount $R/ds-image 2>/dev/null
# The image's storage and podman's temporary files are tmpfs, that is the guest's RAM (the
# loaded image alone is ~250 MB): left mounted, the next scenarios of the boot (55-trust holds
# 1,000 THPs at once) ran short of memory and their daemon's passes stalled.
pm rmi -af > /dev/null 2>&1
umount $R/var/lib/containers 2>/dev/null || umount -l $R/var/lib/containers
umount $R/var/tmp 2>/dev/null || umount -l $R/var/tmp
