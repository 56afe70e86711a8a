/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the daemon shows: metrics and status.json from the records; reads, never calls back. */
#pragma once

struct manager;

/* The metrics (HTTP, textfile) and status.json from the records. Returns 0 or -errno, logged. */
int publish(struct manager *m);
/* Writes status.json, logging a failure: also the liveness heartbeat. */
void heartbeat(struct manager *m);
void notify_status(struct manager *m);
