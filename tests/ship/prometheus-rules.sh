#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# deploy/prometheus: `promtool check rules` accepts the rules, `promtool test rules` passes,
# the tests hold every alert both firing and not firing, and every thpshrink metric the
# rules read is one thpshrinkd exports (controller/daemon/metrics.c).
set -eu
: "${top_srcdir:?}"
command -v promtool >/dev/null 2>&1 || { echo "SKIP: promtool is missing (Debian package prometheus)"; exit 77; }
P=$top_srcdir/deploy/prometheus
promtool check rules "$P/thpshrink-rules.yml"
(cd "$P" && promtool test rules thpshrink-rules.test.yml)
exec python3 - "$P" "$top_srcdir/controller/daemon/metrics.c" <<'PY'
import re, sys, yaml
d, src = sys.argv[1], open(sys.argv[2]).read()
rules = [r for g in yaml.safe_load(open(d + "/thpshrink-rules.yml"))["groups"] for r in g["rules"]]
alerts = {r["alert"] for r in rules if "alert" in r}
want = {"ThpshrinkWasteHigh", "ThpshrinkNoScan", "ThpshrinkPolicyLoadErrors",
        "ThpshrinkRecollapseLoop", "ThpshrinkActionsFailing", "ThpshrinkMetricsDown"}
fails = []
if alerts != want:
    fails.append(f"alerts {sorted(alerts)} are not {sorted(want)}")
firing, quiet = set(), set()
for t in yaml.safe_load(open(d + "/thpshrink-rules.test.yml"))["tests"]:
    for a in t.get("alert_rule_test", []):
        (firing if a["exp_alerts"] else quiet).add(a["alertname"])
for a in sorted(alerts):
    if a not in firing or a not in quiet:
        fails.append(f"{a}: tested firing {a in firing}, not firing {a in quiet}")
records = {r["record"] for r in rules if "record" in r}
for need in ("cgroup:thpshrink_waste_bytes:sum", "instance:thpshrink_waste_bytes:sum",
             "instance:thpshrink_given_back_bytes:increase1h", "cgroup:thpshrink_kube_pod_info:join",
             "pod:thpshrink_waste_bytes:sum", "namespace:thpshrink_waste_bytes:sum"):
    if need not in records:
        fails.append(f"no recording rule {need}")
for r in rules:
    for m in set(re.findall(r"(?<![:\w])thpshrink_[a-z_]+", r["expr"])):
        if f'"{m}"' not in src and not m.startswith("thpshrink_vmstat_"):
            fails.append(f"{r.get('alert') or r.get('record')}: {m} is not a metric of thpshrinkd")
for f in fails:
    print("FAIL:", f)
print(f"ok: {len(alerts)} alerts each tested firing and not firing, {len(records)} recording rules")
sys.exit(1 if fails else 0)
PY
