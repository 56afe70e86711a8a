/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging: library code returns -errno and never logs; the layer that decides logs once.
 * Output goes to stderr with a priority prefix (<3>…) that journald understands when run
 * under systemd, or plain "thpshrink: " text on a terminal. Never log memory contents. */
#pragma once
#include <syslog.h>
#include "macro.h"

void thps_log_set_max_level(int level);
void thps_log_set_prefix(const char *prog);
/* Returns -abs(err) so that callers can `return log_error_errno(r, ...)`. */
int thps_log(int level, int err, const char *fmt, ...) _printf_(3, 4);

#define log_debug(...)	 thps_log(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...)	 thps_log(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...)	 thps_log(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) thps_log(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...)	 thps_log(LOG_ERR, 0, __VA_ARGS__)
/* %m in fmt prints strerror(-err). */
#define log_warning_errno(err, ...) thps_log(LOG_WARNING, (err), __VA_ARGS__)
#define log_error_errno(err, ...)   thps_log(LOG_ERR, (err), __VA_ARGS__)
#define log_debug_errno(err, ...)   thps_log(LOG_DEBUG, (err), __VA_ARGS__)
