/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink-hop: one THP in each of N new cgroups, from one process, for the VM's test of many
 * cgroups (tests/vm/scenarios/55-trust.sh).
 *
 *   thpshrink-hop DIR N
 *
 * In DIR (a cgroup v2 directory with +memory in its subtree_control), creates c00000 ... and,
 * for each, moves itself there and faults in one 2 MiB THP (first byte written): cgroup v2
 * charges a page to the cgroup of the process that faults it and never moves the charge, so
 * one process ends up holding a THP charged to each of N cgroups. Prints "READY N THPS M" when
 * done (M = the THPs /proc/self/smaps_rollup shows), then sleeps until killed. libc only, so the
 * VM harness can link it statically. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define THP_SIZE (2u << 20)

static int join(const char *name)
{
	char path[64], pid[32];
	int fd, n, r = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", name);
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, pid, (size_t)n) != n)
		r = -errno;
	close(fd);
	return r;
}

static unsigned long anon_huge_kib(void)
{
	char line[256];
	unsigned long kib = 0;
	FILE *f = fopen("/proc/self/smaps_rollup", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %lu kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

int main(int argc, char **argv)
{
	unsigned long n;
	char *end;

	if (argc != 3 || (n = strtoul(argv[2], &end, 10)) == 0 || *end || n > 99999) {
		fprintf(stderr, "usage: thpshrink-hop DIR N (1 <= N <= 99999)\n");
		return 2;
	}
	if (chdir(argv[1]) < 0) {
		fprintf(stderr, "thpshrink-hop: cannot enter '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (unsigned long i = 0; i < n; i++) {
		char name[16];
		uint8_t *p;
		uintptr_t a;
		int r;

		snprintf(name, sizeof(name), "c%05lu", i);
		if (mkdir(name, 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "thpshrink-hop: mkdir '%s': %s\n", name, strerror(errno));
			return 1;
		}
		r = join(name);
		if (r < 0) {
			fprintf(stderr, "thpshrink-hop: joining '%s': %s\n", name, strerror(-r));
			return 1;
		}
		p = mmap(NULL, 2 * THP_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			fprintf(stderr, "thpshrink-hop: mmap: %s\n", strerror(errno));
			return 1;
		}
		a = ((uintptr_t)p + THP_SIZE - 1) & ~(uintptr_t)(THP_SIZE - 1);
		madvise((void *)a, THP_SIZE, MADV_HUGEPAGE);
		*(volatile uint8_t *)a = 1;
	}
	printf("READY %lu THPS %lu\n", n, anon_huge_kib() / (THP_SIZE / 1024));
	fflush(stdout);
	for (;;)
		pause();
}
