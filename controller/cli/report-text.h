/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `thpshrink report` as text: one RFC-style table per cgroup with THPs, biggest waste first,
 * a machine total (beside the kernel's own histogram when the debugfs source read it), the
 * scan summary and the state of each source. Pure: the same scan gives the same bytes. */
#pragma once
#include <stdio.h>

#include "report.h"
#include "scan.h"

/* Returns 0, -ENOMEM, or -EIO when writing to f failed. */
int thps_report_text(FILE *f, const struct thps_scan *scan, const struct thps_report_opts *opts);

/* The single "sources: scanner: usable; debugfs: not usable: ..." line.
 * Returns 0 or -EIO. */
int thps_report_text_sources(FILE *f, const struct thps_source_status *st, size_t n);
