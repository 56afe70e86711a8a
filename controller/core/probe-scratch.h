/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Stale scratch cgroups of the measured probe (probe-measure.h). Each probe makes
 * "thpshrink-probe.<pid>" under the cgroup v2 root and removes it when done; a probe that was
 * killed (SIGKILL, the OOM killer, a watchdog) leaves it behind, outside any unit's cgroup, so
 * systemd never cleans it. The daemon and `thpshrink probe` clean them up at start. */
#pragma once

#include "context.h"

/* Removes every "thpshrink-probe.<pid>" directly under the cgroup v2 root whose <pid> is not
 * a live thpshrink process (no such pid, or its comm is neither "thpshrink" nor "thpshrinkd"):
 * kills what is left in it (cgroup.kill where the kernel has it, else SIGKILL to each pid of
 * cgroup.procs), waits for it to empty (at most ~1 s), and removes it. Other names, and this
 * process's own, are never touched. Returns the number removed (0 also without cgroup v2), or
 * -errno of the first one that could not be removed (the others are still tried). */
int thps_probe_scratch_clean(const struct thps_ctx *ctx);
