/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the split/re-collapse detection (controller/daemon/recollapse.c). */
#include <check.h>
#include <stdlib.h>

#include "promote-backoff.h"
#include "recollapse.h"
#include "test-main.h"

#define INO 77
#define THP (2ULL << 20)

static struct thps_thp_range rng(pid_t pid, uint64_t st, uint64_t start, uint64_t pfn, uint64_t ino)
{
	return (struct thps_thp_range){ .pid = pid, .pid_starttime = st, .start = start, .pfn = pfn,
					.ino = ino, .utilized = 3 };
}

START_TEST(test_cycle_counts_once)
{
	struct thps_recollapse rc = { 0 };
	struct thps_thp_range split[] = {
		rng(10, 100, 0 * THP, 0x1000, INO), rng(10, 100, 1 * THP, 0x1200, INO),
		rng(11, 200, 0 * THP, 0x1400, INO), rng(12, 300, 0 * THP, 0x1600, INO + 1),
	};
	struct thps_thp_range next[] = {
		rng(10, 100, 0 * THP, 0x8000, INO),     /* rebuilt: new PFN */
		rng(10, 100, 1 * THP, 0x1200, INO),     /* never split: same PFN */
		rng(11, 999, 0 * THP, 0x8200, INO),     /* pid reused: another process */
		rng(12, 300, 0 * THP, 0x8400, INO + 1), /* another cgroup */
		rng(13, 400, 5 * THP, 0x8600, INO),     /* never split by us */
	};

	ck_assert_int_eq(thps_recollapse_add(&rc, split, 4, INO), 0);
	ck_assert_uint_eq(rc.n, 3);
	ck_assert_uint_eq(thps_recollapse_match(&rc, next, 5, INO, NULL), 1);
	/* the never-split range is forgotten; the rebuilt one is kept with its return, pid 11's
	 * stays pending */
	ck_assert_uint_eq(rc.n, 2);
	ck_assert_int_eq(rc.v[0].pid, 10);
	ck_assert_uint_eq(rc.v[0].returns, 1);
	ck_assert(!rc.v[0].pending);
	ck_assert_int_eq(rc.v[1].pid, 11);
	/* one cycle counts once */
	ck_assert_uint_eq(thps_recollapse_match(&rc, next, 5, INO, NULL), 0);
	/* split again, rebuilt again: a second cycle */
	ck_assert_int_eq(thps_recollapse_add(&rc, next, 1, INO), 0);
	ck_assert_uint_eq(rc.n, 2);
	next[0].pfn = 0x9000;
	ck_assert_uint_eq(thps_recollapse_match(&rc, next, 1, INO, NULL), 1);
	ck_assert_uint_eq(rc.v[0].returns, 2);
	thps_recollapse_clear(&rc);
	ck_assert_uint_eq(rc.n, 0);
	ck_assert_ptr_null(rc.v);
}
END_TEST

START_TEST(test_bound_drops_oldest)
{
	struct thps_recollapse rc = { .max = 4 };
	struct thps_thp_range r[10];

	for (unsigned i = 0; i < 10; i++)
		r[i] = rng(1, 1, i * THP, 0x100 + i, INO);
	ck_assert_int_eq(thps_recollapse_add(&rc, r, 3, INO), 0);
	ck_assert_int_eq(thps_recollapse_add(&rc, r + 3, 3, INO), 0);
	ck_assert_uint_eq(rc.n, 4);
	ck_assert_uint_eq(rc.v[0].start, 2 * THP); /* 0 and 1 dropped */
	ck_assert_uint_eq(rc.v[3].start, 5 * THP);
	/* more at once than the bound: the newest part */
	ck_assert_int_eq(thps_recollapse_add(&rc, r, 10, INO), 0);
	ck_assert_uint_eq(rc.n, 4);
	ck_assert_uint_eq(rc.v[0].start, 6 * THP);
	ck_assert_uint_eq(rc.v[3].start, 9 * THP);
	for (unsigned i = 0; i < 10; i++)
		r[i].pfn += 0x1000;
	ck_assert_uint_eq(thps_recollapse_match(&rc, r, 10, INO, NULL), 4);
	ck_assert_uint_eq(rc.n, 4); /* kept with their returns */
	/* nothing of this cgroup: nothing allocated */
	thps_recollapse_clear(&rc);
	ck_assert_int_eq(thps_recollapse_add(&rc, r, 10, INO + 1), 0);
	ck_assert_ptr_null(rc.v);
	ck_assert_uint_eq(thps_recollapse_match(&rc, r, 10, INO, NULL), 0);
}
END_TEST

/* A range rebuilt THPS_RECOLLAPSE_PIN_AFTER times is pinned: reported once, never split again;
 * its neighbours are not. */
START_TEST(test_pin_after_returns)
{
	struct thps_recollapse rc = { 0 };
	struct thps_thp_range r[2] = { rng(10, 100, 0, 0x1000, INO), rng(10, 100, THP, 0x1200, INO) };
	size_t pinned = 0, total = 0;

	for (unsigned k = 0; k < THPS_RECOLLAPSE_PIN_AFTER; k++) {
		ck_assert(!thps_recollapse_pinned(&rc, &r[0]));
		ck_assert_int_eq(thps_recollapse_add(&rc, r, 1, INO), 0);
		r[0].pfn += 0x200; /* khugepaged built it anew */
		ck_assert_uint_eq(thps_recollapse_match(&rc, r, 2, INO, &pinned), 1);
		total += pinned;
	}
	ck_assert_uint_eq(total, 1);
	ck_assert(thps_recollapse_pinned(&rc, &r[0]));
	ck_assert(!thps_recollapse_pinned(&rc, &r[1]));
	ck_assert_uint_eq(thps_recollapse_n_pinned(&rc), 1);
	thps_recollapse_clear(&rc);
}
END_TEST

/* A THP the daemon promoted is never handed to the split while it is whole; once partially
 * mapped it is not dense any more and may be; the bound drops the oldest. */
START_TEST(test_promoted_never_split_while_whole)
{
	struct thps_promoted p = {.max = 2};
	struct thps_thp_range a = rng(10, 100, 0x200000, 512, 7), b = rng(10, 100, 0x400000, 1024, 7);

	ck_assert(!thps_promoted_has(&p, &a));
	ck_assert_int_eq(thps_promoted_add(&p, 10, 100, 0x200000), 0);
	ck_assert_int_eq(thps_promoted_add(&p, 10, 100, 0x200000), 0); /* once */
	ck_assert_uint_eq(p.n, 1);
	ck_assert(thps_promoted_has(&p, &a));
	ck_assert(!thps_promoted_has(&p, &b));
	a.mapped = 100; /* partially mapped now */
	ck_assert(!thps_promoted_has(&p, &a));
	a.mapped = 0;
	a.pid_starttime = 101; /* a reused pid */
	ck_assert(!thps_promoted_has(&p, &a));
	a.pid_starttime = 100;
	ck_assert_int_eq(thps_promoted_add(&p, 10, 100, 0x400000), 0);
	ck_assert_int_eq(thps_promoted_add(&p, 10, 100, 0x600000), 0);
	ck_assert_uint_eq(p.n, 2);
	ck_assert(!thps_promoted_has(&p, &a)); /* the oldest went */
	ck_assert(thps_promoted_has(&p, &b));
	thps_promoted_clear(&p);
	ck_assert_uint_eq(p.n, 0);
}
END_TEST

/* A range that comes back dense-but-not-THP every pass (the tenant drops and re-touches a
 * page) is collapsed on passes 1, 2, 4, 8, ...: floor(log2 K) + 1 times in K passes. */
START_TEST(test_promote_backoff_log_churn)
{
	struct promote_backoff b = { 0 };
	unsigned collapses = 0;

	for (uint64_t pass = 1; pass <= 1024; pass++)
		if (promote_backoff_admit(&b, 10, 100, 0x200000, pass)) {
			ck_assert_int_eq(promote_backoff_collapsed(&b, 10, 100, 0x200000, pass), 0);
			collapses++;
			ck_assert_msg((pass & (pass - 1)) == 0, "collapsed in pass %lu", (unsigned long)pass);
		}
	ck_assert_uint_eq(collapses, 11);
	ck_assert_uint_eq(b.n, 1);
	/* another process, a reused pid, another range: not held */
	ck_assert(promote_backoff_admit(&b, 11, 100, 0x200000, 1025));
	ck_assert(promote_backoff_admit(&b, 10, 101, 0x200000, 1025));
	ck_assert(promote_backoff_admit(&b, 10, 100, 0x400000, 1025));
	ck_assert(!promote_backoff_admit(&b, 10, 100, 0x200000, 1025));
	ck_assert_uint_eq(promote_backoff_n_held(&b, 1025), 1);
	promote_backoff_free(&b);
}
END_TEST

/* The hold is bounded (2^PROMOTE_BACKOFF_SHIFT_MAX passes), and so is the table: the least
 * recently collapsed range is forgotten first. */
START_TEST(test_promote_backoff_bounds)
{
	struct promote_backoff b = { .max = 2 };
	uint64_t pass = 1;

	for (unsigned i = 0; i < 40; i++)
		ck_assert_int_eq(promote_backoff_collapsed(&b, 10, 100, 0x200000, pass), 0);
	ck_assert(!promote_backoff_admit(&b, 10, 100, 0x200000, pass + (1u << PROMOTE_BACKOFF_SHIFT_MAX) - 1));
	ck_assert(promote_backoff_admit(&b, 10, 100, 0x200000, pass + (1u << PROMOTE_BACKOFF_SHIFT_MAX)));
	ck_assert_int_eq(promote_backoff_collapsed(&b, 10, 100, 0x400000, 2), 0);
	ck_assert_int_eq(promote_backoff_collapsed(&b, 10, 100, 0x400000, 3), 0);
	ck_assert_int_eq(promote_backoff_collapsed(&b, 10, 100, 0x600000, 4), 0);
	ck_assert_uint_eq(b.n, 2);
	ck_assert(promote_backoff_admit(&b, 10, 100, 0x200000, 5)); /* forgotten: the oldest */
	ck_assert(!promote_backoff_admit(&b, 10, 100, 0x400000, 4));
	promote_backoff_free(&b);
	ck_assert_uint_eq(b.n, 0);
	ck_assert_uint_eq(b.max, 2);
}
END_TEST

static Suite *recollapse_suite(void)
{
	Suite *s = suite_create("recollapse");
	TCase *tc = tcase_create("detect");

	tcase_add_test(tc, test_cycle_counts_once);
	tcase_add_test(tc, test_bound_drops_oldest);
	tcase_add_test(tc, test_pin_after_returns);
	tcase_add_test(tc, test_promoted_never_split_while_whole);
	tcase_add_test(tc, test_promote_backoff_log_churn);
	tcase_add_test(tc, test_promote_backoff_bounds);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(recollapse_suite)
