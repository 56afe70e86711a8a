/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pass's act step: a decision (pass-decide.h) carried out on one cgroup through the one act
 * path of the daemon and the CLI (thps_give_back(), actuator.h), and what it gave back told to
 * the engine. */
#pragma once
#include <stdint.h>

#include "context.h"
#include "pass-decide.h"
#include "recollapse.h"
#include "scan.h"

struct thps_engine;

struct dglue_result {
	uint64_t requested;
	uint64_t given_back;   /* thps_act_given_back(): never page cache */
	uint64_t file_lost;    /* memory.stat file before - after: what it cost the page cache */
	const char *mechanism; /* "process_madvise", "debugfs", "reclaim"; NULL: nothing asked */
	char note[512];	       /* the actuator's word for the operator, "" if none */
};

struct dglue_result;
/* Tells the engine what an action gave back (drives its no-effect backoff). */
void dglue_record(struct thps_engine *e, const char *cgroup, const struct dglue_decision *d,
		  const struct dglue_result *res);

/* Carries out d for cgroup c (of scan) through thps_give_back(), the CLI's act path too; a
 * split leaves the ranges rc pinned (khugepaged rebuilt them too often; NULL: none) and the
 * whole THPs the daemon promoted (NULL: none) alone, and writes memory.reclaim only where
 * d->allow_reclaim. Returns 0,
 * -ECANCELED if the actuator refused (note says why), or -errno (the caller logs). */
int dglue_act(const struct thps_ctx *ctx, const struct thps_scan *scan,
	      const struct thps_cgroup_stats *c, const struct dglue_decision *d,
	      const struct thps_recollapse *rc, const struct thps_promoted *promoted,
	      struct dglue_result *ret);
