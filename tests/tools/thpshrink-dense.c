/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink-dense: the workload of `thpshrink promote`'s tests and benchmark. A process that
 * never madvises, holding (each in a VMA of its own, PROT_NONE gaps between them):
 *   dense:  --dense-mb MiB, every page written: a random cyclic pointer chase over its 64-byte
 *           lines plus a checksum pattern (what a promote must turn into THPs);
 *   sparse: --sparse-mb MiB, one page in 8 written (a collapse would fill 7/8 with zeros);
 *   zero:   --zero-mb MiB, only read: mapped to the shared zero page;
 *   empty:  --empty-mb MiB, never touched (a reservation: what the finders' cost is about).
 * It prints "ready pid=... <range> ..." and then, when told (SIGUSR1, or --promote CMD run
 * here with THPS_TARGET_PID set), looks at itself again: THP bytes and Rss of each range from
 * its own smaps, RssAnon, the data, and (--measure SECS) dependent random reads per second
 * before and after: the median of SECS*4 slices of 250 ms. Only its own memory is ever read. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MIB   (UINT64_C(1) << 20)
#define THP   (2 * MIB)
#define LINE  64u
#define WORDS (LINE / sizeof(uint64_t))

struct range {
	const char *name;
	uint8_t *p;
	uint64_t len;
};

static struct range dense = {.name = "dense"}, sparse = {.name = "sparse"}, zero = {.name = "zero"},
		    empty = {.name = "empty"};
static uint64_t page_size;
static uint64_t chase_lines, chase_sum;
static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	return x ^ (x >> 33);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A random cycle through all lines (Sattolo), line i's word 0 = the next line's index; words
 * 1..7 = mix(line, word). The order array is a temporary mapping, unmapped before measuring. */
static int fill_dense(void)
{
	uint64_t n = dense.len / LINE, *w = (uint64_t *)dense.p, s = 0x1234;
	uint32_t *order = mmap(NULL, n * sizeof(uint32_t), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (order == MAP_FAILED || n > UINT32_MAX)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j = (s = mix(s + i)) % i, t = order[i];

		order[i] = order[j];
		order[j] = (uint32_t)t;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t line = order[i];

		w[line * WORDS] = order[(i + 1) % n];
		for (unsigned k = 1; k < WORDS; k++)
			w[line * WORDS + k] = mix(line * WORDS + k);
	}
	munmap(order, n * sizeof(uint32_t));
	chase_lines = n;
	return 0;
}

/* 1 if the dense data is what fill_dense() wrote: the pattern words, and word 0 a single cycle
 * through every line. */
static int verify_dense(void)
{
	const uint64_t *w = (const uint64_t *)dense.p;
	uint64_t at = 0, steps = 0;

	for (uint64_t line = 0; line < chase_lines; line++)
		for (unsigned k = 1; k < WORDS; k++)
			if (w[line * WORDS + k] != mix(line * WORDS + k))
				return 0;
	do {
		at = w[at * WORDS];
		if (at >= chase_lines)
			return 0;
	} while (++steps <= chase_lines && at != 0);
	return at == 0 && steps == chase_lines;
}

static int verify_sparse(void)
{
	for (uint64_t off = 0; off < sparse.len; off += page_size) {
		uint64_t v;

		memcpy(&v, sparse.p + off, sizeof(v));
		if (v != ((off / page_size) % 8 == 0 ? mix(off) : 0))
			return 0;
	}
	for (uint64_t off = 0; off < zero.len; off += page_size)
		if (zero.p[off])
			return 0;
	return 1;
}

/* Dependent random reads per second: the median of n slices of 250 ms. */
static double measure(double secs)
{
	const uint64_t *w = (const uint64_t *)dense.p;
	unsigned n = (unsigned)(secs * 4);
	double rates[400];
	uint64_t at = 0;

	if (n == 0)
		return 0;
	if (n > 400)
		n = 400;
	for (unsigned s = 0; s < n; s++) {
		double t0 = now(), t;
		uint64_t reads = 0;

		do {
			for (unsigned k = 0; k < 4096; k++)
				at = w[at * WORDS];
			reads += 4096;
		} while ((t = now()) - t0 < 0.25);
		rates[s] = reads / (t - t0);
	}
	chase_sum += at; /* keep the chase */
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && rates[j - 1] > rates[j]; j--) {
			double x = rates[j];
			rates[j] = rates[j - 1];
			rates[j - 1] = x;
		}
	return n % 2 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2;
}

/* Rss and AnonHugePages (bytes) of the VMA that starts at r->p, from our own smaps. */
static int smaps_of(const struct range *r, uint64_t *ret_rss, uint64_t *ret_thp)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool in = false;

	*ret_rss = *ret_thp = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, v;

		if (sscanf(line, "%llx-%llx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = a == (uintptr_t)r->p;
		else if (in && sscanf(line, "Rss: %llu kB", &v) == 1)
			*ret_rss = v * 1024;
		else if (in && sscanf(line, "AnonHugePages: %llu kB", &v) == 1)
			*ret_thp = v * 1024;
	}
	fclose(f);
	return 0;
}

static uint64_t rss_anon(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %llu kB", &v) == 1)
			break;
	fclose(f);
	return v * 1024;
}

static void print_state(const char *when)
{
	const struct range *rs[] = {&dense, &sparse, &zero};

	printf("%s: rss_anon=%" PRIu64, when, rss_anon());
	for (unsigned i = 0; i < 3; i++) {
		uint64_t rss, thp;

		if (!rs[i]->len)
			continue;
		smaps_of(rs[i], &rss, &thp);
		printf(" %s_rss=%" PRIu64 " %s_thp=%" PRIu64, rs[i]->name, rss, rs[i]->name, thp);
	}
	printf("\n");
}

/* Maps the three ranges THP-aligned inside one PROT_NONE reservation, a 2 MiB gap after each
 * (so they stay three VMAs). */
static int map_ranges(void)
{
	uint64_t total = dense.len + sparse.len + zero.len + empty.len + 4 * THP;
	uint8_t *base = mmap(NULL, total + THP, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0), *p;
	struct range *rs[] = {&dense, &sparse, &zero, &empty};

	if (base == MAP_FAILED)
		return -1;
	p = (uint8_t *)(((uintptr_t)base + THP - 1) & ~(uintptr_t)(THP - 1));
	for (unsigned i = 0; i < 4; i++) {
		if (!rs[i]->len)
			continue;
		if (mprotect(p, rs[i]->len, PROT_READ | PROT_WRITE) < 0)
			return -1;
		rs[i]->p = p;
		p += rs[i]->len + THP;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: thpshrink-dense [--dense-mb N] [--sparse-mb N] [--zero-mb N] "
			"[--empty-mb N] [--thp-disable] [--measure SECS] [--promote CMD | --wait]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t dense_mb = 512, sparse_mb = 64, zero_mb = 64, empty_mb = 0;
	double secs = 0, before = 0, after = 0, t0;
	const char *promote = NULL;
	bool wait_sig = false, thp_disable = false;
	char pid[32];
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--thp-disable"))
			thp_disable = true;
		else if (!strcmp(a, "--wait"))
			wait_sig = true;
		else if (!v)
			usage();
		else if (!strcmp(a, "--dense-mb"))
			dense_mb = strtoull(v, NULL, 10), i++;
		else if (!strcmp(a, "--sparse-mb"))
			sparse_mb = strtoull(v, NULL, 10), i++;
		else if (!strcmp(a, "--empty-mb"))
			empty_mb = strtoull(v, NULL, 10), i++;
		else if (!strcmp(a, "--zero-mb"))
			zero_mb = strtoull(v, NULL, 10), i++;
		else if (!strcmp(a, "--measure"))
			secs = strtod(v, NULL), i++;
		else if (!strcmp(a, "--promote"))
			promote = v, i++;
		else
			usage();
	}
	if (!dense_mb || dense_mb % 2 || sparse_mb % 2 || zero_mb % 2 || dense_mb > 65536 ||
	    sparse_mb > 65536 || zero_mb > 65536 || empty_mb > (UINT64_C(1) << 24))
		usage();
	page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	dense.len = dense_mb * MIB;
	sparse.len = sparse_mb * MIB;
	zero.len = zero_mb * MIB;
	empty.len = empty_mb * MIB;
	signal(SIGUSR1, on_usr1);
	if (thp_disable && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0) {
		perror("PR_SET_THP_DISABLE");
		return 1;
	}
	if (map_ranges() < 0 || fill_dense() < 0) {
		perror("thpshrink-dense: mmap");
		return 1;
	}
	for (uint64_t off = 0; off < sparse.len; off += page_size)
		if ((off / page_size) % 8 == 0) {
			uint64_t v = mix(off);
			memcpy(sparse.p + off, &v, sizeof(v));
		}
	for (uint64_t off = 0; off < zero.len; off += page_size)
		chase_sum += *(volatile uint8_t *)(zero.p + off);

	printf("ready pid=%d dense=0x%" PRIxPTR "-0x%" PRIxPTR, (int)getpid(),
	       (uintptr_t)dense.p, (uintptr_t)(dense.p + dense.len));
	if (sparse.len)
		printf(" sparse=0x%" PRIxPTR "-0x%" PRIxPTR, (uintptr_t)sparse.p,
		       (uintptr_t)(sparse.p + sparse.len));
	if (zero.len)
		printf(" zero=0x%" PRIxPTR "-0x%" PRIxPTR, (uintptr_t)zero.p,
		       (uintptr_t)(zero.p + zero.len));
	printf("\n");
	print_state("before");
	fflush(stdout);
	if (secs > 0) {
		before = measure(secs);
		printf("before: reads_per_s=%.0f\n", before);
		fflush(stdout);
	}
	if (promote) {
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		setenv("THPS_TARGET_PID", pid, 1);
		t0 = now();
		rc = system(promote);
		printf("promote: exit=%d seconds=%.3f\n", WIFEXITED(rc) ? WEXITSTATUS(rc) : -1,
		       now() - t0);
		fflush(stdout);
	} else if (wait_sig) {
		while (!go)
			pause();
	}
	print_state("after");
	if (secs > 0) {
		after = measure(secs);
		printf("after: reads_per_s=%.0f speedup=%.3f\n", after, before > 0 ? after / before : 0);
	}
	printf("data: %s\n", verify_dense() && verify_sparse() ? "verified" : "CORRUPT");
	printf("chase: %" PRIu64 "\n", chase_sum & 1);
	return 0;
}
