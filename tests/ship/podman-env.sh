# SPDX-License-Identifier: GPL-2.0-or-later
# podman-env.sh (sourced, with T set): podman that creates no cgroup and sets no ulimit above
# the sandbox's hard limits; the base image debian:bookworm imported from a cached mmdebstrap
# tarball, so no registry is needed. Sets PODMAN or prints SKIP and exits 77.
command -v podman >/dev/null 2>&1 || { echo "SKIP: podman is missing (Debian package podman)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: rootful podman needs root"; exit 77; }
cat >"$T/containers.conf" <<'CONF'
[containers]
cgroups = "no-conmon"
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
CONF
export CONTAINERS_CONF="$T/containers.conf"
PODMAN="podman --runtime-flag=cgroup-manager=disabled"
if ! podman image exists docker.io/library/debian:bookworm; then
	base=$("$top_srcdir/tests/ship/mmdebstrap-base.sh" minbase) || { echo "SKIP: no Debian 12 base: $base"; exit 77; }
	podman import --quiet --change 'CMD ["/bin/bash"]' "$base" docker.io/library/debian:bookworm >/dev/null
fi
# Can a container run here at all? If not, say exactly why.
if ! $PODMAN run --rm --network=host docker.io/library/debian:bookworm true >"$T/probe.log" 2>&1; then
	echo "SKIP: podman cannot run a container here: $(tail -1 "$T/probe.log")"
	exit 77
fi
