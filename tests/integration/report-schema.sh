#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The report's JSON against schemas/report.schema.json: every golden file, a live
# `thpshrink report --json` when run as root, and broken documents that must be rejected
# (so that this check can fail).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
PY=/usr/bin/python3
SCHEMA=$top_srcdir/schemas/report.schema.json
GOLDEN=$top_srcdir/tests/fixtures/report

if ! $PY -c 'import jsonschema' 2>/dev/null; then
	echo "SKIP: $PY has no jsonschema module (apt-get install python3-jsonschema)"
	exit 77
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

live=""
if [ "$(id -u)" = 0 ] && [ -x "$top_builddir/thpshrink" ]; then
	if "$top_builddir/thpshrink" report --json >"$tmp/live.json" 2>"$tmp/live.err"; then
		live=$tmp/live.json
	else
		echo "FAIL: 'thpshrink report --json' as root exited $?:"
		cat "$tmp/live.err"
		exit 1
	fi
else
	echo "note: no live run (needs root and a built thpshrink); validating the golden files only"
fi

$PY - "$SCHEMA" "$GOLDEN" $live <<'PYEOF'
import copy, glob, json, os, sys
import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
fail = 0

docs = sorted(glob.glob(os.path.join(sys.argv[2], "*.json"))) + sys.argv[3:]
if len(docs) < 2:
    print("FAIL: expected golden JSON files in", sys.argv[2]); sys.exit(1)
for path in docs:
    doc = json.load(open(path))
    errs = list(v.iter_errors(doc))
    for e in errs:
        print("FAIL: %s: %s: %s" % (path, "/".join(map(str, e.absolute_path)), e.message))
    fail |= bool(errs)
    if not errs:
        print("ok: %s conforms" % path)

base = json.load(open(os.path.join(sys.argv[2], "multi.json")))
def mutate(f):
    d = copy.deepcopy(base); f(d); return d
bad = {
    "unknown top-level key": mutate(lambda d: d.update(extra=1)),
    "missing total": mutate(lambda d: d.pop("total")),
    "negative waste_bytes": mutate(lambda d: d["cgroups"][0].update(waste_bytes=-1)),
    "bytes as a string": mutate(lambda d: d["total"].update(waste_bytes="40M")),
    "fractional THP count": mutate(lambda d: d["total"]["buckets"][0].update(thps=1.5)),
    "nine buckets": mutate(lambda d: d["total"]["buckets"].pop()),
    "unknown bucket key": mutate(lambda d: d["cgroups"][0]["buckets"][0].update(label="0-50")),
    "bucket 10": mutate(lambda d: d["cgroups"][0]["buckets"][9].update(bucket=10)),
    "unusable source without reason": mutate(lambda d: d["sources"][1].update(reason=None)),
    "cgroup filter not a path": mutate(lambda d: d["filter"].update(cgroup="system.slice")),
    "schema_version 2": mutate(lambda d: d.update(schema_version=2)),
    "pod_uid with underscores": mutate(lambda d: d["cgroups"][0].update(kubernetes={
        "pod_uid": "0f6e2a4c_1b3d_4e5f_8a9b_0c1d2e3f4a5b", "container_id": None,
        "qos_class": "burstable"})),
    "qos_class BestEffort": mutate(lambda d: d["cgroups"][0].update(kubernetes={
        "pod_uid": "0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b", "container_id": None,
        "qos_class": "BestEffort"})),
    "short container_id": mutate(lambda d: d["cgroups"][0].update(kubernetes={
        "pod_uid": "0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b", "container_id": "abc",
        "qos_class": "burstable"})),
    "identity namespace upper-case": mutate(lambda d: d["cgroups"][0].update(identity={
        "namespace": "Batch"})),
    "identity empty": mutate(lambda d: d["cgroups"][0].update(identity={})),
    "identity unknown key": mutate(lambda d: d["cgroups"][0].update(identity={
        "namespace": "batch", "uid": "x"})),
    "identity 17 labels": mutate(lambda d: d["cgroups"][0].update(identity={
        "labels": {"k%d" % i: "v" for i in range(17)}})),
    "identity label value with a slash": mutate(lambda d: d["cgroups"][0].update(identity={
        "labels": {"tier": "a/b"}})),
}
for name, doc in bad.items():
    if v.is_valid(doc):
        print("FAIL: schema accepts a document with %s" % name); fail = 1
    else:
        print("ok: rejected: %s" % name)
sys.exit(1 if fail else 0)
PYEOF
