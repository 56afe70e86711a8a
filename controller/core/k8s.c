/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kubelet's cgroup layout → pod UID, QoS class, container id; see k8s.h. Works on pointer and
 * length pairs over the caller's string: nothing is copied until a field has matched. */
#include <errno.h>
#include <string.h>

#include "k8s.h"
#include "macro.h"

struct comp {
	const char *s;
	size_t n;
};

static const char *const qos_names[] = {
    [THPS_K8S_QOS_NONE] = "",
    [THPS_K8S_QOS_GUARANTEED] = "guaranteed",
    [THPS_K8S_QOS_BURSTABLE] = "burstable",
    [THPS_K8S_QOS_BESTEFFORT] = "besteffort",
};

/* The runtimes' prefixes of a container's cgroup name, and who they are. */
static const struct {
	const char *prefix, *runtime;
} runtimes[] = {
    {"cri-containerd-", "containerd"},
    {"crio-", "cri-o"},
    {"docker-", "docker"},
};

const char *thps_k8s_qos_name(enum thps_k8s_qos q)
{
	return (unsigned)q < ELEMENTSOF(qos_names) ? qos_names[q] : "";
}

enum thps_k8s_qos thps_k8s_qos_from_name(const char *s)
{
	for (unsigned q = THPS_K8S_QOS_GUARANTEED; s && q < ELEMENTSOF(qos_names); q++)
		if (!strcmp(s, qos_names[q]))
			return (enum thps_k8s_qos)q;
	return THPS_K8S_QOS_NONE;
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* 1 if s[0..36) is 8-4-4-4-12 lowercase hex with sep between the groups. */
static bool uid_match(const char *s, size_t n, char sep)
{
	if (n != THPS_K8S_UID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (i == 8 || i == 13 || i == 18 || i == 23 ? s[i] != sep : !is_hex(s[i]))
			return false;
	return true;
}

bool thps_k8s_uid_valid(const char *s)
{
	return s && uid_match(s, strlen(s), '-');
}

static bool id_match(const char *s, size_t n)
{
	if (n != THPS_K8S_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_hex(s[i]))
			return false;
	return true;
}

/* Consumes a literal prefix: 1 and advances *c when c starts with lit. */
static bool eat(struct comp *c, const char *lit)
{
	size_t l = strlen(lit);

	if (c->n < l || memcmp(c->s, lit, l))
		return false;
	c->s += l;
	c->n -= l;
	return true;
}

/* Consumes a literal suffix. */
static bool eat_tail(struct comp *c, const char *lit)
{
	size_t l = strlen(lit);

	if (c->n < l || memcmp(c->s + c->n - l, lit, l))
		return false;
	c->n -= l;
	return true;
}

static bool comp_eq(struct comp c, const char *lit)
{
	return c.n == strlen(lit) && !memcmp(c.s, lit, c.n);
}

/* The next component after *p (skipping '/'), or n == 0 at the end. */
static struct comp next_comp(const char **p)
{
	struct comp c;

	while (**p == '/')
		(*p)++;
	c.s = *p;
	c.n = strcspn(*p, "/");
	*p += c.n;
	return c;
}

/* A container's cgroup name: "<prefix>-<id>" plus suffix (".scope" under systemd, "" under
 * cgroupfs), or under cgroupfs the bare id. Returns 1 with the id and runtime, else 0. */
static bool container_match(struct comp c, bool systemd, struct thps_k8s_id *id)
{
	if (systemd && !eat_tail(&c, ".scope"))
		return false;
	if (!systemd && id_match(c.s, c.n)) {
		memcpy(id->container_id, c.s, c.n);
		id->container_id[c.n] = '\0';
		id->runtime = NULL;
		return true;
	}
	for (size_t i = 0; i < ELEMENTSOF(runtimes); i++) {
		struct comp r = c;

		if (eat(&r, runtimes[i].prefix) && id_match(r.s, r.n)) {
			memcpy(id->container_id, r.s, r.n);
			id->container_id[r.n] = '\0';
			id->runtime = runtimes[i].runtime;
			return true;
		}
	}
	return false;
}

/* The pod component after the QoS level: systemd "<base>-pod<UID_>.slice", cgroupfs
 * "pod<UID>". Returns 1 with the UID (dashes) in id. */
static bool pod_match(struct comp c, bool systemd, struct comp base, struct thps_k8s_id *id)
{
	if (systemd) {
		if (c.n < base.n || memcmp(c.s, base.s, base.n))
			return false;
		c.s += base.n;
		c.n -= base.n;
		if (!eat(&c, "-pod") || !eat_tail(&c, ".slice"))
			return false;
	} else if (!eat(&c, "pod")) {
		return false;
	}
	if (!uid_match(c.s, c.n, systemd ? '_' : '-'))
		return false;
	for (size_t i = 0; i < c.n; i++)
		id->pod_uid[i] = c.s[i] == '_' ? '-' : c.s[i];
	id->pod_uid[c.n] = '\0';
	return true;
}

/* A systemd slice component "<parent>-<name>.slice" (or "<name>.slice" under the root):
 * returns its unit name without ".slice" in *ret, or 0 if c does not continue the chain. */
static bool slice_child(struct comp c, struct comp parent, struct comp *ret)
{
	struct comp name = c;

	if (!eat_tail(&name, ".slice") || name.n == 0)
		return false;
	if (parent.n > 0 && (name.n <= parent.n + 1 || memcmp(name.s, parent.s, parent.n) ||
			     name.s[parent.n] != '-'))
		return false;
	*ret = name;
	return true;
}

/* After the pod: a container, or anything else (the pod's). Below a container: the
 * container's. */
static void below_pod(const char *p, bool systemd, struct thps_k8s_id *id)
{
	struct comp c = next_comp(&p);

	id->container_id[0] = '\0';
	id->runtime = NULL;
	if (c.n > 0 && !container_match(c, systemd, id)) {
		id->container_id[0] = '\0';
		id->runtime = NULL;
	}
}

/* QoS level and pod under "kubepods" (base: the kubepods unit name under systemd). */
static bool under_kubepods(const char *p, bool systemd, struct comp base, struct thps_k8s_id *id)
{
	static const enum thps_k8s_qos qos[] = {THPS_K8S_QOS_BURSTABLE, THPS_K8S_QOS_BESTEFFORT};
	struct comp c = next_comp(&p);

	for (size_t i = 0; i < ELEMENTSOF(qos); i++) {
		const char *name = qos_names[qos[i]];
		struct comp q = c, qbase = base;

		if (systemd) {
			if (!slice_child(c, base, &qbase) ||
			    !comp_eq((struct comp){qbase.s + base.n + 1, qbase.n - base.n - 1},
				     name))
				continue;
		} else if (!comp_eq(q, name)) {
			continue;
		}
		if (!pod_match(next_comp(&p), systemd, qbase, id))
			return false;
		id->qos = qos[i];
		below_pod(p, systemd, id);
		return true;
	}
	if (!pod_match(c, systemd, base, id))
		return false;
	id->qos = THPS_K8S_QOS_GUARANTEED;
	below_pod(p, systemd, id);
	return true;
}

int thps_k8s_parse(const char *path, struct thps_k8s_id *ret)
{
	struct thps_k8s_id id = {};
	struct comp c, parent = {"", 0}, unit;
	const char *p = path;

	if (!path || !ret)
		return -EINVAL;
	if (path[0] != '/')
		return 0;
	c = next_comp(&p);
	if (comp_eq(c, "kubepods")) {
		if (!under_kubepods(p, false, (struct comp){"", 0}, &id))
			return 0;
		*ret = id;
		return 1;
	}
	/* systemd: an unbroken chain of slices from the root down to "[...-]kubepods.slice" */
	for (; c.n > 0; c = next_comp(&p)) {
		if (!slice_child(c, parent, &unit))
			return 0;
		if (comp_eq(unit, "kubepods") ||
		    (unit.n > strlen("-kubepods") && !memcmp(unit.s + unit.n - strlen("-kubepods"),
							     "-kubepods", strlen("-kubepods"))))
			break;
		parent = unit;
	}
	if (c.n == 0 || !under_kubepods(p, true, unit, &id))
		return 0;
	*ret = id;
	return 1;
}
