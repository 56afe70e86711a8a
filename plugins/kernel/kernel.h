/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel's own figures as sources: the RFC's debugfs thp_utilization (source "debugfs")
 * and the /proc/vmstat and per-cgroup memory counters (source "vmstat"). Their parsers are
 * core's (kparse.h), shared with the capability probe. */
#pragma once
#include "kparse.h"
#include "plugin.h"

extern const struct thps_source_ops thps_source_debugfs;
extern const struct thps_source_ops thps_source_vmstat;
