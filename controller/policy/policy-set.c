/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Loading policy files and directories (all or nothing), and matching cgroups to policies. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fileio.h"
#include "k8s.h"
#include "macro.h"
#include "policy.h"
#include "registrations.h"

struct thps_policy_set *thps_policy_set_new(void)
{
	return calloc(1, sizeof(struct thps_policy_set));
}

void thps_policy_set_free(struct thps_policy_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++)
		thps_policy_clear(&set->policies[i]);
	free(set->policies);
	free(set);
}

static void set_freep(struct thps_policy_set **s)
{
	thps_policy_set_free(*s);
}

/* The daemon runs as root and acts on what these files say: a file another user can change
 * is a way into root's decisions. */
static int check_owner(const char *path, const struct stat *st, struct thps_policy_errors *errs)
{
	if (st->st_uid != 0) {
		thps_policy_errors_add(
		    errs, "%s: refusing to use: owned by uid %u, not root; chown root it", path,
		    (unsigned)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		thps_policy_errors_add(
		    errs,
		    "%s: refusing to use: writable by group or others (mode %04o); "
		    "chmod go-w it",
		    path, (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* How far the policy directory itself can be trusted. */
enum dir_trust {
	DIR_ROOT_ONLY, /* root-owned, writable by root only: any entry is root's */
	DIR_READ_ONLY, /* a read-only mount (a Kubernetes ConfigMap volume): nobody adds entries */
	DIR_STICKY,    /* root-owned, sticky, writable by others (kubelet makes ConfigMap volume
			* directories 1777): entries must be checked one by one */
};

static int check_dir(const char *dir, int dfd, enum dir_trust *ret, struct thps_policy_errors *errs)
{
	struct statvfs sv;
	struct stat st;
	int r;

	if (fstat(dfd, &st) < 0) {
		r = negative_errno();
		thps_policy_errors_add(errs, "%s: cannot stat: %s", dir, strerror(-r));
		return r;
	}
	if (fstatvfs(dfd, &sv) == 0 && (sv.f_flag & ST_RDONLY)) {
		*ret = DIR_READ_ONLY;
		return 0;
	}
	if (st.st_uid == 0 && (st.st_mode & S_ISVTX) && (st.st_mode & (S_IWGRP | S_IWOTH))) {
		*ret = DIR_STICKY;
		return 0;
	}
	*ret = DIR_ROOT_ONLY;
	return check_owner(dir, &st, errs);
}

/* In a sticky directory anyone may add entries, so each one we read must be root's own: the
 * entry itself (a symlink's owner too), and a symlink must stay inside the directory (kubelet's
 * "NAME -> ..data/NAME", with "..data" a root-owned symlink to a root-owned directory). The
 * file it leads to is checked by load_fd like any other. */
static int check_sticky_entry(int dfd, const char *name, const char *path,
			      struct thps_policy_errors *errs)
{
	char target[PATH_MAX], first[NAME_MAX + 1];
	struct stat st;
	ssize_t n;
	size_t fl;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		int r = negative_errno();
		thps_policy_errors_add(errs, "%s: cannot stat: %s", path, strerror(-r));
		return r;
	}
	if (st.st_uid != 0) {
		thps_policy_errors_add(errs,
				       "%s: refusing to use: owned by uid %u, not root, in a "
				       "directory others can write",
				       path, (unsigned)st.st_uid);
		return -EPERM;
	}
	if (!S_ISLNK(st.st_mode))
		return 0;
	n = readlinkat(dfd, name, target, sizeof(target) - 1);
	if (n < 0) {
		int r = negative_errno();
		thps_policy_errors_add(errs, "%s: cannot read the link: %s", path, strerror(-r));
		return r;
	}
	target[n] = '\0';
	fl = strcspn(target, "/");
	if (target[0] == '/' || strstr(target, "/../") || !strcmp(target + fl, "/..") ||
	    !strcmp(target, "..") || !strncmp(target, "../", 3) || fl > NAME_MAX) {
		thps_policy_errors_add(
		    errs,
		    "%s: refusing to use: a link to '%s', outside its directory (in a directory "
		    "others can write, only links like kubelet's '..data/NAME' are followed)",
		    path, target);
		return -EPERM;
	}
	if (target[fl] == '/') {
		memcpy(first, target, fl);
		first[fl] = '\0';
		/* "..data" (a root-owned link, kubelet's) must lead to a root-owned directory */
		if (fstatat(dfd, first, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != 0 ||
		    fstatat(dfd, first, &st, 0) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
		    (st.st_mode & (S_IWGRP | S_IWOTH))) {
			thps_policy_errors_add(
			    errs,
			    "%s: refusing to use: '%s' is not a root-owned directory only root can "
			    "write",
			    path, first);
			return -EPERM;
		}
	}
	return 0;
}

static int load_fd(int fd, const char *path, unsigned flags, struct thps_policy_set *set,
		   struct thps_policy_errors *errs)
{
	_cleanup_free_ char *text = NULL;
	struct stat st;
	size_t len;
	int r;

	if (fstat(fd, &st) < 0) {
		r = negative_errno();
		thps_policy_errors_add(errs, "%s: cannot stat: %s", path, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		thps_policy_errors_add(errs, "%s: not a regular file", path);
		return -EINVAL;
	}
	if (flags & THPS_POLICY_LOAD_CHECK_OWNER) {
		r = check_owner(path, &st, errs);
		if (r < 0)
			return r;
	}
	r = read_fd_bounded(fd, THPS_POLICY_MAX_FILE + 1, &text, &len);
	if (r == -EFBIG) {
		thps_policy_errors_add(errs, "%s: larger than %d bytes", path,
				       THPS_POLICY_MAX_FILE);
		return r;
	}
	if (r < 0) {
		thps_policy_errors_add(errs, "%s: cannot read: %s", path, strerror(-r));
		return r;
	}
	return thps_policy_parse_text(path, text, len, set, errs);
}

int thps_policy_load_file(const char *path, unsigned flags, struct thps_policy_set *set,
			  struct thps_policy_errors *errs)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	int r;

	if (fd < 0) {
		r = negative_errno();
		thps_policy_errors_add(errs, "%s: cannot open: %s", path, strerror(-r));
		return r;
	}
	return load_fd(fd, path, flags, set, errs);
}

int thps_policy_set_check_unique(const struct thps_policy_set *set, struct thps_policy_errors *errs)
{
	int r = 0;

	for (size_t i = 1; i < set->n; i++)
		for (size_t k = 0; k < i; k++) {
			const struct thps_policy *a = &set->policies[k], *b = &set->policies[i];
			if (strcmp(a->name, b->name))
				continue;
			thps_policy_errors_add(
			    errs,
			    "%s:%u:%u: %s: duplicate policy name \"%s\" (first defined at "
			    "%s:%u:%u)",
			    b->file, b->name_line, b->name_col, b->json_path, b->name, a->file,
			    a->name_line, a->name_col);
			r = -EINVAL;
			break;
		}
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_policy_file(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 5 && !strcmp(name + n - 5, ".json");
}

/* The policy file names of one directory, sorted (load order is byte order). */
struct names {
	char **v;
	size_t n;
};

static void names_clear(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	*ns = (struct names){0};
}

static int names_add(struct names *ns, const char *name)
{
	char **nv = realloc(ns->v, (ns->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	ns->v = nv;
	ns->v[ns->n] = strdup(name);
	if (!ns->v[ns->n])
		return -ENOMEM;
	ns->n++;
	return 0;
}

/* Lists the "*.json" entries of the directory open at fd (fd stays open). */
static int list_names(int fd, const char *dir, struct names *ret, struct thps_policy_errors *errs)
{
	_cleanup_closedir_ DIR *d = NULL;
	int dfd, r = 0;

	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0)
		return negative_errno();
	d = fdopendir(dfd);
	if (!d) {
		r = negative_errno();
		close(dfd);
		thps_policy_errors_add(errs, "%s: cannot read policy directory: %s", dir,
				       strerror(-r));
		return r;
	}
	rewinddir(d);
	for (;;) {
		struct dirent *de;
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno) {
				r = negative_errno();
				thps_policy_errors_add(errs, "%s: cannot read policy directory: %s",
						       dir, strerror(-r));
			}
			break;
		}
		if (!is_policy_file(de->d_name))
			continue;
		if (ret->n >= THPS_POLICY_MAX_FILES) {
			thps_policy_errors_add(errs, "%s: more than %d policy files", dir,
					       THPS_POLICY_MAX_FILES);
			r = -E2BIG;
			break;
		}
		r = names_add(ret, de->d_name);
		if (r < 0)
			break;
	}
	if (r == 0 && ret->n)
		qsort(ret->v, ret->n, sizeof(*ret->v), cmp_str);
	return r;
}

/* One version of a kubelet ConfigMap directory: "..data" is a link to "..<timestamp>", a
 * directory kubelet never changes once "..data" leads to it; an update writes a new one,
 * swaps "..data" and then removes the old one. Reading every file through one fd of the
 * directory "..data" led to when we looked gives one version, never a mix. */
struct data_version {
	int fd; /* -1: the directory has no "..data" */
	char target[NAME_MAX + 1];
	dev_t dev;
	ino_t ino;
};

/* Resolves "..data" once. Returns 0 (v->fd = -1 when there is none), or <0 with the reason
 * in errs. */
static int data_resolve(int dfd, const char *dir, enum dir_trust trust, unsigned flags,
			struct data_version *v, struct thps_policy_errors *errs)
{
	struct stat st;
	ssize_t n;
	int r;

	v->fd = -1;
	if (fstatat(dfd, "..data", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
		return 0;
	if ((flags & THPS_POLICY_LOAD_CHECK_OWNER) && trust == DIR_STICKY && st.st_uid != 0) {
		thps_policy_errors_add(errs,
				       "%s/..data: refusing to use: owned by uid %u, not root", dir,
				       (unsigned)st.st_uid);
		return -EPERM;
	}
	n = readlinkat(dfd, "..data", v->target, sizeof(v->target) - 1);
	if (n < 0) {
		r = negative_errno();
		thps_policy_errors_add(errs, "%s/..data: cannot read the link: %s", dir,
				       strerror(-r));
		return r;
	}
	v->target[n] = '\0';
	/* kubelet's "..2026_12_04_17_00_00.123456789": one name inside the directory */
	if (!n || strchr(v->target, '/') || !strcmp(v->target, "..") || !strcmp(v->target, ".")) {
		thps_policy_errors_add(errs,
				       "%s/..data: refusing to use: a link to '%s', not to a "
				       "directory beside it",
				       dir, v->target);
		return -EPERM;
	}
	v->fd = openat(dfd, v->target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (v->fd < 0) {
		r = negative_errno();
		thps_policy_errors_add(errs, "%s/..data: cannot open '%s': %s", dir, v->target,
				       strerror(-r));
		return r;
	}
	if (fstat(v->fd, &st) < 0)
		return negative_errno();
	v->dev = st.st_dev;
	v->ino = st.st_ino;
	if ((flags & THPS_POLICY_LOAD_CHECK_OWNER) && trust != DIR_READ_ONLY &&
	    (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		thps_policy_errors_add(
		    errs,
		    "%s: refusing to use: '..data' is not a root-owned directory "
		    "only root can write",
		    dir);
		return -EPERM;
	}
	return 0;
}

/* Whether "..data" still leads to the directory we read: if not, kubelet swapped it (and may
 * be removing the one we read, so its listing may have been partial). */
static bool data_unchanged(int dfd, const struct data_version *v)
{
	char now[NAME_MAX + 1];
	struct stat st;
	ssize_t n;

	n = readlinkat(dfd, "..data", now, sizeof(now) - 1);
	if (n < 0)
		return false;
	now[n] = '\0';
	return !strcmp(now, v->target) && fstatat(dfd, "..data", &st, 0) == 0 &&
	       st.st_dev == v->dev && st.st_ino == v->ino && fstat(v->fd, &st) == 0 &&
	       st.st_nlink > 0;
}

static void errors_move(struct thps_policy_errors *to, struct thps_policy_errors *from)
{
	for (size_t i = 0; i < from->n; i++)
		thps_policy_errors_add(to, "%s", from->msgs[i]);
	for (size_t i = 0; i < from->n_warnings; i++)
		thps_policy_warnings_add(to, "%s", from->warnings[i]);
	to->dropped += from->dropped;
	thps_policy_errors_clear(from);
}

/* Beside "..data" every "*.json" entry must be kubelet's "NAME -> ..data/NAME": the files
 * are read from the version, and anything else would be read from no version at all. A link
 * whose NAME the version lacks is kubelet's own, between its swap and its cleanup. */
static int check_data_links(int dfd, const char *dir, enum dir_trust trust, const struct names *top,
			    struct thps_policy_errors *errs)
{
	int fail = 0;

	for (size_t i = 0; i < top->n; i++) {
		_cleanup_free_ char *path = NULL;
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (asprintf(&path, "%s/%s", dir, top->v[i]) < 0)
			return -ENOMEM;
		/* gone since we listed it: kubelet removing a key's link after its swap; nothing
		 * is read through it (the files come from the version) */
		if (fstatat(dfd, top->v[i], &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			continue;
		if (trust == DIR_STICKY) {
			struct thps_policy_errors mine = {0};
			int k = check_sticky_entry(dfd, top->v[i], path, &mine);

			/* gone between the two looks: kubelet's cleanup after its swap */
			if (k < 0 && fstatat(dfd, top->v[i], &st, AT_SYMLINK_NOFOLLOW) < 0 &&
			    errno == ENOENT) {
				thps_policy_errors_clear(&mine);
				continue;
			}
			errors_move(errs, &mine);
			if (k < 0) {
				fail = k;
				continue;
			}
		}
		n = readlinkat(dfd, top->v[i], target, sizeof(target) - 1);
		if (n >= 0) {
			target[n] = '\0';
			if (!strncmp(target, "..data/", 7) && !strcmp(target + 7, top->v[i]))
				continue;
		} else if (errno == ENOENT)
			continue; /* removed by kubelet since we listed it */
		thps_policy_errors_add(errs,
				       "%s: refusing to use: beside '..data' (a ConfigMap) only "
				       "links '..data/%s' are read",
				       path, top->v[i]);
		fail = -EPERM;
	}
	return fail;
}

/* Loads names from the directory open at fd, each reported as "dir/NAME". Goes on after a
 * bad file, so the operator sees every error at once; a file that is gone is an error too. */
static int load_names(int fd, int dfd, const char *dir, enum dir_trust trust, unsigned flags,
		      const struct names *ns, struct thps_policy_set *set,
		      struct thps_policy_errors *errs)
{
	int fail = 0;

	for (size_t i = 0; i < ns->n; i++) {
		_cleanup_free_ char *path = NULL;
		_cleanup_close_ int f = -1;
		int k;

		if (asprintf(&path, "%s/%s", dir, ns->v[i]) < 0)
			return -ENOMEM;
		if (trust == DIR_STICKY && fd == dfd) {
			k = check_sticky_entry(dfd, ns->v[i], path, errs);
			if (k < 0) {
				fail = k;
				continue;
			}
		}
		f = openat(fd, ns->v[i], O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (f < 0) {
			fail = negative_errno();
			thps_policy_errors_add(errs, "%s: cannot open: %s", path, strerror(-fail));
			continue;
		}
		k = load_fd(f, path, flags, set, errs);
		if (k == -ENOMEM)
			return k;
		if (k < 0)
			fail = k;
	}
	return fail;
}

/* One attempt at the whole directory. Returns 0 with *ret set, 1 when "..data" moved while
 * we read (try again), or <0 with every error in errs. */
static int load_once(int dfd, const char *dir, enum dir_trust trust, unsigned flags,
		     struct thps_policy_set **ret, struct thps_policy_errors *errs)
{
	_cleanup_(set_freep) struct thps_policy_set *set = NULL;
	_cleanup_(names_clear) struct names top = {0}, files = {0};
	struct data_version v = {.fd = -1};
	int r;

	set = thps_policy_set_new();
	if (!set)
		return -ENOMEM;
	r = list_names(dfd, dir, &top, errs);
	if (r < 0)
		return r;
	r = data_resolve(dfd, dir, trust, flags, &v, errs);
	if (r < 0)
		goto out;
	if (v.fd < 0) {
		r = load_names(dfd, dfd, dir, trust, flags, &top, set, errs);
		goto out;
	}
	r = check_data_links(dfd, dir, trust, &top, errs);
	if (r < 0) {
		/* a link kubelet removed under us after its next swap: read the new version */
		if (r != -ENOMEM && !data_unchanged(dfd, &v))
			r = 1;
		goto out;
	}
	r = list_names(v.fd, dir, &files, errs);
	if (r >= 0)
		r = load_names(v.fd, dfd, dir, trust, flags, &files, set, errs);
	if (r != -ENOMEM && !data_unchanged(dfd, &v)) {
		r = 1;
		goto out;
	}
out:
	if (v.fd >= 0)
		close(v.fd);
	if (r != 0)
		return r;
	r = thps_policy_set_check_unique(set, errs);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(set);
	return 0;
}

/* Kubelet swaps "..data" once per update; a few tries outlast any realistic burst. */
#define DATA_TRIES 8

int thps_policy_set_load_dir(const char *dir, unsigned flags, struct thps_policy_set **ret,
			     struct thps_policy_errors *errs)
{
	_cleanup_close_ int dfd = -1;
	enum dir_trust trust = DIR_ROOT_ONLY;
	int r;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 && errno == ENOENT && (flags & THPS_POLICY_LOAD_MISSING_OK)) {
		*ret = thps_policy_set_new();
		return *ret ? 1 : -ENOMEM;
	}
	if (dfd < 0) {
		r = negative_errno();
		thps_policy_errors_add(errs, "%s: cannot open policy directory: %s", dir,
				       strerror(-r));
		return r;
	}
	if (flags & THPS_POLICY_LOAD_CHECK_OWNER) {
		r = check_dir(dir, dfd, &trust, errs);
		if (r < 0)
			return r;
	}
	for (int i = 0; i < DATA_TRIES; i++) {
		struct thps_policy_errors mine = {0};

		r = load_once(dfd, dir, trust, flags, ret, &mine);
		if (r != 1) {
			errors_move(errs, &mine);
			return r;
		}
		thps_policy_errors_clear(&mine);
	}
	thps_policy_errors_add(errs, "%s: '..data' changed %d times while loading; try again", dir,
			       DATA_TRIES);
	return -EAGAIN;
}

static const struct thps_policy builtin = {
    .name = "(builtin)",
    .mode = THPS_MODE_OBSERVE,
    .lowutil_max_bucket = 0,
    .trigger_min_waste = 64ULL << 20,
    .action = THPS_POLICY_SPLIT,
    .max_bytes_per_action = 256ULL << 20,
    .max_bytes_per_sec = 64ULL << 20,
    .cooldown_usec = 300ULL * 1000000,
    .pressure_some_avg10 = 10.0,
    .on_pressure = THPS_PRESSURE_SKIP,
    .order = SIZE_MAX,
};

const struct thps_policy *thps_policy_builtin(void)
{
	return &builtin;
}

const struct thps_policy *thps_policy_find(const struct thps_policy_set *set, const char *name)
{
	if (!set || !name)
		return NULL;
	for (size_t i = 0; i < set->n; i++)
		if (!strcmp(set->policies[i].name, name))
			return &set->policies[i];
	return NULL;
}

/* A container opted in when it carries an io.thpshrink.* annotation. The hook's hooks.d files
 * run it for annotated containers only, but the NRI plugin registers every container (a
 * namespace policy needs its identity): a glob such as "container": "*" must still mean "the
 * containers that asked", never every pod of a containerd node. Without the registration's
 * fields (the id alone) the caller vouches for it. */
static bool opted_in(const struct thps_registration *r)
{
	return !r || r->policy[0] || r->mode[0];
}

/* 0: no match; 1: matched by a glob; 2: matched by a literal name (more specific). */
static int container_match(const struct thps_policy *p, const char *id,
			   const struct thps_registration *r)
{
	int best = 0;

	if (!id)
		return 0;
	for (size_t i = 0; i < p->n_match_container; i++) {
		bool glob = strpbrk(p->match_container[i], "*?") != NULL;

		if ((!glob || opted_in(r)) && fnmatch(p->match_container[i], id, 0) == 0)
			best = MAX(best, glob ? 1 : 2);
	}
	return best;
}

/* Compares two specificity keys most significant first: <0, 0, >0. */
static int cmp_keys(const unsigned *a, const unsigned *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return a[i] > b[i] ? 1 : -1;
	return 0;
}

/* 1 if the pod named by id (NULL: not a pod's cgroup) passes p's Kubernetes selectors. */
static bool k8s_match(const struct thps_policy *p, const struct thps_k8s_id *id)
{
	bool uid = p->n_match_pod_uid == 0;

	if ((p->n_match_pod_uid || p->match_qos_mask) && !id)
		return false;
	for (size_t i = 0; !uid && i < p->n_match_pod_uid; i++)
		uid = !strcmp(p->match_pod_uid[i], id->pod_uid);
	return uid && (!p->match_qos_mask || (p->match_qos_mask & (1U << id->qos)));
}

/* 0 if p's selectors exclude the cgroup, else its container key (1 with no container
 * selector, a glob's 1 or a literal's 2: see container_match), shifted by one. */
static int selects(const struct thps_policy *p, const char *cgroup_path, const char *registration,
		   const struct thps_registration *reg, const struct thps_k8s_id *k8s)
{
	int c = 0;

	if (p->n_match_container) {
		c = container_match(p, registration, reg);
		if (!c)
			return 0;
	}
	if (p->match_cgroup &&
	    (!cgroup_path || fnmatch(p->match_cgroup, cgroup_path, FNM_PATHNAME) != 0))
		return 0;
	if (!k8s_match(p, k8s))
		return 0;
	if (!thps_policy_ident_match(p, reg))
		return 0;
	return c + 1;
}

static const struct thps_k8s_id *k8s_of(const char *cgroup_path, struct thps_k8s_id *buf)
{
	return cgroup_path && thps_k8s_parse(cgroup_path, buf) == 1 ? buf : NULL;
}

static bool selects_reg(const struct thps_policy *p, const char *cgroup_path,
			const char *registration, const struct thps_registration *reg)
{
	struct thps_k8s_id k8s;

	return selects(p, cgroup_path, registration, reg, k8s_of(cgroup_path, &k8s)) > 0;
}

bool thps_policy_selects(const struct thps_policy *p, const char *cgroup_path,
			 const char *registration)
{
	return selects_reg(p, cgroup_path, registration, NULL);
}

static const struct thps_policy *match(const struct thps_policy_set *set, const char *cgroup_path,
				       const char *registration,
				       const struct thps_registration *reg)
{
	const struct thps_policy *best = NULL;
	unsigned best_key[7] = {0};
	const struct thps_k8s_id *id;
	struct thps_k8s_id k8s;

	if (!set)
		return &builtin;
	id = k8s_of(cgroup_path, &k8s);
	for (size_t i = 0; i < set->n; i++) {
		const struct thps_policy *p = &set->policies[i];
		int c = selects(p, cgroup_path, registration, reg, id);
		unsigned key[7];

		if (!c)
			continue;
		/* the order of policy.h; the namespace first so that nothing a tenant sets can
		 * outrank the operator's rule for its namespace */
		key[0] = p->n_match_namespace > 0;
		key[1] = (unsigned)(c - 1);
		key[2] = p->n_match_pod_uid > 0;
		key[3] = p->match_qos_mask != 0;
		key[4] = p->spec_components;
		key[5] = p->spec_prefix;
		key[6] = thps_policy_ident_tenant_selectors(p);
		/* strictly greater only: on a tie the earlier policy (load order) stays */
		if (!best || cmp_keys(key, best_key, ELEMENTSOF(key)) > 0) {
			best = p;
			memcpy(best_key, key, sizeof(key));
		}
	}
	return best ? best : &builtin;
}

const struct thps_policy *thps_policy_match(const struct thps_policy_set *set,
					    const char *cgroup_path, const char *registration)
{
	return match(set, cgroup_path, registration, NULL);
}

const struct thps_policy *thps_policy_match_reg(const struct thps_policy_set *set,
						const char *cgroup_path,
						const struct thps_registration *reg)
{
	return match(set, cgroup_path, reg ? reg->id : NULL, reg);
}

static bool mode_delegated(enum thps_tenant_mode t, enum thps_policy_mode asked)
{
	return t == THPS_TENANT_MODE_ANY ||
	       (t == THPS_TENANT_MODE_OBSERVE && asked == THPS_MODE_OBSERVE) ||
	       (t == THPS_TENANT_MODE_ENFORCE && asked == THPS_MODE_ENFORCE);
}

static void choose(const struct thps_policy_set *set, const char *cgroup_path,
		   const char *registration, const struct thps_registration *reg, const char *named,
		   const char *mode, struct thps_choice *ret)
{
	const struct thps_policy *pol = NULL, *matched = NULL;
	struct thps_choice c = {0};

	if (named && *named) {
		pol = thps_policy_find(set, named);
		if (!pol)
			c.refused = THPS_CHOICE_UNKNOWN_POLICY;
		else if (!selects_reg(pol, cgroup_path, registration, reg)) {
			/* a tenant writes the annotation: it may pick among what the operator gives
			 * its cgroup, never another pod's policy */
			c.refused = THPS_CHOICE_NOT_MATCHED;
			pol = NULL;
		}
	}
	if (pol && pol->n_match_namespace == 0) {
		matched = match(set, cgroup_path, registration, reg);
		if (matched->n_match_namespace > 0) {
			c.refused = THPS_CHOICE_NAMESPACE;
			pol = NULL;
		}
	}
	if (!pol)
		pol = matched ? matched : match(set, cgroup_path, registration, reg);
	c.policy = pol;
	c.mode = pol->mode;
	if (mode && *mode) {
		enum thps_policy_mode asked =
		    !strcmp(mode, "enforce") ? THPS_MODE_ENFORCE : THPS_MODE_OBSERVE;

		if (asked != pol->mode && mode_delegated(pol->tenant_mode, asked))
			c.mode = asked;
		else if (asked != pol->mode)
			c.mode_refused = true;
	}
	*ret = c;
}

void thps_policy_choose(const struct thps_policy_set *set, const char *cgroup_path,
			const char *registration, const char *named, const char *mode,
			struct thps_choice *ret)
{
	choose(set, cgroup_path, registration, NULL, named, mode, ret);
}

void thps_policy_choose_reg(const struct thps_policy_set *set, const char *cgroup_path,
			    const struct thps_registration *reg, struct thps_choice *ret)
{
	choose(set, cgroup_path, reg ? reg->id : NULL, reg, reg ? reg->policy : NULL,
	       reg ? reg->mode : NULL, ret);
}
