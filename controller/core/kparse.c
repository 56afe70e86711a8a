/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure parsers of the kernel's THP figures (the RFC's debugfs thp_utilization, /proc/vmstat,
 * memory.stat), shared by the capability probe and the kernel sources (plugins/kernel). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "fileio.h"
#include "kparse.h"
#include "macro.h"

#define N_LINES (THPS_BUCKETS + 2)

/* A non-negative decimal of at most 19 digits at *p; advances p. */
static int take_u64(const char **p, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	while (*s >= '0' && *s <= '9') {
		if (++n > 19)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (n == 0)
		return -EINVAL;
	*p = s;
	*ret = v;
	return 0;
}

static int take_lit(const char **p, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(*p, lit, n) != 0)
		return -EINVAL;
	*p += n;
	return 0;
}

/* "%lu.%02lu" as the kernel prints it: exactly two hundredths digits. */
static int take_seconds(const char **p, double *ret)
{
	uint64_t sec;
	const char *s;

	if (take_u64(p, &sec) < 0 || take_lit(p, ".") < 0)
		return -EINVAL;
	s = *p;
	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
		return -EINVAL;
	*ret = (double)sec + ((s[0] - '0') * 10 + (s[1] - '0')) / 100.0;
	*p = s + 2;
	return 0;
}

static int parse_line(const char *line, int idx, uint64_t *next_lo, struct thps_hist *h,
		      double *scan_time, double *duration)
{
	const char *p = line;
	uint64_t lo, hi, thps, zero;

	if (idx < THPS_BUCKETS) {
		if (take_lit(&p, "Utilized[") < 0 || take_u64(&p, &lo) < 0 ||
		    take_lit(&p, "-") < 0 || take_u64(&p, &hi) < 0 || take_lit(&p, "]: ") < 0 ||
		    take_u64(&p, &thps) < 0 || take_lit(&p, " ") < 0 || take_u64(&p, &zero) < 0)
			return -EINVAL;
		/* The RFC's labels are contiguous from 0 (its last one even ends at 512). */
		if (lo != *next_lo || hi < lo)
			return -EINVAL;
		*next_lo = hi + 1;
		h->thps[idx] = thps;
		h->zero_subpages[idx] = zero;
	} else if (idx == THPS_BUCKETS) {
		if (take_lit(&p, "Last Scan Time: ") < 0 || take_seconds(&p, scan_time) < 0)
			return -EINVAL;
	} else {
		if (take_lit(&p, "Last Scan Duration: ") < 0 || take_seconds(&p, duration) < 0)
			return -EINVAL;
	}
	return *p == '\n' || *p == 0 ? 0 : -EINVAL;
}

int thps_parse_thp_utilization(const char *text, struct thps_hist *ret, double *scan_time,
			       double *duration, int *ret_bad_line)
{
	struct thps_hist h;
	double t = 0, d = 0;
	uint64_t next_lo = 0;
	const char *p = text;
	int idx;

	memset(&h, 0, sizeof(h));
	for (idx = 0; idx < N_LINES; idx++) {
		if (!p || *p == 0)
			goto bad; /* missing line */
		if (parse_line(p, idx, &next_lo, &h, &t, &d) < 0)
			goto bad;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (p && *p)
		goto bad; /* idx == N_LINES: a 13th line */
	*ret = h;
	*scan_time = t;
	*duration = d;
	return 0;
bad:
	if (ret_bad_line)
		*ret_bad_line = idx + 1;
	return -EINVAL;
}

int thps_thp_utilization_read(const struct thps_ctx *ctx, struct thps_hist *ret, double *scan_time,
			      double *duration, int *ret_bad_line)
{
	_cleanup_free_ char *text = NULL;
	int r;

	r = read_file_at(THPS_THP_UTILIZATION_MAX, &text, ctx->debugfs_root, "thp_utilization");
	if (r < 0)
		return r;
	return thps_parse_thp_utilization(text, ret, scan_time, duration, ret_bad_line);
}

int thps_parse_vmstat(const char *text, struct thps_vmstat *ret)
{
	struct thps_vmstat v;

	for (size_t i = 0; i < thps_n_vmstat_fields; i++) {
		uint64_t *dst = (uint64_t *)((char *)&v + thps_vmstat_fields[i].offset);
		int r = find_keyed_u64(text, thps_vmstat_fields[i].name, dst);

		if (r == -ENOENT)
			*dst = UINT64_MAX;
		else if (r < 0)
			return -EINVAL;
	}
	*ret = v;
	return 0;
}

int thps_parse_memstat_thp(const char *text, int cgroup_version, uint64_t *ret)
{
	int r;

	if (cgroup_version == 2)
		return find_keyed_u64(text, "anon_thp", ret);
	r = find_keyed_u64(text, "total_rss_huge", ret);
	if (r == -ENOENT)
		r = find_keyed_u64(text, "rss_huge", ret);
	return r;
}

int thps_vmstat_read(const struct thps_ctx *ctx, struct thps_vmstat *ret)
{
	_cleanup_free_ char *text = NULL;
	int r;

	r = read_file_at(THPS_VMSTAT_MAX, &text, ctx->proc_root, "vmstat");
	if (r < 0)
		return r;
	return thps_parse_vmstat(text, ret);
}
