/* SPDX-License-Identifier: GPL-2.0-or-later */
/* promote (promote.h): per process, dense finder (dense.c) -> what smaps says it opted out of
 * (promote-smaps.c) -> per range: re-check through the finder's pagemap fd, MADV_COLLAPSE
 * through a pidfd, the address space and the RSS looked at again -> a look at each collapsed
 * range (pagemap: one PMD-mapped folio; kpageflags: a THP head). Nothing of the target's memory
 * is ever read: only its page tables' metadata and its /proc counters. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroups.h"
#include "dense.h"
#include "fileio.h"
#include "kpageflags.h"
#include "macro.h"
#include "pagemap.h"
#include "pmadvise.h"
#include "proc.h"
#include "promote-smaps.h"
#include "promote.h"

/* Ranges collected per process at most (1 TiB of 2 MiB ranges): bounds the address list. */
#define MAX_RANGES (UINT64_C(1) << 19)

const char *thps_promote_fail_name(enum thps_promote_fail f)
{
	static const char *const names[THPS_PROMOTE_FAIL_MAX] = {
	    [THPS_PROMOTE_FAIL_NO_MEMORY] = "no_memory",
	    [THPS_PROMOTE_FAIL_REFUSED] = "refused",
	    [THPS_PROMOTE_FAIL_DISABLED] = "thp_disabled",
	    [THPS_PROMOTE_FAIL_OTHER] = "other",
	    [THPS_PROMOTE_FAIL_BUSY] = "busy",
	    [THPS_PROMOTE_FAIL_EXEC] = "exec",
	    [THPS_PROMOTE_FAIL_GREW] = "grew",
	    [THPS_PROMOTE_FAIL_OPTED_OUT] = "opted_out",
	};

	return (unsigned)f < THPS_PROMOTE_FAIL_MAX ? names[f] : "other";
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 1 when the process called PR_SET_THP_DISABLE (status "THP_enabled: 0", 5.0+), 0 if not or
 * unknown, -ESRCH when it is gone. */
static int thp_disabled(const struct thps_ctx *ctx, pid_t pid)
{
	_cleanup_free_ char *text = NULL;
	const char *p;
	int r = read_file_at(1 << 16, &text, ctx->proc_root, "%d/status", (int)pid);

	if (r < 0)
		return r == -ENOENT ? -ESRCH : 0;
	p = strstr(text, "\nTHP_enabled:");
	if (!p)
		return 0;
	p += strlen("\nTHP_enabled:");
	p += strspn(p, " \t");
	return *p == '0';
}

/* The addresses one process's walk collects. */
struct collect {
	uint64_t *addrs;
	size_t n, cap;
	uint64_t max; /* stop after this many */
};

static int collect_one(void *userdata, uint64_t addr)
{
	struct collect *c = userdata;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		uint64_t *a = realloc(c->addrs, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		c->addrs = a;
		c->cap = cap;
	}
	c->addrs[c->n++] = addr;
	return c->n >= c->max ? 1 : 0;
}

/* Keeps the first failure, for the operator: "process P: 0xADDR: errno text: what" (err 0:
 * no errno text). */
static void note_once(struct thps_promote_result *res, pid_t pid, uint64_t addr, int err,
		      const char *what)
{
	if (res->note[0])
		return;
	snprintf(res->note, sizeof(res->note), "process %d: 0x%llx: %s%s%s", (int)pid,
		 (unsigned long long)addr, err ? strerror(-err) : "", err && what[0] ? ": " : "",
		 what);
}

/* Whether the range at addr is one PMD-mapped THP now: its pagemap entries are contiguous from
 * an aligned head, and kpageflags (when readable) calls the head an anonymous THP head. */
static bool became_thp(int pm_fd, struct thps_kpage *kp, const struct thps_geometry *g,
		       uint64_t *buf, uint64_t addr)
{
	size_t len = g->subpages * sizeof(uint64_t);
	uint64_t flags;

	if (pread(pm_fd, buf, len, (off_t)(addr / g->page_size * sizeof(uint64_t))) != (ssize_t)len)
		return false;
	if (!thps_pm_entries_whole_thp(buf, g->subpages))
		return false;
	if (!kp)
		return true;
	return thps_kpage_flags(kp, thps_pm_pfn(buf[0]), &flags) == 0 &&
	       thps_kpf_is_anon_thp_head(flags);
}

/* Looks through the finder's pagemap fd: the address space examined, not whatever the pid
 * holds now. */
static void verify(const struct thps_ctx *ctx, const struct thps_geometry *g, int pm_fd,
		   const uint64_t *addrs, const int *err, size_t n, struct thps_promote_result *res)
{
	_cleanup_free_ uint64_t *buf = calloc(g->subpages, sizeof(uint64_t));
	struct thps_kpage kp;
	bool have_kp;

	if (!buf || pm_fd < 0)
		return;
	have_kp = thps_kpage_open(ctx, g->subpages, &kp) == 0;
	for (size_t i = 0; i < n; i++)
		if (err[i] == 0 && became_thp(pm_fd, have_kp ? &kp : NULL, g, buf, addrs[i]))
			res->ranges_verified++;
	if (have_kp)
		thps_kpage_close(&kp);
}

/* Anonymous pages of the process (statm: resident - shared), read through an fd kept open. */
static int anon_pages(int statm_fd, uint64_t *ret)
{
	char buf[256];
	unsigned long long size, resident, shared;
	ssize_t got = pread(statm_fd, buf, sizeof(buf) - 1, 0);

	if (got <= 0)
		return got < 0 ? negative_errno() : -ESRCH;
	buf[got] = 0;
	if (sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3)
		return -EIO;
	*ret = resident > shared ? resident - shared : 0;
	return 0;
}

/* RSS growth (pages) across one collapse that is still noise. The mm counters behind statm are
 * per-cpu (percpu_counter, 6.2+): a read that does not sum them may miss up to the batch,
 * max(32, 2 * CPUs) pages, on each CPU, in either direction. A collapse of present pages adds
 * none, and a collapse that filled holes adds one page per hole. Capped at a quarter of a THP so
 * that a range refilled from less than three quarters present always shows; on a machine large
 * enough for the cap to bite, a false "grew" costs only that process's promotion this pass. */
static uint64_t rss_slack(const struct thps_geometry *g)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t c = cpus > 0 ? (uint64_t)cpus : 1;

	return MIN(c * MAX(UINT64_C(32), 2 * c), g->subpages / 4);
}

/* How one process's collapse stage went. */
struct stage {
	const struct thps_ctx *ctx;
	const struct thps_geometry *g;
	const struct thps_promote_opts *opts;
	struct thps_promote_result *res;
	struct thps_dense_finder *f;
	int pidfd, statm_fd;
	pid_t pid;
	uint64_t start;
};

/* The address space went away under a re-check: exec (the same process, a new mm) or exit. */
static void lost_mm(struct stage *st, uint64_t addr)
{
	uint64_t now;

	if (thps_proc_starttime(st->ctx, st->pid, &now) == 0 && now == st->start) {
		st->res->failures[THPS_PROMOTE_FAIL_EXEC]++;
		note_once(st->res, st->pid, addr, 0,
			  "exec() after the finder: a new address space, left alone");
	}
}

/* Counts the kernel's answer for one range. Returns 0 to go on with the process, 1 to stop for
 * it, 2 to end the pass. */
static int judge(struct stage *st, uint64_t addr, int err)
{
	struct thps_promote_result *res = st->res;

	switch (err) {
	case 0:
		res->ranges_collapsed++;
		if (st->opts->collapsed)
			st->opts->collapsed(st->opts->userdata, st->pid, st->start, addr);
		return 0;
	case -ENOMEM:
		res->failures[THPS_PROMOTE_FAIL_NO_MEMORY]++;
		res->stopped = true;
		note_once(res, st->pid, addr, err, "no free huge page: the pass stops");
		return 2;
	case -EAGAIN:
		res->failures[THPS_PROMOTE_FAIL_BUSY]++;
		note_once(res, st->pid, addr, err,
			  "busy twice (a page pinned, or off the LRU): this range is left");
		return 0;
	case -EBUSY:
		res->failures[THPS_PROMOTE_FAIL_BUSY]++;
		note_once(res, st->pid, addr, err,
			  "its cgroup cannot be charged a huge page: this process is left");
		return 1;
	case -EINVAL:
	case -EPERM:
		res->failures[THPS_PROMOTE_FAIL_REFUSED]++;
		note_once(res, st->pid, addr, err, "refused (not eligible): not asked again");
		return 0;
	default:
		res->failures[THPS_PROMOTE_FAIL_OTHER]++;
		note_once(res, st->pid, addr, err, "");
		return 0;
	}
}

/* One range: re-check, collapse, look again. Returns 0 to go on with the process, 1 to stop
 * for it, 2 to end the pass, or -errno when the process cannot be advised at all. */
static int collapse_one(struct stage *st, uint64_t addr, uint64_t *rss, int *err)
{
	struct thps_promote_result *res = st->res;
	uint64_t now;
	int r, v;

	for (unsigned attempt = 0;; attempt++) {
		r = thps_dense_recheck(st->f, addr);
		if (r == -ESRCH) {
			lost_mm(st, addr);
			return 1;
		}
		if (r < 0) {
			res->failures[THPS_PROMOTE_FAIL_OTHER]++;
			note_once(res, st->pid, addr, r, "re-check before the collapse");
			return 1;
		}
		if (r == 0) {
			res->ranges_changed++; /* freed or shared since the finder */
			return 0;
		}
		/* right after the re-check: the window is one pread and a syscall entry */
		r = thps_pmadvise(st->pidfd, MADV_COLLAPSE, &addr, 1, st->g->thp_size, err);
		if (r < 0) {
			*err = r;
			if (r == -ESRCH)
				return 1; /* it exited meanwhile */
			return r;
		}
		/* EAGAIN is transient by the kernel's word (a page briefly off the LRU or
		 * locked): re-checked and asked once more */
		if (*err != -EAGAIN || attempt > 0)
			break;
		res->ranges_retried++;
	}
	if (thps_dense_mm_alive(st->f) == -ESRCH) {
		lost_mm(st, addr); /* exec during the collapse: what it made is not counted */
		*err = -ESRCH;
		return 1;
	}
	v = judge(st, addr, *err);
	if (anon_pages(st->statm_fd, &now) == 0) {
		if (now > *rss + rss_slack(st->g)) {
			res->failures[THPS_PROMOTE_FAIL_GREW]++;
			note_once(res, st->pid, addr, 0,
				  "RSS grew across a collapse: left alone for this pass");
			return MAX(v, 1);
		}
		*rss = now;
	}
	return v;
}

/* Collapses addrs[0..n) one at a time (each re-checked right before); err[i] gets each one's
 * answer (-ECANCELED: not asked). Returns 0, or -errno when the process cannot be advised. */
static int collapse(struct stage *st, const uint64_t *addrs, int *err, size_t n)
{
	uint64_t rss;
	size_t i;
	int r = 0;

	for (i = 0; i < n; i++)
		err[i] = -ECANCELED;
	if (anon_pages(st->statm_fd, &rss) < 0)
		return 0; /* gone */
	for (i = 0; i < n; i++) {
		if (st->opts->admit &&
		    !st->opts->admit(st->opts->userdata, st->pid, st->start, addrs[i])) {
			st->res->ranges_held_back++;
			continue;
		}
		r = collapse_one(st, addrs[i], &rss, &err[i]);
		if (r != 0)
			break;
	}
	if (i < n)
		st->res->ranges_not_tried += n - i - 1;
	return r < 0 ? r : 0;
}

/* Leaves out what the process's smaps says it opted out of (or, blind to kpageflags, what is
 * lazily freed). Returns 0, or -ESRCH when it is gone. */
static int drop_opted_out(const struct thps_ctx *ctx, const struct thps_geometry *g, pid_t pid,
			  bool lazy_blind, struct collect *c, struct thps_promote_result *res)
{
	struct thps_smaps_drops d = {};
	bool always = thps_thp_mode_always(ctx, g) == 1;
	int r = thps_smaps_drop_opted_out(ctx, pid, always, lazy_blind, c->addrs, &c->n, &d);

	if (r == -ESRCH)
		return r;
	if (r < 0) {
		/* what cannot be read cannot be shown to be allowed */
		res->failures[THPS_PROMOTE_FAIL_OPTED_OUT] += c->n;
		note_once(res, pid, 0, r, "smaps unreadable: opt-outs unknown, not asked");
		c->n = 0;
		return 0;
	}
	res->failures[THPS_PROMOTE_FAIL_OPTED_OUT] += d.no_huge + d.ineligible;
	res->ranges_lazy_free += d.lazy_free;
	res->lazy_free_by_smaps |= lazy_blind;
	if (d.no_huge + d.ineligible && !res->note[0])
		snprintf(res->note, sizeof(res->note),
			 "process %d opted out of THP for %llu ranges (%llu MADV_NOHUGEPAGE, %llu "
			 "THPeligible 0 under THP always): not asked",
			 (int)pid, (unsigned long long)(d.no_huge + d.ineligible),
			 (unsigned long long)d.no_huge, (unsigned long long)d.ineligible);
	return 0;
}

int thps_promote_pid(const struct thps_ctx *ctx, const struct thps_geometry *g, pid_t pid,
		     const struct thps_promote_opts *opts, struct thps_promote_result *res)
{
	struct thps_dense_finder f;
	struct collect c = {};
	struct stage st = {ctx, g, opts, res, &f, -1, -1, pid, 0};
	_cleanup_free_ int *err = NULL;
	_cleanup_close_ int pidfd = -1, statm_fd = -1;
	char path[PATH_MAX];
	uint64_t start, t0;
	uint64_t room = MAX_RANGES;
	int r;

	if (res->stopped)
		return 0;
	if (opts->max_bytes) {
		uint64_t used = res->ranges_found * g->thp_size;

		if (used >= opts->max_bytes)
			return 0;
		room = MIN(room, (opts->max_bytes - used) / g->thp_size);
		if (!room)
			return 0;
	}
	r = thps_proc_starttime(ctx, pid, &start);
	if (r < 0)
		return r == -ESRCH || r == -ENOENT ? 0 : r;
	r = thp_disabled(ctx, pid);
	if (r < 0)
		return 0;
	res->processes++;
	if (r > 0) {
		res->failures[THPS_PROMOTE_FAIL_DISABLED]++;
		if (!res->note[0])
			snprintf(res->note, sizeof(res->note),
				 "process %d called PR_SET_THP_DISABLE: not asked", (int)pid);
		return 0;
	}

	r = thps_dense_init(&f, g, opts->use_scan);
	if (r < 0)
		return r;
	f.budget_bytes = opts->fallback_budget;
	f.resume_addr = opts->resume_addr;
	f.max_vmas = opts->max_vmas;
	f.max_windows = opts->max_windows;
	c.max = room;
	t0 = now_ns();
	r = thps_dense_walk(&f, ctx, pid, collect_one, &c);
	res->find_ns += now_ns() - t0;
	res->looked_bytes += f.looked_bytes;
	res->pagemap_bytes += f.pagemap_bytes;
	res->budget_hit |= f.budget_hit;
	res->maps_lines += f.lines;
	res->vmas += f.vmas;
	res->windows += f.windows;
	res->next_addr = r < 0 ? 0 : f.next_addr;
	res->walks_cut += r >= 0 && f.next_addr;
	res->ranges_lazy_free += f.lazy_free;
	res->method = f.scan_state ? "PAGEMAP_SCAN" : "pagemap";
	if (r == -ESRCH || r == -ENODATA) {
		r = 0; /* gone, or a kernel thread */
		goto out;
	}
	if (r < 0)
		goto out;
	if (c.n) {
		r = drop_opted_out(ctx, g, pid, f.lazy_free_blind, &c, res);
		if (r < 0) {
			r = 0; /* gone */
			goto out;
		}
	}
	res->ranges_found += c.n;
	if (opts->dry_run || !c.n)
		goto out;

	err = calloc(c.n, sizeof(int));
	if (!err) {
		r = -ENOMEM;
		goto out;
	}
	pidfd = thps_pidfd_open(ctx, pid, start);
	if (pidfd < 0) {
		r = pidfd == -ESRCH ? 0 : pidfd;
		goto out;
	}
	r = thps_path(path, sizeof(path), ctx->proc_root, "%d/statm", (int)pid);
	if (r < 0)
		goto out;
	statm_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (statm_fd < 0) {
		r = 0; /* gone */
		goto out;
	}
	st.pidfd = pidfd;
	st.statm_fd = statm_fd;
	st.start = start;
	t0 = now_ns();
	r = collapse(&st, c.addrs, err, c.n);
	res->collapse_ns += now_ns() - t0;
	if (r == 0 && opts->verify)
		verify(ctx, g, f.pm_fd, c.addrs, err, c.n, res);
out:
	thps_dense_done(&f);
	free(c.addrs);
	return r;
}

/* Calls fn for each process in cgroup or below it. Returns 0 or fn's first error. */
static int each_pid_in(const struct thps_ctx *ctx, const char *cgroup, pid_t only,
		       int (*fn)(const struct thps_ctx *, pid_t, const char *, void *),
		       void *userdata)
{
	_cleanup_closedir_ DIR *d = opendir(ctx->proc_root);
	struct dirent *de;

	if (!d)
		return negative_errno();
	while ((de = readdir(d))) {
		_cleanup_free_ char *text = NULL;
		char cg[PATH_MAX];
		uint64_t v;
		int r;

		if (parse_u64(de->d_name, &v) < 0 || v == 0 || v > INT32_MAX ||
		    (only && (pid_t)v != only))
			continue;
		if (read_file_at(1 << 16, &text, ctx->proc_root, "%s/cgroup", de->d_name) < 0 ||
		    thps_proc_cgroup_v2_path(text, cg, sizeof(cg)) < 0 ||
		    thps_cgroup_path_within(cg, cgroup) != 1)
			continue;
		r = fn(ctx, (pid_t)v, cg, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}

struct cgroup_run {
	const struct thps_geometry *g;
	const struct thps_promote_opts *opts;
	struct thps_promote_result *res;
};

static int promote_one(const struct thps_ctx *ctx, pid_t pid, const char *cgroup, void *userdata)
{
	struct cgroup_run *run = userdata;

	if (pid == getpid())
		return 0;
	return thps_promote_pid(ctx, run->g, pid, run->opts, run->res);
}

int thps_promote_cgroup(const struct thps_ctx *ctx, const struct thps_geometry *g,
			const char *cgroup, const struct thps_promote_opts *opts,
			struct thps_promote_result *res)
{
	struct cgroup_run run = {g, opts, res};

	return each_pid_in(ctx, cgroup, 0, promote_one, &run);
}

struct dense_run {
	const struct thps_geometry *g;
	void (*fn)(void *userdata, const char *cgroup, uint64_t bytes);
	void *userdata;
};

static int dense_one(const struct thps_ctx *ctx, pid_t pid, const char *cgroup, void *userdata)
{
	struct dense_run *run = userdata;
	struct thps_promote_opts opts = {
	    .dry_run = true, .use_scan = true, .fallback_budget = UINT64_C(64) << 30};
	struct thps_promote_result res = {};
	int r;

	if (thp_disabled(ctx, pid) != 0)
		return 0; /* it said no, or it is gone: no opportunity */
	r = thps_promote_pid(ctx, run->g, pid, &opts, &res);
	if (r < 0)
		return r == -EACCES || r == -EPERM ? 0 : r;
	if (res.ranges_found)
		run->fn(run->userdata, cgroup, res.ranges_found * run->g->thp_size);
	return 0;
}

int thps_promote_dense(const struct thps_ctx *ctx, const struct thps_geometry *g,
		       const char *cgroup, pid_t pid,
		       void (*fn)(void *userdata, const char *cgroup, uint64_t bytes),
		       void *userdata)
{
	struct dense_run run = {g, fn, userdata};

	return each_pid_in(ctx, cgroup ? cgroup : "/", pid, dense_one, &run);
}
