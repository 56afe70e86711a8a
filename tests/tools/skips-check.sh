#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# skips-check.sh [-l LIST] DIR... — every skip the test runs under DIR left behind, each matched
# against LIST (default: tests/skips-allowed.txt beside this script). A skipped check is one
# that did not run, so CI must not go green on one nobody decided to allow.
#
# The skips, each with an id:
#   TEST:LABEL          an automake test that skipped (.trs says SKIP), or a "SKIP:" line in the
#                       .log of one that passed (an integration leg, a Check case that could not
#                       run); TEST is the .trs path under DIR without .trs; LABEL is the line's
#                       "P: SKIP ..." leg P, else its text up to the first ": "
#   RESULTS:SCEN:CHECK  a "SKIP SCEN.CHECK reason" line of a results/RESULTS.result file (the VM
#                       tests: RESULTS is the kernel); "SKIP vm.KERNEL" is a whole kernel skipped
# LIST: "GLOB -- REASON" per line (bash pattern on the id; # comments). A whole kernel skipped
# cannot be listed.
# Prints "skips: N total, M not listed", then one line per skip. Exit: 1 with CI=true when a skip
# is not listed or a kernel was skipped (printing the exact line to add), 2 on a bad LIST, else 0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
list=$(cd "$here/.." && pwd)/skips-allowed.txt
if [ "${1:-}" = -l ]; then list=$2; shift 2; fi
[ $# -gt 0 ] || { echo "usage: skips-check.sh [-l LIST] DIR..." >&2; exit 2; }
[ -r "$list" ] || { echo "skips-check: cannot read $list" >&2; exit 2; }

pats=() reasons=()
n=0
while IFS= read -r l || [ -n "$l" ]; do
	n=$((n + 1))
	case $l in '#'* | '') continue ;; esac
	if [[ $l != *' -- '?* ]]; then
		echo "skips-check: $list:$n: not \"GLOB -- REASON\": $l" >&2
		exit 2
	fi
	pats+=("${l%% -- *}")
	reasons+=("${l#* -- }")
done < "$list"

# A skip's id needs no glob escapes in the line printed to add; *, ? and [ in it are escaped.
glob_quote() { printf '%s' "$1" | sed 's/[][*?\\]/\\&/g'; }

ids=() msgs=()
add() { ids+=("$1"); msgs+=("$2"); }

# "SKIP: text", "SKIP text" or "P: SKIP[:] text" lines of a log: "LABEL<US>TEXT" (US, the
# unit separator: a tab would be eaten by read when LABEL is empty).
US=$'\x1f'
skip_lines() {
	sed -n -E "s/^(([A-Za-z][A-Za-z0-9_-]{0,20}): )?SKIP:? +(.*)\$/\\2$US\\3/p" "$1" |
		while IFS=$US read -r leg text; do
			label=$leg
			[ -n "$label" ] || label=${text%%: *}
			printf '%s%s%s\n' "${label:0:80}" "$US" "$text"
		done
}

for d in "$@"; do
	d=${d%/}
	while IFS= read -r trs; do
		t=${trs#"$d"/}
		t=${t%.trs}
		log=${trs%.trs}.log
		res=$(sed -n 's/^:test-result: \([A-Z]*\).*/\1/p' "$trs" | head -1)
		lines=$([ -r "$log" ] && skip_lines "$log")
		if [ "$res" = SKIP ]; then
			if [ -n "$lines" ]; then
				first=${lines%%$'\n'*}
				add "$t:${first%%"$US"*}" "${first#*"$US"}"
			else
				add "$t:" "skipped without a SKIP line (see $log)"
			fi
		elif [ "$res" = PASS ] && [ -n "$lines" ]; then
			while IFS=$US read -r label text; do add "$t:$label" "$text"; done <<< "$lines"
		fi
	done < <(find "$d" -name '*.trs' 2>/dev/null | LC_ALL=C sort)
	while IFS= read -r r; do
		k=$(basename "$r" .result)
		while read -r _ name text; do
			add "$k:${name%%.*}:${name#*.}" "$text"
		done < <(grep '^SKIP ' "$r")
	done < <(find "$d" -path '*results/*.result' 2>/dev/null | LC_ALL=C sort)
done

out=() bad=()
for i in "${!ids[@]}"; do
	id=${ids[$i]} why=""
	if [[ $id =~ ^([^:]*):vm:([^:]*)$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]; then
		out+=("SKIP $id (a whole kernel: never allowed): ${msgs[$i]}")
		bad+=("")
		continue
	fi
	for j in "${!pats[@]}"; do
		# shellcheck disable=SC2053 # the list's entries are patterns
		[[ $id == ${pats[$j]} ]] && { why=${reasons[$j]}; break; }
	done
	if [ -n "$why" ]; then
		out+=("SKIP $id (listed: $why): ${msgs[$i]}")
	else
		out+=("SKIP $id (NOT LISTED): ${msgs[$i]}")
		bad+=("$(glob_quote "$id") -- ${msgs[$i]}")
	fi
done

echo "skips: ${#ids[@]} total, ${#bad[@]} not listed in $list"
[ ${#out[@]} = 0 ] || printf '  %s\n' "${out[@]}"
[ ${#bad[@]} = 0 ] && exit 0
if [ "${CI:-}" != true ]; then
	echo "skips: (CI=true would fail on the ${#bad[@]} not listed)"
	exit 0
fi
echo "skips-check: FAIL (CI=true): ${#bad[@]} skip(s) not allowed by $list; each is a check that did not run."
lines=$(for b in "${bad[@]}"; do [ -z "$b" ] || printf '%s\n' "$b"; done)
if [ -n "$lines" ]; then
	echo "Make it run on the CI machine, or add its line below to $list (edit the reason to say why it may skip there):"
	printf '%s\n' "$lines"
fi
for i in "${!ids[@]}"; do
	[[ ${ids[$i]} =~ ^([^:]*):vm:([^:]*)$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] &&
		echo "kernel ${BASH_REMATCH[1]} was skipped as a whole (${msgs[$i]}): install what it names; the list cannot allow that"
done
exit 1
