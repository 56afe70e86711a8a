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
 * before and after: the median of SECS*4 slices of 250 ms. Only its own memory is ever read.
 * The attacks promote must resist, each in a VMA of its own:
 *   --lazy-mb N       every page written, then given back with MADV_FREE (what jemalloc does):
 *                     prints lazy_lazyfree (smaps LazyFree) and lazy_thp;
 *   --nohuge-mb N     every page written, advised MADV_NOHUGEPAGE: must get no THP;
 *   --except-advised  PR_SET_THP_DISABLE with PR_THP_DISABLE_EXCEPT_ADVISED (6.18+; exits 3
 *                     saying "except_advised: unsupported" where the kernel refuses it);
 *   --pin             one page of the dense range's second 2 MiB held by a pipe (vmsplice);
 *   --flip-mb N       N MiB of 2 MiB ranges that a thread, while the promote runs, frees
 *                     whole (MADV_DONTNEED) and re-touches one page of, or refills, in turn
 *                     (what glibc and Go do); afterwards it counts the ranges left with one
 *                     touched page that are resident whole (mincore): zero-filled THPs;
 *   --exec-after-ms MS  runs the --promote command beside itself, and MS ms later exec()s
 *                     itself as a second image that maps the dense range's addresses again
 *                     and touches one page per 2 MiB, waits for the command, and prints that
 *                     range's THP bytes ("exec_image: thp=...").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1)
#endif

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
		    empty = {.name = "empty"}, lazy = {.name = "lazy"}, nohuge = {.name = "nohuge"},
		    flip = {.name = "flip"};
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

/* Rss, AnonHugePages and LazyFree (bytes) of the VMA that starts at r->p, from our own smaps. */
static int smaps_of(const struct range *r, uint64_t *ret_rss, uint64_t *ret_thp, uint64_t *ret_lazy)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool in = false;
	uint64_t lazy_free = 0;

	*ret_rss = *ret_thp = 0;
	if (!ret_lazy)
		ret_lazy = &lazy_free;
	*ret_lazy = 0;
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
		else if (in && sscanf(line, "LazyFree: %llu kB", &v) == 1)
			*ret_lazy = v * 1024;
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
	const struct range *rs[] = {&dense, &sparse, &zero, &lazy, &nohuge};

	printf("%s: rss_anon=%" PRIu64, when, rss_anon());
	for (unsigned i = 0; i < 5; i++) {
		uint64_t rss, thp, lazy_free;

		if (!rs[i]->len)
			continue;
		smaps_of(rs[i], &rss, &thp, &lazy_free);
		printf(" %s_rss=%" PRIu64 " %s_thp=%" PRIu64, rs[i]->name, rss, rs[i]->name, thp);
		if (rs[i] == &lazy)
			printf(" lazy_lazyfree=%" PRIu64, lazy_free);
	}
	printf("\n");
}

/* Maps the three ranges THP-aligned inside one PROT_NONE reservation, a 2 MiB gap after each
 * (so they stay three VMAs). */
static int map_ranges(void)
{
	struct range *rs[] = {&dense, &sparse, &zero, &empty, &lazy, &nohuge, &flip};
	const unsigned n = sizeof(rs) / sizeof(rs[0]);
	uint64_t total = n * THP;
	uint8_t *base, *p;

	for (unsigned i = 0; i < n; i++)
		total += rs[i]->len;
	base = mmap(NULL, total + THP, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		    0);
	if (base == MAP_FAILED)
		return -1;
	p = (uint8_t *)(((uintptr_t)base + THP - 1) & ~(uintptr_t)(THP - 1));
	for (unsigned i = 0; i < n; i++) {
		if (!rs[i]->len)
			continue;
		if (mprotect(p, rs[i]->len, PROT_READ | PROT_WRITE) < 0)
			return -1;
		rs[i]->p = p;
		p += rs[i]->len + THP;
	}
	return 0;
}

/* --flip-mb: range k is dense (every page written) or sparse (freed whole, one page written);
 * the thread turns them over in turn until told to stop. */
static volatile uint8_t *flip_dense;
static volatile int flip_stop;
static uint64_t flips;

static void fill_range(uint8_t *p, uint64_t len, uint64_t seed)
{
	for (uint64_t off = 0; off < len; off += page_size)
		*(volatile uint64_t *)(p + off) = mix(seed + off) | 1;
}

static void *flipper(void *arg)
{
	uint64_t n = flip.len / THP;

	(void)arg;
	for (uint64_t k = 0; !flip_stop; k = (k + 1) % n, flips++) {
		uint8_t *r = flip.p + k * THP;

		if (flip_dense[k]) {
			madvise(r, THP, MADV_DONTNEED);
			*(volatile uint64_t *)r = mix(k) | 1;
			flip_dense[k] = 0;
		} else {
			fill_range(r, THP, k);
			flip_dense[k] = 1;
		}
	}
	return NULL;
}

/* Ranges left sparse (one page written) that are resident whole: a collapse filled them. */
static void flip_report(void)
{
	uint64_t n = flip.len / THP, sparse_n = 0, filled = 0;
	unsigned char vec[THP / 4096];

	for (uint64_t k = 0; k < n; k++) {
		uint64_t resident = 0, pages = THP / page_size;

		if (flip_dense[k])
			continue;
		sparse_n++;
		if (pages > sizeof(vec) || mincore(flip.p + k * THP, THP, vec) < 0)
			continue;
		for (uint64_t i = 0; i < pages; i++)
			resident += vec[i] & 1;
		filled += resident == pages;
	}
	printf("flip: ranges=%" PRIu64 " flips=%" PRIu64 " sparse=%" PRIu64
	       " zero_filled=%" PRIu64 "\n",
	       n, flips, sparse_n, filled);
}

/* The second image of --exec-after-ms: the old dense range's addresses mapped again, one page
 * per 2 MiB touched; waits for the promote (still its child) and says what became THPs. */
static int exec_image(const char *addr_s, const char *len_s)
{
	struct range r = {.name = "exec"};
	uint64_t rss, thp;
	void *want = (void *)(uintptr_t)strtoull(addr_s, NULL, 0);

	page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	r.len = strtoull(len_s, NULL, 0);
	r.p = mmap(want, r.len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (r.p == MAP_FAILED || r.p != want) {
		printf("exec_image: cannot map %s again: %s\n", addr_s, strerror(errno));
		return 1;
	}
	for (uint64_t off = 0; off < r.len; off += THP)
		r.p[off] = 1;
	while (wait(NULL) > 0 || errno == EINTR)
		;
	smaps_of(&r, &rss, &thp, NULL);
	printf("exec_image: rss=%" PRIu64 " thp=%" PRIu64 "\n", rss, thp);
	return 0;
}

/* --exec-after-ms: the promote command runs beside this process, which exec()s itself MS ms
 * later (so the finder saw this image and the collapse meets the next one). */
static int promote_then_exec(const char *self, const char *cmd, unsigned ms)
{
	char addr[32], len[32];
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	pid_t child = fork();

	if (child < 0)
		return -1;
	if (child == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	nanosleep(&ts, NULL);
	snprintf(addr, sizeof(addr), "0x%" PRIxPTR, (uintptr_t)dense.p);
	snprintf(len, sizeof(len), "%" PRIu64, dense.len);
	fflush(stdout);
	execl("/proc/self/exe", self, "--exec-image", addr, len, (char *)NULL);
	perror("thpshrink-dense: exec");
	return -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: thpshrink-dense [--dense-mb N] [--sparse-mb N] [--zero-mb N] "
			"[--empty-mb N] [--lazy-mb N] [--nohuge-mb N] [--flip-mb N] [--pin] "
			"[--thp-disable | --except-advised] [--measure SECS] [--promote CMD "
			"[--exec-after-ms MS] | --wait]\n"
			"       thpshrink-dense --exec-image ADDR LEN\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t dense_mb = 512, sparse_mb = 64, zero_mb = 64, empty_mb = 0, lazy_mb = 0;
	uint64_t nohuge_mb = 0, flip_mb = 0;
	double secs = 0, before = 0, after = 0, t0;
	const char *promote = NULL;
	bool wait_sig = false, thp_disable = false, except_advised = false, pin = false;
	long exec_ms = -1;
	int pin_pipe[2] = {-1, -1};
	pthread_t flip_thread;
	char pid[32];
	int rc;

	if (argc == 4 && !strcmp(argv[1], "--exec-image"))
		return exec_image(argv[2], argv[3]);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--thp-disable"))
			thp_disable = true;
		else if (!strcmp(a, "--except-advised"))
			except_advised = true;
		else if (!strcmp(a, "--pin"))
			pin = true;
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
		else if (!strcmp(a, "--lazy-mb"))
			lazy_mb = strtoull(v, NULL, 10), i++;
		else if (!strcmp(a, "--nohuge-mb"))
			nohuge_mb = strtoull(v, NULL, 10), i++;
		else if (!strcmp(a, "--flip-mb"))
			flip_mb = strtoull(v, NULL, 10), i++;
		else if (!strcmp(a, "--exec-after-ms"))
			exec_ms = strtol(v, NULL, 10), i++;
		else if (!strcmp(a, "--measure"))
			secs = strtod(v, NULL), i++;
		else if (!strcmp(a, "--promote"))
			promote = v, i++;
		else
			usage();
	}
	if (!dense_mb || dense_mb % 2 || sparse_mb % 2 || zero_mb % 2 || dense_mb > 65536 ||
	    sparse_mb > 65536 || zero_mb > 65536 || empty_mb > (UINT64_C(1) << 24) ||
	    lazy_mb % 2 || lazy_mb > 65536 || nohuge_mb % 2 || nohuge_mb > 65536 || flip_mb % 2 ||
	    flip_mb > 65536 || (exec_ms >= 0 && !promote) || exec_ms > 600000 ||
	    (pin && dense_mb < 4))
		usage();
	page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	dense.len = dense_mb * MIB;
	sparse.len = sparse_mb * MIB;
	zero.len = zero_mb * MIB;
	empty.len = empty_mb * MIB;
	lazy.len = lazy_mb * MIB;
	nohuge.len = nohuge_mb * MIB;
	flip.len = flip_mb * MIB;
	signal(SIGUSR1, on_usr1);
	if (thp_disable && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0) {
		perror("PR_SET_THP_DISABLE");
		return 1;
	}
	if (except_advised &&
	    prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) < 0) {
		printf("except_advised: unsupported (%s)\n", strerror(errno));
		return 3;
	}
	if (map_ranges() < 0 || fill_dense() < 0) {
		perror("thpshrink-dense: mmap");
		return 1;
	}
	if (lazy.len) {
		fill_range(lazy.p, lazy.len, 7);
		if (madvise(lazy.p, lazy.len, MADV_FREE) < 0) {
			perror("thpshrink-dense: MADV_FREE");
			return 1;
		}
	}
	if (nohuge.len) {
		if (madvise(nohuge.p, nohuge.len, MADV_NOHUGEPAGE) < 0) {
			perror("thpshrink-dense: MADV_NOHUGEPAGE");
			return 1;
		}
		fill_range(nohuge.p, nohuge.len, 11);
	}
	if (flip.len) {
		flip_dense = calloc(flip.len / THP, 1);
		if (!flip_dense)
			return 1;
		for (uint64_t k = 0; k < flip.len / THP; k++) {
			fill_range(flip.p + k * THP, THP, k);
			flip_dense[k] = 1;
		}
	}
	if (pin) {
		struct iovec iov = {dense.p + THP, page_size};

		if (pipe(pin_pipe) < 0 || vmsplice(pin_pipe[1], &iov, 1, 0) != (ssize_t)page_size) {
			perror("thpshrink-dense: vmsplice");
			return 1;
		}
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
	if (flip.len && pthread_create(&flip_thread, NULL, flipper, NULL) != 0)
		return 1;
	if (promote && exec_ms >= 0) {
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		setenv("THPS_TARGET_PID", pid, 1);
		promote_then_exec(argv[0], promote, (unsigned)exec_ms);
		return 1;
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
	if (flip.len) {
		flip_stop = 1;
		pthread_join(flip_thread, NULL);
		flip_report();
	}
	print_state("after");
	if (secs > 0) {
		after = measure(secs);
		printf("after: reads_per_s=%.0f speedup=%.3f\n", after, before > 0 ? after / before : 0);
	}
	printf("data: %s\n", verify_dense() && verify_sparse() ? "verified" : "CORRUPT");
	if (pin_pipe[0] >= 0) {
		close(pin_pipe[0]);
		close(pin_pipe[1]);
	}
	printf("chase: %" PRIu64 "\n", chase_sum & 1);
	return 0;
}
