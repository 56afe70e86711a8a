/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The promote step of a pass (promote-pass.c), in three parts on two threads, so that however
 * many processes and VMAs tenants map the loop stays free for signals, reloads and the
 * heartbeat: promote_plan() on the loop when the pass starts, promote_run() on the pass's
 * thread after the scan, promote_apply() on the loop once the thread is joined. */
#pragma once
#include <stdint.h>
#include <sys/types.h>

struct manager;
struct promote_job;

/* A step's bounds. A process's walk per pass: private anonymous VMAs and candidate windows
 * (one pagemap read each) looked at; the default max_map_count (65,530 VMAs) takes 8 passes.
 * The step per pass: maps lines read (those a resumed walk skips included) and windows
 * confirmed; it checks them between processes, so it may pass them by one process's maps
 * (max_map_count lines). tests/bench/promote-finder measures what each costs. */
#define PROMOTE_PROCESS_VMAS_MAX    8192u
#define PROMOTE_PROCESS_WINDOWS_MAX 16384u /* 32 GiB of candidates at 2 MiB */
#define PROMOTE_PASS_LINES_MAX	    131072u
#define PROMOTE_PASS_WINDOWS_MAX    65536u
/* processes whose walk resumes where a bound cut it; beyond, a walk starts over */
#define PROMOTE_RESUME_MAX 1024u

/* What a bound left for a later pass: the metric's "bound" label. */
enum promote_deferred {
	PROMOTE_DEFERRED_PLAN,	  /* processes beyond the plan (4,096 cgroups, 65,536 processes) */
	PROMOTE_DEFERRED_PASS,	  /* processes the step's bound did not reach */
	PROMOTE_DEFERRED_PROCESS, /* walks cut at the process's bound, resumed next pass */
	PROMOTE_DEFERRED_MAX
};
/* "plan", "pass", "process" */
const char *promote_deferred_name(enum promote_deferred b);

/* The last step's work (status.json "promote"). */
struct promote_step_figures {
	uint64_t processes, maps_lines, vmas, windows, cpu_ns;
	uint64_t deferred[PROMOTE_DEFERRED_MAX];
};

struct promote_resume {
	pid_t pid;
	uint64_t starttime, addr;
};

/* Loop thread: the processes of the cgroups whose policy has "promote", each with its cgroup's
 * plan (policy, budget, observe or enforce) copied out of the policies in force. NULL when no
 * policy promotes or out of memory (logged). */
struct promote_job *promote_plan(struct manager *m);
/* The pass's thread: collapses (observe: only finds) the dense ranges of the planned processes.
 * Touches only j and the manager's per-range backoff, which is the pass's while it runs. A
 * process's failure ends that process; only ENOMEM (no free huge page) or a daemon that may not
 * advise others ends the step. Stops between processes once promote_cancel() was called. */
void promote_run(struct promote_job *j);
/* Any thread: asks a running promote_run() to stop at the next process. */
void promote_cancel(struct promote_job *j);
/* The CPU time promote_run() took, charged to the --scan-cpu budget with the scan's. */
uint64_t promote_cpu_usec(const struct promote_job *j);
/* Loop thread, after the join: the job's results into the records (figures, explain's reason,
 * the promoted ranges the split leaves alone), the failure counters, and the log. j may be
 * NULL. Marks the records it touches as seen. */
void promote_apply(struct manager *m, const struct promote_job *j);
void promote_job_free(struct promote_job *j);
