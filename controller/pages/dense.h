/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Dense ranges: THP-aligned, THP-sized ranges of a private anonymous VMA whose every page is
 * present, anonymous, mapped by this process alone (not the zero page, not shared with a fork)
 * not swapped and not lazily freed (MADV_FREE: kpageflags SWAPBACKED clear), and which are not
 * one THP already. Collapsing such a range into a THP (MADV_COLLAPSE) costs no memory: no hole
 * is filled with zeros, no shared page copied, no page the kernel could drop for free pinned.
 * On 6.7+ the PAGEMAP_SCAN ioctl hands over the runs of present, non-zero-page, non-huge pages
 * (skipping empty page tables); each aligned window of a run is then confirmed by one pagemap
 * read. Elsewhere pagemap is read window by window, within a budget of address space. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "context.h"
#include "thp.h"

struct thps_dense_finder {
	struct thps_geometry geom;
	int scan_state;	   /* 1 try PAGEMAP_SCAN, 0 pagemap only */
	uint64_t *entries; /* geom.subpages entries */
	uint64_t *again;   /* geom.subpages entries: the re-read of a re-check */
	uint64_t *flags;   /* geom.subpages kpageflags words */
	/* the last walk's pagemap, kept open: it pins the mm the walk examined, so a re-check
	 * through it reads nothing once the process exec()s or exits */
	int pm_fd;
	int kpf_fd;	      /* kpageflags, -1 when it cannot be read */
	bool lazy_free_blind; /* kpageflags unreadable: callers must look at smaps LazyFree */
	void *regions;	      /* PAGEMAP_SCAN output vector */
	size_t n_regions;
	/* pagemap fallback: address space looked at per walk (0: no bound); PAGEMAP_SCAN
	 * looks only where pages are present and is not bounded by it */
	uint64_t budget_bytes;
	/* Where a walk starts, and its bounds (0: none). A walk a bound cuts says in next_addr
	 * where the next one resumes, so that a process with more VMAs or candidates than one
	 * pass may look at is covered over several passes, in address order. The maps lines
	 * before resume_addr are read and skipped (lines counts them). */
	uint64_t resume_addr;
	uint64_t max_vmas;    /* private anonymous VMAs looked at, from resume_addr */
	uint64_t max_windows; /* windows confirmed (one pagemap read each, and kpageflags) */
	/* what the last walk cost and found */
	uint64_t looked_bytes;	/* address space covered */
	uint64_t pagemap_bytes; /* pagemap read */
	uint64_t ioctls;	/* PAGEMAP_SCAN calls */
	uint64_t dense;		/* dense ranges handed on */
	uint64_t lazy_free;	/* windows left out: a page lazily freed (MADV_FREE) */
	bool budget_hit;	/* the fallback stopped at budget_bytes */
	uint64_t lines;		/* maps lines read, those skipped before resume_addr included */
	uint64_t vmas;		/* private anonymous VMAs looked at */
	uint64_t windows;	/* windows confirmed */
	/* 0: the walk reached the end of the address space (or fn stopped it); else a bound
	 * (max_vmas, max_windows, budget_bytes) cut it and the next walk resumes here */
	uint64_t next_addr;
};

/* A dense range at addr (geom.thp_size long). Returns 0 to go on, 1 to stop the walk (enough),
 * or -errno to stop it with that error. */
typedef int (*thps_dense_fn)(void *userdata, uint64_t addr);

/* use_scan: try PAGEMAP_SCAN first. Returns 0 or -ENOMEM. thps_dense_done() closes what the
 * walks opened. */
int thps_dense_init(struct thps_dense_finder *f, const struct thps_geometry *g, bool use_scan);
void thps_dense_done(struct thps_dense_finder *f);
/* "PAGEMAP_SCAN" or "pagemap": what the finder used (falls back for good on ENOTTY/EINVAL). */
const char *thps_dense_method(const struct thps_dense_finder *f);

/* Walks the private anonymous VMAs of pid under ctx->proc_root from f->resume_addr, calling fn
 * for each dense range in address order, within f's bounds. Resets the counters first. Returns
 * 0 (also when fn stopped it or a bound cut it: see next_addr), -ESRCH when the process is gone,
 * -ENODATA when it has no address space, -EACCES, or fn's error. */
int thps_dense_walk(struct thps_dense_finder *f, const struct thps_ctx *ctx, pid_t pid,
		    thps_dense_fn fn, void *userdata);

/* Whether the range at addr is still dense in the address space the last walk examined: one
 * pagemap read, the kpageflags of its pages, and a second pagemap read that must match the
 * first (so the answer is as fresh as one pread). Returns 1 dense, 0 not, -ESRCH when that
 * address space is gone (the process exec()d or exited: the kept fd reads nothing), -errno. */
int thps_dense_recheck(struct thps_dense_finder *f, uint64_t addr);

/* Whether the address space the last walk examined is still the process's: 0, or -ESRCH. */
int thps_dense_mm_alive(struct thps_dense_finder *f);

/* Pure: whether n pagemap entries (n = subpages, from a THP-aligned address) make a dense
 * range: each present, exclusive, anonymous, not swapped, with a PFN; and not one whole THP.
 * Without PFNs (no CAP_SYS_ADMIN) it cannot tell a THP: it says no. */
bool thps_dense_window(const uint64_t *e, size_t n);

/* Pure: the first THP-aligned address at or above start from which a whole THP fits below end,
 * or end when none fits. */
uint64_t thps_dense_first_window(const struct thps_geometry *g, uint64_t start, uint64_t end);
