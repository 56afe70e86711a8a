/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "context.h"

static void set_root(char *dst, const char *env, const char *fallback)
{
	const char *v = getenv(env);

	snprintf(dst, PATH_MAX, "%s", v && *v ? v : fallback);
}

void thps_ctx_init(struct thps_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	set_root(ctx->proc_root, "THPSHRINK_PROC_ROOT", "/proc");
	set_root(ctx->sys_root, "THPSHRINK_SYS_ROOT", "/sys");
	set_root(ctx->cgroup_root, "THPSHRINK_CGROUP_ROOT", "");
	set_root(ctx->debugfs_root, "THPSHRINK_DEBUGFS_ROOT", "/sys/kernel/debug");
}

void thps_ctx_init_tree(struct thps_ctx *ctx, const char *base, const char *cgroup_dir)
{
	memset(ctx, 0, sizeof(*ctx));
	snprintf(ctx->proc_root, PATH_MAX, "%s/proc", base);
	snprintf(ctx->sys_root, PATH_MAX, "%s/sys", base);
	snprintf(ctx->cgroup_root, PATH_MAX, "%s/%s", base, cgroup_dir);
	snprintf(ctx->debugfs_root, PATH_MAX, "%s/debug", base);
}

int thps_path(char *buf, size_t size, const char *root, const char *fmt, ...)
{
	va_list ap;
	int n, m;

	n = snprintf(buf, size, "%s/", root);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, size - n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)(n + m) >= size)
		return -ENAMETOOLONG;
	return 0;
}
