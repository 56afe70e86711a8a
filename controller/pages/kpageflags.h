/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/kpageflags (u64 flags per PFN) and /proc/kpagecgroup (u64 memcg inode per PFN).
 * Bits from include/uapi/linux/kernel-page-flags.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"

#define THPS_KPF_ANON	       12
#define THPS_KPF_COMPOUND_HEAD 15
#define THPS_KPF_COMPOUND_TAIL 16
#define THPS_KPF_HUGE	       17 /* hugetlbfs: never a THP */
#define THPS_KPF_THP	       22
#define THPS_KPF_ZERO_PAGE     24

#define THPS_KPF(bit) (UINT64_C(1) << THPS_KPF_##bit)

/* A THP we scan: head of an anonymous THP folio. The huge zero page carries THP too. */
static inline bool thps_kpf_is_anon_thp_head(uint64_t f)
{
	uint64_t want = THPS_KPF(THP) | THPS_KPF(COMPOUND_HEAD) | THPS_KPF(ANON);

	return (f & want) == want && !(f & (THPS_KPF(ZERO_PAGE) | THPS_KPF(HUGE)));
}

/* Any page (head or tail) of an anonymous THP folio. */
static inline bool thps_kpf_is_anon_thp_page(uint64_t f)
{
	return (f & THPS_KPF(THP)) && (f & THPS_KPF(ANON)) &&
	       (f & (THPS_KPF(COMPOUND_HEAD) | THPS_KPF(COMPOUND_TAIL))) &&
	       !(f & (THPS_KPF(ZERO_PAGE) | THPS_KPF(HUGE)));
}

struct thps_kpage {
	int flags_fd;  /* kpageflags */
	int cgroup_fd; /* kpagecgroup, -1 if the kernel has no memcg */
	/* the last block of flags read by thps_kpage_folio(): one pread per aligned block */
	uint64_t block_pfn;
	uint32_t block_len;
	uint64_t *block;
};

/* Opens kpageflags and kpagecgroup under ctx->proc_root. block_pages is the THP's subpage
 * count (the folio search never looks past an aligned block of that size).
 * Returns 0 or -errno (-EACCES without CAP_SYS_ADMIN). */
int thps_kpage_open(const struct thps_ctx *ctx, uint32_t block_pages, struct thps_kpage *ret);
void thps_kpage_close(struct thps_kpage *k);

/* Reads the u64 of one PFN. Returns 0, -ENXIO past the end, or -errno. */
int thps_kpage_flags(const struct thps_kpage *k, uint64_t pfn, uint64_t *ret);
int thps_kpage_cgroup(const struct thps_kpage *k, uint64_t pfn, uint64_t *ret);

/* For a PFN inside an anonymous THP folio: its head PFN and folio size in pages (found by
 * walking back to the COMPOUND_HEAD and forward over the tails, within the PFN's aligned
 * block). Returns 1 and fills ret_*, 0 if pfn is not an anonymous THP page, or -errno. */
int thps_kpage_folio(struct thps_kpage *k, uint64_t pfn, uint64_t *ret_head, uint32_t *ret_pages);
