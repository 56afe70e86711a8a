#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# thpshrink-nri against a fake runtime (tests/tools/nri-fake-runtime.py, NRI's wire format
# written in Python from NRI's and ttrpc's sources): registration, Configure, Synchronize,
# CreateContainer, StartContainer, StopContainer, RemoveContainer give the registrations the
# OCI hook would write, with the pod's namespace, name, UID, labels and the container's name;
# they validate against schemas/registration.schema.json. Hostile frames (oversized, truncated,
# an unknown method, undecodable, a chunk over NRI's bound) and an unwritable registrations
# directory never stop the plugin nor fail a call; it reconnects when the runtime goes away,
# and exits 0 on SIGTERM. No containerd, no root: everything lives in a temp dir.
. "$top_srcdir/tests/integration/lib.sh"
NRI=$top_builddir/thpshrink-nri
[ -x "$NRI" ] || skip "thpshrink-nri not built (configure found no libprotobuf-c/protoc-c)"
need_python
THPS_KILL="PPID_NRI RPID"
thps_tmpdir nri
regs=$T/regs
mkdir -p "$regs"

"$NRI" --socket "$T/nri.sock" --registrations-dir "$regs" --backoff-max 1 >"$T/plugin.log" 2>&1 &
PPID_NRI=$!
# The plugin starts first and waits for the runtime, as after a node's reboot.
sleep 0.3
kill -0 "$PPID_NRI" 2>/dev/null || { cat "$T/plugin.log"; fail "thpshrink-nri exited at start"; }
"$PY" "$top_srcdir/tests/tools/nri-fake-runtime.py" "$T/nri.sock" "$regs" "$PPID_NRI" >"$T/out" 2>&1
rrc=$?
cat "$T/out"
fails=$(grep -c '^FAIL' "$T/out")
[ "$rrc" = 0 ] || [ "$fails" -gt 0 ] || flunk "the fake runtime exited $rrc"
n_ok=$(grep -c '^ok:' "$T/out")
[ "$n_ok" -ge 30 ] || flunk "the fake runtime made $n_ok checks, expected at least 30"

# What the plugin wrote is a registration the daemon reads: the schema and the C reader agree.
if "$PY" -c 'import jsonschema' 2>/dev/null; then
	for f in "$regs"/*.json; do
		check schema "$(basename "$f") validates against registration.schema.json" \
			"$PY" -c 'import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))' \
			"$top_srcdir/schemas/registration.schema.json" "$f"
	done
else
	echo "SKIP: schema: python3-jsonschema is missing, the registrations are not validated against the schema"
fi
check log "the plugin logged the unwritable registrations directory" \
	grep -q "failed to write its registration\|cannot create" "$T/plugin.log"
check log "the plugin logged the unknown method with its name bounded" \
	grep -q "unknown call 'nri.pkg.api.v1alpha1.Plugin/Frobnicate'" "$T/plugin.log"

kill -0 "$PPID_NRI" 2>/dev/null || fail "thpshrink-nri died (log: $(tail -3 "$T/plugin.log"))"
kill -TERM "$PPID_NRI"
i=0
while kill -0 "$PPID_NRI" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
wait "$PPID_NRI"
rc=$?
PPID_NRI=
check sigterm "thpshrink-nri exits 0 on SIGTERM (status $rc)" [ "$rc" = 0 ]
[ "$fails" -gt 0 ] && sed 's/^/  plugin: /' "$T/plugin.log" | tail -40
exit $((fails > 0))
