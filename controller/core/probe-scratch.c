/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cleaning up after killed probes (probe-scratch.h): their scratch cgroups, and the canaries
 * still in them. Kept apart from probe-measure.c, which makes them. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "probe-scratch.h"
#include "probe.h"

#define PREFIX "thpshrink-probe."

/* The <pid> of a scratch cgroup's name, or 0 when the name is not exactly ours. */
static pid_t scratch_pid(const char *name)
{
	uint64_t v;

	if (strncmp(name, PREFIX, strlen(PREFIX)) != 0 ||
	    parse_u64(name + strlen(PREFIX), &v) < 0 || v == 0 || v > INT32_MAX)
		return 0;
	return (pid_t)v;
}

/* Whether pid is a thpshrink process now, so its scratch cgroup may be in use. A pid that
 * another program reuses is not: its owner is gone. (Names use the creator's pid namespace:
 * run the daemon and the CLI in the host's, as the DaemonSet does.) */
static bool owner_alive(const struct thps_ctx *ctx, pid_t pid)
{
	_cleanup_free_ char *comm = NULL;
	int r;

	if (pid == getpid())
		return true;
	r = read_file_at(64, &comm, ctx->proc_root, "%d/comm", (int)pid);
	if (r == -ENOENT || r == -ESRCH)
		return false;
	if (r < 0)
		return true; /* cannot tell: leave it */
	comm[strcspn(comm, "\n")] = '\0';
	return !strcmp(comm, "thpshrink") || !strcmp(comm, "thpshrinkd");
}

/* SIGKILL to whatever is in the cgroup: cgroup.kill (Linux 5.14+) takes the whole cgroup at
 * once, forks included; else each pid of cgroup.procs. */
static void kill_members(const char *dir)
{
	_cleanup_free_ char *procs = NULL;
	char path[PATH_MAX];

	if (thps_path(path, sizeof(path), dir, "cgroup.kill") == 0 &&
	    write_file_string(path, "1") == 0)
		return;
	if (read_file_at(64 * 1024, &procs, dir, "cgroup.procs") < 0)
		return;
	for (char *p = procs, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 1)
			(void)kill((pid_t)pid, SIGKILL);
	}
}

/* rmdir, while the killed processes leave (at most ~1 s). */
static int remove_dir(const char *dir)
{
	for (int i = 0; i < 50; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return negative_errno();
		usleep(20 * 1000);
	}
	return -EBUSY;
}

int thps_probe_scratch_clean(const struct thps_ctx *ctx)
{
	_cleanup_closedir_ DIR *d = NULL;
	char root[PATH_MAX], dir[PATH_MAX];
	struct dirent *de;
	bool v2mem = false;
	int n = 0, first = 0, r;

	r = thps_memcg_find(ctx, root, sizeof(root), &v2mem);
	if (r != 2)
		return r < 0 ? r : 0;
	d = opendir(root);
	if (!d)
		return negative_errno();
	while ((de = readdir(d))) {
		pid_t pid = scratch_pid(de->d_name);

		if (!pid || owner_alive(ctx, pid) ||
		    thps_path(dir, sizeof(dir), root, "%s", de->d_name) < 0)
			continue;
		kill_members(dir);
		r = remove_dir(dir);
		if (r < 0 && !first)
			first = r;
		n += r == 0;
	}
	return first < 0 ? first : n;
}
