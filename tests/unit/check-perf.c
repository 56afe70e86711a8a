/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the scanner's cheap pass (folios.h): which folio sizes the kernel may create,
 * read from a fake sysfs tree, and collect() over a generated fake /proc holding a partly
 * mapped THP, a partly mapped 64 KiB mTHP, a misaligned partly mapped THP (the stated
 * limitation) and small pages, against the every-page reference. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "folios.h"
#include "macro.h"
#include "scan.h"
#include "scanner.h"
#include "test-main.h"

#define NPFN 4096
#define PRESENT (UINT64_C(1) << 63)
#define ANON (UINT64_C(1) << 12)
#define HEAD (UINT64_C(1) << 15)
#define TAIL (UINT64_C(1) << 16)
#define THP (UINT64_C(1) << 22)

static char tmpdir[64];

static void setup_tmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check-perf-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown_tmp(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void mkdir_rel(const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
	ck_assert_int_eq(mkdir(p, 0755) == 0 || errno == EEXIST, 1);
}

static void put(const char *rel, const void *data, size_t len)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void put_str(const char *rel, const char *s)
{
	put(rel, s, strlen(s));
}

static void thp_sys(const char *top)
{
	mkdir_rel("sys");
	mkdir_rel("sys/kernel");
	mkdir_rel("sys/kernel/mm");
	mkdir_rel("sys/kernel/mm/transparent_hugepage");
	put_str("sys/kernel/mm/transparent_hugepage/enabled", top);
	put_str("sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "2097152\n");
}

static void size_mode(unsigned kib, const char *mode)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "sys/kernel/mm/transparent_hugepage/hugepages-%ukB", kib);
	mkdir_rel(rel);
	if (!mode)
		return;
	snprintf(rel, sizeof(rel), "sys/kernel/mm/transparent_hugepage/hugepages-%ukB/enabled",
		 kib);
	put_str(rel, mode);
}

static void ctx_for(struct thps_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	snprintf(ctx->proc_root, sizeof(ctx->proc_root), "%s/proc", tmpdir);
	snprintf(ctx->sys_root, sizeof(ctx->sys_root), "%s/sys", tmpdir);
	snprintf(ctx->cgroup_root, sizeof(ctx->cgroup_root), "%s/cg", tmpdir);
}

START_TEST(test_min_pages)
{
	struct thps_geometry g;
	struct thps_ctx ctx;

	thps_geometry_default(&g);
	ctx_for(&ctx);
	/* no THP directory at all (a fixture, or a kernel without THP): PMD size */
	ck_assert_uint_eq(thps_anon_folio_min_pages(&ctx, &g), 512);
	/* before Linux 6.8: no per-size directories */
	thp_sys("always [madvise] never\n");
	ck_assert_uint_eq(thps_anon_folio_min_pages(&ctx, &g), 512);
	/* this host's layout: only 2 MiB inherits, the rest never; 8 kB has no anon knob */
	size_mode(2048, "always [inherit] madvise never\n");
	size_mode(64, "always inherit madvise [never]\n");
	size_mode(16, "always inherit madvise [never]\n");
	size_mode(8, NULL);
	ck_assert_uint_eq(thps_anon_folio_min_pages(&ctx, &g), 512);
	/* 64 kB inherits madvise: 16 pages */
	size_mode(64, "always [inherit] madvise never\n");
	ck_assert_uint_eq(thps_anon_folio_min_pages(&ctx, &g), 16);
	/* ... but not when the top-level mode is never */
	put_str("sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n");
	ck_assert_uint_eq(thps_anon_folio_min_pages(&ctx, &g), 512);
	/* an explicit size below: the smallest wins */
	size_mode(32, "always inherit [madvise] never\n");
	ck_assert_uint_eq(thps_anon_folio_min_pages(&ctx, &g), 8);
	/* a knob that cannot be read: the smallest anonymous order (4 pages) */
	mkdir_rel("sys/kernel/mm/transparent_hugepage/hugepages-128kB");
	mkdir_rel("sys/kernel/mm/transparent_hugepage/hugepages-128kB/enabled");
	ck_assert_uint_eq(thps_anon_folio_min_pages(&ctx, &g), 4);
}
END_TEST

START_TEST(test_aligned)
{
	/* every subpage of a naturally aligned folio passes, for any M dividing its size */
	for (uint64_t i = 0; i < 512; i++) {
		ck_assert(thps_folio_aligned(1024 + i, 0x400 * 512 + i, 512));
		ck_assert(thps_folio_aligned(1024 + i, 0x400 * 512 + i, 4));
	}
	ck_assert(!thps_folio_aligned(1025, 0x400 * 512 + 2, 512));
	ck_assert(!thps_folio_aligned(2064, 2048, 512)); /* a 64 KiB folio, M = 512 */
	ck_assert(thps_folio_aligned(2064, 2048, 16));
	ck_assert(thps_folio_aligned(7, 12345, 1)); /* M = 1: every page (the reference) */
}
END_TEST

/* pid 300, one anonymous VMA 0x400000-0x1000000:
 *   X: THP at PFN 1024, subpages 0..99 mapped at 0x400000 (aligned)
 *   Y: 64 KiB mTHP at PFN 2064, subpages 0..7 mapped at 0x800000 (aligned to 16 pages)
 *   Z: THP at PFN 2560, subpages 0..49 mapped at 0xa01000 (mremap'ed off by one page)
 *   100 small pages at 0xc00000, PFNs 3100.. */
static void fake_proc(void)
{
	static uint64_t flags[NPFN], cg[NPFN], pm[0x1000000 / 4096];
	char maps[] = "00400000-01000000 rw-p 00000000 00:00 0 \n";
	char stat[] = "300 (x) S 1 300 300 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 3000 0 0\n";

	memset(flags, 0, sizeof(flags));
	memset(pm, 0, sizeof(pm));
	for (unsigned i = 0; i < NPFN; i++)
		cg[i] = 77;
	for (unsigned i = 0; i < 512; i++) {
		flags[1024 + i] = flags[2560 + i] = ANON | THP | (i ? TAIL : HEAD);
		if (i < 16)
			flags[2064 + i] = ANON | THP | (i ? TAIL : HEAD);
	}
	for (unsigned i = 0; i < 100; i++) {
		flags[3100 + i] = ANON;
		pm[0xc00 + i] = PRESENT | (3100 + i);
		pm[0x400 + i] = PRESENT | (1024 + i);
	}
	for (unsigned i = 0; i < 8; i++)
		pm[0x800 + i] = PRESENT | (2064 + i);
	for (unsigned i = 0; i < 50; i++)
		pm[0xa01 + i] = PRESENT | (2560 + i);
	mkdir_rel("proc");
	mkdir_rel("proc/300");
	mkdir_rel("cg");
	put("proc/kpageflags", flags, sizeof(flags));
	put("proc/kpagecgroup", cg, sizeof(cg));
	put("proc/300/pagemap", pm, sizeof(pm));
	put_str("proc/300/maps", maps);
	put_str("proc/300/stat", stat);
}

static void collect(int every_page, uint64_t *ret_partial, uint64_t *ret_unmapped_pages)
{
	struct thps_scanner_hooks hooks = {.every_page = every_page};
	struct thps_scan_opts opts = {0};
	struct thps_geometry g;
	struct thps_scan scan;
	struct thps_ctx ctx;

	thps_geometry_default(&g);
	ctx_for(&ctx);
	thps_scan_init(&scan, &g);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, &hooks, &scan), 0);
	ck_assert_uint_eq(scan.summary.procs_scanned, 1);
	ck_assert_uint_eq(thps_hist_thps(&scan.total.hist), 0);
	*ret_partial = scan.total.partial_thps;
	*ret_unmapped_pages = scan.total.partial_unmapped_bytes / 4096;
	thps_scan_free(&scan);
}

START_TEST(test_collect_partials)
{
	uint64_t partial, unmapped;

	fake_proc();
	/* the reference sees all three */
	collect(1, &partial, &unmapped);
	ck_assert_uint_eq(partial, 3);
	ck_assert_uint_eq(unmapped, 412 + 8 + 462);
	/* PMD THPs only (M = 512): X; Y is too small to be checked, Z is misaligned */
	collect(0, &partial, &unmapped);
	ck_assert_uint_eq(partial, 1);
	ck_assert_uint_eq(unmapped, 412);
	/* 64 KiB mTHPs enabled (M = 16): X and Y; Z stays the stated limitation */
	thp_sys("always [madvise] never\n");
	size_mode(2048, "always [inherit] madvise never\n");
	size_mode(64, "always [inherit] madvise never\n");
	collect(0, &partial, &unmapped);
	ck_assert_uint_eq(partial, 2);
	ck_assert_uint_eq(unmapped, 412 + 8);
}
END_TEST

static Suite *perf_suite(void)
{
	Suite *s = suite_create("perf");
	TCase *tc = tcase_create("folios");

	tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
	tcase_add_test(tc, test_min_pages);
	tcase_add_test(tc, test_aligned);
	tcase_add_test(tc, test_collect_partials);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(perf_suite)
