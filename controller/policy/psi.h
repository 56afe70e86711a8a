/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memory.pressure (PSI) text: "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" and a "full"
 * line. Pure parsing, for the engine's pressure guard. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct thps_psi_line {
	double avg10, avg60, avg300; /* percent */
	uint64_t total;		     /* microseconds stalled */
};

struct thps_psi {
	struct thps_psi_line some, full;
	bool have_full; /* the root cgroup and old kernels print no "full" line */
};

/* Returns 0, or -EINVAL when the text has no well-formed "some" line or a malformed line. */
int thps_psi_parse(const char *text, struct thps_psi *ret);
