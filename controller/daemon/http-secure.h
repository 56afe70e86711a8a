/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What protects /metrics when the operator asks for it: a TLS certificate and key, and a bearer
 * token. The series name every tenant's cgroups, pods and containers, so a file that is meant to
 * protect them is checked before the daemon serves anything: a broken one stops the start rather
 * than let a root daemon serve in clear what it was asked to protect. Files are read once, at
 * start (a new certificate or token takes a restart). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define HTTP_SECRET_MAX (64 * 1024) /* a PEM chain or a token larger than this is refused */
#define HTTP_TOKEN_MAX	4096

struct http_security {
	char *cert_pem; /* NUL-terminated PEM, or NULL: no TLS */
	char *key_pem;
	size_t key_len;
	char *token; /* NULL: no token asked */
	size_t token_len;
};

/* Reads a file that holds a secret: a regular file of at most HTTP_SECRET_MAX bytes, owned by
 * root or by us, and, unless public, with no access for group or others (as ssh demands of a
 * private key: a Secret mounted with the default mode 0644 is readable by every process on
 * the node). Returns 0, -EPERM (owner or mode), -EFBIG, -EINVAL (not a regular file) or -errno. */
int http_secret_read(const char *path, bool public, char **ret, size_t *ret_len);

/* A token file's text to the token: surrounding whitespace dropped (as Prometheus drops it from
 * credentials_file), the rest printable ASCII without spaces, 1 to HTTP_TOKEN_MAX bytes.
 * Returns 0 or -EINVAL. *ret is a new string. */
int http_token_parse(const char *text, size_t len, char **ret, size_t *ret_len);

/* Checks a PEM certificate (chain) and key with GnuTLS, the library libmicrohttpd serves TLS
 * with. Returns 0, -EBADMSG (the certificate), -ENOKEY (the key), -EKEYREJECTED (the key is
 * not the certificate's) or -ENOMEM. */
int http_tls_check(const char *cert_pem, const char *key_pem, size_t key_len);

/* Whether an Authorization header value is "Bearer <token>". The token's bytes are compared in
 * time that depends only on the token's length, never on where the first difference is. */
bool http_bearer_matches(const char *authorization, const char *token, size_t token_len);

/* Wipes and frees what s holds (not s itself). */
void http_security_clear(struct http_security *s);
