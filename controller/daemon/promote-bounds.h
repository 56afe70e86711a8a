/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The promote step's bounds, what they defer, and the state that carries a cut walk over to the
 * next pass: shared by the step (promote-pass.c) and the manager's state (daemon-state.h). */
#pragma once
#include <stdint.h>
#include <sys/types.h>

/* A step's bounds (tests/bench/finder-bench measures what each unit costs: here 0.8 us a maps
 * line, 80-170 us a window confirmed, most of it kpageflags reads, up to one a page). A process's
 * walk per pass: private anonymous VMAs looked at, and candidate windows confirmed; the default
 * max_map_count (65,530 VMAs) takes 8 passes. The step per pass: maps lines read (those a
 * resumed walk skips included) and windows confirmed, checked between processes, so one
 * process's maps (max_map_count lines) may pass them. The windows bound the collapses too:
 * 4 GiB a pass at most, whatever the policies' max_bytes_per_pass add up to. */
#define PROMOTE_PROCESS_VMAS_MAX    8192u
#define PROMOTE_PROCESS_WINDOWS_MAX 2048u /* 4 GiB of candidates at 2 MiB */
#define PROMOTE_PASS_LINES_MAX	    65536u
#define PROMOTE_PASS_WINDOWS_MAX    2048u
/* processes whose walk resumes where a bound cut it; beyond, a walk starts over */
#define PROMOTE_RESUME_MAX 1024u

/* What a bound left for a later pass: the metric's "bound" label. */
enum promote_deferred {
	PROMOTE_DEFERRED_PLAN,	  /* processes beyond the plan (4,096 cgroups, 65,536 processes) */
	PROMOTE_DEFERRED_PASS,	  /* processes the step's bound did not reach */
	PROMOTE_DEFERRED_PROCESS, /* walks cut at the process's bound, resumed next pass */
	PROMOTE_DEFERRED_MAX
};
/* "plan", "pass", "process": the metric's label */
static inline const char *promote_deferred_name(enum promote_deferred b)
{
	static const char *const names[PROMOTE_DEFERRED_MAX] = {
	    [PROMOTE_DEFERRED_PLAN] = "plan",
	    [PROMOTE_DEFERRED_PASS] = "pass",
	    [PROMOTE_DEFERRED_PROCESS] = "process",
	};

	return (unsigned)b < PROMOTE_DEFERRED_MAX ? names[b] : "?";
}

/* A step's work and what its bounds left (the job's, then status.json "promote"). */
struct promote_step_figures {
	uint64_t processes, maps_lines, vmas, windows, cpu_ns;
	uint64_t deferred[PROMOTE_DEFERRED_MAX];
};

struct promote_resume {
	pid_t pid;
	uint64_t starttime, addr;
};
