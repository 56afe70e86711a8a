/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Source "vmstat": the kernel's THP counters (/proc/vmstat: splits, underused splits, the
 * RFC's freed tails) machine-wide, and per cgroup the memory charged and the THP part of it
 * (v2 memory.current + memory.stat anon_thp; v1 memory.usage_in_bytes + rss_huge, read
 * only). It adds no cgroups: it fills in those the scan already holds. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "fileio.h"
#include "kernel.h"
#include "macro.h"
#include "probe.h"
#include "valid.h"

#define MEMSTAT_MAX (64 * 1024)

static int vmstat_probe(const struct thps_ctx *ctx, char *why, size_t why_size)
{
	char path[PATH_MAX];
	int r;

	r = thps_path(path, sizeof(path), ctx->proc_root, "vmstat");
	if (r < 0)
		return r;
	if (access(path, R_OK) < 0) {
		snprintf(why, why_size, "not usable: cannot read '%s': %s", path, strerror(errno));
		return 0;
	}
	snprintf(why, why_size, "'%s' readable", path);
	return 1;
}

/* Fills one cgroup's memory figures. Returns 0, or -errno (cgroup gone: -ENOENT). */
static int collect_cgroup(const char *root, int version, struct thps_cgroup_stats *c)
{
	_cleanup_free_ char *stat = NULL;
	char path[PATH_MAX];
	const char *rel = c->path + 1;
	uint64_t cur = 0, thp;
	int r;

	r = read_file_at(MEMSTAT_MAX, &stat, root, "%s%smemory.stat", rel, *rel ? "/" : "");
	if (r < 0)
		return r;
	r = thps_parse_memstat_thp(stat, version, &thp);
	if (r < 0)
		return r;
	r = thps_path(path, sizeof(path), root, "%s%s%s", rel, *rel ? "/" : "",
		      version == 2 ? "memory.current" : "memory.usage_in_bytes");
	if (r < 0)
		return r;
	r = read_u64_file(path, &cur);
	/* The v2 root has no memory.current: its anon_thp alone is still worth having. */
	if (r == -ENOENT && version == 2 && !*rel)
		cur = 0;
	else if (r < 0)
		return r;
	c->have_memstat = true;
	c->memory_current = cur;
	c->anon_thp_bytes = thp;
	return 0;
}

static int vmstat_collect(const struct thps_ctx *ctx, const struct thps_scan_opts *opts,
			  struct thps_scan *scan)
{
	char root[PATH_MAX];
	struct thps_vmstat v;
	bool v2mem;
	int r, version;

	r = thps_vmstat_read(ctx, &v);
	if (r < 0)
		return r;
	scan->vmstat = v;
	scan->have_vmstat = true;

	version = thps_memcg_find(ctx, root, sizeof(root), &v2mem);
	if (version < 0)
		return version;
	if (version == 0 || (version == 2 && !v2mem))
		return 0; /* no memory hierarchy: machine-wide counters only */
	for (size_t i = 0; i < scan->n_cgroups; i++) {
		struct thps_cgroup_stats *c = &scan->cgroups[i];

		if (!thps_cgroup_path_safe(c->path))
			continue;
		/* A cgroup removed since the scan saw it is not an error of this pass. */
		r = collect_cgroup(root, version, c);
		if (r == -ENOMEM)
			return r;
	}
	return 0;
}

const struct thps_source_ops thps_source_vmstat = {
    .name = "vmstat",
    .description = "kernel THP counters (/proc/vmstat) and per-cgroup memory and THP bytes",
    .probe = vmstat_probe,
    .collect = vmstat_collect,
};
