#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# No memory contents ever leave thpshrink: a process holds a random secret in its THPs (one
# THP full of it, four with it in their only used subpage); `thpshrink report` (text, JSON),
# `thpshrink probe`, `thpshrink explain` and thpshrinkd at debug level (its log, /metrics, /,
# status.json, the textfile) all run over it, and no output, log or file may contain the
# secret, in plain text or hex. Positive controls: the scanner really counted those THPs, the
# secret is readable in the process's memory at the address it printed, and the grep finds it
# in a planted control file.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
PY=/usr/bin/python3
CLI=$top_builddir/thpshrink
D=$top_builddir/thpshrinkd
TOOL=$top_builddir/tests/tools/thpshrink-secret

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || skip "needs root (reads other processes' pagemap and kpageflags)"
for f in "$CLI" "$D" "$TOOL"; do [ -x "$f" ] || fail "$f not built"; done
command -v curl >/dev/null || skip "curl is missing (Debian package curl)"
grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null && skip "THP mode is [never]"

T=$(mktemp -d /tmp/thps-secret.XXXXXX)
SPID= DPID=
cleanup() {
	for p in $SPID $DPID; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
[ ${#SECRET} = 32 ] || fail "could not make a secret"
# The secret as hex bytes too ("61 62 ..."-style dumps would show it so).
SECRET_HEX=$(printf %s "$SECRET" | od -An -tx1 | tr -d ' \n')
mkdir -p "$T/out" "$T/policies" "$T/state"

printf '%s\n' "$SECRET" | "$TOOL" --thps 4 --ready-file "$T/ready" >"$T/out/tool.out" 2>&1 &
SPID=$!
i=0; until [ -s "$T/ready" ]; do i=$((i + 1)); [ $i -le 100 ] || fail "thpshrink-secret not ready"; sleep 0.1; done
read -r _ pidf startf _ thpsf <"$T/ready"
start=${startf#start=}; backed=${thpsf#thps=}
[ "$backed" -ge 1 ] || skip "the kernel backed no THP of the secret holder (THP memory exhausted?)"

# Positive control 1: the secret is in that memory (read by this test, not by thpshrink).
$PY - "$SPID" "$start" "$SECRET" <<'PYEOF' || fail "positive control: the secret is not in the process's memory"
import sys
pid, start, secret = int(sys.argv[1]), int(sys.argv[2], 16), sys.argv[3].encode()
with open(f"/proc/{pid}/mem", "rb") as f:
    f.seek(start)
    data = f.read(5 * 2 * 1024 * 1024)
sys.exit(0 if secret in data else 1)
PYEOF
echo "ok: positive control: the secret is in the THPs at $start"

# Everything thpshrink says about that process and the machine.
"$CLI" report --pid "$SPID" >"$T/out/report.txt" 2>"$T/out/report.err" || fail "report failed: $(cat "$T/out/report.err")"
"$CLI" report --pid "$SPID" --json >"$T/out/report.json" 2>"$T/out/report-json.err" || fail "report --json failed"
"$CLI" report --pid "$SPID" --lowutil-bucket 9 >"$T/out/report9.txt" 2>&1 || fail "report --lowutil-bucket 9 failed"
"$CLI" probe >"$T/out/probe.txt" 2>&1
"$CLI" probe --json >"$T/out/probe.json" 2>&1
# Positive control 2: the scanner really looked at those THPs (counted them).
$PY - "$T/out/report.json" "$backed" <<'PYEOF' || fail "positive control: report did not count the secret's THPs"
import json, sys
t = json.load(open(sys.argv[1]))["total"]
# every backed THP counted; the full one in bucket 9 (it read every subpage's contents)
sys.exit(0 if t["thps"] >= int(sys.argv[2]) and t["buckets"][9]["thps"] >= 1 else 1)
PYEOF
echo "ok: positive control: report counted the secret holder's $backed THPs"

# The daemon, at debug level, watching our own memory cgroup.
CG=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup | head -1)
[ -n "$CG" ] || CG=$(sed -n 's/^0:://p' /proc/self/cgroup | head -1)
[ -n "$CG" ] || CG=/
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$T/policies/10-mine.json" <<JEOF
{ "name": "mine", "match": { "cgroup": "$CG" }, "mode": "observe", "trigger": { "min_waste": "2M" } }
JEOF
"$D" --cgroup "$CG" --policy-dir "$T/policies" --listen "127.0.0.1:$PORT" --state-dir "$T/state" \
	--textfile "$T/out/thpshrink.prom" --interval 1 -v >"$T/out/daemon.log" 2>&1 &
DPID=$!
i=0
until [ "$(curl -s -o "$T/out/metrics.txt" -w '%{http_code}' "http://127.0.0.1:$PORT/metrics")" = 200 ]; do
	i=$((i + 1)); [ $i -le 600 ] || fail "/metrics did not answer within 60 s"
	kill -0 $DPID 2>/dev/null || fail "thpshrinkd exited: $(tail -5 "$T/out/daemon.log")"
	sleep 0.1
done
sleep 2.5 # a few more passes, with decisions logged at debug level
curl -s "http://127.0.0.1:$PORT/metrics" >"$T/out/metrics2.txt"
curl -s "http://127.0.0.1:$PORT/" >"$T/out/index.html"
curl -s "http://127.0.0.1:$PORT/$SECRET" >"$T/out/notfound.txt" # the secret only in our request
"$CLI" explain --state-dir "$T/state" "$CG" >"$T/out/explain.txt" 2>&1
kill $DPID; wait $DPID 2>/dev/null; DPID=
cp -r "$T/state" "$T/out/state"
grep -q "thpshrink_" "$T/out/metrics.txt" || fail "no metrics were scraped"
grep -q "$SPID\|THPs" "$T/out/daemon.log" || fail "the daemon log says nothing about the scan"

# The notfound reply must not echo the request path either (the grep below covers it).
n=$(find "$T/out" -type f | wc -l)
if grep -rl -e "$SECRET" -e "$SECRET_HEX" "$T/out"; then
	fail "the secret leaked into the files above"
fi
echo "ok: the secret is in none of $n outputs, logs and files ($(du -sk "$T/out" | cut -f1) KiB)"

# Positive control 3: the same grep finds it once it is there.
printf 'x%sx\n' "$SECRET" >"$T/out/control"
grep -rlq -e "$SECRET" "$T/out" || fail "positive control: grep does not find a planted secret"
echo "ok: positive control: grep finds a planted copy"
exit 0
