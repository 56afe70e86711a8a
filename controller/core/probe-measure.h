/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The measuring half of the probe: instead of inferring from version numbers what a split or
 * memory.reclaim frees, it tries, on canary memory of its own. A child process (in a scratch
 * cgroup where cgroup v2 has the memory controller) faults in folios of every size the kernel
 * allocates now (the PMD size and each hugepages-<N>kB size not "never"), writes one byte per
 * folio (every other subpage stays zero), and the parent
 *   - splits each verified folio to order 0 through debugfs split_huge_pages and measures
 *     what left the cgroup (or the child's RssAnon without a scratch cgroup), per size;
 *   - asks memory.reclaim of the scratch cgroup for the zero bytes of a second set of canary
 *     folios and measures what left, per size.
 * The child is killed and the scratch cgroup removed afterwards. No global knob is touched:
 * a size the kernel does not allocate now is reported as not measured. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

#include "context.h"
#include "thp.h"

#define THPS_MEASURE_MAX_SIZES (THPS_MAX_ORDER + 1)

struct thps_measure_size {
	uint64_t size;	     /* folio size in bytes */
	char mode[16];	     /* its effective mode: "always", "madvise" */
	uint32_t folios;     /* canary folios the kernel really gave at this size (split set) */
	uint64_t zero_bytes; /* their zero subpages */
	int64_t split_freed; /* bytes that left after the split; INT64_MIN: not measured */
	uint32_t reclaim_folios;
	uint64_t reclaim_zero_bytes;
	int64_t reclaim_freed; /* INT64_MIN: not measured */
	char note[160];
};

struct thps_measure {
	bool ran; /* false: why says why nothing was measured */
	char why[256];
	char where[300]; /* "scratch cgroup /thpshrink-probe.123" or "the canary's RssAnon" */
	size_t n;
	struct thps_measure_size sizes[THPS_MEASURE_MAX_SIZES];
};

/* force: measure even without a scratch cgroup (by the canary's RssAnon; no reclaim test).
 * Without force and without cgroup v2 memory, nothing is measured (why says so).
 * Returns 0 (m->ran tells whether anything was measured) or -errno (-ENOMEM). */
int thps_probe_measure(const struct thps_ctx *ctx, const struct thps_geometry *g, bool force,
		       struct thps_measure *m);

/* Percent of the zero bytes freed, or -1 when not measured. */
int thps_measure_split_pct(const struct thps_measure_size *s);
int thps_measure_reclaim_pct(const struct thps_measure_size *s);

struct thps_probe;
/* Lets what was measured decide: where a split of some size was measured, "a split frees zero
 * subpages" is what the measurement says (>= 50 % of the zero bytes freed), and the finding
 * says so with the figures. */
void thps_probe_apply_measure(struct thps_probe *p, const struct thps_measure *m);

void thps_measure_print(FILE *f, const struct thps_measure *m);
/* A new object for the probe's JSON "measured" member, or NULL on ENOMEM. */
json_object *thps_measure_to_json(const struct thps_measure *m);
