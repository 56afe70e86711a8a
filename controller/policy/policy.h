/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-cgroup policies: JSON files under policies.d → typed IR (struct thps_policy) → a
 * compiled set that the daemon matches cgroups against. One table (policy.c, thps_policy_keys)
 * drives validation, defaults, ranges and the docs (`thpshrink validate --keys`).
 *
 * File forms: {"policies": [POLICY, ...]} or a single POLICY object.
 * Matching (thps_policy_match): a policy matches when every selector it has matches: its
 * match.cgroup glob (fnmatch with FNM_PATHNAME) against the cgroup path, its match.container
 * names (fnmatch globs) against the registration name the OCI hook recorded, its
 * match.pod_uid UIDs and match.qos_class classes against the Kubernetes identity kubelet's
 * cgroup layout gives the path (k8s.h; a cgroup that is not a pod's matches neither), and
 * match.namespace, match.pod, match.container_name and match.labels against the identity the
 * registration carries (policy-ident.c; a registration without it matches none of them). A
 * policy named by a registration (the OCI annotation) applies only where its own selectors hold
 * (thps_policy_choose); matching itself never looks at policy names. Among matches the most
 * specific wins, compared in this order:
 *   1. it has a namespace selector (the one identity a tenant cannot choose: a label, a pod
 *      name or a container name can never lift a pod out of its namespace's policy);
 *   2. it has a container selector (a registration names its container deliberately);
 *   3. a container selector without glob characters beats one with globs;
 *   4. it has a pod_uid selector (names pods one by one);
 *   5. it has a qos_class selector;
 *   6. more literal path components in the cgroup glob ("/a/b/x?" has 2);
 *   7. a longer literal prefix of the cgroup glob (before the first glob character);
 *   8. more tenant-set selectors (pod, container_name, each label), so that they only ever
 *      refine what the operator's other selectors already chose;
 *   9. first in load order (file names in byte order, then position in the file).
 * When nothing matches, the built-in policy "(builtin)" applies: it observes only. */
#pragma once
#include "macro.h"
#include "thp.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct thps_registration;

#define THPS_POLICY_NAME_MAX	   64
#define THPS_POLICY_MAX_CONTAINERS 32
#define THPS_POLICY_MAX_PODS	   32
#define THPS_POLICY_MAX_LABELS	   16 /* as many as a registration keeps */
#define THPS_POLICY_MAX_FILE	   (1024 * 1024)
#define THPS_POLICY_MAX_FILES	   1024
#define THPS_POLICY_MAX_POLICIES   4096
#define THPS_POLICY_MAX_ERRORS	   100

enum thps_policy_mode { THPS_MODE_OBSERVE, THPS_MODE_ENFORCE };
/* In the order of the "action" key's words. SPLIT_OR_RECLAIM is the operator's permission to
 * evict page cache where no exact split reaches; SPLIT never writes memory.reclaim. */
enum thps_policy_action { THPS_POLICY_RECLAIM, THPS_POLICY_SPLIT, THPS_POLICY_SPLIT_OR_RECLAIM };
enum thps_pressure_response { THPS_PRESSURE_SKIP, THPS_PRESSURE_BACKOFF };
/* Which io.thpshrink.mode annotations the policy lets a tenant apply, in the order of the
 * "tenant_mode" key's words: fixed (none: the operator's mode stands), observe (a tenant may
 * opt out to observe), enforce (a tenant may opt in to enforce), any. */
enum thps_tenant_mode {
	THPS_TENANT_MODE_FIXED,
	THPS_TENANT_MODE_OBSERVE,
	THPS_TENANT_MODE_ENFORCE,
	THPS_TENANT_MODE_ANY,
};

struct thps_policy {
	char name[THPS_POLICY_NAME_MAX + 1];
	char *file;	    /* where it was defined; NULL for the built-in one */
	unsigned line, col; /* of the policy object in that file */
	unsigned name_line, name_col;
	char json_path[32]; /* of its name: "policies[3].name" or "name" */
	char *match_cgroup; /* glob or NULL */
	char *match_container[THPS_POLICY_MAX_CONTAINERS];
	size_t n_match_container;
	char *match_pod_uid[THPS_POLICY_MAX_PODS]; /* UIDs with dashes (k8s.h) */
	size_t n_match_pod_uid;
	unsigned match_qos_mask; /* bit q = enum thps_k8s_qos q; 0 = no QoS selector */
	/* the registration's Kubernetes identity (NRI, the hook's CRI-O/podman annotations) */
	char *match_namespace[THPS_POLICY_MAX_PODS]; /* exact names */
	size_t n_match_namespace;
	char *match_pod[THPS_POLICY_MAX_PODS]; /* pod name globs */
	size_t n_match_pod;
	char *match_container_name[THPS_POLICY_MAX_CONTAINERS]; /* container name globs */
	size_t n_match_container_name;
	char *match_label_key[THPS_POLICY_MAX_LABELS]; /* every pair must be equal */
	char *match_label_value[THPS_POLICY_MAX_LABELS];
	size_t n_match_labels;
	enum thps_policy_mode mode;
	enum thps_tenant_mode tenant_mode;
	unsigned lowutil_max_bucket;  /* folios of every size in buckets 0..this are low-util */
	uint32_t sizes_mask;	      /* folio sizes acted on, bit o = 2^o pages; 0 = every size */
	uint64_t trigger_min_waste;   /* bytes; 0 = this trigger is off */
	uint64_t trigger_growth_thps; /* 0 = this trigger is off */
	uint64_t trigger_growth_window_usec;
	enum thps_policy_action action;
	uint64_t max_bytes_per_action;
	uint64_t promote_max_bytes_per_pass; /* 0 = promote is off */
	uint64_t max_bytes_per_sec;
	uint64_t cooldown_usec;
	uint64_t scan_interval_usec; /* least time between two decisions (engine.h); 0 = every
				      * pass */
	double pressure_some_avg10;  /* percent */
	enum thps_pressure_response on_pressure;
	/* compiled: specificity (see above) and load order */
	unsigned spec_container, spec_components, spec_prefix;
	size_t order;
};

/* The folio sizes (bit o = 2^o pages) whose waste the policy's action can give back: its
 * "sizes" (every size when absent), and for "action": "reclaim" only the PMD size, the one
 * size the kernel's underused-THP shrinker splits under memory.reclaim. */
uint32_t thps_policy_acted_sizes(const struct thps_policy *p, const struct thps_geometry *g);

struct thps_policy_set {
	struct thps_policy *policies;
	size_t n;
};

/* Error messages, each "FILE:LINE:COL: PATH: what was expected, got what". Warnings, in the
 * same form, name keys that still load but do nothing (deprecated): they never fail a load,
 * and the caller that loads says them (the daemon logs them, validate prints them). */
struct thps_policy_errors {
	char **msgs;
	size_t n;
	size_t dropped; /* beyond THPS_POLICY_MAX_ERRORS per load */
	char **warnings;
	size_t n_warnings; /* at most THPS_POLICY_MAX_ERRORS, the rest dropped */
};
void thps_policy_errors_clear(struct thps_policy_errors *e);
/* Appends one message (at most THPS_POLICY_MAX_ERRORS, then counts them as dropped).
 * Returns 0 or -ENOMEM. */
int thps_policy_errors_add(struct thps_policy_errors *e, const char *fmt, ...) _printf_(2, 3);
/* The same for a warning. Returns 0 or -ENOMEM. */
int thps_policy_warnings_add(struct thps_policy_errors *e, const char *fmt, ...) _printf_(2, 3);

enum {
	THPS_POLICY_LOAD_CHECK_OWNER = 1 << 0, /* refuse files/dirs not owned by root or
						* writable by group/other */
	THPS_POLICY_LOAD_MISSING_OK = 1 << 1,  /* a directory that does not exist is an empty
						* set (the daemon at start: nothing configured) */
};

/* Parses one file's text into policies appended to set (order continues). Collects every
 * error into errs. Returns the number of policies (>= 0) when the text had no error,
 * -EINVAL if it had (see errs), -ENOMEM. On error set is unchanged. */
int thps_policy_parse_text(const char *file, const char *text, size_t len,
			   struct thps_policy_set *set, struct thps_policy_errors *errs);

/* Loads one file (bounded read). Same returns as thps_policy_parse_text, plus -errno from
 * opening/reading (a message is added to errs too) and -EPERM from the owner check. */
int thps_policy_load_file(const char *path, unsigned flags, struct thps_policy_set *set,
			  struct thps_policy_errors *errs);

/* Loads every "*.json" (not hidden) in dir, in byte order of names, and checks policy names
 * are unique across files. In a kubelet ConfigMap directory (one with a "..data" link) the
 * files are read from the one version "..data" leads to, and the load is retried when "..data"
 * moved meanwhile: never a mix of two versions. All or nothing: any entry that cannot be
 * read (a dangling link, a file gone between listing and opening, a FIFO, a bad file) fails
 * the load. Returns 0 with a new set in *ret, 1 with a new empty set when dir does not exist
 * and flags has THPS_POLICY_LOAD_MISSING_OK, or <0 with every error in errs and *ret untouched
 * (-EAGAIN when "..data" never held still). -ENOENT may be an entry's as well as dir's: only
 * THPS_POLICY_LOAD_MISSING_OK turns a missing directory into "no policies". */
int thps_policy_set_load_dir(const char *dir, unsigned flags, struct thps_policy_set **ret,
			     struct thps_policy_errors *errs);

/* Checks names are unique in set; adds an error per duplicate. Returns 0 or -EINVAL. */
int thps_policy_set_check_unique(const struct thps_policy_set *set,
				 struct thps_policy_errors *errs);

struct thps_policy_set *thps_policy_set_new(void);
void thps_policy_set_free(struct thps_policy_set *set);

/* The policy for a cgroup path ("/system.slice/x.service") and the name its registration
 * carries (a container name or a policy name; NULL when none), as described at the top.
 * Never NULL: falls back to the built-in default. */
const struct thps_policy *thps_policy_match(const struct thps_policy_set *set,
					    const char *cgroup_path, const char *registration);
/* The same for a registered container: its id, and its Kubernetes identity for the
 * namespace, pod, container_name and labels selectors. reg NULL: as above with no name. */
const struct thps_policy *thps_policy_match_reg(const struct thps_policy_set *set,
						const char *cgroup_path,
						const struct thps_registration *reg);
const struct thps_policy *thps_policy_builtin(void);
const struct thps_policy *thps_policy_find(const struct thps_policy_set *set, const char *name);
/* Whether p's own selectors hold for cgroup_path and registration (as thps_policy_match
 * tests each policy). */
bool thps_policy_selects(const struct thps_policy *p, const char *cgroup_path,
			 const char *registration);

/* What a registration asked for and what it got. */
enum thps_choice_refusal {
	THPS_CHOICE_OK,
	THPS_CHOICE_UNKNOWN_POLICY, /* the named policy is not loaded */
	THPS_CHOICE_NOT_MATCHED,    /* the named policy's match excludes the cgroup */
	THPS_CHOICE_NAMESPACE,	    /* it has no namespace selector, and the policy matching
				     * gives the container has one (see thps_policy_choose) */
};
struct thps_choice {
	const struct thps_policy *policy; /* never NULL */
	enum thps_policy_mode mode;	  /* the mode that applies */
	enum thps_choice_refusal refused; /* the named policy was not applied, and why */
	bool mode_refused;		  /* a mode was asked that the policy does not delegate */
};
/* The one rule for a registered container (split and promote paths both ask it): a named
 * policy (the io.thpshrink.policy annotation) applies only where its own selectors hold for
 * the container's cgroup, and, where matching gives the container a policy with a namespace
 * selector, only if it has one too: the selectors a tenant sets (labels, pod and container
 * names) would otherwise let it name its way out of its namespace's policy. Otherwise the
 * cgroup gets what matching gives it, as if it had named none. The policy's mode stands unless its
 * tenant_mode delegates the asked one ("observe" or "enforce"; NULL or "" asks nothing). Never
 * fails. */
void thps_policy_choose(const struct thps_policy_set *set, const char *cgroup_path,
			const char *registration, const char *named, const char *mode,
			struct thps_choice *ret);
/* The same for a registered container (reg NULL: unregistered, nothing named): the
 * registration's id, identity, policy and mode. */
void thps_policy_choose_reg(const struct thps_policy_set *set, const char *cgroup_path,
			    const struct thps_registration *reg, struct thps_choice *ret);

/* policy-ident.c: the selectors on the registration's Kubernetes identity. */
/* Whether p's namespace, pod, container_name and labels selectors all hold for reg (NULL: no
 * identity told, so only a policy without them holds). */
bool thps_policy_ident_match(const struct thps_policy *p, const struct thps_registration *reg);
/* How many of p's selectors a tenant sets itself (pod, container_name, each label). */
unsigned thps_policy_ident_tenant_selectors(const struct thps_policy *p);

/* The key table, for docs: prints every key with type, range, default and help. */
void thps_policy_print_keys(FILE *f);

const char *thps_policy_mode_name(enum thps_policy_mode m);
const char *thps_policy_action_name(enum thps_policy_action a);

/* Fills p with the table's defaults (name and match empty). */
void thps_policy_init_defaults(struct thps_policy *p);
/* Frees what p owns and zeroes it. */
void thps_policy_clear(struct thps_policy *p);
