/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cgroup files the daemon and actuators read on every pass: memory.pressure (the engine's
 * pressure guard), memory.stat, memory.current, /proc/vmstat's split counters and
 * /proc/PID/cgroup. A parsed pressure is always a percentage. */
#include <stdlib.h>

#include "actuator.h"
#include "fileio.h"
#include "fuzz.h"
#include "kernel/kernel.h"
#include "oci/oci.h"
#include "proc.h"
#include "psi.h"
#include "valid.h"

static int pct(double d)
{
	return d >= 0 && d <= 100;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size);
	char buf[THPS_CGROUP_PATH_MAX];
	struct thps_vmstat vm;
	struct thps_psi psi;
	uint64_t v;

	if (thps_psi_parse(s, &psi) == 0) {
		if (!pct(psi.some.avg10) || !pct(psi.some.avg60) || !pct(psi.some.avg300))
			abort();
		if (psi.have_full && (!pct(psi.full.avg10) || !pct(psi.full.avg60) || !pct(psi.full.avg300)))
			abort();
	}
	(void)thps_parse_memstat_thp(s, 2, &v);
	(void)find_keyed_u64(s, "anon", &v);
	(void)parse_u64(s, &v);
	(void)thps_parse_vmstat(s, &vm);
	(void)thps_proc_cgroup_v2_path(s, buf, sizeof(buf));
	free(s);
	return 0;
}
