/* libmicrohttpd with its own polling thread. Limits bound what a client can cost us: total
 * and per-IP connection counts, an idle timeout, and a per-connection memory pool that caps
 * the request line and headers. Only GET/HEAD of / and /metrics exist. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http.h"
#include "log.h"
#include "macro.h"

#define HTTP_CONNECTION_LIMIT 32
#define HTTP_PER_IP_LIMIT 8
#define HTTP_TIMEOUT_SEC 10
#define HTTP_MEMORY_LIMIT (32 * 1024) /* request line + headers must fit */

struct http_server {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock;
	char *text;
	size_t len;
	unsigned port;
};

static const char index_html[] =
	"<html><head><title>thpshrinkd</title></head><body><h1>thpshrinkd</h1>"
	"<p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

int http_parse_listen(const char *addr, struct sockaddr_storage *ret, unsigned *ret_len)
{
	char host[64];
	const char *colon, *h;
	size_t hl;
	char *end;
	unsigned long port;
	struct sockaddr_storage ss;

	if (!addr)
		return -EINVAL;
	memset(&ss, 0, sizeof(ss));
	if (addr[0] == '[') {
		const char *rb = strchr(addr, ']');
		if (!rb || rb[1] != ':')
			return -EINVAL;
		h = addr + 1;
		hl = rb - h;
		colon = rb + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		h = addr;
		hl = colon - addr;
	}
	if (hl == 0 || hl >= sizeof(host) || !colon[1])
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || port > 65535 || colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	if (addr[0] != '[') {
		struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
			return -EINVAL;
		*ret_len = sizeof(*in4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		*ret_len = sizeof(*in6);
	}
	*ret = ss;
	return 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
			     const char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, mode);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	static const char plain[] = "text/plain; charset=utf-8";
	struct http_server *s = cls;
	enum MHD_Result ret;
	char *copy;
	size_t len;

	/* Headers are complete on the first call: answer right away, never reading a body. */
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		static const char m[] = "Method Not Allowed: only GET and HEAD\n";
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, plain, m, sizeof(m) - 1, MHD_RESPMEM_PERSISTENT);
	}
	if (strcmp(url, "/") == 0)
		return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", index_html,
			     sizeof(index_html) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics") != 0) {
		static const char m[] = "Not Found: try /metrics\n";
		return reply(c, MHD_HTTP_NOT_FOUND, plain, m, sizeof(m) - 1, MHD_RESPMEM_PERSISTENT);
	}

	pthread_mutex_lock(&s->lock);
	len = s->len;
	copy = len ? malloc(len) : NULL;
	if (copy)
		memcpy(copy, s->text, len);
	pthread_mutex_unlock(&s->lock);
	if (!copy) {
		static const char m[] = "Service Unavailable: no scan has finished yet\n";
		return reply(c, len ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_SERVICE_UNAVAILABLE, plain,
			     m, sizeof(m) - 1, MHD_RESPMEM_PERSISTENT);
	}
	ret = reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", copy, len,
		    MHD_RESPMEM_MUST_FREE);
	return ret;
}

/* libmicrohttpd's complaints (connection limits hit, malformed requests) are what hostile or
 * broken clients cause: worth a debug line, not the journal at every scrape. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_debug("http: %s", msg);
}

int http_server_start(const char *addr, int listen_fd, struct http_server **ret)
{
	struct sockaddr_storage ss;
	unsigned sslen = 0;
	struct http_server *s;
	const union MHD_DaemonInfo *info;
	int r;

	if (listen_fd < 0) {
		r = http_parse_listen(addr, &ss, &sslen);
		if (r < 0)
			return r;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);

	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_POLL;
	if (listen_fd < 0 && ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	if (listen_fd >= 0)
		s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, handle, s,
					  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
					  MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
					  MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTION_LIMIT,
					  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTP_PER_IP_LIMIT,
					  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_SEC,
					  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MEMORY_LIMIT,
					  MHD_OPTION_END);
	else
		s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, handle, s,
					  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
					  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
					  MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTION_LIMIT,
					  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTP_PER_IP_LIMIT,
					  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_SEC,
					  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MEMORY_LIMIT,
					  MHD_OPTION_END);
	if (!s->mhd) {
		r = errno > 0 ? -errno : -EADDRNOTAVAIL;
		pthread_mutex_destroy(&s->lock);
		free(s);
		return r;
	}
	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
	*ret = s;
	return 0;
}

int http_server_publish(struct http_server *s, const char *text, size_t len)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	pthread_mutex_lock(&s->lock);
	free(s->text);
	s->text = copy;
	s->len = len;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

unsigned http_server_port(const struct http_server *s)
{
	return s ? s->port : 0;
}

void http_server_stop(struct http_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->mhd);
	pthread_mutex_destroy(&s->lock);
	free(s->text);
	free(s);
}
