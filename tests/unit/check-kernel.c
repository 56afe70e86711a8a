/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the kernel probe and the kernel sources on committed fake trees
 * (tests/fixtures/kernel/{k612,k61,rfc,v1host}): findings and derived booleans per kernel
 * kind, the RFC thp_utilization parser on the seed sample and on broken inputs, vmstat and
 * memory.stat parsing, and the sources' collect() on the trees; the split mechanism each folio
 * size would use, decided over fake measurements. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroups.h"
#include "fileio.h"
#include "kernel/kernel.h"
#include "macro.h"
#include "probe-measure.h"
#include "probe.h"
#include "scan.h"
#include "test-main.h"

static void ctx_for(struct thps_ctx *ctx, const char *tree)
{
	char base[PATH_MAX];

	snprintf(base, sizeof(base), "%s/%s", FIXTURES, tree);
	thps_ctx_init_tree(ctx, base, "cgroup");
}

static struct thps_probe *probe_tree(const char *tree, unsigned flags)
{
	struct thps_probe *p = malloc(sizeof(*p));
	struct thps_ctx ctx;

	ck_assert_ptr_nonnull(p);
	ctx_for(&ctx, tree);
	ck_assert_int_eq(thps_probe_run(&ctx, flags, p), 0);
	return p;
}

static const struct thps_finding *need(const struct thps_probe *p, const char *key)
{
	const struct thps_finding *f = thps_probe_finding(p, key);

	ck_assert_msg(f != NULL, "finding '%s' missing", key);
	ck_assert_msg(f->follows[0], "finding '%s' says nothing about what follows", key);
	return f;
}

static void assert_all_findings_explained(const struct thps_probe *p)
{
	ck_assert_uint_ge(p->n_findings, 12);
	for (size_t i = 0; i < p->n_findings; i++) {
		ck_assert_ptr_nonnull(p->findings[i].key);
		ck_assert_msg(p->findings[i].value[0] && p->findings[i].follows[0],
			      "finding %s empty", p->findings[i].key);
	}
}

START_TEST(test_probe_k612)
{
	struct thps_probe *p = probe_tree("k612", 0);

	assert_all_findings_explained(p);
	ck_assert_str_eq(p->kernel_release, "6.12.48+deb13-amd64");
	ck_assert_int_eq(p->cgroup_version, 2);
	ck_assert(p->v2_memory && p->v2_subtree_memory && p->have_memory_reclaim);
	ck_assert(p->can_reclaim);
	/* 6.12 has the swappiness= key; the answer says it was inferred */
	ck_assert_int_eq(p->reclaim_swappiness, 1);
	ck_assert(!p->swappiness_tested);
	ck_assert_ptr_nonnull(
	    strstr(need(p, "cgroup.memory_reclaim_swappiness")->value, "inferred"));
	ck_assert_str_eq(p->thp_enabled, "madvise");
	ck_assert_int_eq(p->shrink_underused, 1);
	ck_assert_int_eq(p->max_ptes_none, 511);
	ck_assert(p->recollapse_risk);
	ck_assert(!p->underused_shrinker_active);
	ck_assert(!need(p, "thp.shrink_underused")->ok);
	ck_assert(!need(p, "khugepaged.max_ptes_none")->ok);
	ck_assert_ptr_nonnull(strstr(need(p, "khugepaged.max_ptes_none")->follows, "409"));
	ck_assert_int_eq(p->split_kind, THPS_SPLIT_UPSTREAM);
	ck_assert(thps_probe_split_frees(p));
	ck_assert(p->have_split_debugfs);
	ck_assert(!p->have_thp_utilization);
	ck_assert_str_eq(need(p, "debugfs.thp_utilization")->value, "absent");
	ck_assert(need(p, "cgroup.memory")->ok);
	/* the tree has no proc/self/status: process_madvise unknown, debugfs the mechanism */
	ck_assert_int_lt(p->pmadvise_allowed, 0);
	ck_assert(!p->have_split_pmadvise);
	ck_assert(!need(p, "split.process_madvise")->ok);
	ck_assert_ptr_nonnull(strstr(need(p, "split.process_madvise")->value, "unknown"));
	ck_assert_int_eq(p->split_mech, THPS_SPLIT_MECH_DEBUGFS);
	free(p);
}
END_TEST

START_TEST(test_probe_k61)
{
	struct thps_probe *p = probe_tree("k61", 0);

	assert_all_findings_explained(p);
	ck_assert_int_eq(p->kver_major, 6);
	ck_assert_int_eq(p->kver_minor, 1);
	ck_assert(p->can_reclaim);
	ck_assert_int_eq(p->reclaim_swappiness, 0);
	ck_assert_ptr_nonnull(
	    strstr(need(p, "cgroup.memory_reclaim_swappiness")->value, "Linux < 6.12"));
	ck_assert_int_eq(p->shrink_underused, -1);
	ck_assert_str_eq(p->thp_enabled, "always");
	ck_assert_int_eq(p->split_kind, THPS_SPLIT_KEEPS_ZERO);
	ck_assert(!thps_probe_split_frees(p));
	ck_assert(!need(p, "split.frees_zero_subpages")->ok);
	ck_assert_ptr_nonnull(
	    strstr(need(p, "split.frees_zero_subpages")->follows, "free nothing"));
	ck_assert_ptr_nonnull(strstr(need(p, "thp.shrink_underused")->follows, "6.12"));
	ck_assert(p->have_split_debugfs);
	ck_assert(p->recollapse_risk);
	/* CapEff without CAP_SYS_NICE (a container's default set): debugfs is the fallback */
	ck_assert_int_eq(p->pmadvise_allowed, 0);
	ck_assert(!p->have_split_pmadvise);
	ck_assert_str_eq(need(p, "split.process_madvise")->value, "not allowed (no CAP_SYS_NICE)");
	ck_assert_ptr_nonnull(strstr(need(p, "split.process_madvise")->follows, "fall back"));
	ck_assert_int_eq(p->split_mech, THPS_SPLIT_MECH_DEBUGFS);
	free(p);
}
END_TEST

START_TEST(test_probe_rfc)
{
	struct thps_probe *p = probe_tree("rfc", 0);

	assert_all_findings_explained(p);
	ck_assert_int_eq(p->split_kind, THPS_SPLIT_RFC);
	ck_assert(p->split_frees_zero_subpages);
	ck_assert(p->have_thp_utilization);
	ck_assert_int_eq(p->thp_utilization_error, 0);
	ck_assert_uint_eq(p->kernel_hist.thps[0], 1331);
	ck_assert_uint_eq(p->kernel_hist.zero_subpages[0], 680884);
	ck_assert(need(p, "debugfs.thp_utilization")->ok);
	ck_assert_ptr_nonnull(strstr(need(p, "debugfs.thp_utilization")->value, "1331"));
	ck_assert_ptr_nonnull(strstr(need(p, "thp.shrink_underused")->follows, "RFC"));
	ck_assert_int_eq(p->max_ptes_none, 409);
	ck_assert(!p->recollapse_risk);
	ck_assert(need(p, "khugepaged.max_ptes_none")->ok);
	ck_assert(p->can_reclaim);
	free(p);
}
END_TEST

START_TEST(test_probe_v1host)
{
	struct thps_probe *p = probe_tree("v1host", 0);
	const struct thps_finding *f;

	assert_all_findings_explained(p);
	ck_assert_int_eq(p->cgroup_version, 1);
	ck_assert(!p->can_reclaim);
	f = need(p, "cgroup.memory");
	ck_assert(!f->ok);
	ck_assert_ptr_nonnull(strstr(f->follows, "Read-only reporting"));
	ck_assert(!p->debugfs_mounted);
	ck_assert(!p->have_split_debugfs);
	ck_assert_int_eq(p->shrink_underused, 0);
	ck_assert_int_eq(p->split_kind, THPS_SPLIT_UPSTREAM);
	ck_assert(!p->underused_shrinker_active);
	ck_assert(!p->recollapse_risk);
	/* no memory.reclaim here, but the version still tells what the kernel would accept */
	ck_assert_int_eq(p->reclaim_swappiness, 1);
	ck_assert_ptr_nonnull(
	    strstr(need(p, "cgroup.memory_reclaim_swappiness")->value, "inferred"));
	/* CAP_SYS_NICE: exact splits through process_madvise, though cgroup v1 is read-only */
	ck_assert_int_eq(p->pmadvise_allowed, 1);
	ck_assert(p->have_split_pmadvise);
	ck_assert(need(p, "split.process_madvise")->ok);
	ck_assert_str_eq(need(p, "split.process_madvise")->value, "allowed (CAP_SYS_NICE)");
	ck_assert_ptr_nonnull(
	    strstr(need(p, "debugfs.split_huge_pages")->follows, "process_madvise"));
	ck_assert_int_eq(p->split_mech, THPS_SPLIT_MECH_PMADVISE);
	ck_assert(!p->split_mech_measured);
	{
		char mode[256];

		thps_probe_mode(p, mode, sizeof(mode));
		ck_assert_str_eq(mode, "exact splits via process_madvise; per process: cgroup v1 "
				       "figures are read-only");
	}
	free(p);
}
END_TEST

static char tmpdir[64];

static void make_tmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check-kernel.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void mkd(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	ck_assert_int_eq(mkdir(path, 0755), 0);
}

START_TEST(test_memcg_find_mountinfo)
{
	struct thps_ctx ctx;
	char root[PATH_MAX], info[4 * PATH_MAX], expect[PATH_MAX];
	bool v2mem;

	make_tmp();
	mkd("proc");
	mkd("proc/self");
	mkd("unified");
	put("unified/cgroup.controllers", "cpu pids\n");
	mkd("my cg");
	put("my cg/cgroup.controllers", "cpu memory pids\n");
	memset(&ctx, 0, sizeof(ctx));
	snprintf(ctx.proc_root, PATH_MAX, "%s/proc", tmpdir);

	/* v2 without memory loses to v1's memory hierarchy */
	snprintf(info, sizeof(info),
		 "24 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		 "30 25 0:26 / %s/unified rw,nosuid - cgroup2 cgroup2 rw\n"
		 "31 25 0:27 / %s/v1host/cgroup rw,relatime shared:9 - cgroup cgroup rw,memory\n",
		 tmpdir, FIXTURES);
	put("proc/self/mountinfo", info);
	ck_assert_int_eq(thps_memcg_find(&ctx, root, sizeof(root), &v2mem), 1);
	snprintf(expect, sizeof(expect), "%s/v1host/cgroup", FIXTURES);
	ck_assert_str_eq(root, expect);
	ck_assert_int_eq(thps_cgroups_find_mount(&ctx), 0);
	ck_assert_str_eq(ctx.cgroup_root, expect);
	ck_assert_int_eq(ctx.cgroup_version, 1);
	ctx.cgroup_root[0] = 0;

	/* v2 with memory wins; its escaped space is undone */
	snprintf(info + strlen(info), sizeof(info) - strlen(info),
		 "32 25 0:28 / %s/my\\040cg rw - cgroup2 none rw,nsdelegate\n", tmpdir);
	put("proc/self/mountinfo", info);
	ck_assert_int_eq(thps_memcg_find(&ctx, root, sizeof(root), &v2mem), 2);
	snprintf(expect, sizeof(expect), "%s/my cg", tmpdir);
	ck_assert_str_eq(root, expect);
	ck_assert(v2mem);
	/* the daemon's and the CLI's discovery takes the probe's answer */
	ck_assert_int_eq(thps_cgroups_find_mount(&ctx), 0);
	ck_assert_str_eq(ctx.cgroup_root, expect);
	ck_assert_int_eq(ctx.cgroup_version, 2);
	ctx.cgroup_root[0] = 0;

	/* only a v2 mount without memory: found, but says so; no memory hierarchy to act on */
	snprintf(info, sizeof(info), "30 25 0:26 / %s/unified rw - cgroup2 cgroup2 rw\n", tmpdir);
	put("proc/self/mountinfo", info);
	ck_assert_int_eq(thps_memcg_find(&ctx, root, sizeof(root), &v2mem), 2);
	ck_assert(!v2mem);
	ck_assert_int_eq(thps_cgroups_find_mount(&ctx), -ENOENT);
	ck_assert_str_eq(ctx.cgroup_root, "");

	put("proc/self/mountinfo", "24 1 8:1 / / rw - ext4 /dev/sda1 rw\ngarbage\n");
	ck_assert_int_eq(thps_memcg_find(&ctx, root, sizeof(root), &v2mem), 0);
	ck_assert_int_eq(thps_cgroups_find_mount(&ctx), -ENOENT);
	rm_tmp();
}
END_TEST

START_TEST(test_probe_write_test)
{
	struct thps_ctx ctx;
	struct thps_probe *p = malloc(sizeof(*p));
	_cleanup_free_ char *got = NULL;
	char path[PATH_MAX];

	make_tmp();
	mkd("cg");
	put("cg/cgroup.controllers", "memory\n");
	put("cg/memory.reclaim", "");
	ctx_for(&ctx, "k612");
	snprintf(ctx.cgroup_root, PATH_MAX, "%s/cg", tmpdir);
	/* without the flag nothing is written */
	ck_assert_int_eq(thps_probe_run(&ctx, 0, p), 0);
	snprintf(path, sizeof(path), "%s/cg/memory.reclaim", tmpdir);
	ck_assert_int_eq(read_file_bounded(path, 64, &got, NULL), 0);
	ck_assert_str_eq(got, "");
	free(TAKE_PTR(got));
	ck_assert(!p->swappiness_tested);
	/* a file that takes the write stands for a kernel that accepts the key */
	ck_assert_int_eq(thps_probe_run(&ctx, THPS_PROBE_WRITE_TEST, p), 0);
	ck_assert(p->swappiness_tested);
	ck_assert_int_eq(p->reclaim_swappiness, 1);
	ck_assert_ptr_nonnull(strstr(need(p, "cgroup.memory_reclaim_swappiness")->value, "tested"));
	ck_assert_int_eq(read_file_bounded(path, 64, &got, NULL), 0);
	ck_assert_str_eq(got, "0 swappiness=60");
	free(p);
	rm_tmp();
}
END_TEST

START_TEST(test_probe_bad_thp_utilization)
{
	struct thps_ctx ctx;
	struct thps_probe *p = malloc(sizeof(*p));
	const struct thps_finding *f;
	struct thps_hist h;
	double t, d;
	int line = 0;

	make_tmp();
	put("thp_utilization", "Utilized[0-50]: 1 2\n");
	ctx_for(&ctx, "rfc");
	snprintf(ctx.debugfs_root, PATH_MAX, "%s", tmpdir);
	ck_assert_int_eq(thps_thp_utilization_read(&ctx, &h, &t, &d, &line), -EINVAL);
	ck_assert_int_eq(line, 2);
	ck_assert_int_eq(thps_probe_run(&ctx, 0, p), 0);
	ck_assert(p->have_thp_utilization);
	f = need(p, "debugfs.thp_utilization");
	ck_assert(!f->ok);
	ck_assert_ptr_nonnull(strstr(f->value, "at line 2"));
	free(p);
	rm_tmp();
}
END_TEST

START_TEST(test_decide_pure)
{
	struct thps_probe *p = malloc(sizeof(*p));

	thps_probe_init(p);
	thps_probe_decide(p);
	ck_assert(!p->can_reclaim && !p->split_frees_zero_subpages && !p->have_split_debugfs);
	ck_assert(!p->recollapse_risk);
	ck_assert_str_eq(need(p, "thp.enabled")->value, "absent");

	thps_probe_init(p);
	p->cgroup_version = 2;
	p->v2_memory = true;
	p->have_memory_reclaim = true;
	p->shrink_underused = 1;
	p->max_ptes_none = 409;
	p->debugfs_mounted = true;
	p->have_split_file = true;
	p->split_file_writable = false;
	snprintf(p->thp_enabled, sizeof(p->thp_enabled), "always");
	thps_probe_decide(p);
	ck_assert(p->can_reclaim);
	ck_assert(p->underused_shrinker_active);
	ck_assert(need(p, "thp.shrink_underused")->ok);
	ck_assert_ptr_nonnull(strstr(need(p, "thp.shrink_underused")->follows, "more than 409"));
	ck_assert(!p->have_split_debugfs); /* present but not writable */
	ck_assert_str_eq(need(p, "debugfs.split_huge_pages")->value, "present, not writable");
	ck_assert(!p->recollapse_risk);
	ck_assert_str_eq(need(p, "cgroup.memory_reclaim_swappiness")->value,
			 "unknown (kernel version unreadable)");

	/* the cut follows the geometry, not a hard-coded 511 */
	p->subpages = 16;
	p->max_ptes_none = 15;
	thps_probe_decide(p);
	ck_assert(p->recollapse_risk);
	ck_assert(!p->underused_shrinker_active);

	p->shrink_underused = 0;
	thps_probe_decide(p);
	ck_assert_str_eq(need(p, "thp.shrink_underused")->value, "0 (disabled)");
	free(p);
}
END_TEST

static const char *mode_of(struct thps_probe *p)
{
	static char mode[256];

	thps_probe_decide(p);
	thps_probe_mode(p, mode, sizeof(mode));
	return mode;
}

START_TEST(test_probe_mode)
{
	struct thps_probe *p = malloc(sizeof(*p));

	/* nothing known: nothing to act with */
	thps_probe_init(p);
	ck_assert_str_eq(mode_of(p), "read-only reporting");
	ck_assert(!need(p, "split.process_madvise")->ok);
	/* cgroup v1 with debugfs but no CAP_SYS_NICE: still read-only, as before */
	p->cgroup_version = 1;
	p->debugfs_mounted = p->have_split_file = p->split_file_writable = true;
	p->pmadvise_allowed = 0;
	ck_assert_str_eq(mode_of(p), "read-only reporting");
	/* ... with CAP_SYS_NICE: exact splits per process */
	p->pmadvise_allowed = 1;
	p->kver_major = 6;
	p->kver_minor = 18;
	ck_assert_str_eq(mode_of(p),
			 "exact splits via process_madvise (partially mapped folios only: a split "
			 "keeps zero subpages here); per process: cgroup v1 figures are read-only");
	p->shrink_underused = 1; /* >= 6.12: splits free zero subpages */
	ck_assert_str_eq(mode_of(p), "exact splits via process_madvise; per process: cgroup v1 "
				     "figures are read-only");
	/* process_madvise arrived in 5.10 */
	p->kver_major = 5;
	p->kver_minor = 4;
	ck_assert_str_eq(mode_of(p), "read-only reporting");
	ck_assert_str_eq(need(p, "split.process_madvise")->value, "unavailable (Linux < 5.10)");
	/* cgroup v2 with memory.reclaim */
	p->kver_major = 6;
	p->kver_minor = 12;
	p->cgroup_version = 2;
	p->v2_memory = p->have_memory_reclaim = true;
	ck_assert_str_eq(mode_of(p), "exact splits via process_madvise; memory.reclaim per cgroup");
	p->pmadvise_allowed = 0;
	ck_assert_str_eq(mode_of(p),
			 "exact splits via debugfs split_huge_pages; memory.reclaim per cgroup");
	p->split_file_writable = false;
	ck_assert_str_eq(mode_of(p), "memory.reclaim per cgroup; no exact splits");
	free(p);
}
END_TEST

/* One fake measured size: percentages of 1000 zero/unmapped bytes, -1 = not measured. */
static void fake_size(struct thps_measure_size *s, uint64_t size, int cold, int partial,
		      int debugfs)
{
	memset(s, 0, sizeof(*s));
	s->size = size;
	s->zero_bytes = s->cold_zero_bytes = s->cold_partial_unmapped_bytes = 1000;
	s->folios = s->cold_folios = s->cold_partial_folios = 2;
	s->cold_freed = cold < 0 ? INT64_MIN : cold * 10;
	s->cold_partial_freed = partial < 0 ? INT64_MIN : partial * 10;
	s->split_freed = debugfs < 0 ? INT64_MIN : debugfs * 10;
	s->reclaim_freed = INT64_MIN;
}

START_TEST(test_measure_decide)
{
	struct thps_measure *m = calloc(1, sizeof(*m));
	struct thps_measure_size *s = &m->sizes[0];

	ck_assert_ptr_nonnull(m);
	m->n = 1;
	m->pmadvise_allowed = 1;
	/* >= 6.12: both sets freed */
	fake_size(s, 2 << 20, 100, 100, -1);
	thps_measure_decide(m, s);
	ck_assert_int_eq(s->mech, THPS_SPLIT_MECH_PMADVISE);
	ck_assert_ptr_nonnull(strstr(s->mech_why, "100 % of sparse folios' zero bytes"));
	/* 6.1: zero subpages stay, unmapped ones are freed: still process_madvise, for the
	 * partially mapped folios, and it says so */
	fake_size(s, 2 << 20, 0, 100, 0);
	thps_measure_decide(m, s);
	ck_assert_int_eq(s->mech, THPS_SPLIT_MECH_PMADVISE);
	ck_assert_ptr_nonnull(strstr(s->mech_why, "partially mapped"));
	ck_assert_ptr_nonnull(strstr(s->mech_why, "keeps zero subpages here (0 % freed)"));
	/* 49 % of each is not enough: debugfs, measured, is the fallback */
	fake_size(s, 2 << 20, 49, 49, 99);
	m->debugfs_split = true;
	thps_measure_decide(m, s);
	ck_assert_int_eq(s->mech, THPS_SPLIT_MECH_DEBUGFS);
	ck_assert_ptr_nonnull(strstr(s->mech_why, "it freed 49 % of zero bytes"));
	/* not allowed: debugfs, and why not process_madvise */
	fake_size(s, 64 << 10, -1, -1, 99);
	m->pmadvise_allowed = 0;
	snprintf(m->pmadvise_why, sizeof(m->pmadvise_why), "no CAP_SYS_NICE");
	thps_measure_decide(m, s);
	ck_assert_int_eq(s->mech, THPS_SPLIT_MECH_DEBUGFS);
	ck_assert_ptr_nonnull(strstr(s->mech_why, "not process_madvise: no CAP_SYS_NICE"));
	/* debugfs writable but its split not measured: none */
	fake_size(s, 64 << 10, -1, -1, -1);
	thps_measure_decide(m, s);
	ck_assert_int_eq(s->mech, THPS_SPLIT_MECH_NONE);
	ck_assert_ptr_nonnull(strstr(s->mech_why, "debugfs split not measured"));
	/* neither */
	m->debugfs_split = false;
	thps_measure_decide(m, s);
	ck_assert_int_eq(s->mech, THPS_SPLIT_MECH_NONE);
	ck_assert_ptr_nonnull(strstr(s->mech_why, "split_huge_pages not writable"));
	/* allowed but not measured (the canary's pidfd failed): not chosen blind */
	m->pmadvise_allowed = 1;
	thps_measure_decide(m, s);
	ck_assert_int_eq(s->mech, THPS_SPLIT_MECH_NONE);
	ck_assert_ptr_nonnull(strstr(s->mech_why, "its split was not measured"));
	free(m);
}
END_TEST

/* The measured figures overrule the inferred answers: 6.1-like figures on the v1 tree. */
START_TEST(test_apply_measure)
{
	struct thps_probe *p = probe_tree("v1host", 0);
	struct thps_measure *m = calloc(1, sizeof(*m));
	const struct thps_finding *f;
	json_object *o, *x;
	char mode[256];

	ck_assert_ptr_nonnull(m);
	m->ran = true;
	m->n = 2;
	m->pmadvise_allowed = 1;
	fake_size(&m->sizes[0], 64 << 10, 0, 100, -1);
	fake_size(&m->sizes[1], 2 << 20, 0, 100, -1);
	for (size_t i = 0; i < m->n; i++)
		thps_measure_decide(m, &m->sizes[i]);
	thps_probe_apply_measure(p, m);
	ck_assert(!p->split_frees_zero_subpages);
	ck_assert_int_eq(p->split_mech, THPS_SPLIT_MECH_PMADVISE);
	ck_assert(p->split_mech_measured);
	f = need(p, "split.process_madvise");
	ck_assert(f->ok);
	ck_assert_str_eq(
	    f->value,
	    "allowed, used; measured zero/unmapped bytes freed: 64K 0%/100%, 2048K 0%/100%");
	ck_assert_str_eq(need(p, "split.frees_zero_subpages")->value,
			 "no (measured: 64K 0%, 2048K 0%)");
	thps_probe_mode(p, mode, sizeof(mode));
	ck_assert_ptr_nonnull(strstr(mode, "partially mapped folios only"));
	/* the JSON says the same */
	o = thps_probe_to_json(p);
	ck_assert(json_object_object_get_ex(o, "split_mechanism", &x));
	ck_assert_str_eq(json_object_get_string(x), "process_madvise");
	ck_assert(json_object_object_get_ex(o, "split_mechanism_measured", &x));
	ck_assert(json_object_get_boolean(x));
	json_object_put(o);
	o = thps_measure_to_json(m);
	x = json_object_array_get_idx(json_object_object_get(o, "sizes"), 1);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(x, "mechanism")),
			 "process_madvise");
	ck_assert_int_eq(json_object_get_int(json_object_object_get(x, "cold_partial_freed_pct")),
			 100);
	ck_assert(json_object_get_type(json_object_object_get(x, "split_freed_pct")) ==
		  json_type_null);
	json_object_put(o);
	/* no split measured at all (the canary never ran): the inferred answer stands */
	free(p);
	p = probe_tree("v1host", 0);
	fake_size(&m->sizes[0], 64 << 10, -1, -1, -1);
	fake_size(&m->sizes[1], 2 << 20, -1, -1, -1);
	for (size_t i = 0; i < m->n; i++)
		thps_measure_decide(m, &m->sizes[i]);
	thps_probe_apply_measure(p, m);
	ck_assert_int_eq(p->split_mech, THPS_SPLIT_MECH_PMADVISE);
	ck_assert(!p->split_mech_measured);
	/* process_madvise measured to free nothing, debugfs not writable: none, read-only */
	fake_size(&m->sizes[0], 64 << 10, 0, 0, -1);
	fake_size(&m->sizes[1], 2 << 20, 0, 0, -1);
	for (size_t i = 0; i < m->n; i++)
		thps_measure_decide(m, &m->sizes[i]);
	thps_probe_apply_measure(p, m);
	ck_assert_int_eq(p->split_mech, THPS_SPLIT_MECH_NONE);
	ck_assert(p->split_mech_measured);
	ck_assert(!need(p, "split.process_madvise")->ok);
	thps_probe_mode(p, mode, sizeof(mode));
	ck_assert_str_eq(mode, "read-only reporting");
	free(m);
	free(p);
}
END_TEST

START_TEST(test_parse_small)
{
	int maj, min;
	char b[16];

	ck_assert_int_eq(thps_parse_kernel_release("6.12.48+deb13-amd64", &maj, &min), 0);
	ck_assert_int_eq(maj, 6);
	ck_assert_int_eq(min, 12);
	ck_assert_int_eq(thps_parse_kernel_release("6.1", &maj, &min), 0);
	ck_assert_int_eq(min, 1);
	ck_assert_int_eq(thps_parse_kernel_release("six", &maj, &min), -EINVAL);
	ck_assert_int_eq(thps_parse_bracketed("always [madvise] never\n", b, sizeof(b)), 0);
	ck_assert_str_eq(b, "madvise");
	ck_assert_int_eq(
	    thps_parse_bracketed("always defer defer+madvise [madvise] never", b, sizeof(b)), 0);
	ck_assert_str_eq(b, "madvise");
	ck_assert_int_eq(thps_parse_bracketed("always madvise never", b, sizeof(b)), -EINVAL);
	ck_assert_int_eq(thps_parse_bracketed("[always] [never]", b, sizeof(b)), -EINVAL);
	ck_assert_int_eq(thps_parse_bracketed("[]", b, sizeof(b)), -EINVAL);
	ck_assert_int_eq(thps_parse_bracketed("[aaaaaaaaaaaaaaaaaaaaaaaaa]", b, sizeof(b)),
			 -ENAMETOOLONG);
}
END_TEST

static char *seed_text(void)
{
	char *t = NULL;

	ck_assert_int_eq(read_file_bounded(FIXTURES "/thp_utilization.seed", 4096, &t, NULL), 0);
	return t;
}

START_TEST(test_thp_utilization_seed)
{
	_cleanup_free_ char *t = seed_text();
	static const uint64_t thps[] = {1331, 9, 3, 0, 2, 5, 1, 0, 1, 400};
	static const uint64_t zero[] = {680884, 3983, 1187, 0, 539, 1135, 192, 0, 57, 13};
	struct thps_hist h;
	double st = 0, du = 0;
	int line = -1;

	ck_assert_int_eq(thps_parse_thp_utilization(t, &h, &st, &du, &line), 0);
	ck_assert_int_eq(line, -1);
	for (unsigned b = 0; b < THPS_BUCKETS; b++) {
		ck_assert_uint_eq(h.thps[b], thps[b]);
		ck_assert_uint_eq(h.zero_subpages[b], zero[b]);
	}
	ck_assert_double_eq_tol(st, 223.98, 1e-9);
	ck_assert_double_eq_tol(du, 70.65, 1e-9);
	/* the cover letter's arithmetic: 99.91% of bucket 0 is zero pages */
	ck_assert_double_eq_tol((double)h.zero_subpages[0] / (512.0 * h.thps[0]), 0.9991, 1e-4);
	/* the last newline is optional */
	t[strlen(t) - 1] = 0;
	ck_assert_int_eq(thps_parse_thp_utilization(t, &h, &st, &du, &line), 0);
}
END_TEST

/* The seed with line n (1-based) replaced by repl (NULL: deleted), or with extra inserted
 * before line n when insert is set. */
static char *mutate(int n, const char *repl, bool insert)
{
	_cleanup_free_ char *t = seed_text();
	char *out = malloc(strlen(t) + 256), *o = out;
	const char *p = t;
	int i = 1;

	ck_assert_ptr_nonnull(out);
	while (*p) {
		size_t len = strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n');

		if (i == n && insert)
			o += sprintf(o, "%s", repl);
		if (i == n && !insert) {
			if (repl)
				o += sprintf(o, "%s", repl);
		} else {
			memcpy(o, p, len);
			o += len;
		}
		p += len;
		i++;
	}
	if (n >= i && repl)
		o += sprintf(o, "%s", repl);
	*o = 0;
	return out;
}

START_TEST(test_thp_utilization_broken)
{
	static const struct {
		int line;
		const char *repl;
		bool insert;
		int bad_line;
	} cases[] = {
	    {12, NULL, false, 12},			    /* duration missing */
	    {13, "Extra: 1\n", false, 13},		    /* a 13th line */
	    {13, "\n", false, 13},			    /* trailing blank line */
	    {11, "\n", true, 11},			    /* blank line inside */
	    {3, "Utilized[103-152]: 3 1187\n", false, 3},   /* label gap */
	    {1, "Utilized[1-50]: 1331 680884\n", false, 1}, /* does not start at 0 */
	    {2, "Utilized[51-40]: 9 3983\n", false, 2},	    /* hi < lo */
	    {1, "Utilized[0-50]: x 680884\n", false, 1},
	    {1, "Utilized[0-50]: -1 680884\n", false, 1}, /* %d gone negative */
	    {4, "Utilized[153-203]: 0 0 \n", false, 4},	  /* trailing space */
	    {5, "Utilized[204-255]:  2 539\n", false, 5},
	    {6, "utilized[256-306]: 5 1135\n", false, 6},
	    {7, "Utilized[307-357]: 1 99999999999999999999\n", false, 7},
	    {10, "Utilized[460-512]: 400 13\r\n", false, 10},
	    {11, "Last Scan Time: 223.9\n", false, 11},
	    {11, "Last Scan Time: 223\n", false, 11},
	    {11, "Last Scan Time: 223.981\n", false, 11},
	    {11, "Last Scan Duration: 70.65\n", false, 11}, /* swapped */
	    {12, "Last Scan Duration: .65\n", false, 12},
	    {1, "", false, 1}, /* the first line missing */
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *t = mutate(cases[i].line, cases[i].repl, cases[i].insert);
		struct thps_hist h;
		double st = -1, du = -1;
		int line = -1;

		ck_assert_msg(thps_parse_thp_utilization(t, &h, &st, &du, &line) == -EINVAL,
			      "case %zu accepted", i);
		ck_assert_msg(line == cases[i].bad_line, "case %zu: bad line %d, expected %d", i,
			      line, cases[i].bad_line);
		ck_assert(st == -1 && du == -1); /* untouched on failure */
	}
	{
		struct thps_hist h;
		double st, du;
		int line = 0;

		ck_assert_int_eq(thps_parse_thp_utilization("", &h, &st, &du, &line), -EINVAL);
		ck_assert_int_eq(line, 1);
	}
}
END_TEST

START_TEST(test_vmstat_parse)
{
	_cleanup_free_ char *a = NULL, *b = NULL;
	struct thps_vmstat v;

	ck_assert_int_eq(read_file_bounded(FIXTURES "/k612/proc/vmstat", 65536, &a, NULL), 0);
	ck_assert_int_eq(thps_parse_vmstat(a, &v), 0);
	ck_assert_uint_eq(v.thp_split_page, 32);
	ck_assert_uint_eq(v.thp_split_page_failed, 1);
	ck_assert_uint_eq(v.thp_deferred_split_page, 32);
	ck_assert_uint_eq(v.thp_underused_split_page, 32);
	ck_assert_uint_eq(v.thp_split_pmd, 32);
	ck_assert_uint_eq(v.thp_collapse_alloc, 3);
	ck_assert_uint_eq(v.thp_split_free, UINT64_MAX);
	ck_assert_uint_eq(v.thp_split_unmap, UINT64_MAX);
	ck_assert_int_eq(read_file_bounded(FIXTURES "/rfc/proc/vmstat", 65536, &b, NULL), 0);
	ck_assert_int_eq(thps_parse_vmstat(b, &v), 0);
	ck_assert_uint_eq(v.thp_split_free, 16352);
	ck_assert_uint_eq(v.thp_split_unmap, 16352);
	ck_assert_uint_eq(v.thp_underused_split_page, UINT64_MAX);
	v.thp_split_page = 7;
	ck_assert_int_eq(thps_parse_vmstat("thp_split_page x\n", &v), -EINVAL);
	ck_assert_uint_eq(v.thp_split_page, 7); /* untouched on failure */
	ck_assert_int_eq(thps_parse_vmstat("thp_split_page 99999999999999999999999\n", &v),
			 -EINVAL);
	ck_assert_int_eq(thps_parse_vmstat("", &v), 0);
	ck_assert_uint_eq(v.thp_split_page, UINT64_MAX);
}
END_TEST

START_TEST(test_memstat_parse)
{
	uint64_t x = 0;

	ck_assert_int_eq(thps_parse_memstat_thp("anon 5\nanon_thp 4194304\nfile_thp 0\n", 2, &x),
			 0);
	ck_assert_uint_eq(x, 4194304);
	ck_assert_int_eq(thps_parse_memstat_thp("anon 5\n", 2, &x), -ENOENT);
	ck_assert_int_eq(
	    thps_parse_memstat_thp("rss_huge 2097152\ntotal_rss_huge 6291456\n", 1, &x), 0);
	ck_assert_uint_eq(x, 6291456);
	ck_assert_int_eq(thps_parse_memstat_thp("cache 0\nrss_huge 2097152\n", 1, &x), 0);
	ck_assert_uint_eq(x, 2097152);
	ck_assert_int_eq(thps_parse_memstat_thp("anon_thp 4194304\n", 1, &x), -ENOENT);
	ck_assert_int_eq(thps_parse_memstat_thp("anon_thp -1\n", 2, &x), -EINVAL);
}
END_TEST

START_TEST(test_vmstat_collect_v2)
{
	struct thps_geometry g;
	struct thps_scan s;
	struct thps_ctx ctx;
	struct thps_cgroup_stats *c;
	char why[256];

	thps_geometry_default(&g);
	thps_scan_init(&s, &g);
	ctx_for(&ctx, "k612");
	ck_assert_int_eq(thps_source_vmstat.probe(&ctx, why, sizeof(why)), 1);
	ck_assert_ptr_nonnull(thps_scan_cgroup(&s, 1, "/"));
	ck_assert_ptr_nonnull(thps_scan_cgroup(&s, 2, "/work"));
	ck_assert_ptr_nonnull(thps_scan_cgroup(&s, 3, "/gone"));
	ck_assert_ptr_nonnull(thps_scan_cgroup(&s, 4, "/../k61/cgroup/work"));
	ck_assert_int_eq(thps_source_vmstat.collect(&ctx, NULL, &s), 0);
	ck_assert(s.have_vmstat);
	ck_assert_uint_eq(s.vmstat.thp_underused_split_page, 32);
	c = thps_scan_find_path(&s, "/work");
	ck_assert(c->have_memstat);
	ck_assert_uint_eq(c->memory_current, 67624960);
	ck_assert_uint_eq(c->anon_thp_bytes, 67108864);
	c = thps_scan_find_path(&s, "/");
	ck_assert(c->have_memstat); /* the v2 root: anon_thp without memory.current */
	ck_assert_uint_eq(c->memory_current, 0);
	ck_assert_uint_eq(c->anon_thp_bytes, 67108864);
	ck_assert(!thps_scan_find_path(&s, "/gone")->have_memstat);
	ck_assert(!thps_scan_find_path(&s, "/../k61/cgroup/work")->have_memstat);
	thps_scan_free(&s);
}
END_TEST

START_TEST(test_vmstat_collect_v1)
{
	struct thps_geometry g;
	struct thps_scan s;
	struct thps_ctx ctx;
	struct thps_cgroup_stats *c;

	thps_geometry_default(&g);
	thps_scan_init(&s, &g);
	ctx_for(&ctx, "v1host");
	ck_assert_ptr_nonnull(thps_scan_cgroup(&s, 7, "/docker/abc"));
	ck_assert_int_eq(thps_source_vmstat.collect(&ctx, NULL, &s), 0);
	c = thps_scan_find_path(&s, "/docker/abc");
	ck_assert(c->have_memstat);
	ck_assert_uint_eq(c->memory_current, 12582912);
	ck_assert_uint_eq(c->anon_thp_bytes, 4194304);
	ck_assert_uint_eq(s.vmstat.thp_split_free, UINT64_MAX);
	thps_scan_free(&s);
}
END_TEST

START_TEST(test_debugfs_source)
{
	struct thps_geometry g;
	struct thps_scan s;
	struct thps_ctx ctx;
	char why[256];

	thps_geometry_default(&g);
	thps_scan_init(&s, &g);
	ctx_for(&ctx, "rfc");
	ck_assert_int_eq(thps_source_debugfs.probe(&ctx, why, sizeof(why)), 1);
	ck_assert_int_eq(thps_source_debugfs.collect(&ctx, NULL, &s), 0);
	ck_assert(s.have_kernel_hist);
	ck_assert_uint_eq(s.kernel_hist.thps[0], 1331);
	ck_assert_uint_eq(s.kernel_hist.thps[9], 400);
	ck_assert_double_eq_tol(s.kernel_last_scan_time, 223.98, 1e-9);
	ck_assert_double_eq_tol(s.kernel_last_scan_duration, 70.65, 1e-9);
	thps_scan_free(&s);

	ctx_for(&ctx, "k612");
	ck_assert_int_eq(thps_source_debugfs.probe(&ctx, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "not usable: this kernel lacks the RFC's thp_utilization "
			      "(only the patched kernel has it)");
	thps_scan_init(&s, &g);
	ck_assert_int_eq(thps_source_debugfs.collect(&ctx, NULL, &s), -ENOENT);
	ck_assert(!s.have_kernel_hist);
	thps_scan_free(&s);
	ctx_for(&ctx, "v1host");
	ck_assert_int_eq(thps_source_debugfs.probe(&ctx, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "not mounted"));
}
END_TEST

START_TEST(test_probe_json)
{
	struct thps_probe *p = probe_tree("rfc", 0);
	json_object *o = thps_probe_to_json(p), *x, *b;

	ck_assert_ptr_nonnull(o);
	ck_assert(json_object_object_get_ex(o, "split_kind", &x));
	ck_assert_str_eq(json_object_get_string(x), "rfc");
	ck_assert(json_object_object_get_ex(o, "thp_utilization", &x));
	ck_assert(json_object_object_get_ex(x, "buckets", &b));
	ck_assert_uint_eq(json_object_array_length(b), THPS_BUCKETS);
	ck_assert(json_object_object_get_ex(json_object_array_get_idx(b, 0), "thps", &x));
	ck_assert_int_eq(json_object_get_int64(x), 1331);
	ck_assert(json_object_object_get_ex(o, "findings", &x));
	ck_assert_uint_eq(json_object_array_length(x), p->n_findings);
	json_object_put(o);
	free(p);
}
END_TEST

static Suite *kernel_suite(void)
{
	Suite *s = suite_create("kernel");
	TCase *tc = tcase_create("probe");

	tcase_add_test(tc, test_probe_k612);
	tcase_add_test(tc, test_probe_k61);
	tcase_add_test(tc, test_probe_rfc);
	tcase_add_test(tc, test_probe_v1host);
	tcase_add_test(tc, test_memcg_find_mountinfo);
	tcase_add_test(tc, test_probe_write_test);
	tcase_add_test(tc, test_decide_pure);
	tcase_add_test(tc, test_probe_mode);
	tcase_add_test(tc, test_measure_decide);
	tcase_add_test(tc, test_apply_measure);
	tcase_add_test(tc, test_probe_bad_thp_utilization);
	tcase_add_test(tc, test_parse_small);
	tcase_add_test(tc, test_probe_json);
	suite_add_tcase(s, tc);
	tc = tcase_create("sources");
	tcase_add_test(tc, test_thp_utilization_seed);
	tcase_add_test(tc, test_thp_utilization_broken);
	tcase_add_test(tc, test_vmstat_parse);
	tcase_add_test(tc, test_memstat_parse);
	tcase_add_test(tc, test_vmstat_collect_v2);
	tcase_add_test(tc, test_vmstat_collect_v1);
	tcase_add_test(tc, test_debugfs_source);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(kernel_suite)
