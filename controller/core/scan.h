/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The result of one pass over the machine: per-cgroup figures from every source.
 * Sources fill it (plugins/), the report, the engine and the metrics read it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "thp.h"

/* Per folio size below the PMD size (mTHP, Linux 6.8+), indexed by order in
 * thps_cgroup_stats.mthp: anonymous folios fully mapped by PTEs in one process, and the
 * folios of that size mapped only in part. */
struct thps_size_stats {
	struct thps_hist hist;
	uint64_t partial_folios;
	uint64_t partial_unmapped_bytes;
};

/* Per memory cgroup. ino is what /proc/kpagecgroup reports for pages charged to it. */
struct thps_cgroup_stats {
	uint64_t ino;
	char *path; /* relative to the cgroup mount, "/" for the root; malloc'd */

	/* scanner: PMD-size anonymous THPs (PMD-mapped, or fully mapped by PTEs) */
	struct thps_hist hist;
	/* scanner: smaller anonymous folios (mTHP), by order; [0] and orders >= the PMD's unused.
	 * Use thps_cgroup_size_hist() to walk every size including the PMD one. */
	struct thps_size_stats mthp[THPS_MAX_ORDER];
	uint64_t lowutil_thps; /* folios of every size in buckets <= lowutil_max_bucket */
	uint64_t waste_bytes;  /* zero subpages of those folios × page size */

	/* scanner: large folios (every size) mapped only partly by PTEs (allocators'
	 * MADV_DONTNEED); the PMD size's share is partial_thps - sum of mthp[].partial_folios */
	uint64_t partial_thps;
	uint64_t partial_unmapped_bytes;

	/* promote's finder (thpshrink report): dense memory still in small pages, the promotion
	 * opportunity; have_dense says if looked at */
	bool have_dense;
	uint64_t dense_small_bytes;

	/* vmstat source: memory.current and memory.stat anon_thp; have_memstat says if read */
	bool have_memstat;
	uint64_t memory_current;
	uint64_t anon_thp_bytes;
};

/* Machine-wide kernel counters from /proc/vmstat (UINT64_MAX = counter absent). */
struct thps_vmstat {
	uint64_t thp_split_page;
	uint64_t thp_split_page_failed;
	uint64_t thp_deferred_split_page;
	uint64_t thp_underused_split_page;
	uint64_t thp_split_pmd;
	uint64_t thp_collapse_alloc;
	uint64_t thp_split_free;  /* RFC patch 003 */
	uint64_t thp_split_unmap; /* RFC patch 003 */
};

/* The counters of struct thps_vmstat by their /proc/vmstat names, in one table that the
 * parser, the report and the metrics share. */
struct thps_vmstat_field {
	const char *name;
	size_t offset;
};
extern const struct thps_vmstat_field thps_vmstat_fields[];
extern const size_t thps_n_vmstat_fields;
static inline uint64_t thps_vmstat_value(const struct thps_vmstat *v, size_t i)
{
	return *(const uint64_t *)((const char *)v + thps_vmstat_fields[i].offset);
}

/* PTE-mapped large folios one pass tracks at most (its table's bound); the mapped bytes of the
 * rest are the summary's untracked_bytes */
#define THPS_SCAN_MAX_PTE_FOLIOS (UINT32_C(1) << 20)

struct thps_scan_summary {
	uint64_t procs_scanned;
	uint64_t procs_skipped;	   /* exited, changed or unreadable mid-scan: never fatal */
	uint64_t thps_scanned;	   /* distinct THPs counted (read, or carried from the memo) */
	uint64_t folios_read;	   /* ... whose contents were read whole */
	uint64_t folios_refreshed; /* ... read in the memo's refresh rotation (until proven above
				      the cut) */
	uint64_t folios_memo;	   /* ... whose count was carried from the memo without a read */
	uint64_t folios_trusted;   /* ... of them, found by their PAGEMAP_SCAN run alone (no
				      head-PFN read: memo.h) */
	uint64_t read_cpu_ns;	   /* CPU spent reading contents (whole reads and refreshes) */
	uint64_t refresh_cpu_ns;   /* ... of it, by the refresh rotation */
	uint64_t thps_shared;	   /* further mappings of an already counted THP (same PFN) */
	uint64_t bytes_read;
	uint64_t untracked_bytes; /* mapped pages of PTE-mapped large folios left uncounted:
				     the pass's table of such folios was full (its bound) */
	uint64_t wall_ns;
	uint64_t cpu_ns;
	uint64_t throttled_ns; /* time slept to stay within max_thps_per_sec */
	const char *method;    /* "PAGEMAP_SCAN" or "pagemap" */
};

/* A low-utilization THP the scanner saw; the split actuator re-checks it before acting. */
struct thps_thp_range {
	pid_t pid;
	uint64_t pid_starttime; /* /proc/PID/stat field 22, against pid reuse */
	uint64_t start;		/* virtual address, THP aligned */
	uint64_t pfn;		/* head PFN */
	uint64_t ino;		/* memcg */
	uint32_t utilized;
	uint32_t pages; /* folio size in pages; 0 = the PMD size (geometry subpages) */
	/* A partially mapped folio (record_partial): mapped > 0 pages of it are mapped (by any
	 * process), and pid maps page advise_page of it at start + advise_page × page size, where
	 * one page of advice splits the folio. 0 for a whole folio. */
	uint32_t mapped;
	uint32_t advise_page;
};
/* A range's folio size in pages. */
static inline uint32_t thps_range_pages(const struct thps_thp_range *r,
					const struct thps_geometry *g)
{
	return r->pages ? r->pages : g->subpages;
}

struct thps_memo; /* controller/pages/memo.h */

struct thps_scan_opts {
	pid_t pid;		     /* 0 = every process */
	const char *cgroup;	     /* NULL = every cgroup; else a path relative to the mount */
	uint64_t max_thps_per_sec;   /* 0 = unlimited */
	unsigned lowutil_max_bucket; /* low-util cut, default 0 (the RFC's bucket 0) */
	bool record_ranges;	     /* keep thps_thp_range for low-util THPs */
	bool record_partial;	     /* ... and for partially mapped folios (range.mapped > 0) */
	unsigned record_max_bucket;  /* ... also up to this bucket (a policy's wider cut) */
	/* The daemon's memo of what earlier passes read (memo.h); NULL: read every folio, exact
	 * (the CLI). Counts at or below memo_exact_max_per512 (of 512 subpages, scaled to each
	 * folio's size) are re-read every pass; memo_refresh_folios others get their turn, and
	 * memo_verify_folios carried ones have their head PFN read again (0: none, so a THP
	 * replaced at the same address stays carried while the memo holds it). */
	struct thps_memo *memo;
	unsigned memo_exact_max_per512;
	uint64_t memo_refresh_folios;
	uint64_t memo_verify_folios;
};

struct thps_scan {
	struct thps_geometry geom;
	unsigned lowutil_max_bucket; /* the cut of the last thps_scan_finish() */
	struct thps_cgroup_stats *cgroups;
	size_t n_cgroups;
	size_t cap_cgroups;
	struct thps_cgroup_stats total; /* path "(total)", ino 0 */
	struct thps_scan_summary summary;

	struct thps_thp_range *ranges;
	size_t n_ranges;
	size_t cap_ranges;

	/* debugfs source (RFC thp_utilization): machine-wide */
	bool have_kernel_hist;
	struct thps_hist kernel_hist;
	double kernel_last_scan_time;
	double kernel_last_scan_duration;

	/* vmstat source */
	bool have_vmstat;
	struct thps_vmstat vmstat;
};

void thps_scan_init(struct thps_scan *s, const struct thps_geometry *g);
/* The histogram of folios of 2^order pages in c (the PMD size: c->hist), or NULL for an order
 * the scanner does not count (0, above the PMD's). */
struct thps_hist *thps_cgroup_size_hist(struct thps_cgroup_stats *c, const struct thps_geometry *g,
					unsigned order);
/* Folios of every size / of 2^order pages in c. */
uint64_t thps_cgroup_folios(const struct thps_cgroup_stats *c, const struct thps_geometry *g);
/* One folio size's figures, as the report, the JSON and the metrics show them. */
struct thps_size_figures {
	unsigned order;
	uint32_t subpages;
	uint64_t size_bytes;
	const struct thps_hist *hist;
	uint64_t folios, zero_subpages, lowutil_folios, waste_bytes;
	uint64_t partial_folios, partial_unmapped_bytes;
};
/* The sizes present in c (folios or partial folios), smallest first, at most THPS_MAX_ORDER.
 * With always_pmd, the PMD size is there even when empty (for tables that always show it).
 * Returns how many were filled. */
size_t thps_cgroup_sizes(const struct thps_cgroup_stats *c, const struct thps_geometry *g,
			 unsigned cut, bool always_pmd, struct thps_size_figures *ret);
/* Low-utilization folios and their zero subpages (at cut) over the sizes in orders_mask (bit o
 * = folios of 2^o pages; 0 = every size): what a policy limited to some sizes acts on. */
void thps_cgroup_lowutil(const struct thps_cgroup_stats *c, const struct thps_geometry *g,
			 unsigned cut, uint32_t orders_mask, uint64_t *ret_folios,
			 uint64_t *ret_zero);

/* "64 KiB", "2 MiB": a folio size. */
void thps_format_folio_size(char *buf, size_t size, uint64_t bytes);

/* Partial folios and unmapped bytes of one size (the PMD size's derived from the totals). */
void thps_cgroup_size_partial(const struct thps_cgroup_stats *c, const struct thps_geometry *g,
			      unsigned order, uint64_t *ret_folios, uint64_t *ret_unmapped);
void thps_scan_free(struct thps_scan *s);
/* Finds or adds the entry for ino. path may be NULL (filled later). Returns it or NULL (ENOMEM). */
struct thps_cgroup_stats *thps_scan_cgroup(struct thps_scan *s, uint64_t ino, const char *path);
struct thps_cgroup_stats *thps_scan_find_path(struct thps_scan *s, const char *path);
/* Appends a range. Returns 0 or -ENOMEM. */
int thps_scan_add_range(struct thps_scan *s, const struct thps_thp_range *r);
/* Recomputes derived fields (lowutil_thps, waste_bytes, total) from the histograms. */
void thps_scan_finish(struct thps_scan *s, unsigned lowutil_max_bucket);
/* Sorts cgroups by waste (partial + low-util) descending, then path. */
void thps_scan_sort(struct thps_scan *s);
