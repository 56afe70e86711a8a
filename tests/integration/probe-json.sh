#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# thpshrink probe on the real host and on the fake kernel trees: the JSON validates against
# schemas/probe.schema.json, and its answers match what the files say.
set -u
bin="$top_builddir/thpshrink"
schema="$top_srcdir/schemas/probe.schema.json"
fx="$top_srcdir/tests/fixtures/kernel"
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

$py -c 'import jsonschema' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks jsonschema (python3-jsonschema)"; exit 77; }

validate() { # file
	$py - "$schema" "$1" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
doc = json.load(open(sys.argv[2]))
errs = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
for e in errs:
    print("schema: %s: %s" % ("/".join(map(str, e.path)), e.message))
sys.exit(1 if errs else 0)
PY
}
get() { # file python-expression-on-d
	$py -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# The real host.
"$bin" probe --json > "$tmp/host.json" || bad "probe --json exited $?"
validate "$tmp/host.json" || bad "host probe JSON does not validate"
[ "$(get "$tmp/host.json" 'd["kernel"]')" = "$(uname -r)" ] || bad "kernel is not uname -r"
T=/sys/kernel/mm/transparent_hugepage
if [ -r $T/khugepaged/max_ptes_none ]; then
	want=$(cat $T/khugepaged/max_ptes_none)
	[ "$(get "$tmp/host.json" 'd["max_ptes_none"]')" = "$want" ] || bad "max_ptes_none is not $want"
	want_risk=False; [ "$want" -ge 511 ] && want_risk=True
	[ "$(get "$tmp/host.json" 'd["recollapse_risk"]')" = "$want_risk" ] || bad "recollapse_risk is not $want_risk"
fi
mode=$(sed 's/.*\[\(.*\)\].*/\1/' $T/enabled)
[ "$(get "$tmp/host.json" '[f["value"] for f in d["findings"] if f["key"]=="thp.enabled"][0]')" = "$mode" ] ||
	bad "thp.enabled is not '$mode'"
# The memory hierarchy: v2 with memory if some cgroup2 mount lists it, else v1 if mounted.
want_v=0
while read -r _ mnt fs _; do
	case "$fs" in
	cgroup2) grep -qw memory "$mnt/cgroup.controllers" 2>/dev/null && want_v=2 ;;
	esac
done < /proc/mounts
[ $want_v = 0 ] && awk '$3=="cgroup" && $4 ~ /(^|,)memory(,|$)/ {f=1} END {exit !f}' /proc/mounts && want_v=1
[ "$(get "$tmp/host.json" 'd["cgroup_version"]')" = "$want_v" ] || bad "cgroup_version is not $want_v"
if [ $want_v != 2 ]; then
	[ "$(get "$tmp/host.json" 'd["can_reclaim"]')" = False ] || bad "can_reclaim without cgroup v2 memory"
	"$bin" probe | grep -q "read-only reporting" || bad "text output does not say read-only reporting"
fi
"$bin" probe > "$tmp/host.txt" || bad "probe exited $?"
[ "$(grep -c '^\(ok\|--\) ' "$tmp/host.txt")" -ge 12 ] || bad "text output has fewer than 12 findings"
"$bin" probe --bogus 2>/dev/null; [ $? = 2 ] || bad "an unknown option does not exit 2"

# The fake trees, through the environment overrides.
for k in k612 k61 rfc v1host; do
	THPSHRINK_PROC_ROOT=$fx/$k/proc THPSHRINK_SYS_ROOT=$fx/$k/sys \
	THPSHRINK_CGROUP_ROOT=$fx/$k/cgroup THPSHRINK_DEBUGFS_ROOT=$fx/$k/debug \
		"$bin" probe --json > "$tmp/$k.json" || bad "$k: probe exited $?"
	validate "$tmp/$k.json" || bad "$k: JSON does not validate"
done
[ "$(get "$tmp/k612.json" 'd["split_kind"], d["can_reclaim"], d["recollapse_risk"]')" = "upstream True True" ] || bad "k612 answers"
[ "$(get "$tmp/k61.json" 'd["split_frees_zero_subpages"]')" = False ] || bad "k61 says splits free zero subpages"
[ "$(get "$tmp/rfc.json" 'd["split_kind"], d["thp_utilization"]["buckets"][0]["thps"]')" = "rfc 1331" ] || bad "rfc answers"
[ "$(get "$tmp/v1host.json" 'd["cgroup_version"], d["can_reclaim"]')" = "1 False" ] || bad "v1host answers"

# A schema that rejects nothing would pass all of the above: it must reject a broken document.
$py -c "import json,sys; d=json.load(open(sys.argv[1])); d['findings'][0]['ok']='yes'; json.dump(d, open(sys.argv[2],'w'))" \
	"$tmp/k612.json" "$tmp/broken.json"
validate "$tmp/broken.json" >/dev/null && bad "the schema accepts a string for a finding's ok"

[ $fail = 0 ] && echo "probe JSON valid on the host ($(uname -r)) and on 4 fake trees"
exit $fail
