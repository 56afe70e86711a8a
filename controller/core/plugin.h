/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Plugins: const tables of operations, listed in one static table each (plugins/registry.c).
 * No dlopen. */
#pragma once
#include <stddef.h>

#include "context.h"
#include "scan.h"

struct thps_source_ops {
	const char *name;
	const char *description;
	/* Returns 1 if usable here, 0 if not (why says why, for the operator), or -errno. */
	int (*probe)(const struct thps_ctx *ctx, char *why, size_t why_size);
	/* Adds this source's figures to scan. Returns 0 or -errno (the caller logs). */
	int (*collect)(const struct thps_ctx *ctx, const struct thps_scan_opts *opts,
		       struct thps_scan *scan);
};

/* NULL-terminated; defined in plugins/registry.c. */
extern const struct thps_source_ops *const thps_sources[];
const struct thps_source_ops *thps_source_find(const char *name);
