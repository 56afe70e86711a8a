/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Policy files (the bounded positional JSON parser and the key table) and memory.pressure text:
 * both are read by a root daemon from files and the kernel. Every error must carry a position;
 * a text that loads leaves no error and exactly the policies it reports; a rejected one adds
 * none. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "pjson.h"
#include "policy.h"
#include "psi.h"
#include "registrations.h"
#include "units.h"

/* A registration with every identity field, so the namespace, pod, container_name and labels
 * selectors of a loaded file are all exercised. */
static const struct thps_registration reg = {
    .id = "web-1",
    .cgroup = "/a/b/c",
    .k8s_namespace = "batch",
    .pod = "web-7d9f",
    .container = "app",
    .n_labels = 2,
    .labels = {{"app.kubernetes.io/name", "pg"}, {"tier", "db"}},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct thps_policy_set *set = thps_policy_set_new();
	struct thps_policy_errors errs = {0};
	struct thps_psi psi;
	struct pjson *j = NULL;
	char err[256], *s;
	unsigned line, col;
	uint64_t v;
	int r;

	if (!set)
		return 0;
	if (pjson_parse((const char *)data, size, &j, err, sizeof(err), &line, &col) == 0)
		pjson_free(j);
	r = thps_policy_parse_text("f.json", (const char *)data, size, set, &errs);
	if (r == -EINVAL && (errs.n == 0 || set->n != 0))
		abort(); /* a rejected file always says why, and adds nothing */
	for (size_t i = 0; i < errs.n; i++)
		if (strncmp(errs.msgs[i], "f.json:", 7))
			abort(); /* ... and where */
	if (r >= 0) {
		if (errs.n != 0 || set->n != (size_t)r)
			abort();
		(void)thps_policy_set_check_unique(set, &errs);
		(void)thps_policy_match(set, "/a/b/c", "web-1");
		(void)thps_policy_match(set, "/", NULL);
		(void)thps_policy_match_reg(set, "/a/b/c", &reg);
		for (size_t i = 0; i < set->n; i++)
			if (!thps_policy_find(set, set->policies[i].name))
				abort();
	}
	thps_policy_errors_clear(&errs);
	thps_policy_set_free(set);
	s = fuzz_strndup(data, size);
	if (s) {
		(void)thps_psi_parse(s, &psi);
		(void)thps_parse_size(s, &v);
		(void)thps_parse_duration(s, &v);
		free(s);
	}
	return 0;
}
