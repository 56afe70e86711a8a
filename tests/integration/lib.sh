# SPDX-License-Identifier: GPL-2.0-or-later
# lib.sh: the setup the host integration tests share (as tests/vm/lib.sh for the VM scenarios),
# sourced first thing: . "$top_srcdir/tests/integration/lib.sh"
# It requires top_srcdir and top_builddir (make check sets them) and sets
#   D CLI BLOAT  the built thpshrinkd, thpshrink and thpshrink-bloat;  PY  /usr/bin/python3
# Results (a test that cannot run says why, and only for a reason of the host):
#   skip REASON...        "SKIP: REASON", exit 77
#   fail MESSAGE...       "FAIL: MESSAGE", then the last THPS_LOG_TAIL (20) lines of
#                         $T/daemon.log (without the lines matching THPS_LOG_HIDE, if set), exit 1
#   need_root WHY         skip unless root
#   need_cmd CMD PACKAGE  skip unless CMD is on PATH, naming the Debian package
#   need_python           skip without /usr/bin/python3
#   need_built PROG...    fail unless each is built (a missing program is the build's failure)
#   need_collapse         skip unless root, THP, CAP_SYS_NICE and MADV_COLLAPSE (Linux 6.1+)
# Checks that go on after a failure (such a script ends with: exit $((fails > 0))):
#   check NAME DETAIL CMD...  "ok: NAME: DETAIL" if CMD succeeds, else "FAIL: NAME: DETAIL" and
#                         fails + 1
#   pass MESSAGE, flunk MESSAGE   "ok: MESSAGE"; "FAIL: MESSAGE" and fails + 1
#   out_has NAME TEXT     passes if $T/out holds the line part TEXT, else flunks showing $T/out
# A private directory and its cleanup:
#   thps_tmpdir NAME      T=/tmp/thps-NAME.XXXXXX; on exit (or INT, TERM) the pids in the
#                         variables named by THPS_KILL (default "DPID"; a variable may hold a
#                         list) get SIGCONT and SIGKILL,
#                         the script's thps_cleanup_more runs if it defines one, T is removed
# The daemon on loopback:
#   free_port             a free loopback TCP port (random, high, checked by binding it)
#   my_cgroup             the memory cgroup of this shell (v1's memory line, else v2's), else /
#   wait_200 URL SECONDS WHAT  until URL answers 200; fails if thpshrinkd ($DPID) exits first
#   daemon_stop WHAT      SIGTERM to $DPID: it must exit 0 within 5 s; DPID emptied
: "${top_srcdir:?}" "${top_builddir:?}"
D=$top_builddir/thpshrinkd
CLI=$top_builddir/thpshrink
BLOAT=$top_builddir/thpshrink-bloat
PY=/usr/bin/python3
T=
DPID=
THPS_KILL=${THPS_KILL:-DPID}

skip() { echo "SKIP: $*"; exit 77; }
fail() {
	echo "FAIL: $*"
	if [ -n "$T" ] && [ -f "$T/daemon.log" ]; then
		if [ -n "${THPS_LOG_HIDE:-}" ]; then grep -v -e "$THPS_LOG_HIDE" "$T/daemon.log"; else cat "$T/daemon.log"; fi |
			tail -n "${THPS_LOG_TAIL:-20}" | sed 's/^/  daemon: /'
	fi
	exit 1
}
need_root() { [ "$(id -u)" = 0 ] || skip "needs root ($*)"; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || skip "$1 is missing (Debian package $2)"; }
need_python() { [ -x "$PY" ] || skip "$PY is missing"; }
need_built() {
	for p in "$@"; do [ -x "$p" ] || fail "$p not built"; done
}
need_collapse() {
	need_root "pagemap PFNs, kpageflags"
	[ -r /sys/kernel/mm/transparent_hugepage/hpage_pmd_size ] || skip "no THP support in this kernel"
	capeff=$(awk '/^CapEff/ {print $2}' /proc/self/status)
	[ $((0x$capeff >> 23 & 1)) = 1 ] || skip "no CAP_SYS_NICE here"
	kv=$(uname -r) kmaj=${kv%%.*} kmin=${kv#*.}
	kmin=${kmin%%[!0-9]*}
	[ "$kmaj" -gt 6 ] || { [ "$kmaj" = 6 ] && [ "$kmin" -ge 1 ]; } ||
		skip "kernel $kv has no MADV_COLLAPSE (6.1+)"
}

fails=0
pass() { echo "ok: $*"; }
flunk() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() {
	n=$1 d=$2
	shift 2
	if "$@"; then pass "$n: $d"; else flunk "$n: $d"; fi
}
out_has() {
	if grep -qF -- "$2" "$T/out"; then pass "$1"; else
		flunk "$1: no \"$2\" in:"; sed 's/^/    /' "$T/out"
	fi
}

thps_cleanup() {
	for v in $THPS_KILL; do
		eval "ps=\${$v:-}"
		for p in $ps; do { kill -CONT "$p"; kill -9 "$p"; } 2>/dev/null; done
	done
	wait 2>/dev/null
	command -v thps_cleanup_more >/dev/null 2>&1 && thps_cleanup_more
	[ -n "$T" ] && rm -rf "$T"
}
thps_tmpdir() {
	T=$(mktemp -d "/tmp/thps-$1.XXXXXX") || fail "mktemp"
	trap thps_cleanup EXIT
	trap 'exit 1' INT TERM
}

free_port() {
	$PY - <<'PYEOF'
import random, socket
for _ in range(50):
    p = random.randint(20000, 60000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p); break
PYEOF
}
my_cgroup() {
	cg=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup | head -1)
	[ -n "$cg" ] || cg=$(sed -n 's/^0:://p' /proc/self/cgroup | head -1)
	echo "${cg:-/}"
}
wait_200() {
	i=0
	until [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1")" = 200 ]; do
		i=$((i + 1)); [ $i -le $(($2 * 10)) ] || fail "$3: $1 did not answer 200 within $2 s"
		kill -0 "$DPID" 2>/dev/null || fail "$3: thpshrinkd exited"
		sleep 0.1
	done
}
daemon_stop() {
	kill -TERM "$DPID"
	i=0
	while kill -0 "$DPID" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	kill -0 "$DPID" 2>/dev/null && fail "$1: still running 5 s after SIGTERM"
	wait "$DPID"; rc=$?
	DPID=
	[ $rc = 0 ] || fail "$1: exit status $rc after SIGTERM"
}
