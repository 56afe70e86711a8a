# SPDX-License-Identifier: GPL-2.0-or-later
# 40-oci: a real OCI runtime (crun, from Debian) runs a busybox container whose config.json
# names thpshrink-oci-hook for createRuntime, poststart and poststop. The registration must
# appear with the container's real cgroup and go away on delete; thpshrinkd must apply the
# policy the annotation names and label the container in /metrics (1b); a read-only
# registrations dir (and no daemon at all) must not stop the container from starting.
REGS=/run/thpshrink/containers
B=/tmp/oci-bundle
if ! command -v crun >/dev/null; then
	vm_skip crun "crun is not in the initramfs (install Debian's crun on the host)"
	return 0 2>/dev/null || exit 0
fi
if ! command -v thpshrink-oci-hook >/dev/null; then
	vm_fail hook "thpshrink-oci-hook is not in the initramfs"
	return 0 2>/dev/null || exit 0
fi
HOOK=$(command -v thpshrink-oci-hook)
if [ ! -e /proc/self/setgroups ]; then
	# The RFC kernel is built without CONFIG_USER_NS; crun opens /proc/self/setgroups.
	vm_skip crun "this kernel has no user namespaces (CONFIG_USER_NS off): crun cannot run here"
	return 0 2>/dev/null || exit 0
fi

rm -rf /run/thpshrink
# The initramfs is rootfs, which cannot be pivot_root'ed: crun runs with --no-pivot (MS_MOVE +
# chroot), as a runtime on an initramfs-booted host has to.
# rootfs: busybox-static and thpshrink-bloat (with whatever libraries the initramfs carries)
mkdir -p $B/rootfs/bin $B/rootfs/proc $B/rootfs/dev $B/rootfs/sys $B/rootfs/tmp
cp /bin/busybox $B/rootfs/bin/busybox
for a in sh sleep cat; do ln -sf busybox $B/rootfs/bin/$a; done
cp "$(command -v thpshrink-bloat)" $B/rootfs/bin/thpshrink-bloat
for d in /lib /lib64 /usr/lib; do [ -d $d ] && [ ! -L $d ] && mkdir -p $B/rootfs$d && cp -a $d/. $B/rootfs$d/; done

# bundle ID CGROUPSPATH REGSDIR POLICY ARGV-JSON [MODE]: writes $B/config.json
bundle() {
	cat > $B/config.json <<JSON
{
  "ociVersion": "1.0.2",
  "process": { "terminal": false, "user": {"uid": 0, "gid": 0}, "cwd": "/",
    "args": $5, "env": ["PATH=/bin"] },
  "root": { "path": "rootfs", "readonly": false },
  "hostname": "$1",
  "annotations": { "io.thpshrink.policy": "$4", "io.thpshrink.mode": "${6:-observe}" },
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid","mode=755","size=65536k"]},
    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid","nodev"]}
  ],
  "hooks": {
    "createRuntime": [{"path": "$HOOK", "args": ["thpshrink-oci-hook", "--registrations-dir", "$3", "createRuntime"]}],
    "poststart": [{"path": "$HOOK", "args": ["thpshrink-oci-hook", "--registrations-dir", "$3", "poststart"]}],
    "poststop": [{"path": "$HOOK", "args": ["thpshrink-oci-hook", "--registrations-dir", "$3", "poststop"]}]
  },
  "linux": {
    "cgroupsPath": "$2",
    "namespaces": [{"type": "pid"}, {"type": "mount"}, {"type": "ipc"}, {"type": "uts"}]
  }
}
JSON
}
state_of() { crun state "$1" 2>/dev/null | sed -n 's/.*"status": *"\([a-z]*\)".*/\1/p'; }
pid_of() { crun state "$1" 2>/dev/null | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p'; }
wait_gone() { _i=0; while [ -e "$1" ] && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done; }
stop_ctr() {
	crun kill "$1" KILL 2>/dev/null
	_i=0; while [ "$(state_of "$1")" = running ] && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
	crun delete "$1" 2>>/tmp/crun-$1.log || crun delete -f "$1" 2>>/tmp/crun-$1.log
}

# 1: registration with the real cgroup; the container's workload is charged there
bundle ctr1 /thps-oci/ctr1 $REGS redis '["/bin/thpshrink-bloat", "--mix", "0:4", "--seconds", "120"]'
mkdir -p $REGS
thpshrink-registrations watch $REGS 90 > /tmp/regs-watch.log 2>&1 &
WATCH=$!
_i=0; while ! grep -q watching /tmp/regs-watch.log && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
# create (createRuntime runs), then start (poststart runs): the registration follows both
crun create --no-pivot --bundle $B ctr1 > /tmp/crun-ctr1.log 2>&1
rc=$?
vm_check ctr1-created "crun create rc=$rc status=$(state_of ctr1) $(tr -d ' \n' < $REGS/ctr1.json 2>/dev/null)" \
	sh -c "[ $rc = 0 ] && grep -q '\"stage\": *\"createRuntime\"' $REGS/ctr1.json && grep -q '\"status\": *\"created\"' $REGS/ctr1.json"
crun start ctr1 >> /tmp/crun-ctr1.log 2>&1
rc=$?
vm_check ctr1-started "crun start rc=$rc status=$(state_of ctr1) $(tail -c 300 /tmp/crun-ctr1.log | tr '\n' ' ')" \
	[ $rc = 0 -a "$(state_of ctr1)" = running ]
pid=$(pid_of ctr1)
f=$REGS/ctr1.json
cg=$(sed -n 's/.*"cgroup": *"\([^"]*\)".*/\1/p' $f 2>/dev/null)
vm_check registered "$(tr -d ' \n' < $f 2>/dev/null || echo "no $f")" \
	[ "$cg" = /thps-oci/ctr1 ]
real=$(sed -n 's/^0:://p' /proc/$pid/cgroup 2>/dev/null)
vm_check cgroup-is-real "registration cgroup=$cg, /proc/$pid/cgroup=$real" [ -n "$real" -a "$cg" = "$real" ]
vm_check registered-pid "registration pid=$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' $f) crun pid=$pid" \
	grep -q "\"pid\": *$pid," $f
vm_check registered-policy "policy and mode from the annotations" \
	sh -c "grep -q '\"policy\": *\"redis\"' $f && grep -q '\"mode\": *\"observe\"' $f"
vm_check registered-poststart "$(grep stage $f)" grep -q '"stage": *"poststart"' $f
l=$(thpshrink-registrations list $REGS 2>&1)
vm_check library-loads "$l" sh -c "echo '$l' | grep -q '^ctr1 cgroup=/thps-oci/ctr1 pid=$pid .*policy=redis mode=observe status=running'"
_i=0; while ! grep -q READY /tmp/crun-ctr1.log && [ $_i -lt 300 ]; do sleep 0.1; _i=$((_i + 1)); done
mc=$(cat /sys/fs/cgroup$cg/memory.current 2>/dev/null || echo 0)
vm_check workload-in-cgroup "memory.current=$(vm_mib "$mc") MiB anon_thp=$(vm_memstat "/sys/fs/cgroup$cg" anon_thp) $(grep READY /tmp/crun-ctr1.log)" \
	[ "$mc" -ge 8388608 ]
stop_ctr ctr1
wait_gone $f
vm_check unregistered "after crun delete: $(ls $REGS 2>&1 | tr '\n' ' ')" [ ! -e $f ]
sleep 0.5
kill $WATCH 2>/dev/null; wait $WATCH 2>/dev/null
vm_check inotify-events "$(tr '\n' ';' < /tmp/regs-watch.log)" \
	sh -c "grep -q '^added ctr1$' /tmp/regs-watch.log && grep -q '^removed ctr1$' /tmp/regs-watch.log"

# 1b: thpshrinkd reads the registrations. ctr4's annotation names policy "shrink" (enforce,
# reclaim) whose own selector matches registered containers under /thps-oci only (an
# annotation names a policy only where its match holds: thpshrink-policy(5) TENANTS); its
# workload has 32 low-util THPs. The daemon must pick the registration up, apply "shrink",
# give back >= 95 % of the waste it saw (6.1: ask and report 0, the kernel cannot), label the
# cgroup with the container id in /metrics, and drop that series once the container is deleted.
INTERVAL=4
PORT=9478
D=/tmp/ocid
metrics() { wget -q -O - "http://127.0.0.1:$PORT/metrics" 2>/dev/null; }
metric() { # NAME CGROUP -> value (0 if absent)
	metrics | awk -v n="$1" -v c="cgroup=\"$2\"" 'index($0, n "{") == 1 && index($0, c) { v = $NF } END { print v + 0 }'
}
if ! command -v thpshrinkd >/dev/null 2>&1; then
	vm_fail daemon "thpshrinkd is not in the initramfs"
else
	mkdir -p $D/pol $D/state
	ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
	cat >$D/pol/10-shrink.json <<'JEOF'
{ "name": "shrink", "match": { "cgroup": "/thps-oci/*", "container": "*" }, "mode": "enforce", "action": "reclaim",
  "trigger": { "min_waste": "2M" }, "cooldown": "1s",
  "max_bytes_per_action": "1G", "max_bytes_per_sec": "1G" }
JEOF
	chmod 644 $D/pol/*.json
	# Low-util THPs are split by reclaim's underused-THP shrinker only past max_ptes_none; set
	# before the workload faults in.
	vm_set_thp_knob khugepaged/max_ptes_none 409
	thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT --interval $INTERVAL \
		--scan-cpu 100 --registrations-dir $REGS -v >$D/daemon.log 2>&1 &
	DPID=$!
	i=0
	until metrics | grep -q '^thpshrink_scans_total [1-9]'; do i=$((i + 1)); [ $i -le 600 ] || break; sleep 0.1; done
	vm_check daemon-started "first pass served on :$PORT" sh -c "wget -q -O - http://127.0.0.1:$PORT/metrics | grep -q '^thpshrink_scans_total [1-9]'"

	bundle ctr4 /thps-oci/ctr4 $REGS shrink '["/bin/thpshrink-bloat", "--mix", "8:32", "--seconds", "300"]' enforce
	crun create --no-pivot --bundle $B ctr4 > /tmp/crun-ctr4.log 2>&1 && crun start ctr4 >> /tmp/crun-ctr4.log 2>&1
	rc=$?
	T0=$(vm_uptime)
	vm_check ctr4-started "crun rc=$rc status=$(state_of ctr4) $(tr -d ' \n' < $REGS/ctr4.json 2>/dev/null)" \
		sh -c "[ $rc = 0 ] && grep -q '\"mode\": *\"enforce\"' $REGS/ctr4.json"
	pid4=$(pid_of ctr4)
	_i=0; while ! grep -q READY /tmp/crun-ctr4.log && [ $_i -lt 300 ]; do sleep 0.1; _i=$((_i + 1)); done
	MEM0=$(cat /sys/fs/cgroup/thps-oci/ctr4/memory.current 2>/dev/null || echo 0)
	mix_waste=$(vm_planted_waste --mix 8:32) mix_total=$((32 * $(vm_thp_knob hpage_pmd_size)))
	given=0 asked=0 w=0 info=
	i=0
	while [ $i -lt $((INTERVAL * 2 * 10 + 150)) ]; do
		given=$(metric thpshrink_given_back_bytes_total /thps-oci/ctr4)
		asked=$(grep -o "cgroup '/thps-oci/ctr4': policy 'shrink', .* waste [0-9]* B" $D/daemon.log |
			sed 's/.* waste \([0-9]*\) B/\1/' | sort -n | tail -1)
		asked=${asked:-0}
		w=$(metric thpshrink_cgroup_waste_bytes /thps-oci/ctr4)
		info=$(metrics | grep '^thpshrink_container_info{cgroup="/thps-oci/ctr4"')
		if [ "$THPS_KCLASS" = none ]; then
			grep -q "cgroup '/thps-oci/ctr4': reclaim asked" $D/daemon.log && [ -n "$info" ] && break
		else
			[ "$asked" -gt 0 ] && [ $((given * 100)) -ge $((asked * 95)) ] && [ $((w * 20)) -le "$mix_waste" ] && [ -n "$info" ] && break
		fi
		sleep 0.1; i=$((i + 1))
	done
	T1=$(vm_uptime)
	MEM1=$(cat /sys/fs/cgroup/thps-oci/ctr4/memory.current 2>/dev/null || echo 0)
	# The daemon may act while the workload still faults in: the peak is the honest "before".
	PEAK=$(cat /sys/fs/cgroup/thps-oci/ctr4/memory.peak 2>/dev/null || echo "$MEM0")
	secs=$(awk -v a=$T0 -v b=$T1 'BEGIN{printf "%.1f", b-a}')
	echo "# ctr4: mix waste $(vm_mib $mix_waste) MiB, asked $(vm_mib $asked) MiB, waste now $(vm_mib $w) MiB, memory.current peak $(vm_mib $PEAK) -> $(vm_mib $MEM1) MiB, given back (metric) $(vm_mib $given) MiB, $secs s"
	vm_check daemon-registration "$(grep -o '[0-9]* container registrations in .*' $D/daemon.log | tail -1)" \
		grep -q "[1-9][0-9]* container registrations in '$REGS'" $D/daemon.log
	seen=$(grep -o "cgroup '/thps-oci/ctr4': policy '[^']*', THPs [0-9]*, low-util [0-9]*, waste [0-9]*" $D/daemon.log | tail -1)
	vm_check daemon-annotated-policy "${seen:-no decision logged for /thps-oci/ctr4}" \
		sh -c "echo \"$seen\" | grep -q \"policy 'shrink'\""
	if [ "$THPS_KCLASS" = none ]; then
		# 6.1 has no underused-THP shrinker: memory.reclaim cannot free THP zero subpages.
		vm_check daemon-reclaim-reported-k61 "the daemon asked and reported $(vm_mib $given) MiB back: $(grep -o "cgroup '/thps-oci/ctr4': reclaim asked.*" $D/daemon.log | head -1)" \
			sh -c "grep -q \"cgroup '/thps-oci/ctr4': reclaim asked [0-9]* bytes, gave back 0\" $D/daemon.log && [ '$given' = 0 ]"
	else
		ok=no; [ "$asked" -gt 0 ] && [ $((given * 100)) -ge $((asked * 95)) ] && [ $((w * 20)) -le "$mix_waste" ] && ok=yes
		vm_check daemon-reclaimed-95 "freed $(vm_mib $given) of $(vm_mib $asked) MiB waste seen, $(vm_mib $w) MiB left, memory.current peak $(vm_mib $PEAK) -> $(vm_mib $MEM1) MiB, $secs s" \
			[ $ok = yes ]
		# the kernel's side: memory.current fell by >= 95 % of the planted waste, from the
		# peak or from the 32 THPs planted, whichever is more (the daemon may split the first
		# THPs before the last are faulted in: the peak then never holds them all)
		kfreed=""; vm_num "$PEAK" "$MEM1" && [ "$MEM1" -gt 0 ] &&
			kfreed=$(( (PEAK > mix_total ? PEAK : mix_total) - MEM1))
		vm_check kernel-given-back "memory.current peak $PEAK (planted $mix_total) -> $MEM1: $(vm_mib "${kfreed:-0}") MiB less of $(vm_mib $mix_waste) MiB planted (bound 95 %)" \
			vm_pct_ge "$kfreed" "$mix_waste" 95
	fi
	vm_check metrics-container-id "${info:-no thpshrink_container_info for /thps-oci/ctr4}" \
		sh -c "echo '$info' | grep -q 'container=\"ctr4\",policy=\"shrink\"} 1'"
	kill -USR1 "$pid4" 2>/dev/null
	_i=0; while ! grep -q VERIFY /tmp/crun-ctr4.log && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
	v=$(grep VERIFY /tmp/crun-ctr4.log | tail -1)
	vm_check daemon-data-intact "${v:-no VERIFY line}" sh -c "echo '$v' | grep -q '^VERIFY OK'"

	stop_ctr ctr4
	wait_gone $REGS/ctr4.json
	T2=$(vm_uptime)
	i=0
	# Both the info series (registration gone) and the cgroup's own series (cgroup gone).
	while metrics | grep -q 'container="ctr4"\|cgroup="/thps-oci/ctr4"' && [ $i -lt $((INTERVAL * 3 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
	secs=$(awk -v a=$T2 -v b=$(vm_uptime) 'BEGIN{printf "%.1f", b-a}')
	metrics >$D/m-after
	vm_check metrics-container-gone "registration $( [ -e $REGS/ctr4.json ] && echo present || echo removed ), series with container=\"ctr4\": $(grep -c 'container="ctr4"' $D/m-after), with cgroup=\"/thps-oci/ctr4\": $(grep -c 'cgroup="/thps-oci/ctr4"' $D/m-after), after $secs s (bound $((INTERVAL * 3)) s); $(grep -c '^thpshrink_' $D/m-after) series served" \
		sh -c "[ ! -e $REGS/ctr4.json ] && [ -s $D/m-after ] && ! grep -q 'container=\"ctr4\"\|cgroup=\"/thps-oci/ctr4\"' $D/m-after"
	kill -TERM $DPID
	wait $DPID
	rc=$?
	vm_check daemon-sigterm "exit status $rc" [ $rc = 0 ]
	grep -E "cgroup '/thps-oci/ctr4'|registrations" $D/daemon.log | tail -6 | sed 's/^/# /'
fi

# 2: a read-only registrations dir (and no daemon): the container still starts and runs
mkdir -p /run/thps-ro && mount -t tmpfs -o ro,size=64k tmpfs /run/thps-ro
bundle ctr2 /thps-oci/ctr2 /run/thps-ro/containers redis '["/bin/sleep", "60"]'
crun run --no-pivot -d --bundle $B ctr2 > /tmp/crun-ctr2.log 2>&1
rc=$?
vm_check readonly-still-starts "crun run rc=$rc status=$(state_of ctr2) $(tail -c 300 /tmp/crun-ctr2.log | tr '\n' ' ')" \
	[ $rc = 0 -a "$(state_of ctr2)" = running ]
vm_check readonly-nothing-written "$(ls -A /run/thps-ro | tr '\n' ' ')" [ -z "$(ls -A /run/thps-ro)" ]
stop_ctr ctr2
vm_check readonly-deleted "status after delete: '$(state_of ctr2)'" [ -z "$(state_of ctr2)" ]
umount /run/thps-ro

# 3: a hostile policy annotation: ignored, the container runs and is registered without it
bundle ctr3 /thps-oci/ctr3 $REGS "../../etc/x" '["/bin/sleep", "60"]'
crun run --no-pivot -d --bundle $B ctr3 > /tmp/crun-ctr3.log 2>&1
rc=$?
vm_check hostile-policy "crun rc=$rc status=$(state_of ctr3) $(tr -d ' \n' < $REGS/ctr3.json 2>/dev/null)" \
	sh -c "[ $rc = 0 ] && [ -f $REGS/ctr3.json ] && ! grep -q policy $REGS/ctr3.json && [ ! -e /etc/x.json ]"

# 4: a lost poststop (the runtime died): GC removes the registration whose cgroup and pid are
# gone, and keeps the live ctr3
lost=$(vm_cgroup_new thps-oci-lost)
sh -c "echo \$\$ > $lost/cgroup.procs && exec sleep 300" &
LPID=$!
sleep 0.3
printf '{"ociVersion":"1.0.2","id":"lost","status":"running","pid":%s,"bundle":"/nonexistent"}' $LPID |
	thpshrink-oci-hook --registrations-dir $REGS poststart
lcg=$(sed -n 's/.*"cgroup": *"\([^"]*\)".*/\1/p' $REGS/lost.json 2>/dev/null)
vm_check lost-registered "cgroup=$lcg" [ "$lcg" = /thps-oci-lost ]
g0=$(thpshrink-registrations gc $REGS 2>&1)
vm_check gc-keeps-live "$g0; $(ls $REGS | tr '\n' ' ')" sh -c "[ '$g0' = 'removed 0' ] && [ -f $REGS/lost.json ] && [ -f $REGS/ctr3.json ]"
kill -9 $LPID; wait $LPID 2>/dev/null
rmdir $lost
g1=$(thpshrink-registrations gc $REGS 2>&1)
vm_check gc-removes-dead "$g1; left: $(ls $REGS | tr '\n' ' ')" \
	sh -c "[ '$g1' = 'removed 1' ] && [ ! -e $REGS/lost.json ] && [ -f $REGS/ctr3.json ]"
stop_ctr ctr3
vm_check ctr3-unregistered "left: $(ls $REGS | tr '\n' ' ')" [ ! -e $REGS/ctr3.json ]
rmdir /sys/fs/cgroup/thps-oci/ctr1 /sys/fs/cgroup/thps-oci/ctr2 /sys/fs/cgroup/thps-oci/ctr4 /sys/fs/cgroup/thps-oci/ctr3 /sys/fs/cgroup/thps-oci 2>/dev/null
true
