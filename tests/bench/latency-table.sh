#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# latency-table.sh: the latency benchmark's table (tests/bench/latency.sh), from its rounds.
#   latency-table.sh --result RESULT ROUNDS   one run: ROUNDS holds its lines
#                                             "SVC ROUND PHASE n=... secs=... ... load=L action=A";
#                                             the table, and its PASS lines appended to RESULT
#   latency-table.sh RESULT...                several runs pooled: the "# round" lines of each
#                                             run's bench-latency.result, each round against the
#                                             (a) of its own run and round
# Per service and phase: the median over the rounds of requests/s, p50/p99/p99.9/max latency per
# request and the 1-minute load average, with min-max; p99.9 and requests/s against (a).
set -uo pipefail
res=""
if [ "${1:-}" = --result ]; then
	res=${2:?usage: latency-table.sh --result RESULT ROUNDS | RESULT...}
	shift 2
fi
[ $# -gt 0 ] || { echo "usage: latency-table.sh --result RESULT ROUNDS | RESULT..."; exit 2; }
if [ -n "$res" ]; then cat "$1"; else
	k=0
	for f in "$@"; do
		k=$((k + 1))
		grep -q '^# round ' "$f" || { echo "latency-table.sh: no '# round' lines in $f" >&2; exit 1; }
		# round R of run K: "K:R", so each round meets its own run's (a)
		sed -n "s/^# round \([^ ]*\) \([0-9]*\) /\1 $k:\2 /p" "$f"
	done
fi | awk -v res="$res" -v runs=$# '
	function kv(k,   i, a) { for (i = 4; i <= NF; i++) { split($i, a, "="); if (a[1] == k) return a[2] } return "" }
	function sort(arr, k,   i, j, t) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t } }
	function med(arr, k,   m) { sort(arr, k); m = int((k + 1) / 2); return (k % 2) ? arr[m] : (arr[m] + arr[m + 1]) / 2 }
	function cell(key, fmt,   i, arr, k, m) { k = 0; for (i = 1; i <= nr[s, p]; i++) arr[++k] = v[s, p, i, key]
		m = med(arr, k); return k > 1 ? sprintf(fmt " (" fmt "-" fmt ")", m, arr[1], arr[k]) : sprintf(fmt, m) }
	# per round, the phase against the same round'"'"'s baseline (a)
	function ratio(key,   i, arr, k, m) { k = 0; for (i = 1; i <= nr[s, p]; i++) arr[++k] = v[s, p, i, key] / a[s, v[s, p, i, "round"], key]
		m = med(arr, k); return k > 1 ? sprintf("%.2f (%.2f-%.2f)", m, arr[1], arr[k]) : sprintf("%.2f", m) }
	{ s = $1; p = $3; r = $2; i = ++nr[s, p]; v[s, p, i, "round"] = r
	  split("ops_per_s p50_us p99_us p999_us max_us load secs", keys, " ")
	  for (j in keys) v[s, p, i, keys[j]] = kv(keys[j]) + 0
	  v[s, p, i, "action"] = kv("action")
	  if (p == "a") for (j in keys) a[s, r, keys[j]] = kv(keys[j]) + 0
	  if (nr[s, p] > rounds) rounds = nr[s, p]
	  secs += kv("secs"); nl++
	  if (!(s in seen)) { seen[s] = 1; order[++ns] = s } }
	END {
		if (!nl) { print "latency-table.sh: no rounds" > "/dev/stderr"; exit 1 }
		name["a"] = "(a) steady, THPs"; name["b"] = "(b) during split"; name["c"] = "(c) during promote"; name["d"] = "(d) 4 KiB pages"
		printf "\nper request, microseconds; median over %d rounds (%d run%s) of %.0f s phases (min-max); x = against (a) of the same round\n",
			rounds, runs, (runs > 1 ? "s" : ""), secs / nl
		printf "| service | phase | requests/s | p50 | p99 | p99.9 | max | p99.9 x | requests/s x | load 1m | action (last round) |\n"
		printf "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
		for (o = 1; o <= ns; o++) { s = order[o]
			for (q = 1; q <= 4; q++) { p = substr("abcd", q, 1); if (!nr[s, p]) continue
				printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s, name[p], cell("ops_per_s", "%.0f"),
					cell("p50_us", "%.1f"), cell("p99_us", "%.1f"), cell("p999_us", "%.1f"), cell("max_us", "%.0f"),
					ratio("p999_us"), ratio("ops_per_s"), cell("load", "%.2f"), v[s, p, nr[s, p], "action"]
				if (res != "")
					printf "PASS bench-latency.%s.%s requests/s %s, p50 %s us, p99 %s us, p99.9 %s us, p99.9 x %s, requests/s x %s, load %s (median (min-max) of %d rounds of %.0f s)\n",
						s, p, cell("ops_per_s", "%.0f"), cell("p50_us", "%.1f"), cell("p99_us", "%.1f"), cell("p999_us", "%.1f"),
						ratio("p999_us"), ratio("ops_per_s"), cell("load", "%.2f"), nr[s, p], secs / nl >> res } }
	}'
