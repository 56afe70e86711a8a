/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pass's act step (see pass-act.h): a decision carried out through thps_give_back(), the
 * one act path of the daemon and the CLI (actuator.h), and its result told to the engine. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pass-act.h"
#include "actuator.h"
#include "engine.h"

void dglue_record(struct thps_engine *e, const char *cgroup, const struct dglue_decision *d,
		  const struct dglue_result *res)
{
	if (d->act && !d->dry && d->action != DGLUE_ACT_OBSERVE)
		(void)thps_engine_record_result(e, cgroup, res->requested, res->given_back);
}

/* What the daemon keeps from a split besides the policy's cut: ranges khugepaged rebuilt
 * too often (pinned) and whole THPs it promoted itself (dense while whole). */
struct act_skip {
	const struct thps_recollapse *rc;
	const struct thps_promoted *promoted;
};

static bool act_skip(const struct thps_thp_range *t, void *userdata)
{
	const struct act_skip *k = userdata;

	return (k->rc && thps_recollapse_pinned(k->rc, t)) ||
	       (k->promoted && thps_promoted_has(k->promoted, t));
}

static enum thps_give_back_method give_back_method(enum dglue_action a)
{
	switch (a) {
	case DGLUE_ACT_SPLIT:
		return THPS_GIVE_BACK_SPLIT;
	case DGLUE_ACT_RECLAIM:
		return THPS_GIVE_BACK_RECLAIM;
	default:
		return THPS_GIVE_BACK_OBSERVE;
	}
}

int dglue_act(const struct thps_ctx *ctx, const struct thps_scan *scan,
	      const struct thps_cgroup_stats *c, const struct dglue_decision *d,
	      const struct thps_recollapse *rc, const struct thps_promoted *promoted,
	      struct dglue_result *ret)
{
	struct act_skip skip = {.rc = rc, .promoted = promoted};
	const struct thps_give_back gb = {
	    .cgroup = c->path,
	    .geom = &scan->geom,
	    .method = give_back_method(d->action),
	    .allow_reclaim = d->allow_reclaim,
	    .mech = d->split_mech,
	    .zero_freed = d->split_zero_freed,
	    .amount = d->amount,
	    .max_bytes = d->amount,
	    .lowutil_max_bucket = d->lowutil_max_bucket,
	    .sizes_mask = d->sizes_mask,
	    .ranges = d->action == DGLUE_ACT_SPLIT ? scan->ranges : NULL,
	    .n_ranges = d->action == DGLUE_ACT_SPLIT ? scan->n_ranges : 0,
	    .ino = c->ino,
	    .skip = act_skip,
	    .userdata = &skip,
	};
	struct thps_act_result res;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (d->action == DGLUE_ACT_NONE)
		return -EOPNOTSUPP;
	if (!c->path || !strcmp(c->path, "/"))
		return -EINVAL;
	memset(&res, 0, sizeof(res));
	r = thps_give_back(ctx, &gb, &res);
	if (d->action == DGLUE_ACT_OBSERVE) {
		/* Nothing was asked of the kernel; an unreadable memory.current (cgroup v1) only
		 * costs the dry run its snapshot. */
		snprintf(ret->note, sizeof(ret->note), "%s", r < 0 ? "dry run" : res.note);
		return 0;
	}
	if (r < 0)
		return r;
	ret->requested = res.asked_bytes;
	ret->given_back = thps_act_given_back(&res);
	ret->file_lost = thps_act_file_lost(&res);
	ret->mechanism = res.mechanism;
	snprintf(ret->note, sizeof(ret->note), "%s", res.note);
	return res.acted ? 0 : -ECANCELED;
}
