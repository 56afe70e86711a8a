/* Why blocks of 64 bytes: a zero subpage must be read in full, so the loop is bound by
 * memory bandwidth; OR-ing a cache line per step keeps one branch per line, and a data
 * page usually exits at its first line. memcpy loads keep it legal for any alignment. */
#include <stdint.h>
#include <string.h>

#include "zero.h"

typedef uint64_t v2u64 __attribute__((vector_size(16)));

static inline bool zero_line(const unsigned char *p)
{
	v2u64 a, b, c, d;

	memcpy(&a, p, 16);
	memcpy(&b, p + 16, 16);
	memcpy(&c, p + 32, 16);
	memcpy(&d, p + 48, 16);
	a |= b;
	c |= d;
	a |= c;
	return (a[0] | a[1]) == 0;
}

bool thps_zero_block(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t w;
	size_t i = 0;

	/* most data pages have a non-zero first word: leave before touching the rest */
	if (len >= 8) {
		memcpy(&w, s, 8);
		if (w)
			return false;
	}
	for (; i + 256 <= len; i += 256)
		if (!zero_line(s + i) || !zero_line(s + i + 64) || !zero_line(s + i + 128) ||
		    !zero_line(s + i + 192))
			return false;
	for (; i + 64 <= len; i += 64)
		if (!zero_line(s + i))
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

size_t thps_count_utilized(const void *buf, size_t len, size_t page_size)
{
	const unsigned char *s = buf;
	size_t n = 0;

	for (size_t off = 0; off + page_size <= len; off += page_size)
		n += !thps_zero_block(s + off, page_size);
	return n;
}

size_t thps_count_utilized_scalar(const void *buf, size_t len, size_t page_size)
{
	const unsigned char *s = buf;
	size_t n = 0;

	for (size_t off = 0; off + page_size <= len; off += page_size)
		n += !thps_zero_block_scalar(s + off, page_size);
	return n;
}
