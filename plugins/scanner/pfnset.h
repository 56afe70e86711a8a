/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A bounded hash map from PFN (never 0) to a 32-bit value: which THPs were already counted
 * (several processes map the same THP after fork) and where a partly mapped folio's entry
 * is. Open addressing, no per-entry allocation. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct thps_pfnset {
	uint64_t *keys; /* 0 = empty */
	uint32_t *vals;
	size_t cap; /* power of two */
	size_t n;
	size_t max; /* never more entries than this */
};

/* max: entry bound (memory is at most ~2 × 12 bytes per entry). Returns 0 or -ENOMEM. */
int thps_pfnset_init(struct thps_pfnset *s, size_t max);
void thps_pfnset_free(struct thps_pfnset *s);
/* Returns 1 and *ret_val if present, 0 if not. */
int thps_pfnset_get(const struct thps_pfnset *s, uint64_t pfn, uint32_t *ret_val);
/* Returns 1 if added, 0 if already there (value kept), -E2BIG when full, -EINVAL for pfn 0,
 * -ENOMEM. */
int thps_pfnset_add(struct thps_pfnset *s, uint64_t pfn, uint32_t val);
