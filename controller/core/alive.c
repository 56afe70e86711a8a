/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "alive.h"
#include "macro.h"

int thps_status_age(const char *state_dir, uint64_t *ret_age)
{
	char path[PATH_MAX];
	struct timespec now;
	struct stat st;

	if ((size_t)snprintf(path, sizeof(path), "%s/status.json", state_dir) >= sizeof(path))
		return -ENAMETOOLONG;
	if (stat(path, &st) < 0)
		return negative_errno();
	clock_gettime(CLOCK_REALTIME, &now);
	*ret_age = now.tv_sec > st.st_mtim.tv_sec ? (uint64_t)(now.tv_sec - st.st_mtim.tv_sec) : 0;
	return 0;
}
