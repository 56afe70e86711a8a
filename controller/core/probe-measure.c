/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Measured probe: canary folios of every size the kernel allocates now, split and reclaimed,
 * and what left the scratch cgroup measured (probe-measure.h). One child per size, so a
 * measurement of one size never sees another size's canaries. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "probe-measure.h"
#include "probe.h"

#define CANARY_MAX   64			 /* folios per group */
#define CANARY_BYTES (UINT64_C(4) << 20) /* per group, at least 2 folios */
#define KPF_ANON     12
#define KPF_HEAD     15
#define KPF_TAIL     16
#define KPF_THP	     22
#define PM_PRESENT   (UINT64_C(1) << 63)
#define PM_PFN	     ((UINT64_C(1) << 55) - 1)

struct canary {
	uint64_t addr[2][CANARY_MAX]; /* [0] split set, [1] reclaim set */
	uint32_t n[2];
	int err; /* the child's -errno */
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

/* The child: waits for the go, faults in both groups of canary folios of size S (each in its
 * own VMA of exactly S, PROT_NONE between them so no VMA merges into room for a bigger folio),
 * one non-zero byte each, reports, and waits to be killed. It dies with its parent: a probe
 * killed mid-measure (SIGKILL, OOM, a watchdog) must not leave a canary holding THPs forever;
 * getppid() catches a parent that died before the prctl. (The signal follows the thread that
 * forked: the daemon and the CLI measure from their main thread.) */
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
	raw = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED) {
		c->err = -errno;
		goto report;
	}
	base = (uint8_t *)(((uintptr_t)raw + s - 1) & ~(uintptr_t)(s - 1));
	for (unsigned k = 0; k < 2; k++)
		for (uint32_t i = 0; i < n; i++) {
			uint8_t *slot = base + (size_t)(2 * (k * n + i)) * s;

			if (mprotect(slot, s, PROT_READ | PROT_WRITE) < 0) {
				c->err = -errno;
				goto report;
			}
			(void)madvise(slot, s, MADV_HUGEPAGE);
			*(volatile uint8_t *)slot = 0x5a;
			c->addr[k][i] = (uintptr_t)slot;
			c->n[k] = i + 1;
		}
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

/* Is the child's memory at addr one anonymous folio of exactly nr pages? */
static bool is_folio(const struct thps_ctx *ctx, pid_t pid, uint64_t addr, uint32_t nr,
		     uint32_t page_size)
{
	uint64_t pm[512], fl[513], head;
	char path[PATH_MAX];

	if (nr > 512)
		return false;
	if (thps_path(path, sizeof(path), ctx->proc_root, "%d/pagemap", (int)pid) < 0 ||
	    pread_all(path, pm, nr * sizeof(pm[0]), addr / page_size * sizeof(pm[0])) < 0)
		return false;
	head = pm[0] & PM_PFN;
	for (uint32_t i = 0; i < nr; i++)
		if (!(pm[i] & PM_PRESENT) || (pm[i] & PM_PFN) != head + i)
			return false;
	if (head % nr)
		return false;
	if (thps_path(path, sizeof(path), ctx->proc_root, "kpageflags") < 0 ||
	    pread_all(path, fl, (nr + 1) * sizeof(fl[0]), head * sizeof(fl[0])) < 0)
		return false;
	if (!(fl[0] & (UINT64_C(1) << KPF_HEAD)) || !(fl[0] & (UINT64_C(1) << KPF_THP)) ||
	    !(fl[0] & (UINT64_C(1) << KPF_ANON)))
		return false;
	for (uint32_t i = 1; i < nr; i++)
		if (!(fl[i] & (UINT64_C(1) << KPF_TAIL)) || (fl[i] & (UINT64_C(1) << KPF_HEAD)))
			return false;
	/* the next page must not be a tail of the same folio (a bigger one) */
	return !(fl[nr] & (UINT64_C(1) << KPF_TAIL)) || (fl[nr] & (UINT64_C(1) << KPF_HEAD));
}

/* What the canary holds now: memory.current of the scratch cgroup, or the child's RssAnon. */
static int usage(const struct thps_ctx *ctx, const char *cg_dir, pid_t pid, uint64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	const char *p;
	int r;

	if (cg_dir) {
		if (thps_path(path, sizeof(path), cg_dir, "memory.current") < 0)
			return -ENAMETOOLONG;
		return read_u64_file(path, ret);
	}
	r = thps_path(path, sizeof(path), ctx->proc_root, "%d/status", (int)pid);
	if (r < 0)
		return r;
	r = read_file_bounded(path, 64 * 1024, &text, NULL);
	if (r < 0)
		return r;
	p = strstr(text, "\nRssAnon:");
	if (!p)
		return -ENODATA;
	*ret = strtoull(p + 9, NULL, 10) * 1024;
	return 0;
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

static void measure_size(const struct thps_ctx *ctx, const struct thps_geometry *g,
			 const char *cg_dir, const char *split_path, struct thps_measure_size *s)
{
	int go[2] = {-1, -1}, done[2] = {-1, -1};
	struct canary *c;
	uint32_t nr = (uint32_t)(s->size / g->page_size), ok[2] = {0, 0};
	uint64_t before, after;
	char b, path[PATH_MAX], cmd[96];
	pid_t pid, parent;
	int r;

	s->split_freed = s->reclaim_freed = INT64_MIN;
	c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED) {
		snprintf(s->note, sizeof(s->note), "no shared memory for the canary: %s",
			 strerror(errno));
		return;
	}
	memset(c, 0, sizeof(*c));
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(done, O_CLOEXEC) < 0) {
		snprintf(s->note, sizeof(s->note), "pipe: %s", strerror(errno));
		goto out;
	}
	parent = getpid();
	pid = fork();
	if (pid < 0) {
		snprintf(s->note, sizeof(s->note), "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		child_run(go[0], done[1], c, s->size, parent);
	close(go[0]);
	close(done[1]);
	go[0] = done[1] = -1;
	if (cg_dir) {
		snprintf(cmd, sizeof(cmd), "%d", (int)pid);
		if (thps_path(path, sizeof(path), cg_dir, "cgroup.procs") < 0 ||
		    write_file_string(path, cmd) < 0) {
			snprintf(s->note, sizeof(s->note), "cannot move the canary into '%.100s'",
				 cg_dir);
			goto kill;
		}
	}
	b = 1;
	if (write(go[1], &b, 1) != 1 || read(done[0], &b, 1) != 1) {
		snprintf(s->note, sizeof(s->note), "the canary process died");
		goto kill;
	}
	if (c->err < 0) {
		snprintf(s->note, sizeof(s->note), "the canary could not map its memory: %s",
			 strerror(-c->err));
		goto kill;
	}
	for (unsigned k = 0; k < 2; k++)
		for (uint32_t i = 0; i < c->n[k]; i++) {
			if (is_folio(ctx, pid, c->addr[k][i], nr, g->page_size))
				c->addr[k][ok[k]++] = c->addr[k][i];
		}
	s->folios = ok[0];
	s->zero_bytes = (uint64_t)ok[0] * (nr - 1) * g->page_size;
	s->reclaim_folios = ok[1];
	s->reclaim_zero_bytes = (uint64_t)ok[1] * (nr - 1) * g->page_size;
	if (!ok[0] && !ok[1]) {
		snprintf(s->note, sizeof(s->note),
			 "the kernel gave no folio of this size to %u tries "
			 "(memory fragmented, or a policy of the kernel)",
			 c->n[0] + c->n[1]);
		goto kill;
	}
	/* 1. debugfs split of the first set, to order 0 */
	if (split_path && ok[0] && settled_usage(ctx, cg_dir, pid, &before) >= 0) {
		uint32_t refused = 0;

		for (uint32_t i = 0; i < ok[0]; i++) {
			snprintf(cmd, sizeof(cmd), "%d,0x%" PRIx64 ",0x%" PRIx64, (int)pid,
				 c->addr[0][i], c->addr[0][i] + s->size);
			refused += write_file_string(split_path, cmd) < 0;
		}
		if (settled_usage(ctx, cg_dir, pid, &after) >= 0)
			s->split_freed = (int64_t)(before - after);
		if (refused)
			snprintf(s->note, sizeof(s->note), "%u of %u splits refused by the kernel",
				 refused, ok[0]);
	} else if (!split_path) {
		snprintf(s->note, sizeof(s->note),
			 "split not measured: debugfs split_huge_pages "
			 "is not writable");
	}
	/* 2. memory.reclaim of the second set's zero bytes (scratch cgroup only) */
	if (cg_dir && ok[1] && settled_usage(ctx, cg_dir, pid, &before) >= 0) {
		snprintf(cmd, sizeof(cmd), "%" PRIu64, s->reclaim_zero_bytes);
		if (thps_path(path, sizeof(path), cg_dir, "memory.reclaim") >= 0) {
			r = write_file_string(path, cmd); /* EAGAIN also when it freed: measure */
			(void)r;
			if (settled_usage(ctx, cg_dir, pid, &after) >= 0)
				s->reclaim_freed = (int64_t)(before - after);
		}
	}
kill:
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
out:
	for (unsigned i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (done[i] >= 0)
			close(done[i]);
	}
	munmap(c, sizeof(*c));
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
		snprintf(m->where, sizeof(m->where),
			 "the canary process's RssAnon (no scratch "
			 "cgroup: no cgroup v2 memory controller); memory.reclaim not measured");
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
	list_sizes(ctx, g, m);
	if (m->n == 0)
		snprintf(m->why, sizeof(m->why),
			 "not measured: the kernel allocates no anonymous "
			 "large folio now (every size 'never')");
	for (size_t i = 0; i < m->n; i++)
		measure_size(ctx, g, cg_dir, split_path, &m->sizes[i]);
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

static void fmt_result(char *buf, size_t size, int64_t freed, uint64_t zero, uint32_t folios)
{
	int p = pct(freed, zero);

	if (p < 0)
		snprintf(buf, size, "not measured");
	else
		snprintf(buf, size,
			 "%" PRId64 " of %" PRIu64 " zero bytes freed (%d %%, %u folios)", freed,
			 zero, p, folios);
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

		if (s->size >= (UINT64_C(1) << 20))
			snprintf(sz, sizeof(sz), "%" PRIu64 " MiB", s->size >> 20);
		else
			snprintf(sz, sizeof(sz), "%" PRIu64 " KiB", s->size >> 10);
		fmt_result(a, sizeof(a), s->split_freed, s->zero_bytes, s->folios);
		fmt_result(b, sizeof(b), s->reclaim_freed, s->reclaim_zero_bytes,
			   s->reclaim_folios);
		fprintf(f, "  %-8s [%s] split: %s; memory.reclaim: %s%s%s\n", sz, s->mode, a, b,
			s->note[0] ? "; " : "", s->note);
	}
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
		const struct thps_measure_size *s = &m->sizes[i];
		json_object *e = json_object_new_object();
		int sp = thps_measure_split_pct(s), rp = thps_measure_reclaim_pct(s);

		if (!e)
			goto fail;
		json_object_object_add(e, "size", json_object_new_int64((int64_t)s->size));
		json_object_object_add(e, "mode", json_object_new_string(s->mode));
		json_object_object_add(e, "folios", json_object_new_int64(s->folios));
		json_object_object_add(e, "zero_bytes",
				       json_object_new_int64((int64_t)s->zero_bytes));
		json_object_object_add(
		    e, "split_freed_bytes",
		    s->split_freed == INT64_MIN ? NULL : json_object_new_int64(s->split_freed));
		json_object_object_add(e, "split_freed_pct",
				       sp < 0 ? NULL : json_object_new_int(sp));
		json_object_object_add(e, "reclaim_folios",
				       json_object_new_int64(s->reclaim_folios));
		json_object_object_add(e, "reclaim_zero_bytes",
				       json_object_new_int64((int64_t)s->reclaim_zero_bytes));
		json_object_object_add(
		    e, "reclaim_freed_bytes",
		    s->reclaim_freed == INT64_MIN ? NULL : json_object_new_int64(s->reclaim_freed));
		json_object_object_add(e, "reclaim_freed_pct",
				       rp < 0 ? NULL : json_object_new_int(rp));
		json_object_object_add(e, "note", json_object_new_string(s->note));
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "sizes", arr);
	return o;
fail:
	json_object_put(o);
	json_object_put(arr);
	return NULL;
}

void thps_probe_apply_measure(struct thps_probe *p, const struct thps_measure *m)
{
	struct thps_finding *f =
	    (struct thps_finding *)thps_probe_finding(p, "split.frees_zero_subpages");
	char figs[160] = "";
	size_t len = 0;
	bool any = false, frees = false;

	if (!m->ran)
		return;
	for (size_t i = 0; i < m->n; i++) {
		int sp = thps_measure_split_pct(&m->sizes[i]);

		if (sp < 0)
			continue;
		any = true;
		frees |= sp >= 50;
		if (len < sizeof(figs))
			len += snprintf(figs + len, sizeof(figs) - len, "%s%" PRIu64 "K %d%%",
					len ? ", " : "", m->sizes[i].size >> 10, sp);
	}
	if (!any)
		return;
	p->split_frees_zero_subpages = frees;
	if (f) {
		f->ok = frees;
		snprintf(f->value, sizeof(f->value), "%s (measured: %s)", frees ? "yes" : "no",
			 figs);
		snprintf(f->follows, sizeof(f->follows), "%s",
			 frees ? "Measured on canary folios: a split frees their zero subpages at "
				 "once, so splitting low-utilization folios gives their waste back."
			       : "Measured on canary folios: a split leaves their zero subpages "
				 "mapped, so splits free nothing here (and reclaim frees nothing "
				 "without swap); thpshrink can only report.");
	}
}
