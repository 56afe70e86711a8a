#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

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
	char msg[1024];
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
		if (journal)
			fprintf(stderr, "<%d>%s\n", level, msg);
		else
			fprintf(stderr, "%s: %s\n", prefix, msg);
	}
	errno = saved;
	return err ? -err : -EIO;
}
