/* The table of subcommands, in the order --help lists them. */
#include <stddef.h>

#include "cli.h"

const struct thps_cli_command thps_cli_commands[] = {
	{ "validate", "check policy files as the daemon would load them", thps_cli_validate },
	{ NULL, NULL, NULL },
};
