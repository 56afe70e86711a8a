/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink-oci-hook: an OCI runtime hook. A non-zero exit of a createRuntime/poststart hook
 * makes the runtime fail the container, so whatever goes wrong here is logged (stderr ends in
 * the runtime's log) and the hook exits 0, unless --strict asks otherwise.
 *
 *   thpshrink-oci-hook [--registrations-dir DIR] [--strict] [createRuntime|poststart|poststop]
 *
 * createRuntime/createContainer/startContainer/poststart write <DIR>/<id>.json; poststop
 * removes it. Without a stage argument the state's "status" decides. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "fileio.h"
#include "json.h"
#include "k8s.h"
#include "log.h"
#include "macro.h"
#include "oci.h"
#include "proc.h"
#include "registrations.h"
#include "valid.h"

/* How much of an oversized stdin we swallow so the runtime's write does not fail with EPIPE. */
#define DRAIN_MAX (64u * 1024 * 1024)

struct args {
	const char *dir;
	bool strict;
	enum thps_oci_stage stage;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: thpshrink-oci-hook [--registrations-dir DIR] [--strict] "
		   "[createRuntime|createContainer|startContainer|poststart|poststop]\n"
		   "Reads the OCI container state on stdin and (un)registers the container with "
		   "thpshrinkd.\n");
}

/* Returns 0, 1 to exit successfully (--help), or -EINVAL. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
	    {"registrations-dir", required_argument, NULL, 'd'},
	    {"strict", no_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	int c;

	a->dir = THPS_REGISTRATIONS_DIR;
	a->strict = false;
	a->stage = THPS_OCI_STAGE_NONE;
	while ((c = getopt_long(argc, argv, "d:sh", opts, NULL)) >= 0)
		switch (c) {
		case 'd':
			a->dir = optarg;
			break;
		case 's':
			a->strict = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			return -EINVAL;
		}
	if (optind < argc) {
		a->stage = thps_oci_stage_from_string(argv[optind]);
		if (a->stage == THPS_OCI_STAGE_NONE) {
			log_error("Unknown hook stage '%s', expected createRuntime, poststart or "
				  "poststop",
				  argv[optind]);
			return -EINVAL;
		}
	}
	return 0;
}

/* Reads stdin up to THPS_OCI_STATE_MAX bytes. Returns 0, -EFBIG (the rest is drained), -errno. */
static int read_state(char **ret, size_t *ret_len)
{
	size_t cap = THPS_OCI_STATE_MAX + 1, len = 0;
	_cleanup_free_ char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	while (len < cap) {
		ssize_t n = read(STDIN_FILENO, buf + len, cap - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negative_errno();
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > THPS_OCI_STATE_MAX) {
		size_t drained = len;

		while (drained < DRAIN_MAX) {
			ssize_t n = read(STDIN_FILENO, buf, cap);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			drained += (size_t)n;
		}
		return -EFBIG;
	}
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/* The runtime's own cgroup (ours, as its child): the base of a relative cgroupsPath. */
static void own_cgroup(const struct thps_ctx *ctx, char *buf, size_t size)
{
	_cleanup_free_ char *text = NULL;

	snprintf(buf, size, "/");
	if (read_file_at(64 * 1024, &text, ctx->proc_root, "self/cgroup") < 0 ||
	    thps_proc_cgroup_v2_path(text, buf, size) < 0)
		snprintf(buf, size, "/");
}

/* Works out the container's cgroup: the live pid's /proc/PID/cgroup first (what the runtime
 * really did), else the bundle's linux.cgroupsPath. Returns 0 or -errno (logged). */
static int find_cgroup(const struct thps_ctx *ctx, const struct thps_oci_state *s, char *buf,
		       size_t size)
{
	_cleanup_free_ char *text = NULL, *config = NULL, *cp = NULL;
	char path[PATH_MAX], base[THPS_CGROUP_PATH_MAX];
	struct stat st;
	size_t len;
	int r;

	if (s->pid > 0) {
		r = read_file_at(64 * 1024, &text, ctx->proc_root, "%d/cgroup", (int)s->pid);
		if (r >= 0)
			r = thps_proc_cgroup_v2_path(text, buf, size);
		if (r >= 0)
			return 0;
		log_warning_errno(r,
				  "Container %s: no cgroup v2 path for pid %d (%m), trying the "
				  "bundle's config.json",
				  s->id, (int)s->pid);
	}
	if (!s->bundle || s->bundle[0] != '/')
		return log_error_errno(
		    -EINVAL,
		    "Container %s: no absolute bundle path in the state, cannot find its cgroup",
		    s->id);
	r = snprintf(path, sizeof(path), "%s/config.json", s->bundle);
	if (r < 0 || (size_t)r >= sizeof(path))
		return log_error_errno(-ENAMETOOLONG, "Container %s: bundle path too long", s->id);
	/* A FIFO or device here would block the hook (and so the container's start). */
	if (stat(path, &st) < 0)
		return log_error_errno(negative_errno(), "Container %s: failed to read '%s': %m",
				       s->id, path);
	if (!S_ISREG(st.st_mode))
		return log_error_errno(-EINVAL, "Container %s: '%s' is not a regular file", s->id,
				       path);
	r = read_file_bounded(path, THPS_OCI_CONFIG_MAX, &config, &len);
	if (r < 0)
		return log_error_errno(r, "Container %s: failed to read '%s': %m", s->id, path);
	r = thps_oci_config_cgroups_path(config, len, &cp);
	if (r < 0)
		return log_error_errno(r, "Container %s: '%s': no usable linux.cgroupsPath (%m)",
				       s->id, path);
	own_cgroup(ctx, base, sizeof(base));
	r = thps_oci_cgroups_path_resolve(cp, base, buf, size);
	if (r < 0)
		return log_error_errno(
		    r, "Container %s: '%s': linux.cgroupsPath: cannot resolve this path (%m)",
		    s->id, path);
	return 0;
}

/* Copies one io.kubernetes.* annotation into field when valid(); logs and leaves it empty
 * otherwise (the container is registered without that part of its identity). */
static void identity_field(const char *id, const char *key, const char *value,
			   bool (*valid)(const char *), char *field, size_t size)
{
	if (!value)
		return;
	if (strlen(value) < size && valid(value))
		snprintf(field, size, "%s", value);
	else
		log_warning(
		    "Container %s: annotation %s is not a valid Kubernetes name, ignoring it", id,
		    key);
}

/* The Kubernetes identity CRI-O (or podman, where given) wrote into the annotations. */
static void set_identity(struct thps_registration *reg, const struct thps_oci_state *s)
{
	if (s->k8s_refused)
		log_warning("Container %s: an io.kubernetes.* annotation holds a NUL or control "
			    "character, ignoring it",
			    s->id);
	identity_field(s->id, THPS_ANN_K8S_NAMESPACE, s->k8s_namespace, thps_k8s_dns_label_valid,
		       reg->k8s_namespace, sizeof(reg->k8s_namespace));
	identity_field(s->id, THPS_ANN_K8S_POD, s->pod, thps_k8s_subdomain_valid, reg->pod,
		       sizeof(reg->pod));
	identity_field(s->id, THPS_ANN_K8S_POD_UID, s->pod_uid, thps_k8s_uid_valid, reg->pod_uid,
		       sizeof(reg->pod_uid));
	identity_field(s->id, THPS_ANN_K8S_CONTAINER, s->container, thps_k8s_dns_label_valid,
		       reg->container, sizeof(reg->container));
}

static int do_register(const struct thps_ctx *ctx, const struct args *a,
		       const struct thps_oci_state *s)
{
	struct thps_registration reg = {0};
	struct tm tm;
	time_t now = time(NULL);
	int r;

	snprintf(reg.id, sizeof(reg.id), "%s", s->id);
	if (s->policy_refused)
		log_warning("Container %s: annotation %s holds a NUL or control character, "
			    "ignoring it (no policy named)",
			    s->id, THPS_ANN_POLICY);
	if (s->mode_refused)
		log_warning("Container %s: annotation %s holds a NUL or control character, "
			    "ignoring it",
			    s->id, THPS_ANN_MODE);
	if (s->policy && thps_policy_name_valid(s->policy))
		snprintf(reg.policy, sizeof(reg.policy), "%s", s->policy);
	else if (s->policy)
		log_warning("Container %s: annotation %s is not a policy name "
			    "([A-Za-z0-9_.-]{1,64}), ignoring it",
			    s->id, THPS_ANN_POLICY);
	if (s->mode && thps_mode_normalize(s->mode))
		snprintf(reg.mode, sizeof(reg.mode), "%s", thps_mode_normalize(s->mode));
	else if (s->mode)
		log_warning("Container %s: annotation %s: expected observe or enforce, ignoring it",
			    s->id, THPS_ANN_MODE);
	set_identity(&reg, s);
	r = find_cgroup(ctx, s, reg.cgroup, sizeof(reg.cgroup));
	if (r < 0)
		return r;
	if (s->pid > 0 && (r = thps_registration_set_pid(ctx, &reg, s->pid)) < 0) {
		log_warning_errno(r,
				  "Container %s: cannot read the start time of pid %d (%m), "
				  "registering without it",
				  s->id, (int)s->pid);
		reg.pid = 0;
		reg.pid_start_time = 0;
	}
	gmtime_r(&now, &tm);
	strftime(reg.created, sizeof(reg.created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	/* A registration describes a live container: anything but these is recorded as unknown. */
	if (!strcmp(s->status, "creating") || !strcmp(s->status, "created") ||
	    !strcmp(s->status, "running"))
		snprintf(reg.status, sizeof(reg.status), "%.15s", s->status);
	else
		snprintf(reg.status, sizeof(reg.status), "unknown");
	snprintf(reg.stage, sizeof(reg.stage), "%s", thps_oci_stage_to_string(a->stage));

	r = thps_registrations_dir_ensure(a->dir);
	if (r < 0)
		return log_error_errno(
		    r, "Container %s: cannot create '%s' (is thpshrinkd set up?): %m", s->id,
		    a->dir);
	r = thps_registration_write(a->dir, &reg);
	if (r < 0)
		return log_error_errno(
		    r, "Container %s: failed to write its registration in '%s': %m", s->id, a->dir);
	log_info("Container %s: registered cgroup %s%s%s%s%s%s%s%s%s", s->id, reg.cgroup,
		 reg.policy[0] ? " policy=" : "", reg.policy, reg.mode[0] ? " mode=" : "", reg.mode,
		 reg.k8s_namespace[0] ? " namespace=" : "", reg.k8s_namespace,
		 reg.pod[0] ? " pod=" : "", reg.pod);
	return 0;
}

static int run(int argc, char **argv)
{
	_cleanup_free_ char *buf = NULL;
	struct thps_oci_state s = {0};
	struct thps_ctx ctx;
	struct args a;
	size_t len = 0;
	int r;

	r = parse_args(argc, argv, &a);
	if (r != 0)
		return r;
	thps_ctx_init(&ctx);
	r = read_state(&buf, &len);
	if (r == -EFBIG)
		return log_error_errno(
		    r, "The container state on stdin is larger than %u bytes, ignoring it",
		    THPS_OCI_STATE_MAX);
	if (r < 0)
		return log_error_errno(r, "Failed to read the container state on stdin: %m");
	r = thps_oci_state_parse(buf, len, &s);
	if (r == -EINVAL)
		return log_error_errno(
		    r,
		    "The container state has no valid \"id\" ([A-Za-z0-9_.-]{1,128}), ignoring it");
	if (r < 0)
		return log_error_errno(
		    r,
		    "The container state on stdin is not a valid OCI state (malformed or "
		    "non-UTF-8 JSON, nested deeper than %d, or a field of the wrong type), "
		    "ignoring it",
		    THPS_JSON_DEPTH);
	if (a.stage == THPS_OCI_STAGE_NONE)
		a.stage = thps_oci_stage_from_status(s.status);
	switch (a.stage) {
	case THPS_OCI_STAGE_POSTSTOP:
		r = thps_registration_remove(a.dir, s.id);
		if (r < 0)
			log_error_errno(
			    r, "Container %s: failed to remove its registration in '%s': %m", s.id,
			    a.dir);
		else
			log_debug("Container %s: unregistered", s.id);
		break;
	case THPS_OCI_STAGE_NONE:
		r = log_error_errno(
		    -EINVAL,
		    "Container %s: no hook stage given and status '%s' names none, ignoring", s.id,
		    s.status);
		break;
	default:
		r = do_register(&ctx, &a, &s);
		break;
	}
	thps_oci_state_free(&s);
	return r;
}

int main(int argc, char **argv)
{
	bool strict = false;
	int r;

	thps_log_set_prefix("thpshrink-oci-hook");
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--strict"))
			strict = true;
	r = run(argc, argv);
	if (r > 0)
		return EXIT_SUCCESS;
	/* A hook must never stop a container because thpshrink is down or confused. */
	return r < 0 && strict ? EXIT_FAILURE : EXIT_SUCCESS;
}
