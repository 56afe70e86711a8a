# SPDX-License-Identifier: GPL-2.0-or-later
# 10-probe: `thpshrink probe --json` tells what each kernel can do, and says so where it cannot;
# on the RFC kernel the debugfs thp_utilization parser sees a low-utilization workload.
# --write-test decides memory.reclaim's swappiness= key by a write that asks for 0 bytes.
P=/tmp/probe.json

probe() { # runs the probe into $P; 0 if it worked
	thpshrink probe --json --write-test --no-measure > "$P" 2> /tmp/probe.err && return 0
	vm_fail run "thpshrink probe --json failed: $(cat /tmp/probe.err)"
	return 1
}
# A top-level value of the pretty-printed JSON ("key":value), without quotes.
jv() { sed -n "s/^  \"$1\":\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$P"; }
# A finding's value.
fv() { awk -v k="\"key\":\"$1\"," '$0 ~ k {f=1; next} f && /"value":/ {sub(/^ *"value":"/, ""); sub(/",$/, ""); print; exit}' "$P"; }
# The vmstat source (through ksrc-dump) on the workload in CG: its cgroup's figures must be
# the kernel's own memory.stat anon_thp and memory.current.
vmstat_source() { # CG
	ksrc-dump --pid "$BLOAT_PID" > /tmp/ksrc.out 2> /tmp/ksrc.err ||
		{ vm_fail vmstat-source "ksrc-dump failed: $(cat /tmp/ksrc.err)"; return; }
	_rel=/${1#$CG_ROOT/}
	_l=$(awk -v p="$_rel" '$1=="cgroup" && $2==p' /tmp/ksrc.out)
	_thp=$(vm_memstat "$1" anon_thp) _cur=$(vm_mem_current "$1")
	vm_check vmstat-source-anon-thp "source: ${_l:-no line for $_rel}; memory.stat anon_thp=$_thp" \
		[ "$(echo "$_l" | awk '{print $8}')" = "$_thp" ]
	vm_check vmstat-source-current "memory.current=$_cur" \
		awk -v a="$(echo "$_l" | awk '{print $6}')" -v b="$_cur" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(a>0 && d<=1048576)}'
	_sp=$(awk '$1=="vmstat" && $2=="thp_split_page" {print $3}' /tmp/ksrc.out)
	vm_check vmstat-source-counter "thp_split_page=$_sp (/proc/vmstat now $(vm_vmstat thp_split_page))" \
		[ "$_sp" -le "$(vm_vmstat thp_split_page)" ]
}
expect() { # NAME KEY WANT
	_got=$(jv "$2")
	vm_check "$1" "$2=$_got (want $3)" [ "$_got" = "$3" ]
}

if probe; then
	mpn=$(vm_thp_knob khugepaged/max_ptes_none)
	expect cgroup-v2 cgroup_version 2
	expect can-reclaim can_reclaim true
	expect split-debugfs have_split_debugfs true
	risk=false; [ "$mpn" -ge 511 ] && risk=true
	expect recollapse-risk recollapse_risk "$risk"
	# memory.reclaim's swappiness= arrived in 6.12: the write test says yes there, no on 6.1.
	want=no; [ "$THPS_KCLASS" = upstream ] && want=yes
	expect swappiness reclaim_swappiness "$want"
	expect swappiness-tested reclaim_swappiness_tested true
	case $THPS_KCLASS in
	upstream)
		expect split-frees split_frees_zero_subpages true
		expect split-kind split_kind upstream
		expect no-thp-utilization have_thp_utilization false
		cg=$(vm_cgroup_new probe-vmstat)
		if vm_bloat_start "$cg" --mix 4:16; then
			vmstat_source "$cg"
			vm_bloat_stop
		else
			vm_fail bloat-start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
		fi
		vm_check shrink-underused-present "thp.shrink_underused=$(fv thp.shrink_underused)" \
			[ "$(fv thp.shrink_underused | cut -c1)" = 1 ]
		# Lowering max_ptes_none ends the re-collapse risk and wakes the underused shrinker.
		vm_set_thp_knob khugepaged/max_ptes_none 409
		if probe; then
			expect recollapse-risk-409 recollapse_risk false
			expect underused-shrinker-409 underused_shrinker_active true
		fi
		;;
	none)
		expect split-frees-nothing split_frees_zero_subpages false
		expect split-kind split_kind none
		expect no-thp-utilization have_thp_utilization false
		v=$(fv split.frees_zero_subpages)
		vm_check says-frees-nothing "split.frees_zero_subpages=$v" [ "$v" = no ]
		thpshrink probe > /tmp/probe.txt 2>&1
		vm_check text-says-nothing-freed "$(grep -c 'free nothing' /tmp/probe.txt) line(s) say splits free nothing" \
			grep -q 'free nothing' /tmp/probe.txt
		vm_check no-shrink-underused "thp.shrink_underused=$(fv thp.shrink_underused)" \
			[ "$(fv thp.shrink_underused)" = absent ]
		cg=$(vm_cgroup_new probe-vmstat)
		if vm_bloat_start "$cg" --mix 4:16; then
			vmstat_source "$cg"
			vm_check vmstat-no-underused "6.1 has no thp_underused_split_page" \
				grep -q '^vmstat thp_underused_split_page absent' /tmp/ksrc.out
			vm_bloat_stop
		else
			vm_fail bloat-start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
		fi
		;;
	rfc)
		expect split-frees split_frees_zero_subpages true
		expect split-kind split_kind rfc
		expect thp-utilization have_thp_utilization true
		cg=$(vm_cgroup_new probe-rfc)
		# 48 THPs with 4 used subpages each: bucket 0. The kernel's file changes only at the
		# end of a full pass over memory (~9 s for 2 GiB), so wait for two passes.
		if vm_bloat_start "$cg" --mix 4:48; then
			t0=$(vm_uptime) n=0 st=""
			while :; do
				probe || break
				b0=$(fv debugfs.thp_utilization)
				n=$(echo "$b0" | sed -n 's/.*bucket 0: \([0-9]*\) THPs.*/\1/p')
				st=$(echo "$b0" | sed -n 's/.*last scan \([0-9.]*\) s.*/\1/p')
				[ "${n:-0}" -ge 48 ] && break
				[ "$(awk -v a="$(vm_uptime)" -v b="$t0" 'BEGIN{print (a-b > 60)}')" = 1 ] && break
				sleep 2
			done
			waited=$(awk -v a="$(vm_uptime)" -v b="$t0" 'BEGIN{printf "%.1f", a-b}')
			vm_check bucket0 "thp_utilization: $b0 after ${waited}s (want >= 48 THPs in bucket 0)" \
				[ "${n:-0}" -ge 48 ]
			vm_check last-scan-after-start "last scan at ${st:-?}s, workload started at ${t0}s" \
				awk -v s="${st:-0}" -v t="$t0" 'BEGIN{exit !(s > t)}'
			# The debugfs and vmstat sources on the same workload.
			vmstat_source "$cg"
			k0=$(awk '$1=="kernel_bucket" && $2==0 {print $4}' /tmp/ksrc.out)
			vm_check debugfs-source-bucket0 "debugfs source: bucket 0 thps=${k0:-none}" \
				[ "${k0:-0}" -ge 48 ]
			# ... and as an operator sees it: the kernel column of `thpshrink report`.
			thpshrink report --source debugfs > /tmp/report.txt 2>&1
			r0=$(awk '$1=="0-51" && $4=="|" {print $5}' /tmp/report.txt)
			vm_check report-debugfs-bucket0 "thpshrink report --source debugfs: kernel bucket 0 THPs=${r0:-none}" \
				[ "${r0:-0}" -ge 48 ]
			vm_check vmstat-rfc-counters "$(grep -E 'thp_split_(free|unmap)' /tmp/ksrc.out | tr '\n' ' ')" \
				sh -c "! grep -qE '^vmstat thp_split_(free|unmap) absent' /tmp/ksrc.out"
			vm_check_bloat data-intact
			vm_bloat_stop
		else
			vm_fail bloat-start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
		fi
		;;
	*)
		vm_skip kernel "unknown THPS_KCLASS '$THPS_KCLASS'"
		;;
	esac
fi

# The measured probe: canary folios of every size the kernel allocates (16 and 64 KiB enabled
# where the kernel has them), split through debugfs, split by process_madvise(MADV_COLD) on one
# page (sparse folios, and partially mapped ones) and reclaimed in a scratch cgroup; what each
# freed, per size, is what the class of this kernel says it must be.
for k in $THPS_MTHP_SIZES; do
	case $k in 16 | 64) vm_set_thp_knob hugepages-${k}kB/enabled always ;; esac
done
# the boot default (the upstream branch above lowered it): memory.reclaim as shipped
[ "$(vm_thp_knob khugepaged/max_ptes_none)" = n/a ] || vm_set_thp_knob khugepaged/max_ptes_none 511
t0=$(vm_uptime)
thpshrink probe --json > /tmp/pm.json 2> /tmp/pm.err
thpshrink probe > /tmp/pm.txt 2>&1
secs=$(awk -v a="$(vm_uptime)" -v b="$t0" 'BEGIN{printf "%.1f", a-b}')
vm_check measured-ran "$(grep -m1 '^measured' /tmp/pm.txt) (two probes in ${secs}s)" grep -q '"ran":true' /tmp/pm.json
left=$(ls -d $CG_ROOT/thpshrink-probe.* 2>/dev/null | wc -l)
vm_check measured-scratch-removed "$left scratch cgroups left" [ "$left" = 0 ]
# "size":N ... "split_freed_pct":P per entry of the pretty-printed JSON
pcts=$(awk -F: '/"size":/ { gsub(/[ ,]/, "", $2); s = $2 } /"split_freed_pct":/ { gsub(/[ ,]/, "", $2); print s, $2 }' /tmp/pm.json)
grep '^  [0-9]* [KM]iB' /tmp/pm.txt | while read -r line; do
	vm_pass "measured-$(echo "$line" | awk '{print $1 $2}')" "$line"
done
pmd=$(vm_thp_knob hpage_pmd_size)
pmd_pct=$(echo "$pcts" | awk -v s="$pmd" '$1 == s {print $2}')
case $THPS_KCLASS in
upstream | rfc)
	vm_check measured-pmd-split-frees "PMD split freed ${pmd_pct:-?} % (want >= 90)" [ "${pmd_pct:-0}" -ge 90 ] ;;
none)
	vm_check measured-pmd-split-frees-nothing "PMD split freed ${pmd_pct:-?} % (want <= 10)" [ "${pmd_pct:-100}" -le 10 ] ;;
esac
for k in $THPS_MTHP_SIZES; do
	case $k in 16 | 64) ;; *) continue ;; esac
	p=$(echo "$pcts" | awk -v s=$((k * 1024)) '$1 == s {print $2}')
	case $THPS_KCLASS in
	upstream) vm_check measured-${k}k-split-frees "${k} KiB split freed ${p:-?} % (want >= 90)" [ "${p:-0}" -ge 90 ] ;;
	*) vm_pass measured-${k}k "${k} KiB split freed ${p:-?} %" ;;
	esac
done

# process_madvise(MADV_COLD) on one page of each canary folio: since 6.12 (and on the RFC) the
# split maps a sparse folio's zero subpages to the shared zero page; on 6.1 they stay allocated.
# A partially mapped folio's unmapped subpages are freed by the split on every kernel, so every
# kernel here splits by process_madvise (6.1: partially mapped folios only).
# "size":N ... per entry: cold_freed_pct, cold_partial_freed_pct, mechanism
cold=$(awk -F: '/"size":/ { gsub(/[ ,]/, "", $2); s = $2 }
	/"cold_freed_pct":/ { gsub(/[ ,]/, "", $2); c = $2 }
	/"cold_partial_freed_pct":/ { gsub(/[ ,]/, "", $2); p = $2 }
	/"mechanism":/ { gsub(/[ ,"]/, "", $2); m = $2 }
	/"note":/ { print s, c, p, m }' /tmp/pm.json)
cold_check() { # KiB
	_l=$(echo "$cold" | awk -v s=$(($1 * 1024)) '$1 == s')
	set -- "$1" $(echo "$_l" | awk '{print $2, $3, $4}')
	_what="${1} KiB canaries: process_madvise(MADV_COLD) freed ${2:-?} % of sparse zero bytes, ${3:-?} % of partially mapped unmapped bytes; mechanism ${4:-?}"
	case $THPS_KCLASS in
	none) vm_check cold-${1}k-sparse-keeps-zero "$_what (sparse want <= 10)" [ "${2:-100}" -le 10 ] 2>/dev/null ;;
	*) vm_check cold-${1}k-sparse-frees "$_what (sparse want >= 90)" [ "${2:-0}" -ge 90 ] 2>/dev/null ;;
	esac
	vm_check cold-${1}k-partial-frees "$_what (partial want >= 90)" [ "${3:-0}" -ge 90 ] 2>/dev/null
	vm_check cold-${1}k-mechanism "$_what (want process_madvise)" [ "${4:-}" = process_madvise ]
}
cold_check $((pmd / 1024))
for k in $THPS_MTHP_SIZES; do
	case $k in 16 | 64) cold_check "$k" ;; esac
done
vm_check cold-mechanism "$(grep '"split_mechanism"' /tmp/pm.json | tr -d ' ,')" grep -q '"split_mechanism":"process_madvise"' /tmp/pm.json
vm_check cold-mode "$(grep '^mode:' /tmp/pm.txt)" grep -q '^mode: exact splits via process_madvise' /tmp/pm.txt
# the figures behind the percentages, per size, as the text prints them
awk '/^  [0-9]+ [KM]iB/ { s = $1 $2 } /^ +process_madvise\(MADV_COLD\):/ && s { sub(/^ +/, ""); print s, $0 }' /tmp/pm.txt |
	while read -r sz line; do
		vm_pass "measured-$sz-cold" "$line"
	done
