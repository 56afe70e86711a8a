/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Process events from the kernel's proc connector (NETLINK_CONNECTOR, CN_IDX_PROC): new
 * programs (exec) make the daemon look soon, exits drop what it kept about a pid. The parser
 * is a pure function over a received datagram, so a fuzz target can feed it anything. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum thps_proc_event_type {
	THPS_PROC_EXEC = 1,
	THPS_PROC_EXIT = 2,
};

struct thps_proc_event {
	enum thps_proc_event_type type;
	pid_t pid; /* the thread group (process) */
};

/* Parses one datagram of netlink messages carrying connector proc events. Messages that are
 * too short, not from CN_IDX_PROC, or of event types we do not use are skipped. Fills at most
 * max events. Returns the number of events, or -EBADMSG when the datagram's framing itself is
 * broken (a truncated netlink header). */
int thps_proc_events_parse(const void *buf, size_t len, struct thps_proc_event *events, size_t max);

/* Opens and subscribes a proc connector socket (non-blocking). Returns the fd, or -errno:
 * -EPERM / -EPROTONOSUPPORT / -ECONNREFUSED mean "not here" (outside the initial network
 * namespace, no CAP_NET_ADMIN, no CONFIG_PROC_EVENTS): the caller polls instead. */
int thps_proc_connector_open(void);
