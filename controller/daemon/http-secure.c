/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reading and checking the endpoint's TLS files and bearer token; the check of a request's
 * Authorization header. No logging here: thpshrinkd.c names the file and the option. */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "http-secure.h"
#include "macro.h"

int http_secret_read(const char *path, bool public, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	char *buf = NULL;
	size_t len;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	/* Checked on the file opened, not the path: a Kubernetes Secret's path is a symlink. */
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return -EPERM;
	if (!public && (st.st_mode & 0077))
		return -EPERM;
	if ((uint64_t)st.st_size > HTTP_SECRET_MAX)
		return -EFBIG;
	r = read_fd_bounded(fd, HTTP_SECRET_MAX + 1, &buf, &len);
	if (r < 0)
		return r;
	*ret = buf;
	*ret_len = len;
	return 0;
}

int http_token_parse(const char *text, size_t len, char **ret, size_t *ret_len)
{
	static const char space[] = " \t\r\n\v\f";
	char *t;

	while (len && memchr(space, text[0], sizeof(space) - 1)) {
		text++;
		len--;
	}
	while (len && memchr(space, text[len - 1], sizeof(space) - 1))
		len--;
	if (len == 0 || len > HTTP_TOKEN_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (text[i] <= ' ' || text[i] > '~')
			return -EINVAL;
	t = malloc(len + 1);
	if (!t)
		return -ENOMEM;
	memcpy(t, text, len);
	t[len] = '\0';
	*ret = t;
	*ret_len = len;
	return 0;
}

int http_tls_check(const char *cert_pem, const char *key_pem, size_t key_len)
{
	gnutls_certificate_credentials_t cred = NULL;
	gnutls_x509_crt_t *crts = NULL;
	gnutls_x509_privkey_t key = NULL;
	gnutls_datum_t c = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
	gnutls_datum_t k = {(unsigned char *)key_pem, (unsigned)key_len};
	unsigned n = 0;
	int r;

	if (gnutls_x509_crt_list_import2(&crts, &n, &c, GNUTLS_X509_FMT_PEM, 0) < 0 || n == 0)
		return -EBADMSG;
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	if (gnutls_x509_privkey_init(&key) < 0)
		return -ENOMEM;
	r = gnutls_x509_privkey_import2(key, &k, GNUTLS_X509_FMT_PEM, NULL, 0);
	gnutls_x509_privkey_deinit(key);
	if (r < 0)
		return -ENOKEY;
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return -ENOMEM;
	r = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
	gnutls_certificate_free_credentials(cred);
	return r < 0 ? -EKEYREJECTED : 0;
}

bool http_bearer_matches(const char *authorization, const char *token, size_t token_len)
{
	const char *p;
	size_t plen;
	unsigned char diff;

	if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
		return false;
	p = authorization + 7;
	while (*p == ' ')
		p++;
	plen = strnlen(p, token_len + 1);
	/* Every byte of the token is read whatever the presented one holds: only the token's
	 * length shows in the time taken. */
	diff = plen != token_len;
	for (size_t i = 0; i < token_len; i++)
		diff |= (unsigned char)token[i] ^ (unsigned char)(i < plen ? p[i] : 0);
	return diff == 0;
}

void http_security_clear(struct http_security *s)
{
	if (s->key_pem)
		explicit_bzero(s->key_pem, s->key_len);
	if (s->token)
		explicit_bzero(s->token, s->token_len);
	free(s->cert_pem);
	free(s->key_pem);
	free(s->token);
	*s = (struct http_security){0};
}
