/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The per-cgroup record table; see records.h. Linear: one record per cgroup with THPs, and a
 * pass visits each once. */
#include <stdlib.h>
#include <string.h>

#include "records.h"

struct crecord *records_get(struct crecords *t, const char *path)
{
	struct crecord *r;

	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].path, path))
			return &t->v[i];
	r = reallocarray(t->v, t->n + 1, sizeof(*r));
	if (!r)
		return NULL;
	t->v = r;
	r = &t->v[t->n];
	memset(r, 0, sizeof(*r));
	r->path = strdup(path);
	if (!r->path)
		return NULL;
	for (size_t a = 0; a < DGLUE_N_ACTING; a++)
		r->act[a].action = dglue_action_name((enum dglue_action)a);
	t->n++;
	return r;
}

const struct crecord *records_find(const struct crecords *t, const char *path)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].path, path))
			return &t->v[i];
	return NULL;
}

void records_prune(struct crecords *t, bool (*gone)(const char *path, void *userdata),
		   void *userdata)
{
	size_t j = 0;

	for (size_t i = 0; i < t->n; i++) {
		if (!t->v[i].seen && gone(t->v[i].path, userdata)) {
			free(t->v[i].path);
			thps_recollapse_clear(&t->v[i].split);
			thps_promoted_clear(&t->v[i].promoted);
			continue;
		}
		t->v[j++] = t->v[i];
	}
	t->n = j;
}

void records_free(struct crecords *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].path);
		thps_recollapse_clear(&t->v[i].split);
		thps_promoted_clear(&t->v[i].promoted);
	}
	free(t->v);
	t->v = NULL;
	t->n = 0;
}
