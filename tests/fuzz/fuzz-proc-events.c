/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The proc connector datagram parser (controller/daemon/procev.c): netlink framing, cn_msg lengths and
 * event types straight from the kernel socket. The input is copied to an aligned buffer like
 * the daemon's receive buffer. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "procev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct thps_proc_event ev[64];
	void *buf;

	if (size > 65536)
		return 0;
	buf = aligned_alloc(8, (size + 8) & ~(size_t)7);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	for (size_t max = 1; max <= 64; max *= 64) {
		int n = thps_proc_events_parse(buf, size, ev, max);

		/* never more than asked, and only well-formed events */
		if (n > (int)max)
			abort();
		for (int i = 0; i < n; i++)
			if (ev[i].pid <= 0 || (ev[i].type != THPS_PROC_EXEC && ev[i].type != THPS_PROC_EXIT))
				abort();
	}
	free(buf);
	return 0;
}
