/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prometheus text exposition (format 0.0.4) of the daemon's state. A pure function from a
 * snapshot into a bounded buffer: the HTTP layer and the textfile writer only copy its output,
 * and the golden-text unit test checks it byte for byte. Series are built from the current
 * state only, so a cgroup that disappears leaves the output. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scan.h"

/* What the daemon did to one cgroup with one action, since it started. */
struct thps_metrics_action {
	const char *cgroup;
	const char *action; /* "reclaim", "split", "observe" */
	uint64_t count;	    /* actions taken (observe: decisions that would have acted) */
	uint64_t failures;
	uint64_t bytes_requested;
	uint64_t bytes_given_back; /* measured: memory.current before - after, page cache not
				    * counted */
	uint64_t bytes_page_cache_evicted; /* memory.stat file before - after */
};

/* A named 0/1 kernel capability from the probe ("memory_reclaim", "split_huge_pages", ...). */
struct thps_metrics_flag {
	const char *name;
	bool value;
};

/* A named counter of the engine's decisions ("act", "cooldown", "below_trigger", ...). */
struct thps_metrics_count {
	const char *name;
	uint64_t value;
};

/* A running container the OCI hook registered. Exported as one info series,
 * thpshrink_container_info{cgroup,container,policy} 1, rather than as a container label on
 * every per-cgroup series: the per-cgroup series keep one stable label set (adding a label
 * when a registration appears would start new series for the same cgroup and break rate()),
 * the cardinality cost is one series per container, and dashboards join on cgroup
 * (`* on (cgroup) group_left (container) thpshrink_container_info`), the kube-state-metrics
 * idiom. */
struct thps_metrics_container {
	const char *cgroup;
	const char *id;
	const char *policy; /* the policy the engine applied; "" before a decision */
	/* the registration's Kubernetes identity; "" where not told */
	const char *k8s_namespace, *pod, *container_name; /* NULL = "" */
};

/* A per-cgroup counter: THPs khugepaged rebuilt after the daemon split them (recollapse.h). */
struct thps_metrics_cgroup_count {
	const char *cgroup;
	uint64_t value;
};

/* What promotion did to one cgroup (promote-pass.c). */
struct thps_metrics_promoted {
	const char *cgroup;
	uint64_t ino;		    /* the cgroup's inode (0: unknown): a cgroup under THP=never is
				     * in no scan to take it from */
	uint64_t ranges, bytes;	    /* collapsed into THPs since the start */
	uint64_t opportunity_bytes; /* dense bytes still in small pages, last pass */
};

/* Per-cgroup series are exported for at most this many cgroups by default (those with the most
 * waste): each costs about 30 series, and the number of cgroups is up to the users. */
#define THPS_METRICS_MAX_CGROUPS_DEFAULT 500

struct thps_metrics_input {
	const char *version;
	size_t max_cgroups;	      /* 0 = THPS_METRICS_MAX_CGROUPS_DEFAULT */
	const struct thps_scan *scan; /* NULL before the first pass */
	uint64_t scans_total;
	uint64_t scan_errors_total;
	double last_scan_timestamp; /* seconds since the epoch, 0 = never */

	uint64_t policies_loaded;
	uint64_t policy_load_errors_total; /* failed loads/reloads (the old set stayed) */
	bool policy_last_load_ok;

	const struct thps_metrics_action *actions;
	size_t n_actions;
	const struct thps_metrics_count *decisions;
	size_t n_decisions;
	const struct thps_metrics_flag *capabilities;
	size_t n_capabilities;
	/* How a policy that splits gives waste back here: "process_madvise", "debugfs",
	 * "reclaim" (no exact split; a policy allows memory.reclaim) or "none"; NULL: no family */
	const char *give_back_method;

	const struct thps_metrics_cgroup_count *recollapsed;
	size_t n_recollapsed;

	/* promote: families only when a policy in force promotes */
	bool promote_enabled;
	const struct thps_metrics_promoted *promoted;
	size_t n_promoted;
	const struct thps_metrics_count *promote_failures; /* by reason */
	size_t n_promote_failures;
	const struct thps_metrics_count *promote_deferred; /* by bound */
	size_t n_promote_deferred;

	const struct thps_metrics_container *containers; /* the current registrations */
	size_t n_containers;

	/* the scan memo (scan-memo.h); all 0 when the daemon reads every folio */
	bool memo_enabled;
	uint64_t memo_entries;
	uint64_t memo_bytes;
	double memo_full_refresh_seconds;
	bool memo_trust; /* carried THPs found by PAGEMAP_SCAN runs: the identity rotation runs */
	double memo_full_verify_seconds;

	bool dry_run;
	uint64_t proc_events_total;
	uint64_t proc_event_overflows_total;
};

/* Formats in into buf (NUL-terminated). Returns the length, or -ENOBUFS when buf is too
 * small (the caller grows it and retries), -EINVAL on a NULL argument. */
int thps_metrics_format(const struct thps_metrics_input *in, char *buf, size_t size);

/* Formats into a malloc'd buffer, growing up to max bytes. Returns the length (and *ret),
 * -ENOBUFS if the text exceeds max, -ENOMEM. */
int thps_metrics_format_alloc(const struct thps_metrics_input *in, size_t max, char **ret);

/* Writes value to out sanitized (text.h: valid UTF-8, no control characters, at most
 * THPS_TEXT_MAX bytes with a hash suffix) and with Prometheus label-value escaping (\\, \").
 * Returns the length written, or -ENOBUFS. Exposed for tests. */
int thps_metrics_escape_label(const char *value, char *out, size_t size);
