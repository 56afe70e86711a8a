/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers shared by the text and JSON reports. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "report.h"

size_t thps_report_probe_sources(const struct thps_ctx *ctx,
				 const struct thps_source_ops *const *sources,
				 struct thps_source_status *ret, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; sources[i] && n < max; i++, n++) {
		struct thps_source_status *st = &ret[n];
		int r;

		st->name = sources[i]->name;
		st->reason[0] = '\0';
		r = sources[i]->probe ? sources[i]->probe(ctx, st->reason, sizeof(st->reason))
				      : -ENOSYS;
		st->reason[sizeof(st->reason) - 1] = '\0';
		st->usable = r > 0;
		if (r < 0)
			snprintf(st->reason, sizeof(st->reason), "probe failed: %s", strerror(-r));
		else if (r == 0 && !st->reason[0])
			snprintf(st->reason, sizeof(st->reason), "no reason given");
		else if (r > 0)
			st->reason[0] = '\0';
		/* Some probes start their reason with the verdict; the report prints that itself.
		 */
		if (!strncmp(st->reason, "not usable: ", strlen("not usable: ")))
			memmove(st->reason, st->reason + strlen("not usable: "),
				strlen(st->reason) - strlen("not usable: ") + 1);
	}
	return n;
}

bool thps_report_cgroup_shown(const struct thps_cgroup_stats *c)
{
	if (thps_hist_thps(&c->hist) > 0 || c->partial_thps > 0 || c->dense_small_bytes > 0)
		return true;
	for (unsigned o = 1; o < THPS_MAX_ORDER; o++)
		if (thps_hist_thps(&c->mthp[o].hist) > 0)
			return true;
	return false;
}

static int cmp_waste(const void *a, const void *b)
{
	const struct thps_cgroup_stats *x = *(const struct thps_cgroup_stats *const *)a;
	const struct thps_cgroup_stats *y = *(const struct thps_cgroup_stats *const *)b;
	uint64_t wx = x->waste_bytes + x->partial_unmapped_bytes;
	uint64_t wy = y->waste_bytes + y->partial_unmapped_bytes;
	int r;

	if (wx != wy)
		return wx > wy ? -1 : 1;
	r = strcmp(x->path ? x->path : "", y->path ? y->path : "");
	if (r)
		return r;
	/* Same path (unnamed cgroups): keep the output stable. */
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

ssize_t thps_report_order(const struct thps_scan *scan, const struct thps_cgroup_stats ***ret)
{
	const struct thps_cgroup_stats **v;
	size_t n = 0;

	*ret = NULL;
	for (size_t i = 0; i < scan->n_cgroups; i++)
		n += thps_report_cgroup_shown(&scan->cgroups[i]);
	if (n == 0)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < scan->n_cgroups; i++)
		if (thps_report_cgroup_shown(&scan->cgroups[i]))
			v[n++] = &scan->cgroups[i];
	qsort(v, n, sizeof(*v), cmp_waste);
	*ret = v;
	return (ssize_t)n;
}
