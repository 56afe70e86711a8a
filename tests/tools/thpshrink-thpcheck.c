/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink-thpcheck PID START END: for each THP-sized chunk of [START, END) of process PID, says
 * whether it is still one transparent huge page and how many of its subpages hold data.
 *
 *   chunk=I addr=0xA thp=0|1 present=P zero_page=Z utilized=U
 *   SUMMARY chunks=N thp=K full=F full_thp=FT lowutil=L lowutil_thp=LT present=P utilized=U
 *
 * thp=1: every subpage is present and maps PFN head+i of one compound page whose head has
 * KPF_THP. utilized: subpages with a non-zero byte (read through /proc/PID/mem; the shared zero
 * page and absent subpages count as unused). full: utilized == subpages; lowutil: the RFC's
 * bucket 0 (utilized * 10 / subpages == 0). The VM tests use it to check that a reclaim or a
 * split left the well-used THPs alone. Needs root (PFNs). Standalone, libc only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KPF_COMPOUND_HEAD 15
#define KPF_THP 22
#define KPF_ZERO_PAGE 24
#define PM_PFN_MASK ((UINT64_C(1) << 55) - 1)
#define PM_PRESENT (UINT64_C(1) << 63)

static int read_u64_at(int fd, uint64_t idx, uint64_t *v)
{
	return pread(fd, v, sizeof(*v), (off_t)(idx * sizeof(*v))) == (ssize_t)sizeof(*v) ? 0 : -1;
}

static int open_proc(const char *pid, const char *what)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%s/%s", pid, what);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int main(int argc, char **argv)
{
	uint64_t start, end, page, thp = 2u << 20, subpages;
	uint64_t n = 0, n_thp = 0, n_full = 0, n_full_thp = 0, n_low = 0, n_low_thp = 0;
	uint64_t tot_present = 0, tot_util = 0;
	unsigned char *buf;
	int pm, mem, kf;

	if (argc != 4) {
		fprintf(stderr, "usage: thpshrink-thpcheck PID START END\n");
		return 2;
	}
	start = strtoull(argv[2], NULL, 0);
	end = strtoull(argv[3], NULL, 0);
	page = (uint64_t)sysconf(_SC_PAGESIZE);
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "re");
	if (f) {
		if (fscanf(f, "%lu", (unsigned long *)&thp) != 1)
			thp = 2u << 20;
		fclose(f);
	}
	subpages = thp / page;
	pm = open_proc(argv[1], "pagemap");
	mem = open_proc(argv[1], "mem");
	kf = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	buf = malloc(page);
	if (pm < 0 || mem < 0 || kf < 0 || !buf) {
		perror("thpshrink-thpcheck: open");
		return 1;
	}
	for (uint64_t a = start & ~(thp - 1); a + thp <= end; a += thp, n++) {
		uint64_t present = 0, zero_page = 0, util = 0, head = 0;
		int is_thp = 1;

		for (uint64_t i = 0; i < subpages; i++) {
			uint64_t e = 0, flags = 0, pfn;

			if (read_u64_at(pm, (a + i * page) / page, &e) < 0 || !(e & PM_PRESENT)) {
				is_thp = 0;
				continue;
			}
			present++;
			pfn = e & PM_PFN_MASK;
			if (read_u64_at(kf, pfn, &flags) < 0)
				flags = 0;
			if (i == 0) {
				head = pfn;
				if (!(flags & (UINT64_C(1) << KPF_THP)) ||
				    !(flags & (UINT64_C(1) << KPF_COMPOUND_HEAD)))
					is_thp = 0;
			} else if (pfn != head + i) {
				is_thp = 0;
			}
			if (flags & (UINT64_C(1) << KPF_ZERO_PAGE)) {
				zero_page++;
				continue;
			}
			if (pread(mem, buf, page, (off_t)(a + i * page)) != (ssize_t)page)
				continue;
			for (uint64_t j = 0; j < page; j++)
				if (buf[j]) {
					util++;
					break;
				}
		}
		printf("chunk=%lu addr=0x%lx thp=%d present=%lu zero_page=%lu utilized=%lu\n",
		       (unsigned long)n, (unsigned long)a, is_thp, (unsigned long)present,
		       (unsigned long)zero_page, (unsigned long)util);
		n_thp += (uint64_t)is_thp;
		tot_present += present;
		tot_util += util;
		if (util == subpages) {
			n_full++;
			n_full_thp += (uint64_t)is_thp;
		}
		if (util * 10 / subpages == 0) {
			n_low++;
			n_low_thp += (uint64_t)is_thp;
		}
	}
	printf("SUMMARY chunks=%lu thp=%lu full=%lu full_thp=%lu lowutil=%lu lowutil_thp=%lu "
	       "present=%lu utilized=%lu\n",
	       (unsigned long)n, (unsigned long)n_thp, (unsigned long)n_full, (unsigned long)n_full_thp,
	       (unsigned long)n_low, (unsigned long)n_low_thp, (unsigned long)tot_present,
	       (unsigned long)tot_util);
	free(buf);
	return 0;
}
