/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel capability probe: what this kernel and its mounts let thpshrink do, as
 * findings an operator reads (key, value, ok, what follows) and booleans the engine,
 * the actuators and the report use. Gathering (file reads under ctx roots) and deciding
 * (pure, on the gathered facts) are separate, so the decisions are unit-tested on facts
 * and on fake trees alike. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>

#include "actuator.h"
#include "context.h"
#include "thp.h"

#define THPS_PROBE_MAX_FINDINGS 16

enum thps_split_kind {
	THPS_SPLIT_KEEPS_ZERO = 0, /* a split leaves every subpage mapped: frees nothing */
	THPS_SPLIT_RFC,		   /* RFC patch 003: zero tails freed (vmstat thp_split_free) */
	THPS_SPLIT_UPSTREAM,	   /* upstream >= 6.12: zero subpages -> shared zero page */
};

struct thps_finding {
	const char *key;   /* stable, machine-readable: "cgroup.memory", ... */
	char value[160];   /* what was found, short */
	bool ok;	   /* good for thpshrink */
	char follows[448]; /* what follows for thpshrink, one or two sentences */
};

struct thps_probe {
	/* facts, as gathered */
	char kernel_release[65];
	int kver_major, kver_minor; /* -1 when unknown */
	int cgroup_version;	    /* 2, 1 (memory v1), 0 none */
	char cgroup_root[PATH_MAX]; /* the memory hierarchy's mount, "" if none */
	bool v2_memory;		    /* "memory" in the v2 root's cgroup.controllers */
	bool v2_subtree_memory;	    /* "memory" in the v2 root's cgroup.subtree_control */
	bool have_memory_reclaim;
	int reclaim_swappiness; /* 1 accepts "swappiness=", 0 not, -1 unknown */
	bool swappiness_tested; /* decided by a probe write (VM only), else by version */
	char thp_enabled[16];	/* the bracketed mode, "" when absent */
	char thp_defrag[24];
	int shrink_underused; /* 0/1, -1 when the knob is absent */
	int max_ptes_none;    /* -1 when absent */
	unsigned subpages;    /* per THP, from the geometry (512 on x86-64) */
	bool debugfs_mounted;
	bool have_split_file; /* debugfs split_huge_pages exists */
	bool split_file_writable;
	bool have_thp_utilization; /* the RFC's debugfs file exists */
	int thp_utilization_error; /* 0 parsed, else -errno */
	int thp_utilization_bad_line;
	struct thps_hist kernel_hist;
	double kernel_last_scan_time, kernel_last_scan_duration;
	bool vm_thp_split_free, vm_thp_split_unmap; /* RFC patch 003 counters */
	bool vm_thp_underused_split_page;	    /* upstream >= 6.12 counter */
	bool have_pagemap, have_kpageflags;	    /* /proc/self/pagemap, /proc/kpageflags */
	int pmadvise_allowed;			    /* CAP_SYS_NICE: 1 yes, 0 no, -errno unknown */
	char pmadvise_why[256];			    /* why not */

	/* decided by thps_probe_decide() */
	struct thps_finding findings[THPS_PROBE_MAX_FINDINGS];
	size_t n_findings;
	bool can_reclaim; /* cgroup v2 memory + memory.reclaim */
	bool split_frees_zero_subpages;
	enum thps_split_kind split_kind;
	bool have_split_debugfs;	/* debugfs mounted, split_huge_pages writable */
	bool recollapse_risk;		/* max_ptes_none == subpages - 1 */
	bool underused_shrinker_active; /* shrink_underused=1 and max_ptes_none < subpages - 1 */
	bool have_split_pmadvise;	/* process_madvise(MADV_COLD) allowed, Linux >= 5.10 */
	/* how the split actuator splits: process_madvise where allowed, else debugfs; once
	 * measured (thps_probe_apply_measure), what the canary sizes chose */
	enum thps_split_mech split_mech;
	bool split_mech_measured;
};

/* Tests memory.reclaim's "swappiness=" key by writing "0 swappiness=60" (asks for nothing)
 * to the v2 root's memory.reclaim. Only for the VM tests: never on a host you do not own. */
#define THPS_PROBE_WRITE_TEST 0x1u

/* Finds the memory cgroup hierarchy: ctx->cgroup_root when set (its version told by its
 * files), else from <proc_root>/self/mountinfo, preferring cgroup v2 with the memory
 * controller, then v1's memory hierarchy, then a v2 mount without memory.
 * Returns 2 or 1 (the version, root filled) or 0 (none found), or -errno. */
int thps_memcg_find(const struct thps_ctx *ctx, char *root, size_t size, bool *ret_v2_memory);

/* Gathers the facts under ctx's roots and decides. Absent files are facts, not errors.
 * Returns 0, or -errno when a root itself is unusable (-ENOMEM, -ENAMETOOLONG). */
int thps_probe_run(const struct thps_ctx *ctx, unsigned flags, struct thps_probe *ret);

/* Pure: fills findings and the derived booleans from the facts in p. */
void thps_probe_decide(struct thps_probe *p);

/* Sets the facts to "nothing known" (every knob absent), for tests and thps_probe_run. */
void thps_probe_init(struct thps_probe *p);

/* Parses "6.12.48+deb13-amd64" into major/minor. Returns 0 or -EINVAL. */
int thps_parse_kernel_release(const char *release, int *ret_major, int *ret_minor);

/* The bracketed choice of a THP mode file ("always [madvise] never" -> "madvise").
 * Returns 0, -EINVAL when there is no single bracketed word, -ENAMETOOLONG if it is longer
 * than size-1. */
int thps_parse_bracketed(const char *text, char *ret, size_t size);
/* Reads root/rel (a THP mode file) and parses its bracketed choice into ret. Returns 0, the
 * read's -errno (-ENOENT: no such knob), or thps_parse_bracketed's. */
int thps_read_bracketed(const char *root, const char *rel, char *ret, size_t size);

bool thps_probe_split_frees(const struct thps_probe *p);
/* The probe's verdict in one line: what thpshrink can do here ("exact splits via
 * process_madvise ...", "read-only reporting", ...). */
void thps_probe_mode(const struct thps_probe *p, char *buf, size_t size);
const struct thps_finding *thps_probe_finding(const struct thps_probe *p, const char *key);

void thps_probe_print(FILE *f, const struct thps_probe *p);
/* Returns a new object (see schemas/probe.schema.json) or NULL on ENOMEM. */
json_object *thps_probe_to_json(const struct thps_probe *p);
