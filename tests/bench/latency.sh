#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `make bench-latency`: what thpshrink's actions cost a running service's latency, on this
# machine's real MMU, by pid (no cgroup, no sysfs or sysctl change). Three services that ask for
# THPs themselves, so they have them under THP "madvise" too:
#   redis: Debian's redis-server, jemalloc thp:always (purging at each free), filled with N values
#          of 4,000 bytes; the last 40 % of them are then thinned out by 80 % like the VM scenario
#          60-redis (partially mapped THPs for the split; the first 60 % stay in whole THPs);
#          requests are GETs over the whole key space from one closed-loop connection
#          (latency-resp);
#   jvm:   a JVM with -XX:+UseTransparentHugePages, its heap larger than its data and
#          pre-touched (LatencyChase.java): requests are dependent random reads of an int[];
#   chase: a C pointer chase (latency-chase): hot THPs, dense 4 KiB ranges, freed THPs.
# Each round and service, phases of equal length (SECS): (a) steady, on a fresh instance with
# THPs after a warm-up that is not counted (2 s; 1 s with --quick); (b) while `thpshrink reclaim --pid PID --method split` splits its low-util and partially
# mapped THPs (started 0.25 s into the phase); (c) while `thpshrink promote --pid PID` collapses
# its dense ranges; (d) the same service started again with 4 KiB pages only
# (PR_SET_THP_DISABLE: redis --disable-thp and jemalloc thp:never, a prctl launcher for the JVM,
# latency-chase --4k). (d) runs before (a) in even rounds, so the host's drift hits both alike.
# One table: per phase the median over rounds of p50/p99/p99.9/max latency per request and of
# requests/s, with min-max, the 1-minute load average, and what the action did; p99.9 and
# requests/s against (a) of the same round. Result lines in bench-results/bench-latency.result
# (BENCH_RESULTS=DIR: DIR/bench-latency.result), each round's figures in "# round" lines after
# its provenance line; tests/bench/latency-table.sh RESULT... pools several runs' files.
# Usage: latency.sh BUILDDIR [--quick] [--rounds R] [--secs S] [--services LIST]   (root: the split and promote
# need PFNs and CAP_SYS_NICE). Default 3 rounds of 5 s phases (~5 min here); --quick: 1 round, 2 s
# phases, smaller services (~1 min).
set -uo pipefail
b=${1:?usage: latency.sh BUILDDIR [--quick] [--rounds R] [--secs S] [--services LIST]}
shift
rounds=3 secs=5 warm=2 quick=0 services="redis jvm chase"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 rounds=1 secs=2 warm=1 ;;
	--rounds) rounds=$2; shift ;;
	--secs) secs=$2; shift ;;
	--services) services=$2; shift ;;
	*) echo "usage: latency.sh BUILDDIR [--quick] [--rounds R] [--secs S] [--services 'redis jvm chase']"; exit 2 ;;
	esac
	shift
done
src=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "SKIP: latency.sh needs root (PFNs, CAP_SYS_NICE for the split and promote)"; exit 77; }
for p in redis-server redis-cli java javac python3 jq; do
	command -v $p >/dev/null || { echo "SKIP: $p not installed (scripts/install-deps.sh test)"; exit 77; }
done
for p in thpshrink tests/bench/latency-chase tests/bench/latency-resp; do
	[ -x "$b/$p" ] || { echo "SKIP: $b/$p not built (make bench-latency builds it)"; exit 77; }
done
mode=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
[ "$mode" = always ] || [ "$mode" = madvise ] ||
	{ echo "SKIP: transparent_hugepage/enabled is '${mode:-absent}': no THPs to compare with"; exit 77; }

if [ $quick = 1 ]; then
	redis_n=20000 jvm_mb=64 jvm_heap=256 chase_hot=64 chase_plain=32 chase_sparse=32
else
	redis_n=40000 jvm_mb=256 jvm_heap=768 chase_hot=256 chase_plain=128 chase_sparse=128
fi
w=$(mktemp -d /tmp/thps-latency.XXXXXX)
svc_pid=""
cleanup() {
	[ -n "$svc_pid" ] && kill "$svc_pid" 2>/dev/null
	exec 3>&- 2>/dev/null
	wait 2>/dev/null
	rm -rf "$w"
}
trap cleanup EXIT
javac -d "$w" "$src/tests/bench/LatencyChase.java" || { echo "FAIL: javac LatencyChase.java"; exit 1; }
awk -v n="$redis_n" -v w="$w" 'BEGIN { f = "thpshrink"; while (length(f) < 3992) f = f "-" length(f)
	f = substr(f, 1, 3992)
	for (i = 0; i < n; i++) { k = sprintf("key:%012d", i); v = sprintf("%08d", i) f
	printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$4000\r\n%s\r\n", length(k), k, v > (w "/set.resp")
	if (i >= n * 0.6 && i % 5) printf "*2\r\n$3\r\nDEL\r\n$%d\r\n%s\r\n", length(k), k > (w "/del.resp") } }'

kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/smaps_rollup"; }
since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; } # T0 T1 -> seconds
load1() { cut -d' ' -f1 /proc/loadavg; }
# A service that reads its control lines from a FIFO (fd 3) and prints "ready pid=N".
start_fifo() { # NAME CMD...
	local name=$1
	shift
	rm -f "$w/ctl"
	mkfifo "$w/ctl"
	"$@" <"$w/ctl" >"$w/$name.out" 2>"$w/$name.err" &
	exec 3>"$w/ctl"
	for _ in $(seq 600); do
		svc_pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$w/$name.out")
		[ -n "$svc_pid" ] && return 0
		sleep 0.1
	done
	echo "FAIL: $name did not start: $(tail -3 "$w/$name.err")"
	exit 1
}
# Starts service SVC (redis|jvm|chase) with THPs (thp) or 4 KiB pages only (4k); sets svc_pid.
start() { # SVC thp|4k
	case $1-$2 in
	redis-*)
		local conf=thp:always dis=no
		[ "$2" = 4k ] && conf=thp:never dis=yes
		rm -f "$w/redis.sock"
		MALLOC_CONF=$conf,dirty_decay_ms:0,muzzy_decay_ms:0 redis-server --port 0 \
			--unixsocket "$w/redis.sock" --save '' --appendonly no --disable-thp $dis \
			--logfile "$w/redis.log" &
		svc_pid=$!
		for _ in $(seq 100); do redis-cli -s "$w/redis.sock" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
		if ! redis-cli -s "$w/redis.sock" --pipe <"$w/set.resp" >/dev/null ||
			! redis-cli -s "$w/redis.sock" --pipe <"$w/del.resp" >/dev/null; then
			echo "FAIL: redis did not start or fill: $(tail -2 "$w/redis.log")"
			exit 1
		fi ;;
	jvm-thp)
		start_fifo jvm java -XX:+UseTransparentHugePages -XX:+AlwaysPreTouch -Xms${jvm_heap}m \
			-Xmx${jvm_heap}m -cp "$w" LatencyChase "$jvm_mb" 256 ;;
	jvm-4k)
		# PR_SET_THP_DISABLE (41) from a launcher, kept across exec: what a user does today
		start_fifo jvm python3 -c 'import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0): sys.exit("prctl failed")
os.execvp(sys.argv[1], sys.argv[1:])' java -XX:+AlwaysPreTouch -Xms${jvm_heap}m -Xmx${jvm_heap}m \
			-cp "$w" LatencyChase "$jvm_mb" 256 ;;
	chase-*)
		local k=""
		[ "$2" = 4k ] && k=--4k
		start_fifo chase "$b/tests/bench/latency-chase" --hot-mb $chase_hot --plain-mb $chase_plain \
			--sparse-mb $chase_sparse --loads 256 $k ;;
	esac
	# past start-up (JIT, the fill's last frees) and warm (the first requests' cache misses):
	# chase and jvm serve requests from their start, Redis gets a client's warm-up not counted
	if [ "$1" = redis ]; then
		"$b/tests/bench/latency-resp" "$w/redis.sock" "$redis_n" "$warm" w >/dev/null ||
			{ echo "FAIL: latency-resp warm-up"; exit 1; }
	else
		sleep "$warm"
	fi
	local ahp
	ahp=$(kb "$svc_pid" AnonHugePages)
	case $2 in
	thp) [ "$ahp" -gt 0 ] || { echo "SKIP: $1 got no THPs (AnonHugePages 0)"; exit 77; } ;;
	4k) [ "$ahp" = 0 ] || { echo "FAIL: $1 with 4 KiB pages has AnonHugePages $ahp kB"; exit 1; } ;;
	esac
	echo "$1 $2 pid $svc_pid: Rss $(kb "$svc_pid" Rss) kB, AnonHugePages $ahp kB" >>"$w/memory"
}
stop() {
	if [ "$1" = redis ]; then
		redis-cli -s "$w/redis.sock" shutdown nosave >/dev/null 2>&1
	else
		echo quit >&3
		exec 3>&-
	fi
	wait "$svc_pid" 2>/dev/null
	svc_pid=""
}
# One phase of SECS on the running service, with ACTION (none|split|promote) 0.25 s into it.
# Appends "SVC ROUND PHASE <the phase line's fields> load=L action=..." to $w/runs.
phase() { # SVC ROUND PHASE ACTION
	local svc=$1 r=$2 ph=$3 act=$4 line apid="" t0 t1 what="-"
	local cpid=""
	case $svc in
	redis) "$b/tests/bench/latency-resp" "$w/redis.sock" "$redis_n" "$secs" "$ph" >"$w/resp.out" & cpid=$! ;;
	*) echo reset >&3 ;;
	esac
	sleep 0.25
	t0=$(date +%s.%N)
	case $act in
	split) "$b/thpshrink" reclaim --pid "$svc_pid" --method split --lowutil-bucket 3 --json >"$w/act.json" 2>"$w/act.err" & apid=$! ;;
	promote) "$b/thpshrink" promote --pid "$svc_pid" --json >"$w/act.json" 2>"$w/act.err" & apid=$! ;;
	esac
	if [ -n "$apid" ]; then
		wait "$apid" || { echo "FAIL: thpshrink $act on $svc: $(cat "$w/act.err")"; exit 1; }
		t1=$(date +%s.%N)
		case $act in
		split) what=$(jq -r --arg t "$(since "$t0" "$t1")" \
			'"split:\(.ranges_split)_ranges,\(.given_back_bytes / 1048576 | floor)MiB_back,\($t)s"' "$w/act.json") ;;
		promote) what=$(jq -r --arg t "$(since "$t0" "$t1")" \
			'"promote:\(.ranges_collapsed)_of_\(.ranges_found)_ranges,\($t)s"' "$w/act.json") ;;
		esac
	fi
	if [ "$svc" = redis ]; then
		wait "$cpid" || { echo "FAIL: latency-resp"; exit 1; }
		line=$(cat "$w/resp.out")
	else
		local before
		before=$(grep -c '^phase .* end$' "$w/$svc.out")
		# the phase's end is SECS after its start whatever the action took
		sleep "$(awk -v s="$secs" -v d="$(since "$t0" "$(date +%s.%N)")" 'BEGIN { x = s - 0.25 - d; printf "%.2f", (x > 0 ? x : 0) }')"
		echo "print $ph" >&3
		for _ in $(seq 200); do [ "$(grep -c '^phase .* end$' "$w/$svc.out")" -gt "$before" ] && break; sleep 0.05; done
		line=$(grep '^phase .* end$' "$w/$svc.out" | tail -1)
	fi
	case $line in "phase $ph "*" end") ;; *) echo "FAIL: no figures from $svc phase $ph: '$line'"; exit 1 ;; esac
	line=${line% end}
	echo "$svc $r ${line#phase } load=$(load1) action=$what" >>"$w/runs"
	echo "  $svc round $r ${line#phase } load=$(load1) $what"
}
thp_round() { # SVC ROUND
	start "$1" thp
	phase "$1" "$2" a none
	phase "$1" "$2" b split
	phase "$1" "$2" c promote
	stop "$1"
}
fourk_round() { # SVC ROUND
	start "$1" 4k
	phase "$1" "$2" d none
	stop "$1"
}

echo "kernel $(uname -r), THP $mode, $(nproc) CPUs; $rounds rounds of ${secs} s phases;" \
	"redis $redis_n values, jvm ${jvm_mb} MiB data in a ${jvm_heap} MiB heap," \
	"chase ${chase_hot}+${chase_plain} MiB hot (+${chase_sparse} MiB freed)"
: >"$w/runs"
: >"$w/memory"
for r in $(seq "$rounds"); do
	for svc in $services; do
		if [ $((r % 2)) = 1 ]; then thp_round "$svc" "$r"; fourk_round "$svc" "$r"
		else fourk_round "$svc" "$r"; thp_round "$svc" "$r"; fi
	done
done
sort -u "$w/memory"

. "$src/tests/bench/result.sh"
bench_result_open bench-latency "$b" "$src"
# each round's own figures too, so several runs can be pooled
sed 's/^/# round /' "$w/runs" >>"$BENCH_RESULT"
bash "$src/tests/bench/latency-table.sh" --result "$BENCH_RESULT" "$w/runs"
echo "result: $BENCH_RESULT"
