#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The container image: `make image` builds deploy/container/Containerfile with podman (base
# debian:bookworm made by mmdebstrap and imported, no registry); the image carries the
# version label and tag the DaemonSet names, no compiler or -dev package; in it, privileged
# with the host's pid namespace, `thpshrink report` finds the THPs of a thpshrink-bloat
# running on the host, and `thpshrinkd --once` writes metrics promtool accepts, with
# thpshrink_build_info of this version.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
[ "${THPS_GUARDED:-}" = 1 ] || exec "$top_srcdir/tests/ship/podman-guard.sh" "$0" "$@"
T=$(mktemp -d /tmp/thps-image.XXXXXX)
bloat=""
trap 'rm -rf "$T"; [ -z "$bloat" ] || kill "$bloat" 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$top_srcdir/tests/ship/podman-env.sh"
V=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "$top_builddir/config.h")
IMAGE=ghcr.io/thpshrink/thpshrink:$V
grep -q "image: $IMAGE\$" "$top_srcdir/deploy/kubernetes/daemonset.yaml" || fail "the DaemonSet does not name $IMAGE"

s=$(date +%s)
# chroot isolation: the build's RUN steps need no OCI runtime and no cgroup.
make -C "$top_builddir" --no-print-directory image IMAGE_BUILD_FLAGS=--isolation=chroot >"$T/build.log" 2>&1 ||
	{ tail -30 "$T/build.log"; fail "make image"; }
# The build stage is left as an untagged image of ~730 MB per run: drop it.
podman image prune -f >/dev/null
echo "ok: make image built $IMAGE in $(($(date +%s) - s)) s, $(podman image inspect "$IMAGE" --format '{{.Size}}') bytes"
label=$(podman image inspect "$IMAGE" --format '{{index .Labels "org.opencontainers.image.version"}}')
[ "$label" = "$V" ] || fail "label org.opencontainers.image.version is '$label', not $V"
echo "ok: version label $label"

run() { $PODMAN run --rm --privileged --pid=host --network=host "$@"; }
run --entrypoint /bin/sh "$IMAGE" -c 'dpkg-query -W -f "\${Package}\n"' >"$T/pkgs"
bad=$(grep -Ex -e '.*-dev' -e '(gcc|cpp|g\+\+)(-[0-9]+)?' -e 'make|autoconf|automake|check|scdoc' "$T/pkgs" || true)
[ -z "$bad" ] || fail "build packages in the runtime image: $bad"
for p in libjson-c5 libmicrohttpd12 libmnl0 libsystemd0 libprotobuf-c1; do
	grep -qx "$p" "$T/pkgs" || fail "runtime library $p missing from the image"
done
out=$(run --entrypoint /usr/bin/thpshrink "$IMAGE" --version)
[ "$out" = "thpshrink $V" ] || fail "thpshrink --version in the image said '$out'"
echo "ok: runtime libraries only; thpshrink --version says $V"
# The DaemonSet's NRI sidecar runs from the same image: its libraries must be there.
out=$(run --entrypoint /usr/libexec/thpshrink/thpshrink-nri "$IMAGE" --help 2>&1) ||
	fail "thpshrink-nri --help in the image failed: $(echo "$out" | head -3)"
echo "$out" | grep -q -- '--socket' || fail "thpshrink-nri --help in the image said '$(echo "$out" | head -3)'"
echo "ok: thpshrink-nri runs in the image"

# A THP workload on the host, seen from the container through the host's /proc.
"$top_builddir/thpshrink-bloat" --mix 0:8,512:4 --ready-file "$T/ready" --seconds 300 >/dev/null &
bloat=$!
for _ in $(seq 50); do [ -s "$T/ready" ] && break; sleep 0.1; done
[ -s "$T/ready" ] || fail "thpshrink-bloat did not start"
pid=$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' "$T/ready")
backed=$(sed -n 's/.*thp_backed=\([0-9]*\).*/\1/p' "$T/ready")
run --entrypoint /usr/bin/thpshrink "$IMAGE" report --pid "$pid" >"$T/report" 2>&1 ||
	{ cat "$T/report"; fail "thpshrink report in the container"; }
if [ "$backed" -gt 0 ]; then
	n=$(awk '$1 == "THPs" { print $2; exit }' "$T/report")
	[ "$n" = "$backed" ] || { cat "$T/report"; fail "report in the container counts '$n' THPs of pid $pid, the host $backed"; }
	echo "ok: thpshrink report in the container sees the $n THPs of host pid $pid"
else
	grep -q '^scan: 1 process scanned' "$T/report" || { cat "$T/report"; fail "report did not scan pid $pid"; }
	echo "ok: thpshrink report in the container scanned host pid $pid (the host gave it no THP)"
fi

mkdir "$T/out"
run -v "$T/out:/out" "$IMAGE" --once --listen none --textfile /out/metrics.prom >"$T/once.log" 2>&1 ||
	{ cat "$T/once.log"; fail "thpshrinkd --once in the container"; }
promtool check metrics <"$T/out/metrics.prom" || fail "promtool check metrics"
grep -qx "thpshrink_build_info{version=\"$V\"} 1" "$T/out/metrics.prom" || fail "no thpshrink_build_info of $V"
grep -q '^thpshrink_scans_total 1$' "$T/out/metrics.prom" || fail "thpshrinkd --once did not count its pass"
echo "ok: thpshrinkd --once in the container: promtool accepts its metrics, build_info $V, one pass"
echo PASS
