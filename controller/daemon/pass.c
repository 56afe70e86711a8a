/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The rest of a pass once the scan is in: per cgroup decide → act, the records the daemon
 * keeps per cgroup between passes, and the re-collapse accounting of splits. Runs on the
 * loop's thread (or inline with --once); the scan thread only fills a scan_job: the scan, then
 * the promote step planned when the job was made (promote-pass.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "actuator.h"
#include "fileio.h"
#include "log.h"
#include "daemon-state.h"
#include "pass.h"
#include "pass-act.h"
#include "pass-decide.h"
#include "promote-pass.h"
#include "publish.h"
#include "records.h"
#include "regwatch.h"
#include "thp.h"

/* A cgroup without THPs this pass keeps its record (and its action counters) while its
 * directory exists; a removed cgroup leaves the records, hence the metrics and status file. */
static bool cgroup_gone(const char *path, void *userdata)
{
	const struct manager *m = userdata;
	char p[PATH_MAX];

	if (!m->ctx.cgroup_root[0] || thps_path(p, sizeof(p), m->ctx.cgroup_root, "%s", path) < 0)
		return true;
	return access(p, F_OK) != 0;
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
		snprintf(m->decision_names[m->n_decisions], sizeof(m->decision_names[0]), "%s",
			 name);
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
	log_warning(
	    "cgroup '%s': khugepaged re-collapsed %zu THPs split earlier (max_ptes_none %s); "
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
static void remember_split(struct manager *m, struct crecord *rec,
			   const struct thps_cgroup_stats *c)
{
	int r = thps_recollapse_add(&rec->split, m->scan.ranges, m->scan.n_ranges, c->ino);

	if (r < 0)
		log_warning_errno(r,
				  "cgroup '%s': cannot remember the split ranges, re-collapse goes "
				  "uncounted: %m",
				  c->path);
}

/* Carries out the decision d for cgroup c, counts it in its record, and tells the engine what
 * it gave back (a split's given back less what khugepaged took again since). */
static void act_and_record(struct manager *m, struct crecord *rec,
			   const struct thps_cgroup_stats *c, const struct dglue_decision *d,
			   struct dglue_result *res)
{
	size_t a = d->action;
	int r;

	r = dglue_act(&m->ctx, &m->scan, c, d, &rec->split, &rec->promoted, res);
	rec->act[a].count++;
	rec->act[a].bytes_requested += res->requested;
	rec->act[a].bytes_given_back += res->given_back;
	rec->act[a].bytes_page_cache_evicted += res->file_lost;
	if (r < 0) {
		rec->act[a].failures++;
		count_decision(m, "failed");
		log_warning_errno(r, "cgroup '%s': %s of %" PRIu64 " bytes failed: %m%s%s", c->path,
				  dglue_action_name(d->action), d->amount, res->note[0] ? ": " : "",
				  res->note);
	} else if (a != DGLUE_ACT_OBSERVE) {
		/* the mechanism only where it says more than the action: "split (process_madvise)",
		 * "reclaim" (not "reclaim (reclaim)") */
		const char *mech =
		    res->mechanism && strcmp(res->mechanism, dglue_action_name(d->action))
			? res->mechanism
			: NULL;

		log_info("cgroup '%s': %s%s%s%s asked %" PRIu64 " bytes, gave back %" PRIu64
			 ", page cache %" PRIu64 " bytes lost%s%s",
			 c->path, dglue_action_name(d->action), mech ? " (" : "", mech ? mech : "",
			 mech ? ")" : "", res->requested, res->given_back, res->file_lost,
			 res->note[0] ? ": " : "", res->note);
		snprintf(m->last_action, sizeof(m->last_action), "%s %s %.1f MiB",
			 dglue_action_name(d->action), c->path, res->given_back / 1048576.0);
	}
	if (a == DGLUE_ACT_SPLIT && r >= 0 && res->requested)
		remember_split(m, rec, c);
	/* A split khugepaged undid gave nothing back in the end: charge the bytes
	 * it took again to this split, so that the engine's no-effect back-off
	 * (cooldown x2 per useless action) slows the split/re-collapse cycle down
	 * instead of splitting the same ranges every cooldown. */
	struct dglue_result net = *res;
	if (a == DGLUE_ACT_SPLIT) {
		net.given_back = res->given_back > rec->recollapse_debt
				     ? res->given_back - rec->recollapse_debt
				     : 0;
		rec->recollapse_debt = 0;
	}
	dglue_record(m->engine, c->path, d, &net);
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
		struct dglue_result res = {0};
		struct crecord *rec;
		bool changed;
		size_t rebuilt, pinned = 0;
		int r;

		if (!c->path)
			continue;
		rec = records_get(&m->recs, c->path);
		if (!rec) {
			log_error("Out of memory recording cgroup '%s'", c->path);
			break;
		}
		rec->seen = true;
		rebuilt = thps_recollapse_match(&rec->split, m->scan.ranges, m->scan.n_ranges,
						c->ino, &pinned);
		rec->recollapsed += rebuilt;
		rec->recollapse_debt += rebuilt * m->scan.geom.thp_size;
		const struct thps_registration *reg = reg_find(m, c->path);
		r = dglue_decide(&m->ctx, m->engine, m->policies, &m->scan, c, &rec->split, reg,
				 m->observe_only, now_usec, &d);
		if (r < 0) {
			log_warning_errno(r, "cgroup '%s': no decision%s: %m", c->path,
					  r == -ENOSPC ? " (too many cgroups tracked)" : "");
			count_decision(m, "failed");
			continue;
		}
		dglue_decision_fit(&d, m->caps.split_mech, m->caps.split_zero_freed);
		count_decision(m, d.dry ? "observe_only" : d.rule);
		if (rebuilt)
			log_recollapse(m, c->path, rebuilt, d.lowutil_max_bucket);
		if (pinned)
			log_notice(
			    "cgroup '%s': %zu ranges came back %u times after a split: they are "
			    "no longer split (%zu in all); only the advice above ends the tug "
			    "of war",
			    c->path, pinned, THPS_RECOLLAPSE_PIN_AFTER,
			    thps_recollapse_n_pinned(&rec->split));
		/* Within its policy's scan_interval the cgroup was scanned (the daemon's
		 * --interval sets what scanning costs) but is not decided on: its record keeps
		 * the last real decision, for status.json and explain. */
		if (!strcmp(d.rule, thps_rule_name(THPS_RULE_INTERVAL))) {
			log_debug("cgroup '%s': policy '%s': %s", c->path, d.policy, d.reason);
			continue;
		}
		changed = d.action != rec->last.action || strcmp(d.policy, rec->last.policy);
		thps_log(d.act || changed ? LOG_INFO : LOG_DEBUG, 0,
			 "cgroup '%s': policy '%s', THPs %" PRIu64 ", low-util %" PRIu64
			 ", waste %" PRIu64 " B, partially mapped %" PRIu64 " B → %s: %s",
			 c->path, d.policy, thps_hist_thps(&c->hist), d.lowutil_thps, d.waste_bytes,
			 c->partial_unmapped_bytes, dglue_action_name(d.action), d.reason);
		if (d.act)
			act_and_record(m, rec, c, &d, &res);
		rec->last = d;
		rec->last_result = res;
		rec->last_time = now;
	}
	thps_engine_end_pass(m->engine);
}

void pass_decide(struct manager *m, time_t now, const struct promote_job *promoted)
{
	for (size_t i = 0; i < m->recs.n; i++)
		m->recs.v[i].seen = false;
	thps_scan_sort(&m->scan);
	decide_and_act(m, now);
	promote_apply(m, promoted);
	records_prune(&m->recs, cgroup_gone, m);
}

struct scan_job *scan_job_new(struct manager *m)
{
	struct scan_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->ctx = m->ctx;
	j->opts = (struct thps_scan_opts){
	    .max_thps_per_sec = m->o.max_thps_per_sec,
	    .record_ranges = !m->observe_only,
	    .record_partial = !m->observe_only && (m->caps.split_mech == THPS_SPLIT_MECH_PMADVISE ||
						   m->caps.split_mech == THPS_SPLIT_MECH_DEBUGFS),
	    .record_max_bucket = dglue_policies_max_split_cut(m->policies)};
	if (m->o.cgroup) {
		snprintf(j->cgroup, sizeof(j->cgroup), "%s", m->o.cgroup);
		j->opts.cgroup = j->cgroup;
	}
	if (m->memo)
		scan_memo_plan(m->memo, &m->geom, dglue_policies_max_cut(m->policies), &j->opts);
	thps_scan_init(&j->scan, &m->geom);
	j->done_fd = -1;
	j->promote = promote_plan(m);
	return j;
}

void scan_job_run(struct scan_job *j)
{
	j->r = dglue_collect(&j->ctx, &j->opts, &j->scan, j->error, sizeof(j->error));
	promote_run(j->promote);
}

void scan_job_free(struct scan_job *j)
{
	if (!j)
		return;
	thps_scan_free(&j->scan);
	promote_job_free(j->promote);
	free(j);
}

/* Takes the finished job's scan and does the rest of the pass on the loop's thread. */
void pass_finish(struct manager *m, struct scan_job *j)
{
	struct timespec ts;

	m->scans++;
	m->last_pass_end = now_mono_usec();
	if (j->r < 0) {
		m->scan_errors++;
		log_warning_errno(j->r, "Scan incomplete (%s), deciding on what was collected",
				  j->error);
	}
	/* The global scan budget (THPs per second, CPU share) is charged with what the pass cost;
	 * pass_start() defers the next pass while it is in debt. */
	thps_engine_charge_scan(m->engine, m->last_pass_end, j->scan.summary.thps_scanned,
				j->scan.summary.cpu_ns / 1000 + promote_cpu_usec(j->promote));
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
	/* The scanner bounds its table of PTE-mapped folios: what it left out is said once when
	 * it starts and once when it ends (its size each pass: thpshrink_scan_untracked_bytes). */
	if (m->scan.summary.untracked_bytes && !m->untracked_said)
		log_warning("Scan: %" PRIu64 " bytes of PTE-mapped large folios (mTHPs) left "
			    "uncounted, over the pass's bound of %" PRIu32
			    " such folios; their cgroups' "
			    "figures are low by that much",
			    m->scan.summary.untracked_bytes, THPS_SCAN_MAX_PTE_FOLIOS);
	else if (!m->scan.summary.untracked_bytes && m->untracked_said)
		log_info("Scan: every PTE-mapped large folio counted again");
	m->untracked_said = m->scan.summary.untracked_bytes > 0;

	pass_decide(m, ts.tv_sec, j->promote);
	publish(m);
	notify_status(m);
}
