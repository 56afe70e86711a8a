/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's links to the modules it drives (see daemon-glue.h): sources from the plugin
 * table (plugins/registry.c), policies (policy.h), the decision engine (engine.h), and actions
 * through the actuator table (actuator.h). */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon-glue.h"
#include "macro.h"
#include "fileio.h"
#include "actuator.h"
#include "engine.h"
#include "policy.h"
#include "probe.h"
#include "psi.h"
#include "plugin.h"
#include "registrations.h"

struct dglue_policies {
	struct thps_policy_set *set;
};

/* msgs joined with "; " into buf, cut to fit. */
static void join_msgs(char *const *msgs, size_t n_msgs, char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n_msgs && off + 1 < size; i++) {
		int n = snprintf(buf + off, size - off, "%s%s", i ? "; " : "", msgs[i]);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

int dglue_policies_load(const char *dir, bool missing_ok, struct dglue_policies **ret, char *err,
			size_t err_size)
{
	struct thps_policy_errors errs = {0};
	struct thps_policy_set *set = NULL;
	struct dglue_policies *p;
	int r;

	err[0] = '\0';
	/* No directory (when that is allowed): nothing is configured, the built-in observe policy
	 * applies. Any other -ENOENT is an entry's (a dangling link, a file gone mid-load). */
	r = thps_policy_set_load_dir(
	    dir, THPS_POLICY_LOAD_CHECK_OWNER | (missing_ok ? THPS_POLICY_LOAD_MISSING_OK : 0),
	    &set, &errs);
	if (r < 0) {
		join_msgs(errs.msgs, errs.n, err, err_size);
		if (!errs.n)
			snprintf(err, err_size, "%s: %s", dir, strerror(-r));
		thps_policy_errors_clear(&errs);
		return r;
	}
	join_msgs(errs.warnings, errs.n_warnings, err, err_size);
	thps_policy_errors_clear(&errs);
	p = calloc(1, sizeof(*p));
	if (!p) {
		thps_policy_set_free(set);
		return -ENOMEM;
	}
	p->set = set;
	*ret = p;
	return (int)set->n;
}

void dglue_policies_free(struct dglue_policies *p)
{
	if (!p)
		return;
	thps_policy_set_free(p->set);
	free(p);
}

size_t dglue_policies_count(const struct dglue_policies *p)
{
	return p && p->set ? p->set->n : 0;
}

void dglue_policies_names(const struct dglue_policies *p, char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < dglue_policies_count(p); i++) {
		const char *name = p->set->policies[i].name;
		size_t need = strlen(name) + (i ? 2 : 0);

		if (off + need + 4 > size) {
			snprintf(buf + off, size - off, "%s...", i ? ", " : "");
			return;
		}
		off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? ", " : "", name);
	}
}

unsigned dglue_policies_max_cut(const struct dglue_policies *p)
{
	unsigned cut = 0; /* the built-in default's */

	for (size_t i = 0; i < dglue_policies_count(p); i++)
		cut = MAX(cut, p->set->policies[i].lowutil_max_bucket);
	return cut;
}

unsigned dglue_policies_max_split_cut(const struct dglue_policies *p)
{
	unsigned cut = 0;

	for (size_t i = 0; i < dglue_policies_count(p); i++)
		if (p->set->policies[i].action != THPS_POLICY_RECLAIM)
			cut = MAX(cut, p->set->policies[i].lowutil_max_bucket);
	return cut;
}

bool dglue_policies_promote(const struct dglue_policies *p)
{
	for (size_t i = 0; i < dglue_policies_count(p); i++)
		if (p->set->policies[i].promote_max_bytes_per_pass)
			return true;
	return false;
}

void dglue_choose(const struct dglue_policies *p, const char *cgroup,
		  const struct thps_registration *reg, struct dglue_choice *ret)
{
	struct thps_choice c;
	int n = 0;

	thps_policy_choose(p ? p->set : NULL, reg ? reg->cgroup : cgroup, reg ? reg->id : NULL,
			   reg ? reg->policy : NULL, reg ? reg->mode : NULL, &c);
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->policy, sizeof(ret->policy), "%s", c.policy->name);
	ret->pol = c.policy;
	ret->enforce = c.mode == THPS_MODE_ENFORCE;
	if (c.refused == THPS_CHOICE_NOT_MATCHED)
		n = snprintf(ret->refused, sizeof(ret->refused),
			     "policy '%s' named by the container's annotation not applied: its "
			     "match excludes the container",
			     reg->policy);
	else if (c.refused == THPS_CHOICE_UNKNOWN_POLICY)
		n = snprintf(ret->refused, sizeof(ret->refused),
			     "policy '%s' named by the container's annotation is not loaded",
			     reg->policy);
	if (c.mode_refused && n >= 0 && (size_t)n < sizeof(ret->refused))
		snprintf(ret->refused + n, sizeof(ret->refused) - (size_t)n,
			 "%smode '%s' of the container's annotation not applied: policy '%s' "
			 "does not delegate it (tenant_mode)",
			 n ? "; " : "", reg->mode, c.policy->name);
}

void dglue_promote_plan(const struct dglue_policies *p, const char *cgroup,
			const struct thps_registration *reg, struct dglue_promote_plan *ret)
{
	struct dglue_choice ch;
	const struct thps_policy *pol;

	dglue_choose(p, cgroup, reg, &ch);
	pol = ch.pol;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->policy, sizeof(ret->policy), "%s", ch.policy);
	ret->max_bytes = pol->promote_max_bytes_per_pass;
	ret->enforce = ch.enforce;
}

int dglue_engine_new(unsigned scan_cpu_percent, struct thps_engine **ret)
{
	struct thps_engine_config cfg;

	thps_engine_config_default(&cfg);
	if (scan_cpu_percent)
		cfg.cpu_share = scan_cpu_percent / 100.0;
	return thps_engine_new(&cfg, ret);
}

void dglue_probe(const struct thps_ctx *ctx, struct dglue_caps *ret)
{
	_cleanup_free_ struct thps_probe *p = calloc(1, sizeof(*p));

	memset(ret, 0, sizeof(*ret));
	/* The one capability probe (probe.h), without its write test: `thpshrink probe` and the
	 * daemon see the same kernel. */
	if (!p || thps_probe_run(ctx, 0, p) < 0) {
		snprintf(ret->why, sizeof(ret->why), "the capability probe failed");
		return;
	}
	ret->cgroup2_memory = p->cgroup_version == 2 && p->v2_memory;
	ret->memory_reclaim = p->have_memory_reclaim;
	ret->split_huge_pages = p->have_split_file;
	ret->split_mech =
	    thps_split_mechanism(ctx, THPS_SPLIT_MECH_AUTO, ret->split_why, sizeof(ret->split_why));
	/* decided once here (and by the start-up measurement), not by a probe per action */
	ret->split_zero_freed = p->split_frees_zero_subpages ? 1 : -1;
	ret->thp_utilization = p->have_thp_utilization;
	ret->pagemap = p->have_pagemap;
	ret->kpageflags = p->have_kpageflags;
	if (!ret->cgroup2_memory)
		snprintf(ret->why, sizeof(ret->why),
			 "no cgroup v2 memory controller at '%.150s' (cgroup v1 is read-only to "
			 "thpshrink)",
			 p->cgroup_root[0] ? p->cgroup_root : ctx->cgroup_root);
	else if (!ret->memory_reclaim)
		snprintf(ret->why, sizeof(ret->why),
			 "the kernel has no memory.reclaim (Linux >= 5.19 needed)");
}

bool dglue_policies_allow_reclaim(const struct dglue_policies *p)
{
	for (size_t i = 0; i < dglue_policies_count(p); i++)
		if (p->set->policies[i].action == THPS_POLICY_SPLIT_OR_RECLAIM)
			return true;
	return false;
}

const char *dglue_give_back_method(const struct dglue_caps *caps, const struct dglue_policies *p)
{
	if (caps->split_mech == THPS_SPLIT_MECH_PMADVISE ||
	    caps->split_mech == THPS_SPLIT_MECH_DEBUGFS)
		return thps_split_mech_name(caps->split_mech);
	return dglue_policies_allow_reclaim(p) ? "reclaim" : "none";
}

size_t dglue_caps_flags(const struct dglue_caps *caps, struct thps_metrics_flag *flags, size_t max)
{
	const struct thps_metrics_flag all[] = {
	    {"cgroup2_memory", caps->cgroup2_memory},
	    {"debugfs_split_huge_pages", caps->split_huge_pages},
	    {"process_madvise", caps->split_mech == THPS_SPLIT_MECH_PMADVISE},
	    {"debugfs_thp_utilization", caps->thp_utilization},
	    {"kpageflags", caps->kpageflags},
	    {"memory_reclaim", caps->memory_reclaim},
	    {"pagemap", caps->pagemap},
	};
	size_t n = MIN(max, ELEMENTSOF(all));

	memcpy(flags, all, n * sizeof(*flags));
	return n;
}

/* Every source in the plugin table (plugins/registry.c), in its order. */
static const struct thps_source_ops *sources(size_t i)
{
	for (size_t j = 0; thps_sources[j]; j++)
		if (j == i)
			return thps_sources[j];
	return NULL;
}

const char *dglue_sources_description(void)
{
	static char buf[128];

	buf[0] = '\0';
	for (size_t i = 0; sources(i); i++) {
		const struct thps_source_ops *s = sources(i);
		if (s->name)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
				 buf[0] ? "," : "", s->name);
	}
	return buf[0] ? buf : "none (built without sources)";
}

int dglue_collect(const struct thps_ctx *ctx, const struct thps_scan_opts *opts,
		  struct thps_scan *scan, char *why, size_t why_size)
{
	int first = 0;

	why[0] = '\0';
	for (size_t i = 0; sources(i); i++) {
		const struct thps_source_ops *s = sources(i);
		char reason[200];
		int r;

		if (!s->collect)
			continue;
		if (s->probe && s->probe(ctx, reason, sizeof(reason)) <= 0)
			continue;
		r = s->collect(ctx, opts, scan);
		if (r < 0 && first == 0) {
			first = r;
			snprintf(why, why_size, "source '%s': %s", s->name, strerror(-r));
		}
	}
	thps_scan_finish(scan, opts->lowutil_max_bucket);
	return first;
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
	    .partial_unmapped_bytes = c->partial_unmapped_bytes,
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
