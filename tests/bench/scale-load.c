/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scale-load: the THPs bench-scale (scale.sh) runs the daemon against, in this process only.
 *
 *   scale-load --thps N [--low L] [--pte] [--write-every SECONDS] --ready-file F
 *
 * Allocates N THPs by madvise(MADV_HUGEPAGE) on THP-aligned memory (the host's THP mode is
 * madvise: no sysfs change): L of them with 8 of their subpages written, the rest with every
 * subpage written. --pte maps each THP through page tables instead of one PMD (an mprotect of
 * its first page and back splits the PMD and leaves the folio whole): the scanner's path for
 * mTHPs, which this host's kernel makes only if sysfs enables them. --write-every S writes one
 * byte of every subpage of half the full THPs every S seconds (a busy node; the utilization
 * stays what it was). Then it writes "READY pid=P thps=N thp_backed=K" to F (atomically) and
 * waits for SIGTERM. thp_backed counts PMD-mapped THPs before --pte (AnonHugePages). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define THP_SIZE  (2u << 20)
#define LOW_PAGES 8u
#define MAX_THPS  (1u << 20) /* 2 TiB: a bound on the argument, not a goal */

static volatile sig_atomic_t want_exit;

static void on_signal(int sig)
{
	(void)sig;
	want_exit = 1;
}

static long anon_huge_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static int write_ready(const char *path, unsigned thps, long backed)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "READY pid=%d thps=%u thp_backed=%ld\n", (int)getpid(), thps, backed);
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		return -errno;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"thps", required_argument, NULL, 'n'},
						 {"low", required_argument, NULL, 'l'},
						 {"pte", no_argument, NULL, 'p'},
						 {"write-every", required_argument, NULL, 'w'},
						 {"ready-file", required_argument, NULL, 'r'},
						 {NULL, 0, NULL, 0}};
	unsigned long thps = 0, low = 0, every = 0;
	const char *ready = NULL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), sub = THP_SIZE / page;
	int pte = 0, c;
	uint8_t *p, *base;
	struct sigaction sa = {.sa_handler = on_signal};

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			thps = strtoul(optarg, NULL, 10);
			break;
		case 'l':
			low = strtoul(optarg, NULL, 10);
			break;
		case 'p':
			pte = 1;
			break;
		case 'w':
			every = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			ready = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!ready || thps > MAX_THPS || low > thps) {
		fprintf(stderr, "usage: scale-load --thps N [--low L] [--pte] [--write-every S] "
				"--ready-file F\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	base = NULL;
	if (thps) {
		p = mmap(NULL, (thps + 1) * THP_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			perror("scale-load: mmap");
			return 1;
		}
		base = (uint8_t *)(((uintptr_t)p + THP_SIZE - 1) & ~(uintptr_t)(THP_SIZE - 1));
		if (madvise(base, thps * THP_SIZE, MADV_HUGEPAGE) < 0) {
			perror("scale-load: madvise(MADV_HUGEPAGE)");
			return 1;
		}
		for (size_t i = 0; i < thps && !want_exit; i++)
			for (size_t s = 0; s < (i < low ? LOW_PAGES : sub); s++)
				base[i * THP_SIZE + s * page] = 1;
	}
	long backed = anon_huge_kib();
	if (backed >= 0)
		backed /= THP_SIZE / 1024;
	if (pte)
		for (size_t i = 0; i < thps; i++) {
			/* a protection change on part of a PMD splits the mapping, not the folio;
			 * the way back merges the VMAs again and leaves the page tables */
			if (mprotect(base + i * THP_SIZE, page, PROT_READ) < 0 ||
			    mprotect(base + i * THP_SIZE, page, PROT_READ | PROT_WRITE) < 0) {
				perror("scale-load: mprotect");
				return 1;
			}
		}
	if (write_ready(ready, (unsigned)thps, backed) < 0) {
		perror("scale-load: ready file");
		return 1;
	}
	for (unsigned round = 1; !want_exit; round++) {
		struct timespec t = {.tv_sec = every ? (time_t)every : 3600};

		nanosleep(&t, NULL);
		if (!every || want_exit)
			continue;
		/* half the full THPs, every subpage, with a value that stays non-zero */
		for (size_t i = low; i < low + (thps - low) / 2; i++)
			for (size_t s = 0; s < sub; s++)
				base[i * THP_SIZE + s * page] = (uint8_t)(1 + round % 255);
	}
	return 0;
}
