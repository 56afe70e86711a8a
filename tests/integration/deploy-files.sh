#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Structure of the deploy files: the hooks.d JSON that podman/CRI-O read, the runc/crun hooks
# example, and the Kubernetes DaemonSet + ConfigMap.
PY=/usr/bin/python3
$PY -c 'import yaml, json' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks yaml (python3-yaml)"; exit 77; }
exec $PY - "${top_srcdir:-..}/deploy" <<'PYEOF'
import glob, json, os, re, sys, yaml

d = sys.argv[1]
fails = []
def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        fails.append(what)

STAGES = {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"}
hooks = sorted(glob.glob(os.path.join(d, "oci/hooks.d/*.json")))
check(len(hooks) >= 2, f"hooks.d files: {[os.path.basename(h) for h in hooks]}")
seen = set()
for h in hooks:
    n = os.path.basename(h)
    j = json.load(open(h))
    check(j.get("version") == "1.0.0", f"{n}: version 1.0.0")
    hk = j.get("hook", {})
    check(isinstance(hk.get("path"), str) and hk["path"].startswith("/"), f"{n}: hook.path absolute ({hk.get('path')})")
    check(hk.get("path", "").endswith("/thpshrink-oci-hook"), f"{n}: hook.path is thpshrink-oci-hook")
    args = hk.get("args", [])
    check(isinstance(args, list) and len(args) >= 2 and args[0] == "thpshrink-oci-hook", f"{n}: args {args}")
    st = j.get("stages", [])
    check(isinstance(st, list) and st and set(st) <= STAGES, f"{n}: stages {st} valid")
    check(len(args) >= 2 and args[-1] in st, f"{n}: the stage argument {args[-1:]} matches stages {st}")
    seen |= set(st)
    ann = j.get("when", {}).get("annotations", {})
    check(isinstance(ann, dict) and ann, f"{n}: when.annotations present")
    for k, v in ann.items():
        re.compile(k); re.compile(v)
        check(re.fullmatch(k, "io.thpshrink.policy") is not None and re.search(k, "io.thpshrinkXpolicy") is None,
              f"{n}: annotation key regex {k!r} matches io.thpshrink.policy exactly")
    check(set(j) <= {"version", "hook", "when", "stages"}, f"{n}: no unknown top-level keys")
check("poststop" in seen and bool(seen & {"createRuntime", "poststart", "prestart"}), f"hooks.d covers a start stage and poststop: {sorted(seen)}")

ex = json.load(open(os.path.join(d, "oci/config-hooks-example.json")))
hs = ex.get("hooks", {})
check(set(hs) <= STAGES and "poststop" in hs, f"config-hooks-example: stages {sorted(hs)}")
for stage, lst in hs.items():
    for e in lst:
        check(e["path"].startswith("/") and e["args"][-1] == stage, f"config-hooks-example {stage}: {e['args']}")
check(ex.get("annotations", {}).get("io.thpshrink.policy"), "config-hooks-example: policy annotation")

docs = []
for f in sorted(glob.glob(os.path.join(d, "kubernetes/*.yaml"))):
    docs += [x for x in yaml.safe_load_all(open(f)) if x]
kinds = {x["kind"]: x for x in docs}
check("DaemonSet" in kinds and "ConfigMap" in kinds, f"kubernetes kinds: {sorted(kinds)}")
ds = kinds.get("DaemonSet", {})
cm = kinds.get("ConfigMap", {})
tpl = ds.get("spec", {}).get("template", {})
spec = tpl.get("spec", {})
check(ds.get("spec", {}).get("selector", {}).get("matchLabels", {}).items() <= tpl.get("metadata", {}).get("labels", {}).items(),
      "DaemonSet selector matches the pod labels")
check(spec.get("hostPID") is True, "DaemonSet hostPID")
ctrs = spec.get("containers", [])
main = next((c for c in ctrs if "thpshrinkd" in " ".join(c.get("command", []) + [c.get("name", "")])), None)
check(main is not None, "a thpshrinkd container")
main = main or {}
# Least privilege: no container privileged; the daemon drops all capabilities and adds exactly
# those the exact split and the scan need (the DaemonSet's comments say why each), the init
# container none; the runtime's default seccomp profile (it allows process_madvise and
# pidfd_open with SYS_PTRACE); debugfs optional.
for c in spec.get("initContainers", []) + ctrs:
    sc = c.get("securityContext", {})
    check(sc.get("privileged") is not True, f"{c.get('name')}: not privileged")
    check(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{c.get('name')}: drops ALL capabilities")
NEEDED = {"SYS_PTRACE", "SYS_NICE", "SYS_ADMIN", "DAC_OVERRIDE"}
add = main.get("securityContext", {}).get("capabilities", {}).get("add", [])
check(sorted(add) == sorted(NEEDED), f"thpshrinkd adds exactly {sorted(NEEDED)}: {add}")
for c in spec.get("initContainers", []):
    check(not c.get("securityContext", {}).get("capabilities", {}).get("add"), f"{c.get('name')}: adds no capability")
    check(c.get("securityContext", {}).get("allowPrivilegeEscalation") is False, f"{c.get('name')}: no privilege escalation")
seccomp = [x.get("securityContext", {}).get("seccompProfile", {}).get("type") for x in (spec, main)]
check("RuntimeDefault" in seccomp and "Unconfined" not in seccomp, f"seccompProfile RuntimeDefault: {seccomp}")
vols = {v["name"]: v for v in spec.get("volumes", [])}
mounts = {m["mountPath"]: m["name"] for m in main.get("volumeMounts", [])}
def host_mounted(hostpath):
    return any(vols.get(n, {}).get("hostPath", {}).get("path") == hostpath for n in mounts.values())
for hp in ["/sys/fs/cgroup", "/proc", "/sys/kernel/debug", "/run/thpshrink"]:
    check(host_mounted(hp), f"hostPath {hp} mounted into thpshrinkd")
for m in main.get("volumeMounts", []):
    hp = vols.get(m["name"], {}).get("hostPath", {})
    if hp.get("path") == "/sys/kernel/debug":
        check(hp.get("type", "") == "", f"debugfs hostPath optional: type {hp.get('type')!r} checks nothing")
    if hp.get("path") == "/sys/fs/cgroup":
        check(not m.get("readOnly"), "the host's /sys/fs/cgroup mounted writable (memory.reclaim)")
    if hp.get("path") == "/proc":
        check(m.get("readOnly") is True, "the host's /proc mounted read-only")
pol = mounts.get("/etc/thpshrink/policies.d")
check(pol is not None and vols.get(pol, {}).get("configMap", {}).get("name") == cm.get("metadata", {}).get("name"),
      "ConfigMap volume at /etc/thpshrink/policies.d names the ConfigMap")
check(cm.get("metadata", {}).get("namespace") == ds.get("metadata", {}).get("namespace"), "ConfigMap in the DaemonSet's namespace")
for k, v in cm.get("data", {}).items():
    check(k.endswith(".json") and isinstance(json.loads(v), dict), f"ConfigMap {k}: a JSON object")
ann = tpl.get("metadata", {}).get("annotations", {})
check(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == "9477", f"scrape annotations {ann}")
ports = [p.get("containerPort") for p in main.get("ports", [])]
check(9477 in ports, f"containerPort 9477 in {ports}")
cmd = " ".join(main.get("command", []) + main.get("args", []))
check(":9477" in cmd and "127.0.0.1" not in cmd, "thpshrinkd listens on 9477 beyond loopback")
print(f"deploy-files: {len(fails)} failure(s)")
sys.exit(1 if fails else 0)
PYEOF
