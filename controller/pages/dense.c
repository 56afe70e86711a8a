/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The dense-range finder (dense.h). PAGEMAP_SCAN returns runs of pages that are present, not
 * the zero page and not PMD-mapped; the THP-aligned windows inside a run are the candidates,
 * and one pagemap read of each confirms it (exclusive: a page shared with a fork would be
 * copied by a collapse). The fallback reads every window of every VMA, so it is bounded. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "dense.h"
#include "kpageflags.h"
#include "macro.h"
#include "maps.h"
#include "pagemap.h"

#define N_REGIONS 512
/* kpageflags: set on anonymous pages backed by swap; MADV_FREE clears it (lazily freed) */
#define KPF_SWAPBACKED 14

int thps_dense_init(struct thps_dense_finder *f, const struct thps_geometry *g, bool use_scan)
{
	memset(f, 0, sizeof(*f));
	f->geom = *g;
	f->scan_state = use_scan;
	f->pm_fd = f->kpf_fd = -1;
	f->entries = calloc(g->subpages, sizeof(uint64_t));
	f->again = calloc(g->subpages, sizeof(uint64_t));
	f->flags = calloc(g->subpages, sizeof(uint64_t));
	f->regions = calloc(N_REGIONS, sizeof(struct page_region));
	if (!f->entries || !f->again || !f->flags || !f->regions) {
		thps_dense_done(f);
		return -ENOMEM;
	}
	f->n_regions = N_REGIONS;
	return 0;
}

void thps_dense_done(struct thps_dense_finder *f)
{
	free(f->entries);
	free(f->again);
	free(f->flags);
	free(f->regions);
	f->entries = f->again = f->flags = NULL;
	f->regions = NULL;
	if (f->pm_fd >= 0)
		close(f->pm_fd);
	if (f->kpf_fd >= 0)
		close(f->kpf_fd);
	f->pm_fd = f->kpf_fd = -1;
}

const char *thps_dense_method(const struct thps_dense_finder *f)
{
	return f->scan_state ? "PAGEMAP_SCAN" : "pagemap";
}

bool thps_dense_window(const uint64_t *e, size_t n)
{
	const uint64_t want = THPS_PM_PRESENT | THPS_PM_EXCLUSIVE;
	const uint64_t mask = want | THPS_PM_SWAPPED | THPS_PM_FILE;

	if (n == 0)
		return false;
	for (size_t j = 0; j < n; j++)
		if ((e[j] & mask) != want || thps_pm_pfn(e[j]) == 0)
			return false;
	return !thps_pm_entries_whole_thp(e, n);
}

uint64_t thps_dense_first_window(const struct thps_geometry *g, uint64_t start, uint64_t end)
{
	uint64_t a = (start + g->thp_size - 1) & ~(g->thp_size - 1);

	if (a < start || a > end || end - a < g->thp_size)
		return end;
	return a;
}

/* Reads the pagemap entries of the window at a into e. Returns 0, -ESRCH when the mm the fd
 * pins is gone (a short read), or -errno. */
static int read_window(int fd, struct thps_dense_finder *f, uint64_t a, uint64_t *e)
{
	const struct thps_geometry *g = &f->geom;
	size_t len = g->subpages * sizeof(uint64_t);
	ssize_t got = pread(fd, e, len, (off_t)(a / g->page_size * sizeof(uint64_t)));

	if (got < 0)
		return negative_errno();
	if ((size_t)got != len)
		return -ESRCH;
	f->pagemap_bytes += len;
	return 0;
}

/* Whether every page of a window whose entries are e is swap-backed (not lazily freed): one
 * kpageflags pread per run of contiguous PFNs. 1 yes (or kpageflags unreadable: the caller
 * looks at smaps), 0 no or not known. */
static int swap_backed(struct thps_dense_finder *f, const uint64_t *e)
{
	size_t n = f->geom.subpages;

	if (f->kpf_fd < 0)
		return 1;
	for (size_t i = 0; i < n;) {
		uint64_t pfn = thps_pm_pfn(e[i]);
		size_t len = 1;

		while (i + len < n && thps_pm_pfn(e[i + len]) == pfn + len)
			len++;
		/* a read error cannot confirm the pages: not dense */
		if (pread(f->kpf_fd, f->flags, len * sizeof(uint64_t),
			  (off_t)(pfn * sizeof(uint64_t))) != (ssize_t)(len * sizeof(uint64_t)))
			return 0;
		/* a tail page is judged by its head: before 6.10 kpageflags shows a tail's own
		 * page flags, where SWAPBACKED (a folio flag) is never set; a large folio's head
		 * is in the same aligned window unless the folio was mremap()ed unaligned */
		for (size_t j = 0; j < len; j++)
			if (!(f->flags[j] & (UINT64_C(1) << KPF_SWAPBACKED)) &&
			    !(f->flags[j] & THPS_KPF(COMPOUND_TAIL)))
				return 0;
		i += len;
	}
	return 1;
}

/* 1 when the entries in e make a dense window whose pages are not lazily freed. */
static int dense_now(struct thps_dense_finder *f, const uint64_t *e)
{
	if (!thps_dense_window(e, f->geom.subpages))
		return 0;
	if (!swap_backed(f, e)) {
		f->lazy_free++;
		return 0;
	}
	return 1;
}

/* Reads the window at a and hands it on if dense. Returns 0, 1 (stop: fn said so, or the
 * window bound: next_addr says where to resume), or -errno. */
static int confirm(int fd, struct thps_dense_finder *f, uint64_t a, thps_dense_fn fn, void *ud)
{
	int r;

	if (f->max_windows && f->windows >= f->max_windows) {
		f->next_addr = a;
		return 1;
	}
	f->windows++;
	r = read_window(fd, f, a, f->entries);
	if (r < 0)
		return r;
	if (!dense_now(f, f->entries))
		return 0;
	f->dense++;
	return fn(ud, a);
}

int thps_dense_recheck(struct thps_dense_finder *f, uint64_t addr)
{
	size_t len = f->geom.subpages * sizeof(uint64_t);
	int r;

	if (f->pm_fd < 0)
		return -EBADF;
	r = read_window(f->pm_fd, f, addr, f->entries);
	if (r < 0)
		return r;
	if (!dense_now(f, f->entries))
		return 0;
	/* the kpageflags reads take up to one pread per page: read the entries once more, so
	 * what the caller acts on is one pread old, not a window's worth of reads */
	r = read_window(f->pm_fd, f, addr, f->again);
	if (r < 0)
		return r;
	return memcmp(f->entries, f->again, len) == 0;
}

int thps_dense_mm_alive(struct thps_dense_finder *f)
{
	uint64_t e;
	ssize_t got;

	if (f->pm_fd < 0)
		return -EBADF;
	got = pread(f->pm_fd, &e, sizeof(e), 0);
	if (got < 0)
		return errno == ESRCH ? -ESRCH : negative_errno();
	return got == sizeof(e) ? 0 : -ESRCH;
}

/* The candidate windows of one run [s, e) of qualifying pages. */
static int flush_run(int fd, struct thps_dense_finder *f, uint64_t s, uint64_t e, thps_dense_fn fn,
		     void *ud)
{
	for (uint64_t a = thps_dense_first_window(&f->geom, s, e); a < e; a += f->geom.thp_size) {
		int r;

		if (e - a < f->geom.thp_size)
			break;
		r = confirm(fd, f, a, fn, ud);
		if (r != 0)
			return r;
	}
	return 0;
}

/* Returns 0, 1 (stop), -EOPNOTSUPP when the kernel lacks PAGEMAP_SCAN, or -errno. */
static int walk_vma_scan(int fd, struct thps_dense_finder *f, uint64_t start, uint64_t end,
			 thps_dense_fn fn, void *ud)
{
	struct page_region *vec = f->regions;
	uint64_t run_s = 0, run_e = 0;
	int r;

	if (end - start < f->geom.thp_size)
		return 0;
	while (start < end) {
		struct pm_scan_arg arg = {
		    .size = sizeof(arg),
		    .start = start,
		    .end = end,
		    .vec = (uintptr_t)vec,
		    .vec_len = f->n_regions,
		    /* present, and neither the zero page nor PMD-mapped (a THP already) */
		    .category_mask = PAGE_IS_PRESENT | PAGE_IS_PFNZERO | PAGE_IS_HUGE,
		    .category_inverted = PAGE_IS_PFNZERO | PAGE_IS_HUGE,
		    .return_mask = PAGE_IS_PRESENT,
		};
		int n = ioctl(fd, PAGEMAP_SCAN, &arg);

		if (n < 0) {
			if (errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP)
				return -EOPNOTSUPP;
			return negative_errno();
		}
		f->ioctls++;
		for (int i = 0; i < n; i++) {
			if (vec[i].start == run_e) {
				run_e = vec[i].end;
				continue;
			}
			r = flush_run(fd, f, run_s, run_e, fn, ud);
			if (r != 0)
				return r;
			run_s = vec[i].start;
			run_e = vec[i].end;
		}
		if (arg.walk_end <= start)
			break; /* no progress: should not happen */
		f->looked_bytes += arg.walk_end - start;
		start = arg.walk_end;
	}
	return flush_run(fd, f, run_s, run_e, fn, ud);
}

/* Returns 0, 1 (stop: fn said so or the budget ran out), or -errno. */
static int walk_vma_pagemap(int fd, struct thps_dense_finder *f, uint64_t start, uint64_t end,
			    thps_dense_fn fn, void *ud)
{
	for (uint64_t a = thps_dense_first_window(&f->geom, start, end); a < end;
	     a += f->geom.thp_size) {
		int r;

		if (end - a < f->geom.thp_size)
			break;
		if (f->budget_bytes && f->looked_bytes + f->geom.thp_size > f->budget_bytes) {
			f->budget_hit = true;
			f->next_addr = a;
			return 1;
		}
		f->looked_bytes += f->geom.thp_size;
		r = confirm(fd, f, a, fn, ud);
		if (r != 0)
			return r;
	}
	return 0;
}

static int gone(int r)
{
	return r == -ENOENT || r == -ESRCH ? -ESRCH : r;
}

int thps_dense_walk(struct thps_dense_finder *f, const struct thps_ctx *ctx, pid_t pid,
		    thps_dense_fn fn, void *userdata)
{
	char path[PATH_MAX];
	_cleanup_fclose_ FILE *maps = NULL;
	_cleanup_close_ int fd = -1;
	struct thps_vma vma;
	int r;

	f->looked_bytes = f->pagemap_bytes = f->ioctls = f->dense = f->lazy_free = 0;
	f->lines = f->vmas = f->windows = f->next_addr = 0;
	f->budget_hit = false;
	if (f->pm_fd >= 0)
		close(f->pm_fd);
	f->pm_fd = -1;
	if (f->kpf_fd < 0 && !f->lazy_free_blind) {
		r = thps_path(path, sizeof(path), ctx->proc_root, "kpageflags");
		if (r < 0)
			return r;
		f->kpf_fd = open(path, O_RDONLY | O_CLOEXEC);
		f->lazy_free_blind = f->kpf_fd < 0;
	}
	r = thps_path(path, sizeof(path), ctx->proc_root, "%d/pagemap", (int)pid);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = negative_errno();
		if (r == -ESRCH &&
		    thps_path(path, sizeof(path), ctx->proc_root, "%d/stat", (int)pid) == 0 &&
		    access(path, F_OK) == 0)
			return -ENODATA; /* a kernel thread or a zombie */
		return gone(r);
	}
	r = thps_path(path, sizeof(path), ctx->proc_root, "%d/maps", (int)pid);
	if (r < 0)
		return r;
	maps = fopen(path, "re");
	if (!maps)
		return gone(negative_errno());

	while ((r = thps_maps_next_counted(maps, &vma, &f->lines)) > 0) {
		uint64_t start = vma.start;

		if (vma.start % f->geom.page_size || vma.end % f->geom.page_size)
			return -EINVAL;
		if (vma.end <= f->resume_addr)
			continue;
		/* a window address, or a VMA's start: page-aligned either way */
		start = MAX(start, f->resume_addr & ~(f->geom.page_size - 1));
		if (f->max_vmas && f->vmas >= f->max_vmas) {
			f->next_addr = start;
			r = 1;
			break;
		}
		f->vmas++;
		r = -EOPNOTSUPP;
		if (f->scan_state) {
			r = walk_vma_scan(fd, f, start, vma.end, fn, userdata);
			if (r == -EOPNOTSUPP)
				f->scan_state = 0;
		}
		if (r == -EOPNOTSUPP)
			r = walk_vma_pagemap(fd, f, start, vma.end, fn, userdata);
		if (r > 0)
			break;
		if (r < 0)
			return gone(r);
	}
	if (r < 0)
		return gone(r);
	f->pm_fd = TAKE_FD(fd);
	return 0;
}
