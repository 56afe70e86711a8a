#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# thpshrink report against real THPs on this host: a thpshrink-bloat process with a known
# utilization mix must come out as exactly that histogram (--pid), the --cgroup filter must
# find it in its memory cgroup, a non-root run must fail clearly, bad options must be usage
# errors, and processes exiting during a scan must not break the report.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
PY=/usr/bin/python3
T=$top_builddir/thpshrink
BLOAT=$top_builddir/thpshrink-bloat
MIX=0:20,51:4,52:4,102:3,103:3,512:10
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok: $*"; }
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root (reads /proc/PID/pagemap, kpageflags, kpagecgroup)"
[ -x "$T" ] || skip "$T is not built"
[ -x "$BLOAT" ] || skip "$BLOAT is not built"
thp_enabled=/sys/kernel/mm/transparent_hugepage/enabled
[ -r $thp_enabled ] || skip "kernel without transparent huge pages ($thp_enabled missing)"
grep -q '\[never\]' $thp_enabled && skip "THP mode is [never] on this host"

tmp=$(mktemp -d) || exit 1
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# A. Not root: a clear error and exit 1. A copy nobody may execute, away from the build tree.
cp "$T" "$tmp/thpshrink" && chmod 755 "$tmp" "$tmp/thpshrink"
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/thpshrink" report >"$tmp/nr.out" 2>"$tmp/nr.err"
	rc=$?
	if [ $rc = 1 ] && grep -q "must run as root" "$tmp/nr.err" && [ ! -s "$tmp/nr.out" ]; then
		pass "non-root: exit 1, '$(cat "$tmp/nr.err")'"
	else
		fail "non-root run: exit $rc, stderr '$(cat "$tmp/nr.err")', stdout $(wc -c <"$tmp/nr.out") bytes"
	fi
else
	fail "setpriv missing (util-linux)"
fi

# B. Usage errors: exit 2 and a message naming the option and the value.
usage_case() {
	"$T" report "$@" >"$tmp/u.out" 2>"$tmp/u.err"
	rc=$?
	if [ $rc = 2 ] && grep -q -- "$1" "$tmp/u.err" && grep -q -- "$2" "$tmp/u.err"; then
		pass "usage error for $*: $(cat "$tmp/u.err")"
	else
		fail "'report $*': exit $rc, '$(cat "$tmp/u.err")'"
	fi
}
usage_case --lowutil-bucket 10
usage_case --pid abc
usage_case --pid 0
usage_case --max-thps-per-sec -5
usage_case --cgroup relative/path
usage_case --source nosuch
"$T" report --help >"$tmp/help" 2>&1 && grep -q -- '--max-thps-per-sec' "$tmp/help" ||
	fail "report --help"

# C. Missing kernel files: a procfs without kpagecgroup (a kernel without CONFIG_MEMCG).
mkdir -p "$tmp/proc/self" && : >"$tmp/proc/self/stat" && : >"$tmp/proc/self/pagemap" && : >"$tmp/proc/kpageflags"
THPSHRINK_PROC_ROOT=$tmp/proc "$T" report >"$tmp/mf.out" 2>"$tmp/mf.err"
rc=$?
if [ $rc = 1 ] && grep -q "kpagecgroup.*CONFIG_MEMCG" "$tmp/mf.err" && [ ! -s "$tmp/mf.out" ]; then
	pass "missing kpagecgroup: exit 1, '$(cat "$tmp/mf.err")'"
else
	fail "missing kpagecgroup: exit $rc, '$(cat "$tmp/mf.err")'"
fi
# Now kpagecgroup is there and kpageflags is gone (root reads mode-000 files, so remove it).
: >"$tmp/proc/kpagecgroup"
rm -f "$tmp/proc/kpageflags"
THPSHRINK_PROC_ROOT=$tmp/proc "$T" report >"$tmp/mf.out" 2>"$tmp/mf.err"
rc=$?
if [ $rc = 1 ] && grep -q "'$tmp/proc/kpageflags'" "$tmp/mf.err"; then
	pass "missing kpageflags: exit 1, '$(cat "$tmp/mf.err")'"
else
	fail "missing kpageflags: exit $rc, '$(cat "$tmp/mf.err")'"
fi

# start_bloat NAME MIX: starts a generator, waits for READY, sets $bloat_pid.
start_bloat() {
	"$BLOAT" --mix "$2" --ready-file "$tmp/$1.ready" --seconds 600 >"$tmp/$1.out" 2>&1 &
	bloat_pid=$!
	pids="$pids $bloat_pid"
	i=0
	while [ ! -s "$tmp/$1.ready" ]; do
		kill -0 "$bloat_pid" 2>/dev/null || { cat "$tmp/$1.out"; return 1; }
		i=$((i + 1))
		[ $i -gt 300 ] && { echo "no READY from thpshrink-bloat in 30 s"; return 1; }
		sleep 0.1
	done
}

start_bloat main "$MIX" || { fail "thpshrink-bloat did not start"; exit 1; }
P=$bloat_pid
ready=$(cat "$tmp/main.ready")
echo "bloat: $ready"
want=$(echo "$ready" | sed -n 's/.* thps=\([0-9]*\).*/\1/p')
got=$(echo "$ready" | sed -n 's/.* thp_backed=\([0-9]*\).*/\1/p')
[ -n "$want" ] && [ -n "$got" ] || { fail "cannot parse READY line"; exit 1; }
[ "$got" = "$want" ] || skip "the host gave only $got of $want THPs (fragmented memory or THP limits)"

# 1. --pid --json: exactly the mix, bucket by bucket.
if "$T" report --pid "$P" --json >"$tmp/pid.json" 2>"$tmp/pid.err"; then
	if $PY - "$tmp/pid.json" "$MIX" "$P" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
mix = [tuple(map(int, x.split(":"))) for x in sys.argv[2].split(",")]
pid = int(sys.argv[3])
g = doc["geometry"]; n = g["subpages"]
want_thps = [0] * 10; want_zero = [0] * 10
for u, cnt in mix:
    b = min(u * 10 // n, 9)
    want_thps[b] += cnt; want_zero[b] += cnt * (n - u)
bad = []
got_thps = [b["thps"] for b in doc["total"]["buckets"]]
got_zero = [b["zero_subpages"] for b in doc["total"]["buckets"]]
if got_thps != want_thps: bad.append("THPs per bucket %s, want %s" % (got_thps, want_thps))
if got_zero != want_zero: bad.append("zero subpages per bucket %s, want %s" % (got_zero, want_zero))
if doc["total"]["lowutil_thps"] != want_thps[0]: bad.append("lowutil_thps %d" % doc["total"]["lowutil_thps"])
if doc["total"]["waste_bytes"] != want_zero[0] * g["page_size"]: bad.append("waste_bytes %d" % doc["total"]["waste_bytes"])
if doc["filter"]["pid"] != pid: bad.append("filter.pid %r" % doc["filter"]["pid"])
if doc["summary"]["procs_scanned"] != 1: bad.append("procs_scanned %d" % doc["summary"]["procs_scanned"])
if len(doc["cgroups"]) != 1: bad.append("%d cgroups for one process" % len(doc["cgroups"]))
for b in doc["total"]["buckets"]:
    if min(b["lo"] * 10 // n, 9) != b["bucket"] or min(b["hi"] * 10 // n, 9) != b["bucket"]:
        bad.append("bucket %d labelled %d-%d" % (b["bucket"], b["lo"], b["hi"]))
print("\n".join("  " + x for x in bad) or "  histogram %s" % got_thps)
sys.exit(1 if bad else 0)
PYEOF
	then pass "--pid $P --json gives exactly the mix $MIX"
	else fail "--pid $P --json does not match the mix $MIX"
	fi
else
	fail "report --pid $P --json exited non-zero: $(cat "$tmp/pid.err")"
fi

# 2. The text report of the same process: a table with the real bucket edges.
if "$T" report --pid "$P" >"$tmp/pid.txt" 2>"$tmp/pid.err"; then
	if grep -Eq '^  0-51 +24 +12084$' "$tmp/pid.txt" && grep -Eq '^  461-512 +10 +0$' "$tmp/pid.txt" &&
		grep -q '^sources: scanner: usable' "$tmp/pid.txt"; then
		pass "text report shows the 0-51 and 461-512 rows and the sources line"
	else
		fail "text report lacks the expected rows:"; cat "$tmp/pid.txt"
	fi
else
	fail "report --pid $P exited non-zero: $(cat "$tmp/pid.err")"
fi

# 3. --cgroup: the memory cgroup of the process (v1 "N:memory:/path" or v2 "0::/path").
cg=$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' "/proc/$P/cgroup")
[ -n "$cg" ] || cg=$(sed -n 's/^0::\(.*\)$/\1/p' "/proc/$P/cgroup")
if [ -z "$cg" ]; then
	fail "no memory cgroup in /proc/$P/cgroup"
elif "$T" report --cgroup "$cg" --json >"$tmp/cg.json" 2>"$tmp/cg.err"; then
	if $PY - "$tmp/cg.json" "$cg" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1])); cg = sys.argv[2]
paths = [c["path"] for c in doc["cgroups"]]
ok = cg in paths and all(p == cg or p.startswith(cg.rstrip("/") + "/") for p in paths)
mine = [c for c in doc["cgroups"] if c["path"] == cg]
# Other processes of the same cgroup may add THPs: at least the generator's must be there.
ok = ok and mine[0]["buckets"][0]["thps"] >= 24 and mine[0]["buckets"][9]["thps"] >= 10
print("  cgroups in the report: %s" % paths)
sys.exit(0 if ok else 1)
PYEOF
	then pass "--cgroup $cg finds the generator's THPs and nothing outside $cg"
	else fail "--cgroup $cg report is wrong"
	fi
else
	fail "report --cgroup $cg exited non-zero: $(cat "$tmp/cg.err")"
fi
nocg="/thpshrink-test-no-such-cgroup-$$"
"$T" report --cgroup "$nocg" --json >"$tmp/nocg.json" 2>"$tmp/nocg.err"
rc=$?
if [ $rc = 1 ] && grep -q "$nocg" "$tmp/nocg.err"; then
	pass "--cgroup of a missing cgroup: exit 1, '$(head -1 "$tmp/nocg.err")'"
elif [ $rc = 0 ] && $PY -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["cgroups"] == [] else 1)' "$tmp/nocg.json"; then
	pass "--cgroup of a missing cgroup: an empty report"
else
	fail "--cgroup $nocg: exit $rc, $(cat "$tmp/nocg.err")"
fi

# 4. A process without THPs: an explicit sentence, not an empty table.
sleep 60 &
sp=$!
pids="$pids $sp"
if "$T" report --pid "$sp" >"$tmp/none.txt" 2>&1 && grep -q "^no anonymous THPs found in 1 process (pid $sp); THP mode is \\[" "$tmp/none.txt"; then
	pass "no THPs: '$(head -1 "$tmp/none.txt")'"
else
	fail "report for a process without THPs:"; cat "$tmp/none.txt"
fi

# 7. --max-thps-per-sec reaches the scanner: 44 THPs at 20/s take well over a second.
if "$T" report --pid "$P" --max-thps-per-sec 20 --json >"$tmp/slow.json" 2>"$tmp/slow.err"; then
	if $PY -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]; print("  wall %.2f s, throttled %.2f s" % (s["wall_ns"]/1e9, s["throttled_ns"]/1e9)); sys.exit(0 if s["wall_ns"] >= 1e9 else 1)' "$tmp/slow.json"; then
		pass "--max-thps-per-sec 20 slows the scan of 44 THPs down"
	else
		fail "--max-thps-per-sec 20 did not slow the scan"
	fi
else
	fail "report --max-thps-per-sec 20 exited non-zero: $(cat "$tmp/slow.err")"
fi

# 8. Processes exiting during full scans: short-lived generators come and go meanwhile.
(
	i=0
	while [ $i -lt 400 ] && [ ! -e "$tmp/stop" ]; do
		"$BLOAT" --mix 1:2 --seconds 1 >/dev/null 2>&1 &
		c=$!
		sleep 0.0$((i % 5))
		kill "$c" 2>/dev/null
		wait "$c" 2>/dev/null
		i=$((i + 1))
	done
) &
churn=$!
pids="$pids $churn"
ok=1
skipped=0
for n in 1 2 3; do
	if ! "$T" report --json >"$tmp/all.json" 2>"$tmp/all.err"; then
		fail "full report during process churn, run $n: $(cat "$tmp/all.err")"; ok=0; break
	fi
	s=$($PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["summary"]["procs_skipped"], d["total"]["buckets"][9]["thps"])' "$tmp/all.json") ||
		{ fail "full report is not JSON"; ok=0; break; }
	set -- $s
	skipped=$((skipped + $1))
	[ "$2" -ge 10 ] || { fail "full report lost the generator's 10 full THPs (run $n: $2)"; ok=0; }
done
touch "$tmp/stop"
wait "$churn" 2>/dev/null
[ $ok = 1 ] && pass "3 full scans during process churn succeeded ($skipped processes skipped in all)"

# 9. The one process of a --pid scan exits in the middle of it (the scan is slowed to 10 THPs/s).
if start_bloat mid 512:40; then
	M=$bloat_pid
	"$T" report --pid "$M" --max-thps-per-sec 10 --json >"$tmp/mid.json" 2>"$tmp/mid.err" &
	r=$!
	sleep 1.5
	kill "$M"
	wait "$M" 2>/dev/null
	if wait "$r"; then
		if $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["summary"]; print("  summary %s, %d THPs kept" % (s, d["total"]["thps"])); sys.exit(0 if s["procs_skipped"] == 1 and s["procs_scanned"] == 0 and d["total"]["thps"] < 40 else 1)' "$tmp/mid.json"; then
			pass "a process exiting mid-scan is counted as skipped, the report still prints"
		else
			fail "report after the process exited mid-scan is wrong"
		fi
	else
		fail "report exited non-zero when its process exited mid-scan: $(cat "$tmp/mid.err")"
	fi
else
	fail "second thpshrink-bloat did not start"
fi

kill -0 "$P" 2>/dev/null || fail "the generator died during the test"
[ $fails = 0 ] || { echo "$fails check(s) failed"; exit 1; }
exit 0
