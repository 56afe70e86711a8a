/* SPDX-License-Identifier: GPL-2.0-or-later */
/* THP geometry and the RFC's utilization histogram. The only place that knows how many
 * subpages a THP has: everything else asks struct thps_geometry. */
#pragma once
#include <stdint.h>
#include "context.h"

#define THPS_BUCKETS 10
/* Largest folio order counted per size (2^13 pages: 32 MiB folios of 4 KiB pages, a 512 MiB
 * PMD of 64 KiB pages); thps_geometry_load() refuses a PMD size above it. */
#define THPS_MAX_ORDER 13

struct thps_geometry {
	uint32_t page_size; /* sysconf(_SC_PAGESIZE) */
	uint64_t thp_size;  /* transparent_hugepage/hpage_pmd_size */
	uint32_t subpages;  /* thp_size / page_size, 512 on x86-64 */
};

/* Reads hpage_pmd_size under ctx->sys_root. Returns 0, -ENOENT when the kernel has no THP
 * support, -EINVAL when the file makes no sense. */
int thps_geometry_load(const struct thps_ctx *ctx, struct thps_geometry *ret);
/* The x86-64 geometry (4 KiB pages, 2 MiB THPs), for tests and fixtures. */
void thps_geometry_default(struct thps_geometry *ret);

/* The RFC's bucket: min(utilized * 10 / subpages, 9). */
unsigned thps_bucket(const struct thps_geometry *g, unsigned utilized);
/* The same for a folio of nr subpages (any size, 2 .. 2^THPS_MAX_ORDER): the RFC's 10
 * buckets scaled to the folio, min(utilized * 10 / nr, 9); a cut at bucket b is the same
 * utilization fraction for every size. */
unsigned thps_bucket_n(uint32_t nr, unsigned utilized);
void thps_bucket_range_n(uint32_t nr, unsigned b, unsigned *lo, unsigned *hi);
/* The order of a folio of nr pages (a power of two), or -1 when nr is none or too large. */
int thps_folio_order(uint32_t nr);
/* The utilized-subpage range [lo, hi] that thps_bucket() really maps to bucket b
 * (0-51, 52-102, ... for 512 subpages), not the RFC's printed labels. */
void thps_bucket_range(const struct thps_geometry *g, unsigned b, unsigned *lo, unsigned *hi);

/* The highest khugepaged/max_ptes_none that keeps split THPs of buckets 0..max_bucket split:
 * khugepaged rebuilds a range when at most max_ptes_none of its PTEs are empty or zero, and
 * such a THP has at least subpages - hi(max_bucket) zero subpages. (The trade-off: khugepaged
 * then also leaves new ranges with that many holes as small pages.) */
unsigned thps_max_ptes_none_advice(const struct thps_geometry *g, unsigned max_bucket);

struct thps_hist {
	uint64_t thps[THPS_BUCKETS];
	uint64_t zero_subpages[THPS_BUCKETS]; /* the RFC's second column */
};

void thps_hist_add(struct thps_hist *h, const struct thps_geometry *g, unsigned utilized);
/* Adds one folio of nr subpages of which utilized hold data, zero = nr - utilized. */
void thps_hist_add_n(struct thps_hist *h, uint32_t nr, unsigned utilized);
void thps_hist_merge(struct thps_hist *dst, const struct thps_hist *src);
uint64_t thps_hist_thps(const struct thps_hist *h);
uint64_t thps_hist_zero_subpages(const struct thps_hist *h);
/* THPs and zero subpages in buckets 0..max_bucket (the low-utilization cut). */
uint64_t thps_hist_lowutil_thps(const struct thps_hist *h, unsigned max_bucket);
uint64_t thps_hist_lowutil_zero(const struct thps_hist *h, unsigned max_bucket);

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
