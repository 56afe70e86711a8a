#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The documentation's links: every relative link and image in README.md and docs/*.md names a
# file that exists, and a #anchor into a markdown file names one of its headings (GitHub's
# slugs: lowercase, each space a '-', punctuation dropped except '-' and '_', a repeated
# heading gets -1, -2, ...). README.md is the front door: at most 300 lines.
# Prints one ok/FAIL line per file and per broken link; exits 1 on any failure.
set -eu
: "${top_srcdir:?}"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is missing"; exit 77; }

python3 - "$top_srcdir" <<'EOF'
import os, re, sys, glob, urllib.parse

top = sys.argv[1]
MAX_README_LINES = 300

def strip_code(text):
    """The text without fenced code blocks (kept as empty lines) or inline code spans."""
    out, fence = [], None
    for line in text.split('\n'):
        m = re.match(r'^\s{0,3}(`{3,}|~{3,})', line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append('')
            continue
        if m:
            fence = m.group(1)
            out.append('')
            continue
        out.append(line)
    return out

def slug(heading):
    t = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', heading)  # links: their text
    t = t.replace('`', '').replace('*', '')
    t = t.strip().lower()
    t = ''.join(c for c in t if c.isalnum() or c in ' -_')
    return t.replace(' ', '-')

anchor_cache = {}
def anchors(path):
    if path not in anchor_cache:
        seen, out = {}, set()
        with open(path, encoding='utf-8') as f:
            for line in strip_code(f.read()):
                m = re.match(r'^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$', line)
                if not m:
                    continue
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else '%s-%d' % (s, n))
        anchor_cache[path] = out
    return anchor_cache[path]

LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+["\'(][^)]*)?\)')
REFDEF = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$')
HTML = re.compile(r'<(?:img|a)\b[^>]*?\b(?:src|href)\s*=\s*["\']([^"\']+)["\']', re.I)

def targets(path):
    with open(path, encoding='utf-8') as f:
        lines = strip_code(f.read())
    for no, line in enumerate(lines, 1):
        line = re.sub(r'`[^`]*`', 'CODE', line)
        for rx in (LINK, HTML):
            for m in rx.finditer(line):
                yield no, m.group(1)
        m = REFDEF.match(line)
        if m:
            yield no, m.group(1)

files = [os.path.join(top, 'README.md')] + sorted(glob.glob(os.path.join(top, 'docs', '*.md')))
bad = 0
for path in files:
    rel = os.path.relpath(path, top)
    if not os.path.isfile(path):
        print('FAIL: %s is missing' % rel)
        bad += 1
        continue
    errors, checked = [], 0
    for no, target in targets(path):
        if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target) or target.startswith('//'):
            continue  # http:, https:, mailto: ...: not checked here
        checked += 1
        t, _, frag = target.partition('#')
        t = urllib.parse.unquote(t)
        dest = path if t == '' else os.path.normpath(os.path.join(os.path.dirname(path), t))
        if not os.path.exists(dest):
            errors.append('%s:%d: %s: no such file' % (rel, no, target))
            continue
        if frag and dest.endswith('.md') and os.path.isfile(dest):
            if urllib.parse.unquote(frag).lower() not in anchors(dest):
                errors.append('%s:%d: %s: no heading #%s in %s'
                              % (rel, no, target, frag, os.path.relpath(dest, top)))
    for e in errors:
        print('FAIL: ' + e)
    if errors:
        bad += 1
    else:
        print('ok: %s: %d relative links and images resolve' % (rel, checked))

readme = os.path.join(top, 'README.md')
if os.path.isfile(readme):
    with open(readme, encoding='utf-8') as f:
        n = len(f.read().splitlines())
    if n > MAX_README_LINES:
        print('FAIL: README.md has %d lines, more than %d (move the rest to docs/)'
              % (n, MAX_README_LINES))
        bad += 1
    else:
        print('ok: README.md has %d lines (at most %d)' % (n, MAX_README_LINES))
sys.exit(1 if bad else 0)
EOF
