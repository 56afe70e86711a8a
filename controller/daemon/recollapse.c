/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Split/re-collapse detection. Linear scans: a cgroup keeps at most THPS_RECOLLAPSE_MAX marks
 * and only the daemon's split cgroups have any, so n*m stays small next to the scan itself. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recollapse.h"

static size_t bound(const struct thps_recollapse *rc)
{
	return rc->max ? rc->max : THPS_RECOLLAPSE_MAX;
}

int thps_recollapse_add(struct thps_recollapse *rc, const struct thps_thp_range *r, size_t n,
			uint64_t ino)
{
	size_t k = 0, max = bound(rc), keep;
	struct thps_split_mark *v;

	/* partially mapped folios are split for their unmapped part: khugepaged rebuilding their
	 * range is no undoing of that */
	for (size_t i = 0; i < n; i++)
		k += r[i].ino == ino && !r[i].mapped;
	if (k == 0)
		return 0;
	if (!rc->v) {
		v = calloc(max, sizeof(*v));
		if (!v)
			return -ENOMEM;
		rc->v = v;
	}
	/* Drop the oldest in one move; when k alone exceeds the bound, keep its newest part. */
	keep = k >= max ? 0 : rc->n + k > max ? max - k : rc->n;
	memmove(rc->v, rc->v + (rc->n - keep), keep * sizeof(*rc->v));
	rc->n = keep;
	for (size_t i = 0, seen = 0; i < n; i++) {
		if (r[i].ino != ino || r[i].mapped)
			continue;
		if (k > max && seen++ < k - max)
			continue;
		rc->v[rc->n++] = (struct thps_split_mark){.pid = r[i].pid,
							  .pid_starttime = r[i].pid_starttime,
							  .start = r[i].start,
							  .pfn = r[i].pfn};
	}
	return 0;
}

size_t thps_recollapse_match(struct thps_recollapse *rc, const struct thps_thp_range *r, size_t n,
			     uint64_t ino)
{
	size_t count = 0;

	for (size_t i = 0; i < n && rc->n; i++) {
		if (r[i].ino != ino || r[i].mapped)
			continue;
		for (size_t j = 0; j < rc->n; j++) {
			struct thps_split_mark *s = &rc->v[j];

			if (s->pid != r[i].pid || s->pid_starttime != r[i].pid_starttime ||
			    s->start != r[i].start)
				continue;
			count += s->pfn != r[i].pfn;
			memmove(s, s + 1, (rc->n - j - 1) * sizeof(*s));
			rc->n--;
			break;
		}
	}
	return count;
}

void thps_recollapse_clear(struct thps_recollapse *rc)
{
	free(rc->v);
	rc->v = NULL;
	rc->n = 0;
}
