/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink explain CGROUP: why the daemon did (or did not) act on a cgroup, from the status
 * file it rewrites after every pass. Read-only; works without privileges if the file is. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "fileio.h"
#include "k8s.h"
#include "log.h"
#include "text.h"

#ifndef RUNSTATEDIR
#define RUNSTATEDIR "/run"
#endif

static const char *str(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : "";
}

static int64_t num(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int)
		   ? json_object_get_int64(v)
		   : -1;
}

static double dbl(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && (json_object_is_type(v, json_type_double) ||
							 json_object_is_type(v, json_type_int))
		   ? json_object_get_double(v)
		   : -1;
}

/* The largest status.json read: thousands of cgroups take a few MiB. */
#define STATUS_MAX (64 << 20)

/* A string of status.json as it may reach a terminal: the file is the daemon's, but its
 * strings name cgroups users choose, and a planted file could hold anything. C0 controls,
 * DEL and invalid UTF-8 become \xNN (thps_text_sanitize), and C1 controls (U+0080-U+009F,
 * which some terminals obey like ESC) \u00NN. */
static const char *clean(const char *s, char *buf, size_t size)
{
	char tmp[1024 + 1];
	size_t o = 0;

	if (thps_text_sanitize(s, sizeof(tmp) - 1, tmp, sizeof(tmp)) < 0)
		tmp[0] = '\0';
	for (const unsigned char *p = (const unsigned char *)tmp; *p && o + 7 < size; p++) {
		if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			o += (size_t)snprintf(buf + o, size - o, "\\u%04x", p[1]);
			p++;
		} else
			buf[o++] = (char)*p;
	}
	buf[o] = '\0';
	return buf;
}

/* Reads status.json: opened without blocking (a FIFO planted there must not hang explain),
 * only a regular file, at most STATUS_MAX bytes. Returns 0 or -errno. */
static int read_status(const char *path, char **ret)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	return read_fd_bounded(fd, STATUS_MAX, ret, NULL);
}

/* The last pass as a whole: what it read and what it carried from the memo. */
static void print_scan(json_object *root)
{
	json_object *sc;

	if (!json_object_object_get_ex(root, "scan", &sc) ||
	    !json_object_is_type(sc, json_type_object))
		return;
	printf("last pass read:    %" PRId64 " of %" PRId64 " THPs whole, %" PRId64
	       " refreshed, %" PRId64 " carried from the memo; %" PRId64 " bytes\n",
	       num(sc, "folios_read"), num(sc, "folios"), num(sc, "folios_refreshed"),
	       num(sc, "folios_memo"), num(sc, "read_bytes"));
	if (json_object_object_get_ex(sc, "memo_entries", NULL))
		printf("scan memo:         %" PRId64 " THPs in %" PRId64
		       " bytes; every one re-read within %.0f s "
		       "(counts above the cut are estimates until then)\n",
		       num(sc, "memo_entries"), num(sc, "memo_bytes"),
		       dbl(sc, "full_refresh_seconds"));
}

/* The Kubernetes identity kubelet's layout gives the path (k8s.h): parsed here rather than
 * read from the file, so it says exactly what the daemon's matching sees. */
static void print_k8s(const char *cgroup)
{
	struct thps_k8s_id id;

	if (thps_k8s_parse(cgroup, &id) != 1)
		return;
	printf("kubernetes:        pod %s, QoS class %s, %s%s\n", id.pod_uid,
	       thps_k8s_qos_name(id.qos),
	       id.container_id[0] ? "container "
				  : "no container id (the pod's own cgroup, or not a container)",
	       id.container_id);
}

/* The Kubernetes names of the registration covering the cgroup (status.json "identity"),
 * which the namespace, pod, container_name and labels selectors matched against. */
static void print_identity(json_object *found)
{
	json_object *id, *labels;
	char a[4200], b[4200], c[4200];

	if (!json_object_object_get_ex(found, "identity", &id) ||
	    !json_object_is_type(id, json_type_object))
		return;
	printf("identity:          namespace %s, pod %s, container %s\n",
	       *str(id, "namespace") ? clean(str(id, "namespace"), a, sizeof(a)) : "-",
	       *str(id, "pod") ? clean(str(id, "pod"), b, sizeof(b)) : "-",
	       *str(id, "container_name") ? clean(str(id, "container_name"), c, sizeof(c)) : "-");
	if (!json_object_object_get_ex(id, "labels", &labels) ||
	    !json_object_is_type(labels, json_type_object))
		return;
	printf("pod labels:       ");
	json_object_object_foreach(labels, k, v)
	{
		if (!json_object_is_type(v, json_type_string))
			continue;
		printf(" %s=", clean(k, a, sizeof(a)));
		printf("%s", clean(json_object_get_string(v), b, sizeof(b)));
	}
	printf("\n");
}

/* The promote step's word on the cgroup, when a promote policy matched it. */
static void print_promote(json_object *found)
{
	json_object *p;
	char a[4200];

	if (!json_object_object_get_ex(found, "promote", &p) ||
	    !json_object_is_type(p, json_type_object)) {
		printf("promote:           no policy with \"promote\" matches: not promoted\n");
		return;
	}
	printf("promote:           %s\n", clean(str(p, "reason"), a, sizeof(a)));
	printf("promoted:          %" PRId64 " dense ranges, %" PRId64
	       " bytes since the daemon started; last pass %" PRId64 " found, %" PRId64
	       " collapsed; %" PRId64 " dense bytes still in small pages\n",
	       num(p, "ranges_total"), num(p, "bytes_total"), num(p, "pass_found"),
	       num(p, "pass_collapsed"), num(p, "opportunity_bytes"));
}

/* One cgroup's entry of status.json, every string through clean(). */
static void print_entry(json_object *found, json_object *root)
{
	time_t t = (time_t)num(found, "time");
	char when[64] = "?", a[4200], b[4200];
	struct tm tm;

	if (t > 0 && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("cgroup:            %s\n", clean(str(found, "cgroup"), a, sizeof(a)));
	print_k8s(str(found, "cgroup"));
	print_identity(found);
	printf("last pass:         %s\n", when);
	printf("policy:            %s\n", *str(found, "policy")
					      ? clean(str(found, "policy"), a, sizeof(a))
					      : "(none matches)");
	printf("THPs:              %" PRId64 " (low-utilization at the policy's cut: %" PRId64
	       ")\n",
	       num(found, "thps"), num(found, "lowutil_thps"));
	printf("waste:             %" PRId64 " bytes\n", num(found, "waste_bytes"));
	printf("partially mapped:  %" PRId64 " bytes\n", num(found, "partially_mapped_bytes"));
	printf("decision:          %s (rule: %s)\n", clean(str(found, "action"), a, sizeof(a)),
	       clean(str(found, "rule"), b, sizeof(b)));
	printf("why:               %s\n", clean(str(found, "reason"), a, sizeof(a)));
	if (num(found, "requested_bytes") > 0)
		printf("asked / given back: %" PRId64 " / %" PRId64 " bytes\n",
		       num(found, "requested_bytes"), num(found, "given_back_bytes"));
	if (num(found, "requested_bytes") > 0)
		printf("page cache:        %" PRId64 " bytes evicted during the action%s%s\n",
		       num(found, "page_cache_evicted_bytes"),
		       *str(found, "split_mechanism") ? "; split by " : "",
		       str(found, "split_mechanism"));
	if (num(found, "pinned_ranges") > 0)
		printf("pinned:            %" PRId64 " ranges no longer split: khugepaged rebuilt "
		       "them after every split (see the daemon's log for the advice)\n",
		       num(found, "pinned_ranges"));
	if (num(found, "recollapsed_thps") > 0)
		printf("re-collapsed:      %" PRId64
		       " THPs khugepaged rebuilt after a split (see the daemon's "
		       "log for the max_ptes_none advice)\n",
		       num(found, "recollapsed_thps"));
	print_promote(found);
	if (*str(root, "observe_only_reason"))
		printf("daemon:            observe-only: %s\n",
		       clean(str(root, "observe_only_reason"), a, sizeof(a)));
}

int thps_cli_explain(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"state-dir", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'}, {}};
	const char *state_dir = RUNSTATEDIR "/thpshrink";
	_cleanup_free_ char *text = NULL;
	char path[4096];
	json_object *root, *arr, *found = NULL;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		if (c == 's')
			state_dir = optarg;
		else if (c == 'h') {
			printf("Usage: thpshrink explain [--state-dir DIR] CGROUP\n\n"
			       "Shows the daemon's last decision for CGROUP (a path under the "
			       "cgroup mount,\n"
			       "e.g. /system.slice/web.service) and its inputs.\n");
			return 0;
		} else
			return 2;
	}
	if (optind + 1 != argc) {
		log_error("explain: expected one CGROUP argument; see 'thpshrink explain --help'");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/status.json", state_dir);
	r = read_status(path, &text);
	if (r == -EBADFD) {
		log_error("'%s' is not a regular file: not a thpshrinkd status file", path);
		return 1;
	}
	if (r == -EFBIG) {
		log_error("'%s' is larger than %d MiB: not a thpshrinkd status file", path,
			  STATUS_MAX >> 20);
		return 1;
	}
	if (r < 0) {
		log_error_errno(r, "Failed to read '%s' (is thpshrinkd running?): %m", path);
		return 1;
	}
	root = json_tokener_parse(text);
	if (!root || !json_object_object_get_ex(root, "cgroups", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		log_error("'%s': not a thpshrinkd status file", path);
		json_object_put(root);
		return 1;
	}
	/* status.json names cgroups as sanitized (text.h): compare in that form, so a long or
	 * non-UTF-8 name given on the command line still finds its entry. */
	char want[THPS_TEXT_MAX + 1];
	if (thps_text_sanitize(argv[optind], THPS_TEXT_MAX, want, sizeof(want)) < 0)
		want[0] = '\0';
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		const char *cg = str(e, "cgroup");
		/* Accept the path with or without its leading slash. */
		if (!strcmp(cg, want) ||
		    (want[0] != '/' && cg[0] == '/' && !strcmp(cg + 1, want))) {
			found = e;
			break;
		}
	}
	if (!found) {
		log_error(
		    "cgroup '%s' is not in '%s': the last pass saw no THPs charged to it, or it "
		    "does not exist",
		    want, path);
		json_object_put(root);
		return 1;
	}
	print_entry(found, root);
	print_scan(root);
	json_object_put(root);
	return 0;
}
