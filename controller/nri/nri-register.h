/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What thpshrink-nri does with a container NRI tells it about: the registration file the OCI
 * hook would write (registrations.h), with the pod's Kubernetes identity added. Every failure
 * is logged here, once, and returned; the caller answers the runtime all the same. */
#pragma once
#include "context.h"
#include "nri.h"
#include "valid.h"

/* Writes <dir>/<id>.json for c at stage (createContainer or startContainer). The cgroup comes
 * from /proc/<pid>/cgroup when c has a live pid, else from its cgroups path. Returns 0 or
 * -errno (logged). */
int nri_register(const struct thps_ctx *ctx, const char *dir, const struct thps_nri_container *c,
		 enum thps_oci_stage stage);

/* Removes <dir>/<id>.json (absent is fine). Returns 0 or -errno (logged). */
int nri_unregister(const char *dir, const char *id);
