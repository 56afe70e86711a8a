/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Why blocks of 256 bytes: a zero subpage must be read in full, so the loop is bound by
 * load bandwidth; OR-ing four cache lines per step keeps one branch per 256 bytes, and a
 * data page usually exits at its first word or block. memcpy loads keep it legal for any
 * alignment. */
#include <stdint.h>
#include <string.h>

#include "zero.h"

typedef uint64_t v4u64 __attribute__((vector_size(32)));

/* OR of 256 bytes: one branch per 256 bytes keeps the loop at load bandwidth */
static inline __attribute__((always_inline)) bool zero_256(const unsigned char *p)
{
	v4u64 a, b, c, d, e, f, g, h;

	memcpy(&a, p, 32);
	memcpy(&b, p + 32, 32);
	memcpy(&c, p + 64, 32);
	memcpy(&d, p + 96, 32);
	memcpy(&e, p + 128, 32);
	memcpy(&f, p + 160, 32);
	memcpy(&g, p + 192, 32);
	memcpy(&h, p + 224, 32);
	a |= b;
	c |= d;
	e |= f;
	g |= h;
	a |= c;
	e |= g;
	a |= e;
	return (a[0] | a[1] | a[2] | a[3]) == 0;
}

/* AVX2 where the CPU has it (one ifunc resolution at load), SSE2 otherwise */
__attribute__((target_clones("avx2", "default"))) static size_t
zero_prefix_256(const unsigned char *s, size_t len)
{
	size_t i = 0;
	for (; i + 256 <= len; i += 256)
		if (!zero_256(s + i))
			return SIZE_MAX;
	return i;
}

bool thps_zero_block(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t w;
	size_t i;

	if (len >= 8) {
		memcpy(&w, s, 8);
		if (w)
			return false;
	}
	i = zero_prefix_256(s, len);
	if (i == SIZE_MAX)
		return false;
	for (; i < len; i++)
		if (s[i])
			return false;
	return true;
}

bool thps_zero_block_scalar(const void *p, size_t len)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < len; i++)
		if (s[i])
			return false;
	return true;
}

/* Inlined into each caller, so the zero test is a direct (inlinable) call on the hot path. */
static inline __attribute__((always_inline)) size_t
count_with(bool (*zero)(const void *, size_t), const void *buf, size_t len, size_t page_size)
{
	const unsigned char *s = buf;
	size_t n = 0;

	for (size_t off = 0; off + page_size <= len; off += page_size)
		n += !zero(s + off, page_size);
	return n;
}

size_t thps_count_utilized(const void *buf, size_t len, size_t page_size)
{
	return count_with(thps_zero_block, buf, len, page_size);
}

size_t thps_count_utilized_scalar(const void *buf, size_t len, size_t page_size)
{
	return count_with(thps_zero_block_scalar, buf, len, page_size);
}
