/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink explain: reads the daemon's status file. Returns the exit status. */
#pragma once
int thps_cli_explain(int argc, char **argv);
