/* SPDX-License-Identifier: GPL-2.0-or-later */
/* latency-chase: the C service of the latency benchmark (tests/bench/latency.sh). It asks for
 * THPs itself (MADV_HUGEPAGE, so it has them under THP "madvise") and serves "requests" without
 * end: each one --loads dependent random reads over its hot memory (a pointer chase, the access
 * pattern where a TLB miss shows), timed one by one. Its memory, each range in a VMA of its own:
 *   hot:    --hot-mb MiB advised, every page written and chased (THPs a split must keep);
 *   plain:  --plain-mb MiB not advised, every page written and chased (4 KiB pages under THP
 *           "madvise": dense ranges `thpshrink promote` collapses);
 *   sparse: --sparse-mb MiB advised, written whole, then the data freed the two ways programs
 *           free: half the THPs zeroed but for 8 subpages (low-utilization THPs), half given
 *           back with MADV_DONTNEED but for 8 subpages (partially mapped THPs): what a split
 *           gives back. Never read again.
 * --4k calls PR_SET_THP_DISABLE first: the same service in 4 KiB pages only.
 * Control on stdin, one line each: "reset" starts a phase, "print NAME" prints the phase's line
 * (latency-hist.h) and starts the next, "quit" ends. Prints "ready pid=N" once set up. Reads
 * and writes only its own memory. */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "latency-hist.h"

#define MIB  (UINT64_C(1) << 20)
#define THP  (2 * MIB)
#define LINE 64u

static struct lat_hist hist;

static uint8_t *map_aligned(uint64_t len, bool huge) {
	uint8_t *p = mmap(NULL, len + THP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *) (((uintptr_t) p + THP - 1) & ~(uintptr_t) (THP - 1));
	if (huge && madvise(a, len, MADV_HUGEPAGE) < 0)
		return NULL;
	return a;
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) {
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* One random cycle through every line of hot and plain; returns its start. */
static uint8_t *link_chase(uint8_t *hot, uint64_t hot_len, uint8_t *plain, uint64_t plain_len) {
	uint64_t nh = hot_len / LINE, n = nh + plain_len / LINE;
	uint8_t **order = malloc(n * sizeof(*order));

	if (!order)
		return NULL;
	for (uint64_t i = 0; i < n; i++)
		order[i] = i < nh ? hot + i * LINE : plain + (i - nh) * LINE;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j = rnd() % (i + 1);
		uint8_t *t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (uint64_t i = 0; i < n; i++) {
		*(uint8_t **) order[i] = order[(i + 1) % n];
		memset(order[i] + sizeof(uint8_t *), (int) (i | 1), LINE - sizeof(uint8_t *));
	}
	uint8_t *start = order[0];
	free(order);
	return start;
}

static void make_sparse(uint8_t *p, uint64_t len) {
	const uint64_t keep = 8 * 4096;

	memset(p, 0x5a, len);
	for (uint64_t off = 0; off + THP <= len; off += THP) {
		if ((off / THP) % 2 == 0)
			memset(p + off + keep, 0, THP - keep);
		else
			(void) madvise(p + off + keep, THP - keep, MADV_DONTNEED);
	}
}

/* One control line. Returns 1 to go on, 0 on "quit". */
static int command(const char *line) {
	if (strncmp(line, "print ", 6) == 0) {
		lh_print(stdout, &hist, line + 6);
		lh_reset(&hist);
	} else if (strcmp(line, "reset") == 0) {
		lh_reset(&hist);
	} else if (strcmp(line, "quit") == 0) {
		return 0;
	}
	return 1;
}

/* Reads what is there on stdin, with read(2) and not stdio: a buffered line would hide from
 * poll(2) until the next one came. The script writes whole short lines (atomic on a FIFO).
 * Returns 1 to go on, 0 on "quit" or end of input. */
static int control(void) {
	struct pollfd pfd = {.fd = 0, .events = POLLIN};
	char buf[512];
	ssize_t n;

	if (poll(&pfd, 1, 0) <= 0)
		return 1;
	n = read(0, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (char *line = buf, *end; *line; line = end + 1) {
		end = strchr(line, '\n');
		if (!end)
			return command(line);
		*end = '\0';
		if (!command(line))
			return 0;
	}
	return 1;
}

int main(int argc, char **argv) {
	uint64_t hot_mb = 128, plain_mb = 64, sparse_mb = 64, loads = 256;
	bool small = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--4k") == 0)
			small = true;
		else if (i + 1 < argc && strcmp(argv[i], "--hot-mb") == 0)
			hot_mb = strtoull(argv[++i], NULL, 10);
		else if (i + 1 < argc && strcmp(argv[i], "--plain-mb") == 0)
			plain_mb = strtoull(argv[++i], NULL, 10);
		else if (i + 1 < argc && strcmp(argv[i], "--sparse-mb") == 0)
			sparse_mb = strtoull(argv[++i], NULL, 10);
		else if (i + 1 < argc && strcmp(argv[i], "--loads") == 0)
			loads = strtoull(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: latency-chase [--hot-mb N] [--plain-mb N] [--sparse-mb N] [--loads N] [--4k]\n");
			return 2;
		}
	}
	if (hot_mb + plain_mb == 0 || loads == 0) {
		fprintf(stderr, "latency-chase: nothing to chase\n");
		return 2;
	}
	if (small && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0) {
		fprintf(stderr, "latency-chase: PR_SET_THP_DISABLE: %s\n", strerror(errno));
		return 1;
	}
	uint8_t *hot = map_aligned(hot_mb * MIB, true), *plain = map_aligned(plain_mb * MIB, false);
	uint8_t *sparse = sparse_mb ? map_aligned(sparse_mb * MIB, true) : NULL;
	if (!hot || !plain || (sparse_mb && !sparse)) {
		fprintf(stderr, "latency-chase: mmap: %s\n", strerror(errno));
		return 1;
	}
	if (sparse)
		make_sparse(sparse, sparse_mb * MIB);
	uint8_t *p = link_chase(hot, hot_mb * MIB, plain, plain_mb * MIB);
	if (!p) {
		fprintf(stderr, "latency-chase: out of memory\n");
		return 1;
	}
	printf("ready pid=%d hot=%p plain=%p sparse=%p\n", (int) getpid(), (void *) hot, (void *) plain,
	       (void *) sparse);
	fflush(stdout);
	lh_reset(&hist);
	for (uint64_t r = 0;; r++) {
		if (r % 64 == 0 && !control())
			break;
		uint64_t t0 = lh_now_ns();
		for (uint64_t i = 0; i < loads; i++)
			p = *(uint8_t *volatile *) p;
		lh_add(&hist, lh_now_ns() - t0);
	}
	/* the chase's end, so the loop's loads cannot be dropped */
	return p == NULL;
}
