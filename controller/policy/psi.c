/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "psi.h"

static int parse_double(const char *s, const char *field, const char **end, double *ret)
{
	size_t n = strlen(field);
	char *e;
	double d;

	if (strncmp(s, field, n))
		return -EINVAL;
	s += n;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	d = strtod(s, &e);
	if (e == s || !isfinite(d) || d < 0 || d > 100)
		return -EINVAL;
	*end = e;
	*ret = d;
	return 0;
}

static int parse_line(const char *s, struct thps_psi_line *ret)
{
	struct thps_psi_line l;
	char *e;

	if (parse_double(s, "avg10=", &s, &l.avg10) < 0 || *s++ != ' ' ||
	    parse_double(s, "avg60=", &s, &l.avg60) < 0 || *s++ != ' ' ||
	    parse_double(s, "avg300=", &s, &l.avg300) < 0 || *s++ != ' ' || strncmp(s, "total=", 6))
		return -EINVAL;
	s += 6;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	l.total = strtoull(s, &e, 10);
	if (errno || (*e && *e != '\n'))
		return -EINVAL;
	*ret = l;
	return 0;
}

int thps_psi_parse(const char *text, struct thps_psi *ret)
{
	struct thps_psi psi = {0};
	bool some = false;

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (!strncmp(l, "some ", 5)) {
			if (parse_line(l + 5, &psi.some) < 0)
				return -EINVAL;
			some = true;
		} else if (!strncmp(l, "full ", 5)) {
			if (parse_line(l + 5, &psi.full) < 0)
				return -EINVAL;
			psi.have_full = true;
		} else if (*l != '\n') {
			return -EINVAL;
		}
	}
	if (!some)
		return -EINVAL;
	*ret = psi;
	return 0;
}
