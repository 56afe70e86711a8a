#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What a split can cost Redis at most, on this machine's real MMU (not TCG): the same data in
# THPs versus in 4 KiB pages only. Two redis-servers side by side, both filled with N values of
# 4,000 bytes and thinned out by 80 % like tests/vm/scenarios/60-redis.sh; one with its heap in
# THPs (jemalloc's thp:always asks MADV_HUGEPAGE, so it works with THP "madvise" too), one with
# none (--disable-thp yes and jemalloc thp:never). redis-benchmark then runs against them
# alternately, R rounds; the figure is the median ops/s per test and 4K/THP.
# After thpshrink split a Redis's low-util THPs, its data sits in 4 KiB pages but for the few
# well-used THPs it keeps: the 4K instance is the worst case of "after".
# Needs no root and touches no cgroup or /sys setting; SKIPs (77) where THP is "never".
# Usage: redis-pages.sh [N] [ROUNDS]
set -uo pipefail
n=${1:-40000}
rounds=${2:-7}
for p in redis-server redis-cli redis-benchmark; do
	command -v $p >/dev/null || { echo "SKIP: $p not installed (Debian: redis-server, redis-tools)"; exit 77; }
done
mode=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
[ "$mode" = always ] || [ "$mode" = madvise ] ||
	{ echo "SKIP: transparent_hugepage/enabled is '${mode:-absent}': no THPs to compare with"; exit 77; }
w=$(mktemp -d /tmp/thps-redis-pages.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$w"; }
trap cleanup EXIT

# The data: as in the VM scenario, but keys named like redis-benchmark'"'"'s -r keys, so that its
# GET reads the real data set (random keys over all N: 20 % hit a 4,000-byte value).
awk -v n="$n" -v w="$w" 'BEGIN { f = "thpshrink"; while (length(f) < 3992) f = f "-" length(f)
	f = substr(f, 1, 3992)
	for (i = 0; i < n; i++) { k = sprintf("key:%012d", i); v = sprintf("%08d", i) f
	printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$4000\r\n%s\r\n", length(k), k, v > (w "/set.resp")
	if (i % 5) printf "*2\r\n$3\r\nDEL\r\n$%d\r\n%s\r\n", length(k), k > (w "/del.resp") } }'

start() { # NAME MALLOC_CONF DISABLE_THP -> socket path
	MALLOC_CONF=$2 redis-server --port 0 --unixsocket "$w/$1.sock" --save '' --appendonly no \
		--disable-thp "$3" --logfile "$w/$1.log" &
	pids+=($!)
	echo $! > "$w/$1.pid"
	for _ in $(seq 100); do redis-cli -s "$w/$1.sock" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done
	echo "redis $1 did not start: $(tail -2 "$w/$1.log")"; exit 1
}
fill() {
	redis-cli -s "$w/$1.sock" --pipe < "$w/set.resp" > /dev/null
	redis-cli -s "$w/$1.sock" --pipe < "$w/del.resp" > /dev/null
}
ahp() { awk '$1 == "AnonHugePages:" { print $2 }' "/proc/$(cat "$w/$1.pid")/smaps_rollup"; }
rss() { awk '$1 == "Rss:" { print $2 }' "/proc/$(cat "$w/$1.pid")/smaps_rollup"; }
bench() { # NAME -> "SET GET": SET into db 1 (the data set stays as it is), GET over the data set
	{ redis-benchmark -s "$w/$1.sock" --dbnum 1 -q -n 100000 -t set
	  redis-benchmark -s "$w/$1.sock" -q -n 100000 -r "$n" -t get; } 2>&1 | tr '\r' '\n' |
		awk '/requests per second/ { sub(":", "", $1); r[$1] = $2 } END { printf "%d %d\n", r["SET"], r["GET"] }'
}

# No purging (decay -1): a purge inside a THP splits its PMD, and the THP instance is to keep
# its data PMD-mapped, like the THPs khugepaged rebuilt before thpshrink acts.
start thp thp:always,dirty_decay_ms:-1,muzzy_decay_ms:-1 no
start 4k thp:never,dirty_decay_ms:-1,muzzy_decay_ms:-1 yes
fill thp
fill 4k
echo "Redis $(redis-server --version | grep -o 'v=[0-9.]*'), $n values of 4,000 bytes, 80 % deleted; kernel $(uname -r), THP $mode"
echo "thp: AnonHugePages $(ahp thp) kB of RSS $(rss thp) kB;  4k: AnonHugePages $(ahp 4k) kB of RSS $(rss 4k) kB"
[ "$(ahp thp)" -gt 0 ] || { echo "SKIP: the THP instance got no THPs (AnonHugePages 0)"; exit 77; }
[ "$(ahp 4k)" = 0 ] || { echo "FAIL: the 4K instance has THPs"; exit 1; }
: > "$w/runs"
. "$(dirname "$0")/result.sh"
bench_result_open bench-redis-pages "${top_builddir:-$PWD}" "$(dirname "$0")/../.."
for r in $(seq "$rounds"); do
	# alternate who goes first: drift of the machine's speed hits both alike
	if [ $((r % 2)) = 1 ]; then a=thp b=4k; else a=4k b=thp; fi
	echo "$a $(bench $a)" >> "$w/runs"
	echo "$b $(bench $b)" >> "$w/runs"
done
awk -v rounds="$rounds" -v res="$BENCH_RESULT" -v what="$n values, THP $mode, AnonHugePages $(ahp thp) kB" '
	function median(arr, k,   i, j, t, m) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
		m = int((k + 1) / 2); return (k % 2) ? arr[m] : (arr[m] + arr[m + 1]) / 2 }
	function spread(arr, k,   i, lo, hi) { lo = arr[1]; hi = arr[1]; for (i = 2; i <= k; i++) { if (arr[i] < lo) lo = arr[i]; if (arr[i] > hi) hi = arr[i] }
		return sprintf("%d-%d", lo, hi) }
	{ if ($1 == "thp") { ts[++nt] = $2; tg[nt] = $3 } else { fs[++nf] = $2; fg[nf] = $3 } }
	END {
		printf "redis-benchmark -n 100000: SET (db 1), GET -r N (the data set); %d rounds alternating; requests/s median (min-max)\n", rounds
		printf "| test | THPs | 4 KiB pages | 4K / THP |\n| --- | --- | --- | --- |\n"
		a = spread(ts, nt); b = spread(fs, nf); ms = median(ts, nt); m4 = median(fs, nf)
		printf "| SET | %d (%s) | %d (%s) | %.3f |\n", ms, a, m4, b, m4 / ms
		a = spread(tg, nt); b = spread(fg, nf); ms = median(tg, nt); m4 = median(fg, nf)
		printf "| GET | %d (%s) | %d (%s) | %.3f |\n", ms, a, m4, b, m4 / ms
		# The figures for scripts/results-tables: measured, no goal (4K/THP is what a split costs).
		ss = median(fs, nf) / median(ts, nt); gg = m4 / ms
		printf "PASS bench-redis-pages.ratio 4K/THP SET %.2f, GET %.2f (requests/s, medians of %d rounds alternating; %s)\n", ss, gg, rounds, what >> res
	}' "$w/runs"
