/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/uio.h>
#include <signal.h>
#include <unistd.h>

#include "macro.h"
#include "reader.h"
#include "zero.h"

int thps_reader_init(struct thps_reader *r, size_t chunk, size_t page_size)
{
	void *p = NULL;

	if (page_size == 0 || chunk < page_size || chunk % page_size || chunk > (64u << 20))
		return -EINVAL;
	if (posix_memalign(&p, 64, chunk) != 0)
		return -ENOMEM;
	r->buf = p;
	r->chunk = chunk;
	r->page_size = page_size;
	r->mem_fd = -1;
	r->mem_pid = 0;
	r->pm_fd = -1;
	r->pm_pid = 0;
	r->pm = NULL;
	r->pm_cap = 0;
	r->shared_reads = 0;
	return 0;
}

void thps_reader_done(struct thps_reader *r)
{
	/* Another process's memory: leave none of it behind in the heap. */
	if (r->buf)
		explicit_bzero(r->buf, r->chunk);
	free(r->buf);
	r->buf = NULL;
	if (r->mem_fd >= 0)
		close(r->mem_fd);
	r->mem_fd = -1;
	if (r->pm_fd >= 0)
		close(r->pm_fd);
	r->pm_fd = -1;
	free(r->pm);
	r->pm = NULL;
	r->pm_cap = 0;
}

/* /proc/PID/<name> of the live process, kept open in *fd for *fd_pid: like process_vm_readv,
 * never a fake tree under a proc root. */
static int proc_fd(int *fd, pid_t *fd_pid, pid_t pid, const char *name)
{
	char path[64];

	if (*fd >= 0 && *fd_pid == pid)
		return *fd;
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return errno == ENOENT ? -ESRCH : negative_errno();
	*fd_pid = pid;
	return *fd;
}

#define PM_PRESENT	  (UINT64_C(1) << 63)
#define PM_MMAP_EXCLUSIVE (UINT64_C(1) << 56)

/* 1 if every present page of [addr, addr+len) is mapped once (no pin of it unshares anything),
 * 0 if not or unknown. */
static int range_exclusive(struct thps_reader *r, pid_t pid, uint64_t addr, uint64_t len)
{
	size_t n = len / r->page_size;
	int fd = proc_fd(&r->pm_fd, &r->pm_pid, pid, "pagemap");
	ssize_t got;

	if (fd < 0 || n == 0)
		return 0;
	if (n > r->pm_cap) {
		uint64_t *p = reallocarray(r->pm, n, sizeof(*p));

		if (!p)
			return 0;
		r->pm = p;
		r->pm_cap = n;
	}
	got = pread(fd, r->pm, n * sizeof(*r->pm), (off_t)(addr / r->page_size * sizeof(*r->pm)));
	if (got != (ssize_t)(n * sizeof(*r->pm)))
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((r->pm[i] & PM_PRESENT) && !(r->pm[i] & PM_MMAP_EXCLUSIVE))
			return 0;
	return 1;
}

static int read_chunk_pvr(struct thps_reader *r, pid_t pid, uint64_t addr, size_t n)
{
	struct iovec local = {.iov_base = r->buf, .iov_len = n};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = n};
	ssize_t got;

	do
		got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return errno == ENOMEM ? -EFAULT : negative_errno();
	if ((size_t)got != n)
		return -EFAULT; /* part of the range went away */
	return 0;
}

static int read_chunk_mem(struct thps_reader *r, pid_t pid, uint64_t addr, size_t n)
{
	int fd = proc_fd(&r->mem_fd, &r->mem_pid, pid, "mem");
	ssize_t got;

	if (fd < 0)
		return fd;
	if (addr > (uint64_t)INT64_MAX)
		return -EFAULT;
	do
		got = pread(fd, r->buf, n, (off_t)addr);
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		int e = errno;

		/* the process went away under the open fd: its mm is gone */
		if (e == ESRCH || (e == EIO && kill(pid, 0) < 0 && errno == ESRCH))
			return -ESRCH;
		return e == EIO || e == ENOMEM ? -EFAULT : -e;
	}
	if ((size_t)got != n)
		return got == 0 && kill(pid, 0) < 0 ? -ESRCH : -EFAULT;
	return 0;
}

static int read_chunk(struct thps_reader *r, pid_t pid, uint64_t addr, size_t n, bool exclusive)
{
	return exclusive ? read_chunk_pvr(r, pid, addr, n) : read_chunk_mem(r, pid, addr, n);
}

int thps_reader_count(struct thps_reader *r, pid_t pid, uint64_t addr, uint64_t len,
		      unsigned *ret_utilized, uint64_t *ret_bytes)
{
	return thps_reader_count_until(r, pid, addr, len, UINT_MAX, ret_utilized, ret_bytes);
}

int thps_reader_count_until(struct thps_reader *r, pid_t pid, uint64_t addr, uint64_t len,
			    unsigned limit, unsigned *ret_utilized, uint64_t *ret_bytes)
{
	size_t utilized = 0;
	uint64_t done = 0;
	bool exclusive;
	int rc = 0;

	if (len % r->page_size)
		return -EINVAL;
	exclusive = range_exclusive(r, pid, addr, len);
	r->shared_reads += !exclusive;
	while (done < len && utilized <= limit) {
		size_t n = MIN((uint64_t)r->chunk, len - done);

		rc = read_chunk(r, pid, addr + done, n, exclusive);
		if (rc < 0)
			break;
		utilized += thps_count_utilized(r->buf, n, r->page_size);
		done += n;
	}
	*ret_bytes = done;
	if (rc < 0)
		return rc;
	*ret_utilized = (unsigned)utilized;
	return 0;
}

int thps_reader_copy_only(struct thps_reader *r, pid_t pid, uint64_t addr, uint64_t len,
			  uint64_t *ret_bytes)
{
	uint64_t done = 0;
	bool exclusive = range_exclusive(r, pid, addr, len);
	int rc = 0;

	while (done < len) {
		size_t n = MIN((uint64_t)r->chunk, len - done);

		rc = read_chunk(r, pid, addr + done, n, exclusive);
		if (rc < 0)
			break;
		done += n;
	}
	*ret_bytes = done;
	return rc;
}
