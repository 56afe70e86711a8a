/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Strings that leave the daemon (metrics labels, status.json, the textfile, logs) often come
 * from names any user with a delegated cgroup subtree picks: they may hold invalid UTF-8,
 * control characters or kilobytes of path. One sanitizer, so every output agrees on the
 * same rendering of the same name and none of them can be broken by it. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* The longest name any output carries, in bytes (without the NUL). A longer one keeps its
 * first bytes and ends in THPS_TEXT_HASH_SUFFIX_LEN bytes "~" + 16 hex digits of a hash of the
 * whole name, so distinct long names stay distinct and the same name always reads the same. */
#define THPS_TEXT_MAX		  256
#define THPS_TEXT_HASH_SUFFIX_LEN 17

/* The length of the well-formed UTF-8 sequence at s (1 for ASCII; at most n bytes are
 * read, SIZE_MAX for a NUL-terminated string), or 0 if none starts there (overlong forms,
 * surrogates and code points above U+10FFFF are not well-formed). */
size_t thps_utf8_len(const unsigned char *s, size_t n);

/* FNV-1a 64 of the bytes of s: stable across runs and builds. */
uint64_t thps_text_hash(const char *s);

/* Writes in to out (size >= max + 1) as valid UTF-8 without control characters: each byte
 * that is not part of a valid UTF-8 sequence, and each C0 control character and DEL, becomes
 * the four characters "\xNN". If the result would be longer than max bytes
 * (max > THPS_TEXT_HASH_SUFFIX_LEN), it is cut at a character boundary and the hash suffix
 * appended. NULL in reads as "". Returns the length written, or -ENOBUFS if size <= max or
 * max is too small for the suffix. */
int thps_text_sanitize(const char *in, size_t max, char *out, size_t size);

/* Whether s is valid UTF-8 without control characters: what thps_text_sanitize leaves
 * unchanged when it is short enough. */
int thps_text_is_clean(const char *s);
