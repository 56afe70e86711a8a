#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The DaemonSet's pod spec under `podman kube play` with the real ConfigMap: the pod template
# becomes a Pod (podman 4.3 plays no DaemonSet) on the host network (podman maps no
# containerPort there, so the /metrics port is moved off 9477 to a free one), and the
# node's hostPath directories the init container writes (/opt/thpshrink/bin,
# /etc/containers/oci/hooks.d, /run/thpshrink) are moved under a temporary directory.
# Asserts: the init container installs the hook (it runs, with no capability) and both
# hooks.d files (valid JSON naming it); thpshrinkd keeps running, loads the ConfigMap's policy
# and serves /metrics that promtool accepts, with debugfs not mounted. Least privilege: no
# container is privileged; the daemon's process has exactly the capabilities the DaemonSet
# adds (CapEff = CapPrm = CapBnd), a seccomp filter (the runtime's default profile) and a
# read-only root; in it, `thpshrink report --pid` reads the THPs of another user's process,
# and process_madvise(MADV_COLD) on one page of one of them (through a pidfd) splits it; the
# same with the host's pid namespace (podman run --pid=host with those capabilities: kube
# play ignores hostPID), where, with any one of them left out, the scan or the split fails.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
# Pods get a cgroup from podman itself: here only in a private, empty tmpfs.
[ "${THPS_GUARDED:-}" = 1 ] || THPS_FAKE_CGROUP=1 exec "$top_srcdir/tests/ship/podman-guard.sh" "$0" "$@"
T=$(mktemp -d /tmp/thps-kube.XXXXXX)
POD=thpshrinkd-kube-play-$$
bloat=""
# pod rm fails (125) on removing the pod's cgroup directories in the fake tmpfs, after it has
# removed the pod; the status of the test is not its business.
trap '$PODMAN pod rm -f "$POD" >/dev/null 2>&1 || true; $PODMAN volume rm -f thpshrink-policies >/dev/null 2>&1 || true; [ -z "$bloat" ] || kill "$bloat" 2>/dev/null || true; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# No debugfs: where the host has it mounted, an empty tmpfs covers it in this test's private
# mount namespace (podman-guard.sh), which the pod's hostPath then shows.
if [ "$(stat -f -c %T /sys/kernel/debug 2>/dev/null)" = debugfs ]; then
	mount -t tmpfs -o size=4k,mode=700 thps-no-debugfs /sys/kernel/debug
fi
. "$top_srcdir/tests/ship/podman-env.sh"
V=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "$top_builddir/config.h")
podman image exists "ghcr.io/thpshrink/thpshrink:$V" ||
	{ echo "SKIP: image ghcr.io/thpshrink/thpshrink:$V not built (tests/ship/image.sh builds it)"; exit 77; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

python3 - "$top_srcdir/deploy/kubernetes/daemonset.yaml" "$T" "$POD" "$port" <<'PY'
import sys, yaml
ds = yaml.safe_load(open(sys.argv[1])); t, name, port = sys.argv[2], sys.argv[3], int(sys.argv[4])
tpl = ds["spec"]["template"]
spec = tpl["spec"]
# The endpoint's TLS and token come from the operator's Secrets, which podman 4.3 cannot
# mount: this test reads /metrics in clear on loopback; daemon-metrics-tls.sh tests them.
secrets = {v["name"] for v in spec["volumes"] if "secret" in v}
spec["volumes"] = [v for v in spec["volumes"] if v["name"] not in secrets]
for c in spec["containers"]:
    c.pop("ports", None)
    c["command"] = [a.replace(":9477", f":{port}") for a in c.get("command", [])
                    if not a.startswith(("--metrics-tls-", "--metrics-token-file"))]
    c["volumeMounts"] = [m for m in c.get("volumeMounts", []) if m["name"] not in secrets]
    if "httpGet" in c.get("livenessProbe", {}):
        c["livenessProbe"]["httpGet"]["port"] = port
for v in spec["volumes"]:
    hp = v.get("hostPath")
    if hp and hp["path"] not in ("/proc", "/sys/fs/cgroup", "/sys/kernel/debug"):
        hp["path"] = t + "/host" + hp["path"]
pod = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": name, "labels": tpl["metadata"]["labels"]}, "spec": spec}
yaml.safe_dump(pod, open(t + "/pod.yaml", "w"))
PY
# podman keeps a ConfigMap's volume between runs: start from the ConfigMap as it is now.
$PODMAN volume rm -f thpshrink-policies >/dev/null 2>&1 || true
# In $T: kube play takes a directory named like the image in the current one for a build context.
(cd "$T" && $PODMAN kube play --network=host --configmap "$top_srcdir/deploy/kubernetes/configmap.yaml" "$T/pod.yaml") \
	>"$T/play.log" 2>&1 || { cat "$T/play.log"; fail "podman kube play"; }
echo "ok: podman kube play started pod $POD from the DaemonSet's template with the ConfigMap"

# The init container ran before the daemon: the hook and its hooks.d files are on the "node".
H=$T/host
for _ in $(seq 50); do [ -s "$H/etc/containers/oci/hooks.d/thpshrink-poststop.json" ] && break; sleep 0.2; done
"$H/opt/thpshrink/bin/thpshrink-oci-hook" --help >/dev/null || fail "the installed hook does not run"
python3 - "$H" <<'PY' || fail "hooks.d files of the init container"
import json, sys
h = sys.argv[1]
for stage in ("createruntime", "poststop"):
    j = json.load(open(f"{h}/etc/containers/oci/hooks.d/thpshrink-{stage}.json"))
    assert j["hook"]["path"] == "/opt/thpshrink/bin/thpshrink-oci-hook", j
    assert j["stages"][0].lower() == stage, j
print("ok: the init container installed the hook and its createRuntime and poststop hooks.d files")
PY

# The daemon: running, and serving /metrics.
ok=""
for _ in $(seq 60); do
	if curl -fsS "http://127.0.0.1:$port/metrics" >"$T/metrics" 2>/dev/null; then ok=1; break; fi
	sleep 0.5
done
ctr=$($PODMAN ps -a --filter "pod=$POD" --format '{{.Names}}' | grep -- '-thpshrinkd$' || true)
if [ -z "$ok" ]; then
	$PODMAN ps -a --filter "pod=$POD" --format '{{.Names}} {{.Status}}'
	$PODMAN logs "$ctr" >"$T/daemon.log" 2>&1 || true
	tail -20 "$T/daemon.log"
	fail "thpshrinkd in the pod serves no /metrics on port $port (see its log above)"
fi
promtool check metrics <"$T/metrics" || fail "promtool check metrics of the pod's /metrics"
grep -qx "thpshrink_build_info{version=\"$V\"} 1" "$T/metrics" || fail "no thpshrink_build_info of $V"
grep -qx 'thpshrink_policy_last_load_success 1' "$T/metrics" || { $PODMAN logs "$ctr" 2>&1 | tail; fail "the ConfigMap's policies did not load"; }
n=$(sed -n 's/^thpshrink_policies \([0-9]*\)$/\1/p' "$T/metrics")
[ "${n:-0}" -ge 1 ] || fail "thpshrink_policies is '${n}'"
echo "ok: thpshrinkd in the pod loaded $n policy from the ConfigMap and serves /metrics (promtool accepts it)"
# The DaemonSet's liveness probe, run as kubelet would: in the container, its exec command.
probe=$(python3 - "$top_srcdir/deploy/kubernetes/daemonset.yaml" <<'PY'
import shlex, sys, yaml
ds = yaml.safe_load(open(sys.argv[1]))
c = [c for c in ds["spec"]["template"]["spec"]["containers"] if "livenessProbe" in c][0]
print(shlex.join(c["livenessProbe"]["exec"]["command"]))
PY
) || fail "the DaemonSet's livenessProbe is not an exec probe"
# shellcheck disable=SC2086
$PODMAN exec "$ctr" $probe >"$T/live.out" 2>&1 || { cat "$T/live.out"; fail "the liveness probe ($probe) failed in the pod"; }
echo "ok: the liveness probe '$probe' in the pod: $(cat "$T/live.out")"

# Least privilege. The DaemonSet asks for no privileged container, and the daemon's process
# (its pid on the host) has exactly the capabilities its container adds, in every set that
# counts, and a seccomp filter.
python3 - "$top_srcdir/deploy/kubernetes/daemonset.yaml" "$T/caps" <<'PY' || fail "the DaemonSet's securityContext"
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]
for c in spec.get("initContainers", []) + spec["containers"]:
    assert not c.get("securityContext", {}).get("privileged"), f"{c['name']} is privileged"
main = [c for c in spec["containers"] if c["name"] == "thpshrinkd"][0]
caps = main["securityContext"]["capabilities"]
assert caps["drop"] == ["ALL"], caps
open(sys.argv[2], "w").write(" ".join(sorted(caps["add"])) + "\n")
PY
want=$(cat "$T/caps")
[ "$($PODMAN inspect "$ctr" --format '{{.HostConfig.Privileged}}')" = false ] || fail "podman runs thpshrinkd privileged"
dpid=$($PODMAN inspect "$ctr" --format '{{.State.Pid}}')
[ "${dpid:-0}" -gt 0 ] || fail "no host pid for thpshrinkd's container"
# The names of the bits set in a /proc/PID/status Cap* mask (linux/capability.h order).
capnames() {
	python3 -c '
import sys
names = ("CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP "
         "LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER "
         "SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE "
         "SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP "
         "MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF "
         "CHECKPOINT_RESTORE").split()
m = int(sys.argv[1], 16)
print(" ".join(sorted(names[i] if i < len(names) else f"bit{i}" for i in range(64) if m >> i & 1)))
' "$1"
}
for set in CapEff CapPrm CapBnd; do
	mask=$(sed -n "s/^$set:[[:space:]]*//p" "/proc/$dpid/status")
	got=$(capnames "$mask")
	[ "$got" = "$want" ] || fail "thpshrinkd's $set is $mask ($got), the DaemonSet adds $want"
done
amb=$(sed -n 's/^CapAmb:[[:space:]]*//p' "/proc/$dpid/status")
[ "$(capnames "$amb")" = "" ] || fail "thpshrinkd has ambient capabilities $amb"
seccomp=$(sed -n 's/^Seccomp:[[:space:]]*//p' "/proc/$dpid/status")
[ "$seccomp" = 2 ] || fail "thpshrinkd runs with Seccomp: $seccomp, not a filter (2)"
mask=$(sed -n 's/^CapEff:[[:space:]]*//p' "/proc/$dpid/status")
echo "ok: thpshrinkd (host pid $dpid) is not privileged: CapEff = CapPrm = CapBnd = $mask ($want), no ambient, seccomp filter"
# What runs in the container by exec (the liveness probe, the checks below) has the same.
$PODMAN exec "$ctr" cat /proc/self/status >"$T/exec-status" || fail "exec in thpshrinkd's container"
[ "$(sed -n 's/^CapEff:[[:space:]]*//p' "$T/exec-status")" = "$mask" ] &&
	[ "$(sed -n 's/^Seccomp:[[:space:]]*//p' "$T/exec-status")" = 2 ] ||
	{ grep -E '^(Cap|Seccomp)' "$T/exec-status"; fail "an exec in the container has other capabilities or no filter"; }
$PODMAN exec "$ctr" sh -c ': >/thps-rootfs-write' 2>/dev/null && fail "the container's root file system is writable"
[ "$($PODMAN inspect "$ctr" --format '{{.HostConfig.ReadonlyRootfs}}')" = true ] || fail "podman does not make the root read-only"
$PODMAN exec "$ctr" test -e /sys/kernel/debug/split_huge_pages && fail "debugfs is mounted in the container"
# Mount options only (nothing is written): memory.reclaim needs the cgroupfs mount writable,
# though /sys around it is read-only; the host's /proc is read-only.
$PODMAN exec "$ctr" cat /proc/self/mountinfo >"$T/mountinfo"
opts() { awk -v m="$1" '$5 == m { split($6, o, ","); r = o[1] } END { print r }' "$T/mountinfo"; }
[ "$(opts /sys/fs/cgroup)" = rw ] || fail "/sys/fs/cgroup in the container is '$(opts /sys/fs/cgroup)', not rw"
[ "$(opts /host/proc)" = ro ] || fail "/host/proc in the container is '$(opts /host/proc)', not ro"
[ "$(opts /sys)" = ro ] || fail "/sys in the container is '$(opts /sys)': not privileged means read-only"
echo "ok: in the container an exec has the same capabilities and filter; the root, /sys and /host/proc are read-only, /sys/fs/cgroup writable; no debugfs"

# Another user's THPs: the scan and the exact split work with those capabilities.
# split_check WHERE READY-FILE CMD...: CMD runs a command in the container (with the /proc
# that names the workload's pids as THPSHRINK_PROC_ROOT); the workload, nobody's
# thpshrink-bloat, wrote READY-FILE. Its THPs are read, and process_madvise through a pidfd,
# as the split does, on the first (sparse) THP's first page splits that one. perl (in the
# image) makes the calls: pidfd_open 434, process_madvise 440 on every architecture's common
# table (not mips, whose numbers are offset).
thps() { awk '$1 == "THPs" { print $2; exit }' "$1"; }
# shellcheck disable=SC2016
pm='my ($pid, $addr) = @ARGV; my $fd = syscall(434, $pid + 0, 0);
    die "pidfd_open: $!\n" if $fd < 0;
    my $n = syscall(440, $fd, pack("QQ", hex($addr), 4096), 1, 20, 0);
    die "process_madvise: $!\n" if $n < 0; print "$n\n";'
split_check() {
	where=$1 ready=$2
	shift 2
	for _ in $(seq 50); do [ -s "$ready" ] && break; sleep 0.1; done
	[ -s "$ready" ] || fail "thpshrink-bloat did not start as nobody"
	bpid=$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' "$ready")
	start=$(sed -n 's/.*start=\(0x[0-9a-f]*\).*/\1/p' "$ready")
	backed=$(sed -n 's/.*thp_backed=\([0-9]*\).*/\1/p' "$ready")
	"$@" thpshrink report --pid "$bpid" >"$T/report1" 2>&1 || { cat "$T/report1"; fail "thpshrink report $where"; }
	grep -q '^scan: 1 process scanned, 0 skipped' "$T/report1" ||
		{ cat "$T/report1"; fail "report $where did not scan nobody's pid $bpid"; }
	if [ "$backed" -gt 0 ]; then
		[ "$(thps "$T/report1")" = "$backed" ] ||
			{ cat "$T/report1"; fail "report $where counts '$(thps "$T/report1")' THPs of pid $bpid, thpshrink-bloat $backed"; }
	fi
	echo "ok: thpshrink report $where reads nobody's pid $bpid: $(thps "$T/report1") THPs (thpshrink-bloat: $backed)"
	case $(uname -m) in mips*) echo "note: $(uname -m): process_madvise not tried (syscall numbers)"; return ;; esac
	out=$("$@" perl -e "$pm" "$bpid" "$start" 2>&1) ||
		fail "pidfd_open + process_madvise(MADV_COLD) of nobody's pid $bpid $where: $out"
	[ "$out" = 4096 ] || fail "process_madvise $where advised '$out' bytes, not 4096"
	if [ "$backed" -gt 0 ]; then
		"$@" thpshrink report --pid "$bpid" >"$T/report2" 2>&1 || { cat "$T/report2"; fail "the second report $where"; }
		[ "$(thps "$T/report2")" = "$((backed - 1))" ] ||
			{ cat "$T/report2"; fail "after process_madvise on one page of one THP $where, $(thps "$T/report2") of $backed THPs are left, not $((backed - 1))"; }
		echo "ok: process_madvise(pidfd, MADV_COLD) of 4096 bytes $where split one of nobody's THPs: $backed -> $((backed - 1))"
	else
		echo "ok: process_madvise(pidfd, MADV_COLD) $where advised 4096 bytes of nobody's pid $bpid (no THP to split)"
	fi
}
mkdir -m 0777 "$T/bloat" && chmod 0755 "$T"
bloatcmd="setpriv --reuid=65534 --regid=65534 --clear-groups $top_builddir/thpshrink-bloat --mix 0:8,512:4 --seconds 120"
# podman 4.3's kube play ignores hostPID (its pods get a pid namespace each), so in the pod the
# workload runs in the daemon container's pid namespace (and dies with it), and the checks
# read that namespace's /proc: pids, pidfds and process_madvise all speak of it.
# shellcheck disable=SC2086
nsenter --target "$dpid" --pid -- $bloatcmd --ready-file "$T/bloat/ready" >/dev/null &
bloat=$!
split_check "in the pod's container" "$T/bloat/ready" $PODMAN exec --env THPSHRINK_PROC_ROOT=/proc "$ctr"
kill "$bloat" 2>/dev/null || true
# hostPID as Kubernetes gives it: the same capabilities, default seccomp profile and read-only
# root under `podman run --pid=host`, the host's /proc at /host/proc as the DaemonSet mounts
# it, a workload in the host's pid namespace.
# shellcheck disable=SC2086
$bloatcmd --ready-file "$T/bloat/ready-host" >/dev/null &
bloat=$!
# shellcheck disable=SC2046,SC2086
split_check "with hostPID" "$T/bloat/ready-host" $PODMAN run --rm --pid=host --network=host --read-only \
	--cap-drop=all $(printf -- '--cap-add=%s ' $want) -v /proc:/host/proc:ro --env THPSHRINK_PROC_ROOT=/host/proc \
	--entrypoint /usr/bin/env "ghcr.io/thpshrink/thpshrink:$V"
# And each capability is needed: with any one of them left out, the scan or the split fails.
case $(uname -m) in mips*) ;; *)
	for c in $want; do
		fewer=$(for x in $want; do [ "$x" = "$c" ] || printf -- '--cap-add=%s ' "$x"; done)
		# shellcheck disable=SC2086
		$PODMAN run --rm --pid=host --network=host --read-only --cap-drop=all $fewer \
			-v /proc:/host/proc:ro --env THPSHRINK_PROC_ROOT=/host/proc --entrypoint /usr/bin/env \
			"ghcr.io/thpshrink/thpshrink:$V" perl -e "$pm" "$bpid" "$start" >"$T/pm-$c" 2>&1 || true
		# shellcheck disable=SC2086
		$PODMAN run --rm --pid=host --network=host --read-only --cap-drop=all $fewer \
			-v /proc:/host/proc:ro --env THPSHRINK_PROC_ROOT=/host/proc --entrypoint /usr/bin/env \
			"ghcr.io/thpshrink/thpshrink:$V" thpshrink report --pid "$bpid" >"$T/report-$c" 2>&1 || true
		n=$(thps "$T/report-$c")
		scan=$(grep -o '^scan: [0-9]* process[a-z]* scanned, [0-9]* skipped' "$T/report-$c" || echo "no scan")
		if [ "$(cat "$T/pm-$c")" = 4096 ] && [ -n "$n" ] && [ "$n" -gt 0 ]; then
			fail "without $c, report --pid still counts $n THPs and process_madvise still works: not needed?"
		fi
		echo "ok: without $c: report: ${n:-0} THPs ($scan); process_madvise: $(cat "$T/pm-$c")"
	done
	;;
esac
kill "$bloat" 2>/dev/null || true
# The probe, where it already names process_madvise, must not find it refused in here.
$PODMAN exec "$ctr" thpshrink probe >"$T/probe" 2>&1 || true
if grep -i 'process_madvise' "$T/probe" >"$T/probe-pm"; then
	sed 's/^/  probe: /' "$T/probe-pm"
	! grep -qiE 'EPERM|not permitted|ENOSYS|not implemented|denied' "$T/probe-pm" ||
		fail "thpshrink probe in the container finds process_madvise refused"
	echo "ok: thpshrink probe in the container does not find process_madvise refused"
else
	echo "note: thpshrink probe names no process_madvise yet"
fi

sleep 3
state=$($PODMAN inspect "$ctr" --format '{{.State.Status}} {{.RestartCount}}')
[ "$state" = "running 0" ] || fail "thpshrinkd in the pod: $state"
echo "ok: thpshrinkd still running, no restart"
echo PASS
