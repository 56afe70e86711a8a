/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "text.h"

static int max_level = LOG_INFO;
static const char *prefix = "thpshrink";

void thps_log_set_max_level(int level)
{
	max_level = level;
}

void thps_log_set_prefix(const char *prog)
{
	prefix = prog;
}

int thps_log(int level, int err, const char *fmt, ...)
{
	static int journal = -1;
	char msg[1024], out[1024];
	va_list ap;
	int saved = errno;

	if (err < 0)
		err = -err;
	if (level <= max_level) {
		if (journal < 0)
			journal = getenv("JOURNAL_STREAM") != NULL;
		errno = err; /* so that %m names err */
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		/* Messages name cgroups and files users choose: no invalid UTF-8 or terminal escape
		 * reaches the journal or a terminal, and one message stays one line. */
		if (thps_text_sanitize(msg, sizeof(out) - 1, out, sizeof(out)) < 0)
			out[0] = '\0';
		if (journal)
			fprintf(stderr, "<%d>%s\n", level, out);
		else
			fprintf(stderr, "%s: %s\n", prefix, out);
	}
	errno = saved;
	return err ? -err : -EIO;
}
