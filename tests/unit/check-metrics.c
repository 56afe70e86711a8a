/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Prometheus formatter against golden text, label escaping, bounded output, and the
 * proc connector parser (well-formed, truncated and foreign messages). */
#include <check.h>
#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"
#include "http-secure.h"
#include "http.h"
#include "metrics.h"
#include "procev.h"
#include "scan.h"
#include "text.h"
#include "thp.h"
#include "test-main.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static void fill_scan(struct thps_scan *s, bool with_gone)
{
	struct thps_geometry g;
	struct thps_cgroup_stats *c;

	thps_geometry_default(&g);
	thps_scan_init(s, &g);
	c = thps_scan_cgroup(s, 100, "/web.slice/app");
	for (int i = 0; i < 3; i++)
		thps_hist_add(&c->hist, &g, 10);
	thps_hist_add(&c->hist, &g, 512);
	c->partial_thps = 2;
	c->partial_unmapped_bytes = 3u << 20;
	c->have_memstat = true;
	c->memory_current = 123456789;
	c->anon_thp_bytes = 8u << 20;
	c = thps_scan_cgroup(s, 200, "/odd\"name\\with\nnewline");
	thps_hist_add(&c->hist, &g, 51);
	thps_hist_add(&c->hist, &g, 52);
	/* a Kubernetes container (thpshrink_cgroup_info) and a look-alike that is not one */
	c = thps_scan_cgroup(s, 400,
			     "/kubepods.slice/kubepods-besteffort.slice/"
			     "kubepods-besteffort-pod0f6e2a4c_1b3d_4e5f_8a9b_0c1d2e3f4a5b.slice/"
			     "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope");
	thps_hist_add(&c->hist, &g, 3);
	c = thps_scan_cgroup(s, 500, "/kubepods/besteffort/pod0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b\"x");
	thps_hist_add(&c->hist, &g, 3);
	if (with_gone) {
		c = thps_scan_cgroup(s, 300, "/gone.scope");
		thps_hist_add(&c->hist, &g, 0);
	}
	s->summary = (struct thps_scan_summary){ .procs_scanned = 42, .procs_skipped = 3,
						 .thps_scanned = 6, .thps_shared = 1, .bytes_read = 5u << 20,
						 .wall_ns = 1500000000ULL, .cpu_ns = 250000000ULL,
						 .method = "PAGEMAP_SCAN" };
	s->have_vmstat = true;
	s->vmstat.thp_split_page = 7;
	s->vmstat.thp_underused_split_page = 5;
	thps_scan_finish(s, 0);
}

static void fill_input(struct thps_metrics_input *in, const struct thps_scan *s,
		       struct thps_metrics_action *acts, struct thps_metrics_flag *flags,
		       struct thps_metrics_count *dec)
{
	acts[0] = (struct thps_metrics_action){ "/web.slice/app", "reclaim", 2, 1, 4u << 20, 3u << 20, 1u << 20 };
	flags[0] = (struct thps_metrics_flag){ "memory_reclaim", true };
	flags[1] = (struct thps_metrics_flag){ "debugfs_thp_utilization", false };
	dec[0] = (struct thps_metrics_count){ "act", 2 };
	dec[1] = (struct thps_metrics_count){ "none", 9 };
	*in = (struct thps_metrics_input){
		.version = "0.1.0-test",
		.scan = s,
		.scans_total = 12,
		.scan_errors_total = 1,
		.last_scan_timestamp = 1700000000.5,
		.policies_loaded = 2,
		.policy_load_errors_total = 1,
		.policy_last_load_ok = true,
		.actions = acts,
		.n_actions = 1,
		.decisions = dec,
		.n_decisions = 2,
		.capabilities = flags,
		.n_capabilities = 2,
		.proc_events_total = 77,
	};
}

static const struct thps_metrics_container containers[] = {
	{ "/web.slice/app", "3f2a9c1b7d", "redis", NULL, NULL, NULL },
	/* registered by thpshrink-nri: its names on both info series */
	{ "/kubepods.slice/kubepods-besteffort.slice/"
	  "kubepods-besteffort-pod0f6e2a4c_1b3d_4e5f_8a9b_0c1d2e3f4a5b.slice/"
	  "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope",
	  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "batch", "batch",
	  "web-7d9f", "app" },
};

static const struct thps_metrics_cgroup_count recollapsed[] = {
	{ "/web.slice/app", 5 },
};

static const struct thps_metrics_promoted promoted[] = {
	{ "/web.slice/app", 0, 16, 32u << 20, 4u << 20 },
	{ "/db.slice/pg", 900, 3, 6u << 20, 0 },
};

static const struct thps_metrics_count promote_failures[] = {
	{ "no_memory", 1 }, { "refused", 2 }, { "thp_disabled", 1 }, { "other", 0 },
};
static const struct thps_metrics_count promote_deferred[] = {
    {"plan", 0},
    {"pass", 3},
    {"process", 7},
};

/* Compares text with the golden file, or rewrites it first when THPS_UPDATE_GOLDENS is set
 * (`make update-goldens`, the one variable for every suite's golden files). */
static void check_golden(const char *name, const char *text)
{
	char path[4096];
	char *want = NULL;
	int r;

	snprintf(path, sizeof(path), "%s/metrics/%s", FIXTURES, name);
	if (getenv("THPS_UPDATE_GOLDENS")) {
		FILE *f = fopen(path, "we");
		ck_assert_msg(f, "cannot write %s", path);
		ck_assert_int_ge(fputs(text, f), 0);
		ck_assert_int_eq(fclose(f), 0);
	}
	r = read_file_bounded(path, 1 << 20, &want, NULL);
	ck_assert_msg(r == 0, "cannot read golden file %s: %d", path, r);
	ck_assert_str_eq(text, want);
	free(want);
}

START_TEST(test_golden_full)
{
	struct thps_scan s;
	struct thps_metrics_input in;
	struct thps_metrics_action acts[1];
	struct thps_metrics_flag flags[2];
	struct thps_metrics_count dec[2];
	char *text = NULL;
	int len;

	fill_scan(&s, false);
	fill_input(&in, &s, acts, flags, dec);
	in.containers = containers;
	in.n_containers = ELEMENTSOF(containers);
	in.recollapsed = recollapsed;
	in.n_recollapsed = ELEMENTSOF(recollapsed);
	in.promote_enabled = true;
	in.promoted = promoted;
	in.n_promoted = ELEMENTSOF(promoted);
	in.promote_failures = promote_failures;
	in.n_promote_failures = ELEMENTSOF(promote_failures);
	in.promote_deferred = promote_deferred;
	in.n_promote_deferred = ELEMENTSOF(promote_deferred);
	len = thps_metrics_format_alloc(&in, 1 << 20, &text);
	ck_assert_int_gt(len, 0);
	ck_assert_uint_eq(strlen(text), (size_t)len);
	check_golden("full.prom", text);
	free(text);
	thps_scan_free(&s);
}
END_TEST

START_TEST(test_golden_before_first_scan)
{
	struct thps_metrics_input in = { .version = "0.1.0-test", .policy_last_load_ok = false,
					 .policy_load_errors_total = 3, .dry_run = true };
	char buf[16384];
	int len = thps_metrics_format(&in, buf, sizeof(buf));

	ck_assert_int_gt(len, 0);
	check_golden("empty.prom", buf);
}
END_TEST

START_TEST(test_gone_cgroup_leaves_output)
{
	struct thps_scan s1, s2;
	struct thps_metrics_input in;
	struct thps_metrics_action acts[1];
	struct thps_metrics_flag flags[2];
	struct thps_metrics_count dec[2];
	char *a = NULL, *b = NULL;

	fill_scan(&s1, true);
	fill_input(&in, &s1, acts, flags, dec);
	ck_assert_int_gt(thps_metrics_format_alloc(&in, 1 << 20, &a), 0);
	ck_assert_ptr_nonnull(strstr(a, "cgroup=\"/gone.scope\""));
	fill_scan(&s2, false);
	in.scan = &s2;
	ck_assert_int_gt(thps_metrics_format_alloc(&in, 1 << 20, &b), 0);
	ck_assert_ptr_null(strstr(b, "gone.scope"));
	free(a);
	free(b);
	thps_scan_free(&s1);
	thps_scan_free(&s2);
}
END_TEST

/* A registered cgroup gets one info series naming its container and policy; once the
 * registration is gone (the daemon passes the registrations in force) so is the series, and
 * the cgroup's own series stay unlabelled either way. */
START_TEST(test_container_info)
{
	static const struct thps_metrics_container hostile[] = {
		{ "/web.slice/app", "3f2a9c1b7d", "redis", "", "", "" },
		{ "/k8s/pod\"x", "id\nwith", "", "ns\"x", "pod\\y", "c\nz" },
	};
	struct thps_scan s;
	struct thps_metrics_input in;
	struct thps_metrics_action acts[1];
	struct thps_metrics_flag flags[2];
	struct thps_metrics_count dec[2];
	char *a = NULL, *b = NULL;

	fill_scan(&s, false);
	fill_input(&in, &s, acts, flags, dec);
	in.containers = hostile;
	in.n_containers = ELEMENTSOF(hostile);
	ck_assert_int_gt(thps_metrics_format_alloc(&in, 1 << 20, &a), 0);
	ck_assert_ptr_nonnull(strstr(a, "\nthpshrink_container_info{cgroup=\"/web.slice/app\",inode=\"100\","
				     "pod_namespace=\"\",pod_name=\"\",container_name=\"\",container=\"3f2a9c1b7d\","
				     "policy=\"redis\"} 1\n"));
	/* a cgroup without THPs this pass has no inode from the scan: 0 */
	ck_assert_ptr_nonnull(strstr(a, "\nthpshrink_container_info{cgroup=\"/k8s/pod\\\"x\",inode=\"0\","
				     "pod_namespace=\"ns\\\"x\",pod_name=\"pod\\\\y\",container_name=\"c\\\\x0az\","
				     "container=\"id\\\\x0awith\",policy=\"\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(a, "\nthpshrink_cgroup_waste_bytes{cgroup=\"/web.slice/app\",inode=\"100\"} "));
	in.n_containers = 0;
	ck_assert_int_gt(thps_metrics_format_alloc(&in, 1 << 20, &b), 0);
	ck_assert_ptr_null(strstr(b, "3f2a9c1b7d"));
	ck_assert_ptr_null(strstr(b, "thpshrink_container_info{"));
	ck_assert_ptr_nonnull(strstr(b, "# TYPE thpshrink_container_info gauge\n"));
	free(a);
	free(b);
	thps_scan_free(&s);
}
END_TEST

START_TEST(test_bounded_buffer)
{
	struct thps_scan s;
	struct thps_metrics_input in;
	struct thps_metrics_action acts[1];
	struct thps_metrics_flag flags[2];
	struct thps_metrics_count dec[2];
	char small[512];
	char *text = NULL;

	fill_scan(&s, false);
	fill_input(&in, &s, acts, flags, dec);
	memset(small, 'x', sizeof(small));
	ck_assert_int_eq(thps_metrics_format(&in, small, sizeof(small)), -ENOBUFS);
	ck_assert_uint_lt(strlen(small), sizeof(small));
	ck_assert_int_eq(thps_metrics_format_alloc(&in, 4096, &text), -ENOBUFS);
	ck_assert_int_eq(thps_metrics_format(NULL, small, sizeof(small)), -EINVAL);
	thps_scan_free(&s);
}
END_TEST

START_TEST(test_escape)
{
	char out[64];

	/* a newline is a control character: sanitized to \x0a, whose backslash is then escaped */
	ck_assert_int_eq(thps_metrics_escape_label("a\\b\"c\nd", out, sizeof(out)), 13);
	ck_assert_str_eq(out, "a\\\\b\\\"c\\\\x0ad");
	ck_assert_int_eq(thps_metrics_escape_label("abcdef", out, 4), -ENOBUFS);
	ck_assert_int_eq(thps_metrics_escape_label("", out, 1), 0);
}
END_TEST

/* The attack of issue 11: a cgroup name with invalid UTF-8 must not make the exposition
 * invalid, and a long one must not make it huge. */
START_TEST(test_hostile_cgroup_names)
{
	struct thps_scan s;
	struct thps_geometry g;
	struct thps_metrics_input in = { .version = "t" };
	char longname[4000], *a = NULL;
	const char *p, *q;

	thps_geometry_default(&g);
	thps_scan_init(&s, &g);
	thps_hist_add(&thps_scan_cgroup(&s, 7, "/evil\xff\xfe\"\\}{")->hist, &g, 0);
	memset(longname, 'L', sizeof(longname) - 1);
	longname[0] = '/';
	longname[sizeof(longname) - 1] = '\0';
	thps_hist_add(&thps_scan_cgroup(&s, 8, longname)->hist, &g, 0);
	longname[3000] = 'M'; /* the same first 3,000 bytes: must stay a distinct label */
	thps_hist_add(&thps_scan_cgroup(&s, 9, longname)->hist, &g, 0);
	thps_scan_finish(&s, 0);
	in.scan = &s;
	ck_assert_int_gt(thps_metrics_format_alloc(&in, 1 << 20, &a), 0);
	ck_assert_ptr_nonnull(strstr(a, "thpshrink_cgroup_waste_bytes{cgroup=\"/evil\\\\xff\\\\xfe\\\"\\\\}{\",inode=\"7\"} "));
	/* valid UTF-8 everywhere, and no label value longer than the cap */
	for (p = a; *p; p++)
		ck_assert_msg((unsigned char)*p < 0x80, "non-ASCII byte at offset %td", p - a);
	for (p = a; (p = strstr(p, "cgroup=\"")); p = q) {
		p += 8;
		q = strchr(p, '"');
		ck_assert_ptr_nonnull(q);
		ck_assert_int_le(q - p, THPS_TEXT_MAX);
	}
	ck_assert_ptr_nonnull(strstr(a, "inode=\"8\""));
	ck_assert_ptr_nonnull(strstr(a, "inode=\"9\""));
	free(a);
	thps_scan_free(&s);
}
END_TEST

/* Only the max_cgroups cgroups with the most waste get per-cgroup series; the rest are
 * counted, and the text stays within a bound however many cgroups there are. */
START_TEST(test_top_cgroups_bound)
{
	struct thps_scan s;
	struct thps_geometry g;
	struct thps_metrics_input in = { .version = "t", .max_cgroups = 10 };
	char *a = NULL;
	int len;

	thps_geometry_default(&g);
	thps_scan_init(&s, &g);
	for (unsigned i = 0; i < 1000; i++) {
		char path[4000];
		struct thps_cgroup_stats *c;

		memset(path, 'x', sizeof(path));
		snprintf(path + 3700, 300, "/cg%u", i);
		path[0] = '/';
		c = thps_scan_cgroup(&s, 1000 + i, path);
		/* waste grows with i: the last ten have the most */
		for (unsigned k = 0; k <= i; k++)
			thps_hist_add(&c->hist, &g, 0);
	}
	thps_scan_finish(&s, 0);
	in.scan = &s;
	len = thps_metrics_format_alloc(&in, 4 << 20, &a);
	ck_assert_int_gt(len, 0);
	ck_assert_int_lt(len, 256 * 1024);
	ck_assert_ptr_nonnull(strstr(a, "\nthpshrink_metrics_cgroups_dropped 990\n"));
	ck_assert_ptr_nonnull(strstr(a, "inode=\"1999\""));
	ck_assert_ptr_nonnull(strstr(a, "inode=\"1990\""));
	ck_assert_ptr_null(strstr(a, "inode=\"1989\""));
	free(a);
	thps_scan_free(&s);
}
END_TEST

/* Kubernetes info series: one per exported cgroup kubelet's layout names, pod cgroups without
 * a container id, never more than --metrics-max-cgroups of them, none for other cgroups. */
START_TEST(test_k8s_cgroup_info)
{
	struct thps_scan s;
	struct thps_geometry g;
	struct thps_metrics_input in = {.version = "t", .max_cgroups = 10};
	char *a = NULL, *p;
	unsigned n = 0;

	thps_geometry_default(&g);
	thps_scan_init(&s, &g);
	for (unsigned i = 0; i < 100; i++) {
		char path[256];
		struct thps_cgroup_stats *c;

		snprintf(path, sizeof(path), "/kubepods/burstable/pod%08x-1b3d-4e5f-8a9b-0c1d2e3f4a5b%s",
			 i, i % 2 ? "" : "/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
		c = thps_scan_cgroup(&s, 1000 + i, path);
		for (unsigned k = 0; k <= i; k++)
			thps_hist_add(&c->hist, &g, 0);
	}
	thps_hist_add(&thps_scan_cgroup(&s, 5000, "/system.slice/x.service")->hist, &g, 0);
	thps_scan_finish(&s, 0);
	in.scan = &s;
	ck_assert_int_gt(thps_metrics_format_alloc(&in, 4 << 20, &a), 0);
	for (p = a; (p = strstr(p, "\nthpshrink_cgroup_info{")); p++)
		n++;
	ck_assert_uint_eq(n, 10);
	ck_assert_ptr_nonnull(strstr(
	    a, "\nthpshrink_cgroup_info{cgroup=\"/kubepods/burstable/pod00000063-1b3d-4e5f-8a9b-"
	       "0c1d2e3f4a5b\",inode=\"1099\",pod_namespace=\"\",pod_name=\"\",container_name=\"\",pod_uid=\"00000063-1b3d-4e5f-8a9b-0c1d2e3f4a5b\","
	       "container_id=\"\",qos_class=\"burstable\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(
	    a, ",inode=\"1098\",pod_namespace=\"\",pod_name=\"\",container_name=\"\",pod_uid=\"00000062-1b3d-4e5f-8a9b-0c1d2e3f4a5b\",container_id=\""
	       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\",qos_class=\""
	       "burstable\"} 1\n"));
	ck_assert_ptr_null(strstr(a, "inode=\"1089\""));
	ck_assert_ptr_null(strstr(a, "thpshrink_cgroup_info{cgroup=\"/system.slice"));
	free(a);
	thps_scan_free(&s);
}
END_TEST

START_TEST(test_parse_listen)
{
	struct sockaddr_storage ss;
	unsigned len;

	ck_assert_int_eq(http_parse_listen("127.0.0.1:9477", &ss, &len), 0);
	ck_assert_int_eq(ss.ss_family, AF_INET);
	ck_assert_int_eq(http_parse_listen("[::1]:9477", &ss, &len), 0);
	ck_assert_int_eq(ss.ss_family, AF_INET6);
	ck_assert_int_eq(http_parse_listen("127.0.0.1", &ss, &len), -EINVAL);
	ck_assert_int_eq(http_parse_listen("127.0.0.1:99999", &ss, &len), -EINVAL);
	ck_assert_int_eq(http_parse_listen("127.0.0.1:-1", &ss, &len), -EINVAL);
	ck_assert_int_eq(http_parse_listen("localhost:80", &ss, &len), -EINVAL);
	ck_assert_int_eq(http_parse_listen("[::1]9477", &ss, &len), -EINVAL);
	ck_assert_int_eq(http_parse_listen(":80", &ss, &len), -EINVAL);
}
END_TEST

START_TEST(test_bearer_matches)
{
	static const char tok[] = "abc123";

	ck_assert(http_bearer_matches("Bearer abc123", tok, 6));
	ck_assert(http_bearer_matches("bearer  abc123", tok, 6)); /* the scheme is case-blind */
	ck_assert(!http_bearer_matches(NULL, tok, 6));
	ck_assert(!http_bearer_matches("", tok, 6));
	ck_assert(!http_bearer_matches("Bearer ", tok, 6));
	ck_assert(!http_bearer_matches("Bearer abc12", tok, 6));
	ck_assert(!http_bearer_matches("Bearer abc1234", tok, 6));
	ck_assert(!http_bearer_matches("Bearer abc124", tok, 6));
	ck_assert(!http_bearer_matches("Basic abc123", tok, 6));
	ck_assert(!http_bearer_matches("abc123", tok, 6));
	ck_assert(!http_bearer_matches("Bearerabc123", tok, 6));
}
END_TEST

START_TEST(test_token_parse)
{
	char *t = NULL;
	size_t len = 0;
	char big[HTTP_TOKEN_MAX + 2];

	ck_assert_int_eq(http_token_parse(" \tsecret-1\r\n", 12, &t, &len), 0);
	ck_assert_str_eq(t, "secret-1");
	ck_assert_uint_eq(len, 8);
	free(t);
	t = NULL;
	ck_assert_int_eq(http_token_parse("\n\n", 2, &t, &len), -EINVAL);
	ck_assert_int_eq(http_token_parse("two words", 9, &t, &len), -EINVAL);
	ck_assert_int_eq(http_token_parse("nul\0x", 5, &t, &len), -EINVAL);
	ck_assert_int_eq(http_token_parse("caf\xc3\xa9", 5, &t, &len), -EINVAL);
	memset(big, 'a', sizeof(big));
	ck_assert_int_eq(http_token_parse(big, HTTP_TOKEN_MAX + 1, &t, &len), -EINVAL);
	ck_assert_int_eq(http_token_parse(big, HTTP_TOKEN_MAX, &t, &len), 0);
	ck_assert_uint_eq(len, HTTP_TOKEN_MAX);
	free(t);
}
END_TEST

START_TEST(test_secret_read)
{
	char dir[] = "/tmp/thps-secret.XXXXXX", path[64];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("tok\n", f);
	fclose(f);
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(http_secret_read(path, false, &buf, &len), -EPERM);
	ck_assert_int_eq(chmod(path, 0604), 0);
	ck_assert_int_eq(http_secret_read(path, false, &buf, &len), -EPERM);
	ck_assert_int_eq(http_secret_read(path, true, &buf, &len), 0); /* a certificate may be */
	free(buf);
	buf = NULL;
	ck_assert_int_eq(chmod(path, 0400), 0);
	ck_assert_int_eq(http_secret_read(path, false, &buf, &len), 0);
	ck_assert_uint_eq(len, 4);
	ck_assert_int_eq(memcmp(buf, "tok\n", 4), 0);
	free(buf);
	ck_assert_int_eq(http_secret_read(dir, true, &buf, &len), -EINVAL);
	snprintf(path, sizeof(path), "%s/none", dir);
	ck_assert_int_eq(http_secret_read(path, true, &buf, &len), -ENOENT);
	snprintf(path, sizeof(path), "%s/token", dir);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* One request over loopback; returns the status code, or -1. */
static int http_status(unsigned port, const char *auth, char *body, size_t bodysz)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char req[256], resp[4096];
	size_t got = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0), code = -1;
	const char *b;

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto out;
	snprintf(req, sizeof(req), "GET /metrics HTTP/1.1\r\nHost: x\r\n%s%s%sConnection: close\r\n\r\n",
		 auth ? "Authorization: " : "", auth ? auth : "", auth ? "\r\n" : "");
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		goto out;
	while (got < sizeof(resp) - 1 && (n = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
		got += n;
	resp[got] = '\0';
	if (sscanf(resp, "HTTP/1.%*d %d", &code) != 1)
		code = -1;
	b = strstr(resp, "\r\n\r\n");
	snprintf(body, bodysz, "%s", b ? b + 4 : "");
out:
	if (fd >= 0)
		close(fd);
	return code;
}

START_TEST(test_http_token)
{
	static const char text[] = "thpshrink_cgroup_thps{cgroup=\"/t\"} 1\n";
	char tok[] = "s3cret";
	struct http_security sec = {.token = tok, .token_len = 6};
	struct http_server *s = NULL;
	char body[1024];
	unsigned port;

	ck_assert_int_eq(http_server_start_with("127.0.0.1:0", -1, &sec, &s), 0);
	ck_assert_int_eq(http_server_publish(s, text, sizeof(text) - 1), 0);
	port = http_server_port(s);
	ck_assert_uint_gt(port, 0);
	ck_assert_int_eq(http_status(port, NULL, body, sizeof(body)), 401);
	ck_assert_ptr_null(strstr(body, "cgroup="));
	ck_assert_int_eq(http_status(port, "Bearer s3cre", body, sizeof(body)), 401);
	ck_assert_int_eq(http_status(port, "Bearer s3cret0", body, sizeof(body)), 401);
	ck_assert_int_eq(http_status(port, "Bearer s3cret", body, sizeof(body)), 200);
	ck_assert_str_eq(body, text);
	http_server_stop(s);
}
END_TEST

/* Builds one netlink message carrying one proc event, laid out as the kernel sends it (the
 * event at a 4-byte offset). Returns its aligned length. */
static size_t put_event(char *buf, unsigned what, pid_t pid, pid_t tgid, uint32_t idx)
{
	struct nlmsghdr nlh = { 0 };
	struct cn_msg cn = { 0 };
	struct proc_event ev;
	size_t len = NLMSG_LENGTH(sizeof(cn) + sizeof(ev));

	memset(&ev, 0, sizeof(ev));
	memset(buf, 0, NLMSG_ALIGN(len));
	nlh.nlmsg_len = len;
	nlh.nlmsg_type = NLMSG_DONE;
	cn.id.idx = idx;
	cn.id.val = CN_VAL_PROC;
	cn.len = sizeof(ev);
	ev.what = what;
	if (what == PROC_EVENT_EXEC) {
		ev.event_data.exec.process_pid = pid;
		ev.event_data.exec.process_tgid = tgid;
	} else if (what == PROC_EVENT_EXIT) {
		ev.event_data.exit.process_pid = pid;
		ev.event_data.exit.process_tgid = tgid;
	} else if (what == PROC_EVENT_FORK) {
		ev.event_data.fork.child_pid = pid;
		ev.event_data.fork.child_tgid = tgid;
	}
	memcpy(buf, &nlh, sizeof(nlh));
	memcpy(buf + NLMSG_HDRLEN, &cn, sizeof(cn));
	memcpy(buf + NLMSG_HDRLEN + sizeof(cn), &ev, sizeof(ev));
	return NLMSG_ALIGN(len);
}

START_TEST(test_procev_parse)
{
	char buf[4096] __attribute__((aligned(8)));
	struct thps_proc_event ev[8];
	size_t off = 0;
	int n;

	off += put_event(buf + off, PROC_EVENT_EXEC, 10, 10, CN_IDX_PROC);
	off += put_event(buf + off, PROC_EVENT_FORK, 11, 11, CN_IDX_PROC);      /* skipped: unused */
	off += put_event(buf + off, PROC_EVENT_EXIT, 12, 10, CN_IDX_PROC);      /* thread exit: skipped */
	off += put_event(buf + off, PROC_EVENT_EXIT, 10, 10, CN_IDX_PROC);
	off += put_event(buf + off, PROC_EVENT_EXEC, 20, 20, CN_IDX_PROC + 5);  /* foreign: skipped */
	off += put_event(buf + off, 0x7777, 21, 21, CN_IDX_PROC);               /* unknown type */
	n = thps_proc_events_parse(buf, off, ev, ELEMENTSOF(ev));
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(ev[0].type, THPS_PROC_EXEC);
	ck_assert_int_eq(ev[0].pid, 10);
	ck_assert_int_eq(ev[1].type, THPS_PROC_EXIT);
	ck_assert_int_eq(ev[1].pid, 10);

	/* max bounds the output */
	ck_assert_int_eq(thps_proc_events_parse(buf, off, ev, 1), 1);
	/* truncated datagrams never read past len */
	for (size_t l = 0; l < off; l++) {
		char *copy = malloc(l ? l : 1);
		memcpy(copy, buf, l);
		n = thps_proc_events_parse(copy, l, ev, ELEMENTSOF(ev));
		ck_assert(n == -EBADMSG || (n >= 0 && n <= 2));
		free(copy);
	}
	/* cn->len larger than the message */
	put_event(buf, PROC_EVENT_EXEC, 10, 10, CN_IDX_PROC);
	{
		uint16_t big = 4000;
		memcpy(buf + NLMSG_HDRLEN + offsetof(struct cn_msg, len), &big, sizeof(big));
	}
	ck_assert_int_eq(thps_proc_events_parse(buf, 256, ev, ELEMENTSOF(ev)), 0);
	ck_assert_int_eq(thps_proc_events_parse(NULL, 0, ev, ELEMENTSOF(ev)), -EBADMSG);
}
END_TEST

/* issue 22: 10,000 registrations, all naming one cgroup (a pod's) or each its own, give at most
 * --metrics-max-cgroups container_info series, and the rest are counted. */
START_TEST(test_container_info_bounded)
{
	struct thps_metrics_container *many = calloc(10000, sizeof(*many));
	char (*ids)[16] = calloc(10000, sizeof(*ids)), (*cgs)[24] = calloc(10000, sizeof(*cgs));
	struct thps_metrics_input in = {.version = "t", .max_cgroups = 50};
	char *a = NULL;
	size_t n;

	ck_assert(many && ids && cgs);
	for (int shared = 1; shared >= 0; shared--) {
		for (int i = 0; i < 10000; i++) {
			snprintf(ids[i], sizeof(ids[i]), "c%05d", i);
			snprintf(cgs[i], sizeof(cgs[i]), "/pod/%05d", shared ? 0 : i);
			many[i] = (struct thps_metrics_container){cgs[i], ids[i], "", "ns", "pod", "c"};
		}
		in.containers = many;
		in.n_containers = 10000;
		ck_assert_int_gt(thps_metrics_format_alloc(&in, 1 << 24, &a), 0);
		n = 0;
		for (const char *p = a; (p = strstr(p, "\nthpshrink_container_info{")); p++)
			n++;
		ck_assert_uint_eq(n, 50);
		ck_assert_ptr_nonnull(strstr(a, "\nthpshrink_metrics_containers_dropped 9950\n"));
		ck_assert_uint_lt(strlen(a), 16 * 1024);
		free(a);
		a = NULL;
	}
	free(many);
	free(ids);
	free(cgs);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("daemon");
	TCase *tc = tcase_create("metrics");

	tcase_add_test(tc, test_golden_full);
	tcase_add_test(tc, test_golden_before_first_scan);
	tcase_add_test(tc, test_gone_cgroup_leaves_output);
	tcase_add_test(tc, test_container_info);
	tcase_add_test(tc, test_container_info_bounded);
	tcase_add_test(tc, test_bounded_buffer);
	tcase_add_test(tc, test_escape);
	tcase_add_test(tc, test_hostile_cgroup_names);
	tcase_add_test(tc, test_top_cgroups_bound);
	tcase_add_test(tc, test_k8s_cgroup_info);
	tcase_add_test(tc, test_parse_listen);
	tcase_add_test(tc, test_bearer_matches);
	tcase_add_test(tc, test_token_parse);
	tcase_add_test(tc, test_secret_read);
	tcase_add_test(tc, test_http_token);
	tcase_add_test(tc, test_procev_parse);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(suite)
