/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
}

/* The live process's memory, like process_vm_readv: never a fake tree under a proc root. */
static int mem_fd(struct thps_reader *r, pid_t pid)
{
	char path[64];

	if (r->mem_fd >= 0 && r->mem_pid == pid)
		return r->mem_fd;
	if (r->mem_fd >= 0)
		close(r->mem_fd);
	r->mem_fd = -1;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	r->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->mem_fd < 0)
		return errno == ENOENT ? -ESRCH : negative_errno();
	r->mem_pid = pid;
	return r->mem_fd;
}

static int read_chunk(struct thps_reader *r, pid_t pid, uint64_t addr, size_t n)
{
	int fd = mem_fd(r, pid);
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
	int rc = 0;

	if (len % r->page_size)
		return -EINVAL;
	while (done < len && utilized <= limit) {
		size_t n = MIN((uint64_t)r->chunk, len - done);

		rc = read_chunk(r, pid, addr + done, n);
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
	int rc = 0;

	while (done < len) {
		size_t n = MIN((uint64_t)r->chunk, len - done);

		rc = read_chunk(r, pid, addr + done, n);
		if (rc < 0)
			break;
		done += n;
	}
	*ret_bytes = done;
	return rc;
}
