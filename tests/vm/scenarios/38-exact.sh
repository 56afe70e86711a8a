# SPDX-License-Identifier: GPL-2.0-or-later
# vm-timeout: 600
# 38-exact: the exact give-back, on a node as production runs it. In the k612-lockdown and
# k73-lockdown boots the kernel runs under lockdown=integrity (Secure Boot's: debugfs refuses
# every write) with debugfs not mounted; khugepaged/max_ptes_none is 409 before any workload
# starts. One cgroup holds sparse folios (a few subpages used), partially mapped folios (written
# whole, then all but a few subpages MADV_DONTNEED) and full folios, and a process that reads a
# 48 MiB file (9p, page cache charged to the cgroup) every 0.5 s. Per folio size (PMD on k612,
# 16 KiB and 64 KiB mTHP on k73):
#   - `thpshrink reclaim --method split` gives back >= 95 % of the sparse and partially mapped
#     waste through process_madvise (memory.current less the page cache's change);
#   - the cgroup's file pages stay >= 95 % at every sample during the action, and fewer than 5 %
#     are read again (workingset_refault_file);
#   - the full folios stay folios, a sibling cgroup and every global THP knob are unchanged, the
#     data verifies;
# then the same through thpshrinkd with a policy that names no action (the default: the exact
# split, never memory.reclaim): >= 95 % of the planted waste, with the page cache kept as above.
# The planted waste is what thpshrink-bloat's parameters lay out (vm_planted_waste), not a
# figure of thpshrink's; 95 %: the charge stock and the workload's own pages move a little.
# In the lockdown boots, the daemon once more without CAP_SYS_NICE (tests/tools/thps-nocap),
# so that process_madvise is refused and nothing exact is left: it says so once at start, thpshrink_give_back_method and status.json say "none", the
# cgroup is refused with the reason, and the page cache stays; after a reload with
# "split_or_reclaim" it writes memory.reclaim and says so. On k61 (a split frees no zero subpage):
# the partially mapped folios' unmapped subpages are freed and the sparse ones are reported as
# not freeable (>= 95 % of the planted unmapped subpages). The RFC kernel: as upstream. The
# normal k612 and k73 boots (debugfs mounted, writable) run only the debugfs fallback (PMD THPs),
# without CAP_SYS_NICE: the same workload and reader in a cgroup, given back by `thps-nocap thpshrink reclaim --method split`, then in
# another by thps-nocap thpshrinkd with a policy that names no action: >= 95 % of the waste the
# workload planted (its own parameters, checked against its READY line) comes back, the full
# THPs stay THPs (thpcheck), the page cache stays as above, memory.reclaim is not written (no
# such line in the output or the log, thpshrink_actions_total has no reclaim); it says "Give
# back: process_madvise refused ... debugfs" once at start, thpshrink_give_back_method{method=
# "debugfs"} and status.json's give_back "debugfs".
PORT=9479
D=/tmp/thpsd-exact
DEBUGFS_LEG=""
case $THPS_KERNEL in
k612 | k73)
	if [ "$THPS_VARIANT" = lockdown ]; then
		ld=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/security/lockdown 2>/dev/null)
		vm_check lockdown "lockdown=${ld:-n/a}" [ "$ld" = integrity ]
		vm_check no-debugfs "split_huge_pages $(ls /sys/kernel/debug/split_huge_pages 2>&1 | head -1)" \
			[ ! -e /sys/kernel/debug/split_huge_pages ]
	else
		DEBUGFS_LEG=1
		vm_check debugfs-writable "$(ls -l /sys/kernel/debug/split_huge_pages 2>&1 | head -1)" \
			[ -w /sys/kernel/debug/split_huge_pages ]
	fi
	;;
esac
has_size() { case " $THPS_MTHP_SIZES " in *" $1 "*) return 0 ;; esac; return 1; }
case $THPS_KERNEL in
k73)
	SIZES=""
	has_size 16 && SIZES="$SIZES 16"
	has_size 64 && SIZES="$SIZES 64"
	[ -n "$SIZES" ] || vm_fail sizes "k73 offers no 16 or 64 KiB mTHP ($THPS_MTHP_SIZES)"
	;;
*) SIZES=2048 ;;
esac
PMD_KB=$(($(vm_thp_knob hpage_pmd_size) / 1024))
knobs() { # every global THP knob, one line
	for f in enabled defrag shrink_underused khugepaged/max_ptes_none khugepaged/max_ptes_swap \
		khugepaged/max_ptes_shared khugepaged/defrag $THP_SYS/hugepages-*kB/enabled; do
		case $f in /*) ;; *) f=$THP_SYS/$f ;; esac
		[ -f "$f" ] && printf '%s=%s ' "${f#$THP_SYS/}" "$(cat "$f")"
	done
}
only_size() { # KB: that size always, every other mTHP size never (the PMD size: its own knob)
	for d in $THP_SYS/hugepages-*kB; do
		[ -f "$d/enabled" ] || continue
		_k=${d##*/hugepages-}; _k=${_k%kB}
		if [ "$_k" = "$1" ]; then echo always > "$d/enabled"; else echo never > "$d/enabled"; fi
	done
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a * 100 / b; else print "n/a" }'; }

vm_set_thp_knob khugepaged/max_ptes_none 409

# --- the hot file, over 9p with the page cache ---
HOT=""
for m in netfs fscache 9pnet 9pnet_virtio 9p; do
	[ -f /exact/9p/$m.ko ] && { insmod /exact/9p/$m.ko 2>/dev/null || true; }
done
mkdir -p /hot
# 6.1's 9p takes fewer options than 6.12's: the first set that mounts
for o in ro,cache=loose,msize=262144 ro,cache=loose cache=loose; do
	mount -t 9p -o trans=virtio,version=9p2000.L,$o hot /hot 2>/tmp/hot.err && break
done
if [ -s /hot/hot.dat ]; then
	HOT=/hot/hot.dat
else
	vm_skip page-cache "no hot file over 9p: $(cat /tmp/hot.err /exact/missing 2>/dev/null | head -2 | tr '\n' ' ') $(dmesg | grep -i 9p | tail -2 | tr '\n' ' ')"
fi
# start_reader CG: reads the file every 0.5 s from inside CG; sets READER
start_reader() {
	[ -n "$HOT" ] || return 0
	# the file's pages are charged to the cgroup that reads them first: start afresh
	echo 1 > /proc/sys/vm/drop_caches
	sh -c "echo \$\$ > $(vm_cgpath "$1")/cgroup.procs; while :; do cat $HOT > /dev/null; sleep 0.5; done" &
	READER=$!
	i=0; while [ "$(vm_memstat "$1" file)" -lt $((45 << 20)) ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
	echo "# reader in $1: file $(vm_memstat "$1" file) bytes"
}
# sample_file CG OUT: memory.stat file every 50 ms into OUT until /tmp/stop-sampling exists
sample_file() {
	rm -f /tmp/stop-sampling
	( while [ ! -e /tmp/stop-sampling ]; do vm_memstat "$1" file; sleep 0.05; done > "$2" ) &
	SAMPLER=$!
}
stop_sampling() { touch /tmp/stop-sampling; wait "$SAMPLER" 2>/dev/null; }
# page_cache_checks CG FILE0 REFAULT0 SAMPLES WHAT
page_cache_checks() {
	[ -n "$HOT" ] || return 0
	_min=$(sort -n "$4" | head -1)
	_ref=$(( $(vm_memstat "$1" workingset_refault_file) - $3 ))
	vm_check "$5-file-kept" "file pages $2 -> min $_min bytes over $(wc -l < "$4") samples ($(pct "$_min" "$2") %)" \
		[ $((_min * 100)) -ge $(($2 * 95)) ]
	vm_check "$5-few-refaults" "refaults +$_ref pages of $(($2 / 4096)) file pages" \
		[ $((_ref * 100)) -lt $(($2 / 4096 * 5)) ]
}
# the thpshrink_give_back_method series METHOD is 1
wait_given_back() { # CGROUP PLANTED TRIES: every 0.5 s until 95 % of PLANTED is back (mc0, file0: before)
	_i=0
	while [ $_i -lt $3 ]; do
		_freed=$((mc0 - $(vm_mem_current $1) - (file0 - $(vm_memstat $1 file))))
		vm_pct_ge "$_freed" "$2" 95 && return 0
		sleep 0.5; _i=$((_i + 1))
	done
	return 1
}
method_metric_is() { vm_metrics | grep -qx "thpshrink_give_back_method{method=\"$1\"} 1"; }
split_policy() { # NAME CGROUP: the daemon's one policy, naming no action (the default: split)
	mkdir -p $D/pol $D/state
	ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
	printf '{ "name": "%s", "match": { "cgroup": "/%s" }, "mode": "enforce",\n  "trigger": { "min_waste": "2M" }, "cooldown": "2s",\n  "max_bytes_per_action": "1G", "max_bytes_per_sec": "1G" }\n' \
		"$1" "$2" >$D/pol/10-split.json
	chmod 644 $D/pol/*.json
}
# status.json's give_back object, blanks taken out (the file is pretty-printed)
status_give_back() { tr -d ' \n\t' < $D/state/status.json 2>&1 | grep -o '"give_back":{[^}]*}'; }
give_back_is() { # METHOD [PATTERN]: status.json says METHOD (and PATTERN)
	status_give_back | grep -q "^\"give_back\":{\"method\":\"$1\".*${2:-}"
}
# mix SIZE_KB: sparse, full and partially mapped folios of that size (94.5 MiB of zero and
# unmapped subpages for the PMD size, 21-22.5 MiB for the small ones: vm_planted_waste)
mix() {
	_sub=$(($1 / 4))
	case $1 in
	$PMD_KB) echo "--mix 8:24,$_sub:8 --partial 8:24" ;;
	# one used subpage of 16 is in bucket 0; of 4 it is bucket 2: 16 KiB sparse folios are empty
	*) _u=$((_sub >= 10 ? 1 : 0))
	   echo "--folio-size ${1}K --mix $_u:$((24 * PMD_KB / $1 / 4)),$_sub:64 --partial 1:$((24 * PMD_KB / $1 / 4))" ;;
	esac
}

# --- the normal k612 and k73 boots: without CAP_SYS_NICE where debugfs is mounted and
# writable, the split falls back to debugfs split_huge_pages. ---
# dbg_planted: the waste and unmapped bytes `mix $PMD_KB` plants (vm_planted_waste: 24 sparse
# THPs with 8 of 512 subpages used, 24 partially mapped with 8 of 512 mapped), if the workload's
# READY line says every THP of it was THP-backed (else empty, which fails the checks that use it)
dbg_planted() {
	grep -q 'thps=56 thp_backed=32 partial=24 ' /tmp/bloat-"$1".ready &&
		vm_planted_waste $(mix "$PMD_KB")
}
# dbg_start CG WHAT: a cgroup with the reader and the workload; sets file0 ref0 mc0 planted_g
dbg_start() {
	cg=$(vm_cgroup_new "$1")
	start_reader "$1"
	vm_bloat_start "$cg" $(mix "$PMD_KB") || { vm_fail "$2-start" "$(cat "$BLOAT_LOG")"; return 1; }
	file0=$(vm_memstat "$1" file) ref0=$(vm_memstat "$1" workingset_refault_file)
	mc0=$(vm_mem_current "$1")
	planted_g=$(dbg_planted "$1")
	vm_check "$2-planted" "$(cat /tmp/bloat-"$1".ready): ${planted_g:-?} bytes of waste planted" \
		[ -n "$planted_g" ]
}
# dbg_after CG WHAT: given back >= 95 % of the planted waste, the full THPs still THPs, the data
dbg_after() {
	mc1=$(vm_mem_current "$1") file1=$(vm_memstat "$1" file)
	freed=$((mc0 - mc1 - (file0 - file1)))
	vm_check "$2-gives-back-95pct" "memory.current $mc0 -> $mc1, file $file0 -> $file1: freed $freed bytes of ${planted_g:-?} planted ($(pct "$freed" "${planted_g:-0}") %)" \
		vm_pct_ge "$freed" "$planted_g" 95
	vm_thpcheck "$BLOAT_PID" "$BLOAT_START" "$BLOAT_END"
	vm_check "$2-full-kept" "full=$chk_full full_thp=$chk_full_thp (8 planted), THPs left $chk_thp" \
		[ "$chk_full_thp" = 8 ]
}
debugfs_leg() {
	only_size "$PMD_KB"
	t0=$(vm_uptime)
	# (a) the CLI
	dbg_start ex-dbg debugfs-cli || return 0
	sample_file ex-dbg /tmp/ex-g.samples
	out=$(thps-nocap thpshrink reclaim --cgroup ex-dbg --method split 2>&1); rc=$?
	stop_sampling
	echo "$out" | grep -v '^[0-9] ' | sed 's/^/# debugfs cli: /'
	vm_check debugfs-cli-mechanism "$(echo "$out" | grep -m1 '^kernel:' | cut -c1-120); $(echo "$out" | grep -m1 '^split:'); rc=$rc" \
		sh -c "printf '%s\n' \"\$1\" | grep -q '^kernel: debugfs split_huge_pages (no CAP_SYS_NICE' &&
			printf '%s\n' \"\$1\" | grep -q '^split: .* by debugfs$' && [ $rc = 0 ]" _ "$out"
	dbg_after ex-dbg debugfs-cli
	# memory.reclaim would have evicted page cache and says so in the note; neither happened
	vm_check debugfs-cli-no-reclaim "memory.reclaim in the output: $(echo "$out" | grep -c 'memory.reclaim') lines" \
		sh -c "! printf '%s\n' \"\$1\" | grep -q 'memory.reclaim'" _ "$out"
	page_cache_checks ex-dbg "$file0" "$ref0" /tmp/ex-g.samples debugfs-cli
	vm_check_bloat debugfs-cli-data-intact
	vm_bloat_stop
	[ -n "$HOT" ] && kill "$READER" 2>/dev/null

	# (b) thpshrinkd with a policy that names no action (the default, split)
	split_policy plain ex-dbgd
	dbg_start ex-dbgd debugfs-daemon || return 0
	sample_file ex-dbgd /tmp/ex-gd.samples
	thps-nocap thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT \
		--interval 2 --scan-cpu 100 -v > $D/debugfs.log 2>&1 &
	DPID=$!
	# passes until 95 % of the planted waste is back, or 40 s
	wait_given_back ex-dbgd "$planted_g" 80
	sleep 1 # the pass's status.json and metrics
	stop_sampling
	grep -E 'Give back:|Splits:|/ex-dbgd' $D/debugfs.log | head -4 | cut -c1-400 | sed 's/^/# debugfs daemon: /'
	kill -0 "$DPID" 2>/dev/null || tail -20 $D/debugfs.log | sed 's/^/# debugfs daemon log: /'
	vm_check debugfs-daemon-said-once "$(grep -c 'Give back: process_madvise refused' $D/debugfs.log) start-up lines: $(grep -m1 'Give back:' $D/debugfs.log | cut -c1-300)" \
		[ "$(grep -c 'Give back: process_madvise refused (.*no CAP_SYS_NICE.*): splits go through debugfs split_huge_pages' $D/debugfs.log)" = 1 ]
	vm_check debugfs-daemon-split-logged "$(grep -m1 -o "cgroup '/ex-dbgd': split.*" $D/debugfs.log | cut -c1-200)" \
		grep -q "cgroup '/ex-dbgd': split (debugfs) asked [1-9]" $D/debugfs.log
	vm_check debugfs-daemon-method-metric "$(vm_metrics | grep '^thpshrink_give_back_method' | tr '\n' ' ')" \
		method_metric_is debugfs
	vm_check debugfs-daemon-status-json "$(status_give_back)" give_back_is debugfs
	dbg_after ex-dbgd debugfs-daemon
	nsplit=$(vm_metric thpshrink_actions_total 'cgroup="/ex-dbgd"' 'action="split"')
	nrecl=$(vm_metric thpshrink_actions_total 'cgroup="/ex-dbgd"' 'action="reclaim"')
	no_reclaim() {
		[ "$nsplit" -gt 0 ] && [ "$nrecl" = 0 ] &&
			! grep -q "memory.reclaim for\|/ex-dbgd': reclaim\|as the policy allows" $D/debugfs.log
	}
	vm_check debugfs-daemon-no-reclaim "thpshrink_actions_total split $nsplit, reclaim $nrecl; memory.reclaim in the log: $(grep -c 'memory.reclaim for\|as the policy allows' $D/debugfs.log) lines" \
		no_reclaim
	page_cache_checks ex-dbgd "$file0" "$ref0" /tmp/ex-gd.samples debugfs-daemon
	[ -n "$HOT" ] && kill "$READER" 2>/dev/null
	vm_finish_bloat_and_daemon "$DPID"
	echo "# debugfs leg took $(awk "BEGIN { print $(vm_uptime) - $t0 }") s"
}
if [ -n "$DEBUGFS_LEG" ]; then
	if command -v thps-nocap >/dev/null; then
		debugfs_leg
	else
		vm_fail nocap "tests/tools/thps-nocap is not in the initramfs (make check builds it)"
	fi
	return 0 2>/dev/null || exit 0
fi

sib=$(vm_cgroup_new ex-sibling)
vm_bloat_start "$sib" --mix 512:8 || vm_fail sibling-start "$(cat "$BLOAT_LOG")"
SIB_PID=$BLOAT_PID SIB_START=$BLOAT_START SIB_END=$BLOAT_END
sib_mc0=$(vm_mem_current "$sib") sib_thp0=$(vm_memstat "$sib" anon_thp)

for kb in $SIZES; do
	[ "$kb" = "$PMD_KB" ] || only_size "$kb"
	n=ex-$kb
	cg=$(vm_cgroup_new $n)
	start_reader $n
	if ! vm_bloat_start "$cg" $(mix "$kb"); then
		vm_fail $kb-start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
		continue
	fi
	file0=$(vm_memstat $n file) ref0=$(vm_memstat $n workingset_refault_file)
	mc0=$(vm_mem_current $n)
	planted=$(vm_planted_waste $(mix "$kb"))
	planted_unm=$(vm_planted_waste $(mix "$kb" | sed 's/--mix [^ ]*//'))
	sample_file $n /tmp/ex-$kb.samples
	k0=$(knobs)
	out=$(thpshrink reclaim --cgroup $n --method split 2>&1); rc=$?
	k1=$(knobs)
	stop_sampling
	vm_check $kb-knobs-unchanged "$k1" [ "$k0" = "$k1" ]
	echo "$out" | sed "s/^/# $kb: /"
	mc1=$(vm_mem_current $n) file1=$(vm_memstat $n file)
	vm_summary "$out"
	waste=$(echo "$out" | sed -n 's/^low-utilization THPs: [0-9]* -> [0-9]*, waste \([0-9]*\) -> .*/\1/p')
	unm=$(echo "$out" | sed -n 's/^partially mapped THPs: [0-9]* -> [0-9]*, unmapped \([0-9]*\) -> .*/\1/p')
	unm1=$(echo "$out" | sed -n 's/^partially mapped THPs: [0-9]* -> [0-9]*, unmapped [0-9]* -> \([0-9]*\) .*/\1/p')
	freed=""
	vm_num "$mc0" "$mc1" "$file0" "$file1" && freed=$((mc0 - mc1 - (file0 - file1)))
	detail="planted $planted bytes ($planted_unm of them unmapped), thpshrink saw waste ${waste:-?} + unmapped ${unm:-?}; memory.current $mc0 -> $mc1, file $file0 -> $file1: freed ${freed:-?} ($(pct "${freed:-0}" "$planted") %), thpshrink given_back=${given_back:-?} rc=$rc"
	vm_check $kb-mechanism "$(echo "$out" | grep -m1 '^split:')" vm_has "$out" 'by process_madvise$'
	case $THPS_KCLASS in
	upstream | rfc)
		vm_check $kb-gives-back-95pct "$detail" eval 'vm_pct_ge "$freed" "$planted" 95 && [ "$rc" = 0 ]'
		;;
	none)
		vm_check $kb-partial-freed "$detail; $(pct "${freed:-0}" "$planted_unm") % of the planted unmapped; unmapped after ${unm1:-?}" \
			eval 'vm_pct_ge "$freed" "$planted_unm" 95 && [ "$unm1" = 0 ]'
		vm_check $kb-sparse-not-freeable "$(echo "$out" | grep -m1 -o 'sparse folios not split[^;]*' || echo 'no such note')" \
			vm_has "$out" 'sparse folios not split: a split frees no zero subpage on this kernel'
		;;
	esac
	page_cache_checks $n "$file0" "$ref0" /tmp/ex-$kb.samples $kb
	if [ "$kb" = "$PMD_KB" ]; then
		vm_thpcheck "$BLOAT_PID" "$BLOAT_START" "$BLOAT_END"
		vm_check $kb-full-kept "full=$chk_full full_thp=$chk_full_thp" [ "$chk_full_thp" = 8 ]
	else
		f1=$(echo "$out" | sed -n "s/^size ${kb} KiB: folios [0-9]* -> \([0-9]*\),.*/\1/p")
		vm_check $kb-full-kept "${kb} KiB folios after: ${f1:-?} (64 full)" eval 'vm_num "$f1" && [ "$f1" -ge 64 ]'
	fi
	vm_check_bloat $kb-data-intact
	vm_bloat_stop
	[ -n "$HOT" ] && kill "$READER" 2>/dev/null
done

# --- for comparison, what memory.reclaim does to the same cgroup (the PMD size, upstream kernels:
# the figures before the exact give-back existed) ---
if [ -n "$HOT" ] && [ "$THPS_KCLASS" = upstream ]; then
	only_size "$PMD_KB"
	cg=$(vm_cgroup_new ex-reclaim)
	start_reader ex-reclaim
	if vm_bloat_start "$cg" $(mix "$PMD_KB"); then
		file0=$(vm_memstat ex-reclaim file) ref0=$(vm_memstat ex-reclaim workingset_refault_file)
		sample_file ex-reclaim /tmp/ex-r.samples
		out=$(thpshrink reclaim --cgroup ex-reclaim --method reclaim 2>&1)
		stop_sampling
		sleep 2
		min=$(sort -n /tmp/ex-r.samples | head -1)
		ref=$(($(vm_memstat ex-reclaim workingset_refault_file) - ref0))
		echo "$out" | grep -E '^(given back|page cache|memory.current)' | sed 's/^/# reclaim: /'
		echo "# node-fig reclaim_compare file0=$file0 file_min=$min refaults=$ref"
		vm_check reclaim-evicts "for comparison, --method reclaim: file pages $file0 -> min $min bytes ($(pct "$min" "$file0") % kept), $ref pages read again; split kept 100 %" \
			[ "$min" -lt "$file0" ]
		vm_bloat_stop
	fi
	kill "$READER" 2>/dev/null
fi


# --- the same through thpshrinkd with a policy that names no action (the last size) ---
kb=${SIZES##* }
only_size "$kb"
split_policy exact ex-daemon
cg=$(vm_cgroup_new ex-daemon)
start_reader ex-daemon
if vm_bloat_start "$cg" $(mix "$kb"); then
	file0=$(vm_memstat ex-daemon file) ref0=$(vm_memstat ex-daemon workingset_refault_file)
	mc0=$(vm_mem_current ex-daemon)
	planted_d=$(vm_planted_waste $(mix "$kb"))
	planted_unm=$(vm_planted_waste $(mix "$kb" | sed 's/--mix [^ ]*//'))
	echo "# daemon: planted waste $planted_d bytes ($planted_unm unmapped): thpshrink-bloat $(mix "$kb")"
	sample_file ex-daemon /tmp/ex-d.samples
	k0=$(knobs)
	thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT --interval 2 \
		--scan-cpu 100 -v > $D/daemon.log 2>&1 &
	DPID=$!
	i=0 gb=0
	while [ $i -lt 300 ]; do
		gb=$(vm_metric thpshrink_given_back_bytes_total 'cgroup="/ex-daemon"')
		[ "$gb" -gt 0 ] && break
		sleep 0.2; i=$((i + 1))
	done
	# more passes, until 95 % of the planted waste is back or 30 s went by: what the first
	# left behind
	wait_given_back ex-daemon "$planted_d" 60
	stop_sampling
	k1=$(knobs)
	vm_check daemon-knobs-unchanged "$k1" [ "$k0" = "$k1" ]
	mc1=$(vm_mem_current ex-daemon) file1=$(vm_memstat ex-daemon file)
	freed=""
	vm_num "$mc0" "$mc1" "$file0" "$file1" && freed=$((mc0 - mc1 - (file0 - file1)))
	grep -E 'Splits:|split \(' $D/daemon.log | head -3 | sed 's/^/# daemon: /'
	kill -0 "$DPID" 2>/dev/null || tail -20 $D/daemon.log | sed 's/^/# daemon log: /'
	vm_check daemon-mechanism "$(grep -m1 'Splits:' $D/daemon.log)" grep -q 'Splits: process_madvise' $D/daemon.log
	vm_check daemon-says-exact "$(grep -m1 'Give back:' $D/daemon.log)" \
		grep -q 'Give back: process_madvise' $D/daemon.log
	vm_check daemon-method-metric "$(vm_metrics | grep '^thpshrink_give_back_method{method="process_madvise"}')" \
		method_metric_is process_madvise
	case $THPS_KCLASS in
	upstream | rfc)
		vm_check daemon-gives-back-95pct "no action named: memory.current $mc0 -> $mc1, file $file0 -> $file1: freed ${freed:-?} bytes of $planted_d planted ($(pct "${freed:-0}" "$planted_d") %); thpshrink_given_back_bytes_total $gb" \
			vm_pct_ge "$freed" "$planted_d" 95 ;;
	none)
		vm_check daemon-gives-back "memory.current $mc0 -> $mc1: freed ${freed:-?} bytes of $planted_unm planted unmapped ($(pct "${freed:-0}" "$planted_unm") %; the sparse ones stay here)" \
			vm_pct_ge "$freed" "$planted_unm" 95 ;;
	esac
	vm_check daemon-no-reclaim "memory.reclaim by an action logged: $(grep -c 'memory.reclaim for partially mapped\| reclaim asked\|(reclaim) asked' $D/daemon.log) lines" \
		sh -c "! grep -q 'memory.reclaim for partially mapped\| reclaim asked\|(reclaim) asked' $D/daemon.log"
	page_cache_checks ex-daemon "$file0" "$ref0" /tmp/ex-d.samples daemon
	vm_finish_bloat_and_daemon "$DPID"
else
	vm_fail daemon-start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
fi
[ -n "$HOT" ] && kill "$READER" 2>/dev/null

vm_check_sibling_untouched "$sib" "$sib_mc0" "$sib_thp0"

# --- without CAP_SYS_NICE (lockdown boots: no debugfs either, so nothing exact is left) ---
nocap_leg() {
	only_size "$kb"
	split_policy plain ex-nocap
	cg=$(vm_cgroup_new ex-nocap)
	start_reader ex-nocap
	if ! vm_bloat_start "$cg" $(mix "$kb"); then
		vm_fail nocap-start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
		return 0
	fi
	file0=$(vm_memstat ex-nocap file) ref0=$(vm_memstat ex-nocap workingset_refault_file)
	mc0=$(vm_mem_current ex-nocap)
	sample_file ex-nocap /tmp/ex-n.samples
	rm -f $D/state/status.json
	thps-nocap thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT \
		--interval 2 --scan-cpu 100 -v > $D/nocap.log 2>&1 &
	DPID=$!
	i=0
	while [ $i -lt 120 ] && ! grep -q "cgroup '/ex-nocap'.*memory.reclaim is not allowed" $D/nocap.log; do
		sleep 0.5; i=$((i + 1))
	done
	sleep 3 # another pass or two: still nothing may be reclaimed
	stop_sampling
	grep -E 'Give back:|/ex-nocap' $D/nocap.log | head -4 | sed 's/^/# nocap: /'
	kill -0 "$DPID" 2>/dev/null || tail -20 $D/nocap.log | sed 's/^/# nocap log: /'
	vm_check nocap-caps "$(grep CapEff /proc/$DPID/status 2>&1)" \
		sh -c "grep -q 'no CAP_SYS_NICE' $D/nocap.log"
	vm_check nocap-said-once "$(grep -c 'Give back: no exact split here' $D/nocap.log) start-up lines: $(grep -m1 'Give back:' $D/nocap.log)" \
		[ "$(grep -c 'Give back: no exact split here' $D/nocap.log)" = 1 ]
	vm_check nocap-cgroup-refused "$(grep -m1 -o "cgroup '/ex-nocap'.*memory.reclaim is not allowed" $D/nocap.log | cut -c1-200)" \
		grep -q "cgroup '/ex-nocap'.*memory.reclaim is not allowed" $D/nocap.log
	vm_check nocap-method-metric "$(vm_metrics | grep '^thpshrink_give_back_method' | tr '\n' ' ')" \
		method_metric_is none
	vm_check nocap-status-json "$(status_give_back)" \
		give_back_is none
	# nothing given back at all: the memory.current the cgroup keeps, and no action logged
	mc1=$(vm_mem_current ex-nocap)
	nothing_taken() { [ $((mc0 - mc1)) -lt $((2 << 20)) ] && ! grep -q "/ex-nocap'.* asked" $D/nocap.log; }
	vm_check nocap-nothing-taken "memory.current $mc0 -> $mc1 (< 2 MiB less); actions logged: $(grep -c "/ex-nocap'.* asked" $D/nocap.log)" \
		nothing_taken
	page_cache_checks ex-nocap "$file0" "$ref0" /tmp/ex-n.samples nocap
	# the operator's permission: the same cgroup, reloaded with split_or_reclaim
	sed -i 's/"mode": "enforce",/"mode": "enforce", "action": "split_or_reclaim",/' $D/pol/10-split.json
	kill -HUP "$DPID"
	i=0
	while [ $i -lt 120 ] && ! grep -q "/ex-nocap': reclaim asked" $D/nocap.log; do
		sleep 0.5; i=$((i + 1))
	done
	grep "/ex-nocap.*memory.reclaim, as the policy allows\|/ex-nocap': reclaim asked" $D/nocap.log |
		head -2 | cut -c1-300 | sed 's/^/# nocap allowed: /'
	allowed_said() {
		grep -q "/ex-nocap'.*→ reclaim: .*no exact split here: memory.reclaim, as the policy allows" $D/nocap.log &&
			grep -q "/ex-nocap': reclaim asked [1-9][0-9]* bytes" $D/nocap.log
	}
	vm_check nocap-allowed-reclaims "$(grep -m1 -o "/ex-nocap': reclaim asked.*" $D/nocap.log | cut -c1-200); file $file0 -> $(vm_memstat ex-nocap file)" \
		allowed_said
	vm_check nocap-allowed-metric "$(vm_metrics | grep '^thpshrink_give_back_method' | tr '\n' ' ')" \
		method_metric_is reclaim
	vm_check nocap-allowed-status "$(status_give_back)" \
		give_back_is reclaim '"page_cache_safe":false'
	[ -n "$HOT" ] && kill "$READER" 2>/dev/null
	vm_finish_bloat_and_daemon "$DPID"
}
if [ "$THPS_VARIANT" = lockdown ]; then
	if command -v thps-nocap >/dev/null; then
		nocap_leg
	else
		vm_fail nocap "tests/tools/thps-nocap is not in the initramfs (make check builds it)"
	fi
fi
