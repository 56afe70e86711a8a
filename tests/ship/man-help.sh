#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# --help and the man pages list the same long options: for every program and every
# thpshrink command, the options --help prints equal the options the man page's section
# for it lists (-h/--help, accepted everywhere, are left out of the comparison).
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
B=$top_builddir
T=$(mktemp -d /tmp/thps-manhelp.XXXXXX)
trap 'rm -rf "$T"' EXIT
rc=0

# Options on the usage lines and on lines that start with an option.
help_opts() {
	"$@" --help 2>&1 | grep -E '^(Usage:|[[:space:]]+-|[[:space:]]+[a-z-]+ --)' | grep -oE -- '--[a-z][a-z0-9-]*' |
		grep -vx -- '--help' | sort -u
}
# Options a man page section lists as items: scdoc lines "*--opt*" (bold item headers),
# from the heading matching $2 to the next heading of the same or a higher level.
man_opts() {
	awk -v h="$2" '
		/^#/ { on = ($0 ~ "^#+ " h "$") ; next }
		on && /^\*-/ { print }' "$top_srcdir/man/$1.scd" |
		grep -oE -- '--[a-z][a-z0-9-]*' | grep -vx -- '--help' | sort -u
}
compare() { # NAME HELPFILE MANFILE
	if [ ! -s "$2" ]; then
		echo "FAIL: $1: --help lists no option"; rc=1
	elif diff -u "$2" "$3" >"$T/diff"; then
		echo "ok: $1: $(tr '\n' ' ' <"$2")"
	else
		cat "$T/diff"; echo "FAIL: $1: --help (-) and the man page (+) differ"; rc=1
	fi
}

help_opts "$B/thpshrink" >"$T/h"; man_opts thpshrink.8 'GLOBAL OPTIONS' >"$T/m"
compare "thpshrink" "$T/h" "$T/m"
for c in report probe reclaim promote validate explain; do
	help_opts "$B/thpshrink" "$c" >"$T/h"; man_opts thpshrink.8 "$c" >"$T/m"
	compare "thpshrink $c" "$T/h" "$T/m"
done
# Every command the CLI has is documented.
"$B/thpshrink" --help | awk '/^Commands:/ { on = 1; next } on && !NF { exit } on { print $1 }' >"$T/cmds"
for c in $(cat "$T/cmds"); do
	grep -q "^## $c\$" "$top_srcdir/man/thpshrink.8.scd" || { echo "FAIL: command $c not in thpshrink(8)"; rc=1; }
done
[ "$(wc -l <"$T/cmds")" -ge 5 ] || { echo "FAIL: thpshrink --help lists $(wc -l <"$T/cmds") commands"; rc=1; }
help_opts "$B/thpshrinkd" >"$T/h"; man_opts thpshrinkd.8 OPTIONS >"$T/m"
compare thpshrinkd "$T/h" "$T/m"
help_opts "$B/thpshrink-oci-hook" >"$T/h"; man_opts thpshrink-oci-hook.8 OPTIONS >"$T/m"
compare thpshrink-oci-hook "$T/h" "$T/m"
# thpshrink-nri where configure found protobuf-c (it is built with its page or not at all).
if [ -x "$B/thpshrink-nri" ]; then
	help_opts "$B/thpshrink-nri" >"$T/h"; man_opts thpshrink-nri.8 OPTIONS >"$T/m"
	compare thpshrink-nri "$T/h" "$T/m"
else
	echo "ok: thpshrink-nri not built (no protobuf-c), nor its page"
fi
# thpshrink-policy(5) describes every key `thpshrink validate --keys` knows.
"$B/thpshrink" validate --keys | awk '/^[a-z]/ { print $1 }' >"$T/keys"
[ "$(wc -l <"$T/keys")" -ge 10 ] || { echo "FAIL: validate --keys printed $(wc -l <"$T/keys") keys"; rc=1; }
for k in $(cat "$T/keys"); do
	grep -q "^\*$k\* (" "$top_srcdir/man/thpshrink-policy.5.scd" ||
		{ echo "FAIL: policy key $k not in thpshrink-policy(5)"; rc=1; }
done
[ $rc = 0 ] && echo "ok: $(wc -l <"$T/keys") policy keys in thpshrink-policy(5)"
exit $rc
