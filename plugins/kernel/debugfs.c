/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Source "debugfs": the RFC kernel's own utilization histogram, machine-wide, from
 * <debugfs>/thp_utilization. Only the patched kernel has the file; it is refreshed at the
 * end of each full pass over physical memory, so it lags the scanner by one pass. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "kernel.h"
#include "macro.h"

static int utilization_path(const struct thps_ctx *ctx, char *path, size_t size)
{
	return thps_path(path, size, ctx->debugfs_root, "thp_utilization");
}

static int debugfs_probe(const struct thps_ctx *ctx, char *why, size_t why_size)
{
	char path[PATH_MAX];
	struct stat st;
	int r;

	r = utilization_path(ctx, path, sizeof(path));
	if (r < 0)
		return r;
	if (stat(path, &st) < 0) {
		if (errno != ENOENT)
			return negative_errno();
		if (!dir_has_entries(ctx->debugfs_root))
			snprintf(why, why_size, "not usable: debugfs is not mounted at '%s'",
				 ctx->debugfs_root);
		else
			snprintf(why, why_size,
				 "not usable: this kernel lacks the RFC's thp_utilization "
				 "(only the patched kernel has it)");
		return 0;
	}
	snprintf(why, why_size, "'%s' present", path);
	return 1;
}

static int debugfs_collect(const struct thps_ctx *ctx, const struct thps_scan_opts *opts,
			   struct thps_scan *scan)
{
	struct thps_hist h;
	double t, d;
	int r, line;

	r = thps_thp_utilization_read(ctx, &h, &t, &d, &line);
	if (r < 0)
		return r;
	scan->have_kernel_hist = true;
	scan->kernel_hist = h;
	scan->kernel_last_scan_time = t;
	scan->kernel_last_scan_duration = d;
	return 0;
}

const struct thps_source_ops thps_source_debugfs = {
    .name = "debugfs",
    .description = "the RFC kernel's machine-wide histogram from debugfs thp_utilization",
    .probe = debugfs_probe,
    .collect = debugfs_collect,
};
