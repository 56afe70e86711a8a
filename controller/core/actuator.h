/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Actuators: the ways thpshrink gives wasted THP memory back to the system. Each is a const
 * table of operations listed in one static, NULL-terminated table (plugins/actuators/).
 * An actuator measures what it did: memory.current, memory.stat anon_thp and the kernel's
 * split counters before and after, because the kernel's own answer (e.g. EAGAIN from
 * memory.reclaim) says little about what was freed. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "context.h"
#include "scan.h"
#include "thp.h"

/* How the split actuator splits a folio. */
enum thps_split_mech {
	THPS_SPLIT_MECH_AUTO = 0, /* process_madvise where allowed, else debugfs */
	THPS_SPLIT_MECH_PMADVISE, /* process_madvise(MADV_COLD) on one page: no debugfs */
	THPS_SPLIT_MECH_DEBUGFS,  /* debugfs split_huge_pages: refused under lockdown */
	THPS_SPLIT_MECH_NONE,
};
const char *thps_split_mech_name(enum thps_split_mech m);
struct thps_ctx;
/* How this process would split, given want (AUTO: process_madvise where it may advise others,
 * else debugfs where split_huge_pages is writable). why says why, and for debugfs why not
 * process_madvise. Never fails: THPS_SPLIT_MECH_NONE when neither works. */
enum thps_split_mech thps_split_mechanism(const struct thps_ctx *ctx, enum thps_split_mech want,
					  char *why, size_t size);

/* What to act on. cgroup is relative to ctx->cgroup_root ("/" is the root). */
struct thps_act_request {
	const char *cgroup;
	const struct thps_geometry *geom;
	uint64_t amount_bytes;		     /* reclaim: bytes to ask memory.reclaim for */
	const struct thps_thp_range *ranges; /* split: the scanner's low-util THPs */
	size_t n_ranges;
	unsigned lowutil_max_bucket; /* split: a THP above this bucket is never split */
	uint64_t max_bytes;	     /* split: stop once this much waste was targeted; 0 = no cap */
	pid_t pid;		     /* split: one process (thpshrink reclaim --pid); cgroup may be
				      * NULL then, and the process's RssAnon is measured */
	enum thps_split_mech mech;   /* split: how; AUTO decides by what this process may do */
	int zero_freed;		     /* split: a split frees zero subpages: 1 yes, -1 no (as
				      * measured), 0 ask the kernel probe */
	bool cold_whole;	     /* split: after the split, MADV_COLD the whole range too */
};

/* Figures of one cgroup and the machine, read around an action. UINT64_MAX = not available. */
struct thps_act_snapshot {
	uint64_t memory_current;
	uint64_t anon_thp;
	uint64_t anon; /* memory.stat anon: what "given back" is measured by */
	uint64_t file; /* memory.stat file: the page cache an action must spare */
	uint64_t workingset_refault_file; /* file pages read again after their eviction */
	uint64_t rss_anon;		  /* RssAnon of req->pid, when acting on one process */
	struct thps_vmstat vmstat;
};

struct thps_act_result {
	const char *actuator;
	bool acted;	      /* false: refused or nothing to do (note says why) */
	uint64_t asked_bytes; /* reclaim: written to memory.reclaim; split: waste targeted */
	int write_status;     /* reclaim: 0 or -errno of the write (-EAGAIN = partial) */
	uint64_t ranges_split;
	uint64_t ranges_skipped;	/* changed since the scan, gone, or no longer low-util */
	uint64_t ranges_failed;		/* the kernel refused the split */
	uint64_t ranges_kernel_skipped; /* advised, but the kernel left it whole: shared by a
					 * fork, or its lock was busy (retried once) */
	uint64_t partial_split;		/* of ranges_split: partially mapped folios */
	const char *mechanism;		/* split: "process_madvise" or "debugfs" */
	struct thps_act_snapshot before, after;
	char note[512]; /* what the operator should know; "" if nothing */
};

struct thps_actuator_ops {
	const char *name;
	const char *description;
	/* Returns 1 if usable here, 0 if not (why says why, for the operator), or -errno.
	 * size is why's size. */
	int (*probe)(const struct thps_ctx *ctx, char *why, size_t size);
	/* Acts on req->cgroup and fills result. Returns 0 (also when it refused: result->acted
	 * is false and result->note says why) or -errno on a failure to read or write. */
	int (*act)(const struct thps_ctx *ctx, const struct thps_act_request *req,
		   struct thps_act_result *result);
};

extern const struct thps_actuator_ops thps_actuator_reclaim;
extern const struct thps_actuator_ops thps_actuator_split;
extern const struct thps_actuator_ops thps_actuator_observe;
/* NULL-terminated. */
extern const struct thps_actuator_ops *const thps_actuators[];
const struct thps_actuator_ops *thps_actuator_find(const char *name);

/* How thps_give_back() gives a cgroup's waste back. */
enum thps_give_back_method {
	THPS_GIVE_BACK_SPLIT,	/* the exact split; memory.reclaim only with allow_reclaim */
	THPS_GIVE_BACK_RECLAIM, /* memory.reclaim, named by the operator */
	THPS_GIVE_BACK_OBSERVE, /* a dry run: record what would be asked, change nothing */
};

/* One action on one cgroup (or one process), for the daemon and the CLI alike. */
struct thps_give_back {
	const char *cgroup; /* relative to ctx->cgroup_root; NULL with pid */
	pid_t pid;	    /* one process (thpshrink reclaim --pid), or 0 */
	const struct thps_geometry *geom;
	enum thps_give_back_method method;
	/* The policy's permission to evict page cache: memory.reclaim where no exact split
	 * reaches (no split mechanism at all). */
	bool allow_reclaim;
	enum thps_split_mech mech; /* as probed by the caller; AUTO decides here */
	int zero_freed;		   /* as thps_act_request.zero_freed */
	uint64_t amount;	   /* reclaim: bytes to ask memory.reclaim for */
	uint64_t max_bytes;	   /* split: stop once this much waste was targeted; 0 = no cap */
	unsigned lowutil_max_bucket;
	uint32_t sizes_mask; /* folio sizes acted on, 0 = every size */
	/* The scanner's ranges; only those of memcg ino (0: every one) are looked at. */
	const struct thps_thp_range *ranges;
	size_t n_ranges;
	uint64_t ino;
	/* The caller's own exclusions (ranges khugepaged rebuilt too often, THPs it promoted);
	 * NULL: none. */
	bool (*skip)(const struct thps_thp_range *t, void *userdata);
	void *userdata;
	bool cold_whole; /* as thps_act_request.cold_whole */
};

/* Acts on gb->cgroup as gb->method says, through the actuator table, and measures it in
 * *ret (ret->mechanism: "process_madvise", "debugfs", "reclaim" or NULL when nothing was
 * asked). The one act path of the daemon and the CLI: a split never writes memory.reclaim
 * unless gb->allow_reclaim. Returns 0 (ret->acted false with ret->note saying why when
 * it refused or found nothing) or -errno. */
int thps_give_back(const struct thps_ctx *ctx, const struct thps_give_back *gb,
		   struct thps_act_result *ret);

/* The reclaim amount for a cgroup: its low-util waste plus its partially mapped THPs'
 * unmapped bytes, capped at max_bytes (0 = no cap), rounded up to whole pages. */
uint64_t thps_reclaim_amount(const struct thps_cgroup_stats *cg, uint64_t max_bytes,
			     uint32_t page_size);

/* Reads memory.current and memory.stat anon_thp of cgroup, and the split counters of
 * /proc/vmstat. Fields it cannot read stay UINT64_MAX. Returns 0, or -errno if memory.current
 * cannot be read. */
int thps_act_snapshot(const struct thps_ctx *ctx, const char *cgroup,
		      struct thps_act_snapshot *ret);
/* The same for cgroup (NULL: none) and the RssAnon of pid (0: none). Returns 0, or -errno when
 * neither can be read. */
int thps_act_snapshot_of(const struct thps_ctx *ctx, const char *cgroup, pid_t pid,
			 struct thps_act_snapshot *ret);
/* What an action gave back: the drop of memory.current less the drop of memory.stat file (so
 * evicted page cache never counts), or of RssAnon for one process. 0 when not measured or when
 * it grew. */
uint64_t thps_act_given_back(const struct thps_act_result *res);
/* Page cache the action cost the cgroup: file bytes before minus after (0 if it grew or is
 * unknown). */
uint64_t thps_act_file_lost(const struct thps_act_result *res);
/* Parses the split counters out of /proc/vmstat text; absent ones are UINT64_MAX. */

/* Whether splitting a THP frees its zero subpages on this kernel: upstream >= 6.12 remaps them
 * to the shared zero page (it also has the underused-THP shrinker, whose knob
 * transparent_hugepage/shrink_underused tells it), the RFC frees them (vmstat thp_split_free).
 * Returns 1 yes, 0 no (why says why), or -errno. One function so a fuller kernel probe can
 * replace it. */
int thps_split_frees_zero_subpages(const struct thps_ctx *ctx, char *why, size_t size);

/* Whether memory.reclaim can free THP zero subpages: needs the kernel's underused-THP
 * shrinker (shrink_underused with max_ptes_none < subpages - 1) or the RFC's shrinker.
 * Returns 1 yes, 0 no (why says why and what to do), or -errno. */
int thps_reclaim_frees_zero_subpages(const struct thps_ctx *ctx, const struct thps_geometry *g,
				     char *why, size_t size);

/* The split actuator's re-check of one THP just before splitting it: same process (pid and
 * starttime), still PMD-mapped by a THP whose head PFN is r->pfn, and at most lowutil_max_bucket
 * used. ret_utilized gets the recounted non-zero subpages. Returns 1 if it may be split,
 * 0 if not (why says why), or -errno. */
int thps_thp_recheck(const struct thps_ctx *ctx, const struct thps_geometry *g,
		     const struct thps_thp_range *r, unsigned lowutil_max_bucket,
		     uint32_t *ret_utilized, char *why, size_t size);
/* The same with a reader of the caller's (controller/pages/reader.h), shared across one batch of
 * actions instead of one 128 KiB buffer per THP. */
struct thps_reader;
int thps_thp_recheck_with(const struct thps_ctx *ctx, const struct thps_geometry *g,
			  const struct thps_thp_range *r, unsigned lowutil_max_bucket,
			  struct thps_reader *rd, uint32_t *ret_utilized, char *why, size_t size);
/* The same for a partially mapped folio (r->mapped > 0): same process, the page at
 * r->advise_page still maps the folio's PFN, the folio is still a large anonymous folio of its
 * size and still not wholly mapped there. Returns 1, 0 (why says why) or -errno. */
int thps_partial_recheck(const struct thps_ctx *ctx, const struct thps_geometry *g,
			 const struct thps_thp_range *r, char *why, size_t size);
/* After advice: is the folio at head PFN pfn of pages pages still whole? Returns 1 (the kernel
 * left it: ret_shared tells whether more than one mapping holds it), 0 (split or freed), or
 * -errno. */
int thps_folio_still_whole(const struct thps_ctx *ctx, uint64_t pfn, uint32_t pages,
			   bool *ret_shared);
/* Whether the range of a folio that was split is one large folio of its size again under
 * another head PFN: khugepaged rebuilt it (a collapse copies into a new huge page). Measured
 * against the split range itself, so a rebuild faster than any rescan is still seen. Returns
 * 1, 0 (still split, or the process is gone) or -errno. */
int thps_range_rebuilt(const struct thps_ctx *ctx, const struct thps_geometry *g,
		       const struct thps_thp_range *r);
