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

# 2. what finding costs per GiB looked at, per kind of memory: one process each (dense 1 GiB,
# sparse 1 GiB with 1 page in 8, a never touched 8 GiB reservation); median of 5 dry runs
echo "finder cost (thpshrink promote --dry-run; the process's other mappings are a few MiB); median of 5"
printf '%-26s %-13s %11s %14s %10s %11s %7s\n' memory finder "looked GiB" "pagemap read" ms "ms per GiB" dense
for layout in "dense 1024 0 0" "sparse 2 1024 0" "untouched 2 0 8192"; do
	set -- $layout
	name=$1
	"$b/tests/tools/thpshrink-dense" --dense-mb "$2" --sparse-mb "$3" --zero-mb 0 --empty-mb "$4" \
		--wait >"$tmp/cost-$name.out" &
	pid=$!
	pids="$pids $pid"
	for _ in $(seq 600); do grep -q '^before:' "$tmp/cost-$name.out" && break; sleep 0.1; done
	for f in auto pagemap; do
		for i in 1 2 3 4 5; do
			"$b/thpshrink" promote --pid "$pid" --dry-run --finder $f --fallback-budget 64G --json
		done >"$tmp/cost-$name-$f.json"
		jq -s -r 'sort_by(.find_seconds) | .[2] |
			"\(.finder) \(.looked_bytes / 1073741824) \(.pagemap_bytes) \(.find_seconds * 1000)
			 \(.find_seconds * 1000 / (.looked_bytes / 1073741824)) \(.ranges_found)"' \
			"$tmp/cost-$name-$f.json" | tr '\n' ' ' | {
			read -r finder looked read ms per found
			printf '%-26s %-13s %11.2f %14s %10.2f %11.3f %7s\n' "$name ($2+$3+$4 MiB)" "$finder" \
				"$looked" "$read" "$ms" "$per" "$found"
		}
	done
	kill -USR1 "$pid"
	wait "$pid"
	grep -q '^data: verified' "$tmp/cost-$name.out" || { echo "FAIL: data of the $name run"; exit 1; }
done
grep -q '^data: verified' "$tmp/dense.out" || exit 1
