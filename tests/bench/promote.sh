#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `make bench-promote`: thpshrink promote on this host's real MMU. A process of its own
# (thpshrink-dense; it never madvises, so under THP=madvise or never it has no THP) holds 512 MiB
# of fully written dense memory plus sparse (1 page in 8) and zero-page (read only) ranges.
# Prints, in one run: dependent random reads per second before and after
# `thpshrink promote --pid` (median of 5 s each), RssAnon before/after, the fraction of the dense
# memory that became THPs, the data check; then what finding dense ranges costs per GiB looked
# at, PAGEMAP_SCAN against plain pagemap, on dense memory and on an untouched reservation.
# Changes no sysfs or sysctl setting and no cgroup. Needs root (PFNs, kpageflags,
# CAP_SYS_NICE). Usage: promote.sh BUILDDIR [DENSE_MB] [SECS]
set -u
b=${1:?usage: promote.sh BUILDDIR [DENSE_MB] [SECS]}
mb=${2:-512} secs=${3:-5}
[ "$(id -u)" = 0 ] || { echo "promote.sh: needs root"; exit 77; }
command -v jq >/dev/null || { echo "promote.sh: needs jq"; exit 77; }
tmp=$(mktemp -d /tmp/promote-bench.XXXXXX)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
echo "kernel $(uname -r), THP enabled: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"

# 1. speed, memory, THPs, data: all in the workload's own run
"$b/tests/tools/thpshrink-dense" --dense-mb "$mb" --sparse-mb 64 --zero-mb 64 --measure "$secs" \
	--promote "$b/thpshrink promote --pid \$THPS_TARGET_PID --json >$tmp/promote.json" \
	>"$tmp/dense.out" || { cat "$tmp/dense.out"; echo "FAIL: thpshrink-dense"; exit 1; }
v() { sed -n "s/^$1:.* $2=\([0-9.]*\).*/\1/p" "$tmp/dense.out" | head -1; }
j() { jq -r "$1" "$tmp/promote.json"; }
before=$(v before reads_per_s) after=$(v after reads_per_s) speed=$(v after speedup)
rb=$(v before rss_anon) ra=$(v after rss_anon) thp=$(v after dense_thp)
printf '%-34s %16s %16s\n' "" before after
printf '%-34s %16s %16s\n' "dependent random reads/s (median)" "$before" "$after"
printf '%-34s %16s %16s\n' "RssAnon (bytes)" "$rb" "$ra"
printf '%-34s %16s %16s\n' "dense in THPs (bytes)" "$(v before dense_thp)" "$thp"
printf '%-34s %16s %16s\n' "sparse THPs / Rss (bytes)" "$(v before sparse_thp) / $(v before sparse_rss)" \
	"$(v after sparse_thp) / $(v after sparse_rss)"
printf '%-34s %16s %16s\n' "zero-page THPs / Rss (bytes)" "$(v before zero_thp) / $(v before zero_rss)" \
	"$(v after zero_thp) / $(v after zero_rss)"
echo "speedup: ${speed}x; dense memory in THPs: $(awk -v t="$thp" -v m="$mb" 'BEGIN{printf "%.1f", 100*t/(m*1048576)}') %;" \
	"RssAnon growth: $(awk -v a="$ra" -v b="$rb" 'BEGIN{printf "%.2f", 100*(a-b)/b}') %;" \
	"$(grep '^data:' "$tmp/dense.out")"
echo "promote: $(j .ranges_found) dense ranges found by $(j .finder) in $(j .find_seconds) s," \
	"$(j .ranges_collapsed) collapsed in $(j .collapse_seconds) s, $(j .ranges_verified_thp) THPs" \
	"afterwards (kpageflags), refused $(j .failures.refused), no memory $(j .failures.no_memory)"

# 2. what finding costs per GiB looked at: 1 GiB dense + 1 GiB sparse + 8 GiB never touched
"$b/tests/tools/thpshrink-dense" --dense-mb 1024 --sparse-mb 1024 --zero-mb 0 --empty-mb 8192 \
	--wait >"$tmp/cost.out" &
pids="$pids $!" pid=$!
for _ in $(seq 600); do grep -q '^before:' "$tmp/cost.out" && break; sleep 0.1; done
echo "finder cost, process $pid: 1 GiB dense, 1 GiB sparse (1 page in 8), 8 GiB untouched; median of 5"
printf '%-14s %14s %14s %12s %12s\n' finder "looked (GiB)" "pagemap read" "ms" "ms per GiB"
for f in auto pagemap; do
	for i in 1 2 3 4 5; do
		"$b/thpshrink" promote --pid "$pid" --dry-run --finder $f --fallback-budget 64G --json
	done >"$tmp/cost-$f.json"
	jq -s -r 'sort_by(.find_seconds) | .[2] |
		"\(.finder) \(.looked_bytes / 1073741824) \(.pagemap_bytes) \(.find_seconds * 1000)
		 \(.find_seconds * 1000 / (.looked_bytes / 1073741824)) \(.ranges_found)"' \
		"$tmp/cost-$f.json" | tr '\n' ' ' | {
		read -r name looked read ms per found
		printf '%-14s %14.2f %14s %12.2f %12.3f   (%s dense ranges)\n' "$name" "$looked" "$read" \
			"$ms" "$per" "$found"
	}
done
kill -USR1 "$pid"
wait "$pid"
grep -q '^data: verified' "$tmp/cost.out" || { echo "FAIL: data of the cost run"; exit 1; }
grep -q '^data: verified' "$tmp/dense.out" || exit 1
