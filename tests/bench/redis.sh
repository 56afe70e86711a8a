#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Redis benchmark in the real-kernel VM (Debian 6.12 under qemu TCG): the 60-redis scenario at a
# larger size (default 40,000 values of 4,000 bytes, 80 % deleted), then a table of Redis's
# cgroup memory with THP never, THP always, THP always + thpshrink (same boot), the memory given
# back, the THPs kept, and redis-benchmark ops/s before and after thpshrinkd acted (with a THP-free
# control instance measured next to each, since TCG speed follows the host's load).
# Usage: redis.sh [BUILDDIR] [N]   (BUILDDIR: a built tree, default the cwd)
# Output: the table on stdout; the VM's log and results in BUILDDIR/tests/bench/redis/.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
b=$(cd "${1:-.}" && pwd)
n=${2:-40000}
[ -x "$b/thpshrink" ] || { echo "redis.sh: no thpshrink in $b: build first"; exit 77; }
out=$b/tests/bench/redis
mkdir -p "$out"
THPS_VM_SCENARIOS='60-*' THPS_VM_OUTDIR=$out THPS_VM_TIMEOUT=${THPS_VM_TIMEOUT:-900} \
	THPS_VM_APPEND="thps.redis_n=$n THPS_VM_SCENARIO_TIMEOUT=800" \
	top_srcdir=$(cd "$here/../.." && pwd) top_builddir=$b \
	"$here/../vm/run-vm.sh" k612 > "$out/run.txt" 2>&1
rc=$?
[ $rc = 77 ] && { tail -1 "$out/run.txt"; exit 77; }
log=$out/k612.log
grep '^\(PASS\|FAIL\|SKIP\) ' "$out/k612.result" | sed 's/^/  /'
# every "# redis-fig K=V ..." line of the guest, as K=V
figs=$(tr -d '\r' < "$log" | grep -a '^# redis-fig ' | sed 's/^# redis-fig //' | tr ' ' '\n' | grep '=')
[ -n "$figs" ] || { echo "redis.sh: no figures in $log (see $out/run.txt)"; exit 1; }
echo "$figs" | awk -F= -v n="$n" '
	{ f[$1] = $2 }
	function mib(x) { return sprintf("%.1f MiB", x / 1048576) }
	function row(k, v) { printf "| %-52s | %14s |\n", k, v }
	END {
		printf "\nRedis 7 (Debian, jemalloc), %d values of 4,000 bytes, 80 %% deleted; Debian 6.12 under qemu TCG\n", n
		printf "memory.current of Redis'"'"'s cgroup (same boot):\n\n"
		row("state", "memory")
		printf "| %-52s | %14s |\n", "---", "---"
		row("THP never (after the deletes)", mib(f["never_bytes"]))
		row("THP always, after the deletes", mib(f["always_deleted_bytes"]))
		row("  of which partially mapped THPs (thpshrink report)", mib(f["partial_unmapped_bytes"]))
		row("THP always + thpshrink reclaim --method reclaim", mib(f["after_reclaim_bytes"]))
		row("THP always, after khugepaged re-collapsed", mib(f["after_khugepaged_bytes"]))
		row("  of which low-util THP waste, buckets 0..3 (report)", mib(f["waste_bytes"]))
		row("THP always + thpshrinkd (enforce: split, cut 3)", mib(f["after_split_bytes"]))
		row("  10 s of fast khugepaged later (final)", mib(f["always_final_bytes"]))
		row("  ratio to THP never", sprintf("%.1f %%", 100 * f["always_final_bytes"] / f["never_bytes"]))
		peak = f["after_khugepaged_bytes"] > f["always_deleted_bytes"] ? f["after_khugepaged_bytes"] : f["always_deleted_bytes"]
		row("memory given back by reclaim", mib(f["always_deleted_bytes"] - f["after_reclaim_bytes"]))
		row("memory given back by thpshrinkd", mib(f["split_given_back"]))
		row("  thpshrinkd converged after (s)", f["daemon_secs"])
		row("THPs kept (well-used, not split)", sprintf("%d of %d", f["thps_after"], f["thps_before_split"]))
		row("khugepaged/max_ptes_none used", f["mpn"])
		printf "\nredis-benchmark -n 4000 -t set,get, best of 2 (requests/s; control = an empty Redis without THPs (--disable-thp yes), alternating):\n\n"
		printf "| %-10s | %10s | %10s | %14s | %14s |\n", "test", "before", "after", "control before", "control after"
		printf "| %-10s | %10s | %10s | %14s | %14s |\n", "---", "---", "---", "---", "---"
		printf "| %-10s | %10d | %10d | %14d | %14d |\n", "SET", f["bench_set_before"], f["bench_set_after"], f["ctrl_set_before"], f["ctrl_set_after"]
		printf "| %-10s | %10d | %10d | %14d | %14d |\n", "GET", f["bench_get_before"], f["bench_get_after"], f["ctrl_get_before"], f["ctrl_get_after"]
	}'
grep -q '^FAIL' "$out/k612.result" && exit 1
exit 0
