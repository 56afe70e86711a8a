/* SPDX-License-Identifier: GPL-2.0-or-later */
/* finder-bench: the promote finder at scale, bounded and not, on a real process (real MMU).
 *
 *   finder-bench [VMAS [DENSE]]      (root: pagemap PFNs, kpageflags; no sysfs change)
 *
 * A child maps VMAS anonymous one-page VMAs (alternately writable and read-only, so none
 * merge: the default max_map_count, 65,530, caps a process at that), and DENSE 2 MiB windows of
 * touched 4 KiB pages after them (the host's THP mode must not be "always", or they are THPs).
 * The baseline, in the same run: one unbounded walk over the child (what each promote step did
 * per process before the bounds). Then the daemon's per-process bound (promote-bounds.h): the
 * walks, resumed where the last stopped, that cover the child, the costliest of them, and the
 * unit costs (a maps line skipped, a VMA looked at, a window confirmed) from which the step's
 * worst pass is bounded: PROMOTE_PASS_LINES_MAX lines and PROMOTE_PASS_WINDOWS_MAX windows,
 * plus one process's maps over it. Also thps_promote_pid's dry run (the finder and the smaps
 * read up to the last candidate). Exit 1 when the bounded walks miss a window, a walk passes
 * its bound, or the step's worst pass exceeds 1 % of a core at the 60 s default interval. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dense.h"
#include "promote-bounds.h"
#include "promote.h"

#define BEST_OF 5
#define THP	(UINT64_C(2) << 20)

static uint64_t cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The child: VMAS one-page VMAs, DENSE touched windows; writes their address to fd when ready. */
static void child(unsigned vmas, unsigned dense, int fd)
{
	size_t span = (size_t)vmas * 4096;
	char *a = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *d = mmap(NULL, (dense + 1) * THP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (a == MAP_FAILED || d == MAP_FAILED)
		_exit(2);
	for (unsigned i = 0; i < vmas; i++) {
		a[(size_t)i * 4096] = 1;
		if (i % 2 && mprotect(a + (size_t)i * 4096, 4096, PROT_READ) < 0)
			_exit(3); /* max_map_count */
	}
	d = (char *)(((uintptr_t)d + THP - 1) & ~(THP - 1));
	memset(d, 1, dense * THP); /* 4 KiB pages: THP mode is not "always" (main checks) */
	if (write(fd, &d, sizeof(d)) != sizeof(d))
		_exit(4);
	pause();
	_exit(0);
}

struct walk_figures {
	uint64_t ns, lines, vmas, windows, dense;
};

static int count_dense(void *ud, uint64_t addr)
{
	(void)addr;
	(*(uint64_t *)ud)++;
	return 0;
}

/* One walk from resume within the bounds, best of BEST_OF by CPU. */
static int walk(struct thps_dense_finder *f, const struct thps_ctx *ctx, pid_t pid, uint64_t resume,
		uint64_t max_vmas, uint64_t max_windows, struct walk_figures *w)
{
	w->ns = UINT64_MAX;
	for (int k = 0; k < BEST_OF; k++) {
		uint64_t n = 0, t0 = cpu_ns();
		int r;

		f->resume_addr = resume;
		f->max_vmas = max_vmas;
		f->max_windows = max_windows;
		r = thps_dense_walk(f, ctx, pid, count_dense, &n);
		if (r < 0)
			return r;
		t0 = cpu_ns() - t0;
		if (t0 < w->ns)
			w->ns = t0;
		w->lines = f->lines;
		w->vmas = f->vmas;
		w->windows = f->windows;
		w->dense = n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned vmas = argc > 1 ? (unsigned)atoi(argv[1]) : 60000;
	unsigned dense = argc > 2 ? (unsigned)atoi(argv[2]) : 512;
	struct thps_geometry g;
	struct thps_dense_finder f;
	struct thps_ctx ctx;
	struct walk_figures base, w, worst = {0}, skip, wins;
	uint64_t resume = 0, found = 0, walks = 0;
	double line_us = 0, vma_us = 0, win_us = 0, pass_s = 0;
	int p[2], rc = 0, r;
	pid_t pid;
	void *dense_at;

	if (geteuid() != 0) {
		fprintf(stderr, "finder-bench: needs root (pagemap PFNs, kpageflags)\n");
		return 77;
	}
	{
		FILE *m = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
		char mode[128] = "";

		if (m && fgets(mode, sizeof(mode), m) && strstr(mode, "[always]")) {
			fprintf(stderr,
				"finder-bench: SKIP: THP mode is always here: the dense "
				"windows would be THPs (this bench changes no sysfs setting)\n");
			fclose(m);
			return 77;
		}
		if (m)
			fclose(m);
	}
	thps_geometry_default(&g);
	thps_ctx_init(&ctx);
	if (pipe(p) < 0)
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		close(p[0]);
		child(vmas, dense, p[1]);
	}
	close(p[1]);
	if (read(p[0], &dense_at, sizeof(dense_at)) != sizeof(dense_at)) {
		fprintf(stderr, "finder-bench: the child could not map %u VMAs (max_map_count?)\n",
			vmas);
		rc = 2;
		goto out;
	}
	if (thps_dense_init(&f, &g, true) < 0) {
		rc = 2;
		goto out;
	}

	printf(
	    "finder-bench: a process with %u one-page VMAs and %u dense 2 MiB windows after "
	    "them; bounds %u VMAs and %u windows per process, %u lines and %u windows per pass\n",
	    vmas, dense, PROMOTE_PROCESS_VMAS_MAX, PROMOTE_PROCESS_WINDOWS_MAX,
	    PROMOTE_PASS_LINES_MAX, PROMOTE_PASS_WINDOWS_MAX);
	r = walk(&f, &ctx, pid, 0, 0, 0, &base);
	if (r < 0) {
		fprintf(stderr, "finder-bench: walk: %s\n", strerror(-r));
		rc = 2;
		goto out_f;
	}
	printf("  baseline (unbounded, one walk): %.2f ms CPU; %" PRIu64 " maps lines, %" PRIu64
	       " VMAs, %" PRIu64 " windows, %" PRIu64 " dense (%s)\n",
	       base.ns / 1e6, base.lines, base.vmas, base.windows, base.dense,
	       thps_dense_method(&f));

	/* the daemon's per-process bound, resumed until the end */
	do {
		r = walk(&f, &ctx, pid, resume, PROMOTE_PROCESS_VMAS_MAX,
			 PROMOTE_PROCESS_WINDOWS_MAX, &w);
		if (r < 0) {
			rc = 2;
			goto out_f;
		}
		walks++;
		found += w.dense;
		if (w.vmas > PROMOTE_PROCESS_VMAS_MAX || w.windows > PROMOTE_PROCESS_WINDOWS_MAX) {
			printf("FAIL: a walk looked at %" PRIu64 " VMAs and %" PRIu64 " windows\n",
			       w.vmas, w.windows);
			rc = 1;
		}
		if (w.ns > worst.ns)
			worst = w;
		resume = f.next_addr;
	} while (resume && walks < 1000);
	printf("  bounded: %" PRIu64 " walks (one a pass) cover it; the costliest %.2f ms CPU "
	       "(%" PRIu64 " lines, %" PRIu64 " VMAs, %" PRIu64 " windows); %" PRIu64
	       " dense found in all\n",
	       walks, worst.ns / 1e6, worst.lines, worst.vmas, worst.windows, found);
	if (found != base.dense) {
		printf("FAIL: the bounded walks found %" PRIu64
		       " dense windows, the baseline %" PRIu64 "\n",
		       found, base.dense);
		rc = 1;
	}

	/* unit costs: skipping every line (a walk resumed past the end), and the baseline's rest */
	r = walk(&f, &ctx, pid, UINT64_MAX - 2 * THP, 0, 0, &skip);
	if (r < 0) {
		rc = 2;
		goto out_f;
	}
	/* and the dense windows alone (a walk resumed at them: the lines before are skipped) */
	r = walk(&f, &ctx, pid, (uint64_t)(uintptr_t)dense_at, 0, 0, &wins);
	if (r < 0) {
		rc = 2;
		goto out_f;
	}
	line_us = skip.ns / 1e3 / (double)(skip.lines ? skip.lines : 1);
	win_us = wins.windows ? (wins.ns / 1e3 - line_us * wins.lines) / (double)wins.windows : 0;
	vma_us = (base.ns / 1e3 - line_us * base.lines - win_us * base.windows) /
		 (double)(base.vmas ? base.vmas : 1);
	if (vma_us < 0)
		vma_us = 0;
	if (win_us < 0)
		win_us = 0;
	printf(
	    "  unit costs: %.3f us a maps line read and skipped, %.3f us more a VMA looked at "
	    "(one PAGEMAP_SCAN), %.3f us more a window confirmed (4 KiB of pagemap, kpageflags)\n",
	    line_us, vma_us, win_us);
	/* the step's worst pass: its two bounds, one process's maps over them (max_map_count
	 * lines, each also a VMA looked at) */
	pass_s = (PROMOTE_PASS_LINES_MAX * (line_us + vma_us) + PROMOTE_PASS_WINDOWS_MAX * win_us +
		  65530 * (line_us + vma_us)) /
		 1e6;
	printf("  the step's worst pass: %.3f s CPU = %.2f %% of a core at the 60 s interval "
	       "(goal <= 1 %%); unbounded, a pass cost %.3f s per such process, with no limit on "
	       "processes\n",
	       pass_s, pass_s / 60 * 100, base.ns / 1e9);
	printf("  100 processes like this one: unbounded %.2f s a pass (%.1f %% of a core), "
	       "bounded %.3f s at most (%.2f %%)\n",
	       100 * base.ns / 1e9, 100 * base.ns / 1e9 / 60 * 100, pass_s, pass_s / 60 * 100);
	if (pass_s / 60 > 0.01) {
		printf("FAIL: the step's worst pass is over 1 %% of a core\n");
		rc = 1;
	}

	/* the whole dry run of a process: the finder and smaps up to the last candidate */
	{
		struct thps_promote_opts o = {.dry_run = true,
					      .use_scan = true,
					      .fallback_budget = UINT64_C(64) << 30,
					      .max_vmas = PROMOTE_PROCESS_VMAS_MAX,
					      .max_windows = PROMOTE_PROCESS_WINDOWS_MAX};
		uint64_t best = UINT64_MAX;

		for (int k = 0; k < BEST_OF; k++) {
			struct thps_promote_result res = {};
			uint64_t t0 = cpu_ns();

			o.resume_addr = 0;
			do {
				r = thps_promote_pid(&ctx, &g, pid, &o, &res);
				o.resume_addr = res.next_addr;
			} while (r == 0 && res.next_addr);
			t0 = cpu_ns() - t0;
			best = t0 < best ? t0 : best;
			if (r < 0 || res.ranges_found != base.dense) {
				printf("FAIL: promote dry run: %s, %" PRIu64 " found\n",
				       strerror(-r), res.ranges_found);
				rc = 1;
			}
		}
		printf("  promote dry run (finder + smaps up to the last candidate), all walks: "
		       "%.2f ms CPU\n",
		       best / 1e6);
	}
	/* a result line (tests/vm's format): scripts/results-tables and the docs read these */
	printf("%s bench-finder.worst-pass %.3f s CPU = %.2f %% of a core at 60 s (goal <= 1 %%); "
	       "unbounded %.1f ms a %u-VMA process, %" PRIu64 " bounded walks cover it; %.3f us a "
	       "maps line, %.1f us a window\n",
	       rc ? "FAIL" : "PASS", pass_s, pass_s / 60 * 100, base.ns / 1e6, vmas, walks, line_us,
	       win_us);
out_f:
	thps_dense_done(&f);
out:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return rc;
}
