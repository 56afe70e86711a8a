# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by run-vm.sh (S, KERNEL, here, srcdir, builddir, outdir, copy_with_libs): what
# scenarios/49-containerd.sh needs, only when it is part of this boot and the kernel is k612
# or k73 (it skips elsewhere): the Debian 13 root with containerd 1.7 (containerd/build-root.sh,
# cached) shared read-only over its own virtio-9p channel (tag cdroot), the kernel's 9p modules,
# thpshrink-nri, the CRI client and two OCI image archives made here from static binaries (a
# pause and busybox + thpshrink-bloat), imported in the guest with ctr. What is missing is
# written to /cd/missing; the scenario says SKIP with it. Other boots stay as they were.
_cd_want=no
case $KERNEL in
k612 | k73)
	# shellcheck disable=SC2053
	[[ 49-containerd == ${THPS_VM_SCENARIOS:-*} ]] && _cd_want=yes ;;
esac
if [ $_cd_want = yes ]; then
	_c=$S/cd
	mkdir -p "$_c/9p"
	: > "$_c/missing"
	install -m 644 "$here/containerd/cri.py" "$_c/"
	[ -x "$builddir/thpshrink-nri" ] && copy_with_libs "$builddir/thpshrink-nri" ||
		echo "thpshrink-nri not built (configure --enable-nri: libprotobuf-c-dev, protobuf-c-compiler)" >> "$_c/missing"
	_t=$(mktemp -d "${TMPDIR:-/tmp}/thps-cd.XXXXXX")
	if gcc -static -O2 -o "$_t/pause" "$here/containerd/pause.c" 2>> "$outdir/$KERNEL.fetch.log" &&
		gcc -static -O2 -o "$_t/thpshrink-bloat" "$srcdir/tests/tools/thpshrink-bloat.c" 2>> "$outdir/$KERNEL.fetch.log"; then
		python3 "$here/containerd/oci-image.py" localhost/thps-pause:1 "$_c/pause.tar" /pause "$_t/pause:/pause" &&
		python3 "$here/containerd/oci-image.py" localhost/thps-work:1 "$_c/work.tar" /bin/thpshrink-bloat \
			"$_t/thpshrink-bloat:/bin/thpshrink-bloat" /bin/busybox:/bin/busybox @busybox:/bin/sh @busybox:/bin/sleep ||
			echo "oci-image.py failed (see $KERNEL.fetch.log)" >> "$_c/missing"
	else
		echo "gcc -static failed on pause.c or thpshrink-bloat.c (libc6-dev's libc.a; see $KERNEL.fetch.log)" >> "$_c/missing"
	fi
	rm -rf "$_t"
	if _r=$("$here/containerd/build-root.sh" 2>> "$outdir/$KERNEL.fetch.log"); then
		cp "$_r/cri/versions" "$_c/versions"
		if _m=$("$here/fetch-9p-modules.sh" "$KERNEL" 2>> "$outdir/$KERNEL.fetch.log"); then
			cp "$_m"/*.ko "$_c/9p/"
			QEMU_EXTRA="${QEMU_EXTRA:-} -virtfs local,path=$_r,mount_tag=cdroot,security_model=none,readonly=on,multidevs=remap"
			progs="$progs containerd(9p:trixie)"
		else
			echo "no 9p modules: $(tail -1 "$outdir/$KERNEL.fetch.log")" >> "$_c/missing"
		fi
	else
		echo "no Debian 13 root with containerd: $(tail -1 "$outdir/$KERNEL.fetch.log")" >> "$_c/missing"
	fi
fi
unset _cd_want _c _t _r _m
