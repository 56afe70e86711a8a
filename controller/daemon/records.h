/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The records the daemon keeps per cgroup between passes: one table, which a pass fills
 * (pass.c) and publishing reads (publish.c). Data flows one way: manager -> pass -> records ->
 * publish; nothing here calls back into either. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "daemon-glue.h"
#include "metrics.h"
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
