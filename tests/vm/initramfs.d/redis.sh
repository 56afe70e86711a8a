# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by run-vm.sh: puts Debian's redis-server, redis-cli and redis-benchmark (packages
# redis-server, redis-tools) into the initramfs with their libraries, for scenarios/60-redis.sh.
# Without them the scenario says SKIP and why. redis-server is a symlink to redis-check-rdb and
# picks its role by its name: it is copied under its own name.
for _r in redis-server redis-cli redis-benchmark; do
	_p=$(command -v "$_r" 2>/dev/null) || continue
	copy_with_libs "$_p"
	progs="$progs $_r"
done
unset _r _p
