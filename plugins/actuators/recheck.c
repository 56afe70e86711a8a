/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The split actuator's look at a folio just before and just after acting on it: the process is
 * the one scanned, the folio is still the one scanned (same head PFN, same size) and still
 * wasteful; afterwards, whether the kernel really split it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actuator.h"
#include "fileio.h"
#include "macro.h"
#include "kpageflags.h"
#include "pagemap.h"
#include "proc.h"
#include "reader.h"

static int open_proc(const struct thps_ctx *ctx, const char *rel, char *path, size_t size)
{
	int r = thps_path(path, size, ctx->proc_root, "%s", rel);

	if (r < 0)
		return r;
	r = open(path, O_RDONLY | O_CLOEXEC);
	return r < 0 ? negative_errno() : r;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	if (n < 0)
		return negative_errno();
	return (size_t)n == len ? 0 : -EIO;
}

/* The pagemap entries of r's nr pages, into *ret (malloc'd). Returns 1, 0 when the process or
 * the range is gone (why says so), or -errno. */
static int range_entries(const struct thps_ctx *ctx, const struct thps_thp_range *r, uint32_t nr,
			 uint64_t page_size, uint64_t **ret, char *why, size_t size)
{
	_cleanup_close_ int pm = -1;
	_cleanup_free_ uint64_t *e = NULL;
	char path[PATH_MAX], rel[64];
	int k;

	snprintf(rel, sizeof(rel), "%d/pagemap", (int)r->pid);
	pm = open_proc(ctx, rel, path, sizeof(path));
	if (pm == -ENOENT || pm == -ESRCH) {
		snprintf(why, size, "process %d exited", (int)r->pid);
		return 0;
	}
	if (pm < 0)
		return pm;
	e = calloc(nr, sizeof(*e));
	if (!e)
		return -ENOMEM;
	k = pread_full(pm, e, nr * sizeof(*e), r->start / page_size * sizeof(*e));
	if (k == -EIO || k == -ESRCH) {
		snprintf(why, size, "0x%llx of process %d is gone", (unsigned long long)r->start,
			 (int)r->pid);
		return 0;
	}
	if (k < 0)
		return k;
	*ret = TAKE_PTR(e);
	return 1;
}

/* The same process (pid and start time), the range still mapping the folio at r->pfn, and
 * that folio still a THP head followed by its tails (one read of its flags): a folio of the
 * same head PFN but another size, split to a smaller order meanwhile, is not this one.
 * Returns 1, 0 (why says why) or -errno. */
static int folio_unchanged(const struct thps_ctx *ctx, const struct thps_thp_range *r, uint32_t nr,
			   uint64_t page_size, char *why, size_t size)
{
	_cleanup_close_ int kf = -1;
	_cleanup_free_ uint64_t *e = NULL, *fl = NULL;
	char path[PATH_MAX];
	uint64_t st;
	int k;

	k = thps_proc_starttime(ctx, r->pid, &st);
	if (k == -ENOENT || k == -ESRCH) {
		snprintf(why, size, "process %d exited", (int)r->pid);
		return 0;
	}
	if (k < 0)
		return k;
	if (st != r->pid_starttime) {
		snprintf(why, size, "pid %d is another process now", (int)r->pid);
		return 0;
	}
	k = range_entries(ctx, r, nr, page_size, &e, why, size);
	if (k <= 0)
		return k;
	fl = calloc(nr, sizeof(*fl));
	if (!fl)
		return -ENOMEM;
	for (uint32_t i = 0; i < nr; i++)
		if (!thps_pm_present(e[i]) || thps_pm_pfn(e[i]) != r->pfn + i) {
			snprintf(why, size, "0x%llx is no longer the THP at PFN 0x%llx",
				 (unsigned long long)r->start, (unsigned long long)r->pfn);
			return 0;
		}
	kf = open_proc(ctx, "kpageflags", path, sizeof(path));
	if (kf < 0)
		return kf;
	k = pread_full(kf, fl, nr * sizeof(*fl), r->pfn * sizeof(*fl));
	if (k < 0)
		return k;
	if ((fl[0] & (THPS_KPF(THP) | THPS_KPF(COMPOUND_HEAD))) !=
	    (THPS_KPF(THP) | THPS_KPF(COMPOUND_HEAD))) {
		snprintf(why, size, "PFN 0x%llx is no longer a THP head",
			 (unsigned long long)r->pfn);
		return 0;
	}
	for (uint32_t i = 1; i < nr; i++)
		if (!(fl[i] & THPS_KPF(COMPOUND_TAIL)) || (fl[i] & THPS_KPF(COMPOUND_HEAD))) {
			snprintf(why, size, "PFN 0x%llx is no longer a folio of %u pages",
				 (unsigned long long)r->pfn, nr);
			return 0;
		}
	return 1;
}

int thps_thp_recheck_with(const struct thps_ctx *ctx, const struct thps_geometry *g,
			  const struct thps_thp_range *r, unsigned lowutil_max_bucket,
			  struct thps_reader *rd, uint32_t *ret_utilized, char *why, size_t size)
{
	uint32_t nr = thps_range_pages(r, g);
	uint64_t len = (uint64_t)nr * g->page_size, bytes;
	unsigned b, used = 0;
	int k;

	if (thps_folio_order(nr) <= 0 || nr > g->subpages) {
		snprintf(why, size, "a folio of %u pages is no THP size", nr);
		return 0;
	}
	if (r->start % len) {
		snprintf(why, size, "0x%llx is not aligned to its %llu KiB folio",
			 (unsigned long long)r->start, (unsigned long long)(len >> 10));
		return 0;
	}
	k = folio_unchanged(ctx, r, nr, g->page_size, why, size);
	if (k <= 0)
		return k;
	/* Recount with the scanner's reader and count (zero.h): the THP may have filled up since
	 * the scan, and it is split on the same count as the one that selected it. */
	k = thps_reader_count(rd, r->pid, r->start, len, &used, &bytes);
	if (k == -ESRCH || k == -EFAULT) {
		snprintf(why, size, "0x%llx of process %d is gone or changed",
			 (unsigned long long)r->start, (int)r->pid);
		return 0;
	}
	if (k < 0)
		return k;
	b = thps_bucket_n(nr, used);
	if (b > lowutil_max_bucket) {
		snprintf(why, size, "now %u of %u subpages used (bucket %u): well used, not split",
			 used, nr, b);
		return 0;
	}
	*ret_utilized = used;
	snprintf(why, size, "%u of %u subpages used", used, nr);
	return 1;
}

int thps_thp_recheck(const struct thps_ctx *ctx, const struct thps_geometry *g,
		     const struct thps_thp_range *r, unsigned lowutil_max_bucket,
		     uint32_t *ret_utilized, char *why, size_t size)
{
	struct thps_reader rd;
	int k = thps_reader_init(&rd, THPS_READER_CHUNK_DEFAULT, g->page_size);

	if (k < 0)
		return k;
	k = thps_thp_recheck_with(ctx, g, r, lowutil_max_bucket, &rd, ret_utilized, why, size);
	thps_reader_done(&rd);
	return k;
}

int thps_partial_recheck(const struct thps_ctx *ctx, const struct thps_geometry *g,
			 const struct thps_thp_range *r, char *why, size_t size)
{
	_cleanup_close_ int kf = -1;
	_cleanup_free_ uint64_t *e = NULL;
	char path[PATH_MAX];
	uint32_t nr = thps_range_pages(r, g), mapped = 0;
	uint64_t fl[2];
	int k;

	if (thps_folio_order(nr) <= 0 || nr > g->subpages || r->advise_page >= nr) {
		snprintf(why, size, "a folio of %u pages is no THP size", nr);
		return 0;
	}
	k = range_entries(ctx, r, nr, g->page_size, &e, why, size);
	if (k <= 0)
		return k;
	for (uint32_t i = 0; i < nr; i++)
		mapped += thps_pm_present(e[i]) && thps_pm_pfn(e[i]) == r->pfn + i;
	if (!thps_pm_present(e[r->advise_page]) ||
	    thps_pm_pfn(e[r->advise_page]) != r->pfn + r->advise_page) {
		snprintf(why, size, "0x%llx no longer maps the folio at PFN 0x%llx",
			 (unsigned long long)(r->start + (uint64_t)r->advise_page * g->page_size),
			 (unsigned long long)r->pfn);
		return 0;
	}
	if (mapped == nr) {
		snprintf(why, size, "the folio at PFN 0x%llx is wholly mapped again",
			 (unsigned long long)r->pfn);
		return 0;
	}
	kf = open_proc(ctx, "kpageflags", path, sizeof(path));
	if (kf < 0)
		return kf;
	k = pread_full(kf, fl, sizeof(fl), r->pfn * sizeof(fl[0]));
	if (k < 0)
		return k;
	if (!thps_kpf_is_anon_thp_head(fl[0]) || !(fl[1] & THPS_KPF(COMPOUND_TAIL))) {
		snprintf(why, size, "PFN 0x%llx is no longer a large anonymous folio",
			 (unsigned long long)r->pfn);
		return 0;
	}
	snprintf(why, size, "%u of %u pages mapped", mapped, nr);
	return 1;
}

int thps_folio_still_whole(const struct thps_ctx *ctx, uint64_t pfn, uint32_t pages,
			   bool *ret_shared)
{
	_cleanup_close_ int kf = -1, kc = -1;
	char path[PATH_MAX];
	uint64_t fl[2], count = 0;
	int k;

	kf = open_proc(ctx, "kpageflags", path, sizeof(path));
	if (kf < 0)
		return kf;
	k = pread_full(kf, fl, sizeof(fl), pfn * sizeof(fl[0]));
	if (k < 0)
		return k;
	if (!thps_kpf_is_anon_thp_head(fl[0]) || pages < 2 || !(fl[1] & THPS_KPF(COMPOUND_TAIL)))
		return 0;
	/* /proc/kpagecount of the head: how many mappings hold the folio's first page (a fork's
	 * COW-shared THP: more than one, and the kernel skips such folios) */
	kc = open_proc(ctx, "kpagecount", path, sizeof(path));
	if (kc >= 0 && pread_full(kc, &count, sizeof(count), pfn * sizeof(count)) == 0)
		*ret_shared = count > 1;
	else
		*ret_shared = false;
	return 1;
}

int thps_range_rebuilt(const struct thps_ctx *ctx, const struct thps_geometry *g,
		       const struct thps_thp_range *r)
{
	_cleanup_close_ int pm = -1;
	char path[PATH_MAX], rel[64];
	uint64_t e = 0;
	bool shared;
	int k;

	snprintf(rel, sizeof(rel), "%d/pagemap", (int)r->pid);
	pm = open_proc(ctx, rel, path, sizeof(path));
	if (pm == -ENOENT || pm == -ESRCH)
		return 0;
	if (pm < 0)
		return pm;
	k = pread_full(pm, &e, sizeof(e), r->start / g->page_size * sizeof(e));
	if (k < 0)
		return k == -EIO || k == -ESRCH ? 0 : k;
	if (!thps_pm_present(e) || thps_pm_pfn(e) == r->pfn)
		return 0;
	/* a folio of the range's size headed at the range's first page: built anew */
	k = thps_folio_still_whole(ctx, thps_pm_pfn(e), thps_range_pages(r, g), &shared);
	return k < 0 ? k : k;
}
