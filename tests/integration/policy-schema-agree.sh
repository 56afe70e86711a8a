#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The C validator (`thpshrink validate`) and Python's jsonschema with schemas/policy.schema.json
# must agree on the corpus under tests/fixtures/policy:
#   good/        both accept;
#   bad/         both reject; thpshrink's messages equal bad/NAME.expect (file:line:col: path);
#   bad-c-only/  thpshrink rejects (messages equal NAME.expect) and the schema accepts: what a
#                JSON Schema cannot say (duplicate keys, names unique within/across files, the
#                range of sizes/durations written as strings, NaN, NUL in strings). If the
#                schema starts rejecting one, move it to bad/.
#   deploy/policies/  both accept, and the directory loads as one set.
# Set THPS_UPDATE_EXPECT=1 to rewrite the .expect files (then review the diff).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
top_srcdir=$(cd "$top_srcdir" && pwd) top_builddir=$(cd "$top_builddir" && pwd)
PY=/usr/bin/python3
THPS="$top_builddir/thpshrink"
FIX="$top_srcdir/tests/fixtures/policy"
SCHEMA="$top_srcdir/schemas/policy.schema.json"
fail=0

if ! "$PY" -c 'import jsonschema' 2>/dev/null; then
	echo "SKIP: $PY has no jsonschema module (Debian package python3-jsonschema)"
	exit 77
fi
[ -x "$THPS" ] || { echo "FAIL: $THPS not built"; exit 1; }

# Prints "ACCEPT FILE" or "REJECT FILE: reason" per file; "ERROR" lines when the check itself
# fails, so that a broken checker cannot pass.
schema_check() {
	n=$#
	res=$(schema_run "$@" 2>&1)
	printf '%s\n' "$res"
	[ "$(printf '%s\n' "$res" | grep -c '^ACCEPT \|^REJECT ')" -eq "$n" ] || echo "ERROR checker printed: $res"
}
schema_run() {
	"$PY" - "$SCHEMA" "$@" <<'PYEOF'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1], encoding="utf-8"))
jsonschema.Draft7Validator.check_schema(schema)
v = jsonschema.Draft7Validator(schema)
for f in sys.argv[2:]:
    try:
        with open(f, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (ValueError, UnicodeDecodeError) as e:
        print("REJECT %s: not JSON: %s" % (f, str(e).splitlines()[0]))
        continue
    errs = list(v.iter_errors(doc))
    if errs:
        print("REJECT %s: %s" % (f, errs[0].message[:120]))
    else:
        print("ACCEPT %s" % f)
PYEOF
}

tmpkeys=$(mktemp)
trap 'rm -f "$tmpkeys"' EXIT
"$THPS" validate --keys >"$tmpkeys" || { echo "FAIL: validate --keys"; exit 1; }
cd "$FIX" || exit 1
n_good=0 n_bad=0 n_conly=0

for f in good/*.json; do
	n_good=$((n_good + 1))
	if ! out=$("$THPS" validate "$f" 2>&1); then
		echo "FAIL: thpshrink rejects good file $f:"; echo "$out"; fail=1
	fi
done
out=$("$THPS" validate good/full.json good/empty-list.json 2>&1)
if [ "$out" != "good/full.json: 2 policies OK
good/empty-list.json: 0 policies OK" ]; then
	echo "FAIL: thpshrink validate output for good files: $out"; fail=1
fi
# A deprecated key loads (an operator's old file keeps working) and is named in a warning.
err=$("$THPS" validate good/deprecated-key.json 2>&1 >/dev/null)
rc=$?
out=$("$THPS" validate good/deprecated-key.json 2>/dev/null)
if [ $rc -ne 0 ] || [ "$out" != "good/deprecated-key.json: 1 policies OK" ] ||
	[ "$err" != "warning: good/deprecated-key.json:7:27: policies[0].max_thps_per_sec: deprecated and ignored: the daemon's --max-thps-per-sec bounds the scan of every cgroup; remove this key" ]; then
	echo "FAIL: validate of a deprecated key (exit $rc): $out / $err"; fail=1
fi
out=$("$THPS" validate good/minimal.json good/minimal.json 2>&1)
[ $? -eq 1 ] || { echo "FAIL: the same policy name in two files given must fail"; fail=1; }
case "$out" in
*'good/minimal.json:1:11: name: duplicate policy name "minimal" (first defined at good/minimal.json:1:11)'*) ;;
*) echo "FAIL: no duplicate-name message across files: $out"; fail=1 ;;
esac
"$THPS" validate good/full.json bad/mode-enum.json >/dev/null 2>&1
[ $? -eq 1 ] || { echo "FAIL: validate of a good and a bad file must exit 1"; fail=1; }
for line in $(schema_check good/*.json | sed 's/ /|/g'); do
	case "$line" in ACCEPT*) ;; *) echo "FAIL: jsonschema: $line" | tr '|' ' '; fail=1 ;; esac
done

check_expect() { # FILE-or-DIR EXPECT
	out=$("$THPS" validate "$1" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -ne 1 ]; then
		echo "FAIL: thpshrink validate $1 exited $rc, expected 1"; fail=1; return
	fi
	if [ "${THPS_UPDATE_EXPECT:-0}" = 1 ]; then
		printf '%s\n' "$out" >"$2"
	fi
	if ! printf '%s\n' "$out" | diff -u "$2" - >/dev/null 2>&1; then
		echo "FAIL: messages for $1 differ from $2:"
		printf '%s\n' "$out" | diff -u "$2" -; fail=1
	fi
	case "$out" in
	"$1":[0-9]*:[0-9]*:* | "$1"/*.json:[0-9]*:[0-9]*:*) ;;
	*) echo "FAIL: first message for $1 does not start with '$1:LINE:COL:': $out"; fail=1 ;;
	esac
}

for f in bad/*.json; do
	n_bad=$((n_bad + 1))
	check_expect "$f" "${f%.json}.expect"
done
for line in $(schema_check bad/*.json | sed 's/ /|/g'); do
	case "$line" in REJECT*) ;; *) echo "FAIL: jsonschema accepts bad file: $line" | tr '|' ' '; fail=1 ;; esac
done

for f in bad-c-only/*.json bad-c-only/*/; do
	f=${f%/}
	n_conly=$((n_conly + 1))
	check_expect "$f" "${f%.json}.expect"
done
for line in $(schema_check bad-c-only/*.json bad-c-only/*/*.json | sed 's/ /|/g'); do
	case "$line" in
	ACCEPT*) ;;
	*) echo "FAIL: jsonschema now rejects a C-only case, move it to bad/: $line" | tr '|' ' '; fail=1 ;;
	esac
done

# The shipped examples: each file and the whole directory.
cd "$top_srcdir/deploy/policies" || exit 1
for line in $(schema_check ./*.json | sed 's/ /|/g'); do
	case "$line" in ACCEPT*) ;; *) echo "FAIL: jsonschema: $line" | tr '|' ' '; fail=1 ;; esac
done
if ! out=$("$THPS" validate ./*.json . 2>&1); then
	echo "FAIL: thpshrink rejects deploy/policies:"; echo "$out"; fail=1
fi
echo "$out"

# The README's key table is the output of the C table, not a copy that drifts.
if ! sed -n '/^## Keys/,$p' README.md | sed '1,/^```$/d; /^```$/,$d' | diff -u - "$tmpkeys"; then
	echo "FAIL: deploy/policies/README.md key table differs from 'thpshrink validate --keys'"
	fail=1
fi

echo "checked: $n_good good, $n_bad bad, $n_conly C-only cases, deploy/policies"
[ $fail -eq 0 ] && echo "PASS: C validator and jsonschema agree"
exit $fail
