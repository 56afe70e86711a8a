#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The latency benchmark's services and client (tests/bench/latency.sh parses what they print),
# on tiny runs of a fraction of a second each; no root, nothing global touched. Asserts:
#   - latency-chase and LatencyChase.java (the JVM service) answer the control lines, also two
#     in one write, with one whole phase line each, quantiles in order (p50 <= p99 <= p99.9, and
#     p99.9 within the 1 % bucket of the maximum), requests counted, the phase's length;
#   - latency-chase --4k runs with no THP at all (PR_SET_THP_DISABLE), and a bad argument is
#     refused;
#   - latency-resp times GETs against a real redis-server on a unix socket, and refuses a reply
#     larger than its bounded buffer instead of reading past it;
#   - latency-table.sh pools runs with each round against its own run's baseline (a).
# The figures themselves are the benchmark's business (make bench-latency), not this test's.
set -u
. "$top_srcdir/tests/integration/lib.sh"
chase=$top_builddir/tests/bench/latency-chase resp=$top_builddir/tests/bench/latency-resp
need_built "$chase" "$resp"
need_cmd redis-server redis-server
need_cmd redis-cli redis-tools
need_cmd javac default-jdk-headless
SVC="" RPID=""
THPS_KILL="SVC RPID"
thps_tmpdir latency-tools

# check_line NAME FILE PHASE MIN_SECS MAX_SECS: FILE's line for PHASE is whole and consistent
check_line() {
	local line
	line=$(grep "^phase $3 " "$2")
	if ! [[ $line =~ ^phase\ $3\ n=([0-9]+)\ secs=([0-9.]+)\ ops_per_s=([0-9]+)\ p50_us=([0-9.]+)\ p99_us=([0-9.]+)\ p999_us=([0-9.]+)\ max_us=([0-9.]+)\ end$ ]]; then
		flunk "$1: no whole phase line for '$3' in: $(cat "$2")"
		return
	fi
	local r=("${BASH_REMATCH[@]}")
	if awk -v n="${r[1]}" -v s="${r[2]}" -v ops="${r[3]}" -v a="${r[4]}" -v b="${r[5]}" -v c="${r[6]}" \
		-v m="${r[7]}" -v lo="$4" -v hi="$5" \
		'BEGIN { exit !(n > 0 && ops > 0 && s >= lo && s <= hi && a <= b && b <= c && c <= m * 1.0101) }'; then
		pass "$1: $line"
	else
		flunk "$1: inconsistent figures (n > 0, $4 <= secs <= $5, p50 <= p99 <= p99.9 <= max + 1 %): $line"
	fi
}

# start_svc NAME CMD...: the service on a FIFO of control lines (fd 3), once it said ready
start_svc() {
	local name=$1
	shift
	rm -f "$T/ctl"
	mkfifo "$T/ctl"
	"$@" <"$T/ctl" >"$T/$name.out" 2>"$T/$name.err" &
	SVC=$!
	exec 3>"$T/ctl"
	for _ in $(seq 200); do
		grep -q '^ready pid=' "$T/$name.out" && return 0
		sleep 0.05
	done
	fail "$name did not say ready: $(cat "$T/$name.err")"
}
# stop_svc NAME: "quit" must end it with status 0
stop_svc() {
	echo quit >&3
	exec 3>&-
	if wait "$SVC"; then pass "$1: quits with status 0"; else flunk "$1: status $? after quit"; fi
	SVC=
}
# phases NAME: one phase of 0.3 s, then two control lines in one write (the second phase empty
# of time but a line all the same)
phases() {
	echo reset >&3
	sleep 0.3
	printf 'print one\nprint two\n' >&3
	for _ in $(seq 200); do [ "$(grep -c ' end$' "$T/$1.out")" -ge 2 ] && break; sleep 0.05; done
	# (the service reads its control lines when it polls: the phase can be a little shorter)
	check_line "$1 one" "$T/$1.out" one 0.1 5
	if grep -q '^phase two n=[0-9]* .* end$' "$T/$1.out"; then pass "$1: two lines in one write, two phases"; else
		flunk "$1: the second of two lines in one write got no phase line: $(cat "$T/$1.out")"
	fi
}

start_svc chase "$chase" --hot-mb 4 --plain-mb 2 --sparse-mb 4 --loads 16
phases chase
stop_svc chase

start_svc chase4k "$chase" --hot-mb 4 --plain-mb 2 --sparse-mb 4 --loads 16 --4k
pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$T/chase4k.out")
ahp=$(awk '$1 == "AnonHugePages:" { print $2 }' "/proc/$pid/smaps_rollup")
check "chase --4k" "AnonHugePages '$ahp' kB is 0" [ "$ahp" = 0 ]
check "chase --4k" "THP_enabled 0 in /proc/PID/status" grep -q '^THP_enabled:[[:space:]]*0$' "/proc/$pid/status"
phases chase4k
stop_svc chase4k

"$chase" --hot-mb 4 --bogus >"$T/out" 2>&1
rc=$?
check "chase usage" "status $rc for an unknown argument is 2" [ $rc = 2 ]

if javac -d "$T" "$top_srcdir/tests/bench/LatencyChase.java" 2>"$T/javac.err"; then
	start_svc jvm java -Xms64m -Xmx64m -cp "$T" LatencyChase 4 16
	phases jvm
	stop_svc jvm
else
	flunk "javac LatencyChase.java: $(cat "$T/javac.err")"
fi

redis-server --port 0 --unixsocket "$T/redis.sock" --save '' --appendonly no --dir "$T" \
	--logfile "$T/redis.log" &
RPID=$!
for _ in $(seq 100); do redis-cli -s "$T/redis.sock" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
for i in $(seq 0 9); do printf 'SET key:%012d v%0100d\n' "$i" "$i"; done | redis-cli -s "$T/redis.sock" >/dev/null ||
	fail "redis-server did not start: $(tail -3 "$T/redis.log")"
# 20 keys, 10 set: the nil replies count too
"$resp" "$T/redis.sock" 20 0.3 get >"$T/resp.out" 2>"$T/resp.err"
rc=$?
check "resp" "status $rc is 0 $(cat "$T/resp.err")" [ $rc = 0 ]
check_line "resp get" "$T/resp.out" get 0.3 5
# a 20,000-byte value: more than the client's 16 KiB buffer
head -c 20000 /dev/zero | tr '\0' x | redis-cli -s "$T/redis.sock" -x SET key:000000000000 >/dev/null
"$resp" "$T/redis.sock" 1 0.2 big >"$T/out" 2>&1
rc=$?
check "resp big reply" "status $rc for a reply over the buffer is 1" [ $rc = 1 ]
out_has "resp big reply: refused, named" "Message too long"
"$resp" "$T/nosuch.sock" 1 0.2 x >"$T/out" 2>&1
rc=$?
check "resp no server" "status $rc is 1" [ $rc = 1 ]
out_has "resp no server: named" "connect '$T/nosuch.sock'"
redis-cli -s "$T/redis.sock" shutdown nosave >/dev/null 2>&1
wait "$RPID"
RPID=

# latency-table.sh pools runs, each round against its own run's (a): run 1's split triples its
# p99.9 and halves its rate, run 2's changes nothing, though run 2's (a) equals run 1's (b)
for k in 1 2; do
	echo "# run kernel=x commit=x date=x scale=1 cpus=2" >"$T/r$k.result"
done
f() { echo "# round chase 1 $1 n=10 secs=5.000 ops_per_s=$2 p50_us=1.00 p99_us=2.00 p999_us=$3 max_us=$4 load=0.50 action=-"; }
{ f a 100 10.00 11; f b 50 30.00 31; } >>"$T/r1.result"
{ f a 50 30.00 31; f b 50 30.00 31; } >>"$T/r2.result"
bash "$top_srcdir/tests/bench/latency-table.sh" "$T/r1.result" "$T/r2.result" >"$T/out" 2>&1
out_has "table: 2 runs pooled" "median over 2 rounds (2 runs) of 5 s phases"
out_has "table: (a) pooled" "| chase | (a) steady, THPs | 75 (50-100) | 1.0 (1.0-1.0) | 2.0 (2.0-2.0) | 20.0 (10.0-30.0) | 21 (11-31) | 1.00 (1.00-1.00) | 1.00 (1.00-1.00) |"
out_has "table: (b) against each run's own (a)" "| chase | (b) during split | 50 (50-50) | 1.0 (1.0-1.0) | 2.0 (2.0-2.0) | 30.0 (30.0-30.0) | 31 (31-31) | 2.00 (1.00-3.00) | 0.75 (0.50-1.00) |"
bash "$top_srcdir/tests/bench/latency-table.sh" "$T/out" >"$T/out2" 2>&1
rc=$?
check "table: a file without rounds" "status $rc is 1" [ $rc = 1 ]
exit $((fails > 0))
