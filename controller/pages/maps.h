/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/maps: the private anonymous VMAs, the only ones whose THPs we scan. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct thps_vma {
	uint64_t start, end;
};

/* Parses one maps line. Returns 1 if it is a private anonymous mapping (no file, or
 * [heap], [stack], [anon:name]), 0 if another mapping, -EINVAL if the line is malformed. */
int thps_maps_parse_line(const char *line, struct thps_vma *ret);

/* Reads the next private anonymous VMA from a maps stream. Returns 1, 0 at the end, or
 * -errno (-EINVAL names nothing: the caller knows the file). */
int thps_maps_next(FILE *f, struct thps_vma *ret);
/* The same, adding to *lines (when not NULL) each line read, whatever its mapping: what reading
 * the file cost. */
int thps_maps_next_counted(FILE *f, struct thps_vma *ret, uint64_t *lines);
