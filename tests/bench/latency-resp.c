/* SPDX-License-Identifier: GPL-2.0-or-later */
/* latency-resp: the Redis client of the latency benchmark (tests/bench/latency.sh). One
 * connection on Redis's unix socket, one request at a time (a closed loop: the latency is the
 * server's, not a queue's): GET of a random key among key:000000000000..key:N-1, each timed, for
 * SECS seconds; then the phase's line (latency-hist.h). A reply is read whole into one bounded
 * buffer and only its length is looked at.
 * Usage: latency-resp SOCKET N SECS NAME */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "latency-hist.h"

#define BUF 16384

static struct lat_hist hist;
static char buf[BUF];

static int write_all(int fd, const char *p, size_t len) {
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t) w;
	}
	return 0;
}

/* Reads one reply (a line, or a bulk string "$LEN\r\n...\r\n"). Returns 0 or -errno. */
static int read_reply(int fd) {
	size_t have = 0, need = 0;

	for (;;) {
		if (have == BUF)
			return -EMSGSIZE;
		ssize_t r = read(fd, buf + have, BUF - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ECONNRESET;
		have += (size_t) r;
		if (need == 0) {
			char *eol = memchr(buf, '\n', have);
			if (!eol)
				continue;
			size_t head = (size_t) (eol - buf) + 1;
			long len = buf[0] == '$' ? strtol(buf + 1, NULL, 10) : -1;
			need = len >= 0 ? head + (size_t) len + 2 : head;
			if (need > BUF)
				return -EMSGSIZE;
		}
		if (have >= need)
			return 0;
	}
}

int main(int argc, char **argv) {
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint64_t rnd = 0x2545f4914f6cdd1du;
	char req[96];

	if (argc != 5 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: latency-resp SOCKET N SECS NAME\n");
		return 2;
	}
	uint64_t n = strtoull(argv[2], NULL, 10), end_ns = (uint64_t) (atof(argv[3]) * 1e9);
	if (n == 0)
		return 2;
	strcpy(sa.sun_path, argv[1]);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		fprintf(stderr, "latency-resp: connect '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	lh_reset(&hist);
	end_ns += hist.start_ns;
	for (;;) {
		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		int len = snprintf(req, sizeof(req), "*2\r\n$3\r\nGET\r\n$16\r\nkey:%012llu\r\n",
		                   (unsigned long long) (rnd % n));
		uint64_t t0 = lh_now_ns();
		int r = write_all(fd, req, (size_t) len);
		if (r == 0)
			r = read_reply(fd);
		if (r < 0) {
			fprintf(stderr, "latency-resp: '%s': %s\n", argv[1], strerror(-r));
			return 1;
		}
		uint64_t t1 = lh_now_ns();
		lh_add(&hist, t1 - t0);
		if (t1 >= end_ns)
			break;
	}
	lh_print(stdout, &hist, argv[4]);
	return 0;
}
