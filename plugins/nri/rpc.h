/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ttrpc's Request and Response messages (plugins/nri/proto/request.proto) on top of the framing
 * of ttrpc.h: what the plugin answers on connection 1 and asks on connection 2. protobuf-c
 * allocates per decoded field, so a 4 MiB message of empty repeated sub-messages could make it
 * allocate a hundred times its size: every decode here draws from a budget instead. */
#pragma once
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/request.pb-c.h"

/* gRPC status codes ttrpc carries in Response.status.code. */
#define THPS_RPC_OK		    0
#define THPS_RPC_INVALID_ARGUMENT   3
#define THPS_RPC_RESOURCE_EXHAUSTED 8
#define THPS_RPC_UNIMPLEMENTED	    12
#define THPS_RPC_INTERNAL	    13

/* All the memory one decoded message may take. */
#define THPS_RPC_BUDGET (64u << 20)

struct thps_pb_budget {
	ProtobufCAllocator allocator; /* hand &allocator to protobuf-c */
	size_t used, max;
	bool exhausted; /* an allocation was refused: the message was too costly, not malformed */
};

void thps_pb_budget_init(struct thps_pb_budget *b, size_t max);

/* Packs msg into a malloc'd buffer (NULL and 0 for an empty message). Returns 0, -EMSGSIZE
 * (over THPS_TTRPC_MESSAGE_MAX), -ENOMEM. */
int thps_pb_pack(const ProtobufCMessage *msg, uint8_t **ret, size_t *ret_len);

/* Whether every string field of the message of type d in p[0..n), nested messages included,
 * is free of NUL bytes: protobuf-c hands strings NUL-terminated, so "g-split\0x" would reach
 * us as "g-split", a different value than the one sent. Returns 1 clean, 0 (a NUL), -EBADMSG
 * (not a protobuf message, or nested deeper than 32). */
int thps_pb_strings_clean(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n);

/* Decodes a Request frame's payload. Returns 0, -EBADMSG (not a Request), -EILSEQ (its service
 * or method holds a NUL), -E2BIG (over the budget). Free with ttrpc__request__free_unpacked(req,
 * &b->allocator). */
int thps_rpc_request_decode(const uint8_t *p, size_t n, struct thps_pb_budget *b,
			    Ttrpc__Request **ret);

/* Decodes a Response frame's payload into its status code (0 when absent) and a malloc'd copy
 * of its payload. Returns 0, -EBADMSG, -E2BIG, -ENOMEM. */
int thps_rpc_response_decode(const uint8_t *p, size_t n, int32_t *ret_code, uint8_t **ret_payload,
			     size_t *ret_len);

/* The trunk record answering request stream_id on connection 1: code and, when code is OK,
 * the packed answer payload[0..len). Returns 0, -EMSGSIZE, -ENOMEM. */
int thps_rpc_response_encode(uint32_t stream_id, int32_t code, const uint8_t *payload, size_t len,
			     uint8_t **ret, size_t *ret_len);

/* The trunk record of a call on connection 2 with the packed argument payload[0..len).
 * Returns 0, -EMSGSIZE, -ENOMEM. */
int thps_rpc_request_encode(uint32_t stream_id, const char *service, const char *method,
			    const uint8_t *payload, size_t len, uint8_t **ret, size_t *ret_len);
