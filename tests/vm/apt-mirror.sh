#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# apt-mirror.sh [ROOT]: prints the Debian mirror this machine's apt uses (the URI of its first
# "deb" source for a Debian suite that is not a security one), read from ROOT/etc/apt/sources.list
# and ROOT/etc/apt/sources.list.d/*.list (one-line format) and *.sources (deb822). The VM tests
# fetch Debian's kernels from it through a private apt state, so an offline or mirrored site
# uses its own mirror and no mirror's name is written in any script. $THPSHRINK_DEBIAN_MIRROR
# overrides it. Exit: 0 and the URI; 1 and the reason on stderr when there is none.
root=${1:-}
if [ -n "${THPSHRINK_DEBIAN_MIRROR:-}" ]; then
	echo "$THPSHRINK_DEBIAN_MIRROR"
	exit 0
fi
files=""
for f in "$root/etc/apt/sources.list" "$root"/etc/apt/sources.list.d/*.list \
	"$root"/etc/apt/sources.list.d/*.sources; do
	[ -r "$f" ] && files="$files $f"
done
uri=$(
	for f in $files; do
		case $f in
		*.sources) # deb822: stanzas of "Key: value" lines, blank-line separated
			awk 'function flush() { if (types ~ /(^| )deb( |$)/ && enabled != "no" && suites !~ /-security/ && uris != "") { split(uris, u, " "); print u[1] }
					types = uris = suites = enabled = "" }
				/^[ \t]*#/ { next }
				/^[ \t]*$/ { flush(); next }
				tolower($1) == "types:" { $1 = ""; types = $0 }
				tolower($1) == "uris:" { $1 = ""; uris = $0; sub(/^ +/, "", uris) }
				tolower($1) == "suites:" { $1 = ""; suites = $0 }
				tolower($1) == "enabled:" { enabled = tolower($2) }
				END { flush() }' "$f" ;;
		*) # "deb [options] URI SUITE COMPONENT..."
			awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				if ($(i + 1) !~ /-security/) print $i }' "$f" ;;
		esac
	done | grep -v -i 'security' | head -1
)
if [ -z "$uri" ]; then
	echo "apt-mirror: no Debian mirror in this machine's apt sources (${files:-none readable}):" \
		"add one, or set THPSHRINK_DEBIAN_MIRROR" >&2
	exit 1
fi
echo "${uri%/}"
