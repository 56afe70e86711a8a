# SPDX-License-Identifier: GPL-2.0-or-later
# 15-scanner: the userspace scanner on a real kernel with cgroup v2: exact histograms per
# cgroup, partly mapped THPs, the cgroup filter, and the method (PAGEMAP_SCAN on >= 6.7,
# plain pagemap reads on 6.1). Uses tests/tools/scan-dump (the scanner source, no CLI).
# khugepaged would re-collapse the partly mapped THPs (with max_ptes_none 511 it fills the
# unmapped part with zeros) between two scans when a loaded host slows the guest down (seen in
# CI on 7.3: the second scan found 18 whole THPs and no partial one): keep it asleep here.
vm_set_thp_knob khugepaged/scan_sleep_millisecs 3600000
vm_set_thp_knob khugepaged/alloc_sleep_millisecs 3600000
cga=$(vm_cgroup_new scan-a)
cgb=$(vm_cgroup_new scan-b)
out=/tmp/scan-dump.out
if ! vm_bloat_start "$cga" --mix 0:8,51:4,512:4 --partial 100:2; then
	vm_fail bloat-a "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
	return 0 2>/dev/null || exit 0
fi
pida=$BLOAT_PID
if ! vm_bloat_start "$cgb" --mix 300:6; then
	vm_fail bloat-b "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
	vm_bloat_stop "$pida"
	return 0 2>/dev/null || exit 0
fi
pidb=$BLOAT_PID

# every process of the guest: the two cgroups by path, with their exact figures
if scan-dump > "$out" 2>&1; then
	la=$(grep '^cgroup /scan-a ' "$out")
	lb=$(grep '^cgroup /scan-b ' "$out")
	sum=$(grep '^summary' "$out")
	echo "# $sum"
	vm_check attribution-a "$la" [ "$la" = "cgroup /scan-a thps 16 partial 2 unmapped_bytes 3375104" ]
	vm_check attribution-b "$lb" [ "$lb" = "cgroup /scan-b thps 6 partial 0 unmapped_bytes 0" ]
	# kernel threads have no address space: neither scanned nor skipped
	sk=$(echo "$sum" | sed -n 's/.* procs_skipped \([0-9]*\) .*/\1/p')
	vm_check kthreads-not-skipped "procs_skipped=$sk" [ "${sk:-99}" -lt 5 ]
	m=${sum##* method }
	case $THPS_KCLASS in
	none) vm_check method "$m (6.1 has no PAGEMAP_SCAN)" [ "$m" = pagemap ] ;;
	upstream) vm_check method "$m" [ "$m" = PAGEMAP_SCAN ] ;;
	*) vm_pass method "$m" ;;
	esac
else
	vm_fail scan-all "scan-dump failed: $(cat "$out")"
fi

# the filter: /scan-a only; its histogram is exactly the mix (8×0 and 4×51 in bucket 0)
exp="bucket 0 thps 12 zero 5940 bucket 1 thps 0 zero 0 bucket 2 thps 0 zero 0 bucket 3 thps 0 zero 0 bucket 4 thps 0 zero 0 bucket 5 thps 0 zero 0 bucket 6 thps 0 zero 0 bucket 7 thps 0 zero 0 bucket 8 thps 0 zero 0 bucket 9 thps 4 zero 0"
for mode in "" --pagemap; do
	if scan-dump --cgroup /scan-a $mode > "$out" 2>&1; then
		got=$(grep '^bucket' "$out" | tr '\n' ' ' | sed 's/ $//')
		vm_check "filter-hist${mode}" "$(grep '^summary' "$out" | cut -d' ' -f1-13)" [ "$got" = "$exp" ]
		vm_check "filter-only-a${mode}" "$(grep -c '^cgroup' "$out") cgroup line(s)" \
			sh -c "! grep -q '^cgroup /scan-b' '$out'"
	else
		vm_fail "filter${mode}" "scan-dump --cgroup /scan-a failed: $(cat "$out")"
	fi
done

# one process only, and a cgroup that does not exist
scan-dump --pid "$pidb" > "$out" 2>&1
vm_check pid-only "$(grep '^summary' "$out" | cut -d' ' -f1-9)" \
	sh -c "grep -q '^bucket 5 thps 6 zero 1272$' '$out' && grep -q '^summary procs_scanned 1 procs_skipped 0 thps 6 ' '$out'"
if scan-dump --cgroup /no-such-cgroup > "$out" 2>&1; then
	vm_fail missing-cgroup "scan-dump accepted a missing cgroup"
else
	vm_pass missing-cgroup "$(head -1 "$out")"
fi
vm_bloat_stop "$pida"
vm_bloat_stop "$pidb"

# deduplication: 4 THPs PMD-mapped by a parent and its forked child count once, 4 shared
cgf=$(vm_cgroup_new scan-fork)
rm -f /tmp/forked.ready
sh -c "echo \$\$ > '$cgf/cgroup.procs' && exec thps-forked 4 /tmp/forked.ready" &
i=0
while [ ! -s /tmp/forked.ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
if [ -s /tmp/forked.ready ]; then
	fpid=$(sed -n 's/.*pid=\([0-9]*\) .*/\1/p' /tmp/forked.ready)
	scan-dump --cgroup /scan-fork > "$out" 2>&1
	vm_check dedupe "$(grep '^cgroup' "$out") $(grep '^summary' "$out" | cut -d' ' -f1-9)" \
		sh -c "grep -q '^cgroup /scan-fork thps 4 partial 0 ' '$out' &&
			grep -q '^summary procs_scanned [0-9]* procs_skipped [0-9]* thps 4 shared 4 ' '$out' &&
			grep -q '^bucket 0 thps 4 zero 2044$' '$out'"
	kill "$fpid"
	wait "$fpid" 2>/dev/null
else
	vm_fail dedupe "thps-forked never got ready"
fi
