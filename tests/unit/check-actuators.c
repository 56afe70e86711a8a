/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the actuators' decisions against fake /proc, /sys, cgroup and debugfs trees in
 * a temp dir: the amount asked, refusals with their reason, the split re-check (a THP that
 * filled up, changed process or moved is never split), and the max_ptes_none save/restore.
 * The real kernel paths are tested in the VM (tests/vm/scenarios). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuator.h"
#include "kernel/kernel.h"
#include "fileio.h"
#include "test-main.h"

static char root[64];
static struct thps_ctx ctx;
static struct thps_geometry geom;

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX], cmd[PATH_MAX + 16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "%s", path);
	*strrchr(cmd, '/') = 0;
	for (char *p = cmd + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		mkdir(cmd, 0755);
		*p = '/';
	}
	mkdir(cmd, 0755);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void pwrite_at(const char *rel, const void *buf, size_t len, uint64_t off)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static char *get(const char *rel)
{
	char path[PATH_MAX];
	char *text = NULL;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (read_file_bounded(path, 4096, &text, NULL) < 0)
		return NULL;
	return text;
}

/* A 6.12-like machine: cgroup "work" with 64 MiB charged, shrink_underused on, mpn 409. */
static void arena_map(void);

static void setup(void)
{
	arena_map();
	snprintf(root, sizeof(root), "/tmp/check-actuators.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	thps_ctx_init_tree(&ctx, root, "cg");
	ctx.cgroup_version = 2;
	thps_geometry_default(&geom);
	put("proc/vmstat", "nr_free_pages 1\nthp_split_page 7\nthp_underused_split_page 3\n");
	put("sys/kernel/mm/transparent_hugepage/shrink_underused", "1\n");
	put("sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none", "409\n");
	put("cg/work/memory.current", "67108864\n");
	put("cg/work/memory.stat", "anon 67108864\nanon_thp 67108864\n");
	put("cg/work/memory.reclaim", "");
	put("debug/split_huge_pages", "");
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_amount)
{
	struct thps_cgroup_stats cg = { .waste_bytes = 10 * 4096, .partial_unmapped_bytes = 5 * 4096 };

	ck_assert_uint_eq(thps_reclaim_amount(&cg, 0, 4096), 15 * 4096);
	ck_assert_uint_eq(thps_reclaim_amount(&cg, 8 * 4096, 4096), 8 * 4096);
	ck_assert_uint_eq(thps_reclaim_amount(&cg, 8 * 4096 + 1, 4096), 9 * 4096);
	cg.waste_bytes = UINT64_MAX - 1;
	ck_assert_uint_eq(thps_reclaim_amount(&cg, 1 << 20, 4096), 1 << 20);
}
END_TEST

START_TEST(test_vmstat_parse)
{
	struct thps_vmstat v;

	ck_assert_int_eq(thps_parse_vmstat("thp_split_page 7\nthp_split_free 16352\nthp_split_pmd 2\n", &v), 0);
	ck_assert_uint_eq(v.thp_split_page, 7);
	ck_assert_uint_eq(v.thp_split_free, 16352);
	ck_assert_uint_eq(v.thp_split_pmd, 2);
	ck_assert_uint_eq(v.thp_underused_split_page, UINT64_MAX);
	ck_assert_uint_eq(v.thp_split_unmap, UINT64_MAX);
}
END_TEST

START_TEST(test_reclaim_writes_amount)
{
	struct thps_act_request req = { .cgroup = "work", .geom = &geom, .amount_bytes = 8192 };
	struct thps_act_result res;
	char *text;

	ck_assert_int_eq(thps_actuator_reclaim.act(&ctx, &req, &res), 0);
	ck_assert(res.acted);
	ck_assert_uint_eq(res.asked_bytes, 8192);
	ck_assert_uint_eq(res.before.memory_current, 67108864);
	ck_assert_uint_eq(res.before.anon_thp, 67108864);
	ck_assert_uint_eq(res.before.vmstat.thp_underused_split_page, 3);
	text = get("cg/work/memory.reclaim");
	ck_assert_str_eq(text, "8192");
	free(text);
	ck_assert_str_eq(res.note, "");
}
END_TEST

START_TEST(test_reclaim_refuses_v1)
{
	struct thps_act_request req = { .cgroup = "work", .geom = &geom, .amount_bytes = 8192 };
	struct thps_act_result res;
	char why[256], *text;

	ctx.cgroup_version = 1;
	ck_assert_int_eq(thps_actuator_reclaim.probe(&ctx, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "cgroup v2"));
	ck_assert_int_eq(thps_actuator_reclaim.act(&ctx, &req, &res), 0);
	ck_assert(!res.acted);
	ck_assert_ptr_nonnull(strstr(res.note, "cgroup v1"));
	text = get("cg/work/memory.reclaim");
	ck_assert_str_eq(text, "");
	free(text);
}
END_TEST

START_TEST(test_reclaim_says_when_it_cannot_free)
{
	struct thps_act_request req = { .cgroup = "work", .geom = &geom, .amount_bytes = 4096 };
	struct thps_act_result res;
	char path[PATH_MAX], why[384];

	/* 6.12 with the default max_ptes_none: the shrinker sees no THP as underused */
	put("sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none", "511\n");
	ck_assert_int_eq(thps_reclaim_frees_zero_subpages(&ctx, &geom, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "max_ptes_none is 511"));
	/* 6.1: no shrinker at all */
	snprintf(path, sizeof(path), "%s/sys/kernel/mm/transparent_hugepage/shrink_underused", root);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(thps_actuator_reclaim.act(&ctx, &req, &res), 0);
	ck_assert(res.acted);
	ck_assert_ptr_nonnull(strstr(res.note, "frees nothing"));
	/* the RFC: its shrinker runs under memory.reclaim */
	put("proc/vmstat", "thp_split_page 0\nthp_split_free 0\nthp_split_unmap 0\n");
	ck_assert_int_eq(thps_reclaim_frees_zero_subpages(&ctx, &geom, why, sizeof(why)), 1);
	ck_assert_int_eq(thps_split_frees_zero_subpages(&ctx, why, sizeof(why)), 1);
	ck_assert_ptr_nonnull(strstr(why, "RFC"));
}
END_TEST

START_TEST(test_split_refuses_where_it_frees_nothing)
{
	struct thps_thp_range r = { .pid = 123, .start = 0x200000, .pfn = 0x1000 };
	struct thps_act_request req = { .cgroup = "work", .geom = &geom, .ranges = &r, .n_ranges = 1 };
	struct thps_act_result res;
	char path[PATH_MAX], *text;

	/* 6.1: neither the shrinker's knob nor its counter */
	snprintf(path, sizeof(path), "%s/sys/kernel/mm/transparent_hugepage/shrink_underused", root);
	ck_assert_int_eq(unlink(path), 0);
	put("proc/vmstat", "nr_free_pages 1\nthp_split_page 7\n");
	ck_assert_int_eq(thps_actuator_split.act(&ctx, &req, &res), 0);
	ck_assert(!res.acted);
	ck_assert_ptr_nonnull(strstr(res.note, "refused: a split frees nothing"));
	text = get("debug/split_huge_pages");
	ck_assert_str_eq(text, "");
	free(text);
}
END_TEST

/* The re-check reads contents with the scanner's reader (process_vm_readv), so the folios'
 * contents are real memory of this process at START; their metadata (stat, pagemap,
 * kpageflags) are fakes under the test's proc root. */
#define PID getpid()
#define STARTTIME 4242
#define ARENA (8ULL << 20)
#define PFN 0x1000ULL

/* Where the folios live: a 2 MiB-aligned arena mapped once per process (setup), wherever the
 * kernel (or valgrind) puts it. */
static uint64_t arena_start;
#define START arena_start

static void arena_map(void)
{
	void *p;

	if (arena_start)
		return; /* unforked runs (valgrind) keep the arena of the test before */
	p = mmap(NULL, ARENA + (2ULL << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	ck_assert_msg(p != MAP_FAILED, "mmap arena: %s", strerror(errno));
	arena_start = ((uint64_t)(uintptr_t)p + (2ULL << 20) - 1) & ~((2ULL << 20) - 1);
}

/* A folio of nr pages (a THP: 512, an mTHP: fewer) of this process at start mapped from pfn
 * with `used` non-zero subpages: head and tail flags, pagemap, contents. */
static void fake_folio(uint64_t start, uint64_t pfn, unsigned nr, unsigned used)
{
	uint64_t e[512], flags = (1ULL << 22) | (1ULL << 15) | (1ULL << 12);
	uint64_t tail = (1ULL << 22) | (1ULL << 16) | (1ULL << 12);
	char rel[64], stat[128];

	snprintf(rel, sizeof(rel), "proc/%d/stat", (int)getpid());
	snprintf(stat, sizeof(stat), "%d (blo) at) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n",
		 (int)getpid());
	put(rel, stat);
	for (unsigned i = 0; i < nr; i++)
		e[i] = (1ULL << 63) | (pfn + i);
	snprintf(rel, sizeof(rel), "proc/%d/pagemap", (int)getpid());
	pwrite_at(rel, e, nr * sizeof(e[0]), start / 4096 * 8);
	pwrite_at("proc/kpageflags", &flags, 8, pfn * 8);
	for (unsigned i = 1; i < nr; i++)
		pwrite_at("proc/kpageflags", &tail, 8, (pfn + i) * 8);
	for (unsigned i = 0; i < nr; i++) {
		char *page = (char *)(uintptr_t)(start + i * 4096ULL);

		memset(page, 0, 4096);
		page[100] = i < used ? 0x5a : 0;
	}
}

/* "PID,0xSTART,0xEND" as written to split_huge_pages. */
static const char *split_text(uint64_t start, uint64_t end)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "%d,0x%llx,0x%llx", (int)getpid(), (unsigned long long)start,
		 (unsigned long long)end);
	return buf;
}

static void fake_thp(uint64_t start, uint64_t pfn, unsigned used)
{
	fake_folio(start, pfn, 512, used);
}

START_TEST(test_recheck)
{
	struct thps_thp_range r = { .pid = PID, .pid_starttime = STARTTIME, .start = START, .pfn = PFN };
	uint32_t used = 0;
	char why[256];

	fake_thp(START, PFN, 5);
	ck_assert_int_eq(thps_thp_recheck(&ctx, &geom, &r, 0, &used, why, sizeof(why)), 1);
	ck_assert_uint_eq(used, 5);

	r.pid_starttime = 1; /* pid reused */
	ck_assert_int_eq(thps_thp_recheck(&ctx, &geom, &r, 0, &used, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "another process"));
	r.pid_starttime = STARTTIME;

	r.pfn = PFN + 512; /* the range moved to another folio */
	ck_assert_int_eq(thps_thp_recheck(&ctx, &geom, &r, 0, &used, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "no longer the THP"));
	r.pfn = PFN;

	fake_thp(START, PFN, 300); /* filled up since the scan */
	used = 7;
	ck_assert_int_eq(thps_thp_recheck(&ctx, &geom, &r, 0, &used, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "well used"));
	ck_assert_uint_eq(used, 7);

	r.pid = 999; /* exited */
	ck_assert_int_eq(thps_thp_recheck(&ctx, &geom, &r, 0, &used, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "exited"));
}
END_TEST

START_TEST(test_split_only_lowutil)
{
	struct thps_thp_range r[2] = {
		{ .pid = PID, .pid_starttime = STARTTIME, .start = START + 0x200000, .pfn = PFN + 512 },
		{ .pid = PID, .pid_starttime = STARTTIME, .start = START, .pfn = PFN },
	};
	struct thps_act_request req = { .cgroup = "work", .geom = &geom, .ranges = r, .n_ranges = 2 };
	struct thps_act_result res;
	char *text;

	fake_thp(START, PFN, 3);
	fake_thp(START + 0x200000, PFN + 512, 512);
	ck_assert_int_eq(thps_actuator_split.act(&ctx, &req, &res), 0);
	ck_assert(res.acted);
	ck_assert_uint_eq(res.ranges_split, 1);
	ck_assert_uint_eq(res.ranges_skipped, 1);
	ck_assert_uint_eq(res.asked_bytes, 509 * 4096);
	text = get("debug/split_huge_pages");
	ck_assert_str_eq(text, split_text(START, START + 0x1000));
	ck_assert_ptr_nonnull(strstr(res.note, "1 folios changed since the scan"));
	free(text);
}
END_TEST

/* mTHPs: a 64 KiB folio (16 pages) with 1 used subpage is split through one page of it, to order 0;
 * a full one is left alone; a range whose folio became smaller is refused. */
START_TEST(test_split_mthp)
{
	struct thps_thp_range r[2] = {
		{ .pid = PID, .pid_starttime = STARTTIME, .start = START, .pfn = PFN, .pages = 16 },
		{ .pid = PID, .pid_starttime = STARTTIME, .start = START + 0x10000, .pfn = PFN + 16,
		  .pages = 16 },
	};
	struct thps_act_request req = { .cgroup = "work", .geom = &geom, .ranges = r, .n_ranges = 2 };
	struct thps_act_result res;
	uint32_t used = 0;
	char why[256], *text;

	fake_folio(START, PFN, 16, 1);
	fake_folio(START + 0x10000, PFN + 16, 16, 16);
	ck_assert_int_eq(thps_thp_recheck(&ctx, &geom, &r[0], 0, &used, why, sizeof(why)), 1);
	ck_assert_uint_eq(used, 1);
	ck_assert_ptr_nonnull(strstr(why, "1 of 16"));
	ck_assert_int_eq(thps_thp_recheck(&ctx, &geom, &r[1], 0, &used, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "well used"));
	ck_assert_int_eq(thps_actuator_split.act(&ctx, &req, &res), 0);
	ck_assert_uint_eq(res.ranges_split, 1);
	ck_assert_uint_eq(res.ranges_skipped, 1);
	ck_assert_uint_eq(res.asked_bytes, 15 * 4096);
	text = get("debug/split_huge_pages");
	ck_assert_str_eq(text, split_text(START, START + 0x1000));
	free(text);
	/* the folio was split to 16 KiB meanwhile: page 4 is a head now */
	{
		uint64_t head = (1ULL << 22) | (1ULL << 15) | (1ULL << 12);
		pwrite_at("proc/kpageflags", &head, 8, (PFN + 4) * 8);
	}
	ck_assert_int_eq(thps_thp_recheck(&ctx, &geom, &r[0], 0, &used, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "no longer a folio of 16 pages"));
	/* misaligned for its size */
	r[0].start = START + 0x1000;
	ck_assert_int_eq(thps_thp_recheck(&ctx, &geom, &r[0], 0, &used, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "not aligned"));
}
END_TEST

START_TEST(test_observe_changes_nothing)
{
	struct thps_thp_range r = { .pid = PID, .start = START, .pfn = PFN, .utilized = 12 };
	struct thps_act_request req = { .cgroup = "work", .geom = &geom, .ranges = &r, .n_ranges = 1 };
	struct thps_act_result res;
	char *a, *b;

	ck_assert_int_eq(thps_actuator_observe.act(&ctx, &req, &res), 0);
	ck_assert(!res.acted);
	ck_assert_uint_eq(res.asked_bytes, 500 * 4096);
	a = get("debug/split_huge_pages");
	b = get("cg/work/memory.reclaim");
	ck_assert_str_eq(a, "");
	ck_assert_str_eq(b, "");
	free(a);
	free(b);
	ck_assert_ptr_eq(thps_actuator_find("observe"), &thps_actuator_observe);
	ck_assert_ptr_null(thps_actuator_find("nope"));
}
END_TEST

START_TEST(test_max_ptes_none_set_restore)
{
	char state[PATH_MAX], *text;
	unsigned old = 0, v = 0;

	snprintf(state, sizeof(state), "%s/var/run/thpshrink", root);
	put("sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none", "511\n");
	ck_assert_int_eq(thps_max_ptes_none_set(&ctx, state, 409, &old), 0);
	ck_assert_uint_eq(old, 511);
	ck_assert_int_eq(thps_max_ptes_none_get(&ctx, &v), 0);
	ck_assert_uint_eq(v, 409);
	/* a second set keeps the first original for the restore */
	ck_assert_int_eq(thps_max_ptes_none_set(&ctx, state, 300, &old), 0);
	ck_assert_uint_eq(old, 409);
	text = get("var/run/thpshrink/max_ptes_none.saved");
	ck_assert_str_eq(text, "511\n");
	free(text);
	ck_assert_int_eq(thps_max_ptes_none_restore(&ctx, state, &v), 0);
	ck_assert_uint_eq(v, 511);
	ck_assert_int_eq(thps_max_ptes_none_get(&ctx, &v), 0);
	ck_assert_uint_eq(v, 511);
	ck_assert_int_eq(thps_max_ptes_none_restore(&ctx, state, &v), -ENOENT);
}
END_TEST

/* The one act path: a split writes memory.reclaim only with the policy's permission, where no
 * exact split reaches (no mechanism at all). */
START_TEST(test_give_back_reclaims_only_when_allowed)
{
	struct thps_give_back gb = {
	    .cgroup = "work",
	    .geom = &geom,
	    .method = THPS_GIVE_BACK_SPLIT,
	    .mech = THPS_SPLIT_MECH_NONE,
	    .zero_freed = 1,
	    .amount = 8192,
	};
	struct thps_act_result res;
	char *text;

	ck_assert_int_eq(thps_give_back(&ctx, &gb, &res), 0);
	ck_assert(!res.acted);
	ck_assert_ptr_nonnull(strstr(res.note, "refused: no exact split here"));
	ck_assert_ptr_nonnull(strstr(res.note, "memory.reclaim is not allowed"));
	text = get("cg/work/memory.reclaim");
	ck_assert_str_eq(text, "");
	free(text);

	gb.allow_reclaim = true;
	ck_assert_int_eq(thps_give_back(&ctx, &gb, &res), 0);
	ck_assert(res.acted);
	ck_assert_str_eq(res.mechanism, "reclaim");
	ck_assert_ptr_nonnull(strstr(res.note, "memory.reclaim, as the policy allows"));
	text = get("cg/work/memory.reclaim");
	ck_assert_str_eq(text, "8192");
	free(text);
}
END_TEST

/* The debugfs fallback reaches a partially mapped folio through the one page that still maps
 * it (a range over the whole folio could split other folios faulted into its holes), and never
 * writes memory.reclaim for it, allowed or not. */
START_TEST(test_give_back_debugfs_partial)
{
	const struct thps_thp_range r = {.pid = PID, .pid_starttime = STARTTIME, .start = START,
					 .pfn = PFN, .mapped = 8, .advise_page = 3};
	struct thps_give_back gb = {
	    .cgroup = "work",
	    .geom = &geom,
	    .method = THPS_GIVE_BACK_SPLIT,
	    .mech = THPS_SPLIT_MECH_DEBUGFS,
	    .zero_freed = 1,
	    .ranges = &r,
	    .n_ranges = 1,
	};
	uint64_t none[504] = {0};
	char rel[64], *text;
	struct thps_act_result res;

	fake_thp(START, PFN, 512);
	snprintf(rel, sizeof(rel), "proc/%d/pagemap", (int)getpid());
	pwrite_at(rel, none, sizeof(none), (START / 4096 + 8) * 8); /* pages 8..511 unmapped */

	for (int allow = 0; allow <= 1; allow++) {
		put("debug/split_huge_pages", "");
		gb.allow_reclaim = allow;
		ck_assert_int_eq(thps_give_back(&ctx, &gb, &res), 0);
		ck_assert(res.acted);
		ck_assert_str_eq(res.mechanism, "debugfs");
		ck_assert_uint_eq(res.ranges_split, 1);
		ck_assert_uint_eq(res.partial_split, 1);
		ck_assert_uint_eq(res.asked_bytes, 504 * 4096);
		text = get("debug/split_huge_pages");
		ck_assert_str_eq(text, split_text(START + 3 * 4096, START + 4 * 4096));
		free(text);
		text = get("cg/work/memory.reclaim");
		ck_assert_str_eq(text, "");
		free(text);
	}
}
END_TEST

static Suite *actuators_suite(void)
{
	Suite *s = suite_create("actuators");
	TCase *tc = tcase_create("actuators");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_amount);
	tcase_add_test(tc, test_vmstat_parse);
	tcase_add_test(tc, test_reclaim_writes_amount);
	tcase_add_test(tc, test_reclaim_refuses_v1);
	tcase_add_test(tc, test_reclaim_says_when_it_cannot_free);
	tcase_add_test(tc, test_split_refuses_where_it_frees_nothing);
	tcase_add_test(tc, test_recheck);
	tcase_add_test(tc, test_split_only_lowutil);
	tcase_add_test(tc, test_split_mthp);
	tcase_add_test(tc, test_observe_changes_nothing);
	tcase_add_test(tc, test_max_ptes_none_set_restore);
	tcase_add_test(tc, test_give_back_reclaims_only_when_allowed);
	tcase_add_test(tc, test_give_back_debugfs_partial);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(actuators_suite)
