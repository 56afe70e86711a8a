/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libmicrohttpd with its own polling thread. What a client can cost us is bounded: the request
 * line and headers must fit a per-connection memory pool and arrive within a short deadline,
 * the answer must be sent within a longer one, and connections are counted in total and per
 * address. When a count is over its limit, the newcomer is served and the oldest connection that
 * is not being answered is cut: a local user can bind any 127.x.y.z, so limits that refuse the
 * newcomer would let anyone who keeps reconnecting starve Prometheus. Only GET/HEAD of / and
 * /metrics exist; every scrape shares one reference-counted copy of the pass's text. When the
 * operator asks for it, connections are TLS 1.2+ (GnuTLS inside libmicrohttpd) and every
 * request must carry the bearer token, or gets 401 and nothing else. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "http-secure.h"
#include "http.h"
#include "log.h"
#include "macro.h"

/* MHD's own limit, never reached in practice: the soft limits below cut connections first. */
#define HTTP_CONNECTION_LIMIT 64
#define HTTP_SOFT_LIMIT	      32 /* more open connections than this: the oldest waiting one is cut */
#define HTTP_PER_ADDR_LIMIT   8	 /* the same for the connections of one address */
#define HTTP_TIMEOUT_SEC      10
#define HTTP_MEMORY_LIMIT     (32 * 1024) /* request line + headers must fit */
/* A scraper sends its request at once; a client that trickles it holds a slot for nothing. */
#define HTTP_HEAD_DEADLINE_MS 2000
/* The answer (a few MiB at most) must be sent within this, or the reaper cuts it. */
#define HTTP_ANSWER_DEADLINE_MS 10000
#define HTTP_REAPER_PERIOD_MS	250
#define HTTP_SLOTS		(HTTP_CONNECTION_LIMIT + 8)
/* TLS 1.2 and 1.3 only, GnuTLS' default ciphers for those. */
#define HTTP_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

struct http_conn {
	int fd;
	bool used, shut;
	bool answering;	       /* a request is being answered (headers complete) */
	struct timespec start; /* CLOCK_MONOTONIC: connection, request or last answer's end */
	unsigned char
	    addr[16]; /* the client's address (IPv6: its /64), for the per-address count */
};

/* One pass's exposition, shared by the server and every response still sending it. */
struct http_text {
	atomic_uint refs;
	size_t len;
	char data[];
};

struct http_server {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock;
	struct http_text *text; /* under lock */
	unsigned port;
	char *unix_path; /* the Unix socket we bound, removed at stop; or NULL */
	/* under lock: the open connections, for the reaper thread */
	struct http_conn conns[HTTP_SLOTS];
	pthread_t reaper;
	pthread_cond_t wake;
	bool reaper_running, stopping;
	const char *token; /* the bearer token every request must carry, or NULL */
	size_t token_len;
};

static const struct http_security *default_security;

void http_set_security(const struct http_security *sec)
{
	default_security = sec;
}

static void text_unref(void *p)
{
	struct http_text *t = p;

	if (t && atomic_fetch_sub(&t->refs, 1) == 1)
		free(t);
}

static long elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

static bool older(const struct http_conn *a, const struct http_conn *b)
{
	return a->start.tv_sec < b->start.tv_sec ||
	       (a->start.tv_sec == b->start.tv_sec && a->start.tv_nsec < b->start.tv_nsec);
}

/* Under lock: cuts the oldest open connection other than keep (with the same address when
 * addr is not NULL), preferring one that is not being answered. */
static void evict_oldest(struct http_server *s, const struct http_conn *keep,
			 const unsigned char *addr)
{
	struct http_conn *victim = NULL;

	for (size_t i = 0; i < HTTP_SLOTS; i++) {
		struct http_conn *c = &s->conns[i];

		if (!c->used || c->shut || c == keep ||
		    (addr && memcmp(c->addr, addr, sizeof(c->addr))))
			continue;
		if (!victim || (victim->answering && !c->answering) ||
		    (victim->answering == c->answering && older(c, victim)))
			victim = c;
	}
	if (victim) {
		shutdown(victim->fd, SHUT_RDWR);
		victim->shut = true;
	}
}

static void enforce_limits(struct http_server *s, const struct http_conn *newcomer)
{
	size_t all = 0, same = 0;

	for (size_t i = 0; i < HTTP_SLOTS; i++) {
		const struct http_conn *c = &s->conns[i];

		if (!c->used || c->shut)
			continue;
		all++;
		same += !memcmp(c->addr, newcomer->addr, sizeof(c->addr));
	}
	if (same > HTTP_PER_ADDR_LIMIT) {
		evict_oldest(s, newcomer, newcomer->addr);
		all--;
	}
	if (all > HTTP_SOFT_LIMIT)
		evict_oldest(s, newcomer, NULL);
}

static void client_addr(struct MHD_Connection *c, unsigned char out[16])
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	memset(out, 0, 16);
	if (sa && sa->sa_family == AF_INET)
		memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	else if (sa && sa->sa_family == AF_INET6)
		memcpy(out, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 8);
	/* a Unix socket: one address, all zero */
}

/* MHD's thread: track each connection's socket from start to close. The fd stays valid while
 * it is listed: MHD notifies the close before it closes the socket, and both sides hold lock. */
static void notify(void *cls, struct MHD_Connection *c, void **socket_context,
		   enum MHD_ConnectionNotificationCode code)
{
	struct http_server *s = cls;
	const union MHD_ConnectionInfo *ci;

	pthread_mutex_lock(&s->lock);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		for (size_t i = 0; ci && i < HTTP_SLOTS; i++)
			if (!s->conns[i].used) {
				struct http_conn *n = &s->conns[i];

				*n = (struct http_conn){.fd = ci->connect_fd, .used = true};
				clock_gettime(CLOCK_MONOTONIC, &n->start);
				client_addr(c, n->addr);
				*socket_context = n;
				enforce_limits(s, n);
				break;
			}
	} else if (*socket_context) {
		((struct http_conn *)*socket_context)->used = false;
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&s->lock);
}

static void set_answering(struct http_server *s, struct MHD_Connection *c, bool answering)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	pthread_mutex_lock(&s->lock);
	if (ci && ci->socket_context) {
		struct http_conn *h = ci->socket_context;

		h->answering = answering;
		clock_gettime(CLOCK_MONOTONIC, &h->start);
	}
	pthread_mutex_unlock(&s->lock);
}

/* An answer was sent (or the request failed): the next request's head is due within the
 * head deadline, counted from now. */
static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	(void)con_cls;
	(void)toe;
	set_answering(cls, c, false);
}

/* Every HTTP_REAPER_PERIOD_MS: shut down the sockets past their deadline. MHD then sees the
 * connection closed and frees it. shutdown(), not close(): the fd stays MHD's. */
static void *reaper(void *arg)
{
	struct http_server *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += HTTP_REAPER_PERIOD_MS * 1000000L;
		if (t.tv_nsec >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&s->wake, &s->lock, &t);
		for (size_t i = 0; i < HTTP_SLOTS; i++) {
			struct http_conn *c = &s->conns[i];

			if (c->used && !c->shut &&
			    elapsed_ms(&c->start) >
				(c->answering ? HTTP_ANSWER_DEADLINE_MS : HTTP_HEAD_DEADLINE_MS)) {
				shutdown(c->fd, SHUT_RDWR);
				c->shut = true;
			}
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

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
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"thpshrinkd\"");
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
	struct MHD_Response *resp;
	struct http_text *t;
	enum MHD_Result ret;

	/* Headers are complete: the answer now has its own, longer deadline. */
	set_answering(s, c, true);
	/* Before anything else, even the method: a client without the token learns nothing. */
	if (s->token && !http_bearer_matches(MHD_lookup_connection_value(
						 c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
					     s->token, s->token_len)) {
		static const char m[] = "Unauthorized: a bearer token is required\n";
		return reply(c, MHD_HTTP_UNAUTHORIZED, plain, m, sizeof(m) - 1,
			     MHD_RESPMEM_PERSISTENT);
	}
	/* Headers are complete on the first call: answer right away, never reading a body. */
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		static const char m[] = "Method Not Allowed: only GET and HEAD\n";
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, plain, m, sizeof(m) - 1,
			     MHD_RESPMEM_PERSISTENT);
	}
	if (strcmp(url, "/") == 0)
		return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", index_html,
			     sizeof(index_html) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics") != 0) {
		static const char m[] = "Not Found: try /metrics\n";
		return reply(c, MHD_HTTP_NOT_FOUND, plain, m, sizeof(m) - 1,
			     MHD_RESPMEM_PERSISTENT);
	}

	pthread_mutex_lock(&s->lock);
	t = s->text;
	if (t)
		atomic_fetch_add(&t->refs, 1);
	pthread_mutex_unlock(&s->lock);
	if (!t) {
		static const char m[] = "Service Unavailable: no scan has finished yet\n";
		return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, plain, m, sizeof(m) - 1,
			     MHD_RESPMEM_PERSISTENT);
	}
	resp =
	    MHD_create_response_from_buffer_with_free_callback_cls(t->len, t->data, text_unref, t);
	if (!resp) {
		text_unref(t);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* libmicrohttpd's complaints (connection limits hit, malformed requests) are what hostile or
 * broken clients cause: worth a debug line, not the journal at every scrape. */
static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_debug("http: %s", msg);
}

/* Binds a Unix stream socket at path, only root can connect (0600). A stale socket from an
 * earlier run is replaced; anything else at path is left alone. Returns the fd or -errno. */
static int bind_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (!path[0] || strlen(path) >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, strlen(path));
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (unlink(path) < 0)
			return negative_errno();
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return negative_errno();
	/* bind() creates the socket file as 0777 less the umask: 0177 (077 and no x bit) makes
	 * it 0600 from its first instant, whatever umask the daemon was started with; the chmod
	 * only restates it. The umask is the process's: the daemon starts HTTP before its first
	 * pass, with no other thread that could create a file meanwhile. */
	mode_t old = umask(0177);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || chmod(path, 0600) < 0 || listen(fd, 64) < 0)
		return negative_errno();
	return TAKE_FD(fd);
}

int http_server_start(const char *addr, int listen_fd, struct http_server **ret)
{
	return http_server_start_with(addr, listen_fd, default_security, ret);
}

int http_server_start_with(const char *addr, int listen_fd, const struct http_security *sec,
			   struct http_server **ret)
{
	struct sockaddr_storage ss;
	unsigned sslen = 0;
	struct http_server *s;
	const union MHD_DaemonInfo *info;
	struct MHD_OptionItem o[16];
	size_t n = 0;
	int r, unix_fd = -1;
	bool tls = sec && sec->cert_pem;

	if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		return -EKEYREJECTED;
	if (listen_fd < 0 && addr && !strncmp(addr, "unix:", 5)) {
		unix_fd = bind_unix(addr + 5);
		if (unix_fd < 0)
			return unix_fd;
		listen_fd = unix_fd;
	} else if (listen_fd < 0) {
		r = http_parse_listen(addr, &ss, &sslen);
		if (r < 0)
			return r;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		if (unix_fd >= 0)
			close(unix_fd);
		return -ENOMEM;
	}
	if (unix_fd >= 0 && !(s->unix_path = strdup(addr + 5))) {
		close(unix_fd);
		free(s);
		return -ENOMEM;
	}
	if (sec && sec->token) {
		s->token = sec->token;
		s->token_len = sec->token_len;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);

	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_POLL;
	if (listen_fd < 0 && ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* No MHD_OPTION_PER_IP_CONNECTION_LIMIT: MHD would refuse the newcomer; enforce_limits()
	 * cuts the oldest instead. */
	o[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL};
	o[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify, s};
	o[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, s};
	o[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, HTTP_CONNECTION_LIMIT, NULL};
	o[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, HTTP_TIMEOUT_SEC, NULL};
	o[n++] =
	    (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_MEMORY_LIMIT, NULL};
	if (listen_fd >= 0)
		o[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL};
	else
		o[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss};
	if (tls) {
		flags |= MHD_USE_TLS;
		o[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, sec->cert_pem};
		o[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, sec->key_pem};
		o[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
						 (void *)HTTP_TLS_PRIORITIES};
	}
	o[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	errno = 0;
	s->mhd =
	    MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_ARRAY, o, MHD_OPTION_END);
	if (!s->mhd) {
		/* MHD says nothing about which: with TLS, a certificate http_tls_check() passed
		 * that MHD still refused is the likelier cause when errno is not set. */
		r = errno > 0 ? -errno : tls ? -EKEYREJECTED : -EADDRNOTAVAIL;
		goto fail;
	}
	r = -pthread_create(&s->reaper, NULL, reaper, s);
	if (r < 0) {
		MHD_stop_daemon(s->mhd);
		goto fail;
	}
	s->reaper_running = true;
	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info && unix_fd < 0 ? info->port : 0;
	*ret = s;
	return 0;
fail:
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	if (unix_fd >= 0)
		close(unix_fd);
	free(s->unix_path);
	free(s);
	return r;
}

int http_server_publish(struct http_server *s, const char *text, size_t len)
{
	struct http_text *t = malloc(sizeof(*t) + len + 1), *old;

	if (!t)
		return -ENOMEM;
	atomic_init(&t->refs, 1);
	t->len = len;
	memcpy(t->data, text, len);
	t->data[len] = '\0';
	pthread_mutex_lock(&s->lock);
	old = s->text;
	s->text = t;
	pthread_mutex_unlock(&s->lock);
	text_unref(old);
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
	/* The reaper first: it must not shut down fds MHD is about to close and reuse. */
	if (s->reaper_running) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->reaper, NULL);
	}
	MHD_stop_daemon(s->mhd); /* closes the listening socket, ours included */
	if (s->unix_path)
		(void)unlink(s->unix_path);
	free(s->unix_path);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	text_unref(s->text);
	free(s);
}
