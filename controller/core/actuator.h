/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Actuators: the ways thpshrink gives wasted THP memory back to the system. Each is a const
 * table of operations listed in one static, NULL-terminated table (plugins/actuators/).
 * An actuator measures what it did: memory.current, memory.stat anon_thp and the kernel's
 * split counters before and after, because the kernel's own answer (e.g. EAGAIN from
 * memory.reclaim) says little about what was freed. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "scan.h"
#include "thp.h"

/* What to act on. cgroup is relative to ctx->cgroup_root ("/" is the root). */
struct thps_act_request {
	const char *cgroup;
	const struct thps_geometry *geom;
	uint64_t amount_bytes;		     /* reclaim: bytes to ask memory.reclaim for */
	const struct thps_thp_range *ranges; /* split: the scanner's low-util THPs */
	size_t n_ranges;
	unsigned lowutil_max_bucket; /* split: a THP above this bucket is never split */
	uint64_t max_bytes;	     /* split: stop once this much waste was targeted; 0 = no cap */
};

/* Figures of one cgroup and the machine, read around an action. UINT64_MAX = not available. */
struct thps_act_snapshot {
	uint64_t memory_current;
	uint64_t anon_thp;
	struct thps_vmstat vmstat;
};

struct thps_act_result {
	const char *actuator;
	bool acted;	      /* false: refused or nothing to do (note says why) */
	uint64_t asked_bytes; /* reclaim: written to memory.reclaim; split: waste targeted */
	int write_status;     /* reclaim: 0 or -errno of the write (-EAGAIN = partial) */
	uint64_t ranges_split;
	uint64_t ranges_skipped; /* changed since the scan, gone, or no longer low-util */
	uint64_t ranges_failed;	 /* the kernel refused the split */
	struct thps_act_snapshot before, after;
	char note[512]; /* what the operator should know; "" if nothing */
};

struct thps_actuator_ops {
	const char *name;
	const char *description;
	/* Returns 1 if usable here, 0 if not (why says why, for the operator), or -errno.
	 * size is why's size. */
	int (*probe)(const struct thps_ctx *ctx, char *why, size_t size);
	/* Acts on req->cgroup and fills result. Returns 0 (also when it refused: result->acted
	 * is false and result->note says why) or -errno on a failure to read or write. */
	int (*act)(const struct thps_ctx *ctx, const struct thps_act_request *req,
		   struct thps_act_result *result);
};

extern const struct thps_actuator_ops thps_actuator_reclaim;
extern const struct thps_actuator_ops thps_actuator_split;
extern const struct thps_actuator_ops thps_actuator_observe;
/* NULL-terminated. */
extern const struct thps_actuator_ops *const thps_actuators[];
const struct thps_actuator_ops *thps_actuator_find(const char *name);

/* The reclaim amount for a cgroup: its low-util waste plus its partially mapped THPs'
 * unmapped bytes, capped at max_bytes (0 = no cap), rounded up to whole pages. */
uint64_t thps_reclaim_amount(const struct thps_cgroup_stats *cg, uint64_t max_bytes,
			     uint32_t page_size);

/* Reads memory.current and memory.stat anon_thp of cgroup, and the split counters of
 * /proc/vmstat. Fields it cannot read stay UINT64_MAX. Returns 0, or -errno if memory.current
 * cannot be read. */
int thps_act_snapshot(const struct thps_ctx *ctx, const char *cgroup,
		      struct thps_act_snapshot *ret);
/* Parses the split counters out of /proc/vmstat text; absent ones are UINT64_MAX. */

/* Whether splitting a THP frees its zero subpages on this kernel: upstream >= 6.12 remaps them
 * to the shared zero page (it also has the underused-THP shrinker, whose knob
 * transparent_hugepage/shrink_underused tells it), the RFC frees them (vmstat thp_split_free).
 * Returns 1 yes, 0 no (why says why), or -errno. One function so a fuller kernel probe can
 * replace it. */
int thps_split_frees_zero_subpages(const struct thps_ctx *ctx, char *why, size_t size);

/* Whether memory.reclaim can free THP zero subpages: needs the kernel's underused-THP
 * shrinker (shrink_underused with max_ptes_none < subpages - 1) or the RFC's shrinker.
 * Returns 1 yes, 0 no (why says why and what to do), or -errno. */
int thps_reclaim_frees_zero_subpages(const struct thps_ctx *ctx, const struct thps_geometry *g,
				     char *why, size_t size);

/* The split actuator's re-check of one THP just before splitting it: same process (pid and
 * starttime), still PMD-mapped by a THP whose head PFN is r->pfn, and at most lowutil_max_bucket
 * used. ret_utilized gets the recounted non-zero subpages. Returns 1 if it may be split,
 * 0 if not (why says why), or -errno. */
int thps_thp_recheck(const struct thps_ctx *ctx, const struct thps_geometry *g,
		     const struct thps_thp_range *r, unsigned lowutil_max_bucket,
		     uint32_t *ret_utilized, char *why, size_t size);

/* khugepaged/max_ptes_none, the knob that decides both what the underused-THP shrinker
 * splits and what khugepaged re-collapses. It is global: changing it is always an explicit
 * choice of the operator, and the old value is kept in state_dir/max_ptes_none.saved so that
 * thps_max_ptes_none_restore() can put it back.
 * Returns 0 (ret_old: the value before) or -errno. */
int thps_max_ptes_none_get(const struct thps_ctx *ctx, unsigned *ret);
int thps_max_ptes_none_set(const struct thps_ctx *ctx, const char *state_dir, unsigned value,
			   unsigned *ret_old);
/* Returns 0 (ret_value: the value restored), -ENOENT if nothing was saved, -EPERM if the saved
 * file is not a regular file owned by root (or us) and writable only by its owner, or -errno. */
int thps_max_ptes_none_restore(const struct thps_ctx *ctx, const char *state_dir,
			       unsigned *ret_value);
