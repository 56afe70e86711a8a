/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's links to the modules it drives (see daemon-glue.h): sources from the plugin
 * table (plugins/registry.c), policies (policy.h) and the one capability probe (probe.h). The
 * pass's decide and act steps are pass-decide.c and pass-act.c. */
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
#include "policy.h"
#include "probe.h"
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

	thps_policy_choose_reg(p ? p->set : NULL, reg ? reg->cgroup : cgroup, reg, &c);
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->policy, sizeof(ret->policy), "%s", c.policy->name);
	ret->pol = c.policy;
	ret->enforce = c.mode == THPS_MODE_ENFORCE;
	if (c.refused == THPS_CHOICE_NOT_MATCHED)
		n = snprintf(ret->refused, sizeof(ret->refused),
			     "policy '%s' named by the container's annotation not applied: its "
			     "match excludes the container",
			     reg->policy);
	else if (c.refused == THPS_CHOICE_NAMESPACE)
		n = snprintf(
		    ret->refused, sizeof(ret->refused),
		    "policy '%s' named by the container's annotation not applied: it has no "
		    "namespace selector, and policy '%s' for the container's namespace does",
		    reg->policy, c.policy->name);
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
