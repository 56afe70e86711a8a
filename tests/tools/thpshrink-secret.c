/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink-secret: a process whose THPs hold a secret, and processes that change under a scan.
 *
 *   thpshrink-secret [--thps N] [--ready-file F]         < SECRET
 *       reads one line (the secret, at most 64 bytes) from stdin, so it is in no argv or
 *       environment, only in memory: N low-utilization THPs with the secret in their first
 *       subpage and one THP filled with it. Prints "READY pid=P start=0xS end=0xE thps=K" with
 *       K the THPs the kernel really backed, then waits for SIGTERM.
 *   thpshrink-secret --churn [--ready-file F]
 *       maps, fills and unmaps 4 MiB of THP memory in a loop (an unmap during every scan).
 *   thpshrink-secret --exec-after MS PROG [ARG...]
 *       builds THPs like the first form, then after MS milliseconds execs PROG (an exec
 *       during the scan: the mm goes away under the scanner).
 *
 * libc only, so it links statically for the VM initramfs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define THP (2UL << 20)

static volatile sig_atomic_t want_exit;

static void on_signal(int sig)
{
	(void)sig;
	want_exit = 1;
}

static uint8_t *thp_area(size_t n)
{
	uint8_t *p = mmap(NULL, (n + 1) * THP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + THP - 1) & ~(THP - 1));
	(void)madvise(a, n * THP, MADV_HUGEPAGE);
	return a;
}

static unsigned backed(const uint8_t *a, size_t n)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	unsigned long start = 0, end = 0, kb = 0, total = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
			continue;
		if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1 && start <= (uintptr_t)a &&
		    (uintptr_t)a < end)
			total += kb;
	}
	fclose(f);
	(void)n;
	return total / (THP >> 10);
}

static void ready(const char *file, const char *line)
{
	fputs(line, stdout);
	fflush(stdout);
	if (file) {
		char tmp[4096];
		FILE *f;

		snprintf(tmp, sizeof(tmp), "%s.tmp", file);
		f = fopen(tmp, "we");
		if (f) {
			fputs(line, f);
			fclose(f);
			rename(tmp, file);
		}
	}
}

int main(int argc, char **argv)
{
	char secret[80], line[256];
	const char *ready_file = NULL;
	size_t n = 4, len;
	long exec_ms = -1;
	int churn = 0, i;
	uint8_t *a;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--thps") && i + 1 < argc)
			n = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--ready-file") && i + 1 < argc)
			ready_file = argv[++i];
		else if (!strcmp(argv[i], "--churn"))
			churn = 1;
		else if (!strcmp(argv[i], "--exec-after") && i + 2 < argc) {
			exec_ms = strtol(argv[++i], NULL, 10);
			i++;
			break;
		} else {
			fprintf(stderr, "usage: see the comment at the top of thpshrink-secret.c\n");
			return 2;
		}
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	if (churn) {
		snprintf(line, sizeof(line), "READY pid=%d churn\n", (int)getpid());
		ready(ready_file, line);
		while (!want_exit) {
			a = thp_area(2);
			if (!a)
				return 1;
			memset(a, 0x5a, 2 * THP);
			munmap((void *)((uintptr_t)a & ~(THP - 1)), 3 * THP);
		}
		return 0;
	}
	if (n < 1 || n > 1024)
		return 2;
	if (!fgets(secret, sizeof(secret), stdin))
		return 2;
	secret[strcspn(secret, "\n")] = 0;
	len = strlen(secret);
	if (len < 8 || len > 64)
		return 2;
	a = thp_area(n + 1);
	if (!a)
		return 1;
	for (size_t t = 0; t < n; t++) /* low-util: one subpage holds the secret */
		memcpy(a + t * THP + 100, secret, len);
	for (size_t off = 0; off + len <= THP; off += len) /* one THP full of it */
		memcpy(a + n * THP + off, secret, len);
	memset(secret, 0, sizeof(secret));
	snprintf(line, sizeof(line), "READY pid=%d start=%p end=%p thps=%u\n", (int)getpid(), (void *)a,
		 (void *)(a + (n + 1) * THP), backed(a, n + 1));
	ready(ready_file, line);
	if (exec_ms >= 0) {
		struct timespec ts = { exec_ms / 1000, (exec_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		execvp(argv[i], argv + i);
		return 127;
	}
	while (!want_exit)
		pause();
	return 0;
}
