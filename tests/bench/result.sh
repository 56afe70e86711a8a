# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the host benchmarks whose figures the README's table cites: their figures as result
# lines for scripts/results-tables, in ${BENCH_RESULTS:-BUILDDIR/bench-results}/NAME.result
# (outside tests/, so check-all's summary does not count a benchmark's goals as tests), headed
# like run-vm.sh's files with where and when they were measured.

# bench_result_open NAME BUILDDIR SRCDIR
bench_result_open() {
	BENCH_RESULT=${BENCH_RESULTS:-$2/bench-results}/$1.result
	mkdir -p "$(dirname "$BENCH_RESULT")"
	_commit=$(git -C "$3" describe --always --dirty=+dirty 2>/dev/null) || _commit=unknown
	echo "# run kernel=$(uname -r) commit=$_commit date=$(date -u +%Y-%m-%dT%H:%M:%SZ) scale=1 cpus=$(nproc)" >"$BENCH_RESULT"
}

# bench_result PASS|FAIL NAME DETAIL...
bench_result() {
	echo "$*" >>"$BENCH_RESULT"
}
