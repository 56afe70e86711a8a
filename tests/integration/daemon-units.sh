#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The systemd units: systemd-analyze verify accepts them (with ExecStart pointed at the built
# daemon) and the offline security score stays at or below 4.0 ("OK"; 3.1 when written).
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
command -v systemd-analyze >/dev/null 2>&1 || { echo "SKIP: systemd-analyze is missing (Debian package systemd)"; exit 77; }
T=$(mktemp -d /tmp/thps-units.XXXXXX)
trap 'rm -rf "$T"' EXIT
sed "s|/usr/sbin/thpshrinkd|$top_builddir/thpshrinkd|" "$top_srcdir/deploy/systemd/thpshrinkd.service" >"$T/thpshrinkd.service"
cp "$top_srcdir/deploy/systemd/thpshrinkd.socket" "$T/"
if ! systemd-analyze verify "$T/thpshrinkd.service" "$T/thpshrinkd.socket" >"$T/verify.out" 2>&1; then
	cat "$T/verify.out"; echo "FAIL: systemd-analyze verify"; exit 1
fi
[ -s "$T/verify.out" ] && { cat "$T/verify.out"; echo "FAIL: systemd-analyze verify printed warnings"; exit 1; }
echo "ok: systemd-analyze verify"
grep -q '^Type=notify$' "$T/thpshrinkd.service" && grep -q '^WatchdogSec=' "$T/thpshrinkd.service" ||
	{ echo "FAIL: not Type=notify with a watchdog"; exit 1; }
if systemd-analyze security --offline=true "$T/thpshrinkd.service" >"$T/sec.out" 2>&1; then
	score=$(sed -n 's/.*Overall exposure level for thpshrinkd.service: \([0-9.]*\).*/\1/p' "$T/sec.out")
	[ -n "$score" ] || { cat "$T/sec.out"; echo "FAIL: no security score"; exit 1; }
	echo "ok: systemd-analyze security --offline: exposure $score"
	awk -v s="$score" 'BEGIN { exit !(s <= 4.0) }' || { grep '✗' "$T/sec.out"; echo "FAIL: exposure $score > 4.0"; exit 1; }
else
	echo "note: this systemd-analyze has no --offline security mode"
fi
echo PASS
