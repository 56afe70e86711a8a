/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-range backoff of promotion (promote-backoff.c). A range the daemon collapsed that is found
 * dense but not a THP again (the tenant dropped a page and touched it again) waits before its
 * next collapse: the n-th collapse of a range holds it back 2^(n-1) passes, so over K passes it
 * is collapsed O(log K) times, not K times. Keyed by (pid, pid_starttime, addr), bounded
 * (PROMOTE_BACKOFF_MAX ranges; the least recently collapsed is forgotten first). Pure: no I/O,
 * no logging, no locking: one thread at a time uses it (see promote-pass.c for which). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROMOTE_BACKOFF_MAX	  4096u
#define PROMOTE_BACKOFF_SHIFT_MAX 10u /* a hold is at most 1024 passes */

struct promote_backoff_range {
	pid_t pid;
	uint32_t collapses; /* by the daemon, since it first saw the range */
	uint64_t starttime, addr;
	uint64_t last;	/* pass of the last collapse */
	uint64_t until; /* not collapsed again before this pass */
};

/* Zero-initialised is empty. */
struct promote_backoff {
	struct promote_backoff_range *v;
	size_t n, cap;
	size_t max; /* 0 = PROMOTE_BACKOFF_MAX (tests set a small bound) */
};

/* Whether the range may be collapsed in pass: yes when the daemon never collapsed it or its
 * hold is over. */
bool promote_backoff_admit(const struct promote_backoff *b, pid_t pid, uint64_t starttime,
			   uint64_t addr, uint64_t pass);
/* Records a collapse of the range in pass and sets its hold. Returns 0 or -ENOMEM (the range
 * then goes unremembered: it is only collapsed sooner). */
int promote_backoff_collapsed(struct promote_backoff *b, pid_t pid, uint64_t starttime,
			      uint64_t addr, uint64_t pass);
/* How many ranges are held back in pass. */
size_t promote_backoff_n_held(const struct promote_backoff *b, uint64_t pass);
void promote_backoff_free(struct promote_backoff *b);
