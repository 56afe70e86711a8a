/* Policy files: the bounded positional JSON parser (pjson), the key-table validator and the
 * compiled set (uniqueness, matching), exactly as the daemon and `thpshrink validate` use them.
 * Invariants checked: a text that parses leaves no error message; one that fails leaves at
 * least one and adds no policy; every message names the file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "pjson.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct thps_policy_errors errs = { 0 };
	struct thps_policy_set *set = thps_policy_set_new();
	struct pjson *j = NULL;
	char err[256], *s;
	unsigned line, col;
	uint64_t v;
	int r;

	if (!set)
		abort();
	if (pjson_parse((const char *)data, size, &j, err, sizeof(err), &line, &col) == 0)
		pjson_free(j);

	r = thps_policy_parse_text("fuzz.json", (const char *)data, size, set, &errs);
	if (r >= 0) {
		if (errs.n != 0 || set->n != (size_t)r)
			abort();
		(void)thps_policy_set_check_unique(set, &errs);
		for (size_t i = 0; i < set->n; i++) {
			const struct thps_policy *p = thps_policy_match(set, "/a/b.slice/c.scope", "web-1");
			if (!p || thps_policy_find(set, set->policies[i].name) == NULL)
				abort();
		}
	} else if (r == -EINVAL) {
		if (errs.n == 0 || set->n != 0)
			abort();
		for (size_t i = 0; i < errs.n; i++)
			if (strncmp(errs.msgs[i], "fuzz.json", 9) != 0)
				abort();
	}
	thps_policy_errors_clear(&errs);
	thps_policy_set_free(set);

	s = fuzz_strndup(data, size);
	(void)thps_parse_size(s, &v);
	(void)thps_parse_duration(s, &v);
	free(s);
	return 0;
}
