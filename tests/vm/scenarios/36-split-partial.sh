# SPDX-License-Identifier: GPL-2.0-or-later
# 36-split-partial: a split policy gives back partially mapped THPs too. A workload with 4 full
# THPs and 16 THPs of which only 64 subpages stay mapped (the rest MADV_DONTNEED: the folios
# stay charged) has no low-util THP to split, only 16 x 448 unmapped subpages (28 MiB). The
# daemon must split those folios exactly, through process_madvise (one page of advice each; any
# split frees the unmapped subpages, on every kernel here), with no memory.reclaim, give back
# >= 90 % of them, keep the 4 full THPs and the data.

PORT=9480
D=/tmp/thpsd-sp

cg=$(vm_cgroup_new sp-work)
if [ ! -e "$cg/memory.reclaim" ]; then
	vm_skip partial "no memory.reclaim on this kernel ($THPS_KERNEL)"
	return 0 2>/dev/null || exit 0
fi
mkdir -p $D/pol $D/state
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
# khugepaged must not collapse the holey ranges back into (low-util) THPs meanwhile: at
# max_ptes_none 0 it leaves any range with an unmapped subpage alone. The full THPs have no zero
# subpage, so the underused-THP shrinker leaves them alone too.
vm_set_thp_knob khugepaged/max_ptes_none 0
cat >$D/pol/10-split.json <<'JEOF'
{ "name": "split", "match": { "cgroup": "/sp-work" }, "mode": "enforce", "action": "split",
  "trigger": { "min_waste": "2M" }, "cooldown": "1s",
  "max_bytes_per_action": "1G", "max_bytes_per_sec": "1G" }
JEOF
chmod 644 $D/pol/*.json
if ! vm_bloat_start sp-work --mix 512:4 --partial 64:16; then
	vm_fail start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
	return 0 2>/dev/null || exit 0
fi
unmapped=$((16 * 448 * 4096))
mem0=$(vm_mem_current sp-work) thp0=$(vm_memstat sp-work anon_thp)
thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT --interval 2 \
	--scan-cpu 100 -v >$D/daemon.log 2>&1 &
DPID=$!
T0=$(vm_uptime)
given=0 pb=1 i=0
while [ $i -lt 300 ]; do
	given=$(vm_metric thpshrink_given_back_bytes_total 'cgroup="/sp-work"')
	pb=$(vm_metrics | grep -c '^thpshrink_cgroup_partially_mapped_bytes{cgroup="/sp-work",inode="[0-9]*"} [1-9]')
	[ $((given * 10)) -ge $((unmapped * 9)) ] && [ "$pb" = 0 ] && break
	sleep 0.1; i=$((i + 1))
done
secs=$(awk -v a=$T0 -v b=$(vm_uptime) 'BEGIN{printf "%.1f", b-a}')
mem1=$(vm_mem_current sp-work)
grep "cgroup '/sp-work'" $D/daemon.log | head -4 | sed 's/^/# /'
seen=$(grep -o "cgroup '/sp-work': policy 'split', THPs [0-9]*, low-util 0, waste 0 B, partially mapped [0-9]* B → split" $D/daemon.log | head -1)
vm_check seen "${seen:-no split decision for the partially mapped THPs logged}" \
	vm_has "$seen" "partially mapped $unmapped B"
vm_check exact "$(grep -m1 "cgroup '/sp-work': split" $D/daemon.log | grep -o 'split (.*' | cut -c1-120)" \
	sh -c "grep -q \"cgroup '/sp-work': split (process_madvise) asked $unmapped bytes, gave back [0-9]*, page cache 0 bytes lost\" $D/daemon.log &&
		! grep -q 'memory.reclaim for partially mapped' $D/daemon.log"
vm_check given-back-90 "memory.current $(vm_mib $mem0) -> $(vm_mib $mem1) MiB, given back (metric) $(vm_mib $given) of $(vm_mib $unmapped) MiB unmapped, partially mapped left: $pb cgroup series, $secs s" \
	[ $(( (mem0 - mem1) * 10 )) -ge $((unmapped * 9)) -a "$pb" = 0 ]
thp1=$(vm_memstat sp-work anon_thp)
vm_check full-thps-kept "anon_thp $(vm_mib $thp0) -> $(vm_mib $thp1) MiB (the 4 full THPs: 8.0 MiB)" \
	[ "$thp1" -ge $((4 * 2097152)) ]
vm_finish_bloat_and_daemon $DPID
