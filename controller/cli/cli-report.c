/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink report: one scan, printed per cgroup as text or JSON. The command a newcomer runs
 * first, so every way it can fail says what is missing and what to do. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroups.h"
#include "cli.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "plugin.h"
#include "probe.h"
#include "report-json.h"
#include "report-text.h"
#include "promote.h"
#include "registrations.h"
#include "report.h"
#include "scan.h"
#include "folios.h"
#include "thp.h"

#define MAX_SOURCES 16

struct report_args {
	bool json;
	const char *cgroup;
	pid_t pid;
	uint64_t max_thps_per_sec;
	unsigned lowutil_bucket;
	const char *source;
	const char *registrations_dir;
};

static void usage(FILE *f)
{
	fprintf(
	    f, "Usage: thpshrink report [OPTIONS]\n\n"
	       "Scans the anonymous transparent huge pages of every process (root only) and "
	       "prints, per\n"
	       "memory cgroup, how many 4 KiB subpages of each THP hold data (the RFC's "
	       "histogram), the\n"
	       "zero subpages a split would give back, and partially mapped THPs.\n\n"
	       "Options:\n"
	       "  --json                  print JSON (schemas/report.schema.json) instead of text\n"
	       "  --cgroup PATH           only this memory cgroup, PATH relative to its mount "
	       "(\"/a/b\")\n"
	       "  --pid PID               only this process\n"
	       "  --max-thps-per-sec N    read at most N THPs per second (0 = unlimited, the "
	       "default)\n"
	       "  --lowutil-bucket B      THPs in buckets 0..B count as low-utilization (0-9, "
	       "default 0)\n"
	       "  --source NAME           use only this source (");
	for (size_t i = 0; thps_sources[i]; i++)
		fprintf(f, "%s%s", i ? ", " : "", thps_sources[i]->name);
	fprintf(f, ")\n"
		   "  --registrations-dir DIR the containers' registrations, whose Kubernetes "
		   "names --json shows\n"
		   "                          (default " THPS_REGISTRATIONS_DIR ")\n"
		   "  -h, --help              show this help\n\n"
		   "Exit status: 0 report printed, 1 the scan could not run (the message says "
		   "why), 2 usage.\n");
}

/* The registrations whose names --json shows per cgroup: read-only, and a report without
 * them is still a report (logged once). Returns list, or NULL when none could be read. */
static const struct thps_registration_list *load_registrations(const char *dir,
							       struct thps_registration_list *list)
{
	int r = thps_registrations_load_all(dir ? dir : THPS_REGISTRATIONS_DIR, NULL, NULL, list);

	if (r < 0) {
		log_warning_errno(r,
				  "Failed to read the registrations in '%s', no Kubernetes names "
				  "in the report: %m",
				  dir ? dir : THPS_REGISTRATIONS_DIR);
		return NULL;
	}
	return list;
}

static int parse_args(int argc, char **argv, struct report_args *a)
{
	enum { OPT_CGROUP = 0x100, OPT_PID, OPT_RATE, OPT_BUCKET, OPT_SOURCE, OPT_JSON, OPT_REGS };
	static const struct option options[] = {
	    {"json", no_argument, NULL, OPT_JSON},
	    {"cgroup", required_argument, NULL, OPT_CGROUP},
	    {"pid", required_argument, NULL, OPT_PID},
	    {"max-thps-per-sec", required_argument, NULL, OPT_RATE},
	    {"lowutil-bucket", required_argument, NULL, OPT_BUCKET},
	    {"source", required_argument, NULL, OPT_SOURCE},
	    {"registrations-dir", required_argument, NULL, OPT_REGS},
	    {"help", no_argument, NULL, 'h'},
	    {}};
	uint64_t v;
	int c;

	optind = 0; /* the dispatcher may have run getopt before; 0 also resets GNU state */
	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		switch (c) {
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_CGROUP:
			if (optarg[0] != '/' || strlen(optarg) >= PATH_MAX) {
				log_error(
				    "--cgroup: expected a cgroup path starting with '/', relative "
				    "to the "
				    "memory cgroup mount (e.g. \"/system.slice\"), got \"%s\"",
				    optarg);
				return -EINVAL;
			}
			a->cgroup = optarg;
			break;
		case OPT_PID:
			if (parse_u64(optarg, &v) < 0 || v == 0 || v > INT_MAX) {
				log_error("--pid: expected a process id (1-%d), got \"%s\"",
					  INT_MAX, optarg);
				return -EINVAL;
			}
			a->pid = (pid_t)v;
			break;
		case OPT_RATE:
			if (parse_u64(optarg, &v) < 0) {
				log_error("--max-thps-per-sec: expected a whole number of THPs per "
					  "second "
					  "(0 = unlimited), got \"%s\"",
					  optarg);
				return -EINVAL;
			}
			a->max_thps_per_sec = v;
			break;
		case OPT_BUCKET:
			if (parse_u64(optarg, &v) < 0 || v >= THPS_BUCKETS) {
				log_error(
				    "--lowutil-bucket: expected a bucket number 0-%d, got \"%s\"",
				    THPS_BUCKETS - 1, optarg);
				return -EINVAL;
			}
			a->lowutil_bucket = (unsigned)v;
			break;
		case OPT_SOURCE:
			if (!thps_source_find(optarg)) {
				log_error("--source: unknown source \"%s\"; 'thpshrink report "
					  "--help' lists them",
					  optarg);
				return -EINVAL;
			}
			a->source = optarg;
			break;
		case OPT_REGS:
			a->registrations_dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			log_error("'thpshrink report --help' lists the options");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		log_error("unexpected argument \"%s\"; 'thpshrink report --help' lists the options",
			  argv[optind]);
		return -EINVAL;
	}
	return 1;
}

/* The scanner reads these three; say which one is missing and what to do about it. */
static int check_scanner_files(const struct thps_ctx *ctx)
{
	static const struct {
		const char *rel;
		const char *missing;
	} files[] = {
	    {"self/pagemap",
	     "the kernel lacks CONFIG_PROC_PAGE_MONITOR; use a kernel built with it"},
	    {"kpageflags", "the kernel lacks CONFIG_PROC_PAGE_MONITOR; use a kernel built with it"},
	    {"kpagecgroup",
	     "the kernel lacks CONFIG_MEMCG; without it pages cannot be attributed to cgroups"},
	};

	char self[PATH_MAX];

	/* Without procfs every file below is "missing", and the kernel is not to blame. */
	if (thps_path(self, sizeof(self), ctx->proc_root, "self/stat") < 0 ||
	    access(self, F_OK) < 0)
		return log_error_errno(-ENOENT,
				       "'%s' is not a mounted procfs ('%s' is missing): mount "
				       "/proc (in a container: share the host's /proc read-only)",
				       ctx->proc_root, self);
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		_cleanup_close_ int fd = -1;
		char path[PATH_MAX];
		int r;

		r = thps_path(path, sizeof(path), ctx->proc_root, "%s", files[i].rel);
		if (r < 0)
			return log_error_errno(r, "Path under '%s' too long: %m", ctx->proc_root);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			continue;
		r = negative_errno();
		if (r == -ENOENT)
			return log_error_errno(r, "Cannot open '%s': %m: %s", path,
					       files[i].missing);
		if (r == -EACCES || r == -EPERM)
			return log_error_errno(
			    r,
			    "Cannot open '%s': %m: it needs root with CAP_SYS_ADMIN "
			    "(in a container: add it and mount the host's /proc, "
			    "as deploy/kubernetes/daemonset.yaml does)",
			    path);
		return log_error_errno(r, "Cannot open '%s': %m", path);
	}
	return 0;
}

static int check_pid(const struct thps_ctx *ctx, pid_t pid)
{
	char path[PATH_MAX];
	int r;

	r = thps_path(path, sizeof(path), ctx->proc_root, "%d", (int)pid);
	if (r < 0)
		return r;
	if (access(path, F_OK) < 0)
		return log_error_errno(negative_errno(), "--pid: no process %d ('%s'): %m",
				       (int)pid, path);
	return 0;
}

static const struct thps_source_status *status_of(const struct thps_source_status *st, size_t n,
						  const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(st[i].name, name))
			return &st[i];
	return NULL;
}

/* Runs the chosen (or every usable) source. Returns 0, or -errno after logging. */
struct dense_fill {
	const struct thps_ctx *ctx;
	struct thps_scan *scan;
};

static void dense_add(void *userdata, const char *cgroup, uint64_t bytes)
{
	struct dense_fill *df = userdata;
	struct thps_cgroup_stats *c = NULL;
	char dir[PATH_MAX];
	struct stat st;

	for (size_t i = 0; i < df->scan->n_cgroups && !c; i++)
		if (df->scan->cgroups[i].path && !strcmp(df->scan->cgroups[i].path, cgroup))
			c = &df->scan->cgroups[i];
	if (!c && thps_path(dir, sizeof(dir), df->ctx->cgroup_root, "%s", cgroup + 1) == 0 &&
	    stat(dir, &st) == 0)
		c = thps_scan_cgroup(df->scan, (uint64_t)st.st_ino, cgroup);
	if (!c)
		return;
	c->have_dense = true;
	c->dense_small_bytes += bytes;
	df->scan->total.dense_small_bytes += bytes;
}

/* The promotion opportunity next to the waste: each cgroup's dense memory still in small
 * pages (a PAGEMAP_SCAN walk per process; nothing changes). Failures only leave it out. */
static void add_dense(const struct thps_ctx *ctx, const struct report_args *a,
		      struct thps_scan *scan)
{
	struct thps_ctx cg_ctx = *ctx;
	struct dense_fill df = {&cg_ctx, scan};
	int r;

	/* a cgroup with dense memory and no THP is not in the scan: found by its directory */
	(void)thps_cgroups_find_mount(&cg_ctx);
	for (size_t i = 0; i < scan->n_cgroups; i++)
		scan->cgroups[i].have_dense = true;
	scan->total.have_dense = true;
	r = thps_promote_dense(ctx, &scan->geom, a->cgroup, a->pid, dense_add, &df);
	if (r < 0)
		log_warning_errno(r, "Dense memory not looked at, ignoring: %m");
}

static int collect(const struct thps_ctx *ctx, const struct report_args *a,
		   const struct thps_scan_opts *so, const struct thps_source_status *st,
		   size_t n_st, struct thps_scan *scan)
{
	size_t ran = 0;

	for (size_t i = 0; thps_sources[i]; i++) {
		const struct thps_source_ops *src = thps_sources[i];
		const struct thps_source_status *s = status_of(st, n_st, src->name);
		bool required = a->source || !strcmp(src->name, "scanner");
		int r;

		if (a->source && strcmp(a->source, src->name))
			continue;
		if (!s || !s->usable) {
			if (required)
				return log_error_errno(-EOPNOTSUPP,
						       "Source '%s' is not usable here: %s",
						       src->name, s ? s->reason : "not probed");
			continue;
		}
		r = src->collect(ctx, so, scan);
		if (r < 0) {
			if (r == -ENOENT && so->cgroup)
				return log_error_errno(r, "--cgroup: no memory cgroup \"%s\": %m",
						       so->cgroup);
			if (r == -ESRCH && so->pid)
				return log_error_errno(r, "--pid: process %d is gone: %m",
						       (int)so->pid);
			if (required)
				return log_error_errno(r, "Source '%s' failed: %m", src->name);
			log_warning_errno(r, "Source '%s' failed, leaving its figures out: %m",
					  src->name);
			continue;
		}
		ran++;
	}
	if (ran == 0)
		return log_error_errno(-EOPNOTSUPP, "No usable source ran; the sources line of "
						    "'thpshrink report' says why each is unusable");
	return 0;
}

int thps_cli_report(int argc, char **argv)
{
	struct report_args a = {};
	struct thps_source_status st[MAX_SOURCES];
	struct thps_report_opts ro = {};
	struct thps_scan_opts so = {};
	struct thps_geometry geom;
	struct thps_scan scan;
	struct thps_registration_list regs = {0};
	struct thps_ctx ctx;
	char mode[32], mthp[512];
	size_t n_st;
	int r;

	r = parse_args(argc, argv, &a);
	if (r <= 0)
		return r < 0 ? 2 : 0;

	if (geteuid() != 0) {
		log_error("thpshrink report must run as root: it reads /proc/PID/pagemap, "
			  "/proc/kpageflags and /proc/kpagecgroup, which only root may read. "
			  "Run it with sudo.");
		return 1;
	}
	thps_ctx_init(&ctx);
	r = thps_geometry_load(&ctx, &geom);
	if (r == -ENOENT) {
		log_error_errno(
		    r,
		    "No '%s/kernel/mm/transparent_hugepage/hpage_pmd_size': %m: this kernel "
		    "has no transparent huge pages, so there is nothing to report",
		    ctx.sys_root);
		return 1;
	}
	if (r < 0) {
		log_error_errno(
		    r, "Failed to read the THP size under '%s/kernel/mm/transparent_hugepage': %m",
		    ctx.sys_root);
		return 1;
	}
	if (!a.source || !strcmp(a.source, "scanner"))
		if (check_scanner_files(&ctx) < 0)
			return 1;
	if (a.pid && check_pid(&ctx, a.pid) < 0)
		return 1;

	n_st = thps_report_probe_sources(&ctx, thps_sources, st, ELEMENTSOF(st));
	if (thps_read_bracketed(ctx.sys_root, "kernel/mm/transparent_hugepage/enabled", mode,
				sizeof(mode)) >= 0)
		ro.thp_mode = mode;
	/* named only where some size below the PMD's is enabled: with every one "never" the
	 * THP mode alone says what the kernel allocates */
	if (thps_mthp_modes(&ctx, &geom, mthp, sizeof(mthp)) > 0)
		ro.mthp_modes = mthp;
	ro.lowutil_max_bucket = a.lowutil_bucket;
	ro.pid = a.pid;
	ro.cgroup = a.cgroup;
	ro.sources = st;
	ro.n_sources = n_st;
	if (a.json)
		ro.regs = load_registrations(a.registrations_dir, &regs);

	so.pid = a.pid;
	so.cgroup = a.cgroup;
	so.max_thps_per_sec = a.max_thps_per_sec;
	so.lowutil_max_bucket = a.lowutil_bucket;

	thps_scan_init(&scan, &geom);
	r = collect(&ctx, &a, &so, st, n_st, &scan);
	if (r >= 0) {
		thps_scan_finish(&scan, a.lowutil_bucket);
		if (!a.source || !strcmp(a.source, "scanner"))
			add_dense(&ctx, &a, &scan);
		thps_scan_sort(&scan);
		r = a.json ? thps_report_json(stdout, &scan, &ro)
			   : thps_report_text(stdout, &scan, &ro);
		if (r >= 0 && fflush(stdout) != 0)
			r = negative_errno();
		if (r < 0)
			log_error_errno(r, "Failed to write the report: %m");
	}
	thps_scan_free(&scan);
	thps_registration_list_free(&regs);
	return r < 0 ? 1 : 0;
}
