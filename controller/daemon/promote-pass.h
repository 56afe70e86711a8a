/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The promote step of a pass (promote-pass.c), in three parts on two threads, so that however
 * many processes and VMAs tenants map the loop stays free for signals, reloads and the
 * heartbeat: promote_plan() on the loop when the pass starts, promote_run() on the pass's
 * thread after the scan, promote_apply() on the loop once the thread is joined. */
#pragma once
#include <stdint.h>

#include "promote-bounds.h"

struct manager;
struct promote_job;

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
