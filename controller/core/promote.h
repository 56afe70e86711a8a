/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The promote actuator's interface (plugins/actuators/promote.c), here like actuator.h's, so
 * that the daemon and the CLI call it without the actuators' folder on their include path.
 * promote: collapses a process's (or a cgroup's) dense ranges into THPs through
 * process_madvise(pidfd, MADV_COLLAPSE): works whatever the sysfs THP setting says, charges the
 * target's cgroup, and adds no memory (dense.h: every page present, private, not lazily freed).
 * Each range is confirmed again right before its own collapse, through the pagemap fd the
 * finder opened (it pins the address space examined: after an exec it reads nothing, and the
 * process is left alone, reason "exec"); after each collapse the process's anonymous RSS is
 * compared with before (reason "grew" when it rose: a collapse of present pages adds none).
 * The process's own refusal is final and never asked: PR_SET_THP_DISABLE (status
 * THP_enabled: 0), a VMA advised MADV_NOHUGEPAGE, and, where THP mode is "always",
 * a VMA with THPeligible 0 (PR_SET_THP_DISABLE with EXCEPT_ADVISED shows only so; under
 * "madvise" or "never" the kernel shows it nowhere). A range the kernel refuses (EINVAL,
 * EPERM) is counted, never asked again in the pass. EAGAIN twice (a page pinned, or briefly
 * off the LRU) ends that range, EBUSY (the cgroup cannot be charged) that process; only
 * ENOMEM (no free huge page on the node) ends the pass. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "context.h"
#include "thp.h"

enum thps_promote_fail {
	THPS_PROMOTE_FAIL_NO_MEMORY, /* ENOMEM: no free huge page now (ranges) */
	THPS_PROMOTE_FAIL_REFUSED,   /* EINVAL / EPERM: the process or its VMA said no (ranges) */
	THPS_PROMOTE_FAIL_DISABLED,  /* PR_SET_THP_DISABLE: a whole process, not asked */
	THPS_PROMOTE_FAIL_OTHER,     /* anything else (the process went away, ...) (ranges) */
	THPS_PROMOTE_FAIL_BUSY,	     /* EAGAIN twice (ranges), EBUSY (the process's work ends) */
	THPS_PROMOTE_FAIL_EXEC,	     /* exec() after the finder: a new address space (processes) */
	THPS_PROMOTE_FAIL_GREW,	     /* RSS rose across a collapse (processes) */
	THPS_PROMOTE_FAIL_OPTED_OUT, /* MADV_NOHUGEPAGE, or THPeligible 0 under THP always (ranges)
				      */
	THPS_PROMOTE_FAIL_MAX
};
/* "no_memory", "refused", "thp_disabled", "other", "busy", "exec", "grew", "opted_out": the
 * metric's reason label. */
const char *thps_promote_fail_name(enum thps_promote_fail f);

struct thps_promote_opts {
	uint64_t max_bytes;	  /* collapse at most this much (0: no bound) */
	bool dry_run;		  /* find, collapse nothing */
	bool use_scan;		  /* try PAGEMAP_SCAN (else the pagemap fallback) */
	uint64_t fallback_budget; /* pagemap fallback: address space looked at per process */
	/* each process's walk: where it starts and its bounds (0: none), dense.h's resume_addr,
	 * max_vmas and max_windows; a cut walk says where to resume (result's next_addr) */
	uint64_t resume_addr;
	uint64_t max_vmas;
	uint64_t max_windows;
	bool verify; /* look at each collapsed range afterwards (kpageflags) */
	/* called for each range collapsed (optional): the daemon remembers what it promoted */
	void (*collapsed)(void *userdata, pid_t pid, uint64_t pid_starttime, uint64_t addr);
	/* asked right before each range's collapse (optional, NULL: all admitted): false holds
	 * the range back (the daemon's per-range backoff) */
	bool (*admit)(void *userdata, pid_t pid, uint64_t starttime, uint64_t addr);
	void *userdata; /* for collapsed and admit */
};

struct thps_promote_result {
	uint64_t processes;			  /* looked at */
	uint64_t ranges_found;			  /* dense ranges found (within max_bytes) */
	uint64_t ranges_collapsed;		  /* MADV_COLLAPSE succeeded */
	uint64_t ranges_verified;		  /* a THP afterwards (opts.verify) */
	uint64_t ranges_not_tried;		  /* found, but the pass stopped first */
	uint64_t ranges_retried;		  /* EAGAIN once: asked again, alone */
	uint64_t ranges_held_back;		  /* opts.admit said no */
	uint64_t ranges_changed;		  /* no longer dense at the re-check */
	uint64_t ranges_lazy_free;		  /* left out: lazily freed (MADV_FREE) */
	uint64_t failures[THPS_PROMOTE_FAIL_MAX]; /* see each value: ranges or processes */
	bool stopped;				  /* ENOMEM ended the pass */
	bool lazy_free_by_smaps;		  /* kpageflags unreadable: smaps LazyFree used */
	bool budget_hit;			  /* the pagemap fallback stopped at its budget */
	uint64_t looked_bytes;			  /* address space the finder covered */
	uint64_t pagemap_bytes;			  /* pagemap it read */
	uint64_t maps_lines;			  /* maps lines it read */
	uint64_t vmas;				  /* private anonymous VMAs it looked at */
	uint64_t windows;			  /* windows it confirmed */
	uint64_t walks_cut;			  /* processes whose walk a bound cut */
	uint64_t next_addr; /* the last process's walk: where the next resumes, 0 at its end */
	uint64_t find_ns, collapse_ns;
	const char *method; /* "PAGEMAP_SCAN" / "pagemap" */
	char note[256];	    /* the first refusal, for the operator */
};

/* Promotes the dense ranges of pid (one process). Adds to res (zero it first). Returns 0 (also
 * when the kernel refused or the process exited meanwhile: res says so), -EPERM when this
 * process may not advise others (no CAP_SYS_NICE), -ENOSYS, or -errno on a failure to read. */
int thps_promote_pid(const struct thps_ctx *ctx, const struct thps_geometry *g, pid_t pid,
		     const struct thps_promote_opts *opts, struct thps_promote_result *res);

/* The same for every process in cgroup (relative to the mount, e.g. "/a/b") and below it,
 * within opts->max_bytes in all. Returns 0, or the first fatal error of thps_promote_pid(). */
int thps_promote_cgroup(const struct thps_ctx *ctx, const struct thps_geometry *g,
			const char *cgroup, const struct thps_promote_opts *opts,
			struct thps_promote_result *res);

/* The dense memory still in small pages (the promotion opportunity) of each process in cgroup
 * (NULL: all) or of pid alone (0: any): a finder walk, nothing collapsed; fn gets the process's
 * cgroup and its dense bytes, for each process that has some (what opted out, as promote
 * tells it, and what is lazily freed count as none). Returns 0 or -errno. */
int thps_promote_dense(const struct thps_ctx *ctx, const struct thps_geometry *g,
		       const char *cgroup, pid_t pid,
		       void (*fn)(void *userdata, const char *cgroup, uint64_t bytes),
		       void *userdata);
