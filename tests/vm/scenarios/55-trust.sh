# SPDX-License-Identifier: GPL-2.0-or-later
# 55-trust: thpshrinkd against what any user with a delegated cgroup subtree controls: the
# names of cgroups and how many there are (issue 11), on a real kernel's cgroup v2.
#  hostile: a cgroup named evil<FF><FE>"\}{ holds THPs. /metrics, the --textfile and status.json
#           go to the host (vm_export), where promtool and python3's json must accept them; its
#           series carry the sanitized name and the cgroup's inode; no raw byte of the name
#           reaches the daemon's log.
#  many:    1,000 cgroups under 3.7 KB of parent path, one THP each: /metrics answers 200 (also
#           to 4 scrapes at once) with per-cgroup series for 500 of them and says how many it
#           left out, the daemon's peak RSS stays under the unit's MemoryMax=128M, status.json
#           lists all of them. On k73 only in make check-vm (vm_once: nothing in it depends on
#           the kernel, and it costs 70-100 s per boot); thps.many-all=1 runs it everywhere.
PORT=9478
D=/tmp/thps-trust
N=1000
metrics() { wget -q -O - "http://127.0.0.1:$PORT/metrics" 2>/dev/null; }
plain() { awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }' "$2"; }
mkdir -p $D/pol $D/state $D/tf
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null

EVIL=$(printf 'evil\377\376"\\}{')
EVP=$CG_ROOT/$EVIL
mkdir "$EVP" || { vm_fail hostile-cgroup "cannot create the cgroup"; exit 0; }
sh -c 'echo $$ > "$1/cgroup.procs" && exec thpshrink-bloat --ready-file /tmp/evil.ready --mix 0:4,512:2' sh "$EVP" \
	>/tmp/evil.log 2>&1 &
EPID=$!
i=0; while [ ! -s /tmp/evil.ready ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -s /tmp/evil.ready ] || { vm_fail hostile-workload "never ready: $(cat /tmp/evil.log)"; exit 0; }
INO=$(stat -c %i "$EVP")

# --scan-cpu 100: under TCG a pass costs 10-50x what it costs on hardware (see 30-daemon).
thpshrinkd --policy-dir $D/pol --state-dir $D/state --listen 127.0.0.1:$PORT --textfile $D/tf/out.prom \
	--interval 2 --scan-cpu 100 --registrations-dir none -v >$D/daemon.log 2>&1 &
DPID=$!
# the sanitized name, escaped for Prometheus: /evil\\xff\\xfe\"\\}{
WANT='cgroup="/evil\\xff\\xfe\"\\}{",inode="'$INO'"'
i=0
until metrics >$D/m.prom && grep -qF "thpshrink_cgroup_waste_bytes{$WANT}" $D/m.prom; do
	i=$((i + 1)); [ $i -le 300 ] || break; sleep 0.2
done
vm_check hostile-series "waste series of the hostile cgroup (inode $INO): $(grep -F "thpshrink_cgroup_waste_bytes{$WANT}" $D/m.prom | cut -c1-120)" \
	grep -qF "thpshrink_cgroup_waste_bytes{$WANT}" $D/m.prom
sleep 3 # a pass that also wrote the textfile and status.json with the cgroup in them
metrics >$D/m.prom
vm_export metrics.prom $D/m.prom
vm_export textfile.prom $D/tf/out.prom
vm_export status.json $D/state/status.json
raw=$(grep -c "$(printf '\377')" $D/daemon.log $D/m.prom $D/tf/out.prom $D/state/status.json | awk -F: '{ s += $2 } END { print s + 0 }')
vm_check hostile-no-raw-bytes "lines with a raw 0xFF byte in the log, /metrics, textfile, status.json: $raw" [ "$raw" = 0 ]
kill $EPID; wait $EPID 2>/dev/null
finish() {
	kill $DPID; wait $DPID; rc=$?
	vm_check sigterm "thpshrinkd exit status $rc" [ "$rc" = 0 ]
	rmdir "$EVP" 2>/dev/null
	exit 0
}
vm_once many k73 "70-100 s of TCG per boot for 1,000 cgroups; the daemon's bounds do not depend on the kernel" || finish

# 1,000 cgroups below 15 levels of 249-byte names.
X=$(printf '%0240d' 0 | tr 0 x)
p=$CG_ROOT/thps-many
mkdir -p "$p" && echo +memory >"$p/cgroup.subtree_control"
for l in 00 01 02 03 04 05 06 07 08 09 10 11 12 13 14; do
	p=$p/level$l-$X
	mkdir "$p" && echo +memory >"$p/cgroup.subtree_control" || break
done
plen=$(printf '%s' "${p#$CG_ROOT}/c00000" | wc -c)
t0=$(vm_uptime)
thpshrink-hop "$p" $N >$D/hop.out 2>&1 &
HPID=$!
i=0; while ! grep -q READY $D/hop.out && [ $i -lt 1800 ]; do sleep 0.1; i=$((i + 1)); done
vm_check many-workload "$(cat $D/hop.out) in $(awk -v a="$t0" -v b="$(vm_uptime)" 'BEGIN { printf "%.1f", b - a }') s; leaf paths of $plen bytes" \
	sh -c "grep -q 'READY $N THPS' $D/hop.out && [ $plen -ge 3700 ]"
# wait for a pass that saw them: the dropped gauge counts the cgroups left out
i=0
until metrics >$D/m.prom && [ "$(plain thpshrink_metrics_cgroups_dropped $D/m.prom)" -ge $((N - 500)) ]; do
	i=$((i + 1)); [ $i -le 600 ] || break; sleep 0.5
done
dropped=$(plain thpshrink_metrics_cgroups_dropped $D/m.prom)
bytes=$(wc -c <$D/m.prom)
cgs=$(grep '^thpshrink_cgroup_waste_bytes{' $D/m.prom | grep -c 'inode=')
vm_check many-bounded "/metrics: $bytes bytes, waste series for $cgs cgroups, dropped $dropped" \
	[ "$cgs" -le 500 -a "$cgs" -ge 450 -a "$dropped" -ge $((N - 500)) -a "$bytes" -lt $((16 << 20)) ]
ok=0
for k in 1 2 3 4; do (wget -q -O $D/c$k.prom "http://127.0.0.1:$PORT/metrics" && echo ok >$D/c$k.ok) & done
wait_all=0; while [ $wait_all -lt 100 ]; do [ "$(ls $D/c*.ok 2>/dev/null | wc -l)" = 4 ] && break; sleep 0.2; wait_all=$((wait_all + 1)); done
ok=$(ls $D/c*.ok 2>/dev/null | wc -l)
hwm=$(awk '$1 == "VmHWM:" { print $2 }' /proc/$DPID/status)
vm_check many-concurrent "4 concurrent scrapes answered 200: $ok of 4" [ "$ok" = 4 ]
vm_check many-memory "thpshrinkd peak RSS $((hwm / 1024)) MiB (the unit's MemoryMax=128M)" [ "$hwm" -lt 131072 ]
sleep 3
st=$(grep -c '"cgroup":' $D/state/status.json)
vm_check many-status "status.json: $st cgroups, $(wc -c <$D/state/status.json) bytes" [ "$st" -ge $N ]
vm_export many.prom $D/m.prom
kill $HPID; wait $HPID 2>/dev/null
# the tree, deepest first (init removes only the top level)
find "$CG_ROOT/thps-many" -depth -type d -exec rmdir {} \; 2>/dev/null
finish
