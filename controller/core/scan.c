/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "scan.h"

#define VMSTAT_FIELD(n)                                                                            \
	{                                                                                          \
#n, offsetof(struct thps_vmstat, n)                                                \
	}
const struct thps_vmstat_field thps_vmstat_fields[] = {
    VMSTAT_FIELD(thp_split_page),	   VMSTAT_FIELD(thp_split_page_failed),
    VMSTAT_FIELD(thp_deferred_split_page), VMSTAT_FIELD(thp_underused_split_page),
    VMSTAT_FIELD(thp_split_pmd),	   VMSTAT_FIELD(thp_collapse_alloc),
    VMSTAT_FIELD(thp_split_free),	   VMSTAT_FIELD(thp_split_unmap),
};
const size_t thps_n_vmstat_fields = ELEMENTSOF(thps_vmstat_fields);

void thps_scan_init(struct thps_scan *s, const struct thps_geometry *g)
{
	memset(s, 0, sizeof(*s));
	s->geom = *g;
	s->total.path = NULL;
	memset(&s->vmstat, 0xff, sizeof(s->vmstat));
}

void thps_scan_free(struct thps_scan *s)
{
	for (size_t i = 0; i < s->n_cgroups; i++)
		free(s->cgroups[i].path);
	free(s->cgroups);
	free(s->ranges);
	s->cgroups = NULL;
	s->ranges = NULL;
	s->n_cgroups = s->cap_cgroups = s->n_ranges = s->cap_ranges = 0;
}

struct thps_hist *thps_cgroup_size_hist(struct thps_cgroup_stats *c, const struct thps_geometry *g,
					unsigned order)
{
	int pmd = thps_folio_order(g->subpages);

	if (pmd >= 0 && order == (unsigned)pmd)
		return &c->hist;
	if (order == 0 || order >= THPS_MAX_ORDER || (pmd >= 0 && order > (unsigned)pmd))
		return NULL;
	return &c->mthp[order].hist;
}

uint64_t thps_cgroup_folios(const struct thps_cgroup_stats *c, const struct thps_geometry *g)
{
	uint64_t n = 0;

	for (unsigned o = 1; o <= THPS_MAX_ORDER; o++) {
		const struct thps_hist *h =
		    thps_cgroup_size_hist((struct thps_cgroup_stats *)c, g, o);
		if (h)
			n += thps_hist_thps(h);
	}
	return n;
}

void thps_cgroup_size_partial(const struct thps_cgroup_stats *c, const struct thps_geometry *g,
			      unsigned order, uint64_t *ret_folios, uint64_t *ret_unmapped)
{
	int pmd = thps_folio_order(g->subpages);
	uint64_t f = c->partial_thps, u = c->partial_unmapped_bytes;

	if (pmd < 0 || order != (unsigned)pmd) {
		bool ok = order > 0 && order < THPS_MAX_ORDER;
		*ret_folios = ok ? c->mthp[order].partial_folios : 0;
		*ret_unmapped = ok ? c->mthp[order].partial_unmapped_bytes : 0;
		return;
	}
	for (unsigned o = 1; o < THPS_MAX_ORDER && o < (unsigned)pmd; o++) {
		f -= MIN(f, c->mthp[o].partial_folios);
		u -= MIN(u, c->mthp[o].partial_unmapped_bytes);
	}
	*ret_folios = f;
	*ret_unmapped = u;
}

size_t thps_cgroup_sizes(const struct thps_cgroup_stats *c, const struct thps_geometry *g,
			 unsigned cut, bool always_pmd, struct thps_size_figures *ret)
{
	int pmd = thps_folio_order(g->subpages);
	size_t n = 0;

	for (unsigned o = 1; o <= THPS_MAX_ORDER && n < THPS_MAX_ORDER; o++) {
		const struct thps_hist *h =
		    thps_cgroup_size_hist((struct thps_cgroup_stats *)c, g, o);
		struct thps_size_figures *x = &ret[n];

		if (!h)
			continue;
		memset(x, 0, sizeof(*x));
		x->order = o;
		x->subpages = UINT32_C(1) << o;
		x->size_bytes = (uint64_t)x->subpages * g->page_size;
		x->hist = h;
		x->folios = thps_hist_thps(h);
		x->zero_subpages = thps_hist_zero_subpages(h);
		x->lowutil_folios = thps_hist_lowutil_thps(h, cut);
		x->waste_bytes = thps_hist_lowutil_zero(h, cut) * g->page_size;
		thps_cgroup_size_partial(c, g, o, &x->partial_folios, &x->partial_unmapped_bytes);
		if (x->folios || x->partial_folios ||
		    (always_pmd && pmd >= 0 && o == (unsigned)pmd))
			n++;
	}
	return n;
}

void thps_cgroup_lowutil(const struct thps_cgroup_stats *c, const struct thps_geometry *g,
			 unsigned cut, uint32_t orders_mask, uint64_t *ret_folios,
			 uint64_t *ret_zero)
{
	uint64_t n = 0, z = 0;

	for (unsigned o = 1; o <= THPS_MAX_ORDER; o++) {
		const struct thps_hist *h =
		    thps_cgroup_size_hist((struct thps_cgroup_stats *)c, g, o);

		if (!h || (orders_mask && !(orders_mask & (UINT32_C(1) << o))))
			continue;
		n += thps_hist_lowutil_thps(h, cut);
		z += thps_hist_lowutil_zero(h, cut);
	}
	*ret_folios = n;
	*ret_zero = z;
}

void thps_format_folio_size(char *buf, size_t size, uint64_t bytes)
{
	if (bytes >= (UINT64_C(1) << 20) && bytes % (UINT64_C(1) << 20) == 0)
		snprintf(buf, size, "%llu MiB", (unsigned long long)(bytes >> 20));
	else if (bytes % 1024 == 0)
		snprintf(buf, size, "%llu KiB", (unsigned long long)(bytes >> 10));
	else
		snprintf(buf, size, "%llu B", (unsigned long long)bytes);
}

struct thps_cgroup_stats *thps_scan_cgroup(struct thps_scan *s, uint64_t ino, const char *path)
{
	struct thps_cgroup_stats *c;

	for (size_t i = 0; i < s->n_cgroups; i++)
		if (s->cgroups[i].ino == ino) {
			c = &s->cgroups[i];
			if (path && !c->path) {
				c->path = strdup(path);
				if (!c->path)
					return NULL;
			}
			return c;
		}
	if (s->n_cgroups == s->cap_cgroups) {
		size_t cap = s->cap_cgroups ? s->cap_cgroups * 2 : 16;
		c = reallocarray(s->cgroups, cap, sizeof(*c));
		if (!c)
			return NULL;
		s->cgroups = c;
		s->cap_cgroups = cap;
	}
	c = &s->cgroups[s->n_cgroups];
	memset(c, 0, sizeof(*c));
	c->ino = ino;
	if (path) {
		c->path = strdup(path);
		if (!c->path)
			return NULL;
	}
	s->n_cgroups++;
	return c;
}

struct thps_cgroup_stats *thps_scan_find_path(struct thps_scan *s, const char *path)
{
	for (size_t i = 0; i < s->n_cgroups; i++)
		if (s->cgroups[i].path && strcmp(s->cgroups[i].path, path) == 0)
			return &s->cgroups[i];
	return NULL;
}

int thps_scan_add_range(struct thps_scan *s, const struct thps_thp_range *r)
{
	if (s->n_ranges == s->cap_ranges) {
		size_t cap = s->cap_ranges ? s->cap_ranges * 2 : 64;
		struct thps_thp_range *n = reallocarray(s->ranges, cap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->ranges = n;
		s->cap_ranges = cap;
	}
	s->ranges[s->n_ranges++] = *r;
	return 0;
}

void thps_scan_finish(struct thps_scan *s, unsigned lowutil_max_bucket)
{
	struct thps_cgroup_stats *t = &s->total;

	s->lowutil_max_bucket = lowutil_max_bucket;
	memset(&t->hist, 0, sizeof(t->hist));
	memset(t->mthp, 0, sizeof(t->mthp));
	t->lowutil_thps = t->waste_bytes = t->partial_thps = t->partial_unmapped_bytes = 0;
	for (size_t i = 0; i < s->n_cgroups; i++) {
		struct thps_cgroup_stats *c = &s->cgroups[i];
		c->lowutil_thps = c->waste_bytes = 0;
		for (unsigned o = 1; o <= THPS_MAX_ORDER; o++) {
			const struct thps_hist *h = thps_cgroup_size_hist(c, &s->geom, o);
			if (!h)
				continue;
			c->lowutil_thps += thps_hist_lowutil_thps(h, lowutil_max_bucket);
			c->waste_bytes +=
			    thps_hist_lowutil_zero(h, lowutil_max_bucket) * s->geom.page_size;
		}
		thps_hist_merge(&t->hist, &c->hist);
		for (unsigned o = 1; o < THPS_MAX_ORDER; o++) {
			thps_hist_merge(&t->mthp[o].hist, &c->mthp[o].hist);
			t->mthp[o].partial_folios += c->mthp[o].partial_folios;
			t->mthp[o].partial_unmapped_bytes += c->mthp[o].partial_unmapped_bytes;
		}
		t->lowutil_thps += c->lowutil_thps;
		t->waste_bytes += c->waste_bytes;
		t->partial_thps += c->partial_thps;
		t->partial_unmapped_bytes += c->partial_unmapped_bytes;
	}
}

static int cmp_waste(const void *a, const void *b)
{
	const struct thps_cgroup_stats *x = a, *y = b;
	uint64_t wx = x->waste_bytes + x->partial_unmapped_bytes;
	uint64_t wy = y->waste_bytes + y->partial_unmapped_bytes;

	if (wx != wy)
		return wx > wy ? -1 : 1;
	return strcmp(x->path ? x->path : "", y->path ? y->path : "");
}

void thps_scan_sort(struct thps_scan *s)
{
	if (s->n_cgroups > 1)
		qsort(s->cgroups, s->n_cgroups, sizeof(s->cgroups[0]), cmp_waste);
}
