/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Kubernetes identity from a cgroup path: kubelet names the cgroups of pods and containers by
 * a fixed layout, so on nodes where no OCI hook runs (containerd ignores hooks.d) the path is
 * what tells a pod's memory apart. Both cgroup drivers:
 *   systemd:  /kubepods.slice[/kubepods-QOS.slice]/kubepods[-QOS]-pod<UID, '_' for '-'>.slice
 *             /<cri-containerd|crio|docker>-<64 hex>.scope
 *   cgroupfs: /kubepods[/QOS]/pod<UID>/<[cri-containerd-|crio-|docker-]64 hex>
 * where QOS is burstable or besteffort (Guaranteed pods sit directly under kubepods). Under
 * systemd the kubepods slice may sit in a chain of slices (kubelet's --cgroup-root, as kind's
 * /kubelet.slice/kubelet-kubepods.slice); under cgroupfs "kubepods" must be the first
 * component.
 *
 * The path is hostile (anyone with a delegated subtree names cgroups): every field is taken
 * only from text that matched its pattern, a UID by 8-4-4-4-12 lowercase hex, a container id
 * by 64 lowercase hex. A systemd path must be one unbroken chain of slices from the root, so a
 * delegated user@.service subtree cannot pose as a pod. A cgroup below a pod that is not a
 * container of a known runtime (crio-conmon-<id>.scope, an unknown name) gets the pod's
 * identity without a container id; a cgroup below a container (crun's "container" subgroup)
 * gets the container's. Pure: no I/O, no allocation. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define THPS_K8S_UID_LEN 36 /* 8-4-4-4-12 */
#define THPS_K8S_ID_LEN	 64

enum thps_k8s_qos {
	THPS_K8S_QOS_NONE,
	THPS_K8S_QOS_GUARANTEED,
	THPS_K8S_QOS_BURSTABLE,
	THPS_K8S_QOS_BESTEFFORT,
};

struct thps_k8s_id {
	enum thps_k8s_qos qos;
	char pod_uid[THPS_K8S_UID_LEN + 1];	/* with dashes, as Kubernetes writes it */
	char container_id[THPS_K8S_ID_LEN + 1]; /* "" for a pod-level cgroup */
	const char *runtime; /* "containerd", "cri-o", "docker"; NULL when container_id is "" or
			      * the runtime is not named (cgroupfs) */
};

/* Parses a cgroup path relative to the mount. Returns 1 with *ret filled when path is a pod's
 * cgroup or one below it, 0 when it is not (ret untouched), -EINVAL when path or ret is NULL. */
int thps_k8s_parse(const char *path, struct thps_k8s_id *ret);

/* "guaranteed", "burstable", "besteffort"; "" for THPS_K8S_QOS_NONE. */
const char *thps_k8s_qos_name(enum thps_k8s_qos q);
/* The class named s (the names above), or THPS_K8S_QOS_NONE. */
enum thps_k8s_qos thps_k8s_qos_from_name(const char *s);
/* 1 if s is a pod UID as Kubernetes writes it: 8-4-4-4-12 lowercase hex with dashes. */
bool thps_k8s_uid_valid(const char *s);
