/* SPDX-License-Identifier: GPL-2.0-or-later */
/* process_madvise(2) through a checked pidfd; see pmadvise.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "pmadvise.h"
#include "proc.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#define CAP_SYS_NICE_BIT 23

int thps_pidfd_open(const struct thps_ctx *ctx, pid_t pid, uint64_t starttime)
{
	uint64_t st;
	int fd, r;

	if (pid <= 0)
		return -ESRCH;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return errno == EINVAL ? -ESRCH : negative_errno();
	/* The fd now pins this pid's process: if the start time is still the scan's, it is the
	 * scanned process, and a later reuse of the pid can no longer redirect the advice. */
	r = thps_proc_starttime(ctx, pid, &st);
	if (r < 0 || st != starttime) {
		close(fd);
		return r < 0 && r != -ENOENT ? r : -ESRCH;
	}
	return fd;
}

static long pmadvise_call(int pidfd, const struct iovec *iov, size_t n, int advice)
{
	long r;

	do
		r = syscall(SYS_process_madvise, pidfd, iov, n, advice, 0);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -(long)errno : r;
}

/* Errors that concern the whole process, not one range. */
static bool fatal_for_process(long e)
{
	return e == -ESRCH || e == -EPERM || e == -EACCES || e == -ENOSYS || e == -EBADF;
}

/* Marks addrs[from..n) as failed with e (the process is gone or may not be advised). */
static void fail_rest(int *err, size_t from, size_t n, int e)
{
	for (size_t i = from; i < n; i++)
		err[i] = e;
}

int thps_pmadvise(int pidfd, int advice, const uint64_t *addrs, size_t n, uint64_t len, int *err)
{
	_cleanup_free_ struct iovec *iov = NULL;
	size_t done = 0, ok = 0;

	if (!len || len > SSIZE_MAX / THPS_PMADV_BATCH)
		return -EINVAL;
	if (!n)
		return 0;
	iov = calloc(MIN(n, (size_t)THPS_PMADV_BATCH), sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	while (done < n) {
		size_t k = MIN(n - done, (size_t)THPS_PMADV_BATCH), adv;
		long r, e;

		for (size_t i = 0; i < k; i++)
			iov[i] = (struct iovec){.iov_base = (void *)(uintptr_t)addrs[done + i],
						.iov_len = len};
		r = pmadvise_call(pidfd, iov, k, advice);
		if (r < 0 && fatal_for_process(r)) {
			if (done == 0)
				return (int)r;
			fail_rest(err, done, n, (int)r);
			return (int)ok;
		}
		/* r >= 0: the first r / len iovecs were advised and, when that is short, the next
		 * one failed; r < 0: the first one failed with r. */
		adv = r < 0 ? 0 : MIN(k, (size_t)((uint64_t)r / len));
		for (size_t i = 0; i < adv; i++)
			err[done + i] = 0;
		ok += adv;
		done += adv;
		if (adv == k)
			continue;
		/* learn why the failing one failed: alone, it returns its own errno */
		e = r < 0 ? r : pmadvise_call(pidfd, &iov[adv], 1, advice);
		if (e < 0 && fatal_for_process(e)) {
			fail_rest(err, done, n, (int)e);
			return (int)ok;
		}
		err[done++] = e < 0 ? (int)e : 0;
		ok += e >= 0;
	}
	return (int)ok;
}

int thps_pmadvise_allowed(const struct thps_ctx *ctx, char *why, size_t size)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	unsigned long long eff;
	const char *p;
	int r;

	r = thps_path(path, sizeof(path), ctx->proc_root, "self/status");
	if (r < 0)
		return r;
	r = read_file_bounded(path, 64 * 1024, &text, NULL);
	if (r < 0)
		return r;
	p = strstr(text, "\nCapEff:");
	if (!p || sscanf(p + 8, "%llx", &eff) != 1)
		return -ENODATA;
	if (!(eff & (1ULL << CAP_SYS_NICE_BIT))) {
		snprintf(why, size,
			 "no CAP_SYS_NICE: process_madvise on other processes needs it (add it "
			 "to the unit's CapabilityBoundingSet or the container's capabilities)");
		return 0;
	}
	return 1;
}
