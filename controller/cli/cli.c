/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The table of subcommands, in the order --help lists them. */
#include <stddef.h>

#include "cli.h"

const struct thps_cli_command thps_cli_commands[] = {
    {"report", "scan THPs and print per-cgroup utilization and waste", thps_cli_report},
    {"probe", "what this kernel lets thpshrink do, and what follows", thps_cli_probe},
    {"reclaim", "give one cgroup's wasted THP memory back (memory.reclaim or split)",
     thps_cli_reclaim},
    {"promote", "collapse one cgroup's dense memory into THPs (MADV_COLLAPSE, no memory cost)",
     thps_cli_promote},
    {"validate", "check policy files as the daemon would load them", thps_cli_validate},
    {"explain", "show the daemon's last decision for a cgroup, and why", thps_cli_explain},
    {NULL, NULL, NULL},
};
