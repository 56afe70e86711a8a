/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink-registrations: drives the daemon-side registrations library from a shell, so the
 * VM test can check it against a real runtime and kernel (and the daemon author can see the
 * API used end to end).
 *   thpshrink-registrations list DIR           one line per valid registration, errors on stderr
 *   thpshrink-registrations gc DIR             removes dead ones; prints "removed N"
 *   thpshrink-registrations watch DIR SECONDS  prints "added ID" / "removed ID" / "rescan" */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context.h"
#include "log.h"
#include "registrations.h"

static void on_error(const char *dir, const char *name, int err, void *userdata)
{
	log_warning_errno(err, "Ignoring '%s/%s': %m", dir, name);
}

static int list(const char *dir)
{
	struct thps_registration_list l;
	int r = thps_registrations_load_all(dir, on_error, NULL, &l);

	if (r < 0)
		return log_error_errno(r, "Failed to read '%s': %m", dir);
	for (size_t i = 0; i < l.n; i++)
		printf("%s cgroup=%s pid=%d start=%llu policy=%s mode=%s status=%s\n", l.items[i].id,
		       l.items[i].cgroup, (int)l.items[i].pid, (unsigned long long)l.items[i].pid_start_time,
		       l.items[i].policy[0] ? l.items[i].policy : "-", l.items[i].mode[0] ? l.items[i].mode : "-",
		       l.items[i].status);
	thps_registration_list_free(&l);
	return 0;
}

static int watch(const char *dir, int seconds)
{
	time_t end = time(NULL) + seconds;
	int fd, r;

	r = thps_registrations_dir_ensure(dir);
	if (r < 0)
		return log_error_errno(r, "Failed to create '%s': %m", dir);
	fd = thps_registrations_watch(dir);
	if (fd < 0)
		return log_error_errno(fd, "Failed to watch '%s': %m", dir);
	printf("watching %s\n", dir);
	fflush(stdout);
	while (time(NULL) < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct thps_registration_events ev;

		if (poll(&p, 1, 200) <= 0)
			continue;
		r = thps_registrations_handle_events(fd, &ev);
		if (r < 0) {
			close(fd);
			return log_error_errno(r, "Failed to read inotify events: %m");
		}
		for (size_t i = 0; i < ev.n_added; i++)
			printf("added %s\n", ev.added[i]);
		for (size_t i = 0; i < ev.n_removed; i++)
			printf("removed %s\n", ev.removed[i]);
		if (ev.rescan)
			printf("rescan\n");
		fflush(stdout);
		thps_registration_events_free(&ev);
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct thps_ctx ctx;
	int r;

	thps_log_set_prefix("thpshrink-registrations");
	thps_ctx_init(&ctx);
	if (argc == 3 && !strcmp(argv[1], "list"))
		r = list(argv[2]);
	else if (argc == 3 && !strcmp(argv[1], "gc")) {
		r = thps_registrations_gc(argv[2], &ctx);
		if (r >= 0)
			printf("removed %d\n", r);
		else
			log_error_errno(r, "Failed to collect '%s': %m", argv[2]);
	} else if (argc == 4 && !strcmp(argv[1], "watch"))
		r = watch(argv[2], atoi(argv[3]));
	else {
		fprintf(stderr, "usage: %s list DIR | gc DIR | watch DIR SECONDS\n", argv[0]);
		return 2;
	}
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
