#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# What is left unbounded or too trusting (issue 22), on the host (observe-only here):
#  A. 10,000 registrations, all naming one cgroup (a pod's) and --metrics-max-cgroups 100: at
#     most 100 thpshrink_container_info series, thpshrink_metrics_containers_dropped 9900, and
#     /metrics stays small;
#  B. `thpshrink explain` with a FIFO at status.json: returns within 2 s with an error; a
#     planted status.json with terminal escapes (ESC, CSI as C1) prints none of them raw;
#  C. --listen unix:PATH under umask 000: the socket is 0600 from its bind on (strace shows the
#     umask(0177) before bind; a poller that stats the path from the start never sees another
#     mode), over 10 starts;
#  D. --state-dir owned by another user, or writable by others: the daemon refuses to start and
#     says why and what to do; its own 0755 directory is accepted.
set -u
. "$top_srcdir/tests/integration/lib.sh"
need_built "$D" "$CLI"
need_root "the daemon reads /proc of every process; files must be root's"
need_cmd curl curl
need_python

thps_tmpdir trust-files
chmod 755 "$T"
umask 022
mkdir -p "$T/policies" "$T/state" "$T/regs"
PORT=$(free_port)
[ -n "$PORT" ] || fail "no free loopback port"
URL=http://127.0.0.1:$PORT/metrics

# A. 10,000 registrations naming one cgroup.
$PY - "$T/regs" <<'PYEOF'
import os, sys
for i in range(10000):
    with open(os.path.join(sys.argv[1], "c%05d.json" % i), "w") as f:
        f.write('{"version": 1, "id": "c%05d", "cgroup": "/kubepods/pod1", "pid": 0, '
                '"pid_start_time": 0, "created": "2026-12-04T00:00:00Z", "status": "running"}\n' % i)
PYEOF
"$D" --policy-dir "$T/policies" --state-dir "$T/state" --registrations-dir "$T/regs" \
	--listen "127.0.0.1:$PORT" --metrics-max-cgroups 100 --interval 3600 >"$T/daemon.log" 2>&1 &
DPID=$!
i=0
until curl -sf "$URL" -o "$T/m.prom" && grep -q '^thpshrink_scans_total [1-9]' "$T/m.prom" || [ $i -ge 300 ]; do
	kill -0 $DPID 2>/dev/null || fail "A: the daemon exited"
	sleep 0.2; i=$((i + 1))
done
grep -q '^thpshrink_scans_total [1-9]' "$T/m.prom" || fail "A: no pass within 60 s"
n=$(grep -c '^thpshrink_container_info{' "$T/m.prom")
dropped=$(awk '$1 == "thpshrink_metrics_containers_dropped" { print $2 }' "$T/m.prom")
series=$(grep -vc '^#' "$T/m.prom")
bytes=$(wc -c <"$T/m.prom")
kill -TERM $DPID; wait $DPID; DPID=
echo "A: 10,000 registrations of one cgroup, --metrics-max-cgroups 100: $n container_info series, containers_dropped $dropped; /metrics $series series, $bytes bytes"
[ "$n" = 100 ] && [ "$dropped" = 9900 ] || fail "A: expected 100 series and 9900 dropped"
[ "$bytes" -lt 131072 ] || fail "A: /metrics is $bytes bytes"
echo "ok: A: container_info bounded by --metrics-max-cgroups, the drop counted"

# B. explain and a FIFO, and a planted file's escapes.
mkdir -p "$T/ex"
mkfifo "$T/ex/status.json"
t0=$(date +%s%N)
timeout 10 "$CLI" explain --state-dir "$T/ex" /x >"$T/ex.out" 2>&1; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc = 124 ] && fail "B: explain hung on a FIFO (killed after 10 s)"
[ $rc = 1 ] && grep -q "not a regular file" "$T/ex.out" || fail "B: explain on a FIFO: rc $rc: $(cat "$T/ex.out")"
[ $ms -lt 2000 ] || fail "B: explain took $ms ms on a FIFO"
rm "$T/ex/status.json"
printf '{"cgroups": [{"cgroup": "/x", "policy": "p\\u001b]0;owned\\u0007", "action": "none", "rule": "r", "reason": "a\\u009b2J\\u001b[31mb", "identity": {"namespace": "batch\\u001b[2J", "pod": "web-1", "labels": {"tier\\u0007": "db\\u009b"}}}]}' >"$T/ex/status.json"
"$CLI" explain --state-dir "$T/ex" /x >"$T/ex.out" 2>&1 || fail "B: explain of a planted file failed: $(cat "$T/ex.out")"
raw=$($PY -c 'import sys; d=open(sys.argv[1],"rb").read(); print(sum(1 for b in d.decode("utf-8","replace") if (ord(b) < 32 and b != "\n") or 0x7f <= ord(b) <= 0x9f))' "$T/ex.out")
[ "$raw" = 0 ] || fail "B: explain printed $raw control characters raw"
grep -q 'why: *a\\u009b2J\\x1b\[31mb' "$T/ex.out" || fail "B: unexpected rendering: $(cat "$T/ex.out")"
grep -q '^identity: *namespace batch\\x1b\[2J, pod web-1, container -$' "$T/ex.out" &&
	grep -q '^pod labels: *tier\\x07=db\\u009b$' "$T/ex.out" || fail "B: unexpected identity rendering: $(cat "$T/ex.out")"
echo "ok: B: explain on a FIFO: error in $ms ms; a planted file's ESC/BEL/CSI printed escaped ($(grep why: "$T/ex.out" | tr -s ' '))"

# C. The unix socket under umask 000.
modes=
for k in 1 2 3 4 5 6 7 8 9 10; do
	S=$T/s$k.sock
	$PY - "$S" >"$T/poll.out" <<'PYEOF' &
import os, stat, sys, time
p, seen, end = sys.argv[1], set(), time.time() + 3
while time.time() < end:
    try:
        seen.add("%o" % stat.S_IMODE(os.lstat(p).st_mode))
    except FileNotFoundError:
        pass
print(" ".join(sorted(seen)))
PYEOF
	PP=$!
	(umask 000; exec "$D" --policy-dir "$T/policies" --state-dir "$T/state" --registrations-dir none \
		--listen "unix:$S" --interval 3600 >"$T/daemon.log" 2>&1) &
	DPID=$!
	wait $PP
	kill -TERM $DPID; wait $DPID; DPID=
	modes="$modes $(cat "$T/poll.out")"
done
modes=$(echo $modes | tr ' ' '\n' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
echo "C: modes seen by a poller over 10 starts under umask 000: $modes"
echo "$modes" | grep -q '^ *[0-9]* 600;$' || fail "C: the socket was seen with another mode than 0600: $modes"
if command -v strace >/dev/null; then
	(umask 000; exec strace -f -o "$T/strace.out" -e trace=umask,bind "$D" --policy-dir "$T/policies" \
		--state-dir "$T/state" --registrations-dir none --listen "unix:$T/st.sock" --interval 3600) >/dev/null 2>&1 &
	SP=$!
	i=0; while [ ! -S "$T/st.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	DPID=$(cat /proc/$SP/task/$SP/children 2>/dev/null)
	[ -n "$DPID" ] && kill -TERM $DPID
	wait $SP; DPID=
	seq=$(grep -E 'umask\(|bind\(.*st.sock' "$T/strace.out" | sed -E 's/^[0-9]+ +//; s/\(.*\) += /=/' | tr '\n' ' ')
	echo "C: strace: $seq"
	echo "$seq" | grep -q 'umask=[0-9]* bind=0 umask=0177' || fail "C: bind is not under umask 0177: $seq"
else
	echo "C: SKIP umask-bind order: strace not installed (Debian package strace)"
fi
echo "ok: C: the unix socket is 0600 from its bind on, under umask 000"

# D. --state-dir ownership.
mkdir -p "$T/sd-nobody" "$T/sd-wide" "$T/sd-ok"
chown nobody "$T/sd-nobody"
chmod 0777 "$T/sd-wide"
for d in sd-nobody sd-wide; do
	if "$D" --policy-dir "$T/policies" --state-dir "$T/$d" --registrations-dir none --listen none --once \
		>"$T/daemon.log" 2>&1; then
		fail "D: started with --state-dir $d"
	fi
	echo "D: $d: $(grep -o "Refusing --state-dir.*" "$T/daemon.log")"
done
grep -q "writable by group or others (mode 0777).*chmod go-w it" "$T/daemon.log" || fail "D: the 0777 refusal does not say why"
"$D" --policy-dir "$T/policies" --state-dir "$T/sd-nobody" --registrations-dir none --listen none --once >"$T/daemon.log" 2>&1
grep -q "owned by uid [0-9]*, not by this daemon's uid 0.*chown 0 it" "$T/daemon.log" || fail "D: the owner refusal does not say why"
"$D" --policy-dir "$T/policies" --state-dir "$T/sd-ok" --registrations-dir none --listen none --once >"$T/daemon.log" 2>&1 ||
	fail "D: its own 0755 --state-dir was refused"
"$D" --policy-dir "$T/policies" --state-dir "$T/sd-new" --registrations-dir none --listen none --once >"$T/daemon.log" 2>&1 ||
	fail "D: a missing --state-dir was not made"
[ "$(stat -c '%a %u' "$T/sd-new")" = "755 0" ] || fail "D: the new --state-dir is $(stat -c '%a %u' "$T/sd-new")"
echo "ok: D: a --state-dir of another user or writable by others refused with the reason; its own accepted, a missing one made 0755"
exit 0
