/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the text and JSON reports share: their options, the one-line state of each source,
 * and the order in which cgroups are shown. The formatters are pure functions of a
 * struct thps_scan and these options, so tests compare them with golden files. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "context.h"
#include "plugin.h"
#include "scan.h"

#define THPS_REPORT_REASON_MAX 256

struct thps_registration_list;

/* One source's answer to probe(), as the report shows it. */
struct thps_source_status {
	const char *name; /* static, from the plugin table */
	bool usable;
	char reason[THPS_REPORT_REASON_MAX]; /* why not usable; "" when usable */
};

struct thps_report_opts {
	unsigned lowutil_max_bucket; /* the cut the scan used (thps_scan_finish) */
	const char *thp_mode;	     /* "madvise" (the bracketed word), or NULL if unknown */
	const char *mthp_modes;	     /* "16kB never, 64kB always": the sizes below the PMD
				      * size, set when one is enabled; NULL: none or all "never" */
	pid_t pid;		     /* filter the scan used, 0 = none */
	const char *cgroup;	     /* filter the scan used, NULL = none */
	const struct thps_source_status *sources;
	size_t n_sources;
	/* registrations: a cgroup's names (namespace, pod, container, labels) in the JSON
	 * "identity"; NULL = none read */
	const struct thps_registration_list *regs;
};

/* Asks every source of the NULL-terminated table whether it is usable here. A probe that fails
 * with -errno counts as not usable, with the error as the reason. Fills at most max entries.
 * Returns how many were filled. */
size_t thps_report_probe_sources(const struct thps_ctx *ctx,
				 const struct thps_source_ops *const *sources,
				 struct thps_source_status *ret, size_t max);

/* True if the cgroup has anything worth a table: THPs or partially mapped THPs. */
bool thps_report_cgroup_shown(const struct thps_cgroup_stats *c);

/* Pointers to the shown cgroups of scan, biggest waste (low-util + partial) first, then by
 * path: the order of thps_scan_sort(), without touching the const scan.
 * Returns the count (0 with *ret NULL when none), or -ENOMEM. */
ssize_t thps_report_order(const struct thps_scan *scan, const struct thps_cgroup_stats ***ret);
