/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A pass once the scan is in: per cgroup decide -> act, filling the records; then publish. */
#pragma once
#include <time.h>

struct manager;
struct scan_job;
struct promote_job;

/* A job for the next scan and promote step, from the options and policies in force (loop
 * thread); NULL when out of memory. */
struct scan_job *scan_job_new(struct manager *m);
/* The scan, then the promote step: on the scan thread, or inline. Reads only its job. */
void scan_job_run(struct scan_job *j);
void scan_job_free(struct scan_job *j);
/* Takes j's scan and does the rest of the pass: decide, act, record, publish. */
void pass_finish(struct manager *m, struct scan_job *j);
/* Decides and acts for every cgroup of m->scan, applies the promote step's results (promoted,
 * run by promote_run(); NULL: none), then drops the records of cgroups removed. now is the
 * wall-clock time recorded per cgroup. */
void pass_decide(struct manager *m, time_t now, const struct promote_job *promoted);
