/* The table of subcommands, in the order --help lists them. */
#include <stddef.h>

#include "cli.h"

const struct thps_cli_command thps_cli_commands[] = {
	{ NULL, NULL, NULL },
};
