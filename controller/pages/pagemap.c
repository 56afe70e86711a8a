/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Two ways to the same answer. PAGEMAP_SCAN asks the kernel for the present ranges and
 * whether each is PMD-mapped, skipping empty page tables, so a huge sparse reservation
 * costs nothing. The fallback reads pagemap one THP-sized window at a time. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "macro.h"
#include "maps.h"
#include "pagemap.h"

#define N_REGIONS 512

int thps_pm_walker_init(struct thps_pm_walker *w, const struct thps_geometry *g, bool use_scan)
{
	memset(w, 0, sizeof(*w));
	w->geom = *g;
	w->scan_state = use_scan;
	w->entries = calloc(g->subpages, sizeof(uint64_t));
	w->regions = calloc(N_REGIONS, sizeof(struct page_region));
	if (!w->entries || !w->regions) {
		thps_pm_walker_done(w);
		return -ENOMEM;
	}
	w->n_regions = N_REGIONS;
	w->max_vma_fallback = UINT64_C(1) << 40;
	return 0;
}

void thps_pm_walker_done(struct thps_pm_walker *w)
{
	free(w->entries);
	free(w->regions);
	w->entries = NULL;
	w->regions = NULL;
}

const char *thps_pm_walker_method(const struct thps_pm_walker *w)
{
	return w->scan_state ? "PAGEMAP_SCAN" : "pagemap";
}

bool thps_pm_entries_whole_thp(const uint64_t *e, size_t n)
{
	uint64_t head;

	if (n == 0 || !thps_pm_anon_present(e[0]))
		return false;
	head = thps_pm_pfn(e[0]);
	if (head == 0 || head % n)
		return false;
	for (size_t j = 1; j < n; j++)
		if (!thps_pm_anon_present(e[j]) || thps_pm_pfn(e[j]) != head + j)
			return false;
	return true;
}

/* Reads n entries from addr. Returns 0, -ESRCH when the process is gone, or -errno. */
static int read_entries(int fd, const struct thps_geometry *g, uint64_t addr, uint64_t *e, size_t n)
{
	ssize_t got =
	    pread(fd, e, n * sizeof(uint64_t), (off_t)(addr / g->page_size * sizeof(uint64_t)));

	if (got < 0)
		return negative_errno();
	if ((size_t)got != n * sizeof(uint64_t))
		return -ESRCH; /* the mm went away under us */
	return 0;
}

static int visit_pages(int fd, struct thps_pm_walker *w, uint64_t start, uint64_t end,
		       const struct thps_pm_visitor *v, void *ud)
{
	const struct thps_geometry *g = &w->geom;

	while (start < end) {
		size_t n = MIN((end - start) / g->page_size, (uint64_t)g->subpages);
		int r = read_entries(fd, g, start, w->entries, n);

		if (r < 0)
			return r;
		for (size_t j = 0; j < n; j++)
			if (thps_pm_anon_present(w->entries[j]) && thps_pm_pfn(w->entries[j])) {
				r = v->page(ud, start + j * g->page_size,
					    thps_pm_pfn(w->entries[j]));
				if (r < 0)
					return r;
			}
		start += n * g->page_size;
	}
	return 0;
}

/* Returns 0, -EOPNOTSUPP when the kernel lacks PAGEMAP_SCAN, or -errno. */
static int walk_vma_scan(int fd, struct thps_pm_walker *w, uint64_t start, uint64_t end,
			 const struct thps_pm_visitor *v, void *ud)
{
	const struct thps_geometry *g = &w->geom;
	struct page_region *vec = w->regions;

	while (start < end) {
		struct pm_scan_arg arg = {
		    .size = sizeof(arg),
		    .start = start,
		    .end = end,
		    .vec = (uintptr_t)vec,
		    .vec_len = w->n_regions,
		    /* present only: asking about PAGE_IS_FILE costs the kernel a struct page
		     * look-up per PTE (3x the ioctl's time over dense memory), and the private
		     * anonymous VMAs walked here hold only anonymous pages and the zero page;
		     * the pagemap entries (PM_FILE) and kpageflags (ANON) still check each */
		    .category_mask = PAGE_IS_PRESENT,
		    .return_mask = PAGE_IS_HUGE | PAGE_IS_PRESENT,
		};
		int n = w->scan ? w->scan(fd, &arg) : ioctl(fd, PAGEMAP_SCAN, &arg);

		if (n < 0) {
			if (errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP)
				return -EOPNOTSUPP;
			return negative_errno();
		}
		for (int i = 0; i < n; i++) {
			if (vec[i].categories & PAGE_IS_HUGE) {
				uint64_t a = (vec[i].start + g->thp_size - 1) & ~(g->thp_size - 1);

				for (; a + g->thp_size <= vec[i].end; a += g->thp_size) {
					uint64_t e;
					int r = v->thp_known ? v->thp_known(ud, a) : 0;

					if (r < 0)
						return r;
					if (r > 0)
						continue;
					r = read_entries(fd, g, a, &e, 1);
					if (r < 0)
						return r;
					if (!thps_pm_anon_present(e) || !thps_pm_pfn(e))
						continue; /* changed meanwhile */
					r = v->thp(ud, a, thps_pm_pfn(e));
					if (r < 0)
						return r;
				}
			} else if (v->page) {
				int r = visit_pages(fd, w, vec[i].start, vec[i].end, v, ud);
				if (r < 0)
					return r;
			}
		}
		if (arg.walk_end <= start)
			break; /* no progress: should not happen */
		start = arg.walk_end;
	}
	return 0;
}

static int walk_vma_pagemap(int fd, struct thps_pm_walker *w, uint64_t start, uint64_t end,
			    const struct thps_pm_visitor *v, void *ud)
{
	const struct thps_geometry *g = &w->geom;

	if (end - start > w->max_vma_fallback)
		return 0;
	while (start < end) {
		uint64_t wend = MIN((start & ~(g->thp_size - 1)) + g->thp_size, end);
		size_t n = (wend - start) / g->page_size;
		int r = read_entries(fd, g, start, w->entries, n);

		if (r < 0)
			return r;
		if (n == g->subpages && thps_pm_entries_whole_thp(w->entries, n)) {
			r = v->thp(ud, start, thps_pm_pfn(w->entries[0]));
			if (r < 0)
				return r;
		} else if (v->page) {
			for (size_t j = 0; j < n; j++)
				if (thps_pm_anon_present(w->entries[j]) &&
				    thps_pm_pfn(w->entries[j])) {
					r = v->page(ud, start + j * g->page_size,
						    thps_pm_pfn(w->entries[j]));
					if (r < 0)
						return r;
				}
		}
		start = wend;
	}
	return 0;
}

static int gone(int r)
{
	/* /proc/PID vanishing shows up as ENOENT or ESRCH */
	return r == -ENOENT || r == -ESRCH ? -ESRCH : r;
}

int thps_pm_walk(struct thps_pm_walker *w, const struct thps_ctx *ctx, pid_t pid,
		 const struct thps_pm_visitor *v, void *userdata)
{
	char path[PATH_MAX];
	_cleanup_fclose_ FILE *maps = NULL;
	_cleanup_close_ int fd = -1;
	struct thps_vma vma;
	int r;

	r = thps_path(path, sizeof(path), ctx->proc_root, "%d/pagemap", (int)pid);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = negative_errno();
		/* a kernel thread or zombie has no mm: open fails with ESRCH while /proc/PID stays
		 */
		if (r == -ESRCH &&
		    thps_path(path, sizeof(path), ctx->proc_root, "%d/stat", (int)pid) == 0 &&
		    access(path, F_OK) == 0)
			return -ENODATA;
		return gone(r);
	}
	r = thps_path(path, sizeof(path), ctx->proc_root, "%d/maps", (int)pid);
	if (r < 0)
		return r;
	maps = fopen(path, "re");
	if (!maps)
		return gone(negative_errno());
	/* no mappings at all: a kernel thread on kernels that let its pagemap be opened */
	r = fgetc(maps);
	if (r == EOF)
		return ferror(maps) ? -EIO : -ENODATA;
	ungetc(r, maps);

	while ((r = thps_maps_next(maps, &vma)) > 0) {
		if (vma.start % w->geom.page_size || vma.end % w->geom.page_size)
			return -EINVAL;
		if (w->scan_state) {
			r = walk_vma_scan(fd, w, vma.start, vma.end, v, userdata);
			if (r == -EOPNOTSUPP) {
				w->scan_state = 0;
				r = walk_vma_pagemap(fd, w, vma.start, vma.end, v, userdata);
			}
		} else
			r = walk_vma_pagemap(fd, w, vma.start, vma.end, v, userdata);
		if (r < 0)
			return gone(r);
	}
	return gone(r);
}
