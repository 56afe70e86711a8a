/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The hook's pure logic: everything from stdin, config.json and /proc text is hostile, so each
 * field is typed, bounded and validated here before it can name a file or a cgroup. */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "macro.h"
#include "oci.h"

void thps_oci_state_free(struct thps_oci_state *s)
{
	if (!s)
		return;
	free(s->bundle);
	free(s->policy);
	free(s->mode);
	free(s->k8s_namespace);
	free(s->pod);
	free(s->pod_uid);
	free(s->container);
	s->bundle = s->policy = s->mode = NULL;
	s->k8s_namespace = s->pod = s->pod_uid = s->container = NULL;
}

/* A "\u0000" decodes to a NUL that C would cut the string at: an admission rule that vetted
 * the whole value saw another string than the one we would use. */
static bool has_nul(struct json_object *v)
{
	return strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v);
}

/* Copies a string member of o into dst (size bytes). Absent → 0 and dst untouched;
 * returns -EBADMSG for a wrong type or a NUL inside, -ENAMETOOLONG when it does not fit. */
static int get_string(struct json_object *o, const char *key, char *dst, size_t size)
{
	struct json_object *v;
	const char *s;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string) || has_nul(v))
		return -EBADMSG;
	s = json_object_get_string(v);
	if (strlen(s) >= size)
		return -ENAMETOOLONG;
	strcpy(dst, s);
	return 1;
}

static int get_strdup(struct json_object *o, const char *key, size_t max, char **ret)
{
	struct json_object *v;
	const char *s;
	char *d;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string) || has_nul(v))
		return -EBADMSG;
	s = json_object_get_string(v);
	if (strlen(s) > max)
		return -ENAMETOOLONG;
	d = strdup(s);
	if (!d)
		return -ENOMEM;
	*ret = d;
	return 1;
}

bool thps_oci_value_clean(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/* An annotation value: absent → 0; too long → "(too long)" (no name, so refused later);
 * with a NUL or a control character → NULL and *ret_refused. Returns 0, -EBADMSG, -ENOMEM. */
static int annotation(struct json_object *ann, const char *key, char **ret, bool *ret_refused)
{
	struct json_object *v;
	int r;

	if (!json_object_object_get_ex(ann, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return -EBADMSG;
	if (!thps_oci_value_clean(json_object_get_string(v),
				  (size_t)json_object_get_string_len(v))) {
		*ret_refused = true;
		return 0;
	}
	r = get_strdup(ann, key, 256, ret);
	if (r == -ENAMETOOLONG) {
		*ret = strdup("(too long)");
		return *ret ? 0 : -ENOMEM;
	}
	return r < 0 ? r : 0;
}

int thps_oci_state_parse(const char *buf, size_t len, struct thps_oci_state *ret)
{
	struct thps_oci_state s = {0};
	struct json_object *o = NULL, *v, *ann;
	void *root;
	int r;

	r = thps_json_parse_object(buf, len, THPS_OCI_STATE_MAX, &root);
	if (r < 0)
		return r;
	o = root;
	r = get_string(o, "ociVersion", s.oci_version, sizeof(s.oci_version));
	if (r == 0)
		r = -EBADMSG;
	if (r < 0)
		goto fail;
	r = get_string(o, "id", s.id, sizeof(s.id));
	if (r == -ENAMETOOLONG || r == 0 || (r > 0 && !thps_oci_id_valid(s.id))) {
		r = -EINVAL;
		goto fail;
	}
	if (r < 0)
		goto fail;
	r = get_string(o, "status", s.status, sizeof(s.status));
	if (r < 0)
		goto fail;
	if (json_object_object_get_ex(o, "pid", &v)) {
		int64_t pid;

		if (!json_object_is_type(v, json_type_int)) {
			r = -EBADMSG;
			goto fail;
		}
		pid = json_object_get_int64(v);
		/* pid_max is at most 2^22; 0 means "no process" (allowed in poststop). */
		if (pid < 0 || pid > (1 << 22)) {
			r = -EBADMSG;
			goto fail;
		}
		s.pid = (pid_t)pid;
	}
	r = get_strdup(o, "bundle", 4096, &s.bundle);
	if (r < 0)
		goto fail;
	if (json_object_object_get_ex(o, "annotations", &ann)) {
		if (!json_object_is_type(ann, json_type_object)) {
			r = -EBADMSG;
			goto fail;
		}
		/* Kept as given (bounded): the caller decides and logs whether they are valid. A
		 * value with a NUL or a control character is refused whole (never cut), and the
		 * container still runs: the annotation is dropped, the rest stands. */
		r = annotation(ann, THPS_ANN_POLICY, &s.policy, &s.policy_refused);
		if (r < 0)
			goto fail;
		r = annotation(ann, THPS_ANN_MODE, &s.mode, &s.mode_refused);
		if (r < 0)
			goto fail;
		/* a Kubernetes identity, for the policies' namespace, pod and container_name
		 * selectors (the hook validates each as a Kubernetes name) */
		r = annotation(ann, THPS_ANN_K8S_NAMESPACE, &s.k8s_namespace, &s.k8s_refused);
		if (r >= 0)
			r = annotation(ann, THPS_ANN_K8S_POD, &s.pod, &s.k8s_refused);
		if (r >= 0)
			r = annotation(ann, THPS_ANN_K8S_POD_UID, &s.pod_uid, &s.k8s_refused);
		if (r >= 0)
			r = annotation(ann, THPS_ANN_K8S_CONTAINER, &s.container, &s.k8s_refused);
		if (r < 0)
			goto fail;
	}
	json_object_put(o);
	*ret = s;
	return 0;
fail:
	json_object_put(o);
	thps_oci_state_free(&s);
	return r;
}

static int append(char *buf, size_t size, size_t *pos, const char *s, size_t n)
{
	if (*pos + n >= size)
		return -ENAMETOOLONG;
	memcpy(buf + *pos, s, n);
	*pos += n;
	buf[*pos] = '\0';
	return 0;
}

int thps_systemd_slice_expand(const char *slice, char *buf, size_t size)
{
	const char *suffix = ".slice";
	size_t n, pos = 0, stem;
	int r;

	if (size == 0)
		return -ENAMETOOLONG;
	n = strlen(slice);
	if (n <= strlen(suffix) || strcmp(slice + n - strlen(suffix), suffix))
		return -EINVAL;
	buf[0] = '\0';
	if (!strcmp(slice, "-.slice"))
		return 0;
	stem = n - strlen(suffix);
	if (slice[0] == '-' || slice[stem - 1] == '-' || strstr(slice, "--"))
		return -EINVAL;
	for (size_t i = 0; i < stem; i++)
		if (!thps_name_char_valid(slice[i], false))
			return -EINVAL;
	/* Every '-' ends a parent: a-b-c.slice lives in a.slice/a-b.slice/. */
	for (size_t i = 0; i <= stem; i++) {
		if (i < stem && slice[i] != '-')
			continue;
		if (pos > 0 && (r = append(buf, size, &pos, "/", 1)) < 0)
			return r;
		if ((r = append(buf, size, &pos, slice, i)) < 0 ||
		    (r = append(buf, size, &pos, suffix, strlen(suffix))) < 0)
			return r;
	}
	return 0;
}

static int resolve_systemd(const char *cp, char *buf, size_t size)
{
	const char *c1 = strchr(cp, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	char slice[256], prefix[256], name[256], exp[THPS_CGROUP_PATH_MAX];
	int r, n;

	if (!c1 || !c2 || strchr(c2 + 1, ':'))
		return -EINVAL;
	if ((size_t)(c1 - cp) >= sizeof(slice) || (size_t)(c2 - c1 - 1) >= sizeof(prefix) ||
	    strlen(c2 + 1) >= sizeof(name))
		return -ENAMETOOLONG;
	memcpy(slice, cp, c1 - cp);
	slice[c1 - cp] = '\0';
	memcpy(prefix, c1 + 1, c2 - c1 - 1);
	prefix[c2 - c1 - 1] = '\0';
	strcpy(name, c2 + 1);
	if (!slice[0])
		strcpy(slice, "system.slice");
	if (!thps_name_valid(name, 200, false) ||
	    (prefix[0] && !thps_name_valid(prefix, 200, false)))
		return -EINVAL;
	r = thps_systemd_slice_expand(slice, exp, sizeof(exp));
	if (r < 0)
		return r;
	n = strlen(name);
	if (n > 6 && !strcmp(name + n - 6, ".slice")) {
		/* The container is a slice of its own: its path is its expansion. */
		r = thps_systemd_slice_expand(name, exp, sizeof(exp));
		if (r < 0)
			return r;
		n = snprintf(buf, size, "/%s", exp);
	} else if (prefix[0])
		n = snprintf(buf, size, "%s%s/%s-%s.scope", exp[0] ? "/" : "", exp, prefix, name);
	else
		n = snprintf(buf, size, "%s%s/%s.scope", exp[0] ? "/" : "", exp, name);
	if (n < 0 || (size_t)n >= size || n >= THPS_CGROUP_PATH_MAX)
		return -ENAMETOOLONG;
	return thps_cgroup_path_valid(buf) ? 0 : -EINVAL;
}

int thps_oci_cgroups_path_resolve(const char *cgroups_path, const char *base, char *buf,
				  size_t size)
{
	char tmp[THPS_CGROUP_PATH_MAX];
	int n;

	if (!cgroups_path || !*cgroups_path)
		return -ENODATA;
	if (cgroups_path[0] == '/')
		n = snprintf(tmp, sizeof(tmp), "%s", cgroups_path);
	else if (strchr(cgroups_path, ':'))
		return resolve_systemd(cgroups_path, buf, size);
	else {
		if (!base || !*base || !strcmp(base, "/"))
			base = "";
		n = snprintf(tmp, sizeof(tmp), "%s/%s", base, cgroups_path);
	}
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	/* Runtimes accept a trailing '/'; we store the canonical form. */
	while (n > 1 && tmp[n - 1] == '/')
		tmp[--n] = '\0';
	if (!thps_cgroup_path_valid(tmp))
		return -EINVAL;
	if ((size_t)n >= size)
		return -ENAMETOOLONG;
	memcpy(buf, tmp, n + 1);
	return 0;
}

int thps_oci_config_cgroups_path(const char *buf, size_t len, char **ret)
{
	struct json_object *o, *linux_o, *v;
	void *root;
	char *s;
	int r;

	r = thps_json_parse_object(buf, len, THPS_OCI_CONFIG_MAX, &root);
	if (r < 0)
		return r;
	o = root;
	if (!json_object_object_get_ex(o, "linux", &linux_o) ||
	    !json_object_is_type(linux_o, json_type_object) ||
	    !json_object_object_get_ex(linux_o, "cgroupsPath", &v)) {
		json_object_put(o);
		return -ENODATA;
	}
	if (!json_object_is_type(v, json_type_string) ||
	    strlen(json_object_get_string(v)) >= THPS_CGROUP_PATH_MAX) {
		json_object_put(o);
		return -EBADMSG;
	}
	s = strdup(json_object_get_string(v));
	json_object_put(o);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}
