/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the OCI hook's pure logic and of the registration files. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci/oci.h"
#include "proc.h"
#include "registrations.h"
#include "valid.h"
#include "test-main.h"

#define S(x) x, strlen(x)

START_TEST(test_state_full)
{
	struct thps_oci_state s;
	const char *j = "{\"ociVersion\":\"1.0.2\",\"id\":\"web-1\",\"status\":\"created\",\"pid\":4242,"
			"\"bundle\":\"/run/b\",\"annotations\":{\"io.thpshrink.policy\":\"redis\","
			"\"io.thpshrink.mode\":\"enforce\",\"other\":\"x\"}}\n";

	ck_assert_int_eq(thps_oci_state_parse(S(j), &s), 0);
	ck_assert_str_eq(s.oci_version, "1.0.2");
	ck_assert_str_eq(s.id, "web-1");
	ck_assert_str_eq(s.status, "created");
	ck_assert_int_eq(s.pid, 4242);
	ck_assert_str_eq(s.bundle, "/run/b");
	ck_assert_str_eq(s.policy, "redis");
	ck_assert_str_eq(s.mode, "enforce");
	thps_oci_state_free(&s);
}
END_TEST

START_TEST(test_state_minimal_and_errors)
{
	struct thps_oci_state s;
	char *big;

	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1.0\",\"id\":\"a\"}"), &s), 0);
	ck_assert_int_eq(s.pid, 0);
	ck_assert_ptr_null(s.bundle);
	ck_assert_ptr_null(s.policy);
	thps_oci_state_free(&s);
	ck_assert_int_eq(thps_oci_state_parse(S(""), &s), -EBADMSG);
	ck_assert_int_eq(thps_oci_state_parse(S("{"), &s), -EBADMSG);
	ck_assert_int_eq(thps_oci_state_parse(S("[]"), &s), -EBADMSG);
	ck_assert_int_eq(thps_oci_state_parse(S("{\"id\":\"a\"}"), &s), -EBADMSG);
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\"} x"), &s), -EBADMSG);
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\",\"pid\":\"1\"}"), &s), -EBADMSG);
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\",\"pid\":-1}"), &s), -EBADMSG);
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\",\"annotations\":[]}"), &s),
			 -EBADMSG);
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\",\"annotations\":"
						"{\"io.thpshrink.policy\":7}}"),
					      &s),
			 -EBADMSG);
	/* hostile ids never name a file */
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"../x\"}"), &s), -EINVAL);
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"/etc\"}"), &s), -EINVAL);
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"..\"}"), &s), -EINVAL);
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"\"}"), &s), -EINVAL);
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\"}"), &s), -EINVAL);
	/* non-UTF-8 and embedded NUL */
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\",\"status\":\"\xff\xfe\"}"), &s),
			 -EBADMSG);
	ck_assert_int_eq(thps_oci_state_parse("{\"ociVersion\":\"1\",\0\"id\":\"a\"}", 30, &s), -EBADMSG);
	/* too large, too deep */
	big = malloc(100001);
	memset(big, ' ', THPS_OCI_STATE_MAX + 1);
	ck_assert_int_eq(thps_oci_state_parse(big, THPS_OCI_STATE_MAX + 1, &s), -EFBIG);
	for (size_t i = 0; i < 100000; i++)
		big[i] = '[';
	ck_assert_int_eq(thps_oci_state_parse(big, 60000, &s), -EBADMSG);
	free(big);
}
END_TEST

START_TEST(test_annotations_kept_raw)
{
	struct thps_oci_state s;

	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\",\"annotations\":"
						"{\"io.thpshrink.policy\":\"../x\",\"io.thpshrink.mode\":\"yolo\"}}"),
					      &s),
			 0);
	ck_assert_str_eq(s.policy, "../x");
	ck_assert(!thps_policy_name_valid(s.policy));
	ck_assert_ptr_null(thps_mode_normalize(s.mode));
	thps_oci_state_free(&s);
}
END_TEST

START_TEST(test_names)
{
	char n65[66];

	ck_assert(thps_policy_name_valid("redis"));
	ck_assert(thps_policy_name_valid("a.b_c-D9"));
	ck_assert(!thps_policy_name_valid("../x"));
	ck_assert(!thps_policy_name_valid("/etc"));
	ck_assert(!thps_policy_name_valid("a/b"));
	ck_assert(!thps_policy_name_valid(".."));
	ck_assert(!thps_policy_name_valid("."));
	ck_assert(!thps_policy_name_valid(""));
	ck_assert(!thps_policy_name_valid("a b"));
	ck_assert(!thps_policy_name_valid("caf\xc3\xa9"));
	memset(n65, 'a', 65);
	n65[65] = '\0';
	ck_assert(!thps_policy_name_valid(n65));
	n65[64] = '\0';
	ck_assert(thps_policy_name_valid(n65));
	ck_assert(thps_oci_id_valid("0123abcdef"));
	ck_assert(!thps_oci_id_valid("a\nb"));
	ck_assert_str_eq(thps_mode_normalize("observe"), "observe");
	ck_assert_str_eq(thps_mode_normalize("enforce"), "enforce");
	ck_assert_ptr_null(thps_mode_normalize("Enforce"));
	ck_assert_ptr_null(thps_mode_normalize(NULL));
}
END_TEST

START_TEST(test_stages)
{
	ck_assert_int_eq(thps_oci_stage_from_string("createRuntime"), THPS_OCI_STAGE_CREATE_RUNTIME);
	ck_assert_int_eq(thps_oci_stage_from_string("prestart"), THPS_OCI_STAGE_CREATE_RUNTIME);
	ck_assert_int_eq(thps_oci_stage_from_string("poststart"), THPS_OCI_STAGE_POSTSTART);
	ck_assert_int_eq(thps_oci_stage_from_string("poststop"), THPS_OCI_STAGE_POSTSTOP);
	ck_assert_int_eq(thps_oci_stage_from_string("bogus"), THPS_OCI_STAGE_NONE);
	ck_assert_int_eq(thps_oci_stage_from_status("creating"), THPS_OCI_STAGE_CREATE_RUNTIME);
	ck_assert_int_eq(thps_oci_stage_from_status("running"), THPS_OCI_STAGE_POSTSTART);
	ck_assert_int_eq(thps_oci_stage_from_status("stopped"), THPS_OCI_STAGE_POSTSTOP);
	ck_assert_int_eq(thps_oci_stage_from_status("paused"), THPS_OCI_STAGE_NONE);
	ck_assert_str_eq(thps_oci_stage_to_string(THPS_OCI_STAGE_POSTSTOP), "poststop");
}
END_TEST

static void resolve_ok(const char *cp, const char *base, const char *want)
{
	char buf[THPS_CGROUP_PATH_MAX];

	ck_assert_msg(thps_oci_cgroups_path_resolve(cp, base, buf, sizeof(buf)) == 0, "resolve '%s'", cp);
	ck_assert_str_eq(buf, want);
}

static int resolve_err(const char *cp)
{
	char buf[THPS_CGROUP_PATH_MAX];

	return thps_oci_cgroups_path_resolve(cp, "/", buf, sizeof(buf));
}

START_TEST(test_cgroups_path_forms)
{
	char buf[THPS_CGROUP_PATH_MAX];

	resolve_ok("/machine/ctr-1", NULL, "/machine/ctr-1");
	resolve_ok("/machine/ctr-1/", NULL, "/machine/ctr-1");
	resolve_ok("ctr-1", "/", "/ctr-1");
	resolve_ok("pods/ctr-1", "/user.slice/runtime", "/user.slice/runtime/pods/ctr-1");
	resolve_ok("machine.slice:libpod:abc123", NULL, "/machine.slice/libpod-abc123.scope");
	resolve_ok("system.slice:crun:x", NULL, "/system.slice/crun-x.scope");
	resolve_ok(":crun:x", NULL, "/system.slice/crun-x.scope");
	resolve_ok("machine.slice::x", NULL, "/machine.slice/x.scope");
	resolve_ok("a-b.slice:p:n", NULL, "/a.slice/a-b.slice/p-n.scope");
	resolve_ok("a-b-c.slice:p:n", NULL, "/a.slice/a-b.slice/a-b-c.slice/p-n.scope");
	resolve_ok("kubepods-besteffort-pod12.slice:cri-containerd:0abc", NULL,
		   "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod12.slice/cri-containerd-0abc.scope");
	resolve_ok("-.slice:p:n", NULL, "/p-n.scope");
	resolve_ok("machine.slice:p:my-ctr.slice", NULL, "/my.slice/my-ctr.slice");

	ck_assert_int_eq(resolve_err(""), -ENODATA);
	ck_assert_int_eq(resolve_err("/a/../b"), -EINVAL);
	ck_assert_int_eq(resolve_err("../b"), -EINVAL);
	ck_assert_int_eq(resolve_err("a/./b"), -EINVAL);
	ck_assert_int_eq(resolve_err("/a//b"), -EINVAL);
	ck_assert_int_eq(resolve_err("/a b"), -EINVAL);
	ck_assert_int_eq(resolve_err("a:b"), -EINVAL);
	ck_assert_int_eq(resolve_err("a.slice:p:n:x"), -EINVAL);
	ck_assert_int_eq(resolve_err("notaslice:p:n"), -EINVAL);
	ck_assert_int_eq(resolve_err("a--b.slice:p:n"), -EINVAL);
	ck_assert_int_eq(resolve_err("-a.slice:p:n"), -EINVAL);
	ck_assert_int_eq(resolve_err("a-.slice:p:n"), -EINVAL);
	ck_assert_int_eq(resolve_err("a/b.slice:p:n"), -EINVAL);
	ck_assert_int_eq(resolve_err("a.slice:p:../n"), -EINVAL);
	ck_assert_int_eq(resolve_err("a.slice:../p:n"), -EINVAL);
	ck_assert_int_eq(resolve_err("a.slice:p:"), -EINVAL);
	ck_assert_int_eq(thps_oci_cgroups_path_resolve("/abcdef", NULL, buf, 4), -ENAMETOOLONG);
	ck_assert_int_eq(thps_systemd_slice_expand("a-b-c.slice", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "a.slice/a-b.slice/a-b-c.slice");
	ck_assert_int_eq(thps_systemd_slice_expand("a-b-c.slice", buf, 10), -ENAMETOOLONG);
	ck_assert_int_eq(thps_systemd_slice_expand(".slice", buf, sizeof(buf)), -EINVAL);
}
END_TEST

START_TEST(test_config_cgroups_path)
{
	char *cp = NULL;

	ck_assert_int_eq(thps_oci_config_cgroups_path(S("{\"linux\":{\"cgroupsPath\":\"/a/b\"}}"), &cp), 0);
	ck_assert_str_eq(cp, "/a/b");
	free(cp);
	ck_assert_int_eq(thps_oci_config_cgroups_path(S("{\"linux\":{}}"), &cp), -ENODATA);
	ck_assert_int_eq(thps_oci_config_cgroups_path(S("{}"), &cp), -ENODATA);
	ck_assert_int_eq(thps_oci_config_cgroups_path(S("{\"linux\":{\"cgroupsPath\":3}}"), &cp), -EBADMSG);
	ck_assert_int_eq(thps_oci_config_cgroups_path(S("{\"linux\":"), &cp), -EBADMSG);
}
END_TEST

START_TEST(test_proc_cgroup)
{
	char buf[THPS_CGROUP_PATH_MAX];

	ck_assert_int_eq(thps_proc_cgroup_v2_path("0::/machine.slice/x.scope\n", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/machine.slice/x.scope");
	ck_assert_int_eq(thps_proc_cgroup_v2_path("12:memory:/a\n1:name=systemd:/b\n0::/c\n", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/c");
	ck_assert_int_eq(thps_proc_cgroup_v2_path("0::/\n", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/");
	/* a process outside the reader's cgroup namespace (thpshrink-nri in a pod) */
	ck_assert_int_eq(thps_proc_cgroup_v2_path("0::/../../kubepods.slice/x.scope\n", buf,
						  sizeof(buf)),
			 -EXDEV);
	ck_assert_int_eq(thps_proc_cgroup_v2_path("0::/..\n", buf, sizeof(buf)), -EXDEV);
	/* a cgroup named "..x" is a name like any */
	ck_assert_int_eq(thps_proc_cgroup_v2_path("0::/..x\n", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/..x");
	ck_assert_int_eq(thps_proc_cgroup_v2_path("12:memory:/a\n", buf, sizeof(buf)), -ENODATA);
	ck_assert_int_eq(thps_proc_cgroup_v2_path("", buf, sizeof(buf)), -ENODATA);
	ck_assert_int_eq(thps_proc_cgroup_v2_path("0::/gone (deleted)\n", buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(thps_proc_cgroup_v2_path("0::/a/../x\n", buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(thps_proc_cgroup_v2_path("0::relative\n", buf, sizeof(buf)), -EINVAL);
}
END_TEST

START_TEST(test_proc_stat_starttime)
{
	uint64_t st = 0;
	const char *stat = "42 (a) b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10\n";

	ck_assert_int_eq(thps_proc_stat_starttime(stat, &st), 0);
	ck_assert_uint_eq(st, 987654);
	ck_assert_int_eq(thps_proc_stat_starttime("42 (a) S 1 2", &st), -EINVAL);
	ck_assert_int_eq(thps_proc_stat_starttime("garbage", &st), -EINVAL);
}
END_TEST

static void fill_reg(struct thps_registration *r, const char *id, const char *cg)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->cgroup, sizeof(r->cgroup), "%s", cg);
	r->pid = 0;
	snprintf(r->policy, sizeof(r->policy), "redis");
	snprintf(r->mode, sizeof(r->mode), "observe");
	snprintf(r->created, sizeof(r->created), "2026-12-03T05:46:40Z");
	snprintf(r->status, sizeof(r->status), "created");
	snprintf(r->stage, sizeof(r->stage), "createRuntime");
}

/* A value with a NUL (JSON "\u0000") or a control character is refused whole, never cut: an
 * admission rule that vetted "g-split\u0000x" must not see it applied as "g-split". */
START_TEST(test_annotations_control)
{
	static const char *const bad[] = {"g-split\\u0000x", "\\u0000", "g-split\\u001f",
					  "g-split\\u007f", "\\ng-split", "g\\tsplit"};
	struct thps_oci_state s;
	char j[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		snprintf(j, sizeof(j),
			 "{\"ociVersion\":\"1\",\"id\":\"a\",\"annotations\":"
			 "{\"io.thpshrink.policy\":\"%s\",\"io.thpshrink.mode\":\"%s\"}}",
			 bad[i], bad[i]);
		ck_assert_int_eq(thps_oci_state_parse(S(j), &s), 0);
		ck_assert_ptr_null(s.policy);
		ck_assert_ptr_null(s.mode);
		ck_assert(s.policy_refused);
		ck_assert(s.mode_refused);
		thps_oci_state_free(&s);
	}
	/* clean values are kept, unflagged; UTF-8 above DEL is no control character */
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\",\"annotations\":"
						"{\"io.thpshrink.policy\":\"g-split\",\"io.thpshrink.mode\":\"\u00e9\"}}"),
					      &s),
			 0);
	ck_assert_str_eq(s.policy, "g-split");
	ck_assert(!s.policy_refused && !s.mode_refused);
	thps_oci_state_free(&s);
	/* a NUL in the id is refused, not cut to another container's id */
	ck_assert_int_lt(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\\u0000b\"}"), &s), 0);
	ck_assert(thps_oci_value_clean(S("ok")));
	ck_assert(!thps_oci_value_clean("a\0b", 3));
}
END_TEST

/* CRI-O's io.kubernetes.* annotations: kept as given for the hook to validate; a NUL or a
 * control character in any drops that one value and flags it. */
START_TEST(test_state_k8s_annotations)
{
	struct thps_oci_state s;

	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\",\"annotations\":{"
						"\"io.kubernetes.pod.namespace\":\"batch\","
						"\"io.kubernetes.pod.name\":\"web-7d9f\","
						"\"io.kubernetes.pod.uid\":\"0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b\","
						"\"io.kubernetes.container.name\":\"App\"}}"),
					      &s),
			 0);
	ck_assert_str_eq(s.k8s_namespace, "batch");
	ck_assert_str_eq(s.pod, "web-7d9f");
	ck_assert_str_eq(s.pod_uid, "0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b");
	ck_assert_str_eq(s.container, "App"); /* as given: the hook refuses it */
	ck_assert(!s.k8s_refused);
	thps_oci_state_free(&s);
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\",\"annotations\":{"
						"\"io.kubernetes.pod.namespace\":\"batch\\u0000x\","
						"\"io.kubernetes.pod.name\":\"web\"}}"),
					      &s),
			 0);
	ck_assert_ptr_null(s.k8s_namespace);
	ck_assert_str_eq(s.pod, "web");
	ck_assert(s.k8s_refused);
	thps_oci_state_free(&s);
	/* a wrong type is a malformed state, as for the thpshrink annotations */
	ck_assert_int_eq(thps_oci_state_parse(S("{\"ociVersion\":\"1\",\"id\":\"a\",\"annotations\":{"
						"\"io.kubernetes.pod.namespace\":7}}"),
					      &s),
			 -EBADMSG);
}
END_TEST

/* The Kubernetes identity thpshrink-nri adds: written, read back, bounded and validated. */
START_TEST(test_registration_identity)
{
	struct thps_registration r, back;
	char *text = NULL;
	const char *base = "{\"version\":1,\"id\":\"c1\",\"cgroup\":\"/a\",\"pid\":0,"
			   "\"pid_start_time\":0,\"created\":\"2026-12-03T05:46:40Z\","
			   "\"status\":\"created\",";
	char buf[2048];

	fill_reg(&r, "c1", "/kubepods.slice/c1.scope");
	snprintf(r.k8s_namespace, sizeof(r.k8s_namespace), "batch");
	snprintf(r.pod, sizeof(r.pod), "web-0.x");
	snprintf(r.pod_uid, sizeof(r.pod_uid), "0f0e0d0c-0b0a-0908-0706-050403020100");
	snprintf(r.container, sizeof(r.container), "app");
	r.n_labels = 2;
	snprintf(r.labels[0].key, sizeof(r.labels[0].key), "app.kubernetes.io/name");
	snprintf(r.labels[0].value, sizeof(r.labels[0].value), "redis");
	snprintf(r.labels[1].key, sizeof(r.labels[1].key), "tier");
	r.labels[1].value[0] = '\0';
	ck_assert_int_eq(thps_registration_to_json(&r, &text), 0);
	ck_assert_ptr_nonnull(strstr(text, "\"batch\""));
	ck_assert_int_eq(thps_registration_from_json(text, strlen(text), &back), 0);
	ck_assert_int_eq(memcmp(&r, &back, sizeof(r)), 0);
	free(text);
	/* labels out of order or duplicated are not written */
	snprintf(r.labels[1].key, sizeof(r.labels[1].key), "app");
	ck_assert_int_eq(thps_registration_to_json(&r, &text), -EINVAL);
	fill_reg(&r, "c1", "/a");
	snprintf(r.k8s_namespace, sizeof(r.k8s_namespace), "Batch");
	ck_assert_int_eq(thps_registration_to_json(&r, &text), -EINVAL);

	/* read side: labels come back sorted; wrong shapes, names and too many are refused */
	snprintf(buf, sizeof(buf), "%s\"labels\":{\"z\":\"1\",\"a\":\"2\"}}", base);
	ck_assert_int_eq(thps_registration_from_json(S(buf), &back), 0);
	ck_assert_uint_eq(back.n_labels, 2);
	ck_assert_str_eq(back.labels[0].key, "a");
	ck_assert_str_eq(back.labels[1].value, "1");
	snprintf(buf, sizeof(buf), "%s\"labels\":{\"a\":1}}", base);
	ck_assert_int_eq(thps_registration_from_json(S(buf), &back), -EBADMSG);
	snprintf(buf, sizeof(buf), "%s\"labels\":{\"a b\":\"1\"}}", base);
	ck_assert_int_eq(thps_registration_from_json(S(buf), &back), -EBADMSG);
	snprintf(buf, sizeof(buf), "%s\"labels\":[]}", base);
	ck_assert_int_eq(thps_registration_from_json(S(buf), &back), -EBADMSG);
	snprintf(buf, sizeof(buf), "%s\"labels\":{", base);
	for (int i = 0; i <= THPS_REGISTRATION_LABELS_MAX; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s\"k%d\":\"v\"",
			 i ? "," : "", i);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "}}");
	ck_assert_int_eq(thps_registration_from_json(S(buf), &back), -EBADMSG);
	snprintf(buf, sizeof(buf), "%s\"pod\":\"a..b\"}", base);
	ck_assert_int_eq(thps_registration_from_json(S(buf), &back), -EBADMSG);
	snprintf(buf, sizeof(buf), "%s\"pod_uid\":\"nope\"}", base);
	ck_assert_int_eq(thps_registration_from_json(S(buf), &back), -EBADMSG);
	snprintf(buf, sizeof(buf), "%s\"container\":\"\"}", base);
	ck_assert_int_eq(thps_registration_from_json(S(buf), &back), -EBADMSG);
	snprintf(buf, sizeof(buf), "%s\"namespace\":\"kube-system\",\"container\":\"app\"}",
		 base);
	ck_assert_int_eq(thps_registration_from_json(S(buf), &back), 0);
	ck_assert_str_eq(back.k8s_namespace, "kube-system");
}
END_TEST

START_TEST(test_registration_roundtrip)
{
	struct thps_registration r, back;
	char *text = NULL;

	fill_reg(&r, "c1", "/machine.slice/c1.scope");
	r.pid = 77;
	r.pid_start_time = 123456789012ULL;
	ck_assert_int_eq(thps_registration_to_json(&r, &text), 0);
	ck_assert_int_eq(thps_registration_from_json(text, strlen(text), &back), 0);
	ck_assert_int_eq(memcmp(&r, &back, sizeof(r)), 0);
	free(text);

	/* invalid records are refused on both sides */
	fill_reg(&r, "../x", "/a");
	ck_assert_int_eq(thps_registration_to_json(&r, &text), -EINVAL);
	fill_reg(&r, "c1", "/a");
	snprintf(r.policy, sizeof(r.policy), "/etc");
	ck_assert_int_eq(thps_registration_to_json(&r, &text), -EINVAL);
	ck_assert_int_eq(thps_registration_from_json(S("{\"version\":1,\"id\":\"c1\",\"cgroup\":\"/a\",\"pid\":0,"
						       "\"pid_start_time\":0,\"created\":\"2026-12-03T05:46:40Z\","
						       "\"status\":\"created\"}"),
						     &back),
			 0);
	ck_assert_str_eq(back.policy, "");
	ck_assert_int_eq(thps_registration_from_json(S("{\"version\":1,\"id\":\"c1\",\"cgroup\":\"/a\",\"pid\":0,"
						       "\"pid_start_time\":0,\"created\":\"2026-12-03T05:46:40Z\","
						       "\"status\":\"created\",\"extra\":1}"),
						     &back),
			 -EBADMSG);
	ck_assert_int_eq(thps_registration_from_json(S("{\"version\":1,\"id\":\"c1\",\"cgroup\":\"/../a\",\"pid\":0,"
						       "\"pid_start_time\":0,\"created\":\"2026-12-03T05:46:40Z\","
						       "\"status\":\"created\"}"),
						     &back),
			 -EBADMSG);
	ck_assert_int_eq(thps_registration_from_json(S("{\"version\":2,\"id\":\"c1\",\"cgroup\":\"/a\",\"pid\":0,"
						       "\"pid_start_time\":0,\"created\":\"2026-12-03T05:46:40Z\","
						       "\"status\":\"created\"}"),
						     &back),
			 -EBADMSG);
	ck_assert_int_eq(thps_registration_from_json(S("{\"version\":1,\"id\":\"c1\"}"), &back), -EBADMSG);
	/* a NUL or control character in any string: the file is refused (a cut "g-split\0x"
	 * would be a valid policy name) */
	ck_assert_int_eq(thps_registration_from_json(S("{\"version\":1,\"id\":\"c1\",\"cgroup\":\"/a\",\"pid\":0,"
						       "\"pid_start_time\":0,\"created\":\"2026-12-03T05:46:40Z\","
						       "\"status\":\"created\",\"policy\":\"g-split\\u0000x\"}"),
						     &back),
			 -EBADMSG);
	ck_assert_int_eq(thps_registration_from_json(S("{\"version\":1,\"id\":\"c1\",\"cgroup\":\"/a\\u0000/b\",\"pid\":0,"
						       "\"pid_start_time\":0,\"created\":\"2026-12-03T05:46:40Z\","
						       "\"status\":\"created\"}"),
						     &back),
			 -EBADMSG);
	ck_assert_int_eq(thps_registration_from_json(S("{\"version\":1,\"id\":\"c1\",\"cgroup\":\"/a\",\"pid\":0,"
						       "\"pid_start_time\":0,\"created\":\"2026-12-03T05:46:40Z\","
						       "\"status\":\"created\",\"mode\":\"observe\\u001f\"}"),
						     &back),
			 -EBADMSG);
}
END_TEST

/* A registration covers its cgroup's whole subtree; the nearest registered ancestor wins. */
START_TEST(test_registration_covering)
{
	struct thps_registration items[4];
	struct thps_registration_list l = {.items = items, .n = 4};

	fill_reg(&items[0], "c", "/k/pod/c");
	fill_reg(&items[1], "inner", "/k/pod/c/inner");
	fill_reg(&items[2], "d", "/k/pod/d");
	fill_reg(&items[3], "root", "/");
	ck_assert_str_eq(thps_registration_covering(&l, "/k/pod/c")->id, "c");
	ck_assert_str_eq(thps_registration_covering(&l, "/k/pod/c/escape")->id, "c");
	ck_assert_str_eq(thps_registration_covering(&l, "/k/pod/c/escape/deeper")->id, "c");
	ck_assert_str_eq(thps_registration_covering(&l, "/k/pod/c/inner/x")->id, "inner");
	ck_assert_str_eq(thps_registration_covering(&l, "/k/pod/d")->id, "d");
	/* a sibling whose name extends the registered one is not below it */
	ck_assert_ptr_null(thps_registration_covering(&l, "/k/pod/cc"));
	ck_assert_ptr_null(thps_registration_covering(&l, "/k/pod"));
	/* "/" covers nothing: the root is no container's */
	ck_assert_ptr_null(thps_registration_covering(&l, "/other"));
	ck_assert_ptr_null(thps_registration_covering(&l, NULL));
	ck_assert_ptr_null(thps_registration_covering(NULL, "/k/pod/c"));
}
END_TEST

/* A private temp root: registrations dir, fake cgroup2 root and fake /proc. */
static char root[64];
static char regdir[PATH_MAX];

static void mkroot(void)
{
	snprintf(root, sizeof(root), "/tmp/check-oci.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(regdir, sizeof(regdir), "%s/thpshrink/containers", root);
}

static void rmroot(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX], cmd[2 * PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
	ck_assert_int_eq(system(cmd), 0);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void count_error(const char *dir, const char *name, int err, void *userdata)
{
	(*(int *)userdata)++;
	ck_assert_int_lt(err, 0);
	ck_assert_ptr_nonnull(dir);
	ck_assert_ptr_null(strchr(name, '/'));
}

START_TEST(test_registrations_dir)
{
	struct thps_registration r, got;
	struct thps_registration_list l;
	char p[PATH_MAX + 16];
	int errors = 0;

	ck_assert_int_eq(thps_registrations_load_all(regdir, NULL, NULL, &l), 0); /* missing dir: empty */
	ck_assert_int_eq(thps_registrations_dir_ensure(regdir), 0);
	fill_reg(&r, "c1", "/c1");
	ck_assert_int_eq(thps_registration_write(regdir, &r), 0);
	fill_reg(&r, "c2", "/c2");
	ck_assert_int_eq(thps_registration_write(regdir, &r), 0);
	ck_assert_int_eq(thps_registration_load(regdir, "c2", &got), 0);
	ck_assert_str_eq(got.cgroup, "/c2");
	/* group-writable, wrong id inside, garbage, symlink, temp file: all refused or skipped */
	fill_reg(&r, "c3", "/c3");
	ck_assert_int_eq(thps_registration_write(regdir, &r), 0);
	snprintf(p, sizeof(p), "%s/c3.json", regdir);
	ck_assert_int_eq(chmod(p, 0666), 0);
	ck_assert_int_eq(thps_registration_load(regdir, "c3", &got), -EPERM);
	put("thpshrink/containers/c4.json", "{\"version\":1,\"id\":\"c1\",\"cgroup\":\"/a\",\"pid\":0,"
						"\"pid_start_time\":0,\"created\":\"2026-12-03T05:46:40Z\","
						"\"status\":\"created\"}");
	ck_assert_int_eq(thps_registration_load(regdir, "c4", &got), -EBADMSG);
	put("thpshrink/containers/c5.json", "not json");
	put("thpshrink/containers/.c6.json.XXXXXX", "temp");
	snprintf(p, sizeof(p), "%s/c7.json", regdir);
	ck_assert_int_eq(symlink("c1.json", p), 0);
	ck_assert_int_eq(thps_registration_load(regdir, "c7", &got), -EPERM);
	ck_assert_int_eq(thps_registration_load(regdir, "../c1", &got), -EINVAL);
	put("thpshrink/containers/notes.txt", "not a registration");
	ck_assert_int_eq(thps_registrations_load_all(regdir, count_error, &errors, &l), 2);
	ck_assert(!strcmp(l.items[0].id, "c1") || !strcmp(l.items[1].id, "c1"));
	/* c3 (mode), c4 (id), c5 (garbage), c7 (symlink), notes.txt; the temp file is silent */
	ck_assert_int_eq(errors, 5);
	thps_registration_list_free(&l);
	ck_assert_int_eq(thps_registration_remove(regdir, "c1"), 0);
	ck_assert_int_eq(thps_registration_remove(regdir, "c1"), 0);
	ck_assert_int_eq(thps_registration_remove(regdir, "../x"), -EINVAL);
	ck_assert_int_eq(thps_registration_load(regdir, "c1", &got), -ENOENT);
}
END_TEST

START_TEST(test_registrations_watch)
{
	struct thps_registration_events ev;
	struct thps_registration r;
	int fd;

	ck_assert_int_eq(thps_registrations_dir_ensure(regdir), 0);
	fd = thps_registrations_watch(regdir);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(thps_registrations_handle_events(fd, &ev), 0);
	thps_registration_events_free(&ev);
	fill_reg(&r, "w1", "/w1");
	ck_assert_int_eq(thps_registration_write(regdir, &r), 0);
	fill_reg(&r, "w2", "/w2");
	ck_assert_int_eq(thps_registration_write(regdir, &r), 0);
	ck_assert_int_eq(thps_registration_remove(regdir, "w2"), 0);
	ck_assert_int_eq(thps_registrations_handle_events(fd, &ev), 2);
	ck_assert_uint_eq(ev.n_added, 1);
	ck_assert_str_eq(ev.added[0], "w1");
	ck_assert_uint_eq(ev.n_removed, 1);
	ck_assert_str_eq(ev.removed[0], "w2");
	ck_assert(!ev.rescan);
	thps_registration_events_free(&ev);
	close(fd);
}
END_TEST

START_TEST(test_registrations_gc)
{
	struct thps_registration r;
	struct thps_ctx ctx;
	const char *stat1 = "100 (init) S 1 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5555 0 0\n";
	const char *stat2 = "200 (init) S 1 200 200 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7777 0 0\n";

	thps_ctx_init(&ctx);
	snprintf(ctx.proc_root, sizeof(ctx.proc_root), "%s/proc", root);
	snprintf(ctx.cgroup_root, sizeof(ctx.cgroup_root), "%s/cg", root);
	put("proc/100/stat", stat1);
	put("proc/200/stat", stat2);
	put("cg/alive/cgroup.procs", "");
	put("cg/reused/cgroup.procs", "");
	put("cg/nopid/cgroup.procs", "");
	ck_assert_int_eq(thps_registrations_dir_ensure(regdir), 0);

	fill_reg(&r, "alive", "/alive");
	ck_assert_int_eq(thps_registration_set_pid(&ctx, &r, 100), 0);
	ck_assert_uint_eq(r.pid_start_time, 5555);
	ck_assert_int_eq(thps_registration_write(regdir, &r), 0);
	fill_reg(&r, "reused", "/reused"); /* pid 200 now belongs to another process */
	r.pid = 200;
	r.pid_start_time = 1;
	ck_assert_int_eq(thps_registration_write(regdir, &r), 0);
	fill_reg(&r, "deadpid", "/alive");
	r.pid = 300;
	r.pid_start_time = 1;
	ck_assert_int_eq(thps_registration_write(regdir, &r), 0);
	fill_reg(&r, "nocg", "/gone");
	ck_assert_int_eq(thps_registration_write(regdir, &r), 0);
	fill_reg(&r, "nopid", "/nopid");
	ck_assert_int_eq(thps_registration_write(regdir, &r), 0);

	ck_assert_int_eq(thps_registration_alive(&ctx, &r), 1);
	ck_assert_int_eq(thps_registrations_gc(regdir, &ctx), 3);
	ck_assert_int_eq(thps_registration_load(regdir, "alive", &r), 0);
	ck_assert_int_eq(thps_registration_load(regdir, "nopid", &r), 0);
	ck_assert_int_eq(thps_registration_load(regdir, "reused", &r), -ENOENT);
	ck_assert_int_eq(thps_registration_load(regdir, "deadpid", &r), -ENOENT);
	ck_assert_int_eq(thps_registration_load(regdir, "nocg", &r), -ENOENT);
	ck_assert_int_eq(thps_registrations_gc(regdir, &ctx), 0);
}
END_TEST

static Suite *oci_suite(void)
{
	Suite *s = suite_create("oci");
	TCase *tc = tcase_create("parse");
	TCase *td = tcase_create("registrations");

	tcase_add_test(tc, test_state_full);
	tcase_add_test(tc, test_state_minimal_and_errors);
	tcase_add_test(tc, test_annotations_kept_raw);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_stages);
	tcase_add_test(tc, test_cgroups_path_forms);
	tcase_add_test(tc, test_config_cgroups_path);
	tcase_add_test(tc, test_proc_cgroup);
	tcase_add_test(tc, test_proc_stat_starttime);
	tcase_add_test(tc, test_annotations_control);
	tcase_add_test(tc, test_state_k8s_annotations);
	tcase_add_test(tc, test_registration_roundtrip);
	tcase_add_test(tc, test_registration_identity);
	tcase_add_test(tc, test_registration_covering);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(td, mkroot, rmroot);
	tcase_add_test(td, test_registrations_dir);
	tcase_add_test(td, test_registrations_watch);
	tcase_add_test(td, test_registrations_gc);
	suite_add_tcase(s, td);
	return s;
}

THPS_TEST_MAIN(oci_suite)
