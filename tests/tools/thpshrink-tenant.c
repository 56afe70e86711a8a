/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink-tenant: the hostile tenants of the daemon's promote tests (tests/vm/scenarios/
 * 45-promote.sh, tests/bench/promote-daemon.sh). One of:
 *   --vmas N [--procs P]: N one-page VMAs (read-write and read-only alternate, so none
 *       merge), each page written, then P-1 forked copies: P processes of N VMAs for the finder to
 * walk, their pages shared copy-on-write, so P costs no memory;
 *   --pin MB: MB of dense memory, one page of its first 2 MiB held by a pipe (vmsplice) that is
 *       never read: a collapse of that range cannot succeed (EAGAIN);
 *   --retouch MB [--period-ms T]: MB of dense memory; every T ms (500) it drops one page of
 *       each 2 MiB (MADV_DONTNEED) and writes it again, so a THP made of it is split and the
 *       range is dense again. Before each drop it counts the ranges that are THPs
 *       (AnonHugePages of its own smaps): at SIGTERM it prints "retouch: cycles=C
 *       thp_seen=S", S being how many collapses of its memory it saw (each one is seen once:
 *       the next drop splits it).
 * Each prints "ready pid=..." and waits for SIGTERM. Only its own memory is ever read. */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (UINT64_C(1) << 20)
#define THP (2 * MIB)

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: thpshrink-tenant --vmas N [--procs P] | --pin MB | "
			"--retouch MB [--period-ms T]\n");
	exit(2);
}

/* MB of anonymous memory aligned to 2 MiB, every page written. */
static uint8_t *dense(uint64_t mb, long page)
{
	uint64_t len = mb * MIB;
	uint8_t *base = mmap(NULL, len + THP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0),
		*p;

	if (base == MAP_FAILED)
		return NULL;
	p = (uint8_t *)(((uintptr_t)base + THP - 1) & ~(uintptr_t)(THP - 1));
	for (uint64_t off = 0; off < len; off += (uint64_t)page)
		p[off] = (uint8_t)(off / (uint64_t)page) | 1;
	return p;
}

/* AnonHugePages (bytes) of the VMA holding p, from our own smaps. */
static uint64_t thp_bytes(const uint8_t *p)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool in = false;
	uint64_t thp = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, v;

		if (sscanf(line, "%llx-%llx ", &a, &b) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = (uintptr_t)p >= a && (uintptr_t)p < b;
		else if (in && sscanf(line, "AnonHugePages: %llu kB", &v) == 1)
			thp += v * 1024;
	}
	fclose(f);
	return thp;
}

static int vmas(long n, long procs, long page)
{
	uint8_t *p = mmap(NULL, (size_t)n * (size_t)page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static pid_t kids[4096];

	if (p == MAP_FAILED)
		return -1;
	/* every page written, every other one read-only: n VMAs that cannot merge */
	for (long i = 0; i < n; i++)
		p[i * page] = 1;
	for (long i = 1; i < n; i += 2)
		if (mprotect(p + i * page, (size_t)page, PROT_READ) < 0)
			return -1;
	for (long i = 1; i < procs; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			return -1;
		if (kids[i] == 0) {
			while (!stop)
				pause();
			_exit(0);
		}
	}
	printf("ready pid=%d vmas=%ld procs=%ld\n", (int)getpid(), n, procs);
	fflush(stdout);
	while (!stop)
		pause();
	for (long i = 1; i < procs; i++)
		kill(kids[i], SIGTERM);
	while (wait(NULL) > 0)
		;
	return 0;
}

static int pin(uint64_t mb, long page)
{
	uint8_t *p = dense(mb, page);
	struct iovec iov;
	int fd[2];

	if (!p || pipe(fd) < 0)
		return -1;
	iov = (struct iovec){.iov_base = p + THP / 2, .iov_len = (size_t)page};
	if (vmsplice(fd[1], &iov, 1, 0) != page)
		return -1;
	printf("ready pid=%d pinned=0x%" PRIxPTR "\n", (int)getpid(), (uintptr_t)(p + THP / 2));
	fflush(stdout);
	while (!stop)
		pause();
	return 0;
}

static int retouch(uint64_t mb, long period_ms, long page)
{
	uint8_t *p = dense(mb, page);
	struct timespec t = {.tv_sec = period_ms / 1000, .tv_nsec = period_ms % 1000 * 1000000};
	uint64_t cycles = 0, seen = 0;

	if (!p)
		return -1;
	printf("ready pid=%d dense=0x%" PRIxPTR "-0x%" PRIxPTR "\n", (int)getpid(), (uintptr_t)p,
	       (uintptr_t)(p + mb * MIB));
	fflush(stdout);
	while (!stop) {
		seen += thp_bytes(p) / THP;
		for (uint64_t off = 0; off < mb * MIB; off += THP) {
			uint8_t *q = p + off + THP / 2;

			if (madvise(q, (size_t)page, MADV_DONTNEED) < 0)
				return -1;
			q[0] = 1;
		}
		cycles++;
		nanosleep(&t, NULL);
	}
	printf("retouch: cycles=%" PRIu64 " thp_seen=%" PRIu64 "\n", cycles, seen);
	return 0;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE), n_vmas = 0, procs = 1, period = 500;
	uint64_t pin_mb = 0, retouch_mb = 0;
	int r;

	for (int i = 1; i + 1 < argc; i += 2) {
		const char *a = argv[i], *v = argv[i + 1];

		if (!strcmp(a, "--vmas"))
			n_vmas = strtol(v, NULL, 10);
		else if (!strcmp(a, "--procs"))
			procs = strtol(v, NULL, 10);
		else if (!strcmp(a, "--pin"))
			pin_mb = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--retouch"))
			retouch_mb = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--period-ms"))
			period = strtol(v, NULL, 10);
		else
			usage();
	}
	if (argc % 2 == 0 || !!n_vmas + !!pin_mb + !!retouch_mb != 1 || n_vmas < 0 ||
	    n_vmas > 1 << 20 || procs < 1 || procs > 4096 || pin_mb % 2 || retouch_mb % 2 ||
	    pin_mb > 65536 || retouch_mb > 65536 || period < 1)
		usage();
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	r = n_vmas   ? vmas(n_vmas, procs, page)
	    : pin_mb ? pin(pin_mb, page)
		     : retouch(retouch_mb, period, page);
	if (r < 0) {
		perror("thpshrink-tenant");
		return 1;
	}
	return 0;
}
