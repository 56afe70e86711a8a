/* SPDX-License-Identifier: GPL-2.0-or-later */
/* promote-smaps.h: one pass over /proc/PID/smaps beside the sorted candidate list. Only the
 * VmFlags, THPeligible and LazyFree lines of each VMA are looked at; nothing is kept. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"
#include "promote-smaps.h"

int thps_thp_mode_always(const struct thps_ctx *ctx, const struct thps_geometry *g)
{
	_cleanup_free_ char *top = NULL, *size = NULL;

	if (read_file_at(4096, &top, ctx->sys_root, "kernel/mm/transparent_hugepage/enabled") < 0)
		return 0;
	if (read_file_at(4096, &size, ctx->sys_root,
			 "kernel/mm/transparent_hugepage/hugepages-%llukB/enabled",
			 (unsigned long long)(g->thp_size >> 10)) < 0 ||
	    strstr(size, "[inherit]"))
		return strstr(top, "[always]") != NULL;
	return strstr(size, "[always]") != NULL;
}

struct vma_facts {
	uint64_t start, end;
	bool no_huge;	 /* VmFlags nh */
	bool ineligible; /* THPeligible: 0 */
	bool lazy_free;	 /* LazyFree > 0 */
};

struct dropper {
	bool thp_always, check_lazy_free;
	uint64_t *addrs;
	size_t n, in, out;
	struct thps_smaps_drops drops;
};

/* Keeps or drops the candidates inside one VMA (those below it are kept: not ours to judge). */
static void judge(struct dropper *d, const struct vma_facts *v)
{
	for (; d->in < d->n && d->addrs[d->in] < v->end; d->in++) {
		uint64_t a = d->addrs[d->in];

		if (a < v->start)
			;
		else if (v->no_huge) {
			d->drops.no_huge++;
			continue;
		} else if (d->thp_always && v->ineligible) {
			d->drops.ineligible++;
			continue;
		} else if (d->check_lazy_free && v->lazy_free) {
			d->drops.lazy_free++;
			continue;
		}
		d->addrs[d->out++] = a;
	}
}

/* VmFlags holds two-letter words; "nh" is VM_NOHUGEPAGE. */
static bool has_flag(const char *flags, const char *want)
{
	for (const char *p = flags; *p;) {
		size_t len;

		p += strspn(p, " \t\n");
		len = strcspn(p, " \t\n");
		if (!len)
			break;
		if (len == strlen(want) && !strncmp(p, want, len))
			return true;
		p += len;
	}
	return false;
}

int thps_smaps_drop_opted_out(const struct thps_ctx *ctx, pid_t pid, bool thp_always,
			      bool check_lazy_free, uint64_t *addrs, size_t *n,
			      struct thps_smaps_drops *ret)
{
	char path[PATH_MAX], line[512];
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ uint64_t *copy = NULL;
	struct dropper d = {thp_always, check_lazy_free, NULL, *n, 0, 0, {}};
	struct vma_facts v = {};
	bool have = false, whole = true;
	int r;

	r = thps_path(path, sizeof(path), ctx->proc_root, "%d/smaps", (int)pid);
	if (r < 0)
		return r;
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : negative_errno();
	/* judged on a copy: on an error the caller's list stays as it was */
	copy = malloc(MAX(*n, (size_t)1) * sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, addrs, *n * sizeof(*copy));
	d.addrs = copy;
	while (d.in < d.n && fgets(line, sizeof(line), f)) {
		bool start_of_line = whole;
		unsigned long long a, b, kb;

		/* a long line (a header's path) is read in pieces: only its first piece counts */
		whole = strchr(line, '\n') != NULL;
		if (!start_of_line)
			continue;
		if (isxdigit((unsigned char)line[0]) && !isupper((unsigned char)line[0]) &&
		    sscanf(line, "%llx-%llx ", &a, &b) == 2) {
			if (have)
				judge(&d, &v);
			v = (struct vma_facts){.start = a, .end = b};
			have = true;
		} else if (sscanf(line, "LazyFree: %llu kB", &kb) == 1)
			v.lazy_free = kb > 0;
		else if (sscanf(line, "THPeligible: %llu", &kb) == 1)
			v.ineligible = kb == 0;
		else if (!strncmp(line, "VmFlags:", 8))
			v.no_huge = has_flag(line + 8, "nh");
	}
	if (ferror(f))
		return errno == ESRCH ? -ESRCH : -EIO;
	if (have)
		judge(&d, &v);
	for (; d.in < d.n; d.in++)
		d.addrs[d.out++] = d.addrs[d.in];
	memcpy(addrs, copy, d.out * sizeof(*addrs));
	*n = d.out;
	*ret = d.drops;
	return 0;
}
