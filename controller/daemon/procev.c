/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libmnl framing for the proc connector. Unknown event types are skipped so newer kernels
 * with more events do not confuse us. */
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"
#include "procev.h"

int thps_proc_events_parse(const void *buf, size_t len, struct thps_proc_event *events, size_t max)
{
	const struct nlmsghdr *nlh = buf;
	int remaining = len > INT32_MAX ? INT32_MAX : (int)len;
	size_t n = 0;

	if (!buf || len < sizeof(struct nlmsghdr))
		return -EBADMSG;
	/* mnl_nlmsg_ok() compares (int)nlmsg_len, so a length above INT_MAX passes as negative
	 * and mnl_nlmsg_next() then jumps out of the buffer (found by fuzz-proc-events): check
	 * the unsigned length ourselves too. */
	for (; mnl_nlmsg_ok(nlh, remaining) && nlh->nlmsg_len <= (uint32_t)remaining;
	     nlh = mnl_nlmsg_next(nlh, &remaining)) {
		const struct cn_msg *cn;
		struct proc_event ev;
		size_t payload, need;

		if (nlh->nlmsg_type == NLMSG_ERROR || nlh->nlmsg_type == NLMSG_NOOP)
			continue;
		payload = mnl_nlmsg_get_payload_len(nlh);
		if (payload < sizeof(struct cn_msg))
			continue;
		cn = mnl_nlmsg_get_payload(nlh);
		if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC)
			continue;
		if (cn->len > payload - sizeof(struct cn_msg) ||
		    cn->len < offsetof(struct proc_event, event_data))
			continue;
		/* The event sits at a 4-byte offset after the cn_msg header; copy it out rather
		 * than read an 8-byte aligned struct in place. */
		memset(&ev, 0, sizeof(ev));
		memcpy(&ev, cn->data, MIN((size_t)cn->len, sizeof(ev)));
		if (n >= max)
			break;
		switch (ev.what) {
		case PROC_EVENT_EXEC:
			need = offsetof(struct proc_event, event_data) + sizeof(ev.event_data.exec);
			if (cn->len < need)
				continue;
			events[n].type = THPS_PROC_EXEC;
			events[n].pid = ev.event_data.exec.process_tgid;
			break;
		case PROC_EVENT_EXIT:
			need = offsetof(struct proc_event, event_data) + sizeof(ev.event_data.exit);
			if (cn->len < need)
				continue;
			/* Thread exits arrive too; only the leader's means the process is gone. */
			if (ev.event_data.exit.process_pid != ev.event_data.exit.process_tgid)
				continue;
			events[n].type = THPS_PROC_EXIT;
			events[n].pid = ev.event_data.exit.process_tgid;
			break;
		default:
			continue;
		}
		if (events[n].pid <= 0)
			continue;
		n++;
	}
	return (int)n;
}

int thps_proc_connector_open(void)
{
	struct mnl_socket *nl;
	char buf[256] __attribute__((aligned(8)));
	struct nlmsghdr *nlh;
	struct cn_msg *cn;
	int fd, r;

	nl = mnl_socket_open2(NETLINK_CONNECTOR, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (!nl)
		return negative_errno();
	if (mnl_socket_bind(nl, CN_IDX_PROC, MNL_SOCKET_AUTOPID) < 0) {
		r = negative_errno();
		mnl_socket_close(nl);
		return r;
	}
	memset(buf, 0, sizeof(buf));
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = NLMSG_DONE;
	nlh->nlmsg_pid = mnl_socket_get_portid(nl);
	cn = mnl_nlmsg_put_extra_header(nlh, sizeof(*cn) + sizeof(enum proc_cn_mcast_op));
	cn->id.idx = CN_IDX_PROC;
	cn->id.val = CN_VAL_PROC;
	cn->len = sizeof(enum proc_cn_mcast_op);
	*(enum proc_cn_mcast_op *)cn->data = PROC_CN_MCAST_LISTEN;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		r = negative_errno();
		mnl_socket_close(nl);
		return r;
	}
	/* Keep the fd, drop the libmnl wrapper around it. */
	fd = fcntl(mnl_socket_get_fd(nl), F_DUPFD_CLOEXEC, 3);
	r = fd < 0 ? negative_errno() : fd;
	mnl_socket_close(nl);
	return r;
}
