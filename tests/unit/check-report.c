/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the report formatters: hand-built scans against golden files under
 * tests/fixtures/report/ (byte-exact). `make update-goldens` rewrites them. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report-json.h"
#include "report-text.h"
#include "registrations.h"
#include "report.h"
#include "scan.h"
#include "thp.h"
#include "units.h"
#include "test-main.h"

#ifndef FIXTURE_DIR
#error FIXTURE_DIR must name tests/fixtures/report
#endif

static const struct thps_source_status test_sources[] = {
    {"scanner", true, ""},
    {"debugfs", false,
     "'/sys/kernel/debug/thp_utilization' is missing: the kernel lacks the RFC patches"},
};

static void add_thps(struct thps_scan *s, struct thps_cgroup_stats *c, unsigned utilized,
		     unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		thps_hist_add(&c->hist, &s->geom, utilized);
}

/* Several cgroups; cgroup "/edges" holds one THP at each end of every bucket. */
static void build_multi(struct thps_scan *s, unsigned cut, bool kernel, bool vmstat)
{
	struct thps_geometry g;
	struct thps_cgroup_stats *c;

	thps_geometry_default(&g);
	thps_scan_init(s, &g);

	c = thps_scan_cgroup(s, 1001, "/edges");
	ck_assert_ptr_nonnull(c);
	for (unsigned b = 0; b < THPS_BUCKETS; b++) {
		unsigned lo, hi;

		thps_bucket_range(&g, b, &lo, &hi);
		add_thps(s, c, lo, 1);
		add_thps(s, c, hi, 1);
	}
	c->partial_thps = 2;
	c->partial_unmapped_bytes = 2 * 300 * 4096ull;
	c->have_memstat = true;
	c->memory_current = 734003200;
	c->anon_thp_bytes = 44040192;

	c = thps_scan_cgroup(s, 1002, "/system.slice/bloat.service");
	ck_assert_ptr_nonnull(c);
	add_thps(s, c, 0, 20);
	add_thps(s, c, 51, 4);
	add_thps(s, c, 52, 4);
	add_thps(s, c, 512, 10);

	/* Only partially mapped THPs, no memstat. */
	c = thps_scan_cgroup(s, 1003, "/user.slice/redis");
	ck_assert_ptr_nonnull(c);
	c->partial_thps = 57;
	c->partial_unmapped_bytes = 57 * 500 * 4096ull;

	/* No THPs at all: no table. */
	c = thps_scan_cgroup(s, 1004, "/idle");
	ck_assert_ptr_nonnull(c);
	c->have_memstat = true;
	c->memory_current = 4096;

	/* A name that needs escaping in JSON, including a byte that is not UTF-8. */
	c = thps_scan_cgroup(s, 1005, "/odd \"name\"\\\tx\xff\xc3\xa9");
	ck_assert_ptr_nonnull(c);
	add_thps(s, c, 400, 3);

	/* Same waste as "/odd...", sorted after it by path. */
	c = thps_scan_cgroup(s, 1006, "/zz-same-waste");
	ck_assert_ptr_nonnull(c);
	add_thps(s, c, 400, 3);

	thps_scan_finish(s, cut);

	if (kernel) {
		s->have_kernel_hist = true;
		for (unsigned b = 0; b < THPS_BUCKETS; b++) {
			s->kernel_hist.thps[b] = 100 * (b + 1);
			s->kernel_hist.zero_subpages[b] = 100 * (b + 1) * (512 - 51 * b - 25);
		}
		s->kernel_last_scan_time = 19.25;
		s->kernel_last_scan_duration = 9.27;
	}
	if (vmstat) {
		s->have_vmstat = true;
		s->vmstat.thp_split_page = 12;
		s->vmstat.thp_split_page_failed = 0;
		s->vmstat.thp_deferred_split_page = 7;
		s->vmstat.thp_underused_split_page = 3;
		s->vmstat.thp_split_pmd = 40;
		s->vmstat.thp_collapse_alloc = 5;
		/* thp_split_free, thp_split_unmap: absent (not the RFC kernel) */
	}
	s->summary = (struct thps_scan_summary){
	    .procs_scanned = 123,
	    .procs_skipped = 2,
	    .thps_scanned = 64,
	    .thps_shared = 1,
	    .bytes_read = 64ull * 2 * 1024 * 1024,
	    .wall_ns = 123456789,
	    .cpu_ns = 98765432,
	    .throttled_ns = 0,
	    .method = "PAGEMAP_SCAN",
	};
}

static void build_empty(struct thps_scan *s)
{
	struct thps_geometry g;

	thps_geometry_default(&g);
	thps_scan_init(s, &g);
	ck_assert_ptr_nonnull(thps_scan_cgroup(s, 1, "/"));
	thps_scan_finish(s, 0);
	s->summary.procs_scanned = 57;
	s->summary.wall_ns = 1000000;
	s->summary.cpu_ns = 500000;
	s->summary.method = "pagemap";
}

/* Compares out with the golden file, or rewrites it when THPS_UPDATE_GOLDENS is set
 * (`make update-goldens`). */
static void check_golden(const char *name, const char *out, size_t len)
{
	char path[4096];
	FILE *f;
	char *want;
	long wlen;

	snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, name);
	if (getenv("THPS_UPDATE_GOLDENS")) {
		f = fopen(path, "we");
		ck_assert_msg(f, "cannot write %s", path);
		ck_assert_uint_eq(fwrite(out, 1, len, f), len);
		ck_assert_int_eq(fclose(f), 0);
		return;
	}
	f = fopen(path, "re");
	ck_assert_msg(f, "golden file %s missing (make update-goldens)", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	wlen = ftell(f);
	rewind(f);
	want = malloc(wlen + 1);
	ck_assert_ptr_nonnull(want);
	ck_assert_uint_eq(fread(want, 1, wlen, f), (size_t)wlen);
	want[wlen] = '\0';
	fclose(f);
	if ((size_t)wlen != len || memcmp(want, out, len) != 0) {
		fprintf(stderr, "--- %s (golden)\n%s--- got\n%.*s---\n", name, want, (int)len, out);
		ck_abort_msg("output differs from golden file %s", path);
	}
	free(want);
}

enum fmt { TEXT, JSON };

static void render_and_check(const struct thps_scan *s, const struct thps_report_opts *o,
			     enum fmt fmt, const char *golden)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fmt == TEXT ? thps_report_text(f, s, o) : thps_report_json(f, s, o), 0);
	ck_assert_int_eq(fclose(f), 0);
	check_golden(golden, buf, len);
	free(buf);
}

static struct thps_report_opts opts_for(unsigned cut)
{
	return (struct thps_report_opts){
	    .lowutil_max_bucket = cut,
	    .thp_mode = "madvise",
	    .sources = test_sources,
	    .n_sources = 2,
	};
}

START_TEST(test_multi_golden)
{
	struct thps_scan s;
	struct thps_report_opts o = opts_for(0);

	build_multi(&s, 0, true, true);
	render_and_check(&s, &o, TEXT, "multi.txt");
	render_and_check(&s, &o, JSON, "multi.json");
	/* The formatters sort a copy: the scan keeps its order. */
	ck_assert_str_eq(s.cgroups[0].path, "/edges");
	thps_scan_free(&s);
}
END_TEST

START_TEST(test_cut_no_kernel_golden)
{
	struct thps_scan s;
	struct thps_report_opts o = opts_for(2);

	o.cgroup = "/system.slice";
	build_multi(&s, 2, false, false);
	render_and_check(&s, &o, TEXT, "cut2.txt");
	render_and_check(&s, &o, JSON, "cut2.json");
	thps_scan_free(&s);
}
END_TEST

START_TEST(test_empty_golden)
{
	struct thps_scan s;
	struct thps_report_opts o = opts_for(0);

	build_empty(&s);
	render_and_check(&s, &o, TEXT, "empty.txt");
	render_and_check(&s, &o, JSON, "empty.json");
	o.pid = 4242;
	o.thp_mode = "never";
	o.n_sources = 0;
	render_and_check(&s, &o, TEXT, "empty-pid.txt");
	render_and_check(&s, &o, JSON, "empty-pid.json");
	thps_scan_free(&s);
}
END_TEST

/* thpshrink report with promote's finder: a cgroup under THP=never has no THP, only dense
 * memory still in small pages (the promotion opportunity), and is shown for it; the cgroup
 * with THPs shows its dense memory next to its waste; the total sums them. */
START_TEST(test_dense_golden)
{
	struct thps_scan s;
	struct thps_report_opts o = opts_for(0);
	struct thps_cgroup_stats *c;

	build_multi(&s, 0, true, true);
	for (size_t i = 0; i < s.n_cgroups; i++)
		s.cgroups[i].have_dense = true;
	c = thps_scan_cgroup(&s, 900, "/db.slice/pg");
	c->have_dense = true;
	c->dense_small_bytes = 64u << 20;
	s.cgroups[0].dense_small_bytes = 4u << 20;
	s.total.have_dense = true;
	s.total.dense_small_bytes = 68u << 20;
	render_and_check(&s, &o, TEXT, "dense.txt");
	render_and_check(&s, &o, JSON, "dense.json");
	thps_scan_free(&s);
}
END_TEST

/* mTHPs: a cgroup with 64 KiB folios only (1 of 16 subpages used, and full ones), one with a
 * mix of PMD THPs, 16 KiB and 64 KiB folios and a partly mapped 64 KiB folio; the empty case
 * on a kernel whose PMD mode is never but whose 64 KiB size is always. */
START_TEST(test_mthp_golden)
{
	struct thps_scan s;
	struct thps_geometry g;
	struct thps_cgroup_stats *c;
	struct thps_report_opts o = opts_for(0);

	thps_geometry_default(&g);
	thps_scan_init(&s, &g);
	c = thps_scan_cgroup(&s, 2001, "/m64");
	ck_assert_ptr_nonnull(c);
	for (unsigned i = 0; i < 1024; i++)
		thps_hist_add_n(&c->mthp[4].hist, 16, 1);
	for (unsigned i = 0; i < 64; i++)
		thps_hist_add_n(&c->mthp[4].hist, 16, 16);
	c = thps_scan_cgroup(&s, 2002, "/mix");
	ck_assert_ptr_nonnull(c);
	add_thps(&s, c, 4, 8);
	add_thps(&s, c, 512, 2);
	for (unsigned i = 0; i < 100; i++)
		thps_hist_add_n(&c->mthp[2].hist, 4, 0);
	for (unsigned i = 0; i < 10; i++)
		thps_hist_add_n(&c->mthp[2].hist, 4, 4);
	for (unsigned i = 0; i < 50; i++)
		thps_hist_add_n(&c->mthp[4].hist, 16, 2);
	c->mthp[4].partial_folios = 1;
	c->mthp[4].partial_unmapped_bytes = 12 * 4096;
	c->partial_thps = 1;
	c->partial_unmapped_bytes = 12 * 4096;
	thps_scan_finish(&s, 0);
	/* waste: every size's low-util zero subpages (64 KiB: 15 each; 16 KiB: 4 each; PMD: 508) */
	c = thps_scan_find_path(&s, "/m64");
	ck_assert_uint_eq(c->waste_bytes, 1024ull * 15 * 4096);
	ck_assert_uint_eq(c->lowutil_thps, 1024);
	c = thps_scan_find_path(&s, "/mix");
	/* 64 KiB with 2 of 16 used is bucket 1 (2*10/16): not low-util at cut 0 */
	ck_assert_uint_eq(c->waste_bytes, (8ull * 508 + 100 * 4) * 4096);
	ck_assert_uint_eq(s.total.waste_bytes, (1024ull * 15 + 8 * 508 + 100 * 4) * 4096);
	ck_assert_uint_eq(thps_hist_thps(&s.total.mthp[4].hist), 1024 + 64 + 50);
	render_and_check(&s, &o, TEXT, "mthp.txt");
	render_and_check(&s, &o, JSON, "mthp.json");
	thps_scan_free(&s);

	thps_scan_init(&s, &g);
	ck_assert_ptr_nonnull(thps_scan_cgroup(&s, 1, "/"));
	thps_scan_finish(&s, 0);
	s.summary.procs_scanned = 3;
	s.summary.method = "PAGEMAP_SCAN";
	o.thp_mode = "never";
	o.mthp_modes = "16kB never, 64kB always";
	o.pid = 77;
	render_and_check(&s, &o, TEXT, "mthp-empty.txt");
	thps_scan_free(&s);
}
END_TEST

/* kubelet's cgroups in the JSON report: a CRI-O container under systemd (pod, QoS, id), a
 * pod's own cgroup under cgroupfs (no container id), and a look-alike with a malformed UID
 * (no "kubernetes" object). The container is registered with its names (thpshrink-nri): an
 * "identity" object; the look-alike's registration tells none: no object. The golden file is
 * also checked against the schema. */
START_TEST(test_k8s_golden)
{
	struct thps_scan s;
	struct thps_geometry g;
	struct thps_report_opts o = opts_for(0);
	struct thps_registration r[2] = {
	    {.id = "c1",
	     .cgroup = "/kubepods.slice/kubepods-burstable.slice/"
		       "kubepods-burstable-pod0f6e2a4c_1b3d_4e5f_8a9b_0c1d2e3f4a5b.slice",
	     .k8s_namespace = "batch",
	     .pod = "pg-0",
	     .container = "postgres",
	     .n_labels = 2,
	     .labels = {{"app.kubernetes.io/name", "pg"}, {"tier", "db"}}},
	    {.id = "c2", .cgroup = "/kubepods/besteffort/pod0f6e2a4c-1b3d-4e5f-8a9b"},
	};
	struct thps_registration_list regs = {.items = r, .n = 2};

	o.regs = &regs; /* the pod's registration covers its container's cgroup */
	thps_geometry_default(&g);
	thps_scan_init(&s, &g);
	add_thps(&s,
		 thps_scan_cgroup(
		     &s, 3001,
		     "/kubepods.slice/kubepods-burstable.slice/"
		     "kubepods-burstable-pod0f6e2a4c_1b3d_4e5f_8a9b_0c1d2e3f4a5b.slice/"
		     "crio-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope"),
		 10, 3);
	add_thps(&s, thps_scan_cgroup(&s, 3002, "/kubepods/pod0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b"),
		 10, 2);
	add_thps(&s, thps_scan_cgroup(&s, 3003, "/kubepods/besteffort/pod0f6e2a4c-1b3d-4e5f-8a9b"),
		 10, 1);
	thps_scan_finish(&s, 0);
	render_and_check(&s, &o, JSON, "k8s.json");
	thps_scan_free(&s);
}
END_TEST

/* The RFC's buckets scaled to any folio size: min(utilized * 10 / nr, 9). */
START_TEST(test_bucket_n)
{
	unsigned lo, hi;

	ck_assert_uint_eq(thps_bucket_n(16, 0), 0);
	ck_assert_uint_eq(thps_bucket_n(16, 1), 0);
	ck_assert_uint_eq(thps_bucket_n(16, 2), 1);
	ck_assert_uint_eq(thps_bucket_n(16, 15), 9);
	ck_assert_uint_eq(thps_bucket_n(16, 16), 9);
	ck_assert_uint_eq(thps_bucket_n(2, 1), 5);
	ck_assert_uint_eq(thps_bucket_n(4, 1), 2);
	ck_assert_uint_eq(thps_bucket_n(512, 51), 0);
	ck_assert_uint_eq(thps_bucket_n(512, 52), 1);
	/* every utilization lands in the bucket whose range holds it, for every size */
	for (uint32_t nr = 2; nr <= 512; nr *= 2)
		for (unsigned u = 0; u <= nr; u++) {
			thps_bucket_range_n(nr, thps_bucket_n(nr, u), &lo, &hi);
			ck_assert_msg(lo <= u && u <= hi, "nr %u u %u: range %u-%u", nr, u, lo, hi);
		}
	thps_bucket_range_n(16, 0, &lo, &hi);
	ck_assert_uint_eq(lo, 0);
	ck_assert_uint_eq(hi, 1);
	thps_bucket_range_n(2, 1, &lo, &hi); /* no utilization of an 8 KiB folio is bucket 1 */
	ck_assert_uint_gt(lo, hi);
	ck_assert_int_eq(thps_folio_order(16), 4);
	ck_assert_int_eq(thps_folio_order(512), 9);
	ck_assert_int_eq(thps_folio_order(12), -1);
	ck_assert_int_eq(thps_folio_order(0), -1);
}
END_TEST

/* --source debugfs on the RFC kernel: no scanner figures, only the kernel's histogram. */
START_TEST(test_kernel_only_golden)
{
	struct thps_scan s;
	struct thps_geometry g;
	struct thps_report_opts o = opts_for(0);

	thps_geometry_default(&g);
	thps_scan_init(&s, &g);
	thps_scan_finish(&s, 0);
	s.have_kernel_hist = true;
	s.kernel_hist.thps[0] = 1331;
	s.kernel_hist.zero_subpages[0] = 680884;
	s.kernel_hist.thps[9] = 400;
	s.kernel_hist.zero_subpages[9] = 13;
	s.kernel_last_scan_time = 19.25;
	s.kernel_last_scan_duration = 9.27;
	render_and_check(&s, &o, TEXT, "kernel-only.txt");
	render_and_check(&s, &o, JSON, "kernel-only.json");
	thps_scan_free(&s);
}
END_TEST

START_TEST(test_order_by_waste)
{
	struct thps_scan s;
	const struct thps_cgroup_stats **v;
	ssize_t n;

	build_multi(&s, 0, false, false);
	n = thps_report_order(&s, &v);
	ck_assert_int_eq(n, 5); /* "/idle" has no THPs */
	for (ssize_t i = 1; i < n; i++)
		ck_assert_uint_ge(v[i - 1]->waste_bytes + v[i - 1]->partial_unmapped_bytes,
				  v[i]->waste_bytes + v[i]->partial_unmapped_bytes);
	ck_assert_str_eq(v[0]->path, "/user.slice/redis");
	ck_assert_str_eq(v[n - 1]->path, "/zz-same-waste");
	free(v);
	thps_scan_free(&s);
}
END_TEST

static char *json_of(const char *in)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	thps_json_string(f, in);
	fclose(f);
	return buf;
}

START_TEST(test_json_string_escapes)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {NULL, "null"},
	    {"", "\"\""},
	    {"/a/b", "\"/a/b\""},
	    {"q\"b\\", "\"q\\\"b\\\\\""},
	    {"\n\x01\x7f", "\"\\u000a\\u0001\\u007f\""},
	    {"\xc3\xa9", "\"\xc3\xa9\""},		  /* é stays */
	    {"\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""}, /* 4-byte stays */
	    {"\xff", "\"\\ufffd\""},
	    {"\xc3", "\"\\ufffd\""},			   /* truncated */
	    {"\xc0\xaf", "\"\\ufffd\\ufffd\""},		   /* overlong */
	    {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""}, /* surrogate */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = json_of(cases[i].in);
		ck_assert_msg(!strcmp(got, cases[i].out), "case %zu: got %s want %s", i, got,
			      cases[i].out);
		free(got);
	}
}
END_TEST

START_TEST(test_format_bytes)
{
	char b[32];

	thps_format_bytes(b, sizeof(b), 0);
	ck_assert_str_eq(b, "0 B");
	thps_format_bytes(b, sizeof(b), 1023);
	ck_assert_str_eq(b, "1023 B");
	thps_format_bytes(b, sizeof(b), 1024);
	ck_assert_str_eq(b, "1.0 KiB");
	thps_format_bytes(b, sizeof(b), 41943040);
	ck_assert_str_eq(b, "40.0 MiB");
	thps_format_bytes(b, sizeof(b), UINT64_MAX);
	ck_assert_str_eq(b, "16.0 EiB");
	thps_format_bytes(b, 4, 41943040);
	ck_assert_str_eq(b, "40.");
}
END_TEST

static int probe_yes(const struct thps_ctx *ctx, char *why, size_t n)
{
	snprintf(why, n, "leftover text");
	return 1;
}
static int probe_no(const struct thps_ctx *ctx, char *why, size_t n)
{
	snprintf(why, n, "not usable: no debugfs");
	return 0;
}
static int probe_silent(const struct thps_ctx *ctx, char *why, size_t n)
{
	return 0;
}
static int probe_err(const struct thps_ctx *ctx, char *why, size_t n)
{
	return -EACCES;
}

START_TEST(test_probe_sources_line)
{
	static const struct thps_source_ops a = {.name = "a", .probe = probe_yes};
	static const struct thps_source_ops b = {.name = "b", .probe = probe_no};
	static const struct thps_source_ops c = {.name = "c", .probe = probe_silent};
	static const struct thps_source_ops d = {.name = "d", .probe = probe_err};
	static const struct thps_source_ops *const table[] = {&a, &b, &c, &d, NULL};
	struct thps_source_status st[3];
	struct thps_ctx ctx;
	char *buf = NULL;
	size_t len = 0, n;
	FILE *f;

	thps_ctx_init(&ctx);
	/* Bounded by the array: d is left out. */
	n = thps_report_probe_sources(&ctx, table, st, 3);
	ck_assert_uint_eq(n, 3);
	f = open_memstream(&buf, &len);
	ck_assert_int_eq(thps_report_text_sources(f, st, n), 0);
	fclose(f);
	ck_assert_str_eq(
	    buf, "sources: a: usable; b: not usable: no debugfs; c: not usable: no reason given\n");
	free(buf);

	n = thps_report_probe_sources(&ctx, table + 3, st, 3);
	ck_assert_uint_eq(n, 1);
	ck_assert(!st[0].usable);
	ck_assert_str_eq(st[0].reason, "probe failed: Permission denied");
}
END_TEST

static Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("formatters");

	tcase_add_test(tc, test_multi_golden);
	tcase_add_test(tc, test_k8s_golden);
	tcase_add_test(tc, test_dense_golden);
	tcase_add_test(tc, test_cut_no_kernel_golden);
	tcase_add_test(tc, test_empty_golden);
	tcase_add_test(tc, test_kernel_only_golden);
	tcase_add_test(tc, test_mthp_golden);
	tcase_add_test(tc, test_bucket_n);
	tcase_add_test(tc, test_order_by_waste);
	tcase_add_test(tc, test_json_string_escapes);
	tcase_add_test(tc, test_format_bytes);
	tcase_add_test(tc, test_probe_sources_line);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(report_suite)
