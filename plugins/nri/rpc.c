/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ttrpc Request/Response over the framing of ttrpc.c (rpc.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "rpc.h"
#include "ttrpc.h"

/* Each block carries its size in front, so free can give it back to the budget. */
struct block {
	size_t size;
	max_align_t data[];
};

static void *budget_alloc(void *data, size_t size)
{
	struct thps_pb_budget *b = data;
	struct block *k;

	if (size > b->max - b->used) {
		b->exhausted = true;
		return NULL;
	}
	k = malloc(sizeof(*k) + size);
	if (!k)
		return NULL;
	k->size = size;
	b->used += size;
	return k->data;
}

static void budget_free(void *data, void *p)
{
	struct thps_pb_budget *b = data;
	struct block *k;

	if (!p)
		return;
	k = (struct block *)((char *)p - offsetof(struct block, data));
	b->used -= k->size;
	free(k);
}

void thps_pb_budget_init(struct thps_pb_budget *b, size_t max)
{
	*b = (struct thps_pb_budget){
	    .allocator = {.alloc = budget_alloc, .free = budget_free, .allocator_data = b},
	    .max = max,
	};
}

#define PB_DEPTH_MAX 32

/* Reads a varint at p[*i..n). Returns 0 or -EBADMSG. */
static int varint(const uint8_t *p, size_t n, size_t *i, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (*i >= n)
			return -EBADMSG;
		v |= (uint64_t)(p[*i] & 0x7f) << shift;
		if (!(p[(*i)++] & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EBADMSG;
}

static int strings_clean(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n,
			 unsigned depth)
{
	size_t i = 0;
	int r;

	if (depth > PB_DEPTH_MAX)
		return -EBADMSG;
	while (i < n) {
		const ProtobufCFieldDescriptor *f;
		uint64_t key, len;

		if (varint(p, n, &i, &key) < 0)
			return -EBADMSG;
		switch (key & 7) {
		case PROTOBUF_C_WIRE_TYPE_VARINT:
			if (varint(p, n, &i, &len) < 0)
				return -EBADMSG;
			continue;
		case PROTOBUF_C_WIRE_TYPE_64BIT:
			len = 8;
			break;
		case PROTOBUF_C_WIRE_TYPE_32BIT:
			len = 4;
			break;
		case PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED:
			if (varint(p, n, &i, &len) < 0)
				return -EBADMSG;
			break;
		default: /* groups: not in proto3 */
			return -EBADMSG;
		}
		if (len > n - i)
			return -EBADMSG;
		f = (key & 7) == PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED && key >> 3 <= UINT32_MAX
			? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3))
			: NULL;
		if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p + i, 0, len))
			return 0;
		if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
			r = strings_clean(f->descriptor, p + i, len, depth + 1);
			if (r <= 0)
				return r;
		}
		i += len;
	}
	return 1;
}

int thps_pb_strings_clean(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n)
{
	return strings_clean(d, p, n, 0);
}

int thps_rpc_request_decode(const uint8_t *p, size_t n, struct thps_pb_budget *b,
			    Ttrpc__Request **ret)
{
	Ttrpc__Request *req;
	int r = thps_pb_strings_clean(&ttrpc__request__descriptor, p, n);

	if (r <= 0)
		return r < 0 ? r : -EILSEQ;
	req = ttrpc__request__unpack(&b->allocator, n, p);
	if (!req)
		return b->exhausted ? -E2BIG : -EBADMSG;
	*ret = req;
	return 0;
}

int thps_rpc_response_decode(const uint8_t *p, size_t n, int32_t *ret_code, uint8_t **ret_payload,
			     size_t *ret_len)
{
	struct thps_pb_budget b;
	Ttrpc__Response *rsp;
	uint8_t *copy = NULL;
	int32_t code;
	size_t len;

	thps_pb_budget_init(&b, THPS_RPC_BUDGET);
	rsp = ttrpc__response__unpack(&b.allocator, n, p);
	if (!rsp)
		return b.exhausted ? -E2BIG : -EBADMSG;
	code = rsp->status ? rsp->status->code : THPS_RPC_OK;
	len = rsp->payload.len;
	if (len > 0) {
		copy = malloc(len);
		if (!copy) {
			ttrpc__response__free_unpacked(rsp, &b.allocator);
			return -ENOMEM;
		}
		memcpy(copy, rsp->payload.data, len);
	}
	ttrpc__response__free_unpacked(rsp, &b.allocator);
	*ret_code = code;
	*ret_payload = copy;
	*ret_len = len;
	return 0;
}

int thps_pb_pack(const ProtobufCMessage *msg, uint8_t **ret, size_t *ret_len)
{
	size_t len;
	uint8_t *b;

	*ret = NULL;
	*ret_len = 0;
	len = protobuf_c_message_get_packed_size(msg);
	if (len > THPS_TTRPC_MESSAGE_MAX)
		return -EMSGSIZE;
	if (len == 0)
		return 0;
	b = malloc(len);
	if (!b)
		return -ENOMEM;
	protobuf_c_message_pack(msg, b);
	*ret = b;
	*ret_len = len;
	return 0;
}

static int frame(uint32_t conn, uint32_t stream_id, uint8_t type, const ProtobufCMessage *outer,
		 uint8_t **ret, size_t *ret_len)
{
	_cleanup_free_ uint8_t *body = NULL;
	struct thps_ttrpc_header h = {.stream_id = stream_id, .type = type};
	size_t len;
	int r;

	r = thps_pb_pack(outer, &body, &len);
	if (r < 0)
		return r;
	if (len > THPS_TTRPC_MESSAGE_MAX)
		return -EMSGSIZE;
	h.length = (uint32_t)len;
	return thps_mux_frame_encode(conn, &h, body, ret, ret_len);
}

int thps_rpc_response_encode(uint32_t stream_id, int32_t code, const uint8_t *payload, size_t len,
			     uint8_t **ret, size_t *ret_len)
{
	Ttrpc__Response rsp = TTRPC__RESPONSE__INIT;
	Status st = STATUS__INIT;

	if (len > THPS_TTRPC_MESSAGE_MAX)
		return -EMSGSIZE;
	if (code == THPS_RPC_OK) {
		rsp.payload.data = (uint8_t *)payload;
		rsp.payload.len = len;
	} else {
		st.code = code;
		rsp.status = &st;
	}
	return frame(THPS_NRI_CONN_PLUGIN, stream_id, THPS_TTRPC_RESPONSE, &rsp.base, ret, ret_len);
}

int thps_rpc_request_encode(uint32_t stream_id, const char *service, const char *method,
			    const uint8_t *payload, size_t len, uint8_t **ret, size_t *ret_len)
{
	Ttrpc__Request req = TTRPC__REQUEST__INIT;

	if (len > THPS_TTRPC_MESSAGE_MAX)
		return -EMSGSIZE;
	req.service = (char *)service;
	req.method = (char *)method;
	req.payload.data = (uint8_t *)payload;
	req.payload.len = len;
	return frame(THPS_NRI_CONN_RUNTIME, stream_id, THPS_TTRPC_REQUEST, &req.base, ret, ret_len);
}
