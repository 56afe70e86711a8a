/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a pass publishes: the metrics text (HTTP and textfile), status.json (also the
 * heartbeat) and sd_notify STATUS. Everything the HTTP thread sees is a finished copy. */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "fileio.h"
#include "k8s.h"
#include "log.h"
#include "daemon-state.h"
#include "publish.h"
#include "records.h"
#include "regwatch.h"
#include "text.h"
#include "thp.h"

#define METRICS_MAX (64u << 20)

/* A JSON string from a name a user may have picked (text.h): status.json stays valid JSON and
 * names a cgroup exactly as /metrics does. */
static json_object *json_name(const char *s)
{
	char clean[THPS_TEXT_MAX + 1];

	if (thps_text_sanitize(s, THPS_TEXT_MAX, clean, sizeof(clean)) < 0)
		clean[0] = '\0';
	return json_object_new_string(clean);
}

/* {"pod_uid", "container_id" (null for a pod's own cgroup), "qos_class"} for a cgroup
 * kubelet's layout names (k8s.h), or NULL. */
/* This pass's failures of a cgroup's promotion by reason (the metric's label), the ones that
 * happened only: each ended a range or a process, never the pass for others. */
static json_object *promote_failures(const struct crecord_promote *p)
{
	json_object *o = json_object_new_object();

	for (unsigned i = 0; o && i < THPS_PROMOTE_FAIL_MAX; i++)
		if (p->pass_failures[i])
			json_object_object_add(o, thps_promote_fail_name(i),
					       json_object_new_int64((int64_t)p->pass_failures[i]));
	return o;
}

static json_object *status_k8s(const char *path)
{
	struct thps_k8s_id id;
	json_object *o;

	if (thps_k8s_parse(path, &id) != 1 || !(o = json_object_new_object()))
		return NULL;
	json_object_object_add(o, "pod_uid", json_object_new_string(id.pod_uid));
	json_object_object_add(o, "container_id",
			       id.container_id[0] ? json_object_new_string(id.container_id) : NULL);
	json_object_object_add(o, "qos_class", json_object_new_string(thps_k8s_qos_name(id.qos)));
	return o;
}

/* {"namespace", "pod", "container_name", "labels": {...}}: the Kubernetes names of the
 * registration covering the cgroup, each only where it tells it; NULL when it tells none.
 * Bounded as the registration is (valid names, at most THPS_REGISTRATION_LABELS_MAX labels). */
static json_object *status_identity(const struct thps_registration *g)
{
	json_object *o, *labels;

	if (!g || (!g->k8s_namespace[0] && !g->pod[0] && !g->container[0] && !g->n_labels) ||
	    !(o = json_object_new_object()))
		return NULL;
	if (g->k8s_namespace[0])
		json_object_object_add(o, "namespace", json_name(g->k8s_namespace));
	if (g->pod[0])
		json_object_object_add(o, "pod", json_name(g->pod));
	if (g->container[0])
		json_object_object_add(o, "container_name", json_name(g->container));
	if (g->n_labels && (labels = json_object_new_object())) {
		for (size_t i = 0; i < g->n_labels && i < THPS_REGISTRATION_LABELS_MAX; i++)
			json_object_object_add(labels, g->labels[i].key,
					       json_name(g->labels[i].value));
		json_object_object_add(o, "labels", labels);
	}
	return o;
}

/* {"method", "why", "page_cache_safe"}: how a split policy gives waste back here and why not
 * process_madvise, so a refused process_madvise (no CAP_SYS_NICE, seccomp) shows. */
static json_object *status_give_back(const struct manager *m)
{
	const char *method = dglue_give_back_method(&m->caps, m->policies);
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "method", json_object_new_string(method));
	json_object_object_add(o, "why", json_object_new_string(m->caps.split_why));
	json_object_object_add(o, "page_cache_safe",
			       json_object_new_boolean(strcmp(method, "reclaim") != 0));
	return o;
}

/* What the last promote step looked at, and what its bounds left for later passes. */
static json_object *status_promote(const struct manager *m)
{
	const struct promote_step_figures *f = &m->promote_last;
	json_object *o = json_object_new_object(), *d = json_object_new_object();

	if (!o || !d) {
		json_object_put(o);
		json_object_put(d);
		return NULL;
	}
	json_object_object_add(o, "processes", json_object_new_int64((int64_t)f->processes));
	json_object_object_add(o, "maps_lines", json_object_new_int64((int64_t)f->maps_lines));
	json_object_object_add(o, "vmas", json_object_new_int64((int64_t)f->vmas));
	json_object_object_add(o, "windows", json_object_new_int64((int64_t)f->windows));
	json_object_object_add(o, "cpu_seconds", json_object_new_double(f->cpu_ns / 1e9));
	for (unsigned b = 0; b < PROMOTE_DEFERRED_MAX; b++)
		json_object_object_add(d, promote_deferred_name(b),
				       json_object_new_int64((int64_t)f->deferred[b]));
	json_object_object_add(o, "deferred", d);
	json_object_object_add(o, "resuming", json_object_new_int64((int64_t)m->n_promote_resume));
	return o;
}

/* What the last pass read and what it carried from the memo: 'thpshrink explain' prints it. */
static json_object *status_scan(const struct manager *m)
{
	const struct thps_scan_summary *s = &m->scan.summary;
	struct scan_memo_figures mf;
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	scan_memo_figures(m->memo, &mf);
	json_object_object_add(o, "folios", json_object_new_int64((int64_t)s->thps_scanned));
	json_object_object_add(o, "folios_read", json_object_new_int64((int64_t)s->folios_read));
	json_object_object_add(o, "folios_refreshed",
			       json_object_new_int64((int64_t)s->folios_refreshed));
	json_object_object_add(o, "folios_memo", json_object_new_int64((int64_t)s->folios_memo));
	json_object_object_add(o, "folios_trusted",
			       json_object_new_int64((int64_t)s->folios_trusted));
	json_object_object_add(o, "read_bytes", json_object_new_int64((int64_t)s->bytes_read));
	json_object_object_add(o, "untracked_bytes",
			       json_object_new_int64((int64_t)s->untracked_bytes));
	json_object_object_add(o, "cpu_seconds", json_object_new_double(s->cpu_ns / 1e9));
	json_object_object_add(o, "memo", json_object_new_boolean(mf.enabled));
	if (mf.enabled) {
		json_object_object_add(o, "memo_entries",
				       json_object_new_int64((int64_t)mf.entries));
		json_object_object_add(o, "memo_bytes", json_object_new_int64((int64_t)mf.bytes));
		json_object_object_add(o, "refresh_folios_per_pass",
				       json_object_new_int64((int64_t)mf.refresh_folios));
		json_object_object_add(o, "refresh_cost_us",
				       json_object_new_double(mf.refresh_cost_us));
		json_object_object_add(o, "full_refresh_seconds",
				       json_object_new_double(mf.full_refresh_seconds));
		if (mf.trust)
			json_object_object_add(o, "full_verify_seconds",
					       json_object_new_double(mf.full_verify_seconds));
	}
	return o;
}

static int write_status(struct manager *m)
{
	_cleanup_free_ char *dup = NULL;
	json_object *root = json_object_new_object(), *arr = json_object_new_array();
	char path[PATH_MAX];
	const char *text;
	int r;

	if (!root || !arr) {
		json_object_put(root);
		json_object_put(arr);
		return -ENOMEM;
	}
	json_object_object_add(root, "version", json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(root, "time", json_object_new_int64((int64_t)m->last_scan_ts));
	json_object_object_add(root, "dry_run", json_object_new_boolean(m->observe_only));
	if (m->caps.why[0])
		json_object_object_add(root, "observe_only_reason", json_name(m->caps.why));
	json_object_object_add(root, "scan", status_scan(m));
	if (dglue_policies_promote(m->policies))
		json_object_object_add(root, "promote", status_promote(m));
	json_object_object_add(root, "give_back", status_give_back(m));
	json_object_object_add(root, "cgroups", arr);
	for (size_t i = 0; i < m->recs.n; i++) {
		const struct crecord *c = &m->recs.v[i];
		const struct thps_cgroup_stats *s = thps_scan_find_path(&m->scan, c->path);
		json_object *e = json_object_new_object(), *k8s, *ident;

		if (!e)
			continue;
		json_object_object_add(e, "cgroup", json_name(c->path));
		if (s)
			json_object_object_add(e, "inode", json_object_new_int64((int64_t)s->ino));
		k8s = status_k8s(c->path);
		if (k8s)
			json_object_object_add(e, "kubernetes", k8s);
		ident = status_identity(reg_find(m, c->path));
		if (ident)
			json_object_object_add(e, "identity", ident);
		json_object_object_add(e, "policy", json_name(c->last.policy));
		json_object_object_add(e, "rule", json_name(c->last.rule));
		json_object_object_add(e, "action", json_name(dglue_action_name(c->last.action)));
		json_object_object_add(e, "reason", json_name(c->last.reason));
		json_object_object_add(e, "time", json_object_new_int64(c->last_time));
		json_object_object_add(e, "requested_bytes",
				       json_object_new_int64(c->last_result.requested));
		json_object_object_add(e, "given_back_bytes",
				       json_object_new_int64(c->last_result.given_back));
		json_object_object_add(e, "recollapsed_thps",
				       json_object_new_int64(c->recollapsed));
		json_object_object_add(e, "page_cache_evicted_bytes",
				       json_object_new_int64(c->last_result.file_lost));
		if (c->last_result.mechanism)
			json_object_object_add(e, "split_mechanism",
					       json_name(c->last_result.mechanism));
		if (c->prom.looked) {
			json_object *p = json_object_new_object();

			if (p) {
				json_object_object_add(p, "reason", json_name(c->prom.why));
				json_object_object_add(
				    p, "ranges_total",
				    json_object_new_int64((int64_t)c->prom.ranges));
				json_object_object_add(
				    p, "bytes_total",
				    json_object_new_int64((int64_t)c->prom.bytes));
				json_object_object_add(
				    p, "pass_found",
				    json_object_new_int64((int64_t)c->prom.pass_found));
				json_object_object_add(
				    p, "pass_collapsed",
				    json_object_new_int64((int64_t)c->prom.pass_collapsed));
				json_object_object_add(
				    p, "opportunity_bytes",
				    json_object_new_int64((int64_t)c->prom.opportunity_bytes));
				json_object_object_add(
				    p, "pass_held_back",
				    json_object_new_int64((int64_t)c->prom.pass_held_back));
				json_object_object_add(p, "pass_failures",
						       promote_failures(&c->prom));
				json_object_object_add(e, "promote", p);
			}
		}
		json_object_object_add(
		    e, "pinned_ranges",
		    json_object_new_int64((int64_t)thps_recollapse_n_pinned(&c->split)));
		if (s) {
			json_object_object_add(e, "thps",
					       json_object_new_int64(thps_hist_thps(&s->hist)));
			json_object_object_add(e, "lowutil_thps",
					       json_object_new_int64(c->last.lowutil_thps));
			json_object_object_add(e, "waste_bytes",
					       json_object_new_int64(c->last.waste_bytes));
			json_object_object_add(e, "partially_mapped_bytes",
					       json_object_new_int64(s->partial_unmapped_bytes));
		}
		json_object_array_add(arr, e);
	}
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY);
	dup = text ? strdup(text) : NULL;
	json_object_put(root);
	if (!dup)
		return -ENOMEM;
	r = thps_path(path, sizeof(path), m->o.state_dir, "status.json");
	if (r < 0)
		return r;
	(void)mkdir(m->o.state_dir, 0755);
	return write_file_atomic(path, dup, strlen(dup), 0644);
}

/* Writes status.json, logging a failure. Each write is also the heartbeat 'thpshrink probe
 * --daemon-alive' reads (the file's mtime): after a pass, when a pass is deferred, and every
 * THPS_HEARTBEAT_SEC while a long pass is on the scan thread. */
void heartbeat(struct manager *m)
{
	int r = write_status(m);

	if (r < 0)
		log_warning_errno(r, "Failed to write '%s/status.json', ignoring: %m",
				  m->o.state_dir);
}

/* The per-cgroup series of the records and registrations, as the metrics take them. */
struct series {
	struct thps_metrics_action *acts;
	size_t n_acts;
	struct thps_metrics_cgroup_count *rcs;
	size_t n_rcs;
	struct thps_metrics_promoted *proms;
	size_t n_proms;
	struct thps_metrics_container *ctrs;
	size_t n_ctrs;
};

static void series_free(struct series *s)
{
	free(s->acts);
	free(s->rcs);
	free(s->proms);
	free(s->ctrs);
}

/* Returns 0 or -ENOMEM (s then partly filled: series_free() it). */
static int series_collect(const struct manager *m, struct series *s)
{
	s->acts = calloc(m->recs.n * DGLUE_N_ACTING + 1, sizeof(*s->acts));
	s->rcs = calloc(m->recs.n + 1, sizeof(*s->rcs));
	s->proms = calloc(m->recs.n + 1, sizeof(*s->proms));
	/* From the registrations in force now: a container's series leaves with its file. */
	s->ctrs = calloc(m->regs.n + m->recs.n + 1, sizeof(*s->ctrs));
	if (!s->acts || !s->rcs || !s->proms || !s->ctrs)
		return -ENOMEM;
	for (size_t i = 0; i < m->recs.n; i++) {
		const struct crecord *c = &m->recs.v[i];

		for (size_t a = 0; a < DGLUE_N_ACTING; a++)
			if (c->act[a].count) {
				s->acts[s->n_acts] = c->act[a];
				s->acts[s->n_acts++].cgroup = c->path;
			}
		if (c->recollapsed)
			s->rcs[s->n_rcs++] =
			    (struct thps_metrics_cgroup_count){c->path, c->recollapsed};
		if (c->prom.looked)
			s->proms[s->n_proms++] = (struct thps_metrics_promoted){
			    .cgroup = c->path,
			    .ino = c->prom.ino,
			    .ranges = c->prom.ranges,
			    .bytes = c->prom.bytes,
			    .opportunity_bytes = c->prom.opportunity_bytes};
	}
	for (size_t i = 0; i < m->regs.n; i++) {
		const struct thps_registration *g = &m->regs.items[i];
		const struct crecord *rec = records_find(&m->recs, g->cgroup);

		s->ctrs[s->n_ctrs++] =
		    (struct thps_metrics_container){.cgroup = g->cgroup,
						    .id = g->id,
						    .policy = rec ? rec->last.policy : "",
						    .k8s_namespace = g->k8s_namespace,
						    .pod = g->pod,
						    .container_name = g->container};
	}
	/* A registration covers its container's subtree: a child cgroup (work its init moved
	 * there) is that container's too, under the policy it was judged by. */
	for (size_t i = 0; i < m->recs.n; i++) {
		const struct crecord *c = &m->recs.v[i];
		const struct thps_registration *g = reg_find(m, c->path);

		if (g && strcmp(g->cgroup, c->path))
			s->ctrs[s->n_ctrs++] =
			    (struct thps_metrics_container){.cgroup = c->path,
							    .id = g->id,
							    .policy = c->last.policy,
							    .k8s_namespace = g->k8s_namespace,
							    .pod = g->pod,
							    .container_name = g->container};
	}
	return 0;
}

/* Serves the exposition over HTTP and writes the textfile; a failure is logged, never fatal. */
static void serve(struct manager *m, const char *text, size_t len)
{
	int r;

	if (m->http) {
		r = http_server_publish(m->http, text, len);
		if (r < 0)
			log_warning_errno(
			    r, "Failed to publish the metrics, serving the previous pass: %m");
	}
	if (m->o.textfile) {
		r = write_file_atomic(m->o.textfile, text, len, 0644);
		if (r < 0)
			log_warning_errno(r, "Failed to write the textfile '%s', ignoring: %m",
					  m->o.textfile);
	}
}

int publish(struct manager *m)
{
	_cleanup_(series_free) struct series s = {0};
	struct thps_metrics_count pfail[THPS_PROMOTE_FAIL_MAX];
	struct thps_metrics_count pdefer[PROMOTE_DEFERRED_MAX];
	struct thps_metrics_flag flags[16];
	struct scan_memo_figures mf;
	_cleanup_free_ char *text = NULL;
	int len;

	if (series_collect(m, &s) < 0)
		return -ENOMEM;
	for (unsigned i = 0; i < THPS_PROMOTE_FAIL_MAX; i++)
		pfail[i] =
		    (struct thps_metrics_count){thps_promote_fail_name(i), m->promote_failures[i]};
	for (unsigned i = 0; i < PROMOTE_DEFERRED_MAX; i++)
		pdefer[i] =
		    (struct thps_metrics_count){promote_deferred_name(i), m->promote_deferred[i]};
	struct thps_metrics_input in = {
	    .version = PACKAGE_VERSION,
	    .scan = m->have_scan ? &m->scan : NULL,
	    .scans_total = m->scans,
	    .scan_errors_total = m->scan_errors,
	    .last_scan_timestamp = m->last_scan_ts,
	    .policies_loaded = dglue_policies_count(m->policies),
	    .policy_load_errors_total = m->policy_errors,
	    .policy_last_load_ok = m->policy_last_ok,
	    .actions = s.acts,
	    .n_actions = s.n_acts,
	    .decisions = m->decisions,
	    .n_decisions = m->n_decisions,
	    .recollapsed = s.rcs,
	    .n_recollapsed = s.n_rcs,
	    .promote_enabled = dglue_policies_promote(m->policies),
	    .promoted = s.proms,
	    .n_promoted = s.n_proms,
	    .promote_failures = pfail,
	    .n_promote_failures = THPS_PROMOTE_FAIL_MAX,
	    .promote_deferred = pdefer,
	    .n_promote_deferred = PROMOTE_DEFERRED_MAX,
	    .containers = s.ctrs,
	    .n_containers = s.n_ctrs,
	    .capabilities = flags,
	    .n_capabilities = dglue_caps_flags(&m->caps, flags, ELEMENTSOF(flags)),
	    .give_back_method = dglue_give_back_method(&m->caps, m->policies),
	    .dry_run = m->observe_only,
	    .proc_events_total = m->proc_events,
	    .proc_event_overflows_total = m->proc_overflows,
	    .max_cgroups = m->o.metrics_max_cgroups,
	};
	scan_memo_figures(m->memo, &mf);
	in.memo_enabled = mf.enabled;
	in.memo_entries = mf.entries;
	in.memo_bytes = mf.bytes;
	in.memo_full_refresh_seconds = mf.full_refresh_seconds;
	in.memo_trust = mf.trust;
	in.memo_full_verify_seconds = mf.full_verify_seconds;
	len = thps_metrics_format_alloc(&in, METRICS_MAX, &text);
	/* status.json does not depend on the exposition: 'thpshrink explain' and the liveness
	 * check read it whatever happened to the metrics. */
	heartbeat(m);
	if (len < 0)
		return log_error_errno(
		    len, "Failed to format the metrics, serving the previous pass: %m");
	serve(m, text, (size_t)len);
	return 0;
}

void notify_status(struct manager *m)
{
	const struct thps_cgroup_stats *t = &m->scan.total;

	sd_notifyf(0, "STATUS=%zu cgroups, %" PRIu64 " THPs, waste %.1f MiB, last action: %s",
		   m->scan.n_cgroups, thps_hist_thps(&t->hist),
		   (t->waste_bytes + t->partial_unmapped_bytes) / 1048576.0,
		   m->last_action[0] ? m->last_action : "none");
}
