/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "thp.h"

void thps_geometry_default(struct thps_geometry *ret)
{
	ret->page_size = 4096;
	ret->thp_size = 2u << 20;
	ret->subpages = 512;
}

int thps_geometry_load(const struct thps_ctx *ctx, struct thps_geometry *ret)
{
	char path[PATH_MAX];
	uint64_t thp_size;
	long ps = sysconf(_SC_PAGESIZE);
	int r;

	r = thps_path(path, sizeof(path), ctx->sys_root,
		      "kernel/mm/transparent_hugepage/hpage_pmd_size");
	if (r < 0)
		return r;
	r = read_u64_file(path, &thp_size);
	if (r < 0)
		return r;
	if (ps <= 0 || thp_size < (uint64_t)ps || thp_size % ps ||
	    thp_size / ps > (UINT64_C(1) << THPS_MAX_ORDER) || thps_folio_order(thp_size / ps) < 0)
		return -EINVAL;
	ret->page_size = ps;
	ret->thp_size = thp_size;
	ret->subpages = thp_size / ps;
	return 0;
}

int thps_folio_order(uint32_t nr)
{
	if (nr == 0 || (nr & (nr - 1)) || nr > (UINT32_C(1) << THPS_MAX_ORDER))
		return -1;
	return __builtin_ctz(nr);
}

unsigned thps_bucket_n(uint32_t nr, unsigned utilized)
{
	unsigned b = nr ? (unsigned)((uint64_t)utilized * THPS_BUCKETS / nr) : 0;

	return b >= THPS_BUCKETS ? THPS_BUCKETS - 1 : b;
}

unsigned thps_bucket(const struct thps_geometry *g, unsigned utilized)
{
	return thps_bucket_n(g->subpages, utilized);
}

void thps_bucket_range(const struct thps_geometry *g, unsigned b, unsigned *lo, unsigned *hi)
{
	thps_bucket_range_n(g->subpages, b, lo, hi);
}

void thps_bucket_range_n(uint32_t nr, unsigned b, unsigned *lo, unsigned *hi)
{
	/* Smallest u with u*10/n >= b is ceil(b*n/10). A bucket that no utilization reaches
	 * (small folios: 2 subpages reach 0, 5 and 9 only) has lo > hi. */
	uint64_t n = nr;

	*lo = (unsigned)((b * n + THPS_BUCKETS - 1) / THPS_BUCKETS);
	*hi = b >= THPS_BUCKETS - 1
		  ? (unsigned)n
		  : (unsigned)(((b + 1) * n + THPS_BUCKETS - 1) / THPS_BUCKETS) - 1;
}

unsigned thps_max_ptes_none_advice(const struct thps_geometry *g, unsigned max_bucket)
{
	unsigned lo, hi;

	thps_bucket_range(g, max_bucket >= THPS_BUCKETS ? THPS_BUCKETS - 1 : max_bucket, &lo, &hi);
	return hi >= g->subpages ? 0 : g->subpages - 1 - hi;
}

void thps_hist_add(struct thps_hist *h, const struct thps_geometry *g, unsigned utilized)
{
	thps_hist_add_n(h, g->subpages, utilized);
}

void thps_hist_add_n(struct thps_hist *h, uint32_t nr, unsigned utilized)
{
	unsigned b;

	if (utilized > nr)
		utilized = nr;
	b = thps_bucket_n(nr, utilized);
	h->thps[b]++;
	h->zero_subpages[b] += nr - utilized;
}

void thps_hist_merge(struct thps_hist *dst, const struct thps_hist *src)
{
	for (unsigned b = 0; b < THPS_BUCKETS; b++) {
		dst->thps[b] += src->thps[b];
		dst->zero_subpages[b] += src->zero_subpages[b];
	}
}

uint64_t thps_hist_lowutil_thps(const struct thps_hist *h, unsigned max_bucket)
{
	uint64_t s = 0;

	for (unsigned b = 0; b < THPS_BUCKETS && b <= max_bucket; b++)
		s += h->thps[b];
	return s;
}

uint64_t thps_hist_lowutil_zero(const struct thps_hist *h, unsigned max_bucket)
{
	uint64_t s = 0;

	for (unsigned b = 0; b < THPS_BUCKETS && b <= max_bucket; b++)
		s += h->zero_subpages[b];
	return s;
}

uint64_t thps_hist_thps(const struct thps_hist *h)
{
	return thps_hist_lowutil_thps(h, THPS_BUCKETS - 1);
}

uint64_t thps_hist_zero_subpages(const struct thps_hist *h)
{
	return thps_hist_lowutil_zero(h, THPS_BUCKETS - 1);
}
