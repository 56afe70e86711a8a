/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The promote step of a pass: each process's cgroup -> its policy; a policy with "promote" in
 * enforce mode collapses the process's dense ranges (promote.h) within the cgroup's budget for
 * the pass, an observe one only finds them. It walks /proc, not the scan: a cgroup under
 * THP=never has no THP for the scanner to see, and that is the cgroup promotion is for.
 * ENOMEM (no free huge page), or EAGAIN twice for a range, ends the step; a process the kernel
 * refused (EINVAL/EPERM) is remembered and never asked again. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "daemon-state.h"
#include "promote-pass.h"
#include "records.h"
#include "regwatch.h"
#include "cgroups.h"
#include "proc.h"

static bool refused_before(const struct manager *m, pid_t pid, uint64_t start)
{
	for (size_t i = 0; i < m->n_promote_refused; i++)
		if (m->promote_refused[i].pid == pid && m->promote_refused[i].starttime == start)
			return true;
	return false;
}

static void remember_refused(struct manager *m, pid_t pid, uint64_t start)
{
	size_t i = m->promote_refused_next++ % ELEMENTSOF(m->promote_refused);

	m->promote_refused[i].pid = pid;
	m->promote_refused[i].starttime = start;
	m->n_promote_refused = MIN(m->n_promote_refused + 1, ELEMENTSOF(m->promote_refused));
}

static void on_collapsed(void *userdata, pid_t pid, uint64_t starttime, uint64_t addr)
{
	struct crecord *rec = userdata;

	(void)thps_promoted_add(&rec->promoted, pid, starttime, addr);
}

/* The record of cgroup path, its per-pass promote figures reset on its first process. */
static struct crecord *record_for(struct manager *m, const char *path,
				  const struct dglue_promote_plan *plan, bool observe)
{
	struct crecord *rec = records_get(&m->recs, path);

	if (!rec)
		return NULL;
	rec->seen = true;
	if (rec->prom.pass != m->promote_pass) {
		rec->prom.pass = m->promote_pass;
		rec->prom.pass_found = rec->prom.pass_collapsed = rec->prom.pass_bytes = 0;
		rec->prom.opportunity_bytes = 0;
		rec->prom.pass_not_asked = rec->prom.pass_opted_out = 0;
		rec->prom.note[0] = 0;
	}
	if (!rec->prom.ino) {
		char dir[PATH_MAX];
		struct stat st;

		if (thps_path(dir, sizeof(dir), m->ctx.cgroup_root, "%s", path + 1) == 0 &&
		    stat(dir, &st) == 0)
			rec->prom.ino = (uint64_t)st.st_ino;
	}
	rec->prom.looked = true;
	rec->prom.observe = observe;
	rec->prom.max_bytes = plan->max_bytes;
	snprintf(rec->prom.policy, sizeof(rec->prom.policy), "%s", plan->policy);
	return rec;
}

/* One process of a promoting cgroup. Returns 1 to end the step (no free huge page, or this
 * daemon may not advise others), else 0. */
static int promote_process(struct manager *m, pid_t pid, const char *path,
			   const struct dglue_promote_plan *plan, bool observe)
{
	const uint64_t thp = m->geom.thp_size;
	struct crecord *rec = record_for(m, path, plan, observe);
	struct thps_promote_result res = {};
	struct thps_promote_opts opts;
	uint64_t start;
	int r;

	if (!rec)
		return 1;
	if (thps_proc_starttime(&m->ctx, pid, &start) < 0)
		return 0;
	if (refused_before(m, pid, start)) {
		rec->prom.pass_not_asked++;
		return 0;
	}
	opts = (struct thps_promote_opts){
	    .max_bytes = observe ? 0 : plan->max_bytes - MIN(plan->max_bytes, rec->prom.pass_bytes),
	    .dry_run = observe,
	    .use_scan = true,
	    .fallback_budget = UINT64_C(64) << 30,
	    .collapsed = on_collapsed,
	    .userdata = rec,
	};
	if (!observe && !opts.max_bytes) {
		snprintf(rec->prom.note, sizeof(rec->prom.note),
			 "the pass's budget is spent: the rest waits for the next pass");
		return 0;
	}
	r = thps_promote_pid(&m->ctx, &m->geom, pid, &opts, &res);
	if (r < 0) {
		if (!m->promote_warned)
			log_warning_errno(r, "cgroup '%s': cannot promote process %d: %m", path,
					  (int)pid);
		m->promote_warned = true;
		snprintf(rec->prom.note, sizeof(rec->prom.note), "cannot promote: %s",
			 strerror(-r));
		return r == -EPERM || r == -ENOSYS ? 1 : 0;
	}
	rec->prom.pass_found += res.ranges_found;
	rec->prom.pass_collapsed += res.ranges_collapsed;
	rec->prom.pass_bytes += res.ranges_collapsed * thp;
	rec->prom.ranges += res.ranges_collapsed;
	rec->prom.bytes += res.ranges_collapsed * thp;
	rec->prom.opportunity_bytes += (res.ranges_found - res.ranges_collapsed) * thp;
	for (unsigned i = 0; i < THPS_PROMOTE_FAIL_MAX; i++)
		m->promote_failures[i] += res.failures[i];
	if (res.failures[THPS_PROMOTE_FAIL_REFUSED] || res.failures[THPS_PROMOTE_FAIL_DISABLED])
		remember_refused(m, pid, start);
	rec->prom.pass_not_asked += res.failures[THPS_PROMOTE_FAIL_DISABLED];
	rec->prom.pass_opted_out += res.failures[THPS_PROMOTE_FAIL_OPTED_OUT];
	if (res.note[0] && !rec->prom.note[0])
		snprintf(rec->prom.note, sizeof(rec->prom.note), "%.190s", res.note);
	if (res.ranges_collapsed)
		log_info("cgroup '%s': promoted %" PRIu64 " dense ranges of process %d (%" PRIu64
			 " bytes) into THPs",
			 path, res.ranges_collapsed, (int)pid, res.ranges_collapsed * thp);
	if (res.stopped) {
		log_notice("cgroup '%s': promotion stops for this pass: %s", path, res.note);
		return 1;
	}
	return 0;
}

/* The cgroup's word for explain, once the step has seen all its processes. */
static void compose_why(const struct manager *m, struct crecord *rec)
{
	struct crecord_promote *p = &rec->prom;
	char asked[96] = "", opted[96] = "";

	if (p->pass_not_asked)
		snprintf(asked, sizeof(asked),
			 "; %" PRIu64
			 " processes not asked (PR_SET_THP_DISABLE, or refused before)",
			 p->pass_not_asked);
	/* the process's own choice, said so the operator does not look for a fault */
	if (p->pass_opted_out)
		snprintf(opted, sizeof(opted),
			 "; %" PRIu64 " ranges opted out (MADV_NOHUGEPAGE, or EXCEPT_ADVISED)",
			 p->pass_opted_out);
	if (p->observe)
		snprintf(p->why, sizeof(p->why),
			 "policy '%.64s' observes: %" PRIu64
			 " dense bytes found, not promoted (mode enforce promotes)%s%s",
			 p->policy, p->pass_found * m->geom.thp_size, asked, opted);
	else
		snprintf(p->why, sizeof(p->why),
			 "policy '%.64s': %" PRIu64 " dense ranges found, %" PRIu64
			 " promoted this pass (max_bytes_per_pass %" PRIu64 ")%s%s%s%.100s",
			 p->policy, p->pass_found, p->pass_collapsed, p->max_bytes, asked, opted,
			 p->note[0] ? "; " : "", p->note);
}

/* A small per-pass cache of cgroup -> plan: a cgroup holds many processes. */
struct plan_cache {
	char path[32][PATH_MAX];
	struct dglue_promote_plan plan[32];
	bool observe[32];
	size_t n, next;
};

static void plan_of(struct manager *m, struct plan_cache *pc, const char *path,
		    struct dglue_promote_plan *ret, bool *ret_observe)
{
	const struct thps_registration *reg;

	for (size_t i = 0; i < pc->n; i++)
		if (!strcmp(pc->path[i], path)) {
			*ret = pc->plan[i];
			*ret_observe = pc->observe[i];
			return;
		}
	reg = reg_find(m, path);
	dglue_promote_plan(m->policies, path, reg, ret);
	*ret_observe = m->observe_only || !ret->enforce;
	size_t i = pc->next++ % ELEMENTSOF(pc->path);
	snprintf(pc->path[i], sizeof(pc->path[i]), "%s", path);
	pc->plan[i] = *ret;
	pc->observe[i] = *ret_observe;
	pc->n = MIN(pc->n + 1, ELEMENTSOF(pc->path));
}

void pass_promote(struct manager *m)
{
	_cleanup_free_ struct plan_cache *pc = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	if (!dglue_policies_promote(m->policies) || !m->geom.thp_size)
		return;
	pc = calloc(1, sizeof(*pc));
	d = opendir(m->ctx.proc_root);
	if (!pc || !d) {
		log_warning_errno(pc ? negative_errno() : -ENOMEM, "Cannot promote: %m");
		return;
	}
	m->promote_pass++;
	while ((de = readdir(d))) {
		_cleanup_free_ char *text = NULL;
		struct dglue_promote_plan plan;
		char path[PATH_MAX];
		bool observe;
		uint64_t v;

		if (parse_u64(de->d_name, &v) < 0 || v == 0 || v > INT32_MAX ||
		    (pid_t)v == getpid())
			continue;
		if (read_file_at(1 << 16, &text, m->ctx.proc_root, "%s/cgroup", de->d_name) < 0 ||
		    thps_proc_cgroup_v2_path(text, path, sizeof(path)) < 0 || !strcmp(path, "/"))
			continue;
		if (m->o.cgroup && thps_cgroup_path_within(path, m->o.cgroup) != 1)
			continue;
		plan_of(m, pc, path, &plan, &observe);
		if (!plan.max_bytes)
			continue;
		if (promote_process(m, (pid_t)v, path, &plan, observe))
			break;
	}
	for (size_t i = 0; i < m->recs.n; i++)
		if (m->recs.v[i].prom.looked && m->recs.v[i].prom.pass == m->promote_pass)
			compose_why(m, &m->recs.v[i]);
}
