/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the daemon's passes read of each folio, so a pass costs what changed, not what exists.
 *
 * Data rarely turns back into zeros: freed memory stays written or leaves the folio through
 * MADV_DONTNEED (which pagemap shows without a read). So a pass re-reads
 *  - folios it has not seen (new, or whose head PFN, process, start time, address or size
 *    changed: the key no longer matches);
 *  - every folio whose last count was at or below the exact-count threshold (the highest
 *    policy cut plus a margin): the candidates, read each time as before;
 *  - a rotating share of the rest (the refresh), paid from a CPU budget of its own. A refresh
 *    reads only until the folio is proven above the threshold; its count stays the last exact
 *    one, an estimate above the cut. A folio zeroed in place is found at its turn.
 * Where PAGEMAP_SCAN shows a PMD-mapped run (Linux 6.7+), a carried THP is found by where it
 * is mapped (thps_memo_lookup_va), without the pagemap read of its head PFN: the mapping is
 * trusted. A THP replaced at the same address (munmap or MADV_DONTNEED, then a fault) keeps
 * its old count until the identity rotation, a second window like the refresh one, reads its
 * PFN again (thps_memo_lookup): one identity turn at most.
 * Anything acted on is still re-read just before the action (the split actuator's re-check).
 * Entries of folios a pass did not see (exited processes, changed PFNs) are dropped at its end.
 * 32 bytes per folio. Only the scan thread uses a memo, one pass at a time. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct thps_memo;

struct thps_memo_key {
	uint64_t pfn; /* head PFN */
	uint64_t va;  /* virtual address of the folio's first page */
	pid_t pid;
	uint64_t starttime; /* /proc/PID/stat field 22 */
	unsigned order;	    /* log2 of the folio's pages */
};

enum thps_memo_verdict {
	THPS_MEMO_READ,	   /* unknown or a candidate: read it whole, then thps_memo_store() */
	THPS_MEMO_REFRESH, /* its turn in the rotation: read until proven above *ret_limit */
	THPS_MEMO_CARRY,   /* *ret_utilized from the memo stands */
};

struct thps_memo_stats {
	uint64_t entries;
	uint64_t bytes; /* the table's memory */
	uint64_t passes;
};

/* Returns 0 or -ENOMEM. */
int thps_memo_new(struct thps_memo **ret);
void thps_memo_free(struct thps_memo *m);

/* Starts a pass: counts at or below exact_max utilized subpages (per 512; scaled to each
 * folio's size) are re-read every pass; refresh_folios others get their turn, and
 * verify_folios get their identity (head PFN) checked. */
void thps_memo_pass_begin(struct thps_memo *m, unsigned exact_max_per512, uint64_t refresh_folios,
			  uint64_t verify_folios);

/* What to do with the folio at k (marks it seen this pass). When the memo knows the folio,
 * *ret_utilized is its last exact count (with CARRY: the count to use) and *ret_cgroup the
 * memcg inode it was charged to (0: unknown; a folio's charge never moves in cgroup v2, so a
 * known folio needs no kpageflags nor kpagecgroup read); with REFRESH, *ret_limit is the
 * count above which the read may stop. */
enum thps_memo_verdict thps_memo_lookup(struct thps_memo *m, const struct thps_memo_key *k,
					unsigned *ret_utilized, unsigned *ret_limit,
					uint64_t *ret_cgroup);

/* The same for a folio known only by its place (k->pfn unused): THPS_MEMO_CARRY when the
 * memo would carry it, its cgroup is known and its identity turn is not this pass (marks it
 * seen; *ret_pfn is the head PFN last read, for the dedup of shared THPs); THPS_MEMO_READ
 * otherwise: read the head PFN and ask thps_memo_lookup(). */
enum thps_memo_verdict thps_memo_lookup_va(struct thps_memo *m, const struct thps_memo_key *k,
					   unsigned *ret_utilized, uint64_t *ret_cgroup,
					   uint64_t *ret_pfn);

/* Records a read of the folio charged to memcg inode cgroup. complete: utilized is its exact
 * count; false (a refresh that stopped above the limit): the last exact count stays. Returns 0
 * or -ENOMEM (then the folio is simply read again next pass). */
int thps_memo_store(struct thps_memo *m, const struct thps_memo_key *k, unsigned utilized,
		    bool complete, uint64_t cgroup);

/* Ends a pass: drops every entry the pass did not see. */
void thps_memo_pass_end(struct thps_memo *m);

void thps_memo_stats(const struct thps_memo *m, struct thps_memo_stats *ret);
