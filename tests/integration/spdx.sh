#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every source file (.c, .h, .sh, .am, and configure.ac) carries an SPDX-License-Identifier
# line within its first two lines. In a git checkout the files are those git tracks; in a
# tree without .git (make distcheck's unpacked tarball) those under $top_srcdir, build
# trees left out.
set -u
top=${top_srcdir:-$(dirname "$0")/../..}
cd "$top" || { echo "FAIL: cannot enter $top"; exit 1; }
list=$(mktemp)
trap 'rm -f "$list"' EXIT

if [ -e .git ] && command -v git >/dev/null 2>&1 &&
	git ls-files -- '*.c' '*.h' '*.sh' '*.am' configure.ac >"$list" 2>/dev/null; then
	from="git ls-files"
else
	# A directory holding config.status is a build tree (distcheck's _build/sub, or build/):
	# its config.h is generated. An in-tree build's config.h sits next to configure.ac.
	find . \( -name .git -o -name autom4te.cache -o -name _build -o -name _inst \) -prune -o \
		-type d ! -name . -exec test -e '{}/config.status' \; -prune -o \
		-type f \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.am' \
		-o -path ./configure.ac \) -print | sed 's|^\./||' |
		{ if [ -e config.status ]; then grep -vx 'config.h'; else cat; fi; } >"$list"
	from="the files under $top"
fi

n=0
missing=0
while IFS= read -r f; do
	[ -f "$f" ] || continue # tracked, but removed in this working tree
	n=$((n + 1))
	if ! head -n 2 "$f" | grep -q 'SPDX-License-Identifier:'; then
		echo "FAIL: $f: no SPDX-License-Identifier line in its first 2 lines"
		missing=$((missing + 1))
	fi
done <"$list"

if [ "$n" -eq 0 ]; then
	echo "FAIL: no source files found ($from)"
	exit 1
fi
if [ "$missing" -gt 0 ]; then
	echo "FAIL: $missing of $n source files ($from) lack an SPDX line: add" \
		"'/* SPDX-License-Identifier: GPL-2.0-or-later */' (C) or" \
		"'# SPDX-License-Identifier: GPL-2.0-or-later' (after any #! line) as the first line"
	exit 1
fi
echo "ok: all $n source files ($from) carry an SPDX line"
