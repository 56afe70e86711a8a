/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Container registrations: /run/thpshrink/containers/<id>.json, written by thpshrink-oci-hook
 * (atomically) and read by the daemon (at start, on inotify events, and in its GC pass).
 * The format is schemas/registration.schema.json; both sides validate with the same code.
 *
 * thpshrink-nri writes the same files, adding the pod's namespace, name, UID and labels and the
 * container's name (optional keys: a file without them is the hook's and stays valid).
 *
 * Daemon use (sd-event):
 *   start:  thps_registrations_dir_ensure(dir); fd = thps_registrations_watch(dir);
 *           sd_event_add_io(e, &src, fd, EPOLLIN, on_io, m);   (watch before loading: no gap)
 *           thps_registrations_load_all(dir, log_cb, m, &list)  → (re)register every container
 *   on_io:  thps_registrations_handle_events(fd, &ev): for ev.added thps_registration_load(),
 *           for ev.removed forget the id; ev.rescan → load_all again (re-watch if the dir went)
 *   timer:  thps_registrations_gc(dir, ctx) every minute or so (a missed poststop). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "context.h"
#include "valid.h"

#define THPS_REGISTRATIONS_DIR	  RUNSTATEDIR "/thpshrink/containers"
#define THPS_REGISTRATION_MAX	  (16 * 1024) /* a bigger file is refused */
#define THPS_REGISTRATION_VERSION 1

#define THPS_REGISTRATION_LABELS_MAX 16 /* pod labels kept; the plugin logs the rest */

struct thps_registration_label {
	char key[THPS_K8S_LABEL_KEY_MAX + 1];
	char value[THPS_K8S_LABEL_MAX + 1];
};

struct thps_registration {
	char id[THPS_OCI_ID_MAX + 1];
	char cgroup[THPS_CGROUP_PATH_MAX];  /* below the cgroup2 root, starts with '/' */
	pid_t pid;			    /* container init; 0 if unknown */
	uint64_t pid_start_time;	    /* /proc/PID/stat field 22; 0 if unknown */
	char policy[THPS_OCI_NAME_MAX + 1]; /* "" = the daemon's default/matching policy */
	char mode[8];			    /* "observe" | "enforce" | "" (policy's own mode) */
	char created[32];		    /* RFC 3339 UTC, e.g. 2026-12-03T05:46:40Z */
	char status[16];		    /* OCI status when written: creating|created|running */
	char stage[24];			    /* hook stage that wrote it */
	/* Kubernetes identity, where the runtime tells it (the NRI plugin); "" / 0 = not told. */
	char k8s_namespace[THPS_K8S_LABEL_MAX + 1];
	char pod[THPS_K8S_SUBDOMAIN_MAX + 1];
	char pod_uid[THPS_K8S_LABEL_MAX + 1];
	char container[THPS_K8S_LABEL_MAX + 1];
	size_t n_labels; /* pod labels, sorted by key, keys unique */
	struct thps_registration_label labels[THPS_REGISTRATION_LABELS_MAX];
};

struct thps_registration_list {
	struct thps_registration *items;
	size_t n;
};

void thps_registration_list_free(struct thps_registration_list *l);

/* The registration covering cgroup: the one of the cgroup itself or of its nearest registered
 * ancestor (a container's whole subtree is the container: an init that moves its work into
 * a child cgroup takes its registration along). NULL if none. O(l->n) string compares. */
const struct thps_registration *thps_registration_covering(const struct thps_registration_list *l,
							   const char *cgroup);

/* Serializes r as one JSON object text (malloc'd, newline-terminated).
 * Returns 0, -EINVAL if r does not validate, -ENOMEM. */
int thps_registration_to_json(const struct thps_registration *r, char **ret);
/* Parses and validates a registration text (unknown keys, wrong types, invalid id, cgroup,
 * policy name or mode are errors). Returns 0, -EBADMSG, -EFBIG. */
int thps_registration_from_json(const char *buf, size_t len, struct thps_registration *ret);

/* Writes <dir>/<id>.json atomically: a temp file in dir, fsync, rename, fsync of dir.
 * Returns 0 or -errno (-EINVAL for an invalid registration). */
int thps_registration_write(const char *dir, const struct thps_registration *r);
/* Removes <dir>/<id>.json. Returns 0 (also if it was absent), -EINVAL for a bad id, -errno. */
int thps_registration_remove(const char *dir, const char *id);

/* Reads one registration file <dir>/<id>.json: refuses symlinks, non-regular files, files
 * over THPS_REGISTRATION_MAX, files owned by or writable by anyone but root (or our euid), and
 * files whose "id" differs from their name. Returns 0, -ENOENT, -EPERM, -EFBIG, -EBADMSG,
 * -EINVAL (bad id), or -errno. */
int thps_registration_load(const char *dir, const char *id, struct thps_registration *ret);

/* Called for each file load_all skips, so the daemon can log it. */
typedef void (*thps_registration_error_fn)(const char *dir, const char *name, int err,
					   void *userdata);

/* Loads every valid <dir>/<id>.json (dot files, i.e. the hook's temp files, are skipped).
 * A missing dir is an empty list. Returns the number loaded, or -errno if dir cannot be read. */
int thps_registrations_load_all(const char *dir, thps_registration_error_fn on_error,
				void *userdata, struct thps_registration_list *ret);

/* Creates dir (and its parent) with mode 0755 if missing. Returns 0 or -errno. */
int thps_registrations_dir_ensure(const char *dir);

/* An inotify fd (non-blocking, close-on-exec) watching dir for registrations being written,
 * renamed in or removed. Hand it to sd_event_add_io(EPOLLIN). Returns the fd or -errno. */
int thps_registrations_watch(const char *dir);

struct thps_registration_events {
	char (*added)[THPS_OCI_ID_MAX + 1]; /* ids written or replaced: load them */
	size_t n_added;
	char (*removed)[THPS_OCI_ID_MAX + 1]; /* ids removed: forget them */
	size_t n_removed;
	bool rescan; /* queue overflow or the dir went away: call load_all again (and re-watch) */
};

void thps_registration_events_free(struct thps_registration_events *ev);
/* Drains the inotify fd. An id seen both added and removed ends in the list of its last event.
 * Returns the number of ids reported (0 on EAGAIN), or -errno. */
int thps_registrations_handle_events(int fd, struct thps_registration_events *ret);

/* 1 if r's cgroup exists under the cgroup2 root and (when r->pid is set) its pid is alive
 * with the same start time; 0 if gone; -errno if it cannot tell. */
int thps_registration_alive(const struct thps_ctx *ctx, const struct thps_registration *r);

/* Removes registrations whose cgroup or pid is gone. Returns the number removed or -errno. */
int thps_registrations_gc(const char *dir, const struct thps_ctx *ctx);

/* Fills the pid fields of r from <proc_root>/<pid>/stat. Returns 0 or -errno. */
int thps_registration_set_pid(const struct thps_ctx *ctx, struct thps_registration *r, pid_t pid);
