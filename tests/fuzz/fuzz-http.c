/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's HTTP endpoint (controller/daemon/http.c): its listen-address parser, and whole
 * requests sent over loopback to a real server (libmicrohttpd's request parsing, the
 * server's limits and its routing), one connection per input. The server lives for the whole
 * run; a crash or a sanitizer report in its thread fails the target. A response, when there
 * is one, is HTTP, and /metrics never serves anything but the published text. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "http.h"

static const char published[] = "# HELP thpshrink_up fuzz\nthpshrink_up 1\n";

static struct http_server *server(void)
{
	static struct http_server *s;

	if (!s) {
		if (http_server_start("127.0.0.1:0", -1, &s) < 0 ||
		    http_server_publish(s, published, sizeof(published) - 1) < 0)
			abort();
	}
	return s;
}

static void request(const uint8_t *data, size_t size)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char resp[4096];
	size_t got = 0;
	const char *body;
	int fd;

	a.sin_port = htons(http_server_port(server()));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		abort();
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return; /* the server's connection limit: not a finding */
	}
	if (size)
		(void)send(fd, data, size, MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 2000) <= 0 || got >= sizeof(resp) - 1)
			break;
		n = recv(fd, resp + got, sizeof(resp) - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	resp[got] = 0;
	if (got >= 5 && strncmp(resp, "HTTP/", 5) != 0)
		abort();
	/* a 200 on /metrics carries exactly the published text */
	body = strstr(resp, "\r\n\r\n");
	if (strstr(resp, "version=0.0.4") && body && body[4] && strncmp(body + 4, "HTTP/", 5) != 0 &&
	    strncmp(body + 4, published, sizeof(published) - 1) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size);
	struct sockaddr_storage ss;
	unsigned len;

	(void)http_parse_listen(s, &ss, &len);
	free(s);
	request(data, size);
	return 0;
}
