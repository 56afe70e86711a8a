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

for mode in never madvise; do
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
