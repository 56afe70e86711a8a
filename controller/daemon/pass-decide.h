/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pass's decide step: for one cgroup, its policy and mode (daemon-glue.h's dglue_choose)
 * put to the decision engine (engine.h) with the cgroup's figures. Deciding asks the kernel
 * nothing but the cgroup's memory.pressure; the act step is pass-act.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actuator.h"
#include "context.h"
#include "recollapse.h"
#include "scan.h"

struct dglue_policies;
struct thps_engine;
struct thps_registration;

/* The decision engine with default budgets. Returns 0 or -errno. */
/* scan_cpu_percent: the global CPU share of scanning, 0 = the engine default. */
int dglue_engine_new(unsigned scan_cpu_percent, struct thps_engine **ret);

/* What the daemon does with a cgroup this pass. The acting ones come first: they index the
 * per-action counters. Names only at the edges (logs, metrics, status.json, actuator table). */
enum dglue_action {
	DGLUE_ACT_OBSERVE, /* record what enforce would ask; the kernel is asked nothing */
	DGLUE_ACT_RECLAIM,
	DGLUE_ACT_SPLIT,
	DGLUE_ACT_NONE,
};
#define DGLUE_N_ACTING DGLUE_ACT_NONE
const char *dglue_action_name(enum dglue_action a);

struct dglue_decision {
	char policy[72]; /* name of the matching policy ("(builtin)" when none) */
	char rule[32];	 /* the engine's rule ("min_waste", "cooldown", ...) */
	enum dglue_action action;
	char reason[320];		    /* one line, for logs and `thpshrink explain` */
	bool act;			    /* call the actuator */
	bool dry;			    /* the engine would act; the daemon only observes */
	uint64_t amount;		    /* bytes to ask for */
	uint64_t waste_bytes, lowutil_thps; /* at the policy's low-util cut */
	unsigned lowutil_max_bucket;	    /* the policy's low-util cut */
	uint32_t sizes_mask;		    /* the policy's folio sizes, 0 = every size */
	bool allow_reclaim; /* the policy allows memory.reclaim where no exact split reaches */
	enum thps_split_mech split_mech; /* how a split splits (the daemon's probe) */
	int split_zero_freed;		 /* as measured at start; 0 unknown */
};

/* Chooses c's policy and mode (dglue_choose; reg, the registration covering c, may be NULL)
 * and asks the engine.
 * rc (may be NULL) are c's split ranges: the pinned ones are no waste to a split.
 * observe_only turns actions into "observe". now_usec is CLOCK_MONOTONIC. Returns 0 or -errno
 * (-ENOSPC: too many cgroups tracked). */
int dglue_decide(const struct thps_ctx *ctx, struct thps_engine *e, const struct dglue_policies *p,
		 const struct thps_scan *scan, const struct thps_cgroup_stats *c,
		 const struct thps_recollapse *rc, const struct thps_registration *reg,
		 bool observe_only, uint64_t now_usec, struct dglue_decision *ret);

/* Gives d the daemon's split mechanism (as probed and measured at start). Where there is none,
 * a split the policy allows to fall back (split_or_reclaim) becomes memory.reclaim, counted,
 * logged and measured as such, and its reason says why; any other split stays one, which
 * dglue_act refuses with the reason. */
void dglue_decision_fit(struct dglue_decision *d, enum thps_split_mech mech, int zero_freed);
