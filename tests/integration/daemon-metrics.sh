#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# thpshrinkd on the host, observe-only (cgroup v1 here: it must never write): a live /metrics
# that promtool accepts and a real Prometheus server scrapes; hostile HTTP requests get errors
# while the daemon keeps serving; SIGHUP with a broken policy keeps the old set; SIGTERM exits 0.
set -u
THPS_KILL="DPID PPID_PROM BPID" THPS_LOG_HIDE='connection limit' THPS_LOG_TAIL=40
. "$top_srcdir/tests/integration/lib.sh"
need_cmd promtool prometheus
need_cmd prometheus prometheus
need_cmd curl curl
need_python
need_built "$D"

thps_tmpdir daemon-metrics
PPID_PROM= BPID=
PORT=$(free_port); PPORT=$(free_port)
[ -n "$PORT" ] && [ -n "$PPORT" ] && [ "$PORT" != "$PPORT" ] || fail "no free loopback port"
URL=http://127.0.0.1:$PORT/metrics

mkdir -p "$T/policies" "$T/state"

# A workload with low-utilization THPs (the scanner, when built in, sees them).
if [ -x "$BLOAT" ]; then
	"$BLOAT" --mix 8:16,500:4 --ready-file "$T/bloat.ready" --seconds 120 >"$T/bloat.out" 2>&1 &
	BPID=$!
fi

# Only our own memory cgroup (the generator inherits it): the host's other processes are not ours
# to read.
CG=$(my_cgroup)
# An enforce policy for our cgroup: the daemon must still only observe on this host.
cat > "$T/policies/10-mine.json" <<JEOF
{ "name": "mine", "match": { "cgroup": "$CG" }, "mode": "enforce", "action": "reclaim",
  "trigger": { "min_waste": "2M" }, "cooldown": "1s" }
JEOF
chmod 644 "$T/policies/10-mine.json"
"$D" --cgroup "$CG" --registrations-dir "$T/regs" --policy-dir "$T/policies" --listen "127.0.0.1:$PORT" --state-dir "$T/state" \
	--textfile "$T/thpshrink.prom" --interval 1 -v >"$T/daemon.log" 2>&1 &
DPID=$!

# Bounded wait for the first pass to be served.
wait_200 "$URL" 90 "the first pass"
echo "ok: /metrics answers on 127.0.0.1:$PORT"

grep -q "Observe-only" "$T/daemon.log" || grep -q "cgroup2 memory yes" "$T/daemon.log" ||
	fail "daemon on a host without cgroup v2 memory did not say it is observe-only"
curl -s "$URL" >"$T/m1" || fail "curl /metrics"
promtool check metrics <"$T/m1" >"$T/promtool.out" 2>&1 || { cat "$T/promtool.out"; fail "promtool rejects the live /metrics"; }
echo "ok: promtool check metrics accepts the live /metrics ($(wc -l <"$T/m1") lines)"
grep -q '^thpshrink_build_info{version="[^"]*"} 1$' "$T/m1" || fail "no thpshrink_build_info"
grep -q '^thpshrink_policies 1$' "$T/m1" || fail "thpshrink_policies is not 1"
if grep -q 'cgroup2 memory no' "$T/daemon.log"; then
	grep -q '^thpshrink_dry_run 1$' "$T/m1" || fail "observe-only daemon does not export thpshrink_dry_run 1"
	grep -q 'thpshrink_kernel_capability{capability="cgroup2_memory"} 0' "$T/m1" || fail "capability flag wrong"
fi
# The generator's low-util THPs (16 with 8 of 512 subpages used) show up in our cgroup.
if [ -n "$BPID" ] && grep -q 'Sources: .*scanner' "$T/daemon.log"; then
	i=0
	while [ ! -s "$T/bloat.ready" ]; do
		i=$((i + 1)); [ $i -le 300 ] || fail "thpshrink-bloat never got ready: $(cat "$T/bloat.out")"
		sleep 0.1
	done
	backed=$(sed -n 's/.*thp_backed=\([0-9]*\).*/\1/p' "$T/bloat.ready")
	[ "${backed:-0}" -gt 0 ] || skip "the kernel gave thpshrink-bloat no THPs (THP disabled?): $(cat "$T/bloat.ready")"
	i=0
	while :; do
		curl -s "$URL" >"$T/m1"
		low=$(awk -v c="cgroup=\"$CG\"" 'index($0, "thpshrink_cgroup_lowutil_thps{") == 1 && index($0, c) { print $2 }' "$T/m1")
		[ "${low:-0}" -ge 16 ] && break
		i=$((i + 1)); [ $i -le 180 ] || fail "no >= 16 low-util THPs for cgroup $CG in /metrics within 90 s (got '${low:-none}')"
		sleep 0.5
	done
	promtool check metrics <"$T/m1" >/dev/null 2>&1 || fail "promtool rejects /metrics with cgroup series"
	echo "ok: the generator's low-util THPs are in /metrics: thpshrink_cgroup_lowutil_thps{cgroup=\"$CG\"} $low"
else
	echo "SKIP: per-cgroup series: not checked, sources built in: $(sed -n 's/.*Sources: //p' "$T/daemon.log")"
fi
# The textfile is written atomically each pass and is valid too.
[ -s "$T/thpshrink.prom" ] || fail "--textfile not written"
promtool check metrics <"$T/thpshrink.prom" >/dev/null 2>&1 || fail "promtool rejects the textfile"
ls "$T" | grep -q '\.tmp\.' && fail "temporary textfile left behind"
[ -s "$T/state/status.json" ] || fail "no status.json"
echo "ok: textfile and status.json written"

# A real Prometheus server scrapes it.
cat >"$T/prometheus.yml" <<YEOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: thpshrink
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YEOF
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address="127.0.0.1:$PPORT" >"$T/prometheus.log" 2>&1 &
PPID_PROM=$!
i=0
while :; do
	r=$(curl -s "http://127.0.0.1:$PPORT/api/v1/query?query=thpshrink_build_info" 2>/dev/null)
	case $r in *'"__name__":"thpshrink_build_info"'*) break ;; esac
	i=$((i + 1))
	[ $i -le 120 ] || { tail -20 "$T/prometheus.log"; fail "Prometheus did not return thpshrink_build_info within 60 s: $r"; }
	kill -0 $PPID_PROM 2>/dev/null || { tail -20 "$T/prometheus.log"; fail "prometheus exited"; }
	sleep 0.5
done
r=$(curl -s "http://127.0.0.1:$PPORT/api/v1/query?query=up%7Bjob%3D%22thpshrink%22%7D")
echo "$r" | grep -q '"value":\[[0-9.]*,"1"\]' || fail "Prometheus says the target is not up: $r"
echo "ok: a real Prometheus server scraped thpshrink_build_info and up=1"
kill $PPID_PROM; wait $PPID_PROM 2>/dev/null; PPID_PROM=

# Hostile HTTP: every probe is bounded (socket timeouts), loopback only.
$PY - "$PORT" >"$T/http.out" 2>&1 <<'PYEOF'
import socket, sys, time
port = int(sys.argv[1])
def ask(data, timeout=5):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            s.sendall(data)
        except OSError:
            pass
        out = b""
        try:
            while len(out) < 65536:
                b = s.recv(4096)
                if not b:
                    break
                out += b
        except (socket.timeout, ConnectionResetError):
            pass
        return out.split(b"\r\n", 1)[0].decode(errors="replace")
    finally:
        s.close()
fails = 0
def expect(name, line, ok):
    global fails
    good = ok(line)
    print(("ok" if good else "FAIL") + f": {name}: {line!r}")
    fails += not good
expect("bad request line", ask(b"GARBAGE\r\n\r\n"), lambda l: l.startswith("HTTP/1.") and " 400" in l or l == "")
expect("unknown method", ask(b"BREW /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), lambda l: " 405" in l)
expect("POST", ask(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"), lambda l: " 405" in l)
expect("unknown path", ask(b"GET /etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"), lambda l: " 404" in l)
expect("HEAD", ask(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), lambda l: " 200" in l)
huge = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n"
expect("huge header", ask(huge), lambda l: l == "" or any(c in l for c in (" 413", " 431", " 400")))
# Many connections at once, held open: bounded count; the daemon must refuse or time them out
# without falling over.
held = []
for _ in range(200):
    try:
        held.append(socket.create_connection(("127.0.0.1", port), timeout=2))
    except OSError:
        break
print(f"ok: opened {len(held)} idle connections")
for s in held:
    s.close()
time.sleep(0.5)
expect("GET after the flood", ask(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), lambda l: " 200" in l)
sys.exit(1 if fails else 0)
PYEOF
rc=$?
cat "$T/http.out"
[ $rc = 0 ] || fail "hostile HTTP requests"
kill -0 $DPID 2>/dev/null || fail "thpshrinkd died under hostile HTTP"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL")" = 200 ] || fail "/metrics no longer answers"
echo "ok: hostile requests got errors, the daemon keeps serving"

# SIGHUP with a broken policy: rejected, the old set stays, visible in the log and metrics.
printf '{ "name": "broken", "match": { "cgroup": "/x" }, "mode": "sometimes" }\n' >"$T/policies/20-broken.json"
kill -HUP $DPID
i=0
until curl -s "$URL" | grep -q '^thpshrink_policy_load_errors_total 1$'; do
	i=$((i + 1)); [ $i -le 100 ] || fail "policy error metric did not rise within 10 s of SIGHUP"
	sleep 0.1
done
curl -s "$URL" >"$T/m2"
grep -q '^thpshrink_policies 1$' "$T/m2" || fail "the old policy set is not in force after a bad reload"
grep -q '^thpshrink_policy_last_load_success 0$' "$T/m2" || fail "last load not flagged as failed"
grep -q "Policy reload rejected, keeping the 1 policies in force: .*20-broken.json:1:[0-9]*: mode: expected one of" "$T/daemon.log" ||
	fail "the log does not say why the reload was rejected"
echo "ok: broken policy rejected on SIGHUP, old set kept ($(grep -o '20-broken.json:.*' "$T/daemon.log" | head -1 | cut -c1-60)...)"

# thpshrink explain reads the status file for a cgroup the daemon recorded, if any.
cg=$($PY -c 'import json,sys; c=json.load(open(sys.argv[1]))["cgroups"]; print(c[0]["cgroup"] if c else "")' "$T/state/status.json")
if [ -n "$cg" ]; then
	"$CLI" explain --state-dir "$T/state" "$cg" >"$T/explain.out" 2>&1 || { cat "$T/explain.out"; fail "thpshrink explain '$cg'"; }
	grep -q '^decision:' "$T/explain.out" || fail "explain prints no decision"
	echo "ok: thpshrink explain $cg"
fi
"$CLI" explain --state-dir "$T/state" /no/such/cgroup >/dev/null 2>&1 && fail "explain of an unknown cgroup succeeded"

# SIGTERM: clean exit 0, bounded.
kill -TERM $DPID
i=0
while kill -0 $DPID 2>/dev/null; do
	i=$((i + 1)); [ $i -le 100 ] || fail "thpshrinkd did not exit within 10 s of SIGTERM"
	sleep 0.1
done
wait $DPID; rc=$?; DPID=
[ $rc = 0 ] || fail "thpshrinkd exited $rc on SIGTERM"
grep -q "stopping" "$T/daemon.log" || fail "no stop message"
echo "ok: SIGTERM → exit 0"
# It never wrote outside its temp dirs: observe-only means no actions were taken.
grep -q 'action="\(reclaim\|split\)"' "$T/m2" && fail "an observe-only daemon acted"
grep -q '^thpshrink_decisions_total{decision="observe_only"} [1-9]' "$T/m2" ||
	fail "the enforce policy's decisions were not turned into observe-only ones"
echo PASS
