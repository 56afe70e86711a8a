/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/pagemap entries, the PAGEMAP_SCAN ioctl (Linux 6.7), and the walk that finds a
 * process's THPs. Only ranges that pagemap says are present are ever handed on: reading
 * an unpopulated range of the target would map zero pages and page tables in it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/fs.h>
#include <sys/types.h>

#include "context.h"
#include "thp.h"

/* Linux 6.7 uapi (Debian 12's headers are 6.1). */
#ifndef PAGEMAP_SCAN
struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};
struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};
#define PAGEMAP_SCAN	_IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_FILE	(1 << 2)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_PFNZERO (1 << 5)
#define PAGE_IS_HUGE	(1 << 6)
#endif

#define THPS_PM_PRESENT	  (UINT64_C(1) << 63)
#define THPS_PM_SWAPPED	  (UINT64_C(1) << 62)
#define THPS_PM_FILE	  (UINT64_C(1) << 61) /* file page or shared anonymous */
#define THPS_PM_UFFD_WP	  (UINT64_C(1) << 57)
#define THPS_PM_EXCLUSIVE (UINT64_C(1) << 56)
#define THPS_PM_PFN_MASK  ((UINT64_C(1) << 55) - 1)

static inline bool thps_pm_present(uint64_t e)
{
	return (e & THPS_PM_PRESENT) != 0;
}
/* An anonymous private page in RAM (what we may read). */
static inline bool thps_pm_anon_present(uint64_t e)
{
	return (e & (THPS_PM_PRESENT | THPS_PM_SWAPPED | THPS_PM_FILE)) == THPS_PM_PRESENT;
}
/* 0 without CAP_SYS_ADMIN: the kernel hides PFNs. */
static inline uint64_t thps_pm_pfn(uint64_t e)
{
	return e & THPS_PM_PFN_MASK;
}

/* What the walk found. Callbacks return 0 to go on or -errno to stop the walk. */
struct thps_pm_visitor {
	/* A THP-aligned range mapped whole by one huge page (PMD): head PFN head_pfn. */
	int (*thp)(void *userdata, uint64_t addr, uint64_t head_pfn);
	/* A present anonymous page outside such ranges (PTE-mapped), for partly mapped THPs.
	 * NULL: skip them (saves pagemap reads). */
	int (*page)(void *userdata, uint64_t addr, uint64_t pfn);
	/* PAGEMAP_SCAN only: a THP-aligned range inside a PMD-mapped run, before its head PFN is
	 * read. Returns 1 when the caller knows it without the PFN (thp is then not called), 0
	 * to have it read and thp called, or -errno. NULL: always read. */
	int (*thp_known)(void *userdata, uint64_t addr);
};

/* The PAGEMAP_SCAN call: returns the regions filled or -1 with errno (ioctl's contract).
 * Tests replace it: a fake /proc's pagemap is a plain file, where the ioctl fails. */
typedef int (*thps_pm_scan_fn)(int fd, struct pm_scan_arg *arg);

struct thps_pm_walker {
	struct thps_geometry geom;
	int scan_state;	   /* 1 try PAGEMAP_SCAN, 0 pagemap only */
	uint64_t *entries; /* geom.subpages entries */
	void *regions;	   /* PAGEMAP_SCAN output vector */
	size_t n_regions;
	uint64_t max_vma_fallback; /* pagemap fallback skips larger VMAs (sparse reservations) */
	thps_pm_scan_fn scan;	   /* NULL: the ioctl */
};

/* use_scan: try PAGEMAP_SCAN first. Returns 0 or -ENOMEM. */
int thps_pm_walker_init(struct thps_pm_walker *w, const struct thps_geometry *g, bool use_scan);
void thps_pm_walker_done(struct thps_pm_walker *w);
/* "PAGEMAP_SCAN" or "pagemap": what the walker used (falls back for good on ENOTTY/EINVAL). */
const char *thps_pm_walker_method(const struct thps_pm_walker *w);

/* Walks the private anonymous VMAs of pid under ctx->proc_root.
 * Returns 0, -ESRCH if the process is gone, -ENODATA if it has no address space (a kernel
 * thread or a zombie), -EACCES/-EPERM, or a callback's error. */
int thps_pm_walk(struct thps_pm_walker *w, const struct thps_ctx *ctx, pid_t pid,
		 const struct thps_pm_visitor *v, void *userdata);

/* True if n entries starting at a THP-aligned address map one whole THP: all present
 * anonymous, PFNs contiguous from a THP-aligned head. */
bool thps_pm_entries_whole_thp(const uint64_t *e, size_t n);
