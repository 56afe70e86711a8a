#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# thpshrinkd against what a local user can do to it (issue 11), on the host (observe-only here):
#  A. a reconnecting slow-loris from 10 loopback addresses (127.0.0.1 among them, Prometheus's
#     own): 80 connections trickling headers, each reopened at once when cut, for 30 s; 10 scrapes
#     from 127.0.0.1 meanwhile, each must be answered (200) within Prometheus's 10 s timeout;
#  B. --listen unix:PATH: served there, mode 0600, removed at exit;
#  C. FIFOs and symlinks planted in the textfile's directory, at the textfile's name and at the
#     temporary names an older daemon used: passes go on, the textfile is a regular file, a
#     symlink's target is never written, SIGTERM ends the daemon within 5 s;
#  D. the DaemonSet's ConfigMap, laid out as kubelet does (a 1777 root-owned directory,
#     ..TIMESTAMP/, ..data, KEY -> ..data/KEY) from deploy/kubernetes/configmap.yaml: it loads;
#     with a nobody-owned file added, the daemon refuses to start and names the file; a 0777
#     directory on a read-only mount (a private mount namespace) loads;
#  E. liveness: 'thpshrink probe --daemon-alive' says alive while the daemon runs, also during A,
#     and not alive once the daemon is stopped (SIGSTOP) past --max-age;
#  F. 20,000 empty cgroups under 3.7 KB of parent path (a fake tree, THPSHRINK_CGROUP_ROOT): a
#     --once pass's peak RSS next to the same pass over an empty tree, in the same run.
set -u
THPS_KILL="DPID LPID"
. "$top_srcdir/tests/integration/lib.sh"
need_built "$D" "$CLI"
need_root "the daemon reads /proc of every process; files must be root's"
need_cmd curl curl
need_python

thps_tmpdir daemon-trust
chmod 755 "$T"
LPID=
thps_cleanup_more() { umount "$T/ro" 2>/dev/null; }
mkdir -p "$T/policies" "$T/state" "$T/tf"
PORT=$(free_port)
[ -n "$PORT" ] || fail "no free loopback port"
URL=http://127.0.0.1:$PORT/metrics

# start ARGS...: thpshrinkd in the background, its pid in DPID
start() {
	"$D" --policy-dir "$T/policies" --state-dir "$T/state" --registrations-dir none "$@" \
		>"$T/daemon.log" 2>&1 &
	DPID=$!
}
# scans FILE: thpshrink_scans_total in FILE; never opens a FIFO (that would block the test)
scans() { [ -f "$1" ] && [ ! -p "$1" ] && awk '$1 == "thpshrink_scans_total" { print $2 }' "$1" 2>/dev/null; }

# A. Reconnecting slow-loris.
start --listen "127.0.0.1:$PORT" --interval 2
i=0
until curl -sf -o /dev/null "$URL" || [ $i -ge 100 ]; do sleep 0.2; i=$((i + 1)); done
curl -sf -o /dev/null "$URL" || fail "A: no first answer on $URL"
$PY - "$PORT" >"$T/loris.out" 2>&1 <<'PYEOF' &
import select, socket, sys, time
port = int(sys.argv[1])
addrs = ["127.0.0.%d" % (1 + i) for i in range(10)]
def opener(a):
    s = socket.socket()
    s.setblocking(False)
    s.bind((a, 0))
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s
socks = {}
for i in range(80):
    a = addrs[i % 10]
    socks[opener(a)] = [a, False]
opened, cut = 80, 0
end = time.time() + 30
while time.time() < end:
    time.sleep(0.3)
    for s, st in list(socks.items()):
        gone = False
        try:
            r, w, _ = select.select([s], [s], [], 0)
            if r and not s.recv(4096):
                gone = True
            elif w:
                s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n" if not st[1] else b"X: 1\r\n")
                st[1] = True
        except OSError:
            gone = True
        if gone:
            cut += 1
            s.close()
            del socks[s]
            socks[opener(st[0])] = [st[0], False]
            opened += 1
print("opened %d cut-by-server %d" % (opened, cut), flush=True)
PYEOF
LPID=$!
sleep 3
ok=0 worst=0 alive_ok=0
for k in 1 2 3 4 5 6 7 8 9 10; do
	t=$(curl -s -o /dev/null -m 10 -w '%{http_code} %{time_total}' "$URL")
	[ "${t% *}" = 200 ] && ok=$((ok + 1))
	worst=$(awk -v a="$worst" -v b="${t#* }" 'BEGIN { print (b > a ? b : a) }')
	"$CLI" probe --daemon-alive --state-dir "$T/state" >/dev/null 2>&1 && alive_ok=$((alive_ok + 1))
	sleep 1.5
done
wait $LPID; LPID=
kill -0 $DPID 2>/dev/null || fail "A: thpshrinkd died under the attack"
echo "A: reconnecting slow-loris: $(cat "$T/loris.out"); scrapes answered 200 within 10 s: $ok of 10, slowest ${worst}s; liveness alive $alive_ok of 10"
[ "$ok" -ge 9 ] || fail "A: only $ok of 10 scrapes answered within 10 s"
[ "$alive_ok" = 10 ] || fail "A: the liveness probe said not alive during the attack"

# E. Liveness: alive now; stopped past --max-age: not alive.
"$CLI" probe --daemon-alive --state-dir "$T/state" >"$T/alive.out" 2>&1 || fail "E: not alive while running: $(cat "$T/alive.out")"
kill -STOP $DPID
sleep 3
if "$CLI" probe --daemon-alive --state-dir "$T/state" --max-age 2 >"$T/alive.out" 2>&1; then
	fail "E: alive while the daemon was stopped for 3 s (max-age 2): $(cat "$T/alive.out")"
fi
grep -q "not alive: .*status.json' was last written" "$T/alive.out" || fail "E: unclear message: $(cat "$T/alive.out")"
kill -CONT $DPID
"$CLI" probe --daemon-alive --state-dir "$T/nonexistent" >"$T/alive.out" 2>&1 && fail "E: alive without a status file"
echo "ok: E: liveness: alive while running and under attack, 'not alive' once stopped ($(cat "$T/alive.out" | head -1))"
daemon_stop A

# B. A Unix socket.
start --listen "unix:$T/metrics.sock" --interval 2
i=0
until curl -sf --unix-socket "$T/metrics.sock" -o "$T/unix.prom" http://x/metrics || [ $i -ge 100 ]; do sleep 0.2; i=$((i + 1)); done
grep -q '^thpshrink_scans_total [1-9]' "$T/unix.prom" || fail "B: no metrics on the Unix socket"
[ "$(stat -c %a "$T/metrics.sock")" = 600 ] || fail "B: socket mode $(stat -c %a "$T/metrics.sock"), expected 600"
daemon_stop B
[ -e "$T/metrics.sock" ] && fail "B: the socket outlived the daemon"
echo "ok: B: /metrics on a Unix socket (mode 0600), removed at exit"

# C. FIFOs and symlinks in the textfile directory.
echo "precious" >"$T/victim"
mkfifo "$T/tf/out.prom"
# --scan-cpu 100: this part is about the files, not the scan budget (which would space passes
# out on a busy host)
start --listen none --textfile "$T/tf/out.prom" --interval 1 --scan-cpu 100
for n in out.prom.tmp.$DPID .out.prom.tmp .out.prom.XXXXXX; do mkfifo "$T/tf/$n"; done
ln -s "$T/victim" "$T/tf/out.prom.tmp.$((DPID + 1))"
i=0
until [ "$(scans "$T/tf/out.prom")" -ge 1 ] 2>/dev/null || [ $i -ge 100 ]; do sleep 0.2; i=$((i + 1)); done
[ -f "$T/tf/out.prom" ] && [ ! -p "$T/tf/out.prom" ] || fail "C: the FIFO at the textfile's name was not replaced by a file"
# now a symlink at the textfile's name: it must be replaced, its target never written
rm -f "$T/tf/out.prom"; ln -s "$T/victim" "$T/tf/out.prom"
i=0
until [ "$(scans "$T/tf/out.prom")" -ge 3 ] 2>/dev/null || [ $i -ge 100 ]; do sleep 0.2; i=$((i + 1)); done
s1=$(scans "$T/tf/out.prom")
[ -L "$T/tf/out.prom" ] && fail "C: the symlink at the textfile's name is still there after $s1 passes"
[ "$(cat "$T/victim")" = precious ] || fail "C: the symlink's target was written"
[ "${s1:-0}" -ge 3 ] || fail "C: passes stopped (scans_total ${s1:-none})"
daemon_stop C
left=$(find "$T/tf" -name '.out.prom.??????' ! -name .out.prom.XXXXXX | wc -l)
[ "$left" = 0 ] || fail "C: $left temporary files left"
echo "ok: C: FIFOs at the textfile's and the old temporary names and symlinks planted: $s1 passes, the textfile a regular file, the symlink's target intact, SIGTERM exit 0 within 5 s"

# D. The ConfigMap, laid out as kubelet does.
CM=$top_srcdir/deploy/kubernetes/configmap.yaml
mk_configmap() { # DIR: kubelet's atomic-writer layout of the ConfigMap's keys in DIR
	ts="..2026_12_03_13_00_00.123456789"
	mkdir -p "$1/$ts"
	$PY - "$CM" "$1/$ts" <<'PYEOF'
import re, sys
text = open(sys.argv[1]).read().split("\ndata:\n", 1)[1]
keys = re.split(r"^  ([A-Za-z0-9._-]+): \|\n", text, flags=re.M)
for k, body in zip(keys[1::2], keys[2::2]):
    lines = [l[4:] if l.startswith("    ") else l.strip() for l in body.split("\n")]
    open("%s/%s" % (sys.argv[2], k), "w").write("\n".join(lines).strip() + "\n")
    print(k)
PYEOF
	chmod 644 "$1/$ts"/*
	ln -s "$ts" "$1/..data"
	for f in "$1/$ts"/*; do ln -s "..data/$(basename "$f")" "$1/$(basename "$f")"; done
}
mkdir -p "$T/cm"
keys=$(mk_configmap "$T/cm" | tr '\n' ' ')
[ -n "$keys" ] || fail "D: no keys parsed from $CM"
chmod 1777 "$T/cm"
"$D" --policy-dir "$T/cm" --state-dir "$T/state" --registrations-dir none --listen none --once >"$T/d.log" 2>&1 ||
	fail "D: the ConfigMap layout (keys: $keys) was refused: $(grep -i 'refus\|error' "$T/d.log" | head -3)"
loaded=$(sed -n "s/.*Loaded \([0-9]*\) polic.*/\1/p" "$T/d.log" | head -1)
[ "${loaded:-0}" -ge 1 ] || fail "D: no policies loaded from the ConfigMap layout: $(head -5 "$T/d.log")"
echo '{ "name": "evil", "match": { "cgroup": "/*" }, "mode": "enforce" }' >"$T/cm/zz-evil.json"
chown nobody "$T/cm/zz-evil.json"
if "$D" --policy-dir "$T/cm" --state-dir "$T/state" --registrations-dir none --listen none --once >"$T/d.log" 2>&1; then
	fail "D: started with a nobody-owned policy in the ConfigMap directory"
fi
grep -q "zz-evil.json: refusing to use: owned by uid [0-9]*, not root" "$T/d.log" || fail "D: the refusal does not name the file: $(head -5 "$T/d.log")"
rm -f "$T/cm/zz-evil.json"
ro=skipped
if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
	mkdir -p "$T/ro" "$T/rosrc"
	cp "$T/cm/..data/"* "$T/rosrc/"
	chmod 0777 "$T/rosrc"
	unshare -m sh -c "mount --make-rprivate / && mount --bind '$T/rosrc' '$T/ro' && mount -o remount,bind,ro '$T/ro' &&
		'$D' --policy-dir '$T/ro' --state-dir '$T/state' --registrations-dir none --listen none --once" >"$T/d.log" 2>&1 ||
		fail "D: a 0777 directory on a read-only mount was refused: $(grep -i 'refus\|error' "$T/d.log" | head -3)"
	ro=loaded
else
	echo "D: SKIP read-only mount part: unshare -m is not permitted here"
fi
echo "ok: D: the ConfigMap ($keys) in kubelet's 1777 layout loaded $loaded policies; a nobody-owned file in it was refused by name; a 0777 read-only mount: $ro"

# F. Many cgroups with long paths: memory of a pass.
if grep -q '^SAN_CFLAGS = .*fsanitize' "$top_builddir/Makefile" 2>/dev/null; then
	echo "F: SKIP: a sanitizer build (ASan's quarantine keeps freed memory, so RSS says nothing here); the plain build runs F"
	exit 0
fi
mkdir -p "$T/cg0" "$T/cg1"
$PY - "$T/cg1" <<'PYEOF'
import os, sys
p = sys.argv[1]
for i in range(15):
    p = os.path.join(p, ("level%02d-" % i) + "x" * 240)
os.makedirs(p)
for i in range(20000):
    os.mkdir(os.path.join(p, "c%05d" % i))
PYEOF
hwm() { # ROOT: peak RSS in KiB of thpshrinkd --once with the cgroup tree at ROOT
	THPSHRINK_CGROUP_ROOT=$1 /usr/bin/time -f '%M' -o "$T/hwm" "$D" --policy-dir "$T/policies" \
		--state-dir "$T/state" --registrations-dir none --listen none --once >"$T/f.log" 2>&1 ||
		fail "F: thpshrinkd --once failed with the tree at $1: $(tail -3 "$T/f.log")"
	cat "$T/hwm"
}
h0=$(hwm "$T/cg0"); h1=$(hwm "$T/cg1")
echo "F: --once peak RSS: empty tree $((h0 / 1024)) MiB, 20,000 cgroups under 3.7 KB paths $((h1 / 1024)) MiB"
[ $((h1 - h0)) -le 16384 ] || fail "F: 20,000 long-path cgroups cost $(((h1 - h0) / 1024)) MiB more than none (bound 16 MiB)"
echo "ok: F: 20,000 long-path cgroups cost $(((h1 - h0) / 1024)) MiB over an empty tree"
exit 0
