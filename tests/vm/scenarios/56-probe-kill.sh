# SPDX-License-Identifier: GPL-2.0-or-later
# 56-probe-kill: a probe SIGKILLed mid-measure leaves no canary, and the next start removes its
# scratch cgroup (issue 22), on a real kernel's cgroup v2.
#  kill:    `thpshrink probe --measure` is SIGKILLed 6 times while its canary sits, faulted in
#           (>= 1 MiB charged: 128 folios of 16 KiB, or 4 of 2 MiB), in its scratch cgroup
#           thpshrink-probe.<pid> (its split_huge_pages is a FIFO in a private debugfs root, so
#           it blocks there: mid-measure for certain); no canary (comm thps-canary) may be left.
#           Each probe's start removes the scratch cgroup the one before left: one stays.
#  live:    a 7th probe, alive and blocked the same way, owns its scratch cgroup.
#  stale:   6 scratch cgroups of pids that are gone (as crashed daemons leave them), a process
#           planted in one standing for an older version's canary.
#  clean:   the next start (thpshrinkd --once) removes the 6, kills the planted process, and
#           leaves the live probe's cgroup and canary alone; once that probe is killed too,
#           `thpshrink probe` removes its cgroup at start.
D=/tmp/thps-probe-kill
mkdir -p $D/dbg $D/pol $D/state
mkfifo $D/dbg/split_huge_pages
canaries() { # the pids of every process named thps-canary
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = thps-canary ] && echo "${p#/proc/}"
	done
}
blocked_probe() { # starts a probe, waits until its canary is in its scratch cgroup, faulted in
	THPSHRINK_DEBUGFS_ROOT=$D/dbg thpshrink probe --measure >/dev/null 2>&1 &
	PPID_=$!
	_cg=$CG_ROOT/thpshrink-probe.$PPID_
	i=0
	while [ $i -lt 600 ]; do
		# (cgroupfs files have size 0: read them, `test -s` says nothing)
		[ -n "$(cat "$_cg/cgroup.procs" 2>/dev/null)" ] &&
			[ "$(cat "$_cg/memory.current" 2>/dev/null || echo 0)" -ge 1048576 ] && return 0
		kill -0 $PPID_ 2>/dev/null || break
		sleep 0.1; i=$((i + 1))
	done
	return 1
}
[ -z "$(canaries)" ] || vm_fail no-canary-before "canaries before the test: $(canaries | tr '\n' ' ')"
left=0 held= counts=
for k in 1 2 3 4 5 6; do
	if ! blocked_probe; then
		vm_fail "kill-$k" "the probe never had a canary faulted in its scratch cgroup: probe alive $(kill -0 $PPID_ 2>/dev/null && echo yes || echo no), $(ls -d $CG_ROOT/thpshrink-probe.* 2>/dev/null | tr '\n' ' ') memory.current $(cat $CG_ROOT/thpshrink-probe.$PPID_/memory.current 2>&1)"
		kill -9 $PPID_ 2>/dev/null
		exit 0
	fi
	held="$held $(($(cat "$CG_ROOT/thpshrink-probe.$PPID_/memory.current") / 1024))"
	kill -9 $PPID_; wait $PPID_ 2>/dev/null
	i=0; while [ -n "$(canaries)" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
	if [ -n "$(canaries)" ]; then
		left=$((left + 1))
		for c in $(canaries); do kill -9 "$c"; done
	fi
	counts="$counts $(ls -d $CG_ROOT/thpshrink-probe.* 2>/dev/null | wc -l)"
done
vm_check kill "6 probes SIGKILLed mid-measure, canary memory.current KiB:$held; canaries left: $left" [ $left = 0 ]
vm_check cli-cleans "scratch cgroups after each kill:$counts (each probe removed the one before)" \
	[ "$counts" = " 1 1 1 1 1 1" ]

blocked_probe || vm_fail live-probe "the live probe never had its canary faulted in"
LIVE=$PPID_
live_canary=$(cat "$CG_ROOT/thpshrink-probe.$LIVE/cgroup.procs")
n=0 p=4194000
while [ $n -lt 6 ] && [ $p -gt 1000 ]; do
	p=$((p - 7))
	[ -e /proc/$p ] && continue
	mkdir "$CG_ROOT/thpshrink-probe.$p" && n=$((n + 1))
	[ $n = 1 ] && one=$CG_ROOT/thpshrink-probe.$p
done
sleep 3600 &
SPID=$!
echo $SPID > "$one/cgroup.procs" || vm_fail planted "cannot move a process into $one"

t0=$(vm_uptime)
thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen none --registrations-dir none --once \
	--scan-cpu 100 >$D/daemon.log 2>&1
rc=$?
t1=$(vm_uptime)
removed=$(sed -n 's/.*Removed \([0-9]*\) stale probe scratch cgroups.*/\1/p' $D/daemon.log)
rest=$(ls -d $CG_ROOT/thpshrink-probe.* 2>/dev/null | tr '\n' ' ')
ok=no; [ "${removed:-0}" = 6 ] && [ "$rest" = "$CG_ROOT/thpshrink-probe.$LIVE " ] && ok=yes
vm_check clean "thpshrinkd --once (exit $rc, $(awk "BEGIN{print $t1 - $t0}") s) removed ${removed:-0} stale scratch cgroups; left: $rest" \
	[ $ok = yes ]
i=0; while kill -0 $SPID 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
alive=no; kill -0 $SPID 2>/dev/null && alive=yes
vm_check planted-killed "the process planted in a stale scratch cgroup was killed (alive: $alive)" [ $alive = no ]
wait $SPID 2>/dev/null
vm_check live-kept "the live probe's canary ($live_canary) still runs" kill -0 "$live_canary"
kill -9 $LIVE; wait $LIVE 2>/dev/null
i=0; while kill -0 "$live_canary" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
alive=no; kill -0 "$live_canary" 2>/dev/null && alive=yes
vm_check live-canary-died "its canary died with it (alive: $alive)" [ $alive = no ]
# `thpshrink probe` cleans up at start too (the last one's cgroup)
THPSHRINK_DEBUGFS_ROOT=$D/nodbg thpshrink probe >$D/probe.out 2>&1
rest=$(ls -d $CG_ROOT/thpshrink-probe.* 2>/dev/null | tr '\n' ' ')
vm_check cli-clean "thpshrink probe at start removed the last stale scratch cgroup: left '${rest}'" [ -z "$rest" ]
exit 0
