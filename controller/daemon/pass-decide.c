/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pass's decide step (see pass-decide.h): a cgroup's policy and mode (dglue_choose), its
 * figures at the policy's cut, less what no split can reach, and its memory pressure, put to
 * the decision engine (engine.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass-decide.h"
#include "daemon-glue.h"
#include "macro.h"
#include "fileio.h"
#include "engine.h"
#include "policy.h"
#include "psi.h"
#include "registrations.h"

int dglue_engine_new(unsigned scan_cpu_percent, struct thps_engine **ret)
{
	struct thps_engine_config cfg;

	thps_engine_config_default(&cfg);
	if (scan_cpu_percent)
		cfg.cpu_share = scan_cpu_percent / 100.0;
	return thps_engine_new(&cfg, ret);
}

/* memory.pressure "some avg10" of the cgroup, or -1 when unknown (no guard applies). */
static double cgroup_pressure(const struct thps_ctx *ctx, const char *cgroup)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	struct thps_psi psi;

	/* The hierarchy's mount, found once at start (thps_cgroups_find_mount). */
	if (!ctx->cgroup_root[0] ||
	    thps_path(path, sizeof(path), ctx->cgroup_root, "%s/memory.pressure", cgroup) < 0 ||
	    read_file_bounded(path, 4096, &text, NULL) < 0 || thps_psi_parse(text, &psi) < 0)
		return -1;
	return psi.some.avg10;
}

/* Takes the ranges khugepaged re-collapsed too often (pinned: range_for_split() never picks
 * them again) out of a split policy's figures: waste no split can reach must not fire one, or
 * the daemon asks for a split every cooldown and the actuator finds nothing to split. */
static void drop_pinned(const struct thps_scan *scan, const struct thps_cgroup_stats *c,
			const struct thps_policy *pol, const struct thps_recollapse *rc,
			uint64_t *folios, uint64_t *zero)
{
	uint32_t sizes = thps_policy_acted_sizes(pol, &scan->geom);

	if (!rc || !rc->n || pol->action == THPS_POLICY_RECLAIM)
		return;
	for (size_t i = 0; i < scan->n_ranges; i++) {
		const struct thps_thp_range *t = &scan->ranges[i];
		uint32_t pages = thps_range_pages(t, &scan->geom);

		if (t->ino != c->ino || t->mapped || !thps_recollapse_pinned(rc, t))
			continue;
		if (sizes && !(sizes & (UINT32_C(1) << thps_folio_order(pages))))
			continue;
		if (thps_bucket_n(pages, t->utilized) > pol->lowutil_max_bucket)
			continue;
		*folios -= MIN(*folios, 1);
		*zero -= MIN(*zero, (uint64_t)(pages - MIN(pages, t->utilized)));
	}
}

static int decide(const struct thps_ctx *ctx, struct thps_engine *e, const struct thps_policy *pol,
		  const struct thps_scan *scan, const struct thps_cgroup_stats *c,
		  const struct thps_recollapse *rc, bool observe_only, uint64_t now_usec,
		  struct dglue_decision *ret)
{
	uint64_t lu_n, lu_z;
	thps_cgroup_lowutil(c, &scan->geom, pol->lowutil_max_bucket,
			    thps_policy_acted_sizes(pol, &scan->geom), &lu_n, &lu_z);
	drop_pinned(scan, c, pol, rc, &lu_n, &lu_z);
	const struct thps_figures f = {
	    .lowutil_thps = lu_n,
	    .waste_bytes = lu_z * scan->geom.page_size,
	    .partial_bytes = c->partial_unmapped_bytes,
	    .memory_current = c->have_memstat ? c->memory_current : 0,
	    .pressure_some_avg10 = cgroup_pressure(ctx, c->path),
	};
	struct thps_decision d;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = thps_engine_decide(e, c->path, pol, now_usec, &f, &d);
	if (r < 0)
		return r;
	snprintf(ret->policy, sizeof(ret->policy), "%s", d.policy);
	snprintf(ret->rule, sizeof(ret->rule), "%s", thps_rule_name(d.rule));
	ret->waste_bytes = f.waste_bytes;
	ret->lowutil_thps = f.lowutil_thps;
	ret->lowutil_max_bucket = pol->lowutil_max_bucket;
	ret->sizes_mask = pol->sizes_mask;
	ret->allow_reclaim = pol->action == THPS_POLICY_SPLIT_OR_RECLAIM;
	if (d.rule == THPS_RULE_OBSERVE) {
		/* Recorded by the observe actuator: what enforce would have asked. */
		ret->action = DGLUE_ACT_OBSERVE;
		snprintf(ret->reason, sizeof(ret->reason), "%s", d.why);
		ret->amount =
		    MIN(d.reclaimable,
			pol->max_bytes_per_action ? pol->max_bytes_per_action : UINT64_MAX);
		ret->act = true;
		return 0;
	}
	if (d.action == THPS_ACT_NONE) {
		ret->action = DGLUE_ACT_NONE;
		snprintf(ret->reason, sizeof(ret->reason), "%s", d.why);
		return 0;
	}
	ret->amount = d.bytes;
	ret->act = true;
	if (observe_only) {
		ret->action = DGLUE_ACT_OBSERVE;
		snprintf(ret->reason, sizeof(ret->reason), "observe-only daemon: would %s (%s)",
			 thps_engine_action_name(d.action), d.why);
		ret->dry = true;
		return 0;
	}
	ret->action = d.action == THPS_ACT_SPLIT ? DGLUE_ACT_SPLIT : DGLUE_ACT_RECLAIM;
	snprintf(ret->reason, sizeof(ret->reason), "%s", d.why);
	return 0;
}

int dglue_decide(const struct thps_ctx *ctx, struct thps_engine *e, const struct dglue_policies *p,
		 const struct thps_scan *scan, const struct thps_cgroup_stats *c,
		 const struct thps_recollapse *rc, const struct thps_registration *reg,
		 bool observe_only, uint64_t now_usec, struct dglue_decision *ret)
{
	const struct thps_policy *pol;
	struct thps_policy eff;
	struct dglue_choice ch;
	size_t len;
	int r;

	dglue_choose(p, c->path, reg, &ch);
	pol = ch.pol;
	if (ch.enforce != (pol->mode == THPS_MODE_ENFORCE)) {
		/* the policy delegated the mode the container asked: the engine sees it */
		eff = *pol;
		eff.mode = ch.enforce ? THPS_MODE_ENFORCE : THPS_MODE_OBSERVE;
		pol = &eff;
	}
	r = decide(ctx, e, pol, scan, c, rc, observe_only, now_usec, ret);
	if (r < 0 || !ch.refused[0])
		return r;
	len = strlen(ret->reason);
	snprintf(ret->reason + len, sizeof(ret->reason) - len, "; %s", ch.refused);
	return 0;
}

void dglue_decision_fit(struct dglue_decision *d, enum thps_split_mech mech, int zero_freed)
{
	size_t len = strlen(d->reason);

	d->split_mech = mech;
	d->split_zero_freed = zero_freed;
	if (d->action != DGLUE_ACT_SPLIT || mech != THPS_SPLIT_MECH_NONE || !d->allow_reclaim)
		return;
	d->action = DGLUE_ACT_RECLAIM;
	snprintf(d->reason + len, sizeof(d->reason) - len,
		 "; no exact split here: memory.reclaim, as the policy allows");
}

const char *dglue_action_name(enum dglue_action a)
{
	static const char *const names[] = {
	    [DGLUE_ACT_OBSERVE] = "observe",
	    [DGLUE_ACT_RECLAIM] = "reclaim",
	    [DGLUE_ACT_SPLIT] = "split",
	    [DGLUE_ACT_NONE] = "none",
	};

	return (size_t)a < ELEMENTSOF(names) ? names[a] : "none";
}
