/* SPDX-License-Identifier: GPL-2.0-or-later */
/* OCI runtime integration: the pure parts of the hook (state JSON, cgroupsPath forms). No I/O
 * here, so the fuzz target and the unit tests call them directly. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "valid.h"

#define THPS_OCI_STATE_MAX  (64 * 1024)	  /* a state JSON larger than this is refused */
#define THPS_OCI_CONFIG_MAX (1024 * 1024) /* a bundle's config.json larger than this is refused */

struct thps_oci_state {
	char oci_version[32];
	char id[THPS_OCI_ID_MAX + 1];
	char status[32]; /* creating | created | running | stopped */
	pid_t pid;	 /* 0 if absent (e.g. poststop) */
	char *bundle;	 /* malloc'd, NULL if absent */
	char *policy;	 /* annotation io.thpshrink.policy as given (maybe invalid), or NULL */
	char *mode;	 /* annotation io.thpshrink.mode as given (maybe invalid), or NULL */
	bool policy_refused, mode_refused; /* that annotation held a NUL or control character */
	/* the io.kubernetes.* annotations (valid.h), as given, or NULL */
	char *k8s_namespace, *pod, *pod_uid, *container;
	bool k8s_refused; /* one of them held a NUL or control character (it is NULL) */
};

/* Whether s[0..len) is free of NULs and control characters (C0 and DEL). */
bool thps_oci_value_clean(const char *s, size_t len);

void thps_oci_state_free(struct thps_oci_state *s);

/* Parses the OCI state (runtime-spec "state") from buf. Requires ociVersion and a valid id;
 * status, pid, bundle and annotations are optional; an annotation value with a NUL or a
 * control character is dropped and flagged (policy_refused, mode_refused), never cut. Returns 0,
 * -EBADMSG (malformed JSON, wrong types), -EFBIG (too large), -EINVAL (missing or invalid id). */
int thps_oci_state_parse(const char *buf, size_t len, struct thps_oci_state *ret);

/* Expands a systemd slice name to its hierarchy: "a-b-c.slice" → "a.slice/a-b.slice/a-b-c.slice",
 * "-.slice" → "" (the root). Returns 0, -EINVAL for a malformed name, -ENAMETOOLONG. */
int thps_systemd_slice_expand(const char *slice, char *buf, size_t size);

/* Resolves linux.cgroupsPath to a path below the cgroup2 root:
 *  "/a/b"               → "/a/b"
 *  "a/b" (relative)     → "<base>/a/b" (base: the runtime's own cgroup, "/" if unknown)
 *  "slice:prefix:name"  → "/<slice expanded>/<prefix>-<name>.scope" (runc/crun systemd driver;
 *                         empty slice → system.slice, empty prefix → "<name>.scope",
 *                         a name ending in ".slice" is itself the unit)
 * Returns 0, -ENODATA for an empty cgroupsPath, -EINVAL when malformed, -ENAMETOOLONG. */
int thps_oci_cgroups_path_resolve(const char *cgroups_path, const char *base, char *buf,
				  size_t size);

/* Finds linux.cgroupsPath in a bundle's config.json text. Returns 0 with a malloc'd string,
 * -ENODATA when absent, -EBADMSG/-EFBIG for a bad document. */
int thps_oci_config_cgroups_path(const char *buf, size_t len, char **ret);
