/* SPDX-License-Identifier: GPL-2.0-or-later */
/* See engine.h for the rules. State per cgroup lives in a chained hash table keyed by the
 * cgroup path; every array is bounded by the engine's config. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "units.h"
#include "macro.h"

#define N_BUCKETS 4096

struct bucket {
	double tokens, rate, burst;
	uint64_t last;
	bool init;
};

struct cg {
	struct cg *next;
	char *path;
	uint64_t gen;
	struct thps_sample *hist;
	unsigned hist_n, hist_head;
	struct thps_decision *dec;
	unsigned dec_n, dec_head;
	bool acted;
	uint64_t last_action;
	unsigned noeffect_shift;
	unsigned pressure_shift;
	uint64_t pressure_until;
	bool decided;
	uint64_t last_decision;
	struct bucket bytes;
	uint64_t total_asked, total_given;
};

struct thps_engine {
	struct thps_engine_config cfg;
	struct cg *table[N_BUCKETS];
	size_t n;
	uint64_t gen;
	struct bucket reclaim, scan_thps, cpu;
};

void thps_engine_config_default(struct thps_engine_config *c)
{
	*c = (struct thps_engine_config){
	    .reclaim_bytes_per_sec = 256ULL << 20,
	    .reclaim_burst_bytes = 1ULL << 30,
	    .scan_thps_per_sec = 200000,
	    .cpu_share = 0.05,
	    .history = 64,
	    .decisions = 16,
	    .max_cgroups = 65536,
	    .max_backoff_shift = 6,
	    .noeffect_ratio = 0.05,
	    .min_action_bytes = 2ULL << 20,
	};
}

void thps_figures_from_stats(const struct thps_cgroup_stats *st, const struct thps_policy *p,
			     const struct thps_geometry *g, double psi, struct thps_figures *ret)
{
	uint64_t n, z;

	thps_cgroup_lowutil(st, g, p->lowutil_max_bucket, thps_policy_acted_sizes(p, g), &n, &z);
	*ret = (struct thps_figures){
	    .lowutil_thps = n,
	    .waste_bytes = z * g->page_size,
	    .partial_bytes = st->partial_unmapped_bytes,
	    .memory_current = st->have_memstat ? st->memory_current : 0,
	    .pressure_some_avg10 = psi,
	};
}

const char *thps_rule_name(enum thps_rule r)
{
	static const char *const n[] = {
	    [THPS_RULE_MIN_WASTE] = "min_waste",
	    [THPS_RULE_GROWTH] = "lowutil_growth",
	    [THPS_RULE_NO_TRIGGER] = "no_trigger",
	    [THPS_RULE_OBSERVE] = "observe",
	    [THPS_RULE_COOLDOWN] = "cooldown",
	    [THPS_RULE_NOEFFECT_BACKOFF] = "noeffect_backoff",
	    [THPS_RULE_PRESSURE_SKIP] = "pressure_skip",
	    [THPS_RULE_PRESSURE_BACKOFF] = "pressure_backoff",
	    [THPS_RULE_BUDGET] = "budget",
	    [THPS_RULE_NOTHING] = "nothing_reclaimable",
	    [THPS_RULE_INTERVAL] = "interval",
	};
	return (size_t)r < ELEMENTSOF(n) ? n[r] : "?";
}

const char *thps_engine_action_name(enum thps_engine_action a)
{
	return a == THPS_ACT_RECLAIM ? "reclaim" : a == THPS_ACT_SPLIT ? "split" : "none";
}

static void bucket_setup(struct bucket *b, double rate, double burst, uint64_t now)
{
	if (!b->init) {
		b->tokens = burst;
		b->last = now;
		b->init = true;
	}
	b->rate = rate;
	b->burst = burst;
}

static void bucket_refill(struct bucket *b, uint64_t now)
{
	if (now > b->last) {
		b->tokens += b->rate * (double)(now - b->last) / (double)USEC_PER_SEC;
		if (b->tokens > b->burst)
			b->tokens = b->burst;
		b->last = now;
	}
}

int thps_engine_new(const struct thps_engine_config *cfg, struct thps_engine **ret)
{
	struct thps_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	if (cfg)
		e->cfg = *cfg;
	else
		thps_engine_config_default(&e->cfg);
	if (!e->cfg.history || !e->cfg.decisions || !e->cfg.max_cgroups ||
	    e->cfg.max_backoff_shift > 20 || e->cfg.cpu_share <= 0 || e->cfg.cpu_share > 1) {
		free(e);
		return -EINVAL;
	}
	*ret = e;
	return 0;
}

static void cg_free(struct cg *c)
{
	free(c->path);
	free(c->hist);
	free(c->dec);
	free(c);
}

void thps_engine_free(struct thps_engine *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < N_BUCKETS; i++)
		while (e->table[i]) {
			struct cg *c = e->table[i];
			e->table[i] = c->next;
			cg_free(c);
		}
	free(e);
}

static size_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (size_t)(h % N_BUCKETS);
}

static struct cg *cg_find(const struct thps_engine *e, const char *path)
{
	for (struct cg *c = e->table[hash(path)]; c; c = c->next)
		if (!strcmp(c->path, path))
			return c;
	return NULL;
}

static int cg_get(struct thps_engine *e, const char *path, struct cg **ret)
{
	struct cg *c = cg_find(e, path);
	size_t h;

	if (!c) {
		if (e->n >= e->cfg.max_cgroups)
			return -ENOSPC;
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		c->path = strdup(path);
		c->hist = calloc(e->cfg.history, sizeof(*c->hist));
		c->dec = calloc(e->cfg.decisions, sizeof(*c->dec));
		if (!c->path || !c->hist || !c->dec) {
			cg_free(c);
			return -ENOMEM;
		}
		h = hash(path);
		c->next = e->table[h];
		e->table[h] = c;
		e->n++;
	}
	c->gen = e->gen;
	*ret = c;
	return 0;
}

void thps_engine_forget(struct thps_engine *e, const char *cgroup)
{
	struct cg **pp = &e->table[hash(cgroup)];

	for (; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->path, cgroup)) {
			struct cg *c = *pp;
			*pp = c->next;
			cg_free(c);
			e->n--;
			return;
		}
}

void thps_engine_begin_pass(struct thps_engine *e)
{
	e->gen++;
}

size_t thps_engine_end_pass(struct thps_engine *e)
{
	size_t dropped = 0;

	for (size_t i = 0; i < N_BUCKETS; i++)
		for (struct cg **pp = &e->table[i]; *pp;) {
			struct cg *c = *pp;
			if (c->gen == e->gen) {
				pp = &c->next;
				continue;
			}
			*pp = c->next;
			cg_free(c);
			e->n--;
			dropped++;
		}
	return dropped;
}

size_t thps_engine_n_cgroups(const struct thps_engine *e)
{
	return e->n;
}

static void hist_push(const struct thps_engine *e, struct cg *c, uint64_t now,
		      const struct thps_figures *f)
{
	c->hist[c->hist_head] = (struct thps_sample){now, *f};
	c->hist_head = (c->hist_head + 1) % e->cfg.history;
	if (c->hist_n < e->cfg.history)
		c->hist_n++;
}

/* Current count minus the lowest count within [now - window, now]. When the history is
 * shorter than the window, the oldest sample kept stands in for the start. */
static uint64_t hist_growth(const struct thps_engine *e, const struct cg *c, uint64_t now,
			    uint64_t window, uint64_t current)
{
	uint64_t low = current;

	for (unsigned i = 0; i < c->hist_n; i++) {
		const struct thps_sample *s =
		    &c->hist[(c->hist_head + e->cfg.history - 1 - i) % e->cfg.history];
		if (now - s->t > window && i > 0)
			break;
		low = MIN(low, s->figures.lowutil_thps);
	}
	return current - low;
}

static void why(struct thps_decision *d, const char *fmt, ...) _printf_(2, 3);
static void why(struct thps_decision *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
}

static void fired_text(const struct thps_policy *p, const struct thps_decision *d, char *buf,
		       size_t size)
{
	char a[32], b[32], w[32];

	if (d->rule == THPS_RULE_GROWTH || (!d->fired && false)) {
		thps_format_duration(p->trigger_growth_window_usec, w, sizeof(w));
		snprintf(buf, size, "low-util THPs grew by %llu >= %llu within %s",
			 (unsigned long long)d->growth, (unsigned long long)p->trigger_growth_thps,
			 w);
		return;
	}
	thps_format_bytes(a, sizeof(a), d->reclaimable);
	thps_format_size(p->trigger_min_waste, b, sizeof(b));
	snprintf(buf, size, "reclaimable %s >= min_waste %s", a, b);
}

static void hold_text(uint64_t until, uint64_t now, char *buf, size_t size)
{
	snprintf(buf, size, "%.1fs", (double)(until - now) / USEC_PER_SEC);
}

/* One decision in the making: its inputs, the cgroup's state and what the gates found. */
struct decide {
	struct thps_engine *e;
	struct cg *c;
	const struct thps_policy *p;
	const struct thps_figures *f;
	uint64_t now;
	struct thps_decision d;
	char fired[160]; /* which trigger fired, for every message after the trigger gate */
	uint64_t want;	 /* bytes the policy would act on, set by gate_nothing */
	uint64_t avail;	 /* bytes the budgets allow, set by gate_budget */
};

/* Both actions give the unmapped parts of partially mapped THPs back: reclaim in its
 * memory.reclaim, split by splitting them (process_madvise), or on the debugfs fallback by a
 * memory.reclaim of just those bytes where the policy allows it (split_or_reclaim). */
static void measure(struct decide *s)
{
	const struct thps_policy *p = s->p;
	const struct thps_figures *f = s->f;

	s->d.reclaimable = f->waste_bytes + f->partial_bytes;
	if (s->d.reclaimable < f->waste_bytes) /* hostile figures */
		s->d.reclaimable = UINT64_MAX;
	if (p->trigger_growth_thps)
		s->d.growth =
		    hist_growth(s->e, s->c, s->now, p->trigger_growth_window_usec, f->lowutil_thps);
}

/* The gates below run in order; each returns true when it made the decision final. */

/* Passes end with a jitter (a scan takes a little more or less time each pass): with the
 * daemon's --interval equal to scan_interval, a strict bound would skip every other pass. */
#define INTERVAL_SLACK_SHIFT 3 /* an eighth of scan_interval */

/* scan_interval: a cgroup is decided on at most once per interval, whatever the daemon's
 * --interval (its samples still go into the history, for lowutil_growth). */
static bool gate_interval(struct decide *s)
{
	struct cg *c = s->c;
	uint64_t iv = s->p->scan_interval_usec;
	uint64_t due = c->last_decision + iv - (iv >> INTERVAL_SLACK_SHIFT);
	char t1[32], t2[32];

	if (!iv || !c->decided || s->now >= due) {
		c->decided = true;
		c->last_decision = s->now;
		return false;
	}
	s->d.rule = THPS_RULE_INTERVAL;
	s->d.hold_until = due;
	hold_text(due, s->now, t1, sizeof(t1));
	thps_format_duration(iv, t2, sizeof(t2));
	why(&s->d, "not due: next decision in %s (scan_interval %s)", t1, t2);
	return true;
}

static bool gate_trigger(struct decide *s)
{
	const struct thps_policy *p = s->p;
	struct thps_decision *d = &s->d;
	enum thps_rule fire_rule = THPS_RULE_NO_TRIGGER;
	char t1[32], t2[32];

	if (p->trigger_min_waste && d->reclaimable >= p->trigger_min_waste)
		fire_rule = THPS_RULE_MIN_WASTE;
	else if (p->trigger_growth_thps && d->growth >= p->trigger_growth_thps)
		fire_rule = THPS_RULE_GROWTH;

	if (fire_rule == THPS_RULE_NO_TRIGGER) {
		d->rule = THPS_RULE_NO_TRIGGER;
		thps_format_bytes(t1, sizeof(t1), d->reclaimable);
		thps_format_size(p->trigger_min_waste, t2, sizeof(t2));
		if (p->trigger_min_waste && p->trigger_growth_thps)
			why(d, "no trigger: reclaimable %s < min_waste %s, growth %llu < %llu", t1,
			    t2, (unsigned long long)d->growth,
			    (unsigned long long)p->trigger_growth_thps);
		else if (p->trigger_min_waste)
			why(d, "no trigger: reclaimable %s < min_waste %s", t1, t2);
		else
			why(d, "no trigger: low-util growth %llu < %llu",
			    (unsigned long long)d->growth,
			    (unsigned long long)p->trigger_growth_thps);
		return true;
	}
	d->fired = true;
	d->rule = fire_rule;
	fired_text(p, d, s->fired, sizeof(s->fired));
	return false;
}

static bool gate_observe(struct decide *s)
{
	const struct thps_policy *p = s->p;
	char t1[32];

	if (p->mode != THPS_MODE_OBSERVE)
		return false;
	s->d.rule = THPS_RULE_OBSERVE;
	thps_format_bytes(t1, sizeof(t1), MIN(s->d.reclaimable, p->max_bytes_per_action));
	why(&s->d, "observe: would %s %s (%s)", thps_policy_action_name(p->action), t1, s->fired);
	return true;
}

/* The cooldown grows while actions give almost nothing back (thps_engine_record_result). */
static bool gate_cooldown(struct decide *s)
{
	struct cg *c = s->c;
	struct thps_decision *d = &s->d;
	uint64_t hold = s->p->cooldown_usec << MIN(c->noeffect_shift, s->e->cfg.max_backoff_shift);
	char t1[32];

	if (!c->acted || s->now >= c->last_action + hold)
		return false;
	d->hold_until = c->last_action + hold;
	hold_text(d->hold_until, s->now, t1, sizeof(t1));
	if (c->noeffect_shift) {
		d->rule = THPS_RULE_NOEFFECT_BACKOFF;
		why(d,
		    "backing off %s more (cooldown x%u: the last %u actions gave almost "
		    "nothing back) (%s)",
		    t1, 1U << c->noeffect_shift, c->noeffect_shift, s->fired);
	} else {
		d->rule = THPS_RULE_COOLDOWN;
		why(d, "cooldown: %s left (%s)", t1, s->fired);
	}
	return true;
}

/* The first hold-off of the pressure backoff: the policy's scan_interval, or what it was by
 * default before a policy without one meant "every pass". */
static uint64_t pressure_base(const struct thps_policy *p)
{
	return p->scan_interval_usec ? p->scan_interval_usec : 60 * USEC_PER_SEC;
}

/* Pressure now (unknown pressure, < 0, never stops an action). */
static bool gate_pressure(struct decide *s)
{
	const struct thps_policy *p = s->p;
	const struct thps_figures *f = s->f;
	struct thps_decision *d = &s->d;
	struct cg *c = s->c;
	char t1[32];

	if (!(f->pressure_some_avg10 >= 0 && f->pressure_some_avg10 > p->pressure_some_avg10))
		return false;
	if (p->on_pressure == THPS_PRESSURE_SKIP) {
		d->rule = THPS_RULE_PRESSURE_SKIP;
		why(d, "memory pressure some avg10 %.2f%% > %.2f%%: skipped (%s)",
		    f->pressure_some_avg10, p->pressure_some_avg10, s->fired);
	} else {
		c->pressure_until = s->now + (pressure_base(p) << c->pressure_shift);
		if (c->pressure_shift < s->e->cfg.max_backoff_shift)
			c->pressure_shift++;
		d->rule = THPS_RULE_PRESSURE_BACKOFF;
		d->hold_until = c->pressure_until;
		hold_text(d->hold_until, s->now, t1, sizeof(t1));
		why(d, "memory pressure some avg10 %.2f%% > %.2f%%: backing off %s (%s)",
		    f->pressure_some_avg10, p->pressure_some_avg10, t1, s->fired);
	}
	return true;
}

/* A backoff set by earlier pressure outlasts the pressure itself. */
static bool gate_pressure_hold(struct decide *s)
{
	char t1[32];

	if (s->now >= s->c->pressure_until)
		return false;
	s->d.rule = THPS_RULE_PRESSURE_BACKOFF;
	s->d.hold_until = s->c->pressure_until;
	hold_text(s->d.hold_until, s->now, t1, sizeof(t1));
	why(&s->d, "holding off %s more after memory pressure (%s)", t1, s->fired);
	return true;
}

static bool gate_nothing(struct decide *s)
{
	s->want = MIN(s->d.reclaimable, s->p->max_bytes_per_action);
	if (s->want != 0)
		return false;
	s->d.rule = THPS_RULE_NOTHING;
	why(&s->d, "nothing reclaimable (%s)", s->fired);
	return true;
}

/* The cgroup's and the machine's byte buckets both have to allow the action. */
static bool gate_budget(struct decide *s)
{
	const struct thps_policy *p = s->p;
	struct thps_engine *e = s->e;
	struct cg *c = s->c;
	char t1[32];

	bucket_setup(&c->bytes, (double)p->max_bytes_per_sec,
		     (double)MAX(p->max_bytes_per_sec, p->max_bytes_per_action), s->now);
	bucket_refill(&c->bytes, s->now);
	bucket_setup(&e->reclaim, (double)e->cfg.reclaim_bytes_per_sec,
		     (double)e->cfg.reclaim_burst_bytes, s->now);
	bucket_refill(&e->reclaim, s->now);
	s->avail = (uint64_t)MAX(0.0, MIN(c->bytes.tokens, e->reclaim.tokens));
	if (s->avail >= MIN(s->want, e->cfg.min_action_bytes))
		return false;
	s->d.rule = THPS_RULE_BUDGET;
	thps_format_bytes(t1, sizeof(t1), s->avail);
	why(&s->d, "%s byte budget exhausted (%s available) (%s)",
	    c->bytes.tokens < e->reclaim.tokens ? "cgroup" : "global", t1, s->fired);
	return true;
}

/* Every gate passed: act, and charge the budgets. */
static void act(struct decide *s)
{
	struct thps_decision *d = &s->d;
	struct cg *c = s->c;
	char t1[32];

	d->bytes = MIN(s->want, s->avail);
	c->bytes.tokens -= (double)d->bytes;
	s->e->reclaim.tokens -= (double)d->bytes;
	d->action = s->p->action == THPS_POLICY_RECLAIM ? THPS_ACT_RECLAIM : THPS_ACT_SPLIT;
	c->acted = true;
	c->last_action = s->now;
	c->pressure_shift = 0;
	thps_format_bytes(t1, sizeof(t1), d->bytes);
	why(d, "%s %s: %s%s", thps_engine_action_name(d->action), t1, s->fired,
	    d->bytes < s->want ? " (limited by byte budget)" : "");
}

static void dec_push(const struct thps_engine *e, struct cg *c, const struct thps_decision *d)
{
	c->dec[c->dec_head] = *d;
	c->dec_head = (c->dec_head + 1) % e->cfg.decisions;
	if (c->dec_n < e->cfg.decisions)
		c->dec_n++;
}

int thps_engine_decide(struct thps_engine *e, const char *cgroup, const struct thps_policy *p,
		       uint64_t now, const struct thps_figures *f, struct thps_decision *ret)
{
	struct decide s = {
	    .e = e,
	    .p = p,
	    .f = f,
	    .now = now,
	    .d = {.now = now, .action = THPS_ACT_NONE, .inputs = *f},
	};
	int r;

	r = cg_get(e, cgroup, &s.c);
	if (r < 0)
		return r;
	snprintf(s.d.policy, sizeof(s.d.policy), "%s", p->name);
	hist_push(e, s.c, now, f);
	measure(&s);

	if (gate_interval(&s)) {
		/* not a decision: explain's ring keeps the last real ones */
		*ret = s.d;
		return 0;
	}
	if (!gate_trigger(&s) && !gate_observe(&s) && !gate_cooldown(&s) && !gate_pressure(&s) &&
	    !gate_pressure_hold(&s) && !gate_nothing(&s) && !gate_budget(&s))
		act(&s);

	dec_push(e, s.c, &s.d);
	*ret = s.d;
	return 0;
}

static struct thps_decision *last_decision(const struct thps_engine *e, const struct cg *c)
{
	if (!c || !c->dec_n)
		return NULL;
	return &c->dec[(c->dec_head + e->cfg.decisions - 1) % e->cfg.decisions];
}

int thps_engine_record_result(struct thps_engine *e, const char *cgroup, uint64_t asked,
			      uint64_t given_back)
{
	struct cg *c = cg_find(e, cgroup);
	struct thps_decision *d;

	if (!c)
		return -ENOENT;
	c->total_asked += asked;
	c->total_given += given_back;
	/* the result belongs to the last decision that acted */
	for (unsigned i = 0; i < c->dec_n; i++) {
		d = &c->dec[(c->dec_head + e->cfg.decisions - 1 - i) % e->cfg.decisions];
		if (d->action != THPS_ACT_NONE) {
			if (!d->have_result) {
				d->have_result = true;
				d->given_back = given_back;
			}
			break;
		}
	}
	if (asked == 0)
		return 0;
	if ((double)given_back < (double)asked * e->cfg.noeffect_ratio) {
		if (c->noeffect_shift < e->cfg.max_backoff_shift)
			c->noeffect_shift++;
	} else {
		c->noeffect_shift = 0;
	}
	return 0;
}

uint64_t thps_engine_scan_budget(struct thps_engine *e, uint64_t now)
{
	double cpu_rate = e->cfg.cpu_share * USEC_PER_SEC;

	bucket_setup(&e->scan_thps, (double)e->cfg.scan_thps_per_sec,
		     (double)e->cfg.scan_thps_per_sec, now);
	bucket_refill(&e->scan_thps, now);
	/* a tenth of a second of credit; debt is bounded in thps_engine_charge_scan() */
	bucket_setup(&e->cpu, cpu_rate, cpu_rate * 0.1 + 1, now);
	bucket_refill(&e->cpu, now);
	if (e->cpu.tokens <= 0 || e->scan_thps.tokens < 1)
		return 0;
	return (uint64_t)e->scan_thps.tokens;
}

void thps_engine_charge_scan(struct thps_engine *e, uint64_t now, uint64_t thps, uint64_t cpu_usec)
{
	(void)thps_engine_scan_budget(e, now);
	e->scan_thps.tokens -= (double)thps;
	e->cpu.tokens -= (double)cpu_usec;
	/* A whole-machine pass can cost seconds of CPU: keep up to a minute of debt, so that the
	 * average stays at cpu_share however long a pass is. */
	if (e->cpu.tokens < -60.0 * USEC_PER_SEC)
		e->cpu.tokens = -60.0 * USEC_PER_SEC;
	if (e->scan_thps.tokens < -(double)e->cfg.scan_thps_per_sec)
		e->scan_thps.tokens = -(double)e->cfg.scan_thps_per_sec;
}

size_t thps_engine_history(const struct thps_engine *e, const char *cgroup, struct thps_sample *buf,
			   size_t n)
{
	const struct cg *c = cg_find(e, cgroup);
	size_t k;

	if (!c)
		return 0;
	k = MIN(n, (size_t)c->hist_n);
	for (size_t i = 0; i < k; i++)
		buf[i] = c->hist[(c->hist_head + e->cfg.history - k + i) % e->cfg.history];
	return k;
}

const struct thps_decision *thps_engine_last(const struct thps_engine *e, const char *cgroup)
{
	return last_decision(e, cg_find(e, cgroup));
}

int thps_engine_explain(const struct thps_engine *e, const char *cgroup, FILE *f)
{
	const struct cg *c = cg_find(e, cgroup);
	const struct thps_decision *last;
	char a[32], b[32];

	if (!c)
		return -ENOENT;
	last = last_decision(e, c);
	thps_format_bytes(a, sizeof(a), c->total_asked);
	thps_format_bytes(b, sizeof(b), c->total_given);
	fprintf(f, "cgroup %s\n  policy: %s\n  asked in all: %s, given back: %s\n", c->path,
		last ? last->policy : "-", a, b);
	if (c->noeffect_shift)
		fprintf(f, "  no-effect backoff: cooldown x%u\n", 1U << c->noeffect_shift);
	if (c->pressure_shift)
		fprintf(f, "  pressure backoff: level %u\n", c->pressure_shift);
	fprintf(f, "  last %u decisions, oldest first:\n", c->dec_n);
	for (unsigned i = 0; i < c->dec_n; i++) {
		const struct thps_decision *d =
		    &c->dec[(c->dec_head + e->cfg.decisions - c->dec_n + i) % e->cfg.decisions];
		char w[32], pa[32], m[32];
		thps_format_bytes(w, sizeof(w), d->inputs.waste_bytes);
		thps_format_bytes(pa, sizeof(pa), d->inputs.partial_bytes);
		thps_format_bytes(m, sizeof(m), d->inputs.memory_current);
		fprintf(f, "  [%.3fs] %s: %s\n", (double)d->now / USEC_PER_SEC,
			thps_rule_name(d->rule), d->why);
		fprintf(
		    f,
		    "      inputs: low-util THPs %llu, waste %s, partial %s, memory.current %s, "
		    "pressure ",
		    (unsigned long long)d->inputs.lowutil_thps, w, pa, m);
		if (d->inputs.pressure_some_avg10 >= 0)
			fprintf(f, "%.2f%%", d->inputs.pressure_some_avg10);
		else
			fprintf(f, "unknown");
		fprintf(f, ", growth %llu\n", (unsigned long long)d->growth);
		if (d->have_result) {
			thps_format_bytes(a, sizeof(a), d->bytes);
			thps_format_bytes(b, sizeof(b), d->given_back);
			fprintf(f, "      result: asked %s, given back %s\n", a, b);
		}
	}
	return 0;
}
