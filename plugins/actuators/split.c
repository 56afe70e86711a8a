/* SPDX-License-Identifier: GPL-2.0-or-later */
/* split: splits exactly the low-utilization folios (any size) and the partially mapped folios
 * the scanner found, one by one, to order 0. The mechanism is process_madvise(MADV_COLD) on one
 * page of each folio through a pidfd (pmadvise.h): no debugfs, works under lockdown, spares
 * the page cache. Where this process may not advise others (no CAP_SYS_NICE) it falls back to
 * debugfs split_huge_pages ("PID,0xSTART,0xEND" of that same one page: the kernel splits every
 * THP it finds in the range, and a partially mapped folio's range may hold other folios in its
 * holes). Each folio is looked at
 * again just before (recheck.c), so one that filled up since the scan is never split, and just
 * after, so one the kernel skipped (shared by a fork, lock busy) is retried once and reported.
 * A sparse folio is split only where a split frees zero subpages (>= 6.12 or the RFC); a
 * partially mapped one on every kernel: its unmapped subpages are freed by any split. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actuator.h"
#include "fileio.h"
#include "macro.h"
#include "pmadvise.h"
#include "reader.h"

#define KERNEL_SKIP_RETRIES 1

enum thps_split_mech thps_split_mechanism(const struct thps_ctx *ctx, enum thps_split_mech want,
					  char *why, size_t size)
{
	char path[PATH_MAX], nope[256] = "";
	int r;

	if (want == THPS_SPLIT_MECH_AUTO || want == THPS_SPLIT_MECH_PMADVISE) {
		r = thps_pmadvise_allowed(ctx, nope, sizeof(nope));
		if (r > 0) {
			snprintf(why, size, "process_madvise(MADV_COLD) on one page of each folio");
			return THPS_SPLIT_MECH_PMADVISE;
		}
		if (r < 0)
			snprintf(nope, sizeof(nope), "cannot read CapEff: %s", strerror(-r));
		if (want == THPS_SPLIT_MECH_PMADVISE) {
			snprintf(why, size, "%s", nope);
			return THPS_SPLIT_MECH_NONE;
		}
	}
	if (thps_path(path, sizeof(path), ctx->debugfs_root, "split_huge_pages") == 0 &&
	    access(path, W_OK) == 0) {
		snprintf(why, size, "debugfs split_huge_pages%s%.200s", nope[0] ? " (" : "", nope);
		if (nope[0])
			strncat(why, ")", size - strlen(why) - 1);
		return THPS_SPLIT_MECH_DEBUGFS;
	}
	snprintf(why, size,
		 "%.200s%sdebugfs split_huge_pages is not writable (not mounted, or "
		 "kernel lockdown)",
		 nope, nope[0] ? "; " : "");
	return THPS_SPLIT_MECH_NONE;
}

static int split_probe(const struct thps_ctx *ctx, char *why, size_t size)
{
	char how[384];

	if (thps_split_mechanism(ctx, THPS_SPLIT_MECH_AUTO, how, sizeof(how)) ==
	    THPS_SPLIT_MECH_NONE) {
		snprintf(why, size, "%s", how);
		return 0;
	}
	snprintf(why, size, "%s", how);
	return 1;
}

/* One action's bookkeeping. */
struct split_run {
	const struct thps_ctx *ctx;
	const struct thps_act_request *req;
	struct thps_act_result *res;
	bool zero_freed;
	struct thps_reader rd; /* one re-check reader for the whole action */
	char first_skip[256], first_fail[256], first_kskip[128];
	uint64_t zero_kept; /* sparse folios left alone: a split frees nothing here */
};

static void note_first(char *buf, size_t size, const char *what)
{
	if (!buf[0])
		snprintf(buf, size, "%s", what);
}

/* Is range i worth a split and still what the scan saw? */
static bool eligible(struct split_run *s, const struct thps_thp_range *t, uint32_t *used)
{
	const struct thps_geometry *g = s->req->geom;
	char why[256];
	int r;

	if (!t->mapped && !s->zero_freed) {
		s->zero_kept++;
		return false;
	}
	r = t->mapped ? thps_partial_recheck(s->ctx, g, t, why, sizeof(why))
		      : thps_thp_recheck_with(s->ctx, g, t, s->req->lowutil_max_bucket, &s->rd,
					      used, why, sizeof(why));
	if (r <= 0) {
		if (r < 0)
			snprintf(why, sizeof(why), "re-check failed: %s", strerror(-r));
		s->res->ranges_skipped++;
		note_first(s->first_skip, sizeof(s->first_skip), why);
		return false;
	}
	return true;
}

static uint64_t range_bytes(const struct thps_thp_range *t, const struct thps_geometry *g)
{
	return (uint64_t)thps_range_pages(t, g) * g->page_size;
}

/* What splitting t gives back: zero subpages of a sparse folio, unmapped ones of a partial. */
static uint64_t range_waste(const struct thps_thp_range *t, const struct thps_geometry *g,
			    uint32_t used)
{
	return (uint64_t)(thps_range_pages(t, g) - (t->mapped ? t->mapped : used)) * g->page_size;
}

static uint64_t advice_addr(const struct thps_thp_range *t, const struct thps_geometry *g)
{
	return t->start + (uint64_t)t->advise_page * g->page_size;
}

/* Advises the ranges idx[0..n) of one process, then checks which the kernel really split and
 * retries the ones it left whole (lock busy) once. Returns 0 or -errno. */
static int advise_batch(struct split_run *s, pid_t pid, uint64_t starttime, const size_t *idx,
			const uint32_t *used, size_t n)
{
	const struct thps_geometry *g = s->req->geom;
	_cleanup_free_ uint64_t *addr = calloc(n ? n : 1, sizeof(*addr));
	_cleanup_free_ int *err = calloc(n ? n : 1, sizeof(*err));
	_cleanup_free_ size_t *left = calloc(n ? n : 1, sizeof(*left));
	_cleanup_close_ int fd = -1;
	size_t nleft = n, k = 0;
	int r;

	if (!addr || !err || !left)
		return -ENOMEM;
	fd = thps_pidfd_open(s->ctx, pid, starttime);
	if (fd < 0) {
		s->res->ranges_skipped += n;
		note_first(s->first_skip, sizeof(s->first_skip),
			   fd == -ESRCH ? "the process exited or its pid is another process now"
					: "pidfd_open failed");
		return fd == -ESRCH ? 0 : fd;
	}
	for (size_t i = 0; i < n; i++)
		left[i] = i;
	for (unsigned attempt = 0; nleft && attempt <= KERNEL_SKIP_RETRIES; attempt++) {
		for (size_t i = 0; i < nleft; i++)
			addr[i] = advice_addr(&s->req->ranges[idx[left[i]]], g);
		r = thps_pmadvise(fd, MADV_COLD, addr, nleft, g->page_size, err);
		if (r < 0) {
			char m[160];

			snprintf(m, sizeof(m), "process_madvise on pid %d: %s", (int)pid,
				 strerror(-r));
			note_first(s->first_fail, sizeof(s->first_fail), m);
			s->res->ranges_failed += nleft;
			return r == -ESRCH ? 0 : r;
		}
		k = 0;
		for (size_t i = 0; i < nleft; i++) {
			const struct thps_thp_range *t = &s->req->ranges[idx[left[i]]];
			bool shared = false;

			if (err[i] < 0) {
				char m[160];

				snprintf(m, sizeof(m), "0x%" PRIx64 " of pid %d: %s", addr[i],
					 (int)pid, strerror(-err[i]));
				note_first(s->first_fail, sizeof(s->first_fail), m);
				s->res->ranges_failed++;
				continue;
			}
			r = thps_folio_still_whole(s->ctx, t->pfn, thps_range_pages(t, g), &shared);
			if (r > 0) {
				if (attempt < KERNEL_SKIP_RETRIES && !shared) {
					left[k++] = left[i];
					continue;
				}
				s->res->ranges_kernel_skipped++;
				note_first(s->first_kskip, sizeof(s->first_kskip),
					   shared ? "mapped by more than one process (a fork's "
						    "shared THP)"
						  : "its lock was busy");
				continue;
			}
			s->res->ranges_split++;
			s->res->partial_split += t->mapped > 0;
			s->res->asked_bytes += range_waste(t, g, used[left[i]]);
			if (s->req->cold_whole && !t->mapped) {
				/* Clears the young bits of the split range: khugepaged passes
				 * over a range with no referenced page. Advice on a whole range
				 * splits nothing more. */
				uint64_t a0 = t->start;
				int e;

				(void)thps_pmadvise(fd, MADV_COLD, &a0, 1, range_bytes(t, g), &e);
			}
		}
		nleft = k;
	}
	return 0;
}

static int split_debugfs(struct split_run *s, const struct thps_thp_range *t, uint32_t used)
{
	const struct thps_geometry *g = s->req->geom;
	char path[PATH_MAX], cmd[96];
	int r;

	r = thps_path(path, sizeof(path), s->ctx->debugfs_root, "split_huge_pages");
	if (r < 0)
		return r;
	/* to order 0: every size's zero subpages go to the shared zero page */
	snprintf(cmd, sizeof(cmd), "%d,0x%llx,0x%llx", (int)t->pid,
		 (unsigned long long)advice_addr(t, g),
		 (unsigned long long)(advice_addr(t, g) + g->page_size));
	r = write_file_string(path, cmd);
	if (r < 0) {
		snprintf(cmd, sizeof(cmd), "split_huge_pages: %s", strerror(-r));
		note_first(s->first_fail, sizeof(s->first_fail), cmd);
		s->res->ranges_failed++;
		return 0;
	}
	s->res->ranges_split++;
	s->res->partial_split += t->mapped > 0;
	s->res->asked_bytes += range_waste(t, g, used);
	return 0;
}

/* Walks the ranges in the order given (the scanner's: one process after another), re-checks
 * each, and splits the eligible ones of one process at a time. */
static int split_ranges(struct split_run *s, enum thps_split_mech mech)
{
	const struct thps_act_request *req = s->req;
	_cleanup_free_ size_t *idx = calloc(req->n_ranges, sizeof(*idx));
	_cleanup_free_ uint32_t *used = calloc(req->n_ranges, sizeof(*used));
	uint64_t targeted = 0;
	size_t n = 0;
	int r;

	if (!idx || !used)
		return -ENOMEM;
	for (size_t i = 0; i <= req->n_ranges; i++) {
		const struct thps_thp_range *t = i < req->n_ranges ? &req->ranges[i] : NULL;
		bool cap = req->max_bytes && targeted >= req->max_bytes;

		if (n && (!t || cap || t->pid != req->ranges[idx[0]].pid ||
			  t->pid_starttime != req->ranges[idx[0]].pid_starttime)) {
			r = advise_batch(s, req->ranges[idx[0]].pid,
					 req->ranges[idx[0]].pid_starttime, idx, used, n);
			if (r < 0)
				return r;
			n = 0;
		}
		if (!t || cap)
			break;
		if (req->pid && t->pid != req->pid)
			continue;
		used[n] = 0;
		if (!eligible(s, t, &used[n]))
			continue;
		targeted += range_waste(t, req->geom, used[n]);
		if (mech == THPS_SPLIT_MECH_DEBUGFS) {
			r = split_debugfs(s, t, used[n]);
			if (r < 0)
				return r;
			continue;
		}
		idx[n++] = i;
	}
	return 0;
}

static void split_note(struct split_run *s)
{
	struct thps_act_result *res = s->res;
	const struct thps_geometry *g = s->req->geom;
	size_t len = strlen(res->note);
	unsigned mpn;

#define ADD(...)                                                                                   \
	do {                                                                                       \
		if (len < sizeof(res->note))                                                       \
			len += snprintf(res->note + len, sizeof(res->note) - len, __VA_ARGS__);    \
	} while (0)
	if (res->ranges_skipped)
		ADD("%s%" PRIu64 " folios changed since the scan and were left alone (first: %s)",
		    len ? "; " : "", res->ranges_skipped, s->first_skip);
	if (res->ranges_kernel_skipped)
		ADD("%s%" PRIu64 " folios the kernel left whole (first: %s)", len ? "; " : "",
		    res->ranges_kernel_skipped, s->first_kskip);
	if (res->ranges_failed)
		ADD("%s%" PRIu64 " splits refused (first: %s)", len ? "; " : "", res->ranges_failed,
		    s->first_fail);
	if (s->zero_kept)
		ADD("%s%" PRIu64 " sparse folios not split: a split frees no zero subpage on this "
		    "kernel (it keeps them mapped; Linux >= 6.12 or the THP shrinker RFC frees "
		    "them)",
		    len ? "; " : "", s->zero_kept);
	if (!len && res->ranges_split > res->partial_split &&
	    thps_max_ptes_none_get(s->ctx, &mpn) == 0 &&
	    mpn > thps_max_ptes_none_advice(g, s->req->lowutil_max_bucket))
		ADD("khugepaged/max_ptes_none is %u: khugepaged may re-collapse the split ranges "
		    "into THPs full of zeroes again",
		    mpn);
#undef ADD
}

static bool has_partial(const struct thps_act_request *req)
{
	for (size_t i = 0; i < req->n_ranges; i++)
		if (req->ranges[i].mapped)
			return true;
	return false;
}

static int split_act(const struct thps_ctx *ctx, const struct thps_act_request *req,
		     struct thps_act_result *res)
{
	struct split_run s = {.ctx = ctx, .req = req, .res = res};
	enum thps_split_mech mech;
	char why[384], zwhy[384] = "";
	int r;

	memset(res, 0, sizeof(*res));
	res->actuator = "split";
	mech = thps_split_mechanism(ctx, req->mech, why, sizeof(why));
	res->mechanism = thps_split_mech_name(mech);
	if (req->zero_freed)
		s.zero_freed = req->zero_freed > 0;
	else {
		r = thps_split_frees_zero_subpages(ctx, zwhy, sizeof(zwhy));
		if (r < 0)
			return r;
		s.zero_freed = r > 0;
	}
	if (!s.zero_freed && !has_partial(req)) {
		/* nothing here a split frees: the sparse folios' zero subpages stay mapped */
		if (req->zero_freed)
			snprintf(zwhy, sizeof(zwhy),
				 "a split frees no zero subpage here (measured)");
		snprintf(why, sizeof(why), "%s", zwhy);
		mech = THPS_SPLIT_MECH_NONE;
	}
	if (mech == THPS_SPLIT_MECH_NONE) {
		snprintf(res->note, sizeof(res->note), "refused: %s", why);
		/* still measured, so the caller's before/after show that nothing changed */
		if (thps_act_snapshot_of(ctx, req->cgroup, req->pid, &res->before) == 0)
			res->after = res->before;
		return 0;
	}
	if (req->n_ranges == 0) {
		snprintf(res->note, sizeof(res->note),
			 "nothing to split: no low-utilization or partially mapped folio found");
		return 0;
	}
	r = thps_act_snapshot_of(ctx, req->cgroup, req->pid, &res->before);
	if (r < 0)
		return r;
	res->acted = true;
	r = thps_reader_init(&s.rd, THPS_READER_CHUNK_DEFAULT, req->geom->page_size);
	if (r < 0)
		return r;
	r = split_ranges(&s, mech);
	thps_reader_done(&s.rd);
	if (r < 0)
		return r;
	r = thps_act_snapshot_of(ctx, req->cgroup, req->pid, &res->after);
	if (r < 0)
		return r;
	split_note(&s);
	return 0;
}

const struct thps_actuator_ops thps_actuator_split = {
    .name = "split",
    .description = "split exactly the low-utilization and partially mapped folios the scanner "
		   "found (process_madvise; debugfs as the fallback)",
    .probe = split_probe,
    .act = split_act,
};
