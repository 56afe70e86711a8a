/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "fileio.h"
#include "macro.h"

int read_file_bounded(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;

	if (max < 2)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return negative_errno();
	return read_fd_bounded(fd, max, ret, ret_len);
}

int read_file_at(size_t max, char **ret, const char *root, const char *fmt, ...)
{
	char rel[PATH_MAX], path[PATH_MAX];
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= sizeof(rel))
		return -ENAMETOOLONG;
	k = thps_path(path, sizeof(path), root, "%s", rel);
	if (k < 0)
		return k;
	return read_file_bounded(path, max, ret, NULL);
}

int read_fd_bounded(int fd, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	if (max < 2)
		return -EINVAL;
	buf = malloc(max);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + len, max - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (n == 0)
			break;
		len += n;
		if (len == max - 1) {
			char c;
			if (read(fd, &c, 1) > 0)
				return -EFBIG;
			break;
		}
	}
	buf[len] = 0;
	if (ret_len)
		*ret_len = len;
	*ret = TAKE_PTR(buf);
	return 0;
}

int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (end == s)
		return -EINVAL;
	while (*end == '\n' || *end == ' ')
		end++;
	if (*end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int read_u64_file(const char *path, uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	int r;

	r = read_file_bounded(path, 64, &buf, NULL);
	if (r < 0)
		return r;
	return parse_u64(buf, ret);
}

int find_keyed_u64(const char *text, const char *key, uint64_t *ret)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ') {
			char num[32];
			const char *v = p + klen + 1;
			size_t n = strcspn(v, "\n");
			if (n == 0 || n >= sizeof(num))
				return -EINVAL;
			memcpy(num, v, n);
			num[n] = 0;
			return parse_u64(num, ret);
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

int write_file_string(const char *path, const char *s)
{
	_cleanup_close_ int fd = -1;
	size_t len = strlen(s);
	ssize_t n;

	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return negative_errno();
	n = write(fd, s, len);
	if (n < 0)
		return negative_errno();
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

bool dir_has_entries(const char *path)
{
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;

	if (!d)
		return false;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			return true;
	return false;
}

int fsync_directory(const char *dir)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return negative_errno();
	return fsync(fd) < 0 ? negative_errno() : 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	size_t dir_len = slash ? (size_t)(slash - path) : 0, done = 0;
	_cleanup_close_ int fd = -1;
	char tmp[PATH_MAX];
	int r;

	if (!*base)
		return -EISDIR;
	r = snprintf(tmp, sizeof(tmp), "%.*s%s.%s.XXXXXX", (int)dir_len, path, slash ? "/" : "",
		     base);
	if (r < 0 || (size_t)r >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	if (fchmod(fd, mode) < 0)
		goto fail;
	while (done < len) {
		ssize_t n = write(fd, (const char *)data + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			goto fail;
		}
		done += (size_t)n;
	}
	if (fsync(fd) < 0 || rename(tmp, path) < 0)
		goto fail;
	/* The rename is durable once the directory is synced (tmpfs: a no-op); tmp still holds
	 * the directory's name. */
	tmp[slash == path ? 1 : dir_len] = '\0';
	(void)fsync_directory(slash ? tmp : ".");
	return 0;
fail:
	r = negative_errno();
	(void)unlink(tmp);
	return r;
}
