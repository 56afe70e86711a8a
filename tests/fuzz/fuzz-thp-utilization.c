/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel sources' parsers: the RFC's thp_utilization, /proc/vmstat, memory.stat, and the
 * probe's small ones (THP mode brackets, kernel release). */
#include <stdlib.h>

#include "fuzz.h"
#include "kernel/kernel.h"
#include "probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size);
	struct thps_hist h;
	struct thps_vmstat v;
	double t, d;
	int line, a, b;
	uint64_t x;
	char mode[16];

	if (thps_parse_thp_utilization(s, &h, &t, &d, &line) < 0 && (line < 1 || line > 13))
		abort(); /* a failure always names a line of the file, or the one after it */
	(void)thps_parse_vmstat(s, &v);
	(void)thps_parse_memstat_thp(s, 2, &x);
	(void)thps_parse_memstat_thp(s, 1, &x);
	(void)thps_parse_bracketed(s, mode, sizeof(mode));
	(void)thps_parse_kernel_release(s, &a, &b);
	free(s);
	return 0;
}
