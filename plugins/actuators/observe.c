/* SPDX-License-Identifier: GPL-2.0-or-later */
/* observe: the dry run. Records what reclaim or split would ask for, changes nothing. */
#include <stdio.h>
#include <string.h>

#include "actuator.h"
#include "macro.h"

static int observe_probe(const struct thps_ctx *ctx, char *why, size_t size)
{
	(void)ctx;
	snprintf(why, size, "changes nothing");
	return 1;
}

static int observe_act(const struct thps_ctx *ctx, const struct thps_act_request *req,
		       struct thps_act_result *res)
{
	uint64_t waste = 0;
	int r;

	memset(res, 0, sizeof(*res));
	res->actuator = "observe";
	for (size_t i = 0; i < req->n_ranges; i++)
		waste += (uint64_t)(req->geom->subpages -
				    MIN(req->ranges[i].utilized, req->geom->subpages)) *
			 req->geom->page_size;
	res->asked_bytes = req->amount_bytes ? req->amount_bytes : waste;
	r = thps_act_snapshot(ctx, req->cgroup, &res->before);
	if (r < 0)
		return r;
	res->after = res->before;
	snprintf(res->note, sizeof(res->note),
		 "dry run: would ask for %llu bytes (%zu low-utilization "
		 "THP ranges); nothing changed",
		 (unsigned long long)res->asked_bytes, req->n_ranges);
	return 0;
}

const struct thps_actuator_ops thps_actuator_observe = {
    .name = "observe",
    .description = "dry run: record what would be done",
    .probe = observe_probe,
    .act = observe_act,
};
