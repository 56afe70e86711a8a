/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The /metrics HTTP endpoint: a thin layer over libmicrohttpd. The scan side publishes a
 * finished text (http_server_publish); every response holds a reference to it, so a slow or
 * hostile client never sees half a pass, never holds the scan up, and many concurrent scrapes
 * cost one copy. */
#pragma once
#include <stddef.h>

struct http_server;
struct http_security;

/* What every server started after this call requires: TLS with sec's certificate and key, a
 * bearer token, both or neither (sec NULL: plain HTTP, no token, today's default). sec must
 * outlive those servers. Set once by thpshrinkd before its manager starts the endpoint, so that
 * socket activation and --listen are protected alike. */
void http_set_security(const struct http_security *sec);

/* Starts serving on addr ("127.0.0.1:9477", "[::1]:9477", "unix:/run/thpshrink/metrics.sock":
 * a socket only root can connect to, replacing a stale one) or, when listen_fd >= 0, on that
 * already bound socket (systemd socket activation). Returns 0, -EINVAL for a bad address,
 * -EEXIST if something other than a socket is at the Unix path, or -errno (e.g. -EADDRINUSE). */
int http_server_start(const char *addr, int listen_fd, struct http_server **ret);
/* The same with sec instead of what http_set_security() set. -EKEYREJECTED: libmicrohttpd
 * refused the TLS certificate or key, or was built without TLS. */
int http_server_start_with(const char *addr, int listen_fd, const struct http_security *sec,
			   struct http_server **ret);
/* Replaces the served text with a copy of text; responses in flight keep the old one until
 * they are sent. Returns 0 or -ENOMEM (the old text stays). */
int http_server_publish(struct http_server *s, const char *text, size_t len);
/* The bound port (for "127.0.0.1:0"), or 0. */
unsigned http_server_port(const struct http_server *s);
void http_server_stop(struct http_server *s);

/* Parses "HOST:PORT" / "[V6]:PORT" into a sockaddr. Returns 0 or -EINVAL. Exposed for tests. */
struct sockaddr_storage;
int http_parse_listen(const char *addr, struct sockaddr_storage *ret, unsigned *ret_len);
