/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The main() of every Check suite: THPS_TEST_MAIN(make_suite) runs the suite that make_suite()
 * returns (verbosity from CK_VERBOSITY, forking from CK_FORK) and exits 0 when every test
 * passed, 1 otherwise. THPS_TEST_MAIN_SKIP_IF(make_suite, cond, why) first exits 77 (the
 * automake harness's SKIP) with "SKIP: why" when cond is true.
 * THPS_CASE_SKIP(label, fmt, ...) is for one case that cannot run here (the caller returns
 * after it): Check has no skip result, so the case prints "SKIP: label: why" into the suite's
 * log, and tests/tools/skips-check.sh counts that line as a skip (failing CI unless
 * tests/skips-allowed.txt lists it) although Check counts the case as passed. */
#ifndef THPS_TEST_MAIN_H
#define THPS_TEST_MAIN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#define THPS_TEST_SKIP 77

static inline int thps_test_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#define THPS_CASE_SKIP(label, ...)                                                                 \
	do {                                                                                       \
		printf("SKIP: %s: ", label);                                                       \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		fflush(stdout); /* a forked case's buffer would die with it */                     \
	} while (0)

#define THPS_TEST_MAIN(make_suite)                                                                 \
	int main(void)                                                                             \
	{                                                                                          \
		return thps_test_run(make_suite());                                                \
	}

#define THPS_TEST_MAIN_SKIP_IF(make_suite, cond, why)                                              \
	int main(void)                                                                             \
	{                                                                                          \
		if (cond) {                                                                        \
			printf("SKIP: %s\n", why);                                                 \
			return THPS_TEST_SKIP;                                                     \
		}                                                                                  \
		return thps_test_run(make_suite());                                                \
	}

#endif
