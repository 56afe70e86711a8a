/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A container NRI reported, written as a registration (nri-register.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "nri-register.h"
#include "oci.h"
#include "proc.h"
#include "registrations.h"

static void log_dropped(const struct thps_nri_container *c)
{
	static const struct {
		unsigned bit;
		const char *what;
	} fields[] = {
	    {THPS_NRI_DROP_NAMESPACE, "its pod's namespace (not a DNS label)"},
	    {THPS_NRI_DROP_POD, "its pod's name (not a DNS subdomain)"},
	    {THPS_NRI_DROP_POD_UID, "its pod's UID (not 8-4-4-4-12 hex)"},
	    {THPS_NRI_DROP_CONTAINER, "its name (not a DNS label)"},
	    {THPS_NRI_DROP_CGROUPS_PATH, "its cgroups path (a control character or too long)"},
	    {THPS_NRI_DROP_POLICY,
	     "annotation " THPS_ANN_POLICY " (a control character or over 256 bytes)"},
	    {THPS_NRI_DROP_MODE,
	     "annotation " THPS_ANN_MODE " (a control character or over 256 bytes)"},
	};

	for (size_t i = 0; i < ELEMENTSOF(fields); i++)
		if (c->dropped & fields[i].bit)
			log_warning("Container %s: ignoring %s", c->id, fields[i].what);
	if (c->labels_dropped)
		log_warning("Container %s: kept %zu pod labels, left out %zu (invalid, or past %d "
			    "in key order)",
			    c->id, c->n_labels, c->labels_dropped, THPS_REGISTRATION_LABELS_MAX);
}

/* Returns 0 or -errno (logged). */
static int find_cgroup(const struct thps_ctx *ctx, const struct thps_nri_container *c, char *buf,
		       size_t size)
{
	_cleanup_free_ char *text = NULL;
	int r;

	if (c->pid > 0) {
		r = read_file_at(64 * 1024, &text, ctx->proc_root, "%u/cgroup", c->pid);
		if (r >= 0)
			r = thps_proc_cgroup_v2_path(text, buf, size);
		if (r >= 0)
			return 0;
		/* In a pod (the DaemonSet) the plugin has its own cgroup namespace: every other
		 * container's path reads "/../..". The runtime's cgroups path is as good there. */
		if (r == -EXDEV)
			log_debug("Container %s: pid %u is outside our cgroup namespace, using its "
				  "cgroups path",
				  c->id, c->pid);
		else
			log_warning_errno(
			    r,
			    "Container %s: no cgroup v2 path for pid %u (%m), trying its "
			    "cgroups path",
			    c->id, c->pid);
	}
	/* containerd and CRI-O give Kubernetes' paths absolute or in systemd's form; a relative
	 * one is taken from the root, as the runtime's own cgroup is not ours to know. */
	r = thps_oci_cgroups_path_resolve(c->cgroups_path, "/", buf, size);
	if (r < 0)
		return log_error_errno(r, "Container %s: cannot resolve its cgroups path '%s' (%m)",
				       c->id, c->cgroups_path);
	return 0;
}

int nri_register(const struct thps_ctx *ctx, const char *dir, const struct thps_nri_container *c,
		 enum thps_oci_stage stage)
{
	struct thps_registration reg = {0};
	time_t now = time(NULL);
	struct tm tm;
	int r;

	log_dropped(c);
	snprintf(reg.id, sizeof(reg.id), "%s", c->id);
	if (thps_policy_name_valid(c->policy))
		/* valid means at most THPS_OCI_NAME_MAX bytes: it fits */
		snprintf(reg.policy, sizeof(reg.policy), "%.*s", THPS_OCI_NAME_MAX, c->policy);
	else if (c->policy[0])
		log_warning("Container %s: annotation %s is not a policy name "
			    "([A-Za-z0-9_.-]{1,64}), ignoring it",
			    c->id, THPS_ANN_POLICY);
	if (thps_mode_normalize(c->mode))
		snprintf(reg.mode, sizeof(reg.mode), "%s", thps_mode_normalize(c->mode));
	else if (c->mode[0])
		log_warning("Container %s: annotation %s: expected observe or enforce, ignoring it",
			    c->id, THPS_ANN_MODE);
	r = find_cgroup(ctx, c, reg.cgroup, sizeof(reg.cgroup));
	if (r < 0)
		return r;
	if (c->pid > 0 && (r = thps_registration_set_pid(ctx, &reg, (pid_t)c->pid)) < 0) {
		log_warning_errno(r,
				  "Container %s: cannot read the start time of pid %u (%m), "
				  "registering without it",
				  c->id, c->pid);
		reg.pid = 0;
		reg.pid_start_time = 0;
	}
	gmtime_r(&now, &tm);
	strftime(reg.created, sizeof(reg.created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(reg.status, sizeof(reg.status), "%s", c->running ? "running" : "created");
	snprintf(reg.stage, sizeof(reg.stage), "%s", thps_oci_stage_to_string(stage));
	snprintf(reg.k8s_namespace, sizeof(reg.k8s_namespace), "%s", c->k8s_namespace);
	snprintf(reg.pod, sizeof(reg.pod), "%s", c->pod);
	snprintf(reg.pod_uid, sizeof(reg.pod_uid), "%s", c->pod_uid);
	snprintf(reg.container, sizeof(reg.container), "%s", c->container);
	reg.n_labels = c->n_labels;
	memcpy(reg.labels, c->labels, c->n_labels * sizeof(c->labels[0]));

	r = thps_registrations_dir_ensure(dir);
	if (r < 0)
		return log_error_errno(
		    r, "Container %s: cannot create '%s' (is thpshrinkd set up?): %m", c->id, dir);
	r = thps_registration_write(dir, &reg);
	if (r < 0)
		return log_error_errno(
		    r, "Container %s: failed to write its registration in '%s': %m", c->id, dir);
	log_info("Container %s: registered cgroup %s pod %s/%s container %s%s%s%s%s", c->id,
		 reg.cgroup, reg.k8s_namespace[0] ? reg.k8s_namespace : "-",
		 reg.pod[0] ? reg.pod : "-", reg.container[0] ? reg.container : "-",
		 reg.policy[0] ? " policy=" : "", reg.policy, reg.mode[0] ? " mode=" : "",
		 reg.mode);
	return 0;
}

int nri_unregister(const char *dir, const char *id)
{
	int r = thps_registration_remove(dir, id);

	if (r < 0)
		return log_error_errno(
		    r, "Container %s: failed to remove its registration in '%s': %m", id, dir);
	log_debug("Container %s: unregistered", id);
	return 0;
}
