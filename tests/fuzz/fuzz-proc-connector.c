/* The daemon's proc connector parser (controller/procev.h) on any datagram. The kernel hands
 * recv() an aligned buffer; the daemon's is aligned(8), so the input is copied into one. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "procev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t buf[8192 / 8];
	struct thps_proc_event ev[4];
	int n;

	if (size > sizeof(buf))
		size = sizeof(buf);
	memcpy(buf, data, size);
	n = thps_proc_events_parse(buf, size, ev, 4);
	if (n > 4)
		abort();
	for (int i = 0; i < n; i++)
		if (ev[i].pid <= 0 || (ev[i].type != THPS_PROC_EXEC && ev[i].type != THPS_PROC_EXIT))
			abort();
	return 0;
}
