#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs every fuzz target's replay binary over its committed corpus (regressions of every
# fuzz finding). A target without a corpus directory is an error: each must have seeds.
set -u
fail=0; n=0
for bin in "$top_builddir"/tests/fuzz/fuzz-*; do
	[ -x "$bin" ] || continue
	case "$bin" in *.o|*.c) continue ;; esac
	name=$(basename "$bin"); name=${name#fuzz-}
	corpus="$top_srcdir/tests/fuzz/corpus/$name"
	if [ ! -d "$corpus" ]; then
		echo "FAIL: fuzz target '$name' has no corpus directory $corpus"; fail=1; continue
	fi
	if "$bin" "$corpus"; then n=$((n + 1)); else echo "FAIL: replay of $name"; fail=1; fi
done
[ "$n" -gt 0 ] || { echo "FAIL: no fuzz target was built"; exit 1; }
echo "replayed the corpora of $n fuzz targets"
exit $fail
