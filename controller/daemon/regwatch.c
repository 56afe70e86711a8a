/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The registrations the OCI hook writes, one small file per container: an inotify watch on
 * the directory reloads them all, and a minute's timer removes those of containers gone. */
#include <errno.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "log.h"
#include "daemon-glue.h"
#include "daemon-state.h"
#include "regwatch.h"

static void reg_error(const char *dir, const char *name, int err, void *userdata)
{
	log_warning_errno(err, "Ignoring registration '%s/%s': %m", dir, name);
}

static bool reg_known(const struct thps_registration_list *l, const struct thps_registration *r)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->items[i].id, r->id) && !strcmp(l->items[i].policy, r->policy) &&
		    !strcmp(l->items[i].mode, r->mode) && !strcmp(l->items[i].cgroup, r->cgroup))
			return true;
	return false;
}

/* Says once per container (when its registration appears) what of its annotations the
 * operator's policies do not allow; each pass then says it in status.json and explain. */
static void log_refusals(const struct manager *m, const struct thps_registration_list *old,
			 const struct thps_registration_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		struct dglue_choice ch;

		if (reg_known(old, &l->items[i]))
			continue;
		dglue_choose(m->policies, l->items[i].cgroup, &l->items[i], &ch);
		if (ch.refused[0])
			log_notice("Container '%s': %s; policy '%s' applies", l->items[i].id,
				   ch.refused, ch.policy);
	}
}

/* Reloads every registration: simpler than patching the list per event, and the directory
 * holds one small file per running container. */
static void regs_reload(struct manager *m)
{
	struct thps_registration_list l = {0};
	int r = thps_registrations_load_all(m->o.registrations_dir, reg_error, m, &l);

	if (r < 0) {
		log_warning_errno(r, "Failed to read the registrations in '%s', keeping %zu: %m",
				  m->o.registrations_dir, m->regs.n);
		return;
	}
	if ((size_t)r != m->regs.n)
		log_info("%d container registrations in '%s'", r, m->o.registrations_dir);
	log_refusals(m, &m->regs, &l);
	thps_registration_list_free(&m->regs);
	m->regs = l;
}

const struct thps_registration *reg_find(const struct manager *m, const char *cgroup)
{
	return thps_registration_covering(&m->regs, cgroup);
}

static int on_regs(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;
	struct thps_registration_events ev = {0};
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

void setup_registrations(struct manager *m)
{
	int r;

	if (!m->o.registrations_dir || !strcmp(m->o.registrations_dir, "none"))
		return;
	r = thps_registrations_dir_ensure(m->o.registrations_dir);
	if (r < 0) {
		log_warning_errno(r, "Cannot create '%s', container registrations off: %m",
				  m->o.registrations_dir);
		return;
	}
	/* Watch before loading: nothing written in between is missed. */
	r = thps_registrations_watch(m->o.registrations_dir);
	if (r < 0)
		log_warning_errno(r,
				  "Cannot watch '%s', registrations are read every minute only: %m",
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
