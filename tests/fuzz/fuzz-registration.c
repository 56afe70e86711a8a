/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Registration files (controller/core/registrations.h): what the daemon reads from
 * /run/thpshrink/containers. A text that validates must serialize and re-parse to the same
 * registration: the hook writes what the daemon reads, with the same validator. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "registrations.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct thps_registration a, b;
	char *text = NULL;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (thps_registration_from_json((const char *)data, size, &a) != 0)
		return 0;
	if (thps_registration_to_json(&a, &text) != 0)
		abort(); /* what validated once must serialize */
	if (thps_registration_from_json(text, strlen(text), &b) != 0 || memcmp(&a, &b, sizeof(a)) != 0)
		abort();
	free(text);
	return 0;
}
