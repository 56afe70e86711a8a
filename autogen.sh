#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Regenerates the build system from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
autoreconf --install --force --warnings=all,no-portability >/dev/null
echo "Now run ./configure"
