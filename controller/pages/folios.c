/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "folios.h"
#include "macro.h"
#include "probe.h"

/* A size that is "never" now may still have anonymous folios made while it was enabled: its
 * stats/nr_anon (Linux 6.11+) counts them; where only stats/anon_fault_alloc exists (6.9,
 * 6.10), folios were ever made. Without stats nothing is known: not counted. */
static bool size_has_folios(const char *dir, const char *size_dir)
{
	char path[PATH_MAX];
	uint64_t v;

	if (thps_path(path, sizeof(path), dir, "%s/stats/nr_anon", size_dir) == 0 &&
	    read_u64_file(path, &v) == 0)
		return v > 0;
	if (thps_path(path, sizeof(path), dir, "%s/stats/anon_fault_alloc", size_dir) == 0 &&
	    read_u64_file(path, &v) == 0)
		return v > 0;
	return false;
}

uint32_t thps_anon_folio_min_pages(const struct thps_ctx *ctx, const struct thps_geometry *g)
{
	char dir[PATH_MAX], rel[NAME_MAX + 16], top[32], mode[32];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	uint32_t min = g->subpages;
	bool top_ok;
	int r;

	if (thps_path(dir, sizeof(dir), ctx->sys_root, "kernel/mm/transparent_hugepage") < 0)
		return 4;
	top_ok = thps_read_bracketed(dir, "enabled", top, sizeof(top)) == 0;
	d = opendir(dir);
	if (!d)
		return min; /* no THP support at all: only what a PMD could map */
	while ((de = readdir(d))) {
		unsigned long kib;
		uint64_t pages;
		char *end;

		if (strncmp(de->d_name, "hugepages-", 10) != 0)
			continue;
		errno = 0;
		kib = strtoul(de->d_name + 10, &end, 10);
		if (errno || strcmp(end, "kB") != 0 || kib == 0)
			continue;
		pages = (uint64_t)kib * 1024 / g->page_size;
		if (pages < 2 || pages >= min || (pages & (pages - 1)))
			continue;
		snprintf(rel, sizeof(rel), "%s/enabled", de->d_name);
		r = thps_read_bracketed(dir, rel, mode, sizeof(mode));
		if (r == -ENOENT)
			continue; /* a size only file/shmem folios use: no anonymous knob */
		if (r < 0)
			return 4;
		if (strcmp(mode, "inherit") == 0) {
			if (!top_ok)
				return 4;
			strcpy(mode, top);
		}
		if (strcmp(mode, "never") != 0 || size_has_folios(dir, de->d_name))
			min = pages;
	}
	return min;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int thps_mthp_modes(const struct thps_ctx *ctx, const struct thps_geometry *g, char *buf,
		    size_t size)
{
	char dir[PATH_MAX], rel[64], top[32] = "", mode[32];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	uint64_t kibs[64];
	size_t n = 0, len = 0;
	int r, enabled = 0;

	if (size)
		buf[0] = '\0';
	r = thps_path(dir, sizeof(dir), ctx->sys_root, "kernel/mm/transparent_hugepage");
	if (r < 0)
		return r;
	if (thps_read_bracketed(dir, "enabled", top, sizeof(top)) < 0)
		strcpy(top, "?");
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < ELEMENTSOF(kibs)) {
		unsigned long kib;
		char *end;

		if (strncmp(de->d_name, "hugepages-", 10) != 0)
			continue;
		errno = 0;
		kib = strtoul(de->d_name + 10, &end, 10);
		if (errno || strcmp(end, "kB") != 0 || kib == 0 ||
		    (uint64_t)kib * 1024 >= g->thp_size)
			continue;
		kibs[n++] = kib;
	}
	qsort(kibs, n, sizeof(kibs[0]), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "hugepages-%llukB/enabled", (unsigned long long)kibs[i]);
		r = thps_read_bracketed(dir, rel, mode, sizeof(mode));
		if (r < 0)
			continue; /* no anonymous knob for this size */
		if (strcmp(mode, "inherit") == 0)
			snprintf(mode, sizeof(mode), "%s", top);
		enabled += strcmp(mode, "never") != 0;
		if (len < size)
			len += snprintf(buf + len, size - len, "%s%llukB %s", len ? ", " : "",
					(unsigned long long)kibs[i], mode);
	}
	return enabled;
}
