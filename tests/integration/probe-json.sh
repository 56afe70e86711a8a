#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# thpshrink probe on the real host and on the fake kernel trees: the JSON validates against
# schemas/probe.schema.json (without python3-jsonschema: parsed only, and a SKIP line says so),
# and its answers match what the files say.
set -u
bin="$top_builddir/thpshrink"
schema="$top_srcdir/schemas/probe.schema.json"
fx="$top_srcdir/tests/fixtures/kernel"
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

[ -x "$py" ] || { echo "SKIP: $py is missing (Debian package python3)"; exit 77; }
# Only the schema validation needs jsonschema: without it the answers are still checked.
has_jsonschema=1
$py -c 'import jsonschema' 2>/dev/null || has_jsonschema=0

validate() { # file
	if [ $has_jsonschema = 0 ]; then
		[ -n "${said_schema:-}" ] ||
			echo "SKIP: schema: $py lacks jsonschema (python3-jsonschema): the JSON is parsed and its answers checked, not validated"
		said_schema=1
		$py -c 'import json, sys; json.load(open(sys.argv[1]))' "$1"
		return
	fi
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
	# Without cgroup v2 only process_madvise can act (per process): the verdict says which.
	want_mode="read-only reporting"
	[ "$(get "$tmp/host.json" 'd["have_split_pmadvise"]')" = True ] && want_mode="exact splits via process_madvise"
	"$bin" probe --no-measure | grep -q "^mode: $want_mode" || bad "text output does not say '$want_mode'"
fi
"$bin" probe > "$tmp/host.txt" || bad "probe exited $?"
[ "$(grep -c '^\(ok\|--\) ' "$tmp/host.txt")" -ge 12 ] || bad "text output has fewer than 12 findings"
"$bin" probe --bogus 2>/dev/null; [ $? = 2 ] || bad "an unknown option does not exit 2"

# The measured probe on the host (root with CAP_SYS_NICE, PMD THPs allocated): canary folios
# of its own child split by process_madvise(MADV_COLD) on one page free >= 95 % of a sparse
# folio's zero bytes (>= 6.12; by the child's RssAnon without a scratch cgroup) and of a
# partially mapped folio's unmapped bytes (any kernel; by kpageflags without a scratch cgroup).
capeff=$(awk '$1=="CapEff:" {print $2}' /proc/self/status)
pmd=$(cat $T/hpage_pmd_size 2>/dev/null || echo 0)
if [ "$(id -u)" != 0 ] || [ $(( 0x${capeff:-0} >> 23 & 1 )) != 1 ]; then
	echo "SKIP: measured process_madvise: not root with CAP_SYS_NICE: the measured process_madvise figures are not checked"
else
	"$bin" probe --json --measure > "$tmp/measured.json" || bad "probe --json --measure exited $?"
	validate "$tmp/measured.json" || bad "measured probe JSON does not validate"
	"$bin" probe --measure > "$tmp/measured.txt" || bad "probe --measure exited $?"
	figs=$(get "$tmp/measured.json" "' '.join(str(x) for s in d['measured']['sizes'] if s['size'] == $pmd for x in (s['cold_freed_pct'], s['cold_partial_freed_pct'], s['mechanism'], s['cold_folios'], s['cold_partial_folios']))")
	if [ -z "$figs" ]; then
		echo "note: no PMD-size canary measured here ($(get "$tmp/measured.json" 'd["measured"]["why"] or "THP never for that size"'))"
	else
		set -- $figs
		echo "host PMD canaries: process_madvise(MADV_COLD) freed $1 % of sparse zero bytes ($4 folios), $2 % of partially mapped unmapped bytes ($5 folios); mechanism $3"
		[ "$1" != None ] && [ "$1" -ge 95 ] || bad "host PMD sparse COLD split freed $1 % of the zero bytes (want >= 95)"
		[ "$2" != None ] && [ "$2" -ge 95 ] || bad "host PMD partial COLD split freed $2 % of the unmapped bytes (want >= 95)"
		[ "$3" = process_madvise ] || bad "host PMD mechanism is $3 (want process_madvise)"
		[ "$(get "$tmp/measured.json" 'd["split_mechanism"], d["split_mechanism_measured"]')" = "process_madvise True" ] ||
			bad "the probe's split mechanism is not the measured process_madvise"
		grep -q "^mode: exact splits via process_madvise" "$tmp/measured.txt" || bad "the verdict does not say exact splits via process_madvise"
		grep -q "splits by process_madvise" "$tmp/measured.txt" || bad "the text does not print the size's mechanism"
	fi
fi

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
# CapEff in the trees: v1host has CAP_SYS_NICE, k61 has not, k612 has no status file
[ "$(get "$tmp/v1host.json" 'd["have_split_pmadvise"], d["split_mechanism"], d["mode"]')" = \
  "True process_madvise exact splits via process_madvise; per process: cgroup v1 figures are read-only" ] || bad "v1host split mechanism"
[ "$(get "$tmp/k61.json" 'd["have_split_pmadvise"], d["split_mechanism"]')" = "False debugfs" ] || bad "k61 split mechanism"

# A schema that rejects nothing would pass all of the above: it must reject a broken document.
$py -c "import json,sys; d=json.load(open(sys.argv[1])); d['findings'][0]['ok']='yes'; json.dump(d, open(sys.argv[2],'w'))" \
	"$tmp/k612.json" "$tmp/broken.json"
[ $has_jsonschema = 0 ] || ! validate "$tmp/broken.json" >/dev/null || bad "the schema accepts a string for a finding's ok"

[ $fail = 0 ] && echo "probe JSON right on the host ($(uname -r)) and on 4 fake trees (schema checked: $has_jsonschema)"
exit $fail
