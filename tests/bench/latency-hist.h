/* SPDX-License-Identifier: GPL-2.0-or-later */
/* latency-hist.h: the per-request latency histogram the latency benchmark's programs share.
 * Log buckets 1 % wide (a percentile is off by at most 1 %) over 1 ns..~2,600 s, so a phase of
 * any length costs the same fixed 17 KiB; one printed line per phase, the same for every
 * service, that tests/bench/latency.sh parses. */
#ifndef THPS_LATENCY_HIST_H
#define THPS_LATENCY_HIST_H

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define LH_BUCKETS 2900 /* ln(2.6e12 ns) * 100 */

struct lat_hist {
	uint64_t n;
	uint64_t max_ns;
	uint64_t start_ns;
	uint64_t count[LH_BUCKETS];
};

static inline uint64_t lh_now_ns(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static inline void lh_reset(struct lat_hist *h) {
	memset(h, 0, sizeof(*h));
	h->start_ns = lh_now_ns();
}

static inline void lh_add(struct lat_hist *h, uint64_t ns) {
	unsigned b = ns ? (unsigned) (log((double) ns) * 100.0) : 0;

	if (b >= LH_BUCKETS)
		b = LH_BUCKETS - 1;
	h->count[b]++;
	h->n++;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

/* The upper edge of the bucket holding the q-th quantile, in µs. */
static inline double lh_quantile_us(const struct lat_hist *h, double q) {
	uint64_t want = (uint64_t) ceil(q * (double) h->n), seen = 0;

	if (want == 0)
		want = 1;
	for (unsigned b = 0; b < LH_BUCKETS; b++) {
		seen += h->count[b];
		if (seen >= want)
			return exp((b + 1) / 100.0) / 1000.0;
	}
	return (double) h->max_ns / 1000.0;
}

/* "phase NAME n=... secs=... ops_per_s=... p50_us=... p99_us=... p999_us=... max_us=... end": a
 * reader of the output file while it is written takes only lines with their "end". */
static inline void lh_print(FILE *f, const struct lat_hist *h, const char *name) {
	double secs = (double) (lh_now_ns() - h->start_ns) / 1e9;

	fprintf(f, "phase %s n=%" PRIu64 " secs=%.3f ops_per_s=%.0f p50_us=%.2f p99_us=%.2f p999_us=%.2f max_us=%.2f end\n",
	        name, h->n, secs, secs > 0 ? (double) h->n / secs : 0.0, lh_quantile_us(h, 0.50),
	        lh_quantile_us(h, 0.99), lh_quantile_us(h, 0.999), (double) h->max_ns / 1000.0);
	fflush(f);
}

#endif
