/* SPDX-License-Identifier: GPL-2.0-or-later */
/* UTF-8 validation follows RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF, so whatever passes is accepted by Prometheus, JSON parsers and journald alike. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
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

size_t thps_utf8_len(const unsigned char *s, size_t n)
{
	size_t k;
	uint32_t cp;

	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		k = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		k = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		k = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0; /* also stops at a NUL */
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7F;
}

int thps_text_is_clean(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
		size_t n = thps_utf8_len(p, SIZE_MAX);

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
		size_t n = thps_utf8_len(p, SIZE_MAX),
		       w = n == 0 || (n == 1 && is_control(*p)) ? 4 : n;

		/* remember where the hash suffix would go, at the last boundary that leaves room */
		if (!cut_set && len + w > fit) {
			cut = len;
			cut_set = true;
		}
		if (len + w > max) {
			snprintf(out + cut, size - cut, "~%016llx",
				 (unsigned long long)thps_text_hash(in));
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
