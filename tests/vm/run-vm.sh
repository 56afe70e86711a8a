#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# run-vm.sh KERNEL[-lockdown]: boots KERNEL (k73 | k612 | k61 | rfc) under qemu TCG with an initramfs holding
# busybox, the project's built programs, the tools of tests/tools, lib.sh and every
# scenarios/NN-*.sh; the guest runs each scenario and prints "RESULT PASS|FAIL|SKIP name details"
# lines. They are collected into $builddir/tests/vm/results/KERNEL.result; the console log is
# KERNEL.log beside it. Exit: 0 if no FAIL, 1 on any FAIL, 77 if qemu or the kernel is missing
# (with a "SKIP vm.KERNEL reason" line; `make check-vm` with CI=true fails on it). A scenario that
# prints no result line at all gets "FAIL <scenario>.results".
#
# Environment: top_srcdir, top_builddir (default: this script's repository and the cwd),
#   THPS_VM_TIMEOUT (hard limit per boot, seconds, default 1200), THPS_VM_APPEND (extra cmdline),
#   THPS_VM_SCENARIOS (glob of scenario names to include, default "*"), THPS_VM_TCG_THREAD
#   (single or multi, default single),
#   THPS_VM_OUTDIR (where the result and log go, default $builddir/tests/vm/results),
#   THPS_VM_MEM (guest memory, default 3G: 55-trust holds 1,000 THPs at once).
#
# KERNEL-lockdown (k612-lockdown, k73-lockdown): the same kernel booted with lockdown=integrity
# (what Secure Boot enforces: debugfs refuses every write) and debugfs not mounted, running only
# the scenarios that are about such a node (38-exact) unless THPS_VM_SCENARIOS says otherwise.
#
# KVM is never used: on this project's machines /dev/kvm exists but KVM pauses with an internal
# error (see tests/vm/README.md), and TCG with -cpu max gives the guest every instruction the binaries need.
set -uo pipefail
KERNEL=${1:?usage: run-vm.sh k73|k612|k61|rfc[-lockdown]}
BASE=${KERNEL%%-*}
VARIANT=${KERNEL#"$BASE"}
VARIANT=${VARIANT#-}
VARIANT_APPEND=""
case $VARIANT in
"") ;;
lockdown)
	VARIANT_APPEND="lockdown=integrity thps.nodebugfs=1 thps.variant=lockdown"
	THPS_VM_SCENARIOS=${THPS_VM_SCENARIOS:-38-exact}
	;;
*) echo "run-vm.sh: unknown variant '$VARIANT' of $BASE (known: lockdown)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
builddir=${top_builddir:-$(pwd)}
builddir=$(cd "$builddir" && pwd)
outdir=${THPS_VM_OUTDIR:-$builddir/tests/vm/results}
mkdir -p "$outdir"
result=$outdir/$KERNEL.result
log=$outdir/$KERNEL.log
# The provenance scripts/results-tables prints under each table made from this file: which tree,
# when, at what size (scale 1 is CI's; THPS_VM_APPEND may set thps.node_scale=N) and which
# scenarios (it takes in only a boot's full set unless told to).
commit=$(git -C "$srcdir" describe --always --dirty=+dirty 2>/dev/null) || commit=unknown
scale=$(printf '%s' "${THPS_VM_APPEND:-}" | sed -n 's/.*thps\.node_scale=\([0-9]*\).*/\1/p')
echo "# run kernel=$KERNEL commit=$commit date=$(date -u +%Y-%m-%dT%H:%M:%SZ) scale=${scale:-1}" \
	"scenarios=$(printf '%s' "${THPS_VM_SCENARIOS:-*}" | tr ' ' ',')" > "$result"

skip() {
	echo "SKIP vm.$KERNEL $*" | tee -a "$result"
	exit 77
}

command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (package qemu-system-x86)"
[ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' ||
	skip "/bin/busybox is not busybox-static (package busybox-static)"
image=$("$here/fetch-kernel.sh" "$BASE" 2>"$outdir/$KERNEL.fetch.log")
case $? in
0) ;;
77) skip "$(tail -1 "$outdir/$KERNEL.fetch.log")" ;;
*) echo "FAIL vm.$KERNEL.fetch $(tail -1 "$outdir/$KERNEL.fetch.log")" | tee -a "$result"; exit 1 ;;
esac

stage=$(mktemp -d "${TMPDIR:-/tmp}/thps-vm.XXXXXX")
trap 'rm -rf "$stage"' EXIT
S=$stage/root
mkdir -p "$S"/{bin,dev,proc,sys,tmp,etc,run,scenarios}
ln -s bin "$S/sbin"; mkdir -p "$S/usr"; ln -s ../bin "$S/usr/bin"; ln -s ../bin "$S/usr/sbin"
cp /bin/busybox "$S/bin/busybox"
for a in $("$S/bin/busybox" --list); do [ -e "$S/bin/$a" ] || ln -s busybox "$S/bin/$a"; done
mknod -m 600 "$S/dev/console" c 5 1
mknod -m 666 "$S/dev/null" c 1 3

# A dynamically linked program goes in with the libraries ldd names (and its loader).
copy_with_libs() {
	install -m 755 "$1" "$S/bin/$(basename "$1")"
	for l in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*'); do
		[ -e "$S$l" ] || install -D -m 755 "$l" "$S$l"
	done
}
progs=""
for p in thpshrink thpshrinkd thpshrink-oci-hook thpshrink-bloat; do
	[ -x "$builddir/$p" ] && { copy_with_libs "$builddir/$p"; progs="$progs $p"; }
done
for p in "$builddir"/tests/tools/*; do
	[ -f "$p" ] && [ -x "$p" ] && { copy_with_libs "$p"; progs="$progs $(basename "$p")"; }
done
# Extra guest content for particular scenarios (e.g. redis for 60-redis.sh): each
# tests/vm/initramfs.d/*.sh is sourced here with S (the staging root) and copy_with_libs; one
# may add qemu options to QEMU_EXTRA (node.sh: a read-only 9p share of /usr for 70-node.sh) and
# kernel command-line options to APPEND_EXTRA (node.sh: psi=1).
QEMU_EXTRA="" APPEND_EXTRA=""
for h in "$here"/initramfs.d/*.sh; do
	[ -e "$h" ] && . "$h"
done
install -m 644 "$here/lib.sh" "$S/lib.sh"
install -m 755 "$here/guest-init.sh" "$S/init"
for s in "$here"/scenarios/[0-9]*.sh; do
	[ -e "$s" ] || continue
	# shellcheck disable=SC2053
	[[ $(basename "$s" .sh) == ${THPS_VM_SCENARIOS:-*} ]] && install -m 644 "$s" "$S/scenarios/"
done
(cd "$S" && find . | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0 | gzip -1 > "$stage/initrd.gz")

echo "vm: $KERNEL: $image, initramfs $(du -k "$stage/initrd.gz" | cut -f1) KiB, programs:$progs"
t0=$(date +%s.%N)
# One TCG thread for both vCPUs: with multi-threaded TCG a vCPU could run kernel text that the
# other was live-patching (jump labels, flipped e.g. when crun attaches and detaches its device
# BPF program), and the guest died with "Oops: int3" in get_page_from_freelist (once in ~6
# CI runs). Same speed on this 2-core host (k612: 149 s vs 144 s).
timeout -k 10 "${THPS_VM_TIMEOUT:-1200}" qemu-system-x86_64 -accel "tcg,thread=${THPS_VM_TCG_THREAD:-single}" -cpu max -m "${THPS_VM_MEM:-3G}" -smp 2 \
	-nographic -no-reboot -nodefaults -serial stdio -kernel "$image" -initrd "$stage/initrd.gz" ${QEMU_EXTRA:-} \
	-append "console=ttyS0 quiet loglevel=3 panic=-1 transparent_hugepage=always thps.kernel=$BASE $VARIANT_APPEND $APPEND_EXTRA ${THPS_VM_APPEND:-}" \
	</dev/null 2>&1 | tr -d '\r' > "$log"
qrc=${PIPESTATUS[0]}
t1=$(date +%s.%N)
wall=$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")

# qemu's status says nothing about the tests: judge by the result lines and the end marker.
grep -a -o 'RESULT \(PASS\|FAIL\|SKIP\) .*' "$log" | sed 's/^RESULT //' >> "$result"
# A scenario that printed no result line (an early exit 0) ran no check and said no SKIP: a FAIL.
LC_ALL=C awk '/^== scenario [^ ]+ \(uptime/ { if (s != "" && !n) print s; s = $3; n = 0; next }
	/RESULT (PASS|FAIL|SKIP) / { n++ }
	END { if (s != "" && !n) print s }' "$log" | while read -r s; do
	echo "FAIL ${s#[0-9]*-}.results the scenario printed no result line"
done >> "$result"
# Files the scenarios exported (vm_export), checked with the host's tools.
"$here/check-exports.sh" "$log" "$outdir/$KERNEL.exports" >> "$result"
if ! grep -a -q '^THPS-VM-DONE' "$log"; then
	reason="no end marker (qemu rc=$qrc$([ "$qrc" = 124 ] && echo ", hard timeout ${THPS_VM_TIMEOUT:-1200}s"))"
	# the guest kernel's own last word, if it died
	oops=$(grep -a -m1 -o -E '(Oops|BUG|Kernel panic)[^\[]*' "$log" | cut -c1-160)
	[ -z "$oops" ] || reason="$reason; guest kernel: $oops"
	echo "FAIL vm.$KERNEL.done $reason; see $log" >> "$result"
else
	echo "PASS vm.$KERNEL.done wall=${wall}s $(grep -a -o 'THPS-VM-DONE.*' "$log" | head -1 | cut -d' ' -f2-)" >> "$result"
fi
echo "vm: $KERNEL: qemu rc=$qrc wall=${wall}s log=$log"
sed "s/^/  /" "$result"
! grep -q '^FAIL' "$result"
