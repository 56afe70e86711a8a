/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pass-bench: the CPU cost of one whole-machine scanner pass, next to the same pass looking
 * every present PTE-mapped page up in /proc/kpageflags (the scanner before folios.h), in the
 * same run, alternating. Also says whether both found the same THPs and partial THPs.
 *
 *   pass-bench [ROUNDS]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fileio.h"
#include "scanner.h"

static uint64_t cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

struct result {
	uint64_t cpu, thps, partial, unmapped, procs;
};

static int pass(const struct thps_ctx *ctx, const struct thps_geometry *g, int every_page,
		struct result *ret)
{
	struct thps_scanner_hooks hooks = {.use_pagemap_scan = 1, .every_page = every_page};
	struct thps_scan_opts opts = {0};
	struct thps_scan scan;
	uint64_t t0;
	int r;

	thps_scan_init(&scan, g);
	t0 = cpu_ns();
	r = thps_scanner_collect(ctx, &opts, &hooks, &scan);
	ret->cpu = cpu_ns() - t0;
	ret->thps = thps_hist_thps(&scan.total.hist);
	ret->partial = scan.total.partial_thps;
	ret->unmapped = scan.total.partial_unmapped_bytes;
	ret->procs = scan.summary.procs_scanned;
	thps_scan_free(&scan);
	return r;
}

int main(int argc, char **argv)
{
	struct result best[2] = {{.cpu = UINT64_MAX}, {.cpu = UINT64_MAX}}, last[2];
	struct thps_geometry g;
	struct thps_ctx ctx;
	uint64_t rounds = 3;
	unsigned same = 0;
	int r;

	if (argc > 1 && (parse_u64(argv[1], &rounds) < 0 || rounds == 0 || rounds > 100)) {
		fprintf(stderr, "usage: pass-bench [ROUNDS]\n");
		return 2;
	}
	thps_ctx_init(&ctx);
	r = thps_geometry_load(&ctx, &g);
	if (r < 0) {
		fprintf(stderr, "pass-bench: THP geometry: %s\n", strerror(-r));
		return 1;
	}
	for (uint64_t i = 0; i < rounds; i++) {
		for (int e = 1; e >= 0; e--) {
			r = pass(&ctx, &g, e, &last[e]);
			if (r < 0) {
				fprintf(stderr, "pass-bench: scan: %s\n", strerror(-r));
				return 1;
			}
			if (last[e].cpu < best[e].cpu)
				best[e] = last[e];
		}
		same += last[0].thps == last[1].thps && last[0].partial == last[1].partial &&
			last[0].unmapped == last[1].unmapped;
	}
	for (int e = 1; e >= 0; e--)
		printf("%-44s %7.3f s CPU  (%" PRIu64 " processes, %" PRIu64
		       " THPs, %" PRIu64 " partial THPs, %" PRIu64 " KiB unmapped)\n",
		       e ? "pass, every PTE-mapped page in kpageflags:"
			 : "pass, aligned pages only (folios.h):",
		       best[e].cpu / 1e9, best[e].procs, best[e].thps, best[e].partial,
		       best[e].unmapped >> 10);
	printf("speed-up %.1fx; same THPs and partial THPs in %u of %" PRIu64
	       " back-to-back pairs (a busy machine may change between two passes)\n",
	       (double)best[1].cpu / best[0].cpu, same, rounds);
	return 0;
}
