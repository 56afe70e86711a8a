/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink-split-reuse: drives the split actuator with ranges recorded earlier, for the VM's
 * pid-reuse test (tests/vm/scenarios/50-faults.sh).
 *
 *   thpshrink-split-reuse record PID FILE   scans PID, writes its low-util THP ranges to FILE
 *                                           ("pid starttime start pfn ino utilized" lines)
 *   thpshrink-split-reuse split FILE CGROUP runs the split actuator on FILE's ranges (CGROUP:
 *                                           the cgroup to measure, relative to the mount) and
 *                                           prints "ranges=N split=S skipped=K failed=F acted=A"
 *                                           and the actuator's note. Never prints memory. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actuator.h"
#include "cgroups.h"
#include "context.h"
#include "fileio.h"
#include "log.h"
#include "scanner/scanner.h"

#define MAX_RANGES 4096

static int record(const struct thps_ctx *ctx, pid_t pid, const char *file)
{
	struct thps_scan_opts opts = { .pid = pid, .record_ranges = true };
	struct thps_geometry g;
	struct thps_scan scan;
	FILE *f;
	int r;

	if (thps_geometry_load(ctx, &g) < 0)
		thps_geometry_default(&g);
	thps_scan_init(&scan, &g);
	r = thps_scanner_collect(ctx, &opts, NULL, &scan);
	if (r < 0) {
		thps_scan_free(&scan);
		return log_error_errno(r, "Scan of pid %d failed: %m", (int)pid);
	}
	f = fopen(file, "we");
	if (!f) {
		thps_scan_free(&scan);
		return log_error_errno(-errno, "Cannot write '%s': %m", file);
	}
	for (size_t i = 0; i < scan.n_ranges; i++) {
		const struct thps_thp_range *t = &scan.ranges[i];
		fprintf(f, "%d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu32 "\n", (int)t->pid,
			t->pid_starttime, t->start, t->pfn, t->ino, t->utilized);
	}
	fclose(f);
	printf("recorded %zu ranges of pid %d\n", scan.n_ranges, (int)pid);
	thps_scan_free(&scan);
	return 0;
}

static int split(const struct thps_ctx *ctx, const char *file, const char *cgroup)
{
	static struct thps_thp_range ranges[MAX_RANGES];
	struct thps_act_result res;
	struct thps_geometry g;
	struct thps_act_request req;
	size_t n = 0;
	FILE *f = fopen(file, "re");
	int pid, r;

	if (!f)
		return log_error_errno(-errno, "Cannot read '%s': %m", file);
	while (n < MAX_RANGES) {
		struct thps_thp_range *t = &ranges[n];
		if (fscanf(f, "%d %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu32, &pid,
			   &t->pid_starttime, &t->start, &t->pfn, &t->ino, &t->utilized) != 6)
			break;
		t->pid = pid;
		n++;
	}
	fclose(f);
	if (thps_geometry_load(ctx, &g) < 0)
		thps_geometry_default(&g);
	/* What the actuator's re-check says of each range, for the log. */
	for (size_t i = 0; i < n; i++) {
		char why[256] = "";
		uint32_t used = 0;
		int k = thps_thp_recheck(ctx, &g, &ranges[i], 0, &used, why, sizeof(why));

		fprintf(stderr, "recheck 0x%" PRIx64 ": %d %s\n", ranges[i].start, k, why);
	}
	req = (struct thps_act_request){ .cgroup = cgroup, .geom = &g, .ranges = ranges, .n_ranges = n };
	r = thps_actuator_split.act(ctx, &req, &res);
	if (r < 0)
		return log_error_errno(r, "The split actuator failed: %m");
	printf("ranges=%zu split=%" PRIu64 " skipped=%" PRIu64 " failed=%" PRIu64 " acted=%d\nnote: %s\n", n,
	       res.ranges_split, res.ranges_skipped, res.ranges_failed, res.acted, res.note);
	return 0;
}

int main(int argc, char **argv)
{
	struct thps_ctx ctx;
	uint64_t v;

	thps_log_set_prefix("thpshrink-split-reuse");
	thps_ctx_init(&ctx);
	if (thps_cgroups_find_mount(&ctx) < 0)
		ctx.cgroup_version = 0;
	if (argc == 4 && !strcmp(argv[1], "record") && parse_u64(argv[2], &v) == 0 && v > 0)
		return record(&ctx, (pid_t)v, argv[3]) < 0 ? 1 : 0;
	if (argc == 4 && !strcmp(argv[1], "split"))
		return split(&ctx, argv[2], argv[3]) < 0 ? 1 : 0;
	fprintf(stderr, "usage: thpshrink-split-reuse record PID FILE | split FILE CGROUP\n");
	return 2;
}
