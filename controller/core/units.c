/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sizes and durations: one grammar for policies and the command line; see units.h. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "units.h"

int thps_parse_size(const char *s, uint64_t *ret)
{
	uint64_t v = 0, mul = 1;
	size_t n = 0;

	for (; s[n] >= '0' && s[n] <= '9'; n++)
		v = v * 10 + (uint64_t)(s[n] - '0');
	if (n == 0 || n > 15)
		return -EINVAL;
	switch (s[n]) {
	case 0:
		break;
	case 'K':
		mul = KIB;
		break;
	case 'M':
		mul = MIB;
		break;
	case 'G':
		mul = GIB;
		break;
	case 'T':
		mul = TIB;
		break;
	default:
		return -EINVAL;
	}
	if (s[n] && s[n + 1])
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -ERANGE;
	*ret = v * mul;
	return 0;
}

int thps_parse_duration(const char *s, uint64_t *ret_usec)
{
	static const struct {
		const char *suffix;
		uint64_t usec;
	} units[] = {{"ms", 1000},
		     {"s", USEC_PER_SEC},
		     {"m", 60 * USEC_PER_SEC},
		     {"h", 3600 * USEC_PER_SEC},
		     {"d", 86400 * USEC_PER_SEC}};
	uint64_t v = 0;
	size_t n = 0;

	for (; s[n] >= '0' && s[n] <= '9'; n++)
		v = v * 10 + (uint64_t)(s[n] - '0');
	if (n == 0 || n > 9)
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(units); i++)
		if (!strcmp(s + n, units[i].suffix)) {
			*ret_usec = v * units[i].usec;
			return 0;
		}
	return -EINVAL;
}

void thps_format_size(uint64_t b, char *buf, size_t size)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && b >= 1024 && b % 1024 == 0) {
		b /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, size, "%llu", (unsigned long long)b);
	else
		snprintf(buf, size, "%llu%c", (unsigned long long)b, units[u]);
}

void thps_format_duration(uint64_t usec, char *buf, size_t size)
{
	if (usec % (86400 * USEC_PER_SEC) == 0 && usec)
		snprintf(buf, size, "%llud", (unsigned long long)(usec / (86400 * USEC_PER_SEC)));
	else if (usec % (3600 * USEC_PER_SEC) == 0 && usec)
		snprintf(buf, size, "%lluh", (unsigned long long)(usec / (3600 * USEC_PER_SEC)));
	else if (usec % (60 * USEC_PER_SEC) == 0 && usec)
		snprintf(buf, size, "%llum", (unsigned long long)(usec / (60 * USEC_PER_SEC)));
	else if (usec % USEC_PER_SEC == 0)
		snprintf(buf, size, "%llus", (unsigned long long)(usec / USEC_PER_SEC));
	else
		snprintf(buf, size, "%llums", (unsigned long long)(usec / 1000));
}

void thps_format_bytes(char *buf, size_t size, uint64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	unsigned u = 0;

	if (size == 0)
		return;
	if (bytes < 1024) {
		snprintf(buf, size, "%" PRIu64 " B", bytes);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < ELEMENTSOF(units))
		v /= 1024, u++;
	snprintf(buf, size, "%.1f %s", v, units[u]);
}
