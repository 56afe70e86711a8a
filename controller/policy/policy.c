/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Policy files → typed IR. The key table below is the single description of the format: it
 * drives parsing, defaults, range checks, error messages and `thpshrink validate --keys`.
 * schemas/policy.schema.json mirrors it for other tools; tests/integration/
 * policy-schema-agree.sh checks the two accept and reject the same corpus. */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "pjson.h"
#include "policy.h"
#include "k8s.h"
#include "units.h"
#include "valid.h"

enum key_type {
	K_OBJECT,   /* nested keys follow as "parent.child" */
	K_NAME,	    /* [A-Za-z0-9_.-]{1,64}, not "." or ".." */
	K_CGROUP,   /* a glob of an absolute cgroup path */
	K_NAMES,    /* a registration name glob, or an array of them */
	K_ENUM,	    /* one of the '|'-separated words in .values */
	K_CUT,	    /* bucket 0-9, or "N0%" */
	K_SIZE,	    /* bytes: integer, or "64M" */
	K_DURATION, /* integer seconds, or "30s" */
	K_UINT,
	K_PERCENT,    /* a number */
	K_FOLIOS,     /* folio sizes: an array of sizes like "64K", "2M" (powers of two, >= 8K) */
	K_UIDS,	      /* a Kubernetes pod UID (8-4-4-4-12 lowercase hex), or an array of them */
	K_QOS,	      /* a Kubernetes QoS class, or an array of them */
	K_NAMESPACES, /* a Kubernetes namespace name, or an array of them */
	K_PODS,	      /* a pod name glob, or an array of them */
	K_CNAMES,     /* a Kubernetes container name glob, or an array of them */
	K_LABELS,     /* an object of pod label key: value pairs */
};

struct policy_key {
	const char *key;
	enum key_type type;
	double min, max; /* in bytes, microseconds or plain units */
	const char *def; /* default as it would be written in a file; NULL: none */
	const char *values;
	unsigned flags;
	size_t offset;
	const char *help;
};

#define REQUIRED (1U << 0)
#define NEED_ONE (1U << 1) /* object: at least one member */
#define RESETS	 (1U << 2) /* object: when present, its children's defaults do not apply */
/* Loads (the value is still checked, as it always was) but does nothing: a warning says so,
 * so that an operator's old file neither stops loading nor seems to work. */
#define DEPRECATED (1U << 3)
#define OFF(f)	   offsetof(struct thps_policy, f)

static const struct policy_key keys[] = {
    {"name", K_NAME, 0, 0, NULL, NULL, REQUIRED, OFF(name),
     "unique name of the policy; registrations of the OCI hook refer to it"},
    {"match", K_OBJECT, 0, 0, NULL, NULL, REQUIRED | NEED_ONE, 0,
     "which cgroups the policy applies to; every selector given must match"},
    {"match.cgroup", K_CGROUP, 0, 0, NULL, NULL, 0, OFF(match_cgroup),
     "glob of the cgroup path, e.g. \"/kubepods.slice/*\" ('*' stays within one level)"},
    {"match.container", K_NAMES, 0, 0, NULL, NULL, 0, OFF(match_container),
     "name glob or list of them, matched against the OCI hook's registrations"},
    {"match.pod_uid", K_UIDS, 0, 0, NULL, NULL, 0, OFF(match_pod_uid),
     "Kubernetes pod UID or list of them (as kubectl shows it, with dashes), matched against "
     "the pod kubelet's cgroup path names"},
    {"match.qos_class", K_QOS, 0, 0, NULL, "guaranteed|burstable|besteffort", 0,
     OFF(match_qos_mask),
     "Kubernetes QoS class or list of them, matched against the class kubelet's cgroup path "
     "names"},
    {"match.namespace", K_NAMESPACES, 0, 0, NULL, NULL, 0, OFF(match_namespace),
     "Kubernetes namespace or list of them (exact names), matched against the namespace the "
     "registration carries (thpshrink-nri, or the hook from CRI-O's and podman's "
     "annotations); outranks every other selector"},
    {"match.pod", K_PODS, 0, 0, NULL, NULL, 0, OFF(match_pod),
     "pod name glob or list of them, matched against the registration's pod name (set by the "
     "tenant)"},
    {"match.container_name", K_CNAMES, 0, 0, NULL, NULL, 0, OFF(match_container_name),
     "Kubernetes container name glob or list of them, matched against the registration's "
     "container name (set by the tenant)"},
    {"match.labels", K_LABELS, 0, 0, NULL, NULL, 0, OFF(match_label_key),
     "pod labels, {\"key\": \"value\", ...}, each equal to one the registration carries "
     "(thpshrink-nri only; set by the tenant)"},
    {"mode", K_ENUM, 0, 0, "observe", "observe|enforce", 0, OFF(mode),
     "observe: decide and report only; enforce: act"},
    {"tenant_mode", K_ENUM, 0, 0, "fixed", "fixed|observe|enforce|any", 0, OFF(tenant_mode),
     "which io.thpshrink.mode annotation a container under this policy may apply: fixed: "
     "none, the policy's mode stands; observe: opting out to observe; enforce: opting in to "
     "enforce; any: either"},
    {"lowutil_cut", K_CUT, 0, 9, "0", NULL, 0, OFF(lowutil_max_bucket),
     "highest histogram bucket (0-9) counted as low-utilization, or \"10%\"..\"100%\""},
    {"sizes", K_FOLIOS, 8 * KIB, 32 * MIB, NULL, NULL, 0, OFF(sizes_mask),
     "folio sizes the policy acts on, e.g. [\"64K\", \"2M\"] (mTHP sizes and the PMD THP "
     "size); absent: every size. lowutil_cut applies to each size as the same fraction"},
    {"trigger", K_OBJECT, 0, 0, NULL, NULL, NEED_ONE | RESETS, 0,
     "when to act; any trigger given fires on its own"},
    {"trigger.min_waste", K_SIZE, 2 * MIB, TIB, "64M", NULL, 0, OFF(trigger_min_waste),
     "act when reclaimable bytes (zero subpages of low-util THPs and unmapped parts of "
     "partially mapped THPs) reach this"},
    {"trigger.lowutil_growth", K_OBJECT, 0, 0, NULL, NULL, 0, 0,
     "act when the low-util THP count grew by thps within window"},
    {"trigger.lowutil_growth.thps", K_UINT, 1, 1e9, NULL, NULL, REQUIRED, OFF(trigger_growth_thps),
     "growth in THPs"},
    {"trigger.lowutil_growth.window", K_DURATION, 1 * USEC_PER_SEC, 86400 * USEC_PER_SEC, NULL,
     NULL, REQUIRED, OFF(trigger_growth_window_usec), "window the growth is measured over"},
    {"action", K_ENUM, 0, 0, "split", "reclaim|split|split_or_reclaim", 0, OFF(action),
     "split: split exactly the low-util and partially mapped folios the scanner found "
     "(process_madvise, debugfs where refused), never memory.reclaim; reclaim: write "
     "memory.reclaim (also evicts page cache); split_or_reclaim: split, and memory.reclaim "
     "where no exact split reaches (no split mechanism, or partially mapped folios on the "
     "debugfs fallback)"},
    {"promote", K_OBJECT, 0, 0, NULL, NULL, 0, 0,
     "collapse the cgroup's dense memory (2M ranges all of whose pages are present, not the "
     "zero page, not shared) into THPs through MADV_COLLAPSE, at no memory cost; absent: off"},
    {"promote.max_bytes_per_pass", K_SIZE, 2 * MIB, TIB, NULL, NULL, REQUIRED,
     OFF(promote_max_bytes_per_pass), "most dense bytes collapsed per cgroup per pass"},
    {"max_bytes_per_action", K_SIZE, 2 * MIB, TIB, "256M", NULL, 0, OFF(max_bytes_per_action),
     "most bytes asked for in one action"},
    {"max_bytes_per_sec", K_SIZE, 1 * MIB, TIB, "64M", NULL, 0, OFF(max_bytes_per_sec),
     "rate limit of bytes asked for, per cgroup, per second"},
    {"cooldown", K_DURATION, 1 * USEC_PER_SEC, 86400 * USEC_PER_SEC, "5m", NULL, 0,
     OFF(cooldown_usec), "least time between two actions on a cgroup"},
    {"scan_interval", K_DURATION, 1 * USEC_PER_SEC, 86400 * USEC_PER_SEC, NULL, NULL, 0,
     OFF(scan_interval_usec),
     "least time between two decisions on a cgroup (less an eighth, for the jitter of "
     "passes); absent: every pass. The cgroup is still scanned every pass of the daemon "
     "(--interval). Also the first hold-off of pressure_guard's backoff (absent: 60s)"},
    {"max_thps_per_sec", K_UINT, 1, 1e7, NULL, NULL, DEPRECATED, 0,
     "deprecated and ignored: the daemon's --max-thps-per-sec bounds the scan of every "
     "cgroup; remove this key"},
    {"pressure_guard", K_OBJECT, 0, 0, NULL, NULL, 0, 0,
     "do not add reclaim work while the cgroup is under memory pressure"},
    {"pressure_guard.memory_some_avg10", K_PERCENT, 0, 100, "10", NULL, 0, OFF(pressure_some_avg10),
     "limit of memory.pressure 'some avg10', in percent"},
    {"pressure_guard.on_pressure", K_ENUM, 0, 0, "skip", "skip|backoff", 0, OFF(on_pressure),
     "skip: skip this pass; backoff: hold off exponentially longer while it lasts"},
};

static const struct policy_key *key_find(const char *full)
{
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (!strcmp(keys[i].key, full))
			return &keys[i];
	return NULL;
}

const char *thps_policy_mode_name(enum thps_policy_mode m)
{
	return m == THPS_MODE_ENFORCE ? "enforce" : "observe";
}

const char *thps_policy_action_name(enum thps_policy_action a)
{
	switch (a) {
	case THPS_POLICY_SPLIT:
		return "split";
	case THPS_POLICY_SPLIT_OR_RECLAIM:
		return "split_or_reclaim";
	default:
		return "reclaim";
	}
}

/* ---- errors ---- */

void thps_policy_errors_clear(struct thps_policy_errors *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->msgs[i]);
	free(e->msgs);
	for (size_t i = 0; i < e->n_warnings; i++)
		free(e->warnings[i]);
	free(e->warnings);
	*e = (struct thps_policy_errors){0};
}

/* Appends a message to a list bounded by THPS_POLICY_MAX_ERRORS (beyond: counted in
 * *dropped when given, else left out). */
static int list_add(char ***msgs, size_t *n, size_t *dropped, const char *fmt, va_list ap)
    _printf_(4, 0);
static int list_add(char ***msgs, size_t *n, size_t *dropped, const char *fmt, va_list ap)
{
	char *m, **l;

	if (*n >= THPS_POLICY_MAX_ERRORS) {
		if (dropped)
			(*dropped)++;
		return 0;
	}
	if (vasprintf(&m, fmt, ap) < 0)
		return -ENOMEM;
	l = realloc(*msgs, (*n + 1) * sizeof(*l));
	if (!l) {
		free(m);
		return -ENOMEM;
	}
	*msgs = l;
	l[(*n)++] = m;
	return 0;
}

int thps_policy_errors_add(struct thps_policy_errors *e, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = list_add(&e->msgs, &e->n, &e->dropped, fmt, ap);
	va_end(ap);
	return r;
}

int thps_policy_warnings_add(struct thps_policy_errors *e, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = list_add(&e->warnings, &e->n_warnings, NULL, fmt, ap);
	va_end(ap);
	return r;
}

/* ---- validation of one file ---- */

struct vctx {
	const char *file;
	struct thps_policy_errors *errs;
	unsigned nerr;
	int r; /* -ENOMEM sticks */
};

static int verr(struct vctx *v, unsigned line, unsigned col, const char *path, const char *fmt, ...)
    _printf_(5, 6);
static int verr(struct vctx *v, unsigned line, unsigned col, const char *path, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	v->nerr++;
	if (thps_policy_errors_add(v->errs, "%s:%u:%u: %s%s%s", v->file, line, col, path,
				   *path ? ": " : "", msg) < 0)
		v->r = -ENOMEM;
	return 0;
}

/* How a value reads in a message: strings quoted (shortened, non-printables escaped). */
static void render(const struct pjson *j, char *buf, size_t size)
{
	size_t n = 0;

	switch (j->type) {
	case PJSON_STRING:
		buf[n++] = '"';
		for (const unsigned char *s = (const unsigned char *)j->str; *s && n + 8 < size;
		     s++) {
			if (n > 48) {
				n += snprintf(buf + n, size - n, "...");
				break;
			}
			if (*s < 0x20 || *s == 0x7f || *s == '"' || *s == '\\')
				n += snprintf(buf + n, size - n, "\\x%02x", *s);
			else
				buf[n++] = (char)*s;
		}
		snprintf(buf + n, size - n, "\"");
		break;
	case PJSON_NUMBER:
		snprintf(buf, size, "%s", j->str);
		break;
	case PJSON_BOOL:
		snprintf(buf, size, "%s", j->b ? "true" : "false");
		break;
	case PJSON_NULL:
		snprintf(buf, size, "null");
		break;
	case PJSON_ARRAY:
		snprintf(buf, size, "an array");
		break;
	case PJSON_OBJECT:
		snprintf(buf, size, "an object");
		break;
	}
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* An integral JSON number in [min, max]; the schema's "integer" also takes 5.0 and 1e3. */
static bool int_in(const struct pjson *j, double min, double max, double *ret)
{
	if (j->type != PJSON_NUMBER || !isfinite(j->num) || floor(j->num) != j->num)
		return false;
	if (j->num < min || j->num > max)
		return false;
	*ret = j->num;
	return true;
}

static void range_text(const struct policy_key *k, double v, char *buf, size_t size)
{
	if (k->type == K_SIZE || k->type == K_FOLIOS)
		thps_format_size((uint64_t)v, buf, size);
	else if (k->type == K_DURATION)
		thps_format_duration((uint64_t)v, buf, size);
	else
		snprintf(buf, size, "%.15g", v);
}

/* One value being set: where it goes, where it came from, and the texts its messages use. */
struct setting {
	struct vctx *v;
	const struct policy_key *k;
	const struct pjson *j;
	const char *path;
	struct thps_policy *p;
	void *field;
	char got[96], lo[32], hi[32];
};

static int set_name(struct setting *s)
{
	const struct pjson *j = s->j;

	if (j->type != PJSON_STRING || !thps_name_valid(j->str, THPS_POLICY_NAME_MAX, false))
		return verr(s->v, j->line, j->col, s->path,
			    "expected a name of 1-%d characters from [A-Za-z0-9_.-], got %s",
			    THPS_POLICY_NAME_MAX, s->got);
	snprintf(s->p->name, sizeof(s->p->name), "%s", j->str);
	s->p->name_line = j->line;
	s->p->name_col = j->col;
	return 0;
}

static int set_cgroup(struct setting *s)
{
	const struct pjson *j = s->j;

	if (j->type == PJSON_STRING && utf8_chars(j->str) > 1024)
		return verr(s->v, j->line, j->col, s->path,
			    "expected a cgroup path glob of at most 1024 characters, got %zu",
			    utf8_chars(j->str));
	if (j->type != PJSON_STRING || j->str[0] != '/')
		return verr(s->v, j->line, j->col, s->path,
			    "expected a cgroup path glob starting with '/', like "
			    "\"/system.slice/*.service\", got %s",
			    s->got);
	free(s->p->match_cgroup);
	s->p->match_cgroup = strdup(j->str);
	if (!s->p->match_cgroup)
		s->v->r = -ENOMEM;
	return 0;
}

/* One container name glob of K_NAMES; ipath names it in messages. */
static void add_container(struct setting *s, const struct pjson *e, const char *ipath)
{
	struct thps_policy *p = s->p;
	char *c;

	if (e->type != PJSON_STRING || !thps_name_valid(e->str, 128, true)) {
		render(e, s->got, sizeof(s->got));
		verr(s->v, e->line, e->col, ipath,
		     "expected a container name (glob) of 1-128 characters from "
		     "[A-Za-z0-9_.*?-], got %s",
		     s->got);
		return;
	}
	if (p->n_match_container >= THPS_POLICY_MAX_CONTAINERS)
		return;
	c = strdup(e->str);
	if (!c)
		s->v->r = -ENOMEM;
	else
		p->match_container[p->n_match_container++] = c;
}

static int set_names(struct setting *s)
{
	const struct pjson *j = s->j, *items = j;
	size_t n = 1;

	if (j->type == PJSON_ARRAY) {
		items = j->items;
		n = j->n_items;
		if (n < 1 || n > THPS_POLICY_MAX_CONTAINERS)
			return verr(s->v, j->line, j->col, s->path,
				    "expected 1 to %d container names, got %zu",
				    THPS_POLICY_MAX_CONTAINERS, n);
	}
	for (size_t i = 0; i < n; i++) {
		char ipath[300];

		if (j->type == PJSON_ARRAY)
			snprintf(ipath, sizeof(ipath), "%s[%zu]", s->path, i);
		else
			snprintf(ipath, sizeof(ipath), "%s", s->path);
		add_container(s, &items[i], ipath);
	}
	return 0;
}

/* A string or an array of 1 to max strings: calls one() on each with its JSON path.
 * what describes one item in the count message. */
static int each_item(struct setting *s, size_t max, const char *what,
		     void (*one)(struct setting *s, const struct pjson *e, const char *ipath))
{
	const struct pjson *j = s->j, *items = j;
	size_t n = 1;

	if (j->type == PJSON_ARRAY) {
		items = j->items;
		n = j->n_items;
		if (n < 1 || n > max)
			return verr(s->v, j->line, j->col, s->path, "expected 1 to %zu %s, got %zu",
				    max, what, n);
	}
	for (size_t i = 0; i < n; i++) {
		char ipath[300];

		if (j->type == PJSON_ARRAY)
			snprintf(ipath, sizeof(ipath), "%s[%zu]", s->path, i);
		else
			snprintf(ipath, sizeof(ipath), "%s", s->path);
		one(s, &items[i], ipath);
	}
	return 0;
}

static void add_uid(struct setting *s, const struct pjson *e, const char *ipath)
{
	struct thps_policy *p = s->p;
	char *u;

	if (e->type != PJSON_STRING || !thps_k8s_uid_valid(e->str)) {
		render(e, s->got, sizeof(s->got));
		verr(s->v, e->line, e->col, ipath,
		     "expected a pod UID like \"0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b\" (lowercase "
		     "hex, 8-4-4-4-12), got %s",
		     s->got);
		return;
	}
	if (p->n_match_pod_uid >= THPS_POLICY_MAX_PODS)
		return;
	u = strdup(e->str);
	if (!u)
		s->v->r = -ENOMEM;
	else
		p->match_pod_uid[p->n_match_pod_uid++] = u;
}

static int set_uids(struct setting *s)
{
	return each_item(s, THPS_POLICY_MAX_PODS, "pod UIDs", add_uid);
}

/* Appends a copy of str to list (bounded by the caller's count check). */
static void add_string(struct setting *s, char **list, size_t *n, size_t max, const char *str)
{
	char *c;

	if (*n >= max)
		return;
	c = strdup(str);
	if (!c)
		s->v->r = -ENOMEM;
	else
		list[(*n)++] = c;
}

static void add_namespace(struct setting *s, const struct pjson *e, const char *ipath)
{
	if (e->type != PJSON_STRING || !thps_k8s_dns_label_valid(e->str)) {
		render(e, s->got, sizeof(s->got));
		verr(s->v, e->line, e->col, ipath,
		     "expected a namespace name like \"batch\" (a DNS label: [a-z0-9-], 1-63 "
		     "characters, no glob), got %s",
		     s->got);
		return;
	}
	add_string(s, s->p->match_namespace, &s->p->n_match_namespace, THPS_POLICY_MAX_PODS,
		   e->str);
}

static int set_namespaces(struct setting *s)
{
	return each_item(s, THPS_POLICY_MAX_PODS, "namespaces", add_namespace);
}

/* 1 if s is a glob of Kubernetes names: 1 to max characters from [a-z0-9.-] (dot only
 * where dots) and the glob characters '*' and '?'. */
static bool k8s_glob_valid(const char *s, size_t max, bool dots)
{
	size_t n = strlen(s);

	if (n < 1 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '*' || s[i] == '?' || (dots && s[i] == '.')))
			return false;
	return true;
}

static void add_pod(struct setting *s, const struct pjson *e, const char *ipath)
{
	if (e->type != PJSON_STRING || !k8s_glob_valid(e->str, THPS_K8S_SUBDOMAIN_MAX, true)) {
		render(e, s->got, sizeof(s->got));
		verr(s->v, e->line, e->col, ipath,
		     "expected a pod name (glob) of 1-%d characters from [a-z0-9.*?-], got %s",
		     THPS_K8S_SUBDOMAIN_MAX, s->got);
		return;
	}
	add_string(s, s->p->match_pod, &s->p->n_match_pod, THPS_POLICY_MAX_PODS, e->str);
}

static int set_pods(struct setting *s)
{
	return each_item(s, THPS_POLICY_MAX_PODS, "pod names", add_pod);
}

static void add_cname(struct setting *s, const struct pjson *e, const char *ipath)
{
	if (e->type != PJSON_STRING || !k8s_glob_valid(e->str, THPS_K8S_LABEL_MAX, false)) {
		render(e, s->got, sizeof(s->got));
		verr(s->v, e->line, e->col, ipath,
		     "expected a container name (glob) of 1-%d characters from [a-z0-9*?-], got %s",
		     THPS_K8S_LABEL_MAX, s->got);
		return;
	}
	add_string(s, s->p->match_container_name, &s->p->n_match_container_name,
		   THPS_POLICY_MAX_CONTAINERS, e->str);
}

static int set_cnames(struct setting *s)
{
	return each_item(s, THPS_POLICY_MAX_CONTAINERS, "container names", add_cname);
}

static void join_path(char *buf, size_t size, const char *path, const char *key);

static int set_labels(struct setting *s)
{
	const struct pjson *j = s->j;
	struct thps_policy *p = s->p;

	if (j->type != PJSON_OBJECT)
		return verr(s->v, j->line, j->col, s->path,
			    "expected an object of pod labels {\"key\": \"value\"}, got %s",
			    s->got);
	if (j->n_items < 1 || j->n_items > THPS_POLICY_MAX_LABELS)
		return verr(s->v, j->line, j->col, s->path, "expected 1 to %d pod labels, got %zu",
			    THPS_POLICY_MAX_LABELS, j->n_items);
	for (size_t i = 0; i < j->n_items; i++) {
		const struct pjson *m = &j->items[i];
		char ipath[300];

		join_path(ipath, sizeof(ipath), s->path, m->key);
		if (strlen(m->key) > THPS_K8S_LABEL_KEY_MAX || !thps_k8s_label_key_valid(m->key)) {
			verr(s->v, m->key_line, m->key_col, ipath,
			     "expected a label key of 1-%d characters from [A-Za-z0-9_./-], "
			     "starting and ending alphanumeric",
			     THPS_K8S_LABEL_KEY_MAX);
			continue;
		}
		for (size_t k = 0; k < i; k++)
			if (!strcmp(j->items[k].key, m->key)) {
				verr(s->v, m->key_line, m->key_col, ipath,
				     "duplicate key (first at line %u, column %u)",
				     j->items[k].key_line, j->items[k].key_col);
				goto next;
			}
		if (m->type != PJSON_STRING || !thps_k8s_label_value_valid(m->str)) {
			render(m, s->got, sizeof(s->got));
			verr(s->v, m->line, m->col, ipath,
			     "expected a label value: \"\" or 1-%d characters from [A-Za-z0-9_.-], "
			     "starting and ending alphanumeric, got %s",
			     THPS_K8S_LABEL_MAX, s->got);
			continue;
		}
		add_string(s, p->match_label_key, &p->n_match_labels, THPS_POLICY_MAX_LABELS,
			   m->key);
		if (s->v->r < 0)
			return 0;
		p->match_label_value[p->n_match_labels - 1] = strdup(m->str);
		if (!p->match_label_value[p->n_match_labels - 1]) {
			/* keys and values stay in pairs for policy_clear */
			free(p->match_label_key[--p->n_match_labels]);
			s->v->r = -ENOMEM;
			return 0;
		}
	next:;
	}
	return 0;
}

static void add_qos(struct setting *s, const struct pjson *e, const char *ipath)
{
	enum thps_k8s_qos q =
	    e->type == PJSON_STRING ? thps_k8s_qos_from_name(e->str) : THPS_K8S_QOS_NONE;

	if (q == THPS_K8S_QOS_NONE) {
		render(e, s->got, sizeof(s->got));
		verr(s->v, e->line, e->col, ipath,
		     "expected one of \"guaranteed\", \"burstable\", \"besteffort\", got %s",
		     s->got);
		return;
	}
	*(unsigned *)s->field |= 1U << q;
}

static int set_qos(struct setting *s)
{
	*(unsigned *)s->field = 0;
	return each_item(s, 3, "QoS classes", add_qos);
}

static int set_enum(struct setting *s)
{
	const struct pjson *j = s->j;
	char want[64], list[96], *w, *save = NULL;
	size_t ln = 0;
	int idx = 0;

	snprintf(want, sizeof(want), "%s", s->k->values);
	if (j->type == PJSON_STRING)
		for (w = strtok_r(want, "|", &save); w; w = strtok_r(NULL, "|", &save), idx++)
			if (!strcmp(w, j->str)) {
				*(int *)s->field = idx;
				return 0;
			}
	/* strtok_r cut want up: copy the values again for the message */
	snprintf(want, sizeof(want), "%s", s->k->values);
	save = NULL;
	for (w = strtok_r(want, "|", &save); w; w = strtok_r(NULL, "|", &save))
		ln += snprintf(list + ln, sizeof(list) - ln, "%s\"%s\"", ln ? ", " : "", w);
	return verr(s->v, j->line, j->col, s->path, "expected one of %s, got %s", list, s->got);
}

static int set_folios(struct setting *s)
{
	const struct pjson *j = s->j;
	uint32_t mask = 0;
	uint64_t u;

	if (j->type != PJSON_ARRAY || j->n_items < 1 || j->n_items > 16)
		return verr(s->v, j->line, j->col, s->path,
			    "expected an array of 1 to 16 folio sizes like [\"64K\", \"2M\"], "
			    "got %s",
			    s->got);
	for (size_t i = 0; i < j->n_items; i++) {
		const struct pjson *e = &j->items[i];
		char ipath[300];

		snprintf(ipath, sizeof(ipath), "%s[%zu]", s->path, i);
		render(e, s->got, sizeof(s->got));
		if (e->type != PJSON_STRING || thps_parse_size(e->str, &u) < 0 || u < s->k->min ||
		    u > s->k->max || (u & (u - 1)) || u % 4096) {
			verr(s->v, e->line, e->col, ipath,
			     "expected a folio size, a power of two from %s to %s like "
			     "\"64K\", "
			     "got %s",
			     s->lo, s->hi, s->got);
			continue;
		}
		mask |= UINT32_C(1) << __builtin_ctzll(u / 4096);
	}
	*(uint32_t *)s->field = mask;
	return 0;
}

static int set_cut(struct setting *s)
{
	/* "N0%": a tenth of the subpages per bucket, so "10%" is bucket 0 */
	static const char *const pct[] = {"10%", "20%", "30%", "40%", "50%",
					  "60%", "70%", "80%", "90%", "100%"};
	const struct pjson *j = s->j;
	double d;

	if (int_in(j, s->k->min, s->k->max, &d)) {
		*(unsigned *)s->field = (unsigned)d;
		return 0;
	}
	if (j->type == PJSON_STRING)
		for (unsigned b = 0; b < ELEMENTSOF(pct); b++)
			if (!strcmp(j->str, pct[b])) {
				*(unsigned *)s->field = b;
				return 0;
			}
	return verr(s->v, j->line, j->col, s->path,
		    "expected a bucket from 0 to 9 or a percentage \"10%%\", \"20%%\" .. "
		    "\"100%%\", got %s",
		    s->got);
}

static int set_size(struct setting *s)
{
	const struct pjson *j = s->j;
	double d;
	uint64_t u;

	if (j->type == PJSON_STRING) {
		int r = thps_parse_size(j->str, &u);
		if (r == -ERANGE)
			return verr(s->v, j->line, j->col, s->path,
				    "expected a size from %s to %s, got %s", s->lo, s->hi, s->got);
		if (r < 0)
			return verr(s->v, j->line, j->col, s->path,
				    "expected a size like \"64M\", got %s", s->got);
	} else if (j->type == PJSON_NUMBER && int_in(j, 0, 1e18, &d)) {
		u = (uint64_t)d;
	} else {
		return verr(s->v, j->line, j->col, s->path,
			    "expected a size like \"64M\" or an integer of bytes, got %s", s->got);
	}
	if (u < s->k->min || u > s->k->max)
		return verr(s->v, j->line, j->col, s->path, "expected a size from %s to %s, got %s",
			    s->lo, s->hi, s->got);
	*(uint64_t *)s->field = u;
	return 0;
}

static int set_duration(struct setting *s)
{
	const struct pjson *j = s->j;
	double d;
	uint64_t u;

	if (j->type == PJSON_STRING) {
		if (thps_parse_duration(j->str, &u) < 0)
			return verr(s->v, j->line, j->col, s->path,
				    "expected a duration like \"30s\" or \"5m\" (ms, s, m, "
				    "h, d), got %s",
				    s->got);
	} else if (j->type == PJSON_NUMBER && int_in(j, 0, 1e12, &d)) {
		u = (uint64_t)d * USEC_PER_SEC;
	} else {
		return verr(s->v, j->line, j->col, s->path,
			    "expected a duration like \"30s\" or an integer of seconds, "
			    "got %s",
			    s->got);
	}
	if (u < s->k->min || u > s->k->max)
		return verr(s->v, j->line, j->col, s->path,
			    "expected a duration from %s to %s, got %s", s->lo, s->hi, s->got);
	*(uint64_t *)s->field = u;
	return 0;
}

static int set_uint(struct setting *s)
{
	const struct pjson *j = s->j;
	double d;

	if (!int_in(j, s->k->min, s->k->max, &d))
		return verr(s->v, j->line, j->col, s->path,
			    "expected an integer from %s to %s, got %s", s->lo, s->hi, s->got);
	*(uint64_t *)s->field = (uint64_t)d;
	return 0;
}

static int set_percent(struct setting *s)
{
	const struct pjson *j = s->j;

	if (j->type != PJSON_NUMBER || !isfinite(j->num) || j->num < s->k->min ||
	    j->num > s->k->max)
		return verr(s->v, j->line, j->col, s->path,
			    "expected a percentage from %s to %s, got %s", s->lo, s->hi, s->got);
	memcpy(s->field, &j->num, sizeof(j->num));
	return 0;
}

/* The setter of each key type; objects have none, walk_object descends into them. */
static int (*const setters[])(struct setting *s) = {
    [K_OBJECT] = NULL,	     [K_NAME] = set_name,
    [K_CGROUP] = set_cgroup, [K_NAMES] = set_names,
    [K_ENUM] = set_enum,     [K_CUT] = set_cut,
    [K_SIZE] = set_size,     [K_DURATION] = set_duration,
    [K_UINT] = set_uint,     [K_PERCENT] = set_percent,
    [K_FOLIOS] = set_folios, [K_UIDS] = set_uids,
    [K_QOS] = set_qos,	     [K_NAMESPACES] = set_namespaces,
    [K_PODS] = set_pods,     [K_CNAMES] = set_cnames,
    [K_LABELS] = set_labels,
};

static int set_value(struct vctx *v, const struct policy_key *k, const struct pjson *j,
		     const char *path, struct thps_policy *p)
{
	struct setting s = {
	    .v = v, .k = k, .j = j, .path = path, .p = p, .field = (char *)p + k->offset};
	uint64_t ignored;
	unsigned nerr = v->nerr;
	int r;

	if (!setters[k->type])
		return 0;
	if (k->flags & DEPRECATED)
		s.field = &ignored; /* only K_UINT keys are deprecated so far */
	render(j, s.got, sizeof(s.got));
	range_text(k, k->min, s.lo, sizeof(s.lo));
	range_text(k, k->max, s.hi, sizeof(s.hi));
	r = setters[k->type](&s);
	if ((k->flags & DEPRECATED) && v->nerr == nerr &&
	    thps_policy_warnings_add(v->errs, "%s:%u:%u: %s: %s", v->file, j->line, j->col, path,
				     k->help) < 0)
		v->r = -ENOMEM;
	return r;
}

/* path + "." + key into buf, the key made safe for a terminal and a log line (it is hostile
 * input): control bytes escaped, long keys shortened. */
static void join_path(char *buf, size_t size, const char *path, const char *key)
{
	size_t n = (size_t)snprintf(buf, size, "%s%s", path, *path ? "." : "");

	for (size_t i = 0; key[i] && n + 8 < size; i++) {
		unsigned char c = (unsigned char)key[i];
		if (i >= 64) {
			n += (size_t)snprintf(buf + n, size - n, "...");
			break;
		}
		if (c < 0x20 || c == 0x7f)
			n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
		else
			buf[n++] = (char)c;
	}
	buf[MIN(n, size - 1)] = 0;
}

static void check_duplicates(struct vctx *v, const struct pjson *obj, const char *path)
{
	for (size_t i = 1; i < obj->n_items; i++)
		for (size_t k = 0; k < i; k++)
			if (!strcmp(obj->items[i].key, obj->items[k].key)) {
				char p[300];
				join_path(p, sizeof(p), path, obj->items[i].key);
				verr(v, obj->items[i].key_line, obj->items[i].key_col, p,
				     "duplicate key (first at line %u, column %u)",
				     obj->items[k].key_line, obj->items[k].key_col);
				break;
			}
}

/* prefix: the table path of obj ("" for the policy itself, "trigger"...); path: JSON path. */
static void walk_object(struct vctx *v, const struct pjson *obj, const char *prefix,
			const char *path, struct thps_policy *p)
{
	size_t plen = strlen(prefix);

	check_duplicates(v, obj, path);
	for (size_t i = 0; i < obj->n_items; i++) {
		const struct pjson *m = &obj->items[i];
		char full[128], jpath[300];
		const struct policy_key *k;

		snprintf(full, sizeof(full), "%s%s%s", prefix, plen ? "." : "", m->key);
		join_path(jpath, sizeof(jpath), path, m->key);
		k = strlen(m->key) < 64 ? key_find(full) : NULL;
		if (!k) {
			char known[512] = "";
			size_t n = 0;
			for (size_t t = 0; t < ELEMENTSOF(keys); t++) {
				const char *kk = keys[t].key;
				if ((keys[t].flags & DEPRECATED) || strncmp(kk, prefix, plen) ||
				    (plen && kk[plen] != '.'))
					continue;
				kk += plen + !!plen;
				if (strchr(kk, '.'))
					continue;
				n += snprintf(known + n, sizeof(known) - n, "%s%s", n ? ", " : "",
					      kk);
			}
			verr(v, m->key_line, m->key_col, jpath, "unknown key; expected one of: %s",
			     known);
			continue;
		}
		if (i > 0 && pjson_get(obj, m->key) != m)
			continue; /* duplicate, reported above */
		if (k->type != K_OBJECT) {
			set_value(v, k, m, jpath, p);
			continue;
		}
		if (m->type != PJSON_OBJECT) {
			char got[96];
			render(m, got, sizeof(got));
			verr(v, m->line, m->col, jpath, "expected an object, got %s", got);
			continue;
		}
		if ((k->flags & NEED_ONE) && m->n_items == 0)
			verr(v, m->line, m->col, jpath, "expected at least one key in this object");
		if (k->flags & RESETS) {
			/* a trigger object lists exactly the triggers that are on */
			p->trigger_min_waste = 0;
			p->trigger_growth_thps = 0;
			p->trigger_growth_window_usec = 0;
		}
		walk_object(v, m, full, jpath, p);
	}
	/* required children of this object */
	for (size_t t = 0; t < ELEMENTSOF(keys); t++) {
		const char *kk = keys[t].key;
		if (!(keys[t].flags & REQUIRED) || strncmp(kk, prefix, plen) ||
		    (plen && kk[plen] != '.'))
			continue;
		kk += plen + !!plen;
		if (strchr(kk, '.') || pjson_get(obj, kk))
			continue;
		verr(v, obj->line, obj->col, path, "missing required key \"%s\"", kk);
	}
}

static void policy_clear(struct thps_policy *p)
{
	free(p->file);
	free(p->match_cgroup);
	for (size_t i = 0; i < p->n_match_container; i++)
		free(p->match_container[i]);
	for (size_t i = 0; i < p->n_match_pod_uid; i++)
		free(p->match_pod_uid[i]);
	for (size_t i = 0; i < p->n_match_namespace; i++)
		free(p->match_namespace[i]);
	for (size_t i = 0; i < p->n_match_pod; i++)
		free(p->match_pod[i]);
	for (size_t i = 0; i < p->n_match_container_name; i++)
		free(p->match_container_name[i]);
	for (size_t i = 0; i < p->n_match_labels; i++) {
		free(p->match_label_key[i]);
		free(p->match_label_value[i]);
	}
	memset(p, 0, sizeof(*p));
}

static void apply_defaults(struct thps_policy *p)
{
	struct thps_policy_errors none = {0};
	struct vctx v = {.file = "(defaults)", .errs = &none};

	for (size_t t = 0; t < ELEMENTSOF(keys); t++) {
		struct pjson j = {.line = 0};
		char *end;
		if (!keys[t].def)
			continue;
		if ((keys[t].def[0] >= '0' && keys[t].def[0] <= '9') &&
		    (keys[t].type == K_UINT || keys[t].type == K_CUT ||
		     keys[t].type == K_PERCENT)) {
			j.type = PJSON_NUMBER;
			j.num = strtod(keys[t].def, &end);
			j.str = (char *)keys[t].def;
		} else {
			j.type = PJSON_STRING;
			j.str = (char *)keys[t].def;
		}
		set_value(&v, &keys[t], &j, keys[t].key, p);
	}
	/* the table's defaults are valid by construction; check-policy tests that */
	thps_policy_errors_clear(&none);
}

static void compile(struct thps_policy *p)
{
	const char *g = p->match_cgroup;

	p->spec_components = p->spec_prefix = 0;
	if (!g)
		return;
	p->spec_prefix = (unsigned)strcspn(g, "*?[\\");
	for (const char *c = g; *c;) {
		size_t n;
		while (*c == '/')
			c++;
		n = strcspn(c, "/");
		if (n == 0)
			break;
		bool lit = true;
		for (size_t i = 0; i < n; i++)
			if (strchr("*?[\\", c[i]))
				lit = false;
		p->spec_components += lit;
		c += n;
	}
}

static int set_append(struct thps_policy_set *set, struct thps_policy *p)
{
	struct thps_policy *n;

	if (set->n >= THPS_POLICY_MAX_POLICIES)
		return -E2BIG;
	n = realloc(set->policies, (set->n + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	set->policies = n;
	p->order = set->n;
	set->policies[set->n++] = *p;
	memset(p, 0, sizeof(*p));
	return 0;
}

/* Messages of one file read best in file order; the walk finds some (duplicates, missing
 * keys) out of order. Sorts msgs[from..] by the line:col after the file name. */
static void sort_by_position(struct thps_policy_errors *errs, size_t from, const char *file)
{
	size_t fl = strlen(file);

	for (size_t i = from + 1; i < errs->n; i++)
		for (size_t k = i; k > from; k--) {
			unsigned l1 = 0, c1 = 0, l2 = 0, c2 = 0;
			char *a = errs->msgs[k - 1], *b = errs->msgs[k];
			if (sscanf(a + fl, ":%u:%u", &l1, &c1) != 2 ||
			    sscanf(b + fl, ":%u:%u", &l2, &c2) != 2)
				break;
			if (l1 < l2 || (l1 == l2 && c1 <= c2))
				break;
			errs->msgs[k - 1] = b;
			errs->msgs[k] = a;
		}
}

/* Finds the policies of a file: root's "policies" array (*list), or root itself as the one
 * policy (*list NULL). Returns 0, or -EINVAL when there is nothing to read (reported). */
static int find_policies(struct vctx *v, const struct pjson *root, const struct pjson **list,
			 size_t *n)
{
	const struct pjson *l;
	char got[96];

	if (root->type != PJSON_OBJECT) {
		render(root, got, sizeof(got));
		verr(v, root->line, root->col, "",
		     "expected an object {\"policies\": [...]} or a single policy, got %s", got);
		return -EINVAL;
	}
	l = pjson_get(root, "policies");
	*list = l;
	if (!l) {
		*n = 1;
		return 0;
	}
	check_duplicates(v, root, "");
	for (size_t i = 0; i < root->n_items; i++)
		if (strcmp(root->items[i].key, "policies")) {
			char kp[300];
			join_path(kp, sizeof(kp), "", root->items[i].key);
			verr(v, root->items[i].key_line, root->items[i].key_col, kp,
			     "unknown key; a file is {\"policies\": [...]} or one policy");
		}
	if (l->type != PJSON_ARRAY) {
		render(l, got, sizeof(got));
		verr(v, l->line, l->col, "policies", "expected an array of policies, got %s", got);
		return -EINVAL;
	}
	*n = l->n_items;
	if (*n > THPS_POLICY_MAX_POLICIES) {
		verr(v, l->line, l->col, "policies", "expected at most %d policies, got %zu",
		     THPS_POLICY_MAX_POLICIES, *n);
		return -EINVAL;
	}
	return 0;
}

/* Reads policy i of a file, o, into ps[i] over the defaults; in_list: o is an item of
 * "policies". Names are unique within the file, so ps[0..i-1] are checked too. */
static void read_policy(struct vctx *v, const struct pjson *o, bool in_list, struct thps_policy *ps,
			size_t i)
{
	char path[32] = "";

	if (in_list)
		snprintf(path, sizeof(path), "policies[%zu]", i);
	apply_defaults(&ps[i]);
	if (o->type != PJSON_OBJECT) {
		char got[96];
		render(o, got, sizeof(got));
		verr(v, o->line, o->col, path, "expected a policy object, got %s", got);
		return;
	}
	ps[i].line = o->line;
	ps[i].col = o->col;
	snprintf(ps[i].json_path, sizeof(ps[i].json_path), "%s%sname", path, *path ? "." : "");
	walk_object(v, o, "", path, &ps[i]);
	for (size_t k = 0; k < i; k++)
		if (ps[i].name[0] && !strcmp(ps[k].name, ps[i].name)) {
			const struct pjson *nm = pjson_get(o, "name");
			char npath[48];
			snprintf(npath, sizeof(npath), "%s.name", path);
			verr(v, nm->line, nm->col, npath,
			     "duplicate policy name \"%s\" (first at line %u, column %u)",
			     ps[i].name, ps[k].line, ps[k].col);
			break;
		}
}

/* Moves the n policies of a file into set: all of them, or on any error none. */
static void add_policies(struct vctx *v, const char *file, struct thps_policy *ps, size_t n,
			 struct thps_policy_set *set)
{
	size_t old_n = set->n;
	int r;

	for (size_t i = 0; i < n && v->r == 0; i++) {
		ps[i].file = strdup(file);
		if (!ps[i].file) {
			v->r = -ENOMEM;
			break;
		}
		compile(&ps[i]);
		r = set_append(set, &ps[i]);
		if (r < 0) {
			if (r == -E2BIG)
				verr(v, ps[i].line, ps[i].col, "", "more than %d policies in all",
				     THPS_POLICY_MAX_POLICIES);
			else
				v->r = r;
		}
	}
	if (v->r < 0 || v->nerr) {
		while (set->n > old_n)
			policy_clear(&set->policies[--set->n]);
	}
}

int thps_policy_parse_text(const char *file, const char *text, size_t len,
			   struct thps_policy_set *set, struct thps_policy_errors *errs)
{
	size_t first_err = errs->n;
	struct vctx v = {.file = file, .errs = errs};
	struct pjson *root = NULL;
	const struct pjson *list = NULL;
	struct thps_policy *ps = NULL;
	size_t n = 0;
	char msg[256];
	unsigned line = 0, col = 0;
	int r;

	r = pjson_parse(text, len, &root, msg, sizeof(msg), &line, &col);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		verr(&v, line, col, "", "%s", msg);
		return v.r < 0 ? v.r : -EINVAL;
	}
	if (find_policies(&v, root, &list, &n) < 0)
		goto out;
	ps = calloc(n ? n : 1, sizeof(*ps));
	if (!ps) {
		v.r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		read_policy(&v, list ? &list->items[i] : root, list != NULL, ps, i);
	if (v.nerr == 0 && v.r == 0)
		add_policies(&v, file, ps, n, set);
out:
	if (ps)
		for (size_t i = 0; i < n; i++)
			policy_clear(&ps[i]);
	free(ps);
	pjson_free(root);
	sort_by_position(errs, first_err, file);
	if (v.r < 0)
		return v.r;
	return v.nerr ? -EINVAL : (int)n;
}

void thps_policy_print_keys(FILE *f)
{
	static const char *const types[] = {
	    [K_OBJECT] = "object",   [K_NAME] = "name",		 [K_CGROUP] = "glob",
	    [K_NAMES] = "glob(s)",   [K_ENUM] = "enum",		 [K_CUT] = "bucket|percent",
	    [K_SIZE] = "size",	     [K_DURATION] = "duration",	 [K_UINT] = "integer",
	    [K_PERCENT] = "percent", [K_FOLIOS] = "sizes",	 [K_UIDS] = "uid(s)",
	    [K_QOS] = "enum(s)",     [K_NAMESPACES] = "name(s)", [K_PODS] = "glob(s)",
	    [K_CNAMES] = "glob(s)",  [K_LABELS] = "labels",
	};

	for (size_t t = 0; t < ELEMENTSOF(keys); t++) {
		const struct policy_key *k = &keys[t];
		char lo[32], hi[32];

		fprintf(f, "%-34s %-14s", k->key, types[k->type]);
		if (k->type == K_ENUM || k->type == K_QOS)
			fprintf(f, " %s", k->values);
		else if (k->min < k->max) {
			range_text(k, k->min, lo, sizeof(lo));
			range_text(k, k->max, hi, sizeof(hi));
			fprintf(f, " %s..%s", lo, hi);
		}
		if (k->def)
			fprintf(f, " (default %s)", k->def);
		if (k->flags & REQUIRED)
			fprintf(f, " (required)");
		if (k->flags & DEPRECATED)
			fprintf(f, " (deprecated)");
		fprintf(f, "\n    %s\n", k->help);
	}
}

void thps_policy_init_defaults(struct thps_policy *p)
{
	apply_defaults(p);
}

void thps_policy_clear(struct thps_policy *p)
{
	policy_clear(p);
}

uint32_t thps_policy_acted_sizes(const struct thps_policy *p, const struct thps_geometry *g)
{
	uint32_t all = p->sizes_mask ? p->sizes_mask : ~UINT32_C(0);
	int pmd = thps_folio_order(g->subpages);

	if (p->action == THPS_POLICY_RECLAIM && pmd >= 0) {
		all &= UINT32_C(1) << pmd;
		return all ? all : UINT32_C(1) << 31; /* no size at all: nothing counts */
	}
	return p->sizes_mask;
}
