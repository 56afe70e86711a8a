/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one act path: how the daemon (dglue_act) and the CLI (thpshrink reclaim) give a cgroup's
 * waste back. It picks the cgroup's ranges, splits them exactly, and writes memory.reclaim only
 * where the operator named it or allowed it: memory.reclaim evicts page cache too, which a
 * tenant reads again at once. Where it does not act it says why in the result's note. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actuator.h"
#include "macro.h"

#define ALLOW_HINT                                                                                 \
	"\"action\": \"split_or_reclaim\" allows memory.reclaim, which also evicts page cache"

static bool wanted(const struct thps_give_back *gb, const struct thps_thp_range *t, bool partials)
{
	uint32_t pages = thps_range_pages(t, gb->geom);

	if (gb->ino && t->ino != gb->ino)
		return false;
	if (gb->skip && gb->skip(t, gb->userdata))
		return false;
	if (gb->sizes_mask && !(gb->sizes_mask & (UINT32_C(1) << thps_folio_order(pages))))
		return false;
	if (t->mapped)
		return partials;
	return thps_bucket_n(pages, t->utilized) <= gb->lowutil_max_bucket;
}

/* The ranges a split of gb acts on, into *ret (the caller frees it). Returns the count or
 * -ENOMEM. */
static int pick_ranges(const struct thps_give_back *gb, bool partials, struct thps_thp_range **ret)
{
	struct thps_thp_range *v;
	size_t n = 0;

	*ret = NULL;
	if (!gb->n_ranges)
		return 0;
	if (gb->n_ranges > INT_MAX)
		return -E2BIG;
	v = calloc(gb->n_ranges, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < gb->n_ranges; i++)
		if (wanted(gb, &gb->ranges[i], partials))
			v[n++] = gb->ranges[i];
	*ret = v;
	return (int)n;
}

static int reclaim(const struct thps_ctx *ctx, const struct thps_give_back *gb, uint64_t bytes,
		   struct thps_act_result *res)
{
	struct thps_act_request req = {
	    .cgroup = gb->cgroup,
	    .geom = gb->geom,
	    .amount_bytes = bytes,
	};
	int r = thps_actuator_reclaim.act(ctx, &req, res);

	if (r >= 0 && res->acted)
		res->mechanism = "reclaim";
	return r;
}

/* Cut, never overflowed: the note is one log line. */
static void note_append(struct thps_act_result *res, const char *what)
{
	size_t len = strlen(res->note), n;

	if (len && len + 2 < sizeof(res->note)) {
		memcpy(res->note + len, "; ", 2);
		len += 2;
	}
	n = MIN(strlen(what), sizeof(res->note) - 1 - len);
	memcpy(res->note + len, what, n);
	res->note[len + n] = '\0';
}

/* what (at most 448 bytes) before the note, which is cut to fit */
static void note_prepend(struct thps_act_result *res, const char *what)
{
	char old[sizeof(res->note)];
	size_t len;

	memcpy(old, res->note, sizeof(old));
	len = strnlen(what, 448);
	memcpy(res->note, what, len);
	res->note[len] = '\0';
	if (old[0])
		note_append(res, old);
}

/* Joins a split and the reclaim after it into one action: the first before, the last after. */
static void merge_results(const struct thps_act_result *split, const struct thps_act_result *rec,
			  struct thps_act_result *ret)
{
	struct thps_act_result m = *split;

	m.acted = split->acted || rec->acted;
	m.asked_bytes = split->asked_bytes + rec->asked_bytes;
	if (!split->acted)
		m.before = rec->before;
	if (rec->acted)
		m.after = rec->after;
	snprintf(m.note, sizeof(m.note),
		 "%.200s%smemory.reclaim for partially mapped THPs, as the policy allows%s%.200s",
		 split->note, split->note[0] ? "; " : "", rec->note[0] ? ": " : "", rec->note);
	*ret = m;
}

/* No exact split here: memory.reclaim where allowed, else a refusal that says so. */
static int no_exact_split(const struct thps_ctx *ctx, const struct thps_give_back *gb,
			  const char *why, struct thps_act_result *res)
{
	char m[448];
	int r;

	if (gb->allow_reclaim && gb->cgroup) {
		r = reclaim(ctx, gb, gb->amount, res);
		snprintf(m, sizeof(m),
			 "no exact split here (%.200s): memory.reclaim, as the policy allows", why);
		note_prepend(res, m);
		return r;
	}
	memset(res, 0, sizeof(*res));
	res->actuator = "split";
	snprintf(res->note, sizeof(res->note),
		 "refused: no exact split here (%.200s); memory.reclaim is not allowed (%s)", why,
		 ALLOW_HINT);
	/* still measured, so before and after show that nothing changed */
	if (thps_act_snapshot_of(ctx, gb->cgroup, gb->pid, &res->before) == 0)
		res->after = res->before;
	return 0;
}

/* The unmapped parts of partially mapped THPs on the debugfs fallback: no split of the mapped
 * ranges the scanner saw reaches them, but memory.reclaim of just those bytes runs the
 * deferred-split shrinker, which splits such folios whatever max_ptes_none is. */
static int partial_rest(const struct thps_ctx *ctx, const struct thps_give_back *gb,
			struct thps_act_result *res)
{
	uint64_t page = gb->geom->page_size ? gb->geom->page_size : 4096, bytes;
	struct thps_act_result rec;
	char m[256];
	int r;

	bytes = gb->partial_unmapped_bytes;
	if (gb->max_bytes)
		bytes = gb->max_bytes > res->asked_bytes
			    ? MIN(bytes, gb->max_bytes - res->asked_bytes)
			    : 0;
	bytes -= bytes % page;
	if (!bytes)
		return 0;
	if (!gb->allow_reclaim || !gb->cgroup) {
		snprintf(m, sizeof(m),
			 "%" PRIu64 " bytes of partially mapped THPs left: the debugfs split does "
			 "not reach them, and memory.reclaim is not allowed (%s)",
			 bytes, ALLOW_HINT);
		note_append(res, m);
		return 0;
	}
	memset(&rec, 0, sizeof(rec));
	r = reclaim(ctx, gb, bytes, &rec);
	if (r < 0)
		return r;
	merge_results(res, &rec, res);
	return 0;
}

static int split(const struct thps_ctx *ctx, const struct thps_give_back *gb,
		 struct thps_act_result *res)
{
	_cleanup_free_ struct thps_thp_range *ranges = NULL;
	char why[384];
	enum thps_split_mech mech = gb->mech;
	uint64_t page = gb->geom->page_size ? gb->geom->page_size : 4096;
	bool exact;
	int n, r;

	/* the probe's reason too where the caller decided there is no mechanism */
	if (mech == THPS_SPLIT_MECH_AUTO || mech == THPS_SPLIT_MECH_NONE) {
		enum thps_split_mech now =
		    thps_split_mechanism(ctx, THPS_SPLIT_MECH_AUTO, why, sizeof(why));

		if (mech == THPS_SPLIT_MECH_AUTO)
			mech = now;
		else if (now != THPS_SPLIT_MECH_NONE)
			snprintf(why, sizeof(why), "none measured to free anything at start");
	}
	if (mech == THPS_SPLIT_MECH_NONE)
		return no_exact_split(ctx, gb, why, res);
	/* process_madvise reaches partially mapped folios exactly; debugfs cannot (the scanner's
	 * mapped ranges miss the unmapped part) */
	exact = mech == THPS_SPLIT_MECH_PMADVISE;
	n = pick_ranges(gb, exact, &ranges);
	if (n < 0)
		return n;
	const struct thps_act_request req = {
	    .cgroup = gb->cgroup,
	    .geom = gb->geom,
	    .amount_bytes = gb->max_bytes,
	    .max_bytes = gb->max_bytes,
	    .ranges = ranges,
	    .n_ranges = (size_t)n,
	    .lowutil_max_bucket = gb->lowutil_max_bucket,
	    .pid = gb->pid,
	    .mech = mech,
	    .zero_freed = gb->zero_freed,
	    .cold_whole = gb->cold_whole,
	};
	memset(res, 0, sizeof(*res));
	/* only partially mapped waste on the debugfs fallback: nothing for the split to do */
	if (n || exact || gb->partial_unmapped_bytes < page) {
		r = thps_actuator_split.act(ctx, &req, res);
		if (r < 0)
			return r;
	} else {
		res->actuator = "split";
		res->mechanism = thps_split_mech_name(mech);
	}
	if (exact)
		return 0;
	r = partial_rest(ctx, gb, res);
	if (r < 0)
		return r;
	if (!res->acted && res->before.memory_current == 0 &&
	    thps_act_snapshot_of(ctx, gb->cgroup, gb->pid, &res->before) == 0)
		res->after = res->before;
	return 0;
}

static int observe(const struct thps_ctx *ctx, const struct thps_give_back *gb,
		   struct thps_act_result *res)
{
	_cleanup_free_ struct thps_thp_range *ranges = NULL;
	int n = 0;

	if (gb->method == THPS_GIVE_BACK_OBSERVE && !gb->amount) {
		n = pick_ranges(gb, gb->mech == THPS_SPLIT_MECH_PMADVISE, &ranges);
		if (n < 0)
			return n;
	}
	const struct thps_act_request req = {
	    .cgroup = gb->cgroup,
	    .geom = gb->geom,
	    .amount_bytes = gb->amount,
	    .ranges = ranges,
	    .n_ranges = (size_t)n,
	    .pid = gb->pid,
	};
	return thps_actuator_observe.act(ctx, &req, res);
}

int thps_give_back(const struct thps_ctx *ctx, const struct thps_give_back *gb,
		   struct thps_act_result *ret)
{
	switch (gb->method) {
	case THPS_GIVE_BACK_SPLIT:
		return split(ctx, gb, ret);
	case THPS_GIVE_BACK_RECLAIM:
		if (!gb->cgroup)
			return -EINVAL;
		return reclaim(ctx, gb, gb->amount, ret);
	case THPS_GIVE_BACK_OBSERVE:
		return observe(ctx, gb, ret);
	}
	return -EINVAL;
}
