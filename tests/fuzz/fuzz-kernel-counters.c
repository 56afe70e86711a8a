/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memory.stat / /proc/vmstat style "key value" text. */
#include <stdlib.h>

#include "fileio.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size);
	uint64_t v;
	static const char *const keys[] = { "anon_thp", "thp_split_page", "anon", "some", "" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		(void)find_keyed_u64(s, keys[i], &v);
	(void)parse_u64(s, &v);
	free(s);
	return 0;
}
