#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# run-lanes.sh KERNEL...: run-vm.sh for each kernel, THPS_VM_JOBS boots at a time (default 1).
# A qemu TCG guest runs its vCPUs on one host thread (run-vm.sh: thread=single), so on a host
# with two cores two boots at once take about the time of the longer one. Kernels are dealt to
# the lanes in turn, in the order given (put the longest first); a lane boots its kernels one
# after another. Each line of a boot's output is prefixed with its kernel.
# Exit: 0 every boot passed; 1 one failed, or (CI=true) a kernel was skipped whole (run-vm.sh's
# 77: no qemu, no kernel image), which without CI is said and let through.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
export top_srcdir top_builddir
jobs=${THPS_VM_JOBS:-1}
case $jobs in '' | *[!0-9]* | 0) echo "run-lanes.sh: THPS_VM_JOBS: expected a number >= 1, got '$jobs'"; exit 2 ;; esac
status=$(mktemp -d /tmp/thps-lanes.XXXXXX)
trap 'rm -rf "$status"' EXIT

lane() { # KERNEL...
	for _k in "$@"; do
		bash "$top_srcdir/tests/vm/run-vm.sh" "$_k" 2>&1 |
			if [ "$jobs" -gt 1 ]; then sed -u "s/^/$_k: /"; else cat; fi
		echo "${PIPESTATUS[0]}" > "$status/$_k"
	done
}

i=0
declare -a lanes
for k in "$@"; do
	lanes[i % jobs]="${lanes[i % jobs]:-} $k"
	i=$((i + 1))
done
for ((l = 0; l < jobs && l < $#; l++)); do
	# shellcheck disable=SC2086
	lane ${lanes[l]} &
done
wait

rc=0
for k in "$@"; do
	s=$(cat "$status/$k" 2>/dev/null || echo "none")
	case $s in
	0) ;;
	77) if [ "${CI:-}" = true ]; then echo "check-vm: FAIL: kernel $k skipped as a whole (CI=true)"; rc=1; fi ;;
	*) echo "check-vm: kernel $k: run-vm.sh exit $s"; rc=1 ;;
	esac
done
exit $rc
