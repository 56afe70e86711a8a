# SPDX-License-Identifier: GPL-2.0-or-later
# 46-promote-optout: `thpshrink promote --pid` leaves alone what a process opted out of, under THP
# mode always (the boot's), where the kernel shows PR_SET_THP_DISABLE with EXCEPT_ADVISED (6.18+)
# as THPeligible 0 on every VMA. Three thpshrink-dense workloads fault their memory in under THP
# madvise (so it is in small pages: something to promote), then the mode goes back to always:
#   plain:  16 MiB dense (the baseline: it must become THPs) and 8 MiB advised MADV_NOHUGEPAGE
#           (no THP, counted opted out, never asked);
#   exadv:  16 MiB dense in a process that called prctl(PR_SET_THP_DISABLE, 1,
#           PR_THP_DISABLE_EXCEPT_ADVISED): no THP, counted opted out. SKIP where the kernel
#           refuses that prctl (before 6.18).
# khugepaged is put to sleep meanwhile, so that only promote makes THPs. Small: ~60 MiB, ~10 s.
D=/tmp/thps-optout
mkdir -p $D
DMB=16 NMB=8
# start NAME ARGS...: thpshrink-dense --wait; waits for its "before:" line (or its exit).
start() {
	_n=$1; shift
	thpshrink-dense --dense-mb $DMB --sparse-mb 0 --zero-mb 0 --wait "$@" >$D/$_n.out 2>&1 &
	eval "${_n}_PID=\$!"
	_i=0
	while ! grep -q '^before:' $D/$_n.out 2>/dev/null && [ $_i -lt 600 ]; do
		kill -0 "$(eval echo \$${_n}_PID)" 2>/dev/null || break
		sleep 0.1; _i=$((_i + 1))
	done
}
finish() { eval "_p=\$${1}_PID"; kill -USR1 "$_p" 2>/dev/null; wait "$_p" 2>/dev/null; }
v() { sed -n "s/^$2:.* $3=\([0-9]*\).*/\1/p" $D/$1.out | head -1; }

if ! grep -q '\[always\]' $THP_SYS/enabled; then
	vm_skip boot-mode "THP mode is not always at boot: $(cat $THP_SYS/enabled)"
	return 0 2>/dev/null || exit 0
fi
vm_set_thp_knob khugepaged/scan_sleep_millisecs 3600000
vm_set_thp_knob enabled madvise
start plain --nohuge-mb $NMB
start exadv --except-advised
vm_set_thp_knob enabled always
exadv_ok=1
if grep -q '^except_advised: unsupported' $D/exadv.out; then
	vm_skip except-advised "$(uname -r): $(grep '^except_advised' $D/exadv.out)"
	exadv_ok=0
fi
elig() { awk '/^THPeligible:/ { n[$2]++ } END { printf "THPeligible 1: %d VMAs, 0: %d", n[1], n[0] }' /proc/$1/smaps; }
echo "# plain: $(elig $plain_PID)"
[ $exadv_ok = 1 ] && echo "# exadv: $(elig $exadv_PID); status $(grep THP_enabled /proc/$exadv_PID/status)"
thpshrink promote --pid $plain_PID >$D/plain.promote 2>&1
cat $D/plain.promote | sed 's/^/# plain: /'
[ $exadv_ok = 1 ] && thpshrink promote --pid $exadv_PID >$D/exadv.promote 2>&1
[ $exadv_ok = 1 ] && sed 's/^/# exadv: /' $D/exadv.promote
finish plain
[ $exadv_ok = 1 ] && finish exadv

vm_check plain.dense "baseline: $(v plain after dense_thp) of $((DMB << 20)) dense bytes are THPs" \
	[ "$(v plain after dense_thp)" = $((DMB << 20)) ]
vm_check plain.nohuge "MADV_NOHUGEPAGE range: $(v plain after nohuge_thp) THP bytes (0)" \
	[ "$(v plain after nohuge_thp)" = 0 ]
vm_check plain.nohuge-said "$(grep -o 'opted_out=[0-9]*' $D/plain.promote) ($((NMB / 2))), $(grep -o 'refused=[0-9]*' $D/plain.promote) (0)" \
	grep -q "summary:.* refused=0 .* opted_out=$((NMB / 2)) " $D/plain.promote
vm_check plain.data "$(grep '^data:' $D/plain.out)" grep -q '^data: verified' $D/plain.out
if [ $exadv_ok = 1 ]; then
	vm_check exadv.no-thp "EXCEPT_ADVISED process: $(v exadv after dense_thp) THP bytes (0)" \
		[ "$(v exadv after dense_thp)" = 0 ]
	vm_check exadv.said "$(grep -o 'opted_out=[0-9]*' $D/exadv.promote) ($((DMB / 2))), $(grep -o 'collapsed=[0-9]*' $D/exadv.promote)" \
		grep -q "summary: found=0 collapsed=0 .* opted_out=$((DMB / 2)) " $D/exadv.promote
	vm_check exadv.data "$(grep '^data:' $D/exadv.out)" grep -q '^data: verified' $D/exadv.out
fi
# The main branch's binary, when a measurement put it beside the tools (never in CI): the before.
if command -v thpshrink-before >/dev/null && [ $exadv_ok = 1 ]; then
	vm_set_thp_knob enabled madvise
	start exadv2 --except-advised
	vm_set_thp_knob enabled always
	thpshrink-before promote --pid $exadv2_PID 2>&1 | grep '^summary' | sed 's/^/# before: /'
	finish exadv2
	echo "# before: EXCEPT_ADVISED process: $(v exadv2 after dense_thp) THP bytes"
fi
rm -rf $D
