/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The loop: sd-event setup, the scan timer, the exec-debounce timer, signals, the proc
 * connector, the heartbeat, the scan thread's start and finish, start and stop. A pass's
 * own work is in pass.c, what it publishes in publish.c, the registrations in regwatch.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <linux/netlink.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "alive.h"
#include "cgroups.h"
#include "http.h"
#include "log.h"
#include "daemon-state.h"
#include "manager.h"
#include "pass.h"
#include "publish.h"
#include "records.h"
#include "regwatch.h"
#include "probe-measure.h"
#include "probe-scratch.h"
#include "procev.h"
#include "promote-pass.h"

#define EXEC_DEBOUNCE_USEC (2 * 1000000ULL)

static int on_heartbeat(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)usec;
	heartbeat(userdata);
	(void)sd_event_source_set_time_relative(s, THPS_HEARTBEAT_SEC * 1000000ULL);
	(void)sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
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
		log_debug(
		    "Pass (%s) deferred: the scan budget (CPU share, THPs per second) is spent",
		    why);
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
		scan_job_free(j);
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
	scan_job_free(m->job);
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
	char err[512], names[256];
	int r;

	/* A missing directory at start means "nothing configured"; one that vanishes later is a
	 * fault (an unmounted volume, a config tool mid-rename): the set in force stays. */
	r = dglue_policies_load(m->o.policy_dir, at_start, &p, err, sizeof(err));
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
	dglue_policies_names(p, names, sizeof(names));
	log_info("Loaded %d policies from '%s'%s%s", r, m->o.policy_dir, r ? ": " : "", names);
	if (err[0])
		log_warning("Policy warnings: %s", err);
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
		return; /* the pass in flight re-arms the timer; the next one sees the new process
			 */
	if (m->last_pass_end + m->o.interval_usec / 2 > at)
		at = m->last_pass_end + m->o.interval_usec / 2;
	if (sd_event_source_set_time(m->debounce, at) < 0 ||
	    sd_event_source_set_enabled(m->debounce, SD_EVENT_ONESHOT) < 0)
		log_warning(
		    "Failed to arm the prompt-scan timer, the next periodic pass will see it");
}

static int on_proc(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;
	struct thps_proc_event ev[64];
	char buf[8192] __attribute__((aligned(8)));

	for (int round = 0; round < 64; round++) {
		struct sockaddr_nl from = {0};
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
				log_warning(
				    "The proc connector socket buffer overflowed (events lost); "
				    "rescanning everything");
				schedule_prompt(m);
				continue;
			}
			return log_warning_errno(negative_errno(),
						 "Failed to read process events, ignoring: %m");
		}
		/* Only the kernel (port 0) speaks for the proc connector; a local process can
		 * unicast to our port too. */
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
			return log_error_errno(
			    r, "Failed to serve /metrics on the systemd socket: %m");
		log_info("Serving /metrics on the socket passed by systemd");
		return 0;
	}
	if (!m->o.listen || !strcmp(m->o.listen, "none"))
		return 0;
	r = http_server_start(m->o.listen, -1, &m->http);
	if (r < 0)
		return log_error_errno(r, "Failed to listen on '%s'%s: %m", m->o.listen,
				       r == -EINVAL ? " (expected ADDR:PORT, e.g. 127.0.0.1:9477)"
						    : "");
	log_info("Serving /metrics on %s", m->o.listen);
	return 0;
}

/* What a split and memory.reclaim free here, measured on canary memory of our own (a scratch
 * cgroup, removed afterwards; nothing where there is none), and the split mechanism each folio
 * size would use and why, logged once at start. */
/* What was measured decides over what the kernel's version suggests: the split mechanism where
 * no size chose process_madvise, and whether a split frees zero subpages at all. */
static void apply_measure(struct manager *m, const struct thps_measure *ms)
{
	bool pmadv = false, debugfs = false, cold = false, zero = false;

	for (size_t i = 0; i < ms->n; i++) {
		const struct thps_measure_size *z = &ms->sizes[i];
		int cp = thps_measure_cold_pct(z), sp = thps_measure_split_pct(z);

		pmadv |= z->mech == THPS_SPLIT_MECH_PMADVISE;
		debugfs |= z->mech == THPS_SPLIT_MECH_DEBUGFS;
		cold |= cp >= 0 || sp >= 0;
		zero |= cp >= 50 || sp >= 50;
	}
	if (!pmadv && debugfs && m->caps.split_mech == THPS_SPLIT_MECH_PMADVISE) {
		m->caps.split_mech = THPS_SPLIT_MECH_DEBUGFS;
		snprintf(m->caps.split_why, sizeof(m->caps.split_why),
			 "debugfs split_huge_pages: measured, process_madvise freed nothing here");
		log_notice("Splits: %s", m->caps.split_why);
	}
	if (cold)
		m->caps.split_zero_freed = zero ? 1 : -1;
}

/* Once at start, loudly where process_madvise is refused: what a split policy does instead,
 * and that memory.reclaim stays off unless a policy allows it. */
static void log_give_back(struct manager *m)
{
	const char *method = dglue_give_back_method(&m->caps, m->policies);

	if (m->caps.split_mech == THPS_SPLIT_MECH_PMADVISE)
		log_info("Give back: process_madvise (exact split; page cache spared)");
	else if (m->caps.split_mech == THPS_SPLIT_MECH_DEBUGFS)
		log_warning("Give back: process_madvise refused (%s): splits go through debugfs "
			    "split_huge_pages, one page of each folio (exact; page cache spared)",
			    m->caps.split_why);
	else
		log_warning("Give back: no exact split here (%s): policies that split give nothing "
			    "back%s; memory.reclaim (evicts page cache) only where a policy says "
			    "\"split_or_reclaim\" or \"reclaim\" (method %s)",
			    m->caps.split_why,
			    !strcmp(method, "reclaim") ? ", except where a policy allows reclaim"
						       : "",
			    method);
}

static void measure_at_start(struct manager *m)
{
	_cleanup_free_ struct thps_measure *ms = calloc(1, sizeof(*ms));
	int r;

	/* a probe of ours (or of the CLI) killed mid-measure left its scratch cgroup */
	r = thps_probe_scratch_clean(&m->ctx);
	if (r < 0)
		log_warning_errno(r, "Failed to remove a stale probe scratch cgroup, ignoring: %m");
	else if (r > 0)
		log_info("Removed %d stale probe scratch cgroups (thpshrink-probe.<pid> of a "
			 "probe that was killed)",
			 r);

	if (!ms || thps_probe_measure(&m->ctx, &m->geom, false, ms) < 0)
		return;
	if (!ms->ran) {
		log_info("Probe: %s", ms->why);
		return;
	}
	for (size_t i = 0; i < ms->n; i++) {
		const struct thps_measure_size *z = &ms->sizes[i];

		log_info("Probe measured %" PRIu64 " KiB folios [%s]: process_madvise(MADV_COLD) "
			 "freed %d %% of %" PRIu64 " zero bytes (%u folios) and %d %% of %" PRIu64
			 " unmapped bytes (%u partially mapped folios); debugfs split %d %% of "
			 "%" PRIu64 " (%u folios); memory.reclaim %d %% of %" PRIu64 "%s%s",
			 z->size >> 10, z->mode, thps_measure_cold_pct(z), z->cold_zero_bytes,
			 z->cold_folios, thps_measure_cold_partial_pct(z),
			 z->cold_partial_unmapped_bytes, z->cold_partial_folios,
			 thps_measure_split_pct(z), z->zero_bytes, z->folios,
			 thps_measure_reclaim_pct(z), z->reclaim_zero_bytes, z->note[0] ? "; " : "",
			 z->note);
		log_info("Probe: %" PRIu64 " KiB folios split by %s: %s", z->size >> 10,
			 thps_measure_mech_name(z->mech), z->mech_why);
	}
	apply_measure(m, ms);
}

int manager_alloc(const struct thps_ctx *ctx, const struct manager_options *o, struct manager **ret)
{
	struct manager *m = calloc(1, sizeof(*m));

	if (!m)
		return log_error_errno(-ENOMEM, "Out of memory");
	m->ctx = *ctx;
	m->o = *o;
	m->proc_fd = -1;
	m->done_fd = -1;
	m->regs_fd = -1;
	m->last_pass_end = now_mono_usec(); /* no prompt pass right behind the first one */
	*ret = m;
	return 0;
}

/* What the scanner needs: the THP geometry, the scan memo. */
static int setup_scan(struct manager *m)
{
	int r = thps_geometry_load(&m->ctx, &m->geom);

	if (r < 0) {
		log_warning_errno(
		    r, "Cannot read the THP size (%s), assuming 4 KiB pages and 2 MiB THPs: %m",
		    r == -ENOENT ? "no THP support" : "bad hpage_pmd_size");
		thps_geometry_default(&m->geom);
	}
	thps_scan_init(&m->scan, &m->geom);
	if (!m->o.exact_scan) {
		r = scan_memo_new(m->o.refresh_cpu_percent > 0 ? m->o.refresh_cpu_percent
							       : SCAN_MEMO_REFRESH_CPU_DEFAULT,
				  m->o.interval_usec, &m->memo);
		if (r < 0)
			return log_error_errno(r, "Failed to set up the scan memo: %m");
	}
	return 0;
}

/* The cgroup mount, what the kernel offers, and whether the daemon may act at all. Each
 * limitation is logged once here. Never fails. */
static void probe_kernel(struct manager *m)
{
	int r;

	/* Actuators and the probe need the hierarchy's mount and version; find them once. */
	r = thps_cgroups_find_mount(&m->ctx);
	if (r < 0)
		log_notice(
		    "No memory cgroup hierarchy found (%s): figures per cgroup are named by inode, "
		    "nothing can be acted on",
		    strerror(-r));
	else
		log_info("Memory cgroups: cgroup v%d at '%s'", m->ctx.cgroup_version,
			 m->ctx.cgroup_root);
	dglue_probe(&m->ctx, &m->caps);
	log_info("Kernel: cgroup2 memory %s, memory.reclaim %s, debugfs split_huge_pages %s, "
		 "thp_utilization %s, pagemap %s, kpageflags %s",
		 m->caps.cgroup2_memory ? "yes" : "no", m->caps.memory_reclaim ? "yes" : "no",
		 m->caps.split_huge_pages ? "yes" : "no", m->caps.thp_utilization ? "yes" : "no",
		 m->caps.pagemap ? "yes" : "no", m->caps.kpageflags ? "yes" : "no");
	log_info("Splits: %s: %s", thps_split_mech_name(m->caps.split_mech), m->caps.split_why);
	log_info("Sources: %s", dglue_sources_description());
	measure_at_start(m);
	log_give_back(m);
	m->observe_only = m->o.dry_run;
	if (m->o.dry_run)
		log_notice("--dry-run: observing every cgroup whatever the policies say");
	else if (m->caps.why[0]) {
		m->observe_only = true;
		log_notice("Observe-only: %s", m->caps.why);
	}
}

static int setup_signals(struct manager *m)
{
	int r = sd_event_add_signal(m->event, &m->sig_term, SIGTERM, on_signal, m);

	if (r >= 0)
		r = sd_event_add_signal(m->event, &m->sig_int, SIGINT, on_signal, m);
	if (r >= 0)
		r = sd_event_add_signal(m->event, &m->sig_hup, SIGHUP, on_signal, m);
	if (r < 0)
		return log_error_errno(r, "Failed to watch signals: %m");
	return 0;
}

/* The scan thread's eventfd and the loop's timers: scan, exec debounce, heartbeat. */
static int setup_timers(struct manager *m)
{
	int r;

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
	r = sd_event_add_time_relative(m->event, &m->debounce, CLOCK_MONOTONIC, EXEC_DEBOUNCE_USEC,
				       0, on_debounce, m);
	if (r < 0)
		return log_error_errno(r, "Failed to add the prompt-scan timer: %m");
	(void)sd_event_source_set_description(m->debounce, "exec-debounce");
	(void)sd_event_source_set_enabled(m->debounce, SD_EVENT_OFF);

	r = sd_event_add_time_relative(m->event, &m->heartbeat_timer, CLOCK_MONOTONIC,
				       THPS_HEARTBEAT_SEC * 1000000ULL, 0, on_heartbeat, m);
	if (r < 0)
		return log_error_errno(r, "Failed to add the heartbeat timer: %m");
	(void)sd_event_source_set_description(m->heartbeat_timer, "heartbeat");
	return 0;
}

/* status.json in the state dir is what 'thpshrink explain' and the liveness probe trust, and
 * the daemon replaces files there as root: a directory another user owns or can write would
 * let them plant what those read, or a link the daemon follows. Made (0755) when missing. */
static int check_state_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return log_error_errno(-errno, "Failed to create --state-dir '%s': %m", dir);
	if (stat(dir, &st) < 0)
		return log_error_errno(-errno, "Failed to stat --state-dir '%s': %m", dir);
	if (!S_ISDIR(st.st_mode)) {
		log_error("Refusing --state-dir '%s': not a directory", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		log_error(
		    "Refusing --state-dir '%s': owned by uid %u, not by this daemon's uid %u, "
		    "so another user controls what 'thpshrink explain' reads; chown %u it or "
		    "pick a directory of the daemon's own",
		    dir, (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		log_error("Refusing --state-dir '%s': writable by group or others (mode %04o), so "
			  "anyone could replace status.json; chmod go-w it",
			  dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int manager_new(const struct thps_ctx *ctx, const struct manager_options *o, struct manager **ret)
{
	struct manager *m;
	int r;

	r = manager_alloc(ctx, o, ret);
	if (r < 0)
		return r;
	m = *ret; /* manager_free() cleans up whatever got built */

	r = check_state_dir(o->state_dir);
	if (r < 0)
		return r;

	r = setup_scan(m);
	if (r < 0)
		return r;
	probe_kernel(m);

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

	r = setup_signals(m);
	if (r < 0)
		return r;
	r = setup_timers(m);
	if (r < 0)
		return r;
	r = sd_event_set_watchdog(m->event, true);
	if (r > 0)
		log_info("Watchdog enabled");

	setup_proc_events(m);
	setup_registrations(m);
	/* Last: the HTTP thread inherits the blocked signal mask set up by main(). */
	return setup_http(m);
}

int manager_pass(struct manager *m, const char *why)
{
	struct scan_job *j = scan_job_new(m);

	if (!j)
		return log_error_errno(-ENOMEM, "Out of memory");
	log_debug("Pass (%s)", why);
	scan_job_run(j);
	pass_finish(m, j);
	scan_job_free(j);
	return 0;
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

		/* The promote step stops at its next process; a collapse under way ends with
		 * the process. */
		promote_cancel(m->job->promote);
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
	records_free(&m->recs);
	thps_scan_free(&m->scan);
	scan_memo_free(m->memo);
	dglue_policies_free(m->policies);
	thps_engine_free(m->engine);
	promote_backoff_free(&m->backoff);
	free(m);
}
