/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The static table of source plugins. Actuators have their own table (actuator.h). */
#include <string.h>

#include "plugin.h"

extern const struct thps_source_ops thps_source_scanner;
extern const struct thps_source_ops thps_source_debugfs;
extern const struct thps_source_ops thps_source_vmstat;

const struct thps_source_ops *const thps_sources[] = {
    &thps_source_scanner,
    &thps_source_debugfs,
    &thps_source_vmstat,
    NULL,
};

const struct thps_source_ops *thps_source_find(const char *name)
{
	for (size_t i = 0; thps_sources[i]; i++)
		if (strcmp(thps_sources[i]->name, name) == 0)
			return thps_sources[i];
	return NULL;
}
