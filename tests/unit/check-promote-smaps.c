/* SPDX-License-Identifier: GPL-2.0-or-later */
/* promote-smaps: which candidate ranges a process's smaps takes out (opt-outs, LazyFree), on a
 * fake /proc/PID/smaps; and when THP mode "always" makes THPeligible meaningful. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "promote-smaps.h"
#include "test-main.h"

#define M2 (UINT64_C(2) << 20)

static char tmpdir[64];

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static void mk(const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check-promote-smaps-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	mk("proc");
	mk("proc/42");
	mk("sys");
	mk("sys/kernel");
	mk("sys/kernel/mm");
	mk("sys/kernel/mm/transparent_hugepage");
	mk("sys/kernel/mm/transparent_hugepage/hugepages-2048kB");
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void ctx_of(struct thps_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	snprintf(ctx->proc_root, sizeof(ctx->proc_root), "%s/proc", tmpdir);
	snprintf(ctx->sys_root, sizeof(ctx->sys_root), "%s/sys", tmpdir);
}

/* One VMA's smaps record: 4 MiB at start. */
static void vma(char *buf, size_t size, uint64_t start, const char *path, unsigned lazy_kb,
		unsigned eligible, const char *flags)
{
	size_t len = strlen(buf);

	snprintf(buf + len, size - len,
		 "%llx-%llx rw-p 00000000 00:00 0 %s\n"
		 "Size:               4096 kB\n"
		 "Rss:                4096 kB\n"
		 "Anonymous:          4096 kB\n"
		 "LazyFree:           %u kB\n"
		 "AnonHugePages:         0 kB\n"
		 "THPeligible:    %u\n"
		 "VmFlags: rd wr mr mw me ac sd%s\n",
		 (unsigned long long)start, (unsigned long long)(start + 2 * M2), path, lazy_kb,
		 eligible, flags);
}

/* VMAs at 0x10000000 (plain), 0x20000000 (nh), 0x30000000 (THPeligible 0), 0x40000000
 * (LazyFree, behind a path longer than a line buffer); one candidate range in each, and one
 * in no VMA at all (kept: the kernel judges it). */
static void fixture(void)
{
	static char smaps[8192];
	char longpath[1200];

	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = 0;
	smaps[0] = 0;
	vma(smaps, sizeof(smaps), 0x10000000, "", 0, 1, "");
	vma(smaps, sizeof(smaps), 0x20000000, "", 0, 0, " nh");
	vma(smaps, sizeof(smaps), 0x30000000, "", 0, 0, "");
	vma(smaps, sizeof(smaps), 0x40000000, longpath, 4, 1, " hg");
	put("proc/42/smaps", smaps);
}

static const uint64_t cand[] = {0x10000000, 0x20000000, 0x20200000, 0x30000000, 0x40000000,
				0x50000000};

static size_t run(bool always, bool lazy, uint64_t *out, struct thps_smaps_drops *d)
{
	struct thps_ctx ctx;
	size_t n = sizeof(cand) / sizeof(cand[0]);

	ctx_of(&ctx);
	memcpy(out, cand, sizeof(cand));
	ck_assert_int_eq(thps_smaps_drop_opted_out(&ctx, 42, always, lazy, out, &n, d), 0);
	return n;
}

START_TEST(test_nohugepage_only)
{
	uint64_t a[6];
	struct thps_smaps_drops d;

	fixture();
	ck_assert_uint_eq(run(false, false, a, &d), 4);
	ck_assert_uint_eq(d.no_huge, 2);
	ck_assert_uint_eq(d.ineligible, 0);
	ck_assert_uint_eq(d.lazy_free, 0);
	ck_assert_uint_eq(a[0], 0x10000000);
	ck_assert_uint_eq(a[1], 0x30000000);
	ck_assert_uint_eq(a[2], 0x40000000);
	ck_assert_uint_eq(a[3], 0x50000000);
}
END_TEST

START_TEST(test_always_and_lazy)
{
	uint64_t a[6];
	struct thps_smaps_drops d;

	fixture();
	ck_assert_uint_eq(run(true, true, a, &d), 2);
	ck_assert_uint_eq(d.no_huge, 2);
	ck_assert_uint_eq(d.ineligible, 1);
	ck_assert_uint_eq(d.lazy_free, 1);
	ck_assert_uint_eq(a[0], 0x10000000);
	ck_assert_uint_eq(a[1], 0x50000000);
}
END_TEST

START_TEST(test_gone)
{
	struct thps_ctx ctx;
	uint64_t a[1] = {0x10000000};
	size_t n = 1;
	struct thps_smaps_drops d;

	ctx_of(&ctx);
	ck_assert_int_eq(thps_smaps_drop_opted_out(&ctx, 43, true, true, a, &n, &d), -ESRCH);
	ck_assert_uint_eq(n, 1);
}
END_TEST

START_TEST(test_mode_always)
{
	struct thps_ctx ctx;
	struct thps_geometry g = {.thp_size = M2};

	ctx_of(&ctx);
	ck_assert_int_eq(thps_thp_mode_always(&ctx, &g), 0); /* unreadable: not known */
	put("sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
	ck_assert_int_eq(thps_thp_mode_always(&ctx, &g), 1); /* before mTHP: no per-size file */
	put("sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled",
	    "always [inherit] madvise never\n");
	ck_assert_int_eq(thps_thp_mode_always(&ctx, &g), 1);
	put("sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled",
	    "always inherit [madvise] never\n");
	ck_assert_int_eq(thps_thp_mode_always(&ctx, &g), 0);
	put("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
	put("sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled",
	    "[always] inherit madvise never\n");
	ck_assert_int_eq(thps_thp_mode_always(&ctx, &g), 1);
}
END_TEST

static Suite *promote_smaps_suite(void)
{
	Suite *s = suite_create("promote-smaps");
	TCase *tc = tcase_create("smaps");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_nohugepage_only);
	tcase_add_test(tc, test_always_and_lazy);
	tcase_add_test(tc, test_gone);
	tcase_add_test(tc, test_mode_always);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(promote_smaps_suite)
