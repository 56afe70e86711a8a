/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An open-addressing table keyed by head PFN, linear probing, deletion by backward shift (no
 * tombstones, so the table never needs a rebuild and stays at 32 bytes a slot). The refresh
 * rotation is a window over the slots that moves each pass: a stable order without a list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "memo.h"

struct entry {
	uint64_t pfn1;	   /* head PFN + 1; 0 = a free slot */
	uint64_t va_order; /* virtual address | order (the low bits of a folio's address are 0) */
	uint32_t pid;
	uint32_t start;	   /* the low 32 bits of the process's start time */
	uint16_t utilized; /* the last exact count */
	uint16_t seen;	   /* the pass that last saw it, mod 2^16 */
	uint32_t cgroup;   /* the memcg's inode, if below 2^32 (else 0: looked up again) */
};
_Static_assert(sizeof(struct entry) == 32, "a memo entry is 32 bytes");

struct thps_memo {
	struct entry *v;
	size_t cap; /* a power of two */
	size_t n;
	uint32_t pass;
	unsigned exact_max_per512;
	size_t window_start, window_len; /* this pass's refresh slots */
	size_t cursor;
};

#define MEMO_MIN_CAP 1024

int thps_memo_new(struct thps_memo **ret)
{
	struct thps_memo *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->v = calloc(MEMO_MIN_CAP, sizeof(*m->v));
	if (!m->v) {
		free(m);
		return -ENOMEM;
	}
	m->cap = MEMO_MIN_CAP;
	*ret = m;
	return 0;
}

void thps_memo_free(struct thps_memo *m)
{
	if (!m)
		return;
	free(m->v);
	free(m);
}

static size_t home(const struct thps_memo *m, uint64_t pfn)
{
	return (size_t)((pfn * 0x9e3779b97f4a7c15ull) >> 17) & (m->cap - 1);
}

static uint64_t va_order(const struct thps_memo_key *k)
{
	return k->va | (k->order & 0xfff);
}

static bool same_folio(const struct entry *e, const struct thps_memo_key *k)
{
	return e->va_order == va_order(k) && e->pid == (uint32_t)k->pid &&
	       e->start == (uint32_t)k->starttime;
}

/* The slot holding pfn, or the free slot where it would go. */
static size_t find(const struct thps_memo *m, uint64_t pfn)
{
	size_t i = home(m, pfn);

	while (m->v[i].pfn1 && m->v[i].pfn1 != pfn + 1)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int grow(struct thps_memo *m)
{
	struct entry *old = m->v;
	size_t old_cap = m->cap;

	m->v = calloc(old_cap * 2, sizeof(*m->v));
	if (!m->v) {
		m->v = old;
		return -ENOMEM;
	}
	m->cap = old_cap * 2;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].pfn1)
			m->v[find(m, old[i].pfn1 - 1)] = old[i];
	free(old);
	/* the window keeps its share of the table */
	m->window_start *= 2;
	m->window_len *= 2;
	m->cursor *= 2;
	return 0;
}

void thps_memo_pass_begin(struct thps_memo *m, unsigned exact_max_per512, uint64_t refresh_folios)
{
	m->pass++;
	m->exact_max_per512 = exact_max_per512;
	m->window_start = m->cursor;
	/* refresh_folios of the n entries: the same share of the slots */
	m->window_len = m->n && refresh_folios
			    ? (size_t)MIN((uint64_t)m->cap, refresh_folios * m->cap / m->n + 1)
			    : 0;
	m->cursor = (m->cursor + m->window_len) & (m->cap - 1);
}

static bool in_window(const struct thps_memo *m, size_t i)
{
	return ((i - m->window_start) & (m->cap - 1)) < m->window_len || m->window_len >= m->cap;
}

enum thps_memo_verdict thps_memo_lookup(struct thps_memo *m, const struct thps_memo_key *k,
					unsigned *ret_utilized, unsigned *ret_limit,
					uint64_t *ret_cgroup)
{
	size_t i = find(m, k->pfn);
	struct entry *e = &m->v[i];
	unsigned pages = 1u << MIN(k->order, 20u);
	/* the threshold scaled to this folio's size, rounded up: never fewer re-reads */
	unsigned limit = (unsigned)(((uint64_t)m->exact_max_per512 * pages + 511) / 512);

	if (!e->pfn1 || !same_folio(e, k))
		return THPS_MEMO_READ;
	e->seen = (uint16_t)m->pass;
	*ret_utilized = e->utilized;
	*ret_cgroup = e->cgroup;
	if (e->utilized <= limit)
		return THPS_MEMO_READ;
	if (in_window(m, i)) {
		*ret_limit = limit;
		return THPS_MEMO_REFRESH;
	}
	return THPS_MEMO_CARRY;
}

int thps_memo_store(struct thps_memo *m, const struct thps_memo_key *k, unsigned utilized,
		    bool complete, uint64_t cgroup)
{
	size_t i = find(m, k->pfn);
	struct entry *e = &m->v[i];

	if (!e->pfn1) {
		if (!complete)
			return 0; /* nothing exact to keep */
		/* at most 3/4 full: short probe runs */
		if ((m->n + 1) * 4 > m->cap * 3) {
			int r = grow(m);
			if (r < 0)
				return r;
			i = find(m, k->pfn);
			e = &m->v[i];
		}
		m->n++;
	} else if (!complete && !same_folio(e, k))
		return 0;
	e->pfn1 = k->pfn + 1;
	e->va_order = va_order(k);
	e->pid = (uint32_t)k->pid;
	e->start = (uint32_t)k->starttime;
	if (complete)
		e->utilized = (uint16_t)MIN(utilized, 65535u);
	e->seen = (uint16_t)m->pass;
	e->cgroup = cgroup >> 32 ? 0 : (uint32_t)cgroup;
	return 0;
}

/* Empties slot i and moves later entries of the same probe run back over it. */
static void delete_at(struct thps_memo *m, size_t i)
{
	size_t j = i;

	for (;;) {
		size_t h;

		j = (j + 1) & (m->cap - 1);
		if (!m->v[j].pfn1)
			break;
		h = home(m, m->v[j].pfn1 - 1);
		/* j's entry may move to i unless its home lies cyclically in (i, j] */
		if (((j - h) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
			m->v[i] = m->v[j];
			i = j;
		}
	}
	memset(&m->v[i], 0, sizeof(m->v[i]));
	m->n--;
}

void thps_memo_pass_end(struct thps_memo *m)
{
	uint16_t pass = (uint16_t)m->pass;

	for (size_t i = 0; i < m->cap; i++)
		while (m->v[i].pfn1 && m->v[i].seen != pass)
			delete_at(m, i);
}

void thps_memo_stats(const struct thps_memo *m, struct thps_memo_stats *ret)
{
	*ret = (struct thps_memo_stats){
	    .entries = m->n,
	    .bytes = m->cap * sizeof(*m->v),
	    .passes = m->pass,
	};
}
