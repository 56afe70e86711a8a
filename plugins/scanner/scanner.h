/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The userspace THP scanner (fallback of the kernel RFC's thp_utilization), as a source
 * plugin: thps_source_scanner in plugin.h's table.
 *
 * What it counts, per memory cgroup (attributed by /proc/kpagecgroup of the head page):
 *  - every distinct PMD-mapped anonymous THP of the scanned processes (deduplicated by head
 *    PFN), by utilized subpages (>= 1 non-zero byte) into the RFC's histogram;
 *  - every smaller anonymous large folio (mTHP, Linux 6.8+) and PMD-size folio mapped by PTEs
 *    that one process maps whole at its natural place: read once, at its own size, through
 *    the first process seen mapping it, into the histogram of its size
 *    (thps_cgroup_size_hist, buckets min(utilized * 10 / nr, 9)); a folio that only the union
 *    of several processes maps whole is in neither histogram nor partial (rare: fork);
 *  - large folios of every size mapped only partly by PTEs: subpages no scanned process maps
 *    are never read and count as unmapped (with opts->pid, "mapped" means mapped by that
 *    process), per size as well.
 *    Only PTE-mapped pages that can be in a naturally aligned large folio are looked up
 *    in kpageflags (folios.h, which states what that misses: folios mremap'ed off their
 *    alignment, mTHP sizes disabled since they were made).
 * opts->cgroup selects that cgroup and its descendants (path relative to the mount). */
#pragma once
#include <stdint.h>
#include <sys/types.h>

#include "plugin.h"

struct pm_scan_arg;

extern const struct thps_source_ops thps_source_scanner;

/* How THP contents are read (count NULL = process_vm_readv); tests replace it to run the
 * scanner over a fake /proc tree.
 * Same contract as thps_reader_count(). */
struct thps_scanner_hooks {
	int (*count)(void *userdata, pid_t pid, uint64_t addr, uint64_t len, unsigned *ret_utilized,
		     uint64_t *ret_bytes);
	/* the same, stopping once the count passes limit (reader.h); NULL: count whole */
	int (*count_until)(void *userdata, pid_t pid, uint64_t addr, uint64_t len, unsigned limit,
			   unsigned *ret_utilized, uint64_t *ret_bytes);
	void *userdata;
	int use_pagemap_scan; /* 0: pagemap reads only (for tests and the benchmark) */
	/* 1: look every present PTE-mapped page up in kpageflags, not only those that can be in
	 * a naturally aligned large folio (folios.h): the benchmark's and tests' reference */
	int every_page;
	/* the PAGEMAP_SCAN call (pagemap.h's thps_pm_scan_fn); NULL: the ioctl */
	int (*pagemap_scan)(int fd, struct pm_scan_arg *arg);
	/* PTE-mapped folios a pass tracks at most; 0: the default (1,048,576) */
	uint32_t max_partial_folios;
};

/* collect() with a chosen content reader (NULL = process_vm_readv). ctx->cgroup_root ""
 * is discovered; without any memory hierarchy, cgroups are named "(memcg ino N)".
 * Returns 0, -ENOENT if opts->cgroup is not in the tree, or -errno. */
int thps_scanner_collect(const struct thps_ctx *ctx, const struct thps_scan_opts *opts,
			 const struct thps_scanner_hooks *hooks, struct thps_scan *scan);
