/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink promote: collapses one cgroup's (or one process's) dense memory into THPs, once,
 * and shows what it did: dense ranges found, collapsed, refused and why, the THPs that are
 * there afterwards, and memory.current / RssAnon before and after (a collapse of dense ranges
 * costs no memory: they should not move). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "actuator.h"
#include "cgroups.h"
#include "cli.h"
#include "fileio.h"
#include "log.h"
#include "pmadvise.h"
#include "promote.h"
#include "thp.h"
#include "units.h"
#include "valid.h"

struct promote_args {
	const char *cgroup;
	pid_t pid;
	bool dry_run;
	bool json;
	bool pagemap_only; /* --finder pagemap */
	uint64_t max_bytes;
	uint64_t fallback_budget;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: thpshrink promote --cgroup PATH | --pid PID [OPTIONS]\n\n"
		"Collapses the dense memory of a cgroup or process into THPs (MADV_COLLAPSE\n"
		"through process_madvise): 2 MiB ranges whose every page is present, not the\n"
		"zero page, not shared, not swapped, not lazily freed (MADV_FREE), each\n"
		"confirmed again right before its collapse; costs no memory. Works with\n"
		"THP=never too. Never asked: a process with PR_SET_THP_DISABLE, a VMA advised\n"
		"MADV_NOHUGEPAGE, and under THP always a VMA that is not THPeligible\n"
		"(PR_SET_THP_DISABLE with EXCEPT_ADVISED); a process that exec()s or whose RSS\n"
		"grows meanwhile is left alone.\n\n"
		"  --cgroup PATH             the cgroup and everything below it (relative to\n"
		"                            the cgroup v2 mount, or absolute)\n"
		"  --pid PID                 one process instead\n"
		"  --dry-run                 find the dense ranges; collapse nothing\n"
		"  --max-bytes SIZE          collapse at most SIZE (digits, optional K/M/G/T)\n"
		"  --finder auto|pagemap     auto: PAGEMAP_SCAN where the kernel has it (6.7+),\n"
		"                            else pagemap; pagemap: always read pagemap\n"
		"  --fallback-budget SIZE    address space the pagemap finder looks at per\n"
		"                            process at most (default 64G)\n"
		"  --json                    JSON output\n");
}

static int parse_args(int argc, char **argv, struct promote_args *a)
{
	enum { O_DRY = 256, O_MAX, O_JSON, O_PID, O_FINDER, O_BUDGET };
	static const struct option opts[] = {{"cgroup", required_argument, NULL, 'c'},
					     {"pid", required_argument, NULL, O_PID},
					     {"dry-run", no_argument, NULL, O_DRY},
					     {"max-bytes", required_argument, NULL, O_MAX},
					     {"finder", required_argument, NULL, O_FINDER},
					     {"fallback-budget", required_argument, NULL, O_BUDGET},
					     {"json", no_argument, NULL, O_JSON},
					     {"help", no_argument, NULL, 'h'},
					     {}};
	uint64_t v;
	int c;

	*a = (struct promote_args){.fallback_budget = UINT64_C(64) << 30};
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a->cgroup = optarg;
			break;
		case O_PID:
			if (parse_u64(optarg, &v) < 0 || v == 0 || v > INT32_MAX) {
				log_error("--pid: expected a process id, got '%s'", optarg);
				return 2;
			}
			a->pid = (pid_t)v;
			break;
		case O_DRY:
			a->dry_run = true;
			break;
		case O_MAX:
			if (thps_parse_size(optarg, &a->max_bytes) < 0) {
				log_error("--max-bytes: expected a size like 256M, got '%s'",
					  optarg);
				return 2;
			}
			break;
		case O_BUDGET:
			if (thps_parse_size(optarg, &a->fallback_budget) < 0 ||
			    !a->fallback_budget) {
				log_error("--fallback-budget: expected a size like 64G, got '%s'",
					  optarg);
				return 2;
			}
			break;
		case O_FINDER:
			if (strcmp(optarg, "auto") && strcmp(optarg, "pagemap")) {
				log_error("--finder: expected auto or pagemap, got '%s'", optarg);
				return 2;
			}
			a->pagemap_only = !strcmp(optarg, "pagemap");
			break;
		case O_JSON:
			a->json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (!a->cgroup == !a->pid) {
		log_error(a->pid ? "--cgroup and --pid exclude each other"
				 : "--cgroup PATH or --pid PID is required");
		return 2;
	}
	return -1;
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* UINT64_MAX (not read) prints as null in JSON, "not read" in text. */
static void json_u64(const char *key, uint64_t v)
{
	if (v == UINT64_MAX)
		printf(",\"%s\":null", key);
	else
		printf(",\"%s\":%" PRIu64, key, v);
}

static void print_json(const char *label, const struct promote_args *a,
		       const struct thps_geometry *g, const struct thps_promote_result *res,
		       const struct thps_act_snapshot *b, const struct thps_act_snapshot *af)
{
	printf("{\"target\":");
	json_string(label);
	printf(",\"dry_run\":%s,\"finder\":", a->dry_run ? "true" : "false");
	json_string(res->method ? res->method : "none");
	printf(",\"processes\":%" PRIu64 ",\"looked_bytes\":%" PRIu64 ",\"pagemap_bytes\":%" PRIu64
	       ",\"find_seconds\":%.6f,\"collapse_seconds\":%.6f,\"budget_hit\":%s",
	       res->processes, res->looked_bytes, res->pagemap_bytes, res->find_ns / 1e9,
	       res->collapse_ns / 1e9, res->budget_hit ? "true" : "false");
	printf(",\"range_bytes\":%" PRIu64 ",\"ranges_found\":%" PRIu64
	       ",\"ranges_collapsed\":%" PRIu64 ",\"ranges_verified_thp\":%" PRIu64
	       ",\"ranges_not_tried\":%" PRIu64 ",\"ranges_retried\":%" PRIu64
	       ",\"ranges_held_back\":%" PRIu64 ",\"ranges_changed\":%" PRIu64
	       ",\"ranges_lazy_free\":%" PRIu64 ",\"lazy_free_by_smaps\":%s"
	       ",\"stopped_no_memory\":%s,\"failures\":{",
	       g->thp_size, res->ranges_found, res->ranges_collapsed, res->ranges_verified,
	       res->ranges_not_tried, res->ranges_retried, res->ranges_held_back,
	       res->ranges_changed, res->ranges_lazy_free,
	       res->lazy_free_by_smaps ? "true" : "false", res->stopped ? "true" : "false");
	for (unsigned i = 0; i < THPS_PROMOTE_FAIL_MAX; i++)
		printf("%s\"%s\":%" PRIu64, i ? "," : "", thps_promote_fail_name(i),
		       res->failures[i]);
	printf("}");
	json_u64("memory_current_before", b->memory_current);
	json_u64("memory_current_after", af->memory_current);
	json_u64("rss_anon_before", b->rss_anon);
	json_u64("rss_anon_after", af->rss_anon);
	printf(",\"note\":");
	json_string(res->note);
	printf("}\n");
}

static void print_text(const char *label, const struct promote_args *a,
		       const struct thps_geometry *g, const struct thps_promote_result *res,
		       const struct thps_act_snapshot *b, const struct thps_act_snapshot *af)
{
	const uint64_t *fl = res->failures;

	printf("%s: promote%s\n", label, a->dry_run ? " (dry run: nothing changes)" : "");
	printf("finder: %s, %" PRIu64 " processes, looked at %" PRIu64 " bytes, read %" PRIu64
	       " bytes of pagemap in %.3f s%s\n",
	       res->method ? res->method : "none", res->processes, res->looked_bytes,
	       res->pagemap_bytes, res->find_ns / 1e9,
	       res->budget_hit ? " (stopped at --fallback-budget)" : "");
	printf("dense ranges: %" PRIu64 " found (%" PRIu64 " bytes)", res->ranges_found,
	       res->ranges_found * g->thp_size);
	if (!a->dry_run)
		printf(", %" PRIu64 " collapsed in %.3f s, %" PRIu64 " THPs afterwards, %" PRIu64
		       " not tried, %" PRIu64 " asked again after EAGAIN",
		       res->ranges_collapsed, res->collapse_ns / 1e9, res->ranges_verified,
		       res->ranges_not_tried, res->ranges_retried);
	printf("\n");
	printf("opted out (not asked): %" PRIu64 " processes with PR_SET_THP_DISABLE, %" PRIu64
	       " ranges in VMAs advised MADV_NOHUGEPAGE or, under THP always, not THPeligible "
	       "(PR_SET_THP_DISABLE with EXCEPT_ADVISED)\n",
	       fl[THPS_PROMOTE_FAIL_DISABLED], fl[THPS_PROMOTE_FAIL_OPTED_OUT]);
	printf("left out: %" PRIu64 " ranges lazily freed (MADV_FREE%s), %" PRIu64
	       " no longer dense at the re-check, %" PRIu64 " held back\n",
	       res->ranges_lazy_free,
	       res->lazy_free_by_smaps ? "; kpageflags unreadable: told by smaps LazyFree, whole "
					 "VMAs left out"
				       : "",
	       res->ranges_changed, res->ranges_held_back);
	printf("refused: %" PRIu64 " ranges by the kernel (EINVAL/EPERM: VM_NOHUGEPAGE or not "
	       "eligible), %" PRIu64 " ranges without a free huge page (ENOMEM%s), %" PRIu64
	       " ranges busy (EAGAIN twice: a page pinned; or EBUSY), %" PRIu64 " other\n",
	       fl[THPS_PROMOTE_FAIL_REFUSED], fl[THPS_PROMOTE_FAIL_NO_MEMORY],
	       res->stopped ? ": the pass stopped" : "", fl[THPS_PROMOTE_FAIL_BUSY],
	       fl[THPS_PROMOTE_FAIL_OTHER]);
	printf("stopped for: %" PRIu64 " processes that exec()d after the finder (a new address "
	       "space), %" PRIu64 " whose RSS grew across a collapse\n",
	       fl[THPS_PROMOTE_FAIL_EXEC], fl[THPS_PROMOTE_FAIL_GREW]);
	if (res->note[0])
		printf("note: %s\n", res->note);
	if (b->memory_current != UINT64_MAX && af->memory_current != UINT64_MAX)
		printf("memory.current: %" PRIu64 " -> %" PRIu64 " bytes\n", b->memory_current,
		       af->memory_current);
	if (b->rss_anon != UINT64_MAX && af->rss_anon != UINT64_MAX)
		printf("RssAnon: %" PRIu64 " -> %" PRIu64 " bytes\n", b->rss_anon, af->rss_anon);
	printf("summary: found=%" PRIu64 " collapsed=%" PRIu64 " verified=%" PRIu64
	       " refused=%" PRIu64 " disabled=%" PRIu64 " no_memory=%" PRIu64
	       " memory_current_before=%" PRId64 " memory_current_after=%" PRId64
	       " rss_anon_before=%" PRId64 " rss_anon_after=%" PRId64 " opted_out=%" PRIu64
	       " lazy_free=%" PRIu64 " changed=%" PRIu64 " busy=%" PRIu64 " exec=%" PRIu64
	       " grew=%" PRIu64 " held_back=%" PRIu64 "\n",
	       res->ranges_found, res->ranges_collapsed, res->ranges_verified,
	       fl[THPS_PROMOTE_FAIL_REFUSED], fl[THPS_PROMOTE_FAIL_DISABLED],
	       fl[THPS_PROMOTE_FAIL_NO_MEMORY], (int64_t)b->memory_current,
	       (int64_t)af->memory_current, (int64_t)b->rss_anon, (int64_t)af->rss_anon,
	       fl[THPS_PROMOTE_FAIL_OPTED_OUT], res->ranges_lazy_free, res->ranges_changed,
	       fl[THPS_PROMOTE_FAIL_BUSY], fl[THPS_PROMOTE_FAIL_EXEC], fl[THPS_PROMOTE_FAIL_GREW],
	       res->ranges_held_back);
}

int thps_cli_promote(int argc, char **argv)
{
	struct promote_args a;
	struct thps_ctx ctx;
	struct thps_geometry g;
	struct thps_promote_result res = {};
	struct thps_act_snapshot before, after;
	struct thps_promote_opts opts;
	char cg[PATH_MAX] = "", label[PATH_MAX + 16], why[256];
	int r;

	r = parse_args(argc, argv, &a);
	if (r >= 0)
		return r;
	thps_ctx_init(&ctx);
	r = thps_cgroups_find_mount(&ctx);
	if (r < 0 && !a.pid)
		return log_error_errno(r, "Failed to find the memory cgroup hierarchy: %m"), 1;
	r = thps_geometry_load(&ctx, &g);
	if (r < 0)
		return log_error_errno(r, "Failed to read the THP size: %m"), 1;
	if (a.pid) {
		if (kill(a.pid, 0) < 0 && errno == ESRCH) {
			log_error("--pid: no process %d", (int)a.pid);
			return 2;
		}
		snprintf(label, sizeof(label), "process %d", (int)a.pid);
	} else {
		if (thps_cli_resolve_cgroup(&ctx, a.cgroup, cg, sizeof(cg)) < 0)
			return 2;
		snprintf(label, sizeof(label), "cgroup %s", cg);
	}
	if (!a.dry_run) {
		r = thps_pmadvise_allowed(&ctx, why, sizeof(why));
		if (r == 0) {
			log_error("promote needs process_madvise on other processes: %s", why);
			return 1;
		}
	}
	opts = (struct thps_promote_opts){.max_bytes = a.max_bytes,
					  .dry_run = a.dry_run,
					  .use_scan = !a.pagemap_only,
					  .fallback_budget = a.fallback_budget,
					  .verify = true};
	if (thps_act_snapshot_of(&ctx, a.pid ? NULL : cg + 1, a.pid, &before) < 0)
		memset(&before, 0xff, sizeof(before));
	r = a.pid ? thps_promote_pid(&ctx, &g, a.pid, &opts, &res)
		  : thps_promote_cgroup(&ctx, &g, cg, &opts, &res);
	if (r < 0)
		return log_error_errno(r, "Failed to promote %s: %m", label), 1;
	if (thps_act_snapshot_of(&ctx, a.pid ? NULL : cg + 1, a.pid, &after) < 0)
		memset(&after, 0xff, sizeof(after));
	if (a.json)
		print_json(label, &a, &g, &res, &before, &after);
	else
		print_text(label, &a, &g, &res, &before, &after);
	return 0;
}
