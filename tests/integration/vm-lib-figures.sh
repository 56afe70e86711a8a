#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/vm/lib.sh's figure helpers, under the guest's shell (busybox sh where installed): the
# waste thpshrink-bloat plants, computed from its parameters, matches what its layout holds
# (the figures 20-reclaim, 30-split and 38-exact assert against), and a missing, empty or
# non-numeric figure makes every comparison fail instead of passing on nothing.
set -u
src=${top_srcdir:-..}
T=$(mktemp -d "${TMPDIR:-/tmp}/vmlib.XXXXXX")
trap 'rm -rf "$T"' EXIT
sh=sh
command -v busybox >/dev/null && sh="busybox sh"
mkdir -p "$T/thp"
echo 2097152 > "$T/thp/hpage_pmd_size"
cat > "$T/t.sh" <<SH
. "$src/tests/vm/lib.sh"
THP_SYS=$T/thp
fails=0
t() { # NAME WANT(0|1) CMD...: CMD's truth must be WANT
	_tn=\$1 _tw=\$2; shift 2
	if "\$@"; then _tg=0; else _tg=1; fi
	if [ \$_tg = \$_tw ]; then echo "ok: \$_tn"; else echo "FAIL: \$_tn (got \$_tg, want \$_tw)"; fails=\$((fails + 1)); fi
}
eq() { [ "\$1" = "\$2" ] || { echo "  got '\$1', want '\$2'"; return 1; }; }
# 24 x 504 zero subpages + 24 x 504 unmapped ones (38-exact, PMD)
t planted-pmd 0 eq "\$(vm_planted_waste --mix 8:24,512:8 --partial 8:24)" \$((48 * 504 * 4096))
t planted-partial-only 0 eq "\$(vm_planted_waste --partial 8:24)" \$((24 * 504 * 4096))
# 24 empty + 8 x 502 (20-reclaim, 30-split); full THPs plant none
t planted-split-mix 0 eq "\$(vm_planted_waste --mix 0:24,10:8,512:8)" \$((24 * 512 * 4096 + 8 * 502 * 4096))
t planted-full-none 0 eq "\$(vm_planted_waste --mix 512:8)" 0
# 16 KiB folios: 768 empty, 768 with 1 of 4 mapped (38-exact on 7.3)
t planted-16k 0 eq "\$(vm_planted_waste --folio-size 16K --mix 0:768,4:64 --partial 1:768)" \$((768 * 4 * 4096 + 768 * 3 * 4096))
t planted-64k 0 eq "\$(vm_planted_waste --folio-size 64K --mix 1:192,16:64 --partial 1:192)" \$((2 * 192 * 15 * 4096))
t num-int 0 vm_num 0 123 -5
t num-empty 1 vm_num ""
t num-none 1 vm_num
t num-na 1 vm_num n/a
t num-mixed 1 vm_num 12 12a
t pct-95 0 vm_pct_ge 95 100 95
t pct-94 1 vm_pct_ge 94 100 95
t pct-empty-figure 1 vm_pct_ge "" 100 95
t pct-empty-bound 1 vm_pct_ge 100 "" 95
t pct-zero-bound 1 vm_pct_ge 100 0 95
vm_summary "no summary line here"
t summary-absent-empty 0 eq "\$waste_before\$given_back" ""
t summary-absent-fails 1 vm_pct_ge "\$given_back" 100 95
vm_summary "summary: waste_before=7 waste_after=0 memory_current_before=9 memory_current_after=2 given_back=7 acted=1"
t summary-read 0 eq "\$waste_before/\$given_back" 7/7
exit \$fails
SH
$sh "$T/t.sh"
