/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink probe: what this kernel lets thpshrink do, and what follows for the operator. */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "alive.h"
#include "cli.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "probe-measure.h"
#include "probe-scratch.h"
#include "probe.h"

static void probe_usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: thpshrink probe [--json] [--write-test] [--measure|--no-measure]\n"
	    "       thpshrink probe --daemon-alive [--state-dir DIR] [--max-age SECONDS]\n\n"
	    "Reports the kernel's THP and cgroup capabilities and what follows for thpshrink.\n\n"
	    "  --json        machine-readable output (schemas/probe.schema.json)\n"
	    "  --write-test  decide memory.reclaim's swappiness= key by writing\n"
	    "                '0 swappiness=60' (asks for nothing) to the v2 root's\n"
	    "                memory.reclaim; without it the answer is inferred from the\n"
	    "                kernel version. For test VMs and hosts you own.\n"
	    "  --measure     measure what a split (debugfs, process_madvise MADV_COLD) and\n"
	    "                memory.reclaim free on canary memory of the probe's own, and\n"
	    "                which split mechanism each folio size will use, even without a\n"
	    "                scratch cgroup (by the canary's RSS and /proc/kpageflags); by\n"
	    "                default it measures only where cgroup v2 has the memory\n"
	    "                controller (a scratch cgroup, removed afterwards)\n"
	    "  --no-measure  infer only, measure nothing\n"
	    "  --daemon-alive  instead: exit 0 if thpshrinkd's loop is alive, i.e. it rewrote\n"
	    "                DIR/status.json within SECONDS, else 1. A liveness probe\n"
	    "                that needs no connection to the daemon.\n"
	    "  --state-dir DIR  the daemon's state directory (default " RUNSTATEDIR "/thpshrink)\n"
	    "  --max-age SECONDS  the oldest status.json that counts as alive (default %d;\n"
	    "                the daemon rewrites it every %d s)\n",
	    THPS_ALIVE_MAX_AGE_DEFAULT, THPS_HEARTBEAT_SEC);
}

static int daemon_alive(const char *state_dir, uint64_t max_age)
{
	uint64_t age;
	int r = thps_status_age(state_dir, &age);

	if (r < 0) {
		log_error_errno(r, "thpshrinkd is not alive: cannot stat '%s/status.json': %m",
				state_dir);
		return 1;
	}
	if (age > max_age) {
		log_error("thpshrinkd is not alive: '%s/status.json' was last written %" PRIu64
			  " s ago (more than %" PRIu64 " s)",
			  state_dir, age, max_age);
		return 1;
	}
	printf("thpshrinkd alive: '%s/status.json' written %" PRIu64 " s ago\n", state_dir, age);
	return 0;
}

struct probe_args {
	unsigned flags;
	const char *state_dir;
	uint64_t max_age;
	bool json, alive;
	int measure; /* 1 force, -1 never, 0 where a scratch cgroup can be had */
};

/* Returns -1 to go on, or the exit status (help, usage error). */
static int probe_parse(int argc, char **argv, struct probe_args *a)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"write-test", no_argument, NULL, 'w'},
	    {"measure", no_argument, NULL, 'm'},
	    {"no-measure", no_argument, NULL, 'M'},
	    {"daemon-alive", no_argument, NULL, 'a'},
	    {"state-dir", required_argument, NULL, 's'},
	    {"max-age", required_argument, NULL, 'A'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c;

	*a = (struct probe_args){.state_dir = RUNSTATEDIR "/thpshrink",
				 .max_age = THPS_ALIVE_MAX_AGE_DEFAULT};
	optind = 1;
	while ((c = getopt_long(argc, argv, "jwhmM", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			a->measure = 1;
			break;
		case 'M':
			a->measure = -1;
			break;
		case 'j':
			a->json = true;
			break;
		case 'w':
			a->flags |= THPS_PROBE_WRITE_TEST;
			break;
		case 'a':
			a->alive = true;
			break;
		case 's':
			a->state_dir = optarg;
			break;
		case 'A':
			if (parse_u64(optarg, &a->max_age) < 0 || a->max_age == 0) {
				log_error(
				    "probe: --max-age '%s': expected whole seconds, at least 1",
				    optarg);
				return 2;
			}
			break;
		case 'h':
			probe_usage(stdout);
			return 0;
		default:
			probe_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		log_error("probe: unexpected argument '%s'", argv[optind]);
		return 2;
	}
	return -1;
}

/* Measures on canary memory and lets it decide over the inferred facts; NULL when nothing was
 * measured (or no memory). */
static struct thps_measure *probe_measure(const struct thps_ctx *ctx, struct thps_probe *p,
					  int measure)
{
	struct thps_measure *m;
	struct thps_geometry g;
	int r;

	/* a probe killed mid-measure left its scratch cgroup (and maybe a canary) */
	r = thps_probe_scratch_clean(ctx);
	if (r < 0)
		log_warning_errno(r, "Failed to remove a stale probe scratch cgroup, ignoring: %m");
	else if (r > 0)
		log_info("Removed %d stale probe scratch cgroups", r);
	m = calloc(1, sizeof(*m));
	if (m && thps_geometry_load(ctx, &g) == 0 &&
	    thps_probe_measure(ctx, &g, measure > 0, m) == 0)
		thps_probe_apply_measure(p, m);
	return m;
}

/* Returns 0, or -ENOMEM (logged). */
static int probe_print_json(const struct thps_probe *p, const struct thps_measure *m)
{
	json_object *o = thps_probe_to_json(p);

	if (o && m) {
		json_object *x = thps_measure_to_json(m);
		if (x)
			json_object_object_add(o, "measured", x);
	}
	if (!o)
		return log_error_errno(-ENOMEM, "Failed to format the probe as JSON: %m");
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						   JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return 0;
}

int thps_cli_probe(int argc, char **argv)
{
	_cleanup_free_ struct thps_probe *p = NULL;
	_cleanup_free_ struct thps_measure *m = NULL;
	struct probe_args a;
	struct thps_ctx ctx;
	int r;

	r = probe_parse(argc, argv, &a);
	if (r >= 0)
		return r;
	if (a.alive)
		return daemon_alive(a.state_dir, a.max_age);
	thps_ctx_init(&ctx);
	p = malloc(sizeof(*p));
	r = p ? thps_probe_run(&ctx, a.flags, p) : -ENOMEM;
	if (r < 0) {
		log_error_errno(r, "Failed to probe the kernel: %m");
		return 1;
	}
	if (a.measure >= 0)
		m = probe_measure(&ctx, p, a.measure);
	if (a.json) {
		if (probe_print_json(p, m) < 0)
			return 1;
	} else {
		thps_probe_print(stdout, p);
		if (m)
			thps_measure_print(stdout, m);
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
