#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every source file and script (.c, .h, .sh, .am, configure.ac, man pages, YAML, the test
# services, units, the Containerfile, the completion, debian/rules) carries the same
# SPDX-License-Identifier line, GPL-2.0-or-later, within its first two lines; and COPYING,
# debian/copyright, README.md and the image's label agree on that license. In a git checkout the files are those git tracks; in a
# tree without .git (make distcheck's unpacked tarball) those under $top_srcdir, build
# trees left out.
set -u
top=${top_srcdir:-$(dirname "$0")/../..}
cd "$top" || { echo "FAIL: cannot enter $top"; exit 1; }
list=$(mktemp)
trap 'rm -f "$list"' EXIT

if [ -e .git ] && command -v git >/dev/null 2>&1 &&
	git ls-files -- '*.c' '*.h' '*.sh' '*.am' configure.ac '*.scd' '*.yml' '*.yaml' '*.py' '*.js' \
		'*.java' '*.go' '*.awk' completion/thpshrink debian/rules deploy/container/Containerfile \
		'deploy/systemd/*' .clang-format .gitignore .containerignore >"$list" 2>/dev/null; then
	from="git ls-files"
else
	# A directory holding config.status is a build tree (distcheck's _build/sub, or build/):
	# its config.h is generated. An in-tree build's config.h sits next to configure.ac.
	find . \( -name .git -o -name autom4te.cache -o -name _build -o -name _inst \) -prune -o \
		-type d ! -name . -exec test -e '{}/config.status' \; -prune -o \
		-type f \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.am' -o -name '*.scd' \
		-o -name '*.yml' -o -name '*.yaml' -o -name '*.py' -o -name '*.js' -o -name '*.java' \
		-o -name '*.go' -o -name '*.awk' -o -path ./configure.ac -o -path ./completion/thpshrink \
		-o -path ./debian/rules -o -path ./deploy/container/Containerfile \
		-o -path './deploy/systemd/*' \) -print | sed 's|^\./||' |
		{ if [ -e config.status ]; then grep -vx 'config.h'; else cat; fi; } >"$list"
	from="the files under $top"
fi

n=0
missing=0
while IFS= read -r f; do
	[ -f "$f" ] || continue # tracked, but removed in this working tree
	n=$((n + 1))
	if ! head -n 2 "$f" | grep -q 'SPDX-License-Identifier: GPL-2.0-or-later'; then
		echo "FAIL: $f: no 'SPDX-License-Identifier: GPL-2.0-or-later' line in its first 2 lines"
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

# The grant itself, and everything that names the license, agree.
bad=0
grep -q 'GNU GENERAL PUBLIC LICENSE' COPYING 2>/dev/null && grep -q 'Version 2, June 1991' COPYING ||
	{ echo "FAIL: COPYING is not the GPL version 2 text"; bad=1; }
grep -q '^License: GPL-2.0-or-later$' debian/copyright ||
	{ echo "FAIL: debian/copyright names no 'License: GPL-2.0-or-later'"; bad=1; }
grep -q 'GPL-2.0-or-later' README.md || { echo "FAIL: README.md names no license"; bad=1; }
grep -q 'org.opencontainers.image.licenses="GPL-2.0-or-later"' deploy/container/Containerfile ||
	{ echo "FAIL: the image has no licenses label"; bad=1; }
[ $bad = 0 ] || exit 1
echo "ok: COPYING (GPL-2.0), debian/copyright, README.md and the image label agree: GPL-2.0-or-later"
