/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink: the CLI. A thin dispatcher over the subcommands in cli-*.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: thpshrink COMMAND [OPTIONS]\n"
		   "       thpshrink --version | --help\n\n"
		   "Measures how much memory anonymous transparent huge pages waste, per cgroup,\n"
		   "and gives it back.\n\nCommands:\n");
	for (const struct thps_cli_command *c = thps_cli_commands; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f, "\nRun 'thpshrink COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	thps_log_set_prefix("thpshrink");
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("thpshrink %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (const struct thps_cli_command *c = thps_cli_commands; c->name; c++)
		if (!strcmp(argv[1], c->name))
			return c->run(argc - 1, argv + 1);
	log_error("unknown command '%s'; 'thpshrink --help' lists them", argv[1]);
	return 2;
}
