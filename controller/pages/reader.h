/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reads another process's THP, chunk by chunk, into one reused buffer, and counts its utilized
 * subpages. Contents never leave this buffer.
 * process_vm_readv pins the pages it reads (FOLL_PIN), and a read-only pin of an anonymous page
 * that may be shared (a fork's COW-shared THP) makes the kernel unshare it first, copying every
 * page read into the target: a scan split the shared THPs of a forked process into 512 private
 * copies each (measured on 6.18: tests/integration/reclaim-pid-host.sh). /proc/PID/mem takes
 * plain references, which unshare nothing, but copies 3.8x slower (make bench). So a range
 * whose pages pagemap shows mapped once (PM_MMAP_EXCLUSIVE) is read with process_vm_readv,
 * any other through /proc/PID/mem. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define THPS_READER_CHUNK_DEFAULT (128u * 1024)

struct thps_reader {
	unsigned char *buf;
	size_t chunk;
	size_t page_size;
	int mem_fd; /* /proc/<mem_pid>/mem, kept open while one process is read */
	pid_t mem_pid;
	int pm_fd; /* /proc/<pm_pid>/pagemap, likewise */
	pid_t pm_pid;
	uint64_t *pm; /* one entry per page of the largest range read */
	size_t pm_cap;
	uint64_t shared_reads; /* ranges read through /proc/PID/mem (not mapped once) */
};

/* chunk: bytes per read, a multiple of page_size (64-256 KiB is the sweet
 * spot: fits in L2, few syscalls). Returns 0, -EINVAL or -ENOMEM. */
int thps_reader_init(struct thps_reader *r, size_t chunk, size_t page_size);
void thps_reader_done(struct thps_reader *r);

/* Counts the subpages of [addr, addr+len) in pid that hold a non-zero byte; len a multiple
 * of page_size. *ret_bytes gets what was read even on failure. Returns 0, -ESRCH if the
 * process is gone, -EFAULT if the range changed (short read, unmapped), -EPERM, or -errno.
 * None of those is fatal to a scan: the caller skips. */
int thps_reader_count(struct thps_reader *r, pid_t pid, uint64_t addr, uint64_t len,
		      unsigned *ret_utilized, uint64_t *ret_bytes);

/* thps_reader_count(), stopping after the chunk in which the count passes limit: then
 * *ret_utilized is a lower bound above limit and *ret_bytes < len. Proving a well-used folio
 * above a cut costs a fraction of reading it. */
int thps_reader_count_until(struct thps_reader *r, pid_t pid, uint64_t addr, uint64_t len,
			    unsigned limit, unsigned *ret_utilized, uint64_t *ret_bytes);

/* The same copy without looking at the data: the benchmark's baseline. */
int thps_reader_copy_only(struct thps_reader *r, pid_t pid, uint64_t addr, uint64_t len,
			  uint64_t *ret_bytes);
