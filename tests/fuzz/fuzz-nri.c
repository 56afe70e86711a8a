/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The NRI plugin's decoding of what the runtime sends: the trunk's bytes (fed in uneven pieces,
 * as reads return them) → mux chunks → ttrpc frames → ttrpc Request/Response protobufs → NRI's
 * calls to the plugin (nri.h). */
#include <errno.h>
#include <stdlib.h>

#include "fuzz.h"
#include "nri.h"
#include "rpc.h"
#include "ttrpc.h"

static const char *const calls[] = {"Synchronize", "CreateContainer", "StopContainer",
				    "StateChange", "Configure"};

static void take_frames(struct thps_mux *m)
{
	for (unsigned c = 0; c < THPS_NRI_CONNS; c++) {
		struct thps_ttrpc_header h;
		uint8_t *p = NULL;
		int r;

		while ((r = thps_ttrpc_stream_next(&m->conns[c], &h, &p)) != 0) {
			if (r < 0) {
				if (r != -EMSGSIZE)
					return;
				continue;
			}
			if (h.type == THPS_TTRPC_REQUEST) {
				struct thps_pb_budget b;
				Ttrpc__Request *req;

				thps_pb_budget_init(&b, 1u << 20);
				if (thps_rpc_request_decode(p, h.length, &b, &req) == 0) {
					struct thps_nri_call_args a;

					/* The method the runtime names, or each call in turn
					 * (the corpus rarely spells them). */
					if (thps_nri_call_decode(req->service, req->method,
								 req->payload.data,
								 req->payload.len, &b, &a) == 0)
						thps_nri_call_args_free(&a);
					if (thps_nri_call_decode(
						THPS_NRI_SERVICE_PLUGIN, calls[h.stream_id % 5],
						req->payload.data, req->payload.len, &b, &a) == 0)
						thps_nri_call_args_free(&a);
					ttrpc__request__free_unpacked(req, &b.allocator);
				}
			} else if (h.type == THPS_TTRPC_RESPONSE) {
				uint8_t *payload;
				size_t len;
				int32_t code;

				if (thps_rpc_response_decode(p, h.length, &code, &payload, &len) ==
				    0)
					free(payload);
			}
			free(p);
			p = NULL;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct thps_mux m = {0};
	size_t off = 0, step = 1;

	/* Pieces of 1, 2, 4, … bytes: every header and payload gets cut somewhere. */
	while (off < size) {
		size_t n = size - off < step ? size - off : step;

		if (thps_mux_feed(&m, data + off, n) < 0)
			break;
		take_frames(&m);
		off += n;
		step = step * 2 > THPS_TTRPC_READ_MAX ? 1 : step * 2;
	}
	thps_mux_free(&m);
	return 0;
}
