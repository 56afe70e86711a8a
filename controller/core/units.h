/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sizes and durations, one grammar wherever thpshrink reads them (policy files and command
 * line options alike):
 *   size      digits (at most 15) with an optional K, M, G or T: powers of 1024 ("4096", "64M")
 *   duration  digits (at most 9) with ms, s, m, h or d ("500ms", "30s", "2h")
 * Each parser returns 0, -EINVAL (not in the grammar) or -ERANGE (does not fit 64 bits). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define KIB	     1024ULL
#define MIB	     (1024ULL * KIB)
#define GIB	     (1024ULL * MIB)
#define TIB	     (1024ULL * GIB)
#define USEC_PER_SEC 1000000ULL

int thps_parse_size(const char *s, uint64_t *ret);
int thps_parse_duration(const char *s, uint64_t *ret_usec);
/* Exact, in the grammar above: parsing the text gives bytes back ("64M", "4097"). */
void thps_format_size(uint64_t bytes, char *buf, size_t size);
void thps_format_duration(uint64_t usec, char *buf, size_t size);
/* For people: "40.0 MiB", "512 B" (binary units, one decimal). Always NUL-terminates buf. */
void thps_format_bytes(char *buf, size_t size, uint64_t bytes);
