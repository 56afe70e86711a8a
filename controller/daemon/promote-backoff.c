/* SPDX-License-Identifier: GPL-2.0-or-later */
/* promote-backoff.h: a small table searched linearly. It holds at most PROMOTE_BACKOFF_MAX
 * ranges and is asked once per dense range found, on the promote thread: a few million
 * comparisons per pass at worst, next to a page-table walk of the same ranges. */
#include <errno.h>
#include <stdlib.h>

#include "macro.h"
#include "promote-backoff.h"

static struct promote_backoff_range *find(const struct promote_backoff *b, pid_t pid,
					  uint64_t starttime, uint64_t addr)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].addr == addr && b->v[i].pid == pid && b->v[i].starttime == starttime)
			return &b->v[i];
	return NULL;
}

bool promote_backoff_admit(const struct promote_backoff *b, pid_t pid, uint64_t starttime,
			   uint64_t addr, uint64_t pass)
{
	const struct promote_backoff_range *r = find(b, pid, starttime, addr);

	return !r || pass >= r->until;
}

/* A free slot: a new one while under the bound, else the least recently collapsed range's. */
static struct promote_backoff_range *slot(struct promote_backoff *b)
{
	size_t max = b->max ? b->max : PROMOTE_BACKOFF_MAX, oldest = 0;

	if (b->n < max) {
		if (b->n == b->cap) {
			size_t cap = MIN(max, b->cap ? b->cap * 2 : 64);
			struct promote_backoff_range *v = realloc(b->v, cap * sizeof(*v));

			if (!v)
				return NULL;
			b->v = v;
			b->cap = cap;
		}
		return &b->v[b->n++];
	}
	for (size_t i = 1; i < b->n; i++)
		if (b->v[i].last < b->v[oldest].last)
			oldest = i;
	return &b->v[oldest];
}

int promote_backoff_collapsed(struct promote_backoff *b, pid_t pid, uint64_t starttime,
			      uint64_t addr, uint64_t pass)
{
	struct promote_backoff_range *r = find(b, pid, starttime, addr);

	if (!r) {
		r = slot(b);
		if (!r)
			return -ENOMEM;
		*r = (struct promote_backoff_range){
		    .pid = pid, .starttime = starttime, .addr = addr};
	}
	r->collapses++;
	r->last = pass;
	/* The first collapse holds nothing: a range that stays a THP is never found again. */
	r->until = pass + (UINT64_C(1) << MIN(r->collapses - 1, PROMOTE_BACKOFF_SHIFT_MAX));
	return 0;
}

size_t promote_backoff_n_held(const struct promote_backoff *b, uint64_t pass)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n; i++)
		n += pass < b->v[i].until && b->v[i].collapses > 1;
	return n;
}

void promote_backoff_free(struct promote_backoff *b)
{
	free(b->v);
	*b = (struct promote_backoff){.max = b->max};
}
