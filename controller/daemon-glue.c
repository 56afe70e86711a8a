/* The daemon's links to the modules it drives (see daemon-glue.h). Sources come from the
 * plugin table (plugins.c), actions go through the actuator table. The policy reader accepts a deliberately small JSON shape until the
 * policy module (schemas/policy.schema.json) replaces it:
 *   {"name": "web", "cgroup": "/web.slice/GLOB", "mode": "observe"|"enforce",
 *    "action": "reclaim"|"split", "min_waste": BYTES, "cooldown_sec": N, "max_bytes": BYTES}
 * Unknown keys are errors. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon-glue.h"
#include "macro.h"
#include "fileio.h"
#include "actuator.h"
#include "plugin.h"

#define POLICY_FILE_MAX (256 * 1024)
#define POLICIES_MAX 1024


struct dpolicy {
	char name[64];
	char cgroup[256];
	bool enforce;
	char action[16];
	uint64_t min_waste;
	uint64_t cooldown_sec;
	uint64_t max_bytes;
};

struct dglue_policies {
	struct dpolicy *v;
	size_t n;
};

static void offset_to_line(const char *text, size_t off, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && text[i]; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else
			(*col)++;
	}
}

static int get_u64(json_object *v, uint64_t *ret)
{
	if (!json_object_is_type(v, json_type_int))
		return -EINVAL;
	int64_t x = json_object_get_int64(v);
	if (x < 0)
		return -ERANGE;
	*ret = (uint64_t)x;
	return 0;
}

static int parse_policy(const char *file, const char *text, struct dpolicy *p, char *err, size_t err_size)
{
	json_tokener *tok = json_tokener_new();
	json_object *o;
	int r = 0;

	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, text, (int)strlen(text));
	if (!o || json_tokener_get_error(tok) != json_tokener_success) {
		unsigned line, col;
		offset_to_line(text, json_tokener_get_parse_end(tok), &line, &col);
		snprintf(err, err_size, "%s:%u:%u: %s", file, line, col,
			 o ? "trailing data after the policy object"
			   : json_tokener_error_desc(json_tokener_get_error(tok)));
		json_object_put(o);
		json_tokener_free(tok);
		return -EINVAL;
	}
	json_tokener_free(tok);
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, err_size, "%s: expected a JSON object", file);
		json_object_put(o);
		return -EINVAL;
	}
	memset(p, 0, sizeof(*p));
	snprintf(p->cgroup, sizeof(p->cgroup), "*");
	snprintf(p->action, sizeof(p->action), "reclaim");
	p->cooldown_sec = 60;
	json_object_object_foreach(o, key, val) {
		const char *s = json_object_is_type(val, json_type_string) ? json_object_get_string(val) : NULL;
		if (!strcmp(key, "name") && s && strlen(s) < sizeof(p->name))
			snprintf(p->name, sizeof(p->name), "%s", s);
		else if (!strcmp(key, "cgroup") && s && *s && strlen(s) < sizeof(p->cgroup))
			snprintf(p->cgroup, sizeof(p->cgroup), "%s", s);
		else if (!strcmp(key, "mode") && s && (!strcmp(s, "observe") || !strcmp(s, "enforce")))
			p->enforce = !strcmp(s, "enforce");
		else if (!strcmp(key, "action") && s && (!strcmp(s, "reclaim") || !strcmp(s, "split")))
			snprintf(p->action, sizeof(p->action), "%s", s);
		else if (!strcmp(key, "min_waste") && get_u64(val, &p->min_waste) == 0)
			;
		else if (!strcmp(key, "cooldown_sec") && get_u64(val, &p->cooldown_sec) == 0)
			;
		else if (!strcmp(key, "max_bytes") && get_u64(val, &p->max_bytes) == 0)
			;
		else {
			static const char *const known[] = { "name", "cgroup", "mode", "action",
							      "min_waste", "cooldown_sec", "max_bytes" };
			bool is_known = false;
			for (size_t i = 0; i < ELEMENTSOF(known); i++)
				is_known |= !strcmp(key, known[i]);
			snprintf(err, err_size, "%s: %s: %s", file, key,
				 is_known ? "bad value (name/cgroup: string; mode: \"observe\"|\"enforce\"; "
					    "action: \"reclaim\"|\"split\"; sizes and seconds: integers >= 0)"
					  : "unknown key");
			r = -EINVAL;
			break;
		}
	}
	json_object_put(o);
	if (r == 0 && !p->name[0]) {
		const char *base = strrchr(file, '/');
		snprintf(p->name, sizeof(p->name), "%.*s", (int)strcspn(base ? base + 1 : file, "."),
			 base ? base + 1 : file);
	}
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int dglue_policies_load(const char *dir, struct dglue_policies **ret, char *err, size_t err_size)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dglue_policies *set;
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	int r = 0;

	err[0] = '\0';
	set = calloc(1, sizeof(*set));
	if (!set)
		return -ENOMEM;
	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT) {
			*ret = set;
			return 0;
		}
		r = negative_errno();
		snprintf(err, err_size, "%s: cannot open the policy directory: %s", dir, strerror(-r));
		free(set);
		return r;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (de->d_name[0] == '.' || l < 6 || strcmp(de->d_name + l - 5, ".json"))
			continue;
		if (n >= POLICIES_MAX) {
			snprintf(err, err_size, "%s: more than %d policy files", dir, POLICIES_MAX);
			r = -E2BIG;
			goto fail;
		}
		char **nn = reallocarray(names, n + 1, sizeof(*names));
		if (!nn || !(nn[n] = strdup(de->d_name))) {
			if (nn)
				names = nn;
			r = -ENOMEM;
			goto fail;
		}
		names = nn;
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	set->v = calloc(n ? n : 1, sizeof(*set->v));
	if (!set->v) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *text = NULL;
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		r = read_file_bounded(path, POLICY_FILE_MAX, &text, NULL);
		if (r < 0) {
			snprintf(err, err_size, "%s: %s", path, r == -EFBIG ? "file too large" : strerror(-r));
			goto fail;
		}
		r = parse_policy(path, text, &set->v[set->n], err, err_size);
		if (r < 0)
			goto fail;
		set->n++;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	*ret = set;
	return (int)set->n;
fail:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	dglue_policies_free(set);
	return r;
}

void dglue_policies_free(struct dglue_policies *p)
{
	if (!p)
		return;
	free(p->v);
	free(p);
}

size_t dglue_policies_count(const struct dglue_policies *p)
{
	return p ? p->n : 0;
}

static bool path_exists(const char *root, const char *rel)
{
	char path[PATH_MAX];

	return thps_path(path, sizeof(path), root, "%s", rel) == 0 && access(path, F_OK) == 0;
}

static const char *cgroup_mount(const struct thps_ctx *ctx, char *buf, size_t size)
{
	if (ctx->cgroup_root[0])
		return ctx->cgroup_root;
	if (thps_path(buf, size, ctx->sys_root, "fs/cgroup") < 0)
		return "";
	return buf;
}

void dglue_probe(const struct thps_ctx *ctx, struct dglue_caps *ret)
{
	_cleanup_free_ char *controllers = NULL;
	char mnt[PATH_MAX], path[PATH_MAX];
	const char *root = cgroup_mount(ctx, mnt, sizeof(mnt));

	memset(ret, 0, sizeof(*ret));
	if (thps_path(path, sizeof(path), root, "cgroup.controllers") == 0 &&
	    read_file_bounded(path, 4096, &controllers, NULL) == 0) {
		const char *p = controllers;
		while ((p = strstr(p, "memory"))) {
			if ((p == controllers || p[-1] == ' ') && (p[6] == ' ' || p[6] == '\n' || !p[6]))
				ret->cgroup2_memory = true;
			p += 6;
		}
	}
	/* memory.reclaim lives in every non-root cgroup; look one level down. */
	if (ret->cgroup2_memory) {
		_cleanup_closedir_ DIR *d = opendir(root);
		struct dirent *de;
		while (d && (de = readdir(d)))
			if (de->d_type == DT_DIR && de->d_name[0] != '.') {
				char rel[PATH_MAX];
				snprintf(rel, sizeof(rel), "%.200s/memory.reclaim", de->d_name);
				if (path_exists(root, rel)) {
					ret->memory_reclaim = true;
					break;
				}
			}
	}
	ret->split_huge_pages = path_exists(ctx->debugfs_root, "split_huge_pages");
	ret->thp_utilization = path_exists(ctx->debugfs_root, "thp_utilization");
	ret->pagemap = path_exists(ctx->proc_root, "self/pagemap");
	ret->kpageflags = path_exists(ctx->proc_root, "kpageflags");
	if (!ret->cgroup2_memory)
		snprintf(ret->why, sizeof(ret->why),
			 "no cgroup v2 memory controller at '%.150s' (cgroup v1 is read-only to thpshrink)", root);
	else if (!ret->memory_reclaim)
		snprintf(ret->why, sizeof(ret->why), "the kernel has no memory.reclaim (Linux >= 5.19 needed)");
}

size_t dglue_caps_flags(const struct dglue_caps *caps, struct thps_metrics_flag *flags, size_t max)
{
	const struct thps_metrics_flag all[] = {
		{ "cgroup2_memory", caps->cgroup2_memory },
		{ "debugfs_split_huge_pages", caps->split_huge_pages },
		{ "debugfs_thp_utilization", caps->thp_utilization },
		{ "kpageflags", caps->kpageflags },
		{ "memory_reclaim", caps->memory_reclaim },
		{ "pagemap", caps->pagemap },
	};
	size_t n = MIN(max, ELEMENTSOF(all));

	memcpy(flags, all, n * sizeof(*flags));
	return n;
}

/* Every source in the plugin table (plugins.c), in its order. */
static const struct thps_source_ops *sources(size_t i)
{
	for (size_t j = 0; thps_sources[j]; j++)
		if (j == i)
			return thps_sources[j];
	return NULL;
}

const char *dglue_sources_description(void)
{
	static char buf[128];

	buf[0] = '\0';
	for (size_t i = 0; sources(i); i++) {
		const struct thps_source_ops *s = sources(i);
		if (s->name)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", buf[0] ? "," : "", s->name);
	}
	return buf[0] ? buf : "none (built without sources)";
}

int dglue_collect(const struct thps_ctx *ctx, const struct thps_scan_opts *opts,
		  struct thps_scan *scan, char *why, size_t why_size)
{
	int first = 0;

	why[0] = '\0';
	for (size_t i = 0; sources(i); i++) {
		const struct thps_source_ops *s = sources(i);
		char reason[200];
		int r;

		if (!s->collect)
			continue;
		if (s->probe && s->probe(ctx, reason, sizeof(reason)) <= 0)
			continue;
		r = s->collect(ctx, opts, scan);
		if (r < 0 && first == 0) {
			first = r;
			snprintf(why, why_size, "source '%s': %s", s->name, strerror(-r));
		}
	}
	thps_scan_finish(scan, opts->lowutil_max_bucket);
	return first;
}

static const struct dpolicy *match(const struct dglue_policies *p, const char *path)
{
	for (size_t i = 0; p && i < p->n; i++)
		if (fnmatch(p->v[i].cgroup, path, 0) == 0)
			return &p->v[i];
	return NULL;
}

void dglue_decide(const struct dglue_policies *p, const struct thps_cgroup_stats *c,
		  const struct dglue_history *h, bool observe_only, time_t now,
		  struct dglue_decision *ret)
{
	const struct dpolicy *pol = match(p, c->path ? c->path : "");
	uint64_t waste = c->waste_bytes + c->partial_unmapped_bytes;

	memset(ret, 0, sizeof(*ret));
	if (!pol) {
		snprintf(ret->action, sizeof(ret->action), "none");
		snprintf(ret->reason, sizeof(ret->reason), "no policy matches; observing (waste %" PRIu64 " bytes)", waste);
		return;
	}
	snprintf(ret->policy, sizeof(ret->policy), "%s", pol->name);
	if (waste == 0 || waste < pol->min_waste) {
		snprintf(ret->action, sizeof(ret->action), "none");
		snprintf(ret->reason, sizeof(ret->reason), "waste %" PRIu64 " bytes below min_waste %" PRIu64,
			 waste, pol->min_waste);
		return;
	}
	if (h->last_action && (uint64_t)(now - h->last_action) < pol->cooldown_sec) {
		snprintf(ret->action, sizeof(ret->action), "none");
		snprintf(ret->reason, sizeof(ret->reason), "cooldown: last action %lds ago, cooldown_sec %" PRIu64,
			 (long)(now - h->last_action), pol->cooldown_sec);
		return;
	}
	ret->amount = pol->max_bytes && waste > pol->max_bytes ? pol->max_bytes : waste;
	if (!pol->enforce || observe_only) {
		snprintf(ret->action, sizeof(ret->action), "observe");
		snprintf(ret->reason, sizeof(ret->reason), "would %s %" PRIu64 " bytes (waste %" PRIu64 " >= min_waste %" PRIu64 "); %s",
			 pol->action, ret->amount, waste, pol->min_waste,
			 observe_only ? "observe-only daemon" : "policy mode observe");
		ret->act = true; /* the observe actuator records it */
		return;
	}
	snprintf(ret->action, sizeof(ret->action), "%s", pol->action);
	snprintf(ret->reason, sizeof(ret->reason), "waste %" PRIu64 " >= min_waste %" PRIu64 ": %s %" PRIu64 " bytes",
		 waste, pol->min_waste, pol->action, ret->amount);
	ret->act = true;
}

int dglue_act(const struct thps_ctx *ctx, const struct thps_scan *scan,
	      const struct thps_cgroup_stats *c, const struct dglue_decision *d,
	      struct dglue_result *ret)
{
	const struct thps_actuator_ops *a = thps_actuator_find(d->action);
	struct thps_act_request req = {
		.cgroup = c->path,
		.geom = &scan->geom,
		.amount_bytes = d->amount,
		.max_bytes = d->amount,
	};
	struct thps_act_result res;
	_cleanup_free_ struct thps_thp_range *ranges = NULL;
	size_t n = 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!a)
		return -EOPNOTSUPP;
	if (!c->path || !strcmp(c->path, "/"))
		return -EINVAL;
	if (!strcmp(d->action, "split") && scan->n_ranges) {
		/* Only this cgroup's low-util THPs, as the scanner saw them. */
		ranges = calloc(scan->n_ranges, sizeof(*ranges));
		if (!ranges)
			return -ENOMEM;
		for (size_t i = 0; i < scan->n_ranges; i++)
			if (scan->ranges[i].ino == c->ino)
				ranges[n++] = scan->ranges[i];
		req.ranges = ranges;
		req.n_ranges = n;
	}
	memset(&res, 0, sizeof(res));
	r = a->act(ctx, &req, &res);
	if (!strcmp(d->action, "observe")) {
		/* Nothing was asked of the kernel; an unreadable memory.current (cgroup v1) only
		 * costs the dry run its snapshot. */
		snprintf(ret->note, sizeof(ret->note), "%s", r < 0 ? "dry run" : res.note);
		return 0;
	}
	if (r < 0)
		return r;
	ret->requested = res.asked_bytes;
	if (res.before.memory_current != UINT64_MAX && res.after.memory_current != UINT64_MAX &&
	    res.before.memory_current > res.after.memory_current)
		ret->given_back = res.before.memory_current - res.after.memory_current;
	snprintf(ret->note, sizeof(ret->note), "%s", res.note);
	return res.acted || !strcmp(d->action, "observe") ? 0 : -ECANCELED;
}
