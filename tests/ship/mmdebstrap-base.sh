#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# mmdebstrap-base.sh VARIANT — prints the path of a cached Debian 12 root tarball made by
# mmdebstrap (VARIANT apt: apt and systemd with the package lists kept, for installing and
# verifying the .deb; minbase: the container base image). Remade when older than a week, so
# repeated runs take seconds.
set -eu
variant=$1
cache=/var/cache/thpshrink-mmdebstrap
tar=$cache/bookworm-$variant.tar
if [ -z "$(find "$tar" -mtime -7 2>/dev/null)" ]; then
	command -v mmdebstrap >/dev/null 2>&1 || { echo "mmdebstrap is missing (Debian package mmdebstrap)" >&2; exit 77; }
	mkdir -p "$cache"
	extra=""
	[ "$variant" = apt ] && extra="--skip=cleanup/apt/lists --include=systemd"
	# shellcheck disable=SC2086
	mmdebstrap --quiet --mode=root --format=tar --variant="$variant" $extra bookworm "$tar.tmp" >&2 ||
		{ rm -f "$tar.tmp"; echo "mmdebstrap --variant=$variant bookworm failed" >&2; exit 1; }
	mv "$tar.tmp" "$tar"
fi
echo "$tar"
