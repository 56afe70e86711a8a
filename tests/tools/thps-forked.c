/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thps-forked: N THPs shared by a parent and its forked child (both PMD-map the same THPs
 * until one writes), for the scanner's deduplication test.
 *
 *   thps-forked N READY_FILE
 *
 * Writes one non-zero byte into subpage 0 of each THP, forks, and writes
 * "READY pid=P child=C start=0xS" to READY_FILE; SIGTERM ends both. libc only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	const size_t thp = 2u << 20;
	struct sigaction sa = { .sa_handler = on_term };
	unsigned long n;
	uint8_t *raw, *base;
	pid_t child;
	FILE *f;
	char tmp[4096];

	if (argc != 3 || (n = strtoul(argv[1], NULL, 10)) == 0 || n > 4096) {
		fprintf(stderr, "usage: thps-forked N READY_FILE\n");
		return 2;
	}
	raw = mmap(NULL, (n + 1) * thp, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return 1;
	base = (uint8_t *)(((uintptr_t)raw + thp - 1) & ~(uintptr_t)(thp - 1));
	madvise(base, n * thp, MADV_HUGEPAGE);
	for (unsigned long i = 0; i < n; i++)
		base[i * thp] = 1;
	sigaction(SIGTERM, &sa, NULL);
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		while (!stop && getppid() != 1)
			pause();
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	f = fopen(tmp, "w");
	if (!f)
		return 1;
	fprintf(f, "READY pid=%d child=%d start=%p\n", (int)getpid(), (int)child, (void *)base);
	if (fclose(f) != 0 || rename(tmp, argv[2]) != 0)
		return 1;
	while (!stop)
		pause();
	kill(child, SIGTERM);
	waitpid(child, NULL, 0);
	return 0;
}
