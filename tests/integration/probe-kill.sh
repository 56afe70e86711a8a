#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The probe's canary dies with its parent (issue 22), on the host: `thpshrink probe --measure`
# is SIGKILLed mid-measure 6 times, each while its canary holds its THPs, and no canary may be
# left. The host has no cgroup v2 memory controller, so the probe measures by the canary's RSS
# and makes no scratch cgroup (tests/vm/scenarios/56-probe-kill.sh kills it in the VM, with
# real scratch cgroups). "Mid-measure" is made certain, not raced: split_huge_pages is a FIFO
# in a private debugfs root (THPSHRINK_DEBUGFS_ROOT), so the probe blocks opening it with its
# canary's folios faulted in. Nothing under /sys or /proc/sys is written.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
CLI=$top_builddir/thpshrink
PY=/usr/bin/python3

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$CLI" ] || fail "$CLI not built"
[ "$(id -u)" = 0 ] || skip "needs root (the probe reads kpageflags; it measures only as root)"
[ -x $PY ] || skip "/usr/bin/python3 is missing"
grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null &&
	skip "THP is 'never' here: the probe makes no canary"
[ -r /sys/kernel/mm/transparent_hugepage/enabled ] || skip "no THP on this kernel"

T=$(mktemp -d /tmp/thps-probe-kill.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
mkdir "$T/dbg"
mkfifo "$T/dbg/split_huge_pages"

THPSHRINK_DEBUGFS_ROOT=$T/dbg $PY - "$CLI" <<'PYEOF' || exit 1
import os, signal, subprocess, sys, time
cli = sys.argv[1]

def canaries():
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            comm = open("/proc/%s/comm" % p).read().strip()
            ppid = int(open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if comm == "thps-canary":
            out.append((int(p), ppid))
    return out

def thp_kib(pid):
    try:
        for l in open("/proc/%d/smaps_rollup" % pid):
            if l.startswith("AnonHugePages:"):
                return int(l.split()[1])
    except OSError:
        pass
    return 0

stale = canaries()
if stale:
    print("FAIL: canaries before the test: %s" % stale)
    sys.exit(1)
left, held = 0, []
for k in range(6):
    p = subprocess.Popen([cli, "probe", "--measure"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    mine, end = [], time.time() + 20
    while time.time() < end:
        mine = [c for c, pp in canaries() if pp == p.pid]
        if mine and thp_kib(mine[0]) > 0:
            break
        if p.poll() is not None:
            break
        time.sleep(0.01)
    if not mine:
        p.kill(); p.wait()
        print("SKIP: the probe made no canary holding THPs in 20 s (THP 'madvise' refused here?)")
        sys.exit(77)
    held.append(thp_kib(mine[0]))
    p.send_signal(signal.SIGKILL)
    p.wait()
    end = time.time() + 2
    while time.time() < end and any(pp for c, pp in canaries() if c in mine):
        time.sleep(0.01)
    rest = [c for c, pp in canaries() if c in mine]
    if rest:
        left += 1
        for c in rest:
            os.kill(c, signal.SIGKILL)
print("probe SIGKILLed mid-measure 6 times, its canary holding %s KiB of THPs each time: "
      "%d canaries left" % ("/".join(str(h) for h in held), left))
if left:
    print("FAIL: %d of 6 kills left a canary" % left)
    sys.exit(1)
print("ok: 6 probes SIGKILLed mid-measure, no canary left")
PYEOF
