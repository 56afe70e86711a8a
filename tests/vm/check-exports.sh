#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# check-exports.sh LOG DIR: the files scenarios sent with vm_export (lines "THPS-FILE NAME
# BASE64" in the console LOG) are rebuilt in DIR and checked with the host's tools, by the
# extension of NAME: .prom with `promtool check metrics` (what a Prometheus server accepts),
# .json with python3's json module. Prints one PASS/FAIL/SKIP result line per file.
set -uo pipefail
log=${1:?usage: check-exports.sh LOG DIR} dir=${2:?usage: check-exports.sh LOG DIR}
rm -rf "$dir"; mkdir -p "$dir"
grep -a -o 'THPS-FILE [^ ]* [A-Za-z0-9+/=]*' "$log" | while read -r _ name chunk; do
	case $name in */* | .*) continue ;; esac
	printf '%s\n' "$chunk" >> "$dir/$name.b64"
done
for b in "$dir"/*.b64; do
	[ -e "$b" ] || exit 0
	name=$(basename "$b" .b64)
	scen=${name%%.*} rest=${name#*.}
	f=$dir/$name
	if ! base64 -d "$b" 2>/dev/null | gunzip > "$f" 2>/dev/null; then
		echo "FAIL $scen.export.$rest cannot decode what the guest sent (truncated console?)"
		continue
	fi
	case $name in
	*.prom)
		if ! command -v promtool >/dev/null; then
			echo "SKIP $scen.export.$rest promtool is missing (Debian package prometheus)"
		elif out=$(promtool check metrics < "$f" 2>&1); then
			echo "PASS $scen.export.$rest promtool check metrics accepts it ($(wc -l < "$f") lines, $(wc -c < "$f") bytes)"
		else
			echo "FAIL $scen.export.$rest promtool check metrics: $(printf '%s' "$out" | head -3 | tr '\n' ' ')"
		fi ;;
	*.json)
		if out=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1], encoding="utf-8")); print(len(d.get("cgroups", [])))' "$f" 2>&1); then
			echo "PASS $scen.export.$rest valid UTF-8 JSON ($out cgroups, $(wc -c < "$f") bytes)"
		else
			echo "FAIL $scen.export.$rest not valid JSON: $(printf '%s' "$out" | tail -1)"
		fi ;;
	*) echo "FAIL $scen.export.$rest no check for this kind of file" ;;
	esac
done
