#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# fetch-9p-modules.sh KERNEL: the 9p modules (netfs, 9pnet, 9pnet_virtio, 9p) of a cached VM
# kernel (fetch-kernel.sh keeps only the image), decompressed into
# $THPSHRINK_VM_CACHE/KERNEL/modules-9p/; prints that directory. They let a guest mount the host's
# root read-only over virtio-9p (scenarios/70-node.sh runs Debian's JVM, Node.js, Python,
# memcached and Redis from it). The package is fetched with apt-get download through the same
# private apt state as the image (the suite from the cache's apt-* directory that lists it).
# Exit: 0 and the directory; 77 and the reason on stderr when they cannot be had.
set -euo pipefail
KERNEL=${1:?usage: fetch-9p-modules.sh k612|k73}
CACHE=${THPSHRINK_VM_CACHE:-/var/cache/thpshrink-vm}
MODS="fs/netfs/netfs net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p"
# 6.1's 9p also needs fscache (later kernels fold it into netfs): taken where it exists
OPT_MODS="fs/fscache/fscache"
skip() { echo "fetch-9p-modules: $KERNEL: $*" >&2; exit 77; }
dir=$CACHE/$KERNEL
out=$dir/modules-9p
if [ -s "$out/9p.ko" ] && [ -s "$out/9pnet_virtio.ko" ] && [ -e "$out/.with-fscache" ]; then echo "$out"; exit 0; fi
[ -s "$dir/package" ] || skip "no $dir/package (run fetch-kernel.sh $KERNEL first)"
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || skip "apt-get/dpkg-deb not available"
pkg=$(cat "$dir/package")
# linux-image-V holds the modules up to 6.x; from 7.x Debian ships them in linux-modules-V.
ver=${pkg#linux-image-}; ver=${ver#linux-binary-}
exec 9>"$CACHE/.lock"; flock 9
tmp=$(mktemp -d "${TMPDIR:-/tmp}/thps-9p.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for apt in "$CACHE"/apt-*; do
	[ -d "$apt/lists" ] || continue
	A=(-o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$apt/lists"
	   -o Dir::Cache="$apt/cache" -o APT::Sandbox::User=root -q)
	for p in "linux-modules-$ver" "$pkg"; do
		apt-cache "${A[@]}" show "$p" >/dev/null 2>&1 || continue
		(cd "$tmp" && rm -f ./*.deb && apt-get "${A[@]}" download "$p" >&2) || continue
		dpkg-deb -x "$tmp"/*.deb "$tmp/root"
		m=$(ls -d "$tmp"/root/usr/lib/modules/*/kernel "$tmp"/root/lib/modules/*/kernel 2>/dev/null | head -1 || true)
		[ -n "$m" ] && ls "$m"/fs/9p/9p.ko* >/dev/null 2>&1 || { rm -rf "$tmp/root"; continue; }
		mkdir -p "$out.tmp"
		for k in $MODS $OPT_MODS; do
			f=$(ls "$m/$k".ko* 2>/dev/null | head -1 || true)
			[ -n "$f" ] || { case " $OPT_MODS " in *" $k "*) continue ;; esac; }
			case $f in
			*.xz) xz -dc "$f" > "$out.tmp/$(basename "$k").ko" ;;
			*.zst) zstd -qdc "$f" > "$out.tmp/$(basename "$k").ko" ;;
			*) cp "$f" "$out.tmp/$(basename "$k").ko" ;;
			esac
		done
		: > "$out.tmp/.with-fscache"
		rm -rf "$out"; mv "$out.tmp" "$out"
		echo "$out"; exit 0
	done
done
skip "no package with fs/9p/9p.ko found for $pkg (tried linux-modules-$ver and $pkg in $CACHE/apt-*)"
