/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The decision engine: given a cgroup's figures from one pass, its policy and its history,
 * decide whether to act, with what and how much. Pure: no I/O, no clock (time is passed in, in
 * microseconds of a monotonic clock), no logging; the daemon does the acting and the logging.
 *
 * Rules, in the order they are checked:
 *   0. scan_interval: a cgroup is decided on at most once per its policy's scan_interval
 *      (less an eighth, the jitter of passes; none: every pass); in between,
 *      thps_engine_decide() only records the sample (for lowutil_growth) and answers
 *      THPS_RULE_INTERVAL, kept out of the ring;
 *   1. trigger: reclaimable bytes >= trigger.min_waste, or the low-util THP count grew by
 *      trigger.lowutil_growth.thps over its window (current minus the lowest in the window);
 *      reclaimable = waste (zero subpages of low-util THPs), plus the unmapped part of
 *      partially mapped THPs for action reclaim (memory.reclaim frees those too);
 *   2. mode observe never acts (the decision still says what enforce would have done);
 *   3. cooldown: one action per cooldown, stretched x2 per action that gave (almost) nothing
 *      back (e.g. khugepaged max_ptes_none=511 refilling the holes), reset by one that did;
 *   4. pressure guard: memory.pressure "some avg10" above the limit: skip this pass, or back
 *      off (hold off for scan_interval, or 60 s without one, x2^n, n growing while the
 *      pressure lasts);
 *   5. budgets: bytes per action, per-cgroup bytes per second, and a global token bucket of
 *      bytes per second across all cgroups, so 1,000 cgroups cannot make the daemon a noisy
 *      neighbour. Scanning has its own global budgets (THPs per second and a CPU share).
 * Every decision goes into a per-cgroup ring with its inputs and an explanation. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "policy.h"
#include "scan.h"
#include "thp.h"

struct thps_engine;

struct thps_engine_config {
	uint64_t reclaim_bytes_per_sec; /* global, across all cgroups */
	uint64_t reclaim_burst_bytes;	/* global bucket size */
	uint64_t scan_thps_per_sec;	/* global */
	double cpu_share;		/* of one CPU, for scanning (0.05 = 5%) */
	unsigned history;		/* samples kept per cgroup */
	unsigned decisions;		/* decisions kept per cgroup */
	size_t max_cgroups;
	unsigned max_backoff_shift; /* backoffs stop growing at x2^this */
	double noeffect_ratio;	    /* given back / asked below this = "no effect" */
	uint64_t min_action_bytes;  /* smaller actions are not worth a syscall (a THP) */
};

/* The figures of one cgroup in one pass (the daemon fills them from struct
 * thps_cgroup_stats with the policy's lowutil cut, and memory.pressure). */
struct thps_figures {
	uint64_t lowutil_thps;
	uint64_t waste_bytes;
	uint64_t partial_bytes;
	uint64_t memory_current;
	double pressure_some_avg10; /* percent; < 0 when unknown (no guard applies) */
};

struct thps_sample {
	uint64_t t;
	struct thps_figures figures;
};

/* Fills figures from a scan's per-cgroup stats with the policy's low-utilization cut (the
 * scan's own lowutil fields use the scanner's cut, which may differ). psi: memory.pressure
 * some avg10, or < 0 when unknown. */
void thps_figures_from_stats(const struct thps_cgroup_stats *st, const struct thps_policy *p,
			     const struct thps_geometry *g, double psi, struct thps_figures *ret);

enum thps_engine_action { THPS_ACT_NONE, THPS_ACT_RECLAIM, THPS_ACT_SPLIT };

enum thps_rule {
	THPS_RULE_MIN_WASTE,	    /* acted: min_waste fired */
	THPS_RULE_GROWTH,	    /* acted: lowutil_growth fired */
	THPS_RULE_NO_TRIGGER,	    /* nothing fired */
	THPS_RULE_OBSERVE,	    /* fired, but the mode is observe */
	THPS_RULE_COOLDOWN,	    /* fired, within the cooldown */
	THPS_RULE_NOEFFECT_BACKOFF, /* fired, within a cooldown stretched by useless actions */
	THPS_RULE_PRESSURE_SKIP,    /* fired, memory pressure above the limit */
	THPS_RULE_PRESSURE_BACKOFF, /* fired, holding off after memory pressure */
	THPS_RULE_BUDGET,	    /* fired, byte budget (cgroup or global) exhausted */
	THPS_RULE_NOTHING,	    /* fired on growth, but nothing reclaimable */
	THPS_RULE_INTERVAL,	    /* not decided: within scan_interval of the last decision */
};

struct thps_decision {
	uint64_t now;
	enum thps_engine_action action;
	uint64_t bytes;	     /* to ask for; 0 when action is NONE */
	enum thps_rule rule; /* the rule that fired, or why nothing happens */
	bool fired;	     /* a trigger fired (whatever happened after) */
	char policy[THPS_POLICY_NAME_MAX + 1];
	struct thps_figures inputs;
	uint64_t reclaimable;
	uint64_t growth;     /* low-util THPs gained within the growth window */
	uint64_t hold_until; /* for cooldown/backoff: when acting is allowed again */
	/* filled by thps_engine_record_result() */
	bool have_result;
	uint64_t given_back;
	char why[256]; /* one line, for logs, explain and status */
};

void thps_engine_config_default(struct thps_engine_config *ret);
/* cfg NULL = defaults. Returns 0 or -ENOMEM / -EINVAL. */
int thps_engine_new(const struct thps_engine_config *cfg, struct thps_engine **ret);
void thps_engine_free(struct thps_engine *e);

/* Records the figures in the cgroup's history and decides. Returns 0 with *ret filled, -ENOMEM,
 * or -ENOSPC when max_cgroups are tracked already. The caller that acts on a decision reports
 * back with thps_engine_record_result(). */
int thps_engine_decide(struct thps_engine *e, const char *cgroup, const struct thps_policy *p,
		       uint64_t now, const struct thps_figures *f, struct thps_decision *ret);

/* What the action of the cgroup's last decision gave back (memory.current before - after, or
 * the split actuator's count). Drives the no-effect backoff. Returns 0 or -ENOENT. */
int thps_engine_record_result(struct thps_engine *e, const char *cgroup, uint64_t asked,
			      uint64_t given_back);

/* Scanning budgets. thps_engine_scan_budget(): how many THPs the next pass may read now
 * (0 = wait: THP or CPU budget exhausted). thps_engine_charge_scan(): what a pass used. */
uint64_t thps_engine_scan_budget(struct thps_engine *e, uint64_t now);
void thps_engine_charge_scan(struct thps_engine *e, uint64_t now, uint64_t thps, uint64_t cpu_usec);
/* Forgetting cgroups that disappeared: begin a pass, decide each live cgroup,
 * end the pass; cgroups not seen since begin are dropped. Returns how many were dropped. */
void thps_engine_begin_pass(struct thps_engine *e);
size_t thps_engine_end_pass(struct thps_engine *e);
void thps_engine_forget(struct thps_engine *e, const char *cgroup);
size_t thps_engine_n_cgroups(const struct thps_engine *e);

/* Copies the cgroup's newest min(n, kept) samples, oldest first, into buf. Returns how many. */
size_t thps_engine_history(const struct thps_engine *e, const char *cgroup, struct thps_sample *buf,
			   size_t n);
/* The cgroup's last decision, or NULL. Valid until the next call on the engine. */
const struct thps_decision *thps_engine_last(const struct thps_engine *e, const char *cgroup);
/* Writes the cgroup's state and its recent decisions, oldest first. Returns 0 or -ENOENT. */
int thps_engine_explain(const struct thps_engine *e, const char *cgroup, FILE *f);

const char *thps_rule_name(enum thps_rule r);
const char *thps_engine_action_name(enum thps_engine_action a);
