/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which subpages hold data: the RFC's "utilized" = at least one non-zero byte. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* True if the len bytes at p are all zero. Fast path: 256-byte blocks OR-reduced with
 * vector extensions, early exit on the first non-zero block. Any alignment, any len. */
bool thps_zero_block(const void *p, size_t len);
/* Byte-by-byte reference of thps_zero_block(), for the tests. */
bool thps_zero_block_scalar(const void *p, size_t len);

/* Number of page_size subpages of buf (len a multiple of page_size) with a non-zero byte. */
size_t thps_count_utilized(const void *buf, size_t len, size_t page_size);
size_t thps_count_utilized_scalar(const void *buf, size_t len, size_t page_size);
