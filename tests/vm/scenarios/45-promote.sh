# SPDX-License-Identifier: GPL-2.0-or-later
# 45-promote: thpshrink promote --cgroup, then thpshrinkd with a promote policy, under THP=never
# and THP=madvise. In the target cgroup a thpshrink-dense workload (it never madvises: no THP of
# its own) holds 32 MiB of dense memory, 8 MiB sparse (1 page in 8) and 8 MiB zero-page (read
# only); beside it in the same cgroup a second one called PR_SET_THP_DISABLE; a sibling cgroup
# holds a third (the daemon's policy for it promotes but observes). Checks: every dense range of
# the first becomes a THP, its sparse and zero-page ranges get none and keep their Rss, the
# PR_SET_THP_DISABLE process and the sibling get none, the target's memory.current grows by
# <= 1 %, every workload's data verifies; the daemon's first pass promotes exactly the policy's
# max_bytes_per_pass (5/8 of the dense memory), the second the rest; the report shows the dense
# memory before and not after; the finder is PAGEMAP_SCAN where the kernel has it (6.7+) and
# pagemap elsewhere (6.1), which keeps to its budget.
# vm-timeout: 900

D=/tmp/thps-promote
mkdir -p $D
PORT=9478
DMB=32 SMB=8 ZMB=8
NR=$((DMB / 2))
metric() { # NAME FRAGMENT -> the sum of the series holding FRAGMENT
	wget -q -O - "http://127.0.0.1:$PORT/metrics" 2>/dev/null |
		awk -v n="$1" -v c="$2" 'index($0, n "{") == 1 && index($0, c) { v += $NF } END { print v + 0 }'
}
# dense_start CG NAME ARGS...: thpshrink-dense inside CG, waits for its "before:" line.
dense_start() {
	_cg=$(vm_cgpath "$1") _n=$2; shift 2
	rm -f $D/$_n.out
	sh -c "echo \$\$ > '$_cg/cgroup.procs' && exec thpshrink-dense --dense-mb $DMB --sparse-mb $SMB --zero-mb $ZMB --wait $*" \
		>$D/$_n.out 2>&1 &
	eval "${_n}_PID=\$!"
	_i=0
	while ! grep -q '^before:' $D/$_n.out 2>/dev/null && [ $_i -lt 1200 ]; do sleep 0.1; _i=$((_i + 1)); done
	grep -q '^before:' $D/$_n.out || { echo "# thpshrink-dense $_n never got ready: $(cat $D/$_n.out)"; return 1; }
}
# dense_finish NAME: SIGUSR1, waits for the workload to print its "after" state and exit.
dense_finish() {
	eval "_p=\$${1}_PID"
	kill -USR1 "$_p" 2>/dev/null
	wait "$_p" 2>/dev/null
}
v() { sed -n "s/^$2:.* $3=\([0-9]*\).*/\1/p" $D/$1.out | head -1; }
# check_workloads TAG MC0: the checks of one round, after dense_finish of all three.
check_workloads() {
	_t=$1
	vm_check $_t.dense-thp "target: $(v tgt after dense_thp) of $((DMB << 20)) dense bytes are THPs" \
		[ "$(v tgt after dense_thp)" = $((DMB << 20)) ]
	vm_check $_t.sparse "target's sparse range: THP $(v tgt after sparse_thp), Rss $(v tgt before sparse_rss) -> $(v tgt after sparse_rss)" \
		[ "$(v tgt after sparse_thp)" = 0 -a "$(v tgt after sparse_rss)" = "$(v tgt before sparse_rss)" ]
	vm_check $_t.zero "target's zero-page range: THP $(v tgt after zero_thp), Rss $(v tgt before zero_rss) -> $(v tgt after zero_rss)" \
		[ "$(v tgt after zero_thp)" = 0 -a "$(v tgt after zero_rss)" = "$(v tgt before zero_rss)" ]
	vm_check $_t.thp-disabled "PR_SET_THP_DISABLE process: $(v dis after dense_thp) THP bytes" \
		[ "$(v dis after dense_thp)" = 0 ]
	vm_check $_t.sibling "sibling cgroup's process: $(v sib after dense_thp) THP bytes" \
		[ "$(v sib after dense_thp)" = 0 ]
	for _w in tgt dis sib; do
		vm_check $_t.data-$_w "$(grep '^data:' $D/$_w.out)" grep -q '^data: verified' $D/$_w.out
	done
}

# thps.promote-hostile-only=1 on the kernel's command line (the bench) runs only the last part
only_hostile=$(sed -n 's/.*thps\.promote-hostile-only=\(1\).*/\1/p' /proc/cmdline)
for mode in never madvise; do
	[ "$only_hostile" = 1 ] && break
	if ! grep -q "$mode" $THP_SYS/enabled; then
		vm_skip $mode "THP mode $mode not offered"
		continue
	fi
	vm_set_thp_knob enabled $mode
	# --- the CLI
	TG=$(vm_cgroup_new thps-pr-$mode) SB=$(vm_cgroup_new thps-prs-$mode)
	dense_start $TG tgt && dense_start $TG dis --thp-disable && dense_start $SB sib ||
		{ vm_fail $mode.cli.start "a workload did not start"; continue; }
	MC0=$(vm_mem_current $TG) SMC0=$(vm_mem_current $SB)
	# the report shows the opportunity: the target's dense memory (the PR_SET_THP_DISABLE
	# process has none to offer)
	thpshrink report --cgroup /thps-pr-$mode >$D/report0.out 2>&1
	grep -iE 'error|fail|dense' $D/report0.out | head -5 | sed 's/^/# report: /'
	vm_check $mode.report.before "$(grep 'dense in small pages' $D/report0.out | head -1)" \
		grep -q "dense in small pages .*($((DMB << 20)) bytes)" $D/report0.out
	# the pagemap finder (the only one before 6.7) keeps to its budget: 8 MiB looked at
	thpshrink promote --pid $tgt_PID --dry-run --finder pagemap --fallback-budget 8M >$D/budget.out 2>&1
	vm_check $mode.fallback-budget "$(grep '^finder:' $D/budget.out)" \
		grep -q '^finder: pagemap, 1 processes, looked at 8388608 bytes.*stopped at --fallback-budget' $D/budget.out
	T0=$(vm_uptime)
	thpshrink promote --cgroup /thps-pr-$mode >$D/cli.out 2>&1
	rc=$?
	T1=$(vm_uptime)
	MC1=$(vm_mem_current $TG) SMC1=$(vm_mem_current $SB)
	sed 's/^/# promote: /' $D/cli.out
	vm_check $mode.cli.exit "thpshrink promote exit $rc in $(echo "$T0 $T1" | awk '{printf "%.1f", $2 - $1}') s" [ $rc = 0 ]
	vm_check $mode.cli.summary "$(grep '^summary:' $D/cli.out | cut -c1-120)" \
		grep -q "^summary: found=$NR collapsed=$NR verified=$NR refused=0 disabled=1 " $D/cli.out
	if uname -r | awk -F. '{ exit !($1 > 6 || ($1 == 6 && $2 + 0 >= 7)) }'; then
		vm_check $mode.cli.finder "$(grep '^finder:' $D/cli.out)" grep -q '^finder: PAGEMAP_SCAN' $D/cli.out
	else
		vm_check $mode.cli.finder "no PAGEMAP_SCAN before 6.7: $(grep '^finder:' $D/cli.out)" grep -q '^finder: pagemap' $D/cli.out
	fi
	vm_check $mode.cli.memory "memory.current $MC0 -> $MC1 (<= +1 %)" [ $(((MC1 - MC0) * 100)) -le "$MC0" ]
	vm_check $mode.cli.sibling-memory "sibling memory.current $SMC0 -> $SMC1 (<= +1 %)" [ $(((SMC1 - SMC0) * 100)) -le "$SMC0" ]
	thpshrink report --cgroup /thps-pr-$mode >$D/report1.out 2>&1
	vm_check $mode.report.after "$(grep 'dense in small pages' $D/report1.out | head -1)" \
		grep -q "dense in small pages .*(0 bytes)" $D/report1.out
	dense_finish tgt; dense_finish dis; dense_finish sib
	check_workloads $mode.cli
	rmdir $TG $SB 2>/dev/null

	# --- the daemon, with a promote policy on the target only
	mkdir -p $D/pol-$mode $D/state-$mode
	ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
	# 5/8 of the dense memory per pass: the first pass promotes exactly that much, the second
	# the rest and still has budget left for the PR_SET_THP_DISABLE process behind it
	cat >$D/pol-$mode/10-promote.json <<JEOF
{ "name": "dense", "match": { "cgroup": "/thps-pd-$mode" }, "mode": "enforce",
  "promote": { "max_bytes_per_pass": "$((DMB * 5 / 8))M" } }
JEOF
	# the sibling's policy promotes too, but observes: it finds, and collapses nothing
	cat >$D/pol-$mode/20-observe.json <<JEOF
{ "name": "dense-observe", "match": { "cgroup": "/thps-pds-$mode" }, "mode": "observe",
  "promote": { "max_bytes_per_pass": "1G" } }
JEOF
	chmod 644 $D/pol-$mode/*.json
	TG=$(vm_cgroup_new thps-pd-$mode) SB=$(vm_cgroup_new thps-pds-$mode)
	dense_start $TG tgt && dense_start $TG dis --thp-disable && dense_start $SB sib ||
		{ vm_fail $mode.daemon.start "a workload did not start"; continue; }
	MC0=$(vm_mem_current $TG)
	thpshrinkd --policy-dir $D/pol-$mode --state-dir $D/state-$mode --listen 127.0.0.1:$PORT \
		--interval 4 --scan-cpu 100 -v >$D/daemon.log 2>&1 &
	DPID=$!
	i=0 first=
	until [ "$(metric thpshrink_promoted_ranges_total "cgroup=\"/thps-pd-$mode\"")" -ge $NR ]; do
		[ -n "$first" ] || { b=$(metric thpshrink_promoted_bytes_total "cgroup=\"/thps-pd-$mode\""); [ "$b" = 0 ] || first=$b; }
		i=$((i + 1)); [ $i -le 900 ] || break; sleep 0.1
	done
	vm_check $mode.daemon.max-bytes-per-pass "first pass promoted ${first:-nothing} bytes (max_bytes_per_pass $((DMB * 5 / 8))M)" \
		[ "$first" = $((DMB * 5 / 8 << 20)) ]
	MC1=$(vm_mem_current $TG)
	n=$(metric thpshrink_promoted_ranges_total "cgroup=\"/thps-pd-$mode\"")
	vm_check $mode.daemon.promoted "thpshrink_promoted_ranges_total $n (want $NR), after $((i / 10)) s" [ "$n" = $NR ]
	vm_check $mode.daemon.bytes "thpshrink_promoted_bytes_total $(metric thpshrink_promoted_bytes_total "cgroup=\"/thps-pd-$mode\"")" \
		[ "$(metric thpshrink_promoted_bytes_total "cgroup=\"/thps-pd-$mode\"")" = $((DMB << 20)) ]
	vm_check $mode.daemon.sibling-metric "no promote series for the sibling" \
		[ "$(metric thpshrink_promoted_ranges_total "cgroup=\"/thps-pds-$mode\"")" = 0 ]
	vm_check $mode.daemon.disabled-metric "thpshrink_promote_failures_total{reason=thp_disabled} $(metric thpshrink_promote_failures_total 'reason="thp_disabled"')" \
		[ "$(metric thpshrink_promote_failures_total 'reason="thp_disabled"')" -ge 1 ]
	vm_check $mode.daemon.memory "memory.current $MC0 -> $MC1 (<= +1 %)" [ $(((MC1 - MC0) * 100)) -le "$MC0" ]
	sleep 5 # one more pass: nothing more to promote, nothing split
	thpshrink explain --state-dir $D/state-$mode /thps-pd-$mode >$D/explain.out 2>&1
	sed -n 's/^/# explain: /p' $D/explain.out | grep -i promot
	thpshrink explain --state-dir $D/state-$mode /thps-pds-$mode >$D/explain-obs.out 2>&1
	vm_check $mode.daemon.explain-observe "$(grep '^promote:' $D/explain-obs.out | cut -c1-150)" \
		grep -q "^promote: *policy 'dense-observe' observes: $((DMB << 20)) dense bytes found, not promoted" $D/explain-obs.out
	vm_check $mode.daemon.explain "$(grep '^promote:' $D/explain.out | cut -c1-150)" grep -q "^promote: *policy 'dense'" $D/explain.out
	vm_check $mode.daemon.once "promoted once: $(metric thpshrink_promoted_ranges_total "cgroup=\"/thps-pd-$mode\"") ranges after another pass" \
		[ "$(metric thpshrink_promoted_ranges_total "cgroup=\"/thps-pd-$mode\"")" = $NR ]
	wget -q -O $D/metrics-$mode.prom "http://127.0.0.1:$PORT/metrics" && vm_export promote-$mode.prom $D/metrics-$mode.prom
	kill $DPID; wait $DPID
	drc=$?
	vm_check $mode.daemon.exit "thpshrinkd exit $drc" [ $drc = 0 ]
	dense_finish tgt; dense_finish dis; dense_finish sib
	check_workloads $mode.daemon
	grep -i 'promot' $D/daemon.log | head -5 | sed 's/^/# daemon: /'
	rmdir $TG $SB 2>/dev/null
done

# --- hostile tenants (issue 33), under THP=never, thpshrinkd with one promote policy over all of
# them; sizes reduced for CI (tests/bench/promote-daemon.sh runs the full ones).
# 1. A tenant whose first dense range has a page held by a pipe (vmsplice: the collapse answers
#    EAGAIN) and, started after it (so /proc lists it later), a plain dense one: the second still
#    gets all its THPs in the same passes, and the first one's failure is said per cgroup.
# 2. A tenant that drops and re-touches one page per 2 MiB of 64 MiB every 500 ms: each range
#    the daemon collapsed comes back dense but not a THP. Over P passes the daemon collapses a
#    range at most floor(log2 P) + 1 times (the backoff), not P times: asserted from the
#    daemon's counter and from what the tenant saw in its own smaps.
# 3. 20 processes of 8,000 VMAs each (CI scale; the bench: 190 of 32,000): while passes walk
#    them, status.json is rewritten at least every 20 s, SIGHUP is logged within 1 s, and
#    SIGTERM during a pass ends the daemon within 1 s.
RMB=64
NRR=$((RMB / 2))
# 8 processes of 20,000 VMAs (160,000 in all): tens of thousands per process, as the issue
# asks, at the scan cost CI affords (under TCG the scan of 20 x 32,000 took 153 s a pass, the
# promote step 10-18 s); tests/bench/promote-daemon.sh boots with thps.pvprocs=190
# thps.pvvmas=32000, the issue's full size
VMAS=20000 VPROCS=8
v=$(sed -n 's/.*thps\.pvprocs=\([0-9]*\).*/\1/p' /proc/cmdline)
[ -n "$v" ] && VPROCS=$v
v=$(sed -n 's/.*thps\.pvvmas=\([0-9]*\).*/\1/p' /proc/cmdline)
[ -n "$v" ] && VMAS=$v
# tenant_start CG NAME ARGS...: thpshrink-tenant inside CG, waits for its "ready" line.
tenant_start() {
	_cg=$(vm_cgpath "$1") _n=$2; shift 2
	rm -f $D/$_n.out
	sh -c "echo \$\$ > '$_cg/cgroup.procs' && exec thpshrink-tenant $*" >$D/$_n.out 2>&1 &
	eval "${_n}_PID=\$!"
	_i=0
	while ! grep -q '^ready' $D/$_n.out 2>/dev/null && [ $_i -lt 1800 ]; do sleep 0.1; _i=$((_i + 1)); done
	grep -q '^ready' $D/$_n.out || { echo "# thpshrink-tenant $_n never got ready: $(cat $D/$_n.out)"; return 1; }
}
# metrics_at FILE: the metrics text, once (figures compared with each other come from one read)
metrics_at() { wget -q -O "$1" "http://127.0.0.1:$PORT/metrics" 2>/dev/null; }
mval() { # FILE NAME FRAGMENT
	awk -v n="$2" -v c="$3" '(index($0, n "{") == 1 || index($0, n " ") == 1) && (c == "" || index($0, c)) { v += $NF } END { print v + 0 }' "$1"
}
# backoff_bound P RANGES: the most collapses RANGES ranges get in P passes: floor(log2 P) + 1 each
backoff_bound() { awk -v p="$1" -v n="$2" 'BEGIN { k = 0; for (q = 2; q <= p + 0; q *= 2) k++; print n * (k + 1) }'; }
# log_wait PATTERN N SECS: until the daemon log holds N lines matching PATTERN; prints the wait
log_wait() {
	_t0=$(vm_uptime)
	while [ "$(grep -c "$1" $D/daemon-h.log)" -lt "$2" ]; do
		kill -0 $DPID 2>/dev/null || break
		awk -v a="$_t0" -v b="$(vm_uptime)" -v s="$3" 'BEGIN { exit !(b - a > s + 0) }' && break
		sleep 0.05
	done
	echo "$_t0 $(vm_uptime)" | awk '{ printf "%.2f", $2 - $1 }'
}

hostile() {
	vm_set_thp_knob enabled never
	ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
	mkdir -p $D/pol-h $D/state-h
	cat >$D/pol-h/10-promote.json <<JEOF
{ "name": "hostile", "match": { "cgroup": "/thps-ph*" }, "mode": "enforce",
  "promote": { "max_bytes_per_pass": "1G" } }
JEOF
	chmod 644 $D/pol-h/*.json
	PG=$(vm_cgroup_new thps-ph-pin) BG=$(vm_cgroup_new thps-ph-second) RG=$(vm_cgroup_new thps-ph-retouch)
	tenant_start $PG pin --pin 8 && dense_start $BG sec && tenant_start $RG ret --retouch $RMB ||
		{ vm_fail hostile.start "a tenant did not start"; return; }
	thpshrinkd --policy-dir $D/pol-h --state-dir $D/state-h --listen 127.0.0.1:$PORT \
		--interval 1 --scan-cpu 100 -v >$D/daemon-h.log 2>&1 &
	DPID=$!
	i=0
	until [ "$(metric thpshrink_promoted_ranges_total 'cgroup="/thps-ph-second"')" -ge $NR ]; do
		i=$((i + 1)); [ $i -le 600 ] || break; sleep 0.1
	done
	metrics_at $D/m-pin.prom
	vm_check hostile.pinned-first "second tenant: $(mval $D/m-pin.prom thpshrink_promoted_ranges_total 'cgroup="/thps-ph-second"') of $NR ranges promoted after $((i / 10)) s, in $(mval $D/m-pin.prom thpshrink_scans_total '') passes, beside the pinned tenant" \
		[ "$(mval $D/m-pin.prom thpshrink_promoted_ranges_total 'cgroup="/thps-ph-second"')" = $NR ]
	thpshrink explain --state-dir $D/state-h /thps-ph-pin >$D/explain-pin.out 2>&1
	vm_check hostile.pinned-said "pinned tenant's explain: $(grep '^promote:' $D/explain-pin.out | cut -c1-200)" \
		grep -q "^promote:.*process $pin_PID" $D/explain-pin.out
	vm_check hostile.pinned-metric "thpshrink_promote_failures_total $(grep '^thpshrink_promote_failures_total' $D/m-pin.prom | awk '$NF > 0' | tr '\n' ' ')" \
		[ "$(mval $D/m-pin.prom thpshrink_promote_failures_total '')" -ge 1 ]
	dense_finish sec
	vm_check hostile.second-thp "second tenant's own smaps: $(v sec after dense_thp) of $((DMB << 20)) dense bytes are THPs" \
		[ "$(v sec after dense_thp)" = $((DMB << 20)) ]
	# the re-touching tenant: passes go on for 20 s more, and until the daemon has made the 6
	# passes the check below needs (a loaded host slows them), at most 120 s in all
	sleep 20
	i=0
	until metrics_at $D/m-ret.prom; [ "$(mval $D/m-ret.prom thpshrink_scans_total '')" -ge 6 ]; do
		i=$((i + 1)); [ $i -le 1000 ] || break; sleep 0.1
	done
	metrics_at $D/m-ret.prom
	kill $DPID; wait $DPID
	sleep 1.2 # the tenant's next cycle sees the last collapses
	kill $ret_PID; wait $ret_PID
	P=$(mval $D/m-ret.prom thpshrink_scans_total '')
	C=$(mval $D/m-ret.prom thpshrink_promoted_ranges_total 'cgroup="/thps-ph-retouch"')
	S=$(sed -n 's/^retouch: .*thp_seen=\([0-9]*\).*/\1/p' $D/ret.out)
	echo "# retouch: $P passes, the daemon collapsed $C ranges of $NRR (bound $(backoff_bound "$P" $NRR), $((P * NRR)) without backoff); the tenant saw $S THPs: $(grep '^retouch' $D/ret.out)"
	vm_check hostile.retouch-passes "$P passes in the window (>= 6 to tell a backoff from none: 3 collapses per range against 6)" [ "$P" -ge 6 ]
	vm_check hostile.retouch-daemon "daemon's collapses $C in $P passes: >= $((2 * NRR)) (it re-collapses) and <= $(backoff_bound "$P" $NRR) (floor(log2 P) + 1 per range)" \
		[ "$C" -ge $((2 * NRR)) -a "$C" -le "$(backoff_bound "$P" $NRR)" ]
	vm_check hostile.retouch-tenant "THPs the tenant saw in its own smaps: $S, >= $NRR and <= $(backoff_bound $((P + 1)) $NRR)" \
		[ "$S" -ge $NRR -a "$S" -le "$(backoff_bound $((P + 1)) $NRR)" ]
	grep -E 'promot|Promote step' $D/daemon-h.log | tail -3 | sed 's/^/# daemon: /'
	kill $pin_PID; wait $pin_PID
	rmdir $PG $BG $RG 2>/dev/null

	# 3. many processes of many VMAs
	VG=$(vm_cgroup_new thps-ph-vmas)
	T0=$(vm_uptime)
	tenant_start $VG vmas --vmas $VMAS --procs $VPROCS || { vm_fail hostile.vmas-start "the tenant did not start"; return; }
	echo "# $VPROCS processes of $VMAS VMAs ready in $(echo "$T0 $(vm_uptime)" | awk '{ printf "%.1f", $2 - $1 }') s"
	rm -f $D/state-h/status.json
	thpshrinkd --policy-dir $D/pol-h --state-dir $D/state-h --listen 127.0.0.1:$PORT \
		--interval 2 --scan-cpu 100 -v >$D/daemon-h.log 2>&1 &
	DPID=$!
	log_wait 'Pass done' 1 300 >/dev/null
	# status.json's mtime every second from now on; no signal for 25 s (a reload rewrites it)
	(while kill -0 $DPID 2>/dev/null; do date -r $D/state-h/status.json +%s 2>/dev/null; sleep 1; done) >$D/hb.txt &
	HB=$!
	HB0=$(date +%s)
	sleep 25
	gap=$(awk -v end="$(date +%s)" 'NF == 0 { next } n++ && $1 != last { if ($1 - last > g) g = $1 - last } { last = $1 } END { if (!n) { print "none"; exit } if (end - last > g) g = end - last; print g + 0 }' $D/hb.txt)
	kill $HB; wait $HB 2>/dev/null
	vm_check hostile.vmas-heartbeat "status.json over $(($(date +%s) - HB0)) s of passes over $VPROCS x $VMAS VMAs: the longest gap $gap s (<= 21: 20 s and the clock's 1 s)" \
		[ "$gap" != none -a "$gap" -le 21 ]
	# the step's bounds (promote-bounds.h) on real processes: each walk of 20,000 VMAs is cut
	# at 8,192 and resumed, a pass reads 65,536 maps lines and one process's more at most
	metrics_at $D/m-vmas.txt
	# (status.json is pretty-printed; these keys are only in its top-level "promote")
	pl=$(sed -n 's/.*"maps_lines": *\([0-9]*\).*/\1/p' $D/state-h/status.json)
	pv=$(sed -n 's/.*"vmas": *\([0-9]*\).*/\1/p' $D/state-h/status.json)
	pres=$(sed -n 's/.*"resuming": *\([0-9]*\).*/\1/p' $D/state-h/status.json)
	dproc=$(mval $D/m-vmas.txt thpshrink_promote_deferred_total 'bound="process"')
	vm_check hostile.vmas-bounded "last step: ${pl:-none} maps lines (<= 65,536 + $VMAS + 100), ${pv:-none} VMAs (<= $VPROCS x 8,192), ${pres:-none} walks to resume; walks cut since start $dproc (>= $VPROCS: each process has $VMAS VMAs)" \
		[ -n "$pl" -a -n "$pv" ] && [ "$pl" -le $((65536 + VMAS + 100)) -a "$pv" -le $((VPROCS * 8192)) -a "$dproc" -ge "$VPROCS" ]
	# a SIGHUP every 0.5 s for 12 s: wherever the pass is, each is logged within 1 s
	worst=0 k=0
	while [ $k -lt 24 ]; do
		k=$((k + 1))
		kill -HUP $DPID
		w=$(log_wait 'SIGHUP: reloading' $k 30)
		worst=$(echo "$worst $w" | awk '{ print ($2 + 0 > $1 + 0) ? $2 : $1 }')
		sleep 0.5
	done
	vm_check hostile.vmas-reload "$k SIGHUPs 0.5 s apart during passes over $VPROCS x $VMAS VMAs: the slowest logged after $worst s (< 1 s)" \
		awk -v w="$worst" 'BEGIN { exit !(w + 0 < 1) }'
	# SIGTERM early in a pass (a quarter of the last scan's time after it starts: scans took
	# 15-53 s here, with the host's load): the pass's thread is walking the tenants, and the
	# daemon still ends at once
	# (a pass that starts: "Pass (timer)", not "Pass (timer) deferred: ...", which the
	# --scan-cpu budget says when the scan and promote step overspent)
	n=$(grep -c 'Pass ([a-z]*)$' $D/daemon-h.log)
	log_wait 'Pass ([a-z]*)$' $((n + 1)) 300 >/dev/null
	sd=$(sed -n 's/.*Pass done: .*, \([0-9.]*\) s$/\1/p' $D/daemon-h.log | tail -1)
	sleep "$(echo "$sd" | awk '{ printf "%.2f", $1 / 4 }')"
	T0=$(vm_uptime)
	kill $DPID
	while kill -0 $DPID 2>/dev/null; do sleep 0.02; done
	T1=$(vm_uptime)
	wait $DPID
	drc=$?
	echo "# vmas: $(grep -c 'Pass done' $D/daemon-h.log) passes ($(grep -c 'deferred' $D/daemon-h.log) deferred by --scan-cpu), scan $sd s; $(grep 'Promote step' $D/daemon-h.log | tail -1 | sed 's/.*thpshrinkd: //')"
	inpass=$(grep -c 'Leaving the scan in progress' $D/daemon-h.log)
	vm_check hostile.vmas-sigterm "SIGTERM $(echo "$T0 $T1" | awk '{ printf "%.2f", $2 - $1 }') s after it, $([ "$inpass" = 1 ] && echo 'during a pass' || echo 'between passes'), exit $drc (< 1 s, during a pass, 0)" \
		awk -v a="$T0" -v b="$T1" -v r="$drc" -v p="$inpass" 'BEGIN { exit !(b - a < 1 && r + 0 == 0 && p + 0 == 1) }'
	kill $vmas_PID; wait $vmas_PID
	rmdir $VG 2>/dev/null
}
# The hostile tenants test the daemon, not the kernel: on the kernels issue 33 names (6.12,
# 7.3), which keeps 2 min of TCG per boot off k61 and rfc.
if [ "$THPS_KERNEL" != k612 ] && [ "$THPS_KERNEL" != k73 ]; then
	vm_skip hostile "the daemon's hostile tenants run on k612 and k73 (2 min of TCG per boot)"
elif grep -q never $THP_SYS/enabled; then
	hostile
else
	vm_skip hostile "THP mode never not offered"
fi
