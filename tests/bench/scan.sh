#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Scanner benchmark: 1 GiB of thpshrink-bloat THPs with 90 % zero subpages (51 of 512
# utilized), scanned by the full scanner source and by a bare process_vm_readv loop in the
# same run. Needs root. Usage: scan.sh BUILDDIR [THPS] [ROUNDS] [CHUNK_KIB...]
set -eu
b=${1:?usage: scan.sh BUILDDIR [THPS] [ROUNDS]}
n=${2:-512}
rounds=${3:-9}
shift $(( $# < 3 ? $# : 3 ))
chunks=${*:-128}
[ "$(id -u)" = 0 ] || { echo "scan.sh: needs root (kpageflags)"; exit 77; }
ready=$(mktemp /tmp/scan-bench.XXXXXX)
rm -f "$ready"
"$b/thpshrink-bloat" --mix "51:$n" --ready-file "$ready" >/dev/null &
bpid=$!
trap 'kill $bpid 2>/dev/null; rm -f "$ready"' EXIT
while [ ! -s "$ready" ]; do
	kill -0 $bpid 2>/dev/null || { echo "scan.sh: thpshrink-bloat failed"; exit 1; }
	sleep 0.1
done
line=$(cat "$ready")
echo "$line"
start=$(echo "$line" | sed -n 's/.* start=\(0x[0-9a-f]*\).*/\1/p')
end=$(echo "$line" | sed -n 's/.* end=\(0x[0-9a-f]*\).*/\1/p')
pid=$(echo "$line" | sed -n 's/.*pid=\([0-9]*\).*/\1/p')
. "$(dirname "$0")/result.sh"
bench_result_open bench-scan "$b" "$(dirname "$0")/../.."
for c in $chunks; do
	out=$("$b/tests/bench/scan-bench" "$pid" "$start" "$end" "$rounds" "$c") || exit 1
	echo "$out"
	# The figures the README cites, one line per chunk size: the goal is against the bare loop.
	echo "$out" | awk -v c="$c" '
		/^memory / { mem = $0 }
		/^bare process_vm_readv/ { bare = $4 }
		/^scanner \(full source\)/ { scan = $4 }
		/^ratio scanner\/bare/ { best = $4; sub(",", "", best); med = $9 }
		END {
			printf "%s bench-scan.chunk-%s scanner %s GB/s, bare process_vm_readv loop %s GB/s: %s x best-vs-best, %s x median of paired rounds (goal >= 0.85); %s\n",
				(best >= 0.85 || med >= 0.85) ? "PASS" : "FAIL", c, scan, bare, best, med, mem
		}' >>"$BENCH_RESULT"
done
