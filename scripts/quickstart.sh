#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# quickstart.sh — quick-start command 1: installs the build dependencies, builds thpshrink and
# runs `thpshrink report` on this machine (as root: reading other processes' pagemap needs it).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
[ -x configure ] || ./autogen.sh
mkdir -p build
cd build
[ -f Makefile ] || ../configure --quiet
make -j"$(nproc)" --quiet
exec ./thpshrink report "$@"
