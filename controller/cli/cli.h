/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The thpshrink CLI's subcommands. Each lives in its own cli-<name>.c and returns the
 * process exit status (0 ok, 1 failure the user must see, 2 usage). */
#pragma once
#include <stddef.h>

struct thps_cli_command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
};

extern const struct thps_cli_command thps_cli_commands[];

struct thps_ctx;
/* --cgroup as every command takes it: "/sys/fs/cgroup/a/b", "a/b", "/a/b/" -> "/a/b" (relative
 * to the mount), which must be a directory. Returns 0, or -EINVAL (logged: a usage error). */
int thps_cli_resolve_cgroup(const struct thps_ctx *ctx, const char *in, char *buf, size_t size);

/* thpshrink report (cli-report.c). */
int thps_cli_report(int argc, char **argv);
int thps_cli_probe(int argc, char **argv);
/* thpshrink reclaim (cli-reclaim.c) */
int thps_cli_reclaim(int argc, char **argv);
/* thpshrink promote (cli-promote.c) */
int thps_cli_promote(int argc, char **argv);
/* cli-validate.c */
int thps_cli_validate(int argc, char **argv);
/* thpshrink explain (cli-explain.c): reads the daemon's status file. */
int thps_cli_explain(int argc, char **argv);
