/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ksrc-dump: runs the scanner source (to find the cgroups of the scanned processes), then the
 * kernel sources vmstat and debugfs, and prints what they filled in, for the host and VM
 * tests of those sources (the user-facing CLI is `thpshrink report`).
 *
 *   ksrc-dump [--pid P]
 *
 * Prints "vmstat KEY VALUE" ("absent" when the kernel lacks the counter), one
 * "cgroup PATH memstat 0|1 current BYTES anon_thp BYTES" per cgroup, "debugfs usable|unusable
 * WHY", and with a histogram "kernel_bucket B thps N zero Z" and "kernel_scan TIME DURATION". */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "log.h"
#include "plugin.h"

static void show(const char *key, uint64_t v)
{
	if (v == UINT64_MAX)
		printf("vmstat %s absent\n", key);
	else
		printf("vmstat %s %" PRIu64 "\n", key, v);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {{"pid", required_argument, NULL, 'p'}, {}};
	const struct thps_source_ops *scanner, *vmstat, *debugfs;
	struct thps_scan_opts opts = {0};
	struct thps_geometry g;
	struct thps_scan scan;
	struct thps_ctx ctx;
	char why[512];
	uint64_t v;
	int c, r, rc = 0;

	thps_log_set_prefix("ksrc-dump");
	while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
		if (c != 'p' || parse_u64(optarg, &v) < 0 || v == 0 || v > INT32_MAX) {
			log_error("usage: ksrc-dump [--pid P]");
			return 2;
		}
		opts.pid = (pid_t)v;
	}
	scanner = thps_source_find("scanner");
	vmstat = thps_source_find("vmstat");
	debugfs = thps_source_find("debugfs");
	if (!scanner || !vmstat || !debugfs) {
		log_error("a source is missing from the plugin table");
		return 1;
	}
	thps_ctx_init(&ctx);
	r = thps_geometry_load(&ctx, &g);
	if (r < 0)
		return log_error_errno(r, "Failed to read the THP geometry: %m"), 1;
	thps_scan_init(&scan, &g);
	r = scanner->collect(&ctx, &opts, &scan);
	if (r < 0)
		log_warning_errno(r, "Scanner source failed, cgroups unknown: %m");
	r = vmstat->collect(&ctx, &opts, &scan);
	if (r < 0) {
		log_error_errno(r, "vmstat source failed: %m");
		rc = 1;
	}
	show("thp_split_page", scan.vmstat.thp_split_page);
	show("thp_split_page_failed", scan.vmstat.thp_split_page_failed);
	show("thp_deferred_split_page", scan.vmstat.thp_deferred_split_page);
	show("thp_underused_split_page", scan.vmstat.thp_underused_split_page);
	show("thp_split_pmd", scan.vmstat.thp_split_pmd);
	show("thp_collapse_alloc", scan.vmstat.thp_collapse_alloc);
	show("thp_split_free", scan.vmstat.thp_split_free);
	show("thp_split_unmap", scan.vmstat.thp_split_unmap);
	for (size_t i = 0; i < scan.n_cgroups; i++) {
		const struct thps_cgroup_stats *cg = &scan.cgroups[i];

		printf("cgroup %s memstat %d current %" PRIu64 " anon_thp %" PRIu64 "\n",
		       cg->path ? cg->path : "?", cg->have_memstat, cg->memory_current,
		       cg->anon_thp_bytes);
	}
	r = debugfs->probe(&ctx, why, sizeof(why));
	printf("debugfs %s %s\n", r > 0 ? "usable" : "unusable", r >= 0 ? why : strerror(-r));
	if (r > 0) {
		r = debugfs->collect(&ctx, &opts, &scan);
		if (r < 0) {
			log_error_errno(r, "debugfs source failed: %m");
			rc = 1;
		}
		for (unsigned b = 0; scan.have_kernel_hist && b < THPS_BUCKETS; b++)
			printf("kernel_bucket %u thps %" PRIu64 " zero %" PRIu64 "\n", b,
			       scan.kernel_hist.thps[b], scan.kernel_hist.zero_subpages[b]);
		if (scan.have_kernel_hist)
			printf("kernel_scan %.2f %.2f\n", scan.kernel_last_scan_time,
			       scan.kernel_last_scan_duration);
	}
	thps_scan_free(&scan);
	return rc;
}
