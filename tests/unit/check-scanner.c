/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the scanner: pagemap/kpageflags/maps decoding and the whole collect() over
 * the committed fake /proc tree (tests/fixtures/scanner, see make-fixtures.py), cgroup
 * discovery on a temp tree, the zero check against its scalar reference, the PFN set. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroups.h"
#include "dense.h"
#include "macro.h"
#include "kpageflags.h"
#include "maps.h"
#include "memo.h"
#include "pagemap.h"
#include "pfnset.h"
#include "plugin.h"
#include "folios.h"
#include "proc.h"
#include "scanner.h"
#include "zero.h"
#include "test-main.h"

#define FIX_PROC SCANNER_FIXTURES "/proc"

static char tmpdir[64];

static void mkdir_p(const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void setup_tmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check-scanner-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown_tmp(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void fixture_ctx(struct thps_ctx *ctx, const char *proc, const char *cg)
{
	memset(ctx, 0, sizeof(*ctx));
	snprintf(ctx->proc_root, sizeof(ctx->proc_root), "%s", proc);
	snprintf(ctx->sys_root, sizeof(ctx->sys_root), "/nonexistent");
	snprintf(ctx->cgroup_root, sizeof(ctx->cgroup_root), "%s", cg);
}

START_TEST(test_pagemap_bits)
{
	uint64_t e = THPS_PM_PRESENT | THPS_PM_EXCLUSIVE | 0x1234;

	ck_assert(thps_pm_present(e));
	ck_assert(thps_pm_anon_present(e));
	ck_assert_uint_eq(thps_pm_pfn(e), 0x1234);
	ck_assert(!thps_pm_anon_present(e | THPS_PM_FILE));
	ck_assert(!thps_pm_anon_present(THPS_PM_SWAPPED | 5));
	ck_assert(!thps_pm_present(0x1234));
	ck_assert_uint_eq(thps_pm_pfn(UINT64_MAX), (UINT64_C(1) << 55) - 1);
}
END_TEST

START_TEST(test_whole_thp)
{
	uint64_t e[512];

	for (unsigned i = 0; i < 512; i++)
		e[i] = THPS_PM_PRESENT | (1024 + i);
	ck_assert(thps_pm_entries_whole_thp(e, 512));
	e[300] = 0;
	ck_assert(!thps_pm_entries_whole_thp(e, 512));
	e[300] = THPS_PM_PRESENT | 7; /* not contiguous */
	ck_assert(!thps_pm_entries_whole_thp(e, 512));
	for (unsigned i = 0; i < 512; i++)
		e[i] = THPS_PM_PRESENT | (1025 + i); /* unaligned head */
	ck_assert(!thps_pm_entries_whole_thp(e, 512));
}
END_TEST

START_TEST(test_kpageflags_bits)
{
	uint64_t head = THPS_KPF(THP) | THPS_KPF(COMPOUND_HEAD) | THPS_KPF(ANON);
	uint64_t tail = THPS_KPF(THP) | THPS_KPF(COMPOUND_TAIL) | THPS_KPF(ANON);

	ck_assert(thps_kpf_is_anon_thp_head(head));
	ck_assert(!thps_kpf_is_anon_thp_head(tail));
	ck_assert(thps_kpf_is_anon_thp_page(tail));
	ck_assert(!thps_kpf_is_anon_thp_head(head | THPS_KPF(ZERO_PAGE)));
	ck_assert(!thps_kpf_is_anon_thp_head(head | THPS_KPF(HUGE)));
	ck_assert(!thps_kpf_is_anon_thp_head(head & ~THPS_KPF(ANON)));
	ck_assert(!thps_kpf_is_anon_thp_page(THPS_KPF(ANON)));
}
END_TEST

START_TEST(test_kpage_fixture)
{
	struct thps_ctx ctx;
	struct thps_kpage k;
	uint64_t f, ino, head;
	uint32_t pages;

	fixture_ctx(&ctx, FIX_PROC, "/nonexistent");
	ck_assert_int_eq(thps_kpage_open(&ctx, 512, &k), 0);
	ck_assert_int_eq(thps_kpage_flags(&k, 1024, &f), 0);
	ck_assert(thps_kpf_is_anon_thp_head(f));
	ck_assert_int_eq(thps_kpage_flags(&k, 2560, &f), 0);
	ck_assert(!thps_kpf_is_anon_thp_head(f)); /* the huge zero page */
	ck_assert_int_eq(thps_kpage_cgroup(&k, 1536, &ino), 0);
	ck_assert_uint_eq(ino, 1002);
	ck_assert_int_eq(thps_kpage_flags(&k, 1 << 20, &f), -ENXIO);

	ck_assert_int_eq(thps_kpage_folio(&k, 1100, &head, &pages), 1);
	ck_assert_uint_eq(head, 1024);
	ck_assert_uint_eq(pages, 512);
	ck_assert_int_eq(thps_kpage_folio(&k, 2048 + 511, &head, &pages), 1);
	ck_assert_uint_eq(head, 2048);
	ck_assert_int_eq(thps_kpage_folio(&k, 2600, &head, &pages), 0);
	ck_assert_int_eq(thps_kpage_folio(&k, 3584, &head, &pages), 0);
	ck_assert_int_eq(thps_kpage_folio(&k, 10, &head, &pages), 0);
	thps_kpage_close(&k);
}
END_TEST

START_TEST(test_maps_lines)
{
	struct thps_vma v;

	ck_assert_int_eq(thps_maps_parse_line("00400000-00c00000 rw-p 00000000 00:00 0 \n", &v), 1);
	ck_assert_uint_eq(v.start, 0x400000);
	ck_assert_uint_eq(v.end, 0xc00000);
	ck_assert_int_eq(thps_maps_parse_line("7f00-8f00 rw-p 00000000 00:00 0     [heap]\n", &v),
			 1);
	ck_assert_int_eq(thps_maps_parse_line("7f00-8f00 rw-p 00000000 00:00 0  [anon:x y]\n", &v),
			 1);
	ck_assert_int_eq(thps_maps_parse_line("7f00-8f00 rw-s 00000000 00:01 4  /dev/zero\n", &v),
			 0);
	ck_assert_int_eq(thps_maps_parse_line("7f00-8f00 rw-p 00001000 08:01 77 /lib/x.so\n", &v),
			 0);
	ck_assert_int_eq(thps_maps_parse_line("7f00-8f00 r-xp 00000000 00:00 0  [vdso]\n", &v), 0);
	ck_assert_int_eq(thps_maps_parse_line("7f00-8f00 ---p 00000000 00:00 0\n", &v), 0);
	ck_assert_int_eq(thps_maps_parse_line("garbage\n", &v), -EINVAL);
	ck_assert_int_eq(thps_maps_parse_line("8f00-7f00 rw-p 00000000 00:00 0\n", &v), -EINVAL);
}
END_TEST

struct walk_log {
	uint64_t thp_addr[8], thp_pfn[8];
	unsigned n_thp, n_page;
	uint64_t first_page_pfn;
};

static int log_thp(void *ud, uint64_t addr, uint64_t pfn)
{
	struct walk_log *l = ud;

	ck_assert_uint_lt(l->n_thp, 8);
	l->thp_addr[l->n_thp] = addr;
	l->thp_pfn[l->n_thp++] = pfn;
	return 0;
}

static int log_page(void *ud, uint64_t addr _unused_, uint64_t pfn)
{
	struct walk_log *l = ud;

	if (l->n_page++ == 0)
		l->first_page_pfn = pfn;
	return 0;
}

START_TEST(test_walk_fixture)
{
	static const struct thps_pm_visitor v = {.thp = log_thp, .page = log_page};
	struct thps_pm_walker w;
	struct thps_geometry g;
	struct thps_ctx ctx;
	struct walk_log l = {0};

	thps_geometry_default(&g);
	fixture_ctx(&ctx, FIX_PROC, "/nonexistent");
	/* PAGEMAP_SCAN on a plain file fails with ENOTTY: the walker must fall back */
	ck_assert_int_eq(thps_pm_walker_init(&w, &g, true), 0);
	ck_assert_int_eq(thps_pm_walk(&w, &ctx, 100, &v, &l), 0);
	ck_assert_str_eq(thps_pm_walker_method(&w), "pagemap");
	ck_assert_uint_eq(l.n_thp, 2);
	ck_assert_uint_eq(l.thp_addr[0], 0x400000);
	ck_assert_uint_eq(l.thp_pfn[0], 1024);
	ck_assert_uint_eq(l.thp_addr[1], 0x800000);
	ck_assert_uint_eq(l.thp_pfn[1], 2560);
	ck_assert_uint_eq(l.n_page, 16 + 10);
	ck_assert_uint_eq(l.first_page_pfn, 2048);

	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(thps_pm_walk(&w, &ctx, 101, &v, &l), 0);
	ck_assert_uint_eq(l.n_thp, 2); /* the file mapping of B is not walked */
	ck_assert_int_eq(thps_pm_walk(&w, &ctx, 4242, &v, &l), -ESRCH);
	thps_pm_walker_done(&w);
}
END_TEST

/* Fake contents: utilized subpages per (pid, addr); pid 77 acts as a process that exits. */
static int fake_count(void *ud _unused_, pid_t pid, uint64_t addr, uint64_t len,
		      unsigned *ret_utilized, uint64_t *ret_bytes)
{
	*ret_bytes = len;
	if (pid == 101 && addr == 0x600000) {
		*ret_utilized = 300;
		return 0;
	}
	if (addr == 0x400000) {
		*ret_utilized = 3;
		return 0;
	}
	*ret_bytes = 0;
	return -EFAULT;
}

static int exiting_count(void *ud, pid_t pid, uint64_t addr, uint64_t len, unsigned *ret_utilized,
			 uint64_t *ret_bytes)
{
	if (pid == 100) {
		*ret_bytes = 4096;
		return -ESRCH;
	}
	return fake_count(ud, pid, addr, len, ret_utilized, ret_bytes);
}

static struct thps_cgroup_stats *by_path(struct thps_scan *s, const char *path)
{
	struct thps_cgroup_stats *c = thps_scan_find_path(s, path);

	ck_assert_msg(c != NULL, "no cgroup entry '%s'", path);
	return c;
}

START_TEST(test_collect_fixture)
{
	struct thps_scanner_hooks hooks = {.count = fake_count};
	struct thps_scan_opts opts = {.record_ranges = true};
	struct thps_cgroup_stats *c;
	struct thps_geometry g;
	struct thps_scan scan;
	struct thps_ctx ctx;

	mkdir_p("cg");
	thps_geometry_default(&g);
	fixture_ctx(&ctx, FIX_PROC, "");
	snprintf(ctx.cgroup_root, sizeof(ctx.cgroup_root), "%s/cg", tmpdir);
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);

	ck_assert_uint_eq(scan.summary.procs_scanned, 3);
	ck_assert_uint_eq(scan.summary.procs_skipped, 0);
	ck_assert_uint_eq(scan.summary.thps_scanned, 2); /* A and B; not the huge zero page */
	ck_assert_uint_eq(scan.summary.thps_shared, 1);	 /* A again in 101 */
	ck_assert_uint_eq(scan.summary.bytes_read, 2 * 2 * 1024 * 1024);
	ck_assert_str_eq(scan.summary.method, "pagemap");

	c = by_path(&scan, "(memcg ino 1001)");
	ck_assert_uint_eq(c->hist.thps[0], 1);
	ck_assert_uint_eq(c->hist.zero_subpages[0], 509);
	ck_assert_uint_eq(c->lowutil_thps, 1);
	ck_assert_uint_eq(c->waste_bytes, 509 * 4096);
	ck_assert_uint_eq(c->partial_thps, 0);
	c = by_path(&scan, "(memcg ino 1002)");
	ck_assert_uint_eq(c->hist.thps[5], 1); /* 300 * 10 / 512 = 5 */
	ck_assert_uint_eq(c->hist.zero_subpages[5], 212);
	/* C: subpages 0..31 mapped (0..15 by two processes), 480 never mapped */
	c = by_path(&scan, "(memcg ino 9999)");
	ck_assert_uint_eq(thps_hist_thps(&c->hist), 0);
	ck_assert_uint_eq(c->partial_thps, 1);
	ck_assert_uint_eq(c->partial_unmapped_bytes, 480 * 4096);
	ck_assert_uint_eq(scan.n_cgroups, 3);
	ck_assert_uint_eq(scan.total.partial_thps, 1);
	ck_assert_uint_eq(thps_hist_thps(&scan.total.hist), 2);

	ck_assert_uint_eq(scan.n_ranges, 1);
	ck_assert_int_eq(scan.ranges[0].pid, 100);
	ck_assert_uint_eq(scan.ranges[0].pid_starttime, 1000);
	ck_assert_uint_eq(scan.ranges[0].start, 0x400000);
	ck_assert_uint_eq(scan.ranges[0].pfn, 1024);
	ck_assert_uint_eq(scan.ranges[0].ino, 1001);
	ck_assert_uint_eq(scan.ranges[0].utilized, 3);
	thps_scan_free(&scan);

	/* a split policy's wider cut: ranges up to it are recorded (B is in bucket 5), while the
	 * low-util figures keep the scan's own cut */
	for (unsigned cut = 4; cut <= 5; cut++) {
		opts = (struct thps_scan_opts){.record_ranges = true, .record_max_bucket = cut};
		thps_scan_init(&scan, &g);
		ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
		ck_assert_uint_eq(scan.n_ranges, cut == 5 ? 2 : 1);
		ck_assert_uint_eq(by_path(&scan, "(memcg ino 1002)")->lowutil_thps, 0);
		thps_scan_free(&scan);
	}

	/* one pid only: 102 maps 32 of C's subpages */
	opts = (struct thps_scan_opts){.pid = 102};
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
	ck_assert_uint_eq(scan.summary.procs_scanned, 1);
	ck_assert_uint_eq(scan.summary.thps_scanned, 0);
	ck_assert_uint_eq(scan.total.partial_unmapped_bytes, 480 * 4096);
	thps_scan_free(&scan);
}
END_TEST

/* PAGEMAP_SCAN as the kernel answers it, computed from the fake pagemap file: a THP-sized
 * window mapping one whole THP is a PAGE_IS_HUGE run (no PFN), other present pages runs of
 * their own. */
static int fake_pagemap_scan(int fd, struct pm_scan_arg *arg)
{
	const uint64_t M2 = 2 << 20;
	struct page_region *vec = (struct page_region *)(uintptr_t)arg->vec;
	uint64_t e[512], a = arg->start;
	size_t n = 0;

	while (a < arg->end) {
		uint64_t wend = MIN((a & ~(M2 - 1)) + M2, arg->end);
		size_t k = (wend - a) / 4096;
		ssize_t got = pread(fd, e, k * 8, (off_t)(a / 4096 * 8));

		if (got < 0)
			return -1;
		memset((char *)e + got, 0, k * 8 - (size_t)got);
		if (k == 512 && thps_pm_entries_whole_thp(e, 512)) {
			if (n == arg->vec_len)
				break;
			vec[n++] = (struct page_region){a, wend, PAGE_IS_HUGE | PAGE_IS_PRESENT};
		} else
			for (size_t j = 0; j < k; j++) {
				uint64_t p = a + j * 4096;

				if (!thps_pm_present(e[j]))
					continue;
				if (n && vec[n - 1].end == p &&
				    vec[n - 1].categories == PAGE_IS_PRESENT) {
					vec[n - 1].end += 4096;
					continue;
				}
				if (n == arg->vec_len) {
					arg->walk_end = p;
					return (int)n;
				}
				vec[n++] = (struct page_region){p, p + 4096, PAGE_IS_PRESENT};
			}
		a = wend;
	}
	arg->walk_end = a;
	return (int)n;
}

static int enotty_pagemap_scan(int fd _unused_, struct pm_scan_arg *arg _unused_)
{
	errno = ENOTTY;
	return -1;
}

/* Every THP nearly full: all of them above the memo's cut, so carried. */
static int full_count(void *ud _unused_, pid_t pid _unused_, uint64_t addr _unused_, uint64_t len,
		      unsigned *ret_utilized, uint64_t *ret_bytes)
{
	*ret_bytes = len;
	*ret_utilized = (unsigned)(len / 4096) - 12;
	return 0;
}

static void memo_pass(struct thps_memo *memo, const struct thps_scanner_hooks *hooks,
		      uint64_t verify, struct thps_scan *scan)
{
	struct thps_scan_opts opts = {.record_ranges = true,
				      .record_max_bucket = 9,
				      .memo = memo,
				      .memo_exact_max_per512 = 102,
				      .memo_verify_folios = verify};
	struct thps_geometry g;
	struct thps_ctx ctx;

	thps_geometry_default(&g);
	fixture_ctx(&ctx, FIX_PROC, "");
	snprintf(ctx.cgroup_root, sizeof(ctx.cgroup_root), "%s/cg", tmpdir);
	thps_scan_init(scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, hooks, scan), 0);
}

/* Trusting the mapping (memo.h): carried THPs are found by their PAGEMAP_SCAN run without a
 * head-PFN read, the shared one is still counted once (the remembered PFN in the seen set),
 * the ranges keep the remembered PFN; the identity window reads PFNs again; without
 * PAGEMAP_SCAN every carried THP goes the PFN way. Same figures every pass. */
START_TEST(test_collect_trusted)
{
	struct thps_scanner_hooks hooks = {
	    .count = full_count, .use_pagemap_scan = 1, .pagemap_scan = fake_pagemap_scan};
	struct thps_memo *memo = NULL;
	struct thps_scan s1, s;

	mkdir_p("cg");
	ck_assert_int_eq(thps_memo_new(&memo), 0);
	memo_pass(memo, &hooks, 0, &s1);
	ck_assert_str_eq(s1.summary.method, "PAGEMAP_SCAN");
	ck_assert_uint_eq(s1.summary.thps_scanned, 2); /* A and B; not the huge zero page */
	ck_assert_uint_eq(s1.summary.thps_shared, 1);  /* A in both 100 and 101 */
	ck_assert_uint_eq(s1.summary.folios_read, 2);
	ck_assert_uint_eq(s1.summary.folios_trusted, 0);
	ck_assert_uint_eq(s1.n_ranges, 2);

	for (unsigned pass = 2; pass <= 3; pass++) {
		memo_pass(memo, &hooks, 0, &s);
		ck_assert_uint_eq(s.summary.thps_scanned, 2);
		ck_assert_uint_eq(s.summary.thps_shared, 1);
		ck_assert_uint_eq(s.summary.folios_read, 0);
		ck_assert_uint_eq(s.summary.folios_memo, 2);
		ck_assert_uint_eq(s.summary.folios_trusted, 2);
		ck_assert_uint_eq(s.summary.bytes_read, 0);
		ck_assert_mem_eq(&s.total.hist, &s1.total.hist, sizeof(s.total.hist));
		ck_assert_uint_eq(s.n_ranges, 2);
		for (size_t i = 0; i < 2; i++) {
			ck_assert_int_eq(s.ranges[i].pid, s1.ranges[i].pid);
			ck_assert_uint_eq(s.ranges[i].start, s1.ranges[i].start);
			ck_assert_uint_eq(s.ranges[i].pfn, s1.ranges[i].pfn);
			ck_assert_uint_eq(s.ranges[i].ino, s1.ranges[i].ino);
		}
		thps_scan_free(&s);
	}

	/* every entry's identity turn: PFNs read, still carried, nothing trusted */
	memo_pass(memo, &hooks, 100, &s);
	ck_assert_uint_eq(s.summary.folios_memo, 2);
	ck_assert_uint_eq(s.summary.folios_trusted, 0);
	ck_assert_uint_eq(s.summary.thps_shared, 1);
	ck_assert_mem_eq(&s.total.hist, &s1.total.hist, sizeof(s.total.hist));
	thps_scan_free(&s);

	/* a kernel without PAGEMAP_SCAN: today's pass, the same figures */
	hooks.pagemap_scan = enotty_pagemap_scan;
	memo_pass(memo, &hooks, 0, &s);
	ck_assert_str_eq(s.summary.method, "pagemap");
	ck_assert_uint_eq(s.summary.folios_memo, 2);
	ck_assert_uint_eq(s.summary.folios_trusted, 0);
	ck_assert_uint_eq(s.summary.thps_shared, 1);
	ck_assert_mem_eq(&s.total.hist, &s1.total.hist, sizeof(s.total.hist));
	thps_scan_free(&s);
	thps_scan_free(&s1);
	thps_memo_free(memo);
}
END_TEST

/* mTHP contents for proc-mthp: F1 1 of 16 used, F2 all 16, F4 (16 KiB) none. */
static int mthp_count(void *ud _unused_, pid_t pid, uint64_t addr, uint64_t len,
		      unsigned *ret_utilized, uint64_t *ret_bytes)
{
	*ret_bytes = len;
	if (pid == 200 && addr == 0x400000 && len == 16 * 4096)
		*ret_utilized = 1;
	else if (pid == 200 && addr == 0x410000 && len == 16 * 4096)
		*ret_utilized = 16;
	else if (pid == 200 && addr == 0x430000 && len == 4 * 4096)
		*ret_utilized = 0;
	else
		return *ret_bytes = 0, -EFAULT;
	return 0;
}

/* Folios smaller than a THP, mapped by PTEs: each whole one read once at its own size and
 * bucketed by min(utilized * 10 / nr, 9) in its size's histogram; the partly mapped one is
 * counted as partial under its size; the low-util ones are recorded with their size. */
START_TEST(test_collect_mthp)
{
	struct thps_scanner_hooks hooks = {.count = mthp_count, .every_page = 0};
	struct thps_scan_opts opts = {.record_ranges = true};
	struct thps_size_figures z[THPS_MAX_ORDER];
	struct thps_cgroup_stats *c;
	struct thps_geometry g;
	struct thps_scan scan;
	struct thps_ctx ctx;
	char path[PATH_MAX];
	FILE *f;

	/* the sys tree says 16 KiB is the smallest size with folios (64 KiB is never now but
	 * still has some: stats/nr_anon) */
	mkdir_p("sys");
	mkdir_p("sys/kernel");
	mkdir_p("sys/kernel/mm");
	mkdir_p("sys/kernel/mm/transparent_hugepage");
	mkdir_p("sys/kernel/mm/transparent_hugepage/hugepages-16kB");
	mkdir_p("sys/kernel/mm/transparent_hugepage/hugepages-16kB/stats");
	mkdir_p("sys/kernel/mm/transparent_hugepage/hugepages-64kB");
	mkdir_p("sys/kernel/mm/transparent_hugepage/hugepages-64kB/stats");
	static const char *const files[][2] = {
	    {"enabled", "always madvise [never]\n"},
	    {"hugepages-16kB/enabled", "always [inherit] madvise never\n"},
	    {"hugepages-16kB/stats/nr_anon", "1\n"},
	    {"hugepages-64kB/enabled", "always inherit madvise [never]\n"},
	    {"hugepages-64kB/stats/nr_anon", "3\n"},
	};
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		snprintf(path, sizeof(path), "%s/sys/kernel/mm/transparent_hugepage/%s", tmpdir,
			 files[i][0]);
		f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(files[i][1], f);
		fclose(f);
	}
	mkdir_p("cg");
	thps_geometry_default(&g);
	fixture_ctx(&ctx, SCANNER_FIXTURES "/proc-mthp", "");
	snprintf(ctx.cgroup_root, sizeof(ctx.cgroup_root), "%s/cg", tmpdir);
	snprintf(ctx.sys_root, sizeof(ctx.sys_root), "%s/sys", tmpdir);
	ck_assert_uint_eq(thps_anon_folio_min_pages(&ctx, &g), 4);

	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
	ck_assert_uint_eq(scan.summary.thps_scanned, 3);
	ck_assert_uint_eq(scan.summary.bytes_read, (16 + 16 + 4) * 4096);

	c = by_path(&scan, "(memcg ino 2001)");
	ck_assert_uint_eq(thps_hist_thps(&c->hist), 0); /* no PMD-size THP */
	ck_assert_uint_eq(c->mthp[4].hist.thps[0], 1);	/* F1: 1*10/16 = 0 */
	ck_assert_uint_eq(c->mthp[4].hist.zero_subpages[0], 15);
	ck_assert_uint_eq(c->mthp[4].hist.thps[9], 1);	 /* F2 */
	ck_assert_uint_eq(c->mthp[4].partial_folios, 1); /* F3: 4 of 16 mapped */
	ck_assert_uint_eq(c->mthp[4].partial_unmapped_bytes, 12 * 4096);
	ck_assert_uint_eq(c->partial_thps, 1);
	ck_assert_uint_eq(c->lowutil_thps, 1);
	ck_assert_uint_eq(c->waste_bytes, 15 * 4096);
	ck_assert_uint_eq(thps_cgroup_folios(c, &g), 2);
	ck_assert_uint_eq(thps_cgroup_sizes(c, &g, 0, false, z), 1);
	ck_assert_uint_eq(z[0].size_bytes, 65536);
	ck_assert_uint_eq(z[0].folios, 2);
	ck_assert_uint_eq(z[0].partial_folios, 1);
	c = by_path(&scan, "(memcg ino 2002)");
	ck_assert_uint_eq(c->mthp[2].hist.thps[0], 1); /* F4: 16 KiB, all zero */
	ck_assert_uint_eq(c->waste_bytes, 4 * 4096);
	ck_assert_uint_eq(scan.total.waste_bytes, 19 * 4096);
	ck_assert_uint_eq(thps_hist_thps(&scan.total.mthp[4].hist), 2);

	ck_assert_uint_eq(scan.n_ranges, 2);
	ck_assert_uint_eq(scan.ranges[0].start, 0x400000);
	ck_assert_uint_eq(scan.ranges[0].pfn, 1024);
	ck_assert_uint_eq(scan.ranges[0].pages, 16);
	ck_assert_uint_eq(scan.ranges[1].start, 0x430000);
	ck_assert_uint_eq(scan.ranges[1].pages, 4);
	thps_scan_free(&scan);

	/* the same with every page looked up (the reference): same figures */
	hooks.every_page = 1;
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
	ck_assert_uint_eq(scan.total.waste_bytes, 19 * 4096);
	ck_assert_uint_eq(scan.total.partial_thps, 1);
	ck_assert_uint_eq(scan.summary.untracked_bytes, 0);
	thps_scan_free(&scan);

	/* the pass's bound on PTE-mapped folios: two tracked, the other two's mapped pages
	 * (F3's 4 of 16, F4's 4) said as untracked, never silently dropped */
	hooks.every_page = 0;
	hooks.max_partial_folios = 2;
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
	ck_assert_uint_eq(scan.summary.thps_scanned, 2);
	ck_assert_uint_eq(scan.summary.untracked_bytes, (4 + 4) * 4096);
	ck_assert_uint_eq(scan.total.waste_bytes, 15 * 4096);
	thps_scan_free(&scan);
}
END_TEST

START_TEST(test_collect_skips_exited)
{
	struct thps_scanner_hooks hooks = {.count = exiting_count};
	struct thps_scan_opts opts = {0};
	struct thps_geometry g;
	struct thps_scan scan;
	struct thps_ctx ctx;

	mkdir_p("cg");
	thps_geometry_default(&g);
	fixture_ctx(&ctx, FIX_PROC, "");
	snprintf(ctx.cgroup_root, sizeof(ctx.cgroup_root), "%s/cg", tmpdir);
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
	ck_assert_uint_eq(scan.summary.procs_skipped, 1);
	ck_assert_uint_eq(scan.summary.procs_scanned, 2);
	/* A is still counted once, from 101 */
	ck_assert_uint_eq(scan.summary.thps_scanned, 2);
	ck_assert_uint_eq(scan.summary.thps_shared, 0);
	thps_scan_free(&scan);

	/* a pid that does not exist is skipped, not an error */
	opts.pid = 4242;
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
	ck_assert_uint_eq(scan.summary.procs_skipped, 1);
	ck_assert_uint_eq(scan.summary.procs_scanned, 0);
	thps_scan_free(&scan);
}
END_TEST

static uint64_t ino_of(const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
	ck_assert_int_eq(stat(p, &st), 0);
	return st.st_ino;
}

static void link_fixture(const char *name)
{
	char from[PATH_MAX], to[PATH_MAX];

	snprintf(from, sizeof(from), "%s/%s", FIX_PROC, name);
	snprintf(to, sizeof(to), "%s/proc/%s", tmpdir, name);
	ck_assert_int_eq(symlink(from, to), 0);
}

/* A proc root whose kpagecgroup charges A to cg/a, B to cg/a/b, C to a dead memcg. */
static void attribution_tree(struct thps_ctx *ctx)
{
	char p[PATH_MAX];
	uint64_t cg[4096];
	int fd;

	mkdir_p("cg");
	mkdir_p("cg/a");
	mkdir_p("cg/a/b");
	mkdir_p("cg/c");
	mkdir_p("proc");
	link_fixture("100");
	link_fixture("101");
	link_fixture("102");
	link_fixture("kpageflags");
	for (unsigned i = 0; i < 4096; i++)
		cg[i] = i >= 1024 && i < 1536	? ino_of("cg/a")
			: i >= 1536 && i < 2048 ? ino_of("cg/a/b")
						: 9999;
	snprintf(p, sizeof(p), "%s/proc/kpagecgroup", tmpdir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, cg, sizeof(cg)), (ssize_t)sizeof(cg));
	close(fd);
	snprintf(p, sizeof(p), "%s/proc", tmpdir);
	fixture_ctx(ctx, p, "");
	snprintf(ctx->cgroup_root, sizeof(ctx->cgroup_root), "%s/cg", tmpdir);
}

START_TEST(test_collect_attribution)
{
	struct thps_scanner_hooks hooks = {.count = fake_count};
	struct thps_scan_opts opts = {0};
	struct thps_geometry g;
	struct thps_scan scan;
	struct thps_ctx ctx;

	attribution_tree(&ctx);
	thps_geometry_default(&g);
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
	ck_assert_uint_eq(by_path(&scan, "/a")->hist.thps[0], 1);
	ck_assert_uint_eq(by_path(&scan, "/a")->ino, ino_of("cg/a"));
	ck_assert_uint_eq(by_path(&scan, "/a/b")->hist.thps[5], 1);
	ck_assert_uint_eq(by_path(&scan, "(memcg ino 9999)")->partial_thps, 1);
	thps_scan_free(&scan);

	/* a cgroup and its descendants */
	opts.cgroup = "/a";
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
	ck_assert_uint_eq(scan.summary.thps_scanned, 2);
	ck_assert_uint_eq(scan.total.partial_thps, 0);
	ck_assert_ptr_null(thps_scan_find_path(&scan, "(memcg ino 9999)"));
	thps_scan_free(&scan);

	opts.cgroup = "/a/b";
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
	ck_assert_uint_eq(scan.summary.thps_scanned, 1);
	ck_assert_ptr_null(thps_scan_find_path(&scan, "/a"));
	thps_scan_free(&scan);

	opts.cgroup = "/c";
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
	ck_assert_uint_eq(scan.summary.thps_scanned, 0);
	thps_scan_free(&scan);

	opts.cgroup = "/nope";
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), -ENOENT);
	thps_scan_free(&scan);
}
END_TEST

START_TEST(test_cgroup_map)
{
	struct thps_cgroup_map *m = NULL;
	struct thps_ctx ctx;
	char root[PATH_MAX];

	mkdir_p("cg");
	mkdir_p("cg/a");
	mkdir_p("cg/a/b");
	mkdir_p("cg/a/b/c");
	snprintf(root, sizeof(root), "%s/cg", tmpdir);

	ck_assert_int_eq(thps_cgroup_map_build(root, 32, &m), 0);
	ck_assert_uint_eq(thps_cgroup_map_size(m), 4);
	ck_assert_str_eq(thps_cgroup_map_path(m, ino_of("cg")), "/");
	ck_assert_str_eq(thps_cgroup_map_path(m, ino_of("cg/a/b")), "/a/b");
	ck_assert_str_eq(thps_cgroup_map_path(m, ino_of("cg/a/b/c")), "/a/b/c");
	ck_assert_uint_eq(thps_cgroup_map_ino(m, "/a"), ino_of("cg/a"));
	ck_assert_ptr_null(thps_cgroup_map_path(m, 1));
	thps_cgroup_map_free(m);

	/* bounded depth */
	ck_assert_int_eq(thps_cgroup_map_build(root, 2, &m), 0);
	ck_assert_uint_eq(thps_cgroup_map_size(m), 3);
	ck_assert_ptr_null(thps_cgroup_map_path(m, ino_of("cg/a/b/c")));
	thps_cgroup_map_free(m);

	/* discovery with a given root: v1 unless cgroup.controllers is there */
	memset(&ctx, 0, sizeof(ctx));
	snprintf(ctx.cgroup_root, sizeof(ctx.cgroup_root), "%s", root);
	ck_assert_int_eq(thps_cgroups_discover(&ctx, &m), 0);
	ck_assert_int_eq(ctx.cgroup_version, 1);
	thps_cgroup_map_free(m);
	snprintf(root, sizeof(root), "%s/cg/cgroup.controllers", tmpdir);
	close(open(root, O_WRONLY | O_CREAT, 0644));
	ck_assert_int_eq(thps_cgroups_find_mount(&ctx), 0);
	ck_assert_int_eq(ctx.cgroup_version, 2);
	snprintf(ctx.cgroup_root, sizeof(ctx.cgroup_root), "%s/missing", tmpdir);
	ck_assert_int_eq(thps_cgroups_discover(&ctx, &m), -ENOENT);
}
END_TEST

START_TEST(test_path_within)
{
	ck_assert(thps_cgroup_path_within("/a/b", "/a"));
	ck_assert(thps_cgroup_path_within("/a", "/a"));
	ck_assert(thps_cgroup_path_within("/a", "a/"));
	ck_assert(thps_cgroup_path_within("/a/b", "/"));
	ck_assert(thps_cgroup_path_within("/", "/"));
	ck_assert(!thps_cgroup_path_within("/ab", "/a"));
	ck_assert(!thps_cgroup_path_within("/", "/a"));
	ck_assert(!thps_cgroup_path_within("/b/a", "/a"));
}
END_TEST

START_TEST(test_zero_vs_scalar)
{
	static const size_t sizes[] = {4096, 16384, 65536, 100, 63, 65, 8, 7, 0};
	unsigned char *buf = aligned_alloc(64, 65536 * 4 + 64);
	unsigned seed = 12345;

	ck_assert_ptr_nonnull(buf);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t ps = sizes[si];

		for (unsigned off = 0; off < 3; off++) {
			unsigned char *p = buf + off; /* unaligned starts too */

			memset(p, 0, ps);
			ck_assert(thps_zero_block(p, ps));
			/* one non-zero byte at every position: first, last, middle and all else */
			for (size_t i = 0; i < ps; i++) {
				p[i] = (unsigned char)(1 + rand_r(&seed) % 255);
				ck_assert_msg(!thps_zero_block(p, ps), "size %zu byte %zu", ps, i);
				ck_assert(!thps_zero_block_scalar(p, ps));
				p[i] = 0;
			}
			ck_assert(thps_zero_block(p, ps));
		}
	}
	/* random mixes of zero and data pages */
	for (unsigned round = 0; round < 50; round++) {
		size_t ps = round % 2 ? 4096 : 16384, n = 65536 * 4 / ps;

		memset(buf, 0, n * ps);
		for (size_t pg = 0; pg < n; pg++)
			if (rand_r(&seed) % 3 == 0)
				buf[pg * ps + rand_r(&seed) % ps] = 0x80;
		ck_assert_uint_eq(thps_count_utilized(buf, n * ps, ps),
				  thps_count_utilized_scalar(buf, n * ps, ps));
	}
	free(buf);
}
END_TEST

START_TEST(test_pfnset)
{
	struct thps_pfnset s;
	uint32_t v;

	ck_assert_int_eq(thps_pfnset_init(&s, 5000), 0);
	for (uint64_t i = 1; i <= 5000; i++)
		ck_assert_int_eq(thps_pfnset_add(&s, i * 512, (uint32_t)i), 1);
	ck_assert_int_eq(thps_pfnset_add(&s, 512, 7), 0); /* duplicate: kept once */
	ck_assert_int_eq(thps_pfnset_add(&s, 3, 7), -E2BIG);
	ck_assert_int_eq(thps_pfnset_add(&s, 0, 7), -EINVAL);
	for (uint64_t i = 1; i <= 5000; i++) {
		ck_assert_int_eq(thps_pfnset_get(&s, i * 512, &v), 1);
		ck_assert_uint_eq(v, i);
	}
	ck_assert_int_eq(thps_pfnset_get(&s, 513, &v), 0);
	ck_assert_int_eq(thps_pfnset_get(&s, 0, &v), 0);
	thps_pfnset_free(&s);
}
END_TEST

START_TEST(test_starttime)
{
	struct thps_ctx ctx;
	uint64_t t;

	fixture_ctx(&ctx, FIX_PROC, "/nonexistent");
	ck_assert_int_eq(thps_proc_starttime(&ctx, 101, &t), 0);
	ck_assert_uint_eq(t, 1010);
	ck_assert_int_eq(thps_proc_starttime(&ctx, 4242, &t), -ESRCH);
}
END_TEST

START_TEST(test_probe)
{
	const struct thps_source_ops *src = thps_source_find("scanner");
	struct thps_ctx ctx;
	char why[512], p[PATH_MAX];
	FILE *f;

	ck_assert_ptr_eq(src, &thps_source_scanner);
	fixture_ctx(&ctx, FIX_PROC, "/nonexistent");
	ck_assert_int_eq(src->probe(&ctx, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, "THP geometry") != NULL, "why: %s", why);

	mkdir_p("sys");
	mkdir_p("sys/kernel");
	mkdir_p("sys/kernel/mm");
	mkdir_p("sys/kernel/mm/transparent_hugepage");
	snprintf(p, sizeof(p), "%s/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", tmpdir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs("2097152\n", f);
	fclose(f);
	snprintf(ctx.sys_root, sizeof(ctx.sys_root), "%s/sys", tmpdir);
	/* the fixture has kpageflags and kpagecgroup but no self/pagemap */
	ck_assert_int_eq(src->probe(&ctx, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, "self/pagemap") != NULL, "why: %s", why);
}
END_TEST

/* 512 entries of a dense window: present, exclusive, PFNs scattered (not one THP). */
static void dense_entries(uint64_t *e, size_t n, uint64_t pfn0)
{
	for (size_t i = 0; i < n; i++)
		e[i] = THPS_PM_PRESENT | THPS_PM_EXCLUSIVE | (pfn0 + 3 * i);
}

START_TEST(test_dense_window)
{
	uint64_t e[512];

	dense_entries(e, 512, 5000);
	ck_assert(thps_dense_window(e, 512));
	e[7] &= ~THPS_PM_EXCLUSIVE; /* the zero page, or shared with a fork */
	ck_assert(!thps_dense_window(e, 512));
	dense_entries(e, 512, 5000);
	e[511] = 0; /* absent */
	ck_assert(!thps_dense_window(e, 512));
	dense_entries(e, 512, 5000);
	e[0] = THPS_PM_SWAPPED | 9;
	ck_assert(!thps_dense_window(e, 512));
	dense_entries(e, 512, 5000);
	e[100] |= THPS_PM_FILE;
	ck_assert(!thps_dense_window(e, 512));
	dense_entries(e, 512, 5000);
	e[3] = THPS_PM_PRESENT | THPS_PM_EXCLUSIVE; /* no PFN: cannot tell a THP */
	ck_assert(!thps_dense_window(e, 512));
	for (unsigned i = 0; i < 512; i++) /* one whole THP already */
		e[i] = THPS_PM_PRESENT | THPS_PM_EXCLUSIVE | (1024 + i);
	ck_assert(!thps_dense_window(e, 512));
	ck_assert(!thps_dense_window(e, 0));
}
END_TEST

START_TEST(test_dense_first_window)
{
	struct thps_geometry g;
	const uint64_t M2 = 2 << 20;

	thps_geometry_default(&g);
	ck_assert_uint_eq(thps_dense_first_window(&g, 0, M2), 0);
	ck_assert_uint_eq(thps_dense_first_window(&g, 4096, 2 * M2), M2);
	ck_assert_uint_eq(thps_dense_first_window(&g, 4096, 2 * M2 - 4096),
			  2 * M2 - 4096); /* none fits */
	ck_assert_uint_eq(thps_dense_first_window(&g, M2, 2 * M2 - 4096), 2 * M2 - 4096);
	ck_assert_uint_eq(thps_dense_first_window(&g, UINT64_MAX - 4095, UINT64_MAX), UINT64_MAX);
}
END_TEST

static uint64_t dense_seen[16];
static size_t n_dense_seen;

static int dense_collect(void *ud, uint64_t addr)
{
	size_t *limit = ud;

	ck_assert_uint_lt(n_dense_seen, ELEMENTSOF(dense_seen));
	dense_seen[n_dense_seen++] = addr;
	return limit && n_dense_seen >= *limit ? 1 : 0;
}

/* The maps (a stream to write) and the pagemap (an fd to pwrite) of a fake /proc/1. */
static FILE *fake_proc1_maps(void)
{
	char p[PATH_MAX];
	FILE *m;

	mkdir_p("proc");
	mkdir_p("proc/1");
	snprintf(p, sizeof(p), "%s/proc/1/maps", tmpdir);
	m = fopen(p, "w");
	ck_assert_ptr_nonnull(m);
	return m;
}

static int fake_proc1_pagemap(void)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/proc/1/pagemap", tmpdir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	return fd;
}

/* A fake /proc/1: maps with one anonymous VMA of 5 windows (+ a file mapping), pagemap a
 * regular file (so PAGEMAP_SCAN fails with ENOTTY and the pagemap fallback runs). Windows 0
 * and 3 dense, 1 a THP, 2 with one zero page, 4 with a hole. */
static void fake_five_windows(uint64_t base)
{
	const uint64_t M2 = 2 << 20;
	uint64_t e[512];
	FILE *m;
	int fd;

	m = fake_proc1_maps();
	fprintf(m, "%" PRIx64 "-%" PRIx64 " rw-p 00000000 00:00 0 \n", base, base + 5 * M2);
	fprintf(m, "%" PRIx64 "-%" PRIx64 " rw-p 00000000 08:01 42 /usr/lib/x.so\n", base + 5 * M2,
		base + 6 * M2);
	fclose(m);
	fd = fake_proc1_pagemap();
	for (unsigned w = 0; w < 6; w++) {
		dense_entries(e, 512, 100000 + 2000 * w);
		if (w == 1)
			for (unsigned i = 0; i < 512; i++)
				e[i] = THPS_PM_PRESENT | THPS_PM_EXCLUSIVE | (4096 + i);
		if (w == 2)
			e[200] = THPS_PM_PRESENT | 77;
		if (w == 4)
			e[10] = 0;
		ck_assert_int_eq(pwrite(fd, e, sizeof(e), (off_t)((base + w * M2) / 4096 * 8)),
				 (ssize_t)sizeof(e));
	}
	close(fd);
}

START_TEST(test_dense_walk_fallback)
{
	const uint64_t M2 = 2 << 20, base = 0x40000000;
	struct thps_geometry g;
	struct thps_dense_finder f;
	struct thps_ctx ctx;
	size_t limit = 1;

	thps_geometry_default(&g);
	fake_five_windows(base);
	fixture_ctx(&ctx, "", "/nonexistent");
	snprintf(ctx.proc_root, sizeof(ctx.proc_root), "%s/proc", tmpdir);

	ck_assert_int_eq(thps_dense_init(&f, &g, true), 0);
	n_dense_seen = 0;
	ck_assert_int_eq(thps_dense_walk(&f, &ctx, 1, dense_collect, NULL), 0);
	ck_assert_str_eq(thps_dense_method(&f), "pagemap");
	ck_assert_uint_eq(n_dense_seen, 2);
	ck_assert_uint_eq(dense_seen[0], base);
	ck_assert_uint_eq(dense_seen[1], base + 3 * M2);
	ck_assert_uint_eq(f.looked_bytes, 5 * M2); /* the file mapping is not looked at */
	ck_assert_uint_eq(f.pagemap_bytes, 5 * 4096);
	ck_assert(!f.budget_hit);

	/* the callback stops it */
	n_dense_seen = 0;
	ck_assert_int_eq(thps_dense_walk(&f, &ctx, 1, dense_collect, &limit), 0);
	ck_assert_uint_eq(n_dense_seen, 1);

	/* the budget stops it: 3 windows looked at, the second dense one is past it */
	f.budget_bytes = 3 * M2;
	n_dense_seen = 0;
	ck_assert_int_eq(thps_dense_walk(&f, &ctx, 1, dense_collect, NULL), 0);
	ck_assert_uint_eq(n_dense_seen, 1);
	ck_assert(f.budget_hit);
	ck_assert_uint_eq(f.looked_bytes, 3 * M2);

	ck_assert_int_eq(thps_dense_walk(&f, &ctx, 2, dense_collect, NULL), -ESRCH);
	thps_dense_done(&f);
}
END_TEST

/* A fake /proc/1 with 100,000 anonymous VMAs of one window each (apart, so none merge) and a
 * file mapping among them; windows 10, 50,000 and 99,999 dense, the rest holes. Walks bounded
 * by VMAs, by windows, and both, each resumed at the last one's next_addr, find each dense
 * window once, in address order, and never look at more than their bound. */
#define MANY_VMAS 100000u
static uint64_t many_vma(unsigned i)
{
	return 0x40000000 + (uint64_t)i * (4 << 20);
}

static void fake_many_vmas(void)
{
	const unsigned dense[] = {10, 50000, MANY_VMAS - 1};
	uint64_t e[512];
	FILE *m;
	int fd;

	m = fake_proc1_maps();
	for (unsigned i = 0; i < MANY_VMAS; i++) {
		fprintf(m, "%" PRIx64 "-%" PRIx64 " rw-p 00000000 00:00 0 \n", many_vma(i),
			many_vma(i) + (2 << 20));
		if (i == 20000)
			fprintf(m, "%" PRIx64 "-%" PRIx64 " r--p 00000000 08:01 42 /usr/lib/x.so\n",
				many_vma(i) + (2 << 20), many_vma(i) + (3 << 20));
	}
	ck_assert_int_eq(fclose(m), 0);
	fd = fake_proc1_pagemap();
	for (unsigned k = 0; k < ELEMENTSOF(dense); k++) {
		dense_entries(e, 512, 100000 + 2000 * k);
		ck_assert_int_eq(pwrite(fd, e, sizeof(e), (off_t)(many_vma(dense[k]) / 4096 * 8)),
				 (ssize_t)sizeof(e));
	}
	close(fd);
}

/* Walks from 0 until next_addr says the end, each within the bounds; returns the walks. */
static unsigned walk_resumed(struct thps_dense_finder *f, const struct thps_ctx *ctx,
			     uint64_t max_vmas, uint64_t max_windows)
{
	unsigned walks = 0;
	uint64_t vmas = 0, windows = 0;

	n_dense_seen = 0;
	f->resume_addr = 0;
	f->max_vmas = max_vmas;
	f->max_windows = max_windows;
	do {
		ck_assert_int_eq(thps_dense_walk(f, ctx, 1, dense_collect, NULL), 0);
		if (max_vmas)
			ck_assert_uint_le(f->vmas, max_vmas);
		if (max_windows)
			ck_assert_uint_le(f->windows, max_windows);
		ck_assert_uint_ge(f->lines, f->vmas); /* the skipped lines are counted too */
		ck_assert_msg(!f->next_addr || f->next_addr > f->resume_addr,
			      "no progress at 0x%" PRIx64, f->resume_addr);
		vmas += f->vmas;
		windows += f->windows;
		f->resume_addr = f->next_addr;
		ck_assert_uint_lt(++walks, 1000);
	} while (f->next_addr);
	/* every window looked at once over the walks; a VMA a window bound cut is looked at
	 * again by the next walk, from that window */
	ck_assert_uint_ge(vmas, MANY_VMAS);
	ck_assert_uint_lt(vmas, MANY_VMAS + walks);
	ck_assert_uint_eq(windows, MANY_VMAS);
	ck_assert_uint_eq(n_dense_seen, 3);
	ck_assert_uint_eq(dense_seen[0], many_vma(10));
	ck_assert_uint_eq(dense_seen[1], many_vma(50000));
	ck_assert_uint_eq(dense_seen[2], many_vma(MANY_VMAS - 1));
	return walks;
}

START_TEST(test_dense_walk_bounds)
{
	struct thps_geometry g;
	struct thps_dense_finder f;
	struct thps_ctx ctx;

	thps_geometry_default(&g);
	fake_many_vmas();
	fixture_ctx(&ctx, "", "/nonexistent");
	snprintf(ctx.proc_root, sizeof(ctx.proc_root), "%s/proc", tmpdir);
	ck_assert_int_eq(thps_dense_init(&f, &g, true), 0);

	/* unbounded: one walk over everything, the file mapping read but not looked at */
	ck_assert_uint_eq(walk_resumed(&f, &ctx, 0, 0), 1);
	ck_assert_uint_eq(f.lines, MANY_VMAS + 1);
	/* 8,192 VMAs a walk: 13 walks */
	ck_assert_uint_eq(walk_resumed(&f, &ctx, 8192, 0), 13);
	/* 25,000 windows a walk (one per VMA here): 4 walks */
	ck_assert_uint_eq(walk_resumed(&f, &ctx, 0, 25000), 4);
	/* whichever comes first: the windows here */
	ck_assert_uint_eq(walk_resumed(&f, &ctx, 30000, 20000), 5);
	/* a bound of one: every walk still moves on */
	f.resume_addr = many_vma(MANY_VMAS - 3);
	f.max_vmas = 1;
	f.max_windows = 0;
	n_dense_seen = 0;
	ck_assert_int_eq(thps_dense_walk(&f, &ctx, 1, dense_collect, NULL), 0);
	ck_assert_uint_eq(f.vmas, 1);
	ck_assert_uint_eq(f.next_addr, many_vma(MANY_VMAS - 2));
	/* up to the line after the bound, the skipped ones and the file mapping's counted */
	ck_assert_uint_eq(f.lines, MANY_VMAS);
	thps_dense_done(&f);
}
END_TEST

/* A bound cuts a VMA in the middle: the fallback fixture's VMA of 5 windows (0 and 3 dense)
 * walked 2 windows at a time resumes at the window where the last walk stopped. */
START_TEST(test_dense_walk_resume_in_vma)
{
	const uint64_t M2 = 2 << 20, base = 0x40000000;
	const uint64_t want_next[] = {base + 2 * M2, base + 4 * M2, 0};
	struct thps_geometry g;
	struct thps_dense_finder f;
	struct thps_ctx ctx;

	thps_geometry_default(&g);
	fake_five_windows(base);
	fixture_ctx(&ctx, "", "/nonexistent");
	snprintf(ctx.proc_root, sizeof(ctx.proc_root), "%s/proc", tmpdir);
	ck_assert_int_eq(thps_dense_init(&f, &g, true), 0);
	f.max_windows = 2;
	n_dense_seen = 0;
	for (unsigned w = 0; w < ELEMENTSOF(want_next); w++) {
		ck_assert_int_eq(thps_dense_walk(&f, &ctx, 1, dense_collect, NULL), 0);
		ck_assert_uint_eq(f.next_addr, want_next[w]);
		f.resume_addr = f.next_addr;
	}
	ck_assert_uint_eq(n_dense_seen, 2);
	ck_assert_uint_eq(dense_seen[0], base);
	ck_assert_uint_eq(dense_seen[1], base + 3 * M2);
	/* the pagemap fallback's address-space budget resumes the same way */
	f.max_windows = 0;
	f.resume_addr = 0;
	f.budget_bytes = 3 * M2;
	ck_assert_int_eq(thps_dense_walk(&f, &ctx, 1, dense_collect, NULL), 0);
	ck_assert(f.budget_hit);
	ck_assert_uint_eq(f.next_addr, base + 3 * M2);
	thps_dense_done(&f);
}
END_TEST

static Suite *scanner_suite(void)
{
	Suite *s = suite_create("scanner");
	TCase *tc = tcase_create("decode");
	TCase *tt = tcase_create("trees");

	tcase_add_test(tc, test_pagemap_bits);
	tcase_add_test(tc, test_whole_thp);
	tcase_add_test(tc, test_dense_window);
	tcase_add_test(tc, test_dense_first_window);
	tcase_add_test(tc, test_kpageflags_bits);
	tcase_add_test(tc, test_kpage_fixture);
	tcase_add_test(tc, test_maps_lines);
	tcase_add_test(tc, test_walk_fixture);
	tcase_add_test(tc, test_path_within);
	tcase_add_test(tc, test_zero_vs_scalar);
	tcase_add_test(tc, test_pfnset);
	tcase_add_test(tc, test_starttime);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tt, setup_tmp, teardown_tmp);
	tcase_add_test(tt, test_collect_fixture);
	tcase_add_test(tt, test_collect_trusted);
	tcase_add_test(tt, test_collect_mthp);
	tcase_add_test(tt, test_collect_skips_exited);
	tcase_add_test(tt, test_collect_attribution);
	tcase_add_test(tt, test_cgroup_map);
	tcase_add_test(tt, test_probe);
	tcase_add_test(tt, test_dense_walk_fallback);
	tcase_add_test(tt, test_dense_walk_bounds);
	tcase_add_test(tt, test_dense_walk_resume_in_vma);
	suite_add_tcase(s, tt);
	return s;
}

THPS_TEST_MAIN(scanner_suite)
