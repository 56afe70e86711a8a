/* UTF-8 validation follows RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF, so whatever passes is accepted by Prometheus, JSON parsers and journald alike. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

uint64_t thps_text_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The length of the valid UTF-8 sequence at p (1-4), or 0 if the byte there starts none. */
static size_t utf8_seq_len(const unsigned char *p)
{
	unsigned char c = p[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xBF;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		if (c == 0xE0)
			lo = 0xA0; /* overlong */
		else if (c == 0xED)
			hi = 0x9F; /* surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		if (c == 0xF0)
			lo = 0x90; /* overlong */
		else if (c == 0xF4)
			hi = 0x8F; /* above U+10FFFF */
	} else
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return n;
}

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7F;
}

int thps_text_is_clean(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
		size_t n = utf8_seq_len(p);

		if (n == 0 || (n == 1 && is_control(*p)))
			return 0;
		p += n;
	}
	return 1;
}

int thps_text_sanitize(const char *in, size_t max, char *out, size_t size)
{
	const unsigned char *p = (const unsigned char *)(in ? in : "");
	size_t len = 0, fit = max - THPS_TEXT_HASH_SUFFIX_LEN, cut = 0;
	bool cut_set = false;

	if (max <= THPS_TEXT_HASH_SUFFIX_LEN || size <= max)
		return -ENOBUFS;
	while (*p) {
		size_t n = utf8_seq_len(p), w = n == 0 || (n == 1 && is_control(*p)) ? 4 : n;

		/* remember where the hash suffix would go, at the last boundary that leaves room */
		if (!cut_set && len + w > fit) {
			cut = len;
			cut_set = true;
		}
		if (len + w > max) {
			snprintf(out + cut, size - cut, "~%016llx", (unsigned long long)thps_text_hash(in));
			return (int)(cut + THPS_TEXT_HASH_SUFFIX_LEN);
		}
		if (w == 4 && n < 4) {
			snprintf(out + len, size - len, "\\x%02x", *p);
			p++;
		} else {
			memcpy(out + len, p, n);
			p += n;
		}
		len += w;
	}
	out[len] = '\0';
	return (int)len;
}
