/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Why a tree walk and not libcgroup's walker: we need every directory's inode number (the
 * key /proc/kpagecgroup uses), bounded in depth and count, with openat() so a renamed or
 * removed cgroup mid-walk is simply skipped. The mount comes from the probe's own reading of
 * mountinfo (thps_memcg_find), so the daemon acts where the probe looked, under ctx's roots. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroups.h"
#include "macro.h"
#include "probe.h"

/* A directory, stored as its parent and its own name: a tree of N cgroups with long paths
 * costs N names, not N paths (20,000 cgroups under 3.7 KB of parents were 74 MB as paths). */
struct cg_entry {
	uint64_t ino;
	uint32_t parent;   /* index into v; the root is its own parent */
	uint32_t name;	   /* offset into names */
	uint32_t path_len; /* of the full relative path, bounded by PATH_MAX */
};

struct thps_cgroup_map {
	struct cg_entry *v; /* in walk order: parents before children */
	size_t n, cap;
	uint32_t *by_ino; /* indexes into v, sorted by ino */
	char *names;
	size_t names_len, names_cap;
	char path[PATH_MAX]; /* thps_cgroup_map_path's answer */
};

int thps_cgroups_find_mount(struct thps_ctx *ctx)
{
	char path[PATH_MAX];
	struct stat st;
	int r;

	if (!ctx->cgroup_root[0]) {
		bool v2mem = false;

		r = thps_memcg_find(ctx, path, sizeof(path), &v2mem);
		if (r < 0)
			return r;
		/* A cgroup2 mount without the memory controller is no memory hierarchy. */
		if (r == 0 || (r == 2 && !v2mem))
			return -ENOENT;
		strcpy(ctx->cgroup_root, path); /* both PATH_MAX */
	}
	if (stat(ctx->cgroup_root, &st) < 0)
		return negative_errno();
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	r = thps_path(path, sizeof(path), ctx->cgroup_root, "cgroup.controllers");
	if (r < 0)
		return r;
	ctx->cgroup_version = access(path, F_OK) == 0 ? 2 : 1;
	return 0;
}

/* Returns the new entry's index, -E2BIG when the map is full, or -ENOMEM. */
static int map_add(struct thps_cgroup_map *m, uint64_t ino, uint32_t parent, const char *name,
		   uint32_t path_len)
{
	size_t len = strlen(name) + 1;

	if (m->n >= THPS_CGROUP_MAX_ENTRIES)
		return -E2BIG;
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct cg_entry *v = reallocarray(m->v, cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	if (m->names_len + len > m->names_cap) {
		size_t cap = MAX(m->names_cap * 2, m->names_len + len + 4096);
		char *n = realloc(m->names, cap);
		if (!n)
			return -ENOMEM;
		m->names = n;
		m->names_cap = cap;
	}
	memcpy(m->names + m->names_len, name, len);
	m->v[m->n] = (struct cg_entry){
	    .ino = ino, .parent = parent, .name = (uint32_t)m->names_len, .path_len = path_len};
	m->names_len += len;
	return (int)m->n++;
}

/* fd_dir is consumed. self is fd_dir's entry. */
static int walk(struct thps_cgroup_map *m, int fd_dir, uint32_t self, unsigned depth,
		unsigned max_depth)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	d = fdopendir(fd_dir);
	if (!d) {
		int r = negative_errno();
		close(fd_dir);
		return r;
	}
	while ((de = readdir(d))) {
		size_t path_len = (self == 0 ? 0 : m->v[self].path_len) + 1 + strlen(de->d_name);
		struct stat st;
		int fd, r;

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue; /* removed meanwhile, or not a cgroup */
		if (path_len >= PATH_MAX)
			continue;
		r = map_add(m, st.st_ino, self, de->d_name, (uint32_t)path_len);
		if (r == -E2BIG)
			return 0;
		if (r < 0)
			return r;
		if (depth + 1 >= max_depth)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		r = walk(m, fd, (uint32_t)r, depth + 1, max_depth);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Writes entry i's path relative to the mount ("/" for the root) into buf (PATH_MAX). */
static const char *entry_path(const struct thps_cgroup_map *m, uint32_t i, char *buf)
{
	size_t end = m->v[i].path_len;

	if (i == 0)
		return strcpy(buf, "/");
	buf[end] = '\0';
	for (; i != 0; i = m->v[i].parent) {
		const char *name = m->names + m->v[i].name;
		size_t l = strlen(name);

		end -= l;
		memcpy(buf + end, name, l);
		buf[--end] = '/';
	}
	return buf;
}

static const struct thps_cgroup_map *cmp_map; /* qsort has no context argument */

static int cmp_ino(const void *a, const void *b)
{
	uint64_t x = cmp_map->v[*(const uint32_t *)a].ino, y = cmp_map->v[*(const uint32_t *)b].ino;

	return x < y ? -1 : x > y;
}

int thps_cgroup_map_build(const char *root, unsigned max_depth, struct thps_cgroup_map **ret)
{
	struct thps_cgroup_map *m;
	struct stat st;
	int fd, r;

	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0) {
		r = negative_errno();
		close(fd);
		return r;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		close(fd);
		return -ENOMEM;
	}
	r = map_add(m, st.st_ino, 0, "", 1);
	if (r < 0) {
		close(fd);
		thps_cgroup_map_free(m);
		return r;
	}
	r = max_depth > 0 ? walk(m, fd, 0, 0, max_depth) : (close(fd), 0);
	if (r >= 0 && !(m->by_ino = calloc(m->n, sizeof(*m->by_ino))))
		r = -ENOMEM;
	if (r < 0) {
		thps_cgroup_map_free(m);
		return r;
	}
	for (size_t i = 0; i < m->n; i++)
		m->by_ino[i] = (uint32_t)i;
	cmp_map = m;
	qsort(m->by_ino, m->n, sizeof(*m->by_ino), cmp_ino);
	cmp_map = NULL;
	*ret = m;
	return 0;
}

int thps_cgroups_discover(struct thps_ctx *ctx, struct thps_cgroup_map **ret)
{
	int r = thps_cgroups_find_mount(ctx);

	if (r < 0)
		return r;
	return thps_cgroup_map_build(ctx->cgroup_root, THPS_CGROUP_MAX_DEPTH, ret);
}

const char *thps_cgroup_map_path(struct thps_cgroup_map *m, uint64_t ino)
{
	size_t lo = 0, hi = m ? m->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t v = m->v[m->by_ino[mid]].ino;

		if (v == ino)
			return entry_path(m, m->by_ino[mid], m->path);
		if (v < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

uint64_t thps_cgroup_map_ino(const struct thps_cgroup_map *m, const char *path)
{
	char buf[PATH_MAX];

	for (size_t i = 0; m && i < m->n; i++)
		if (strcmp(entry_path(m, (uint32_t)i, buf), path) == 0)
			return m->v[i].ino;
	return 0;
}

size_t thps_cgroup_map_size(const struct thps_cgroup_map *m)
{
	return m ? m->n : 0;
}

void thps_cgroup_map_free(struct thps_cgroup_map *m)
{
	if (!m)
		return;
	free(m->v);
	free(m->by_ino);
	free(m->names);
	free(m);
}

int thps_cgroup_path_within(const char *path, const char *ancestor)
{
	size_t n;

	/* "/a/" and "a" mean "/a": compare without leading/trailing slashes */
	while (*ancestor == '/')
		ancestor++;
	while (*path == '/')
		path++;
	n = strlen(ancestor);
	while (n > 0 && ancestor[n - 1] == '/')
		n--;
	if (n == 0)
		return 1;
	if (strncmp(path, ancestor, n) != 0)
		return 0;
	return path[n] == '\0' || path[n] == '/';
}
