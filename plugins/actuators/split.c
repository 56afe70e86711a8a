/* SPDX-License-Identifier: GPL-2.0-or-later */
/* split: splits exactly the low-utilization THPs and mTHP folios (any size) the scanner found,
 * one by one, to order 0 through debugfs split_huge_pages ("PID,0xSTART,0xEND" of that one
 * folio). Each THP is looked at again just
 * before its split — same process, same head PFN, still at most the low-util cut — so a THP
 * that filled up since the scan is never split. Only useful where a split frees the zero
 * subpages (>= 6.12 or the RFC); elsewhere it refuses and says why. */
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
#include "scanner.h"

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

int thps_thp_recheck(const struct thps_ctx *ctx, const struct thps_geometry *g,
		     const struct thps_thp_range *r, unsigned lowutil_max_bucket,
		     uint32_t *ret_utilized, char *why, size_t size)
{
	_cleanup_close_ int pm = -1, kf = -1;
	_cleanup_free_ uint64_t *e = NULL, *fl = NULL;
	struct thps_reader rd;
	char path[PATH_MAX], rel[64];
	uint64_t st, bytes;
	uint32_t nr = thps_range_pages(r, g);
	uint64_t len = (uint64_t)nr * g->page_size;
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
	/* the scanner's own reader: the recorded start time came from it */
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
	k = pread_full(pm, e, nr * sizeof(*e), r->start / g->page_size * sizeof(*e));
	if (k < 0)
		return k;
	for (uint32_t i = 0; i < nr; i++)
		if (!thps_pm_present(e[i]) || thps_pm_pfn(e[i]) != r->pfn + i) {
			snprintf(why, size, "0x%llx is no longer the THP at PFN 0x%llx",
				 (unsigned long long)r->start, (unsigned long long)r->pfn);
			return 0;
		}
	/* One read of the folio's flags: the head must still be a THP head and the next PFNs its
	 * tails (a folio of the same head PFN but another size, e.g. split to a smaller order
	 * meanwhile, is not this one). */
	kf = open_proc(ctx, "kpageflags", path, sizeof(path));
	if (kf < 0)
		return kf;
	fl = calloc(nr, sizeof(*fl));
	if (!fl)
		return -ENOMEM;
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
	/* Recount with the scanner's reader and count (zero.h): the THP may have filled up since
	 * the scan, and it is split on the same count as the one that selected it. */
	k = thps_reader_init(&rd, THPS_READER_CHUNK_DEFAULT, g->page_size);
	if (k < 0)
		return k;
	k = thps_reader_count(&rd, r->pid, r->start, len, &used, &bytes);
	thps_reader_done(&rd);
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

static int split_probe(const struct thps_ctx *ctx, char *why, size_t size)
{
	char path[PATH_MAX];
	int r;

	r = thps_split_frees_zero_subpages(ctx, why, size);
	if (r <= 0)
		return r;
	r = thps_path(path, sizeof(path), ctx->debugfs_root, "split_huge_pages");
	if (r < 0)
		return r;
	if (access(path, W_OK) < 0) {
		snprintf(why, size, "'%.200s': %s (mount debugfs; needs root)", path,
			 strerror(errno));
		return 0;
	}
	return 1;
}

static int split_act(const struct thps_ctx *ctx, const struct thps_act_request *req,
		     struct thps_act_result *res)
{
	const struct thps_geometry *g = req->geom;
	char path[PATH_MAX], why[384], cmd[96], first_skip[384] = "";
	unsigned mpn;
	int r;

	memset(res, 0, sizeof(*res));
	res->actuator = "split";
	r = split_probe(ctx, why, sizeof(why));
	if (r < 0)
		return r;
	if (r == 0) {
		snprintf(res->note, sizeof(res->note), "refused: %s", why);
		/* still measured, so the caller's before/after show that nothing changed */
		if (thps_act_snapshot(ctx, req->cgroup, &res->before) == 0)
			res->after = res->before;
		return 0;
	}
	if (req->n_ranges == 0) {
		snprintf(res->note, sizeof(res->note),
			 "nothing to split: no low-utilization THP found");
		return 0;
	}
	r = thps_path(path, sizeof(path), ctx->debugfs_root, "split_huge_pages");
	if (r < 0)
		return r;
	r = thps_act_snapshot(ctx, req->cgroup, &res->before);
	if (r < 0)
		return r;
	res->acted = true;
	for (size_t i = 0; i < req->n_ranges; i++) {
		const struct thps_thp_range *t = &req->ranges[i];
		uint32_t used = 0;

		if (req->max_bytes && res->asked_bytes >= req->max_bytes)
			break;
		r = thps_thp_recheck(ctx, g, t, req->lowutil_max_bucket, &used, why, sizeof(why));
		if (r < 0 && r != -EIO && r != -ESRCH && r != -ENOENT)
			return r;
		if (r <= 0) {
			if (res->ranges_skipped++ == 0)
				snprintf(first_skip, sizeof(first_skip), "%s", why);
			continue;
		}
		/* to order 0: every size's zero subpages go to the shared zero page */
		snprintf(cmd, sizeof(cmd), "%d,0x%llx,0x%llx", (int)t->pid,
			 (unsigned long long)t->start,
			 (unsigned long long)(t->start +
					      (uint64_t)thps_range_pages(t, g) * g->page_size));
		if (write_file_string(path, cmd) < 0) {
			res->ranges_failed++;
			continue;
		}
		res->ranges_split++;
		res->asked_bytes += (uint64_t)(thps_range_pages(t, g) - used) * g->page_size;
	}
	r = thps_act_snapshot(ctx, req->cgroup, &res->after);
	if (r < 0)
		return r;
	if (res->ranges_skipped)
		snprintf(res->note, sizeof(res->note),
			 "%llu THPs changed since the scan and were left "
			 "alone (first: %.300s)",
			 (unsigned long long)res->ranges_skipped, first_skip);
	else if (thps_max_ptes_none_get(ctx, &mpn) == 0 &&
		 mpn > thps_max_ptes_none_advice(g, req->lowutil_max_bucket))
		snprintf(res->note, sizeof(res->note),
			 "khugepaged/max_ptes_none is %u: khugepaged may "
			 "re-collapse the split ranges into THPs full of zeroes again",
			 mpn);
	return 0;
}

const struct thps_actuator_ops thps_actuator_split = {
    .name = "split",
    .description = "split exactly the low-utilization THPs the scanner found (debugfs)",
    .probe = split_probe,
    .act = split_act,
};
