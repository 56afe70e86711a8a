/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which present 4 KiB pages can belong to a large anonymous folio, so that only those are
 * looked up in /proc/kpageflags (one pread each was the whole cost of a machine-wide pass).
 *
 * The kernel maps an anonymous large folio of F pages (a THP, or an mTHP of Linux 6.8) at
 * its natural alignment: a fault, khugepaged and swap-in all place it at a virtual address
 * aligned to F pages, and the buddy allocator gives it a head PFN aligned to F. So every
 * subpage of it satisfies  pfn % F == (vaddr / page_size) % F,  and with M the smallest
 * folio size the kernel may create (M divides F, both powers of two) pfn % M == vpn % M.
 * A small page passes that test by chance once in M; every other small page is dropped
 * with no system call.
 *
 * What it misses (limitations, stated in the report of the scanner's partial THPs):
 *  - a folio moved by mremap() to an address not congruent to its PFN modulo M: its
 *    PTE-mapped subpages there are not seen, so a partly mapped folio that only such a
 *    mapping maps is not reported, and subpages only such a mapping maps count as unmapped;
 *  - mTHP folios of a size that was enabled once but is "never" now (they survive the
 *    switch) only on kernels without per-size stats (6.8): elsewhere a "never" size with
 *    stats/nr_anon > 0 (6.11+; anon_fault_alloc > 0 on 6.9-6.10) still counts for M.
 * PMD-mapped THPs never go through this test: PAGEMAP_SCAN or the pagemap window reports
 * them whole. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "thp.h"

/* M: the smallest anonymous folio size in pages the kernel may create now: the smallest
 * size whose transparent_hugepage/hugepages-<N>kB/enabled is not "never" ("inherit" follows
 * the top-level enabled) or that still has anonymous folios (stats/nr_anon), never more than
 * the PMD size (g->subpages). Without per-size
 * directories (before Linux 6.8) only PMD-sized anonymous THPs exist: g->subpages. When a
 * per-size file exists but cannot be read, 4 (the smallest anonymous mTHP order, 2).
 * Returns M, a power of two >= 2 (never fails). */
uint32_t thps_anon_folio_min_pages(const struct thps_ctx *ctx, const struct thps_geometry *g);

/* The anonymous folio sizes below the PMD size and their effective modes ("inherit" resolved),
 * e.g. "16kB never, 64kB always" into buf ("" before Linux 6.8: no per-size directories).
 * Returns how many sizes are not "never" (0 also when there are none), or -errno. */
int thps_mthp_modes(const struct thps_ctx *ctx, const struct thps_geometry *g, char *buf,
		    size_t size);

/* True if a present page at vpn (vaddr / page_size) with pfn can be a subpage of a naturally
 * aligned folio of at least min_pages pages (a power of two). */
static inline bool thps_folio_aligned(uint64_t pfn, uint64_t vpn, uint32_t min_pages)
{
	return ((pfn ^ vpn) & (min_pages - 1)) == 0;
}
