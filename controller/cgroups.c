/* Why a tree walk and not libcgroup's walker: we need every directory's inode number (the
 * key /proc/kpagecgroup uses), bounded in depth and count, with openat() so a renamed or
 * removed cgroup mid-walk is simply skipped. libcgroup only tells us where the mount is. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroups.h"
#include "macro.h"

struct cg_entry {
	uint64_t ino;
	char *path;
};

struct thps_cgroup_map {
	struct cg_entry *v;
	size_t n, cap;
};

int thps_cgroups_find_mount(struct thps_ctx *ctx)
{
	char path[PATH_MAX];
	struct stat st;
	int r;

	if (!ctx->cgroup_root[0]) {
		char *mnt = NULL;

		if (cgroup_init() != 0)
			return -ENOENT;
		if (cgroup_get_subsys_mount_point("memory", &mnt) != 0 || !mnt) {
			free(mnt);
			return -ENOENT;
		}
		if (strlen(mnt) >= sizeof(ctx->cgroup_root)) {
			free(mnt);
			return -ENAMETOOLONG;
		}
		strcpy(ctx->cgroup_root, mnt);
		free(mnt);
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

static int map_add(struct thps_cgroup_map *m, uint64_t ino, const char *path)
{
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
	m->v[m->n].path = strdup(path);
	if (!m->v[m->n].path)
		return -ENOMEM;
	m->v[m->n++].ino = ino;
	return 0;
}

/* fd_dir is consumed. rel is the path of fd_dir relative to the root ("" for the root). */
static int walk(struct thps_cgroup_map *m, int fd_dir, const char *rel, unsigned depth,
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
		char sub[PATH_MAX];
		struct stat st;
		int fd, r, n;

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue; /* removed meanwhile, or not a cgroup */
		n = snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name);
		if (n < 0 || (size_t)n >= sizeof(sub))
			continue;
		r = map_add(m, st.st_ino, sub);
		if (r == -E2BIG)
			return 0;
		if (r < 0)
			return r;
		if (depth + 1 >= max_depth)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		r = walk(m, fd, sub, depth + 1, max_depth);
		if (r < 0)
			return r;
	}
	return 0;
}

static int cmp_ino(const void *a, const void *b)
{
	const struct cg_entry *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
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
	r = map_add(m, st.st_ino, "/");
	if (r < 0) {
		close(fd);
		thps_cgroup_map_free(m);
		return r;
	}
	r = max_depth > 0 ? walk(m, fd, "", 0, max_depth) : (close(fd), 0);
	if (r < 0) {
		thps_cgroup_map_free(m);
		return r;
	}
	qsort(m->v, m->n, sizeof(m->v[0]), cmp_ino);
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

const char *thps_cgroup_map_path(const struct thps_cgroup_map *m, uint64_t ino)
{
	struct cg_entry key = {.ino = ino}, *e;

	if (!m || !m->n)
		return NULL;
	e = bsearch(&key, m->v, m->n, sizeof(m->v[0]), cmp_ino);
	return e ? e->path : NULL;
}

uint64_t thps_cgroup_map_ino(const struct thps_cgroup_map *m, const char *path)
{
	for (size_t i = 0; m && i < m->n; i++)
		if (strcmp(m->v[i].path, path) == 0)
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
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
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
