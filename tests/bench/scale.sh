#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Benchmark: what thpshrinkd's passes cost as a node's THPs grow, fitted to a fixed cost per pass
# plus a cost per THP and projected to 1 TiB of THPs at the 60 s default interval.
#   scale.sh [BUILDDIR]        (root: pagemap PFNs, kpageflags; no sysfs or cgroup change)
# Real passes: thpshrinkd (observe-only: no policies, the built-in default's cut) runs against
# scale-load processes that madvise(MADV_HUGEPAGE) their own memory. CPU per pass, never wall
# time, two ways over SCALE_PASSES passes: the daemon's utime+stime from /proc/PID/stat (every
# thread, the rest between passes included; clock ticks, coarse) and the median of the
# scanner's own per-pass figure (its thread's CPU clock, thpshrink_scan_cpu_seconds).
# First a pass's fixed cost on this host as it is (every process walked, as on a node). Then,
# in a PID namespace of the bench's own (unshare; the other processes of a shared host would
# swamp a cost of a microsecond per THP), per size (MiB of THPs, SCALE_SIZES; the largest is
# capped at half of MemAvailable):
#   steady  nothing changes (SCALE_LOW THPs with 8 of 512 subpages used, default 0; the rest full)
#   busy    the same, and half the full THPs written every interval
# at --refresh-cpu 0.01 (the per-THP check alone); the rotation is measured beside it at the
# largest size at its default share. Then PTE-mapped 2 MiB folios (the scanner's code path for
# mTHPs), for the 64 KiB and 16 KiB projection. Least-squares fits with their inputs printed;
# the projection to 1 TiB adds the daemon's whole cost a pass on this host without THPs (its
# ticks), the per-THP slope of the scanner's clock (the ticks cannot resolve a microsecond;
# their own slope is printed beside it) and the rotation. Result lines in
# bench-results/bench-scale.result (result.sh). Exit 1 when the 1 TiB projection of 2 MiB
# THPs misses 1 % of one core, steady or busy.
set -u
B=${1:-${top_builddir:-$(pwd)}}
D=$B/thpshrinkd
L=$B/tests/bench/scale-load
SIZES=${SCALE_SIZES:-0 1024 2048 4096 6144 8192}
PTE_SIZES=${SCALE_PTE_SIZES:-512 1024 2048}
PASSES=${SCALE_PASSES:-30}
INTERVAL=${SCALE_INTERVAL:-1}
LOW=${SCALE_LOW:-0}
REFRESH_DEFAULT=0.5 # thpshrinkd's --refresh-cpu default (scan-memo.h)
VERIFY_CPU=0.1	     # the identity rotation's share and cost estimate (scan-memo.h)
VERIFY_COST_NS=1500
TIB_THPS=524288	    # 1 TiB of 2 MiB THPs
for x in "$D" "$L"; do [ -x "$x" ] || { echo "bench-scale: $x not built"; exit 1; }; done
if [ "$(id -u)" != 0 ]; then
	echo "bench-scale: SKIP: needs root (pagemap PFNs, /proc/kpageflags)"
	exit 77
fi
TS=/sys/kernel/mm/transparent_hugepage
if [ "$(cat $TS/hpage_pmd_size 2>/dev/null)" != 2097152 ] || ! grep -q '\[always\]\|\[madvise\]' $TS/enabled; then
	echo "bench-scale: SKIP: no 2 MiB THPs for madvise(MADV_HUGEPAGE) here ($TS/enabled: $(cat $TS/enabled 2>/dev/null))"
	exit 77
fi
INNER=${SCALE_INNER:-0} # 1: the sweeps alone, in the PID namespace the outer run made
if [ "$INNER" = 1 ]; then T=$SCALE_T; else T=$(mktemp -d /tmp/thps-bench-scale.XXXXXX); fi
LP= DP=
cleanup() {
	for p in $DP $LP; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ "$INNER" = 1 ] || rm -rf "$T"
}
trap cleanup EXIT INT TERM
HZ=$(getconf CLK_TCK)
if [ "$INNER" != 1 ]; then
	. "$(dirname "$0")/result.sh"
	bench_result_open bench-scale "$B" "$(dirname "$0")/../.."
fi
CG=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup | head -1)
[ -n "$CG" ] || CG=$(sed -n 's/^0:://p' /proc/self/cgroup | head -1)
mkdir -p "$T/pol"
AVAIL=$(awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo)
MAXMIB=$((AVAIL / 2))

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
prom() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# run NAME MIB MODE(steady|busy|rotation|pte) REFRESH: appends one line to $T/runs:
#   name mode mib planted scanned processes passes ticks read refreshed carried bytes
#   scanner-median-s read-cpu-s
run() {
	name=$1 mib=$2 mode=$3 refresh=$4
	thps=$((mib / 2)) low=$LOW
	[ $low -gt $thps ] && low=$thps
	rm -f "$T/ready" "$T/$name.prom" "$T/$name.passes"
	LP=
	if [ "$thps" -gt 0 ]; then
		case $mode in
		steady | rotation) extra= ;;
		busy) extra="--write-every $INTERVAL" ;;
		pte) extra="--pte" low=0 ;;
		esac
		"$L" --thps "$thps" --low "$low" $extra --ready-file "$T/ready" &
		LP=$!
		i=0
		while [ ! -s "$T/ready" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
		[ -s "$T/ready" ] || { echo "bench-scale: $name: scale-load not ready"; return 1; }
	fi
	"$D" --listen none --policy-dir "$T/pol" --state-dir "$T/state-$name" --textfile "$T/$name.prom" \
		--interval "$INTERVAL" --scan-cpu 100 --refresh-cpu "$refresh" --cgroup "$CG" >"$T/$name.log" 2>&1 &
	DP=$!
	# the first pass reads everything (no memo yet): measure from the end of the second
	p0=0 i=0
	while [ "${p0:-0}" -lt 2 ] && [ $i -lt 1200 ]; do
		sleep 0.05; i=$((i + 1))
		[ -s "$T/$name.prom" ] && p0=$(prom "$T/$name.prom" thpshrink_scans_total)
	done
	[ "${p0:-0}" -ge 2 ] || { echo "bench-scale: $name: no second pass"; cat "$T/$name.log"; return 1; }
	t0=$(ticks $DP)
	# each pass's own CPU as the scanner counts it (its thread's clock, in ns) beside the
	# daemon's ticks: one pass is a few clock ticks, too coarse alone
	p1=$p0 last=$p0 i=0
	while [ "$p1" -lt $((p0 + PASSES)) ] && [ $i -lt $((PASSES * INTERVAL * 40 + 400)) ]; do
		sleep 0.05; i=$((i + 1))
		p1=$(prom "$T/$name.prom" thpshrink_scans_total)
		[ "$p1" -gt "$last" ] && { prom "$T/$name.prom" thpshrink_scan_cpu_seconds >>"$T/$name.passes"; last=$p1; }
	done
	t1=$(ticks $DP)
	f=$T/$name.prom
	seen=$(prom "$f" thpshrink_scan_thps) procs=$(prom "$f" thpshrink_scan_processes)
	rd=$(awk '$1 == "thpshrink_scan_folios{how=\"read\"}" { print $2 }' "$f")
	rf=$(awk '$1 == "thpshrink_scan_folios{how=\"refreshed\"}" { print $2 }' "$f")
	mm=$(awk '$1 == "thpshrink_scan_folios{how=\"memo\"}" { print $2 }' "$f")
	tr=$(sed -n 's/.*"folios_trusted": *\([0-9]*\).*/\1/p' "$T/state-$name/status.json" 2>/dev/null | head -1)
	rb=$(prom "$f" thpshrink_scan_read_bytes) rc=$(prom "$f" thpshrink_scan_read_cpu_seconds)
	med=$(sort -g "$T/$name.passes" | awk '{ v[NR] = $1 } END { print NR ? (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : "none" }')
	kill -TERM $DP; wait $DP 2>/dev/null; DP=
	[ -n "$LP" ] && { kill -TERM $LP; wait $LP 2>/dev/null; LP=; }
	[ "$p1" -gt "$p0" ] && [ "$med" != none ] || { echo "bench-scale: $name: no pass measured"; return 1; }
	echo "$name $mode $mib $thps $seen $procs $((p1 - p0)) $((t1 - t0)) $rd $rf $mm $rb $med $rc ${tr:-unknown}" >>"$T/runs"
	awk -v hz="$HZ" -v n="$name" -v th="$thps" -v seen="$seen" -v pr="$procs" -v p="$((p1 - p0))" \
	    -v t="$((t1 - t0))" -v rd="$rd" -v rf="$rf" -v mm="$mm" -v rb="$rb" -v med="$med" -v tr="${tr:-unknown}" 'BEGIN {
		printf "  %-14s %5d THPs planted, %5d scanned%s, %d processes; %d passes, %d ticks: %.4f s CPU a pass (the scanner: median %.4f s); folios read %d, refreshed %d, carried %d (%s of them by their PAGEMAP_SCAN run, no PFN read); %.1f MiB read\n",
			n, th, seen, (seen > th * 1.01 + 2) ? " (THPs of other processes in this memcg)" : "", pr, p, t, t / hz / p, med, rd, rf, mm, tr, rb / 1048576
	}'
}

# fit MODE COLUMN: least squares of CPU per pass (ticks: the daemon's /proc/PID/stat; med: the
# scanner's median pass) on THPs scanned over that mode's runs -> "a b r2 n se_b"
fit() {
	awk -v hz="$HZ" -v m="$1" -v c="$2" '$2 == m || ($2 == "steady" && $3 == 0) {
		x = $5; y = c == "ticks" ? $8 / hz / $7 : $13
		n++; sx += x; sy += y; sxx += x * x; sxy += x * y; syy += y * y
	} END {
		if (n < 3 || n * sxx == sx * sx) { print "none"; exit }
		b = (n * sxy - sx * sy) / (n * sxx - sx * sx); a = (sy - b * sx) / n
		sse = syy - a * sy - b * sxy; if (sse < 0) sse = 0
		ss = syy - sy * sy / n; r2 = ss > 0 ? 1 - sse / ss : 1
		printf "%.9g %.9g %.4f %d %.9g\n", a, b, r2, n, sqrt(sse / (n - 2) / (sxx - sx * sx / n))
	}' "$T/runs"
}

sweeps() {
echo "steady and busy, --refresh-cpu 0.01 (the per-THP check; the rotation apart):"
largest=0
for mib in $SIZES; do
	[ "$mib" -le "$MAXMIB" ] || { echo "  $mib MiB: skipped (over half of MemAvailable)"; continue; }
	run "steady-$mib" "$mib" steady 0.01 || exit 1
	[ "$mib" -gt 0 ] && { run "busy-$mib" "$mib" busy 0.01 || exit 1; }
	largest=$mib
done
[ "$largest" -gt 0 ] || { echo "bench-scale: no size with THPs fits in half of MemAvailable"; exit 1; }
echo "the refresh rotation at its default share, at $largest MiB:"
run "rotation-$largest" "$largest" rotation $REFRESH_DEFAULT || exit 1
echo "PTE-mapped 2 MiB folios (the scanner's path for mTHPs):"
for mib in $PTE_SIZES; do
	[ "$mib" -le "$MAXMIB" ] && { run "pte-$mib" "$mib" pte 0.01 || exit 1; }
done
echo "$largest" >"$T/largest"
}
[ "$INNER" = 1 ] && { sweeps; exit; }

echo "bench-scale: $(nproc) CPUs, kernel $(uname -r), THP mode $(sed 's/.*\[\(.*\)\].*/\1/' $TS/enabled), interval ${INTERVAL} s, $PASSES passes a size, MemAvailable $AVAIL MiB (sizes capped at $MAXMIB MiB), cgroup $CG"
: >"$T/runs"
echo "a pass's fixed cost on this host as it is (every process on it walked, as on a node):"
run host-0 0 host 0.01 || exit 1
# The per-THP cost is about a microsecond: the other processes of a shared host, which come
# and go, would swamp it. A PID namespace of the bench's own (and its own /proc) leaves the
# passes only the bench's processes; nothing outside the namespace changes.
if unshare --pid --fork --mount-proc true 2>/dev/null; then
	echo "from here on in a PID namespace of its own: the passes walk the bench's processes only"
	unshare --pid --fork --mount-proc env SCALE_INNER=1 SCALE_T="$T" sh "$0" "$B" || exit 1
else
	echo "no PID namespace here (unshare failed): the passes walk every process of this host"
	sweeps || exit 1
fi
largest=$(cat "$T/largest")

echo "fit inputs (mode, THPs scanned, CPU s a pass: the daemon's ticks, the scanner's median pass):"
awk -v hz="$HZ" '{ printf "  %-8s %6d %.4f %.4f\n", $2, $5, $8 / hz / $7, $13 }' "$T/runs"
fixed0=$(awk -v hz="$HZ" '$1 == "host-0" { printf "%.4f %.4f %d", $8 / hz / $7, $13, $6 }' "$T/runs")
# the rotation's share from the daemon's ticks; a refresh's cost from the scanner's read CPU (ns)
rot=$(awk -v hz="$HZ" -v iv="$INTERVAL" -v l="$largest" '$1 == "steady-" l { s = $8 / hz / $7; sm = $13; sr = $14 }
	$1 == "rotation-" l { r = $8 / hz / $7; rm = $13; f = $10; rr = $14 }
	END { printf "%.3f %d %.9g %.3f", (r - s) / iv * 100, f, (f > 0 && rr > sr) ? (rr - sr) / f : 0, (rm - sm) / iv * 100 }' "$T/runs")
mthp=$(for d in $TS/hugepages-*kB; do [ -r "$d/enabled" ] && printf '%s:%s ' "${d##*-}" "$(sed 's/.*\[\(.*\)\].*/\1/' "$d/enabled")"; done)
awk -v st="$(fit steady ticks)" -v sm="$(fit steady med)" -v bt="$(fit busy ticks)" -v bm="$(fit busy med)" \
    -v pm="$(fit pte med)" -v f0="$fixed0" -v rot="$rot" -v rd="$REFRESH_DEFAULT" -v n="$TIB_THPS" \
    -v mthp="$mthp" -v res="$BENCH_RESULT" -v vc="$VERIFY_CPU" -v vn="$VERIFY_COST_NS" '
function show(name, f, A) {
	if (split(f, A, " ") < 5) { printf "  %-28s no fit (fewer than 3 sizes)\n", name; return 0 }
	printf "  %-28s fixed %.4f s + %.3f us a THP (+- %.3f, one standard error; r2 %.3f, %d sizes)\n",
		name, A[1], A[2] * 1e6, A[5] * 1e6, A[3], A[4]
	return 1
}
# share of one core at 60 s for N THPs: the fixed cost of this host, the per-THP slope, the rotation
function share(fixed, A) { return (fixed + A[2] * n) / 60 * 100 + rd }
function verdict(x) { return x <= 1 ? "[goal met: <= 1 %]" : "[GOAL MISSED: <= 1 %]" }
BEGIN {
	split(f0, F, " "); split(rot, R, " ")
	printf "fits, CPU a pass = fixed + per THP x THPs scanned (fixed: the bench'"'"'s own processes only):\n"
	ok = show("steady, the daemon (ticks):", st, ST)
	ok *= show("steady, the scanner (median):", sm, SM)
	ok *= show("busy, the daemon (ticks):", bt, BT)
	ok *= show("busy, the scanner (median):", bm, BM)
	if (F[1] != "")
		printf "  this host'"'"'s fixed cost (measured, no THPs of the bench'"'"'s): the daemon %.4f s, the scanner %.4f s a pass over %d processes, %.0f us a process: the walk of /proc (maps, PAGEMAP_SCAN), the cgroup tree; the daemon adds the textfile and status.json. The projection takes it as a node'"'"'s fixed cost\n",
			F[1], F[2], F[3], F[3] ? F[2] / F[3] * 1e6 : 0
	printf "  the refresh rotation at --refresh-cpu %s: %s %% of a core measured by the daemon'"'"'s ticks, %s %% by the scanner'"'"'s clock (%d THPs refreshed in its last pass); it spends its budget, %s %%, whenever a whole turn takes more than 8 passes (1 TiB: always)\n",
		rd, R[1], R[4], R[2], rd
	if (R[3] > 0)
		printf "  a refresh costs %.1f us a THP: at 1 TiB the rotation re-reads %.0f THPs a 60 s pass, a whole turn in %.0f min: how long a full THP that empties in place can go unseen\n",
			R[3] * 1e6, rd / 100 * 60 / R[3], n / (rd / 100 * 60 / R[3])
	if (!ok || SM[2] <= 0 || BM[2] <= 0 || F[1] == "") {
		printf "bench-scale: the fits are not usable (too few sizes, or a slope of the scanner'"'"'s clock <= 0: the host was too noisy); run again on a quieter host or with more SCALE_PASSES\n"
		printf "FAIL bench-scale.2m-steady no usable fit (%s; %s)\n", st, bt >> res
		exit 1
	}
	printf "projection, 1 TiB of 2 MiB THPs (%d) at the 60 s default interval, the rotation (%s %%) included:\n", n, rd
	# sw, bw: the verdicts; s1, b1: the same from the slope of the ticks, a cross-check
	sw = share(F[1], SM); bw = share(F[1], BM); s1 = share(F[1], ST); b1 = share(F[1], BT)
	printf "  steady node: %.3f s a pass + the rotation = %.2f %% of one core (%.2f %% .. %.2f %% at +- 2 standard errors; with the ticks'"'"' own slope %.2f %%)  %s\n",
		F[1] + SM[2] * n, sw, sw - 2 * SM[5] * n / 60 * 100, sw + 2 * SM[5] * n / 60 * 100, s1, verdict(sw)
	printf "  busy node (half the THPs written every interval): %.3f s a pass + the rotation = %.2f %% (%.2f %% .. %.2f %%; the ticks'"'"' slope %.2f %%)  %s\n",
		F[1] + BM[2] * n, bw, bw - 2 * BM[5] * n / 60 * 100, bw + 2 * BM[5] * n / 60 * 100, b1, verdict(bw)
	printf "  detection lags (this pass design): a low-util THP that is new, or a mapping that changed, at the next pass; a partly unmapped THP at the next pass; a full THP that empties in place within one rotation turn (above); with PAGEMAP_SCAN a THP replaced at the same address within one identity turn: at 1 TiB %.0f head-PFN reads a pass (%s %% of a core at %.1f us, scan-memo.h), a turn in %.0f passes = %.0f min at 60 s\n",
		vc / 100 * 60 / (vn / 1e9), vc, vn / 1000, n / (vc / 100 * 60 / (vn / 1e9)), n / (vc / 100 * 60 / (vn / 1e9))
	printf "%s bench-scale.2m-steady 1 TiB of 2 MiB THPs at 60 s: %.2f %% of one core (the daemon without THPs %.4f s a pass + %.3f us a THP +- %.3f, r2 %.3f, + rotation %s %%; the ticks'"'"' own slope %.3f us +- %.3f gives %.2f %%; goal <= 1 %%)\n",
		sw <= 1 ? "PASS" : "FAIL", sw, F[1], SM[2] * 1e6, SM[5] * 1e6, SM[3], rd, ST[2] * 1e6, ST[5] * 1e6, s1 >> res
	printf "%s bench-scale.2m-busy 1 TiB of 2 MiB THPs, half written every 60 s: %.2f %% of one core (the daemon without THPs %.4f s a pass + %.3f us a THP +- %.3f, r2 %.3f, + rotation %s %%; the ticks'"'"' own slope %.3f us +- %.3f gives %.2f %%; goal <= 1 %%)\n",
		bw <= 1 ? "PASS" : "FAIL", bw, F[1], BM[2] * 1e6, BM[5] * 1e6, BM[3], rd, BT[2] * 1e6, BT[5] * 1e6, b1 >> res
	printf "mTHPs: this kernel has %s- sysfs is not changed here, and a size set to never cannot be made: the figures below come from PTE-mapped 2 MiB folios, the scanner'"'"'s code path for mTHPs\n", mthp
	if (!show("PTE-mapped, the scanner:", pm, PM) || PM[2] <= 0) {
		printf "  no PTE-mapped figure\n"
		exit (sw <= 1 && bw <= 1) ? 0 : 1
	}
	pg = PM[2] / 512; pages = n * 512
	printf "  = %.3f us a 4 KiB page (its pagemap entry, the kpageflags block, the partial-folio table, and 1/512 of a folio'"'"'s own cost)\n", pg * 1e6
	printf "  1 TiB of 64 KiB mTHPs (16,777,216 folios) or of 16 KiB ones (67,108,864): at least %.1f s a pass = %.0f %% of one core at 60 s from the pages alone; each folio'"'"'s own cost (kpagecgroup, the memo, a read) comes 32 and 128 times as often as for 2 MiB\n",
		pages * pg, pages * pg / 60 * 100
	printf "  bound: a pass tracks at most 1,048,576 PTE-mapped folios (THPS_SCAN_MAX_PTE_FOLIOS, scan.h): 1/16 of 1 TiB of 64 KiB mTHPs, 1/64 of 16 KiB ones; the rest go uncounted and are said (thpshrink_scan_untracked_bytes, status.json, the log); the page walk is not bounded\n"
	printf "INFO bench-scale.mthp PTE-mapped 2 MiB folios: %.1f us each (scanner), %.3f us a 4 KiB page; 1 TiB of 64 or 16 KiB mTHPs >= %.0f %% of one core at 60 s (pages alone)\n",
		PM[2] * 1e6, pg * 1e6, pages * pg / 60 * 100 >> res
	exit (sw <= 1 && bw <= 1) ? 0 : 1
}'
