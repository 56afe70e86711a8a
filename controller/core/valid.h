/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Names thpshrink accepts from outside (container ids, policy names, modes, OCI hook stages,
 * cgroup paths): one definition each, shared by the hook, the registrations, the policies
 * and the CLI. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define THPS_OCI_ID_MAX	     128
#define THPS_OCI_NAME_MAX    64
#define THPS_CGROUP_PATH_MAX 1024

/* The annotations a container may carry. */
#define THPS_ANN_POLICY "io.thpshrink.policy"
#define THPS_ANN_MODE	"io.thpshrink.mode"
/* What CRI-O (and podman, where given) puts in a Kubernetes container's OCI annotations. */
#define THPS_ANN_K8S_NAMESPACE "io.kubernetes.pod.namespace"
#define THPS_ANN_K8S_POD       "io.kubernetes.pod.name"
#define THPS_ANN_K8S_POD_UID   "io.kubernetes.pod.uid"
#define THPS_ANN_K8S_CONTAINER "io.kubernetes.container.name"

enum thps_oci_stage {
	THPS_OCI_STAGE_NONE,
	THPS_OCI_STAGE_CREATE_RUNTIME,
	THPS_OCI_STAGE_CREATE_CONTAINER,
	THPS_OCI_STAGE_START_CONTAINER,
	THPS_OCI_STAGE_POSTSTART,
	THPS_OCI_STAGE_POSTSTOP,
};

/* 1 if c is in [A-Za-z0-9_.-] (with glob also '*' and '?'). */
bool thps_name_char_valid(char c, bool glob);
/* 1 if s is [A-Za-z0-9_.-]{1,max} (with glob also '*' and '?'), not "." nor "..". */
bool thps_name_valid(const char *s, size_t max, bool glob);
/* 1 if s is an OCI container id we accept: [A-Za-z0-9_.-]{1,128}, not "." or "..". */
bool thps_oci_id_valid(const char *s);
/* 1 if s is a policy NAME: [A-Za-z0-9_.-]{1,64}, not "." or "..", never a path. */
bool thps_policy_name_valid(const char *s);
/* Returns "observe"/"enforce" for a valid mode, NULL otherwise. */
const char *thps_mode_normalize(const char *s);

/* The stage named on the command line (createRuntime, poststart, …), or NONE. */
enum thps_oci_stage thps_oci_stage_from_string(const char *s);
/* The stage implied by a state's status when argv names none. */
enum thps_oci_stage thps_oci_stage_from_status(const char *status);
const char *thps_oci_stage_to_string(enum thps_oci_stage st);

/* 1 if p is a cgroup path relative to the mount that is safe to join to it: starts with '/',
 * no ".." component. Names may hold any other byte (the kernel allows them). */
bool thps_cgroup_path_safe(const char *p);
/* 1 if p is a cgroup path we store: starts with '/', no "." or ".." component, no "//",
 * printable ASCII without spaces-like controls, shorter than THPS_CGROUP_PATH_MAX. */
bool thps_cgroup_path_valid(const char *p);

/* Kubernetes names a runtime tells (NRI), bounded as the API server bounds them. */
#define THPS_K8S_LABEL_MAX     63  /* a namespace or container name (DNS label), a label value */
#define THPS_K8S_SUBDOMAIN_MAX 253 /* a pod name (DNS subdomain) */
#define THPS_K8S_LABEL_KEY_MAX 127 /* a label key we keep ([prefix/]name; the API allows 317) */
/* 1 if s is a DNS label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 bytes. */
bool thps_k8s_dns_label_valid(const char *s);
/* 1 if s is a DNS subdomain: dot-separated DNS labels, at most 253 bytes. */
bool thps_k8s_subdomain_valid(const char *s);
/* 1 if s is a label key we keep: [A-Za-z0-9_./-]{1,127} starting and ending alphanumeric. */
bool thps_k8s_label_key_valid(const char *s);
/* 1 if s is a label value: empty, or [A-Za-z0-9_.-]{1,63} starting and ending alphanumeric. */
bool thps_k8s_label_value_valid(const char *s);
