/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's calls into the other parts of thpshrink: sources (plugins/registry.c),
 * policies (policy.h) and the one capability probe (probe.h), each behind one small function
 * the pass calls. The pass's decide step is pass-decide.h (the decision engine, engine.h), its
 * act step pass-act.h (actuators, actuator.h): they never act unless a policy says "enforce",
 * the kernel has cgroup v2 memory.reclaim, and --dry-run is off. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actuator.h"
#include "context.h"
#include "metrics.h"
#include "scan.h"

struct dglue_policies;
struct thps_registration;

/* Loads every *.json in dir, all or nothing (policy.h). Returns the number of policies (and
 * *ret) with err holding the warnings ("" if none: deprecated keys, which load but do
 * nothing), or -errno with err holding every "file:line:col: path: reason" for the operator.
 * With missing_ok a missing dir is an empty set (the built-in observe policy applies); a
 * missing or unreadable entry in it is always an error. */
int dglue_policies_load(const char *dir, bool missing_ok, struct dglue_policies **ret, char *err,
			size_t err_size);
void dglue_policies_free(struct dglue_policies *p);
size_t dglue_policies_count(const struct dglue_policies *p);
/* The policies' names in load order, comma-separated and cut with "..." to fit buf: which set
 * is in force, for the log. */
void dglue_policies_names(const struct dglue_policies *p, char *buf, size_t size);
/* The widest low-util cut of the split policies: the scan records THP ranges up to it. */
unsigned dglue_policies_max_split_cut(const struct dglue_policies *p);
/* The highest low-util cut (bucket) of any policy in force, the built-in default's (0) at least. */
unsigned dglue_policies_max_cut(const struct dglue_policies *p);

/* Whether any policy in force promotes (has "promote"). */
bool dglue_policies_promote(const struct dglue_policies *p);
/* The policy and mode of a cgroup: the one rule (thps_policy_choose) both the split and the
 * promote paths follow. reg is the registration covering the cgroup (NULL: none); a
 * registered container's whole subtree is judged as its registered cgroup. refused says, for
 * status.json and explain, what the registration asked that was not applied ("" if nothing);
 * it names the policy (a validated name) and never echoes anything else a tenant wrote. */
struct dglue_choice {
	char policy[72];
	const void *pol; /* the struct thps_policy chosen, for pass-decide.c */
	bool enforce;	 /* the mode that applies */
	char refused[320];
};
void dglue_choose(const struct dglue_policies *p, const char *cgroup,
		  const struct thps_registration *reg, struct dglue_choice *ret);

/* What the policy of cgroup (chosen as dglue_decide() does) says about promotion. */
struct dglue_promote_plan {
	char policy[72];
	uint64_t max_bytes; /* per pass; 0 = the policy does not promote */
	bool enforce;	    /* the mode that applies (dglue_choose); observe only finds */
};
void dglue_promote_plan(const struct dglue_policies *p, const char *cgroup,
			const struct thps_registration *reg, struct dglue_promote_plan *ret);

struct dglue_caps {
	bool cgroup2_memory;
	bool memory_reclaim;
	bool split_huge_pages;
	enum thps_split_mech split_mech; /* process_madvise, else debugfs, else none */
	int split_zero_freed;		 /* measured: 1 a split frees zero subpages, -1 not, 0
					  * unknown (the kernel probe decides) */
	char split_why[256];		 /* ... and why */
	bool thp_utilization;
	bool pagemap;
	bool kpageflags;
	char why[256]; /* first reason the daemon must stay observe-only, "" if none */
};

/* Probes what this kernel offers. Never fails: missing things are false with a reason. */
void dglue_probe(const struct thps_ctx *ctx, struct dglue_caps *ret);
/* How a policy that splits gives waste back here: "process_madvise", "debugfs", "reclaim"
 * (nothing exact, and a policy in force allows memory.reclaim) or "none". */
const char *dglue_give_back_method(const struct dglue_caps *caps, const struct dglue_policies *p);
/* Whether any policy in force may write memory.reclaim where no exact split reaches. */
bool dglue_policies_allow_reclaim(const struct dglue_policies *p);
/* Fills flags (at most max) from caps for the metrics. Returns the count. */
size_t dglue_caps_flags(const struct dglue_caps *caps, struct thps_metrics_flag *flags, size_t max);

/* Runs every source built in. Returns 0, or the first -errno of a failing source (the others
 * still ran); why names it. */
int dglue_collect(const struct thps_ctx *ctx, const struct thps_scan_opts *opts,
		  struct thps_scan *scan, char *why, size_t why_size);
/* The names of the sources built in, comma separated, for the start-up log. */
const char *dglue_sources_description(void);
