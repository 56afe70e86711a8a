/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "scan-memo.h"
#include "memo.h"

/* Before any refresh was measured: what a refresh that stops at a quarter of a 2 MiB THP cost
 * on the development machine (a whole THP read: ~220 us). */
#define REFRESH_COST_GUESS_NS 60000.0

struct scan_memo {
	struct thps_memo *memo;
	double refresh_share; /* of one core */
	uint64_t interval_usec;
	double refresh_cost_ns; /* per refreshed folio, smoothed */
	int trust;		/* carried THPs found by PAGEMAP_SCAN runs: -1 not known yet */
};

int scan_memo_new(double refresh_cpu_percent, uint64_t interval_usec, struct scan_memo **ret)
{
	struct scan_memo *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return -ENOMEM;
	r = thps_memo_new(&m->memo);
	if (r < 0) {
		free(m);
		return r;
	}
	m->refresh_share = refresh_cpu_percent / 100.0;
	m->interval_usec = interval_usec;
	m->refresh_cost_ns = REFRESH_COST_GUESS_NS;
	m->trust = -1;
	*ret = m;
	return 0;
}

void scan_memo_free(struct scan_memo *m)
{
	if (!m)
		return;
	thps_memo_free(m->memo);
	free(m);
}

/* What the CPU share pays for, but spread over a few passes at least: a small node's steady
 * pass is then mostly carried counts. */
static uint64_t refresh_budget(const struct scan_memo *m)
{
	struct thps_memo_stats st;
	uint64_t by_cpu =
	    (uint64_t)(m->refresh_share * (double)m->interval_usec * 1000.0 / m->refresh_cost_ns);

	thps_memo_stats(m->memo, &st);
	return MAX(MIN(by_cpu, st.entries / SCAN_MEMO_MIN_TURN_PASSES), (uint64_t)1);
}

/* The identity rotation's: a fixed CPU share, at a turn of a few passes at least. */
static uint64_t verify_budget(const struct scan_memo *m)
{
	struct thps_memo_stats st;
	uint64_t by_cpu = (uint64_t)(SCAN_MEMO_VERIFY_CPU / 100.0 * (double)m->interval_usec *
				     1000.0 / SCAN_MEMO_VERIFY_COST_NS);

	thps_memo_stats(m->memo, &st);
	return MAX(MIN(by_cpu, st.entries / SCAN_MEMO_MIN_TURN_PASSES), (uint64_t)1);
}

void scan_memo_plan(struct scan_memo *m, const struct thps_geometry *g, unsigned cut_bucket,
		    struct thps_scan_opts *opts)
{
	unsigned lo, hi;

	thps_bucket_range(g, MIN(cut_bucket, THPS_BUCKETS - 1), &lo, &hi);
	opts->memo = m->memo;
	/* the cut's upper edge, as a count of 512 subpages, plus the margin */
	opts->memo_exact_max_per512 =
	    MIN(512u, hi * 512 / MAX(g->subpages, 1u) + SCAN_MEMO_MARGIN_PER512);
	opts->memo_refresh_folios = refresh_budget(m);
	opts->memo_verify_folios = verify_budget(m);
}

void scan_memo_learn(struct scan_memo *m, const struct thps_scan_summary *s)
{
	double cost;

	/* the first pass's walker tried PAGEMAP_SCAN; the kernel does not change under us */
	if (m->trust < 0 && s->method) {
		m->trust = strcmp(s->method, "PAGEMAP_SCAN") == 0;
		if (m->trust)
			log_info(
			    "Scan memo: carried THPs are found by their PAGEMAP_SCAN runs, each "
			    "one's head PFN read again in a rotation (%.1f%% of a core)",
			    SCAN_MEMO_VERIFY_CPU);
		else
			log_notice(
			    "Scan memo: no PAGEMAP_SCAN (Linux before 6.7): every carried THP's "
			    "head PFN is read each pass");
	}

	if (s->folios_refreshed < 8)
		return; /* too few to tell */
	cost = (double)s->refresh_cpu_ns / (double)s->folios_refreshed;
	m->refresh_cost_ns = MAX(1000.0, 0.7 * m->refresh_cost_ns + 0.3 * cost);
}

void scan_memo_figures(const struct scan_memo *m, struct scan_memo_figures *ret)
{
	struct thps_memo_stats st;

	*ret = (struct scan_memo_figures){0};
	if (!m)
		return;
	thps_memo_stats(m->memo, &st);
	ret->enabled = true;
	ret->entries = st.entries;
	ret->bytes = st.bytes;
	ret->refresh_folios = refresh_budget(m); /* the next pass's */
	ret->refresh_cost_us = m->refresh_cost_ns / 1000.0;
	ret->full_refresh_seconds =
	    (double)st.entries / (double)ret->refresh_folios * (double)m->interval_usec / 1e6;
	ret->trust = m->trust > 0;
	if (ret->trust) {
		ret->verify_folios = verify_budget(m);
		ret->full_verify_seconds = (double)st.entries / (double)ret->verify_folios *
					   (double)m->interval_usec / 1e6;
	}
}
