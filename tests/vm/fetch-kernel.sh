#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# fetch-kernel.sh KERNEL: makes a Debian kernel image available for the VM tests and prints
# the path of its bzImage on stdout.
#   k612  Debian trixie's 6.12 (linux-image-amd64's dependency), through a private apt state:
#         the system's apt sources are not changed and nothing from trixie is installed.
#   k61   Debian bookworm's 6.1 (the system's own suite), fetched with apt-get download.
#   k73   Debian's newest kernel, trixie-backports (7.3 when this was written), found through
#         linux-image-amd64 like k612. From 7.x on, linux-image-VER is a meta package: the image
#         is in linux-binary-VER (or linux-binary-unsigned-VER) at usr/lib/modules/VER/vmlinuz;
#         the modules (linux-modules-VER) are not needed (cgroup2, debugfs, THP are built in).
#   rfc   Debian's 6.1 with the THP shrinker RFC applied; not fetched: it lives in the shared
#         tree beside the repository (../shared/kernels/rfc-6.1/bzImage, or $THPSHRINK_SHARED).
# The suites come from the Debian mirror in this machine's apt sources (apt-mirror.sh).
# Cache: $THPSHRINK_VM_CACHE (default /var/cache/thpshrink-vm), outside the work tree.
# Exit: 0 and the path; 77 and the reason on stderr when the kernel cannot be had.
set -euo pipefail
KERNEL=${1:?usage: fetch-kernel.sh k73|k612|k61|rfc}
CACHE=${THPSHRINK_VM_CACHE:-/var/cache/thpshrink-vm}
here=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "$here/../.." && pwd)

skip() { echo "fetch-kernel: $KERNEL: $*" >&2; exit 77; }

find_image() { ls "$1"/boot/vmlinuz-* "$1"/usr/lib/modules/*/vmlinuz 2>/dev/null | head -1 || true; }

if [ "$KERNEL" = rfc ]; then
	for d in "${THPSHRINK_SHARED:-}" "$srcdir/../shared" "$srcdir/../../shared" /work/shared; do
		[ -n "$d" ] && [ -r "$d/kernels/rfc-6.1/bzImage" ] && { echo "$d/kernels/rfc-6.1/bzImage"; exit 0; }
	done
	skip "no RFC kernel: expected ../shared/kernels/rfc-6.1/bzImage beside the repository or \$THPSHRINK_SHARED"
fi

case "$KERNEL" in
k612) suite=trixie ;;
k61) suite=bookworm ;;
k73) suite=trixie-backports ;;
*) echo "fetch-kernel: unknown kernel '$KERNEL': expected k73, k612, k61 or rfc" >&2; exit 2 ;;
esac

dir=$CACHE/$KERNEL
img=$(find_image "$dir/root" || true)
if [ -n "$img" ]; then echo "$img"; exit 0; fi

command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || skip "apt-get/dpkg-deb not available"
mkdir -p "$CACHE" || skip "cannot create cache $CACHE"
exec 9>"$CACHE/.lock"; flock 9
# Another run may have fetched it while this one waited for the lock.
img=$(find_image "$dir/root" || true)
if [ -n "$img" ]; then echo "$img"; exit 0; fi

# A private apt state for the suite: sources, lists and archives under the cache.
apt=$CACHE/apt-$suite
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir/debs"
# the machine's own Debian mirror (apt-mirror.sh): no mirror is named here
mirror=$("$here/apt-mirror.sh" 2>&1) || { echo "fetch-kernel: $KERNEL: $mirror" >&2; exit 1; }
echo "deb $mirror $suite main" > "$apt/sources.list"
A=(-o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$apt/lists"
   -o Dir::Cache="$apt/cache" -o APT::Sandbox::User=root -q)
apt-get "${A[@]}" update >&2 || skip "apt-get update of $suite failed (no network?)"
pkg=$(apt-cache "${A[@]}" depends linux-image-amd64 | awk '/Depends: linux-image-/{print $2; exit}')
[ -n "$pkg" ] || skip "linux-image-amd64 of $suite names no linux-image package"
# 7.x: linux-image-VER is a meta package; the image is in linux-binary[-unsigned]-VER.
bin=$(apt-cache "${A[@]}" depends "$pkg" | awk '/Depends: linux-binary-/{print $2; exit}')
[ -z "$bin" ] || pkg=$bin
(cd "$dir/debs" && rm -f ./*.deb && apt-get "${A[@]}" download "$pkg" >&2) || skip "apt-get download $pkg failed"
rm -rf "$dir/root.tmp" "$dir/root.new"
dpkg-deb -x "$dir"/debs/"${pkg}"_*.deb "$dir/root.tmp"
rm -f "$dir"/debs/*.deb  # the unpacked tree is what we keep
# The tests need no modules (cgroup2, debugfs, THP are built in); keep only the image, and
# publish it with one rename so a concurrent reader never sees half a file.
img=$(find_image "$dir/root.tmp")
[ -n "$img" ] || skip "$pkg has no boot/vmlinuz-* nor usr/lib/modules/*/vmlinuz"
mkdir -p "$dir/root.new/boot"
case $img in
*/boot/vmlinuz-*) ver=${img##*/vmlinuz-} ;;
*) ver=$(basename "$(dirname "$img")") ;; # usr/lib/modules/VER/vmlinuz
esac
mv "$img" "$dir/root.new/boot/vmlinuz-$ver"
rm -rf "$dir/root.tmp" "$dir/root"
mv "$dir/root.new" "$dir/root"
echo "$pkg" > "$dir/package"
img=$(find_image "$dir/root")
echo "$img"
