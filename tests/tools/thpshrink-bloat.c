/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink-bloat: a THP workload with a chosen utilization mix, for tests and demos.
 *
 *   thpshrink-bloat --mix U:N[,U:N...] [--partial M:N] [--folio-size SIZE] [--ready-file F]
 *                   [--seconds S] [--list]
 *
 * --folio-size 64K (or 16K, 8K, ... up to the PMD size, default the PMD size): the unit is an
 * anonymous folio of that size (an mTHP, Linux 6.8+) instead of a PMD THP; U counts its
 * subpages. Which size the kernel really gives is the kernel's choice (its hugepages-<N>kB
 * modes): the caller enables that size and disables the larger ones first.
 *
 * Allocates N transparent huge pages with U utilized (non-zero) subpages each, by
 * madvise(MADV_HUGEPAGE) on THP-aligned memory, and optionally N partially mapped THPs of
 * which only the first M subpages stay mapped (all written, then the rest MADV_DONTNEED: the
 * folio stays allocated and charged until the kernel's deferred split runs). Then it prints
 *   READY pid=P start=0xS end=0xE thps=N thp_backed=K partial=N
 * (also atomically to --ready-file) and waits. SIGUSR1 re-reads every mapped subpage and
 * prints "VERIFY OK ..." or "VERIFY FAIL ...". SIGTERM/SIGINT exit 0.
 *
 * Standalone (libc only) so it links statically for the VM initramfs. */
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

#define MAX_GROUPS 64

struct group {
	unsigned utilized; /* non-zero subpages (mix) or mapped subpages (partial) */
	unsigned count;
	int partial;
};

static struct group groups[MAX_GROUPS];
static unsigned n_groups;
static size_t page_size, thp_size, subpages;
static uint8_t *base;
static size_t total_thps;
static volatile sig_atomic_t want_verify, want_exit;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		want_verify = 1;
	else
		want_exit = 1;
}

static int parse_pairs(const char *arg, int partial)
{
	char *copy = strdup(arg), *save = NULL, *tok;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':'), *end;
		unsigned long u, n;

		if (!colon || n_groups >= MAX_GROUPS)
			goto bad;
		*colon = 0;
		errno = 0;
		u = strtoul(tok, &end, 10);
		if (errno || *end || end == tok)
			goto bad;
		n = strtoul(colon + 1, &end, 10);
		if (errno || *end || end == colon + 1 || n == 0 || n > 1u << 20)
			goto bad;
		groups[n_groups++] = (struct group){ (unsigned)u, (unsigned)n, partial };
	}
	free(copy);
	return 0;
bad:
	fprintf(stderr, "thpshrink-bloat: bad %s '%s': expected U:N[,U:N...]\n",
		partial ? "--partial" : "--mix", arg);
	free(copy);
	return -EINVAL;
}

static size_t read_thp_size(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "re");
	unsigned long v = 0;

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : 2u << 20;
}

/* Which subpages of a THP with u utilized subpages hold data: spread evenly, so that the
 * scanner cannot get away with looking only at the start of a THP. */
static int subpage_used(unsigned u, size_t j)
{
	if (u == 0)
		return 0;
	if (u >= subpages)
		return 1;
	/* j is used iff some k < u has k*subpages/u == j */
	size_t k = (j * u + subpages - 1) / subpages;
	return k < u && k * subpages / u == j;
}

/* The data word written into subpage j of THP i; never zero. The offset varies so that
 * non-zero bytes sit at the start, middle and end of pages. */
static uint64_t pattern(size_t i, size_t j)
{
	return ((uint64_t)i << 32 | (uint64_t)j) * 0x9E3779B97F4A7C15ull | 1;
}
static size_t pattern_offset(size_t i, size_t j)
{
	return ((i + j) % (page_size / 8)) * 8;
}

/* Reads the used subpages (a program at work): their PTEs become young, which khugepaged
 * counts before it collapses a range. */
static void touch(void)
{
	size_t idx = 0;
	volatile uint64_t sink = 0;

	for (unsigned g = 0; g < n_groups; g++)
		for (unsigned c = 0; c < groups[g].count; c++, idx++)
			for (size_t j = 0; j < subpages; j++) {
				if (groups[g].partial ? j >= groups[g].utilized
						      : !subpage_used(groups[g].utilized, j))
					continue;
				sink += *(volatile uint64_t *)(base + idx * thp_size + j * page_size);
			}
	(void)sink;
}

static int verify(void)
{
	size_t idx = 0, bad = 0, checked = 0;

	for (unsigned g = 0; g < n_groups; g++)
		for (unsigned c = 0; c < groups[g].count; c++, idx++) {
			uint8_t *thp = base + idx * thp_size;
			for (size_t j = 0; j < subpages; j++) {
				uint8_t *p = thp + j * page_size;
				int used;
				if (groups[g].partial) {
					if (j >= groups[g].utilized)
						break; /* unmapped: never touch it */
					used = 1;
				} else {
					used = subpage_used(groups[g].utilized, j);
				}
				checked++;
				for (size_t o = 0; o < page_size; o += 8) {
					uint64_t v = *(uint64_t *)(p + o);
					uint64_t want = used && o == pattern_offset(idx, j) ? pattern(idx, j) : 0;
					if (v != want) {
						if (bad++ == 0)
							printf("VERIFY FAIL thp=%zu subpage=%zu offset=%zu\n", idx, j, o);
						break;
					}
				}
			}
		}
	if (!bad)
		printf("VERIFY OK thps=%zu subpages_checked=%zu\n", total_thps, checked);
	else
		printf("VERIFY FAIL bad_subpages=%zu of %zu\n", bad, checked);
	fflush(stdout);
	return bad ? -1 : 0;
}

static size_t thp_backed(void)
{
	/* AnonHugePages of our region's VMA, from smaps: PMD-mapped THPs only. */
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	int in = 0;
	unsigned long kb = 0, lo, hi;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = (uint8_t *)lo <= base && base < (uint8_t *)hi;
		else if (in && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb * 1024 / thp_size;
}

static void write_ready(const char *path, const char *line)
{
	char tmp[4096];
	FILE *f;

	if (!path)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f || fputs(line, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
		fprintf(stderr, "thpshrink-bloat: cannot write '%s': %m\n", path);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mix", required_argument, NULL, 'm' },
		{ "partial", required_argument, NULL, 'p' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 's' },
		{ "list", no_argument, NULL, 'l' },
		{ "folio-size", required_argument, NULL, 'f' },
		{ "touch-secs", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *ready = NULL;
	long seconds = 0, touch_secs = 0;
	int list = 0, c;
	size_t n_partial = 0, idx = 0, len;
	uint8_t *raw;
	char line[256];
	struct sigaction sa = { .sa_handler = on_signal };
	time_t t0;

	page_size = sysconf(_SC_PAGESIZE);
	thp_size = read_thp_size();
	subpages = thp_size / page_size;
	while ((c = getopt_long(argc, argv, "m:p:r:s:lhf:t:", opts, NULL)) != -1) {
		switch (c) {
		case 'f': {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);

			if (*end == 'K' || *end == 'k')
				v <<= 10, end++;
			else if (*end == 'M' || *end == 'm')
				v <<= 20, end++;
			if (*end || v < 2 * page_size || v > thp_size || (v & (v - 1))) {
				fprintf(stderr, "thpshrink-bloat: bad --folio-size '%s': expected a "
					"power of two from %zuK to the PMD size %zuK\n", optarg,
					2 * page_size >> 10, thp_size >> 10);
				return 2;
			}
			thp_size = v;
			subpages = thp_size / page_size;
			break;
		}
		case 'm':
		case 'p':
			if (parse_pairs(optarg, c == 'p') < 0)
				return 2;
			break;
		case 'r':
			ready = optarg;
			break;
		case 's':
			seconds = strtol(optarg, NULL, 10);
			break;
		case 'l':
			list = 1;
			break;
		case 't':
			touch_secs = strtol(optarg, NULL, 10);
			break;
		case 'h':
			printf("usage: thpshrink-bloat --mix U:N[,U:N...] [--partial M:N] "
			       "[--folio-size SIZE] [--ready-file F] [--seconds S] [--touch-secs S] [--list]\n");
			return 0;
		default:
			return 2;
		}
	}
	for (unsigned g = 0; g < n_groups; g++) {
		if (groups[g].utilized > subpages) {
			fprintf(stderr, "thpshrink-bloat: %u utilized subpages > %zu per THP\n",
				groups[g].utilized, subpages);
			return 2;
		}
		total_thps += groups[g].count;
		if (groups[g].partial)
			n_partial += groups[g].count;
	}
	if (!total_thps) {
		fprintf(stderr, "thpshrink-bloat: nothing to allocate: give --mix and/or --partial\n");
		return 2;
	}
	len = (total_thps + 1) * thp_size;
	raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		fprintf(stderr, "thpshrink-bloat: mmap %zu bytes: %m\n", len);
		return 1;
	}
	base = (uint8_t *)(((uintptr_t)raw + thp_size - 1) & ~(uintptr_t)(thp_size - 1));
	if (madvise(base, total_thps * thp_size, MADV_HUGEPAGE) < 0)
		fprintf(stderr, "thpshrink-bloat: madvise(MADV_HUGEPAGE): %m (continuing)\n");

	for (unsigned g = 0; g < n_groups; g++)
		for (unsigned k = 0; k < groups[g].count; k++, idx++) {
			uint8_t *thp = base + idx * thp_size;
			/* A write fault allocates the whole (zeroed) THP; a read would map the
			 * shared huge zero page instead. */
			*(volatile uint8_t *)thp = 0;
			for (size_t j = 0; j < subpages; j++)
				if (groups[g].partial || subpage_used(groups[g].utilized, j))
					*(uint64_t *)(thp + j * page_size + pattern_offset(idx, j)) =
						pattern(idx, j);
			if (groups[g].partial && groups[g].utilized < subpages)
				madvise(thp + groups[g].utilized * page_size,
					(subpages - groups[g].utilized) * page_size, MADV_DONTNEED);
			if (list)
				printf("THP %zu addr=%p utilized=%u%s\n", idx, (void *)thp,
				       groups[g].utilized, groups[g].partial ? " partial" : "");
		}

	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	snprintf(line, sizeof(line),
		 "READY pid=%d start=%p end=%p thps=%zu thp_backed=%zu partial=%zu folio=%zu\n",
		 getpid(), (void *)base, (void *)(base + total_thps * thp_size), total_thps,
		 thp_backed(), n_partial, thp_size);
	fputs(line, stdout);
	fflush(stdout);
	write_ready(ready, line);

	t0 = time(NULL);
	time_t last_touch = t0;
	while (!want_exit) {
		if (touch_secs > 0 && time(NULL) - last_touch >= touch_secs) {
			last_touch = time(NULL);
			touch();
		}
		if (want_verify) {
			want_verify = 0;
			verify();
		}
		if (seconds > 0 && time(NULL) - t0 >= seconds)
			break;
		usleep(50 * 1000);
	}
	return 0;
}
