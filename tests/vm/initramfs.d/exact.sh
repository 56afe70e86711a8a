# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by run-vm.sh (S, KERNEL, here, builddir, outdir): what scenarios/38-exact.sh needs, only
# when it is part of this boot: a 48 MiB file of random bytes shared read-only over virtio-9p
# (mount_tag "hot", cache=loose in the guest, so its pages are the reader's page cache, charged to
# its cgroup and evictable), and the kernel's 9p modules where they are not built in (the RFC
# kernel has them built in). Whatever is missing is written to /exact/missing; the scenario's
# page-cache checks then say SKIP with it, the rest runs.
# shellcheck disable=SC2053
if [[ 38-exact == ${THPS_VM_SCENARIOS:-*} ]]; then
	_e=$S/exact
	mkdir -p "$_e/9p"
	: > "$_e/missing"
	_hot=$builddir/tests/vm/hot
	if [ ! -s "$_hot/hot.dat" ]; then
		# two boots at once (run-lanes.sh): each writes its own file, the first rename wins
		mkdir -p "$_hot"
		head -c $((48 << 20)) /dev/urandom > "$_hot/hot.dat.$$" && mv -n "$_hot/hot.dat.$$" "$_hot/hot.dat"
		rm -f "$_hot/hot.dat.$$"
	fi
	case ${KERNEL%%-*} in
	rfc) ;;
	*)
		if _m=$("$here/fetch-9p-modules.sh" "${KERNEL%%-*}" 2>> "$outdir/$KERNEL.fetch.log"); then
			cp "$_m"/*.ko "$_e/9p/"
		else
			echo "no 9p modules: $(tail -1 "$outdir/$KERNEL.fetch.log")" >> "$_e/missing"
		fi
		;;
	esac
	[ -s "$_hot/hot.dat" ] && QEMU_EXTRA="${QEMU_EXTRA:-} -virtfs local,path=$_hot,mount_tag=hot,security_model=none,readonly=on"
	unset _e _hot _m
fi
