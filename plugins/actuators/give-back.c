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

static int split(const struct thps_ctx *ctx, const struct thps_give_back *gb,
		 struct thps_act_result *res)
{
	_cleanup_free_ struct thps_thp_range *ranges = NULL;
	char why[384];
	enum thps_split_mech mech = gb->mech;
	int n;

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
	/* both mechanisms reach a partially mapped folio through the one page that still maps
	 * it: its split frees the unmapped subpages */
	n = pick_ranges(gb, true, &ranges);
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
	return thps_actuator_split.act(ctx, &req, res);
}

static int observe(const struct thps_ctx *ctx, const struct thps_give_back *gb,
		   struct thps_act_result *res)
{
	_cleanup_free_ struct thps_thp_range *ranges = NULL;
	int n = 0;

	if (gb->method == THPS_GIVE_BACK_OBSERVE && !gb->amount) {
		n = pick_ranges(gb, gb->mech != THPS_SPLIT_MECH_NONE, &ranges);
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
