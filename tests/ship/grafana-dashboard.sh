#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# deploy/grafana/thpshrink.json: a Grafana dashboard with waste per cgroup, the utilization
# histogram as a heatmap and the bytes given back over time; panel ids and grid positions
# unique; every query reads metrics thpshrinkd exports or the rules record; variables defined.
set -eu
: "${top_srcdir:?}"
exec python3 - "$top_srcdir" <<'PY'
import json, re, sys, yaml
top = sys.argv[1]
d = json.load(open(top + "/deploy/grafana/thpshrink.json"))
src = open(top + "/controller/daemon/metrics.c").read()
records = {r["record"] for g in yaml.safe_load(open(top + "/deploy/prometheus/thpshrink-rules.yml"))["groups"]
           for r in g["rules"] if "record" in r}
fails = []
def check(c, what):
    print(("ok: " if c else "FAIL: ") + what)
    if not c:
        fails.append(what)
check(d.get("uid") == "thpshrink" and d.get("title"), "uid and title")
check(isinstance(d.get("schemaVersion"), int) and d["schemaVersion"] >= 30, f"schemaVersion {d.get('schemaVersion')}")
panels = d.get("panels", [])
ids = [p.get("id") for p in panels]
check(len(ids) == len(set(ids)) and None not in ids, f"unique panel ids {ids}")
cells = set()
overlap = False
for p in panels:
    g = p["gridPos"]
    check(0 <= g["x"] and g["x"] + g["w"] <= 24, f"panel {p['id']} fits the 24-column grid")
    for x in range(g["x"], g["x"] + g["w"]):
        for y in range(g["y"], g["y"] + g["h"]):
            overlap |= (x, y) in cells
            cells.add((x, y))
check(not overlap, "panels do not overlap")
variables = {v["name"] for v in d.get("templating", {}).get("list", [])}
def exprs(p):
    return [t.get("expr", "") for t in p.get("targets", [])]
for p in panels:
    check(p.get("targets") and all(exprs(p)), f"panel {p['id']} '{p['title']}' has queries")
    for e in exprs(p):
        for m in set(re.findall(r"(?<![\w])[a-z_]*:?thpshrink_[a-z_:0-9]+", e)):
            known = m in records or f'"{m}"' in src
            check(known, f"panel {p['id']}: {m} is exported or recorded")
        for v in re.findall(r"\$(\w+)", e):
            check(v in variables, f"panel {p['id']}: variable ${v} is defined")
def panel(kind, metric):
    return [p for p in panels if p["type"] == kind and any(metric in e for e in exprs(p))]
check(panel("timeseries", "waste_bytes"), "a time series of waste per cgroup")
hm = panel("heatmap", "thpshrink_cgroup_thps")
check(hm and all(t.get("format") == "heatmap" and "bucket" in t.get("legendFormat", "") for t in hm[0]["targets"]),
      "the utilization histogram as a heatmap by bucket")
check(panel("timeseries", "given_back"), "a time series of bytes given back")
check(panel("timeseries", "namespace:thpshrink_waste_bytes:sum"), "a time series of waste per Kubernetes namespace")
check("datasource" in variables, "a datasource variable")
print(f"grafana-dashboard: {len(fails)} failure(s)")
sys.exit(1 if fails else 0)
PY
