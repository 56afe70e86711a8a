/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A pass once the scan is in: per cgroup decide -> act, filling the records; then publish. */
#pragma once
#include <time.h>

struct manager;
struct scan_job;

/* A job for the next scan, from the options and policies in force; NULL when out of memory. */
struct scan_job *scan_job_new(struct manager *m);
void scan_job_run(struct scan_job *j);
/* Takes j's scan and does the rest of the pass: decide, act, record, publish. */
void pass_finish(struct manager *m, struct scan_job *j);
/* Decides and acts for every cgroup of m->scan, then drops the records of cgroups removed.
 * now is the wall-clock time recorded per cgroup. */
void pass_decide(struct manager *m, time_t now);
