#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/vm/apt-mirror.sh finds the Debian mirror in an apt configuration (deb822 .sources, the
# one-line format with options, security sources skipped), says clearly when there is none, and
# no tracked script names a Debian mirror itself (the VM kernels come from the machine's own).
set -u
top=${top_srcdir:-$(dirname "$0")/../..}
m=$top/tests/vm/apt-mirror.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { # NAME WANT GOT
	if [ "$2" = "$3" ]; then echo "ok: $1: $3"; else echo "FAIL: $1: want '$2', got '$3'"; fail=1; fi
}
mkdir -p "$T/a/etc/apt/sources.list.d" "$T/b/etc/apt/sources.list.d" "$T/c/etc/apt"
cat > "$T/a/etc/apt/sources.list.d/debian.sources" <<'S'
Types: deb
URIs: http://security.mirror.example.invalid/debian-security
Suites: bookworm-security
Components: main

# a comment
Types: deb-src deb
URIs: http://mirror.example.invalid/debian/ http://second.example.invalid/debian
Suites: bookworm bookworm-updates
Components: main
S
check deb822 http://mirror.example.invalid/debian "$(unset THPSHRINK_DEBIAN_MIRROR; "$m" "$T/a")"
cat > "$T/b/etc/apt/sources.list" <<'S'
# deb http://commented.example.invalid/debian bookworm main
deb-src http://src.example.invalid/debian bookworm main
deb [signed-by=/usr/share/keyrings/x.gpg arch=amd64] http://local.example.invalid/debian bookworm main
S
check one-line http://local.example.invalid/debian "$(unset THPSHRINK_DEBIAN_MIRROR; "$m" "$T/b")"
out=$(unset THPSHRINK_DEBIAN_MIRROR; "$m" "$T/c" 2>&1); rc=$?
check none-fails "1 apt-mirror: no Debian mirror in" "$rc $(echo "$out" | cut -c1-31)"
check override http://override.example.invalid "$(THPSHRINK_DEBIAN_MIRROR=http://override.example.invalid "$m" "$T/c")"
# No script names a Debian mirror's host (www.debian.org, the copyright format's home, is none)
if [ -e "$top/.git" ] && command -v git >/dev/null; then
	hits=$(cd "$top" && git ls-files -- '*.sh' '*.am' 'tests/vm/*' 'scripts/*' 'debian/*' 'deploy/container/*' |
		xargs grep -E -o 'https?://[a-z0-9.-]*debian\.(org|net)' 2>/dev/null | grep -v '://www\.debian\.org')
	check no-mirror-in-scripts "" "$hits"
fi
exit $fail
