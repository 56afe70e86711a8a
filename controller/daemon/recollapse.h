/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Detects khugepaged undoing the daemon's splits: per cgroup, the THP ranges the daemon split,
 * matched against the low-utilization THP ranges of a later scan. A range that comes back as a
 * THP at the same (pid, pid_starttime, start) under a different head PFN was rebuilt by
 * khugepaged (a collapse copies into a new huge page); under the same PFN it is the THP the
 * split did not reach (the actuator stopped at its byte budget, or skipped it) and is only
 * forgotten. A matched range is dropped, so one split/re-collapse cycle counts once. Pure: no
 * I/O, no logging. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "scan.h"

#define THPS_RECOLLAPSE_MAX 4096u /* split ranges kept per cgroup; the oldest go first */
/* A range khugepaged rebuilt this many times after our splits is not split again: the tug of
 * war only burns CPU on both sides. The advice (max_ptes_none, MemoryTHP=, PR_SET_THP_DISABLE)
 * is what ends it. */
#define THPS_RECOLLAPSE_PIN_AFTER 3u

struct thps_split_mark {
	pid_t pid;
	uint64_t pid_starttime;
	uint64_t start;
	uint64_t pfn;	  /* head PFN when split (pending) or when seen rebuilt */
	uint32_t returns; /* times khugepaged rebuilt it after our split */
	bool pending;	  /* split and not seen since */
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

/* Matches a new scan's low-util ranges r[0..n) of memcg ino against the pending split ranges.
 * One under the same head PFN was not split (budget, skipped): forgotten unless it came back
 * before. One under another head PFN was rebuilt: its returns go up and it waits for the next
 * split. Returns how many came back re-collapsed; ret_pinned (optional) gets how many reached
 * THPS_RECOLLAPSE_PIN_AFTER returns in this call. */
size_t thps_recollapse_match(struct thps_recollapse *rc, const struct thps_thp_range *r, size_t n,
			     uint64_t ino, size_t *ret_pinned);

/* Whether r came back THPS_RECOLLAPSE_PIN_AFTER times or more: then it is not split again. */
bool thps_recollapse_pinned(const struct thps_recollapse *rc, const struct thps_thp_range *r);
/* How many of the marks are pinned. */
size_t thps_recollapse_n_pinned(const struct thps_recollapse *rc);

void thps_recollapse_clear(struct thps_recollapse *rc);

/* The ranges the daemon promoted (MADV_COLLAPSE of a dense range) in one cgroup. A split never
 * picks one while it is still one whole THP: it was full when made, and a range the program
 * unmapped in part (a partially mapped folio) is no longer dense and may be split. Bounded
 * (THPS_RECOLLAPSE_MAX), the oldest go first. Zero-initialised is empty. */
struct thps_promoted {
	struct thps_split_mark *v;
	size_t n;
	size_t max; /* 0 = THPS_RECOLLAPSE_MAX */
};

/* Remembers (pid, pid_starttime, start). Returns 0 or -ENOMEM. */
int thps_promoted_add(struct thps_promoted *p, pid_t pid, uint64_t pid_starttime, uint64_t start);
/* Whether r is a whole folio the daemon promoted. */
bool thps_promoted_has(const struct thps_promoted *p, const struct thps_thp_range *r);
void thps_promoted_clear(struct thps_promoted *p);
