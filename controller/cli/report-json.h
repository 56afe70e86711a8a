/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `thpshrink report --json`: the figures of the text report, machine-readable, conforming to
 * schemas/report.schema.json. Bytes are integers; counters the kernel lacks are null.
 * Pure: the same scan gives the same bytes. */
#pragma once
#include <stdio.h>

#include "report.h"
#include "scan.h"

#define THPS_REPORT_SCHEMA_VERSION 1

/* Returns 0, -ENOMEM, or -EIO when writing to f failed. */
int thps_report_json(FILE *f, const struct thps_scan *scan, const struct thps_report_opts *opts);

/* Writes s as a JSON string literal: quotes, escapes, and U+FFFD for bytes that are not UTF-8
 * (cgroup paths are whatever bytes someone chose). NULL writes null. */
void thps_json_string(FILE *f, const char *s);
