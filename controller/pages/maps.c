/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"

int thps_maps_parse_line(const char *line, struct thps_vma *ret)
{
	uint64_t start, end, off;
	char perms[5];
	unsigned maj, min;
	unsigned long long ino;
	int n = 0;
	const char *name;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %llu %n", &start, &end,
		   perms, &off, &maj, &min, &ino, &n) < 7 ||
	    n == 0 || end <= start)
		return -EINVAL;
	name = line + n;
	if (strlen(perms) != 4 || perms[3] != 'p' || perms[0] != 'r')
		return 0;
	if (ino != 0 || maj != 0 || min != 0)
		return 0; /* file-backed */
	if (*name && *name != '\n' && strncmp(name, "[heap]", 6) != 0 &&
	    strncmp(name, "[stack]", 7) != 0 && strncmp(name, "[anon:", 6) != 0)
		return 0; /* [vdso], [vvar], [vsyscall], ... */
	ret->start = start;
	ret->end = end;
	return 1;
}

int thps_maps_next(FILE *f, struct thps_vma *ret)
{
	return thps_maps_next_counted(f, ret, NULL);
}

int thps_maps_next_counted(FILE *f, struct thps_vma *ret, uint64_t *lines)
{
	char line[4096 + 256];

	while (fgets(line, sizeof(line), f)) {
		int r;

		if (lines)
			(*lines)++;

		if (!strchr(line, '\n') && !feof(f)) {
			/* a huge name: skip the rest of the line, judge by the start */
			int c;
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
		}
		r = thps_maps_parse_line(line, ret);
		if (r != 0)
			return r;
	}
	return ferror(f) ? (errno > 0 ? -errno : -EIO) : 0;
}
