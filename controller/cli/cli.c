/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The table of subcommands, in the order --help lists them. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "context.h"
#include "log.h"
#include "valid.h"

const struct thps_cli_command thps_cli_commands[] = {
    {"report", "scan THPs and print per-cgroup utilization and waste", thps_cli_report},
    {"probe", "what this kernel lets thpshrink do, and what follows", thps_cli_probe},
    {"reclaim", "give one cgroup's wasted THP memory back (memory.reclaim or split)",
     thps_cli_reclaim},
    {"promote", "collapse one cgroup's dense memory into THPs (MADV_COLLAPSE, no memory cost)",
     thps_cli_promote},
    {"validate", "check policy files as the daemon would load them", thps_cli_validate},
    {"explain", "show the daemon's last decision for a cgroup, and why", thps_cli_explain},
    {NULL, NULL, NULL},
};

int thps_cli_resolve_cgroup(const struct thps_ctx *ctx, const char *in, char *buf, size_t size)
{
	size_t n = strlen(ctx->cgroup_root);
	const char *p = in;
	char dir[PATH_MAX];
	struct stat st;
	int k;

	if (n && !strncmp(in, ctx->cgroup_root, n) && (in[n] == '/' || in[n] == 0))
		p = in + n;
	p += strspn(p, "/");
	k = snprintf(buf, size, "/%s", p);
	if (k < 0 || (size_t)k >= size || !thps_cgroup_path_safe(buf)) {
		log_error("--cgroup: '%s' is not a cgroup path below '%s'", in, ctx->cgroup_root);
		return -EINVAL;
	}
	while (k > 1 && buf[k - 1] == '/')
		buf[--k] = 0;
	if (thps_path(dir, sizeof(dir), ctx->cgroup_root, "%s", buf + 1) < 0 ||
	    stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		log_error("--cgroup: '%s' is no cgroup: '%s' is not a directory", in, dir);
		return -EINVAL;
	}
	return 0;
}
