# SPDX-License-Identifier: GPL-2.0-or-later
# lib.sh: helpers for the VM scenarios (tests/vm/scenarios/NN-name.sh), sourced by the guest.
#
# A scenario is a busybox sh script run once per boot, in order, with these set:
#   THPS_KERNEL  k73 | k612 | k61 | rfc    VM_SCENARIO  its name without the NN- prefix
#   THPS_KCLASS  upstream | rfc | none (what the probe found; branch on this, not on the name)
#   THPS_MTHP_SIZES  the mTHP sizes in KiB below the PMD size (hugepages-*kB), "" before 6.8
# It reports with result lines, which the host collects; every check must be able to fail:
#   vm_pass NAME DETAIL...   -> RESULT PASS <scenario>.NAME DETAIL
#   vm_fail NAME DETAIL...   -> RESULT FAIL <scenario>.NAME DETAIL
#   vm_skip NAME REASON...   -> RESULT SKIP <scenario>.NAME REASON
#   vm_check NAME DETAIL CMD...  runs CMD (e.g. `[ "$a" -lt "$b" ]`): PASS if it succeeds, else FAIL
#   vm_has TEXT PATTERN      true if a line of TEXT matches the grep PATTERN (for vm_check)
# Cgroups and workloads (cgroup2 is at /sys/fs/cgroup, +memory enabled for the root's children):
#   vm_cgroup_new NAME       creates /sys/fs/cgroup/NAME; prints its path
#   vm_bloat_start CG ARGS.. starts `thpshrink-bloat ARGS` already inside cgroup CG (a path or a
#                            NAME under /sys/fs/cgroup) before it allocates (cgroup v2 does not
#                            move charges), waits for READY; sets BLOAT_PID BLOAT_START
#                            BLOAT_END BLOAT_LOG; returns 1 (and says why) if it never got ready
#   vm_bloat_verify [PID LOG] SIGUSR1, waits for VERIFY; prints the line; returns 0 on VERIFY OK
#   vm_check_bloat NAME [PID LOG]  vm_check NAME on vm_bloat_verify: the data intact
#   vm_bloat_stop [PID]      SIGTERM and wait
#   vm_check_sibling_untouched CG MC0 THP0  checks a sibling workload (SIB_PID SIB_START SIB_END,
#                            8 THPs) lost no memory since MC0/THP0 and kept all its THPs
#   vm_finish_bloat_and_daemon DPID  vm_check_bloat data-intact, stops the workload, SIGTERM to
#                            thpshrinkd DPID, checks its exit status is 0
# thpshrinkd's endpoint on 127.0.0.1:$PORT:
#   vm_metrics               the /metrics text
#   vm_metric NAME LABELS... the sum of NAME's series whose labels contain every LABELS fragment
#                            (0 if none); fragments hold no spaces
# Reading the kernel:
#   vm_mem_current CG        memory.current in bytes
#   vm_memstat CG KEY        a memory.stat value ("n/a" if absent)
#   vm_vmstat KEY            a /proc/vmstat value ("n/a" if absent)
#   vm_thp_knob REL          cat /sys/kernel/mm/transparent_hugepage/REL ("n/a" if absent)
#   vm_set_thp_knob REL VAL  writes it and prints "# knob REL: OLD -> VAL"
#                            (init restores the boot-time max_ptes_none, khugepaged sleeps and
#                            THP mode after every scenario, and kills its cgroups' processes)
#   vm_uptime                seconds since boot (for timings)
# The host's Debian (boots with initramfs.d/node.sh's share: 70-node, 47-podman):
#   vm_host_root R           a chroot at R of the host's /usr over 9p; 1 after a SKIP if not
#   vm_mib BYTES             BYTES in MiB, one decimal
# Checking with the host's tools:
#   vm_export NAME FILE      sends FILE to the host (gzip + base64 on the console); run-vm.sh then
#                            checks it by its name's extension (check-exports.sh: .prom with
#                            promtool check metrics, .json with python3's json) and reports
#                            <scenario>.export.NAME
CG_ROOT=/sys/fs/cgroup
THP_SYS=/sys/kernel/mm/transparent_hugepage

vm_result() { # KIND NAME DETAIL...
	_k=$1 _n=$2; shift 2
	echo "RESULT $_k ${VM_SCENARIO:+$VM_SCENARIO.}$_n $*"
}
vm_pass() { vm_result PASS "$@"; }
vm_fail() { vm_result FAIL "$@"; }
vm_skip() { vm_result SKIP "$@"; }
# vm_once NAME KERNEL WHY: a part whose checks do not depend on the kernel runs on KERNEL only in
# make check-vm, for CI's time; thps.NAME-all=1 (or thps.all=1) in THPS_VM_APPEND runs it on every
# kernel. Elsewhere it says SKIP (tests/skips-allowed.txt lists it) and returns 1.
vm_once() {
	[ "$THPS_KERNEL" = "$2" ] && return 0
	grep -qE "(^| )thps\.($1-)?all=1( |$)" /proc/cmdline && return 0
	vm_skip "$1" "runs on $2 in make check-vm ($3); on every kernel with THPS_VM_APPEND=thps.$1-all=1"
	return 1
}
vm_check() { # NAME DETAIL CMD...
	_cn=$1 _cd=$2; shift 2
	if "$@"; then vm_pass "$_cn" "$_cd"; else vm_fail "$_cn" "$_cd"; fi
}

vm_has() { printf '%s\n' "$1" | grep -q -- "$2"; }

vm_uptime() { cut -d' ' -f1 /proc/uptime; }
vm_export() { # NAME FILE
	gzip -c "$2" | base64 | while read -r _l; do echo "THPS-FILE $VM_SCENARIO.$1 $_l"; done
}
vm_mib() { awk -v b="$1" 'BEGIN{printf "%.1f", b/1048576}'; }

vm_cgpath() { case $1 in /*) echo "$1" ;; *) echo "$CG_ROOT/$1" ;; esac; }
vm_cgroup_new() {
	_p=$(vm_cgpath "$1")
	mkdir -p "$_p" && echo "$_p"
}

vm_bloat_start() { # CG ARGS...
	_cg=$(vm_cgpath "$1"); shift
	_n=$(basename "$_cg")
	BLOAT_LOG=/tmp/bloat-$_n.log
	_ready=/tmp/bloat-$_n.ready
	rm -f "$_ready"; : > "$BLOAT_LOG"
	# The child joins the cgroup, then execs: every page it faults in is charged there.
	sh -c "echo \$\$ > '$_cg/cgroup.procs' && exec thpshrink-bloat --ready-file '$_ready' $*" \
		>> "$BLOAT_LOG" 2>&1 &
	_i=0
	while [ ! -s "$_ready" ] && [ $_i -lt 600 ]; do sleep 0.1; _i=$((_i + 1)); done
	if [ ! -s "$_ready" ]; then
		echo "# thpshrink-bloat in $_cg never got ready: $(cat "$BLOAT_LOG")"
		return 1
	fi
	BLOAT_PID=$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' "$_ready")
	BLOAT_START=$(sed -n 's/.*start=\(0x[0-9a-f]*\).*/\1/p' "$_ready")
	BLOAT_END=$(sed -n 's/.*end=\(0x[0-9a-f]*\).*/\1/p' "$_ready")
	echo "# bloat in $_cg: $(cat "$_ready")"
}

vm_bloat_verify() { # [PID LOG]
	_p=${1:-$BLOAT_PID} _l=${2:-$BLOAT_LOG}
	_before=$(grep -c VERIFY "$_l")
	kill -USR1 "$_p" || return 1
	_i=0
	while [ "$(grep -c VERIFY "$_l")" = "$_before" ] && [ $_i -lt 300 ]; do sleep 0.1; _i=$((_i + 1)); done
	_v=$(grep VERIFY "$_l" | tail -1)
	echo "$_v"
	case $_v in "VERIFY OK"*) return 0 ;; *) return 1 ;; esac
}

vm_check_bloat() { # NAME [PID LOG]: the workload re-reads every mapped subpage, all intact
	_cn=$1; shift
	_v=$(vm_bloat_verify "$@")
	vm_check "$_cn" "$_v" [ "${_v#VERIFY OK}" != "$_v" ]
}

vm_bloat_stop() { # [PID]
	kill "${1:-$BLOAT_PID}" 2>/dev/null
	wait "${1:-$BLOAT_PID}" 2>/dev/null
	return 0
}

# thpshrinkd on loopback port $PORT: its /metrics, and the sum of the series of NAME whose
# labels contain LABELS (0 if none).
vm_metrics() { wget -q -O - "http://127.0.0.1:$PORT/metrics" 2>/dev/null; }
vm_metric() { # NAME LABELS [LABELS...]: series whose labels contain every LABELS fragment
	_mn=$1; shift
	vm_metrics | awk -v n="$_mn" -v cs="$*" 'BEGIN { k = split(cs, c, " ") }
		index($0, n "{") == 1 { for (i = 1; i <= k; i++) if (!index($0, c[i])) next; v += $NF }
		END { print v + 0 }'
}
# The end of a scenario with one workload and thpshrinkd: the data checked, SIGTERM answered
# with exit status 0.
vm_finish_bloat_and_daemon() { # DAEMON_PID
	vm_check_bloat data-intact
	vm_bloat_stop
	kill -TERM "$1"
	wait "$1"
	_rs=$?
	vm_check sigterm "exit status $_rs" [ $_rs = 0 ]
}

# After acting on a cgroup, its sibling CG (the workload SIB_PID, SIB_START..SIB_END, 8 THPs):
# nothing taken from it (it may grow by itself: khugepaged collapsing its stack or heap on
# THP=always was seen on the rfc kernel, +2 MiB, which is not our doing), no THP of it split.
# memory.current also counts the per-CPU charge stock, up to MEMCG_CHARGE_BATCH (64) pages a
# CPU that a drain anywhere hands back (-276 KiB seen on 6.12): the bound allows that, no more.
vm_check_sibling_untouched() { # CG MEMORY_CURRENT_BEFORE ANON_THP_BEFORE
	_mc1=$(vm_mem_current "$1") _thp1=$(vm_memstat "$1" anon_thp)
	_stock=$((64 * 4096 * $(grep -c ^processor /proc/cpuinfo) + 65536))
	vm_check sibling-untouched "memory.current $2 -> $_mc1 (bound: -$_stock, the charge stock), anon_thp $3 -> $_thp1" \
		[ $(($2 - _mc1)) -le $_stock -a "$_thp1" -ge "$3" ]
	vm_thpcheck "$SIB_PID" "$SIB_START" "$SIB_END"
	vm_check sibling-not-split "sibling THPs=$chk_thp of 8" [ "$chk_thp" = 8 ]
}

# vm_host_root R: a chroot at R of the host's /usr, shared read-only over virtio-9p (the boot
# must carry initramfs.d/node.sh's share), with the guest's own /proc, /sys and /dev, a tmpfs
# root, /tmp and /run, and Debian's /etc essentials. Returns 1 after a SKIP line saying why not.
vm_host_root() { # R
	for _m in netfs fscache 9pnet 9pnet_virtio 9p; do
		[ -f /node/9p/$_m.ko ] || [ $_m != fscache ] || continue
		insmod /node/9p/$_m.ko 2>/dev/null || grep -q "^$_m " /proc/modules || {
			vm_skip share "insmod $_m.ko failed"; return 1; }
	done
	mkdir -p "$1"
	mount -t tmpfs -o size=64m,mode=755 hostroot "$1"
	mkdir -p "$1"/usr "$1"/etc "$1"/proc "$1"/sys "$1"/dev "$1"/tmp "$1"/run "$1"/var
	# one mount of the share per boot (a virtio-9p channel serves one mount), bound where needed
	if ! grep -q " /hostusr 9p " /proc/mounts; then
		mkdir -p /hostusr
		mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostusr /hostusr || {
			vm_skip share "mount of the host's /usr over 9p failed"; return 1; }
	fi
	mount --bind /hostusr "$1"/usr
	for _l in bin lib lib64 sbin; do ln -s usr/$_l "$1"/$_l; done
	cp -a /node/etc/. "$1"/etc/
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$1"/etc/passwd
	printf 'root:x:0:\nnogroup:x:65534:\n' > "$1"/etc/group
	echo '127.0.0.1 localhost' > "$1"/etc/hosts
	mount --bind /proc "$1"/proc; mount --bind /sys "$1"/sys; mount --bind /dev "$1"/dev
	mount --bind /sys/fs/cgroup "$1"/sys/fs/cgroup
	mount -t tmpfs -o mode=1777 tmp "$1"/tmp
	mount -t tmpfs -o mode=755 run "$1"/run
}

vm_mem_current() { cat "$(vm_cgpath "$1")/memory.current"; }
vm_memstat() { awk -v k="$2" '$1==k{print $2; f=1} END{if(!f)print "n/a"}' "$(vm_cgpath "$1")/memory.stat"; }
vm_vmstat() { awk -v k="$1" '$1==k{print $2; f=1} END{if(!f)print "n/a"}' /proc/vmstat; }
vm_thp_knob() { cat "$THP_SYS/$1" 2>/dev/null || echo n/a; }
vm_set_thp_knob() { # REL VALUE
	_old=$(vm_thp_knob "$1")
	echo "$2" > "$THP_SYS/$1" && echo "# knob $1: $_old -> $2"
}

# thpshrink's output helpers
#   vm_summary TEXT          sets waste_before waste_after memory_current_before
#                            memory_current_after given_back acted from `thpshrink reclaim`'s
#                            "summary:" line (all empty if absent: a check on them then fails)
#   vm_thpcheck PID START END  prints thpshrink-thpcheck's SUMMARY line and sets chk_thp
#                            chk_full chk_full_thp chk_lowutil chk_lowutil_thp from it
#   vm_lowutil_queued        RFC kernel: THPs on the shrinker's low-util lists (debugfs)
vm_summary() {
	waste_before="" waste_after="" memory_current_before="" memory_current_after="" given_back="" acted=""
	_s=$(echo "$1" | sed -n 's/^summary: //p' | tail -1)
	[ -n "$_s" ] && eval "$_s"
}
vm_thpcheck() {
	_s=$(thpshrink-thpcheck "$@" | grep '^SUMMARY')
	echo "$_s"
	chk_thp=$(echo "$_s" | sed -n 's/.* thp=\([0-9]*\).*/\1/p')
	chk_full=$(echo "$_s" | sed -n 's/.* full=\([0-9]*\).*/\1/p')
	chk_full_thp=$(echo "$_s" | sed -n 's/.* full_thp=\([0-9]*\).*/\1/p')
	chk_lowutil=$(echo "$_s" | sed -n 's/.* lowutil=\([0-9]*\).*/\1/p')
	chk_lowutil_thp=$(echo "$_s" | sed -n 's/.* lowutil_thp=\([0-9]*\).*/\1/p')
}
vm_lowutil_queued() {
	cat /sys/kernel/debug/shrinker/thp-low-util-*/count 2>/dev/null |
		awk '{for (i = 2; i <= NF; i++) n += $i} END {print n + 0}'
}

# Figures a check compares, from sources other than the code under test:
#   vm_num V...              true if every V is a decimal integer (an empty or missing figure is
#                            not one: a check built on vm_num fails on it)
#   vm_pct_ge A B P          A >= P % of B, both figures numbers and B > 0
#   vm_planted_waste ARGS..  the bytes of waste `thpshrink-bloat ARGS` plants, from its
#                            parameters alone: the zero subpages of every --mix folio not full
#                            and the unmapped subpages of every --partial one (4 KiB pages)
vm_num() {
	[ $# -gt 0 ] || return 1
	for _v; do
		case $_v in '' | -) return 1 ;; -*) _v=${_v#-} ;; esac
		case $_v in *[!0-9]*) return 1 ;; esac
	done
}
vm_pct_ge() { vm_num "$1" "$2" && [ "$2" -gt 0 ] && [ $(($1 * 100)) -ge $(($2 * $3)) ]; }
vm_planted_waste() {
	_fsz=$(vm_thp_knob hpage_pmd_size) _mixes="" _parts=""
	while [ $# -gt 0 ]; do
		case $1 in
		--mix) _mixes="$_mixes,$2"; shift ;;
		--partial) _parts="$_parts,$2"; shift ;;
		--folio-size)
			case $2 in *[Kk]) _fsz=$((${2%?} * 1024)) ;; *[Mm]) _fsz=$((${2%?} << 20)) ;; *) _fsz=$2 ;; esac
			shift ;;
		esac
		shift
	done
	echo "$_mixes;$_parts" | awk -v sub_=$((_fsz / 4096)) -F';' '{
		n = split($1, m, ","); for (i = 1; i <= n; i++) if (split(m[i], g, ":") == 2 && g[1] < sub_) w += (sub_ - g[1]) * g[2]
		n = split($2, m, ","); for (i = 1; i <= n; i++) if (split(m[i], g, ":") == 2) w += (sub_ - g[1]) * g[2]
		printf "%d\n", w * 4096 }'
}
