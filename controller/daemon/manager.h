/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's one Manager: owns the sd_event loop and every source on it (scan timer,
 * signals, proc connector, HTTP server), the policy set in force and what it remembers per
 * cgroup. systemd-oomd style: thpshrinkd.c parses options and calls these in order. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "context.h"

struct manager_options {
	const char *policy_dir;
	const char *listen;    /* "ADDR:PORT" or "none" */
	const char *textfile;  /* NULL = off */
	const char *state_dir; /* status.json goes here */
	const char *registrations_dir;
	const char *cgroup; /* only this subtree (relative to the mount); NULL = all */
	uint64_t interval_usec;
	uint64_t max_thps_per_sec;
	unsigned scan_cpu_percent;  /* 0 = the engine's default (5 %) */
	size_t metrics_max_cgroups; /* per-cgroup series for at most this many; 0 = default */
	double refresh_cpu_percent; /* the scan memo's refresh rotation; 0 = the default */
	bool exact_scan;	    /* no memo: read every folio every pass */
	bool dry_run;
	bool once;
};

struct manager;

/* Builds the manager: probes the kernel (logging each limitation once), loads the policies
 * (a bad set at start is an error), starts the HTTP server. Returns 0 or -errno, logged. */
int manager_new(const struct thps_ctx *ctx, const struct manager_options *o, struct manager **ret);
/* Runs one pass now (scan → decide → act → record → publish). Returns 0 or -errno. */
int manager_pass(struct manager *m, const char *why);
/* Runs the loop until SIGTERM/SIGINT. Sends READY=1 first. Returns 0 or -errno. */
int manager_run(struct manager *m);
void manager_free(struct manager *m);
