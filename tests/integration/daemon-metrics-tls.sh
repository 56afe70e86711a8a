#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# /metrics as the operator protects it: TLS 1.2+ with a throwaway CA's certificate and a bearer
# token. A real Prometheus scrapes it with scheme https, tls_config.ca_file and
# authorization.credentials_file (up, a thpshrink_ series stored); a second job without the
# token is down with 401 and stores nothing; curl without the token gets 401 and no tenant
# data; plain HTTP and TLS 1.1 to the port fail; secret files readable by others, a certificate
# that is not one and a key that is not the certificate's stop the start with the file named;
# the token is never logged. Host-only, observe-only (as daemon-metrics.sh).
set -u
THPS_KILL="DPID PPID_PROM BPID" THPS_LOG_TAIL=30
. "$top_srcdir/tests/integration/lib.sh"
need_cmd promtool prometheus
need_cmd prometheus prometheus
need_cmd curl curl
need_cmd openssl openssl
need_python
need_built "$D"

thps_tmpdir metrics-tls
PPID_PROM= BPID=
PORT=$(free_port); PPORT=$(free_port)
[ -n "$PORT" ] && [ -n "$PPORT" ] && [ "$PORT" != "$PPORT" ] || fail "no free loopback port"
URL=https://127.0.0.1:$PORT/metrics

# A throwaway CA and a server certificate for 127.0.0.1 signed by it; a second key that is not
# the certificate's.
umask 077
ssl() { openssl "$@" >>"$T/openssl.log" 2>&1 || fail "openssl $1: $(tail -3 "$T/openssl.log")"; }
ssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=thpshrink test CA" \
	-keyout "$T/ca.key" -out "$T/ca.crt"
ssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
	-keyout "$T/srv.key" -out "$T/srv.csr"
printf 'subjectAltName=IP:127.0.0.1\n' >"$T/ext"
ssl x509 -req -in "$T/srv.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial -days 2 \
	-extfile "$T/ext" -out "$T/srv.crt"
ssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$T/other.key"
TOKEN=$(openssl rand -hex 24)
[ ${#TOKEN} = 48 ] || fail "openssl rand gave no token"
printf '%s\n' "$TOKEN" >"$T/token"
printf 'wrong-%s\n' "$TOKEN" >"$T/wrong-token"
chmod 600 "$T/token" "$T/srv.key" "$T/other.key" "$T/wrong-token"
chmod 644 "$T/ca.crt" "$T/srv.crt"
umask 022
mkdir -p "$T/policies" "$T/state"

CG=$(my_cgroup)
set -- --cgroup "$CG" --registrations-dir none --policy-dir "$T/policies" \
	--listen "127.0.0.1:$PORT" --state-dir "$T/state"

# Refusals: the daemon does not start, and says which file and why.
refused() { # name, expected message (grep -E), options...
	name=$1 want=$2; shift 2
	"$D" --cgroup "$CG" --registrations-dir none --policy-dir "$T/policies" \
		--listen "127.0.0.1:$PORT" --state-dir "$T/state" --once "$@" >"$T/refused.log" 2>&1 && fail "$name: the daemon started"
	grep -Eq -e "$want" "$T/refused.log" || { cat "$T/refused.log"; fail "$name: no '$want' in the error"; }
	cat "$T/refused.log" >>"$T/all-logs"
	echo "ok: $name refused: $(grep -E -e "$want" "$T/refused.log" | head -1 | cut -c1-150)"
}
cp "$T/token" "$T/open-token"; chmod 644 "$T/open-token"
refused "a token file readable by others" "--metrics-token-file '$T/open-token': must be owned by root and, as a secret, give group and others no access" \
	--metrics-token-file "$T/open-token"
cp "$T/srv.key" "$T/open.key"; chmod 640 "$T/open.key"
refused "a key readable by its group" "--metrics-tls-key '$T/open.key': must be owned by root" \
	--metrics-tls-cert "$T/srv.crt" --metrics-tls-key "$T/open.key"
refused "a key as the certificate" "--metrics-tls-cert '$T/srv.key': no PEM X.509 certificate" \
	--metrics-tls-cert "$T/srv.key" --metrics-tls-key "$T/srv.key"
refused "a key that is not the certificate's" "--metrics-tls-key '$T/other.key' is not the key of the certificate in '$T/srv.crt'" \
	--metrics-tls-cert "$T/srv.crt" --metrics-tls-key "$T/other.key"
refused "a missing certificate" "--metrics-tls-cert '$T/nope.crt': No such file" \
	--metrics-tls-cert "$T/nope.crt" --metrics-tls-key "$T/srv.key"
refused "a certificate without its key" "go together" --metrics-tls-cert "$T/srv.crt"
: >"$T/empty-token"; chmod 600 "$T/empty-token"
refused "an empty token file" "--metrics-token-file '$T/empty-token': expected one token" \
	--metrics-token-file "$T/empty-token"

# A workload with low-utilisation THPs, so that /metrics has per-cgroup series to protect.
if [ -x "$BLOAT" ]; then
	"$BLOAT" --mix 8:16,500:4 --ready-file "$T/bloat.ready" --seconds 120 >"$T/bloat.out" 2>&1 &
	BPID=$!
fi
"$D" "$@" --metrics-tls-cert "$T/srv.crt" --metrics-tls-key "$T/srv.key" --metrics-token-file "$T/token" \
	--interval 1 -v >"$T/daemon.log" 2>&1 &
DPID=$!
get() { # curl options...: prints the HTTP code ("000" when no HTTP answer came)
	curl -s --max-time 5 -o "$T/body" -w '%{http_code}' "$@" 2>/dev/null
}
i=0
until [ "$(get --cacert "$T/ca.crt" -H "Authorization: Bearer $TOKEN" "$URL")" = 200 ]; do
	i=$((i + 1)); [ $i -le 900 ] || fail "/metrics did not answer 200 over TLS with the token within 90 s"
	kill -0 $DPID 2>/dev/null || fail "thpshrinkd exited early"
	sleep 0.1
done
grep -q "Metrics endpoint: TLS 1.2+, bearer token required (read at start)" "$T/daemon.log" ||
	fail "the daemon does not say how /metrics is protected"
echo "ok: /metrics answers over TLS with the token"

# Wait (bounded) for per-cgroup series: what the token protects.
if grep -q 'Sources: .*scanner' "$T/daemon.log" && [ -n "$BPID" ]; then
	i=0
	until grep -q 'cgroup="' "$T/body"; do
		i=$((i + 1)); [ $i -le 180 ] || fail "no per-cgroup series within 90 s"
		sleep 0.5
		get --cacert "$T/ca.crt" -H "Authorization: Bearer $TOKEN" "$URL" >/dev/null
	done
	echo "ok: the authorised scrape has per-cgroup series ($(grep -c 'cgroup="' "$T/body") lines name a cgroup)"
else
	echo "SKIP: per-cgroup series: no scanner built in, so they are not checked"
fi
cp "$T/body" "$T/m1"
promtool check metrics <"$T/m1" >"$T/promtool.out" 2>&1 || { cat "$T/promtool.out"; fail "promtool rejects /metrics over TLS"; }
echo "ok: promtool check metrics accepts it ($(wc -l <"$T/m1") lines)"

# Without the right token: 401 and nothing of the tenants, on every path and method.
for hdr in "" "Authorization: Bearer wrong-$TOKEN" "Authorization: Bearer $(echo "$TOKEN" | cut -c1-47)" \
	"Authorization: Basic $TOKEN" "Authorization: Bearer ${TOKEN}x"; do
	for path in /metrics /; do
		code=$(get --cacert "$T/ca.crt" ${hdr:+-H "$hdr"} "https://127.0.0.1:$PORT$path")
		[ "$code" = 401 ] || fail "'${hdr:-no Authorization}' on $path got $code, not 401"
		grep -q 'cgroup=\|thpshrink_' "$T/body" && fail "a 401 body holds metrics"
	done
done
code=$(curl -s --max-time 5 -o /dev/null -D "$T/headers" -w '%{http_code}' --cacert "$T/ca.crt" "$URL")
[ "$code" = 401 ] && grep -qi '^WWW-Authenticate: Bearer' "$T/headers" || fail "401 without WWW-Authenticate: Bearer"
echo "ok: without the right token: 401, WWW-Authenticate: Bearer, no series in the body"

# Plain HTTP and TLS below 1.2 get no HTTP answer at all.
code=$(get -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/metrics")
[ "$code" = 000 ] || fail "plain HTTP to the TLS port got HTTP $code"
code=$(get --tlsv1.1 --tls-max 1.1 --cacert "$T/ca.crt" -H "Authorization: Bearer $TOKEN" "$URL")
[ "$code" = 000 ] || fail "TLS 1.1 got HTTP $code"
code=$(get --tlsv1.2 --tls-max 1.2 --cacert "$T/ca.crt" -H "Authorization: Bearer $TOKEN" "$URL")
[ "$code" = 200 ] || fail "TLS 1.2 got $code"
echo "ok: plain HTTP and TLS 1.1 fail, TLS 1.2 works"

# A real Prometheus: one job as the docs say, one without the token.
cat >"$T/prometheus.yml" <<YEOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: thps-secure
    scheme: https
    tls_config:
      ca_file: $T/ca.crt
    authorization:
      credentials_file: $T/token
    static_configs:
      - targets: ['127.0.0.1:$PORT']
  - job_name: thps-notoken
    scheme: https
    tls_config:
      ca_file: $T/ca.crt
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YEOF
promtool check config "$T/prometheus.yml" >"$T/promcfg.out" 2>&1 || { cat "$T/promcfg.out"; fail "promtool check config"; }
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address="127.0.0.1:$PPORT" >"$T/prometheus.log" 2>&1 &
PPID_PROM=$!
q() { curl -s --max-time 5 "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1"; }
i=0
while :; do
	r=$(q 'thpshrink_build_info{job="thps-secure"}')
	case $r in *'"__name__":"thpshrink_build_info"'*) break ;; esac
	i=$((i + 1))
	[ $i -le 120 ] || { tail -20 "$T/prometheus.log"; fail "Prometheus stored no thpshrink_build_info from the secure job within 60 s: $r"; }
	kill -0 $PPID_PROM 2>/dev/null || { tail -20 "$T/prometheus.log"; fail "prometheus exited"; }
	sleep 0.5
done
r=$(q 'up{job="thps-secure"}')
echo "$r" | grep -q '"value":\[[0-9.]*,"1"\]' || fail "the secure job is not up: $r"
echo "ok: Prometheus scraped over TLS with the token: up=1, thpshrink_build_info stored"
i=0
while :; do
	r=$(q 'up{job="thps-notoken"}')
	case $r in *'"value":['*',"0"]'*) break ;; esac
	i=$((i + 1)); [ $i -le 40 ] || fail "the job without the token is not down: $r"
	sleep 0.5
done
t=$(curl -s --max-time 5 "http://127.0.0.1:$PPORT/api/v1/targets")
echo "$t" | $PY -c '
import json, sys
ts = json.load(sys.stdin)["data"]["activeTargets"]
bad = [t for t in ts if t["labels"]["job"] == "thps-notoken"]
sys.exit(0 if bad and "401" in bad[0]["lastError"] else 1)' || fail "the job without the token is not down with 401: $t"
r=$(q 'count({job="thps-notoken",__name__=~"thpshrink_.*"})')
echo "$r" | grep -q '"result":\[\]' || fail "Prometheus stored thpshrink series from the job without the token: $r"
d=$(q 'scrape_duration_seconds{job="thps-secure"}' | sed -n 's/.*"value":\[[0-9.]*,"\([0-9.e-]*\)"\].*/\1/p')
echo "ok: the job without the token is down with 401 and stored nothing (secure scrape took ${d}s)"
kill $PPID_PROM; wait $PPID_PROM 2>/dev/null; PPID_PROM=

# SIGTERM: clean exit; the token appears in no log.
kill -TERM $DPID
i=0
while kill -0 $DPID 2>/dev/null; do
	i=$((i + 1)); [ $i -le 100 ] || fail "thpshrinkd did not exit within 10 s of SIGTERM"
	sleep 0.1
done
wait $DPID; rc=$?; DPID=
[ $rc = 0 ] || fail "thpshrinkd exited $rc on SIGTERM"
cat "$T/daemon.log" >>"$T/all-logs"
grep -q "$TOKEN" "$T/all-logs" && fail "the token is in the daemon's log"
echo "ok: SIGTERM → exit 0; the token is in no log ($(wc -l <"$T/all-logs") lines read)"
echo PASS
