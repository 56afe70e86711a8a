/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of policy files: parsing into the IR, every error class with its exact
 * file:line:col + JSON path message, matching specificity, all-or-nothing directory loading,
 * the owner check, and hostile input. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pjson.h"
#include "k8s.h"
#include "policy.h"
#include "registrations.h"
#include "units.h"
#include "test-main.h"

/* Parses text as file "t.json"; returns the parse result, errors in *errs. */
static int parse(const char *text, struct thps_policy_set **set, struct thps_policy_errors *errs)
{
	*set = thps_policy_set_new();
	ck_assert_ptr_nonnull(*set);
	memset(errs, 0, sizeof(*errs));
	return thps_policy_parse_text("t.json", text, strlen(text), *set, errs);
}

/* Asserts text fails with exactly the given messages (NULL-terminated). */
static void expect_errors(const char *text, ...)
{
	struct thps_policy_set *set;
	struct thps_policy_errors errs;
	va_list ap;
	size_t n = 0;
	const char *m;

	ck_assert_int_eq(parse(text, &set, &errs), -EINVAL);
	ck_assert_uint_eq(set->n, 0);
	va_start(ap, text);
	while ((m = va_arg(ap, const char *))) {
		ck_assert_msg(n < errs.n, "missing error: %s", m);
		ck_assert_str_eq(errs.msgs[n], m);
		n++;
	}
	va_end(ap);
	ck_assert_msg(n == errs.n, "unexpected extra error: %s", errs.msgs[n < errs.n ? n : 0]);
	thps_policy_errors_clear(&errs);
	thps_policy_set_free(set);
}

START_TEST(test_parse_full)
{
	struct thps_policy_set *set;
	struct thps_policy_errors errs;
	const struct thps_policy *p;

	ck_assert_int_eq(
	    parse("{\"policies\": [\n"
		  " {\"name\": \"web\", \"match\": {\"cgroup\": \"/a/*\", \"container\": "
		  "[\"x\", \"y*\"]},\n"
		  "  \"mode\": \"enforce\", \"lowutil_cut\": \"30%\",\n"
		  "  \"trigger\": {\"lowutil_growth\": {\"thps\": 5, \"window\": \"2m\"}},\n"
		  "  \"action\": \"split\", \"max_bytes_per_action\": \"1G\", "
		  "\"max_bytes_per_sec\": 1048576,\n"
		  "  \"cooldown\": 30, \"scan_interval\": \"500000ms\", "
		  "\"max_thps_per_sec\": 1e3,\n"
		  "  \"pressure_guard\": {\"memory_some_avg10\": 2.5, \"on_pressure\": "
		  "\"backoff\"}},\n"
		  " {\"name\": \"b\", \"match\": {\"cgroup\": \"/b\"}}\n]}",
		  &set, &errs),
	    2);
	ck_assert_uint_eq(errs.n, 0);
	ck_assert_uint_eq(set->n, 2);
	p = &set->policies[0];
	ck_assert_str_eq(p->name, "web");
	ck_assert_str_eq(p->file, "t.json");
	ck_assert_uint_eq(p->line, 2);
	ck_assert_uint_eq(p->col, 2);
	ck_assert_str_eq(p->match_cgroup, "/a/*");
	ck_assert_uint_eq(p->n_match_container, 2);
	ck_assert_str_eq(p->match_container[1], "y*");
	ck_assert_int_eq(p->mode, THPS_MODE_ENFORCE);
	ck_assert_uint_eq(p->lowutil_max_bucket, 2);
	ck_assert_uint_eq(p->trigger_min_waste, 0); /* a trigger object lists what is on */
	ck_assert_uint_eq(p->trigger_growth_thps, 5);
	ck_assert_uint_eq(p->trigger_growth_window_usec, 120000000ULL);
	ck_assert_int_eq(p->action, THPS_POLICY_SPLIT);
	ck_assert_uint_eq(p->max_bytes_per_action, 1ULL << 30);
	ck_assert_uint_eq(p->max_bytes_per_sec, 1ULL << 20);
	ck_assert_uint_eq(p->cooldown_usec, 30000000ULL);
	ck_assert_uint_eq(p->scan_interval_usec, 500000000ULL);
	/* deprecated: loads, does nothing, and says so with file, place and key */
	ck_assert_uint_eq(errs.n_warnings, 1);
	ck_assert_str_eq(errs.warnings[0],
			 "t.json:6:68: policies[0].max_thps_per_sec: deprecated and ignored: the "
			 "daemon's --max-thps-per-sec bounds the scan of every cgroup; remove this "
			 "key");
	ck_assert_double_eq(p->pressure_some_avg10, 2.5);
	ck_assert_int_eq(p->on_pressure, THPS_PRESSURE_BACKOFF);
	/* the second one has every default */
	p = &set->policies[1];
	ck_assert_int_eq(p->mode, THPS_MODE_OBSERVE);
	ck_assert_uint_eq(p->lowutil_max_bucket, 0);
	ck_assert_uint_eq(p->trigger_min_waste, 64ULL << 20);
	ck_assert_uint_eq(p->trigger_growth_thps, 0);
	ck_assert_int_eq(p->action, THPS_POLICY_SPLIT); /* exact by default: never memory.reclaim */
	ck_assert_uint_eq(p->max_bytes_per_action, 256ULL << 20);
	ck_assert_uint_eq(p->max_bytes_per_sec, 64ULL << 20);
	ck_assert_uint_eq(p->cooldown_usec, 300000000ULL);
	ck_assert_uint_eq(p->scan_interval_usec, 0); /* every pass */
	ck_assert_double_eq(p->pressure_some_avg10, 10.0);
	ck_assert_int_eq(p->on_pressure, THPS_PRESSURE_SKIP);
	ck_assert_uint_eq(p->n_match_container, 0);
	thps_policy_errors_clear(&errs);
	thps_policy_set_free(set);
	/* the permission to evict page cache where no exact split reaches is its own word */
	ck_assert_int_eq(parse("{\"name\": \"p\", \"match\": {\"cgroup\": \"/p\"}, "
			       "\"action\": \"split_or_reclaim\"}",
			       &set, &errs),
			 1);
	ck_assert_int_eq(set->policies[0].action, THPS_POLICY_SPLIT_OR_RECLAIM);
	ck_assert_str_eq(thps_policy_action_name(set->policies[0].action), "split_or_reclaim");
	thps_policy_set_free(set);
}
END_TEST

/* "sizes": folio sizes as an order mask; what the action counts: a reclaim policy only the PMD
 * size (memory.reclaim gives nothing of mTHPs back), a split policy the sizes it names. */
START_TEST(test_sizes_key)
{
	struct thps_policy_set *set;
	struct thps_policy_errors errs;
	struct thps_geometry g;

	thps_geometry_default(&g);
	ck_assert_int_eq(parse("{\"name\": \"m\", \"match\": {\"cgroup\": \"/m\"}, \"sizes\": "
			       "[\"16K\", \"64K\", \"2M\"], \"action\": \"split\"}",
			       &set, &errs),
			 1);
	ck_assert_uint_eq(set->policies[0].sizes_mask, (1u << 2) | (1u << 4) | (1u << 9));
	ck_assert_uint_eq(thps_policy_acted_sizes(&set->policies[0], &g),
			  (1u << 2) | (1u << 4) | (1u << 9));
	set->policies[0].action = THPS_POLICY_RECLAIM;
	ck_assert_uint_eq(thps_policy_acted_sizes(&set->policies[0], &g), 1u << 9);
	set->policies[0].sizes_mask = 1u << 4; /* 64K only, reclaim: nothing it can give back */
	ck_assert_uint_eq(thps_policy_acted_sizes(&set->policies[0], &g) & ((1u << 14) - 1), 0);
	thps_policy_set_free(set);
	ck_assert_int_eq(parse("{\"name\": \"a\", \"match\": {\"cgroup\": \"/m\"}, \"action\": \"split\"}",
			       &set, &errs),
			 1);
	ck_assert_uint_eq(set->policies[0].sizes_mask, 0); /* every size */
	ck_assert_uint_eq(thps_policy_acted_sizes(&set->policies[0], &g), 0);
	thps_policy_set_free(set);
	expect_errors("{\"name\": \"b\", \"match\": {\"cgroup\": \"/m\"}, \"sizes\": [\"4K\", \"3M\"]}",
		      "t.json:1:52: sizes[0]: expected a folio size, a power of two from 8K to 32M like "
		      "\"64K\", got \"4K\"",
		      "t.json:1:58: sizes[1]: expected a folio size, a power of two from 8K to 32M like "
		      "\"64K\", got \"3M\"",
		      NULL);
}
END_TEST

START_TEST(test_single_object_form)
{
	struct thps_policy_set *set;
	struct thps_policy_errors errs;

	ck_assert_int_eq(
	    parse("{\"name\": \"one\", \"match\": {\"container\": \"redis\"}}", &set, &errs), 1);
	ck_assert_str_eq(set->policies[0].name, "one");
	ck_assert_str_eq(set->policies[0].match_container[0], "redis");
	ck_assert_ptr_null(set->policies[0].match_cgroup);
	thps_policy_set_free(set);
	ck_assert_int_eq(parse("{\"policies\": []}", &set, &errs), 0);
	ck_assert_uint_eq(set->n, 0);
	thps_policy_set_free(set);
}
END_TEST

START_TEST(test_builtin_matches_table_defaults)
{
	struct thps_policy d = {0};
	const struct thps_policy *b = thps_policy_builtin();

	thps_policy_init_defaults(&d);
	ck_assert_int_eq(b->mode, THPS_MODE_OBSERVE);
	ck_assert_int_eq(d.mode, b->mode);
	ck_assert_uint_eq(d.trigger_min_waste, b->trigger_min_waste);
	ck_assert_uint_eq(d.max_bytes_per_action, b->max_bytes_per_action);
	ck_assert_uint_eq(d.max_bytes_per_sec, b->max_bytes_per_sec);
	ck_assert_uint_eq(d.cooldown_usec, b->cooldown_usec);
	ck_assert_uint_eq(d.scan_interval_usec, b->scan_interval_usec);
	ck_assert_double_eq(d.pressure_some_avg10, b->pressure_some_avg10);
	ck_assert_int_eq(d.on_pressure, b->on_pressure);
	thps_policy_clear(&d);
}
END_TEST

START_TEST(test_error_syntax)
{
	expect_errors("{\n  \"name\": \"a\",\n  \"match\": {\"cgroup\": \"/\"},\n}",
		      "t.json:4:1: trailing comma", NULL);
	expect_errors("{\"name\": \"a\" \"match\": 1}",
		      "t.json:1:14: expected ',' or '}', got '\"'", NULL);
	expect_errors("", "t.json:1:1: expected a JSON value, got end of file", NULL);
	expect_errors("[1, 2,]", "t.json:1:7: trailing comma", NULL);
	expect_errors("{\"a\": tru}", "t.json:1:7: invalid literal, expected true", NULL);
	expect_errors("{\"a\": 01}", "t.json:1:8: expected ',' or '}', got '1'", NULL);
	expect_errors("{\"a\": \"\\ud800\"}", "t.json:1:14: lone surrogate in \\u escape", NULL);
	expect_errors("{\"a\": \"\\q\"}", "t.json:1:9: invalid escape in string", NULL);
	/* columns count characters: "é" is one */
	expect_errors("{\"é\": x}", "t.json:1:7: expected a JSON value, got 'x'", NULL);
	expect_errors("7",
		      "t.json:1:1: expected an object {\"policies\": [...]} or a single policy, "
		      "got 7",
		      NULL);
}
END_TEST

START_TEST(test_error_values)
{
	expect_errors(
	    "{\"policies\": [\n"
	    "  {\"name\": \"ok\", \"match\": {\"cgroup\": \"/\"}},\n"
	    "  {\"name\": \"ok2\", \"match\": {\"cgroup\": \"/\"}},\n"
	    "  {\"name\": \"web\",\n"
	    "   \"match\": {\"cgroup\": \"/x\"},\n"
	    "   \"trigger\": {\n"
	    "     \"min_waste\": \"-3\"}}]}",
	    "t.json:7:19: policies[2].trigger.min_waste: expected a size like \"64M\", got \"-3\"",
	    NULL);
	expect_errors("{\"name\": \"a\", \"match\": {\"cgroup\": \"/\"}, \"cooldown\": \"0s\"}",
		      "t.json:1:53: cooldown: expected a duration from 1s to 1d, got \"0s\"", NULL);
	expect_errors(
	    "{\"name\": \"a\", \"match\": {\"cgroup\": \"/\"}, \"max_thps_per_sec\": 2.5}",
	    "t.json:1:61: max_thps_per_sec: expected an integer from 1 to 10000000, got "
	    "2.5",
	    NULL);
	expect_errors("{\"name\": \"a\", \"match\": {\"cgroup\": \"/\"}, \"mode\": null}",
		      "t.json:1:49: mode: expected one of \"observe\", \"enforce\", got null",
		      NULL);
	expect_errors("{\"name\": \"a/../b\", \"match\": {\"cgroup\": \"/\"}}",
		      "t.json:1:10: name: expected a name of 1-64 characters from [A-Za-z0-9_.-], "
		      "got \"a/../b\"",
		      NULL);
	expect_errors("{\"name\": \"a\", \"match\": {\"cgroup\": \"/\"}, \"pressure_guard\": []}",
		      "t.json:1:59: pressure_guard: expected an object, got an array", NULL);
	/* hostile bytes in keys and values are escaped in the message */
	expect_errors(
	    "{\"name\": \"a\", \"match\": {\"cgroup\": \"/\"}, \"\\u001b]0;x\\u0007\": 1}",
	    "t.json:1:41: \\x1b]0;x\\x07: unknown key; expected one of: name, match, mode, "
	    "tenant_mode, lowutil_cut, sizes, trigger, action, promote, max_bytes_per_action, "
	    "max_bytes_per_sec, cooldown, scan_interval, pressure_guard",
	    NULL);
	expect_errors("{\"name\": \"a\\u001b[31m\", \"match\": {\"cgroup\": \"/\"}}",
		      "t.json:1:10: name: expected a name of 1-64 characters from [A-Za-z0-9_.-], "
		      "got \"a\\x1b[31m\"",
		      NULL);
}
END_TEST

START_TEST(test_error_keys)
{
	expect_errors("{\"name\": \"a\", \"match\": {\"cgroup\": \"/\", \"pods\": \"x\"}}",
		      "t.json:1:40: match.pods: unknown key; expected one of: cgroup, container, "
		      "pod_uid, qos_class, namespace, pod, container_name, labels",
		      NULL);
	expect_errors("{\"name\": \"a\",\n \"name\": \"b\", \"match\": {\"cgroup\": \"/\"}}",
		      "t.json:2:2: name: duplicate key (first at line 1, column 2)", NULL);
	expect_errors("{\"policies\": [{\"match\": {\"cgroup\": \"/\"}}]}",
		      "t.json:1:15: policies[0]: missing required key \"name\"", NULL);
	expect_errors("{\"name\": \"a\", \"match\": {\"cgroup\": \"/\"}, \"trigger\": "
		      "{\"lowutil_growth\": {}}}",
		      "t.json:1:71: trigger.lowutil_growth: missing required key \"thps\"",
		      "t.json:1:71: trigger.lowutil_growth: missing required key \"window\"", NULL);
	expect_errors(
	    "{\"policies\": [{\"name\": \"a\", \"match\": {\"cgroup\": \"/\"}},\n"
	    "{\"name\": \"a\", \"match\": {\"cgroup\": \"/b\"}}]}",
	    "t.json:2:10: policies[1].name: duplicate policy name \"a\" (first at line 1, "
	    "column 15)",
	    NULL);
}
END_TEST

START_TEST(test_collects_all_errors)
{
	struct thps_policy_set *set;
	struct thps_policy_errors errs;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	/* 150 bad policies: the list stops at THPS_POLICY_MAX_ERRORS and counts the rest */
	fprintf(f, "{\"policies\": [");
	for (int i = 0; i < 150; i++)
		fprintf(f, "%s{\"name\": \"p%d\", \"match\": {\"cgroup\": \"/\"}, \"mode\": 1}",
			i ? "," : "", i);
	fprintf(f, "]}");
	fclose(f);
	ck_assert_int_eq(parse(text, &set, &errs), -EINVAL);
	ck_assert_uint_eq(errs.n, THPS_POLICY_MAX_ERRORS);
	ck_assert_uint_eq(errs.dropped, 50);
	ck_assert_ptr_nonnull(strstr(errs.msgs[99], "policies[99].mode"));
	thps_policy_errors_clear(&errs);
	thps_policy_set_free(set);
	free(text);
}
END_TEST

START_TEST(test_units)
{
	uint64_t v;
	char buf[32];

	ck_assert_int_eq(thps_parse_size("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(thps_parse_size("64M", &v), 0);
	ck_assert_uint_eq(v, 64ULL << 20);
	ck_assert_int_eq(thps_parse_size("1T", &v), 0);
	ck_assert_uint_eq(v, 1ULL << 40);
	ck_assert_int_eq(thps_parse_size("", &v), -EINVAL);
	ck_assert_int_eq(thps_parse_size("M", &v), -EINVAL);
	ck_assert_int_eq(thps_parse_size("1MB", &v), -EINVAL);
	ck_assert_int_eq(thps_parse_size("1m", &v), -EINVAL);
	ck_assert_int_eq(thps_parse_size(" 1", &v), -EINVAL);
	ck_assert_int_eq(thps_parse_size("1234567890123456", &v), -EINVAL);
	ck_assert_int_eq(thps_parse_size("999999999999999T", &v), -ERANGE);
	ck_assert_int_eq(thps_parse_duration("500ms", &v), 0);
	ck_assert_uint_eq(v, 500000);
	ck_assert_int_eq(thps_parse_duration("5m", &v), 0);
	ck_assert_uint_eq(v, 300000000ULL);
	ck_assert_int_eq(thps_parse_duration("1d", &v), 0);
	ck_assert_uint_eq(v, 86400000000ULL);
	ck_assert_int_eq(thps_parse_duration("30", &v), -EINVAL);
	ck_assert_int_eq(thps_parse_duration("30sec", &v), -EINVAL);
	ck_assert_int_eq(thps_parse_duration("1234567890s", &v), -EINVAL);
	thps_format_size(64ULL << 20, buf, sizeof(buf));
	ck_assert_str_eq(buf, "64M");
	thps_format_size(1000, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1000");
	thps_format_duration(300000000ULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "5m");
	thps_format_duration(1500000ULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1500ms");
}
END_TEST

/* ---- matching ---- */

static struct thps_policy_set *load_text(const char *text)
{
	struct thps_policy_set *set;
	struct thps_policy_errors errs;
	int r = parse(text, &set, &errs);

	ck_assert_msg(r >= 0, "parse failed: %s", errs.n ? errs.msgs[0] : "?");
	thps_policy_errors_clear(&errs);
	return set;
}

#define MATCH(set, cg, reg) thps_policy_match(set, cg, reg)->name

START_TEST(test_match_specificity)
{
	struct thps_policy_set *set = load_text(
	    "{\"policies\": [\n"
	    "{\"name\": \"any\", \"match\": {\"cgroup\": \"/*\"}},\n"
	    "{\"name\": \"any2\", \"match\": {\"cgroup\": \"/*\"}},\n"
	    "{\"name\": \"k8s\", \"match\": {\"cgroup\": \"/kubepods/*\"}},\n"
	    "{\"name\": \"k8s-burst\", \"match\": {\"cgroup\": \"/kubepods/burst*\"}},\n"
	    "{\"name\": \"k8s-pod\", \"match\": {\"cgroup\": \"/kubepods/*/pod*\"}},\n"
	    "{\"name\": \"k8s-pod-x\", \"match\": {\"cgroup\": \"/kubepods/besteffort/pod*\"}},\n"
	    "{\"name\": \"web-glob\", \"match\": {\"container\": \"web-*\"}},\n"
	    "{\"name\": \"web-1\", \"match\": {\"container\": [\"web-1\", \"zz\"]}},\n"
	    "{\"name\": \"db-in-k8s\", \"match\": {\"cgroup\": \"/kubepods/*/*\", \"container\": "
	    "\"db\"}}\n"
	    "]}");

	/* nothing matches: the built-in observer */
	ck_assert_str_eq(MATCH(set, "/a/b", NULL), "(builtin)");
	ck_assert_int_eq(thps_policy_match(set, "/a/b", NULL)->mode, THPS_MODE_OBSERVE);
	ck_assert_str_eq(MATCH(NULL, "/a", NULL), "(builtin)");
	/* FNM_PATHNAME: '*' does not cross '/' */
	ck_assert_str_eq(MATCH(set, "/system.slice", NULL), "any"); /* tie: first loaded */
	ck_assert_str_eq(MATCH(set, "/kubepods", NULL), "any");
	ck_assert_str_eq(MATCH(set, "/kubepods/guaranteed", NULL), "k8s"); /* 1 literal comp. */
	ck_assert_str_eq(MATCH(set, "/kubepods/burstable", NULL), "k8s-burst"); /* longer prefix */
	ck_assert_str_eq(MATCH(set, "/kubepods/burstable/pod1", NULL), "k8s-pod");
	ck_assert_str_eq(MATCH(set, "/kubepods/besteffort/pod1", NULL), "k8s-pod-x"); /* 2 comps */
	/* a registration beats any cgroup glob; a literal name beats a glob */
	ck_assert_str_eq(MATCH(set, "/kubepods/besteffort/pod1", "web-2"), "web-glob");
	ck_assert_str_eq(MATCH(set, "/kubepods/besteffort/pod1", "web-1"), "web-1");
	ck_assert_str_eq(MATCH(set, "/other", "web-1"), "web-1");
	/* both selectors must match */
	ck_assert_str_eq(MATCH(set, "/kubepods/x/y", "db"), "db-in-k8s");
	ck_assert_str_eq(MATCH(set, "/elsewhere/x/y", "db"), "(builtin)");
	ck_assert_str_eq(MATCH(set, "/kubepods/besteffort/pod1", "unknown"), "k8s-pod-x");
	/* a registration whose name is a policy's gets nothing from that (thps_policy_choose) */
	ck_assert_str_eq(MATCH(set, "/elsewhere", "k8s-burst"), "any");
	ck_assert_str_eq(MATCH(set, "/elsewhere/x/y", "db-in-k8s"), "(builtin)");
	ck_assert_ptr_nonnull(thps_policy_find(set, "k8s"));
	ck_assert_ptr_null(thps_policy_find(set, "nope"));
	thps_policy_set_free(set);
}
END_TEST

/* Kubernetes selectors (k8s.h): qos_class and pod_uid match only cgroups kubelet's layout
 * names, under either driver; a look-alike path matches neither; pod_uid beats qos_class, which
 * beats any cgroup glob. */
#define PU  "0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b"
#define PU_ "0f6e2a4c_1b3d_4e5f_8a9b_0c1d2e3f4a5b"
#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
START_TEST(test_match_kubernetes)
{
	struct thps_policy_set *set =
	    load_text("{\"policies\": [\n"
		      "{\"name\": \"all\", \"match\": {\"cgroup\": \"/kubepods/*\"}},\n"
		      "{\"name\": \"gu\", \"match\": {\"qos_class\": \"guaranteed\"}, \"mode\": "
		      "\"observe\"},\n"
		      "{\"name\": \"be\", \"match\": {\"qos_class\": [\"besteffort\"]}, \"mode\": "
		      "\"enforce\"},\n"
		      "{\"name\": \"one\", \"match\": {\"pod_uid\": \"" PU
		      "\", \"qos_class\": \"burstable\"}},\n"
		      "{\"name\": \"cgfs-be\", \"match\": {\"cgroup\": \"/kubepods/besteffort/*\", "
		      "\"qos_class\": \"besteffort\"}}\n"
		      "]}");
	const struct thps_policy *p;

	ck_assert_uint_eq(set->policies[1].match_qos_mask, 1U << THPS_K8S_QOS_GUARANTEED);
	ck_assert_uint_eq(set->policies[3].n_match_pod_uid, 1);
	/* systemd driver, all three classes */
	ck_assert_str_eq(
	    MATCH(set, "/kubepods.slice/kubepods-pod" PU_ ".slice/cri-containerd-" CID ".scope",
		  NULL),
	    "gu");
	p = thps_policy_match(
	    set,
	    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" PU_
	    ".slice/crio-" CID ".scope",
	    NULL);
	ck_assert_str_eq(p->name, "be");
	ck_assert_int_eq(p->mode, THPS_MODE_ENFORCE);
	ck_assert_str_eq(MATCH(set,
			       "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" PU_
			       ".slice",
			       NULL),
			 "one");
	ck_assert_str_eq(MATCH(set,
			       "/kubepods.slice/kubepods-burstable.slice/"
			       "kubepods-burstable-pod11111111_2222_3333_4444_555555555555.slice",
			       NULL),
			 "(builtin)"); /* another pod: no selector names it */
	/* cgroupfs driver: the qos selector plus a cgroup glob is more specific than qos alone */
	ck_assert_str_eq(MATCH(set, "/kubepods/besteffort/pod" PU "/" CID, NULL), "be");
	ck_assert_str_eq(MATCH(set, "/kubepods/besteffort/pod" PU, NULL), "cgfs-be");
	ck_assert_str_eq(MATCH(set, "/kubepods/pod" PU "/" CID, NULL), "gu");
	/* look-alikes: no Kubernetes identity, so no Kubernetes selector matches */
	ck_assert_str_eq(MATCH(set, "/kubepods/besteffort/podx", NULL), "(builtin)");
	ck_assert_str_eq(MATCH(set, "/kubepods/besteffort", NULL), "all");
	ck_assert_str_eq(MATCH(set,
			       "/user.slice/user-1000.slice/user@1000.service/kubepods.slice/"
			       "kubepods-pod" PU_ ".slice",
			       NULL),
			 "(builtin)");
	ck_assert_str_eq(MATCH(set, "/kubepods", NULL), "(builtin)");
	ck_assert_str_eq(MATCH(set, NULL, NULL), "(builtin)");
	/* a registration's name is no policy name: "be"'s qos_class excludes a guaranteed pod */
	ck_assert_str_eq(MATCH(set, "/kubepods/pod" PU, "be"), "gu");
	thps_policy_set_free(set);
}
END_TEST

/* The tenant boundary (thps_policy_choose): an annotation names a policy only where the
 * policy's own selectors hold for the container's cgroup; a mode annotation applies only
 * where the policy's tenant_mode delegates it. */
#define PA  "11111111-1111-4111-8111-111111111111"
#define PA_ "11111111_1111_4111_8111_111111111111"
#define PB  "22222222-2222-4222-8222-222222222222"
#define PB_ "22222222_2222_4222_8222_222222222222"
#define CGA                                                                                        \
	"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" PA_ ".slice/crio-" CID \
	".scope"
#define CGB                                                                                        \
	"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" PB_ ".slice/crio-" CID \
	".scope"
START_TEST(test_choose_tenant)
{
	struct thps_policy_set *set = load_text(
	    "{\"policies\": [\n"
	    "{\"name\": \"all\", \"match\": {\"cgroup\": \"/kubepods.slice/*\"}},\n"
	    "{\"name\": \"pod-b-only\", \"match\": {\"pod_uid\": \"" PB "\"}, \"mode\": "
	    "\"enforce\"},\n"
	    "{\"name\": \"be-obs\", \"match\": {\"qos_class\": \"besteffort\"}},\n"
	    "{\"name\": \"be-enf\", \"match\": {\"qos_class\": \"besteffort\"}, \"mode\": "
	    "\"enforce\"},\n"
	    "{\"name\": \"be-any\", \"match\": {\"qos_class\": \"besteffort\"}, "
	    "\"tenant_mode\": \"any\"},\n"
	    "{\"name\": \"be-optout\", \"match\": {\"qos_class\": \"besteffort\"}, \"mode\": "
	    "\"enforce\", \"tenant_mode\": \"observe\"},\n"
	    "{\"name\": \"be-optin\", \"match\": {\"qos_class\": \"besteffort\"}, "
	    "\"tenant_mode\": \"enforce\"}\n"
	    "]}");
	struct thps_choice c;

	ck_assert_int_eq(set->policies[0].tenant_mode, THPS_TENANT_MODE_FIXED);
	ck_assert_int_eq(set->policies[4].tenant_mode, THPS_TENANT_MODE_ANY);
	/* pod A names pod B's policy: refused, A gets what matching gives it */
	thps_policy_choose(set, CGA, CID, "pod-b-only", NULL, &c);
	ck_assert_str_eq(c.policy->name, thps_policy_match(set, CGA, CID)->name);
	ck_assert_str_ne(c.policy->name, "pod-b-only");
	ck_assert_int_eq(c.refused, THPS_CHOICE_NOT_MATCHED);
	ck_assert_int_eq(c.mode, c.policy->mode);
	/* pod B names it: applied */
	thps_policy_choose(set, CGB, CID, "pod-b-only", NULL, &c);
	ck_assert_str_eq(c.policy->name, "pod-b-only");
	ck_assert_int_eq(c.refused, THPS_CHOICE_OK);
	ck_assert_int_eq(c.mode, THPS_MODE_ENFORCE);
	/* unknown name: matching, said */
	thps_policy_choose(set, CGA, CID, "nope", NULL, &c);
	ck_assert_int_eq(c.refused, THPS_CHOICE_UNKNOWN_POLICY);
	ck_assert_str_eq(c.policy->name, thps_policy_match(set, CGA, CID)->name);
	/* a cgroup outside every selector naming a policy: the built-in */
	thps_policy_choose(set, "/system.slice/x.scope", "x", "be-obs", NULL, &c);
	ck_assert_str_eq(c.policy->name, "(builtin)");
	ck_assert_int_eq(c.refused, THPS_CHOICE_NOT_MATCHED);
	/* modes: fixed by default, both ways */
	thps_policy_choose(set, CGA, CID, "be-obs", "enforce", &c);
	ck_assert_str_eq(c.policy->name, "be-obs");
	ck_assert_int_eq(c.mode, THPS_MODE_OBSERVE);
	ck_assert(c.mode_refused);
	thps_policy_choose(set, CGA, CID, "be-enf", "observe", &c);
	ck_assert_int_eq(c.mode, THPS_MODE_ENFORCE);
	ck_assert(c.mode_refused);
	/* the policy's own mode asked: nothing refused */
	thps_policy_choose(set, CGA, CID, "be-enf", "enforce", &c);
	ck_assert_int_eq(c.mode, THPS_MODE_ENFORCE);
	ck_assert(!c.mode_refused);
	/* delegated: any, observe (opt out only), enforce (opt in only) */
	thps_policy_choose(set, CGA, CID, "be-any", "enforce", &c);
	ck_assert_int_eq(c.mode, THPS_MODE_ENFORCE);
	ck_assert(!c.mode_refused);
	thps_policy_choose(set, CGA, CID, "be-optout", "observe", &c);
	ck_assert_int_eq(c.mode, THPS_MODE_OBSERVE);
	thps_policy_choose(set, CGA, CID, "be-optin", "enforce", &c);
	ck_assert_int_eq(c.mode, THPS_MODE_ENFORCE);
	thps_policy_choose(set, CGA, CID, "be-optin", "", &c);
	ck_assert_int_eq(c.mode, THPS_MODE_OBSERVE);
	/* a refused name does not carry its tenant_mode: the matched policy's decides */
	thps_policy_choose(set, "/system.slice/x.scope", "x", "be-any", "enforce", &c);
	ck_assert_str_eq(c.policy->name, "(builtin)");
	ck_assert_int_eq(c.mode, THPS_MODE_OBSERVE);
	ck_assert(c.mode_refused);
	/* no set: the built-in, whose mode is fixed */
	thps_policy_choose(NULL, CGA, NULL, "be-any", "enforce", &c);
	ck_assert_str_eq(c.policy->name, "(builtin)");
	ck_assert_int_eq(c.mode, THPS_MODE_OBSERVE);
	thps_policy_set_free(set);
}
END_TEST

/* The registration's Kubernetes identity (policy-ident.c): namespace exact, pod and
 * container_name globs, labels all equal; a registration without the identity (the hook's on
 * a runtime that tells none) matches no such selector. */
static void set_ident(struct thps_registration *r, const char *id, const char *ns, const char *pod,
		      const char *ctr)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->k8s_namespace, sizeof(r->k8s_namespace), "%s", ns);
	snprintf(r->pod, sizeof(r->pod), "%s", pod);
	snprintf(r->container, sizeof(r->container), "%s", ctr);
}

static void add_label(struct thps_registration *r, const char *k, const char *v)
{
	snprintf(r->labels[r->n_labels].key, sizeof(r->labels[0].key), "%s", k);
	snprintf(r->labels[r->n_labels].value, sizeof(r->labels[0].value), "%s", v);
	r->n_labels++;
}

#define MATCH_REG(set, cg, reg) thps_policy_match_reg(set, cg, reg)->name

START_TEST(test_match_identity)
{
	struct thps_policy_set *set = load_text(
	    "{\"policies\": [\n"
	    "{\"name\": \"sys\", \"match\": {\"cgroup\": \"/system.slice/*\"}},\n"
	    "{\"name\": \"batch\", \"match\": {\"namespace\": [\"batch\", \"etl\"]}, \"mode\": "
	    "\"enforce\"},\n"
	    "{\"name\": \"db\", \"match\": {\"labels\": {\"tier\": \"db\"}}},\n"
	    "{\"name\": \"web-pods\", \"match\": {\"pod\": \"web-*\"}},\n"
	    "{\"name\": \"sidecar\", \"match\": {\"container_name\": \"istio-?roxy\"}},\n"
	    "{\"name\": \"batch-db\", \"match\": {\"namespace\": \"batch\", \"labels\": "
	    "{\"tier\": \"db\", \"app.kubernetes.io/name\": \"pg\"}}},\n"
	    "{\"name\": \"empty-label\", \"match\": {\"labels\": {\"canary\": \"\"}}}\n"
	    "]}");
	struct thps_registration r;
	struct thps_choice c;

	ck_assert_uint_eq(set->policies[1].n_match_namespace, 2);
	ck_assert_uint_eq(set->policies[5].n_match_labels, 2);
	/* no identity: none of these selectors holds */
	ck_assert_str_eq(MATCH_REG(set, CGA, NULL), "(builtin)");
	set_ident(&r, CID, "", "", "");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "(builtin)");
	set_ident(&r, CID, "web", "web-7d9f", "nginx");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "web-pods");
	set_ident(&r, CID, "web", "api-1", "istio-proxy");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "sidecar");
	set_ident(&r, CID, "web", "api-1", "app");
	add_label(&r, "tier", "db");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "db");
	/* a label of another value, or the key absent, does not match */
	set_ident(&r, CID, "web", "api-1", "app");
	add_label(&r, "tier", "dbx");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "(builtin)");
	set_ident(&r, CID, "web", "api-1", "app");
	add_label(&r, "canary", "");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "empty-label");
	/* namespace equality, not a glob nor a prefix */
	set_ident(&r, CID, "batch2", "x", "app");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "(builtin)");
	set_ident(&r, CID, "etl", "x", "app");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "batch");

	/* The tenant boundary: a pod in "batch" sets every tenant-set field a less strict
	 * policy selects (label tier=db, pod web-*, container istio-proxy): the operator's
	 * namespace rule still wins... */
	set_ident(&r, CID, "batch", "web-1", "istio-proxy");
	add_label(&r, "tier", "db");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "batch");
	/* ...and naming the observing label policy by annotation is no way out either: its
	 * match holds (the tenant set the label), but it names no namespace where matching gave
	 * a namespace's policy */
	snprintf(r.policy, sizeof(r.policy), "db");
	thps_policy_choose_reg(set, CGA, &r, &c);
	ck_assert_int_eq(c.refused, THPS_CHOICE_NAMESPACE);
	ck_assert_str_eq(c.policy->name, "batch");
	ck_assert_int_eq(c.mode, THPS_MODE_ENFORCE);
	/* outside a namespace rule the same annotation applies (the operator gave that policy to
	 * every pod that labels itself so: thpshrink-policy(5) TENANTS) */
	set_ident(&r, CID, "web", "api-1", "app");
	add_label(&r, "tier", "db");
	snprintf(r.policy, sizeof(r.policy), "db");
	thps_policy_choose_reg(set, CGA, &r, &c);
	ck_assert_int_eq(c.refused, THPS_CHOICE_OK);
	ck_assert_str_eq(c.policy->name, "db");
	/* a policy the operator wrote with the namespace may be named: */
	set_ident(&r, CID, "batch", "web-1", "istio-proxy");
	add_label(&r, "tier", "db");
	add_label(&r, "app.kubernetes.io/name", "pg");
	snprintf(r.policy, sizeof(r.policy), "batch-db");
	thps_policy_choose_reg(set, CGA, &r, &c);
	ck_assert_int_eq(c.refused, THPS_CHOICE_OK);
	ck_assert_str_eq(c.policy->name, "batch-db");
	/* and it outranks the namespace-only rule in matching, as the operator wrote it */
	r.policy[0] = 0;
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "batch-db");
	/* a registration naming a policy whose namespace is another's is refused */
	set_ident(&r, CID, "web", "api-1", "app");
	snprintf(r.policy, sizeof(r.policy), "batch");
	snprintf(r.mode, sizeof(r.mode), "observe");
	thps_policy_choose_reg(set, CGA, &r, &c);
	ck_assert_int_eq(c.refused, THPS_CHOICE_NOT_MATCHED);
	ck_assert_str_eq(c.policy->name, "(builtin)");
	/* its own namespace's: applied, the mode not delegated */
	set_ident(&r, CID, "batch", "api-1", "app");
	snprintf(r.policy, sizeof(r.policy), "batch");
	snprintf(r.mode, sizeof(r.mode), "observe");
	thps_policy_choose_reg(set, CGA, &r, &c);
	ck_assert_int_eq(c.refused, THPS_CHOICE_OK);
	ck_assert_str_eq(c.policy->name, "batch");
	ck_assert_int_eq(c.mode, THPS_MODE_ENFORCE);
	ck_assert(c.mode_refused);
	/* the string form (no identity) never matches an identity selector */
	ck_assert_str_eq(MATCH(set, CGA, CID), "(builtin)");
	thps_policy_set_free(set);

	/* A tenant-set selector never outranks the operator's cgroup glob either: it refines
	 * one only where the operator wrote both into one policy. */
	set = load_text("{\"policies\": [\n"
			"{\"name\": \"pods-enf\", \"match\": {\"cgroup\": "
			"\"/kubepods.slice/*/*/*\"}, \"mode\": \"enforce\"},\n"
			"{\"name\": \"db-obs\", \"match\": {\"labels\": {\"tier\": \"db\"}}},\n"
			"{\"name\": \"pods-db\", \"match\": {\"cgroup\": "
			"\"/kubepods.slice/*/*/*\", \"pod\": \"db-*\"}}\n"
			"]}");
	set_ident(&r, CID, "web", "api-1", "app");
	add_label(&r, "tier", "db");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "pods-enf");
	ck_assert_str_eq(MATCH_REG(set, "/elsewhere", &r), "db-obs");
	set_ident(&r, CID, "web", "db-1", "app");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "pods-db");
	thps_policy_set_free(set);
}
END_TEST

/* A container glob holds only for containers that opted in (an io.thpshrink.* annotation):
 * the NRI plugin registers every container, and "container": "*" must not grow to every pod of
 * a containerd node. A literal id is the operator's own choice and still holds. */
START_TEST(test_match_container_glob_needs_opt_in)
{
	struct thps_policy_set *set = load_text(
	    "{\"policies\": [\n"
	    "{\"name\": \"optin\", \"match\": {\"container\": \"*\"}, \"mode\": \"enforce\"},\n"
	    "{\"name\": \"one\", \"match\": {\"container\": \"" CID "\"}}\n"
	    "]}");
	struct thps_registration r;
	struct thps_choice c;

	/* registered by NRI, no annotation: not opted in */
	set_ident(&r, "other", "web", "web-0", "app");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "(builtin)");
	thps_policy_choose_reg(set, CGA, &r, &c);
	ck_assert_str_eq(c.policy->name, "(builtin)");
	/* the same container annotated with a mode only, or with a policy: opted in */
	snprintf(r.mode, sizeof(r.mode), "observe");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "optin");
	r.mode[0] = 0;
	snprintf(r.policy, sizeof(r.policy), "optin");
	thps_policy_choose_reg(set, CGA, &r, &c);
	ck_assert_int_eq(c.refused, THPS_CHOICE_OK);
	ck_assert_str_eq(c.policy->name, "optin");
	/* a literal id holds without an annotation */
	set_ident(&r, CID, "web", "web-0", "app");
	ck_assert_str_eq(MATCH_REG(set, CGA, &r), "one");
	thps_policy_set_free(set);
}
END_TEST

START_TEST(test_identity_errors)
{
	expect_errors("{\"name\": \"a\", \"match\": {\"namespace\": \"Batch\"}}",
		      "t.json:1:38: match.namespace: expected a namespace name like \"batch\" (a "
		      "DNS label: [a-z0-9-], 1-63 characters, no glob), got \"Batch\"",
		      NULL);
	expect_errors("{\"name\": \"a\", \"match\": {\"namespace\": \"b*\"}}",
		      "t.json:1:38: match.namespace: expected a namespace name like \"batch\" (a "
		      "DNS label: [a-z0-9-], 1-63 characters, no glob), got \"b*\"",
		      NULL);
	expect_errors("{\"name\": \"a\", \"match\": {\"pod\": [\"ok\", \"a/b\"]}}",
		      "t.json:1:39: match.pod[1]: expected a pod name (glob) of 1-253 characters "
		      "from [a-z0-9.*?-], got \"a/b\"",
		      NULL);
	expect_errors("{\"name\": \"a\", \"match\": {\"container_name\": \"a.b\"}}",
		      "t.json:1:43: match.container_name: expected a container name (glob) of "
		      "1-63 characters from [a-z0-9*?-], got \"a.b\"",
		      NULL);
	expect_errors("{\"name\": \"a\", \"match\": {\"labels\": {}}}",
		      "t.json:1:35: match.labels: expected 1 to 16 pod labels, got 0", NULL);
	expect_errors("{\"name\": \"a\", \"match\": {\"labels\": [\"tier\"]}}",
		      "t.json:1:35: match.labels: expected an object of pod labels {\"key\": "
		      "\"value\"}, got an array",
		      NULL);
	expect_errors("{\"name\": \"a\", \"match\": {\"labels\": {\"-x\": \"1\", \"k\": 2, \"k\": "
		      "\"v\"}}}",
		      "t.json:1:36: match.labels.-x: expected a label key of 1-127 characters "
		      "from [A-Za-z0-9_./-], starting and ending alphanumeric",
		      "t.json:1:52: match.labels.k: expected a label value: \"\" or 1-63 "
		      "characters from [A-Za-z0-9_.-], starting and ending alphanumeric, got 2",
		      "t.json:1:55: match.labels.k: duplicate key (first at line 1, column 47)",
		      NULL);
}
END_TEST

/* ---- directories ---- */

static char tmpdir[64];

static void write_file(const char *name, const char *text)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void setup_dir(void)
{
	umask(022);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check-policy.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	chmod(tmpdir, 0755);
}

static void teardown_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static bool errors_contain(const struct thps_policy_errors *e, const char *s)
{
	for (size_t i = 0; i < e->n; i++)
		if (strstr(e->msgs[i], s))
			return true;
	return false;
}

START_TEST(test_dir_load_all_or_nothing)
{
	struct thps_policy_set *set = NULL, *keep = (struct thps_policy_set *)&keep;
	struct thps_policy_errors errs = {0};
	char path[256];

	write_file("20-b.json", "{\"name\": \"b\", \"match\": {\"cgroup\": \"/*\"}}");
	write_file("10-a.json",
		   "{\"policies\": [{\"name\": \"a\", \"match\": {\"cgroup\": \"/*\"}}]}");
	write_file("README", "not json, not loaded");
	write_file(".hidden.json", "not loaded either");
	ck_assert_int_eq(
	    thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), 0);
	ck_assert_uint_eq(errs.n, 0);
	ck_assert_uint_eq(set->n, 2);
	/* byte order of file names decides ties: 10-a before 20-b */
	ck_assert_str_eq(thps_policy_match(set, "/x", NULL)->name, "a");
	thps_policy_set_free(set);

	/* one bad file among good ones: nothing loads, every error is listed */
	write_file("30-c.json", "{\"name\": \"c\", \"match\": {\"cgroup\": \"x\"}}");
	write_file("40-d.json", "{\"name\": \"d\"");
	set = keep;
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, 0, &set, &errs), -EINVAL);
	ck_assert_ptr_eq(set, keep); /* untouched */
	ck_assert_uint_eq(errs.n, 2);
	snprintf(path, sizeof(path), "%s/30-c.json:1:35: match.cgroup: expected a cgroup path",
		 tmpdir);
	ck_assert_msg(!strncmp(errs.msgs[0], path, strlen(path)), "got %s", errs.msgs[0]);
	snprintf(path, sizeof(path), "%s/40-d.json:1:13: expected ',' or '}', got end of file",
		 tmpdir);
	ck_assert_str_eq(errs.msgs[1], path);
	thps_policy_errors_clear(&errs);

	/* duplicate names across files */
	write_file("30-c.json", "{\"name\": \"a\", \"match\": {\"cgroup\": \"/c\"}}");
	write_file("40-d.json", "{\"name\": \"d\", \"match\": {\"cgroup\": \"/d\"}}");
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, 0, &set, &errs), -EINVAL);
	ck_assert_ptr_eq(set, keep);
	ck_assert_uint_eq(errs.n, 1);
	snprintf(path, sizeof(path),
		 "%s/30-c.json:1:10: name: duplicate policy name \"a\" (first defined at "
		 "%s/10-a.json:1:24)",
		 tmpdir, tmpdir);
	ck_assert_str_eq(errs.msgs[0], path);
	thps_policy_errors_clear(&errs);
}
END_TEST

START_TEST(test_dir_vanished)
{
	struct thps_policy_set *set = NULL, *keep = (struct thps_policy_set *)&keep;
	struct thps_policy_errors errs = {0};
	char gone[128], want[256];

	snprintf(gone, sizeof(gone), "%s/gone", tmpdir);
	ck_assert_int_eq(mkdir(gone, 0755), 0);
	ck_assert_int_eq(rmdir(gone), 0);
	set = keep;
	ck_assert_int_eq(thps_policy_set_load_dir(gone, 0, &set, &errs), -ENOENT);
	ck_assert_ptr_eq(set, keep);
	ck_assert_uint_eq(errs.n, 1);
	snprintf(want, sizeof(want), "%s: cannot open policy directory: No such file or directory",
		 gone);
	ck_assert_str_eq(errs.msgs[0], want);
	thps_policy_errors_clear(&errs);
	/* an empty directory is a valid, empty set */
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, 0, &set, &errs), 0);
	ck_assert_uint_eq(set->n, 0);
	thps_policy_set_free(set);
}
END_TEST

START_TEST(test_dir_owner_check)
{
	struct thps_policy_set *set = NULL;
	struct thps_policy_errors errs = {0};
	char path[256], want[512];

	if (geteuid() != 0) {
		THPS_CASE_SKIP("test_dir_owner_check", "needs root to own and chown files");
		return;
	}
	write_file("a.json", "{\"name\": \"a\", \"match\": {\"cgroup\": \"/*\"}}");
	snprintf(path, sizeof(path), "%s/a.json", tmpdir);
	ck_assert_int_eq(chmod(path, 0664), 0);
	ck_assert_int_eq(
	    thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), -EPERM);
	snprintf(want, sizeof(want),
		 "%s: refusing to use: writable by group or others (mode 0664); chmod go-w it",
		 path);
	ck_assert_str_eq(errs.msgs[0], want);
	thps_policy_errors_clear(&errs);
	/* without the flag the same file loads */
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, 0, &set, &errs), 0);
	thps_policy_set_free(set);
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(chown(path, 1234, 0), 0);
	ck_assert_int_eq(
	    thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), -EPERM);
	snprintf(want, sizeof(want),
		 "%s: refusing to use: owned by uid 1234, not root; chown root it", path);
	ck_assert_str_eq(errs.msgs[0], want);
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(chown(path, 0, 0), 0);
	ck_assert_int_eq(chmod(tmpdir, 0777), 0);
	ck_assert_int_eq(
	    thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), -EPERM);
	ck_assert(errors_contain(&errs, "mode 0777"));
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(chmod(tmpdir, 0755), 0);
	ck_assert_int_eq(
	    thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), 0);
	thps_policy_set_free(set);
}
END_TEST

/* kubelet's ConfigMap volume, as it writes it: a 1777 root-owned directory, a timestamped
 * directory holding the files, "..data" pointing at it, and one "KEY -> ..data/KEY" link per
 * key. It loads; anything a non-root user could add to the sticky directory is refused. */
START_TEST(test_dir_configmap_layout)
{
	struct thps_policy_set *set = NULL;
	struct thps_policy_errors errs = {0};
	char path[320], ts[256];

	if (geteuid() != 0) {
		THPS_CASE_SKIP("test_dir_configmap_layout", "needs root to own and chown files");
		return;
	}
	snprintf(ts, sizeof(ts), "%s/..2026_12_03_13_00_00.123456789", tmpdir);
	ck_assert_int_eq(mkdir(ts, 0755), 0);
	write_file("..2026_12_03_13_00_00.123456789/default.json",
		   "{\"name\": \"a\", \"match\": {\"cgroup\": \"/*\"}}");
	snprintf(path, sizeof(path), "%s/..data", tmpdir);
	ck_assert_int_eq(symlink("..2026_12_03_13_00_00.123456789", path), 0);
	snprintf(path, sizeof(path), "%s/default.json", tmpdir);
	ck_assert_int_eq(symlink("..data/default.json", path), 0);
	ck_assert_int_eq(chmod(tmpdir, 01777), 0);
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), 0);
	ck_assert_uint_eq(set->n, 1);
	thps_policy_set_free(set);
	set = NULL;

	/* a file a non-root user dropped in: refused, and with it the whole set */
	write_file("evil.json", "{\"name\": \"b\", \"match\": {\"cgroup\": \"/*\"}}");
	snprintf(path, sizeof(path), "%s/evil.json", tmpdir);
	ck_assert_int_eq(chown(path, 65534, 65534), 0);
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), -EPERM);
	ck_assert(errors_contain(&errs, "evil.json: refusing to use: owned by uid 65534, not root, in a directory others can write"));
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(unlink(path), 0);

	/* ... or a link of theirs to a root-owned file */
	ck_assert_int_eq(symlink("..data/default.json", path), 0);
	ck_assert_int_eq(lchown(path, 65534, 65534), 0);
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), -EPERM);
	ck_assert(errors_contain(&errs, "owned by uid 65534"));
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(unlink(path), 0);

	/* a root-owned link out of the directory */
	ck_assert_int_eq(symlink("/etc/passwd.json", path), 0);
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), -EPERM);
	ck_assert(errors_contain(&errs, "outside its directory"));
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(unlink(path), 0);

	/* the data directory writable by others */
	ck_assert_int_eq(chmod(ts, 0777), 0);
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), -EPERM);
	ck_assert(errors_contain(&errs, "'..data' is not a root-owned directory only root can write"));
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(chmod(ts, 0755), 0);

	/* not sticky: anyone could replace any entry */
	ck_assert_int_eq(chmod(tmpdir, 0777), 0);
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), -EPERM);
	ck_assert(errors_contain(&errs, "mode 0777"));
	thps_policy_errors_clear(&errs);
	/* a sticky directory someone else owns */
	ck_assert_int_eq(chmod(tmpdir, 01777), 0);
	ck_assert_int_eq(chown(tmpdir, 65534, 0), 0);
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_CHECK_OWNER, &set, &errs), -EPERM);
	ck_assert(errors_contain(&errs, "owned by uid 65534"));
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(chown(tmpdir, 0, 0), 0);
	ck_assert_int_eq(chmod(tmpdir, 0755), 0);
	snprintf(path, sizeof(path), "%s/default.json", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/..data", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/default.json", ts);
	unlink(path);
	rmdir(ts);
}
END_TEST

/* issue 22: a missing entry is an error of the load, never "no policies"; only a missing
 * directory is, and only when the caller says so (the daemon at start). */
START_TEST(test_dir_dangling_entry)
{
	struct thps_policy_set *set = NULL, *keep = (struct thps_policy_set *)&keep;
	struct thps_policy_errors errs = {0};
	char path[256], want[320], gone[160];

	write_file("10-a.json", "{\"name\": \"a\", \"match\": {\"cgroup\": \"/*\"}}");
	snprintf(path, sizeof(path), "%s/70-x.json", tmpdir);
	ck_assert_int_eq(symlink("/nonexistent", path), 0);
	set = keep;
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, THPS_POLICY_LOAD_MISSING_OK, &set, &errs),
			 -ENOENT);
	ck_assert_ptr_eq(set, keep);
	ck_assert_uint_eq(errs.n, 1);
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
	ck_assert_str_eq(errs.msgs[0], want);
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(unlink(path), 0);

	/* a FIFO in its place: refused at once, not waited on */
	ck_assert_int_eq(mkfifo(path, 0644), 0);
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, 0, &set, &errs), -EINVAL);
	ck_assert(errors_contain(&errs, "70-x.json: not a regular file"));
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(unlink(path), 0);

	/* the directory itself missing: an empty set only with MISSING_OK */
	snprintf(gone, sizeof(gone), "%s/gone", tmpdir);
	ck_assert_int_eq(thps_policy_set_load_dir(gone, 0, &set, &errs), -ENOENT);
	thps_policy_errors_clear(&errs);
	set = NULL;
	ck_assert_int_eq(thps_policy_set_load_dir(gone, THPS_POLICY_LOAD_MISSING_OK, &set, &errs),
			 1);
	ck_assert_ptr_nonnull(set);
	ck_assert_uint_eq(set->n, 0);
	ck_assert_uint_eq(errs.n, 0);
	thps_policy_set_free(set);
}
END_TEST

static void make_version(const char *ts, const char *const *files, const char *const *texts)
{
	char path[320];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, ts);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	for (size_t i = 0; files[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", ts, files[i]);
		write_file(path, texts[i]);
	}
}

static void point_data(const char *ts)
{
	char tmp[320], data[320];

	snprintf(tmp, sizeof(tmp), "%s/..data_tmp", tmpdir);
	snprintf(data, sizeof(data), "%s/..data", tmpdir);
	unlink(tmp);
	ck_assert_int_eq(symlink(ts, tmp), 0);
	ck_assert_int_eq(rename(tmp, data), 0);
}

static void user_link(const char *name)
{
	char path[320], target[320];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	snprintf(target, sizeof(target), "..data/%s", name);
	ck_assert_int_eq(symlink(target, path), 0);
}

/* A ConfigMap directory is read through the one version "..data" leads to: the version's
 * files, whatever links beside it say mid-update (kubelet swaps "..data" first, then adds the
 * new keys' links and removes the old ones). */
START_TEST(test_dir_configmap_one_version)
{
	static const char *const v1f[] = {"a.json", "b.json", NULL};
	static const char *const v1t[] = {"{\"name\": \"v1-a\", \"match\": {\"cgroup\": \"/*\"}}",
					  "{\"name\": \"v1-b\", \"match\": {\"cgroup\": \"/b\"}}"};
	static const char *const v2f[] = {"a.json", "c.json", NULL};
	static const char *const v2t[] = {"{\"name\": \"v2-a\", \"match\": {\"cgroup\": \"/*\"}}",
					  "{\"name\": \"v2-c\", \"match\": {\"cgroup\": \"/c\"}}"};
	struct thps_policy_set *set = NULL;
	struct thps_policy_errors errs = {0};
	char path[320];

	make_version("..v1", v1f, v1t);
	point_data("..v1");
	user_link("a.json");
	user_link("b.json");
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, 0, &set, &errs), 0);
	ck_assert_uint_eq(set->n, 2);
	ck_assert_str_eq(set->policies[0].name, "v1-a");
	ck_assert_str_eq(set->policies[1].name, "v1-b");
	thps_policy_set_free(set);

	/* kubelet mid-update: "..data" swapped, c.json's link not made yet, b.json's still
	 * there (dangling): v2 whole */
	make_version("..v2", v2f, v2t);
	point_data("..v2");
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, 0, &set, &errs), 0);
	ck_assert_uint_eq(errs.n, 0);
	ck_assert_uint_eq(set->n, 2);
	ck_assert_str_eq(set->policies[0].name, "v2-a");
	ck_assert_str_eq(set->policies[1].name, "v2-c");
	thps_policy_set_free(set);

	/* something else beside "..data": not read from any version, refused */
	write_file("z.json", "{\"name\": \"z\", \"match\": {\"cgroup\": \"/z\"}}");
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, 0, &set, &errs), -EPERM);
	ck_assert(errors_contain(&errs, "z.json: refusing to use: beside '..data'"));
	thps_policy_errors_clear(&errs);
	snprintf(path, sizeof(path), "%s/z.json", tmpdir);
	ck_assert_int_eq(unlink(path), 0);

	/* "..data" leading out of the directory */
	point_data("/etc");
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, 0, &set, &errs), -EPERM);
	ck_assert(errors_contain(&errs, "..data: refusing to use: a link to '/etc'"));
	thps_policy_errors_clear(&errs);
	/* ... or dangling */
	point_data("..v3");
	ck_assert_int_eq(thps_policy_set_load_dir(tmpdir, 0, &set, &errs), -ENOENT);
	ck_assert(errors_contain(&errs, "..data: cannot open '..v3'"));
	thps_policy_errors_clear(&errs);
}
END_TEST

START_TEST(test_file_limits)
{
	struct thps_policy_set *set = thps_policy_set_new();
	struct thps_policy_errors errs = {0};
	char path[256], want[300];
	char *big = malloc(THPS_POLICY_MAX_FILE + 2);

	memset(big, ' ', THPS_POLICY_MAX_FILE + 1);
	big[THPS_POLICY_MAX_FILE + 1] = 0;
	write_file("big.json", big);
	free(big);
	snprintf(path, sizeof(path), "%s/big.json", tmpdir);
	ck_assert_int_eq(thps_policy_load_file(path, 0, set, &errs), -EFBIG);
	snprintf(want, sizeof(want), "%s: larger than %d bytes", path, THPS_POLICY_MAX_FILE);
	ck_assert_str_eq(errs.msgs[0], want);
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(thps_policy_load_file(tmpdir, 0, set, &errs), -EINVAL);
	snprintf(want, sizeof(want), "%s: not a regular file", tmpdir);
	ck_assert_str_eq(errs.msgs[0], want);
	thps_policy_errors_clear(&errs);
	thps_policy_set_free(set);
}
END_TEST

/* ---- hostile input: the parser must neither crash nor leak (ASan) ---- */

START_TEST(test_hostile_nesting)
{
	char text[300];
	struct pjson *j = NULL;
	char err[128];
	unsigned l, c;

	memset(text, '[', 200);
	text[200] = 0;
	ck_assert_int_eq(pjson_parse(text, 200, &j, err, sizeof(err), &l, &c), -EINVAL);
	ck_assert_str_eq(err, "nested deeper than 32 levels");
	ck_assert_uint_eq(c, 33);
}
END_TEST

START_TEST(test_mutations_do_not_crash)
{
	static const char good[] =
	    "{\"policies\": [{\"name\": \"web\", \"match\": {\"cgroup\": \"/a/*\", \"container\": "
	    "[\"x\"]}, \"mode\": \"enforce\", \"trigger\": {\"min_waste\": \"64M\", "
	    "\"lowutil_growth\": {\"thps\": 5, \"window\": \"2m\"}}, \"pressure_guard\": "
	    "{\"memory_some_avg10\": 2.5}, \"lowutil_cut\": \"\\u0032\\ud83d\\ude00\"}]}";
	unsigned seed = 12345;
	size_t len = sizeof(good) - 1;
	char buf[sizeof(good) + 8];
	unsigned ok = 0, bad = 0;

	for (int i = 0; i < 20000; i++) {
		struct thps_policy_set *set = thps_policy_set_new();
		struct thps_policy_errors errs = {0};
		size_t n = len;
		memcpy(buf, good, len);
		for (int m = 0; m < 1 + (int)(rand_r(&seed) % 4); m++) {
			size_t at = rand_r(&seed) % n;
			switch (rand_r(&seed) % 3) {
			case 0:
				buf[at] = (char)(rand_r(&seed) & 0xff);
				break;
			case 1: /* cut */
				n = at;
				break;
			default:
				buf[at] = "{}[],:\"\\0-e."[rand_r(&seed) % 12];
			}
			if (n == 0)
				break;
		}
		if (thps_policy_parse_text("m.json", buf, n, set, &errs) >= 0)
			ok++;
		else {
			bad++;
			ck_assert_uint_gt(errs.n, 0);
			ck_assert_ptr_nonnull(strstr(errs.msgs[0], "m.json:"));
		}
		thps_policy_errors_clear(&errs);
		thps_policy_set_free(set);
	}
	ck_assert_uint_gt(bad, 0);
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_parse_full);
	tcase_add_test(tc, test_single_object_form);
	tcase_add_test(tc, test_sizes_key);
	tcase_add_test(tc, test_builtin_matches_table_defaults);
	tcase_add_test(tc, test_units);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, test_error_syntax);
	tcase_add_test(tc, test_error_values);
	tcase_add_test(tc, test_error_keys);
	tcase_add_test(tc, test_collects_all_errors);
	suite_add_tcase(s, tc);
	tc = tcase_create("match");
	tcase_add_test(tc, test_match_specificity);
	tcase_add_test(tc, test_match_kubernetes);
	tcase_add_test(tc, test_choose_tenant);
	tcase_add_test(tc, test_match_identity);
	tcase_add_test(tc, test_match_container_glob_needs_opt_in);
	tcase_add_test(tc, test_identity_errors);
	suite_add_tcase(s, tc);
	tc = tcase_create("dir");
	tcase_add_checked_fixture(tc, setup_dir, teardown_dir);
	tcase_add_test(tc, test_dir_load_all_or_nothing);
	tcase_add_test(tc, test_dir_vanished);
	tcase_add_test(tc, test_dir_owner_check);
	tcase_add_test(tc, test_dir_configmap_layout);
	tcase_add_test(tc, test_dir_dangling_entry);
	tcase_add_test(tc, test_dir_configmap_one_version);
	tcase_add_test(tc, test_file_limits);
	suite_add_tcase(s, tc);
	tc = tcase_create("hostile");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_hostile_nesting);
	tcase_add_test(tc, test_mutations_do_not_crash);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(policy_suite)
