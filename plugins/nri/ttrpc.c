/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ttrpc frames over NRI's multiplexed trunk (ttrpc.h): byte order and bounds only. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "ttrpc.h"

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void thps_ttrpc_header_encode(const struct thps_ttrpc_header *h, uint8_t out[THPS_TTRPC_HEADER_LEN])
{
	put_be32(out, h->length);
	put_be32(out + 4, h->stream_id);
	out[8] = h->type;
	out[9] = h->flags;
}

void thps_ttrpc_header_decode(const uint8_t in[THPS_TTRPC_HEADER_LEN],
			      struct thps_ttrpc_header *ret)
{
	ret->length = get_be32(in);
	ret->stream_id = get_be32(in + 4);
	ret->type = in[8];
	ret->flags = in[9];
}

void thps_ttrpc_stream_free(struct thps_ttrpc_stream *s)
{
	free(s->buf);
	*s = (struct thps_ttrpc_stream){0};
}

int thps_ttrpc_stream_feed(struct thps_ttrpc_stream *s, const uint8_t *data, size_t n)
{
	if (s->skip > 0) {
		size_t drop = s->skip < n ? (size_t)s->skip : n;

		s->skip -= drop;
		data += drop;
		n -= drop;
	}
	if (n == 0)
		return 0;
	if (s->len + n > THPS_TTRPC_STREAM_MAX)
		return -ENOBUFS;
	if (s->len + n > s->cap) {
		/* Grow by doubling from one read, so a stream of small frames stays small. */
		size_t cap = s->cap ? s->cap : THPS_TTRPC_READ_MAX;
		uint8_t *b;

		while (cap < s->len + n)
			cap *= 2;
		if (cap > THPS_TTRPC_STREAM_MAX)
			cap = THPS_TTRPC_STREAM_MAX;
		b = realloc(s->buf, cap);
		if (!b)
			return -ENOMEM;
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	return 0;
}

static void consume(struct thps_ttrpc_stream *s, size_t n)
{
	memmove(s->buf, s->buf + n, s->len - n);
	s->len -= n;
}

int thps_ttrpc_stream_next(struct thps_ttrpc_stream *s, struct thps_ttrpc_header *ret_h,
			   uint8_t **ret_payload)
{
	struct thps_ttrpc_header h;
	uint8_t *p = NULL;

	if (s->len < THPS_TTRPC_HEADER_LEN)
		return 0;
	thps_ttrpc_header_decode(s->buf, &h);
	if (h.length > THPS_TTRPC_MESSAGE_MAX) {
		/* As ttrpc does: drop the payload, let the caller answer ResourceExhausted. */
		size_t here = s->len - THPS_TTRPC_HEADER_LEN;
		size_t drop = here < h.length ? here : h.length;

		consume(s, THPS_TTRPC_HEADER_LEN + drop);
		s->skip = h.length - drop;
		*ret_h = h;
		return -EMSGSIZE;
	}
	if (s->len - THPS_TTRPC_HEADER_LEN < h.length)
		return 0;
	if (h.length > 0) {
		p = malloc(h.length);
		if (!p)
			return -ENOMEM;
		memcpy(p, s->buf + THPS_TTRPC_HEADER_LEN, h.length);
	}
	consume(s, THPS_TTRPC_HEADER_LEN + h.length);
	*ret_h = h;
	*ret_payload = p;
	return 1;
}

void thps_mux_free(struct thps_mux *m)
{
	for (size_t i = 0; i < THPS_NRI_CONNS; i++)
		thps_ttrpc_stream_free(&m->conns[i]);
	*m = (struct thps_mux){0};
}

int thps_mux_feed(struct thps_mux *m, const uint8_t *data, size_t n)
{
	int r;

	if (n > THPS_TTRPC_READ_MAX)
		return -ENOBUFS;
	while (n > 0) {
		size_t take;

		if (m->remaining == 0) {
			take = MIN(THPS_MUX_HEADER_LEN - m->hdr_len, n);
			memcpy(m->hdr + m->hdr_len, data, take);
			m->hdr_len += take;
			data += take;
			n -= take;
			if (m->hdr_len < THPS_MUX_HEADER_LEN)
				break;
			m->hdr_len = 0;
			m->conn = get_be32(m->hdr);
			m->remaining = get_be32(m->hdr + 4);
			if (m->remaining > THPS_MUX_CHUNK_MAX)
				return -EPROTO;
			continue;
		}
		take = m->remaining < n ? m->remaining : n;
		if (m->conn >= 1 && m->conn <= THPS_NRI_CONNS) {
			r = thps_ttrpc_stream_feed(&m->conns[m->conn - 1], data, take);
			if (r < 0)
				return r;
		}
		m->remaining -= (uint32_t)take;
		data += take;
		n -= take;
	}
	return 0;
}

int thps_mux_frame_encode(uint32_t conn, const struct thps_ttrpc_header *h, const uint8_t *payload,
			  uint8_t **ret, size_t *ret_len)
{
	size_t len = THPS_MUX_HEADER_LEN + THPS_TTRPC_HEADER_LEN + h->length;
	uint8_t *b;

	if (h->length > THPS_TTRPC_MESSAGE_MAX)
		return -EMSGSIZE;
	b = malloc(len);
	if (!b)
		return -ENOMEM;
	put_be32(b, conn);
	put_be32(b + 4, THPS_TTRPC_HEADER_LEN + h->length);
	thps_ttrpc_header_encode(h, b + THPS_MUX_HEADER_LEN);
	if (h->length > 0)
		memcpy(b + THPS_MUX_HEADER_LEN + THPS_TTRPC_HEADER_LEN, payload, h->length);
	*ret = b;
	*ret_len = len;
	return 0;
}
