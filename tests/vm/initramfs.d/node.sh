# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by run-vm.sh (S, KERNEL, here, srcdir, builddir, outdir, copy_with_libs): what
# scenarios/70-node.sh and 47-podman.sh need, only when one of them is part of this boot and
# the kernel is not k61 or rfc (they skip there): the services' sources (tests/vm/node/), the
# Java service compiled with javac, the Go service built with Debian's golang (static), the
# shipped policies, the packaged hooks.d file, the kernel's 9p modules (fetch-9p-modules.sh)
# and a read-only virtio-9p share of the host's /usr (QEMU_EXTRA), from which the guest runs
# Debian's python3, node, java, memcached, Redis and podman in a chroot. Other boots stay as
# they were: no share, nothing added. What 70-node misses is written to /node/missing; the
# scenario says SKIP with it.
_node_want=no
case $KERNEL in
k61 | rfc) ;; # no zero-page remap on split: 70-node skips there, and the boot stays as it was
*)
	# shellcheck disable=SC2053
	[[ 70-node == ${THPS_VM_SCENARIOS:-*} ]] && _node_want=yes
	[[ 47-podman == ${THPS_VM_SCENARIOS:-*} ]] && _node_want=yes
	[[ 48-daemonset == ${THPS_VM_SCENARIOS:-*} ]] && _node_want=yes ;;
esac
if [ $_node_want = yes ]; then
	_n=$S/node
	mkdir -p "$_n/9p" "$_n/policies" "$_n/etc"
	: > "$_n/missing"
	install -m 644 "$here"/node/pysvc.py "$here"/node/nodesvc.js "$here"/node/loadgen.py "$here"/node/whose.py "$here"/node/keep.py "$_n/"
	install -m 644 "$srcdir"/deploy/policies/*.json "$_n/policies/"
	# 47-podman: the hooks.d file as the package makes it (pkglibexecdir /usr/libexec/thpshrink)
	mkdir -p "$_n/hooks.d"
	sed 's|@pkglibexecdir[@]|/usr/libexec/thpshrink|g' "$srcdir"/deploy/oci/thpshrink.json.in > "$_n/hooks.d/thpshrink.json"
	if command -v javac >/dev/null; then
		javac -d "$_n" "$here/node/Svc.java" 2>> "$outdir/$KERNEL.fetch.log" || echo "javac failed on Svc.java" >> "$_n/missing"
	else
		echo "javac missing (package default-jdk-headless)" >> "$_n/missing"
	fi
	if command -v go >/dev/null; then
		# built at test time; Go's caches under the build tree (HOME may be read-only)
		(cd "$here/node" && CGO_ENABLED=0 GOCACHE="$builddir/tests/vm/go-cache" GOPATH="$builddir/tests/vm/go-path" \
			GOFLAGS=-mod=mod GO111MODULE=off go build -o "$_n/gosvc" gosvc.go) 2>> "$outdir/$KERNEL.fetch.log" ||
			echo "go build of gosvc.go failed (see $KERNEL.fetch.log)" >> "$_n/missing"
	else
		echo "go missing (package golang-go)" >> "$_n/missing"
	fi
	# What the guest runs from the share, resolved here (/etc/alternatives is not shared)
	{
		for _b in python3 node java memcached redis-server redis-cli redis-benchmark; do
			# Debian's own (a python3 of pyenv or the like in PATH is not under /usr)
			_p=/usr/bin/$_b
			[ -e "$_p" ] || _p=$(command -v "$_b" 2>/dev/null)
			[ -z "$_p" ] || _p=$(readlink -f "$_p")
			case $_p in
			/usr/*) ;;
			*) echo "$_b missing or not under /usr ($_p)" >> "$_n/missing"; _p= ;;
			esac
			# redis-server is redis-check-rdb under another name: keep the name
			[ "$_b" = redis-server ] && [ -n "$_p" ] && _p=/usr/bin/redis-server
			echo "BIN_$(echo "$_b" | tr a-z- A-Z_)=$_p"
		done
		# 47-podman's (it says SKIP without them; 70-node does not need them)
		for _b in podman conmon crun; do
			_p=$(readlink -f "/usr/bin/$_b" 2>/dev/null)
			case $_p in /usr/*) [ -x "$_p" ] || _p= ;; *) _p= ;; esac
			echo "BIN_$(echo "$_b" | tr a-z- A-Z_)=$_p"
		done
	} > "$_n/env"
	# The JVM's configuration lives in /etc (its jvm.cfg links there): a copy, not a share.
	_jc=$(readlink -f "$(dirname "$(readlink -f "$(command -v java 2>/dev/null || echo /nonexistent)")")/../lib/jvm.cfg" 2>/dev/null)
	[ -n "$_jc" ] && [ -e "$_jc" ] && { mkdir -p "$_n$(dirname "$_jc")"; cp -a "$(dirname "$_jc")/." "$_n$(dirname "$_jc")/"; }
	[ -e /etc/ld.so.cache ] && cp /etc/ld.so.cache "$_n/etc/"
	if _m=$("$here/fetch-9p-modules.sh" "$KERNEL" 2>> "$outdir/$KERNEL.fetch.log"); then
		cp "$_m"/*.ko "$_n/9p/"
		QEMU_EXTRA="${QEMU_EXTRA:-} -virtfs local,path=/usr,mount_tag=hostusr,security_model=none,readonly=on,multidevs=remap"
		progs="$progs node(9p:/usr)"
		# 70-node alone takes ~11 min under TCG here (~15 with the shrinker peer on k612): a
		# boot with it gets more time, and 48-daemonset (loading the image: 2-3 min on a busy
		# host) 7 min more
		_t=2400
		[[ 48-daemonset == ${THPS_VM_SCENARIOS:-*} ]] && _t=2820
		# and 49-containerd (k612 only in make check-vm: vm_once) 2-8 min more
		[ "$KERNEL" = k612 ] && [[ 49-containerd == ${THPS_VM_SCENARIOS:-*} ]] && _t=$((_t + 600))
		# the shrinker peer's reclaim loop reads memory.pressure: Debian boots with PSI off
		APPEND_EXTRA="${APPEND_EXTRA:-} psi=1"
		: "${THPS_VM_TIMEOUT:=$_t}"
	else
		echo "no 9p modules: $(tail -1 "$outdir/$KERNEL.fetch.log")" >> "$_n/missing"
	fi
fi
unset _node_want _n _b _p _jc _m _t
