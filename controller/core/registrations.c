/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Registrations on disk: one small JSON file per container. The hook writes them, the daemon
 * trusts only files that validate, belong to root and nobody else can write. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "json.h"
#include "k8s.h"
#include "macro.h"
#include "proc.h"
#include "registrations.h"
#include "valid.h"

void thps_registration_list_free(struct thps_registration_list *l)
{
	if (!l)
		return;
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

const struct thps_registration *thps_registration_covering(const struct thps_registration_list *l,
							   const char *cgroup)
{
	const struct thps_registration *best = NULL;
	size_t best_len = 0;

	if (!l || !cgroup)
		return NULL;
	for (size_t i = 0; i < l->n; i++) {
		const char *g = l->items[i].cgroup;
		size_t n = strlen(g);

		/* "/" registers nothing below it: the root is no container's */
		if (n <= 1 || strncmp(cgroup, g, n) || (cgroup[n] && cgroup[n] != '/'))
			continue;
		if (!best || n > best_len) {
			best = &l->items[i];
			best_len = n;
		}
	}
	return best;
}

static bool created_valid(const char *s)
{
	struct tm tm;
	const char *end;

	if (!s || strlen(s) != 20)
		return false;
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return end && *end == '\0';
}

static bool status_valid(const char *s)
{
	return !strcmp(s, "creating") || !strcmp(s, "created") || !strcmp(s, "running") ||
	       !strcmp(s, "stopped") || !strcmp(s, "unknown");
}

static bool labels_valid(const struct thps_registration *r)
{
	if (r->n_labels > THPS_REGISTRATION_LABELS_MAX)
		return false;
	for (size_t i = 0; i < r->n_labels; i++)
		if (!thps_k8s_label_key_valid(r->labels[i].key) ||
		    !thps_k8s_label_value_valid(r->labels[i].value) ||
		    (i > 0 && strcmp(r->labels[i - 1].key, r->labels[i].key) >= 0))
			return false;
	return true;
}

static bool identity_valid(const struct thps_registration *r)
{
	return (!r->k8s_namespace[0] || thps_k8s_dns_label_valid(r->k8s_namespace)) &&
	       (!r->pod[0] || thps_k8s_subdomain_valid(r->pod)) &&
	       (!r->pod_uid[0] || thps_k8s_uid_valid(r->pod_uid)) &&
	       (!r->container[0] || thps_k8s_dns_label_valid(r->container)) && labels_valid(r);
}

static bool registration_valid(const struct thps_registration *r)
{
	return identity_valid(r) && thps_oci_id_valid(r->id) && thps_cgroup_path_valid(r->cgroup) &&
	       r->pid >= 0 && (!r->policy[0] || thps_policy_name_valid(r->policy)) &&
	       (!r->mode[0] || thps_mode_normalize(r->mode)) && created_valid(r->created) &&
	       status_valid(r->status) &&
	       (!r->stage[0] || thps_oci_stage_from_string(r->stage) != THPS_OCI_STAGE_NONE);
}

int thps_registration_to_json(const struct thps_registration *r, char **ret)
{
	struct json_object *o;
	const char *s;
	char *d;

	if (!registration_valid(r))
		return -EINVAL;
	o = json_object_new_object();
	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "version", json_object_new_int(THPS_REGISTRATION_VERSION));
	json_object_object_add(o, "id", json_object_new_string(r->id));
	json_object_object_add(o, "cgroup", json_object_new_string(r->cgroup));
	json_object_object_add(o, "pid", json_object_new_int64(r->pid));
	json_object_object_add(o, "pid_start_time", json_object_new_uint64(r->pid_start_time));
	if (r->policy[0])
		json_object_object_add(o, "policy", json_object_new_string(r->policy));
	if (r->mode[0])
		json_object_object_add(o, "mode", json_object_new_string(r->mode));
	json_object_object_add(o, "created", json_object_new_string(r->created));
	json_object_object_add(o, "status", json_object_new_string(r->status));
	if (r->stage[0])
		json_object_object_add(o, "stage", json_object_new_string(r->stage));
	if (r->k8s_namespace[0])
		json_object_object_add(o, "namespace", json_object_new_string(r->k8s_namespace));
	if (r->pod[0])
		json_object_object_add(o, "pod", json_object_new_string(r->pod));
	if (r->pod_uid[0])
		json_object_object_add(o, "pod_uid", json_object_new_string(r->pod_uid));
	if (r->container[0])
		json_object_object_add(o, "container", json_object_new_string(r->container));
	if (r->n_labels > 0) {
		struct json_object *l = json_object_new_object();

		for (size_t i = 0; l && i < r->n_labels; i++)
			json_object_object_add(l, r->labels[i].key,
					       json_object_new_string(r->labels[i].value));
		json_object_object_add(o, "labels", l);
	}
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						  JSON_C_TO_STRING_NOSLASHESCAPE);
	d = s ? malloc(strlen(s) + 2) : NULL;
	if (d) {
		strcpy(d, s);
		strcat(d, "\n");
	}
	json_object_put(o);
	if (!d)
		return -ENOMEM;
	*ret = d;
	return 0;
}

/* A string value, refused whole if it holds a NUL ("\u0000" would cut it) or any other
 * control character: the hook refuses those, so a file holding one was not its doing. */
static int copy_str(struct json_object *v, char *dst, size_t size)
{
	const char *s;
	size_t len;

	if (!json_object_is_type(v, json_type_string))
		return -EBADMSG;
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (len >= size || strlen(s) != len)
		return -EBADMSG;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return -EBADMSG;
	strcpy(dst, s);
	return 0;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct thps_registration_label *)a)->key,
		      ((const struct thps_registration_label *)b)->key);
}

/* The "labels" object: at most THPS_REGISTRATION_LABELS_MAX string members (json-c keeps the
 * last of a duplicated key); kept sorted by key, as the writer writes them. */
static int labels_from_json(struct json_object *o, struct thps_registration *r)
{
	if (!json_object_is_type(o, json_type_object) ||
	    json_object_object_length(o) > THPS_REGISTRATION_LABELS_MAX)
		return -EBADMSG;
	r->n_labels = 0;
	json_object_object_foreach(o, key, v)
	{
		struct thps_registration_label *l = &r->labels[r->n_labels];

		if (strlen(key) >= sizeof(l->key) || copy_str(v, l->value, sizeof(l->value)) < 0)
			return -EBADMSG;
		strcpy(l->key, key);
		r->n_labels++;
	}
	qsort(r->labels, r->n_labels, sizeof(r->labels[0]), label_cmp);
	return 0;
}

int thps_registration_from_json(const char *buf, size_t len, struct thps_registration *ret)
{
	struct thps_registration r;
	struct json_object *o;
	unsigned seen = 0;
	void *root;
	int k;

	k = thps_json_parse_object(buf, len, THPS_REGISTRATION_MAX, &root);
	if (k < 0)
		return k;
	o = root;
	memset(&r, 0, sizeof(r));
	json_object_object_foreach(o, key, v)
	{
		if (!strcmp(key, "version")) {
			if (!json_object_is_type(v, json_type_int) ||
			    json_object_get_int64(v) != THPS_REGISTRATION_VERSION)
				goto bad;
			seen |= 1;
		} else if (!strcmp(key, "id")) {
			if (copy_str(v, r.id, sizeof(r.id)) < 0)
				goto bad;
			seen |= 2;
		} else if (!strcmp(key, "cgroup")) {
			if (copy_str(v, r.cgroup, sizeof(r.cgroup)) < 0)
				goto bad;
			seen |= 4;
		} else if (!strcmp(key, "pid")) {
			int64_t p;

			if (!json_object_is_type(v, json_type_int))
				goto bad;
			p = json_object_get_int64(v);
			if (p < 0 || p > (1 << 22))
				goto bad;
			r.pid = (pid_t)p;
			seen |= 8;
		} else if (!strcmp(key, "pid_start_time")) {
			if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
				goto bad;
			r.pid_start_time = json_object_get_uint64(v);
			seen |= 16;
		} else if (!strcmp(key, "policy")) {
			if (copy_str(v, r.policy, sizeof(r.policy)) < 0 || !r.policy[0])
				goto bad;
		} else if (!strcmp(key, "mode")) {
			if (copy_str(v, r.mode, sizeof(r.mode)) < 0 || !r.mode[0])
				goto bad;
		} else if (!strcmp(key, "created")) {
			if (copy_str(v, r.created, sizeof(r.created)) < 0)
				goto bad;
			seen |= 32;
		} else if (!strcmp(key, "status")) {
			if (copy_str(v, r.status, sizeof(r.status)) < 0)
				goto bad;
			seen |= 64;
		} else if (!strcmp(key, "stage")) {
			if (copy_str(v, r.stage, sizeof(r.stage)) < 0 || !r.stage[0])
				goto bad;
		} else if (!strcmp(key, "namespace")) {
			if (copy_str(v, r.k8s_namespace, sizeof(r.k8s_namespace)) < 0 ||
			    !r.k8s_namespace[0])
				goto bad;
		} else if (!strcmp(key, "pod")) {
			if (copy_str(v, r.pod, sizeof(r.pod)) < 0 || !r.pod[0])
				goto bad;
		} else if (!strcmp(key, "pod_uid")) {
			if (copy_str(v, r.pod_uid, sizeof(r.pod_uid)) < 0 || !r.pod_uid[0])
				goto bad;
		} else if (!strcmp(key, "container")) {
			if (copy_str(v, r.container, sizeof(r.container)) < 0 || !r.container[0])
				goto bad;
		} else if (!strcmp(key, "labels")) {
			if (labels_from_json(v, &r) < 0)
				goto bad;
		} else
			goto bad; /* unknown keys are errors: the schema has additionalProperties
				     false */
	}
	if (seen != 127 || !registration_valid(&r))
		goto bad;
	json_object_put(o);
	*ret = r;
	return 0;
bad:
	json_object_put(o);
	return -EBADMSG;
}

int thps_registration_write(const char *dir, const struct thps_registration *r)
{
	_cleanup_free_ char *text = NULL;
	char final[PATH_MAX];
	int k;

	k = thps_registration_to_json(r, &text);
	if (k < 0)
		return k;
	if ((size_t)snprintf(final, sizeof(final), "%s/%s.json", dir, r->id) >= sizeof(final))
		return -ENAMETOOLONG;
	return write_file_atomic(final, text, strlen(text), 0644);
}

int thps_registration_remove(const char *dir, const char *id)
{
	char path[PATH_MAX];

	if (!thps_oci_id_valid(id))
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.json", dir, id) >= sizeof(path))
		return -ENAMETOOLONG;
	if (unlink(path) < 0 && errno != ENOENT)
		return negative_errno();
	(void)fsync_directory(dir);
	return 0;
}

int thps_registration_load(const char *dir, const char *id, struct thps_registration *ret)
{
	struct thps_registration r;
	_cleanup_close_ int fd = -1;
	char path[PATH_MAX];
	char *buf;
	struct stat st;
	ssize_t n;
	int k;

	if (!thps_oci_id_valid(id))
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.json", dir, id) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EPERM;
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return -EPERM;
	if (st.st_size >= THPS_REGISTRATION_MAX)
		return -EFBIG;
	buf = malloc(THPS_REGISTRATION_MAX);
	if (!buf)
		return -ENOMEM;
	n = read(fd, buf, THPS_REGISTRATION_MAX);
	if (n < 0) {
		k = negative_errno();
		free(buf);
		return k;
	}
	if (n >= THPS_REGISTRATION_MAX) {
		free(buf);
		return -EFBIG;
	}
	k = thps_registration_from_json(buf, (size_t)n, &r);
	free(buf);
	if (k < 0)
		return k;
	if (strcmp(r.id, id))
		return -EBADMSG;
	*ret = r;
	return 0;
}

/* The id of a registration file name "<id>.json", or false for anything else (temp files
 * start with '.', which no valid id does… except ids like ".x", which we also skip there). */
static bool id_from_name(const char *name, char *id, size_t size)
{
	size_t n = strlen(name);

	if (name[0] == '.' || n <= 5 || strcmp(name + n - 5, ".json") || n - 5 >= size)
		return false;
	memcpy(id, name, n - 5);
	id[n - 5] = '\0';
	return thps_oci_id_valid(id);
}

int thps_registrations_load_all(const char *dir, thps_registration_error_fn on_error,
				void *userdata, struct thps_registration_list *ret)
{
	struct thps_registration_list l = {0};
	_cleanup_closedir_ DIR *d = opendir(dir);
	size_t cap = 0;
	struct dirent *de;

	if (!d) {
		if (errno == ENOENT) {
			*ret = l;
			return 0;
		}
		return negative_errno();
	}
	while ((errno = 0, de = readdir(d))) {
		char id[THPS_OCI_ID_MAX + 1];
		struct thps_registration r;
		int k;

		if (!id_from_name(de->d_name, id, sizeof(id))) {
			if (de->d_name[0] != '.' && on_error)
				on_error(dir, de->d_name, -EINVAL, userdata);
			continue;
		}
		k = thps_registration_load(dir, id, &r);
		if (k == -ENOENT)
			continue; /* removed while we listed */
		if (k < 0) {
			if (on_error)
				on_error(dir, de->d_name, k, userdata);
			continue;
		}
		if (l.n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct thps_registration *ni = reallocarray(l.items, ncap, sizeof(*ni));

			if (!ni) {
				thps_registration_list_free(&l);
				return -ENOMEM;
			}
			l.items = ni;
			cap = ncap;
		}
		l.items[l.n++] = r;
	}
	if (errno) {
		int k = negative_errno();

		thps_registration_list_free(&l);
		return k;
	}
	*ret = l;
	return (int)MIN(l.n, (size_t)INT_MAX);
}

int thps_registrations_dir_ensure(const char *dir)
{
	char parent[PATH_MAX];
	char *slash;

	if (snprintf(parent, sizeof(parent), "%s", dir) >= (int)sizeof(parent))
		return -ENAMETOOLONG;
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if (mkdir(parent, 0755) < 0 && errno != EEXIST)
			return negative_errno();
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return negative_errno();
	return 0;
}

int thps_registrations_watch(const char *dir)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	if (fd < 0)
		return negative_errno();
	/* CLOSE_WRITE catches a writer that does not rename; MOVED_TO the hook's rename. */
	if (inotify_add_watch(fd, dir,
			      IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
				  IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR) < 0) {
		int k = negative_errno();

		close(fd);
		return k;
	}
	return fd;
}

void thps_registration_events_free(struct thps_registration_events *ev)
{
	if (!ev)
		return;
	free(ev->added);
	free(ev->removed);
	memset(ev, 0, sizeof(*ev));
}

/* Drops id from list (it changed side), keeping order. */
static void drop_id(char (*list)[THPS_OCI_ID_MAX + 1], size_t *n, const char *id)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(list[i], id)) {
			memmove(list + i, list + i + 1, (*n - i - 1) * sizeof(*list));
			(*n)--;
			return;
		}
}

static int push_id(char (**list)[THPS_OCI_ID_MAX + 1], size_t *n, const char *id)
{
	char(*nl)[THPS_OCI_ID_MAX + 1];

	drop_id(*list, n, id);
	nl = reallocarray(*list, *n + 1, sizeof(**list));
	if (!nl)
		return -ENOMEM;
	*list = nl;
	strcpy(nl[*n], id);
	(*n)++;
	return 0;
}

int thps_registrations_handle_events(int fd, struct thps_registration_events *ret)
{
	struct thps_registration_events ev = {0};
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			int k = n == 0 ? -EIO : negative_errno();

			thps_registration_events_free(&ev);
			return k;
		}
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *e = (struct inotify_event *)p;
			char id[THPS_OCI_ID_MAX + 1];
			int k = 0;

			p += sizeof(*e) + e->len;
			if (e->mask &
			    (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
				ev.rescan = true;
				continue;
			}
			if (!e->len || !id_from_name(e->name, id, sizeof(id)))
				continue;
			if (e->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) {
				drop_id(ev.removed, &ev.n_removed, id);
				k = push_id(&ev.added, &ev.n_added, id);
			} else if (e->mask & (IN_DELETE | IN_MOVED_FROM)) {
				drop_id(ev.added, &ev.n_added, id);
				k = push_id(&ev.removed, &ev.n_removed, id);
			}
			if (k < 0) {
				thps_registration_events_free(&ev);
				return k;
			}
		}
	}
	*ret = ev;
	return (int)(ev.n_added + ev.n_removed);
}

int thps_registration_set_pid(const struct thps_ctx *ctx, struct thps_registration *r, pid_t pid)
{
	uint64_t st;
	int k;

	if (pid <= 0)
		return -EINVAL;
	k = thps_proc_starttime(ctx, pid, &st);
	if (k < 0)
		return k == -ESRCH ? -ENOENT : k;
	r->pid = pid;
	r->pid_start_time = st;
	return 0;
}

static int cgroup2_root(const struct thps_ctx *ctx, char *buf, size_t size)
{
	if (ctx->cgroup_root[0])
		return thps_path(buf, size, ctx->cgroup_root, "%s", "");
	return thps_path(buf, size, ctx->sys_root, "fs/cgroup");
}

int thps_registration_alive(const struct thps_ctx *ctx, const struct thps_registration *r)
{
	char root[PATH_MAX], path[PATH_MAX];
	struct stat st;
	int k;

	k = cgroup2_root(ctx, root, sizeof(root));
	if (k < 0)
		return k;
	k = thps_path(path, sizeof(path), root, "%s", r->cgroup + 1);
	if (k < 0)
		return k;
	if (stat(path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : negative_errno();
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (r->pid > 0) {
		struct thps_registration now = {0};

		k = thps_registration_set_pid(ctx, &now, r->pid);
		if (k == -ENOENT || k == -ESRCH)
			return 0;
		if (k < 0)
			return k;
		/* Same pid, another process: the container's init died and its pid was reused. */
		if (r->pid_start_time && now.pid_start_time != r->pid_start_time)
			return 0;
	}
	return 1;
}

int thps_registrations_gc(const char *dir, const struct thps_ctx *ctx)
{
	struct thps_registration_list l;
	int k, removed = 0;

	k = thps_registrations_load_all(dir, NULL, NULL, &l);
	if (k < 0)
		return k;
	for (size_t i = 0; i < l.n; i++) {
		if (thps_registration_alive(ctx, &l.items[i]) != 0)
			continue; /* alive, or cannot tell: keep it */
		k = thps_registration_remove(dir, l.items[i].id);
		if (k < 0) {
			thps_registration_list_free(&l);
			return k;
		}
		removed++;
	}
	thps_registration_list_free(&l);
	return removed;
}
