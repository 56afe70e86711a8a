/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The records the daemon keeps per cgroup between passes: one table, which a pass fills
 * (pass.c) and publishing reads (publish.c). Data flows one way: manager -> pass -> records ->
 * publish; nothing here calls back into either. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "metrics.h"
#include "pass-act.h"
#include "pass-decide.h"
#include "promote.h"
#include "recollapse.h"

/* What the daemon keeps per cgroup between passes. */
struct crecord {
	char *path;
	bool seen; /* in the current pass */
	struct dglue_decision last;
	struct dglue_result last_result;
	time_t last_time;
	/* per action: observe, reclaim, split */
	struct thps_metrics_action act[DGLUE_N_ACTING];
	struct thps_recollapse
	    split;		  /* ranges the daemon split, to catch khugepaged rebuilding them */
	uint64_t recollapsed;	  /* THPs rebuilt after a split, since the start */
	uint64_t recollapse_debt; /* their bytes, not yet charged to the engine */
	struct thps_promoted promoted; /* whole THPs the daemon made: the split leaves them */
	struct crecord_promote {
		uint64_t ranges, bytes; /* collapsed since the start */
		uint64_t pass;		/* manager's promote pass these figures are from */
		uint64_t pass_found, pass_collapsed, pass_bytes;
		uint64_t opportunity_bytes; /* dense bytes still in small pages (last pass) */
		uint64_t pass_not_asked;    /* processes: PR_SET_THP_DISABLE, refused before */
		uint64_t pass_opted_out;    /* ranges: MADV_NOHUGEPAGE, THPeligible 0 (always) */
		uint64_t pass_held_back;    /* ranges: re-collapsed before, in their backoff */
		uint64_t pass_failures[THPS_PROMOTE_FAIL_MAX]; /* by reason, this pass */
		uint64_t ino;	    /* of the cgroup's directory, for the metrics */
		bool looked;	    /* a promote policy matched it */
		bool observe;	    /* the policy observes: found, not collapsed */
		uint64_t max_bytes; /* the policy's max_bytes_per_pass */
		char policy[72];
		char note[200]; /* the first failure or stop of the pass */
		char why[400];	/* why promoted or not, for explain */
	} prom;
};

struct crecords {
	struct crecord *v;
	size_t n;
};

/* The record of the cgroup at path, created (counters zero) if there is none; NULL when out of
 * memory. */
struct crecord *records_get(struct crecords *t, const char *path);
const struct crecord *records_find(const struct crecords *t, const char *path);
/* Drops the records of cgroups not seen in this pass for which gone(path, userdata) says so. */
void records_prune(struct crecords *t, bool (*gone)(const char *path, void *userdata),
		   void *userdata);
void records_free(struct crecords *t);
