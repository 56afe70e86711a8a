/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Memory cgroup discovery: where the memory hierarchy is mounted, and which directory of it
 * has which inode number (what /proc/kpagecgroup reports for a page). Read-only: nothing
 * here ever writes to a cgroup file system. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "context.h"

/* Directories deeper than this below the mount are not mapped (bounded walk). */
#define THPS_CGROUP_MAX_DEPTH 32
/* At most this many cgroups are mapped; the rest stay "(memcg ino N)". */
#define THPS_CGROUP_MAX_ENTRIES (1u << 20)

struct thps_cgroup_map;

/* If ctx->cgroup_root is "", finds the memory hierarchy's mount in <proc_root>/self/mountinfo
 * (thps_memcg_find: cgroup v2 with the memory controller, else the v1 "memory" hierarchy)
 * and stores it there. Sets
 * ctx->cgroup_version (2 when the mount has cgroup.controllers, else 1).
 * Returns 0, -ENOENT when no memory hierarchy is mounted, or -errno. */
int thps_cgroups_find_mount(struct thps_ctx *ctx);

/* thps_cgroups_find_mount(), then maps the tree under ctx->cgroup_root.
 * Returns 0 or -errno. */
int thps_cgroups_discover(struct thps_ctx *ctx, struct thps_cgroup_map **ret);

/* Walks the directory tree under root (at most max_depth levels) and maps each directory's
 * inode to its path relative to root ("/" for root itself). Returns 0 or -errno. */
int thps_cgroup_map_build(const char *root, unsigned max_depth, struct thps_cgroup_map **ret);

/* The path of the cgroup with inode ino, or NULL if it is not in the tree. The map stores
 * names, not paths: the answer lives in the map and is valid until the next call. */
const char *thps_cgroup_map_path(struct thps_cgroup_map *m, uint64_t ino);
/* The inode of the cgroup at path (relative to the mount), or 0 if not in the tree. */
uint64_t thps_cgroup_map_ino(const struct thps_cgroup_map *m, const char *path);
size_t thps_cgroup_map_size(const struct thps_cgroup_map *m);
void thps_cgroup_map_free(struct thps_cgroup_map *m);

/* 1 if path equals ancestor or lies below it (both relative to the mount, "/" = root). */
int thps_cgroup_path_within(const char *path, const char *ancestor);
