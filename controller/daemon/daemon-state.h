/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's state: struct manager, which the loop (manager.c) owns and the parts of a pass
 * (pass.c, publish.c, regwatch.c) read or fill. Types only: each part's functions are in its
 * own header (pass.h, publish.h, regwatch.h, records.h), so the parts include each other one
 * way only (tests/integration/layout.sh checks the include graph has no circle). Not an API:
 * only controller/daemon and its unit test (tests/unit/check-daemon.c) include it. */
#pragma once
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "context.h"
#include "daemon-glue.h"
#include "engine.h"
#include "http.h"
#include "options.h"
#include "records.h"
#include "metrics.h"
#include "promote.h"
#include "promote-backoff.h"
#include "promote-bounds.h"
#include "recollapse.h"
#include "registrations.h"
#include "scan-memo.h"
#include "scan.h"

#define PENDING_PIDS_MAX 256

/* One collection, run either inline (--once) or on the scan thread: it reads only its job. */
struct scan_job {
	struct thps_ctx ctx;
	struct thps_scan_opts opts;
	char cgroup[PATH_MAX];
	struct thps_scan scan;
	int r;
	char error[256];
	int done_fd;		     /* eventfd the thread signals; -1 inline */
	struct promote_job *promote; /* after the scan, on the same thread; NULL: none */
};

struct manager {
	struct thps_ctx ctx;
	struct manager_options o;
	sd_event *event;
	sd_event_source *timer, *debounce, *proc_src;
	sd_event_source *sig_term, *sig_int, *sig_hup;
	struct http_server *http;
	int proc_fd;
	sd_event_source *done_src;
	int done_fd; /* eventfd: the scan thread finished */
	pthread_t thread;
	struct scan_job *job;	/* the pass in flight, NULL if none */
	bool again;		/* a pass was asked for while one ran */
	uint64_t last_pass_end; /* CLOCK_MONOTONIC usec */

	struct thps_registration_list regs; /* containers the OCI hook registered */
	int regs_fd;			    /* inotify on the registrations dir, -1 if none */
	sd_event_source *regs_src, *regs_gc;
	sd_event_source *heartbeat_timer;

	struct dglue_caps caps;
	bool observe_only;
	struct dglue_policies *policies;
	uint64_t policy_errors;
	bool policy_last_ok;

	struct thps_geometry geom;
	struct thps_scan scan;
	bool have_scan;
	bool untracked_said; /* the last pass left PTE-mapped folios uncounted, and we said so */
	uint64_t scans, scan_errors;
	double last_scan_ts;
	struct scan_memo *memo; /* NULL with --exact-scan */
	char scan_error[256];

	struct crecords recs; /* per cgroup, between passes (records.h) */

	struct thps_engine *engine;
	uint64_t passes_deferred;		 /* by the global scan budget */
	struct thps_metrics_count decisions[24]; /* by the engine's rule name, "failed", ... */
	char decision_names[24][32];
	size_t n_decisions;
	uint64_t proc_events, proc_overflows;
	pid_t pending[PENDING_PIDS_MAX];
	size_t n_pending;
	char last_action[160];
	/* promote (promote-pass.c) */
	uint64_t promote_pass;
	uint64_t promote_failures[THPS_PROMOTE_FAIL_MAX];
	struct {
		pid_t pid;
		uint64_t starttime;
	} promote_refused[256]; /* processes that said no (EINVAL/EPERM): never asked again */
	size_t n_promote_refused, promote_refused_next;
	bool promote_warned;
	bool promote_bound_said; /* a bound deferred work: logged once */
	pid_t promote_cursor;	 /* the rotation: the next step begins at this pid */
	struct promote_resume promote_resume[PROMOTE_RESUME_MAX]; /* by pid, sorted */
	size_t n_promote_resume;
	uint64_t promote_deferred[PROMOTE_DEFERRED_MAX]; /* totals, by bound */
	struct promote_step_figures promote_last;
	/* per-range backoff of re-collapses: the pass thread's while a pass runs, see
	 * promote-pass.c */
	struct promote_backoff backoff;
};

static inline uint64_t now_mono_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}
