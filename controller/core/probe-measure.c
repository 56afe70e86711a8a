/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Measured probe: canary folios of every size the kernel allocates now, split and reclaimed,
 * and what left the scratch cgroup measured (probe-measure.h). One child per size, so a
 * measurement of one size never sees another size's canaries. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "pmadvise.h"
#include "probe-measure.h"
#include "probe.h"
#include "proc.h"

#define CANARY_MAX   64			 /* folios per group */
#define CANARY_BYTES (UINT64_C(4) << 20) /* per group, at least 2 folios */
#define KPF_ANON     12
#define KPF_HEAD     15
#define KPF_TAIL     16
#define KPF_THP	     22
#define PM_PRESENT   (UINT64_C(1) << 63)
#define PM_PFN	     ((UINT64_C(1) << 55) - 1)

/* The canary sets, one per measurement, so no measurement sees another's leftovers. */
enum {
	SET_DEBUGFS, /* sparse: split through debugfs split_huge_pages */
	SET_COLD,    /* sparse: split by process_madvise(MADV_COLD) on one page */
	SET_PARTIAL, /* partially mapped: split by process_madvise(MADV_COLD) on one page */
	SET_RECLAIM, /* sparse: memory.reclaim of the scratch cgroup */
	CANARY_SETS,
};

struct canary {
	uint64_t addr[CANARY_SETS][CANARY_MAX];
	uint32_t n[CANARY_SETS];
	uint32_t page_size; /* set by the parent */
	int err;	    /* the child's -errno */
};

/* The bracketed word of a mode file; "" when unreadable. */
static void read_mode(const char *dir, const char *rel, char *buf, size_t size)
{
	if (thps_read_bracketed(dir, rel, buf, size) < 0)
		buf[0] = '\0';
}

static int cmp_size(const void *a, const void *b)
{
	const struct thps_measure_size *x = a, *y = b;

	return x->size < y->size ? -1 : x->size > y->size;
}

/* The sizes the kernel allocates now: hugepages-<N>kB not "never" ("inherit" = the top-level
 * mode), the PMD size by its own knob or the top-level one. */
static void list_sizes(const struct thps_ctx *ctx, const struct thps_geometry *g,
		       struct thps_measure *m)
{
	char dir[PATH_MAX], top[16], mode[16], rel[64];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	bool pmd_seen = false;

	if (thps_path(dir, sizeof(dir), ctx->sys_root, "kernel/mm/transparent_hugepage") < 0)
		return;
	read_mode(dir, "enabled", top, sizeof(top));
	d = opendir(dir);
	while (d && (de = readdir(d)) && m->n < THPS_MEASURE_MAX_SIZES) {
		unsigned long kib;
		char *end;

		if (strncmp(de->d_name, "hugepages-", 10) != 0)
			continue;
		kib = strtoul(de->d_name + 10, &end, 10);
		if (strcmp(end, "kB") != 0 || kib == 0 || (uint64_t)kib * 1024 > g->thp_size ||
		    (uint64_t)kib * 1024 < 2 * (uint64_t)g->page_size)
			continue;
		snprintf(rel, sizeof(rel), "%.40s/enabled", de->d_name);
		read_mode(dir, rel, mode, sizeof(mode));
		if (!mode[0])
			continue;
		if (!strcmp(mode, "inherit"))
			snprintf(mode, sizeof(mode), "%s", top);
		if ((uint64_t)kib * 1024 == g->thp_size)
			pmd_seen = true;
		if (!mode[0] || !strcmp(mode, "never"))
			continue;
		m->sizes[m->n].size = (uint64_t)kib * 1024;
		snprintf(m->sizes[m->n].mode, sizeof(m->sizes[0].mode), "%s", mode);
		m->n++;
	}
	if (!pmd_seen && top[0] && strcmp(top, "never") && m->n < THPS_MEASURE_MAX_SIZES) {
		m->sizes[m->n].size = g->thp_size; /* before 6.8: the top-level knob is the PMD's */
		snprintf(m->sizes[m->n].mode, sizeof(m->sizes[0].mode), "%s", top);
		m->n++;
	}
	qsort(m->sizes, m->n, sizeof(m->sizes[0]), cmp_size);
}

/* Faults in one canary folio at slot: one non-zero byte (sparse), or the whole folio written
 * and all but its first subpage unmapped again (partial: the folio stays allocated, one page
 * mapped). */
static int fault_canary(uint8_t *slot, uint64_t s, uint32_t page_size, bool partial)
{
	if (mprotect(slot, s, PROT_READ | PROT_WRITE) < 0)
		return -errno;
	(void)madvise(slot, s, MADV_HUGEPAGE);
	if (!partial) {
		*(volatile uint8_t *)slot = 0x5a;
		return 0;
	}
	memset(slot, 0x5a, s);
	if (madvise(slot + page_size, s - page_size, MADV_DONTNEED) < 0)
		return -errno;
	return 0;
}

/* The child: waits for the go, faults in every set of canary folios of size S (each in its
 * own VMA of exactly S, PROT_NONE between them so no VMA merges into room for a bigger folio),
 * reports, and waits to be killed. It dies with its parent: a probe killed mid-measure
 * (SIGKILL, OOM, a watchdog) must not leave a canary holding THPs forever; getppid() catches a
 * parent that died before the prctl. (The signal follows the thread that forked: the daemon and
 * the CLI measure from their main thread.) */
static __attribute__((noreturn)) void child_run(int go_fd, int done_fd, struct canary *c,
						uint64_t s, pid_t parent)
{
	uint32_t n = (uint32_t)MIN((uint64_t)CANARY_MAX, MAX(UINT64_C(2), CANARY_BYTES / s));
	size_t len = (size_t)(4 * n + 2) * s;
	uint8_t *raw, *base;
	char b;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
	(void)prctl(PR_SET_NAME, "thps-canary"); /* what ps shows, and tests look for */
	if (read(go_fd, &b, 1) != 1)
		_exit(1);
	/* len holds two sets with their gaps and the alignment slack: CANARY_SETS / 2 of it
	 * hold every set */
	raw = mmap(NULL, len * (CANARY_SETS / 2), PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED) {
		c->err = -errno;
		goto report;
	}
	base = (uint8_t *)(((uintptr_t)raw + s - 1) & ~(uintptr_t)(s - 1));
	for (unsigned k = 0; k < CANARY_SETS; k++)
		for (uint32_t i = 0; i < n; i++) {
			uint8_t *slot = base + (size_t)(2 * (k * n + i)) * s;

			c->err = fault_canary(slot, s, c->page_size, k == SET_PARTIAL);
			if (c->err < 0)
				goto report;
			c->addr[k][i] = (uintptr_t)slot;
			c->n[k] = i + 1;
		}
	/* From here on khugepaged leaves this process alone: a canary split by one measurement
	 * is not rebuilt into a THP while the next one is measured. Folios already faulted in
	 * stay as they are. */
	(void)prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
report:
	b = 1;
	if (write(done_fd, &b, 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

static int pread_all(const char *path, void *buf, size_t len, uint64_t off)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return negative_errno();
	r = pread(fd, buf, len, (off_t)off);
	if (r < 0)
		return negative_errno();
	return (size_t)r == len ? 0 : -EIO;
}

static bool flag(uint64_t f, unsigned bit)
{
	return f & (UINT64_C(1) << bit);
}

/* Are the nr pages at PFN head one anonymous large folio of exactly nr pages? */
static bool pfns_are_folio(const struct thps_ctx *ctx, uint64_t head, uint32_t nr)
{
	uint64_t fl[513];
	char path[PATH_MAX];

	if (nr > 512 || head % nr)
		return false;
	if (thps_path(path, sizeof(path), ctx->proc_root, "kpageflags") < 0 ||
	    pread_all(path, fl, (nr + 1) * sizeof(fl[0]), head * sizeof(fl[0])) < 0)
		return false;
	if (!flag(fl[0], KPF_HEAD) || !flag(fl[0], KPF_THP) || !flag(fl[0], KPF_ANON))
		return false;
	for (uint32_t i = 1; i < nr; i++)
		if (!flag(fl[i], KPF_TAIL) || flag(fl[i], KPF_HEAD))
			return false;
	/* the next page must not be a tail of the same folio (a bigger one) */
	return !flag(fl[nr], KPF_TAIL) || flag(fl[nr], KPF_HEAD);
}

/* Is the child's memory at addr one anonymous folio of exactly nr pages, wholly mapped
 * (partial: only its first page mapped)? ret_head gets its head PFN. */
static bool is_folio(const struct thps_ctx *ctx, pid_t pid, uint64_t addr, uint32_t nr,
		     uint32_t page_size, bool partial, uint64_t *ret_head)
{
	uint64_t pm[512], head;
	char path[PATH_MAX];

	if (nr > 512)
		return false;
	if (thps_path(path, sizeof(path), ctx->proc_root, "%d/pagemap", (int)pid) < 0 ||
	    pread_all(path, pm, nr * sizeof(pm[0]), addr / page_size * sizeof(pm[0])) < 0)
		return false;
	head = pm[0] & PM_PFN;
	for (uint32_t i = 0; i < nr; i++) {
		bool present = pm[i] & PM_PRESENT;

		if (partial ? present != (i == 0) : !present || (pm[i] & PM_PFN) != head + i)
			return false;
	}
	*ret_head = head;
	return pfns_are_folio(ctx, head, nr);
}

/* The kB figure of field ("\nAnonymous:") in root/PID/rel. */
static int read_kb_field(const struct thps_ctx *ctx, pid_t pid, const char *rel, const char *field,
			 uint64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	const char *p;
	int r;

	r = thps_path(path, sizeof(path), ctx->proc_root, "%d/%s", (int)pid, rel);
	if (r < 0)
		return r;
	r = read_file_bounded(path, 64 * 1024, &text, NULL);
	if (r < 0)
		return r;
	p = strstr(text, field);
	if (!p)
		return -ENODATA;
	*ret = strtoull(p + strlen(field), NULL, 10) * 1024;
	return 0;
}

/* What the canary holds now: memory.current of the scratch cgroup, or without one the child's
 * anonymous memory. That is smaps_rollup's Anonymous, counted by a walk of its page tables
 * (exact), where it can be read: RssAnon is a per-CPU batched counter on many kernels, off by
 * up to a batch of pages per CPU, as much as a canary set on a large machine. */
static int usage(const struct thps_ctx *ctx, const char *cg_dir, pid_t pid, uint64_t *ret)
{
	char path[PATH_MAX];

	if (cg_dir) {
		if (thps_path(path, sizeof(path), cg_dir, "memory.current") < 0)
			return -ENAMETOOLONG;
		return read_u64_file(path, ret);
	}
	if (read_kb_field(ctx, pid, "smaps_rollup", "\nAnonymous:", ret) == 0)
		return 0;
	return read_kb_field(ctx, pid, "status", "\nRssAnon:", ret);
}

/* Waits until the usage holds still (uncharges of freed pages may trail a little), at most
 * ~0.5 s. */
static int settled_usage(const struct thps_ctx *ctx, const char *cg_dir, pid_t pid, uint64_t *ret)
{
	uint64_t a = 0, b = 0;
	int r = usage(ctx, cg_dir, pid, &a);

	for (int i = 0; r >= 0 && i < 10; i++) {
		usleep(50 * 1000);
		r = usage(ctx, cg_dir, pid, &b);
		if (r >= 0 && a == b)
			break;
		a = b;
	}
	if (r >= 0)
		*ret = a;
	return r;
}

/* One size's measurement: the canary child and its verified folios. */
struct run {
	const struct thps_ctx *ctx;
	const struct thps_geometry *g;
	const struct thps_measure *m;
	const char *cg_dir;
	struct thps_measure_size *s;
	struct canary *c; /* shared with the child */
	pid_t pid;
	uint32_t nr;		   /* pages per folio */
	uint32_t ok[CANARY_SETS];  /* verified folios per set, first in c->addr[set] */
	uint64_t head[CANARY_MAX]; /* the partial set's head PFNs */
	int go[2], done[2];
};

static void note_add(struct thps_measure_size *s, const char *fmt, ...) _printf_(2, 3);
static void note_add(struct thps_measure_size *s, const char *fmt, ...)
{
	size_t len = strlen(s->note);
	va_list ap;

	if (len + 3 >= sizeof(s->note))
		return;
	if (len)
		len += (size_t)snprintf(s->note + len, sizeof(s->note) - len, "; ");
	va_start(ap, fmt);
	vsnprintf(s->note + len, sizeof(s->note) - len, fmt, ap);
	va_end(ap);
}

/* Forks the canary child, moves it into the scratch cgroup, lets it fault its folios in and
 * waits for them. Returns 0, or -1 with the note saying why (the child, if any, in r->pid). */
static int spawn_canary(struct run *r)
{
	char b, path[PATH_MAX], cmd[32];

	pid_t parent = getpid();

	r->c->page_size = r->g->page_size;
	if (pipe2(r->go, O_CLOEXEC) < 0 || pipe2(r->done, O_CLOEXEC) < 0) {
		note_add(r->s, "pipe: %s", strerror(errno));
		return -1;
	}
	r->pid = fork();
	if (r->pid < 0) {
		note_add(r->s, "fork: %s", strerror(errno));
		return -1;
	}
	if (r->pid == 0)
		child_run(r->go[0], r->done[1], r->c, r->s->size, parent);
	close(r->go[0]);
	close(r->done[1]);
	r->go[0] = r->done[1] = -1;
	if (r->cg_dir) {
		snprintf(cmd, sizeof(cmd), "%d", (int)r->pid);
		if (thps_path(path, sizeof(path), r->cg_dir, "cgroup.procs") < 0 ||
		    write_file_string(path, cmd) < 0) {
			note_add(r->s, "cannot move the canary into '%.100s'", r->cg_dir);
			return -1;
		}
	}
	b = 1;
	if (write(r->go[1], &b, 1) != 1 || read(r->done[0], &b, 1) != 1) {
		note_add(r->s, "the canary process died");
		return -1;
	}
	if (r->c->err < 0) {
		note_add(r->s, "the canary could not map its memory: %s", strerror(-r->c->err));
		return -1;
	}
	return 0;
}

/* Keeps, per set, the canaries the kernel really gave as one folio of this size. Returns 0, or
 * -1 when it gave none. */
static int verify_folios(struct run *r)
{
	struct thps_measure_size *s = r->s;
	uint64_t zero = (uint64_t)(r->nr - 1) * r->g->page_size, head;
	uint32_t tried = 0;

	for (unsigned k = 0; k < CANARY_SETS; k++) {
		tried += r->c->n[k];
		for (uint32_t i = 0; i < r->c->n[k]; i++) {
			if (!is_folio(r->ctx, r->pid, r->c->addr[k][i], r->nr, r->g->page_size,
				      k == SET_PARTIAL, &head))
				continue;
			if (k == SET_PARTIAL)
				r->head[r->ok[k]] = head;
			r->c->addr[k][r->ok[k]++] = r->c->addr[k][i];
		}
	}
	s->folios = r->ok[SET_DEBUGFS];
	s->zero_bytes = s->folios * zero;
	s->cold_folios = r->ok[SET_COLD];
	s->cold_zero_bytes = s->cold_folios * zero;
	s->cold_partial_folios = r->ok[SET_PARTIAL];
	s->cold_partial_unmapped_bytes = s->cold_partial_folios * zero;
	s->reclaim_folios = r->ok[SET_RECLAIM];
	s->reclaim_zero_bytes = s->reclaim_folios * zero;
	for (unsigned k = 0; k < CANARY_SETS; k++)
		if (r->ok[k])
			return 0;
	note_add(s,
		 "the kernel gave no folio of this size to %u tries "
		 "(memory fragmented, or a policy of the kernel)",
		 tried);
	return -1;
}

/* 1. debugfs split of the first sparse set, to order 0. */
static void measure_debugfs_split(struct run *r, const char *split_path)
{
	struct thps_measure_size *s = r->s;
	uint64_t before, after;
	uint32_t n = r->ok[SET_DEBUGFS], refused = 0;
	char cmd[96];

	if (!split_path) {
		note_add(s, "debugfs split not measured: split_huge_pages is not writable");
		return;
	}
	if (!n || settled_usage(r->ctx, r->cg_dir, r->pid, &before) < 0)
		return;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t a = r->c->addr[SET_DEBUGFS][i];

		snprintf(cmd, sizeof(cmd), "%d,0x%" PRIx64 ",0x%" PRIx64, (int)r->pid, a,
			 a + s->size);
		refused += write_file_string(split_path, cmd) < 0;
	}
	if (settled_usage(r->ctx, r->cg_dir, r->pid, &after) >= 0)
		s->split_freed = (int64_t)(before - after);
	if (refused)
		note_add(s, "%u of %u debugfs splits refused by the kernel", refused, n);
}

/* Is the folio at folio index i of set k still whole after the advice? */
static bool still_whole(struct run *r, unsigned k, uint32_t i)
{
	uint64_t head;

	if (k == SET_PARTIAL)
		return pfns_are_folio(r->ctx, r->head[i], r->nr);
	return is_folio(r->ctx, r->pid, r->c->addr[k][i], r->nr, r->g->page_size, false, &head);
}

/* The split actuator's advice to every folio of set k: MADV_COLD on its first page, which
 * the advice covers only in part. A folio the kernel left whole (its lock was busy) is advised
 * once more. Returns the folios the kernel refused, or -errno when it refused the process. */
static int cold_advise(struct run *r, int pidfd, unsigned k)
{
	uint32_t n = r->ok[k], refused = 0, again = 0;
	uint64_t retry[CANARY_MAX];
	int err[CANARY_MAX], e;

	e = thps_pmadvise(pidfd, MADV_COLD, r->c->addr[k], n, r->g->page_size, err);
	if (e < 0)
		return e;
	for (uint32_t i = 0; i < n; i++) {
		if (err[i] < 0)
			refused++;
		else if (still_whole(r, k, i))
			retry[again++] = r->c->addr[k][i];
	}
	if (again)
		(void)thps_pmadvise(pidfd, MADV_COLD, retry, again, r->g->page_size, err);
	return (int)refused;
}

/* Without a scratch cgroup, what the partial set's split freed, read in /proc/kpageflags: RSS
 * never counted the unmapped subpages. A folio whose mapped first page is still part of a
 * large folio was not split: nothing freed. Of a split one, each unmapped subpage whose PFN is
 * no longer part of a large folio counts as freed (a split frees the subpages nobody maps); a
 * PFN that a new large folio took in the meantime counts as not freed, so this errs low. */
static int64_t partial_freed_by_kpageflags(struct run *r)
{
	uint64_t fl[512], freed = 0;
	char path[PATH_MAX];

	if (r->nr > 512 || thps_path(path, sizeof(path), r->ctx->proc_root, "kpageflags") < 0)
		return INT64_MIN;
	for (uint32_t i = 0; i < r->ok[SET_PARTIAL]; i++) {
		if (pread_all(path, fl, r->nr * sizeof(fl[0]), r->head[i] * sizeof(fl[0])) < 0)
			return INT64_MIN;
		if (flag(fl[0], KPF_HEAD) || flag(fl[0], KPF_TAIL))
			continue;
		for (uint32_t j = 1; j < r->nr; j++)
			if (!flag(fl[j], KPF_HEAD) && !flag(fl[j], KPF_TAIL))
				freed += r->g->page_size;
	}
	return (int64_t)freed;
}

/* One COLD set: advise it and measure what left the cgroup (or the canary's RSS). */
static void cold_set(struct run *r, int pidfd, unsigned k, int64_t *ret_freed)
{
	const char *what = k == SET_PARTIAL ? "partially mapped" : "sparse";
	uint64_t before = 0, after;
	int refused;

	if (!r->ok[k])
		return;
	if ((r->cg_dir || k == SET_COLD) && settled_usage(r->ctx, r->cg_dir, r->pid, &before) < 0)
		return;
	refused = cold_advise(r, pidfd, k);
	if (refused < 0) {
		note_add(r->s, "process_madvise of the %s set refused: %s", what,
			 strerror(-refused));
		return;
	}
	if (refused)
		note_add(r->s, "process_madvise refused %d of %u %s folios", refused, r->ok[k],
			 what);
	if (!r->cg_dir && k == SET_PARTIAL)
		*ret_freed = partial_freed_by_kpageflags(r);
	else if (settled_usage(r->ctx, r->cg_dir, r->pid, &after) >= 0)
		*ret_freed = (int64_t)(before - after);
}

/* 2. process_madvise(MADV_COLD) on one page of each folio of the second sparse set and of
 * the partial set, through a pidfd of the canary, as the split actuator does. */
static void measure_cold_split(struct run *r)
{
	_cleanup_close_ int pidfd = -1;
	uint64_t st;
	int e;

	if (r->m->pmadvise_allowed <= 0) {
		note_add(r->s, "process_madvise not measured: %s",
			 r->m->pmadvise_allowed < 0 ? "cannot read CapEff" : "no CAP_SYS_NICE");
		return;
	}
	e = thps_proc_starttime(r->ctx, r->pid, &st);
	pidfd = e < 0 ? e : thps_pidfd_open(r->ctx, r->pid, st);
	if (pidfd < 0) {
		note_add(r->s, "process_madvise not measured: pidfd of the canary: %s",
			 strerror(-pidfd));
		return;
	}
	cold_set(r, pidfd, SET_COLD, &r->s->cold_freed);
	cold_set(r, pidfd, SET_PARTIAL, &r->s->cold_partial_freed);
}

/* 3. memory.reclaim of the third sparse set's zero bytes (scratch cgroup only). Last: it
 * reclaims from the whole scratch cgroup. */
static void measure_reclaim(struct run *r)
{
	struct thps_measure_size *s = r->s;
	uint64_t before, after;
	char path[PATH_MAX], cmd[32];

	if (!r->cg_dir || !r->ok[SET_RECLAIM] ||
	    settled_usage(r->ctx, r->cg_dir, r->pid, &before) < 0)
		return;
	snprintf(cmd, sizeof(cmd), "%" PRIu64, s->reclaim_zero_bytes);
	if (thps_path(path, sizeof(path), r->cg_dir, "memory.reclaim") < 0)
		return;
	(void)write_file_string(path, cmd); /* EAGAIN also when it freed: measure */
	if (settled_usage(r->ctx, r->cg_dir, r->pid, &after) >= 0)
		s->reclaim_freed = (int64_t)(before - after);
}

static void measure_size(const struct thps_ctx *ctx, const struct thps_geometry *g,
			 const struct thps_measure *m, const char *cg_dir, const char *split_path,
			 struct thps_measure_size *s)
{
	struct run r = {.ctx = ctx,
			.g = g,
			.m = m,
			.cg_dir = cg_dir,
			.s = s,
			.pid = -1,
			.nr = (uint32_t)(s->size / g->page_size),
			.go = {-1, -1},
			.done = {-1, -1}};

	s->split_freed = s->reclaim_freed = INT64_MIN;
	s->cold_freed = s->cold_partial_freed = INT64_MIN;
	r.c = mmap(NULL, sizeof(*r.c), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r.c == MAP_FAILED) {
		note_add(s, "no shared memory for the canary: %s", strerror(errno));
		return;
	}
	memset(r.c, 0, sizeof(*r.c));
	if (spawn_canary(&r) == 0 && verify_folios(&r) == 0) {
		measure_debugfs_split(&r, split_path);
		measure_cold_split(&r);
		measure_reclaim(&r);
	}
	if (r.pid > 0) {
		kill(r.pid, SIGKILL);
		while (waitpid(r.pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	for (unsigned i = 0; i < 2; i++) {
		if (r.go[i] >= 0)
			close(r.go[i]);
		if (r.done[i] >= 0)
			close(r.done[i]);
	}
	munmap(r.c, sizeof(*r.c));
}

/* A scratch cgroup under a cgroup v2 root whose children get the memory controller. */
static int scratch_cgroup(const struct thps_ctx *ctx, char *dir, size_t size)
{
	_cleanup_free_ char *text = NULL;
	char root[PATH_MAX], path[PATH_MAX];
	bool v2mem = false;
	int r;

	r = thps_memcg_find(ctx, root, sizeof(root), &v2mem);
	if (r != 2 || !v2mem)
		return -ENOENT;
	if (thps_path(path, sizeof(path), root, "cgroup.subtree_control") < 0 ||
	    read_file_bounded(path, 4096, &text, NULL) < 0 || !strstr(text, "memory"))
		return -ENOENT;
	r = thps_path(dir, size, root, "thpshrink-probe.%d", (int)getpid());
	if (r < 0)
		return r;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return negative_errno();
	return 0;
}

static void remove_scratch(const char *dir)
{
	for (int i = 0; i < 50; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return;
		usleep(20 * 1000); /* the killed canary may still be leaving */
	}
}

int thps_probe_measure(const struct thps_ctx *ctx, const struct thps_geometry *g, bool force,
		       struct thps_measure *m)
{
	char cg[PATH_MAX], split[PATH_MAX];
	const char *cg_dir = NULL, *split_path = NULL;

	memset(m, 0, sizeof(*m));
	if (geteuid() != 0) {
		snprintf(m->why, sizeof(m->why), "not measured: needs root (kpageflags, debugfs)");
		return 0;
	}
	if (scratch_cgroup(ctx, cg, sizeof(cg)) == 0) {
		cg_dir = cg;
		snprintf(m->where, sizeof(m->where), "scratch cgroup '%.200s' (memory.current)",
			 cg);
	} else if (force) {
		snprintf(
		    m->where, sizeof(m->where),
		    "the canary process's anonymous memory (smaps_rollup), and "
		    "/proc/kpageflags for partially mapped folios (no scratch cgroup: no cgroup "
		    "v2 memory controller); memory.reclaim not measured");
	} else {
		snprintf(m->why, sizeof(m->why),
			 "not measured: no cgroup v2 memory controller for a "
			 "scratch cgroup ('thpshrink probe --measure' measures by the canary "
			 "process's RSS)");
		return 0;
	}
	if (thps_path(split, sizeof(split), ctx->debugfs_root, "split_huge_pages") == 0 &&
	    access(split, W_OK) == 0)
		split_path = split;
	m->debugfs_split = split_path != NULL;
	m->pmadvise_allowed = thps_pmadvise_allowed(ctx, m->pmadvise_why, sizeof(m->pmadvise_why));
	if (m->pmadvise_allowed < 0)
		snprintf(m->pmadvise_why, sizeof(m->pmadvise_why), "cannot read CapEff: %s",
			 strerror(-m->pmadvise_allowed));
	list_sizes(ctx, g, m);
	if (m->n == 0)
		snprintf(m->why, sizeof(m->why),
			 "not measured: the kernel allocates no anonymous "
			 "large folio now (every size 'never')");
	for (size_t i = 0; i < m->n; i++) {
		measure_size(ctx, g, m, cg_dir, split_path, &m->sizes[i]);
		thps_measure_decide(m, &m->sizes[i]);
	}
	if (cg_dir)
		remove_scratch(cg_dir);
	m->ran = m->n > 0;
	return 0;
}

static int pct(int64_t freed, uint64_t zero)
{
	if (freed == INT64_MIN || zero == 0)
		return -1;
	if (freed <= 0)
		return 0;
	return (int)MIN((uint64_t)freed * 100 / zero, (uint64_t)999);
}

int thps_measure_split_pct(const struct thps_measure_size *s)
{
	return pct(s->split_freed, s->zero_bytes);
}

int thps_measure_reclaim_pct(const struct thps_measure_size *s)
{
	return pct(s->reclaim_freed, s->reclaim_zero_bytes);
}

int thps_measure_cold_pct(const struct thps_measure_size *s)
{
	return pct(s->cold_freed, s->cold_zero_bytes);
}

int thps_measure_cold_partial_pct(const struct thps_measure_size *s)
{
	return pct(s->cold_partial_freed, s->cold_partial_unmapped_bytes);
}

const char *thps_measure_mech_name(enum thps_split_mech mech)
{
	switch (mech) {
	case THPS_SPLIT_MECH_PMADVISE:
		return "process_madvise";
	case THPS_SPLIT_MECH_DEBUGFS:
		return "debugfs";
	default:
		return "none";
	}
}

/* "42 %" or "not measured" */
static const char *pct_str(char *buf, size_t size, int p)
{
	if (p < 0)
		snprintf(buf, size, "not measured");
	else
		snprintf(buf, size, "%d %%", p);
	return buf;
}

void thps_measure_decide(const struct thps_measure *m, struct thps_measure_size *s)
{
	int cp = thps_measure_cold_pct(s), pp = thps_measure_cold_partial_pct(s),
	    sp = thps_measure_split_pct(s);
	bool sparse = cp >= THPS_MEASURE_FREES_PCT, partial = pp >= THPS_MEASURE_FREES_PCT;
	char a[16], b[16], nope[300];

	if (m->pmadvise_allowed > 0 && sparse) {
		s->mech = THPS_SPLIT_MECH_PMADVISE;
		snprintf(s->mech_why, sizeof(s->mech_why),
			 "process_madvise(MADV_COLD) on one page per folio measured freeing %d %% "
			 "of sparse folios' zero bytes, %s of partially mapped folios' unmapped "
			 "bytes",
			 cp, pct_str(b, sizeof(b), pp));
		return;
	}
	if (m->pmadvise_allowed > 0 && partial) {
		s->mech = THPS_SPLIT_MECH_PMADVISE;
		snprintf(s->mech_why, sizeof(s->mech_why),
			 "process_madvise(MADV_COLD) measured freeing %d %% of partially mapped "
			 "folios' unmapped bytes; a split keeps zero subpages here (%s freed), so "
			 "sparse folios are only reported",
			 pp, pct_str(a, sizeof(a), cp));
		return;
	}
	if (m->pmadvise_allowed <= 0)
		snprintf(nope, sizeof(nope), "not process_madvise: %.250s", m->pmadvise_why);
	else if (cp < 0 && pp < 0)
		snprintf(nope, sizeof(nope), "not process_madvise: its split was not measured");
	else
		snprintf(nope, sizeof(nope),
			 "not process_madvise: it freed %s of zero bytes, %s of unmapped bytes",
			 pct_str(a, sizeof(a), cp), pct_str(b, sizeof(b), pp));
	if (m->debugfs_split && sp >= 0) {
		s->mech = THPS_SPLIT_MECH_DEBUGFS;
		snprintf(s->mech_why, sizeof(s->mech_why),
			 "debugfs split_huge_pages measured freeing %d %% of zero bytes; %.250s",
			 sp, nope);
		return;
	}
	s->mech = THPS_SPLIT_MECH_NONE;
	snprintf(s->mech_why, sizeof(s->mech_why), "no exact split: %.180s; debugfs %s", nope,
		 m->debugfs_split ? "split not measured" : "split_huge_pages not writable");
}

static void fmt_result(char *buf, size_t size, int64_t freed, uint64_t zero, uint32_t folios,
		       const char *what)
{
	int p = pct(freed, zero);

	if (p < 0)
		snprintf(buf, size, "not measured");
	else
		snprintf(buf, size, "%" PRId64 " of %" PRIu64 " %s bytes freed (%d %%, %u folios)",
			 freed, zero, what, p, folios);
}

static void size_name(char *buf, size_t size, uint64_t bytes)
{
	if (bytes >= (UINT64_C(1) << 20))
		snprintf(buf, size, "%" PRIu64 " MiB", bytes >> 20);
	else
		snprintf(buf, size, "%" PRIu64 " KiB", bytes >> 10);
}

void thps_measure_print(FILE *f, const struct thps_measure *m)
{
	if (!m->ran) {
		fprintf(f, "measured: %s\n", m->why[0] ? m->why : "not measured");
		return;
	}
	fprintf(f, "measured on canary memory, by %s:\n", m->where);
	for (size_t i = 0; i < m->n; i++) {
		const struct thps_measure_size *s = &m->sizes[i];
		char sz[32], a[128], b[128];

		size_name(sz, sizeof(sz), s->size);
		fprintf(f, "  %-8s [%s] splits by %s: %s\n", sz, s->mode,
			thps_measure_mech_name(s->mech), s->mech_why);
		fmt_result(a, sizeof(a), s->cold_freed, s->cold_zero_bytes, s->cold_folios, "zero");
		fmt_result(b, sizeof(b), s->cold_partial_freed, s->cold_partial_unmapped_bytes,
			   s->cold_partial_folios, "unmapped");
		fprintf(f, "%10s process_madvise(MADV_COLD): sparse: %s; partially mapped: %s\n",
			"", a, b);
		fmt_result(a, sizeof(a), s->split_freed, s->zero_bytes, s->folios, "zero");
		fmt_result(b, sizeof(b), s->reclaim_freed, s->reclaim_zero_bytes, s->reclaim_folios,
			   "zero");
		fprintf(f, "%10s debugfs split: %s; memory.reclaim: %s\n", "", a, b);
		if (s->note[0])
			fprintf(f, "%10s note: %s\n", "", s->note);
	}
}

/* "KEY_bytes" and "KEY_pct" of one measurement: null when not measured. */
static void add_freed(json_object *e, const char *bytes_key, const char *pct_key, int64_t freed,
		      int p)
{
	json_object_object_add(e, bytes_key,
			       freed == INT64_MIN ? NULL : json_object_new_int64(freed));
	json_object_object_add(e, pct_key, p < 0 ? NULL : json_object_new_int(p));
}

static json_object *size_to_json(const struct thps_measure_size *s)
{
	json_object *e = json_object_new_object();

	if (!e)
		return NULL;
	json_object_object_add(e, "size", json_object_new_int64((int64_t)s->size));
	json_object_object_add(e, "mode", json_object_new_string(s->mode));
	json_object_object_add(e, "mechanism",
			       json_object_new_string(thps_measure_mech_name(s->mech)));
	json_object_object_add(e, "mechanism_why", json_object_new_string(s->mech_why));
	json_object_object_add(e, "folios", json_object_new_int64(s->folios));
	json_object_object_add(e, "zero_bytes", json_object_new_int64((int64_t)s->zero_bytes));
	add_freed(e, "split_freed_bytes", "split_freed_pct", s->split_freed,
		  thps_measure_split_pct(s));
	json_object_object_add(e, "cold_folios", json_object_new_int64(s->cold_folios));
	json_object_object_add(e, "cold_zero_bytes",
			       json_object_new_int64((int64_t)s->cold_zero_bytes));
	add_freed(e, "cold_freed_bytes", "cold_freed_pct", s->cold_freed, thps_measure_cold_pct(s));
	json_object_object_add(e, "cold_partial_folios",
			       json_object_new_int64(s->cold_partial_folios));
	json_object_object_add(e, "cold_partial_unmapped_bytes",
			       json_object_new_int64((int64_t)s->cold_partial_unmapped_bytes));
	add_freed(e, "cold_partial_freed_bytes", "cold_partial_freed_pct", s->cold_partial_freed,
		  thps_measure_cold_partial_pct(s));
	json_object_object_add(e, "reclaim_folios", json_object_new_int64(s->reclaim_folios));
	json_object_object_add(e, "reclaim_zero_bytes",
			       json_object_new_int64((int64_t)s->reclaim_zero_bytes));
	add_freed(e, "reclaim_freed_bytes", "reclaim_freed_pct", s->reclaim_freed,
		  thps_measure_reclaim_pct(s));
	json_object_object_add(e, "note", json_object_new_string(s->note));
	return e;
}

json_object *thps_measure_to_json(const struct thps_measure *m)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();

	if (!o || !arr)
		goto fail;
	json_object_object_add(o, "ran", json_object_new_boolean(m->ran));
	json_object_object_add(o, "why", m->ran ? NULL : json_object_new_string(m->why));
	json_object_object_add(o, "where", m->ran ? json_object_new_string(m->where) : NULL);
	for (size_t i = 0; i < m->n; i++) {
		json_object *e = size_to_json(&m->sizes[i]);

		if (!e)
			goto fail;
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "sizes", arr);
	return o;
fail:
	json_object_put(o);
	json_object_put(arr);
	return NULL;
}

/* The measured split figures, "2048K 99%" per size, for a finding's value. */
static void split_figures(const struct thps_measure *m, char *buf, size_t size, bool *ret_any,
			  bool *ret_frees)
{
	size_t len = 0;

	buf[0] = 0;
	*ret_any = *ret_frees = false;
	for (size_t i = 0; i < m->n; i++) {
		const struct thps_measure_size *s = &m->sizes[i];
		int p = MAX(thps_measure_split_pct(s), thps_measure_cold_pct(s));

		if (p < 0)
			continue;
		*ret_any = true;
		*ret_frees |= p >= THPS_MEASURE_FREES_PCT;
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%" PRIu64 "K %d%%",
						len ? ", " : "", s->size >> 10, p);
	}
}

static void apply_frees_zero(struct thps_probe *p, const struct thps_measure *m)
{
	struct thps_finding *f =
	    (struct thps_finding *)thps_probe_finding(p, "split.frees_zero_subpages");
	char figs[128];
	bool any, frees;

	split_figures(m, figs, sizeof(figs), &any, &frees);
	if (!any)
		return;
	p->split_frees_zero_subpages = frees;
	if (!f)
		return;
	f->ok = frees;
	snprintf(f->value, sizeof(f->value), "%s (measured: %s)", frees ? "yes" : "no", figs);
	snprintf(f->follows, sizeof(f->follows), "%s",
		 frees ? "Measured on canary folios: a split frees their zero subpages at once, so "
			 "splitting low-utilization folios gives their waste back."
		       : "Measured on canary folios: a split leaves their zero subpages mapped, so "
			 "splits free nothing of a sparse folio here (and reclaim frees nothing "
			 "without swap); a split still frees the unmapped subpages of partially "
			 "mapped folios.");
}

/* "42%" or "-" (not measured) */
static const char *pct_short(char *buf, size_t size, int p)
{
	if (p < 0)
		return "-";
	snprintf(buf, size, "%d%%", p);
	return buf;
}

/* The split.process_madvise finding and the probe's split mechanism, from the sizes' choices:
 * process_madvise where some size chose it, else debugfs where some size chose that. */
static void apply_pmadvise(struct thps_probe *p, const struct thps_measure *m)
{
	struct thps_finding *f =
	    (struct thps_finding *)thps_probe_finding(p, "split.process_madvise");
	enum thps_split_mech best = THPS_SPLIT_MECH_NONE;
	char figs[96] = "", a[16], b[16];
	size_t len = 0, measured = 0, split_measured = 0;

	for (size_t i = 0; i < m->n; i++) {
		const struct thps_measure_size *s = &m->sizes[i];
		int cp = thps_measure_cold_pct(s), pp = thps_measure_cold_partial_pct(s);

		if (s->mech == THPS_SPLIT_MECH_PMADVISE ||
		    (s->mech == THPS_SPLIT_MECH_DEBUGFS && best == THPS_SPLIT_MECH_NONE))
			best = s->mech;
		split_measured += cp >= 0 || pp >= 0 || thps_measure_split_pct(s) >= 0;
		if (cp < 0 && pp < 0)
			continue;
		measured++;
		if (len < sizeof(figs))
			len += (size_t)snprintf(figs + len, sizeof(figs) - len,
						"%s%" PRIu64 "K %s/%s", len ? ", " : "",
						s->size >> 10, pct_short(a, sizeof(a), cp),
						pct_short(b, sizeof(b), pp));
	}
	if (!split_measured)
		return; /* no split measured anywhere: the inferred answer stands */
	p->split_mech = best;
	p->split_mech_measured = true;
	if (f && measured) {
		f->ok = best == THPS_SPLIT_MECH_PMADVISE;
		snprintf(f->value, sizeof(f->value), "%s; measured zero/unmapped bytes freed: %s",
			 f->ok ? "allowed, used" : "not used", figs);
	}
}

void thps_probe_apply_measure(struct thps_probe *p, const struct thps_measure *m)
{
	if (!m->ran)
		return;
	apply_frees_zero(p, m);
	apply_pmadvise(p, m);
}
