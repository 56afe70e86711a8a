# SPDX-License-Identifier: GPL-2.0-or-later
# 20-report: `thpshrink report` on a real kernel with cgroup v2: the exact table of a known mix
# in its cgroup, memory.current/anon_thp from the vmstat source, partly mapped THPs, the
# kernel's own histogram beside the total on the RFC kernel (null elsewhere), and the sources
# line. The guest has no python: the checks grep the text and the JSON.
cg=$(vm_cgroup_new rep-a)
out=/tmp/report.out
if ! vm_bloat_start "$cg" --mix 0:8,51:4,52:2,512:4 --partial 100:2; then
	vm_fail report-bloat "thpshrink-bloat did not start: $(cat "$BLOAT_LOG")"
	return 0 2>/dev/null || exit 0
fi
pid=$BLOAT_PID

if thpshrink report --cgroup /rep-a > "$out" 2>&1; then
	vm_check report-row-0-51 "$(grep '^  0-51 ' "$out")" grep -Eq '^  0-51 +12 +5940$' "$out"
	vm_check report-row-52-102 "$(grep '^  52-102 ' "$out")" grep -Eq '^  52-102 +2 +920$' "$out"
	vm_check report-row-461-512 "$(grep '^  461-512 ' "$out" | head -1)" grep -Eq '^  461-512 +4 +0$' "$out"
	vm_check report-partial "$(grep 'partially mapped' "$out" | head -1)" \
		grep -Eq '^  partially mapped THPs +2$' "$out"
	vm_check report-memstat "$(grep 'memory.current' "$out" | head -1)" \
		grep -Eq '^  memory.current +[0-9.]+ [KMG]iB \([0-9]+ bytes\)$' "$out"
	vm_check report-sources "$(grep '^sources:' "$out")" grep -q '^sources: scanner: usable; ' "$out"
else
	vm_fail report-text "thpshrink report --cgroup /rep-a failed: $(cat "$out")"
fi

if thpshrink report --json --cgroup /rep-a > "$out" 2>&1; then
	vm_check report-json-path "$(grep -c '"path": "/rep-a"' "$out") cgroup object(s)" \
		grep -q '"path": "/rep-a"' "$out"
	vm_check report-json-bucket0 "$(grep '"bucket": 0,' "$out" | head -1)" \
		grep -q '{"bucket": 0, "lo": 0, "hi": 51, "thps": 12, "zero_subpages": 5940}' "$out"
	vm_check report-json-memstat "$(grep '"memory_current"' "$out" | head -1)" \
		grep -Eq '"memory_current": [0-9]+,' "$out"
	case $THPS_KCLASS in
	rfc) vm_check report-kernel-hist "$(grep '"kernel_hist"' "$out")" grep -q '"kernel_hist": {' "$out" ;;
	*) vm_check report-kernel-hist "$(grep '"kernel_hist"' "$out") (no RFC patches)" \
		grep -q '"kernel_hist": null' "$out" ;;
	esac
else
	vm_fail report-json "thpshrink report --json failed: $(cat "$out")"
fi

# the whole machine: the cgroup is there, and the scan summary line
if thpshrink report > "$out" 2>&1; then
	vm_check report-all "$(grep '^scan:' "$out")" grep -q '^cgroup /rep-a ' "$out"
	sed 's/^/# /' "$out"
else
	vm_fail report-all "thpshrink report failed: $(cat "$out")"
fi
vm_bloat_stop "$pid"
rmdir "$cg" 2>/dev/null
