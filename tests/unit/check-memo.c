/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The scan memo (controller/pages/memo.h) on real THPs of this process, scanned with the real
 * scanner over the real /proc (root: pagemap PFNs and kpageflags): the second pass reads only
 * the candidates and gives the same histogram; a THP filled in place shows at the next pass;
 * a full THP zeroed in place shows once the refresh rotation reaches it; unmapped THPs leave
 * and new ones arrive at the next pass. The table itself: many entries, deletion, growth. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "context.h"
#include "memo.h"
#include "scan.h"
#include "scanner.h"
#include "thp.h"
#include "test-main.h"

#define N_LOW 8
#define N_FULL 8

static struct thps_ctx ctx;
static struct thps_geometry geom;
static uint8_t *thps;   /* N_LOW + N_FULL THPs */
static size_t thp_size;

static bool thps_ready(void)
{
	char line[256];
	unsigned long kib = 0;
	FILE *f = fopen("/proc/self/smaps_rollup", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %lu kB", &kib) == 1)
			break;
	fclose(f);
	return kib * 1024 >= (N_LOW + N_FULL) * thp_size;
}

/* Allocates the THPs: the first N_LOW with one used subpage, the rest full. 0, or a skip
 * reason. */
static const char *setup_thps(void)
{
	uint8_t *p;

	if (geteuid() != 0)
		return "needs root (pagemap PFNs, /proc/kpageflags)";
	thps_ctx_init(&ctx);
	if (thps_geometry_load(&ctx, &geom) < 0)
		return "no THP support in this kernel";
	thp_size = geom.thp_size;
	p = mmap(NULL, (N_LOW + N_FULL + 1) * thp_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return "mmap failed";
	thps = (uint8_t *)(((uintptr_t)p + thp_size - 1) & ~(uintptr_t)(thp_size - 1));
	if (madvise(thps, (N_LOW + N_FULL) * thp_size, MADV_HUGEPAGE) < 0)
		return "madvise(MADV_HUGEPAGE) refused (THP disabled?)";
	for (size_t i = 0; i < N_LOW + N_FULL; i++) {
		thps[i * thp_size] = 1;
		if (i >= N_LOW)
			for (size_t o = 0; o < thp_size; o += geom.page_size)
				thps[i * thp_size + o] = 1;
	}
	return thps_ready() ? NULL : "the kernel gave no THPs (THP mode 'never'?)";
}

/* One pass over this process with the memo. */
static void pass_verify(struct thps_memo *memo, uint64_t refresh, uint64_t verify,
			struct thps_scan *scan)
{
	struct thps_scan_opts opts = { .pid = getpid(), .memo = memo, .memo_exact_max_per512 = 102,
				       .memo_refresh_folios = refresh, .memo_verify_folios = verify };

	thps_scan_init(scan, &geom);
	ck_assert_int_eq(thps_scanner_collect(&ctx, &opts, NULL, scan), 0);
}

static void pass(struct thps_memo *memo, uint64_t refresh, struct thps_scan *scan)
{
	pass_verify(memo, refresh, 1, scan);
}

static uint64_t bucket(const struct thps_scan *s, unsigned b)
{
	return s->total.hist.thps[b];
}

START_TEST(test_memo_real_thps)
{
	struct thps_memo *memo = NULL;
	struct thps_scan s1, s2, s;
	const char *why = setup_thps();
	unsigned passes;

	if (why) {
		THPS_CASE_SKIP("test_memo_real_thps", "%s", why);
		return;
	}
	ck_assert_int_eq(thps_memo_new(&memo), 0);
	pass(memo, 1, &s1);
	ck_assert_uint_eq(s1.summary.folios_read, N_LOW + N_FULL);
	ck_assert_uint_eq(s1.summary.folios_memo, 0);
	ck_assert_uint_eq(bucket(&s1, 0), N_LOW);
	ck_assert_uint_eq(bucket(&s1, 9), N_FULL);

	/* steady: the candidates read, the full ones carried but for the rotation's window (a
	 * 16th of the slots at one refresh a pass: a few at most) */
	pass(memo, 1, &s2);
	ck_assert_uint_eq(s2.summary.folios_read, N_LOW);
	ck_assert_uint_le(s2.summary.folios_refreshed, N_FULL / 2);
	ck_assert_uint_eq(s2.summary.folios_memo + s2.summary.folios_refreshed, N_FULL);
	ck_assert_mem_eq(&s1.total.hist, &s2.total.hist, sizeof(s1.total.hist));
	ck_assert_uint_lt(s2.summary.bytes_read, s1.summary.bytes_read);
	/* the real PAGEMAP_SCAN (Linux 6.7+): carried THPs need no head-PFN read, but for the
	 * identity window's few */
	if (strcmp(s2.summary.method, "PAGEMAP_SCAN") == 0)
		ck_assert_uint_ge(s2.summary.folios_trusted, s2.summary.folios_memo / 2);
	else
		ck_assert_uint_eq(s2.summary.folios_trusted, 0);
	fprintf(stderr, "memo: %s, pass 2 trusted %lu of %lu carried\n", s2.summary.method,
		(unsigned long)s2.summary.folios_trusted, (unsigned long)s2.summary.folios_memo);
	fprintf(stderr, "memo: pass 1 read %lu bytes, pass 2 %lu (%lu read, %lu refreshed, %lu carried)\n",
		(unsigned long)s1.summary.bytes_read, (unsigned long)s2.summary.bytes_read,
		(unsigned long)s2.summary.folios_read, (unsigned long)s2.summary.folios_refreshed,
		(unsigned long)s2.summary.folios_memo);
	thps_scan_free(&s1);
	thps_scan_free(&s2);

	/* filled in place (same physical page): at the next pass */
	for (size_t o = 0; o < thp_size; o += geom.page_size)
		thps[o] = 2;
	pass(memo, 1, &s);
	ck_assert_uint_eq(bucket(&s, 0), N_LOW - 1);
	ck_assert_uint_eq(bucket(&s, 9), N_FULL + 1);
	thps_scan_free(&s);

	/* a full THP zeroed in place: when the rotation (one refresh a pass) reaches it, at most
	 * a pass per memo entry plus one */
	memset(thps + (N_LOW + N_FULL - 1) * thp_size, 0, thp_size);
	for (passes = 1; passes <= N_LOW + N_FULL + 2; passes++) {
		pass(memo, 1, &s);
		if (bucket(&s, 0) == N_LOW) {
			thps_scan_free(&s);
			break;
		}
		thps_scan_free(&s);
	}
	fprintf(stderr, "memo: a zeroed full THP showed after %u passes at 1 refresh a pass\n", passes);
	ck_assert_uint_le(passes, N_LOW + N_FULL + 2);

	/* a full THP replaced at the same address by a low one (another THP moved there, so
	 * another PFN): with no identity turn and no refresh it keeps its old count (the lag
	 * memo.h documents, PAGEMAP_SCAN only); once its identity is read it shows */
	{
		uint8_t *spare = mmap(NULL, 2 * thp_size, PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *al;
		uint8_t *victim = thps + (N_LOW + N_FULL - 2) * thp_size;

		ck_assert_ptr_ne(spare, MAP_FAILED);
		al = (uint8_t *)(((uintptr_t)spare + thp_size - 1) & ~(uintptr_t)(thp_size - 1));
		ck_assert_int_eq(madvise(al, thp_size, MADV_HUGEPAGE), 0);
		al[0] = 1;
		ck_assert_ptr_eq(mremap(al, thp_size, thp_size, MREMAP_MAYMOVE | MREMAP_FIXED, victim),
				 victim);
		pass_verify(memo, 0, 0, &s);
		if (strcmp(s.summary.method, "PAGEMAP_SCAN") == 0)
			ck_assert_uint_eq(bucket(&s, 0), N_LOW);
		else
			ck_assert_uint_eq(bucket(&s, 0), N_LOW + 1);
		thps_scan_free(&s);
		for (passes = 1; passes <= N_LOW + N_FULL + 2; passes++) {
			pass_verify(memo, 0, 1, &s);
			if (bucket(&s, 0) == N_LOW + 1) {
				thps_scan_free(&s);
				break;
			}
			thps_scan_free(&s);
		}
		fprintf(stderr, "memo: a THP replaced at the same address showed after %u passes at 1 identity read a pass\n",
			passes);
		ck_assert_uint_le(passes, N_LOW + N_FULL + 2);
		memset(victim, 1, thp_size); /* full again, for the counts below */
		pass(memo, 0, &s);
		thps_scan_free(&s);
	}

	/* unmapped: gone at the next pass; new ones: read at the next pass */
	ck_assert_int_eq(munmap(thps + N_LOW * thp_size, 2 * thp_size), 0);
	pass(memo, 1, &s);
	ck_assert_uint_eq(thps_hist_thps(&s.total.hist), N_LOW + N_FULL - 2);
	thps_scan_free(&s);
	thps_memo_free(memo);
}
END_TEST

/* The table alone: 100,000 entries (growth), every one found again, a pass that sees only
 * half drops the other half (backward-shift deletion keeps every probe run intact). */
START_TEST(test_memo_table)
{
	struct thps_memo *m = NULL;
	struct thps_memo_stats st;
	unsigned u = 0, lim = 0;
	uint64_t cg = 0;
	const unsigned n = 100000;

	ck_assert_int_eq(thps_memo_new(&m), 0);
	thps_memo_pass_begin(m, 102, 0, 0);
	for (unsigned i = 0; i < n; i++) {
		struct thps_memo_key k = { .pfn = (uint64_t)i * 512 + 7, .va = (uint64_t)i << 21, .pid = 42,
					   .starttime = 9, .order = 9 };
		ck_assert_int_eq(thps_memo_lookup(m, &k, &u, &lim, &cg), THPS_MEMO_READ);
		ck_assert_int_eq(thps_memo_store(m, &k, 200 + i % 300, true, 5), 0);
	}
	thps_memo_pass_end(m);
	thps_memo_stats(m, &st);
	ck_assert_uint_eq(st.entries, n);
	ck_assert_uint_le(st.bytes, (uint64_t)n * 32 * 4 / 3 * 2);

	thps_memo_pass_begin(m, 102, 0, 0);
	for (unsigned i = 0; i < n; i += 2) {
		struct thps_memo_key k = { .pfn = (uint64_t)i * 512 + 7, .va = (uint64_t)i << 21, .pid = 42,
					   .starttime = 9, .order = 9 };
		ck_assert_int_eq(thps_memo_lookup(m, &k, &u, &lim, &cg), THPS_MEMO_CARRY);
		ck_assert_uint_eq(u, 200 + i % 300);
	}
	thps_memo_pass_end(m);
	thps_memo_stats(m, &st);
	ck_assert_uint_eq(st.entries, n / 2);

	thps_memo_pass_begin(m, 102, 0, 0);
	for (unsigned i = 0; i < n; i++) {
		struct thps_memo_key k = { .pfn = (uint64_t)i * 512 + 7, .va = (uint64_t)i << 21, .pid = 42,
					   .starttime = 9, .order = 9 };
		ck_assert_int_eq(thps_memo_lookup(m, &k, &u, &lim, &cg), (i % 2 ? THPS_MEMO_READ : THPS_MEMO_CARRY));
	}
	thps_memo_pass_end(m);

	/* by place alone: carried with the remembered PFN unless in an identity window, which
	 * covers its share of the entries each pass and all of them in a turn; both ways mark
	 * the entry seen */
	{
		uint64_t pfn = 0, verify = n / 2 / 10;
		bool *verified = calloc(n, sizeof(*verified));
		unsigned left = n / 2, passes = 0;

		ck_assert_ptr_nonnull(verified);
		while (left && passes < 20) {
			unsigned read = 0;

			passes++;
			thps_memo_pass_begin(m, 102, 0, verify);
			for (unsigned i = 0; i < n; i += 2) {
				struct thps_memo_key k = { .va = (uint64_t)i << 21, .pid = 42, .starttime = 9, .order = 9 };

				if (thps_memo_lookup_va(m, &k, &u, &cg, &pfn) == THPS_MEMO_CARRY) {
					ck_assert_uint_eq(pfn, (uint64_t)i * 512 + 7);
					ck_assert_uint_eq(u, 200 + i % 300);
					ck_assert_uint_eq(cg, 5);
					continue;
				}
				k.pfn = (uint64_t)i * 512 + 7;
				ck_assert_int_eq(thps_memo_lookup(m, &k, &u, &lim, &cg), THPS_MEMO_CARRY);
				read++;
				if (!verified[i]) {
					verified[i] = true;
					left--;
				}
			}
			thps_memo_pass_end(m);
			thps_memo_stats(m, &st);
			ck_assert_uint_eq(st.entries, n / 2);
			ck_assert_uint_ge(read, verify * 8 / 10);
			ck_assert_uint_le(read, verify * 12 / 10 + 8);
		}
		ck_assert_uint_eq(left, 0);
		ck_assert_uint_le(passes, 11); /* a turn: entries / verify passes, one more for the edge */
		free(verified);
		{
			struct thps_memo_key k = { .va = (uint64_t)1 << 21, .pid = 42, .starttime = 9, .order = 9 };

			ck_assert_int_eq(thps_memo_lookup_va(m, &k, &u, &cg, &pfn), THPS_MEMO_READ);
		}
	}

	/* another process, or a new start time, at the same PFN: read again */
	{
		struct thps_memo_key k = { .pfn = 7, .va = 0, .pid = 43, .starttime = 9, .order = 9 };
		ck_assert_int_eq(thps_memo_lookup(m, &k, &u, &lim, &cg), THPS_MEMO_READ);
		k.pid = 42;
		k.starttime = 10;
		ck_assert_int_eq(thps_memo_lookup(m, &k, &u, &lim, &cg), THPS_MEMO_READ);
	}
	thps_memo_free(m);
}
END_TEST

static Suite *memo_suite(void)
{
	Suite *s = suite_create("memo");
	TCase *tc = tcase_create("memo");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_memo_table);
	tcase_add_test(tc, test_memo_real_thps);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(memo_suite)
