#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The DaemonSet's pod spec under `podman kube play` with the real ConfigMap: the pod template
# becomes a Pod (podman 4.3 plays no DaemonSet) on the host network (podman maps no
# containerPort there, so the /metrics port is moved off 9477 to a free one), and the
# node's hostPath directories the init container writes (/opt/thpshrink/bin,
# /etc/containers/oci/hooks.d, /run/thpshrink) are moved under a temporary directory.
# Asserts: the init container installs the hook (it runs) and both hooks.d files (valid
# JSON naming it); thpshrinkd keeps running, loads the ConfigMap's policy and serves
# /metrics that promtool accepts.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
# Pods get a cgroup from podman itself: here only in a private, empty tmpfs.
[ "${THPS_GUARDED:-}" = 1 ] || THPS_FAKE_CGROUP=1 exec "$top_srcdir/tests/ship/podman-guard.sh" "$0" "$@"
T=$(mktemp -d /tmp/thps-kube.XXXXXX)
POD=thpshrinkd-kube-play-$$
# pod rm fails (125) on removing the pod's cgroup directories in the fake tmpfs, after it has
# removed the pod; the status of the test is not its business.
trap '$PODMAN pod rm -f "$POD" >/dev/null 2>&1 || true; $PODMAN volume rm -f thpshrink-policies >/dev/null 2>&1 || true; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
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
for c in spec["containers"]:
    c.pop("ports", None)
    c["command"] = [a.replace(":9477", f":{port}") for a in c.get("command", [])]
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
sleep 3
state=$($PODMAN inspect "$ctr" --format '{{.State.Status}} {{.RestartCount}}')
[ "$state" = "running 0" ] || fail "thpshrinkd in the pod: $state"
echo "ok: thpshrinkd still running, no restart"
echo PASS
