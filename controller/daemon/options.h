/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What thpshrinkd's command line sets: read by the manager and by every part of a pass. A type
 * of its own so that the parts can share it without including each other. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct manager_options {
	const char *policy_dir;
	const char *listen;   /* "ADDR:PORT" or "none" */
	const char *textfile; /* NULL = off */
	/* /metrics over TLS (both or neither) and with a bearer token: files read at start */
	const char *metrics_tls_cert, *metrics_tls_key, *metrics_token_file;
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
