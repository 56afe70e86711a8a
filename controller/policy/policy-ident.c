/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The selectors on a registration's Kubernetes identity: namespace, pod name, container name
 * and pod labels, as thpshrink-nri (or the hook, from CRI-O's and podman's annotations)
 * recorded them. Kept apart from the cgroup-path selectors (policy-set.c) because who sets
 * them differs: a namespace is the operator's (a tenant cannot put its pod in another), the
 * rest the tenant's own, which is why thps_policy_match ranks them as it does. */
#include <fnmatch.h>
#include <string.h>

#include "policy.h"
#include "registrations.h"

static bool any_equal(char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], s))
			return true;
	return false;
}

static bool any_glob(char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(list[i], s, 0) == 0)
			return true;
	return false;
}

static bool has_label(const struct thps_registration *reg, const char *key, const char *value)
{
	for (size_t i = 0; i < reg->n_labels && i < THPS_REGISTRATION_LABELS_MAX; i++)
		if (!strcmp(reg->labels[i].key, key))
			return !strcmp(reg->labels[i].value, value);
	return false;
}

bool thps_policy_ident_match(const struct thps_policy *p, const struct thps_registration *reg)
{
	if (!p->n_match_namespace && !p->n_match_pod && !p->n_match_container_name &&
	    !p->n_match_labels)
		return true;
	/* an identity nobody told matches no selector on it: "" is never a name */
	if (!reg)
		return false;
	if (p->n_match_namespace &&
	    (!reg->k8s_namespace[0] ||
	     !any_equal(p->match_namespace, p->n_match_namespace, reg->k8s_namespace)))
		return false;
	if (p->n_match_pod && (!reg->pod[0] || !any_glob(p->match_pod, p->n_match_pod, reg->pod)))
		return false;
	if (p->n_match_container_name &&
	    (!reg->container[0] ||
	     !any_glob(p->match_container_name, p->n_match_container_name, reg->container)))
		return false;
	for (size_t i = 0; i < p->n_match_labels; i++)
		if (!has_label(reg, p->match_label_key[i], p->match_label_value[i]))
			return false;
	return true;
}

unsigned thps_policy_ident_tenant_selectors(const struct thps_policy *p)
{
	return (p->n_match_pod > 0) + (p->n_match_container_name > 0) + (unsigned)p->n_match_labels;
}
