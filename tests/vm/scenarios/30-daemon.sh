# SPDX-License-Identifier: GPL-2.0-or-later
# 30-daemon: thpshrinkd on a real kernel. Two cgroups with different policies: "thps-enf"
# (enforce, reclaim) and "thps-obs" (observe). The workload in thps-enf grows its low-util
# THPs; within two scan intervals the daemon gives back >= 95 % of that waste while the data
# stays intact; thps-obs is never touched; /metrics (busybox wget) shows both; a broken policy
# dropped in at runtime is rejected and the old set keeps working; SIGTERM exits 0.

INTERVAL=4
PORT=9477
D=/tmp/thpsd
metrics() { wget -q -O - "http://127.0.0.1:$PORT/metrics" 2>/dev/null; }
metric() { # NAME CGROUP -> value (0 if absent)
	metrics | awk -v n="$1" -v c="cgroup=\"$2\"" 'index($0, n "{") == 1 && index($0, c) { v = $NF } END { print v + 0 }'
}
metric_plain() { metrics | awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }'; }

if ! command -v thpshrinkd >/dev/null 2>&1; then
	vm_fail present "thpshrinkd is not in the initramfs"
	exit 0
fi
# A kernel without memory.reclaim must run the daemon observe-only and say so.
mkdir -p $D/pol $D/state
# /metrics is on loopback; the initramfs does not bring it up.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
ENF=$(vm_cgroup_new thps-enf) OBS=$(vm_cgroup_new thps-obs)
if [ ! -e "$ENF/memory.reclaim" ]; then
	thpshrinkd --once --listen none --policy-dir $D/pol --state-dir $D/state >$D/once.log 2>&1
	vm_check observe-only "no memory.reclaim: $(grep -o 'Observe-only.*' $D/once.log)" grep -q 'Observe-only' $D/once.log
	exit 0
fi
# Low-util THPs are split by reclaim's underused-THP shrinker only past max_ptes_none.
vm_set_thp_knob khugepaged/max_ptes_none 409

cat >$D/pol/10-enf.json <<'JEOF'
{ "name": "enf", "match": { "cgroup": "/thps-enf" }, "mode": "enforce", "action": "reclaim",
  "trigger": { "min_waste": "2M" }, "cooldown": "1s",
  "max_bytes_per_action": "1G", "max_bytes_per_sec": "1G" }
JEOF
cat >$D/pol/20-obs.json <<'JEOF'
{ "name": "obs", "match": { "cgroup": "/thps-obs" }, "mode": "observe", "action": "reclaim",
  "trigger": { "min_waste": "2M" } }
JEOF
chmod 644 $D/pol/*.json

# 4 full THPs beside: the scan memo carries them (below: found by PAGEMAP_SCAN's runs, 6.7+)
vm_bloat_start thps-obs --mix 8:16,512:4 || { vm_fail bloat "observe workload did not start"; exit 0; }
OBS_PID=$BLOAT_PID OBS_LOG=$BLOAT_LOG
OBS_MEM0=$(vm_mem_current thps-obs)

# --scan-cpu 100: under TCG a pass costs 10-50x the CPU it costs on hardware, and the default
# 5 % budget would space passes far beyond two intervals (measured: 34.9 s instead of 6.3 s).
thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT --interval $INTERVAL \
	--scan-cpu 100 -v >$D/daemon.log 2>&1 &
DPID=$!
i=0
until metrics | grep -q '^thpshrink_scans_total [1-9]'; do
	i=$((i + 1)); [ $i -le 600 ] || break; sleep 0.1
done
ok=no; metrics | grep -q '^thpshrink_scans_total [1-9]' && ok=yes
vm_check started "first pass served on :$PORT" [ $ok = yes ]
if [ $ok != yes ]; then
	sed 's/^/# daemon: /' $D/daemon.log | tail -20
	kill $DPID; wait $DPID
	vm_bloat_stop $OBS_PID
	exit 0
fi
# The start log names, per folio size the probe measured, the split mechanism and why.
pmd_kib=$(($(vm_thp_knob hpage_pmd_size) / 1024))
vm_check start-log-mechanism "$(grep -o "Probe: $pmd_kib KiB folios split by.*" $D/daemon.log | cut -c1-200)" \
	grep -q "Probe: $pmd_kib KiB folios split by process_madvise: " $D/daemon.log
vm_check start-log-cold "$(grep -o "Probe measured $pmd_kib KiB folios.*" $D/daemon.log | cut -c1-200)" \
	grep -q "Probe measured $pmd_kib KiB folios .*process_madvise(MADV_COLD) freed [0-9]* %" $D/daemon.log
if grep -q 'Sources: none' $D/daemon.log; then
	vm_skip reclaim "thpshrinkd built without the scanner source (merge branch scanner): no per-cgroup figures"
	kill $DPID; wait $DPID
	vm_bloat_stop $OBS_PID
	exit 0
fi

# The enforce workload grows after the daemon started.
T0=$(vm_uptime)
vm_bloat_start thps-enf --mix 8:64 || { vm_fail bloat "enforce workload did not start"; kill $DPID; exit 0; }
ENF_PID=$BLOAT_PID ENF_LOG=$BLOAT_LOG
ENF_MEM0=$(vm_mem_current thps-enf)
# The daemon may act while the workload is still faulting in (its exec triggers a prompt pass),
# so the waste it must give back is the most its decisions saw at once (it may ask more than
# once: the RFC kernel frees on a later ask), and what remains must be under 5 % of the mix's
# own waste (the mix's parameters alone: 64 THPs x 504 zero subpages).
mix_waste=$(vm_planted_waste --mix 8:64) mix_total=$((64 * $(vm_thp_knob hpage_pmd_size)))
given=0 asked=0 w=0 T_ASK=
i=0
while [ $i -lt $((INTERVAL * 2 * 10 + 100)) ]; do
	given=$(metric thpshrink_given_back_bytes_total /thps-enf)
	asked=$(grep -o "cgroup '/thps-enf': policy 'enf', .* waste [0-9]* B" $D/daemon.log |
		sed 's/.* waste \([0-9]*\) B/\1/' | sort -n | tail -1)
	asked=${asked:-0}
	w=$(metric thpshrink_cgroup_waste_bytes /thps-enf)
	[ -z "$T_ASK" ] && [ "$(metric thpshrink_requested_bytes_total /thps-enf)" -gt 0 ] && T_ASK=$(vm_uptime)
	[ "$asked" -gt 0 ] && [ $((given * 100)) -ge $((asked * 95)) ] && [ $((w * 20)) -le "$mix_waste" ] && break
	# 6.1 gives nothing back (below): one interval after its ask was logged, nothing more comes
	[ "$THPS_KCLASS" = none ] && [ -n "$T_ASK" ] && grep -q "cgroup '/thps-enf': reclaim asked" $D/daemon.log &&
		awk -v a=$T_ASK -v n="$(vm_uptime)" -v d=$INTERVAL 'BEGIN { exit !(n - a >= d) }' && break
	sleep 0.1; i=$((i + 1))
done
T1=$(vm_uptime)
ENF_MEM1=$(vm_mem_current thps-enf)
# What the daemon measured around its own actions (memory.current before/after each one).
freed=$given
w=$(metric thpshrink_cgroup_waste_bytes /thps-enf)
secs=$(awk -v a=$T0 -v b=$T1 'BEGIN{printf "%.1f", b-a}')
echo "# enforce: mix waste $(vm_mib $mix_waste) MiB, asked $(vm_mib $asked) MiB, waste now $(vm_mib $w) MiB, memory.current $(vm_mib $ENF_MEM0) -> $(vm_mib $ENF_MEM1) MiB, given back (metric) $(vm_mib $given) MiB, $secs s"
seen=$(grep -o "cgroup '/thps-enf': policy 'enf', THPs [0-9]*, low-util [0-9]*, waste [0-9]*" $D/daemon.log | head -1)
vm_check waste-seen "${seen:-no decision logged for /thps-enf}" [ -n "$seen" ]
ok=no; [ "$asked" -gt 0 ] && [ $((freed * 100)) -ge $((asked * 95)) ] && [ $((w * 20)) -le "$mix_waste" ] && ok=yes
if [ "$THPS_KCLASS" = none ] && [ $ok = no ]; then
	# 6.1 has no underused-THP shrinker: memory.reclaim cannot split THPs, and without swap it
	# frees nothing. The daemon must have asked and said what it got.
	ok=no; grep -q "cgroup '/thps-enf': reclaim asked" $D/daemon.log && ok=yes
	vm_check reclaim-reported-k61 "6.1 cannot free THP zero subpages by reclaim; the daemon asked and reported $(vm_mib $freed) MiB back" [ $ok = yes ]
else
	vm_check reclaimed-95 "freed $(vm_mib $freed) of $(vm_mib $asked) MiB waste seen, $(vm_mib $w) MiB left, within $secs s (2 intervals = $((INTERVAL * 2)) s + scan time)" \
		[ $ok = yes ]
	# the kernel's side: memory.current fell by >= 95 % of the mix's waste, not only the daemon's
	# own measure of it; from the peak or the 64 THPs planted, whichever is more (the daemon
	# may split the first THPs before the last are faulted in: the peak then never holds all)
	peak=$(cat $CG_ROOT/thps-enf/memory.peak 2>/dev/null || echo "$ENF_MEM0")
	kfreed=""; vm_num "$peak" "$ENF_MEM1" && kfreed=$(( (peak > mix_total ? peak : mix_total) - ENF_MEM1))
	vm_check kernel-given-back "memory.current peak $peak (planted $mix_total) -> $ENF_MEM1: $(vm_mib "${kfreed:-0}") MiB less of $(vm_mib $mix_waste) MiB planted (bound 95 %)" \
		vm_pct_ge "$kfreed" "$mix_waste" 95
fi
# The daemon's part: its first memory.reclaim for the workload within two intervals, plus the
# 6 s a pass over the workload may take under TCG. On 6.12 the kernel frees at the write, so the
# memory must be back within that bound too. The RFC kernel frees only THPs its own
# thp_utilization scan has listed (that scan took 9 s under TCG on a loaded host, 16 s in all
# were seen), 6.1 not at all: there the bound applies to the ask.
ask_secs=$(awk -v a=$T0 -v b=${T_ASK:-999999} 'BEGIN{printf "%.1f", b-a}')
bound=$((INTERVAL * 2 + 6))
if [ "$THPS_KCLASS" = upstream ]; then
	vm_check within-two-intervals "first ask after $ask_secs s, memory back after $secs s (bound $bound s)" \
		awk -v a=$ask_secs -v s=$secs -v b=$bound 'BEGIN { exit !(a <= b && s <= b) }'
else
	back="memory back after $secs s"; [ "$THPS_KCLASS" = none ] && back="6.1 gives nothing back"
	vm_check within-two-intervals "first ask after $ask_secs s (bound $bound s); $back" \
		awk -v a=$ask_secs -v b=$bound 'BEGIN { exit !(a <= b) }'
fi
vm_check_bloat data-intact $ENF_PID $ENF_LOG

# The observe cgroup: decisions recorded as observe, nothing asked, memory unchanged.
OBS_MEM1=$(vm_mem_current thps-obs)
ok=no; [ "$(metric thpshrink_requested_bytes_total /thps-obs)" = 0 ] && [ "$OBS_MEM1" -ge $((OBS_MEM0 * 95 / 100)) ] && ok=yes
vm_check observe-untouched "memory.current $(vm_mib $OBS_MEM0) -> $(vm_mib $OBS_MEM1) MiB, requested $(metric thpshrink_requested_bytes_total /thps-obs)" \
	[ $ok = yes ]
# Both cgroups in /metrics: the observe cgroup's THPs and the enforce cgroup's reclaim counters
# (its THPs are split by now; its THP series were in the passes before).
metrics >$D/m
ok=no; grep -q 'thpshrink_cgroup_thps{cgroup="/thps-obs"' $D/m &&
	grep -q 'thpshrink_given_back_bytes_total{cgroup="/thps-enf",inode="[0-9]*",action="reclaim"}' $D/m && ok=yes
vm_check metrics-both "both cgroups in /metrics ($(wc -l <$D/m) lines)" [ $ok = yes ]
vm_check observe-decisions "observe actions recorded for /thps-obs" [ "$(metric thpshrink_actions_total /thps-obs)" -gt 0 ]

# A broken policy at runtime: rejected, the old set stays and keeps working.
printf '{ "name": "bad", "match": { "cgroup": "/thps-enf" }, "mode": "always" }\n' >$D/pol/30-bad.json
kill -HUP $DPID
i=0
until [ "$(metric_plain thpshrink_policy_load_errors_total)" -ge 1 ] || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
vm_check reload-rejected "$(grep -o 'Policy reload rejected.*' $D/daemon.log | head -1 | cut -c1-120)" \
	grep -q 'Policy reload rejected, keeping the 2 policies' $D/daemon.log
vm_check old-set-kept "thpshrink_policies $(metric_plain thpshrink_policies)" [ "$(metric_plain thpshrink_policies)" = 2 ]
vm_bloat_stop $ENF_PID
before=$(metric thpshrink_given_back_bytes_total /thps-enf)
n0=$(grep -c "cgroup '/thps-enf': policy 'enf'" $D/daemon.log)
vm_bloat_start thps-enf --mix 8:32 || vm_fail bloat "second enforce workload did not start"
i=0
if [ "$THPS_KCLASS" = none ]; then
	# 6.1 gives nothing back, so the engine backs off (cooldown doubled per useless action):
	# the old set working means the enforce policy keeps deciding for the new workload.
	until [ "$(grep -c "cgroup '/thps-enf': policy 'enf'" $D/daemon.log)" -gt "$n0" ] || [ $i -gt $((INTERVAL * 30)) ]; do sleep 0.1; i=$((i + 1)); done
	n1=$(grep -c "cgroup '/thps-enf': policy 'enf'" $D/daemon.log)
	vm_check old-set-works "decisions of policy 'enf' after the bad reload: $n0 -> $n1 ($(grep "cgroup '/thps-enf'" $D/daemon.log | tail -1 | sed 's/.*→ //' | cut -c1-100))" [ "$n1" -gt "$n0" ]
else
	until [ "$(metric thpshrink_given_back_bytes_total /thps-enf)" -gt "$before" ] || [ $i -gt $((INTERVAL * 30)) ]; do sleep 0.1; i=$((i + 1)); done
	after=$(metric thpshrink_given_back_bytes_total /thps-enf)
	vm_check old-set-works "given back by /thps-enf after the bad reload: $(vm_mib $before) -> $(vm_mib $after) MiB" [ "$after" -gt "$before" ]
fi
vm_bloat_stop $BLOAT_PID

# The scan memo finds carried THPs by their PAGEMAP_SCAN run where the kernel has the ioctl
# (6.7+), and reads every head PFN where it has not (6.1); the daemon says which, once.
kv=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')
trusted=
i=0
while [ $i -lt $((INTERVAL * 3 * 10)) ]; do
	trusted=$(sed -n 's/.*"folios_trusted": *\([0-9]*\).*/\1/p' $D/state/status.json 2>/dev/null | head -1)
	[ "$kv" -lt 6007 ] || [ "${trusted:-0}" -gt 0 ] && break
	sleep 0.1; i=$((i + 1))
done
if [ "$kv" -ge 6007 ]; then
	vm_check memo-trusted "$(uname -r): $trusted THPs of the last pass carried by their PAGEMAP_SCAN run; $(grep -o 'Scan memo:.*' $D/daemon.log | cut -c1-90)" \
		sh -c "[ -n '$trusted' ] && [ '$trusted' -gt 0 ] && [ \"\$(grep -c 'Scan memo: carried THPs are found by their PAGEMAP_SCAN runs' $D/daemon.log)\" = 1 ]"
else
	vm_check memo-pfn-fallback "$(uname -r): $trusted trusted; $(grep -o 'Scan memo:.*' $D/daemon.log | cut -c1-90)" \
		sh -c "[ '$trusted' = 0 ] && [ \"\$(grep -c 'Scan memo: no PAGEMAP_SCAN' $D/daemon.log)\" = 1 ]"
fi

kill -TERM $DPID
wait $DPID
rc=$?
vm_check sigterm "exit status $rc" [ $rc = 0 ]
vm_bloat_stop $OBS_PID
grep -E "cgroup '/thps-(enf|obs)'" $D/daemon.log | tail -8 | sed 's/^/# /'
