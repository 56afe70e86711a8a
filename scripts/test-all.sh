#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# test-all.sh [--sanitize] — quick-start command 2: installs what the tests need and runs every
# test: unit (Check), integration on this host (real THPs), the real-kernel VM tests (qemu),
# with -Werror. With --sanitize: an ASan+UBSan build (halt_on_error=1) of the unit and
# integration tests, in build-asan/.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
[ -x configure ] || ./autogen.sh
if [ "${1:-}" = --sanitize ]; then
	dir=build-asan; flags="--enable-werror --enable-asan --enable-ubsan"; target=check
else
	dir=build; flags="--enable-werror"; target=check-all
fi
mkdir -p "$dir"
cd "$dir"
# shellcheck disable=SC2086
../configure --quiet $flags
make -j"$(nproc)" --quiet
make -j"$(nproc)" "$target"
