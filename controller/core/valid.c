/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Names thpshrink accepts from outside; see valid.h. */
#include <string.h>

#include "macro.h"
#include "valid.h"

bool thps_name_char_valid(char c, bool glob)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-' || (glob && (c == '*' || c == '?'));
}

bool thps_name_valid(const char *s, size_t max, bool glob)
{
	size_t n = 0;

	if (!s)
		return false;
	for (; s[n]; n++)
		if (n == max || !thps_name_char_valid(s[n], glob))
			return false;
	return n >= 1 && strcmp(s, ".") && strcmp(s, "..");
}

bool thps_oci_id_valid(const char *s)
{
	return thps_name_valid(s, THPS_OCI_ID_MAX, false);
}

bool thps_policy_name_valid(const char *s)
{
	return thps_name_valid(s, THPS_OCI_NAME_MAX, false);
}

const char *thps_mode_normalize(const char *s)
{
	if (s && !strcmp(s, "observe"))
		return "observe";
	if (s && !strcmp(s, "enforce"))
		return "enforce";
	return NULL;
}

static const char *const stage_names[] = {
    [THPS_OCI_STAGE_NONE] = "none",
    [THPS_OCI_STAGE_CREATE_RUNTIME] = "createRuntime",
    [THPS_OCI_STAGE_CREATE_CONTAINER] = "createContainer",
    [THPS_OCI_STAGE_START_CONTAINER] = "startContainer",
    [THPS_OCI_STAGE_POSTSTART] = "poststart",
    [THPS_OCI_STAGE_POSTSTOP] = "poststop",
};

enum thps_oci_stage thps_oci_stage_from_string(const char *s)
{
	if (!s)
		return THPS_OCI_STAGE_NONE;
	for (size_t i = 1; i < ELEMENTSOF(stage_names); i++)
		if (!strcmp(s, stage_names[i]))
			return (enum thps_oci_stage)i;
	/* "prestart" is the deprecated name of createRuntime. */
	if (!strcmp(s, "prestart"))
		return THPS_OCI_STAGE_CREATE_RUNTIME;
	return THPS_OCI_STAGE_NONE;
}

enum thps_oci_stage thps_oci_stage_from_status(const char *status)
{
	if (!status)
		return THPS_OCI_STAGE_NONE;
	if (!strcmp(status, "creating") || !strcmp(status, "created"))
		return THPS_OCI_STAGE_CREATE_RUNTIME;
	if (!strcmp(status, "running"))
		return THPS_OCI_STAGE_POSTSTART;
	if (!strcmp(status, "stopped"))
		return THPS_OCI_STAGE_POSTSTOP;
	return THPS_OCI_STAGE_NONE;
}

const char *thps_oci_stage_to_string(enum thps_oci_stage st)
{
	return (size_t)st < ELEMENTSOF(stage_names) ? stage_names[st] : "none";
}

bool thps_cgroup_path_safe(const char *p)
{
	if (!p || p[0] != '/')
		return false;
	for (const char *s = p; (s = strstr(s, "..")); s += 2)
		if ((s == p || s[-1] == '/') && (s[2] == '/' || s[2] == 0))
			return false;
	return true;
}

bool thps_cgroup_path_valid(const char *p)
{
	size_t n;

	if (!p || p[0] != '/')
		return false;
	n = strlen(p);
	if (n >= THPS_CGROUP_PATH_MAX)
		return false;
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f || *c == '\\')
			return false;
	if (strstr(p, "//") || !thps_cgroup_path_safe(p))
		return false;
	/* No "." component either. */
	for (const char *c = p; (c = strchr(c, '/')); c++) {
		if (c[1] == '.' && (c[2] == '/' || c[2] == '\0'))
			return false;
	}
	return true;
}

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* s is 1..max bytes of alphanumerics and the bytes of extra, alphanumeric at both ends. */
static bool name_shaped(const char *s, size_t max, const char *extra, bool lower)
{
	size_t n;

	if (!s)
		return false;
	n = strlen(s);
	if (n == 0 || n > max || !alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (lower && s[i] >= 'A' && s[i] <= 'Z')
			return false;
		if (!alnum(s[i]) && !strchr(extra, s[i]))
			return false;
	}
	return true;
}

bool thps_k8s_dns_label_valid(const char *s)
{
	return name_shaped(s, THPS_K8S_LABEL_MAX, "-", true);
}

bool thps_k8s_subdomain_valid(const char *s)
{
	return name_shaped(s, THPS_K8S_SUBDOMAIN_MAX, "-.", true) && !strstr(s, "..");
}

bool thps_k8s_label_key_valid(const char *s)
{
	return name_shaped(s, THPS_K8S_LABEL_KEY_MAX, "-_./", false);
}

bool thps_k8s_label_value_valid(const char *s)
{
	return s && (!s[0] || name_shaped(s, THPS_K8S_LABEL_MAX, "-_.", false));
}
