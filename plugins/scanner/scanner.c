/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The scan loop: /proc → each process's THPs (pagemap.c) → kpageflags checks and cgroup
 * (kpageflags.c, cgroups.c) → contents (reader.c) → histogram. A process that exits or
 * changes mid-scan is skipped and counted; nothing a scanned process does is fatal. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroups.h"
#include "fileio.h"
#include "folios.h"
#include "kpageflags.h"
#include "macro.h"
#include "memo.h"
#include "pagemap.h"
#include "proc.h"
#include "pfnset.h"
#include "reader.h"
#include "scanner.h"

/* Bound on the per-scan table of distinct THPs (the PTE-mapped folios' is scan.h's). */
#define MAX_SEEN_THPS (UINT32_C(1) << 24)

/* A large folio seen through PTE mappings. pid/vstart: the first process that mapped it and
 * where the folio's first page would be in it; own: subpages that process maps there (all of
 * them: the folio is fully mapped in one place and its contents are read from there). */
struct partial_folio {
	uint64_t head;
	uint64_t vstart;
	uint64_t starttime; /* of pid */
	pid_t pid;
	uint32_t pages;
	uint32_t own;
	uint32_t own_first; /* lowest index of a page pid maps in place (valid when own > 0) */
	bool counted;	    /* read and counted in the histogram of its size */
};

struct scanner {
	struct thps_ctx ctx;
	const struct thps_scan_opts *opts;
	const struct thps_scanner_hooks *hooks;
	struct thps_scan *scan;
	struct thps_cgroup_map *cgmap;
	struct thps_kpage kpage;
	struct thps_pm_walker walker;
	struct thps_pfnset seen;
	struct thps_pfnset partial_idx;
	struct partial_folio *folios;
	uint64_t *bits; /* words per folio × folios */
	size_t n_folios, cap_folios, max_folios;
	unsigned words;
	uint32_t folio_min_pages; /* folios.h: only pages that can be in such a folio */

	/* the process being walked; its PTE-mapped folios are those from first_folio on */
	size_t first_folio;
	pid_t pid;
	uint64_t starttime;

	/* cgroup filter cache */
	uint64_t last_ino;
	int last_keep;
	const char *last_path;

	struct timespec t0;
	uint64_t thps_read;
};

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return ts_ns(&t);
}

/* Whether the filter keeps the cgroup with inode ino, and its path. Returns 1 keep, 0 drop. */
static int cgroup_keep(struct scanner *s, uint64_t ino, const char **ret_path)
{
	if (ino != s->last_ino || !s->last_path) {
		s->last_ino = ino;
		s->last_path = thps_cgroup_map_path(s->cgmap, ino);
		s->last_keep =
		    !s->opts->cgroup ||
		    (s->last_path && thps_cgroup_path_within(s->last_path, s->opts->cgroup));
	}
	*ret_path = s->last_path;
	return s->last_keep;
}

/* The cgroup a THP is charged to, and whether the filter keeps it. Returns 1 keep, 0 drop. */
static int cgroup_of(struct scanner *s, uint64_t head, uint64_t *ret_ino, const char **ret_path)
{
	uint64_t ino = 0;

	if (thps_kpage_cgroup(&s->kpage, head, &ino) < 0)
		ino = 0;
	*ret_ino = ino;
	return cgroup_keep(s, ino, ret_path);
}

static struct thps_cgroup_stats *entry_for(struct scanner *s, uint64_t ino, const char *path)
{
	char name[64];

	if (!path) {
		snprintf(name, sizeof(name), "(memcg ino %" PRIu64 ")", ino);
		path = name;
	}
	return thps_scan_cgroup(s->scan, ino, path);
}

static void throttle(struct scanner *s)
{
	uint64_t rate = s->opts->max_thps_per_sec, due, elapsed;
	struct timespec t;

	if (!rate)
		return;
	due = s->thps_read * UINT64_C(1000000000) / rate;
	elapsed = now_ns(CLOCK_MONOTONIC) - ts_ns(&s->t0);
	if (due <= elapsed + 1000000)
		return; /* less than 1 ms ahead: not worth a sleep */
	t.tv_sec = (due - elapsed) / 1000000000u;
	t.tv_nsec = (due - elapsed) % 1000000000u;
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
	s->scan->summary.throttled_ns += due - elapsed;
}

static int read_folio(struct scanner *s, uint64_t addr, uint64_t len, unsigned limit,
		      unsigned *ret_utilized, uint64_t *ret_bytes)
{
	uint64_t cpu0;
	int r;

	throttle(s);
	*ret_bytes = 0;
	cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	if (limit != UINT_MAX && s->hooks->count_until)
		r = s->hooks->count_until(s->hooks->userdata, s->pid, addr, len, limit,
					  ret_utilized, ret_bytes);
	else
		r = s->hooks->count(s->hooks->userdata, s->pid, addr, len, ret_utilized, ret_bytes);
	s->scan->summary.bytes_read += *ret_bytes;
	s->scan->summary.read_cpu_ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	s->thps_read++;
	return r;
}

/* What the memo says of one folio, asked once per folio and pass. */
struct memo_probe {
	struct thps_memo_key key;
	enum thps_memo_verdict verdict;
	unsigned cached, limit;
	uint64_t cgroup; /* the memcg the memo knows it by, 0 = unknown */
};

/* Asks the memo (when the daemon passed one) about the folio. Returns true when the memo knows
 * it well enough to skip kpageflags and kpagecgroup: a carried count and its cgroup. */
static bool memo_probe(struct scanner *s, uint64_t addr, uint64_t head, uint64_t len,
		       struct memo_probe *ret)
{
	*ret = (struct memo_probe){
	    .key = {.pfn = head,
		    .va = addr,
		    .pid = s->pid,
		    .starttime = s->starttime,
		    .order = (unsigned)__builtin_ctzll(len / s->scan->geom.page_size)},
	    .verdict = THPS_MEMO_READ,
	    .limit = UINT_MAX,
	};
	if (!s->opts->memo)
		return false;
	ret->verdict =
	    thps_memo_lookup(s->opts->memo, &ret->key, &ret->cached, &ret->limit, &ret->cgroup);
	return ret->verdict == THPS_MEMO_CARRY && ret->cgroup;
}

/* The folio's utilized subpages: read, or from the memo as mp says (memo.h says which folios
 * are read again). ino: its memcg, remembered with the count. Returns 0 or the reader's
 * -errno (the caller skips the process). */
static int count_folio(struct scanner *s, const struct memo_probe *mp, uint64_t len, uint64_t ino,
		       unsigned *ret_utilized, uint64_t *ret_bytes)
{
	struct thps_scan_summary *sum = &s->scan->summary;
	struct thps_memo *memo = s->opts->memo;
	uint64_t addr = mp->key.va, cpu;
	int r;

	*ret_bytes = 0;
	switch (mp->verdict) { /* READ when there is no memo (memo_probe) */
	case THPS_MEMO_CARRY:
		sum->folios_memo++;
		*ret_utilized = mp->cached;
		return 0;
	case THPS_MEMO_REFRESH:
		cpu = sum->read_cpu_ns;
		sum->folios_refreshed++;
		r = read_folio(s, addr, len, mp->limit, ret_utilized, ret_bytes);
		sum->refresh_cpu_ns += sum->read_cpu_ns - cpu;
		if (r < 0)
			return r;
		if (*ret_bytes < len) {
			/* proven above the cut: the last exact count stands */
			*ret_utilized = mp->cached;
			return thps_memo_store(memo, &mp->key, mp->cached, false, ino);
		}
		return thps_memo_store(memo, &mp->key, *ret_utilized, true, ino);
	case THPS_MEMO_READ:
	default:
		sum->folios_read++;
		r = read_folio(s, addr, len, UINT_MAX, ret_utilized, ret_bytes);
		if (r < 0 || !memo)
			return r;
		return thps_memo_store(memo, &mp->key, *ret_utilized, true, ino);
	}
}

/* Counts the THP at addr with head PFN head, charged to memcg ino (the filter kept it). */
static int add_thp(struct scanner *s, uint64_t addr, uint64_t head, uint64_t ino, const char *path,
		   unsigned utilized)
{
	const struct thps_geometry *g = &s->scan->geom;
	struct thps_cgroup_stats *c;
	int r;

	/* when the set is full, THPs shared by processes may be counted twice: bounded memory
	 * wins over exactness on machines with > 16M THPs */
	r = thps_pfnset_add(&s->seen, head, 0);
	if (r < 0 && r != -E2BIG)
		return r;
	c = entry_for(s, ino, path);
	if (!c)
		return -ENOMEM;
	thps_hist_add(&c->hist, g, utilized);
	s->scan->summary.thps_scanned++;
	if (s->opts->record_ranges && thps_bucket(g, utilized) <= MAX(s->opts->lowutil_max_bucket,
								      s->opts->record_max_bucket)) {
		struct thps_thp_range range = {
		    .pid = s->pid,
		    .pid_starttime = s->starttime,
		    .start = addr,
		    .pfn = head,
		    .ino = ino,
		    .utilized = utilized,
		};
		r = thps_scan_add_range(s->scan, &range);
		if (r < 0)
			return r;
	}
	return 0;
}

static int on_thp(void *ud, uint64_t addr, uint64_t head)
{
	struct scanner *s = ud;
	const struct thps_geometry *g = &s->scan->geom;
	const char *path;
	uint64_t flags, ino, bytes = 0;
	unsigned utilized = 0;
	struct memo_probe mp;
	int r;

	if (memo_probe(s, addr, head, g->thp_size, &mp)) {
		/* the same folio as last pass, same process, address and size: an anonymous THP
		 * head then and now, charged to the same memcg */
		ino = mp.cgroup;
		if (thps_pfnset_get(&s->seen, head, NULL)) {
			s->scan->summary.thps_shared++;
			return 0;
		}
		if (!cgroup_keep(s, ino, &path))
			return 0;
	} else {
		if (thps_kpage_flags(&s->kpage, head, &flags) < 0 ||
		    !thps_kpf_is_anon_thp_head(flags))
			return 0; /* the huge zero page, a file THP, or gone meanwhile */
		if (thps_pfnset_get(&s->seen, head, NULL)) {
			s->scan->summary.thps_shared++;
			return 0;
		}
		if (!cgroup_of(s, head, &ino, &path))
			return 0;
	}
	r = count_folio(s, &mp, g->thp_size, ino, &utilized, &bytes);
	if (r < 0)
		return r; /* the process changed: the caller skips it */
	return add_thp(s, addr, head, ino, path, utilized);
}

/* A PMD-mapped run at addr, before its head PFN is read: the memo may know the THP by its
 * place alone (memo.h: the mapping is trusted until its identity turn). Returns 1 when
 * counted (or deduplicated, or filtered out) so, 0 to read the PFN, or -errno. */
static int on_thp_known(void *ud, uint64_t addr)
{
	struct scanner *s = ud;
	const struct thps_geometry *g = &s->scan->geom;
	struct thps_memo_key k = {.va = addr,
				  .pid = s->pid,
				  .starttime = s->starttime,
				  .order = (unsigned)__builtin_ctzll(g->subpages)};
	uint64_t ino = 0, head = 0;
	unsigned utilized = 0;
	const char *path;
	int r;

	if (thps_memo_lookup_va(s->opts->memo, &k, &utilized, &ino, &head) != THPS_MEMO_CARRY)
		return 0;
	/* the remembered PFN keeps the dedup: a process sharing the THP reads its PFN (its
	 * place is new to the memo) and finds it here, or finds this one counted already */
	if (thps_pfnset_get(&s->seen, head, NULL)) {
		s->scan->summary.thps_shared++;
		return 1;
	}
	if (!cgroup_keep(s, ino, &path))
		return 1;
	s->scan->summary.folios_memo++;
	s->scan->summary.folios_trusted++;
	r = add_thp(s, addr, head, ino, path, utilized);
	return r < 0 ? r : 1;
}

static int on_page(void *ud, uint64_t addr, uint64_t pfn)
{
	struct scanner *s = ud;
	uint64_t head;
	uint32_t pages, idx;
	int r;

	if (!thps_folio_aligned(pfn, addr / s->scan->geom.page_size, s->folio_min_pages))
		return 0; /* a small page: no kpageflags read (folios.h) */
	r = thps_kpage_folio(&s->kpage, pfn, &head, &pages);
	if (r <= 0 || pages < 2)
		return 0; /* a small page, or unreadable: not a THP folio we can judge */
	if (!thps_pfnset_get(&s->partial_idx, head, &idx)) {
		if (s->n_folios >= s->max_folios)
			goto untracked; /* bounded: further folios go uncounted */
		if (s->n_folios == s->cap_folios) {
			size_t cap = MIN(s->cap_folios ? s->cap_folios * 2 : 64, s->max_folios);
			struct partial_folio *f;
			uint64_t *b;

			f = reallocarray(s->folios, cap, sizeof(*f));
			if (!f)
				return -ENOMEM;
			s->folios = f;
			b = reallocarray(s->bits, cap * s->words, sizeof(*b));
			if (!b)
				return -ENOMEM;
			s->bits = b;
			s->cap_folios = cap;
		}
		idx = s->n_folios;
		r = thps_pfnset_add(&s->partial_idx, head, idx);
		if (r == -E2BIG)
			goto untracked;
		if (r < 0)
			return r;
		s->folios[idx] =
		    (struct partial_folio){.head = head,
					   .pages = pages,
					   .pid = s->pid,
					   .starttime = s->starttime,
					   .vstart = addr - (pfn - head) * s->scan->geom.page_size};
		memset(&s->bits[(size_t)idx * s->words], 0, s->words * sizeof(uint64_t));
		s->n_folios++;
	}
	{
		struct partial_folio *f = &s->folios[idx];
		uint64_t *w = &s->bits[(size_t)idx * s->words + (pfn - head) / 64];
		uint64_t bit = UINT64_C(1) << ((pfn - head) % 64);

		if (!(*w & bit) && f->pid == s->pid &&
		    f->vstart + (pfn - head) * s->scan->geom.page_size == addr) {
			if (!f->own++ || pfn - head < f->own_first)
				f->own_first = (uint32_t)(pfn - head);
		}
		*w |= bit;
	}
	return 0;
untracked:
	/* said, not silent: status.json, /metrics and the log name what a pass left out */
	s->scan->summary.untracked_bytes += s->scan->geom.page_size;
	return 0;
}

/* The PTE-mapped folios this process mapped first and maps whole, in one place: read their
 * contents now (the process is still there) and count them in the histogram of their size.
 * A read that fails leaves the folio uncounted, never the scan. */
static int count_pte_folios(struct scanner *s)
{
	const struct thps_geometry *g = &s->scan->geom;

	for (size_t i = s->first_folio; i < s->n_folios; i++) {
		struct partial_folio *f = &s->folios[i];
		struct thps_cgroup_stats *c;
		struct thps_hist *h;
		const char *path;
		uint64_t ino, bytes = 0;
		unsigned utilized = 0;
		struct memo_probe mp;
		int order, r;

		if (f->pid != s->pid || f->own < f->pages || f->counted)
			continue;
		if (thps_pfnset_get(&s->seen, f->head, NULL))
			continue; /* PMD-mapped elsewhere: counted as such */
		order = thps_folio_order(f->pages);
		if (order <= 0 || !cgroup_of(s, f->head, &ino, &path))
			continue;
		memo_probe(s, f->vstart, f->head, (uint64_t)f->pages * g->page_size, &mp);
		r = count_folio(s, &mp, (uint64_t)f->pages * g->page_size, ino, &utilized, &bytes);
		if (r < 0)
			continue;
		c = entry_for(s, ino, path);
		if (!c)
			return -ENOMEM;
		h = thps_cgroup_size_hist(c, g, (unsigned)order);
		if (!h)
			continue;
		thps_hist_add_n(h, f->pages, utilized);
		f->counted = true;
		s->scan->summary.thps_scanned++;
		if (s->opts->record_ranges &&
		    thps_bucket_n(f->pages, utilized) <=
			MAX(s->opts->lowutil_max_bucket, s->opts->record_max_bucket)) {
			struct thps_thp_range range = {
			    .pid = s->pid,
			    .pid_starttime = s->starttime,
			    .start = f->vstart,
			    .pfn = f->head,
			    .ino = ino,
			    .utilized = utilized,
			    .pages = f->pages == g->subpages ? 0 : f->pages,
			};
			r = thps_scan_add_range(s->scan, &range);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int finish_partials(struct scanner *s)
{
	for (size_t i = 0; i < s->n_folios; i++) {
		const struct partial_folio *f = &s->folios[i];
		struct thps_cgroup_stats *c;
		const char *path;
		uint64_t ino, flags;
		unsigned mapped = 0;

		if (thps_pfnset_get(&s->seen, f->head, NULL))
			continue; /* PMD-mapped somewhere: a whole THP, not partial */
		for (unsigned w = 0; w < s->words; w++)
			mapped += __builtin_popcountll(s->bits[i * s->words + w]);
		if (mapped >= f->pages)
			continue;
		/* re-check: freed and reused between the walk and now is not a partial THP */
		if (thps_kpage_flags(&s->kpage, f->head, &flags) < 0 ||
		    !thps_kpf_is_anon_thp_head(flags))
			continue;
		if (!cgroup_of(s, f->head, &ino, &path))
			continue;
		c = entry_for(s, ino, path);
		if (!c)
			return -ENOMEM;
		c->partial_thps++;
		c->partial_unmapped_bytes +=
		    (uint64_t)(f->pages - mapped) * s->scan->geom.page_size;
		if (s->opts->record_partial && f->own && mapped) {
			struct thps_thp_range range = {
			    .pid = f->pid,
			    .pid_starttime = f->starttime,
			    .start = f->vstart,
			    .pfn = f->head,
			    .ino = ino,
			    .pages = f->pages == s->scan->geom.subpages ? 0 : f->pages,
			    .mapped = mapped,
			    .advise_page = f->own_first,
			};
			int r = thps_scan_add_range(s->scan, &range);

			if (r < 0)
				return r;
		}
		{
			int o = thps_folio_order(f->pages);

			if (o > 0 && o < THPS_MAX_ORDER && f->pages < s->scan->geom.subpages) {
				c->mthp[o].partial_folios++;
				c->mthp[o].partial_unmapped_bytes +=
				    (uint64_t)(f->pages - mapped) * s->scan->geom.page_size;
			}
		}
	}
	return 0;
}

static int scan_pid(struct scanner *s, pid_t pid)
{
	static const struct thps_pm_visitor visitor = {.thp = on_thp, .page = on_page};
	static const struct thps_pm_visitor visitor_memo = {
	    .thp = on_thp, .page = on_page, .thp_known = on_thp_known};
	int r;

	s->pid = pid;
	s->starttime = 0;
	if (s->opts->record_ranges || s->opts->record_partial || s->opts->memo) {
		r = thps_proc_starttime(&s->ctx, pid, &s->starttime);
		if (r < 0) {
			s->scan->summary.procs_skipped++;
			return 0;
		}
	}
	s->first_folio = s->n_folios;
	r = thps_pm_walk(&s->walker, &s->ctx, pid, s->opts->memo ? &visitor_memo : &visitor, s);
	switch (r) {
	case 0:
		s->scan->summary.procs_scanned++;
		return count_pte_folios(s);
	case -ENODATA: /* a kernel thread: nothing to scan, nothing skipped */
		return 0;
	case -ESRCH:  /* exited */
	case -EFAULT: /* changed under us */
	case -EPERM:
	case -EACCES:
	case -EINVAL: /* a maps line we cannot parse: skip this process, not the scan */
	case -EIO:    /* a read of a dying process's maps/pagemap failed */
	case -ENOENT: /* its /proc files vanished */
		s->scan->summary.procs_skipped++;
		return 0;
	default:
		return r;
	}
}

static int scan_all(struct scanner *s)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	pid_t self = getpid();

	d = opendir(s->ctx.proc_root);
	if (!d)
		return negative_errno();
	while ((de = readdir(d))) {
		uint64_t pid;
		int r;

		if (parse_u64(de->d_name, &pid) < 0 || pid == 0 || pid > INT32_MAX)
			continue;
		if ((pid_t)pid == self)
			continue; /* reading our own buffers would measure the scanner */
		r = scan_pid(s, (pid_t)pid);
		if (r < 0)
			return r;
	}
	return 0;
}

static int default_count(void *ud, pid_t pid, uint64_t addr, uint64_t len, unsigned *ret_utilized,
			 uint64_t *ret_bytes)
{
	return thps_reader_count(ud, pid, addr, len, ret_utilized, ret_bytes);
}

static int default_count_until(void *ud, pid_t pid, uint64_t addr, uint64_t len, unsigned limit,
			       unsigned *ret_utilized, uint64_t *ret_bytes)
{
	return thps_reader_count_until(ud, pid, addr, len, limit, ret_utilized, ret_bytes);
}

static void scanner_done(struct scanner *s)
{
	thps_cgroup_map_free(s->cgmap);
	thps_kpage_close(&s->kpage);
	thps_pm_walker_done(&s->walker);
	thps_pfnset_free(&s->seen);
	thps_pfnset_free(&s->partial_idx);
	free(s->folios);
	free(s->bits);
}

int thps_scanner_collect(const struct thps_ctx *ctx, const struct thps_scan_opts *opts,
			 const struct thps_scanner_hooks *hooks, struct thps_scan *scan)
{
	struct scanner s = {
	    .ctx = *ctx, .opts = opts, .scan = scan, .kpage = {.flags_fd = -1, .cgroup_fd = -1}};
	struct thps_scanner_hooks def = {.use_pagemap_scan = 1};
	/* a caller's own count hook leaves the reader unused: its done must close nothing */
	struct thps_reader reader = {.mem_fd = -1, .pm_fd = -1};
	uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	const struct thps_geometry *g = &scan->geom;
	int r;

	if (g->subpages == 0 || g->page_size == 0)
		return -EINVAL;
	if (hooks)
		def = *hooks;
	if (!def.count) {
		r = thps_reader_init(&reader, THPS_READER_CHUNK_DEFAULT, g->page_size);
		if (r < 0)
			return r;
		def.count = default_count;
		def.count_until = default_count_until;
		def.userdata = &reader;
	}
	s.hooks = &def;
	s.words = (g->subpages + 63) / 64;
	s.folio_min_pages = def.every_page ? 1 : thps_anon_folio_min_pages(ctx, g);
	s.max_folios = def.max_partial_folios
			   ? MIN(def.max_partial_folios, THPS_SCAN_MAX_PTE_FOLIOS)
			   : THPS_SCAN_MAX_PTE_FOLIOS;
	clock_gettime(CLOCK_MONOTONIC, &s.t0);

	/* without a memory hierarchy the figures stay useful, keyed by memcg inode */
	r = thps_cgroups_discover(&s.ctx, &s.cgmap);
	if (r < 0)
		s.cgmap = NULL;
	if (opts->cgroup &&
	    !(s.cgmap && thps_cgroup_map_ino(s.cgmap, opts->cgroup[0] ? opts->cgroup : "/"))) {
		r = -ENOENT;
		goto out;
	}
	r = thps_kpage_open(&s.ctx, g->subpages, &s.kpage);
	if (r < 0)
		goto out;
	r = thps_pm_walker_init(&s.walker, g, def.use_pagemap_scan);
	if (r < 0)
		goto out;
	s.walker.scan = def.pagemap_scan;
	r = thps_pfnset_init(&s.seen, MAX_SEEN_THPS);
	if (r < 0)
		goto out;
	r = thps_pfnset_init(&s.partial_idx, THPS_SCAN_MAX_PTE_FOLIOS);
	if (r < 0)
		goto out;

	if (opts->memo)
		thps_memo_pass_begin(opts->memo, opts->memo_exact_max_per512,
				     opts->memo_refresh_folios, opts->memo_verify_folios);
	r = opts->pid > 0 ? scan_pid(&s, opts->pid) : scan_all(&s);
	if (r < 0)
		goto out;
	r = finish_partials(&s);
	if (r < 0)
		goto out;
	if (opts->memo)
		thps_memo_pass_end(opts->memo); /* only after a whole pass: it drops the unseen */
	scan->summary.method = thps_pm_walker_method(&s.walker);
	scan->summary.wall_ns += now_ns(CLOCK_MONOTONIC) - ts_ns(&s.t0);
	scan->summary.cpu_ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	thps_scan_finish(scan, opts->lowutil_max_bucket);
out:
	scanner_done(&s);
	thps_reader_done(&reader);
	return r;
}

static int scanner_probe(const struct thps_ctx *ctx, char *why, size_t why_size)
{
	static const char *const files[] = {"kpageflags", "kpagecgroup", "self/pagemap"};
	char path[PATH_MAX];
	struct thps_geometry g;
	int r;

	r = thps_geometry_load(ctx, &g);
	if (r < 0) {
		snprintf(why, why_size,
			 "no THP geometry under %s/kernel/mm/transparent_hugepage: %s",
			 ctx->sys_root, strerror(-r));
		return 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		_cleanup_close_ int fd = -1;
		uint64_t v;

		r = thps_path(path, sizeof(path), ctx->proc_root, "%s", files[i]);
		if (r < 0)
			return r;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || pread(fd, &v, sizeof(v), 0) < 0) {
			r = errno;
			snprintf(why, why_size, "'%s' is not readable (%s)%s", path, strerror(r),
				 r == EACCES || r == EPERM ? ": needs root (CAP_SYS_ADMIN)"
				 : r == ENOENT && i == 1   ? ": kernel without CONFIG_MEMCG"
							   : "");
			return 0;
		}
	}
	snprintf(why, why_size, "pagemap, kpageflags and kpagecgroup are readable");
	return 1;
}

static int scanner_collect(const struct thps_ctx *ctx, const struct thps_scan_opts *opts,
			   struct thps_scan *scan)
{
	return thps_scanner_collect(ctx, opts, NULL, scan);
}

const struct thps_source_ops thps_source_scanner = {
    .name = "scanner",
    .description = "userspace scan of anonymous THPs: utilized subpages per memory cgroup",
    .probe = scanner_probe,
    .collect = scanner_collect,
};
