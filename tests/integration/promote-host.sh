#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# thpshrink promote --pid on this host's real MMU, on processes of our own (thpshrink-dense: they
# never madvise). Nothing global is touched: no cgroup, no sysfs knob. Asserts:
#   - >= 95 % of the dense memory becomes THPs, RssAnon grows by <= 1 %, the sparse and the
#     zero-page ranges get no THP and keep their Rss, the data is intact; with both finders;
#   - a process that called PR_SET_THP_DISABLE gets none and is not asked;
#   - --dry-run collapses nothing; bad arguments are refused.
# Speed is the benchmark's business (make bench-promote), not this test's.
# SKIP (77) where this host cannot: not root, no CAP_SYS_NICE, no THP support, a kernel before
# 6.1 (no MADV_COLLAPSE).
set -u
. "$top_srcdir/tests/integration/lib.sh"
b=$top_builddir
bin=$CLI dense=$b/tests/tools/thpshrink-dense
need_built "$bin" "$dense"
need_collapse
thps_tmpdir promote-host
tmp=$T

v() { sed -n "s/^$2:.* $3=\([0-9.]*\).*/\1/p" "$1" | head -1; }
MB=64 SMB=16 ZMB=16
run() { # OUT EXTRA-WORKLOAD-ARGS PROMOTE-ARGS
	"$dense" --dense-mb $MB --sparse-mb $SMB --zero-mb $ZMB $2 \
		--promote "$bin promote --pid \$THPS_TARGET_PID $3 >$1.promote 2>&1" >"$1"
}

finders="auto pagemap"
# An ASan build of the workload maps terabytes of shadow memory before its heap: the pagemap
# finder's byte budget (rightly) runs out there, before the dense range.
if ldd "$dense" 2>/dev/null | grep -q libasan; then
	echo "SKIP: pagemap finder: the workload is an ASan build; its shadow mappings take the whole pagemap budget"
	finders=auto
fi
for finder in $finders; do
	o=$tmp/$finder
	run "$o" "" "--finder $finder"
	thp=$(v "$o" after dense_thp) rb=$(v "$o" before rss_anon) ra=$(v "$o" after rss_anon)
	check "$finder: THPs" "$thp of $((MB << 20)) dense bytes are THPs (>= 95 %)" \
		[ "$(( ${thp:-0} * 100 ))" -ge "$(( (MB << 20) * 95 ))" ]
	check "$finder: memory" "RssAnon $rb -> $ra (<= +1 %)" \
		[ "$(( (${ra:-0} - ${rb:-0}) * 100 ))" -le "${rb:-0}" ]
	check "$finder: sparse" "no THP, Rss $(v "$o" before sparse_rss) -> $(v "$o" after sparse_rss)" \
		test "$(v "$o" after sparse_thp)" = 0 -a "$(v "$o" after sparse_rss)" = "$(v "$o" before sparse_rss)"
	check "$finder: zero page" "no THP, Rss $(v "$o" before zero_rss) -> $(v "$o" after zero_rss)" \
		test "$(v "$o" after zero_thp)" = 0 -a "$(v "$o" after zero_rss)" = "$(v "$o" before zero_rss)"
	check "$finder: data" "$(grep '^data:' "$o")" grep -q '^data: verified' "$o"
	check "$finder: report" "$(grep '^summary:' "$o.promote")" \
		grep -q "^summary: found=$((MB / 2)) collapsed=$((MB / 2)) verified=$((MB / 2)) refused=0" "$o.promote"
done
grep -q '^finder: PAGEMAP_SCAN' "$tmp/auto.promote" || echo "note: this kernel has no PAGEMAP_SCAN: $(grep '^finder:' "$tmp/auto.promote")"

o=$tmp/disabled
run "$o" --thp-disable ""
check "PR_SET_THP_DISABLE" "no THP ($(v "$o" after dense_thp) bytes), not asked" \
	test "$(v "$o" after dense_thp)" = 0 -a -n "$(grep '^summary:.* collapsed=0 .*disabled=1 ' "$o.promote")"
check "PR_SET_THP_DISABLE: data" "$(grep '^data:' "$o")" grep -q '^data: verified' "$o"

o=$tmp/dry
run "$o" "" --dry-run
check "dry run" "found $((MB / 2)) ranges, no THP made" \
	test "$(v "$o" after dense_thp)" = 0 -a -n "$(grep "^summary: found=$((MB / 2)) collapsed=0 " "$o.promote")"

o=$tmp/max
run "$o" "" "--max-bytes 16M --json"
check "--max-bytes" "16 MiB asked, $(v "$o" after dense_thp) bytes of THPs" \
	[ "$(v "$o" after dense_thp)" = $((16 << 20)) ]
if command -v jq >/dev/null; then
	check "--json" "ranges_collapsed 8" [ "$(jq .ranges_collapsed "$o.promote")" = 8 ]
fi

"$bin" promote --pid 1 --cgroup / >/dev/null 2>&1
check "usage" "--pid with --cgroup is refused (exit 2)" [ $? = 2 ]
"$bin" promote >/dev/null 2>&1
check "usage" "no target is refused (exit 2)" [ $? = 2 ]
"$bin" promote --pid 1 --finder magic >/dev/null 2>&1
check "usage" "--finder magic is refused (exit 2)" [ $? = 2 ]
exit $((fails > 0))
