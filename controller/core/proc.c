/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Parsers of /proc/PID files; see proc.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "fileio.h"
#include "macro.h"
#include "proc.h"
#include "valid.h"

int thps_proc_cgroup_v2_path(const char *text, char *buf, size_t size)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);

		if (n >= 3 && !strncmp(line, "0::", 3)) {
			char tmp[THPS_CGROUP_PATH_MAX];
			size_t pn = n - 3;
			const char *del = " (deleted)";

			if (pn >= sizeof(tmp))
				return -ENAMETOOLONG;
			memcpy(tmp, line + 3, pn);
			tmp[pn] = '\0';
			/* A cgroup removed under a live process reads "... (deleted)": it has no
			 * path. */
			if (pn > strlen(del) && !strcmp(tmp + pn - strlen(del), del))
				return -EINVAL;
			if (!strcmp(tmp, "/..") || !strncmp(tmp, "/../", 4))
				return -EXDEV;
			if (!thps_cgroup_path_valid(tmp))
				return -EINVAL;
			if (pn >= size)
				return -ENAMETOOLONG;
			memcpy(buf, tmp, pn + 1);
			return 0;
		}
		line = end ? end + 1 : NULL;
	}
	return -ENODATA;
}

int thps_proc_stat_starttime(const char *text, uint64_t *ret)
{
	const char *p = strrchr(text, ')');
	unsigned long long v;
	char *end;

	if (!p)
		return -EINVAL;
	p++;
	/* After "comm)": field 3 (state) … field 22 (starttime): 20 fields on. */
	for (int field = 3; field < 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EINVAL;
		while (*p && *p != ' ')
			p++;
	}
	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(p, &end, 10);
	if (errno || (*end && *end != ' ' && *end != '\n'))
		return -EINVAL;
	*ret = v;
	return 0;
}

int thps_proc_starttime(const struct thps_ctx *ctx, pid_t pid, uint64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	int r;

	r = read_file_at(4096, &text, ctx->proc_root, "%d/stat", (int)pid);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	return thps_proc_stat_starttime(text, ret);
}
