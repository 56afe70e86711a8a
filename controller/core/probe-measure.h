/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The measuring half of the probe: instead of inferring from version numbers what a split or
 * memory.reclaim frees, it tries, on canary memory of its own. A child process (in a scratch
 * cgroup where cgroup v2 has the memory controller) faults in four sets of folios of every size
 * the kernel allocates now (the PMD size and each hugepages-<N>kB size not "never"): three
 * sparse sets (one byte written per folio, every other subpage zero) and one partially mapped
 * set (the whole folio written, then all but its first subpage MADV_DONTNEED, so the folio
 * stays allocated with one page mapped). The parent, per size:
 *   - splits the first sparse set to order 0 through debugfs split_huge_pages;
 *   - splits the second sparse set and the partial set the way the split actuator does:
 *     process_madvise(MADV_COLD) on one 4 KiB page of each folio, through a pidfd of the child
 *     (the kernel splits a large folio the advice covers only in part);
 *   - asks memory.reclaim of the scratch cgroup for the zero bytes of the third sparse set;
 * and measures what each freed: by the scratch cgroup's memory.current, or without one by the
 * child's anonymous memory (sparse sets: smaps_rollup's Anonymous, a page-table walk, else
 * RssAnon) and by /proc/kpageflags (the partial set, whose unmapped
 * subpages RSS never counted: an unmapped subpage counts as freed once its PFN is no longer
 * part of a large folio, i.e. the canary's folio was split and the page given back; a PFN
 * reused by a new large folio in the meantime counts as not freed, so the figure errs low).
 * From the figures and what this process may do, it decides which mechanism the split actuator
 * would use for each size, and why. The child is killed and the scratch cgroup removed
 * afterwards. No global knob is touched: a size the kernel does not allocate now is reported
 * as not measured. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

#include "actuator.h"
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
	/* process_madvise(MADV_COLD) on one page of each folio of a sparse set ... */
	uint32_t cold_folios;
	uint64_t cold_zero_bytes;
	int64_t cold_freed; /* INT64_MIN: not measured */
	/* ... and of the partially mapped set: one subpage mapped, the rest unmapped */
	uint32_t cold_partial_folios;
	uint64_t cold_partial_unmapped_bytes;
	int64_t cold_partial_freed; /* INT64_MIN: not measured */
	/* what the split actuator would use for folios of this size, and why */
	enum thps_split_mech mech;
	char mech_why[320];
	char note[192];
};

struct thps_measure {
	bool ran; /* false: why says why nothing was measured */
	char why[256];
	char where[300]; /* "scratch cgroup /thpshrink-probe.123" or "the canary's anonymous memory"
			  */
	int pmadvise_allowed;	/* 1 this process may process_madvise others, 0 not, -errno */
	char pmadvise_why[256]; /* why not */
	bool debugfs_split;	/* debugfs split_huge_pages writable */
	size_t n;
	struct thps_measure_size sizes[THPS_MEASURE_MAX_SIZES];
};

/* force: measure even without a scratch cgroup (by the canary's anonymous memory and kpageflags; no
 * reclaim test). Without force and without cgroup v2 memory, nothing is measured (why says so).
 * Returns 0 (m->ran tells whether anything was measured) or -errno (-ENOMEM). */
int thps_probe_measure(const struct thps_ctx *ctx, const struct thps_geometry *g, bool force,
		       struct thps_measure *m);

/* Percent of the zero bytes freed, or -1 when not measured. */
int thps_measure_split_pct(const struct thps_measure_size *s);
int thps_measure_reclaim_pct(const struct thps_measure_size *s);
int thps_measure_cold_pct(const struct thps_measure_size *s);
/* Percent of the partial set's unmapped bytes freed, or -1 when not measured. */
int thps_measure_cold_partial_pct(const struct thps_measure_size *s);

/* A share of the canary's waste that counts as "this mechanism frees it". */
#define THPS_MEASURE_FREES_PCT 50

/* Pure: which mechanism the split actuator would use for folios of size s, from what was
 * measured and what this process may do (m's pmadvise_allowed and debugfs_split):
 * process_madvise where it is allowed and measured to free >= 50 % of the sparse set's zero
 * bytes or of the partial set's unmapped bytes; else debugfs where split_huge_pages is
 * writable and its split was measured; else none. Sets s->mech and s->mech_why. */
void thps_measure_decide(const struct thps_measure *m, struct thps_measure_size *s);
const char *thps_measure_mech_name(enum thps_split_mech mech);

struct thps_probe;
/* Lets what was measured decide: where a split of some size was measured (debugfs or
 * process_madvise), "a split frees zero subpages" is what the measurement says (>= 50 % of the
 * zero bytes freed), the split.process_madvise finding gets the figures, and the probe's
 * split mechanism is process_madvise where some size chose it. */
void thps_probe_apply_measure(struct thps_probe *p, const struct thps_measure *m);

void thps_measure_print(FILE *f, const struct thps_measure *m);
/* A new object for the probe's JSON "measured" member, or NULL on ENOMEM. */
json_object *thps_measure_to_json(const struct thps_measure *m);
