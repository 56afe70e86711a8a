#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: what thpshrinkd costs at rest, next to what one scanning pass costs in the same run.
#   daemon.sh [BUILDDIR] [SECONDS]
# Case A: 1,000 empty cgroups. On a host without a cgroup v2 memory controller (this project's
#   build host) they are a FAKE tree under THPSHRINK_CGROUP_ROOT (mkdir'd in a temp dir, no
#   processes), said so in the output; with a writable cgroup v2 (the VM) pass CGROUP_V2=1.
# Case B: 100 workloads with THPs (thpshrink-bloat, 4 THPs each, 8 of 512 subpages used). On the
#   host they share the bench's own memory cgroup (creating cgroups is not allowed there).
# Each case: thpshrinkd --interval INTERVAL runs SECONDS; CPU from /proc/PID/stat utime+stime
# over the window (after the first pass), RSS from /proc/PID/status (VmRSS, VmHWM). Baseline in
# the same run: one pass alone (thpshrinkd --once) under /usr/bin/time.
# Goals: < 1 % of one core and < 16 MiB RSS at rest.
set -u
B=${1:-${top_builddir:-$(pwd)}}
SECS=${2:-30}
INTERVAL=${INTERVAL:-300}
D=$B/thpshrinkd
BLOAT=$B/thpshrink-bloat
[ -x "$D" ] || { echo "bench-daemon: $D not built"; exit 1; }
T=$(mktemp -d /tmp/thps-bench-daemon.XXXXXX)
PIDS=
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT INT TERM
HZ=$(getconf CLK_TCK)
. "$(dirname "$0")/result.sh"
bench_result_open bench-daemon "$B" "$(dirname "$0")/../.."
CG=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup | head -1)
[ -n "$CG" ] || CG=$(sed -n 's/^0:://p' /proc/self/cgroup | head -1)
mkdir -p "$T/pol"

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
status_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# run_case NAME ENV... : starts the daemon, waits for its first pass, measures SECS seconds.
run_case() {
	name=$1; shift
	env "$@" "$D" --listen none --policy-dir "$T/pol" --state-dir "$T/state-$name" \
		--textfile "$T/$name.prom" --interval "$INTERVAL" ${SCOPE:+--cgroup "$SCOPE"} \
		>"$T/$name.log" 2>&1 &
	dp=$!
	i=0
	while [ ! -s "$T/$name.prom" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
	[ -s "$T/$name.prom" ] || { echo "bench-daemon: $name: no first pass"; cat "$T/$name.log"; kill $dp; return 1; }
	t0=$(ticks $dp); s0=$(date +%s.%N)
	sleep "$SECS"
	t1=$(ticks $dp); s1=$(date +%s.%N)
	rss=$(status_kib $dp VmRSS); hwm=$(status_kib $dp VmHWM)
	passes=$(awk '$1 == "thpshrink_scans_total" { print $2 }' "$T/$name.prom")
	dur=$(awk '$1 == "thpshrink_scan_duration_seconds" { print $2 }' "$T/$name.prom")
	thps=$(awk '$1 == "thpshrink_scan_thps" { print $2 }' "$T/$name.prom")
	cgs=$(grep -c '^thpshrink_cgroup_lowutil_thps{' "$T/$name.prom")
	kill -TERM $dp; wait $dp
	pass_cpu=$(awk '{ print $2 + $3 }' "$T/time.$name")
	awk -v res="$BENCH_RESULT" -v n="$name" -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" -v hz="$HZ" -v rss="$rss" \
	    -v hwm="$hwm" -v p="$passes" -v d="$dur" -v th="$thps" -v cg="$cgs" -v pc="$pass_cpu" 'BEGIN {
		cpu = (t1 - t0) / hz / (s1 - s0) * 100
		printf "  at rest: CPU %.3f %% of a core over %.0f s (%d passes so far)  RSS %.1f MiB  peak %.1f MiB  %s\n",
			cpu, s1 - s0, p, rss / 1024, hwm / 1024,
			(cpu < 1 && rss < 16384) ? "[goal met]" : "[GOAL MISSED]"
		printf "  last pass in the daemon: %.3f s wall, %d THPs, %d cgroups with THPs\n", d, th, cg
		printf "  at the default 60 s interval: %.2f %% of a core (rest + one pass a minute)\n", cpu + pc / 60 * 100
		printf "%s bench-daemon.%s at rest CPU %.3f %% of a core over %.0f s, RSS %.1f MiB (peak %.1f); one pass alone %.2f s CPU; at the default 60 s interval %.2f %% of a core (goal < 1 %%, < 16 MiB)\n",
			(cpu < 1 && rss < 16384) ? "PASS" : "FAIL", n, cpu, s1 - s0, rss / 1024, hwm / 1024, pc, cpu + pc / 60 * 100 >> res
	}'
}

# Baseline in the same run: one pass alone.
baseline() {
	/usr/bin/time -f "%e %U %S %M" -o "$T/time.$1" env "$2" "$D" --once --listen none --policy-dir "$T/pol" \
		--state-dir "$T/state-once" ${SCOPE:+--cgroup "$SCOPE"} >/dev/null 2>&1
	awk '{ printf "  one pass alone (scanner baseline): %.2f s wall, %.2f s CPU (%.2f user, %.2f sys), max RSS %.1f MiB\n", $1, $2 + $3, $2, $3, $4 / 1024 }' "$T/time.$1"
}

echo "bench-daemon: $(nproc) CPUs, kernel $(uname -r), interval ${INTERVAL}s, window ${SECS}s"
# A: 1,000 empty cgroups.
if [ "${CGROUP_V2:-0}" = 1 ] && [ -w /sys/fs/cgroup/cgroup.subtree_control ]; then
	for i in $(seq 1 1000); do mkdir -p "/sys/fs/cgroup/bench-empty/e$i"; done
	SCOPE=/bench-empty
	echo "case A: 1,000 empty cgroups under /sys/fs/cgroup/bench-empty (real cgroup v2)"
	baseline A THPSHRINK_X=1
	run_case A THPSHRINK_X=1
	for i in $(seq 1 1000); do rmdir "/sys/fs/cgroup/bench-empty/e$i"; done; rmdir /sys/fs/cgroup/bench-empty
else
	mkdir -p "$T/cg"
	printf 'cpu memory pids\n' >"$T/cg/cgroup.controllers"
	for i in $(seq 1 1000); do
		mkdir "$T/cg/e$i"
		printf '0\n' >"$T/cg/e$i/memory.current"
		: >"$T/cg/e$i/cgroup.procs"
	done
	SCOPE=
	echo "case A: 1,000 empty cgroups as a FAKE tree (THPSHRINK_CGROUP_ROOT=$T/cg): this host has no cgroup v2 memory controller; the pass walks every process of the host"
	baseline A "THPSHRINK_CGROUP_ROOT=$T/cg"
	run_case A "THPSHRINK_CGROUP_ROOT=$T/cg"
fi

# B: 100 workloads with THPs.
[ -x "$BLOAT" ] || { echo "bench-daemon: $BLOAT not built, case B skipped"; exit 0; }
SCOPE=$CG
for i in $(seq 1 100); do
	"$BLOAT" --mix 8:4 --seconds 600 --ready-file "$T/b$i.ready" >/dev/null 2>&1 &
	PIDS="$PIDS $!"
done
i=0
while [ "$(ls "$T"/b*.ready 2>/dev/null | wc -l)" -lt 100 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
backed=$(cat "$T"/b*.ready 2>/dev/null | sed -n 's/.*thp_backed=\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
echo "case B: 100 thpshrink-bloat processes x 4 THPs ($backed THP-backed) in cgroup $CG (the host allows no new cgroups: one cgroup, 100 workloads)"
baseline B THPSHRINK_X=1
run_case B THPSHRINK_X=1
