#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# thpshrink reclaim --pid on this host's real MMU: process_madvise splits exactly the sparse and
# the partially mapped THPs of one process of ours, on any host (cgroup v1 too), measured by its
# RssAnon. Nothing global is touched: no cgroup, no sysfs knob; only our own test processes are
# advised. Asserts:
#   - >= 95 % of the sparse waste leaves RssAnon, every partially mapped THP is split (its
#     unmapped subpages freed), the full THPs stay THPs, the data is intact;
#   - a fork-shared THP is left alone by the kernel and reported so;
#   - a process that exited is never advised, and bad arguments are refused.
# SKIP (77) where this host cannot: no THPs in madvise/always mode, not root, no CAP_SYS_NICE.
set -u
b=${top_builddir:-.}
bin=$b/thpshrink bloat=$b/thpshrink-bloat forked=$b/tests/tools/thps-forked
fail=0 pids=""
tmp=$(mktemp -d)
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
skip() { echo "SKIP: $*"; exit 77; }
check() { # NAME DETAIL CMD...
	n=$1 d=$2; shift 2
	if "$@"; then echo "ok: $n: $d"; else echo "FAIL: $n: $d"; fail=1; fi
}
[ "$(id -u)" = 0 ] || skip "needs root (pagemap PFNs, kpageflags)"
grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled && skip "THP is 'never' on this host"
capeff=$(awk '/^CapEff/ {print $2}' /proc/self/status)
[ $(( 0x$capeff >> 23 & 1 )) = 1 ] || skip "no CAP_SYS_NICE here"
[ -x "$bloat" ] || skip "no $bloat"

expect_usage() { # PATTERN ARGS...
	pat=$1; shift
	out=$("$bin" reclaim "$@" 2>&1); rc=$?
	check "usage $*" "rc=$rc $out" [ "$rc" = 2 ] && printf '%s\n' "$out" | grep -q -- "$pat" ||
		{ echo "FAIL: usage $*: want '$pat'"; fail=1; }
}
expect_usage "memory.reclaim acts on a whole cgroup" --pid 1 --method reclaim
expect_usage "exclude each other" --pid 1 --cgroup x
expect_usage "expected a process id" --pid abc

# 24 sparse THPs (8 subpages used), 24 partially mapped (8 still mapped), 8 full: the sparse
# waste planted is 24 x (subpages - 8) pages, the bound's own source (not thpshrink's figure)
page=$(getconf PAGESIZE)
sub=$(( $(cat /sys/kernel/mm/transparent_hugepage/hpage_pmd_size) / page ))
planted=$(( 24 * (sub - 8) * page ))
"$bloat" --mix 8:24,$sub:8 --partial 8:24 --ready-file "$tmp/ready" --seconds 120 > "$tmp/bloat.out" 2>&1 &
bp=$!; pids="$pids $bp"
for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
[ -s "$tmp/ready" ] || skip "thpshrink-bloat got no THPs here: $(cat "$tmp/bloat.out")"
thp_backed=$(sed -n 's/.*thp_backed=\([0-9]*\).*/\1/p' "$tmp/ready")
partial=$(sed -n 's/.*partial=\([0-9]*\).*/\1/p' "$tmp/ready")
[ "${thp_backed:-0}" -ge 32 ] && [ "${partial:-0}" -ge 24 ] ||
	skip "the kernel gave too few THPs ($(cat "$tmp/ready"))"

out=$("$bin" reclaim --pid "$bp" 2>&1); rc=$?
echo "$out" | sed 's/^/  /'
val() { printf '%s\n' "$out" | sed -n "s/.*$1=\([0-9-]*\).*/\1/p" | head -1; }
waste_before=$(printf '%s\n' "$out" | sed -n 's/^low-utilization THPs: [0-9]* -> [0-9]*, waste \([0-9]*\) -> .*/\1/p')
unmapped_before=$(printf '%s\n' "$out" | sed -n 's/^partially mapped THPs: [0-9]* -> [0-9]*, unmapped \([0-9]*\) -> \([0-9]*\) bytes/\1/p')
unmapped_after=$(printf '%s\n' "$out" | sed -n 's/^partially mapped THPs: [0-9]* -> [0-9]*, unmapped \([0-9]*\) -> \([0-9]*\) bytes/\2/p')
given=$(val given_back)
num() { for v; do case $v in '' | *[!0-9]*) return 1 ;; esac; done; }
check exit-status "rc=$rc" [ "$rc" = 0 ]
check mechanism "$(printf '%s\n' "$out" | grep '^split:')" \
	sh -c "printf '%s\n' \"\$1\" | grep -q 'by process_madvise'" _ "$out"
# 95 %: RssAnon also moves with the test process's own stack and libc pages
check sparse-given-back-95pct "given_back=${given:-?} of planted sparse waste $planted (thpshrink saw ${waste_before:-?}; RssAnon)" \
	eval 'num "$given" && [ $(( given * 100 )) -ge $(( planted * 95 )) ]'
check partial-freed "partial unmapped ${unmapped_before:-?} -> ${unmapped_after:-?} bytes" \
	eval 'num "$unmapped_before" && [ "$unmapped_before" -gt 0 ] && [ "$unmapped_after" = 0 ]'
full_after=$(printf '%s\n' "$out" | awk '$1 == 9 {print $4}')
check full-thps-kept "bucket 9 after: ${full_after:-?} THPs (8 full)" eval 'num "$full_after" && [ "$full_after" -ge 8 ]'
kill -USR1 "$bp"; sleep 1
check data-intact "$(grep VERIFY "$tmp/bloat.out" | tail -1)" grep -q 'VERIFY OK' "$tmp/bloat.out"

# A fork's shared THPs: the kernel skips them, thpshrink says so and gives nothing back.
if [ -x "$forked" ]; then
	"$forked" 8 "$tmp/fready" & fp=$!; pids="$pids $fp"
	for _ in $(seq 50); do [ -s "$tmp/fready" ] && break; sleep 0.1; done
	fstart=$(sed -n 's/.*start=0x\([0-9a-f]*\).*/\1/p' "$tmp/fready")
	pm() { dd if=/proc/$fp/pagemap bs=8 skip=$(( 0x$fstart / 4096 )) count=1 2>/dev/null | od -An -tx8 | tr -d ' '; }
	pm0=$(pm)
	"$bin" report --pid "$fp" > /dev/null 2>&1
	pm1=$(pm)
	# reading a forked process's THPs must not unshare them (process_vm_readv's pin would)
	check scan-keeps-fork-sharing "first page's pagemap entry $pm0 -> $pm1" [ -n "$pm0" -a "$pm0" = "$pm1" ]
	out=$("$bin" reclaim --pid "$fp" 2>&1); rc=$?
	line=$(printf '%s\n' "$out" | grep '^split:')
	check fork-shared-left-alone "$line" \
		sh -c "printf '%s\n' \"\$1\" | grep -q '^split: 0 THPs split.* [1-9][0-9]* left whole by the kernel (shared'" _ "$line"
	kill "$fp"
fi

# A process that exited: nothing to advise, said plainly.
"$bloat" --mix 0:2 --ready-file "$tmp/gone" --seconds 1 > /dev/null 2>&1 & gp=$!
wait "$gp"
out=$("$bin" reclaim --pid "$gp" 2>&1); rc=$?
check exited-process "rc=$rc $out" [ "$rc" = 2 ]
exit $fail
