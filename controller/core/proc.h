/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Parsers of /proc/PID files shared by the hook, the registrations and the daemon. Pure: the
 * caller reads the file. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Finds the cgroup v2 line "0::/path" of a /proc/PID/cgroup text. Returns 0, -ENODATA when
 * there is no v2 line, -EXDEV when the process is outside the reader's cgroup namespace (the
 * kernel writes "/.." for each level above the reader's root), -EINVAL when its path is not
 * valid, -ENAMETOOLONG. */
int thps_proc_cgroup_v2_path(const char *text, char *buf, size_t size);

/* Field 22 (starttime, clock ticks since boot) of a /proc/PID/stat text.
 * Returns 0 or -EINVAL. */
int thps_proc_stat_starttime(const char *text, uint64_t *ret);

struct thps_ctx;
/* Reads <proc_root>/PID/stat and parses its start time: what, with the pid, names a process
 * (a reused pid has another). Returns 0, -ESRCH when the process is gone, or -errno. */
int thps_proc_starttime(const struct thps_ctx *ctx, pid_t pid, uint64_t *ret);
