/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the decision engine on in-memory histories (time is passed in), and of the
 * memory.pressure parser. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "psi.h"
#include "units.h"
#include "test-main.h"

#define SEC 1000000ULL

static struct thps_engine *eng;

static void setup(void)
{
	ck_assert_int_eq(thps_engine_new(NULL, &eng), 0);
}

static void teardown(void)
{
	thps_engine_free(eng);
	eng = NULL;
}

static struct thps_policy pol(enum thps_policy_mode mode)
{
	struct thps_policy p = {0};

	thps_policy_init_defaults(&p);
	snprintf(p.name, sizeof(p.name), "test");
	p.mode = mode;
	/* the rules are the same for every action; these tests name reclaim (the default is split,
	 * check-policy) and test_min_waste turns to split */
	p.action = THPS_POLICY_RECLAIM;
	return p;
}

static struct thps_figures figs(uint64_t lowutil, uint64_t waste, uint64_t partial, double psi)
{
	return (struct thps_figures){.lowutil_thps = lowutil,
				     .waste_bytes = waste,
				     .partial_bytes = partial,
				     .memory_current = 1ULL << 30,
				     .pressure_some_avg10 = psi};
}

static struct thps_decision decide(const char *cg, const struct thps_policy *p, uint64_t now,
				   struct thps_figures f)
{
	struct thps_decision d;

	ck_assert_int_eq(thps_engine_decide(eng, cg, p, now, &f, &d), 0);
	return d;
}

START_TEST(test_min_waste)
{
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	struct thps_decision d;

	d = decide("/a", &p, 0, figs(10, 60 * MIB, 3 * MIB, 0));
	ck_assert_int_eq(d.action, THPS_ACT_NONE);
	ck_assert_int_eq(d.rule, THPS_RULE_NO_TRIGGER);
	ck_assert(!d.fired);
	ck_assert_str_eq(d.why, "no trigger: reclaimable 63.0 MiB < min_waste 64M");
	/* partially mapped THPs count for reclaim ... */
	d = decide("/a", &p, 1 * SEC, figs(10, 60 * MIB, 4 * MIB, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	ck_assert_int_eq(d.rule, THPS_RULE_MIN_WASTE);
	ck_assert_uint_eq(d.bytes, 64 * MIB);
	ck_assert_str_eq(d.why, "reclaim 64.0 MiB: reclaimable 64.0 MiB >= min_waste 64M");
	/* ... and for split, which splits them (process_madvise), or where allowed gives them back
	 * by memory.reclaim after a debugfs split */
	p.action = THPS_POLICY_SPLIT;
	d = decide("/b", &p, 1 * SEC, figs(0, 0, 63 * MIB, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_NO_TRIGGER);
	d = decide("/c", &p, 1 * SEC, figs(1, 1 * MIB, 63 * MIB, 0));
	ck_assert_int_eq(d.action, THPS_ACT_SPLIT);
	ck_assert_uint_eq(d.bytes, 64 * MIB);
	d = decide("/b", &p, 2 * SEC, figs(10, 500 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_SPLIT);
	ck_assert_uint_eq(d.bytes, 256 * MIB); /* max_bytes_per_action */
	ck_assert_str_eq(d.why, "split 256.0 MiB: reclaimable 500.0 MiB >= min_waste 64M");
}
END_TEST

START_TEST(test_growth)
{
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	struct thps_decision d;

	p.trigger_min_waste = 0;
	p.trigger_growth_thps = 10;
	p.trigger_growth_window_usec = 60 * SEC;
	d = decide("/g", &p, 0, figs(100, 8 * MIB, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_NO_TRIGGER);
	d = decide("/g", &p, 30 * SEC, figs(105, 8 * MIB, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_NO_TRIGGER);
	ck_assert_uint_eq(d.growth, 5);
	d = decide("/g", &p, 50 * SEC, figs(110, 8 * MIB, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_GROWTH);
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	ck_assert_uint_eq(d.growth, 10);
	ck_assert_uint_eq(d.bytes, 8 * MIB);
	ck_assert_str_eq(d.why, "reclaim 8.0 MiB: low-util THPs grew by 10 >= 10 within 1m");
	/* the 100 at t=0 has left the window: growth is measured from 105 (t=30) */
	p.cooldown_usec = 1 * SEC;
	d = decide("/g", &p, 80 * SEC, figs(114, 8 * MIB, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_NO_TRIGGER);
	ck_assert_uint_eq(d.growth, 9);
	/* growth but nothing to give back */
	d = decide("/g", &p, 81 * SEC, figs(200, 0, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_NOTHING);
	ck_assert_int_eq(d.action, THPS_ACT_NONE);
}
END_TEST

START_TEST(test_observe_never_acts)
{
	struct thps_policy p = pol(THPS_MODE_OBSERVE);
	struct thps_decision d;

	for (int i = 0; i < 100; i++) {
		d = decide("/o", &p, (uint64_t)i * 3600 * SEC, figs(1000, 10ULL << 30, 0, 0));
		ck_assert_int_eq(d.action, THPS_ACT_NONE);
		ck_assert_uint_eq(d.bytes, 0);
		ck_assert_int_eq(d.rule, THPS_RULE_OBSERVE);
		ck_assert(d.fired);
	}
	ck_assert_str_eq(d.why,
			 "observe: would reclaim 256.0 MiB (reclaimable 10.0 GiB >= min_waste 64M)");
	/* the built-in default policy observes too */
	d = decide("/o2", thps_policy_builtin(), 0, figs(1000, 10ULL << 30, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_OBSERVE);
	ck_assert_str_eq(d.policy, "(builtin)");
}
END_TEST

START_TEST(test_cooldown)
{
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	struct thps_decision d;
	uint64_t t0 = 1000 * SEC;

	p.cooldown_usec = 300 * SEC;
	d = decide("/c", &p, t0, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	ck_assert_int_eq(thps_engine_record_result(eng, "/c", d.bytes, 90 * MIB), 0);
	d = decide("/c", &p, t0 + 10 * SEC, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_COOLDOWN);
	ck_assert_int_eq(d.action, THPS_ACT_NONE);
	ck_assert_uint_eq(d.hold_until, t0 + 300 * SEC);
	ck_assert_str_eq(d.why, "cooldown: 290.0s left (reclaimable 100.0 MiB >= min_waste 64M)");
	d = decide("/c", &p, t0 + 299 * SEC, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_COOLDOWN);
	d = decide("/c", &p, t0 + 300 * SEC, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	/* another cgroup is not held by /c's cooldown */
	d = decide("/c2", &p, t0 + 301 * SEC, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
}
END_TEST

START_TEST(test_noeffect_backoff_and_reset)
{
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	struct thps_decision d;
	uint64_t t = 0, cd = 60 * SEC;

	p.cooldown_usec = cd;
	p.max_bytes_per_sec = 1ULL << 40; /* keep the byte budget out of this test */
	d = decide("/n", &p, t, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	/* max_ptes_none=511: khugepaged refills, the kernel gives back ~nothing */
	ck_assert_int_eq(thps_engine_record_result(eng, "/n", d.bytes, 1 * MIB), 0);
	d = decide("/n", &p, t + cd, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_NOEFFECT_BACKOFF);
	ck_assert_uint_eq(d.hold_until, t + 2 * cd);
	d = decide("/n", &p, t + 2 * cd, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	t += 2 * cd;
	ck_assert_int_eq(thps_engine_record_result(eng, "/n", d.bytes, 0), 0);
	d = decide("/n", &p, t + 3 * cd, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_NOEFFECT_BACKOFF);
	ck_assert_uint_eq(d.hold_until, t + 4 * cd);
	ck_assert_ptr_nonnull(strstr(d.why, "cooldown x4"));
	/* exponential growth stops at x2^max_backoff_shift (64) */
	for (int i = 0; i < 10; i++) {
		d = decide("/n", &p, t + 1000 * cd, figs(50, 100 * MIB, 0, 0));
		ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
		t += 1000 * cd;
		thps_engine_record_result(eng, "/n", d.bytes, 0);
	}
	d = decide("/n", &p, t + 1 * SEC, figs(50, 100 * MIB, 0, 0));
	ck_assert_uint_eq(d.hold_until, t + 64 * cd);
	d = decide("/n", &p, t + 64 * cd, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	t += 64 * cd;
	/* one action that works resets the backoff */
	ck_assert_int_eq(thps_engine_record_result(eng, "/n", d.bytes, d.bytes / 2), 0);
	d = decide("/n", &p, t + cd, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	ck_assert_int_eq(thps_engine_record_result(eng, "/nope", 1, 1), -ENOENT);
}
END_TEST

START_TEST(test_pressure_skip)
{
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	struct thps_decision d;

	d = decide("/p", &p, 0, figs(50, 100 * MIB, 0, 25.5));
	ck_assert_int_eq(d.rule, THPS_RULE_PRESSURE_SKIP);
	ck_assert_int_eq(d.action, THPS_ACT_NONE);
	ck_assert_str_eq(d.why, "memory pressure some avg10 25.50% > 10.00%: skipped (reclaimable "
				"100.0 MiB >= min_waste 64M)");
	/* at the limit is not above it; unknown pressure (-1) does not hold anything */
	d = decide("/p", &p, 1 * SEC, figs(50, 100 * MIB, 0, 10.0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	d = decide("/p2", &p, 1 * SEC, figs(50, 100 * MIB, 0, -1));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
}
END_TEST

START_TEST(test_pressure_backoff)
{
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	struct thps_decision d;

	/* the hold-off starts at scan_interval and doubles; decisions come once per interval */
	p.on_pressure = THPS_PRESSURE_BACKOFF;
	p.scan_interval_usec = 60 * SEC;
	d = decide("/b", &p, 0, figs(50, 100 * MIB, 0, 30));
	ck_assert_int_eq(d.rule, THPS_RULE_PRESSURE_BACKOFF);
	ck_assert_uint_eq(d.hold_until, 60 * SEC);
	d = decide("/b", &p, 60 * SEC, figs(50, 100 * MIB, 0, 30));
	ck_assert_uint_eq(d.hold_until, 60 * SEC + 120 * SEC);
	d = decide("/b", &p, 180 * SEC, figs(50, 100 * MIB, 0, 30));
	ck_assert_uint_eq(d.hold_until, 180 * SEC + 240 * SEC);
	/* pressure gone, but the hold-off runs its course */
	d = decide("/b", &p, 300 * SEC, figs(50, 100 * MIB, 0, 1));
	ck_assert_int_eq(d.rule, THPS_RULE_PRESSURE_BACKOFF);
	ck_assert_str_eq(d.why, "holding off 120.0s more after memory pressure (reclaimable 100.0 MiB "
				">= min_waste 64M)");
	d = decide("/b", &p, 420 * SEC, figs(50, 100 * MIB, 0, 1));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	/* an action resets the level: the next pressure holds off one scan interval again */
	p.cooldown_usec = 1 * SEC;
	d = decide("/b", &p, 480 * SEC, figs(50, 100 * MIB, 0, 30));
	ck_assert_uint_eq(d.hold_until, 540 * SEC);
}
END_TEST

/* scan_interval: a 5m policy is decided on at most every 5m, however often the daemon
 * passes; the samples in between still count for lowutil_growth. */
START_TEST(test_scan_interval)
{
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	const struct thps_decision *last;
	struct thps_decision d;

	p.scan_interval_usec = 300 * SEC;
	p.cooldown_usec = 1 * SEC;
	d = decide("/i", &p, 0, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	/* a pass every 60 s: four of them are not decisions, whatever the waste */
	for (uint64_t t = 60; t < 300; t += 60) {
		d = decide("/i", &p, t * SEC, figs(50, 500 * MIB, 0, 0));
		ck_assert_int_eq(d.rule, THPS_RULE_INTERVAL);
		ck_assert_int_eq(d.action, THPS_ACT_NONE);
		ck_assert(!d.fired);
	}
	ck_assert_str_eq(d.why, "not due: next decision in 22.5s (scan_interval 5m)");
	ck_assert_uint_eq(d.hold_until, 262500000ULL);
	/* kept out of the ring: explain's last decision is the last real one */
	last = thps_engine_last(eng, "/i");
	ck_assert_ptr_nonnull(last);
	ck_assert_int_eq(last->rule, THPS_RULE_MIN_WASTE);
	ck_assert_int_eq(thps_rule_name(THPS_RULE_INTERVAL)[0], 'i');
	/* the fifth pass ends 2 s early (jitter): within an eighth, it is due */
	d = decide("/i", &p, 298 * SEC, figs(50, 500 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	/* other cgroups keep their own clocks */
	d = decide("/j", &p, 299 * SEC, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);

	/* without scan_interval, every pass is a decision; the pressure backoff starts at 60 s */
	p = pol(THPS_MODE_ENFORCE);
	p.cooldown_usec = 1 * SEC;
	d = decide("/e", &p, 0, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	d = decide("/e", &p, 1 * SEC, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	p.on_pressure = THPS_PRESSURE_BACKOFF;
	d = decide("/e", &p, 2 * SEC, figs(50, 100 * MIB, 0, 30));
	ck_assert_int_eq(d.rule, THPS_RULE_PRESSURE_BACKOFF);
	ck_assert_uint_eq(d.hold_until, 62 * SEC);

	/* growth: the low sample of a pass that was not a decision still counts */
	p.scan_interval_usec = 300 * SEC;
	p.trigger_min_waste = 0;
	p.trigger_growth_thps = 100;
	p.trigger_growth_window_usec = 600 * SEC;
	d = decide("/g", &p, 0, figs(500, 0, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_NO_TRIGGER);
	d = decide("/g", &p, 60 * SEC, figs(0, 0, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_INTERVAL);
	d = decide("/g", &p, 300 * SEC, figs(150, 150 * MIB, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_GROWTH);
	ck_assert_uint_eq(d.growth, 150);
}
END_TEST

START_TEST(test_budget_per_cgroup)
{
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	struct thps_decision d;

	p.cooldown_usec = 1 * SEC;
	p.max_bytes_per_sec = 1 * MIB;
	p.max_bytes_per_action = 64 * MIB;
	d = decide("/r", &p, 0, figs(50, 100 * MIB, 0, 0));
	ck_assert_uint_eq(d.bytes, 64 * MIB); /* the bucket starts full: one whole action */
	d = decide("/r", &p, 1 * SEC, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.rule, THPS_RULE_BUDGET);
	ck_assert_str_eq(d.why, "cgroup byte budget exhausted (1.0 MiB available) (reclaimable "
				"100.0 MiB >= min_waste 64M)");
	d = decide("/r", &p, 3 * SEC, figs(50, 100 * MIB, 0, 0));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	ck_assert_uint_eq(d.bytes, 3 * MIB);
	ck_assert_str_eq(d.why, "reclaim 3.0 MiB: reclaimable 100.0 MiB >= min_waste 64M (limited by "
				"byte budget)");
}
END_TEST

START_TEST(test_budget_global_1000_cgroups)
{
	struct thps_engine_config cfg;
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	uint64_t total = 0, actions = 0, budget_refusals = 0;
	char cg[32];

	thps_engine_free(eng);
	thps_engine_config_default(&cfg);
	cfg.reclaim_bytes_per_sec = 100 * MIB;
	cfg.reclaim_burst_bytes = 200 * MIB;
	ck_assert_int_eq(thps_engine_new(&cfg, &eng), 0);
	p.max_bytes_per_action = 64 * MIB;
	p.cooldown_usec = 3600 * SEC;
	/* 1,000 cgroups, each with 64M to give back, passes every second for 10 s */
	for (uint64_t t = 0; t <= 10; t++) {
		for (int i = 0; i < 1000; i++) {
			struct thps_decision d;
			snprintf(cg, sizeof(cg), "/pod%d", i);
			d = decide(cg, &p, t * SEC, figs(40, 64 * MIB, 0, 0));
			if (d.action != THPS_ACT_NONE) {
				total += d.bytes;
				actions++;
				ck_assert_uint_ge(d.bytes, 2 * MIB);
			}
			budget_refusals += d.rule == THPS_RULE_BUDGET;
		}
		/* never more than the burst plus the rate times the time elapsed */
		ck_assert_uint_le(total, 200 * MIB + t * 100 * MIB);
	}
	ck_assert_uint_ge(total, 200 * MIB + 10 * 100 * MIB - 2 * MIB);
	ck_assert_uint_gt(budget_refusals, 9000);
	ck_assert_uint_lt(actions, 100);
	ck_assert_uint_eq(thps_engine_n_cgroups(eng), 1000);
}
END_TEST

START_TEST(test_scan_budget)
{
	struct thps_engine_config cfg;

	thps_engine_free(eng);
	thps_engine_config_default(&cfg);
	cfg.scan_thps_per_sec = 1000;
	cfg.cpu_share = 0.05;
	ck_assert_int_eq(thps_engine_new(&cfg, &eng), 0);
	ck_assert_uint_eq(thps_engine_scan_budget(eng, 0), 1000);
	thps_engine_charge_scan(eng, 0, 1000, 0);
	ck_assert_uint_eq(thps_engine_scan_budget(eng, 0), 0);
	ck_assert_uint_eq(thps_engine_scan_budget(eng, SEC / 2), 500);
	/* 100 ms of CPU at a 5% share: about 2 s before the next pass may scan */
	thps_engine_charge_scan(eng, SEC / 2, 0, 100000);
	ck_assert_uint_eq(thps_engine_scan_budget(eng, SEC), 0);
	ck_assert_uint_eq(thps_engine_scan_budget(eng, 2 * SEC), 0);
	ck_assert_uint_eq(thps_engine_scan_budget(eng, 3 * SEC), 1000);
	/* a 4 s pass at a 5% share: the next may start 80 s later, not sooner */
	thps_engine_charge_scan(eng, 3 * SEC, 0, 4 * SEC);
	ck_assert_uint_eq(thps_engine_scan_budget(eng, 60 * SEC), 0);
	ck_assert_uint_eq(thps_engine_scan_budget(eng, 84 * SEC), 1000);
}
END_TEST

START_TEST(test_forget_and_limits)
{
	struct thps_engine_config cfg;
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	struct thps_figures f = figs(1, 1, 0, 0);
	struct thps_decision d;
	FILE *devnull = fopen("/dev/null", "w");

	thps_engine_begin_pass(eng);
	decide("/x", &p, 0, f);
	decide("/y", &p, 0, f);
	ck_assert_uint_eq(thps_engine_end_pass(eng), 0);
	thps_engine_begin_pass(eng);
	decide("/x", &p, SEC, f);
	ck_assert_uint_eq(thps_engine_end_pass(eng), 1);
	ck_assert_uint_eq(thps_engine_n_cgroups(eng), 1);
	ck_assert_int_eq(thps_engine_explain(eng, "/y", devnull), -ENOENT);
	ck_assert_ptr_null(thps_engine_last(eng, "/y"));
	ck_assert_ptr_nonnull(thps_engine_last(eng, "/x"));
	thps_engine_forget(eng, "/x");
	ck_assert_uint_eq(thps_engine_n_cgroups(eng), 0);
	fclose(devnull);

	thps_engine_free(eng);
	thps_engine_config_default(&cfg);
	cfg.max_cgroups = 2;
	ck_assert_int_eq(thps_engine_new(&cfg, &eng), 0);
	ck_assert_int_eq(thps_engine_decide(eng, "/1", &p, 0, &f, &d), 0);
	ck_assert_int_eq(thps_engine_decide(eng, "/2", &p, 0, &f, &d), 0);
	ck_assert_int_eq(thps_engine_decide(eng, "/3", &p, 0, &f, &d), -ENOSPC);
	ck_assert_int_eq(thps_engine_decide(eng, "/1", &p, 1, &f, &d), 0);
	cfg.cpu_share = 0;
	ck_assert_int_eq(thps_engine_new(&cfg, &(struct thps_engine *){NULL}), -EINVAL);
}
END_TEST

START_TEST(test_explain)
{
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	struct thps_decision d;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(p.name, sizeof(p.name), "web");
	for (int i = 0; i < 40; i++)
		decide("/e", &p, (uint64_t)i * SEC, figs(3, 10 * MIB, 0, 1.5));
	d = decide("/e", &p, 40 * SEC, figs(70, 100 * MIB, 2 * MIB, -1));
	ck_assert_int_eq(d.action, THPS_ACT_RECLAIM);
	thps_engine_record_result(eng, "/e", d.bytes, 50 * MIB);
	f = open_memstream(&text, &len);
	ck_assert_int_eq(thps_engine_explain(eng, "/e", f), 0);
	fclose(f);
	ck_assert_msg(strstr(text, "cgroup /e\n  policy: web\n  asked in all: 102.0 MiB, given back: "
				   "50.0 MiB\n  last 16 decisions, oldest first:\n  [25.000s] "
				   "no_trigger: no trigger: reclaimable 10.0 MiB < min_waste 64M\n"
				   "      inputs: low-util THPs 3, waste 10.0 MiB, partial 0 B, "
				   "memory.current 1.0 GiB, pressure 1.50%, growth 0\n"),
		      "got:\n%s", text);
	ck_assert_msg(strstr(text, "  [40.000s] min_waste: reclaim 102.0 MiB: reclaimable 102.0 MiB >= "
				   "min_waste 64M\n      inputs: low-util THPs 70, waste 100.0 MiB, "
				   "partial 2.0 MiB, memory.current 1.0 GiB, pressure unknown, growth 0\n"
				   "      result: asked 102.0 MiB, given back 50.0 MiB\n"),
		      "got:\n%s", text);
	ck_assert_ptr_null(strstr(text, "[24.000s]")); /* the ring keeps 16 */
	{
		struct thps_sample h[100];
		ck_assert_uint_eq(thps_engine_history(eng, "/e", h, 100), 41); /* of 64 kept */
		ck_assert_uint_eq(h[40].t, 40 * SEC);
		ck_assert_uint_eq(h[40].figures.partial_bytes, 2 * MIB);
		ck_assert_uint_eq(h[0].figures.waste_bytes, 10 * MIB);
		ck_assert_uint_eq(thps_engine_history(eng, "/e", h, 2), 2);
		ck_assert_uint_eq(h[1].t, 40 * SEC);
		ck_assert_uint_eq(h[0].t, 39 * SEC);
		ck_assert_uint_eq(thps_engine_history(eng, "/none", h, 2), 0);
	}
	free(text);
	ck_assert_str_eq(thps_rule_name(THPS_RULE_PRESSURE_BACKOFF), "pressure_backoff");
}
END_TEST

START_TEST(test_figures_from_stats)
{
	struct thps_cgroup_stats st = {0};
	struct thps_policy p = pol(THPS_MODE_ENFORCE);
	struct thps_geometry g;
	struct thps_figures f;

	thps_geometry_default(&g);
	thps_hist_add(&st.hist, &g, 0);	  /* bucket 0, 512 zero subpages */
	thps_hist_add(&st.hist, &g, 60);  /* bucket 1, 452 zero */
	thps_hist_add(&st.hist, &g, 500); /* bucket 9 */
	st.partial_unmapped_bytes = 3 * MIB;
	st.have_memstat = true;
	st.memory_current = 7 * MIB;
	thps_figures_from_stats(&st, &p, &g, 2.5, &f);
	ck_assert_uint_eq(f.lowutil_thps, 1);
	ck_assert_uint_eq(f.waste_bytes, 512 * 4096);
	ck_assert_uint_eq(f.partial_bytes, 3 * MIB);
	ck_assert_uint_eq(f.memory_current, 7 * MIB);
	ck_assert_double_eq(f.pressure_some_avg10, 2.5);
	p.lowutil_max_bucket = 1; /* lowutil_cut "20%" */
	thps_figures_from_stats(&st, &p, &g, -1, &f);
	ck_assert_uint_eq(f.lowutil_thps, 2);
	ck_assert_uint_eq(f.waste_bytes, (512 + 452) * 4096);
}
END_TEST

START_TEST(test_psi_parse)
{
	struct thps_psi psi;

	ck_assert_int_eq(thps_psi_parse("some avg10=12.50 avg60=3.00 avg300=0.10 total=123456\n"
					"full avg10=1.00 avg60=0.50 avg300=0.00 total=999\n",
					&psi),
			 0);
	ck_assert_double_eq(psi.some.avg10, 12.5);
	ck_assert_double_eq(psi.some.avg60, 3.0);
	ck_assert_double_eq(psi.some.avg300, 0.1);
	ck_assert_uint_eq(psi.some.total, 123456);
	ck_assert(psi.have_full);
	ck_assert_double_eq(psi.full.avg10, 1.0);
	ck_assert_uint_eq(psi.full.total, 999);
	ck_assert_int_eq(thps_psi_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &psi),
			 0);
	ck_assert(!psi.have_full);
	ck_assert_int_eq(thps_psi_parse("", &psi), -EINVAL);
	ck_assert_int_eq(thps_psi_parse("full avg10=1.00 avg60=0.50 avg300=0.00 total=9\n", &psi),
			 -EINVAL);
	ck_assert_int_eq(thps_psi_parse("some avg10=x avg60=0.00 avg300=0.00 total=0\n", &psi),
			 -EINVAL);
	ck_assert_int_eq(thps_psi_parse("some avg10=101.00 avg60=0.00 avg300=0.00 total=0\n", &psi),
			 -EINVAL);
	ck_assert_int_eq(thps_psi_parse("some avg10=1.00 avg60=0.00 avg300=0.00 total=-1\n", &psi),
			 -EINVAL);
	ck_assert_int_eq(thps_psi_parse("some avg10=1.00 avg60=0.00 total=1\n", &psi), -EINVAL);
	ck_assert_int_eq(thps_psi_parse("bogus\n", &psi), -EINVAL);
}
END_TEST

static Suite *engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("rules");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_min_waste);
	tcase_add_test(tc, test_growth);
	tcase_add_test(tc, test_observe_never_acts);
	tcase_add_test(tc, test_cooldown);
	tcase_add_test(tc, test_noeffect_backoff_and_reset);
	tcase_add_test(tc, test_pressure_skip);
	tcase_add_test(tc, test_pressure_backoff);
	tcase_add_test(tc, test_scan_interval);
	tcase_add_test(tc, test_budget_per_cgroup);
	tcase_add_test(tc, test_budget_global_1000_cgroups);
	tcase_add_test(tc, test_scan_budget);
	tcase_add_test(tc, test_forget_and_limits);
	tcase_add_test(tc, test_explain);
	tcase_add_test(tc, test_figures_from_stats);
	suite_add_tcase(s, tc);
	tc = tcase_create("psi");
	tcase_add_test(tc, test_psi_parse);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(engine_suite)
