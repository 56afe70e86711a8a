/* OCI runtime integration: the pure parts of the hook (state JSON, names, cgroupsPath forms,
 * /proc/PID/cgroup). No I/O here, so the fuzz target and the unit tests call them directly. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define THPS_OCI_STATE_MAX (64 * 1024)  /* a state JSON larger than this is refused */
#define THPS_OCI_CONFIG_MAX (1024 * 1024) /* a bundle's config.json larger than this is refused */
#define THPS_OCI_JSON_DEPTH 32            /* json-c tokener depth limit */
#define THPS_OCI_ID_MAX 128
#define THPS_OCI_NAME_MAX 64
#define THPS_CGROUP_PATH_MAX 1024

#define THPS_ANN_POLICY "io.thpshrink.policy"
#define THPS_ANN_MODE "io.thpshrink.mode"

enum thps_oci_stage {
	THPS_OCI_STAGE_NONE,
	THPS_OCI_STAGE_CREATE_RUNTIME,
	THPS_OCI_STAGE_CREATE_CONTAINER,
	THPS_OCI_STAGE_START_CONTAINER,
	THPS_OCI_STAGE_POSTSTART,
	THPS_OCI_STAGE_POSTSTOP,
};

struct thps_oci_state {
	char oci_version[32];
	char id[THPS_OCI_ID_MAX + 1];
	char status[32];  /* creating | created | running | stopped */
	pid_t pid;        /* 0 if absent (e.g. poststop) */
	char *bundle;     /* malloc'd, NULL if absent */
	char *policy;     /* annotation io.thpshrink.policy as given (maybe invalid), or NULL */
	char *mode;       /* annotation io.thpshrink.mode as given (maybe invalid), or NULL */
};

void thps_oci_state_free(struct thps_oci_state *s);

/* Parses a JSON text of at most max_len bytes into a json_object with the depth limit and
 * UTF-8 validation. Returns 0, -EFBIG if too long, -EBADMSG if malformed (or non-UTF-8 or
 * too deep). On success *ret is a json_object* the caller puts. */
int thps_json_parse_bounded(const char *buf, size_t len, size_t max_len, void **ret);

/* Parses the OCI state (runtime-spec "state") from buf. Requires ociVersion and a valid id;
 * status, pid, bundle and annotations are optional. Returns 0, -EBADMSG (malformed JSON,
 * wrong types), -EFBIG (too large), -EINVAL (missing or invalid id). */
int thps_oci_state_parse(const char *buf, size_t len, struct thps_oci_state *ret);

/* 1 if s is an OCI container id we accept: [A-Za-z0-9_.-]{1,128}, not "." or "..". */
bool thps_oci_id_valid(const char *s);
/* 1 if s is a policy NAME: [A-Za-z0-9_.-]{1,64}, not "." or "..", never a path. */
bool thps_policy_name_valid(const char *s);
/* Returns "observe"/"enforce" for a valid mode, NULL otherwise. */
const char *thps_mode_normalize(const char *s);

/* The stage named on the command line (createRuntime, poststart, …), or NONE. */
enum thps_oci_stage thps_oci_stage_from_string(const char *s);
/* The stage implied by a state's status when argv names none. */
enum thps_oci_stage thps_oci_stage_from_status(const char *status);
const char *thps_oci_stage_to_string(enum thps_oci_stage st);

/* 1 if p is a cgroup path we store: starts with '/', no "." or ".." component, no "//",
 * printable ASCII without spaces-like controls, shorter than THPS_CGROUP_PATH_MAX. */
bool thps_cgroup_path_valid(const char *p);

/* Expands a systemd slice name to its hierarchy: "a-b-c.slice" → "a.slice/a-b.slice/a-b-c.slice",
 * "-.slice" → "" (the root). Returns 0, -EINVAL for a malformed name, -ENAMETOOLONG. */
int thps_systemd_slice_expand(const char *slice, char *buf, size_t size);

/* Resolves linux.cgroupsPath to a path below the cgroup2 root:
 *  "/a/b"               → "/a/b"
 *  "a/b" (relative)     → "<base>/a/b" (base: the runtime's own cgroup, "/" if unknown)
 *  "slice:prefix:name"  → "/<slice expanded>/<prefix>-<name>.scope" (runc/crun systemd driver;
 *                         empty slice → system.slice, empty prefix → "<name>.scope",
 *                         a name ending in ".slice" is itself the unit)
 * Returns 0, -ENODATA for an empty cgroupsPath, -EINVAL when malformed, -ENAMETOOLONG. */
int thps_oci_cgroups_path_resolve(const char *cgroups_path, const char *base, char *buf, size_t size);

/* Finds linux.cgroupsPath in a bundle's config.json text. Returns 0 with a malloc'd string,
 * -ENODATA when absent, -EBADMSG/-EFBIG for a bad document. */
int thps_oci_config_cgroups_path(const char *buf, size_t len, char **ret);

/* Finds the cgroup v2 line "0::/path" of a /proc/PID/cgroup text. Returns 0, -ENODATA when
 * there is no v2 line, -EINVAL when its path is not valid, -ENAMETOOLONG. */
int thps_proc_cgroup_v2_path(const char *text, char *buf, size_t size);

/* Field 22 (starttime, clock ticks since boot) of a /proc/PID/stat text.
 * Returns 0 or -EINVAL. */
int thps_proc_stat_starttime(const char *text, uint64_t *ret);
