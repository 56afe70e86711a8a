#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# build-image.sh: makes the project's image (make image) in the host's podman storage, for
# 48-daemonset (initramfs.d/daemonset.sh saves it for the VM). `make check-vm` runs it first:
# ~1 min (56 s here from nothing), less with podman's layer cache. podman as tests/ship/image.sh
# runs it (no host cgroup written, chroot isolation, a base image made by mmdebstrap). Exit 0 when the image exists afterwards; 77 with
# the reason when podman cannot build here (48-daemonset then FAILs, saying so).
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
[ "${THPS_GUARDED:-}" = 1 ] || exec "$top_srcdir/tests/ship/podman-guard.sh" "$0" "$@"
T=$(mktemp -d /tmp/thps-vm-image.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$top_srcdir/tests/ship/podman-env.sh"
V=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "$top_builddir/config.h")
IMAGE=ghcr.io/thpshrink/thpshrink:$V
# Always from the tree under test: an image of the same version left by another commit's run
# would test that commit's programs (podman's layer cache makes a rebuild short).
s=$(date +%s)
make -C "$top_builddir" --no-print-directory image IMAGE_BUILD_FLAGS=--isolation=chroot >"$T/build.log" 2>&1 ||
	{ tail -30 "$T/build.log"; echo "build-image.sh: make image failed"; exit 1; }
podman image prune -f >/dev/null
echo "build-image.sh: built $IMAGE in $(($(date +%s) - s)) s"
