/* SPDX-License-Identifier: GPL-2.0-or-later */
/* promote (promote.h): per process, dense finder (dense.c) -> MADV_COLLAPSE through a pidfd,
 * in small batches so an EAGAIN/ENOMEM ends the pass promptly -> a look at each collapsed range
 * (pagemap: one PMD-mapped folio; kpageflags: a THP head). Nothing of the target's memory is
 * ever read: only its page tables' metadata. */
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
#include "promote.h"

/* Ranges per process_madvise call: small enough that an EAGAIN/ENOMEM stops the pass after at
 * most this many attempts, large enough that the syscall costs nothing next to a collapse. */
#define COLLAPSE_BATCH 16u
/* Ranges collected per process at most (1 TiB of 2 MiB ranges): bounds the address list. */
#define MAX_RANGES (UINT64_C(1) << 19)

const char *thps_promote_fail_name(enum thps_promote_fail f)
{
	static const char *const names[THPS_PROMOTE_FAIL_MAX] = {
	    [THPS_PROMOTE_FAIL_NO_MEMORY] = "no_memory",
	    [THPS_PROMOTE_FAIL_REFUSED] = "refused",
	    [THPS_PROMOTE_FAIL_DISABLED] = "thp_disabled",
	    [THPS_PROMOTE_FAIL_OTHER] = "other",
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
	const struct thps_promote_opts *opts;
	pid_t pid;
	uint64_t start;
	uint64_t *held_back;
};

static int collect_one(void *userdata, uint64_t addr)
{
	struct collect *c = userdata;

	if (c->opts->admit && !c->opts->admit(c->opts->userdata, c->pid, c->start, addr)) {
		(*c->held_back)++;
		return 0;
	}
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

/* Keeps the first failure, for the operator: "process P: 0xADDR: errno text: what". */
static void note_once(struct thps_promote_result *res, pid_t pid, uint64_t addr, int err,
		      const char *what)
{
	if (res->note[0])
		return;
	snprintf(res->note, sizeof(res->note), "process %d: 0x%llx: %s%s%s", (int)pid,
		 (unsigned long long)addr, strerror(-err), what[0] ? ": " : "", what);
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

static void verify(const struct thps_ctx *ctx, const struct thps_geometry *g, pid_t pid,
		   const uint64_t *addrs, const int *err, size_t n, struct thps_promote_result *res)
{
	char path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint64_t *buf = calloc(g->subpages, sizeof(uint64_t));
	struct thps_kpage kp;
	bool have_kp;

	if (!buf || thps_path(path, sizeof(path), ctx->proc_root, "%d/pagemap", (int)pid) < 0)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	have_kp = thps_kpage_open(ctx, g->subpages, &kp) == 0;
	for (size_t i = 0; i < n; i++)
		if (err[i] == 0 && became_thp(fd, have_kp ? &kp : NULL, g, buf, addrs[i]))
			res->ranges_verified++;
	if (have_kp)
		thps_kpage_close(&kp);
}

/* Collapses addrs[0..n) of the process behind pidfd; err[i] gets each one's answer. Returns 0,
 * or -errno when the process cannot be advised at all. */
static int collapse(int pidfd, pid_t pid, uint64_t starttime, const struct thps_geometry *g,
		    const struct thps_promote_opts *opts, const uint64_t *addrs, int *err, size_t n,
		    struct thps_promote_result *res)
{
	size_t done = 0;

	while (done < n) {
		size_t k = MIN(n - done, (size_t)COLLAPSE_BATCH);
		int r =
		    thps_pmadvise(pidfd, MADV_COLLAPSE, addrs + done, k, g->thp_size, err + done);

		if (r < 0) {
			for (size_t i = done; i < n; i++)
				err[i] = r;
			if (r == -ESRCH) {
				res->failures[THPS_PROMOTE_FAIL_OTHER] += n - done;
				return 0; /* it exited meanwhile */
			}
			return r;
		}
		for (size_t i = done; i < done + k; i++) {
			/* EAGAIN is transient by the kernel's word (a page briefly off the LRU or
			 * locked): asked once more, alone; a second EAGAIN ends the pass */
			if (err[i] == -EAGAIN) {
				res->ranges_retried++;
				r = thps_pmadvise(pidfd, MADV_COLLAPSE, addrs + i, 1, g->thp_size,
						  err + i);
				if (r < 0)
					err[i] = r;
			}
			switch (err[i]) {
			case 0:
				res->ranges_collapsed++;
				if (opts->collapsed)
					opts->collapsed(opts->userdata, pid, starttime, addrs[i]);
				break;
			case -EAGAIN:
			case -ENOMEM:
				res->failures[THPS_PROMOTE_FAIL_NO_MEMORY]++;
				res->stopped = true;
				note_once(res, pid, addrs[i], err[i],
					  err[i] == -ENOMEM
					      ? "no free huge page: the pass stops"
					      : "busy twice, or no free huge page: the "
						"pass stops");
				break;
			case -EINVAL:
			case -EPERM:
				res->failures[THPS_PROMOTE_FAIL_REFUSED]++;
				note_once(
				    res, pid, addrs[i], err[i],
				    "refused (VM_NOHUGEPAGE, or not eligible): not asked again");
				break;
			default:
				res->failures[THPS_PROMOTE_FAIL_OTHER]++;
				note_once(res, pid, addrs[i], err[i], "");
				break;
			}
		}
		done += k;
		if (res->stopped) {
			for (size_t i = done; i < n; i++)
				err[i] = -ECANCELED;
			res->ranges_not_tried += n - done;
			return 0;
		}
	}
	return 0;
}

int thps_promote_pid(const struct thps_ctx *ctx, const struct thps_geometry *g, pid_t pid,
		     const struct thps_promote_opts *opts, struct thps_promote_result *res)
{
	struct thps_dense_finder f;
	struct collect c = {};
	_cleanup_free_ int *err = NULL;
	_cleanup_close_ int pidfd = -1;
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
	c = (struct collect){.max = room,
			     .opts = opts,
			     .pid = pid,
			     .start = start,
			     .held_back = &res->ranges_held_back};
	t0 = now_ns();
	r = thps_dense_walk(&f, ctx, pid, collect_one, &c);
	res->find_ns += now_ns() - t0;
	res->looked_bytes += f.looked_bytes;
	res->pagemap_bytes += f.pagemap_bytes;
	res->budget_hit |= f.budget_hit;
	res->method = f.scan_state ? "PAGEMAP_SCAN" : "pagemap";
	thps_dense_done(&f);
	if (r == -ESRCH || r == -ENODATA) {
		r = 0; /* gone, or a kernel thread */
		goto out;
	}
	if (r < 0)
		goto out;
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
	t0 = now_ns();
	r = collapse(pidfd, pid, start, g, opts, c.addrs, err, c.n, res);
	res->collapse_ns += now_ns() - t0;
	if (r == 0 && opts->verify)
		verify(ctx, g, pid, c.addrs, err, c.n, res);
out:
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
