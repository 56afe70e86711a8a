/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thps-promote-admit PID: thps_promote_pid() with an admit hook that holds back every second
 * range it is asked about (the daemon's per-range backoff codes against this hook); prints
 * "admit: asked=N held_back=N collapsed=N found=N" for promote-safety-host.sh. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "context.h"
#include "promote.h"
#include "thp.h"

static unsigned long long asked;

static bool every_second(void *userdata, pid_t pid, uint64_t starttime, uint64_t addr)
{
	(void)userdata, (void)pid, (void)starttime, (void)addr;
	return asked++ % 2 == 0;
}

int main(int argc, char **argv)
{
	struct thps_ctx ctx;
	struct thps_geometry g;
	struct thps_promote_result res = {};
	struct thps_promote_opts opts = {.use_scan = true,
					 .fallback_budget = UINT64_C(64) << 30,
					 .verify = true,
					 .admit = every_second};
	int r;

	if (argc != 2 || atoi(argv[1]) <= 0) {
		fprintf(stderr, "usage: thps-promote-admit PID\n");
		return 2;
	}
	thps_ctx_init(&ctx);
	r = thps_geometry_load(&ctx, &g);
	if (r >= 0)
		r = thps_promote_pid(&ctx, &g, (pid_t)atoi(argv[1]), &opts, &res);
	if (r < 0) {
		fprintf(stderr, "thps-promote-admit: error %d\n", r);
		return 1;
	}
	printf("admit: asked=%llu held_back=%llu collapsed=%llu found=%llu\n", asked,
	       (unsigned long long)res.ranges_held_back, (unsigned long long)res.ranges_collapsed,
	       (unsigned long long)res.ranges_found);
	return 0;
}
