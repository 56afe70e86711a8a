/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The actuator table and what every actuator shares: the amount to ask for, the before/after
 * measurements, and what this kernel can free. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stddef.h>

#include "actuator.h"
#include "kparse.h"
#include "fileio.h"
#include "macro.h"
#include "probe.h"

const struct thps_actuator_ops *const thps_actuators[] = {
    &thps_actuator_reclaim,
    &thps_actuator_split,
    &thps_actuator_observe,
    NULL,
};

const struct thps_actuator_ops *thps_actuator_find(const char *name)
{
	for (size_t i = 0; thps_actuators[i]; i++)
		if (strcmp(thps_actuators[i]->name, name) == 0)
			return thps_actuators[i];
	return NULL;
}

uint64_t thps_reclaim_amount(const struct thps_cgroup_stats *cg, uint64_t max_bytes,
			     uint32_t page_size)
{
	uint64_t a = cg->waste_bytes + cg->partial_unmapped_bytes;

	if (a < cg->waste_bytes) /* overflow: hostile figures */
		a = UINT64_MAX;
	if (max_bytes && a > max_bytes)
		a = max_bytes;
	if (page_size && a % page_size)
		a = a / page_size * page_size + (a <= UINT64_MAX - page_size ? page_size : 0);
	return a;
}

const char *thps_split_mech_name(enum thps_split_mech m)
{
	switch (m) {
	case THPS_SPLIT_MECH_PMADVISE:
		return "process_madvise";
	case THPS_SPLIT_MECH_DEBUGFS:
		return "debugfs";
	case THPS_SPLIT_MECH_NONE:
		return "none";
	default:
		return "auto";
	}
}

static int rss_anon(const struct thps_ctx *ctx, pid_t pid, uint64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	const char *p;
	int r;

	r = read_file_at(1 << 16, &text, ctx->proc_root, "%d/status", (int)pid);
	if (r < 0)
		return r;
	p = strstr(text, "\nRssAnon:");
	if (!p)
		return -ENODATA;
	*ret = strtoull(p + 9, NULL, 10) * 1024;
	return 0;
}

int thps_act_snapshot_of(const struct thps_ctx *ctx, const char *cgroup, pid_t pid,
			 struct thps_act_snapshot *ret)
{
	struct thps_act_snapshot s;
	_cleanup_free_ char *stat = NULL;
	char path[PATH_MAX];
	int r = -ENOENT, rp = -ENOENT;

	memset(&s, 0xff, sizeof(s));
	if (cgroup) {
		r = thps_path(path, sizeof(path), ctx->cgroup_root, "%s/memory.current", cgroup);
		if (r < 0)
			return r;
		r = read_u64_file(path, &s.memory_current);
		if (r == 0 &&
		    read_file_at(1 << 16, &stat, ctx->cgroup_root, "%s/memory.stat", cgroup) == 0) {
			if (find_keyed_u64(stat, "anon_thp", &s.anon_thp) < 0)
				s.anon_thp = UINT64_MAX;
			if (find_keyed_u64(stat, "anon", &s.anon) < 0)
				s.anon = UINT64_MAX;
			if (find_keyed_u64(stat, "file", &s.file) < 0)
				s.file = UINT64_MAX;
			if (find_keyed_u64(stat, "workingset_refault_file",
					   &s.workingset_refault_file) < 0)
				s.workingset_refault_file = UINT64_MAX;
		}
	}
	if (pid > 0)
		rp = rss_anon(ctx, pid, &s.rss_anon);
	if (r < 0 && rp < 0)
		return cgroup ? r : rp;
	(void)thps_vmstat_read(ctx, &s.vmstat); /* machine-wide extras: absent is fine */
	*ret = s;
	return 0;
}

int thps_act_snapshot(const struct thps_ctx *ctx, const char *cgroup, struct thps_act_snapshot *ret)
{
	return thps_act_snapshot_of(ctx, cgroup, 0, ret);
}

static uint64_t dropped(uint64_t before, uint64_t after)
{
	if (before == UINT64_MAX || after == UINT64_MAX || after >= before)
		return 0;
	return before - after;
}

uint64_t thps_act_given_back(const struct thps_act_result *res)
{
	const struct thps_act_snapshot *b = &res->before, *a = &res->after;
	int64_t mc, file;

	/* memory.current counts what a split frees (a partially mapped folio's unmapped subpages
	 * too, which memory.stat anon no longer does); the page cache's change is taken out of
	 * it, so eviction never reads as given back */
	if (b->memory_current != UINT64_MAX && a->memory_current != UINT64_MAX) {
		mc = (int64_t)(b->memory_current - a->memory_current);
		file = b->file != UINT64_MAX && a->file != UINT64_MAX ? (int64_t)(b->file - a->file)
								      : 0;
		return mc - file > 0 ? (uint64_t)(mc - file) : 0;
	}
	if (b->rss_anon != UINT64_MAX && a->rss_anon != UINT64_MAX)
		return dropped(b->rss_anon, a->rss_anon);
	return 0;
}

uint64_t thps_act_file_lost(const struct thps_act_result *res)
{
	return dropped(res->before.file, res->after.file);
}

static int thp_knob_path(const struct thps_ctx *ctx, const char *rel, char *buf, size_t size)
{
	return thps_path(buf, size, ctx->sys_root, "kernel/mm/transparent_hugepage/%s", rel);
}

int thps_split_frees_zero_subpages(const struct thps_ctx *ctx, char *why, size_t size)
{
	_cleanup_free_ struct thps_probe *p = NULL;
	int r;

	/* The kernel probe decides (RFC counters, upstream's shrinker knob or counter); this
	 * function only words the answer for the split actuator. */
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	r = thps_probe_run(ctx, 0, p);
	if (r < 0)
		return r;
	switch (p->split_kind) {
	case THPS_SPLIT_UPSTREAM:
		snprintf(why, size,
			 "a split remaps zero subpages to the shared zero page (Linux >= 6.12)");
		return 1;
	case THPS_SPLIT_RFC:
		snprintf(why, size,
			 "a split frees zero subpages (THP shrinker RFC: vmstat thp_split_free)");
		return 1;
	default:
		snprintf(why, size,
			 "a split frees nothing on this kernel: it neither remaps zero subpages "
			 "to the shared zero page (Linux >= 6.12, no "
			 "transparent_hugepage/shrink_underused "
			 "here) nor has the THP shrinker RFC (no vmstat thp_split_free)");
		return 0;
	}
}

int thps_reclaim_frees_zero_subpages(const struct thps_ctx *ctx, const struct thps_geometry *g,
				     char *why, size_t size)
{
	_cleanup_free_ char *text = NULL;
	struct thps_vmstat vs;
	char path[PATH_MAX];
	unsigned mpn;
	int r;

	r = thps_vmstat_read(ctx, &vs);
	if (r < 0)
		return r;
	if (vs.thp_split_free != UINT64_MAX) {
		snprintf(why, size,
			 "the THP shrinker RFC splits low-utilization THPs under memory.reclaim");
		return 1;
	}
	r = thp_knob_path(ctx, "shrink_underused", path, sizeof(path));
	if (r < 0)
		return r;
	r = read_file_bounded(path, 64, &text, NULL);
	if (r == -ENOENT) {
		snprintf(
		    why, size,
		    "memory.reclaim frees nothing of THPs' zero subpages on this kernel: "
		    "it has no underused-THP shrinker (Linux < 6.12 without the THP shrinker RFC); "
		    "without swap it can free only page cache");
		return 0;
	}
	if (r < 0)
		return r;
	if (text[0] != '1') {
		snprintf(why, size,
			 "transparent_hugepage/shrink_underused is off: memory.reclaim splits "
			 "no underused THP");
		return 0;
	}
	r = thps_max_ptes_none_get(ctx, &mpn);
	if (r < 0)
		return r;
	if (mpn >= g->subpages - 1) {
		snprintf(why, size,
			 "khugepaged/max_ptes_none is %u: the underused-THP shrinker counts no THP "
			 "as underused; lower it (--set-max-ptes-none %u for bucket 0) before the "
			 "workload "
			 "faults its THPs in",
			 mpn, thps_max_ptes_none_advice(g, 0));
		return 0;
	}
	snprintf(
	    why, size,
	    "the underused-THP shrinker splits THPs with more than %u zero subpages "
	    "(khugepaged/max_ptes_none) under memory.reclaim, if they were queued after it was set",
	    mpn);
	return 1;
}
