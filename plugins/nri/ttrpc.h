/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ttrpc framing as NRI speaks it, with no I/O: the runtime's socket is one byte stream (the
 * trunk) cut into chunks of NRI's multiplexer (conn id u32 BE, length u32 BE, payload); each
 * connection's bytes are a ttrpc stream of frames (length u32 BE, stream id u32 BE, type u8,
 * flags u8, payload) whose payloads are ttrpc Request/Response protobufs. Everything arriving
 * here is written by the runtime, which we trust no more than any peer: every length is
 * bounded before a byte is kept, and a frame that is too long is skipped, not buffered. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define THPS_TTRPC_HEADER_LEN  10
#define THPS_TTRPC_MESSAGE_MAX (4u << 20) /* ttrpc's own messageLengthMax */
#define THPS_MUX_HEADER_LEN    8
/* NRI's mux never writes a chunk longer than one ttrpc frame. */
#define THPS_MUX_CHUNK_MAX (THPS_TTRPC_HEADER_LEN + THPS_TTRPC_MESSAGE_MAX)
/* What one connection may hold: a frame not yet complete plus one read of the trunk. */
#define THPS_TTRPC_READ_MAX   (64u * 1024)
#define THPS_TTRPC_STREAM_MAX (THPS_MUX_CHUNK_MAX + THPS_TTRPC_READ_MAX)

/* The mux connections of NRI (pkg/net/multiplex): on 1 the plugin serves, on 2 it calls. */
#define THPS_NRI_CONN_PLUGIN  1u
#define THPS_NRI_CONN_RUNTIME 2u
#define THPS_NRI_CONNS	      2u

enum thps_ttrpc_type {
	THPS_TTRPC_REQUEST = 1,
	THPS_TTRPC_RESPONSE = 2,
	THPS_TTRPC_DATA = 3,
};

struct thps_ttrpc_header {
	uint32_t length;
	uint32_t stream_id;
	uint8_t type;
	uint8_t flags;
};

void thps_ttrpc_header_encode(const struct thps_ttrpc_header *h,
			      uint8_t out[THPS_TTRPC_HEADER_LEN]);
void thps_ttrpc_header_decode(const uint8_t in[THPS_TTRPC_HEADER_LEN],
			      struct thps_ttrpc_header *ret);

/* One connection's ttrpc byte stream. */
struct thps_ttrpc_stream {
	uint8_t *buf;
	size_t len, cap;
	uint64_t skip; /* bytes of an oversized frame still to drop as they come */
};

void thps_ttrpc_stream_free(struct thps_ttrpc_stream *s);

/* Appends n bytes, dropping first what a skipped frame still owns. Returns 0, -ENOBUFS when
 * the stream would hold more than THPS_TTRPC_STREAM_MAX (the caller did not take its frames),
 * -ENOMEM. */
int thps_ttrpc_stream_feed(struct thps_ttrpc_stream *s, const uint8_t *data, size_t n);

/* Takes the next complete frame: its header in *ret_h and a malloc'd copy of its payload in
 * *ret_payload (NULL when empty). Returns 1 for a frame, 0 when more bytes are needed,
 * -EMSGSIZE for a frame longer than THPS_TTRPC_MESSAGE_MAX (*ret_h is set so the caller can
 * answer it; its payload is dropped as it arrives), -ENOMEM. */
int thps_ttrpc_stream_next(struct thps_ttrpc_stream *s, struct thps_ttrpc_header *ret_h,
			   uint8_t **ret_payload);

/* The trunk: cuts the runtime's bytes into mux chunks and hands each chunk's payload to its
 * connection's stream (ids 1..THPS_NRI_CONNS; bytes of any other id are dropped). */
struct thps_mux {
	uint8_t hdr[THPS_MUX_HEADER_LEN];
	size_t hdr_len;
	uint32_t conn;	    /* of the chunk being read */
	uint32_t remaining; /* of its payload */
	struct thps_ttrpc_stream conns[THPS_NRI_CONNS];
};

void thps_mux_free(struct thps_mux *m);

/* Feeds n bytes (at most THPS_TTRPC_READ_MAX) read from the trunk; take the frames of both
 * connections (thps_ttrpc_stream_next) after each call. Returns 0, -EPROTO for a chunk longer
 * than NRI ever writes (the trunk is out of step: drop the connection), -ENOBUFS, -ENOMEM. */
int thps_mux_feed(struct thps_mux *m, const uint8_t *data, size_t n);

/* Builds one trunk record carrying one ttrpc frame: mux header, ttrpc header, payload.
 * Returns 0 with a malloc'd buffer, -EMSGSIZE for a payload over THPS_TTRPC_MESSAGE_MAX,
 * -ENOMEM. */
int thps_mux_frame_encode(uint32_t conn, const struct thps_ttrpc_header *h, const uint8_t *payload,
			  uint8_t **ret, size_t *ret_len);
