/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "thp.h"

void thps_geometry_default(struct thps_geometry *ret)
{
	ret->page_size = 4096;
	ret->thp_size = 2u << 20;
	ret->subpages = 512;
}

int thps_geometry_load(const struct thps_ctx *ctx, struct thps_geometry *ret)
{
	char path[PATH_MAX];
	uint64_t thp_size;
	long ps = sysconf(_SC_PAGESIZE);
	int r;

	r = thps_path(path, sizeof(path), ctx->sys_root,
		      "kernel/mm/transparent_hugepage/hpage_pmd_size");
	if (r < 0)
		return r;
	r = read_u64_file(path, &thp_size);
	if (r < 0)
		return r;
	if (ps <= 0 || thp_size < (uint64_t)ps || thp_size % ps ||
	    thp_size / ps > (UINT64_C(1) << THPS_MAX_ORDER) || thps_folio_order(thp_size / ps) < 0)
		return -EINVAL;
	ret->page_size = ps;
	ret->thp_size = thp_size;
	ret->subpages = thp_size / ps;
	return 0;
}

int thps_folio_order(uint32_t nr)
{
	if (nr == 0 || (nr & (nr - 1)) || nr > (UINT32_C(1) << THPS_MAX_ORDER))
		return -1;
	return __builtin_ctz(nr);
}

unsigned thps_bucket_n(uint32_t nr, unsigned utilized)
{
	unsigned b = nr ? (unsigned)((uint64_t)utilized * THPS_BUCKETS / nr) : 0;

	return b >= THPS_BUCKETS ? THPS_BUCKETS - 1 : b;
}

unsigned thps_bucket(const struct thps_geometry *g, unsigned utilized)
{
	return thps_bucket_n(g->subpages, utilized);
}

void thps_bucket_range(const struct thps_geometry *g, unsigned b, unsigned *lo, unsigned *hi)
{
	thps_bucket_range_n(g->subpages, b, lo, hi);
}

void thps_bucket_range_n(uint32_t nr, unsigned b, unsigned *lo, unsigned *hi)
{
	/* Smallest u with u*10/n >= b is ceil(b*n/10). A bucket that no utilization reaches
	 * (small folios: 2 subpages reach 0, 5 and 9 only) has lo > hi. */
	uint64_t n = nr;

	*lo = (unsigned)((b * n + THPS_BUCKETS - 1) / THPS_BUCKETS);
	*hi = b >= THPS_BUCKETS - 1
		  ? (unsigned)n
		  : (unsigned)(((b + 1) * n + THPS_BUCKETS - 1) / THPS_BUCKETS) - 1;
}

unsigned thps_max_ptes_none_advice(const struct thps_geometry *g, unsigned max_bucket)
{
	unsigned lo, hi;

	thps_bucket_range(g, max_bucket >= THPS_BUCKETS ? THPS_BUCKETS - 1 : max_bucket, &lo, &hi);
	return hi >= g->subpages ? 0 : g->subpages - 1 - hi;
}

void thps_hist_add(struct thps_hist *h, const struct thps_geometry *g, unsigned utilized)
{
	thps_hist_add_n(h, g->subpages, utilized);
}

void thps_hist_add_n(struct thps_hist *h, uint32_t nr, unsigned utilized)
{
	unsigned b;

	if (utilized > nr)
		utilized = nr;
	b = thps_bucket_n(nr, utilized);
	h->thps[b]++;
	h->zero_subpages[b] += nr - utilized;
}

void thps_hist_merge(struct thps_hist *dst, const struct thps_hist *src)
{
	for (unsigned b = 0; b < THPS_BUCKETS; b++) {
		dst->thps[b] += src->thps[b];
		dst->zero_subpages[b] += src->zero_subpages[b];
	}
}

uint64_t thps_hist_lowutil_thps(const struct thps_hist *h, unsigned max_bucket)
{
	uint64_t s = 0;

	for (unsigned b = 0; b < THPS_BUCKETS && b <= max_bucket; b++)
		s += h->thps[b];
	return s;
}

uint64_t thps_hist_lowutil_zero(const struct thps_hist *h, unsigned max_bucket)
{
	uint64_t s = 0;

	for (unsigned b = 0; b < THPS_BUCKETS && b <= max_bucket; b++)
		s += h->zero_subpages[b];
	return s;
}

uint64_t thps_hist_thps(const struct thps_hist *h)
{
	return thps_hist_lowutil_thps(h, THPS_BUCKETS - 1);
}

uint64_t thps_hist_zero_subpages(const struct thps_hist *h)
{
	return thps_hist_lowutil_zero(h, THPS_BUCKETS - 1);
}

/* khugepaged/max_ptes_none: the one place that reads and writes it (the probe, the actuators,
 * the CLI and the daemon all come here). */
static int mpn_path(const struct thps_ctx *ctx, char *buf, size_t size)
{
	return thps_path(buf, size, ctx->sys_root,
			 "kernel/mm/transparent_hugepage/khugepaged/max_ptes_none");
}

int thps_max_ptes_none_get(const struct thps_ctx *ctx, unsigned *ret)
{
	char path[PATH_MAX];
	uint64_t v;
	int r;

	r = mpn_path(ctx, path, sizeof(path));
	if (r < 0)
		return r;
	r = read_u64_file(path, &v);
	if (r < 0)
		return r;
	if (v > 1u << 20)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

/* mkdir -p, 0700: the runtime dir may not exist yet (/run/thpshrink before the daemon ran). */
static int mkdir_parents(const char *dir)
{
	char buf[PATH_MAX];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, dir, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return negative_errno();
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return negative_errno();
	return 0;
}

static int saved_path(const char *state_dir, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/max_ptes_none.saved", state_dir);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int thps_max_ptes_none_set(const struct thps_ctx *ctx, const char *state_dir, unsigned value,
			   unsigned *ret_old)
{
	char path[PATH_MAX], saved[PATH_MAX], num[32];
	_cleanup_fclose_ FILE *f = NULL;
	unsigned old;
	int r;

	r = thps_max_ptes_none_get(ctx, &old);
	if (r < 0)
		return r;
	r = saved_path(state_dir, saved, sizeof(saved));
	if (r < 0)
		return r;
	r = mkdir_parents(state_dir);
	if (r < 0)
		return r;
	/* Keep the first original: a second --set must not make its own value the one to restore.
	 */
	if (access(saved, F_OK) < 0) {
		/* 0600 whatever the umask: restore refuses a file others may write */
		int fd = open(saved, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);

		if (fd < 0)
			return negative_errno();
		f = fdopen(fd, "we");
		if (!f) {
			r = negative_errno();
			close(fd);
			return r;
		}
		if (fprintf(f, "%u\n", old) < 0 || fflush(f) != 0)
			return -EIO;
	}
	r = mpn_path(ctx, path, sizeof(path));
	if (r < 0)
		return r;
	snprintf(num, sizeof(num), "%u", value);
	r = write_file_string(path, num);
	if (r < 0)
		return r;
	*ret_old = old;
	return 0;
}

/* Restoring writes a global kernel knob as root from what this file says: a file that another
 * user owns or may write (or a symlink to one) is refused, like policies and registrations.
 * Returns 0, -ENOENT, -EPERM, or -errno. */
static int saved_trusted(const char *saved)
{
	struct stat st;

	if (lstat(saved, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
		return -EPERM;
	return 0;
}

int thps_max_ptes_none_restore(const struct thps_ctx *ctx, const char *state_dir,
			       unsigned *ret_value)
{
	char path[PATH_MAX], saved[PATH_MAX], num[32];
	uint64_t v;
	int r;

	r = saved_path(state_dir, saved, sizeof(saved));
	if (r < 0)
		return r;
	r = saved_trusted(saved);
	if (r < 0)
		return r;
	r = read_u64_file(saved, &v);
	if (r < 0)
		return r;
	if (v > 1u << 20)
		return -EINVAL;
	r = mpn_path(ctx, path, sizeof(path));
	if (r < 0)
		return r;
	snprintf(num, sizeof(num), "%u", (unsigned)v);
	r = write_file_string(path, num);
	if (r < 0)
		return r;
	if (unlink(saved) < 0)
		return negative_errno();
	*ret_value = (unsigned)v;
	return 0;
}
