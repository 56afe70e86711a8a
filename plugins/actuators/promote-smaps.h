/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a process's smaps says about the VMAs that hold its promotion candidates: the choices
 * the pagemap cannot show. MADV_NOHUGEPAGE is VmFlags "nh"; PR_SET_THP_DISABLE with
 * PR_THP_DISABLE_EXCEPT_ADVISED (6.18+) is nowhere in /proc/PID/status, but under THP mode
 * "always" it makes THPeligible 0 on every VMA not advised MADV_HUGEPAGE (a plain VMA says 1);
 * under "madvise" or "never" every plain VMA says 0, so the kernel shows nothing. LazyFree
 * stands in for kpageflags where that cannot be read. smaps is costly with many VMAs: read it
 * only for a process that has candidates, and only up to the last one. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "context.h"
#include "thp.h"

struct thps_smaps_drops {
	uint64_t no_huge;    /* ranges in a VMA with VmFlags nh (MADV_NOHUGEPAGE) */
	uint64_t ineligible; /* THPeligible 0 under THP always (EXCEPT_ADVISED, ...) */
	uint64_t lazy_free;  /* ranges in a VMA with LazyFree > 0 (check_lazy_free only) */
};

/* 1 when THP mode "always" applies to PMD-sized THPs (hugepages-<size>kB/enabled "always", or
 * "inherit" and the top-level mode "always"): then THPeligible tells an opt-out. 0 otherwise or
 * unknown. */
int thps_thp_mode_always(const struct thps_ctx *ctx, const struct thps_geometry *g);

/* Removes from addrs[0..*n) (ascending) the ranges in VMAs that opted out (VmFlags nh; or
 * THPeligible 0 when thp_always) or, when check_lazy_free, hold lazily freed memory (LazyFree
 * > 0). *n becomes what is left; ret counts each kind. Returns 0, -ESRCH when the process is
 * gone, or -errno (addrs and *n then unchanged). */
int thps_smaps_drop_opted_out(const struct thps_ctx *ctx, pid_t pid, bool thp_always,
			      bool check_lazy_free, uint64_t *addrs, size_t *n,
			      struct thps_smaps_drops *ret);
