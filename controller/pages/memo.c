/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An open-addressing table keyed by where the folio is mapped (process, start time, address,
 * size), so PAGEMAP_SCAN's runs, which carry no PFN, can find it; the head PFN is the identity
 * checked when it was read. Linear probing, deletion by backward shift (no tombstones, so the
 * table never needs a rebuild and stays at 32 bytes a slot). The refresh and identity
 * rotations are windows over the slots that move each pass: a stable order without a list. */
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
	size_t verify_start, verify_len; /* this pass's identity slots */
	size_t verify_cursor;
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

static uint64_t va_order(const struct thps_memo_key *k)
{
	return k->va | (k->order & 0xfff);
}

static size_t home_of(const struct thps_memo *m, uint64_t vo, uint32_t pid, uint32_t start)
{
	uint64_t h = (vo >> 12) ^ ((uint64_t)pid << 40) ^ ((uint64_t)start * 0xff51afd7ed558ccdull);

	return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 17) & (m->cap - 1);
}

static bool same_place(const struct entry *e, uint64_t vo, uint32_t pid, uint32_t start)
{
	return e->va_order == vo && e->pid == pid && e->start == start;
}

/* The slot of the folio mapped at (vo, pid, start), or the free slot where it would go. */
static size_t find_at(const struct thps_memo *m, uint64_t vo, uint32_t pid, uint32_t start)
{
	size_t i = home_of(m, vo, pid, start);

	while (m->v[i].pfn1 && !same_place(&m->v[i], vo, pid, start))
		i = (i + 1) & (m->cap - 1);
	return i;
}

static size_t find(const struct thps_memo *m, const struct thps_memo_key *k)
{
	return find_at(m, va_order(k), (uint32_t)k->pid, (uint32_t)k->starttime);
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
			m->v[find_at(m, old[i].va_order, old[i].pid, old[i].start)] = old[i];
	free(old);
	/* the windows keep their share of the table */
	m->window_start *= 2;
	m->window_len *= 2;
	m->cursor *= 2;
	m->verify_start *= 2;
	m->verify_len *= 2;
	m->verify_cursor *= 2;
	return 0;
}

/* folios of the n entries: the same share of the slots */
static size_t window_slots(const struct thps_memo *m, uint64_t folios)
{
	return m->n && folios ? (size_t)MIN((uint64_t)m->cap, folios * m->cap / m->n + 1) : 0;
}

void thps_memo_pass_begin(struct thps_memo *m, unsigned exact_max_per512, uint64_t refresh_folios,
			  uint64_t verify_folios)
{
	m->pass++;
	m->exact_max_per512 = exact_max_per512;
	m->window_start = m->cursor;
	m->window_len = window_slots(m, refresh_folios);
	m->cursor = (m->cursor + m->window_len) & (m->cap - 1);
	m->verify_start = m->verify_cursor;
	m->verify_len = window_slots(m, verify_folios);
	m->verify_cursor = (m->verify_cursor + m->verify_len) & (m->cap - 1);
}

static bool in_slots(const struct thps_memo *m, size_t i, size_t start, size_t len)
{
	return ((i - start) & (m->cap - 1)) < len || len >= m->cap;
}

static bool in_window(const struct thps_memo *m, size_t i)
{
	return in_slots(m, i, m->window_start, m->window_len);
}

/* the count threshold scaled to a folio of 2^order pages, rounded up: never fewer re-reads */
static unsigned exact_limit(const struct thps_memo *m, unsigned order)
{
	unsigned pages = 1u << MIN(order, 20u);

	return (unsigned)(((uint64_t)m->exact_max_per512 * pages + 511) / 512);
}

enum thps_memo_verdict thps_memo_lookup(struct thps_memo *m, const struct thps_memo_key *k,
					unsigned *ret_utilized, unsigned *ret_limit,
					uint64_t *ret_cgroup)
{
	size_t i = find(m, k);
	struct entry *e = &m->v[i];
	unsigned limit = exact_limit(m, k->order);

	if (!e->pfn1 || e->pfn1 != k->pfn + 1)
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

enum thps_memo_verdict thps_memo_lookup_va(struct thps_memo *m, const struct thps_memo_key *k,
					   unsigned *ret_utilized, uint64_t *ret_cgroup,
					   uint64_t *ret_pfn)
{
	size_t i = find(m, k);
	struct entry *e = &m->v[i];

	/* what thps_memo_lookup() would not carry, and this pass's identity turn, need the PFN */
	if (!e->pfn1 || !e->cgroup || e->utilized <= exact_limit(m, k->order) || in_window(m, i) ||
	    in_slots(m, i, m->verify_start, m->verify_len))
		return THPS_MEMO_READ;
	e->seen = (uint16_t)m->pass;
	*ret_utilized = e->utilized;
	*ret_cgroup = e->cgroup;
	*ret_pfn = e->pfn1 - 1;
	return THPS_MEMO_CARRY;
}

int thps_memo_store(struct thps_memo *m, const struct thps_memo_key *k, unsigned utilized,
		    bool complete, uint64_t cgroup)
{
	size_t i = find(m, k);
	struct entry *e = &m->v[i];

	if (!e->pfn1) {
		if (!complete)
			return 0; /* nothing exact to keep */
		/* at most 3/4 full: short probe runs */
		if ((m->n + 1) * 4 > m->cap * 3) {
			int r = grow(m);
			if (r < 0)
				return r;
			i = find(m, k);
			e = &m->v[i];
		}
		m->n++;
	} else if (!complete && e->pfn1 != k->pfn + 1)
		return 0; /* another folio at the place since: its last count is not this one */
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
		h = home_of(m, m->v[j].va_order, m->v[j].pid, m->v[j].start);
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
