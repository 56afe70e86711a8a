#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Whole-machine pass benchmark: the scanner's CPU per pass over every process of the host,
# with a small-page load (4 processes x 256 MiB of 4 KiB anonymous pages, touched) and
# thpshrink-bloat's THPs and partly mapped THPs running, against the same pass looking every
# PTE-mapped page up in kpageflags (the old way), in the same run. Needs root.
# Usage: pass.sh BUILDDIR [ROUNDS]
set -u
b=${1:?usage: pass.sh BUILDDIR [ROUNDS]}
rounds=${2:-3}
[ "$(id -u)" = 0 ] || { echo "pass.sh: needs root (kpageflags)"; exit 77; }
t=$(mktemp -d /tmp/pass-bench.XXXXXX)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$t"' EXIT
for i in 1 2 3 4; do
	/usr/bin/python3 -c '
import sys, time
b = bytearray(256 << 20)
b[::4096] = b"\x01" * len(range(0, len(b), 4096))
open(sys.argv[1], "w").write("ok")
time.sleep(600)' "$t/small$i" &
	pids="$pids $!"
done
"$b/thpshrink-bloat" --mix 51:64 --partial 100:16 --ready-file "$t/bloat" >/dev/null &
pids="$pids $!"
i=0
while [ "$(ls "$t" | wc -l)" -lt 5 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(ls "$t" | wc -l)" -ge 5 ] || { echo "pass.sh: the load did not start"; exit 1; }
echo "load: 4 x 256 MiB of small pages; $(cat "$t/bloat")"
"$b/tests/bench/pass-bench" "$rounds"
