#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# build-root.sh: the Debian 13 (trixie) root that scenarios/49-containerd.sh shares read-only
# into the guest over virtio-9p: containerd 1.7.24 (with NRI), runc, python3-grpcio and the CRI
# .proto (golang-github-kubernetes-cri-api-dev), compiled into Python stubs here once with
# python3-grpc-tools (so the guest, under TCG, does not run protoc). Made with mmdebstrap from the
# mirror this machine's apt uses (apt-mirror.sh: no mirror name is written anywhere), kept in
# $THPSHRINK_VM_CACHE/trixie-containerd/root and rebuilt only when PKGS below change.
# Prints the root's path. Exit: 0; 77 and the reason on stderr when it cannot be had.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${THPSHRINK_VM_CACHE:-/var/cache/thpshrink-vm}
PKGS="containerd,runc,python3-grpcio,python3-grpc-tools,python3-protobuf,golang-github-kubernetes-cri-api-dev,golang-github-gogo-protobuf-dev"
dir=$CACHE/trixie-containerd
skip() { echo "containerd-root: $*" >&2; exit 77; }
if [ -s "$dir/root/cri/api_pb2_grpc.py" ] && [ "$(cat "$dir/packages" 2>/dev/null)" = "$PKGS" ]; then
	echo "$dir/root"; exit 0
fi
command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed (package mmdebstrap)"
[ "$(id -u)" = 0 ] || skip "mmdebstrap's root mode needs root"
mirror=$("$here/apt-mirror.sh") || skip "no Debian mirror (apt-mirror.sh)"
exec 9>"$CACHE/.lock-trixie-containerd"; flock 9
mkdir -p "$dir"
if [ ! -x "$dir/root.tmp/usr/bin/containerd" ] || [ "$(cat "$dir/root.tmp/.packages" 2>/dev/null)" != "$PKGS" ]; then
	rm -rf "$dir/root.tmp"
	mmdebstrap --variant=minbase --mode=root --include="$PKGS" \
		--customize-hook='mkdir -p "$1/var/lib/containerd" "$1/run/containerd" "$1/opt/nri/plugins" "$1/etc/nri/conf.d"' \
		trixie "$dir/root.tmp" "$mirror" >&2 || skip "mmdebstrap of trixie failed"
	echo "$PKGS" > "$dir/root.tmp/.packages"
fi
# The stubs: protoc from python3-grpc-tools on the package's api.proto, in /cri of the root.
# Debian 13's cri-api still imports gogoproto (golang-github-gogo-protobuf-dev has it);
# grpc_tools' own _proto directory holds descriptor.proto, which gogo.proto imports.
T=$dir/root.tmp
p=$(cd "$T" && find usr/share/gocode -path "*cri-api/pkg/apis/runtime/v1/api.proto" | head -1)
[ -n "$p" ] || skip "no cri-api api.proto in the root"
rm -rf "$T/cri"; mkdir -p "$T/cri"; cp "$T/$p" "$T/cri/api.proto"
chroot "$T" sh -c 'set -e; g=$(python3 -c "import grpc_tools, os; print(os.path.dirname(grpc_tools.__file__))")/_proto
	cd /cri; python3 -m grpc_tools.protoc -I/cri -I/usr/share/gocode/src -I"$g" --python_out=/cri --grpc_python_out=/cri \
		/cri/api.proto /usr/share/gocode/src/github.com/gogo/protobuf/gogoproto/gogo.proto
	PYTHONPATH=/cri python3 -c "import api_pb2_grpc"' >&2 || skip "protoc of the CRI api.proto failed"
chroot "$T" dpkg-query -W containerd runc python3-grpcio golang-github-kubernetes-cri-api-dev > "$T/cri/versions"
rm -rf "$dir/root"; mv "$dir/root.tmp" "$dir/root"
echo "$PKGS" > "$dir/packages"
echo "$dir/root"
