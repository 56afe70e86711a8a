/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's one Manager: owns the sd_event loop and every source on it (scan timer,
 * signals, proc connector, HTTP server), the policy set in force and what it remembers per
 * cgroup. systemd-oomd style: thpshrinkd.c parses options and calls these in order. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "context.h"
#include "options.h"

struct manager;

/* Builds the manager: probes the kernel (logging each limitation once), loads the policies
 * (a bad set at start is an error), starts the HTTP server. Returns 0 or -errno, logged. */
int manager_new(const struct thps_ctx *ctx, const struct manager_options *o, struct manager **ret);
/* Runs one pass now (scan → decide → act → record → publish). Returns 0 or -errno. */
int manager_pass(struct manager *m, const char *why);
/* Runs the loop until SIGTERM/SIGINT. Sends READY=1 first. Returns 0 or -errno. */
int manager_run(struct manager *m);
void manager_free(struct manager *m);

/* The first step of manager_new(): the manager with its options and nothing built (every fd
 * -1), freed by manager_free(). For the daemon's unit test, which drives a pass without a loop.
 * Returns 0 or -ENOMEM, logged. */
int manager_alloc(const struct thps_ctx *ctx, const struct manager_options *o,
		  struct manager **ret);
