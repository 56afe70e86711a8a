/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json-c with bounds: every JSON text thpshrink reads from outside (OCI state, config.json,
 * registrations) goes through here. */
#pragma once
#include <stddef.h>

#define THPS_JSON_DEPTH 32 /* json-c tokener depth limit */

/* Parses a JSON text of at most max_len bytes into a json_object with the depth limit and
 * UTF-8 validation. Returns 0, -EFBIG if too long, -EBADMSG if malformed (or non-UTF-8 or
 * too deep). On success *ret is a json_object* the caller puts. */
int thps_json_parse_bounded(const char *buf, size_t len, size_t max_len, void **ret);
/* The same, and the document must be an object (-EBADMSG otherwise). */
int thps_json_parse_object(const char *buf, size_t len, size_t max_len, void **ret);
