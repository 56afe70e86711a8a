# SPDX-License-Identifier: GPL-2.0-or-later
# 16-idle: idle page tracking (/sys/kernel/mm/page_idle/bitmap), which a scan memo could use to
# skip re-reading folios nobody touched since its last read. thpshrink does not use it: no Debian
# kernel (6.1, 6.12, 7.3) nor the RFC kernel builds CONFIG_IDLE_PAGE_TRACKING. Reports whether this
# kernel has the bitmap, checks the semantics the memo relies on (untouched after a mark ->
# idle; written or read through process_vm_readv after it -> not idle) and prints the cost of
# one mark + check next to a full read of the THP (thpshrink-idlecost).
vm_set_thp_knob khugepaged/scan_sleep_millisecs 3600000
out=/tmp/idlecost.out
if ! thpshrink-idlecost 128 >"$out" 2>&1; then
	vm_fail run "thpshrink-idlecost failed: $(cat "$out")"
	return 0 2>/dev/null || exit 0
fi
sed 's/^/# /' "$out"
if grep -q '^IDLE bitmap=absent' "$out"; then
	vm_skip semantics "no /sys/kernel/mm/page_idle/bitmap (CONFIG_IDLE_PAGE_TRACKING off): the memo re-reads candidates"
	vm_pass bitmap "absent on $THPS_KERNEL; /sys/kernel/mm holds: $(ls /sys/kernel/mm | tr '\n' ' ')"
	return 0 2>/dev/null || exit 0
fi
if grep -q '^SKIP' "$out"; then
	vm_skip semantics "$(grep '^SKIP' "$out")"
	return 0 2>/dev/null || exit 0
fi
vm_check bitmap "$(grep '^IDLE' "$out")" grep -q '^IDLE bitmap=present' "$out"
sem=$(grep '^SEMANTICS' "$out")
ratio_ok() { # a/b -> a == b > 0
	a=${1%/*} b=${1#*/}
	[ "$b" -gt 0 ] && [ "$a" = "$b" ]
}
vm_check untouched-idle "$sem" ratio_ok "$(echo "$sem" | sed 's/.*untouched_idle=\([0-9/]*\).*/\1/')"
# Not a check: x86 clears young bits without a TLB flush (ptep/pmdp_test_and_clear_young), so a
# write through a still-cached TLB entry may set no accessed bit until the next flush. The memo
# would then carry a stale count until its refresh turn; nothing acts without a re-read.
vm_pass written-busy "$(echo "$sem" | sed 's/.*written_busy=\([0-9/]*\).*/\1/') written-after-mark folios seen as accessed"
# GUP with FOLL_TOUCH marks the folio accessed (folio_mark_accessed clears its idle flag): so
# the memo must read a folio first and mark it idle after, never the other way round.
vm_check read-busy "$sem" ratio_ok "$(echo "$sem" | sed 's/.*read_busy=\([0-9/]*\).*/\1/')"
vm_pass cost "$(grep '^COST' "$out")"
