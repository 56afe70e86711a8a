#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# run-libfuzzer.sh SRCDIR BUILDDIR SECONDS [RESULTFILE] — builds every fuzz target with clang's libFuzzer
# and ASan+UBSan, and fuzzes each for SECONDS, starting from its committed corpus. A crash is
# saved as tests/fuzz/corpus/<name>/crash-* (commit it: it becomes a regression test) and fails.
set -eu
src=$(cd "$1" && pwd); b=$2; secs=${3:-30}; result=${4:-/dev/null}
: > "$result"
command -v clang >/dev/null || { echo "SKIP: clang not installed (Debian package clang)"; exit 77; }
mkdir -p "$b"; b=$(cd "$b" && pwd)
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
if [ ! -f "$b/Makefile" ]; then
	(cd "$b" && "$src/configure" --quiet CC=clang CFLAGS="-O1 $san -fsanitize=fuzzer-no-link")
fi
# The libraries in link order (Makefile.am's LIBTHPS_ALL).
libs="libthps-daemon.a libthps-cli.a libthps-policy.a libthps-actuators.a libthps-sources.a
	libthps-kernel.a libthps-scanner.a libthps-pages.a libthps-oci.a libthps-core.a"
# The NRI plugin's libraries where configure found libprotobuf-c (HAVE_NRI); its target otherwise
# is left out, saying so.
nri_libs=""; nri_flags=""
if env -u MAKEFLAGS -u MAKELEVEL make -C "$b" -n libthps-nri.a >/dev/null 2>&1; then
	nri_libs="libthps-nri.a libthps-nri-proto.a"
	nri_flags="-I$src/plugins/nri -I$b/plugins/nri -Ulinux $(pkg-config --cflags libprotobuf-c)"
fi
env -u MAKEFLAGS -u MAKELEVEL make -C "$b" --quiet $nri_libs $libs
incs=""
for d in controller/core controller/pages controller/policy controller/daemon controller/cli \
	plugins/scanner plugins/kernel plugins/oci plugins; do incs="$incs -I$src/$d"; done
# Every tests/fuzz/fuzz-NAME.c but the shared helper is a target.
targets=$(cd "$src/tests/fuzz" && ls fuzz-*.c | sed 's/\.c$//' | grep -v '^fuzz-util$')
# FUZZ_TARGETS="nri k8s" fuzzes only those (a parser one has just changed).
[ -n "${FUZZ_TARGETS:-}" ] && targets=$(for t in $FUZZ_TARGETS; do echo "fuzz-$t"; done)
pkgs="json-c libmnl libsystemd libmicrohttpd gnutls"
flags=$(pkg-config --cflags $pkgs)
fail=0
for t in $targets; do
	name=${t#fuzz-}
	extra_flags=""; extra_libs=""
	if [ "$name" = nri ]; then
		if [ -z "$nri_libs" ]; then
			echo "SKIP fuzz.nri: configure found no libprotobuf-c/protoc-c (thpshrink-nri not built)" |
				tee -a "$result"
			continue
		fi
		extra_flags=$nri_flags
		extra_libs="$(for l in $nri_libs; do printf '%s ' "$b/$l"; done) $(pkg-config --libs libprotobuf-c)"
	fi
	clang -O1 $san -fsanitize=fuzzer -include "$b/config.h" $incs $extra_flags \
		-I"$src/tests/fuzz" $flags "$src/tests/fuzz/$t.c" "$src/tests/fuzz/fuzz-util.c" \
		$extra_libs $(for l in $libs; do printf '%s ' "$b/$l"; done) $(pkg-config --libs $pkgs) -lpthread -lm \
		-o "$b/$t"
	work=$(mktemp -d)
	cp "$src/tests/fuzz/corpus/$name/"* "$work/" 2>/dev/null || true
	echo "fuzzing $name for ${secs}s"
	if ! (cd "$work" && UBSAN_OPTIONS=halt_on_error=1 "$b/$t" -max_total_time="$secs" \
		-max_len=65536 -artifact_prefix="$src/tests/fuzz/corpus/$name/" . >"$b/$t.log" 2>&1); then
		echo "FAIL: $name: finding saved under tests/fuzz/corpus/$name/ (log $b/$t.log)"
		tail -20 "$b/$t.log"
		echo "FAIL fuzz.$name see $b/$t.log" >> "$result"
		fail=1
	else
		runs=$(grep -E '^Done [0-9]+ runs' "$b/$t.log" | tail -1)
		echo "  $runs"
		echo "PASS fuzz.$name ${secs}s: $runs" >> "$result"
	fi
	rm -rf "$work"
done
exit $fail
