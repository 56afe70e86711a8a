/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The OCI hook's parsers: the state on stdin, config.json's cgroupsPath, /proc text, and the
 * registration files the daemon reads. */
#include <stdlib.h>

#include "fuzz.h"
#include "oci/oci.h"
#include "proc.h"
#include "registrations.h"
#include "valid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size);
	char buf[THPS_CGROUP_PATH_MAX], *cp = NULL;
	struct thps_oci_state st;
	struct thps_registration reg;
	uint64_t v;

	if (thps_oci_state_parse((const char *)data, size, &st) == 0) {
		(void)thps_policy_name_valid(st.policy);
		(void)thps_mode_normalize(st.mode);
		(void)thps_oci_stage_from_status(st.status);
		thps_oci_state_free(&st);
	}
	if (thps_oci_config_cgroups_path((const char *)data, size, &cp) == 0) {
		(void)thps_oci_cgroups_path_resolve(cp, "/base", buf, sizeof(buf));
		free(cp);
	}
	(void)thps_registration_from_json((const char *)data, size, &reg);
	(void)thps_oci_cgroups_path_resolve(s, "/base", buf, sizeof(buf));
	(void)thps_systemd_slice_expand(s, buf, sizeof(buf));
	(void)thps_proc_cgroup_v2_path(s, buf, sizeof(buf));
	(void)thps_proc_stat_starttime(s, &v);
	(void)thps_cgroup_path_valid(s);
	free(s);
	return 0;
}
