#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A node, not a benchmark: scenarios/70-node.sh (Redis, memcached, Python, Go, JVM, Node.js, one
# cgroup each) in the real-kernel VM under THP never, THP always, thpshrinkd's peers (THP madvise;
# THP always + the kernel's underused-THP shrinker + a proactive-reclaim loop; THP always +
# PR_SET_THP_DISABLE for the services that bloat) and THP always + thpshrinkd (with the global
# max_ptes_none left at 511, and as shipped), in one boot; prints the peers side by side (the
# node's memory.current, anon and page cache against THP never, THP coverage of anon, low-util
# THP waste left, the CPU of thpshrinkd or of the reclaim loop), then the per-service table of
# THP never, THP always and thpshrinkd (THPs, throughput relative to THP always, data checks),
# and plots the node's memory over time (gnuplot PNG).
# Usage: node.sh [BUILDDIR] [KERNEL] [SCALE]   (defaults: the cwd, k612, 2)
# THPS_NODE_CONFS=never,always,thpsd,... runs fewer configurations (default: all seven).
# Output: BUILDDIR/tests/bench/node-KERNEL/{table.md,node.png,memory.dat,KERNEL.log,KERNEL.result},
# and the result file again as BUILDDIR/bench-results/node-KERNEL.result (scripts/results-tables)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
b=$(cd "${1:-.}" && pwd)
k=${2:-k612}
scale=${3:-2}
[ -x "$b/thpshrink" ] || { echo "node.sh: no thpshrink in $b: build first"; exit 77; }
out=$b/tests/bench/node-$k${THPS_NODE_SUFFIX:-}
mkdir -p "$out"
confs=${THPS_NODE_CONFS:-never,madvise,always,shrinker,optout,thpsd-default,thpsd}
# ~5.5 min a configuration at scale 2 under TCG, and a second never + thpsd where the verdict asks
nconf=$(echo "$confs" | tr , '\n' | grep -c .)
if [ -z "${THPS_NODE_REUSE:-}" ]; then   # THPS_NODE_REUSE=1: tabulate the last run again
	# psi=1: the shrinker peer's reclaim loop reads memory.pressure (Debian boots with PSI off)
	THPS_VM_SCENARIOS='70-*' THPS_VM_OUTDIR=$out THPS_VM_TIMEOUT=${THPS_VM_TIMEOUT:-$((600 * nconf + 1500))} \
		THPS_VM_APPEND="thps.node_scale=$scale thps.node_settle=${THPS_NODE_SETTLE:-30} thps.node_bench=${THPS_NODE_BENCH:-6} thps.node_rounds=${THPS_NODE_ROUNDS:-3} thps.node_confs=$confs psi=1 THPS_VM_SCENARIO_TIMEOUT=$((600 * nconf + 1400))" \
		top_srcdir=$(cd "$here/../.." && pwd) top_builddir=$b \
		"$here/../vm/run-vm.sh" "$k" > "$out/run.txt" 2>&1
	rc=$?
	[ $rc = 77 ] && { tail -1 "$out/run.txt"; exit 77; }
fi
log=$out/$k.log
# the run as scripts/results-tables takes it in for the peers' table (docs/performance.md):
# scripts/results-tables --update --from BUILDDIR/bench-results
if [ -s "$out/$k.result" ]; then
	mkdir -p "${BENCH_RESULTS:-$b/bench-results}"
	cp "$out/$k.result" "${BENCH_RESULTS:-$b/bench-results}/node-$k.result"
fi
grep '^\(PASS\|FAIL\|SKIP\) ' "$out/$k.result" | sed 's/^/  /'
figs=$(grep -a '^# node-fig ' "$log" | sed 's/^# node-fig //')
[ -n "$figs" ] || { echo "node.sh: no figures in $log (see $out/run.txt)"; exit 1; }
{
echo "$figs" | awk -v k="$k" -v scale="$scale" '
	{ delete f; for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	  if ("svc" in f && "conf" in f) for (x in f) v[f["conf"], f["svc"], x] = f[x]
	  else if ("svc" in f) for (x in f) v["sum", f["svc"], x] = f[x]
	  else if ("conf" in f) for (x in f) v[f["conf"], "-", x] = f[x] }
	function mib(x) { return sprintf("%.1f", x / 1048576) }
	function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "n/a" }
	function pc(a, b) { return b > 0 ? sprintf("%.1f %%", 100 * a / b) : "n/a" }
	END {
		# the peers side by side: the node (sum of the six services) per configuration
		split("never madvise always shrinker optout thpsd_default thpsd", pc_, " ")
		split("redis memcached python go jvm nodejs", s6, " ")
		split("THP never|THP madvise|THP always|always + shrinker (max_ptes_none 409) + reclaim loop|always + PR_SET_THP_DISABLE (redis, go, jvm)|always + thpshrinkd, max_ptes_none 511|always + thpshrinkd as shipped (max_ptes_none 102)", lb_, "|")
		for (i = 1; i <= 7; i++) if (!((pc_[i], "node", "file") in v) && ((pc_[i], "node", "mc") in v))
			for (j = 1; j <= 6; j++) v[pc_[i], "node", "file"] += v[pc_[i], s6[j], "file"]   # logs from before the node file figure
		for (i = 1; i <= 7; i++) if (!((pc_[i], "node", "lowutil_left") in v) && ((pc_[i], "node", "mc") in v))
			for (j = 1; j <= 6; j++) v[pc_[i], "node", "lowutil_left"] += v[pc_[i], s6[j], "waste"] + v[pc_[i], s6[j], "partial"]
		nv = v["never", "node", "mc"]; na = v["never", "node", "anon"]; nf = v["never", "node", "file"]
		printf "Peers side by side on %s (scale %d): the node (sum of the six services) at steady state, MiB\n\n", k, scale
		printf "| configuration | memory.current (of never) | anon (of never) | page cache kept (of never) | THP coverage of anon | low-util THP waste left | CPU, %% of one vCPU | data |\n"
		printf "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |\n"
		for (i = 1; i <= 7; i++) {
			c = pc_[i]
			if (!((c, "node", "mc") in v)) continue
			bad = 0; nd = 0
			for (j = 1; j <= 6; j++) { d = v[c, s6[j], "data"]; if (d != "") nd++; if (d != "ok") bad++ }
			cpu = "-"
			if ((c, "-", "daemon_cpu_pct") in v) cpu = "thpshrinkd " v[c, "-", "daemon_cpu_pct"]
			if ((c, "-", "loop_cpu_pct") in v) cpu = "reclaim loop " v[c, "-", "loop_cpu_pct"] " (" v[c, "-", "loop_writes"] " writes" (v[c, "-", "psi"] == "1" ? "" : ", no PSI") ")"
			printf "| %s | %s (%s) | %s (%s) | %s (%s) | %s | %s | %s | %s |\n", lb_[i],
				mib(v[c, "node", "mc"]), pc(v[c, "node", "mc"], nv), mib(v[c, "node", "anon"]), pc(v[c, "node", "anon"], na),
				mib(v[c, "node", "file"]), pc(v[c, "node", "file"], nf), pc(v[c, "node", "anon_thp"], v[c, "node", "anon"]),
				(c, "node", "lowutil_left") in v ? mib(v[c, "node", "lowutil_left"]) : "n/a", cpu,
				bad == 0 && nd == 6 ? "ok ×6" : "FAIL (" 6 - bad "/6 ok)"
		}
		printf "\nTHP coverage: memory.stat anon_thp / anon (the benefit proxy). Low-util waste left: zero subpages of THPs <= 40 %% used + unmapped subpages of partially mapped ones (thpshrink report). CPU: utime + stime over the configuration'"'"'s wall time under TCG (the loop: its shell, its awk and the kernel'"'"'s reclaim in its writes).\n\n"
		printf "Node scenario on %s (scale %d), memory.current at steady state, MiB (anon in parentheses)\n\n", k, scale
		printf "| service | THP never | THP always | always + thpshrinkd | %% of never (anon) | THPs always → thpshrinkd (low-util left) | throughput vs always: never, thpshrinkd (per calibration) | data |\n"
		printf "| --- | ---: | ---: | ---: | ---: | --- | --- | --- |\n"
		n = split("redis memcached python go jvm nodejs node", s, " ")
		for (i = 1; i <= n; i++) {
			x = s[i]
			d = v["never", x, "data"] " " v["always", x, "data"] " " v["thpsd", x, "data"]
			ok = (x == "node") ? "" : (d == "ok ok ok" ? "ok ×3" : "FAIL (" d ")")
			printf "| %s | %s (%s) | %s (%s) | %s (%s) | %.1f %% (%.1f %%) | %d → %d (%s) | %s, %s | %s |\n", x,
				mib(v["never", x, "mc"]), mib(v["never", x, "anon"]), mib(v["always", x, "mc"]), mib(v["always", x, "anon"]),
				mib(v["thpsd", x, "mc"]), mib(v["thpsd", x, "anon"]), 100 * v["thpsd", x, "mc"] / v["never", x, "mc"], 100 * v["thpsd", x, "anon"] / v["never", x, "anon"],
				v["always", x, "thps"], v["thpsd", x, "thps"], x == "node" ? "-" : v["thpsd", x, "lowutil_thps"] + 0,
				x == "node" ? "-" : r(v["never", x, "rate"], v["always", x, "rate"]), x == "node" ? "-" : r(v["thpsd", x, "rate"], v["always", x, "rate"]) " (" r(v["thpsd", x, "norm"], v["always", x, "norm"]) ")", ok
		}
		rounds = 3; if (("sum", "node", "rounds") in v) rounds = v["sum", "node", "rounds"]
		printf "\nTHPs: memory.stat anon_thp / 2 MiB; low-util left: THPs at <= 40 %% used (buckets 0..3) per thpshrink report. Throughput: requests/s of the service'"'"'s own load generator, best of %s (THP never: one fewer), relative to THP always'"'"'s; in parentheses per unit of a calibration loop run just before each (TCG'"'"'s speed follows the host'"'"'s load; a collapse guard, not a performance figure).\n", rounds
		# the node without the services that had no THP in any configuration: their differences
		# come from their own collectors, not from THP
		split("never always thpsd", cf, " "); ex = ""
		for (i = 1; i <= 6; i++) if (v["always", s[i], "thps"] + v["thpsd", s[i], "thps"] == 0) {
			ex = ex " " s[i]; for (j = 1; j <= 3; j++) w[cf[j]] += v[cf[j], s[i], "mc"] }
		if (ex != "")
			printf "\nWithout%s (no THP in any configuration): THP never %s MiB, THP always %s MiB (%.1f %%), THP always + thpshrinkd %s MiB = %.1f %% of THP never.\n", ex,
				mib(v["never", "node", "mc"] - w["never"]), mib(v["always", "node", "mc"] - w["always"]),
				100 * (v["always", "node", "mc"] - w["always"]) / (v["never", "node", "mc"] - w["never"]),
				mib(v["thpsd", "node", "mc"] - w["thpsd"]), 100 * (v["thpsd", "node", "mc"] - w["thpsd"]) / (v["never", "node", "mc"] - w["never"])
		printf "\nTHP always alone: node at %.1f %% of THP never. thpshrinkd: %s %% of one vCPU over %s s, RSS %s MiB (peak %s MiB), gave back %s MiB.\n",
			100 * v["always", "node", "mc"] / v["never", "node", "mc"], v["thpsd", "-", "daemon_cpu_pct"], v["thpsd", "-", "daemon_secs"],
			mib(v["thpsd", "-", "daemon_rss"]), mib(v["thpsd", "-", "daemon_hwm"]), mib(v["thpsd", "-", "daemon_given_back"])
		if (("sum", "node", "thp_followed") in v)
			printf "\nTHP retention (each THP >= 90 %% used after the fill, followed to the end of the thpshrinkd run): %s followed, %s still THPs, %s split, %d split once < 90 %% used, %s partly and %s mostly unmapped by their services: %s %% kept (THP always, followed the same way: %s %%).\n",
				v["sum", "node", "thp_followed"], v["sum", "node", "thp_kept"], v["sum", "node", "thp_split"], v["sum", "node", "thp_drained"], v["sum", "node", "thp_partial"],
				v["sum", "node", "thp_freed"], v["sum", "node", "thp_retention_pct"], v["sum", "node", "thp_retention_always_pct"]
	}'
} | tee "$out/table.md"
# the node over time, one series per configuration (seconds since the configuration started)
grep -a '^# node-ts ' "$log" | awk '{ print $3, $4, $5 / 1048576 }' > "$out/memory.dat"
if command -v gnuplot >/dev/null; then
	# one series per configuration the run had, in the table's order (a file each)
	series=
	for c in never madvise always shrinker optout thpsd_default thpsd; do
		awk -v c=$c '$1 == c { print $2, $3 }' "$out/memory.dat" > "$out/memory-$c.dat"
		[ -s "$out/memory-$c.dat" ] || { rm -f "$out/memory-$c.dat"; continue; }
		series="$series\"$out/memory-$c.dat\" using 1:2 with lines lw 2 title \"$c\", "
	done
	gnuplot <<GP
set terminal pngcairo size 900,500 noenhanced
set output "$out/node.png"
set title "Node (Redis, memcached, Python, Go, JVM, Node.js) on $k: sum of memory.current"
set xlabel "seconds since the services started"
set ylabel "MiB"
set key right bottom
set grid
plot ${series%, }
GP
	echo "plot: $out/node.png"
else
	echo "plot: SKIP (gnuplot not installed: package gnuplot-nox)"
fi
grep -q '^FAIL' "$out/$k.result" && exit 1
exit 0
