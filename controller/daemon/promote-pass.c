/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The promote step of a pass: each process's cgroup -> its policy; a policy with "promote" in
 * enforce mode collapses the process's dense ranges (promote.h) within the cgroup's budget for
 * the pass, an observe one only finds them. It walks /proc, not the scan: a cgroup under
 * THP=never has no THP for the scanner to see, and that is the cgroup promotion is for.
 *
 * Who owns what: promote_plan() runs on the loop and copies into the job everything the step
 * needs from the manager (plans, refusals), so a SIGHUP that swaps the policies meanwhile
 * cannot pull anything from under it. promote_run() runs on the pass's thread and writes only
 * the job and m->backoff; the loop never touches m->backoff, and one pass runs at a time
 * (m->job), so the backoff has one user at a time, ordered by pthread_create/join. The job's
 * results reach the records only in promote_apply(), on the loop, after the join. Only the
 * cancel flag is shared while the thread runs, and it is atomic.
 *
 * A process the kernel refused (EINVAL/EPERM, PR_SET_THP_DISABLE) is remembered and never
 * asked again; any other failure of a process ends only that process. ENOMEM (no free huge
 * page: the next process would get none either) or a daemon that may not advise others ends
 * the step. A range the daemon collapsed that comes back dense but not a THP waits 1, 2, 4 ...
 * passes before it is collapsed again (promote-backoff.h).
 *
 * However many processes and VMAs tenants map, a step's work is bounded (promote-bounds.h
 * has the figures): a process's walk looks at PROMOTE_PROCESS_VMAS_MAX VMAs and
 * PROMOTE_PROCESS_WINDOWS_MAX candidate windows at most and resumes at the next pass where it
 * stopped; the step stops once it has read PROMOTE_PASS_LINES_MAX maps lines or confirmed
 * PROMOTE_PASS_WINDOWS_MAX windows, and the next step begins with the process this one did
 * not finish (a rotation over the pids, so nobody waits behind the same processes every
 * pass). What waits is counted by bound. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
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

/* Bounds of one pass's plan: beyond them the rest waits for a later pass (said in the log). */
#define PLAN_CGROUPS_MAX 4096u
#define PLAN_PROCS_MAX	 65536u
#define MARKS_MAX	 65536u /* collapsed ranges handed back to the records per pass */

struct promote_cgroup {
	char *path;
	struct dglue_promote_plan plan;
	bool observe;
	uint64_t processes, not_asked; /* planned; not asked (refused before) */
	/* filled by promote_run() */
	uint64_t found, collapsed, held_back, reached;
	uint64_t failures[THPS_PROMOTE_FAIL_MAX];
	int err; /* the first error reading a process */
	char note[200];
};

struct promote_proc {
	pid_t pid;
	uint32_t cg;
	uint64_t starttime;
	uint64_t resume; /* where its walk starts: where the last one a bound cut stopped */
	/* filled by promote_run() */
	uint64_t collapsed;
	uint64_t next_addr; /* where its next walk resumes (0: this one reached the end) */
	bool walked;
	bool refused; /* the kernel or the process said no: not asked again */
};

struct promote_mark {
	uint32_t cg;
	pid_t pid;
	uint64_t starttime, addr;
};

struct promote_job {
	struct thps_ctx ctx;
	struct thps_geometry geom;
	uint64_t pass;
	struct promote_backoff *backoff;
	struct promote_cgroup *cgs;
	size_t n_cgs, cap_cgs;
	struct promote_proc *procs;
	size_t n_procs, cap_procs;
	/* the work done and what waits, by bound: the plan's (processes left out of it by its
	 * bounds) filled by promote_plan(), the rest by promote_run() */
	struct promote_step_figures fig;
	pid_t plan_next;   /* the first left out, where the next pass begins if this one ends */
	pid_t cursor_next; /* filled by promote_run(): where the next pass begins */
	/* filled by promote_run() */
	struct promote_mark *marks;
	size_t n_marks, cap_marks;
	atomic_bool cancel;
	bool cancelled;
	int fatal; /* -EPERM / -ENOSYS: this daemon may not advise others */
	pid_t fatal_pid;
	bool stopped; /* ENOMEM: no free huge page */
	uint32_t stop_cg;
	char stop_note[256];
	uint64_t wall_ns;
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

static int resume_cmp(const void *a, const void *b)
{
	const struct promote_resume *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Where the walk of pid (started at start) resumes: 0 from the beginning. */
static uint64_t resume_of(const struct manager *m, pid_t pid, uint64_t start)
{
	const struct promote_resume key = {.pid = pid};
	const struct promote_resume *e =
	    m->n_promote_resume
		? bsearch(&key, m->promote_resume, m->n_promote_resume, sizeof(key), resume_cmp)
		: NULL;

	return e && e->starttime == start ? e->addr : 0;
}

static bool grow(void **v, size_t *cap, size_t n, size_t size, size_t max)
{
	size_t c;
	void *p;

	if (n < *cap)
		return true;
	if (n >= max)
		return false;
	c = MIN(max, *cap ? *cap * 2 : 64);
	p = reallocarray(*v, c, size);
	if (!p)
		return false;
	*v = p;
	*cap = c;
	return true;
}

/* The plan of cgroup path, made once per pass: its index in j->cgs, or -ENOSPC / -ENOMEM. */
static int cgroup_of(struct manager *m, struct promote_job *j, const char *path)
{
	const struct thps_registration *reg;
	struct promote_cgroup *c;

	for (size_t i = 0; i < j->n_cgs; i++)
		if (!strcmp(j->cgs[i].path, path))
			return (int)i;
	if (!grow((void **)&j->cgs, &j->cap_cgs, j->n_cgs, sizeof(*j->cgs), PLAN_CGROUPS_MAX))
		return j->n_cgs >= PLAN_CGROUPS_MAX ? -ENOSPC : -ENOMEM;
	c = &j->cgs[j->n_cgs];
	*c = (struct promote_cgroup){.path = strdup(path)};
	if (!c->path)
		return -ENOMEM;
	reg = reg_find(m, path);
	dglue_promote_plan(m->policies, path, reg, &c->plan);
	c->observe = m->observe_only || !c->plan.enforce;
	return (int)j->n_cgs++;
}

/* Adds process pid (a /proc entry) to the plan when its cgroup's policy promotes. Returns 0,
 * or -ENOSPC / -ENOMEM when the plan is full. */
static int plan_process(struct manager *m, struct promote_job *j, pid_t pid, const char *name)
{
	_cleanup_free_ char *text = NULL;
	struct promote_cgroup *c;
	char path[PATH_MAX];
	uint64_t start;
	int cg;

	if (read_file_at(1 << 16, &text, m->ctx.proc_root, "%s/cgroup", name) < 0 ||
	    thps_proc_cgroup_v2_path(text, path, sizeof(path)) < 0 || !strcmp(path, "/"))
		return 0;
	if (m->o.cgroup && thps_cgroup_path_within(path, m->o.cgroup) != 1)
		return 0;
	cg = cgroup_of(m, j, path);
	if (cg < 0)
		return cg;
	c = &j->cgs[cg];
	if (!c->plan.max_bytes || thps_proc_starttime(&m->ctx, pid, &start) < 0)
		return 0;
	c->processes++;
	if (refused_before(m, pid, start)) {
		c->not_asked++;
		return 0;
	}
	if (!grow((void **)&j->procs, &j->cap_procs, j->n_procs, sizeof(*j->procs), PLAN_PROCS_MAX))
		return j->n_procs >= PLAN_PROCS_MAX ? -ENOSPC : -ENOMEM;
	j->procs[j->n_procs++] = (struct promote_proc){
	    .pid = pid, .cg = (uint32_t)cg, .starttime = start, .resume = resume_of(m, pid, start)};
	return 0;
}

/* One sweep of /proc: the pids at or above from (below when !at_or_above), into the plan. */
static void plan_sweep(struct manager *m, struct promote_job *j, DIR *d, pid_t from,
		       bool at_or_above)
{
	struct dirent *de;

	rewinddir(d);
	while ((de = readdir(d))) {
		uint64_t v;
		int r;

		if (parse_u64(de->d_name, &v) < 0 || v == 0 || v > INT32_MAX ||
		    (pid_t)v == getpid() || ((pid_t)v >= from) != at_or_above)
			continue;
		r = plan_process(m, j, (pid_t)v, de->d_name);
		if (r < 0 && !j->fig.deferred[PROMOTE_DEFERRED_PLAN]++)
			j->plan_next = (pid_t)v;
	}
}

/* The run's order: from the cursor up, then from the lowest pid up to it. */
static int rotation_cmp(const void *a, const void *b, void *cursor)
{
	const pid_t c = *(const pid_t *)cursor;
	const struct promote_proc *x = a, *y = b;
	const bool xw = x->pid < c, yw = y->pid < c;

	if (xw != yw)
		return xw ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

struct promote_job *promote_plan(struct manager *m)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct promote_job *j;

	if (!dglue_policies_promote(m->policies) || !m->geom.thp_size)
		return NULL;
	j = calloc(1, sizeof(*j));
	d = opendir(m->ctx.proc_root);
	if (!j || !d) {
		log_warning_errno(j ? negative_errno() : -ENOMEM, "Cannot promote: %m");
		promote_job_free(j);
		return NULL;
	}
	j->ctx = m->ctx;
	j->geom = m->geom;
	j->pass = ++m->promote_pass;
	j->backoff = &m->backoff;
	atomic_init(&j->cancel, false);
	/* from where the last step stopped, round to it: the rotation (/proc lists pids in
	 * ascending order, so a full plan leaves out the ones furthest from the cursor) */
	plan_sweep(m, j, d, m->promote_cursor, true);
	if (m->promote_cursor > 1)
		plan_sweep(m, j, d, m->promote_cursor, false);
	if (j->n_procs)
		qsort_r(j->procs, j->n_procs, sizeof(*j->procs), rotation_cmp, &m->promote_cursor);
	return j;
}

struct run_ctx {
	struct promote_job *j;
	uint32_t cg;
};

static bool on_admit(void *userdata, pid_t pid, uint64_t starttime, uint64_t addr)
{
	const struct run_ctx *rc = userdata;

	return promote_backoff_admit(rc->j->backoff, pid, starttime, addr, rc->j->pass);
}

static void on_collapsed(void *userdata, pid_t pid, uint64_t starttime, uint64_t addr)
{
	const struct run_ctx *rc = userdata;
	struct promote_job *j = rc->j;

	(void)promote_backoff_collapsed(j->backoff, pid, starttime, addr, j->pass);
	/* beyond the bound the split only loses a hint: it might pick a fresh THP of ours */
	if (grow((void **)&j->marks, &j->cap_marks, j->n_marks, sizeof(*j->marks), MARKS_MAX))
		j->marks[j->n_marks++] = (struct promote_mark){
		    .cg = rc->cg, .pid = pid, .starttime = starttime, .addr = addr};
}

/* One planned process, within what the step has left. Returns 1 to end the step, else 0. */
static int run_process(struct promote_job *j, struct promote_proc *p)
{
	struct promote_cgroup *c = &j->cgs[p->cg];
	const uint64_t thp = j->geom.thp_size;
	struct run_ctx rc = {.j = j, .cg = p->cg};
	struct thps_promote_result res = {};
	struct thps_promote_opts opts = {
	    .max_bytes =
		c->observe ? 0 : c->plan.max_bytes - MIN(c->plan.max_bytes, c->collapsed * thp),
	    .dry_run = c->observe,
	    .use_scan = true,
	    .fallback_budget = UINT64_C(64) << 30,
	    .resume_addr = p->resume,
	    .max_vmas = PROMOTE_PROCESS_VMAS_MAX,
	    .max_windows =
		MIN(PROMOTE_PROCESS_WINDOWS_MAX, PROMOTE_PASS_WINDOWS_MAX - j->fig.windows),
	    .collapsed = on_collapsed,
	    .admit = on_admit,
	    .userdata = &rc,
	};
	int r;

	if (!c->observe && !opts.max_bytes) {
		snprintf(c->note, sizeof(c->note),
			 "the pass's budget is spent: the rest waits for the next pass");
		return 0;
	}
	c->reached++;
	r = thps_promote_pid(&j->ctx, &j->geom, p->pid, &opts, &res);
	p->walked = true;
	p->next_addr = res.next_addr;
	j->fig.processes++;
	j->fig.maps_lines += res.maps_lines;
	j->fig.vmas += res.vmas;
	j->fig.windows += res.windows;
	j->fig.deferred[PROMOTE_DEFERRED_PROCESS] += res.walks_cut;
	if (r < 0) {
		if (r == -EPERM || r == -ENOSYS) {
			j->fatal = r;
			j->fatal_pid = p->pid;
			return 1;
		}
		if (!c->err)
			c->err = r;
		if (!c->note[0])
			snprintf(c->note, sizeof(c->note), "cannot promote process %d: %s",
				 (int)p->pid, strerror(-r));
		return 0;
	}
	c->found += res.ranges_found;
	c->collapsed += res.ranges_collapsed;
	c->held_back += res.ranges_held_back;
	for (unsigned i = 0; i < THPS_PROMOTE_FAIL_MAX; i++)
		c->failures[i] += res.failures[i];
	p->collapsed = res.ranges_collapsed;
	p->refused =
	    res.failures[THPS_PROMOTE_FAIL_REFUSED] || res.failures[THPS_PROMOTE_FAIL_DISABLED];
	if (res.note[0] && !c->note[0])
		snprintf(c->note, sizeof(c->note), "%.190s", res.note);
	if (res.stopped) {
		j->stopped = true;
		j->stop_cg = p->cg;
		snprintf(j->stop_note, sizeof(j->stop_note), "%s", res.note);
		return 1;
	}
	return 0;
}

void promote_run(struct promote_job *j)
{
	uint64_t c0, t0;

	if (!j)
		return;
	c0 = thread_cpu_ns();
	t0 = now_mono_usec();
	j->cursor_next = j->plan_next;
	for (size_t i = 0; i < j->n_procs; i++) {
		struct promote_proc *p = &j->procs[i];

		/* between processes: one process's walk and collapses take milliseconds */
		if (atomic_load(&j->cancel)) {
			j->cancelled = true;
			j->cursor_next = p->pid;
			break;
		}
		if (run_process(j, p)) {
			j->cursor_next = p->pid;
			break;
		}
		if (j->fig.maps_lines >= PROMOTE_PASS_LINES_MAX ||
		    j->fig.windows >= PROMOTE_PASS_WINDOWS_MAX) {
			j->fig.deferred[PROMOTE_DEFERRED_PASS] += j->n_procs - i - 1;
			/* a walk the step's remainder cut goes first next time, else the next one
			 */
			if (p->next_addr)
				j->cursor_next = p->pid;
			else if (i + 1 < j->n_procs)
				j->cursor_next = j->procs[i + 1].pid;
			break;
		}
	}
	j->fig.cpu_ns = thread_cpu_ns() - c0;
	j->wall_ns = (now_mono_usec() - t0) * 1000;
}

void promote_cancel(struct promote_job *j)
{
	if (j)
		atomic_store(&j->cancel, true);
}

uint64_t promote_cpu_usec(const struct promote_job *j)
{
	return j ? j->fig.cpu_ns / 1000 : 0;
}

/* The record of cgroup c, its per-pass promote figures set from the job. */
static struct crecord *record_for(struct manager *m, const struct promote_job *j,
				  const struct promote_cgroup *c)
{
	struct crecord *rec = records_get(&m->recs, c->path);
	struct crecord_promote *p;
	const uint64_t thp = j->geom.thp_size;

	if (!rec)
		return NULL;
	p = &rec->prom;
	rec->seen = true;
	if (!p->ino) {
		char dir[PATH_MAX];
		struct stat st;

		if (thps_path(dir, sizeof(dir), m->ctx.cgroup_root, "%s", c->path + 1) == 0 &&
		    stat(dir, &st) == 0)
			p->ino = (uint64_t)st.st_ino;
	}
	p->pass = j->pass;
	p->pass_found = c->found;
	p->pass_collapsed = c->collapsed;
	p->pass_bytes = c->collapsed * thp;
	p->pass_held_back = c->held_back;
	/* ranges held back are among those found (the library asks admit right before a
	 * collapse): still dense in small pages */
	p->opportunity_bytes = (c->found - MIN(c->found, c->collapsed)) * thp;
	p->pass_not_asked = c->not_asked + c->failures[THPS_PROMOTE_FAIL_DISABLED];
	p->pass_opted_out = c->failures[THPS_PROMOTE_FAIL_OPTED_OUT];
	memcpy(p->pass_failures, c->failures, sizeof(p->pass_failures));
	p->ranges += c->collapsed;
	p->bytes += c->collapsed * thp;
	p->looked = true;
	p->observe = c->observe;
	p->max_bytes = c->plan.max_bytes;
	snprintf(p->policy, sizeof(p->policy), "%s", c->plan.policy);
	snprintf(p->note, sizeof(p->note), "%s", c->note);
	if (!c->reached && !c->note[0] && c->processes > c->not_asked &&
	    (j->stopped || j->fatal || j->cancelled))
		snprintf(p->note, sizeof(p->note), "the step ended before this cgroup: %s",
			 j->stopped ? "no free huge page"
			 : j->fatal ? "may not advise"
				    : "stopping");
	return rec;
}

/* The cgroup's word for explain, once the step has seen all its processes. */
static void compose_why(const struct manager *m, struct crecord *rec)
{
	struct crecord_promote *p = &rec->prom;
	char asked[96] = "", held[96] = "", opted[96] = "";

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
	if (p->pass_held_back)
		snprintf(held, sizeof(held),
			 "; %" PRIu64 " ranges held back (re-collapsed before: backoff)",
			 p->pass_held_back);
	if (p->observe)
		snprintf(p->why, sizeof(p->why),
			 "policy '%.64s' observes: %" PRIu64
			 " dense bytes found, not promoted (mode enforce promotes)%s%s",
			 p->policy, p->pass_found * m->geom.thp_size, asked, opted);
	else
		snprintf(p->why, sizeof(p->why),
			 "policy '%.64s': %" PRIu64 " dense ranges found, %" PRIu64
			 " promoted this pass (max_bytes_per_pass %" PRIu64 ")%s%s%s%s%.100s",
			 p->policy, p->pass_found, p->pass_collapsed, p->max_bytes, asked, opted,
			 held, p->note[0] ? "; " : "", p->note);
}

/* The resume table from this step: a walked process's next address, a waiting one's old one;
 * a process not in this plan (gone, or no longer promoted) is forgotten. Sorted by pid. */
static void save_resume(struct manager *m, const struct promote_job *j)
{
	size_t n = 0;

	for (size_t i = 0; i < j->n_procs && n < ELEMENTSOF(m->promote_resume); i++) {
		const struct promote_proc *p = &j->procs[i];
		uint64_t addr = p->walked ? p->next_addr : p->resume;

		if (addr)
			m->promote_resume[n++] = (struct promote_resume){
			    .pid = p->pid, .starttime = p->starttime, .addr = addr};
	}
	m->n_promote_resume = n;
	qsort(m->promote_resume, n, sizeof(m->promote_resume[0]), resume_cmp);
}

void promote_apply(struct manager *m, const struct promote_job *j)
{
	if (!j)
		return;
	log_debug("Promote step: %zu processes in %zu cgroups, %.3f s (CPU %.3f s)%s", j->n_procs,
		  j->n_cgs, j->wall_ns / 1e9, j->fig.cpu_ns / 1e9,
		  j->cancelled ? ", cancelled" : "");
	for (size_t i = 0; i < j->n_cgs; i++) {
		const struct promote_cgroup *c = &j->cgs[i];
		struct crecord *rec;

		if (!c->processes)
			continue;
		rec = record_for(m, j, c);
		if (!rec) {
			log_error("Out of memory recording cgroup '%s'", c->path);
			return;
		}
		for (unsigned f = 0; f < THPS_PROMOTE_FAIL_MAX; f++)
			m->promote_failures[f] += c->failures[f];
		if (c->err && !m->promote_warned) {
			m->promote_warned = true;
			log_warning_errno(c->err, "cgroup '%s': %s", c->path, c->note);
		}
		if (c->collapsed)
			log_info("cgroup '%s': promoted %" PRIu64 " dense ranges (%" PRIu64
				 " bytes) into THPs%s%.200s",
				 c->path, c->collapsed, c->collapsed * j->geom.thp_size,
				 c->note[0] ? "; " : "", c->note);
	}
	for (size_t i = 0; i < j->n_procs; i++)
		if (j->procs[i].refused)
			remember_refused(m, j->procs[i].pid, j->procs[i].starttime);
	save_resume(m, j);
	m->promote_cursor = j->cursor_next;
	for (unsigned b = 0; b < PROMOTE_DEFERRED_MAX; b++)
		m->promote_deferred[b] += j->fig.deferred[b];
	m->promote_last = j->fig;
	if ((j->fig.deferred[PROMOTE_DEFERRED_PASS] || j->fig.deferred[PROMOTE_DEFERRED_PROCESS]) &&
	    !m->promote_bound_said) {
		log_notice(
		    "Promotion: the step's bounds (%u VMAs and %u windows per process, %u "
		    "maps lines and %u windows per pass) left %" PRIu64 " processes and %" PRIu64
		    " cut walks for later passes, which resume where this one stopped "
		    "(thpshrink_promote_deferred_total)",
		    PROMOTE_PROCESS_VMAS_MAX, PROMOTE_PROCESS_WINDOWS_MAX, PROMOTE_PASS_LINES_MAX,
		    PROMOTE_PASS_WINDOWS_MAX, j->fig.deferred[PROMOTE_DEFERRED_PASS],
		    j->fig.deferred[PROMOTE_DEFERRED_PROCESS]);
		m->promote_bound_said = true;
	}
	for (size_t i = 0; i < j->n_marks; i++) {
		const struct promote_mark *k = &j->marks[i];
		struct crecord *rec = records_get(&m->recs, j->cgs[k->cg].path);

		if (rec)
			(void)thps_promoted_add(&rec->promoted, k->pid, k->starttime, k->addr);
	}
	if (j->fatal) {
		if (!m->promote_warned)
			log_warning_errno(j->fatal, "Cannot promote process %d: %m",
					  (int)j->fatal_pid);
		m->promote_warned = true;
	}
	if (j->stopped)
		log_notice("cgroup '%s': promotion stops for this pass: %s",
			   j->cgs[j->stop_cg].path, j->stop_note);
	if (j->fig.deferred[PROMOTE_DEFERRED_PLAN])
		log_notice(
		    "Promotion: %" PRIu64 " processes beyond this pass's plan (%u cgroups, %u "
		    "processes at most) wait for a later pass",
		    j->fig.deferred[PROMOTE_DEFERRED_PLAN], PLAN_CGROUPS_MAX, PLAN_PROCS_MAX);
	for (size_t i = 0; i < m->recs.n; i++)
		if (m->recs.v[i].prom.looked && m->recs.v[i].prom.pass == j->pass)
			compose_why(m, &m->recs.v[i]);
}

void promote_job_free(struct promote_job *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n_cgs; i++)
		free(j->cgs[i].path);
	free(j->cgs);
	free(j->procs);
	free(j->marks);
	free(j);
}
