# SPDX-License-Identifier: GPL-2.0-or-later
# 37-mthp: anonymous folios smaller than a PMD THP (mTHP, Linux 6.8+: hugepages-<N>kB).
#  1. 64 KiB only (PMD size never): 1,024 folios with 1 of 16 subpages written (60 MiB of
#     zeros planted) and 64 full ones, beside a sibling cgroup of 64 full 64 KiB folios.
#     `thpshrink report` sees the waste (within 5 % of the planted zeros), --method reclaim
#     says per size what memory.reclaim can do, --method split gives >= 95 % back, the full
#     folios stay folios, the data verifies, the sibling is untouched.
#  2. a mix in one cgroup: PMD THPs, 16 KiB and 64 KiB folios (three workloads, each started
#     with only its size enabled): the same checks over every size.
# Expectations come from what the kernel offers and what the probe found (THPS_MTHP_SIZES,
# THPS_KCLASS), never from the kernel's name.
has_size() { case " $THPS_MTHP_SIZES " in *" $1 "*) return 0 ;; esac; return 1; }
if [ -z "$THPS_MTHP_SIZES" ]; then
	vm_skip mthp "no hugepages-<N>kB sizes below the PMD size under $THP_SYS: this kernel has no mTHP (Linux < 6.8)"
	return 0 2>/dev/null || exit 0
fi
if ! has_size 64 || ! has_size 16; then
	vm_skip mthp "this kernel offers mTHP sizes '$THPS_MTHP_SIZES' kB, not both 16 and 64"
	return 0 2>/dev/null || exit 0
fi
PMD_KB=$(($(vm_thp_knob hpage_pmd_size) / 1024))
only_size() { # KB: that size always, every other size never (the PMD size through its own knob)
	for d in $THP_SYS/hugepages-*kB; do
		[ -f "$d/enabled" ] || continue
		_k=${d##*/hugepages-}; _k=${_k%kB}
		if [ "$_k" = "$1" ]; then echo always > "$d/enabled"; else echo never > "$d/enabled"; fi
	done
	echo "# mTHP: only ${1} kB enabled"
}
# A figure of one size of the first cgroup object of a `report --json` (pretty-printed), and
# of bucket B of that size.
jsize() { # FILE SIZE_BYTES FIELD
	awk -v s="$2" -v k="\"$3\":" '/"size": / { in_s = ($2 == s ",") } in_s && $1 == k { sub(/,$/, "", $2); print $2; exit }' "$1"
}
jsize_bucket() { # FILE SIZE_BYTES BUCKET
	awk -v s="$2" -v b="$3" '/"size": / { in_s = ($2 == s ",") }
		in_s && index($0, "{\"bucket\": " b ",") { sub(/.*"thps": /, ""); sub(/,.*/, ""); print; exit }' "$1"
}
report_json() { # CG OUT
	thpshrink report --cgroup "$1" --json > "$2" 2> "$2.err" || echo "# report failed: $(cat "$2.err")"
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a * 100 / b; else print "n/a" }'; }
within5() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d * 100 <= b * 5) }'; }

vm_set_thp_knob khugepaged/max_ptes_none 511 >/dev/null

# ---- 1. 64 KiB folios only ----
only_size 64
sib=$(vm_cgroup_new mthp-sibling)
vm_bloat_start "$sib" --folio-size 64K --mix 16:64 || vm_fail sibling-start "$(cat "$BLOAT_LOG")"
SIBP=$BLOAT_PID SIBL=$BLOAT_LOG
cg=$(vm_cgroup_new mthp-work)
if ! vm_bloat_start "$cg" --folio-size 64K --mix 1:1024,16:64; then
	vm_fail start "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
	return 0 2>/dev/null || exit 0
fi
planted=$((1024 * 15 * 4096))
report_json /mthp-work /tmp/m1.json
thpshrink report --pid "$BLOAT_PID" > /tmp/m1.txt 2>&1
sed 's/^/# report: /' /tmp/m1.txt
f64=$(jsize /tmp/m1.json 65536 folios) w64=$(jsize /tmp/m1.json 65536 waste_bytes)
full64=$(jsize_bucket /tmp/m1.json 65536 9)
# (bloat's own stack or heap may add a folio or two of its size)
vm_check report-64k-folios "64 KiB folios=${f64:-none} (1088 planted), full=${full64:-none}" [ "${f64:-0}" -ge 1088 -a "${f64:-0}" -le 1096 -a "${full64:-0}" -ge 64 ]
vm_check report-64k-waste "waste_bytes=${w64:-none}, planted zeros $planted ($(pct "${w64:-0}" $planted) %)" within5 "${w64:-0}" $planted
cw=$(awk '/"waste_bytes": /{ sub(/,$/, "", $2); print $2; exit }' /tmp/m1.json)
vm_check report-cgroup-waste-sums-sizes "cgroup waste_bytes=$cw" [ "${cw:-0}" = "${w64:-x}" ]
vm_check report-text-table "$(grep -m1 '64 KiB folios' /tmp/m1.txt)" grep -q '^  64 KiB folios (16 subpages): 10[89][0-9] folios, 10[23][0-9] low-utilization' /tmp/m1.txt
vm_check report-no-false-none "$(grep -m1 -i 'no anonymous' /tmp/m1.txt || echo 'no "no THPs" line')" \
	sh -c "! grep -qi 'no anonymous' /tmp/m1.txt"
# --method reclaim states what memory.reclaim can do for this size (dry run: nothing changes)
out=$(thpshrink reclaim --cgroup mthp-work --method reclaim --dry-run 2>&1)
vm_check reclaim-says-per-size "$(echo "$out" | grep -m1 '^reclaim: 64 KiB' || echo "$out" | head -3)" \
	vm_has "$out" '^reclaim: 64 KiB folios: memory.reclaim does not give'
mcl=$(echo "$out" | grep '^memory.current')
measured() { case $1 in "" | *": 0 -> 0 bytes"*) return 1 ;; esac; return 0; }
vm_check reclaim-measured "${mcl:-no memory.current line}" measured "$mcl"

sib_mc0=$(vm_mem_current "$sib")
mc_a=$(vm_mem_current "$cg")
t0=$(vm_uptime)
out=$(thpshrink reclaim --cgroup mthp-work --method split 2>&1); rc=$?
t1=$(vm_uptime)
mc_b=$(vm_mem_current "$cg")
echo "$out"
freed=$((mc_a - mc_b))
detail="planted=$planted reported=${w64:-?} memory.current=$mc_a->$mc_b freed=$freed ($(pct $freed $planted) % of planted) rc=$rc secs=$(awk "BEGIN{print $t1 - $t0}")"
echo "# mthp-64k: $detail"
case $THPS_KCLASS in
upstream | rfc)
	vm_check split-64k-gives-back-95pct "$detail" [ $((freed * 100)) -ge $((planted * 95)) ]
	vm_check split-64k-count "$(echo "$out" | grep '^split:')" vm_has "$out" '^split: 10[23][0-9] THPs split, 0 skipped'
	;;
none)
	vm_check split-64k-refused "rc=$rc $(echo "$out" | grep -m1 refused)" vm_has "$out" 'refused'
	;;
esac
report_json /mthp-work /tmp/m1b.json
vm_check full-64k-kept "64 KiB folios after: $(jsize /tmp/m1b.json 65536 folios), full=$(jsize_bucket /tmp/m1b.json 65536 9)" \
	[ "$(jsize_bucket /tmp/m1b.json 65536 9 | grep . || echo 0)" -ge 64 ]
vm_check_bloat data-intact-64k
report_json /mthp-sibling /tmp/m1s.json
sib_mc1=$(vm_mem_current "$sib")
vm_check sibling-untouched "memory.current $sib_mc0 -> $sib_mc1, 64 KiB full folios $(jsize_bucket /tmp/m1s.json 65536 9) of 64" \
	[ $((sib_mc0 - sib_mc1)) -le $((64 * 4096 * $(grep -c ^processor /proc/cpuinfo) + 65536)) -a "$(jsize_bucket /tmp/m1s.json 65536 9 | grep . || echo 0)" -ge 64 ]
vm_check_bloat sibling-data-intact "$SIBP" "$SIBL"
vm_bloat_stop; vm_bloat_stop "$SIBP"
echo "RESULT-FIGURE mthp-64k kernel=$THPS_KERNEL planted=$planted reported=$w64 freed=$freed"

# ---- 2. a mix: PMD THPs, 16 KiB and 64 KiB folios in one cgroup ----
cg=$(vm_cgroup_new mthp-mix)
only_size "$PMD_KB"
vm_bloat_start "$cg" --mix 4:8,512:4 || vm_fail mix-start-pmd "$(cat "$BLOAT_LOG")"
P1=$BLOAT_PID L1=$BLOAT_LOG
only_size 16
vm_bloat_start "$cg" --folio-size 16K --mix 0:512,4:64 || vm_fail mix-start-16k "$(cat "$BLOAT_LOG")"
P2=$BLOAT_PID L2=$BLOAT_LOG
only_size 64
vm_bloat_start "$cg" --folio-size 64K --mix 1:512,16:32 || vm_fail mix-start-64k "$(cat "$BLOAT_LOG")"
P3=$BLOAT_PID L3=$BLOAT_LOG
only_size none
PMD_B=$((PMD_KB * 1024)) PMD_N=$((PMD_KB / 4))
planted=$(( 8 * (PMD_N - 4) * 4096 + 512 * 4 * 4096 + 512 * 15 * 4096 ))
report_json /mthp-mix /tmp/m2.json
cw=$(awk '/"waste_bytes": /{ sub(/,$/, "", $2); print $2; exit }' /tmp/m2.json)
figs="PMD $(jsize /tmp/m2.json $PMD_B folios)/$(jsize /tmp/m2.json $PMD_B waste_bytes), 16K $(jsize /tmp/m2.json 16384 folios)/$(jsize /tmp/m2.json 16384 waste_bytes), 64K $(jsize /tmp/m2.json 65536 folios)/$(jsize /tmp/m2.json 65536 waste_bytes) (folios/waste)"
inr() { [ "${1:-0}" -ge "$2" -a "${1:-0}" -le "$3" ]; }
mix_sizes_ok() {
	inr "$(jsize /tmp/m2.json $PMD_B folios)" 12 13 && inr "$(jsize /tmp/m2.json 16384 folios)" 576 584 &&
		inr "$(jsize /tmp/m2.json 65536 folios)" 544 552
}
vm_check mix-report-sizes "$figs; planted 12 PMD, 576 x 16K, 544 x 64K (every size is 'never' by now: stats/nr_anon keeps them seen)" mix_sizes_ok
vm_check mix-report-waste "waste_bytes=$cw, planted zeros $planted ($(pct "${cw:-0}" $planted) %)" within5 "${cw:-0}" $planted
mc_a=$(vm_mem_current "$cg")
out=$(thpshrink reclaim --cgroup mthp-mix --method split 2>&1); rc=$?
mc_b=$(vm_mem_current "$cg")
echo "$out"
freed=$((mc_a - mc_b))
detail="planted=$planted reported=$cw memory.current=$mc_a->$mc_b freed=$freed ($(pct $freed $planted) % of planted) rc=$rc"
echo "# mthp-mix: $detail"
case $THPS_KCLASS in
upstream | rfc)
	vm_check mix-split-gives-back-95pct "$detail" [ $((freed * 100)) -ge $((planted * 95)) ] ;;
none)
	vm_check mix-split-refused "rc=$rc" vm_has "$out" 'refused' ;;
esac
report_json /mthp-mix /tmp/m2b.json
kept="PMD $(jsize_bucket /tmp/m2b.json $PMD_B 9)/4, 16K $(jsize_bucket /tmp/m2b.json 16384 9)/64, 64K $(jsize_bucket /tmp/m2b.json 65536 9)/32"
vm_check mix-full-kept "full folios kept: $kept" \
	[ "$(jsize_bucket /tmp/m2b.json $PMD_B 9 | grep . || echo 0)" -ge 4 -a \
	  "$(jsize_bucket /tmp/m2b.json 16384 9 | grep . || echo 0)" -ge 64 -a \
	  "$(jsize_bucket /tmp/m2b.json 65536 9 | grep . || echo 0)" -ge 32 ]
vm_check_bloat mix-data-intact-pmd "$P1" "$L1"
vm_check_bloat mix-data-intact-16k "$P2" "$L2"
vm_check_bloat mix-data-intact-64k "$P3" "$L3"
vm_bloat_stop "$P1"; vm_bloat_stop "$P2"; vm_bloat_stop "$P3"
echo "RESULT-FIGURE mthp-mix kernel=$THPS_KERNEL planted=$planted reported=$cw freed=$freed"
