/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink-idlecost [THPS]: does this kernel offer idle page tracking
 * (/sys/kernel/mm/page_idle/bitmap), does it behave as the scan memo needs on anonymous THPs,
 * and what does one idle check cost next to a full read of the THP?
 *
 * It faults in THPS (default 64) THPs of its own (half full, half with 8 subpages used), finds
 * their head PFNs (/proc/self/pagemap, /proc/kpageflags), then
 *  - times a whole read of each THP with process_vm_readv (what the scanner does),
 *  - times marking each head PFN idle (one 8-byte pwrite) and checking it (one 8-byte pread),
 *  - times one pread over the bitmap words spanning every head (the batched check),
 *  - reports the semantics: untouched after the mark -> idle; read with process_vm_readv after
 *    the mark -> not idle (GUP's FOLL_TOUCH); written after the mark -> usually not idle (a
 *    write through a TLB entry cached before the mark sets no accessed bit: x86 clears young
 *    bits without a flush).
 *
 *   IDLE bitmap=absent|present ...
 *   COST thps=N read_us=R mark_us=M check_us=C batch_check_us=B span_words=W
 *   SEMANTICS untouched_idle=a/b written_busy=c/d read_busy=e/f
 *
 * VM only: it writes the bitmap (clearing young bits of its own folios). Needs root. Libc only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define KPF_THP 22
#define PM_PFN_MASK ((UINT64_C(1) << 55) - 1)
#define PM_PRESENT (UINT64_C(1) << 63)
#define BITMAP "/sys/kernel/mm/page_idle/bitmap"
#define MAX_THPS 4096

static double now_us(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int word_io(int fd, uint64_t pfn, int write_it, int *idle)
{
	uint64_t w = write_it ? UINT64_C(1) << (pfn % 64) : 0;
	off_t off = (off_t)(pfn / 64 * 8);
	ssize_t n = write_it ? pwrite(fd, &w, 8, off) : pread(fd, &w, 8, off);

	if (n != 8)
		return -1;
	if (idle)
		*idle = (int)((w >> (pfn % 64)) & 1);
	return 0;
}

static int read_thp(void *addr, size_t len, unsigned char *buf)
{
	struct iovec l = { buf, len }, r = { addr, len };

	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 64, thp = 2u << 20, page, got = 0;
	static uint64_t pfn[MAX_THPS];
	static unsigned char *addr[MAX_THPS];
	unsigned char *base, *buf;
	int bm, pm, kf;
	FILE *f;

	if (n < 4 || n > MAX_THPS) {
		fprintf(stderr, "usage: thpshrink-idlecost [THPS, 4..%d]\n", MAX_THPS);
		return 2;
	}
	page = (size_t)sysconf(_SC_PAGESIZE);
	f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "re");
	if (f) {
		unsigned long v;
		if (fscanf(f, "%lu", &v) == 1)
			thp = v;
		fclose(f);
	}
	bm = open(BITMAP, O_RDWR | O_CLOEXEC);
	if (bm < 0) {
		printf("IDLE bitmap=%s errno=%d (%s)\n", errno == ENOENT ? "absent" : "error", errno, strerror(errno));
		return 0;
	}
	printf("IDLE bitmap=present\n");
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	kf = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	base = mmap(NULL, (n + 1) * thp, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	buf = malloc(thp);
	if (pm < 0 || kf < 0 || base == MAP_FAILED || !buf) {
		perror("thpshrink-idlecost: setup");
		return 1;
	}
	base = (unsigned char *)(((uintptr_t)base + thp - 1) & ~(uintptr_t)(thp - 1));
	madvise(base, n * thp, MADV_HUGEPAGE);
	for (size_t i = 0; i < n; i++) {
		unsigned char *a = base + i * thp;
		size_t used = i % 2 ? 8 : thp / page;
		uint64_t e = 0, fl = 0;

		for (size_t p = 0; p < used; p++)
			a[p * page] = 1;
		if (pread(pm, &e, 8, (off_t)((uintptr_t)a / page * 8)) != 8 || !(e & PM_PRESENT))
			continue;
		if (pread(kf, &fl, 8, (off_t)((e & PM_PFN_MASK) * 8)) != 8 || !(fl & (UINT64_C(1) << KPF_THP)))
			continue;
		addr[got] = a;
		pfn[got++] = e & PM_PFN_MASK;
	}
	if (got < 4) {
		printf("SKIP only %zu of %zu THPs faulted in as THPs\n", got, n);
		return 0;
	}

	/* costs: CPU of this thread (the syscalls run in it), best of 3 rounds */
	double rd = 1e18, mk = 1e18, ck = 1e18, bt = 1e18;
	uint64_t lo = pfn[0], hi = pfn[0];
	for (size_t i = 0; i < got; i++) {
		lo = pfn[i] < lo ? pfn[i] : lo;
		hi = pfn[i] > hi ? pfn[i] : hi;
	}
	size_t words = (size_t)(hi / 64 - lo / 64 + 1);
	uint64_t *wbuf = calloc(words, 8);
	if (!wbuf)
		return 1;
	for (int round = 0; round < 3; round++) {
		double t, x;
		int idle;

		t = now_us(CLOCK_THREAD_CPUTIME_ID);
		for (size_t i = 0; i < got; i++)
			if (read_thp(addr[i], thp, buf) < 0) {
				perror("process_vm_readv");
				return 1;
			}
		x = (now_us(CLOCK_THREAD_CPUTIME_ID) - t) / (double)got;
		rd = x < rd ? x : rd;
		t = now_us(CLOCK_THREAD_CPUTIME_ID);
		for (size_t i = 0; i < got; i++)
			if (word_io(bm, pfn[i], 1, NULL) < 0) {
				printf("IDLE bitmap=error write errno=%d (%s)\n", errno, strerror(errno));
				return 1;
			}
		x = (now_us(CLOCK_THREAD_CPUTIME_ID) - t) / (double)got;
		mk = x < mk ? x : mk;
		t = now_us(CLOCK_THREAD_CPUTIME_ID);
		for (size_t i = 0; i < got; i++)
			if (word_io(bm, pfn[i], 0, &idle) < 0) {
				perror("bitmap read");
				return 1;
			}
		x = (now_us(CLOCK_THREAD_CPUTIME_ID) - t) / (double)got;
		ck = x < ck ? x : ck;
		t = now_us(CLOCK_THREAD_CPUTIME_ID);
		if (pread(bm, wbuf, words * 8, (off_t)(lo / 64 * 8)) != (ssize_t)(words * 8)) {
			perror("bitmap batch read");
			return 1;
		}
		x = (now_us(CLOCK_THREAD_CPUTIME_ID) - t) / (double)got;
		bt = x < bt ? x : bt;
	}
	printf("COST thps=%zu read_us=%.2f mark_us=%.2f check_us=%.2f batch_check_us=%.2f span_words=%zu\n", got, rd, mk,
	       ck, bt, words);

	/* semantics: mark all; then write a quarter, read a quarter with process_vm_readv, leave half */
	int untouched = 0, untouched_idle = 0, written = 0, written_busy = 0, readn = 0, read_busy = 0;
	for (size_t i = 0; i < got; i++)
		word_io(bm, pfn[i], 1, NULL);
	for (size_t i = 0; i < got; i++) {
		if (i % 4 == 0)
			addr[i][page * 100] = 2; /* a zero subpage of a sparse one, or data of a full one */
		else if (i % 4 == 1)
			read_thp(addr[i], thp, buf);
	}
	for (size_t i = 0; i < got; i++) {
		int idle = 0;

		word_io(bm, pfn[i], 0, &idle);
		if (i % 4 == 0)
			written++, written_busy += !idle;
		else if (i % 4 == 1)
			readn++, read_busy += !idle;
		else
			untouched++, untouched_idle += idle;
	}
	printf("SEMANTICS untouched_idle=%d/%d written_busy=%d/%d read_busy=%d/%d\n", untouched_idle, untouched,
	       written_busy, written, read_busy, readn);
	return 0;
}
