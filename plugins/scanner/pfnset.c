/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "pfnset.h"

static size_t slot(uint64_t pfn, size_t cap)
{
	return (size_t)((pfn * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (cap - 1);
}

int thps_pfnset_init(struct thps_pfnset *s, size_t max)
{
	s->cap = 1024;
	s->n = 0;
	s->max = max ? max : 1;
	s->keys = calloc(s->cap, sizeof(*s->keys));
	s->vals = calloc(s->cap, sizeof(*s->vals));
	if (!s->keys || !s->vals) {
		thps_pfnset_free(s);
		return -ENOMEM;
	}
	return 0;
}

void thps_pfnset_free(struct thps_pfnset *s)
{
	free(s->keys);
	free(s->vals);
	s->keys = NULL;
	s->vals = NULL;
	s->cap = s->n = 0;
}

int thps_pfnset_get(const struct thps_pfnset *s, uint64_t pfn, uint32_t *ret_val)
{
	if (!s->cap || pfn == 0)
		return 0;
	for (size_t i = slot(pfn, s->cap);; i = (i + 1) & (s->cap - 1)) {
		if (s->keys[i] == pfn) {
			if (ret_val)
				*ret_val = s->vals[i];
			return 1;
		}
		if (s->keys[i] == 0)
			return 0;
	}
}

static void put(uint64_t *keys, uint32_t *vals, size_t cap, uint64_t pfn, uint32_t val)
{
	size_t i = slot(pfn, cap);

	while (keys[i] != 0)
		i = (i + 1) & (cap - 1);
	keys[i] = pfn;
	vals[i] = val;
}

static int grow(struct thps_pfnset *s)
{
	size_t cap = s->cap * 2;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	uint32_t *vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->cap; i++)
		if (s->keys[i])
			put(keys, vals, cap, s->keys[i], s->vals[i]);
	free(s->keys);
	free(s->vals);
	s->keys = keys;
	s->vals = vals;
	s->cap = cap;
	return 0;
}

int thps_pfnset_add(struct thps_pfnset *s, uint64_t pfn, uint32_t val)
{
	int r;

	if (pfn == 0)
		return -EINVAL;
	if (!s->cap)
		return -ENOMEM;
	if (thps_pfnset_get(s, pfn, NULL))
		return 0;
	if (s->n >= s->max)
		return -E2BIG;
	/* keep the load at most 1/2 so probes stay short */
	if ((s->n + 1) * 2 > s->cap) {
		r = grow(s);
		if (r < 0)
			return r;
	}
	put(s->keys, s->vals, s->cap, pfn, val);
	s->n++;
	return 1;
}
