/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where the system's files are. No module spells /proc or /sys itself: tests point these at
 * committed fake trees, and the VM tests at a real kernel. */
#pragma once
#include <limits.h>

struct thps_ctx {
	char proc_root[PATH_MAX];    /* "/proc" */
	char sys_root[PATH_MAX];     /* "/sys" */
	char cgroup_root[PATH_MAX];  /* mount of the memory cgroup hierarchy; "" = discover */
	char debugfs_root[PATH_MAX]; /* "/sys/kernel/debug" */
	int cgroup_version;	     /* 2, 1 (memory v1, read-only), 0 = unknown/none */
};

/* Fills defaults; then environment overrides THPSHRINK_PROC_ROOT, THPSHRINK_SYS_ROOT,
 * THPSHRINK_CGROUP_ROOT, THPSHRINK_DEBUGFS_ROOT (for tests). Never fails. */
void thps_ctx_init(struct thps_ctx *ctx);

/* Points every root into one tree, as the unit tests' fake trees are laid out: BASE/proc,
 * BASE/sys, BASE/CGROUP_DIR, BASE/debug; cgroup_version 0 (unknown). */
void thps_ctx_init_tree(struct thps_ctx *ctx, const char *base, const char *cgroup_dir);

/* Builds "<root>/<rel>" into buf. Returns 0, or -ENAMETOOLONG. */
int thps_path(char *buf, size_t size, const char *root, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
