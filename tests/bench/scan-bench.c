/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scan-bench: how fast the scanner reads THPs, next to the bare copy it cannot beat.
 *
 *   scan-bench PID START END [ROUNDS [CHUNK_KIB]]
 *
 * Over the same memory of PID ([START, END), thpshrink-bloat's THPs), in the same run,
 * alternating: (a) a bare copy loop through the scanner's reader in its chunk size into one
 * buffer (process_vm_readv: these pages are mapped once), (b) the full scanner source for PID
 * (PAGEMAP_SCAN, kpageflags, kpagecgroup, the reader's pagemap look at each folio, zero check,
 * histogram), (c) a bare /proc/PID/mem loop, what the reader uses for pages mapped more than
 * once (reader.h). Prints the best round of each in GB/s and µs per THP, and the ratios (best
 * against best, and the median of each back-to-back pair's ratio). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "reader.h"
#include "scanner.h"

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int parse_hex(const char *s, uint64_t *ret)
{
	char *end;

	errno = 0;
	*ret = strtoull(s, &end, 16);
	return errno || *end || end == s ? -EINVAL : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The reader's copy for shared pages: /proc/PID/mem in chunks into one buffer. */
static int mem_copy(pid_t pid, uint64_t addr, uint64_t len, size_t chunk, void *buf)
{
	char path[64];
	int fd, r = 0;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (uint64_t done = 0; done < len && r == 0; done += chunk) {
		size_t n = len - done < chunk ? (size_t)(len - done) : chunk;

		if (pread(fd, buf, n, (off_t)(addr + done)) != (ssize_t)n)
			r = -EIO;
	}
	close(fd);
	return r;
}

static int count(void *ud, pid_t pid, uint64_t addr, uint64_t len, unsigned *ret_utilized,
		 uint64_t *ret_bytes)
{
	return thps_reader_count(ud, pid, addr, len, ret_utilized, ret_bytes);
}

int main(int argc, char **argv)
{
	struct thps_scan_opts opts = {0};
	struct thps_reader reader;
	struct thps_geometry g;
	struct thps_ctx ctx;
	uint64_t pid, start, end, rounds = 5, best_bare = UINT64_MAX, best_scan = UINT64_MAX,
		 best_pvr = UINT64_MAX;
	double ratios[64];
	uint64_t thps = 0, zero = 0, chunk_kib = THPS_READER_CHUNK_DEFAULT / 1024;
	struct thps_scanner_hooks hooks = {
	    .count = count, .userdata = &reader, .use_pagemap_scan = 1};
	int r;

	if (argc < 4 || parse_u64(argv[1], &pid) < 0 || parse_hex(argv[2], &start) < 0 ||
	    parse_hex(argv[3], &end) < 0 || end <= start ||
	    (argc > 4 && (parse_u64(argv[4], &rounds) < 0 || rounds == 0 || rounds > 64)) ||
	    (argc > 5 &&
	     (parse_u64(argv[5], &chunk_kib) < 0 || chunk_kib == 0 || chunk_kib > 16384))) {
		fprintf(stderr, "usage: scan-bench PID 0xSTART 0xEND [ROUNDS [CHUNK_KIB]]\n");
		return 2;
	}
	thps_ctx_init(&ctx);
	r = thps_geometry_load(&ctx, &g);
	if (r < 0) {
		fprintf(stderr, "scan-bench: THP geometry: %s\n", strerror(-r));
		return 1;
	}
	/* the scanner's own reader, with the chunk size under test */
	r = thps_reader_init(&reader, chunk_kib * 1024, g.page_size);
	if (r < 0)
		return 1;
	opts.pid = (pid_t)pid;

	for (uint64_t i = 0; i < rounds; i++) {
		struct thps_scan scan;
		uint64_t t0, t1, bytes = 0, bare;

		t0 = now_ns();
		r = thps_reader_copy_only(&reader, opts.pid, start, end - start, &bytes);
		t1 = now_ns();
		if (r < 0 || bytes != end - start) {
			fprintf(stderr, "scan-bench: process_vm_readv: %s\n", strerror(-r));
			return 1;
		}
		bare = t1 - t0;
		if (bare < best_bare)
			best_bare = bare;
		t0 = now_ns();
		r = mem_copy(opts.pid, start, end - start, chunk_kib * 1024, reader.buf);
		t1 = now_ns();
		if (r < 0) {
			fprintf(stderr, "scan-bench: /proc/PID/mem: %s\n", strerror(-r));
			return 1;
		}
		if (t1 - t0 < best_pvr)
			best_pvr = t1 - t0;

		thps_scan_init(&scan, &g);
		t0 = now_ns();
		r = thps_scanner_collect(&ctx, &opts, &hooks, &scan);
		t1 = now_ns();
		if (r < 0 || scan.summary.procs_scanned != 1) {
			fprintf(stderr, "scan-bench: scanner: %s\n",
				r < 0 ? strerror(-r) : "process skipped");
			thps_scan_free(&scan);
			return 1;
		}
		thps = scan.summary.thps_scanned;
		zero = thps_hist_zero_subpages(&scan.total.hist);
		if (t1 - t0 < best_scan)
			best_scan = t1 - t0;
		/* the pair ran back to back: its ratio is least disturbed by a busy machine */
		ratios[i] = (double)bare / (t1 - t0);
		thps_scan_free(&scan);
	}
	thps_reader_done(&reader);
	if (thps * g.thp_size != end - start) {
		fprintf(stderr,
			"scan-bench: the scanner found %" PRIu64 " THPs in %" PRIu64
			" bytes: not all THP-backed\n",
			thps, end - start);
		return 1;
	}
	printf("memory %" PRIu64 " MiB, %" PRIu64 " THPs, %.1f %% zero subpages, chunk %" PRIu64
	       " KiB, best of %" PRIu64 " rounds\n",
	       (end - start) >> 20, thps, 100.0 * zero / ((double)thps * g.subpages), chunk_kib,
	       rounds);
	printf("bare process_vm_readv loop: %6.2f GB/s  %7.1f us/THP (pages mapped once)\n",
	       (double)(end - start) / best_bare, best_bare / 1e3 / thps);
	printf("bare /proc/PID/mem loop:    %6.2f GB/s  %7.1f us/THP (what shared pages cost)\n",
	       (double)(end - start) / best_pvr, best_pvr / 1e3 / thps);
	printf("scanner (full source):      %6.2f GB/s  %7.1f us/THP\n",
	       (double)(end - start) / best_scan, best_scan / 1e3 / thps);
	qsort(ratios, rounds, sizeof(ratios[0]), cmp_double);
	printf(
	    "ratio scanner/bare: best-vs-best %.3f, median of paired rounds %.3f (goal >= 0.85)\n",
	    (double)best_bare / best_scan, ratios[rounds / 2]);
	printf("ratio /proc/PID/mem / process_vm_readv (copy alone): %.3f\n",
	       (double)best_bare / best_pvr);
	return 0;
}
