/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Detects khugepaged undoing the daemon's splits: per cgroup, the THP ranges the daemon split,
 * matched against the low-utilization THP ranges of a later scan. A range that comes back as a
 * THP at the same (pid, pid_starttime, start) under a different head PFN was rebuilt by
 * khugepaged (a collapse copies into a new huge page); under the same PFN it is the THP the
 * split did not reach (the actuator stopped at its byte budget, or skipped it) and is only
 * forgotten. A matched range is dropped, so one split/re-collapse cycle counts once. Pure: no
 * I/O, no logging. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "scan.h"

#define THPS_RECOLLAPSE_MAX 4096u /* split ranges kept per cgroup; the oldest go first */

struct thps_split_mark {
	pid_t pid;
	uint64_t pid_starttime;
	uint64_t start;
	uint64_t pfn;
};

/* One cgroup's split ranges, oldest first. Zero-initialised is empty. */
struct thps_recollapse {
	struct thps_split_mark *v;
	size_t n;
	size_t max; /* 0 = THPS_RECOLLAPSE_MAX (tests set a small bound) */
};

/* Remembers the ranges among r[0..n) of memcg ino as split, dropping the oldest beyond the
 * bound. Returns 0 or -ENOMEM (nothing added). */
int thps_recollapse_add(struct thps_recollapse *rc, const struct thps_thp_range *r, size_t n,
			uint64_t ino);

/* Matches a new scan's low-util ranges r[0..n) of memcg ino against the split ranges and drops
 * every match. Returns how many came back re-collapsed (another head PFN). */
size_t thps_recollapse_match(struct thps_recollapse *rc, const struct thps_thp_range *r, size_t n,
			     uint64_t ino);

void thps_recollapse_clear(struct thps_recollapse *rc);
