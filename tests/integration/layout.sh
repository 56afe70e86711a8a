#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The source layout's rules (docs/design.md, Layout), checked on the tree and the programs built:
#   - the layering, with no exception: every "..." include of a source folder names a header of
#     its own folder or of a folder the table below allows it, and so does every -I of the make
#     targets built from it (Makefile.am, mk/*.am); a copy of the tree with one forbidden edge
#     must fail the check;
#   - no source folder holds more than 20 .c files;
#   - the OCI hook links no libmicrohttpd, libmnl, libsystemd nor libcgroup (ldd);
#   - controller/ and plugins/ are formatted as .clang-format says (clang-format --dry-run).
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
S=$top_srcdir
rc=0
fail() { echo "FAIL: $*"; rc=1; }

# The layering (docs/design.md, Layout): each source folder, then the folders whose headers it may
# include besides its own. No plugin uses another plugin's folder: what the scanner and the
# actuators share is controller/pages; the plugins' interfaces the programs call are in core
# (plugin.h, actuator.h, promote.h); the hook uses the OCI parser, a folder of one header. The
# table is closed (a folder may use what the folders it uses use), and a folder missing from it
# fails, so a new folder starts with a rule.
LAYERS='
controller/core
controller/pages	controller/core
controller/policy	controller/core
plugins		controller/core
plugins/scanner		controller/core controller/pages
plugins/kernel		controller/core
plugins/actuators	controller/core controller/pages
plugins/oci		controller/core
plugins/nri/proto
plugins/nri		controller/core plugins/nri/proto
controller/daemon	controller/core controller/pages controller/policy
controller/cli		controller/core controller/pages controller/policy
controller/hook		controller/core plugins/oci
controller/nri		controller/core plugins/oci plugins/nri plugins/nri/proto
'
layer_allows() { # folder: the folders it may use, or "-" when it has no rule
	echo "$LAYERS" | awk -v d="$1" '$1 == d { $1 = ""; print; f = 1 } END { if (!f) print "-" }'
}

# The variables of Makefile.am and mk/*.am, expanded as far as they name each other, then one
# line per target: "<folders of its .c sources>|<its -I folders>" (the -I of its _CPPFLAGS,
# else AM_CPPFLAGS, and of its _CFLAGS; configure's substitutions stay unexpanded).
make_targets() {
	cat "$1"/Makefile.am "$1"/mk/*.am | awk '
	function expand(s, depth,   out, name, at, len) {
		out = ""
		while (match(s, /\$\([A-Za-z0-9_]+\)/)) {
			at = RSTART; len = RLENGTH # the recursion below moves RSTART
			name = substr(s, at + 2, len - 3)
			out = out substr(s, 1, at - 1)
			out = out ((name in v && depth < 10) ? expand(v[name], depth + 1) : substr(s, at, len))
			s = substr(s, at + len)
		}
		return out s
	}
	/\\$/ { sub(/\\$/, ""); line = line $0 " "; next }
	{ line = line $0 }
	line ~ /^[A-Za-z_][A-Za-z0-9_]*[ \t]*\+?=/ {
		name = line; sub(/[ \t]*\+?=.*/, "", name)
		val = line; sub(/^[^=]*=/, "", val)
		v[name] = (line ~ /^[^=]*\+=/ && name in v) ? v[name] " " val : val
	}
	{ line = "" }
	END {
		for (n in v) {
			if (n !~ /_SOURCES$/ || n == "BUILT_SOURCES") continue
			t = substr(n, 1, length(n) - 8)
			sub(/^nodist_/, "", t) # generated sources: the flags are those of the library
			dirs = ""
			k = split(expand(v[n], 0), src, /[ \t]+/)
			for (i = 1; i <= k; i++) if (src[i] ~ /\.c$/) {
				d = src[i]; if (d ~ /\//) sub(/\/[^\/]*$/, "", d); else d = "."
				if (index(" " dirs " ", " " d " ") == 0) dirs = dirs (dirs ? " " : "") d
			}
			flags = ((t "_CPPFLAGS") in v ? v[t "_CPPFLAGS"] : v["AM_CPPFLAGS"]) " " v[t "_CFLAGS"]
			k = split(expand(flags, 0), f, /[ \t]+/)
			incs = ""
			for (i = 1; i <= k; i++) if (f[i] ~ /^-I\$\((top_srcdir|srcdir)\)\//) {
				d = f[i]; sub(/^-I\$\([a-z_]+\)\//, "", d); sub(/\/$/, "", d)
				incs = incs (incs ? " " : "") d
			}
			print t "|" dirs "|" incs
		}
	}'
}

# Checks the tree at $1 against the table; prints one "FAIL: ..." per breach.
check_layers() {
	root=$1
	# the table is closed: A uses B and B uses C means A uses C
	echo "$LAYERS" | while read -r a uses; do
		[ -n "$a" ] || continue
		for b in $uses; do
			for c in $(layer_allows "$b"); do
				[ "$c" = - ] || case " $uses " in *" $c "*) ;; *) echo "FAIL: layout.sh's table: $a uses $b, which uses $c, but $a may not use $c" ;; esac
			done
		done
	done
	for d in "$root"/controller/* "$root"/plugins/* "$root"/plugins; do
		[ -d "$d" ] || continue
		rel=${d#"$root"/}
		ls "$d"/*.[ch] >/dev/null 2>&1 || continue
		uses=$(layer_allows "$rel")
		if [ "$uses" = - ]; then
			echo "FAIL: $rel has no rule in layout.sh's table of layers (docs/design.md, Layout)"
			continue
		fi
		for f in "$d"/*.[ch]; do
			sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r h; do
				[ -f "$d/$h" ] && continue
				# C that protoc-c generates at build time from a .proto of this folder
				case $h in *.pb-c.h) [ -f "$d/${h%.pb-c.h}.proto" ] && continue ;; esac
				ok=
				for u in $uses; do [ -f "$root/$u/$h" ] && ok=$u && break; done
				[ -n "$ok" ] && continue
				from=$(cd "$root" && for g in controller/*/"$h" plugins/*/"$h" plugins/"$h"; do [ -f "$g" ] && echo "$g" && break; done)
				echo "FAIL: $rel/${f##*/} includes \"$h\"${from:+ ($from)}: $rel may use only its own headers and those of:${uses:- nothing}"
			done
		done
	done
	make_targets "$root" | while IFS='|' read -r t dirs incs; do
		case " $dirs " in *" controller/"* | *" plugins"*) ;; *) continue ;; esac
		case $dirs in *" "*)
			echo "FAIL: make target $t builds sources of several folders ($dirs): one folder, one library"
			continue ;;
		esac
		uses=$(layer_allows "$dirs")
		for i in $incs; do
			[ "$i" = "$dirs" ] && continue
			case " $uses " in *" $i "*) continue ;; esac
			echo "FAIL: make target $t ($dirs) has -I $i on its include path: $dirs may use only:${uses:- nothing}"
		done
	done
}

# The check can fail: on a copy of the tree, each forbidden edge alone must make it FAIL, and
# name that edge.
layers_selftest() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/thps-layout.XXXXXX") || { fail "mktemp"; return; }
	for edge in 1 2 3 4 5 6; do
		# (chmod: distcheck's source tree is read-only, and so are its copies)
		if ! { rm -rf "$tmp/t" && mkdir "$tmp/t" && chmod -R u+w "$tmp" &&
			cp -R "$S/controller" "$S/plugins" "$S/mk" "$S/Makefile.am" "$tmp/t/" &&
			chmod -R u+w "$tmp/t"; }; then
			fail "could not copy the tree to $tmp"
			break
		fi
		case $edge in
		1) what='an actuator including a header of the scanner (plugins/scanner/pfnset.h)'
		   want='split.c includes "pfnset.h"'
		   echo '#include "pfnset.h"' >>"$tmp/t/plugins/actuators/split.c" ;;
		2) what="the daemon including an actuator's private header (promote-smaps.h)"
		   want='pass.c includes "promote-smaps.h"'
		   echo '#include "promote-smaps.h"' >>"$tmp/t/controller/daemon/pass.c" ;;
		3) what='core including a header of policy'
		   want='log.c includes "policy.h"'
		   echo '#include "policy.h"' >>"$tmp/t/controller/core/log.c" ;;
		4) what="the scanner's folder on the actuators' -I path"
		   want='libthps_actuators_a .* -I plugins/scanner '
		   # shellcheck disable=SC2016 # $(SCANNER_INC) is make's, written as is
		   sed -i 's/^\(libthps_actuators_a_CPPFLAGS = .*\)$/\1 $(SCANNER_INC)/' "$tmp/t/mk/plugins.am" ;;
		5) what='a library built with the default include path (every folder)'
		   want='libthps_kernel_a .* -I plugins/scanner '
		   sed -i '/^libthps_kernel_a_CPPFLAGS/d' "$tmp/t/mk/plugins.am" ;;
		6) what='a source folder with no rule in the table'
		   want='plugins/extra has no rule'
		   mkdir "$tmp/t/plugins/extra" && echo 'int x;' >"$tmp/t/plugins/extra/x.c" ;;
		esac
		if check_layers "$tmp/t" | grep -q "^FAIL: .*$want"; then
			echo "ok: the layering check fails on $what"
		else
			fail "the layering check passes a tree with $what"
		fi
	done
	rm -rf "$tmp"
}

out=$(check_layers "$S")
if [ -n "$out" ]; then
	echo "$out"
	rc=1
else
	echo "ok: every include and every -I of controller/ and plugins/ follows the table of layers"
fi
layers_selftest

for d in "$S"/controller/* "$S"/plugins/*; do
	[ -d "$d" ] || continue
	n=$(find "$d" -maxdepth 1 -name '*.c' | wc -l)
	[ "$n" -le 20 ] || fail "${d#"$S"/} holds $n .c files (at most 20)"
done
echo "ok: no source folder over 20 .c files"

hook=$top_builddir/thpshrink-oci-hook
if [ ! -x "$hook" ]; then
	fail "no $hook (build it first)"
elif ! command -v ldd >/dev/null; then
	echo "SKIP: ldd not found: the hook's link list is not checked"
else
	bad=$(ldd "$hook" | grep -E 'libmicrohttpd|libmnl|libsystemd|libcgroup' || true)
	[ -z "$bad" ] && echo "ok: thpshrink-oci-hook links $(ldd "$hook" | awk '/=>/{print $1}' | tr '\n' ' ')" ||
		fail "thpshrink-oci-hook links $bad"
fi

# No circle among the source folders' own files: a file's module is its name without .c/.h;
# "A includes B.h" is an edge A -> B; tsort refuses any loop, direct or through others (the
# daemon: manager -> pass -> records <- publish, never back).
for d in "$S"/controller/* "$S"/plugins/*; do
	[ -d "$d" ] || continue
	edges=$(for f in "$d"/*.[ch]; do
		[ -e "$f" ] || continue
		a=$(basename "$f"); a=${a%.*}
		sed -n 's/^#include "\([^"/]*\)\.h"/\1/p' "$f" | while read -r b; do
			[ -e "$d/$b.h" ] && [ "$b" != "$a" ] && echo "$a $b"
		done
	done)
	if [ -n "$edges" ] && ! loop=$(echo "$edges" | tsort 2>&1 >/dev/null); then
		fail "${d#"$S"/}: its files include each other in a circle: $(echo "$loop" | grep -v 'input contains a loop' | sed 's/^tsort: //' | tr '\n' ' ')"
	fi
done
[ $rc = 0 ] && echo "ok: no circle of includes in any source folder"

if ! command -v clang-format >/dev/null; then
	echo "SKIP: clang-format not installed (Debian package clang-format): formatting not checked"
else
	out=$(clang-format --dry-run -Werror "$S"/controller/*/*.[ch] "$S"/plugins/*/*.[ch] "$S"/plugins/*.c 2>&1)
	if [ -n "$out" ]; then
		fail "clang-format would change these files ($(clang-format --version | head -1)):"
		echo "$out" | grep -E '^[^ ].*(error|warning):' | cut -d: -f1 | sort -u | sed 's/^/  /'
	else
		echo "ok: controller/ and plugins/ formatted as .clang-format says"
	fi
fi
exit $rc
