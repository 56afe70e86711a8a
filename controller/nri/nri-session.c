/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One NRI connection (nri-session.h). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "nri-register.h"
#include "nri-session.h"
#include "nri.h"
#include "rpc.h"
#include "ttrpc.h"

#define REGISTER_STREAM 1 /* our only call on connection 2 */

struct session {
	const struct nri_opts *o;
	int fd;
	struct thps_mux mux;
	bool registered, done;
};

/* Returns 0 or -errno. The socket has a send timeout: a runtime that stops reading cannot
 * hold us forever. */
static int send_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return negative_errno();
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int answer(struct session *s, uint32_t stream_id, int32_t code, const uint8_t *payload,
		  size_t len)
{
	_cleanup_free_ uint8_t *rec = NULL;
	size_t rec_len;
	int r;

	r = thps_rpc_response_encode(stream_id, code, payload, len, &rec, &rec_len);
	if (r >= 0)
		r = send_all(s->fd, rec, rec_len);
	if (r < 0)
		return log_error_errno(r, "Failed to answer the runtime: %m");
	return 0;
}

static void containers(struct session *s, const struct thps_nri_call_args *a,
		       enum thps_oci_stage stage, bool remove)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct thps_nri_container *c = &a->containers[i];

		if (remove)
			(void)nri_unregister(s->o->dir, c->id);
		else
			(void)nri_register(&s->o->ctx, s->o->dir, c, stage);
	}
	if (a->refused)
		log_warning("NRI: %zu container(s) without a valid id ([A-Za-z0-9_.-]{1,128}), "
			    "ignoring them",
			    a->refused);
}

/* Acts on one decoded call. Registration failures are logged where they happen and never
 * change the answer: a container is not the daemon's to fail. */
static void act(struct session *s, const struct thps_nri_call_args *a)
{
	switch (a->call) {
	case THPS_NRI_CALL_CONFIGURE:
		log_info("NRI: configured by %s %s; subscribing to container create, start, stop "
			 "and remove",
			 a->runtime_name[0] ? a->runtime_name : "(unnamed runtime)",
			 a->runtime_version);
		break;
	case THPS_NRI_CALL_SYNCHRONIZE: {
		/* The containers that ran before we came: registered as the hook's poststart. */
		struct thps_nri_call_args live = *a;
		size_t n = 0;

		for (size_t i = 0; i < a->n; i++)
			if (a->containers[i].running)
				a->containers[n++] = a->containers[i];
		live.n = n;
		log_info("NRI: synchronized, %zu running container(s) of %zu", n, a->n);
		containers(s, &live, THPS_OCI_STAGE_START_CONTAINER, false);
		break;
	}
	case THPS_NRI_CALL_SHUTDOWN:
		log_info("NRI: the runtime is shutting down");
		s->done = true;
		break;
	case THPS_NRI_CALL_CREATE_CONTAINER:
		containers(s, a, THPS_OCI_STAGE_CREATE_CONTAINER, false);
		break;
	case THPS_NRI_CALL_STOP_CONTAINER:
		containers(s, a, THPS_OCI_STAGE_POSTSTOP, true);
		break;
	case THPS_NRI_CALL_STATE_CHANGE:
		if (a->event == THPS_NRI_EV_START_CONTAINER)
			containers(s, a, THPS_OCI_STAGE_START_CONTAINER, false);
		else if (a->event == THPS_NRI_EV_REMOVE_CONTAINER ||
			 a->event == THPS_NRI_EV_STOP_CONTAINER)
			containers(s, a, THPS_OCI_STAGE_POSTSTOP, true);
		break;
	case THPS_NRI_CALL_UPDATE_CONTAINER:
	case THPS_NRI_CALL_UNKNOWN:
		break;
	}
}

static int request(struct session *s, const struct thps_ttrpc_header *h, const uint8_t *p)
{
	_cleanup_free_ uint8_t *out = NULL;
	struct thps_nri_call_args a = {0};
	struct thps_pb_budget b;
	Ttrpc__Request *req;
	size_t out_len = 0;
	int r;

	thps_pb_budget_init(&b, THPS_RPC_BUDGET);
	r = thps_rpc_request_decode(p, h->length, &b, &req);
	if (r < 0) {
		log_warning_errno(r, "NRI: a request (stream %u) that is not a ttrpc Request (%m)",
				  h->stream_id);
		return answer(s, h->stream_id,
			      r == -E2BIG ? THPS_RPC_RESOURCE_EXHAUSTED : THPS_RPC_INVALID_ARGUMENT,
			      NULL, 0);
	}
	r = thps_nri_call_decode(req->service, req->method, req->payload.data, req->payload.len, &b,
				 &a);
	if (r == -EOPNOTSUPP) {
		/* Names are the runtime's text: bounded and printed with %.64s, never whole. */
		log_warning("NRI: unknown call '%.64s/%.64s', answering Unimplemented",
			    req->service, req->method);
		ttrpc__request__free_unpacked(req, &b.allocator);
		return answer(s, h->stream_id, THPS_RPC_UNIMPLEMENTED, NULL, 0);
	}
	if (r == -EILSEQ)
		/* As the hook refuses a value with a NUL whole: never act on a cut one. */
		log_warning("NRI: %.64s carries a string with a NUL byte, which would be cut: not "
			    "acting on it",
			    req->method);
	else if (r < 0)
		/* A container's create or stop must not fail for our sake: log, answer OK. */
		log_error_errno(r, "NRI: cannot decode %.64s (%m), answering without acting",
				req->method);
	if (r < 0) {
		a = (struct thps_nri_call_args){.call =
						    thps_nri_call_from(req->service, req->method)};
	} else
		act(s, &a);
	ttrpc__request__free_unpacked(req, &b.allocator);
	r = thps_nri_answer_encode(a.call, &out, &out_len);
	thps_nri_call_args_free(&a);
	if (r < 0)
		return log_error_errno(r, "NRI: cannot encode an answer: %m");
	return answer(s, h->stream_id, THPS_RPC_OK, out, out_len);
}

static int response(struct session *s, const struct thps_ttrpc_header *h, const uint8_t *p)
{
	_cleanup_free_ uint8_t *payload = NULL;
	size_t len;
	int32_t code;
	int r;

	if (h->stream_id != REGISTER_STREAM) {
		log_debug("NRI: a response to stream %u we never asked, ignoring", h->stream_id);
		return 0;
	}
	r = thps_rpc_response_decode(p, h->length, &code, &payload, &len);
	if (r < 0)
		return log_error_errno(r, "NRI: cannot decode RegisterPlugin's answer: %m");
	if (code != THPS_RPC_OK)
		return log_error_errno(-ECONNREFUSED,
				       "NRI: the runtime refused RegisterPlugin (status %d)",
				       (int)code);
	s->registered = true;
	log_info("NRI: registered as %s-%s", s->o->idx, s->o->name);
	return 0;
}

/* Takes every complete frame of both connections. Returns 0 or -errno. */
static int frames(struct session *s)
{
	for (unsigned c = 0; c < THPS_NRI_CONNS; c++) {
		struct thps_ttrpc_header h;
		uint8_t *p = NULL;
		int r;

		while (!s->done && (r = thps_ttrpc_stream_next(&s->mux.conns[c], &h, &p)) != 0) {
			if (r == -EMSGSIZE) {
				log_warning("NRI: a message of %u bytes (over ttrpc's %u), "
					    "dropping it",
					    h.length, THPS_TTRPC_MESSAGE_MAX);
				if (c + 1 == THPS_NRI_CONN_PLUGIN && h.type == THPS_TTRPC_REQUEST &&
				    (r = answer(s, h.stream_id, THPS_RPC_RESOURCE_EXHAUSTED, NULL,
						0)) < 0)
					return r;
				continue;
			}
			if (r < 0)
				return log_error_errno(r, "NRI: %m");
			if (c + 1 == THPS_NRI_CONN_PLUGIN && h.type == THPS_TTRPC_REQUEST)
				r = request(s, &h, p);
			else if (c + 1 == THPS_NRI_CONN_RUNTIME && h.type == THPS_TTRPC_RESPONSE)
				r = response(s, &h, p);
			else
				log_debug("NRI: a frame of type %u on connection %u, ignoring",
					  h.type, c + 1);
			free(p);
			p = NULL;
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int register_plugin(struct session *s)
{
	_cleanup_free_ uint8_t *arg = NULL, *rec = NULL;
	size_t arg_len, rec_len;
	int r;

	r = thps_nri_register_encode(s->o->name, s->o->idx, &arg, &arg_len);
	if (r >= 0)
		r = thps_rpc_request_encode(REGISTER_STREAM, THPS_NRI_SERVICE_RUNTIME,
					    "RegisterPlugin", arg, arg_len, &rec, &rec_len);
	if (r >= 0)
		r = send_all(s->fd, rec, rec_len);
	if (r < 0)
		return log_error_errno(r, "NRI: failed to send RegisterPlugin: %m");
	return 0;
}

int nri_session_run(const struct nri_opts *o, int fd, volatile sig_atomic_t *stop,
		    bool *ret_registered)
{
	struct session s = {.o = o, .fd = fd};
	_cleanup_free_ uint8_t *buf = malloc(THPS_TTRPC_READ_MAX);
	int r;

	*ret_registered = false;
	if (!buf)
		return log_error_errno(-ENOMEM, "NRI: %m");
	r = register_plugin(&s);
	while (r >= 0 && !s.done && !*stop) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, -1) < 0) {
			if (errno != EINTR)
				r = log_error_errno(negative_errno(), "NRI: poll: %m");
			continue;
		}
		n = recv(fd, buf, THPS_TTRPC_READ_MAX, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			r = log_warning_errno(negative_errno(), "NRI: the connection broke: %m");
			break;
		}
		if (n == 0) {
			log_info("NRI: the runtime closed the connection");
			break;
		}
		r = thps_mux_feed(&s.mux, buf, (size_t)n);
		if (r == -EPROTO)
			r = log_error_errno(r, "NRI: a mux chunk longer than NRI writes: the "
					       "connection is out of step, dropping it");
		else if (r < 0)
			r = log_error_errno(r, "NRI: %m");
		if (r >= 0)
			r = frames(&s);
	}
	*ret_registered = s.registered;
	thps_mux_free(&s.mux);
	return r < 0 ? r : 0;
}
