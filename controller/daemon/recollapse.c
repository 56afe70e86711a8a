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

static struct thps_split_mark *find(const struct thps_recollapse *rc,
				    const struct thps_thp_range *r)
{
	for (size_t j = 0; j < rc->n; j++) {
		struct thps_split_mark *s = &rc->v[j];

		if (s->pid == r->pid && s->pid_starttime == r->pid_starttime &&
		    s->start == r->start)
			return s;
	}
	return NULL;
}

/* Makes room for one more mark: the oldest that never came back goes first, else the oldest. */
static void make_room(struct thps_recollapse *rc, size_t max)
{
	size_t drop = 0;

	if (rc->n < max)
		return;
	for (size_t j = 0; j < rc->n; j++)
		if (!rc->v[j].returns) {
			drop = j;
			break;
		}
	memmove(&rc->v[drop], &rc->v[drop + 1], (rc->n - drop - 1) * sizeof(*rc->v));
	rc->n--;
}

int thps_recollapse_add(struct thps_recollapse *rc, const struct thps_thp_range *r, size_t n,
			uint64_t ino)
{
	size_t max = bound(rc);

	/* partially mapped folios are split for their unmapped part: khugepaged rebuilding their
	 * range is no undoing of that */
	for (size_t i = 0; i < n; i++) {
		struct thps_split_mark *s;

		if (r[i].ino != ino || r[i].mapped)
			continue;
		if (!rc->v) {
			rc->v = calloc(max, sizeof(*rc->v));
			if (!rc->v)
				return -ENOMEM;
		}
		s = find(rc, &r[i]);
		if (!s) {
			make_room(rc, max);
			s = &rc->v[rc->n++];
			*s = (struct thps_split_mark){.pid = r[i].pid,
						      .pid_starttime = r[i].pid_starttime,
						      .start = r[i].start};
		}
		s->pfn = r[i].pfn;
		s->pending = true;
	}
	return 0;
}

size_t thps_recollapse_match(struct thps_recollapse *rc, const struct thps_thp_range *r, size_t n,
			     uint64_t ino, size_t *ret_pinned)
{
	size_t count = 0, pinned = 0;

	for (size_t i = 0; i < n && rc->n; i++) {
		struct thps_split_mark *s;

		if (r[i].ino != ino || r[i].mapped)
			continue;
		s = find(rc, &r[i]);
		if (!s || !s->pending)
			continue;
		if (s->pfn == r[i].pfn) {
			/* never split (budget or skipped): nothing to count */
			if (!s->returns) {
				memmove(s, s + 1, (size_t)(&rc->v[rc->n] - (s + 1)) * sizeof(*s));
				rc->n--;
			} else
				s->pending = false;
			continue;
		}
		count++;
		s->pfn = r[i].pfn;
		s->pending = false;
		pinned += ++s->returns == THPS_RECOLLAPSE_PIN_AFTER;
	}
	if (ret_pinned)
		*ret_pinned = pinned;
	return count;
}

bool thps_recollapse_pinned(const struct thps_recollapse *rc, const struct thps_thp_range *r)
{
	const struct thps_split_mark *s = find(rc, r);

	return s && s->returns >= THPS_RECOLLAPSE_PIN_AFTER;
}

size_t thps_recollapse_n_pinned(const struct thps_recollapse *rc)
{
	size_t k = 0;

	for (size_t j = 0; j < rc->n; j++)
		k += rc->v[j].returns >= THPS_RECOLLAPSE_PIN_AFTER;
	return k;
}

void thps_recollapse_clear(struct thps_recollapse *rc)
{
	free(rc->v);
	rc->v = NULL;
	rc->n = 0;
}

int thps_promoted_add(struct thps_promoted *p, pid_t pid, uint64_t pid_starttime, uint64_t start)
{
	size_t max = p->max ? p->max : THPS_RECOLLAPSE_MAX;

	if (!p->v) {
		p->v = calloc(max, sizeof(*p->v));
		if (!p->v)
			return -ENOMEM;
	}
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].pid == pid && p->v[i].pid_starttime == pid_starttime &&
		    p->v[i].start == start)
			return 0;
	if (p->n == max) {
		memmove(p->v, p->v + 1, (max - 1) * sizeof(*p->v));
		p->n--;
	}
	p->v[p->n++] =
	    (struct thps_split_mark){.pid = pid, .pid_starttime = pid_starttime, .start = start};
	return 0;
}

bool thps_promoted_has(const struct thps_promoted *p, const struct thps_thp_range *r)
{
	if (r->mapped)
		return false; /* partially mapped: not dense any more */
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].pid == r->pid && p->v[i].pid_starttime == r->pid_starttime &&
		    p->v[i].start == r->start)
			return true;
	return false;
}

void thps_promoted_clear(struct thps_promoted *p)
{
	free(p->v);
	p->v = NULL;
	p->n = 0;
}
