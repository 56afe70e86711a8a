# SPDX-License-Identifier: GPL-2.0-or-later
# 47-podman: podman as a user runs it. Debian's podman, conmon and crun (the host's /usr over
# 9p, in a chroot: initramfs.d/node.sh) run two twins of a workload with 32 low-util THPs:
# pm-annotated with --annotation io.thpshrink.policy=pm-split, pm-plain without. podman finds
# the packaged hook file (deploy/oci/thpshrink.json.in made as the package makes it, in the
# default /usr/share/containers/oci/hooks.d) by itself; its when.annotations must call
# thpshrink-oci-hook for pm-annotated only. thpshrinkd (the guest's, reading the chroot's
# registrations dir) must apply pm-split to it within 2 passes, name it in
# thpshrink_container_info, leave the twin alone, and drop the registration and its series
# after `podman rm`. Storage on tmpfs (vfs), no network, --rootfs: no registry.
# podman's engine settings (containers.conf) are those of a node without systemd: cgroupfs,
# file events, k8s-file logs, and no pivot_root (the initramfs is rootfs, which cannot be
# pivoted; crun gets --no-pivot as in 40-oci).
R=/podman-host
D=/tmp/pmd
PORT=9479
INTERVAL=4
if [ "$THPS_KCLASS" != upstream ]; then
	vm_skip podman "needs an upstream (6.12+) kernel with the 9p share of the host's /usr, this is $THPS_KCLASS"
	return 0 2>/dev/null || exit 0
fi
if [ ! -d /node/9p ] || [ ! -f /node/env ]; then
	vm_skip podman "no share of the host's /usr in this boot: $(cat /node/missing 2>/dev/null | tr '\n' ';')"
	return 0 2>/dev/null || exit 0
fi
. /node/env
if [ -z "$BIN_PODMAN" ] || [ -z "$BIN_CONMON" ] || [ -z "$BIN_CRUN" ]; then
	vm_skip podman "the host lacks podman, conmon or crun (Debian packages podman, conmon, crun): podman=$BIN_PODMAN conmon=$BIN_CONMON crun=$BIN_CRUN"
	return 0 2>/dev/null || exit 0
fi
vm_host_root $R || { return 0 2>/dev/null || exit 0; }

# A writable directory over a read-only shared one: the shared entries as links beside ours.
writable_over() { # PATH (inside the chroot)
	_h=$R/run/host$1
	mkdir -p $_h "$R$1"
	mount --bind "$R$1" $_h
	mount -t tmpfs -o mode=755 over "$R$1"
	for _e in $_h/*; do [ -e "$_e" ] && ln -s "/run/host$1/${_e##*/}" "$R$1/"; done
}
# The package's layout: the hook in /usr/libexec/thpshrink, its hooks.d file in /usr/share.
writable_over /usr/libexec
writable_over /usr/share/containers
mkdir -p $R/usr/libexec/thpshrink $R/usr/share/containers/oci/hooks.d
cp "$(command -v thpshrink-oci-hook)" $R/usr/libexec/thpshrink/thpshrink-oci-hook
cp /node/hooks.d/thpshrink.json $R/usr/share/containers/oci/hooks.d/thpshrink.json
# podman's locks live in shared memory
mkdir -p $R/dev/shm
mountpoint -q $R/dev/shm || mount -t tmpfs -o mode=1777 shm $R/dev/shm
mkdir -p $R/etc/containers $R/var/lib/containers $R/var/tmp $R/run/thpshrink/containers
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
CONF
cat > $R/etc/containers/storage.conf <<'CONF'
[storage]
driver = "vfs"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
CONF
echo '{"default": [{"type": "insecureAcceptAnything"}]}' > $R/etc/containers/policy.json
# The containers' root: busybox and thpshrink-bloat with the initramfs's libraries (40-oci's)
F=$R/tmp/pm-rootfs
mkdir -p $F/bin $F/proc $F/dev $F/sys $F/tmp $F/etc
cp /bin/busybox $F/bin/busybox
for a in sh sleep cat; do ln -sf busybox $F/bin/$a; done
cp "$(command -v thpshrink-bloat)" $F/bin/thpshrink-bloat
for d in /lib /lib64 /usr/lib; do [ -d $d ] && [ ! -L $d ] && mkdir -p $F$d && cp -a $d/. $F$d/; done
pm() { chroot $R /usr/bin/env -i PATH=/usr/sbin:/usr/bin HOME=/root TMPDIR=/var/tmp "$BIN_PODMAN" "$@"; }
echo "# $(pm --version 2>&1), $(chroot $R $BIN_CONMON --version 2>&1 | head -1), $(chroot $R $BIN_CRUN --version 2>&1 | head -1)"

mkdir -p $D/pol $D/state
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
# The policy matches registered containers only (match.container "*"): a container without the
# hook's registration (the plain twin) is never its; the annotation names it where it holds.
cat > $D/pol/10-pm-split.json <<'JEOF'
{ "name": "pm-split", "match": { "container": "*" }, "mode": "enforce", "action": "split",
  "trigger": { "min_waste": "2M" }, "cooldown": "1s",
  "max_bytes_per_action": "1G", "max_bytes_per_sec": "1G" }
JEOF
chmod 644 $D/pol/*.json
REGS=$R/run/thpshrink/containers
thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT --interval $INTERVAL \
	--scan-cpu 100 --registrations-dir $REGS -v > $D/daemon.log 2>&1 &
DPID=$!
i=0
until vm_metrics | grep -q '^thpshrink_scans_total [1-9]' || [ $i -gt 600 ]; do sleep 0.1; i=$((i + 1)); done

run_twin() { # NAME [ARGS...]
	_n=$1; shift
	pm run -d --name $_n --network none "$@" --rootfs /tmp/pm-rootfs \
		/bin/thpshrink-bloat --mix 8:32 --seconds 600 > $D/$_n.run 2>&1
}
T0=$(vm_uptime)
run_twin pm-annotated --annotation io.thpshrink.policy=pm-split --annotation io.thpshrink.mode=enforce
rc1=$?
run_twin pm-plain
rc2=$?
id1=$(pm inspect --format '{{.Id}}' pm-annotated 2>/dev/null)
id2=$(pm inspect --format '{{.Id}}' pm-plain 2>/dev/null)
vm_check started "podman run rc $rc1 and $rc2, ids ${id1:-none} ${id2:-none}: $(tail -c 300 $D/pm-annotated.run | tr '\n' ' ')" \
	[ $rc1 = 0 -a $rc2 = 0 -a -n "$id1" -a -n "$id2" ]
if [ $rc1 != 0 ] || [ $rc2 != 0 ] || [ -z "$id1" ] || [ -z "$id2" ]; then
	sed 's/^/# /' $D/pm-annotated.run | cut -c1-300 | tail -20
	kill -TERM $DPID; wait $DPID
	return 0 2>/dev/null || exit 0
fi
pid1=$(pm inspect --format '{{.State.Pid}}' pm-annotated 2>/dev/null)
pid2=$(pm inspect --format '{{.State.Pid}}' pm-plain 2>/dev/null)
cg1=$(sed -n 's/^0:://p' /proc/${pid1:-0}/cgroup 2>/dev/null)
cg2=$(sed -n 's/^0:://p' /proc/${pid2:-0}/cgroup 2>/dev/null)
ready() { pm logs "$1" 2>/dev/null | grep -q READY; }
i=0; until { ready pm-annotated && ready pm-plain; } || [ $i -gt 300 ]; do sleep 0.1; i=$((i + 1)); done
vm_check ready "pm-annotated pid $pid1 in $cg1; pm-plain pid $pid2 in $cg2: $(pm logs pm-annotated 2>&1 | grep READY | cut -c1-120)" \
	sh -c "[ -n '$cg1' -a -n '$cg2' ] && [ '$cg1' != '$cg2' ]"
reg1=$REGS/$id1.json
vm_check hook-called "registration for the annotated container: $(tr -d ' \n' < $reg1 2>/dev/null | cut -c1-300 || echo "no $reg1")" \
	sh -c "grep -q '\"cgroup\": *\"$cg1\"' $reg1 && grep -q '\"policy\": *\"pm-split\"' $reg1"
vm_check twin-not-registered "registrations: $(ls $REGS | tr '\n' ' ')" [ ! -e $REGS/$id2.json ]
mc2=$(vm_mem_current /sys/fs/cgroup$cg2) thp2=$(vm_memstat /sys/fs/cgroup$cg2 anon_thp)
# Given back within 2 passes (and the scan of the first): the metric against the waste seen
waste=$((32 * 504 * 4096)) given=0 info=
i=0
while [ $i -lt $((INTERVAL * 3 * 10 + 100)) ]; do
	given=$(vm_metric thpshrink_given_back_bytes_total "cgroup=\"$cg1\"")
	info=$(vm_metrics | grep "^thpshrink_container_info{cgroup=\"$cg1\"")
	[ $((given * 100)) -ge $((waste * 95)) ] && [ -n "$info" ] && break
	sleep 0.1; i=$((i + 1))
done
T1=$(vm_uptime)
# the passes that saw it up to its first split (a decision is logged per pass that changes it)
passes=$(awk -v c="cgroup '$cg1': " 'index($0, c "split (") { print n + 0; f = 1; exit }
	index($0, c "policy") { n++ } END { if (!f) print 99 }' $D/daemon.log)
vm_check given-back "given back (metric) $(vm_mib $given) of $(vm_mib $waste) MiB planted waste after $(awk -v a=$T0 -v b=$T1 'BEGIN{printf "%.1f", b-a}') s; split on its decision $passes (99: none): $(grep -m1 -o "cgroup '$cg1': split.*" $D/daemon.log | cut -c1-200)" \
	[ $((given * 100)) -ge $((waste * 95)) -a "$passes" -le 2 ]
vm_check container-info "${info:-no thpshrink_container_info for $cg1}" \
	sh -c "echo '$info' | grep -q 'container=\"$id1\",policy=\"pm-split\"'"
mc2b=$(vm_mem_current /sys/fs/cgroup$cg2) thp2b=$(vm_memstat /sys/fs/cgroup$cg2 anon_thp)
vm_check twin-untouched "pm-plain memory.current $mc2 -> $mc2b, anon_thp $thp2 -> $thp2b; decisions on it: $(grep -c "cgroup '$cg2'.*→ split" $D/daemon.log) splits" \
	[ "$thp2b" -ge "$thp2" -a "$(grep -c "cgroup '$cg2': split" $D/daemon.log)" = 0 ]
[ "${pid1:-0}" -gt 1 ] && kill -USR1 "$pid1" 2>/dev/null
i=0; until pm logs pm-annotated 2>/dev/null | grep -q VERIFY || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
v=$(pm logs pm-annotated 2>/dev/null | grep VERIFY | tail -1)
vm_check data-intact "${v:-no VERIFY line}" vm_has "$v" '^VERIFY OK'
pm rm -f pm-annotated > $D/rm.log 2>&1
rc=$?
i=0; until [ ! -e $reg1 ] || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
vm_check rm-unregisters "podman rm -f rc $rc; registrations left: $(ls $REGS | tr '\n' ' ')" [ $rc = 0 -a ! -e $reg1 ]
i=0
until ! vm_metrics | grep -q "^thpshrink_container_info{cgroup=\"$cg1\"" || [ $i -gt $((INTERVAL * 3 * 10)) ]; do
	sleep 0.1; i=$((i + 1))
done
vm_check rm-series-gone "container_info series of $cg1 after podman rm: $(vm_metrics | grep -c "container=\"$id1\"")" \
	[ "$(vm_metrics | grep -c "container=\"$id1\"")" = 0 ]
pm rm -f pm-plain > /dev/null 2>&1
kill -TERM $DPID; wait $DPID
rs=$?
vm_check sigterm "thpshrinkd exit status $rs" [ $rs = 0 ]
grep -E "registration|$cg1" $D/daemon.log | head -8 | sed 's/^/# /' | cut -c1-300
