/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One pass: collect → per cgroup decide → act → record → publish (metrics, textfile, status
 * file, sd_notify STATUS). Everything the HTTP thread sees is a finished copy of the text. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <linux/netlink.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "actuator.h"
#include "alive.h"
#include "cgroups.h"
#include "daemon-glue.h"
#include "engine.h"
#include "http.h"
#include "fileio.h"
#include "log.h"
#include "manager.h"
#include "probe-measure.h"
#include "metrics.h"
#include "procev.h"
#include "recollapse.h"
#include "registrations.h"
#include "scan-memo.h"
#include "text.h"
#include "thp.h"

#define METRICS_MAX (64u << 20)
#define PENDING_PIDS_MAX 256
#define EXEC_DEBOUNCE_USEC (2 * 1000000ULL)

/* What the daemon keeps per cgroup between passes. */
struct crecord {
	char *path;
	bool seen;                        /* in the current pass */
	struct dglue_decision last;
	struct dglue_result last_result;
	time_t last_time;
	/* per action: observe, reclaim, split */
	struct thps_metrics_action act[DGLUE_N_ACTING];
	struct thps_recollapse split;     /* ranges the daemon split, to catch khugepaged rebuilding them */
	uint64_t recollapsed;             /* THPs rebuilt after a split, since the start */
	uint64_t recollapse_debt;         /* their bytes, not yet charged to the engine */
};


struct manager {
	struct thps_ctx ctx;
	struct manager_options o;
	sd_event *event;
	sd_event_source *timer, *debounce, *proc_src;
	sd_event_source *sig_term, *sig_int, *sig_hup;
	struct http_server *http;
	int proc_fd;
	sd_event_source *done_src;
	int done_fd;             /* eventfd: the scan thread finished */
	pthread_t thread;
	struct scan_job *job;    /* the pass in flight, NULL if none */
	bool again;              /* a pass was asked for while one ran */
	uint64_t last_pass_end;  /* CLOCK_MONOTONIC usec */

	struct thps_registration_list regs; /* containers the OCI hook registered */
	int regs_fd;                        /* inotify on the registrations dir, -1 if none */
	sd_event_source *regs_src, *regs_gc;
	sd_event_source *heartbeat_timer;

	struct dglue_caps caps;
	bool observe_only;
	struct dglue_policies *policies;
	uint64_t policy_errors;
	bool policy_last_ok;

	struct thps_geometry geom;
	struct thps_scan scan;
	bool have_scan;
	uint64_t scans, scan_errors;
	double last_scan_ts;
	struct scan_memo *memo; /* NULL with --exact-scan */
	char scan_error[256];

	struct crecord *rec;
	size_t n_rec;

	struct thps_engine *engine;
	uint64_t passes_deferred; /* by the global scan budget */
	struct thps_metrics_count decisions[24]; /* by the engine's rule name, "failed", ... */
	char decision_names[24][32];
	size_t n_decisions;
	uint64_t proc_events, proc_overflows;
	pid_t pending[PENDING_PIDS_MAX];
	size_t n_pending;
	char last_action[160];
};


static uint64_t now_mono_usec(void);

static struct crecord *record_get(struct manager *m, const char *path)
{
	struct crecord *r;

	for (size_t i = 0; i < m->n_rec; i++)
		if (!strcmp(m->rec[i].path, path))
			return &m->rec[i];
	r = reallocarray(m->rec, m->n_rec + 1, sizeof(*r));
	if (!r)
		return NULL;
	m->rec = r;
	r = &m->rec[m->n_rec];
	memset(r, 0, sizeof(*r));
	r->path = strdup(path);
	if (!r->path)
		return NULL;
	for (size_t a = 0; a < DGLUE_N_ACTING; a++)
		r->act[a].action = dglue_action_name((enum dglue_action)a);
	m->n_rec++;
	return r;
}

/* A cgroup without THPs this pass keeps its record (and its action counters) while its
 * directory exists; a removed cgroup leaves the records, hence the metrics and status file. */
static bool cgroup_exists(const struct manager *m, const char *path)
{
	char p[PATH_MAX];

	if (!m->ctx.cgroup_root[0] || thps_path(p, sizeof(p), m->ctx.cgroup_root, "%s", path) < 0)
		return false;
	return access(p, F_OK) == 0;
}

static void records_prune(struct manager *m)
{
	size_t j = 0;

	for (size_t i = 0; i < m->n_rec; i++) {
		if (!m->rec[i].seen && !cgroup_exists(m, m->rec[i].path)) {
			free(m->rec[i].path);
			thps_recollapse_clear(&m->rec[i].split);
			continue;
		}
		m->rec[j++] = m->rec[i];
	}
	m->n_rec = j;
}

/* A JSON string from a name a user may have picked (text.h): status.json stays valid JSON and
 * names a cgroup exactly as /metrics does. */
static json_object *json_name(const char *s)
{
	char clean[THPS_TEXT_MAX + 1];

	if (thps_text_sanitize(s, THPS_TEXT_MAX, clean, sizeof(clean)) < 0)
		clean[0] = '\0';
	return json_object_new_string(clean);
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
	json_object_object_add(o, "folios_refreshed", json_object_new_int64((int64_t)s->folios_refreshed));
	json_object_object_add(o, "folios_memo", json_object_new_int64((int64_t)s->folios_memo));
	json_object_object_add(o, "read_bytes", json_object_new_int64((int64_t)s->bytes_read));
	json_object_object_add(o, "cpu_seconds", json_object_new_double(s->cpu_ns / 1e9));
	json_object_object_add(o, "memo", json_object_new_boolean(mf.enabled));
	if (mf.enabled) {
		json_object_object_add(o, "memo_entries", json_object_new_int64((int64_t)mf.entries));
		json_object_object_add(o, "memo_bytes", json_object_new_int64((int64_t)mf.bytes));
		json_object_object_add(o, "refresh_folios_per_pass", json_object_new_int64((int64_t)mf.refresh_folios));
		json_object_object_add(o, "refresh_cost_us", json_object_new_double(mf.refresh_cost_us));
		json_object_object_add(o, "full_refresh_seconds", json_object_new_double(mf.full_refresh_seconds));
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
	json_object_object_add(root, "cgroups", arr);
	for (size_t i = 0; i < m->n_rec; i++) {
		const struct crecord *c = &m->rec[i];
		const struct thps_cgroup_stats *s = thps_scan_find_path(&m->scan, c->path);
		json_object *e = json_object_new_object();

		if (!e)
			continue;
		json_object_object_add(e, "cgroup", json_name(c->path));
		if (s)
			json_object_object_add(e, "inode", json_object_new_int64((int64_t)s->ino));
		json_object_object_add(e, "policy", json_name(c->last.policy));
		json_object_object_add(e, "rule", json_name(c->last.rule));
		json_object_object_add(e, "action", json_name(dglue_action_name(c->last.action)));
		json_object_object_add(e, "reason", json_name(c->last.reason));
		json_object_object_add(e, "time", json_object_new_int64(c->last_time));
		json_object_object_add(e, "requested_bytes", json_object_new_int64(c->last_result.requested));
		json_object_object_add(e, "given_back_bytes", json_object_new_int64(c->last_result.given_back));
		json_object_object_add(e, "recollapsed_thps", json_object_new_int64(c->recollapsed));
		if (s) {
			json_object_object_add(e, "thps", json_object_new_int64(thps_hist_thps(&s->hist)));
			json_object_object_add(e, "lowutil_thps", json_object_new_int64(c->last.lowutil_thps));
			json_object_object_add(e, "waste_bytes", json_object_new_int64(c->last.waste_bytes));
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
static void heartbeat(struct manager *m)
{
	int r = write_status(m);

	if (r < 0)
		log_warning_errno(r, "Failed to write '%s/status.json', ignoring: %m", m->o.state_dir);
}

static int on_heartbeat(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)usec;
	heartbeat(userdata);
	(void)sd_event_source_set_time_relative(s, THPS_HEARTBEAT_SEC * 1000000ULL);
	(void)sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	return 0;
}

static const struct crecord *record_find(const struct manager *m, const char *path)
{
	for (size_t i = 0; i < m->n_rec; i++)
		if (!strcmp(m->rec[i].path, path))
			return &m->rec[i];
	return NULL;
}

static int publish(struct manager *m)
{
	struct thps_metrics_action *acts = NULL;
	struct thps_metrics_container *ctrs = NULL;
	_cleanup_free_ struct thps_metrics_cgroup_count *rcs = NULL;
	size_t n_rcs = 0;
	struct thps_metrics_flag flags[16];
	struct scan_memo_figures mf;
	_cleanup_free_ char *text = NULL;
	size_t n_acts = 0;
	int len, r = 0;

	acts = calloc(m->n_rec * DGLUE_N_ACTING + 1, sizeof(*acts));
	if (!acts)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_rec; i++)
		for (size_t a = 0; a < DGLUE_N_ACTING; a++)
			if (m->rec[i].act[a].count) {
				acts[n_acts] = m->rec[i].act[a];
				acts[n_acts++].cgroup = m->rec[i].path;
			}
	rcs = calloc(m->n_rec + 1, sizeof(*rcs));
	if (!rcs) {
		free(acts);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n_rec; i++)
		if (m->rec[i].recollapsed)
			rcs[n_rcs++] = (struct thps_metrics_cgroup_count){ m->rec[i].path, m->rec[i].recollapsed };
	/* From the registrations in force now: a container's series leaves with its file. */
	ctrs = calloc(m->regs.n + 1, sizeof(*ctrs));
	if (!ctrs) {
		free(acts);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->regs.n; i++) {
		const struct thps_registration *g = &m->regs.items[i];
		const struct crecord *rec = record_find(m, g->cgroup);

		ctrs[i] = (struct thps_metrics_container){ .cgroup = g->cgroup, .id = g->id,
							   .policy = rec ? rec->last.policy : "" };
	}

	struct thps_metrics_input in = {
		.version = PACKAGE_VERSION,
		.scan = m->have_scan ? &m->scan : NULL,
		.scans_total = m->scans,
		.scan_errors_total = m->scan_errors,
		.last_scan_timestamp = m->last_scan_ts,
		.policies_loaded = dglue_policies_count(m->policies),
		.policy_load_errors_total = m->policy_errors,
		.policy_last_load_ok = m->policy_last_ok,
		.actions = acts,
		.n_actions = n_acts,
		.decisions = m->decisions,
		.n_decisions = m->n_decisions,
		.recollapsed = rcs,
		.n_recollapsed = n_rcs,
		.containers = ctrs,
		.n_containers = m->regs.n,
		.capabilities = flags,
		.n_capabilities = dglue_caps_flags(&m->caps, flags, ELEMENTSOF(flags)),
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
	len = thps_metrics_format_alloc(&in, METRICS_MAX, &text);
	free(acts);
	free(ctrs);
	/* status.json does not depend on the exposition: 'thpshrink explain' and the liveness
	 * check read it whatever happened to the metrics. */
	heartbeat(m);
	if (len < 0)
		return log_error_errno(len, "Failed to format the metrics, serving the previous pass: %m");
	if (m->http) {
		r = http_server_publish(m->http, text, len);
		if (r < 0)
			log_warning_errno(r, "Failed to publish the metrics, serving the previous pass: %m");
	}
	if (m->o.textfile) {
		r = write_file_atomic(m->o.textfile, text, len, 0644);
		if (r < 0)
			log_warning_errno(r, "Failed to write the textfile '%s', ignoring: %m", m->o.textfile);
	}
	return 0;
}

static void notify_status(struct manager *m)
{
	const struct thps_cgroup_stats *t = &m->scan.total;

	sd_notifyf(0, "STATUS=%zu cgroups, %" PRIu64 " THPs, waste %.1f MiB, last action: %s",
		   m->scan.n_cgroups, thps_hist_thps(&t->hist),
		   (t->waste_bytes + t->partial_unmapped_bytes) / 1048576.0,
		   m->last_action[0] ? m->last_action : "none");
}

static void reg_error(const char *dir, const char *name, int err, void *userdata)
{
	log_warning_errno(err, "Ignoring registration '%s/%s': %m", dir, name);
}

/* Reloads every registration: simpler than patching the list per event, and the directory
 * holds one small file per running container. */
static void regs_reload(struct manager *m)
{
	struct thps_registration_list l = { 0 };
	int r = thps_registrations_load_all(m->o.registrations_dir, reg_error, m, &l);

	if (r < 0) {
		log_warning_errno(r, "Failed to read the registrations in '%s', keeping %zu: %m",
				  m->o.registrations_dir, m->regs.n);
		return;
	}
	if ((size_t)r != m->regs.n)
		log_info("%d container registrations in '%s'", r, m->o.registrations_dir);
	thps_registration_list_free(&m->regs);
	m->regs = l;
}

/* The registration of a cgroup, or NULL. */
static const struct thps_registration *reg_find(const struct manager *m, const char *cgroup)
{
	for (size_t i = 0; i < m->regs.n; i++)
		if (!strcmp(m->regs.items[i].cgroup, cgroup))
			return &m->regs.items[i];
	return NULL;
}

static int on_regs(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;
	struct thps_registration_events ev = { 0 };
	int r = thps_registrations_handle_events(fd, &ev);

	if (r < 0)
		log_warning_errno(r, "Failed to read registration events, ignoring: %m");
	else if (r > 0 || ev.rescan)
		regs_reload(m);
	thps_registration_events_free(&ev);
	return 0;
}

static int on_regs_gc(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	int r = thps_registrations_gc(m->o.registrations_dir, &m->ctx);

	if (r > 0) {
		log_info("Removed %d registrations of containers that are gone", r);
		regs_reload(m);
	}
	(void)sd_event_source_set_time_relative(s, 60 * 1000000ULL);
	(void)sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	return 0;
}

static void setup_registrations(struct manager *m)
{
	int r;

	if (!m->o.registrations_dir || !strcmp(m->o.registrations_dir, "none"))
		return;
	r = thps_registrations_dir_ensure(m->o.registrations_dir);
	if (r < 0) {
		log_warning_errno(r, "Cannot create '%s', container registrations off: %m", m->o.registrations_dir);
		return;
	}
	/* Watch before loading: nothing written in between is missed. */
	r = thps_registrations_watch(m->o.registrations_dir);
	if (r < 0)
		log_warning_errno(r, "Cannot watch '%s', registrations are read every minute only: %m",
				  m->o.registrations_dir);
	else {
		m->regs_fd = r;
		r = sd_event_add_io(m->event, &m->regs_src, m->regs_fd, EPOLLIN, on_regs, m);
		if (r < 0)
			log_warning_errno(r, "Failed to watch registrations, ignoring: %m");
	}
	r = sd_event_add_time_relative(m->event, &m->regs_gc, CLOCK_MONOTONIC, 60 * 1000000ULL, 0,
				       on_regs_gc, m);
	if (r < 0)
		log_warning_errno(r, "Failed to add the registration GC timer, ignoring: %m");
	regs_reload(m);
}

/* Counts a decision under its name (the engine's rule, or "failed"), for the metrics. */
static void count_decision(struct manager *m, const char *name)
{
	for (size_t i = 0; i < m->n_decisions; i++)
		if (!strcmp(m->decisions[i].name, name)) {
			m->decisions[i].value++;
			return;
		}
	if (m->n_decisions < ELEMENTSOF(m->decisions)) {
		snprintf(m->decision_names[m->n_decisions], sizeof(m->decision_names[0]), "%s", name);
		m->decisions[m->n_decisions].name = m->decision_names[m->n_decisions];
		m->decisions[m->n_decisions++].value = 1;
	}
}

/* Once per cgroup and pass: what khugepaged undid and the one knob that stops it. */
static void log_recollapse(const struct manager *m, const char *cgroup, size_t n, unsigned bucket)
{
	unsigned mpn, advice = thps_max_ptes_none_advice(&m->scan.geom, bucket);
	char now[32] = "unknown";

	if (thps_max_ptes_none_get(&m->ctx, &mpn) == 0)
		snprintf(now, sizeof(now), "%u", mpn);
	log_warning("cgroup '%s': khugepaged re-collapsed %zu THPs split earlier (max_ptes_none %s); "
		    "--set-max-ptes-none %u (thpshrink reclaim) keeps THPs of buckets 0-%u split; "
		    "global trade-off: khugepaged then also leaves ranges with more than %u empty "
		    "subpages as small pages, for every process; the split action backs off meanwhile. "
		    "Per workload instead (Linux 6.18+): the program calls prctl(PR_SET_THP_DISABLE, 1, "
		    "PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) (or its unit sets systemd's MemoryTHP=) so "
		    "that only ranges it madvises get THPs",
		    cgroup, n, now, advice, bucket, advice);
}

/* Remembers this cgroup's low-util ranges after a split. The ones the actuator did not reach
 * (byte budget, changed) come back under the same PFN and are forgotten then, not counted. */
static void remember_split(struct manager *m, struct crecord *rec, const struct thps_cgroup_stats *c)
{
	int r = thps_recollapse_add(&rec->split, m->scan.ranges, m->scan.n_ranges, c->ino);

	if (r < 0)
		log_warning_errno(r, "cgroup '%s': cannot remember the split ranges, re-collapse goes "
				  "uncounted: %m", c->path);
}

static void decide_and_act(struct manager *m, time_t now)
{
	struct timespec mono;
	uint64_t now_usec;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	now_usec = (uint64_t)mono.tv_sec * 1000000ULL + mono.tv_nsec / 1000;
	thps_engine_begin_pass(m->engine);
	for (size_t i = 0; i < m->scan.n_cgroups; i++) {
		const struct thps_cgroup_stats *c = &m->scan.cgroups[i];
		struct dglue_decision d;
		struct dglue_result res = { 0 };
		struct crecord *rec;
		bool changed;
		size_t a, rebuilt;
		int r;

		if (!c->path)
			continue;
		rec = record_get(m, c->path);
		if (!rec) {
			log_error("Out of memory recording cgroup '%s'", c->path);
			break;
		}
		rec->seen = true;
		rebuilt = thps_recollapse_match(&rec->split, m->scan.ranges, m->scan.n_ranges, c->ino);
		rec->recollapsed += rebuilt;
		rec->recollapse_debt += rebuilt * m->scan.geom.thp_size;
		const struct thps_registration *reg = reg_find(m, c->path);
		r = dglue_decide(&m->ctx, m->engine, m->policies, &m->scan, c,
				 reg ? reg->id : NULL, reg ? reg->policy : NULL,
				 m->observe_only || (reg && !strcmp(reg->mode, "observe")), now_usec, &d);
		if (r < 0) {
			log_warning_errno(r, "cgroup '%s': no decision%s: %m", c->path,
					  r == -ENOSPC ? " (too many cgroups tracked)" : "");
			count_decision(m, "failed");
			continue;
		}
		count_decision(m, d.dry ? "observe_only" : d.rule);
		if (rebuilt)
			log_recollapse(m, c->path, rebuilt, d.lowutil_max_bucket);
		changed = d.action != rec->last.action || strcmp(d.policy, rec->last.policy);
		thps_log(d.act || changed ? LOG_INFO : LOG_DEBUG, 0,
			 "cgroup '%s': policy '%s', THPs %" PRIu64 ", low-util %" PRIu64 ", waste %" PRIu64
			 " B, partially mapped %" PRIu64 " B → %s: %s",
			 c->path, d.policy, thps_hist_thps(&c->hist), d.lowutil_thps, d.waste_bytes,
			 c->partial_unmapped_bytes, dglue_action_name(d.action), d.reason);
		if (d.act) {
			a = d.action;
			r = dglue_act(&m->ctx, &m->scan, c, &d, &res);
			rec->act[a].count++;
			rec->act[a].bytes_requested += res.requested;
			rec->act[a].bytes_given_back += res.given_back;
			if (r < 0) {
				rec->act[a].failures++;
				count_decision(m, "failed");
				log_warning_errno(r, "cgroup '%s': %s of %" PRIu64 " bytes failed: %m%s%s", c->path,
						  dglue_action_name(d.action), d.amount, res.note[0] ? ": " : "", res.note);
			} else if (a != DGLUE_ACT_OBSERVE) {
				log_info("cgroup '%s': %s asked %" PRIu64 " bytes, gave back %" PRIu64 "%s%s",
					 c->path, dglue_action_name(d.action), res.requested, res.given_back,
					 res.note[0] ? ": " : "", res.note);
				snprintf(m->last_action, sizeof(m->last_action), "%s %s %.1f MiB", dglue_action_name(d.action),
					 c->path, res.given_back / 1048576.0);
			}
			if (a == DGLUE_ACT_SPLIT && r >= 0 && res.requested)
				remember_split(m, rec, c);
			/* A split khugepaged undid gave nothing back in the end: charge the bytes it
			 * took again to this split, so that the engine's no-effect back-off (cooldown
			 * x2 per useless action) slows the split/re-collapse cycle down instead of
			 * splitting the same ranges every cooldown. */
			struct dglue_result net = res;
			if (a == DGLUE_ACT_SPLIT) {
				net.given_back = res.given_back > rec->recollapse_debt ?
							 res.given_back - rec->recollapse_debt : 0;
				rec->recollapse_debt = 0;
			}
			dglue_record(m->engine, c->path, &d, &net);
		}
		rec->last = d;
		rec->last_result = res;
		rec->last_time = now;
	}
	thps_engine_end_pass(m->engine);
}

/* One collection, run either inline (--once) or on the scan thread: it reads only its job. */
struct scan_job {
	struct thps_ctx ctx;
	struct thps_scan_opts opts;
	char cgroup[PATH_MAX];
	struct thps_scan scan;
	int r;
	char error[256];
	int done_fd; /* eventfd the thread signals; -1 inline */
};

static struct scan_job *scan_job_new(struct manager *m)
{
	struct scan_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->ctx = m->ctx;
	j->opts = (struct thps_scan_opts){ .max_thps_per_sec = m->o.max_thps_per_sec,
					   .record_ranges = !m->observe_only,
					   .record_max_bucket = dglue_policies_max_split_cut(m->policies) };
	if (m->o.cgroup) {
		snprintf(j->cgroup, sizeof(j->cgroup), "%s", m->o.cgroup);
		j->opts.cgroup = j->cgroup;
	}
	if (m->memo)
		scan_memo_plan(m->memo, &m->geom, dglue_policies_max_cut(m->policies), &j->opts);
	thps_scan_init(&j->scan, &m->geom);
	j->done_fd = -1;
	return j;
}

static void scan_job_run(struct scan_job *j)
{
	j->r = dglue_collect(&j->ctx, &j->opts, &j->scan, j->error, sizeof(j->error));
}

/* Takes the finished job's scan and does the rest of the pass on the loop's thread. */
static void pass_finish(struct manager *m, struct scan_job *j)
{
	struct timespec ts;

	m->scans++;
	m->last_pass_end = now_mono_usec();
	if (j->r < 0) {
		m->scan_errors++;
		log_warning_errno(j->r, "Scan incomplete (%s), deciding on what was collected", j->error);
	}
	/* The global scan budget (THPs per second, CPU share) is charged with what the pass cost;
	 * pass_start() defers the next pass while it is in debt. */
	thps_engine_charge_scan(m->engine, m->last_pass_end, j->scan.summary.thps_scanned,
				j->scan.summary.cpu_ns / 1000);
	if (m->memo)
		scan_memo_learn(m->memo, &j->scan.summary);
	thps_scan_free(&m->scan);
	m->scan = j->scan;
	memset(&j->scan, 0, sizeof(j->scan));
	m->have_scan = true;
	clock_gettime(CLOCK_REALTIME, &ts);
	m->last_scan_ts = ts.tv_sec + ts.tv_nsec / 1e9;
	log_debug("Pass done: %zu cgroups, %" PRIu64 " processes, %.3f s", m->scan.n_cgroups,
		  m->scan.summary.procs_scanned, m->scan.summary.wall_ns / 1e9);

	for (size_t i = 0; i < m->n_rec; i++)
		m->rec[i].seen = false;
	thps_scan_sort(&m->scan);
	decide_and_act(m, ts.tv_sec);
	records_prune(m);
	publish(m);
	notify_status(m);
}

int manager_pass(struct manager *m, const char *why)
{
	struct scan_job *j = scan_job_new(m);

	if (!j)
		return log_error_errno(-ENOMEM, "Out of memory");
	log_debug("Pass (%s)", why);
	scan_job_run(j);
	pass_finish(m, j);
	free(j);
	return 0;
}

static void *scan_thread(void *arg)
{
	struct scan_job *j = arg;
	uint64_t one = 1;

	scan_job_run(j);
	if (write(j->done_fd, &one, sizeof(one)) < 0)
		abort(); /* an eventfd write cannot fail short of a bug; the loop would hang */
	return NULL;
}

static void rearm_timer(struct manager *m)
{
	int r = sd_event_source_set_time_relative(m->timer, m->o.interval_usec);

	if (r >= 0)
		r = sd_event_source_set_enabled(m->timer, SD_EVENT_ONESHOT);
	if (r < 0)
		log_error_errno(r, "Failed to re-arm the scan timer, no more periodic passes: %m");
}

/* Starts a pass on the scan thread, unless one runs (then one more follows it). The loop
 * stays free for signals and the watchdog while the scanner reads memory. */
static void pass_start(struct manager *m, const char *why)
{
	struct scan_job *j;
	int r;

	if (m->job) {
		m->again = true;
		return;
	}
	if (m->have_scan && thps_engine_scan_budget(m->engine, now_mono_usec()) == 0) {
		/* 1,000 cgroups or a huge machine must not make the daemon a noisy neighbour. */
		log_debug("Pass (%s) deferred: the scan budget (CPU share, THPs per second) is spent", why);
		m->passes_deferred++;
		heartbeat(m);
		rearm_timer(m);
		return;
	}
	j = scan_job_new(m);
	if (!j) {
		log_error("Out of memory starting a pass, retrying at the next interval");
		rearm_timer(m);
		return;
	}
	j->done_fd = m->done_fd;
	log_debug("Pass (%s)", why);
	r = -pthread_create(&m->thread, NULL, scan_thread, j);
	if (r < 0) {
		log_warning_errno(r, "Failed to start the scan thread, scanning inline: %m");
		scan_job_run(j);
		pass_finish(m, j);
		thps_scan_free(&j->scan);
		free(j);
		rearm_timer(m);
		return;
	}
	m->job = j;
}

static int on_scan_done(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 || !m->job)
		return 0;
	pthread_join(m->thread, NULL);
	pass_finish(m, m->job);
	thps_scan_free(&m->job->scan);
	free(m->job);
	m->job = NULL;
	if (m->again) {
		m->again = false;
		pass_start(m, "queued");
	} else
		rearm_timer(m);
	return 0;
}

static int reload_policies(struct manager *m, bool at_start)
{
	struct dglue_policies *p = NULL;
	char err[512];
	int r;

	/* A missing directory at start means "nothing configured"; one that vanishes later is a
	 * fault (an unmounted volume, a config tool mid-rename): the set in force stays. */
	if (!at_start && access(m->o.policy_dir, F_OK) < 0 && errno == ENOENT) {
		r = -ENOENT;
		snprintf(err, sizeof(err), "'%s' is gone", m->o.policy_dir);
	} else
		r = dglue_policies_load(m->o.policy_dir, &p, err, sizeof(err));
	if (r < 0) {
		m->policy_errors++;
		m->policy_last_ok = false;
		if (at_start)
			return log_error_errno(r, "Failed to load the policies: %s", err);
		log_error_errno(r, "Policy reload rejected, keeping the %zu policies in force: %s",
				dglue_policies_count(m->policies), err);
		return r;
	}
	dglue_policies_free(m->policies);
	m->policies = p;
	m->policy_last_ok = true;
	log_info("Loaded %d policies from '%s'", r, m->o.policy_dir);
	return 0;
}

/* The timer is re-armed when a pass ends, so passes never pile up on a slow machine. */
static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	pass_start(userdata, "timer");
	return 0;
}

static int on_debounce(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	log_debug("Prompt pass for %zu new programs", m->n_pending);
	m->n_pending = 0;
	pass_start(m, "exec");
	return 0;
}

static uint64_t now_mono_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

/* A burst of execs makes one pass, EXEC_DEBOUNCE_USEC after the first, and never sooner than
 * half an interval after the last pass ended: on a busy host (builds, cron) process events
 * must not turn into back-to-back full scans. */
static void schedule_prompt(struct manager *m)
{
	int enabled = SD_EVENT_OFF;
	uint64_t now = now_mono_usec(), at = now + EXEC_DEBOUNCE_USEC;

	if (sd_event_source_get_enabled(m->debounce, &enabled) >= 0 && enabled != SD_EVENT_OFF)
		return;
	if (m->job)
		return; /* the pass in flight re-arms the timer; the next one sees the new process */
	if (m->last_pass_end + m->o.interval_usec / 2 > at)
		at = m->last_pass_end + m->o.interval_usec / 2;
	if (sd_event_source_set_time(m->debounce, at) < 0 ||
	    sd_event_source_set_enabled(m->debounce, SD_EVENT_ONESHOT) < 0)
		log_warning("Failed to arm the prompt-scan timer, the next periodic pass will see it");
}

static int on_proc(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;
	struct thps_proc_event ev[64];
	char buf[8192] __attribute__((aligned(8)));

	for (int round = 0; round < 64; round++) {
		struct sockaddr_nl from = { 0 };
		socklen_t fromlen = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fromlen);
		int k;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			if (errno == ENOBUFS) {
				m->proc_overflows++;
				log_warning("The proc connector socket buffer overflowed (events lost); "
					    "rescanning everything");
				schedule_prompt(m);
				continue;
			}
			return log_warning_errno(negative_errno(), "Failed to read process events, ignoring: %m");
		}
		/* Only the kernel (port 0) speaks for the proc connector; a local process can unicast
		 * to our port too. */
		if (fromlen < sizeof(from) || from.nl_family != AF_NETLINK || from.nl_pid != 0)
			continue;
		k = thps_proc_events_parse(buf, n, ev, ELEMENTSOF(ev));
		if (k < 0)
			continue;
		for (int i = 0; i < k; i++) {
			m->proc_events++;
			if (ev[i].type == THPS_PROC_EXEC) {
				if (m->n_pending < PENDING_PIDS_MAX)
					m->pending[m->n_pending++] = ev[i].pid;
				schedule_prompt(m);
			} else {
				for (size_t j = 0; j < m->n_pending; j++)
					if (m->pending[j] == ev[i].pid) {
						m->pending[j] = m->pending[--m->n_pending];
						break;
					}
			}
		}
	}
	return 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;

	if (si->ssi_signo == SIGHUP) {
		sd_notify(0, "RELOADING=1");
		log_info("SIGHUP: reloading policies from '%s'", m->o.policy_dir);
		reload_policies(m, false);
		publish(m); /* the policy figures change now, not at the next pass */
		sd_notify(0, "READY=1");
		return 0;
	}
	log_info("%s: stopping", strsignal(si->ssi_signo));
	sd_notify(0, "STOPPING=1");
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void setup_proc_events(struct manager *m)
{
	int fd = thps_proc_connector_open(), r;

	if (fd < 0) {
		log_notice("Process events unavailable (%s%s); polling every %.0fs instead",
			   strerror(-fd),
			   fd == -EPERM || fd == -EPROTONOSUPPORT || fd == -ECONNREFUSED
				   ? ": not in the initial network namespace or no proc connector"
				   : "",
			   m->o.interval_usec / 1e6);
		return;
	}
	m->proc_fd = fd;
	r = sd_event_add_io(m->event, &m->proc_src, fd, EPOLLIN, on_proc, m);
	if (r < 0) {
		log_warning_errno(r, "Failed to watch process events, polling instead: %m");
		return;
	}
	(void)sd_event_source_set_description(m->proc_src, "proc-connector");
	log_info("Listening to process events (exec triggers a prompt scan)");
}

static int setup_http(struct manager *m)
{
	int n = sd_listen_fds(true), r;

	if (n > 1)
		return log_error_errno(-EINVAL, "Got %d sockets from systemd, expected one", n);
	if (n == 1) {
		r = http_server_start(NULL, SD_LISTEN_FDS_START, &m->http);
		if (r < 0)
			return log_error_errno(r, "Failed to serve /metrics on the systemd socket: %m");
		log_info("Serving /metrics on the socket passed by systemd");
		return 0;
	}
	if (!m->o.listen || !strcmp(m->o.listen, "none"))
		return 0;
	r = http_server_start(m->o.listen, -1, &m->http);
	if (r < 0)
		return log_error_errno(r, "Failed to listen on '%s'%s: %m", m->o.listen,
				       r == -EINVAL ? " (expected ADDR:PORT, e.g. 127.0.0.1:9477)" : "");
	log_info("Serving /metrics on %s", m->o.listen);
	return 0;
}

/* What a split and memory.reclaim free here, measured on canary memory of our own (a scratch
 * cgroup, removed afterwards; nothing where there is none), logged once at start. */
static void measure_at_start(const struct thps_ctx *ctx, const struct thps_geometry *g)
{
	_cleanup_free_ struct thps_measure *ms = calloc(1, sizeof(*ms));

	if (!ms || thps_probe_measure(ctx, g, false, ms) < 0)
		return;
	if (!ms->ran) {
		log_info("Probe: %s", ms->why);
		return;
	}
	for (size_t i = 0; i < ms->n; i++) {
		const struct thps_measure_size *z = &ms->sizes[i];

		log_info("Probe measured %" PRIu64 " KiB folios [%s]: split freed %d %% of %" PRIu64
			 " zero bytes (%u folios), memory.reclaim %d %% of %" PRIu64 "%s%s",
			 z->size >> 10, z->mode, thps_measure_split_pct(z), z->zero_bytes, z->folios,
			 thps_measure_reclaim_pct(z), z->reclaim_zero_bytes, z->note[0] ? "; " : "",
			 z->note);
	}
}

int manager_new(const struct thps_ctx *ctx, const struct manager_options *o, struct manager **ret)
{
	struct manager *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return log_error_errno(-ENOMEM, "Out of memory");
	m->ctx = *ctx;
	m->o = *o;
	m->proc_fd = -1;
	m->done_fd = -1;
	m->regs_fd = -1;
	m->last_pass_end = now_mono_usec(); /* no prompt pass right behind the first one */
	*ret = m; /* manager_free() cleans up whatever got built */

	r = thps_geometry_load(ctx, &m->geom);
	if (r < 0) {
		log_warning_errno(r, "Cannot read the THP size (%s), assuming 4 KiB pages and 2 MiB THPs: %m",
				  r == -ENOENT ? "no THP support" : "bad hpage_pmd_size");
		thps_geometry_default(&m->geom);
	}
	thps_scan_init(&m->scan, &m->geom);
	if (!o->exact_scan) {
		r = scan_memo_new(o->refresh_cpu_percent > 0 ? o->refresh_cpu_percent : SCAN_MEMO_REFRESH_CPU_DEFAULT,
				  o->interval_usec, &m->memo);
		if (r < 0)
			return log_error_errno(r, "Failed to set up the scan memo: %m");
	}

	/* Actuators and the probe need the hierarchy's mount and version; find them once. */
	r = thps_cgroups_find_mount(&m->ctx);
	if (r < 0)
		log_notice("No memory cgroup hierarchy found (%s): figures per cgroup are named by inode, "
			   "nothing can be acted on", strerror(-r));
	else
		log_info("Memory cgroups: cgroup v%d at '%s'", m->ctx.cgroup_version, m->ctx.cgroup_root);
	dglue_probe(&m->ctx, &m->caps);
	log_info("Kernel: cgroup2 memory %s, memory.reclaim %s, debugfs split_huge_pages %s, "
		 "thp_utilization %s, pagemap %s, kpageflags %s",
		 m->caps.cgroup2_memory ? "yes" : "no", m->caps.memory_reclaim ? "yes" : "no",
		 m->caps.split_huge_pages ? "yes" : "no", m->caps.thp_utilization ? "yes" : "no",
		 m->caps.pagemap ? "yes" : "no", m->caps.kpageflags ? "yes" : "no");
	log_info("Sources: %s", dglue_sources_description());
	measure_at_start(&m->ctx, &m->geom);
	m->observe_only = o->dry_run;
	if (o->dry_run)
		log_notice("--dry-run: observing every cgroup whatever the policies say");
	else if (m->caps.why[0]) {
		m->observe_only = true;
		log_notice("Observe-only: %s", m->caps.why);
	}

	r = reload_policies(m, true);
	if (r < 0)
		return r;
	r = dglue_engine_new(o->scan_cpu_percent, &m->engine);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the decision engine: %m");

	r = sd_event_default(&m->event);
	if (r < 0)
		return log_error_errno(r, "Failed to create the event loop: %m");
	if (o->once)
		return 0;

	r = sd_event_add_signal(m->event, &m->sig_term, SIGTERM, on_signal, m);
	if (r >= 0)
		r = sd_event_add_signal(m->event, &m->sig_int, SIGINT, on_signal, m);
	if (r >= 0)
		r = sd_event_add_signal(m->event, &m->sig_hup, SIGHUP, on_signal, m);
	if (r < 0)
		return log_error_errno(r, "Failed to watch signals: %m");

	m->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->done_fd < 0)
		return log_error_errno(negative_errno(), "Failed to create an eventfd: %m");
	r = sd_event_add_io(m->event, &m->done_src, m->done_fd, EPOLLIN, on_scan_done, m);
	if (r < 0)
		return log_error_errno(r, "Failed to watch the scan thread: %m");
	r = sd_event_add_time_relative(m->event, &m->timer, CLOCK_MONOTONIC, 0, 0, on_timer, m);
	if (r < 0)
		return log_error_errno(r, "Failed to add the scan timer: %m");
	(void)sd_event_source_set_description(m->timer, "scan-timer");
	r = sd_event_add_time_relative(m->event, &m->debounce, CLOCK_MONOTONIC, EXEC_DEBOUNCE_USEC, 0,
				       on_debounce, m);
	if (r < 0)
		return log_error_errno(r, "Failed to add the prompt-scan timer: %m");
	(void)sd_event_source_set_description(m->debounce, "exec-debounce");
	(void)sd_event_source_set_enabled(m->debounce, SD_EVENT_OFF);

	r = sd_event_add_time_relative(m->event, &m->heartbeat_timer, CLOCK_MONOTONIC,
				       THPS_HEARTBEAT_SEC * 1000000ULL, 0, on_heartbeat, m);
	if (r < 0)
		return log_error_errno(r, "Failed to add the heartbeat timer: %m");
	(void)sd_event_source_set_description(m->heartbeat_timer, "heartbeat");

	r = sd_event_set_watchdog(m->event, true);
	if (r > 0)
		log_info("Watchdog enabled");

	setup_proc_events(m);
	setup_registrations(m);
	/* Last: the HTTP thread inherits the blocked signal mask set up by main(). */
	return setup_http(m);
}

int manager_run(struct manager *m)
{
	int r;

	heartbeat(m); /* alive before the first pass, which may take long on a big machine */
	sd_notify(0, "READY=1");
	r = sd_event_loop(m->event);
	if (r < 0)
		return log_error_errno(r, "Event loop failed: %m");
	return 0;
}

void manager_free(struct manager *m)
{
	if (!m)
		return;
	if (m->job) {
		/* The scanner only reads; waiting for it could outlast TimeoutStopSec. Leave it to
		 * process exit, with everything it touches. */
		static struct manager *abandoned; /* reachable, so leak checkers stay quiet */

		log_info("Leaving the scan in progress to process exit");
		http_server_stop(m->http);
		m->http = NULL;
		abandoned = m;
		(void)abandoned;
		return;
	}
	http_server_stop(m->http);
	sd_event_source_unref(m->done_src);
	if (m->done_fd >= 0)
		close(m->done_fd);
	sd_event_source_unref(m->timer);
	sd_event_source_unref(m->debounce);
	sd_event_source_unref(m->proc_src);
	sd_event_source_unref(m->sig_term);
	sd_event_source_unref(m->sig_int);
	sd_event_source_unref(m->sig_hup);
	sd_event_unref(m->event);
	if (m->proc_fd >= 0)
		close(m->proc_fd);
	sd_event_source_unref(m->regs_src);
	sd_event_source_unref(m->regs_gc);
	sd_event_source_unref(m->heartbeat_timer);
	if (m->regs_fd >= 0)
		close(m->regs_fd);
	thps_registration_list_free(&m->regs);
	for (size_t i = 0; i < m->n_rec; i++) {
		free(m->rec[i].path);
		thps_recollapse_clear(&m->rec[i].split);
	}
	free(m->rec);
	thps_scan_free(&m->scan);
	scan_memo_free(m->memo);
	dglue_policies_free(m->policies);
	thps_engine_free(m->engine);
	free(m);
}
