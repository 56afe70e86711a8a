/* SPDX-License-Identifier: GPL-2.0-or-later */
/* NRI's calls decoded into bounded, checked containers (nri.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "k8s.h"
#include "macro.h"
#include "nri.h"
#include "proto/api.pb-c.h"

typedef Nri__Pkg__Api__V1alpha1__PodSandbox Pod;
typedef Nri__Pkg__Api__V1alpha1__Container Ctr;

static const struct {
	const char *method;
	enum thps_nri_call call;
	int32_t event;
} calls[] = {
    {"Configure", THPS_NRI_CALL_CONFIGURE, 0},
    {"Synchronize", THPS_NRI_CALL_SYNCHRONIZE, 0},
    {"Shutdown", THPS_NRI_CALL_SHUTDOWN, 0},
    {"CreateContainer", THPS_NRI_CALL_CREATE_CONTAINER, THPS_NRI_EV_CREATE_CONTAINER},
    {"UpdateContainer", THPS_NRI_CALL_UPDATE_CONTAINER, 8},
    {"StopContainer", THPS_NRI_CALL_STOP_CONTAINER, THPS_NRI_EV_STOP_CONTAINER},
    {"StateChange", THPS_NRI_CALL_STATE_CHANGE, 0},
};

enum thps_nri_call thps_nri_call_from(const char *service, const char *method)
{
	if (!service || !method || strcmp(service, THPS_NRI_SERVICE_PLUGIN))
		return THPS_NRI_CALL_UNKNOWN;
	for (size_t i = 0; i < ELEMENTSOF(calls); i++)
		if (!strcmp(method, calls[i].method))
			return calls[i].call;
	return THPS_NRI_CALL_UNKNOWN;
}

void thps_nri_call_args_free(struct thps_nri_call_args *a)
{
	free(a->containers);
	a->containers = NULL;
	a->n = 0;
}

/* Copies s into dst when check accepts it, else leaves dst "" and sets bit in *dropped. An
 * absent or empty s is not a drop. */
static void take(const char *s, bool (*check)(const char *), char *dst, size_t size, unsigned bit,
		 unsigned *dropped)
{
	dst[0] = '\0';
	if (!s || !s[0])
		return;
	if (strlen(s) >= size || !check(s)) {
		*dropped |= bit;
		return;
	}
	strcpy(dst, s);
}

static bool clean(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* protobuf-c gives a map as key/value pairs; the last of a repeated key wins, as in Go. */
#define FIND(entries, n, k)                                                                        \
	({                                                                                         \
		const char *_v = NULL;                                                             \
		for (size_t _i = 0; _i < (n); _i++)                                                \
			if ((entries)[_i] && (entries)[_i]->key &&                                 \
			    !strcmp((entries)[_i]->key, (k)))                                      \
				_v = (entries)[_i]->value;                                         \
		_v;                                                                                \
	})

static void annotation(const Pod *p, const Ctr *c, const char *key, char *dst, unsigned bit,
		       unsigned *dropped)
{
	const char *v = c ? FIND(c->annotations, c->n_annotations, key) : NULL;

	if (!v && p)
		v = FIND(p->annotations, p->n_annotations, key);
	take(v, clean, dst, THPS_NRI_ANN_MAX + 1, bit, dropped);
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct thps_registration_label *)a)->key,
		      ((const struct thps_registration_label *)b)->key);
}

/* The pod's valid labels, the smallest keys first when there are more than we keep. */
static void labels(const Pod *p, struct thps_nri_container *r)
{
	struct thps_registration_label cand[THPS_REGISTRATION_LABELS_MAX + 1];
	size_t n = 0;

	r->n_labels = 0;
	r->labels_dropped = 0;
	if (!p)
		return;
	for (size_t i = 0; i < p->n_labels; i++) {
		const char *k = p->labels[i] ? p->labels[i]->key : NULL;
		const char *v = p->labels[i] ? p->labels[i]->value : NULL;
		bool dup = false;

		if (!k || !v || !thps_k8s_label_key_valid(k) || !thps_k8s_label_value_valid(v)) {
			r->labels_dropped++;
			continue;
		}
		for (size_t j = 0; j < n; j++)
			if (!strcmp(cand[j].key, k)) {
				strcpy(cand[j].value, v);
				dup = true;
			}
		if (dup)
			continue;
		strcpy(cand[n].key, k);
		strcpy(cand[n].value, v);
		n++;
		/* Keep one over the bound, sort, drop the largest: a bounded top-16 by key. */
		if (n > THPS_REGISTRATION_LABELS_MAX) {
			qsort(cand, n, sizeof(cand[0]), label_cmp);
			n--;
			r->labels_dropped++;
		}
	}
	qsort(cand, n, sizeof(cand[0]), label_cmp);
	memcpy(r->labels, cand, n * sizeof(cand[0]));
	r->n_labels = n;
}

static bool uid_ok(const char *s)
{
	return thps_k8s_uid_valid(s);
}

static bool path_ok(const char *s)
{
	return clean(s);
}

/* Fills r from a pod (may be NULL) and a container. Returns 0, -EINVAL (no valid id). */
static int container_from(const Pod *p, const Ctr *c, struct thps_nri_container *r)
{
	memset(r, 0, sizeof(*r));
	if (!c || !c->id || strlen(c->id) > THPS_OCI_ID_MAX || !thps_oci_id_valid(c->id))
		return -EINVAL;
	strcpy(r->id, c->id);
	r->pid = c->pid;
	r->running = c->state == NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING;
	take(c->name, thps_k8s_dns_label_valid, r->container, sizeof(r->container),
	     THPS_NRI_DROP_CONTAINER, &r->dropped);
	take(c->linux ? c->linux->cgroups_path : NULL, path_ok, r->cgroups_path,
	     sizeof(r->cgroups_path), THPS_NRI_DROP_CGROUPS_PATH, &r->dropped);
	if (p) {
		take(p->namespace_, thps_k8s_dns_label_valid, r->k8s_namespace,
		     sizeof(r->k8s_namespace), THPS_NRI_DROP_NAMESPACE, &r->dropped);
		take(p->name, thps_k8s_subdomain_valid, r->pod, sizeof(r->pod), THPS_NRI_DROP_POD,
		     &r->dropped);
		take(p->uid, uid_ok, r->pod_uid, sizeof(r->pod_uid), THPS_NRI_DROP_POD_UID,
		     &r->dropped);
	}
	labels(p, r);
	annotation(p, c, THPS_ANN_POLICY, r->policy, THPS_NRI_DROP_POLICY, &r->dropped);
	annotation(p, c, THPS_ANN_MODE, r->mode, THPS_NRI_DROP_MODE, &r->dropped);
	return 0;
}

static int one(const Pod *p, const Ctr *c, struct thps_nri_call_args *a)
{
	a->containers = calloc(1, sizeof(*a->containers));
	if (!a->containers)
		return -ENOMEM;
	if (container_from(p, c, &a->containers[0]) < 0) {
		a->refused = 1;
		return 0;
	}
	a->n = 1;
	return 0;
}

static int synchronize(const Nri__Pkg__Api__V1alpha1__SynchronizeRequest *s,
		       struct thps_nri_call_args *a)
{
	if (s->n_containers == 0)
		return 0;
	a->containers = calloc(s->n_containers, sizeof(*a->containers));
	if (!a->containers)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_containers; i++) {
		const Ctr *c = s->containers[i];
		const Pod *p = NULL;

		/* Pods are few per node; a linear look-up per container is enough. */
		for (size_t j = 0; c && c->pod_sandbox_id && j < s->n_pods; j++)
			if (s->pods[j] && s->pods[j]->id &&
			    !strcmp(s->pods[j]->id, c->pod_sandbox_id))
				p = s->pods[j];
		if (container_from(p, c, &a->containers[a->n]) < 0)
			a->refused++;
		else
			a->n++;
	}
	return 0;
}

static void bounded_copy(char *dst, size_t size, const char *s)
{
	size_t n = s ? strnlen(s, size - 1) : 0;

	memcpy(dst, s ? s : "", n);
	dst[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
			dst[i] = '?';
}

/* A string with a NUL would reach us cut: such a call is refused whole (-EILSEQ), as the hook
 * refuses such an annotation. */
#define UNPACK(type, prefix)                                                                       \
	int _c = thps_pb_strings_clean(&prefix##__descriptor, payload, len);                       \
	if (_c <= 0)                                                                               \
		return _c < 0 ? _c : -EILSEQ;                                                      \
	type *m = prefix##__unpack(&b->allocator, len, payload);                                   \
	if (!m)                                                                                    \
		return b->exhausted ? -E2BIG : -EBADMSG;

int thps_nri_call_decode(const char *service, const char *method, const uint8_t *payload,
			 size_t len, struct thps_pb_budget *b, struct thps_nri_call_args *ret)
{
	struct thps_nri_call_args a = {.call = thps_nri_call_from(service, method)};
	int r = 0;

	for (size_t i = 0; i < ELEMENTSOF(calls); i++)
		if (calls[i].call == a.call)
			a.event = calls[i].event;
	switch (a.call) {
	case THPS_NRI_CALL_UNKNOWN:
		return -EOPNOTSUPP;
	case THPS_NRI_CALL_CONFIGURE: {
		UNPACK(Nri__Pkg__Api__V1alpha1__ConfigureRequest,
		       nri__pkg__api__v1alpha1__configure_request);
		bounded_copy(a.runtime_name, sizeof(a.runtime_name), m->runtime_name);
		bounded_copy(a.runtime_version, sizeof(a.runtime_version), m->runtime_version);
		nri__pkg__api__v1alpha1__configure_request__free_unpacked(m, &b->allocator);
		break;
	}
	case THPS_NRI_CALL_SYNCHRONIZE: {
		UNPACK(Nri__Pkg__Api__V1alpha1__SynchronizeRequest,
		       nri__pkg__api__v1alpha1__synchronize_request);
		r = synchronize(m, &a);
		nri__pkg__api__v1alpha1__synchronize_request__free_unpacked(m, &b->allocator);
		break;
	}
	case THPS_NRI_CALL_SHUTDOWN: {
		UNPACK(Nri__Pkg__Api__V1alpha1__Empty, nri__pkg__api__v1alpha1__empty);
		nri__pkg__api__v1alpha1__empty__free_unpacked(m, &b->allocator);
		break;
	}
	case THPS_NRI_CALL_CREATE_CONTAINER: {
		UNPACK(Nri__Pkg__Api__V1alpha1__CreateContainerRequest,
		       nri__pkg__api__v1alpha1__create_container_request);
		r = one(m->pod, m->container, &a);
		nri__pkg__api__v1alpha1__create_container_request__free_unpacked(m, &b->allocator);
		break;
	}
	case THPS_NRI_CALL_UPDATE_CONTAINER: {
		UNPACK(Nri__Pkg__Api__V1alpha1__UpdateContainerRequest,
		       nri__pkg__api__v1alpha1__update_container_request);
		r = one(m->pod, m->container, &a);
		nri__pkg__api__v1alpha1__update_container_request__free_unpacked(m, &b->allocator);
		break;
	}
	case THPS_NRI_CALL_STOP_CONTAINER: {
		UNPACK(Nri__Pkg__Api__V1alpha1__StopContainerRequest,
		       nri__pkg__api__v1alpha1__stop_container_request);
		r = one(m->pod, m->container, &a);
		nri__pkg__api__v1alpha1__stop_container_request__free_unpacked(m, &b->allocator);
		break;
	}
	case THPS_NRI_CALL_STATE_CHANGE: {
		UNPACK(Nri__Pkg__Api__V1alpha1__StateChangeEvent,
		       nri__pkg__api__v1alpha1__state_change_event);
		a.event = m->event;
		/* A pod event has no container: nothing of ours to do. */
		if (m->container)
			r = one(m->pod, m->container, &a);
		nri__pkg__api__v1alpha1__state_change_event__free_unpacked(m, &b->allocator);
		break;
	}
	}
	if (r < 0) {
		thps_nri_call_args_free(&a);
		return r;
	}
	*ret = a;
	return 0;
}

int thps_nri_answer_encode(enum thps_nri_call call, uint8_t **ret, size_t *ret_len)
{
	Nri__Pkg__Api__V1alpha1__ConfigureResponse cfg =
	    NRI__PKG__API__V1ALPHA1__CONFIGURE_RESPONSE__INIT;

	/* Every other answer is an empty message (no adjustment, no update, no eviction): the
	 * plugin only watches. An empty message packs to no bytes. */
	if (call != THPS_NRI_CALL_CONFIGURE) {
		*ret = NULL;
		*ret_len = 0;
		return 0;
	}
	cfg.events = (int32_t)THPS_NRI_EVENTS;
	return thps_pb_pack(&cfg.base, ret, ret_len);
}

int thps_nri_register_encode(const char *name, const char *idx, uint8_t **ret, size_t *ret_len)
{
	Nri__Pkg__Api__V1alpha1__RegisterPluginRequest req =
	    NRI__PKG__API__V1ALPHA1__REGISTER_PLUGIN_REQUEST__INIT;

	if (!idx || strlen(idx) != 2 || idx[0] < '0' || idx[0] > '9' || idx[1] < '0' ||
	    idx[1] > '9' || !thps_name_valid(name, THPS_OCI_NAME_MAX, false))
		return -EINVAL;
	req.plugin_name = (char *)name;
	req.plugin_idx = (char *)idx;
	return thps_pb_pack(&req.base, ret, ret_len);
}
