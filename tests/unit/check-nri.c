/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the NRI plugin's protocol: ttrpc frames inside NRI's mux chunks, good and
 * hostile, and ttrpc's Request/Response messages. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nri.h"
#include "proto/api.pb-c.h"
#include "rpc.h"
#include "ttrpc.h"
#include "test-main.h"

/* A mux chunk on conn carrying a ttrpc frame of len payload bytes, all 'x'. */
static uint8_t *chunk(uint32_t conn, uint32_t stream, uint8_t type, uint32_t len, size_t *ret_len)
{
	struct thps_ttrpc_header h = {.length = len, .stream_id = stream, .type = type};
	uint8_t *payload = malloc(len ? len : 1), *out;

	ck_assert_ptr_nonnull(payload);
	memset(payload, 'x', len);
	ck_assert_int_eq(thps_mux_frame_encode(conn, &h, payload, &out, ret_len), 0);
	free(payload);
	return out;
}

START_TEST(test_header_roundtrip)
{
	struct thps_ttrpc_header h = {.length = 0x01020304,
				      .stream_id = 0xa0b0c0d0,
				      .type = 2,
				      .flags = 5},
				 g;
	uint8_t b[THPS_TTRPC_HEADER_LEN];
	const uint8_t want[] = {1, 2, 3, 4, 0xa0, 0xb0, 0xc0, 0xd0, 2, 5};

	thps_ttrpc_header_encode(&h, b);
	ck_assert_mem_eq(b, want, sizeof(want));
	thps_ttrpc_header_decode(b, &g);
	ck_assert_uint_eq(g.length, h.length);
	ck_assert_uint_eq(g.stream_id, h.stream_id);
	ck_assert_uint_eq(g.type, 2);
	ck_assert_uint_eq(g.flags, 5);
}
END_TEST

/* Two frames in one read, then one frame fed a byte at a time: each comes out whole. */
START_TEST(test_frames_any_cut)
{
	struct thps_mux m = {0};
	struct thps_ttrpc_header h;
	size_t l1, l2, l3;
	uint8_t *a = chunk(1, 1, THPS_TTRPC_REQUEST, 7, &l1),
		*b = chunk(1, 3, THPS_TTRPC_REQUEST, 0, &l2),
		*c = chunk(2, 5, THPS_TTRPC_RESPONSE, 300, &l3), *p = NULL, both[64];

	memcpy(both, a, l1);
	memcpy(both + l1, b, l2);
	ck_assert_int_eq(thps_mux_feed(&m, both, l1 + l2), 0);
	ck_assert_int_eq(thps_ttrpc_stream_next(&m.conns[0], &h, &p), 1);
	ck_assert_uint_eq(h.stream_id, 1);
	ck_assert_uint_eq(h.length, 7);
	ck_assert_mem_eq(p, "xxxxxxx", 7);
	free(p);
	p = NULL;
	ck_assert_int_eq(thps_ttrpc_stream_next(&m.conns[0], &h, &p), 1);
	ck_assert_uint_eq(h.stream_id, 3);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(thps_ttrpc_stream_next(&m.conns[0], &h, &p), 0);
	for (size_t i = 0; i < l3; i++) {
		ck_assert_int_eq(thps_ttrpc_stream_next(&m.conns[1], &h, &p), 0);
		ck_assert_int_eq(thps_mux_feed(&m, c + i, 1), 0);
	}
	ck_assert_int_eq(thps_ttrpc_stream_next(&m.conns[1], &h, &p), 1);
	ck_assert_uint_eq(h.type, THPS_TTRPC_RESPONSE);
	ck_assert_uint_eq(h.length, 300);
	free(p);
	free(a);
	free(b);
	free(c);
	thps_mux_free(&m);
}
END_TEST

/* NRI's mux cuts a frame into chunks as its writer flushes: the stream joins them. */
START_TEST(test_frame_across_chunks)
{
	struct thps_mux m = {0};
	struct thps_ttrpc_header h;
	size_t l;
	uint8_t *a = chunk(1, 9, THPS_TTRPC_REQUEST, 20, &l), *p = NULL, part[THPS_MUX_HEADER_LEN];
	const uint8_t *frame = a + THPS_MUX_HEADER_LEN;
	size_t flen = l - THPS_MUX_HEADER_LEN, cut = 13;

	memcpy(part, (const uint8_t[]){0, 0, 0, 1, 0, 0, 0, (uint8_t)cut}, THPS_MUX_HEADER_LEN);
	ck_assert_int_eq(thps_mux_feed(&m, part, sizeof(part)), 0);
	ck_assert_int_eq(thps_mux_feed(&m, frame, cut), 0);
	ck_assert_int_eq(thps_ttrpc_stream_next(&m.conns[0], &h, &p), 0);
	memcpy(part, (const uint8_t[]){0, 0, 0, 1, 0, 0, 0, (uint8_t)(flen - cut)},
	       THPS_MUX_HEADER_LEN);
	ck_assert_int_eq(thps_mux_feed(&m, part, sizeof(part)), 0);
	ck_assert_int_eq(thps_mux_feed(&m, frame + cut, flen - cut), 0);
	ck_assert_int_eq(thps_ttrpc_stream_next(&m.conns[0], &h, &p), 1);
	ck_assert_uint_eq(h.stream_id, 9);
	ck_assert_uint_eq(h.length, 20);
	free(p);
	free(a);
	thps_mux_free(&m);
}
END_TEST

/* A frame claiming more than 4 MiB is reported once and its bytes dropped as they come; the
 * frame after it still arrives. Nothing near its claimed size is ever buffered. */
START_TEST(test_oversized_frame_skipped)
{
	struct thps_ttrpc_stream s = {0};
	struct thps_ttrpc_header h, big = {.length = THPS_TTRPC_MESSAGE_MAX + 1,
					   .stream_id = 7,
					   .type = THPS_TTRPC_REQUEST};
	uint8_t hdr[THPS_TTRPC_HEADER_LEN], *junk = calloc(1, THPS_TTRPC_READ_MAX), *p = NULL;
	size_t left = big.length, l;
	uint8_t *next = chunk(1, 11, THPS_TTRPC_REQUEST, 3, &l);

	thps_ttrpc_header_encode(&big, hdr);
	ck_assert_int_eq(thps_ttrpc_stream_feed(&s, hdr, sizeof(hdr)), 0);
	ck_assert_int_eq(thps_ttrpc_stream_next(&s, &h, &p), -EMSGSIZE);
	ck_assert_uint_eq(h.stream_id, 7);
	while (left > 0) {
		size_t n = left < THPS_TTRPC_READ_MAX ? left : THPS_TTRPC_READ_MAX;

		ck_assert_int_eq(thps_ttrpc_stream_feed(&s, junk, n), 0);
		ck_assert_uint_eq(s.len, 0);
		left -= n;
	}
	ck_assert_int_eq(
	    thps_ttrpc_stream_feed(&s, next + THPS_MUX_HEADER_LEN, l - THPS_MUX_HEADER_LEN), 0);
	ck_assert_int_eq(thps_ttrpc_stream_next(&s, &h, &p), 1);
	ck_assert_uint_eq(h.stream_id, 11);
	ck_assert_uint_le(s.cap, THPS_TTRPC_READ_MAX);
	free(p);
	free(next);
	free(junk);
	thps_ttrpc_stream_free(&s);
}
END_TEST

START_TEST(test_hostile_mux)
{
	struct thps_mux m = {0};
	struct thps_ttrpc_header h;
	uint8_t *p = NULL, big[THPS_TTRPC_READ_MAX + 1] = {0};
	const uint8_t huge[] = {0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff};
	size_t l;
	uint8_t *other = chunk(42, 1, THPS_TTRPC_REQUEST, 5, &l);

	/* A chunk for a connection NRI does not have: dropped, the trunk stays in step. */
	ck_assert_int_eq(thps_mux_feed(&m, other, l), 0);
	ck_assert_int_eq(thps_ttrpc_stream_next(&m.conns[0], &h, &p), 0);
	ck_assert_int_eq(thps_ttrpc_stream_next(&m.conns[1], &h, &p), 0);
	/* A chunk no NRI ever writes: the trunk is out of step. */
	ck_assert_int_eq(thps_mux_feed(&m, huge, sizeof(huge)), -EPROTO);
	thps_mux_free(&m);
	/* More than one read at once is the caller's bug, refused. */
	ck_assert_int_eq(thps_mux_feed(&m, big, sizeof(big)), -ENOBUFS);
	free(other);
}
END_TEST

/* A peer that never completes its frames cannot make a stream grow past its bound. */
START_TEST(test_stream_bounded)
{
	struct thps_ttrpc_stream s = {0};
	struct thps_ttrpc_header h = {.length = THPS_TTRPC_MESSAGE_MAX}, g;
	uint8_t hdr[THPS_TTRPC_HEADER_LEN], *junk = calloc(1, THPS_TTRPC_READ_MAX), *p = NULL;
	size_t fed = sizeof(hdr);
	int r = 0;

	thps_ttrpc_header_encode(&h, hdr);
	ck_assert_int_eq(thps_ttrpc_stream_feed(&s, hdr, sizeof(hdr)), 0);
	/* Never taking the frame out: the bound stops it. */
	while ((r = thps_ttrpc_stream_feed(&s, junk, THPS_TTRPC_READ_MAX)) == 0)
		fed += THPS_TTRPC_READ_MAX;
	ck_assert_int_eq(r, -ENOBUFS);
	ck_assert_uint_le(fed, THPS_TTRPC_STREAM_MAX);
	ck_assert_int_eq(thps_ttrpc_stream_next(&s, &g, &p), 1);
	ck_assert_uint_eq(g.length, THPS_TTRPC_MESSAGE_MAX);
	free(p);
	free(junk);
	thps_ttrpc_stream_free(&s);
}
END_TEST

/* A request we encode decodes back through the same path the runtime's requests take. */
START_TEST(test_request_roundtrip)
{
	Ttrpc__KeyValue kv = TTRPC__KEY_VALUE__INIT;
	Ttrpc__Request *req;
	uint8_t *arg;
	size_t arg_len;
	struct thps_pb_budget b;
	struct thps_mux m = {0};
	struct thps_ttrpc_header h;
	uint8_t *rec, *p = NULL;
	size_t len;

	kv.key = (char *)"k";
	kv.value = (char *)"v";
	ck_assert_int_eq(thps_pb_pack(&kv.base, &arg, &arg_len), 0);
	ck_assert_int_eq(thps_rpc_request_encode(3, "svc", "Method", arg, arg_len, &rec, &len), 0);
	free(arg);
	ck_assert_int_eq(thps_mux_feed(&m, rec, len), 0);
	ck_assert_int_eq(thps_ttrpc_stream_next(&m.conns[THPS_NRI_CONN_RUNTIME - 1], &h, &p), 1);
	ck_assert_uint_eq(h.type, THPS_TTRPC_REQUEST);
	ck_assert_uint_eq(h.stream_id, 3);
	thps_pb_budget_init(&b, THPS_RPC_BUDGET);
	ck_assert_int_eq(thps_rpc_request_decode(p, h.length, &b, &req), 0);
	ck_assert_str_eq(req->service, "svc");
	ck_assert_str_eq(req->method, "Method");
	ck_assert_uint_eq(req->payload.len, protobuf_c_message_get_packed_size(&kv.base));
	ttrpc__request__free_unpacked(req, &b.allocator);
	ck_assert_uint_eq(b.used, 0);
	free(p);
	free(rec);
	thps_mux_free(&m);
}
END_TEST

START_TEST(test_response_codes)
{
	struct thps_mux m = {0};
	struct thps_ttrpc_header h;
	uint8_t *rec, *p = NULL, *payload;
	size_t len;
	int32_t code;

	ck_assert_int_eq(thps_rpc_response_encode(5, THPS_RPC_UNIMPLEMENTED, NULL, 0, &rec, &len),
			 0);
	ck_assert_int_eq(thps_mux_feed(&m, rec, len), 0);
	ck_assert_int_eq(thps_ttrpc_stream_next(&m.conns[THPS_NRI_CONN_PLUGIN - 1], &h, &p), 1);
	ck_assert_uint_eq(h.type, THPS_TTRPC_RESPONSE);
	ck_assert_int_eq(thps_rpc_response_decode(p, h.length, &code, &payload, &len), 0);
	ck_assert_int_eq(code, THPS_RPC_UNIMPLEMENTED);
	ck_assert_ptr_null(payload);
	free(p);
	free(rec);
	/* An OK answer with an empty message is an empty frame: also a valid Response. */
	ck_assert_int_eq(thps_rpc_response_decode((const uint8_t *)"", 0, &code, &payload, &len),
			 0);
	ck_assert_int_eq(code, THPS_RPC_OK);
	thps_mux_free(&m);
}
END_TEST

START_TEST(test_hostile_messages)
{
	struct thps_pb_budget b;
	Ttrpc__Request *req;
	/* field 1 (service), length 100, 3 bytes present: truncated. */
	const uint8_t trunc[] = {0x0a, 100, 'a', 'b', 'c'};
	/* field 5 (metadata) repeated empty: 2 bytes each on the wire, a struct each in memory. */
	size_t n = 200000;
	uint8_t *many = malloc(2 * n);

	thps_pb_budget_init(&b, THPS_RPC_BUDGET);
	ck_assert_int_eq(thps_rpc_request_decode(trunc, sizeof(trunc), &b, &req), -EBADMSG);
	for (size_t i = 0; i < n; i++) {
		many[2 * i] = 0x2a;
		many[2 * i + 1] = 0;
	}
	thps_pb_budget_init(&b, 1u << 20);
	ck_assert_int_eq(thps_rpc_request_decode(many, 2 * n, &b, &req), -E2BIG);
	ck_assert_uint_eq(b.used, 0);
	thps_pb_budget_init(&b, THPS_RPC_BUDGET);
	ck_assert_int_eq(thps_rpc_request_decode(many, 2 * n, &b, &req), 0);
	ck_assert_uint_eq(req->n_metadata, n);
	ttrpc__request__free_unpacked(req, &b.allocator);
	free(many);
}
END_TEST

typedef Nri__Pkg__Api__V1alpha1__PodSandbox__LabelsEntry PodKV;
typedef Nri__Pkg__Api__V1alpha1__Container__AnnotationsEntry CtrKV;

/* Packs a CreateContainerRequest and decodes it as the plugin does. */
static int decode_create(Nri__Pkg__Api__V1alpha1__PodSandbox *pod,
			 Nri__Pkg__Api__V1alpha1__Container *c, struct thps_nri_call_args *a)
{
	Nri__Pkg__Api__V1alpha1__CreateContainerRequest req =
	    NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_REQUEST__INIT;
	struct thps_pb_budget b;
	uint8_t *p;
	size_t len;
	int r;

	req.pod = pod;
	req.container = c;
	ck_assert_int_eq(thps_pb_pack(&req.base, &p, &len), 0);
	thps_pb_budget_init(&b, THPS_RPC_BUDGET);
	r = thps_nri_call_decode(THPS_NRI_SERVICE_PLUGIN, "CreateContainer", p, len, &b, a);
	free(p);
	ck_assert_uint_eq(b.used, 0);
	return r;
}

START_TEST(test_nri_create_container)
{
	Nri__Pkg__Api__V1alpha1__PodSandbox pod = NRI__PKG__API__V1ALPHA1__POD_SANDBOX__INIT;
	Nri__Pkg__Api__V1alpha1__Container c = NRI__PKG__API__V1ALPHA1__CONTAINER__INIT;
	Nri__Pkg__Api__V1alpha1__LinuxContainer lc = NRI__PKG__API__V1ALPHA1__LINUX_CONTAINER__INIT;
	Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry pa =
	    NRI__PKG__API__V1ALPHA1__POD_SANDBOX__ANNOTATIONS_ENTRY__INIT;
	Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry *pas[] = {&pa};
	CtrKV ca = NRI__PKG__API__V1ALPHA1__CONTAINER__ANNOTATIONS_ENTRY__INIT, *cas[] = {&ca};
	PodKV l[20], *ls[20];
	char keys[20][8];
	struct thps_nri_call_args a;

	pod.namespace_ = (char *)"batch";
	pod.name = (char *)"web-0";
	pod.uid = (char *)"0f0e0d0c-0b0a-4908-8706-050403020100";
	/* 20 labels, given in reverse: the 16 smallest keys are kept, sorted. */
	for (int i = 0; i < 20; i++) {
		l[i] = (PodKV)NRI__PKG__API__V1ALPHA1__POD_SANDBOX__LABELS_ENTRY__INIT;
		snprintf(keys[i], sizeof(keys[i]), "k%02d", 19 - i);
		l[i].key = keys[i];
		l[i].value = (char *)"v";
		ls[i] = &l[i];
	}
	pod.n_labels = 20;
	pod.labels = ls;
	pa.key = (char *)THPS_ANN_POLICY;
	pa.value = (char *)"from-pod";
	pod.n_annotations = 1;
	pod.annotations = pas;
	c.id = (char *)"c1";
	c.name = (char *)"app";
	lc.cgroups_path = (char *)"/kubepods/pod1/c1";
	c.linux = &lc;
	ca.key = (char *)THPS_ANN_POLICY;
	ca.value = (char *)"from-container";
	c.n_annotations = 1;
	c.annotations = cas;

	ck_assert_int_eq(decode_create(&pod, &c, &a), 0);
	ck_assert_int_eq(a.call, THPS_NRI_CALL_CREATE_CONTAINER);
	ck_assert_uint_eq(a.n, 1);
	ck_assert_str_eq(a.containers[0].id, "c1");
	ck_assert_str_eq(a.containers[0].k8s_namespace, "batch");
	ck_assert_str_eq(a.containers[0].pod, "web-0");
	ck_assert_str_eq(a.containers[0].container, "app");
	ck_assert_str_eq(a.containers[0].cgroups_path, "/kubepods/pod1/c1");
	ck_assert_str_eq(a.containers[0].policy, "from-container");
	ck_assert_uint_eq(a.containers[0].n_labels, THPS_REGISTRATION_LABELS_MAX);
	ck_assert_uint_eq(a.containers[0].labels_dropped, 4);
	ck_assert_str_eq(a.containers[0].labels[0].key, "k00");
	ck_assert_str_eq(a.containers[0].labels[15].key, "k15");
	ck_assert_uint_eq(a.containers[0].dropped, 0);
	thps_nri_call_args_free(&a);

	/* Control characters and bad names: dropped and flagged, the container still decoded. */
	ca.value = (char *)"re\001dis";
	pod.namespace_ = (char *)"Batch";
	c.name = (char *)"a_b";
	ck_assert_int_eq(decode_create(&pod, &c, &a), 0);
	ck_assert_uint_eq(a.n, 1);
	ck_assert_str_eq(a.containers[0].policy, "");
	ck_assert_str_eq(a.containers[0].k8s_namespace, "");
	ck_assert_str_eq(a.containers[0].container, "");
	ck_assert_uint_eq(a.containers[0].dropped,
			  THPS_NRI_DROP_POLICY | THPS_NRI_DROP_NAMESPACE | THPS_NRI_DROP_CONTAINER);
	thps_nri_call_args_free(&a);

	/* No valid id: the container is refused whole, the call still decodes. */
	c.id = (char *)"../x";
	ck_assert_int_eq(decode_create(&pod, &c, &a), 0);
	ck_assert_uint_eq(a.n, 0);
	ck_assert_uint_eq(a.refused, 1);
	thps_nri_call_args_free(&a);
}
END_TEST

START_TEST(test_nri_calls)
{
	struct thps_nri_call_args a;
	struct thps_pb_budget b;
	uint8_t *p;
	size_t len;
	const uint8_t bad[] = {0x0a, 0xff, 0xff, 0xff, 0x0f};

	ck_assert_int_eq(thps_nri_call_from(THPS_NRI_SERVICE_PLUGIN, "Configure"),
			 THPS_NRI_CALL_CONFIGURE);
	ck_assert_int_eq(thps_nri_call_from(THPS_NRI_SERVICE_RUNTIME, "Configure"),
			 THPS_NRI_CALL_UNKNOWN);
	thps_pb_budget_init(&b, THPS_RPC_BUDGET);
	ck_assert_int_eq(
	    thps_nri_call_decode(THPS_NRI_SERVICE_PLUGIN, "Frobnicate", NULL, 0, &b, &a),
	    -EOPNOTSUPP);
	ck_assert_int_eq(thps_nri_call_decode(THPS_NRI_SERVICE_PLUGIN, "CreateContainer", bad,
					      sizeof(bad), &b, &a),
			 -EBADMSG);
	/* An empty StateChange is a valid message with no container: nothing to do. */
	ck_assert_int_eq(
	    thps_nri_call_decode(THPS_NRI_SERVICE_PLUGIN, "StateChange", NULL, 0, &b, &a), 0);
	ck_assert_uint_eq(a.n, 0);
	thps_nri_call_args_free(&a);

	/* Configure's answer subscribes to create, start, stop and remove: 0x628. */
	ck_assert_int_eq(thps_nri_answer_encode(THPS_NRI_CALL_CONFIGURE, &p, &len), 0);
	ck_assert_uint_eq(len, 3);
	ck_assert_mem_eq(p, "\x10\xa8\x0c", 3);
	free(p);
	ck_assert_int_eq(thps_nri_answer_encode(THPS_NRI_CALL_CREATE_CONTAINER, &p, &len), 0);
	ck_assert_uint_eq(len, 0);

	ck_assert_int_eq(thps_nri_register_encode("thpshrink", "50", &p, &len), 0);
	ck_assert_uint_eq(len, 15);
	free(p);
	ck_assert_int_eq(thps_nri_register_encode("thpshrink", "5", &p, &len), -EINVAL);
	ck_assert_int_eq(thps_nri_register_encode("a/b", "50", &p, &len), -EINVAL);
}
END_TEST

/* protobuf-c would hand "g-split\0x" over as "g-split": a call with a NUL in any string field,
 * however deep, is refused whole. */
START_TEST(test_nri_nul_in_string)
{
	Nri__Pkg__Api__V1alpha1__CreateContainerRequest req =
	    NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_REQUEST__INIT;
	Nri__Pkg__Api__V1alpha1__Container c = NRI__PKG__API__V1ALPHA1__CONTAINER__INIT;
	CtrKV ca = NRI__PKG__API__V1ALPHA1__CONTAINER__ANNOTATIONS_ENTRY__INIT, *cas[] = {&ca};
	struct thps_nri_call_args a;
	struct thps_pb_budget b;
	uint8_t *p, *x;
	size_t len;

	c.id = (char *)"c1";
	ca.key = (char *)THPS_ANN_POLICY;
	ca.value = (char *)"g-splitXx";
	c.n_annotations = 1;
	c.annotations = cas;
	req.container = &c;
	ck_assert_int_eq(thps_pb_pack(&req.base, &p, &len), 0);
	thps_pb_budget_init(&b, THPS_RPC_BUDGET);
	ck_assert_int_eq(
	    thps_pb_strings_clean(&nri__pkg__api__v1alpha1__create_container_request__descriptor, p,
				  len),
	    1);
	ck_assert_int_eq(
	    thps_nri_call_decode(THPS_NRI_SERVICE_PLUGIN, "CreateContainer", p, len, &b, &a), 0);
	ck_assert_str_eq(a.containers[0].policy, "g-splitXx");
	thps_nri_call_args_free(&a);
	x = memchr(p, 'X', len);
	ck_assert_ptr_nonnull(x);
	*x = '\0';
	ck_assert_int_eq(
	    thps_pb_strings_clean(&nri__pkg__api__v1alpha1__create_container_request__descriptor, p,
				  len),
	    0);
	ck_assert_int_eq(
	    thps_nri_call_decode(THPS_NRI_SERVICE_PLUGIN, "CreateContainer", p, len, &b, &a),
	    -EILSEQ);
	/* A NUL in a bytes field is data, not a cut string. */
	ck_assert_int_eq(thps_pb_strings_clean(&ttrpc__request__descriptor,
					       (const uint8_t *)"\x1a\x02\x00\x00", 4),
			 1);
	ck_assert_int_eq(thps_pb_strings_clean(&ttrpc__request__descriptor,
					       (const uint8_t *)"\x12\x02\x00\x00", 4),
			 0);
	/* Truncated, or a group: not a message. */
	ck_assert_int_eq(
	    thps_pb_strings_clean(&ttrpc__request__descriptor, (const uint8_t *)"\x12\x05" "ab", 4),
	    -EBADMSG);
	ck_assert_int_eq(
	    thps_pb_strings_clean(&ttrpc__request__descriptor, (const uint8_t *)"\x0b", 1),
	    -EBADMSG);
	free(p);
}
END_TEST

static Suite *nri_suite(void)
{
	Suite *s = suite_create("nri");
	TCase *tc = tcase_create("ttrpc");

	tcase_add_test(tc, test_header_roundtrip);
	tcase_add_test(tc, test_frames_any_cut);
	tcase_add_test(tc, test_frame_across_chunks);
	tcase_add_test(tc, test_oversized_frame_skipped);
	tcase_add_test(tc, test_hostile_mux);
	tcase_add_test(tc, test_stream_bounded);
	tcase_add_test(tc, test_request_roundtrip);
	tcase_add_test(tc, test_response_codes);
	tcase_add_test(tc, test_hostile_messages);
	suite_add_tcase(s, tc);
	tc = tcase_create("calls");
	tcase_add_test(tc, test_nri_create_container);
	tcase_add_test(tc, test_nri_calls);
	tcase_add_test(tc, test_nri_nul_in_string);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(nri_suite)
