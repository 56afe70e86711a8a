/* SPDX-License-Identifier: GPL-2.0-or-later */
/* NRI's calls to the plugin (nri.pkg.api.v1alpha1.Plugin), decoded into what thpshrink keeps of
 * them: per container its id, cgroups path, pid, the pod's Kubernetes identity and the two
 * thpshrink annotations, every field bounded and checked, never a pointer into protobuf-c's
 * memory. A field that fails its check is dropped and said so in `dropped`, for the caller to
 * log; only a container without a valid id is refused whole. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "registrations.h"
#include "rpc.h"
#include "valid.h"

#define THPS_NRI_SERVICE_PLUGIN	 "nri.pkg.api.v1alpha1.Plugin"
#define THPS_NRI_SERVICE_RUNTIME "nri.pkg.api.v1alpha1.Runtime"
#define THPS_NRI_ANN_MAX	 256 /* an annotation value longer than this is dropped */

/* NRI's Event numbers (api.proto); a subscription sets bit (event - 1). */
enum thps_nri_event_id {
	THPS_NRI_EV_CREATE_CONTAINER = 4,
	THPS_NRI_EV_START_CONTAINER = 6,
	THPS_NRI_EV_STOP_CONTAINER = 10,
	THPS_NRI_EV_REMOVE_CONTAINER = 11,
};
#define THPS_NRI_EV_BIT(e) (1u << ((e)-1))
/* What thpshrink-nri subscribes to: registered at creation, refreshed with the pid at start,
 * removed at stop (as the hook's poststop) and again at removal (a missed stop). */
#define THPS_NRI_EVENTS                                                                            \
	(THPS_NRI_EV_BIT(THPS_NRI_EV_CREATE_CONTAINER) |                                           \
	 THPS_NRI_EV_BIT(THPS_NRI_EV_START_CONTAINER) |                                            \
	 THPS_NRI_EV_BIT(THPS_NRI_EV_STOP_CONTAINER) |                                             \
	 THPS_NRI_EV_BIT(THPS_NRI_EV_REMOVE_CONTAINER))

enum thps_nri_call {
	THPS_NRI_CALL_UNKNOWN,
	THPS_NRI_CALL_CONFIGURE,
	THPS_NRI_CALL_SYNCHRONIZE,
	THPS_NRI_CALL_SHUTDOWN,
	THPS_NRI_CALL_CREATE_CONTAINER,
	THPS_NRI_CALL_UPDATE_CONTAINER,
	THPS_NRI_CALL_STOP_CONTAINER,
	THPS_NRI_CALL_STATE_CHANGE,
};

/* Bits of thps_nri_container.dropped: which fields failed their check. */
enum {
	THPS_NRI_DROP_NAMESPACE = 1 << 0,
	THPS_NRI_DROP_POD = 1 << 1,
	THPS_NRI_DROP_POD_UID = 1 << 2,
	THPS_NRI_DROP_CONTAINER = 1 << 3,
	THPS_NRI_DROP_CGROUPS_PATH = 1 << 4,
	THPS_NRI_DROP_POLICY = 1 << 5, /* too long or a control character: never cut */
	THPS_NRI_DROP_MODE = 1 << 6,
};

struct thps_nri_container {
	char id[THPS_OCI_ID_MAX + 1];
	char cgroups_path[THPS_CGROUP_PATH_MAX]; /* as the runtime gives it (OCI linux.cgroupsPath)
						  */
	uint32_t pid;				 /* 0 before the container starts */
	bool running;				 /* NRI's state is CONTAINER_RUNNING */
	char k8s_namespace[THPS_K8S_LABEL_MAX + 1];
	char pod[THPS_K8S_SUBDOMAIN_MAX + 1];
	char pod_uid[THPS_K8S_LABEL_MAX + 1];
	char container[THPS_K8S_LABEL_MAX + 1];
	size_t n_labels; /* sorted by key, at most THPS_REGISTRATION_LABELS_MAX */
	struct thps_registration_label labels[THPS_REGISTRATION_LABELS_MAX];
	size_t labels_dropped; /* pod labels left out: invalid, or past the bound */
	/* io.thpshrink.policy / io.thpshrink.mode of the container, else of the pod; "" if none
	 * (or dropped). Not yet checked as a policy name or a mode: the caller decides. */
	char policy[THPS_NRI_ANN_MAX + 1];
	char mode[THPS_NRI_ANN_MAX + 1];
	unsigned dropped;
};

struct thps_nri_call_args {
	enum thps_nri_call call;
	int32_t event; /* StateChange's event; the call's own for the container calls */
	char runtime_name[64], runtime_version[64]; /* Configure */
	size_t n;			       /* containers (Synchronize: all the runtime has) */
	struct thps_nri_container *containers; /* malloc'd */
	size_t refused;			       /* containers left out for an invalid id */
};

void thps_nri_call_args_free(struct thps_nri_call_args *a);

/* Which call a Request is (service and method), THPS_NRI_CALL_UNKNOWN for any other. */
enum thps_nri_call thps_nri_call_from(const char *service, const char *method);

/* Decodes the payload of a call to the plugin. Returns 0, -EOPNOTSUPP (an unknown call),
 * -EBADMSG (not the call's message), -EILSEQ (a string field holds a NUL: protobuf-c would
 * cut it, so the call is refused whole), -E2BIG (over the budget), -ENOMEM. */
int thps_nri_call_decode(const char *service, const char *method, const uint8_t *payload,
			 size_t len, struct thps_pb_budget *b, struct thps_nri_call_args *ret);

/* The payload of the plugin's answer to call (malloc'd, may be empty). Returns 0, -ENOMEM. */
int thps_nri_answer_encode(enum thps_nri_call call, uint8_t **ret, size_t *ret_len);

/* The payload of RegisterPlugin(name, idx). Returns 0, -EINVAL (idx is not two digits or name
 * not a plain name), -ENOMEM. */
int thps_nri_register_encode(const char *name, const char *idx, uint8_t **ret, size_t *ret_len);
