#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: thpshrinkd's promote step among hostile tenants at the issue's full size (issue 33:
# 190 processes of 32,000 VMAs each), in a VM: tests/vm/scenarios/45-promote.sh, whose CI run
# has 20 such processes. Prints the scenario's figures: SIGHUP and SIGTERM latency, the longest
# status.json gap, the scan's and the promote step's time per pass, and the re-collapse counts.
#   promote-daemon.sh [BUILDDIR] [KERNEL]     (KERNEL: k612 (default), k73)
# About 10 min of TCG per kernel; the guest gets 6 GiB (190 x 32,000 VMAs are ~2 GiB of kernel
# memory).
set -eu
B=${1:-${top_builddir:-$(pwd)}}
K=${2:-k612}
S=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mktemp -d /tmp/thps-bench-promote-daemon.XXXXXX)
THPS_VM_SCENARIOS=45-promote THPS_VM_OUTDIR=$OUT THPS_VM_MEM=${THPS_VM_MEM:-6G} \
	THPS_VM_APPEND="thps.pvprocs=${PVPROCS:-190} thps.pvvmas=${PVVMAS:-32000} thps.promote-hostile-only=1" THPS_VM_TIMEOUT=${THPS_VM_TIMEOUT:-2400} \
	top_builddir=$B "$S/vm/run-vm.sh" "$K" || true
grep -E 'hostile|# (vmas|retouch|[0-9]+ processes)' "$OUT/$K.result" "$OUT/$K.log" 2>/dev/null |
	sed 's/^[^:]*://' | sort -u
echo "full results: $OUT"
