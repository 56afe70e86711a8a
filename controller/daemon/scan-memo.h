/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's side of the scan memo (controller/pages/memo.h): it lives across passes, and
 * each pass is told which folios to read again: every one at or below the highest policy
 * cut plus a margin, and as many others (the refresh rotation) as --refresh-cpu pays for at
 * the cost the last refreshes measured. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "scan.h"

/* Re-read every pass: counts up to the cut's upper edge plus this share of the subpages. */
#define SCAN_MEMO_MARGIN_PER512 51
/* The refresh rotation's default CPU share (percent of one core), and the fewest passes a
 * whole turn takes however little it costs. */
#define SCAN_MEMO_REFRESH_CPU_DEFAULT 0.5
#define SCAN_MEMO_MIN_TURN_PASSES     8
/* The identity rotation (memo.h): the share of one core it may spend re-reading head PFNs of
 * THPs carried by their PAGEMAP_SCAN run, at what one such pagemap read costs (measured on
 * the development machine: 1.0 us quiet, 1.3 us loaded). 1 TiB of THPs: a turn in 13 passes. */
#define SCAN_MEMO_VERIFY_CPU	 0.1
#define SCAN_MEMO_VERIFY_COST_NS 1500.0

struct scan_memo;

struct scan_memo_figures {
	bool enabled;
	uint64_t entries;
	uint64_t bytes;		     /* the memo's table */
	uint64_t refresh_folios;     /* this pass's refresh budget */
	double refresh_cost_us;	     /* CPU per refreshed folio, measured */
	double full_refresh_seconds; /* how long until every memo entry was re-read, at this pace */
	bool trust;		     /* carried THPs found by PAGEMAP_SCAN runs (memo.h) */
	uint64_t verify_folios;	     /* ... the next pass's identity budget */
	double full_verify_seconds;  /* ... until every entry's head PFN was read again */
};

/* Returns 0 or -ENOMEM. refresh_cpu_percent > 0. */
int scan_memo_new(double refresh_cpu_percent, uint64_t interval_usec, struct scan_memo **ret);
void scan_memo_free(struct scan_memo *m);

/* Fills opts's memo fields for the next pass; cut_bucket is the highest low-util cut of the
 * policies in force. */
void scan_memo_plan(struct scan_memo *m, const struct thps_geometry *g, unsigned cut_bucket,
		    struct thps_scan_opts *opts);

/* Learns the cost of a refresh from a finished pass. */
void scan_memo_learn(struct scan_memo *m, const struct thps_scan_summary *s);

void scan_memo_figures(const struct scan_memo *m, struct scan_memo_figures *ret);
