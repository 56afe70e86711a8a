# SPDX-License-Identifier: GPL-2.0-or-later
# tidy.awk: make scdoc's roff pass `mandoc -T lint`. Drops the paragraph macros scdoc emits
# where none can start (after a heading, before a heading or .RE, twice in a row) and breaks
# text lines longer than 80 bytes at a space (the same text in fill mode).
function heading(l) { return l ~ /^\.(TH|SH|SS|P|PP|RS)( |$)/ }
function closer(l) { return l ~ /^\.(SH|SS|P|PP|RE)( |$)/ }
function emit(l,    cut) {
	while (fill && length(l) > 80 && l !~ /^\./) {
		cut = 80
		while (cut > 1 && substr(l, cut, 1) != " ")
			cut--
		if (cut <= 1)
			break
		print substr(l, 1, cut - 1)
		l = substr(l, cut + 1)
		if (l ~ /^[.']/)
			l = "\\&" l
	}
	print l
}
{ line[NR] = $0 }
END {
	prev = ""
	fill = 1
	for (i = 1; i <= NR; i++) {
		if (line[i] ~ /^\.P$/ && (heading(prev) || i == NR || closer(line[i + 1])))
			continue
		if (line[i] ~ /^\.nf/)
			fill = 0
		if (line[i] ~ /^\.fi/)
			fill = 1
		emit(line[i])
		prev = line[i]
	}
}
