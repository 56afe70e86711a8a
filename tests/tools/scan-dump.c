/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scan-dump: runs the scanner source once and prints what it found, for the scanner's own
 * integration test and benchmark (the user-facing CLI is `thpshrink report`).
 *
 *   scan-dump [--pid P] [--cgroup PATH] [--pagemap] [--ranges | --all-ranges]
 *             [--max-thps-per-sec N]
 *
 * Prints "bucket B thps N zero Z" for the total histogram, "cgroup PATH thps N partial P
 * unmapped_bytes U" per cgroup, "range pid P start A utilized U pages N pfn F" per low-util
 * THP with --ranges (every folio, any utilization, with --all-ranges: 70-node follows the
 * well-used ones to the end of a run), and one "summary ..." line. Never prints memory
 * contents. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "log.h"
#include "scanner.h"

int main(int argc, char **argv)
{
	static const struct option options[] = {{"pid", required_argument, NULL, 'p'},
						{"cgroup", required_argument, NULL, 'c'},
						{"pagemap", no_argument, NULL, 'm'},
						{"ranges", no_argument, NULL, 'r'},
						{"all-ranges", no_argument, NULL, 'a'},
						{"max-thps-per-sec", required_argument, NULL, 't'},
						{}};
	struct thps_scanner_hooks *hooks = NULL, pm_hooks = {0};
	struct thps_scan_opts opts = {0};
	struct thps_geometry g;
	struct thps_scan scan;
	struct thps_ctx ctx;
	uint64_t v;
	int c, r;

	thps_log_set_prefix("scan-dump");
	while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
		switch (c) {
		case 'p':
			if (parse_u64(optarg, &v) < 0 || v == 0 || v > INT32_MAX) {
				log_error("--pid: expected a process id, got '%s'", optarg);
				return 2;
			}
			opts.pid = (pid_t)v;
			break;
		case 'c':
			opts.cgroup = optarg;
			break;
		case 'm':
			hooks = &pm_hooks; /* process_vm_readv, pagemap reads only */
			break;
		case 'r':
			opts.record_ranges = true;
			break;
		case 'a':
			opts.record_ranges = true;
			opts.record_max_bucket = THPS_BUCKETS - 1;
			break;
		case 't':
			if (parse_u64(optarg, &opts.max_thps_per_sec) < 0) {
				log_error("--max-thps-per-sec: expected a number, got '%s'",
					  optarg);
				return 2;
			}
			break;
		default:
			return 2;
		}

	thps_ctx_init(&ctx);
	r = thps_geometry_load(&ctx, &g);
	if (r < 0) {
		log_error_errno(r, "Failed to read the THP geometry under '%s': %m", ctx.sys_root);
		return 1;
	}
	thps_scan_init(&scan, &g);
	r = thps_scanner_collect(&ctx, &opts, hooks, &scan);
	if (r < 0) {
		log_error_errno(r, "Scan failed: %m");
		thps_scan_free(&scan);
		return 1;
	}
	for (unsigned b = 0; b < THPS_BUCKETS; b++)
		printf("bucket %u thps %" PRIu64 " zero %" PRIu64 "\n", b, scan.total.hist.thps[b],
		       scan.total.hist.zero_subpages[b]);
	for (size_t i = 0; i < scan.n_cgroups; i++)
		printf("cgroup %s thps %" PRIu64 " partial %" PRIu64 " unmapped_bytes %" PRIu64
		       "\n",
		       scan.cgroups[i].path ? scan.cgroups[i].path : "?",
		       thps_hist_thps(&scan.cgroups[i].hist), scan.cgroups[i].partial_thps,
		       scan.cgroups[i].partial_unmapped_bytes);
	for (size_t i = 0; i < scan.n_ranges; i++)
		printf("range pid %d start 0x%" PRIx64 " utilized %u pages %u pfn 0x%" PRIx64 "\n",
		       (int)scan.ranges[i].pid, scan.ranges[i].start, scan.ranges[i].utilized,
		       thps_range_pages(&scan.ranges[i], &g), scan.ranges[i].pfn);
	printf("summary procs_scanned %" PRIu64 " procs_skipped %" PRIu64 " thps %" PRIu64
	       " shared %" PRIu64 " partial %" PRIu64 " bytes_read %" PRIu64 " wall_ns %" PRIu64
	       " cpu_ns %" PRIu64 " throttled_ns %" PRIu64 " method %s\n",
	       scan.summary.procs_scanned, scan.summary.procs_skipped, scan.summary.thps_scanned,
	       scan.summary.thps_shared, scan.total.partial_thps, scan.summary.bytes_read,
	       scan.summary.wall_ns, scan.summary.cpu_ns, scan.summary.throttled_ns,
	       scan.summary.method ? scan.summary.method : "-");
	thps_scan_free(&scan);
	return 0;
}
