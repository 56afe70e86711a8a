/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the daemon's files share: struct manager and the per-cgroup record, and the calls
 * between the loop (manager.c), the pass (pass.c), publishing (publish.c) and the
 * registrations watch (regwatch.c). Not an API: only controller/daemon and its unit test
 * (tests/unit/check-daemon.c, which drives a pass without a loop) include it. */
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
#include "manager.h"
#include "metrics.h"
#include "promote.h"
#include "recollapse.h"
#include "registrations.h"
#include "scan-memo.h"
#include "scan.h"

#define PENDING_PIDS_MAX 256

/* What the daemon keeps per cgroup between passes. */
struct crecord {
	char *path;
	bool seen; /* in the current pass */
	struct dglue_decision last;
	struct dglue_result last_result;
	time_t last_time;
	/* per action: observe, reclaim, split */
	struct thps_metrics_action act[DGLUE_N_ACTING];
	struct thps_recollapse
	    split;		  /* ranges the daemon split, to catch khugepaged rebuilding them */
	uint64_t recollapsed;	  /* THPs rebuilt after a split, since the start */
	uint64_t recollapse_debt; /* their bytes, not yet charged to the engine */
	struct thps_promoted promoted; /* whole THPs the daemon made: the split leaves them */
	struct crecord_promote {
		uint64_t ranges, bytes; /* collapsed since the start */
		uint64_t pass;		/* manager's promote pass these figures are from */
		uint64_t pass_found, pass_collapsed, pass_bytes;
		uint64_t opportunity_bytes; /* dense bytes still in small pages (last pass) */
		uint64_t pass_not_asked;    /* processes: PR_SET_THP_DISABLE, refused before */
		uint64_t ino;		    /* of the cgroup's directory, for the metrics */
		bool looked;		    /* a promote policy matched it */
		bool observe;		    /* the policy observes: found, not collapsed */
		uint64_t max_bytes;	    /* the policy's max_bytes_per_pass */
		char policy[72];
		char note[200]; /* the first failure or stop of the pass */
		char why[400];	/* why promoted or not, for explain */
	} prom;
};

/* One collection, run either inline (--once) or on the scan thread: it reads only its job. */
struct scan_job {
	struct thps_ctx ctx;
	struct thps_scan_opts opts;
	char cgroup[PATH_MAX];
	struct thps_scan scan;
	int r;
	char error[256];
	int done_fd; /* eventfd the thread signals; -1 inline */
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
	uint64_t scans, scan_errors;
	double last_scan_ts;
	struct scan_memo *memo; /* NULL with --exact-scan */
	char scan_error[256];

	struct crecord *rec;
	size_t n_rec;

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
};

static inline uint64_t now_mono_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

/* manager.c: the first step of manager_new(): the manager with its options and nothing
 * built (every fd -1), freed by manager_free(). Returns 0 or -ENOMEM, logged. */
int manager_alloc(const struct thps_ctx *ctx, const struct manager_options *o,
		  struct manager **ret);

/* pass.c */
/* The record of the cgroup at path, created (counters zero) if there is none; NULL when out
 * of memory. */
struct crecord *record_get(struct manager *m, const char *path);
const struct crecord *record_find(const struct manager *m, const char *path);
void records_free(struct manager *m);
/* A job for the next scan, from the options and policies in force; NULL when out of memory. */
struct scan_job *scan_job_new(struct manager *m);
void scan_job_run(struct scan_job *j);
/* Takes j's scan and does the rest of the pass: decide, act, record, publish. */
void pass_finish(struct manager *m, struct scan_job *j);
/* Decides and acts for every cgroup of m->scan, then drops the records of cgroups removed.
 * now is the wall-clock time recorded per cgroup. */
void pass_decide(struct manager *m, time_t now);

/* promote-pass.c */
/* Promotes the dense memory of the cgroups whose policy has "promote", within each one's
 * budget per pass; observe policies only find. Marks the records it touches as seen. */
void pass_promote(struct manager *m);

/* publish.c */
/* The metrics (HTTP, textfile) and status.json from the records. Returns 0 or -errno, logged. */
int publish(struct manager *m);
/* Writes status.json, logging a failure: also the liveness heartbeat. */
void heartbeat(struct manager *m);
void notify_status(struct manager *m);

/* regwatch.c */
/* Watches and loads the registrations directory, if one is configured. Never fails: without
 * it there are no container registrations. */
void setup_registrations(struct manager *m);
/* The registration of a cgroup, or NULL. */
const struct thps_registration *reg_find(const struct manager *m, const char *cgroup);
