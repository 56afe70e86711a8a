/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Is thpshrinkd alive? Its loop rewrites status.json at least every THPS_HEARTBEAT_SEC (also
 * during a long pass), so the file's age answers without a connection to the daemon: a
 * liveness check that no local user can starve, unlike one through the HTTP endpoint. */
#pragma once
#include <stdint.h>

#define THPS_HEARTBEAT_SEC 20
/* Three missed heartbeats plus slack. */
#define THPS_ALIVE_MAX_AGE_DEFAULT (3 * THPS_HEARTBEAT_SEC + 30)

/* The age in seconds of STATE_DIR/status.json (0 if its time is in the future). Returns 0,
 * or -errno from stat (-ENOENT: the daemon never started or has another state dir). */
int thps_status_age(const char *state_dir, uint64_t *ret_age);
