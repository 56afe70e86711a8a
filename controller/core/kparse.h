/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure parsers of the kernel's own THP figures: the RFC's debugfs thp_utilization and the
 * /proc/vmstat and per-cgroup memory counters. The sources using them are plugins/kernel. */
#pragma once
#include <stdint.h>

#include "context.h"
#include "scan.h"
#include "thp.h"

/* Largest thp_utilization we accept: 12 short lines (about 400 bytes in practice). */
#define THPS_THP_UTILIZATION_MAX 4096

/* Parses the RFC's debugfs thp_utilization exactly as patch 002 prints it: ten lines
 * "Utilized[LO-HI]: THPS ZERO_PAGES" with contiguous labels from 0 (the RFC's labels, as
 * printed), then "Last Scan Time: S.CC" and "Last Scan Duration: S.CC".
 * Returns 0 (ret, scan_time, duration filled), or -EINVAL with *ret_bad_line set to the
 * 1-based line that is wrong or missing (13 for trailing lines). */
int thps_parse_thp_utilization(const char *text, struct thps_hist *ret, double *scan_time,
			       double *duration, int *ret_bad_line);

/* Reads and parses <debugfs_root>/thp_utilization. Returns 0, -ENOENT when absent (not the
 * RFC kernel, or debugfs not mounted), -EINVAL with *ret_bad_line set, or -errno. */
int thps_thp_utilization_read(const struct thps_ctx *ctx, struct thps_hist *ret, double *scan_time,
			      double *duration, int *ret_bad_line);

/* Fills every counter of struct thps_vmstat from /proc/vmstat text; an absent counter is
 * UINT64_MAX. Returns 0, or -EINVAL when a known counter's value is not a number. */
int thps_parse_vmstat(const char *text, struct thps_vmstat *ret);
/* Largest /proc/vmstat we accept (about 10 KiB in practice). */
#define THPS_VMSTAT_MAX (64 * 1024)
/* Reads and parses <proc_root>/vmstat. Returns 0 or -errno (-EINVAL: a bad value). */
int thps_vmstat_read(const struct thps_ctx *ctx, struct thps_vmstat *ret);

/* THP bytes of a cgroup from its memory.stat: "anon_thp" (v2), or on v1 "total_rss_huge"
 * (hierarchical like memory.usage_in_bytes), falling back to "rss_huge".
 * Returns 0, -ENOENT when absent, -EINVAL on a bad value. */
int thps_parse_memstat_thp(const char *text, int cgroup_version, uint64_t *ret);
