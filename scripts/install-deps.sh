#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# install-deps.sh build|test — installs what thpshrink needs from Debian 12's packages.
#   build: compiler, autotools and the libraries the programs link: enough for
#          `./configure && make` (quick-start command 1); with the optional protobuf-c
#          library and compiler, which configure needs only for thpshrink-nri (the NRI plugin).
#   test:  build + scdoc for the man pages (`make man`; `make check` lints them) and what the
#          test suites use (Check, python3-jsonschema, qemu and busybox for
#          the real-kernel VM tests, prometheus/promtool, crun, redis, clang for fuzzing, clang-format
#          for the layout test;
#          debhelper, lintian, mmdebstrap, mandoc, podman for the package and image tests;
#          the kubernetes-models npm package for the DaemonSet's schema test; memcached, golang,
#          a JDK, Node.js and gnuplot for the node scenario 70-node; redis and the JDK for
#          make bench-latency and its tools' test).
set -eu
what=${1:-build}
BUILD="build-essential autoconf automake libtool pkg-config libjson-c-dev
       libmnl-dev libsystemd-dev libmicrohttpd-dev libgnutls28-dev"
# Optional: without them configure leaves out thpshrink-nri and says so.
BUILD_OPTIONAL="libprotobuf-c-dev protobuf-c-compiler"
TEST="scdoc check python3 python3-jsonschema python3-yaml qemu-system-x86 busybox-static cpio xz-utils zstd
      prometheus openssl crun redis-server redis-tools clang libclang-rt-14-dev clang-format valgrind curl
      ca-certificates procps iproute2 kmod file debhelper lintian mmdebstrap mandoc podman
      catatonit memcached golang-go default-jdk-headless nodejs gnuplot-nox"
case "$what" in
build) pkgs="$BUILD $BUILD_OPTIONAL" ;;
test) pkgs="$BUILD $BUILD_OPTIONAL $TEST" ;;
*) echo "usage: $0 build|test" >&2; exit 2 ;;
esac
if [ "$(id -u)" != 0 ]; then
	echo "install-deps.sh: run as root (apt-get install)" >&2
	exit 1
fi
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=300 update -q
	# shellcheck disable=SC2086
	apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends $missing
fi
if [ "$what" = test ]; then
	# npm comes with nodejs from some sources, as Debian's own package otherwise.
	command -v npm >/dev/null 2>&1 || {
		export DEBIAN_FRONTEND=noninteractive
		apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends nodejs npm
	}
	npmdir=/var/cache/thpshrink-npm
	[ -d "$npmdir/node_modules/kubernetes-models" ] && [ -d "$npmdir/node_modules/js-yaml" ] ||
		npm install --no-audit --no-fund --prefix "$npmdir" kubernetes-models@4.5.1 js-yaml@4.1.0
fi
# prometheus' package starts a server on :9090; the tests run their own on loopback.
if [ "$what" = test ] && command -v systemctl >/dev/null 2>&1; then
	systemctl disable --now prometheus prometheus-node-exporter redis-server memcached >/dev/null 2>&1 || true
fi
# The VM tests' kernels (Debian 7.3 from trixie-backports, 6.12, 6.1), fetched once into
# /var/cache/thpshrink-vm through private apt states (tests/vm/fetch-kernel.sh); one that cannot
# be had now is fetched (or skipped, with the reason) by `make check-vm` later.
if [ "$what" = test ]; then
	fk=$(cd "$(dirname "$0")/.." && pwd)/tests/vm/fetch-kernel.sh
	for k in k73 k612 k61; do
		if img=$("$fk" "$k" 2>/tmp/thpshrink-fetch-$k.log); then
			echo "install-deps.sh: VM kernel $k: $img"
		else
			echo "install-deps.sh: VM kernel $k not fetched now: $(tail -1 /tmp/thpshrink-fetch-$k.log)"
		fi
	done
fi
echo "install-deps.sh: $what dependencies present"
