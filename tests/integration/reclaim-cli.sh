#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# thpshrink reclaim on the host: only what is safe here (the host's cgroups and THP knobs are not
# ours): bad arguments are refused with a reason and exit 2 before anything is read or written.
# The real actions are tested on real kernels in tests/vm/scenarios (20-reclaim, 30-split).
bin=${top_builddir:-.}/thpshrink
fail=0
expect() { # STATUS PATTERN ARGS...
	want=$1 pat=$2; shift 2
	out=$("$bin" reclaim "$@" 2>&1); rc=$?
	if [ "$rc" != "$want" ] || ! printf '%s\n' "$out" | grep -q -- "$pat"; then
		echo "FAIL: thpshrink reclaim $*: rc=$rc (want $want), output: $out"
		fail=1
	else
		echo "ok: thpshrink reclaim $*: rc=$rc"
	fi
}
expect 2 "--cgroup PATH or --pid PID is required"
expect 2 "expected split, reclaim or split_or_reclaim, got 'smash'" --cgroup x --method smash
expect 2 "expected a size like 64M, got '12Q'" --cgroup x --max-bytes 12Q
expect 2 "expected 0..9, got '10'" --cgroup x --lowutil-bucket 10
expect 2 "not with --dry-run" --cgroup x --dry-run --set-max-ptes-none 409
expect 2 "give it alone" --restore-max-ptes-none --cgroup x
expect 2 "unexpected argument 'extra'" --cgroup x extra
expect 0 "Usage: thpshrink reclaim" --help
# nothing saved: the restore says so and changes nothing
THPSHRINK_STATE_DIR=$(mktemp -d) expect 1 "nothing to restore" --restore-max-ptes-none
exit $fail
