#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The built thpshrink-oci-hook against hostile input: whatever arrives on stdin or in the
# annotations, it exits 0 (a hook must never fail a container) and writes nothing outside its
# registrations directory. Plus the happy path: a fake bundle and a live pid give a registration
# that validates against schemas/registration.schema.json (without python3-jsonschema only its
# fields are checked, and the log says SKIP for the schema), and poststop removes it.
set -u
hook=${top_builddir:-.}/thpshrink-oci-hook
schema=${top_srcdir:-..}/schemas/registration.schema.json
PY=/usr/bin/python3
[ -x "$hook" ] || { echo "SKIP: $hook not built"; exit 77; }
[ -x "$PY" ] || { echo "SKIP: $PY is missing (Debian package python3)"; exit 77; }
# Only the registration's schema validation needs jsonschema; every other case runs without it.
has_jsonschema=1
$PY -c 'import jsonschema' 2>/dev/null || has_jsonschema=0

T=$(mktemp -d "${TMPDIR:-/tmp}/oci-hook.XXXXXX")
trap 'umount -l "$T/ro" "$T/full" 2>/dev/null; rm -rf "$T"' EXIT
regs=$T/a/regs
mkdir -p "$regs" "$T/bundle"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok: $*"; }
snapshot() { (cd "$T" && find . -path ./a/regs -prune -o -print | LC_ALL=C sort); }
before=$(snapshot)

# run NAME EXPECTED_RC STDIN_FILE ARGS...: the hook's exit status must be EXPECTED_RC
# ("nz" = non-zero), nothing may change outside $regs.
run() {
	local name=$1 want=$2 in=$3 rc
	shift 3
	"$hook" --registrations-dir "$regs" "$@" < "$in" > "$T.out" 2> "$T.err"
	rc=$?
	if [ "$want" = nz ]; then [ "$rc" -ne 0 ]; else [ "$rc" -eq "$want" ]; fi ||
		fail "$name: exit $rc, expected $want; stderr: $(head -c 400 "$T.err")"
	[ "$(snapshot)" = "$before" ] || fail "$name: files changed outside the registrations dir: $(diff <(echo "$before") <(snapshot) | head -5)"
	if [ "$rc" = "$want" ] || { [ "$want" = nz ] && [ "$rc" -ne 0 ]; }; then pass "$name (exit $rc): $(head -c 160 "$T.err" | tr '\n' ' ')"; fi
}
regs_empty() { [ -z "$(ls -A "$regs")" ] || fail "$1: registrations dir not empty: $(ls -A "$regs")"; }
state() { # ID PID BUNDLE ANNOTATIONS-JSON [STATUS]
	printf '{"ociVersion":"1.0.2","id":"%s","status":"%s","pid":%s,"bundle":"%s","annotations":%s}\n' \
		"$1" "${5:-created}" "$2" "$3" "$4" > "$T.state"
	echo "$T.state"
}
printf '{"ociVersion":"1.0.2","linux":{"cgroupsPath":"machine.slice:thps:fake"}}\n' > "$T/bundle/config.json"
before=$(snapshot)

# --- hostile stdin
head -c $((10 * 1024 * 1024)) /dev/zero | tr '\0' 'a' > "$T.huge"
run huge-stdin 0 "$T.huge" createRuntime
grep -q "larger than" "$T.err" || fail "huge-stdin: no log line saying why"
run huge-stdin-strict nz "$T.huge" --strict createRuntime
$PY -c 'import sys; sys.stdout.write("["*100000 + "]"*100000)' > "$T.deep"
run deep-json 0 "$T.deep" createRuntime
$PY -c 'import sys; sys.stdout.write("{\"ociVersion\":\"1\",\"id\":\"a\",\"x\":" + "["*100000 + "]"*100000 + "}")' > "$T.deep2"
run deep-json-in-state 0 "$T.deep2" createRuntime
# 30000 levels in 60 KB: under the size limit, so the tokener's depth limit must stop it
$PY -c 'import sys; sys.stdout.write("{\"ociVersion\":\"1\",\"id\":\"a\",\"x\":" + "["*30000 + "]"*30000 + "}")' > "$T.deep3"
run deep-json-under-size-limit 0 "$T.deep3" createRuntime
grep -q "not a valid OCI state" "$T.err" || fail "deep-json-under-size-limit: expected a parse error, got: $(cat "$T.err")"
regs_empty deep-json
printf '{"ociVersion":"1.0.2","id":"c\xff\xfe","status":"created","pid":0,"bundle":"%s"}' "$T/bundle" > "$T.utf8"
run non-utf8-id 0 "$T.utf8" createRuntime
printf '{"ociVersion":"1.0.2","id":"c1","status":"created","pid":0,"bundle":"%s","annotations":{"io.thpshrink.policy":"p\xc3\x28"}}' "$T/bundle" > "$T.utf8b"
run non-utf8-annotation 0 "$T.utf8b" createRuntime
regs_empty non-utf8
printf '{"ociVersion":"1.0.2","id":"c1",' > "$T.trunc"
run truncated 0 "$T.trunc" createRuntime
run truncated-strict nz "$T.trunc" --strict createRuntime
: > "$T.empty"
run empty-stdin 0 "$T.empty" poststart
run unknown-stage 0 "$(state c1 0 "$T/bundle" '{}')" bogusStage
regs_empty malformed

# --- hostile ids: never a file, anywhere
for id in "../x" "../../escape" "/etc/thps-pwned" "a/b" ".." "." "" "$(printf 'a%.0s' $(seq 200))"; do
	run "id '${id:0:20}'" 0 "$(state "$id" 0 "$T/bundle" '{"io.thpshrink.policy":"p"}')" createRuntime
	run "id '${id:0:20}' strict" nz "$(state "$id" 0 "$T/bundle" '{"io.thpshrink.policy":"p"}')" --strict createRuntime
	run "id '${id:0:20}' poststop" 0 "$(state "$id" 0 "$T/bundle" '{}' stopped)" poststop
done
[ ! -e /etc/thps-pwned.json ] || fail "a registration was written to /etc"
regs_empty hostile-ids

# --- hostile policy names: ignored (logged), the container is still registered without a policy
for pol in "../x" "/etc" "a/b" ".." "x y" "$(printf 'p%.0s' $(seq 65))"; do
	run "policy '${pol:0:20}'" 0 "$(state c2 0 "$T/bundle" "{\"io.thpshrink.policy\":\"$pol\",\"io.thpshrink.mode\":\"/etc\"}")" createRuntime
	grep -q "ignoring" "$T.err" || fail "policy '$pol': no warning logged"
	[ -f "$regs/c2.json" ] && ! grep -q '"policy"' "$regs/c2.json" && ! grep -q '"mode"' "$regs/c2.json" ||
		fail "policy '$pol': expected c2.json without policy/mode: $(cat "$regs/c2.json" 2>&1)"
	rm -f "$regs/c2.json"
done

# --- a NUL or control character in an annotation (after JSON decoding): refused whole, never cut
# to "g-split"; logged without the value; the container still registered, with no policy
for pol in 'g-split\u0000x' 'g-split\u001f' 'g-split\u007f' '\u0000' 'g-split\u001b[2J'; do
	run "control '$pol'" 0 "$(state c2 0 "$T/bundle" "{\"io.thpshrink.policy\":\"$pol\",\"io.thpshrink.mode\":\"enforce\u0000\"}")" createRuntime
	grep -q "NUL or control character" "$T.err" || fail "control '$pol': no warning logged: $(cat "$T.err")"
	! grep -q "split\|$(printf '\033')" "$T.err" || fail "control '$pol': the log echoes the value: $(cat "$T.err")"
	[ -f "$regs/c2.json" ] && ! grep -q '"policy"' "$regs/c2.json" && ! grep -q '"mode"' "$regs/c2.json" ||
		fail "control '$pol': expected c2.json without policy/mode: $(cat "$regs/c2.json" 2>&1)"
	rm -f "$regs/c2.json"
done

# --- missing bundle, dead pid, bundle without cgroupsPath
run missing-bundle 0 "$(state c3 0 "$T/nonexistent" '{}')" createRuntime
grep -q "c3" "$T.err" || fail "missing-bundle: log does not name the container"
run missing-bundle-strict nz "$(state c3 0 "$T/nonexistent" '{}')" --strict createRuntime
run relative-bundle 0 "$(state c3 0 "bundle" '{}')" createRuntime
mkdir -p "$T/fifo-bundle"; mkfifo "$T/fifo-bundle/config.json"
before=$(snapshot)
if timeout 10 "$hook" --registrations-dir "$regs" createRuntime < "$(state c3 0 "$T/fifo-bundle" '{}')" 2> "$T.err"; then
	grep -q "not a regular file" "$T.err" && pass "config.json is a FIFO: exit 0 at once" || fail "fifo: $(cat "$T.err")"
else
	fail "config.json is a FIFO: the hook blocked or failed (rc=$?)"
fi
mkdir -p "$T/bundle2"; echo '{"ociVersion":"1.0.2","linux":{}}' > "$T/bundle2/config.json"
before=$(snapshot)
run no-cgroupspath 0 "$(state c3 0 "$T/bundle2" '{}')" createRuntime
regs_empty missing-bundle

# --- registrations dir absent (and not creatable), a file, read-only, full
regs_saved=$regs
regs=$T/nope/deeper/regs
run absent-dir 0 "$(state c4 0 "$T/bundle" '{}')" createRuntime
grep -q "c4" "$T.err" || fail "absent-dir: log does not name the container"
run absent-dir-strict nz "$(state c4 0 "$T/bundle" '{}')" --strict createRuntime
echo x > "$T/afile"; before=$(snapshot)
regs=$T/afile
run dir-is-a-file 0 "$(state c4 0 "$T/bundle" '{}')" createRuntime
regs=$regs_saved
if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
	mkdir -p "$T/ro" "$T/full"; before=$(snapshot)
	st=$(state c5 0 "$T/bundle" '{}')
	unshare -m sh -c "mount -t tmpfs -o ro,size=64k tmpfs '$T/ro' && exec '$hook' --registrations-dir '$T/ro' createRuntime" < "$st" 2> "$T.err"
	rc=$?
	[ $rc -eq 0 ] && grep -q "Read-only" "$T.err" && pass "read-only dir: exit 0: $(head -c 160 "$T.err")" ||
		fail "read-only dir: exit $rc: $(cat "$T.err")"
	unshare -m sh -c "mount -t tmpfs -o size=4k tmpfs '$T/full' && mkdir '$T/full/regs' && (dd if=/dev/zero of='$T/full/fill' bs=4k count=4 2>/dev/null; true) && exec '$hook' --registrations-dir '$T/full/regs' createRuntime" < "$st" 2> "$T.err"
	rc=$?
	[ $rc -eq 0 ] && grep -q "No space" "$T.err" && pass "full fs (ENOSPC): exit 0: $(head -c 160 "$T.err")" ||
		fail "full fs: exit $rc: $(cat "$T.err")"
	[ "$(snapshot)" = "$before" ] || fail "ro/full: files changed outside"
else
	echo "SKIP: read-only and ENOSPC: no mount namespace (unshare -m) here"
fi

# --- happy path: a live pid (this shell) → its cgroup v2 path; poststop removes it
before=$(snapshot)
expect_cg=$(sed -n 's/^0:://p' /proc/$$/cgroup)
[ -n "$expect_cg" ] || expect_cg=/machine.slice/thps-fake.scope
expect_st=$(sed 's/.*) //' /proc/$$/stat | cut -d' ' -f20)
run happy-createRuntime 0 "$(state web-1 $$ "$T/bundle" '{"io.thpshrink.policy":"redis","io.thpshrink.mode":"enforce"}')" createRuntime
f=$regs/web-1.json
if [ -f "$f" ]; then
	[ $has_jsonschema = 1 ] ||
		echo "SKIP: happy-schema: $PY lacks jsonschema (python3-jsonschema): the registration's fields are checked, not the schema"
	$PY - "$schema" "$f" "$expect_cg" "$$" "$expect_st" "$has_jsonschema" <<'PYEOF' || fail "happy: registration content: see above"
import json, sys
schema, f, cg, pid, st, validate = sys.argv[1:]
doc = json.load(open(f))
if validate == "1":
    import jsonschema
    jsonschema.validate(doc, json.load(open(schema)))
    print("ok: registration valid against the schema")
want = {"id": "web-1", "cgroup": cg, "pid": int(pid), "pid_start_time": int(st),
        "policy": "redis", "mode": "enforce", "status": "created", "stage": "createRuntime"}
bad = {k: (doc.get(k), v) for k, v in want.items() if doc.get(k) != v}
if bad:
    print("mismatch (got, want):", bad); sys.exit(1)
print("ok: registration fields:", json.dumps(doc, sort_keys=True))
PYEOF
	[ "$(stat -c %a "$f")" = 644 ] || fail "happy: mode $(stat -c %a "$f"), expected 644"
	ls -A "$regs" | grep -q '^\.' && fail "happy: temp file left behind: $(ls -A "$regs")"
else
	fail "happy: $f not written: $(cat "$T.err")"
fi
# pid 0 (no live process): the bundle's systemd cgroupsPath is used
run happy-bundle-path 0 "$(state web-2 0 "$T/bundle" '{"io.thpshrink.policy":"redis"}')" poststart
grep -q '"cgroup": *"/machine.slice/thps-fake.scope"' "$regs/web-2.json" 2>/dev/null ||
	fail "happy-bundle-path: expected cgroup /machine.slice/thps-fake.scope: $(cat "$regs/web-2.json" 2>&1)"
run happy-poststop 0 "$(state web-1 0 "$T/bundle" '{}' stopped)" poststop
[ ! -e "$f" ] || fail "poststop did not remove $f"
# no stage argument: the status decides
run status-stopped 0 "$(state web-2 0 "$T/bundle" '{}' stopped)"
[ ! -e "$regs/web-2.json" ] || fail "status=stopped did not remove web-2.json"
regs_empty happy-end

# --- CRI-O's Kubernetes identity annotations: recorded where they are Kubernetes names, each
# bad one dropped (logged without its value), the container registered either way
ann='{"io.kubernetes.pod.namespace":"batch","io.kubernetes.pod.name":"web-7d9f.x","io.kubernetes.pod.uid":"0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b","io.kubernetes.container.name":"app"}'
run k8s-identity 0 "$(state web-3 0 "$T/bundle" "$ann")" createRuntime
$PY - "$schema" "$regs/web-3.json" "$has_jsonschema" <<'PYEOF' || fail "k8s-identity: registration content: see above"
import json, sys
schema, f, validate = sys.argv[1:]
doc = json.load(open(f))
if validate == "1":
    import jsonschema
    jsonschema.validate(doc, json.load(open(schema)))
want = {"namespace": "batch", "pod": "web-7d9f.x",
        "pod_uid": "0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b", "container": "app"}
bad = {k: (doc.get(k), v) for k, v in want.items() if doc.get(k) != v}
if bad or "labels" in doc:
    print("mismatch (got, want):", bad, doc.get("labels")); sys.exit(1)
print("ok: identity recorded:", json.dumps({k: doc[k] for k in want}, sort_keys=True))
PYEOF
rm -f "$regs/web-3.json"
ann='{"io.kubernetes.pod.namespace":"Kube-System","io.kubernetes.pod.name":"a/../b","io.kubernetes.pod.uid":"x","io.kubernetes.container.name":"\u001b[2Japp"}'
run k8s-identity-hostile 0 "$(state web-3 0 "$T/bundle" "$ann")" createRuntime
[ "$(grep -c "is not a valid Kubernetes name, ignoring it" "$T.err")" -eq 3 ] &&
	grep -q "io.kubernetes.\* annotation holds a NUL or control character" "$T.err" ||
	fail "k8s-identity-hostile: expected 3 invalid names and 1 control character logged: $(cat "$T.err")"
! grep -q "Kube-System\|\.\./b\|$(printf '\033')" "$T.err" || fail "k8s-identity-hostile: the log echoes a value: $(cat "$T.err")"
[ -f "$regs/web-3.json" ] && ! grep -q '"namespace"\|"pod"\|"pod_uid"\|"container"' "$regs/web-3.json" ||
	fail "k8s-identity-hostile: expected web-3.json without identity: $(cat "$regs/web-3.json" 2>&1)"
rm -f "$regs/web-3.json"

echo "oci-hook-hostile: $fails failure(s)"
[ $fails -eq 0 ]
