#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# daemonset-args.py DAEMONSET.yaml OUTDIR: the DaemonSet's pod template as `podman run`
# arguments for 48-daemonset (podman 4.3's kube play ignores hostPID, so the pod is run
# container by container, with the template's own settings). Writes OUTDIR/<container>.args
# (one argument a line, init containers first, listed in OUTDIR/containers), OUTDIR/dirs
# (hostPath directories to create, DirectoryOrCreate) and OUTDIR/secrets (VOLUME MOUNTPATH
# FILE... of each Secret volume: the files its container's command names). What a kubelet
# provides and podman cannot is stood in for, and said here:
# - a ConfigMap volume: /tmp/ds/cm/<name>, laid out by the scenario as kubelet does (..data);
# - a Secret volume: /tmp/ds/secret/<name>, files made by the test, mode of its defaultMode;
# - the pod network: --network none (the pod's own namespace with only lo; no CNI in the VM).
# Anything else in a securityContext this does not know fails, so a manifest change is seen.
import json, os, sys, yaml

ds = yaml.safe_load(open(sys.argv[1]))
out = sys.argv[2]
spec = ds["spec"]["template"]["spec"]
vols = {v["name"]: v for v in spec["volumes"]}
dirs, secrets, names = [], [], []


def source(v):
    if "hostPath" in v:
        hp = v["hostPath"]
        if hp.get("type") == "DirectoryOrCreate":
            dirs.append(hp["path"])
        return hp["path"]
    if "configMap" in v:
        return "/tmp/ds/cm/" + v["configMap"]["name"]
    if "secret" in v:
        return "/tmp/ds/secret/" + v["secret"]["secretName"]
    sys.exit(f"volume {v['name']}: no stand-in for {sorted(v)}")


def args(c):
    a = ["--name", "ds-" + c["name"], "--network", "none", "--cgroupns", "private"]
    if spec.get("hostPID"):
        a += ["--pid", "host"]
    sc = dict(c.get("securityContext", {}))
    if sc.pop("privileged", False):
        sys.exit(f"{c['name']} is privileged")
    if sc.pop("readOnlyRootFilesystem", False):
        a.append("--read-only")
    if sc.pop("allowPrivilegeEscalation", True) is False:
        a += ["--security-opt", "no-new-privileges"]
    caps = sc.pop("capabilities", {})
    a += [f"--cap-drop={x.lower()}" for x in caps.get("drop", [])]
    a += [f"--cap-add={x}" for x in caps.get("add", [])]
    if sc.pop("appArmorProfile", {}).get("type") == "Unconfined":
        a += ["--security-opt", "apparmor=unconfined"]
    se = sc.pop("seLinuxOptions", None)
    if se:
        a += ["--security-opt", f"label=type:{se['type']}"]
    if sc:
        sys.exit(f"{c['name']}: securityContext keys without a podman equivalent here: {sorted(sc)}")
    pod_seccomp = spec.get("securityContext", {}).get("seccompProfile", {}).get("type")
    if pod_seccomp not in (None, "RuntimeDefault"):
        sys.exit(f"pod seccompProfile {pod_seccomp}: only RuntimeDefault (podman's default) is mapped")
    lim = c.get("resources", {}).get("limits", {}).get("memory")
    if lim:
        a += ["--memory", lim.replace("Mi", "m").replace("Gi", "g")]
    for e in c.get("env", []):
        a += ["--env", f"{e['name']}={e['value']}"]
    for m in c.get("volumeMounts", []):
        v = vols[m["name"]]
        src = source(v)
        if "secret" in v:
            files = [x.split("=", 1)[1].rsplit("/", 1)[1] for x in c.get("command", [])
                     if "=" in x and x.split("=", 1)[1].startswith(m["mountPath"] + "/")]
            secrets.append(" ".join([v["secret"]["secretName"], "%o" % v["secret"].get("defaultMode", 0o644)] + files))
        a += ["-v", f"{src}:{m['mountPath']}" + (":ro" if m.get("readOnly") else "")]
    a += ["--entrypoint", json.dumps(c["command"] + c.get("args", []))]
    a.append(c["image"])
    return a


for c in spec.get("initContainers", []) + spec["containers"]:
    names.append(c["name"])
    with open(os.path.join(out, c["name"] + ".args"), "w") as f:
        for x in args(c):
            assert "\n" not in x
            f.write(x + "\n")
open(os.path.join(out, "containers"), "w").write("\n".join(names) + "\n")
open(os.path.join(out, "dirs"), "w").write("\n".join(sorted(set(dirs))) + "\n")
open(os.path.join(out, "secrets"), "w").write("\n".join(secrets) + "\n")
open(os.path.join(out, "image"), "w").write(spec["containers"][0]["image"] + "\n")
