/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One connection to the runtime's NRI socket: register, answer Configure, Synchronize and the
 * container events, until the runtime goes away. Single-threaded and never blocking on the
 * daemon: an event is answered after its registration file is written (a rename on /run) or
 * its failure logged; nothing the runtime sends can fail or hold up a container. */
#pragma once
#include <signal.h>
#include <stdbool.h>

#include "context.h"

struct nri_opts {
	const char *socket_path; /* the runtime's NRI socket */
	const char *dir;	 /* registrations directory */
	const char *name;	 /* plugin name */
	const char *idx;	 /* plugin index, two digits */
	struct thps_ctx ctx;
};

/* Serves the connection fd until the runtime closes it, shuts the plugin down or *stop is set.
 * *ret_registered tells whether the runtime accepted RegisterPlugin. Returns 0 for an orderly
 * end, -errno (logged) when the connection broke or the runtime refused us. */
int nri_session_run(const struct nri_opts *o, int fd, volatile sig_atomic_t *stop,
		    bool *ret_registered);
