/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Kubernetes identity from cgroup paths (controller/core/k8s.h): the path is hostile. What
 * parses must hold only matched text: a UID of 8-4-4-4-12 lowercase hex, a container id of
 * 64 lowercase hex or none, a QoS class the enum names; and the UID must occur in the path. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "k8s.h"

static void check(const char *path)
{
	struct thps_k8s_id id;
	char under[THPS_K8S_UID_LEN + 1];
	size_t n;

	if (thps_k8s_parse(path, &id) != 1)
		return;
	if (!thps_k8s_uid_valid(id.pod_uid) || !*thps_k8s_qos_name(id.qos))
		abort();
	n = strlen(id.container_id);
	if (n != 0 && n != THPS_K8S_ID_LEN)
		abort();
	if (strspn(id.container_id, "0123456789abcdef") != n || (n == 0 && id.runtime))
		abort();
	for (size_t i = 0; i <= THPS_K8S_UID_LEN; i++)
		under[i] = id.pod_uid[i] == '-' ? '_' : id.pod_uid[i];
	if (!strstr(path, id.pod_uid) && !strstr(path, under))
		abort();
	if (n && !strstr(path, id.container_id))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size);

	if (!s)
		return 0;
	check(s);
	free(s);
	return 0;
}
