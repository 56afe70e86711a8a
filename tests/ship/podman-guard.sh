#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# podman-guard.sh CMD... — runs CMD (podman) so that it cannot write to the host's cgroupfs:
# in a private mount namespace every cgroup mount is read-only, and the cgroup2 hierarchy
# (read-only too) sits on /sys/fs/cgroup, so crun sees a unified host, not the hybrid one it
# refuses. With THPS_FAKE_CGROUP=1 /sys/fs/cgroup is an empty private tmpfs instead: podman
# creates pod cgroups (kube play) there, where they are only directories.
# Callers also run podman with cgroups off (see podman-env.sh).
set -eu
if [ "${THPS_GUARDED:-}" != 1 ]; then
	THPS_GUARDED=1 exec unshare -m --propagation private "$0" "$@"
fi
for m in $(awk '$2 ~ "^/sys/fs/cgroup" { print $2 }' /proc/self/mounts); do
	mount -o remount,bind,ro "$m"
done
if [ "${THPS_FAKE_CGROUP:-}" = 1 ]; then
	mount -t tmpfs -o size=1m,mode=755 thps-fake-cgroup /sys/fs/cgroup
elif [ -d /sys/fs/cgroup/unified ] && [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ]; then
	mount --bind /sys/fs/cgroup/unified /sys/fs/cgroup
	mount -o remount,bind,ro /sys/fs/cgroup
fi
exec "$@"
