/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink reclaim: gives one cgroup's wasted THP memory back, once, and shows what it did.
 * scan (the scanner, filtered to the cgroup) -> act (thps_give_back(), the daemon's act path:
 * split, reclaim, or observe for a dry run) -> rescan, then prints the histogram before and after
 * and what memory.current says was given back. Global knobs (khugepaged/max_ptes_none) change only
 * when asked, loudly. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuator.h"
#include "cgroups.h"
#include "cli.h"
#include "fileio.h"
#include "log.h"
#include "plugin.h"
#include "scan.h"
#include "thp.h"
#include "units.h"
#include "valid.h"

struct reclaim_args {
	const char *cgroup;
	pid_t pid; /* --pid: one process, measured by its RssAnon (any host, cgroup v1 too) */
	const char *method;
	bool dry_run;
	bool json;
	uint64_t max_bytes;
	unsigned lowutil_bucket;
	long set_mpn; /* -1 = leave it */
	bool restore_mpn;
	unsigned recollapse_wait;
	bool cold_whole; /* --cold-after-split */
	/* set before printing: khugepaged/max_ptes_none now (-1 unknown) and the value that keeps
	 * split THPs of buckets 0..lowutil_bucket split */
	long mpn_now;
	unsigned mpn_advice;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: thpshrink reclaim --cgroup PATH | --pid PID [OPTIONS]\n\n"
	    "Scans the cgroup's THPs, gives the waste back once, rescans and shows the "
	    "difference.\n\n"
	    "  --cgroup PATH             the cgroup (relative to the cgroup v2 mount, or "
	    "absolute)\n"
	    "  --pid PID                 one process instead (split only; works on cgroup v1\n"
	    "                            hosts too, measured by the process's RssAnon)\n"
	    "  --method split|reclaim|split_or_reclaim\n"
	    "                            split (default): split exactly the low-utilization and\n"
	    "                            partially mapped folios through process_madvise\n"
	    "                            (debugfs split_huge_pages as the fallback); never\n"
	    "                            memory.reclaim. reclaim: write memory.reclaim (the\n"
	    "                            kernel's THP shrinker splits; ALSO evicts the cgroup's\n"
	    "                            page cache). split_or_reclaim: split, and memory.reclaim\n"
	    "                            where no exact split reaches (as the policy action)\n"
	    "  --dry-run                 show what would be done; change nothing\n"
	    "  --max-bytes SIZE          ask for at most SIZE (digits, optional K/M/G/T)\n"
	    "  --lowutil-bucket B        THPs in buckets 0..B are low-utilization (default 0)\n"
	    "  --recollapse-wait SECS    rescan again after SECS to see if khugepaged "
	    "re-collapsed\n"
	    "  --cold-after-split        after a split, MADV_COLD the whole range: khugepaged\n"
	    "                            skips ranges with no recently used page\n"
	    "  --set-max-ptes-none N     set khugepaged/max_ptes_none to N first (GLOBAL: all\n"
	    "                            processes; the old value is saved for the restore)\n"
	    "  --restore-max-ptes-none   put the saved max_ptes_none back and exit\n"
	    "  --json                    JSON output\n");
}

static const char *state_dir(void)
{
	const char *e = getenv("THPSHRINK_STATE_DIR");

	return e && *e ? e : RUNSTATEDIR "/thpshrink";
}

/* ranges: record the folios a split acts on (partial: the partially mapped ones too). */
static int scan_cgroup(const struct thps_ctx *ctx, const struct thps_geometry *g, const char *cg,
		       const struct reclaim_args *a, bool ranges, bool partial,
		       struct thps_scan *scan)
{
	const struct thps_source_ops *src = thps_source_find("scanner");
	struct thps_scan_opts opts = {
	    .pid = a->pid,
	    .cgroup = a->pid ? NULL : cg,
	    .lowutil_max_bucket = a->lowutil_bucket,
	    .record_ranges = ranges,
	    .record_partial = ranges && partial,
	};
	int r;

	if (!src)
		return -EOPNOTSUPP;
	thps_scan_init(scan, g);
	r = src->collect(ctx, &opts, scan);
	if (r < 0)
		return r;
	thps_scan_finish(scan, a->lowutil_bucket);
	return 0;
}

/* The scan's figures for the cgroup and everything below it, summed. */
static void cgroup_sum(const struct thps_scan *scan, struct thps_cgroup_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < scan->n_cgroups; i++) {
		const struct thps_cgroup_stats *c = &scan->cgroups[i];

		thps_hist_merge(&ret->hist, &c->hist);
		for (unsigned o = 1; o < THPS_MAX_ORDER; o++) {
			thps_hist_merge(&ret->mthp[o].hist, &c->mthp[o].hist);
			ret->mthp[o].partial_folios += c->mthp[o].partial_folios;
			ret->mthp[o].partial_unmapped_bytes += c->mthp[o].partial_unmapped_bytes;
		}
		ret->lowutil_thps += c->lowutil_thps;
		ret->waste_bytes += c->waste_bytes;
		ret->partial_thps += c->partial_thps;
		ret->partial_unmapped_bytes += c->partial_unmapped_bytes;
	}
}

static int64_t delta(uint64_t before, uint64_t after)
{
	if (before == UINT64_MAX || after == UINT64_MAX)
		return 0;
	return (int64_t)(after - before);
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

/* Per folio size (mTHPs and PMD THPs, when any size below the PMD's is present): folios,
 * low-utilization folios and waste before and after; for --method reclaim, what
 * memory.reclaim can do for that size on this kernel. */
static void print_sizes(const struct thps_geometry *g, const struct reclaim_args *a,
			const struct thps_cgroup_stats *b, const struct thps_cgroup_stats *af)
{
	struct thps_size_figures zb[THPS_MAX_ORDER], za[THPS_MAX_ORDER];
	size_t nb = thps_cgroup_sizes(b, g, a->lowutil_bucket, true, zb);
	bool small = false;

	for (size_t i = 0; i < nb; i++)
		small |= zb[i].subpages < g->subpages;
	if (!small)
		return;
	for (size_t i = 0; i < nb; i++) {
		char sz[32];
		size_t na = thps_cgroup_sizes(af, g, a->lowutil_bucket, true, za);
		const struct thps_size_figures *x = NULL;

		for (size_t j = 0; j < na; j++)
			if (za[j].order == zb[i].order)
				x = &za[j];
		thps_format_folio_size(sz, sizeof(sz), zb[i].size_bytes);
		printf("size %s: folios %" PRIu64 " -> %" PRIu64 ", low-utilization %" PRIu64
		       " -> %" PRIu64 ", waste %" PRIu64 " -> %" PRIu64 " bytes\n",
		       sz, zb[i].folios, x ? x->folios : 0, zb[i].lowutil_folios,
		       x ? x->lowutil_folios : 0, zb[i].waste_bytes, x ? x->waste_bytes : 0);
		if (!strcmp(a->method, "reclaim") && zb[i].waste_bytes &&
		    zb[i].subpages < g->subpages)
			printf(
			    "reclaim: %s folios: memory.reclaim does not give their zero subpages "
			    "back (the kernel's underused-THP shrinker splits PMD-size THPs only; "
			    "without swap reclaim leaves anonymous memory where it is): "
			    "--method split does\n",
			    sz);
	}
}

/* What the split found khugepaged rebuilt, out of how many sparse ranges it had. */
struct rebuilt {
	uint64_t sparse, now, late;
};

/* The split's counts, how the memory moved, and what it cost the page cache. */
static void print_effect(const struct thps_act_result *res)
{
	const struct thps_act_snapshot *b = &res->before, *af = &res->after;

	if (res->actuator && !strcmp(res->actuator, "split"))
		printf("split: %" PRIu64 " THPs split, %" PRIu64
		       " skipped (changed since the scan), %" PRIu64
		       " refused by the kernel; %" PRIu64 " of them partially mapped, %" PRIu64
		       " left whole by the kernel (shared or busy); by %s\n",
		       res->ranges_split, res->ranges_skipped, res->ranges_failed,
		       res->partial_split, res->ranges_kernel_skipped,
		       res->mechanism ? res->mechanism : "none");
	printf("asked: %" PRIu64 " bytes%s\n", res->asked_bytes,
	       res->write_status == -EAGAIN ? " (memory.reclaim: EAGAIN)" : "");
	if (b->memory_current == UINT64_MAX || af->memory_current == UINT64_MAX)
		printf("memory.current: not read\n");
	else
		printf("memory.current: %" PRIu64 " -> %" PRIu64 " bytes\n", b->memory_current,
		       af->memory_current);
	if (b->rss_anon != UINT64_MAX && af->rss_anon != UINT64_MAX)
		printf("RssAnon: %" PRIu64 " -> %" PRIu64 " bytes\n", b->rss_anon, af->rss_anon);
	printf("given back: %" PRIu64 " bytes (%s)\n", thps_act_given_back(res),
	       b->memory_current != UINT64_MAX ? "memory.current, page cache not counted"
					       : "the process's RssAnon");
	if (b->file != UINT64_MAX && af->file != UINT64_MAX)
		printf("page cache: %" PRIu64 " -> %" PRIu64 " bytes, %" PRIu64
		       " bytes evicted by this action, %+" PRId64 " refaults\n",
		       b->file, af->file, thps_act_file_lost(res),
		       delta(b->workingset_refault_file, af->workingset_refault_file));
	if (b->anon_thp != UINT64_MAX)
		printf("memory.stat anon_thp: %" PRIu64 " -> %" PRIu64 " bytes\n", b->anon_thp,
		       af->anon_thp);
}

static void print_recollapse(const struct thps_geometry *g, const struct reclaim_args *a,
			     const struct thps_cgroup_stats *af,
			     const struct thps_cgroup_stats *late, const struct rebuilt *rb)
{
	uint64_t scanned = late && late->lowutil_thps > af->lowutil_thps
			       ? late->lowutil_thps - af->lowutil_thps
			       : 0;
	uint64_t n = MAX(MAX(rb->now, rb->late), scanned);

	if (late)
		printf("after %us: low-utilization THPs %" PRIu64 ", waste %" PRIu64 " bytes\n",
		       a->recollapse_wait, late->lowutil_thps, late->waste_bytes);
	if (!n)
		return;
	printf("re-collapse: khugepaged rebuilt %" PRIu64 " of the %" PRIu64
	       " split ranges (%" PRIu64 " by the rescan, %" PRIu64
	       " after the wait); advice: --set-max-ptes-none %u keeps THPs of buckets 0-%u "
	       "split\n",
	       n, rb->sparse, rb->now, rb->late, thps_max_ptes_none_advice(g, a->lowutil_bucket),
	       a->lowutil_bucket);
	printf(
	    "advice: for this workload alone (Linux 6.18+): "
	    "prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) in the program, or "
	    "systemd's MemoryTHP= for its unit, limits THPs to the ranges it "
	    "madvise(MADV_HUGEPAGE)s, so khugepaged stops re-collapsing the rest\n");
}

static void print_text(const struct thps_geometry *g, const char *cg, const struct reclaim_args *a,
		       const char *why, const struct thps_cgroup_stats *b,
		       const struct thps_cgroup_stats *af, const struct thps_act_result *res,
		       const struct thps_cgroup_stats *late, const struct rebuilt *rb)
{
	int64_t given = (int64_t)thps_act_given_back(res);
	const struct thps_vmstat *vb = &res->before.vmstat, *va = &res->after.vmstat;

	printf("%s: method %s%s\n", cg, a->method, a->dry_run ? " (dry run: nothing changes)" : "");
	printf("kernel: %s\n", why);
	printf("%-6s %-10s %12s %12s\n", "bucket", "utilized", "THPs before", "THPs after");
	for (unsigned i = 0; i < THPS_BUCKETS; i++) {
		unsigned lo, hi;
		char range[32];

		thps_bucket_range(g, i, &lo, &hi);
		snprintf(range, sizeof(range), "%u-%u", lo, hi);
		printf("%-6u %-10s %12" PRIu64 " %12" PRIu64 "\n", i, range, b->hist.thps[i],
		       af->hist.thps[i]);
	}
	print_sizes(g, a, b, af);
	printf("low-utilization THPs: %" PRIu64 " -> %" PRIu64 ", waste %" PRIu64 " -> %" PRIu64
	       " bytes\n",
	       b->lowutil_thps, af->lowutil_thps, b->waste_bytes, af->waste_bytes);
	printf("partially mapped THPs: %" PRIu64 " -> %" PRIu64 ", unmapped %" PRIu64 " -> %" PRIu64
	       " bytes\n",
	       b->partial_thps, af->partial_thps, b->partial_unmapped_bytes,
	       af->partial_unmapped_bytes);
	print_effect(res);
	printf("vmstat: thp_split_page %+" PRId64 ", thp_underused_split_page %+" PRId64
	       ", thp_deferred_split_page %+" PRId64,
	       delta(vb->thp_split_page, va->thp_split_page),
	       delta(vb->thp_underused_split_page, va->thp_underused_split_page),
	       delta(vb->thp_deferred_split_page, va->thp_deferred_split_page));
	if (va->thp_split_free != UINT64_MAX)
		printf(", thp_split_free %+" PRId64 ", thp_split_unmap %+" PRId64,
		       delta(vb->thp_split_free, va->thp_split_free),
		       delta(vb->thp_split_unmap, va->thp_split_unmap));
	printf("\n");
	if (res->note[0])
		printf("note: %s\n", res->note);
	if (a->mpn_now > (long)a->mpn_advice && b->lowutil_thps)
		printf(
		    "advice: khugepaged/max_ptes_none is %ld: --set-max-ptes-none %u keeps THPs of "
		    "buckets 0-%u split once split (global: khugepaged then also leaves ranges "
		    "with "
		    "more than %u empty subpages as small pages)\n",
		    a->mpn_now, a->mpn_advice, a->lowutil_bucket, a->mpn_advice);
	print_recollapse(g, a, af, late, rb);
	printf("summary: waste_before=%" PRIu64 " waste_after=%" PRIu64
	       " memory_current_before=%" PRIu64 " memory_current_after=%" PRIu64
	       " given_back=%" PRId64 " acted=%d\n",
	       b->waste_bytes + b->partial_unmapped_bytes,
	       af->waste_bytes + af->partial_unmapped_bytes, res->before.memory_current,
	       res->after.memory_current, given, res->acted);
}

static void print_json(const char *cg, const struct reclaim_args *a, const char *why,
		       const struct thps_cgroup_stats *b, const struct thps_cgroup_stats *af,
		       const struct thps_act_result *res, const struct thps_cgroup_stats *late,
		       const struct rebuilt *rb)
{
	const struct thps_cgroup_stats *s[2] = {b, af};

	printf("{\"cgroup\":");
	json_string(cg);
	printf(",\"method\":");
	json_string(a->method);
	printf(",\"dry_run\":%s,\"kernel\":", a->dry_run ? "true" : "false");
	json_string(why);
	printf(",\"max_ptes_none\":%ld,\"max_ptes_none_advice\":%u", a->mpn_now, a->mpn_advice);
	for (int k = 0; k < 2; k++) {
		printf(",\"%s\":{\"thps\":[", k ? "after" : "before");
		for (unsigned i = 0; i < THPS_BUCKETS; i++)
			printf("%s%" PRIu64, i ? "," : "", s[k]->hist.thps[i]);
		printf("],\"lowutil_thps\":%" PRIu64 ",\"waste_bytes\":%" PRIu64
		       ",\"partial_thps\":%" PRIu64 ",\"partial_unmapped_bytes\":%" PRIu64
		       ",\"memory_current\":%" PRIu64 "}",
		       s[k]->lowutil_thps, s[k]->waste_bytes, s[k]->partial_thps,
		       s[k]->partial_unmapped_bytes,
		       k ? res->after.memory_current : res->before.memory_current);
	}
	printf(",\"acted\":%s,\"asked_bytes\":%" PRIu64 ",\"given_back_bytes\":%" PRIu64
	       ",\"page_cache_evicted_bytes\":%" PRIu64 ",\"mechanism\":\"%s\""
	       ",\"ranges_split\":%" PRIu64 ",\"ranges_skipped\":%" PRIu64
	       ",\"ranges_failed\":%" PRIu64 ",\"ranges_kernel_skipped\":%" PRIu64
	       ",\"partial_split\":%" PRIu64 ",\"recollapsed\":%" PRIu64 ",\"note\":",
	       res->acted ? "true" : "false", res->asked_bytes, thps_act_given_back(res),
	       thps_act_file_lost(res), res->mechanism ? res->mechanism : "none", res->ranges_split,
	       res->ranges_skipped, res->ranges_failed, res->ranges_kernel_skipped,
	       res->partial_split, MAX(rb->now, rb->late));
	json_string(res->note);
	if (late)
		printf(",\"after_wait\":{\"seconds\":%u,\"lowutil_thps\":%" PRIu64
		       ",\"waste_bytes\":%" PRIu64 ",\"recollapsed\":%s}",
		       a->recollapse_wait, late->lowutil_thps, late->waste_bytes,
		       late->lowutil_thps > af->lowutil_thps || rb->late ? "true" : "false");
	printf("}\n");
}

/* What the options say together: a target, one of them, and a method that fits it. Returns -1
 * to go on, or 2 (a usage error, logged). */
static int check_args(struct reclaim_args *a)
{
	if (!a->cgroup && !a->pid && !a->restore_mpn && a->set_mpn < 0) {
		log_error("--cgroup PATH or --pid PID is required");
		usage(stderr);
		return 2;
	}
	if (a->cgroup && a->pid) {
		log_error("--cgroup and --pid exclude each other");
		return 2;
	}
	if (a->pid && a->method && strcmp(a->method, "split")) {
		log_error("--pid: memory.reclaim acts on a whole cgroup; one process takes "
			  "--method split");
		return 2;
	}
	if (!a->method)
		a->method = "split";
	return -1;
}

enum reclaim_option {
	O_METHOD = 256,
	O_DRY,
	O_MAX,
	O_BUCKET,
	O_JSON,
	O_SET,
	O_RESTORE,
	O_WAIT,
	O_PID,
	O_COLD
};

/* The options that take a number or a size. Returns 0, or -EINVAL (logged: a usage error). */
static int parse_value(int c, const char *arg, struct reclaim_args *a)
{
	uint64_t v;

	switch (c) {
	case O_MAX:
		if (thps_parse_size(arg, &a->max_bytes) < 0) {
			log_error("--max-bytes: expected a size like 64M, got '%s'", arg);
			return -EINVAL;
		}
		break;
	case O_BUCKET:
		if (parse_u64(arg, &v) < 0 || v >= THPS_BUCKETS) {
			log_error("--lowutil-bucket: expected 0..%d, got '%s'", THPS_BUCKETS - 1,
				  arg);
			return -EINVAL;
		}
		a->lowutil_bucket = (unsigned)v;
		break;
	case O_SET:
		if (parse_u64(arg, &v) < 0 || v > 4096) {
			log_error("--set-max-ptes-none: expected a number of subpages, got '%s'",
				  arg);
			return -EINVAL;
		}
		a->set_mpn = (long)v;
		break;
	case O_WAIT:
		if (parse_u64(arg, &v) < 0 || v > 3600) {
			log_error("--recollapse-wait: expected seconds (0..3600), got '%s'", arg);
			return -EINVAL;
		}
		a->recollapse_wait = (unsigned)v;
		break;
	case O_PID:
		if (parse_u64(arg, &v) < 0 || v == 0 || v > INT32_MAX) {
			log_error("--pid: expected a process id, got '%s'", arg);
			return -EINVAL;
		}
		a->pid = (pid_t)v;
		break;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct reclaim_args *a)
{
	static const struct option opts[] = {
	    {"cgroup", required_argument, NULL, 'c'},
	    {"method", required_argument, NULL, O_METHOD},
	    {"dry-run", no_argument, NULL, O_DRY},
	    {"max-bytes", required_argument, NULL, O_MAX},
	    {"lowutil-bucket", required_argument, NULL, O_BUCKET},
	    {"json", no_argument, NULL, O_JSON},
	    {"set-max-ptes-none", required_argument, NULL, O_SET},
	    {"restore-max-ptes-none", no_argument, NULL, O_RESTORE},
	    {"recollapse-wait", required_argument, NULL, O_WAIT},
	    {"pid", required_argument, NULL, O_PID},
	    {"cold-after-split", no_argument, NULL, O_COLD},
	    {"help", no_argument, NULL, 'h'},
	    {}};
	int c;

	*a = (struct reclaim_args){.method = NULL, .set_mpn = -1};
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a->cgroup = optarg;
			break;
		case O_MAX:
		case O_BUCKET:
		case O_SET:
		case O_WAIT:
		case O_PID:
			if (parse_value(c, optarg, a) < 0)
				return 2;
			break;
		case O_METHOD:
			if (strcmp(optarg, "reclaim") && strcmp(optarg, "split") &&
			    strcmp(optarg, "split_or_reclaim")) {
				log_error("--method: expected split, reclaim or split_or_reclaim, "
					  "got '%s'",
					  optarg);
				return 2;
			}
			a->method = optarg;
			break;
		case O_DRY:
			a->dry_run = true;
			break;
		case O_JSON:
			a->json = true;
			break;
		case O_RESTORE:
			a->restore_mpn = true;
			break;
		case O_COLD:
			a->cold_whole = true;
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
	return check_args(a);
}

/* One run's state, from the cgroup's resolution to the report. */
struct reclaim_run;
struct reclaim_run {
	struct thps_ctx ctx;
	struct thps_geometry g;
	char cg[PATH_MAX];	   /* "/a/b", relative to the cgroup mount */
	char why[512];		   /* what the probe says the kernel can do */
	char label[64];		   /* "cgroup /a/b" or "process 123", for the output */
	enum thps_split_mech mech; /* how a split splits here */
	struct thps_scan before, after, late;
	struct thps_cgroup_stats sb, sa, sl;
	const struct thps_cgroup_stats *late_sum; /* &sl after a recollapse wait, else NULL */
	struct thps_act_result res;
	/* split ranges khugepaged rebuilt: seen at the rescan, and after --recollapse-wait */
	uint64_t split_sparse, rebuilt_now, rebuilt_late;
	pid_t pid;
};

/* The cgroup acted on, relative to the mount; NULL for one process. */
static const char *a_target_cgroup(const struct reclaim_run *run)
{
	return run->pid ? NULL : run->cg + 1;
}

/* The knob options exclude each other and a dry run: 0 or -EINVAL (logged, usage error). */
static int knob_args_check(const struct reclaim_args *a)
{
	if (a->restore_mpn && (a->set_mpn >= 0 || a->cgroup)) {
		log_error("--restore-max-ptes-none is an action of its own: give it alone");
		return -EINVAL;
	}
	if (!a->restore_mpn && a->set_mpn >= 0 && a->dry_run) {
		log_error("--set-max-ptes-none changes a global knob: not with --dry-run");
		return -EINVAL;
	}
	return 0;
}

/* --restore-max-ptes-none: puts the saved value back. 0 or -errno (logged). */
static int restore_max_ptes_none(const struct thps_ctx *ctx)
{
	unsigned v;
	int r = thps_max_ptes_none_restore(ctx, state_dir(), &v);

	if (r == -ENOENT) {
		log_error("nothing to restore: no saved max_ptes_none in '%s'", state_dir());
		return r;
	}
	if (r < 0)
		return log_error_errno(r, "Failed to restore khugepaged/max_ptes_none: %m");
	log_notice("khugepaged/max_ptes_none restored to %u (global)", v);
	return 0;
}

/* --set-max-ptes-none: global, so said loudly, with where the old value went. 0 or -errno
 * (logged). */
static int set_max_ptes_none(const struct thps_ctx *ctx, const struct reclaim_args *a)
{
	unsigned old;
	int r = thps_max_ptes_none_set(ctx, state_dir(), (unsigned)a->set_mpn, &old);

	if (r < 0)
		return log_error_errno(r, "Failed to set khugepaged/max_ptes_none: %m");
	log_notice("khugepaged/max_ptes_none: %u -> %ld (global, for every process; the original "
		   "is saved in '%s/max_ptes_none.saved'; undo with --restore-max-ptes-none)",
		   old, a->set_mpn, state_dir());
	return 0;
}

/* The cgroup mount and the THP size. 0 or -errno (logged). */
static int load_system(struct reclaim_run *run, const struct reclaim_args *a)
{
	int r = thps_cgroups_find_mount(&run->ctx);

	/* one process needs no cgroup: it is measured by its own RssAnon */
	if (r < 0 && !a->pid)
		return log_error_errno(r, "Failed to find the memory cgroup hierarchy: %m");
	r = thps_geometry_load(&run->ctx, &run->g);
	if (r < 0)
		return log_error_errno(r, "Failed to read the THP size: %m");
	return 0;
}

/* --cgroup to run->cg, which must be a directory below the mount. 0 or -EINVAL (logged, a
 * usage error). */
static int resolve_cgroup(struct reclaim_run *run, const struct reclaim_args *a)
{
	if (a->pid) {
		if (kill(a->pid, 0) < 0 && errno == ESRCH) {
			log_error("--pid: no process %d", (int)a->pid);
			return -EINVAL;
		}
		snprintf(run->label, sizeof(run->label), "process %d", (int)a->pid);
		return 0;
	}
	if (thps_cli_resolve_cgroup(&run->ctx, a->cgroup, run->cg, sizeof(run->cg)) < 0)
		return -EINVAL;
	snprintf(run->label, sizeof(run->label), "cgroup %.50s", run->cg);
	return 0;
}

/* Whether the method splits (split, split_or_reclaim). */
static bool splits(const struct reclaim_args *a)
{
	return strcmp(a->method, "reclaim") != 0;
}

/* What the method can do on this kernel, into run->why (the dry run probes it too). 0 or
 * -errno (logged). */
static int probe(struct reclaim_run *run, const struct reclaim_args *a)
{
	int r = thps_actuator_find(splits(a) ? "split" : "reclaim")
		    ->probe(&run->ctx, run->why, sizeof(run->why));

	if (r < 0)
		return log_error_errno(r, "Failed to probe the %s actuator: %m", a->method);
	if (!strcmp(a->method, "reclaim") && r > 0)
		(void)thps_reclaim_frees_zero_subpages(&run->ctx, &run->g, run->why,
						       sizeof(run->why));
	run->mech = THPS_SPLIT_MECH_NONE;
	if (splits(a))
		run->mech = thps_split_mechanism(&run->ctx, THPS_SPLIT_MECH_AUTO, run->why,
						 sizeof(run->why));
	return 0;
}

/* The scan before acting; split needs its ranges. 0 or -errno (logged). */
static int scan_before(struct reclaim_run *run, const struct reclaim_args *a)
{
	/* both split mechanisms reach partially mapped folios */
	int r = scan_cgroup(&run->ctx, &run->g, run->cg, a, splits(a),
			    run->mech == THPS_SPLIT_MECH_PMADVISE ||
				run->mech == THPS_SPLIT_MECH_DEBUGFS,
			    &run->before);

	if (r < 0)
		return log_error_errno(r, "Failed to scan %s: %m", run->label);
	cgroup_sum(&run->before, &run->sb);
	return 0;
}

/* The actuator did not measure memory.current: measure here, never print a placeholder. */
static void measure_unmeasured(struct reclaim_run *run)
{
	struct thps_act_result *res = &run->res;

	if (res->acted || res->before.memory_current != 0 || res->after.memory_current != 0)
		return;
	if (thps_act_snapshot_of(&run->ctx, a_target_cgroup(run), run->pid, &res->before) == 0)
		res->after = res->before;
	else
		res->before.memory_current = res->after.memory_current = UINT64_MAX;
}

/* Through the daemon's act path: reclaim asks for an amount, split gets the scan's ranges; a
 * dry run only observes. 0 or -errno (logged); acting on nothing is only a warning. */
static int act(struct reclaim_run *run, const struct reclaim_args *a)
{
	bool rec = !strcmp(a->method, "reclaim"), allow = !strcmp(a->method, "split_or_reclaim");
	const struct thps_give_back gb = {
	    .cgroup = a_target_cgroup(run),
	    .pid = a->pid,
	    .geom = &run->g,
	    .method = a->dry_run ? THPS_GIVE_BACK_OBSERVE
		      : rec	 ? THPS_GIVE_BACK_RECLAIM
				 : THPS_GIVE_BACK_SPLIT,
	    .allow_reclaim = allow,
	    .mech = run->mech,
	    .amount =
		rec || allow ? thps_reclaim_amount(&run->sb, a->max_bytes, run->g.page_size) : 0,
	    .max_bytes = a->max_bytes,
	    .lowutil_max_bucket = a->lowutil_bucket,
	    .ranges = run->before.ranges,
	    .n_ranges = run->before.n_ranges,
	    .cold_whole = a->cold_whole,
	};
	int r;

	r = thps_give_back(&run->ctx, &gb, &run->res);
	if (r < 0)
		return log_error_errno(r, "Failed to act (%s) on %s: %m",
				       a->dry_run ? "observe" : a->method, run->label);
	if (!run->res.acted && !a->dry_run)
		log_warning("%s on %s did nothing: %s", a->method, run->label, run->res.note);
	measure_unmeasured(run);
	return 0;
}

/* The sparse folios the split acted on that are one large folio again under another head PFN:
 * khugepaged rebuilt them, whether before the rescan or after. ret_sparse (optional): how many
 * sparse ranges there were. */
static uint64_t count_rebuilt(const struct reclaim_run *run, uint64_t *ret_sparse)
{
	uint64_t n = 0, sparse = 0;

	if (!run->res.acted || !run->res.actuator || strcmp(run->res.actuator, "split"))
		return 0;
	for (size_t i = 0; i < run->before.n_ranges; i++) {
		const struct thps_thp_range *t = &run->before.ranges[i];

		if (t->mapped)
			continue;
		sparse++;
		n += thps_range_rebuilt(&run->ctx, &run->g, t) > 0;
	}
	if (ret_sparse)
		*ret_sparse = sparse;
	return n;
}

/* The scan right after acting. 0 or -errno (logged). */
static int scan_after(struct reclaim_run *run, const struct reclaim_args *a)
{
	int r = scan_cgroup(&run->ctx, &run->g, run->cg, a, false, false, &run->after);

	if (r < 0)
		return log_error_errno(r, "Failed to rescan %s: %m", run->label);
	cgroup_sum(&run->after, &run->sa);
	run->rebuilt_now = count_rebuilt(run, &run->split_sparse);
	return 0;
}

/* --recollapse-wait: after an action, waits and scans again to see what khugepaged rebuilt.
 * 0 or -errno (logged). */
static int recollapse_wait(struct reclaim_run *run, const struct reclaim_args *a)
{
	int r;

	if (!a->recollapse_wait || !run->res.acted)
		return 0;
	sleep(a->recollapse_wait);
	r = scan_cgroup(&run->ctx, &run->g, run->cg, a, false, false, &run->late);
	if (r < 0)
		return log_error_errno(r, "Failed to rescan %s: %m", run->label);
	cgroup_sum(&run->late, &run->sl);
	run->late_sum = &run->sl;
	run->rebuilt_late = count_rebuilt(run, NULL);
	return 0;
}

/* max_ptes_none as it is now, read last for the advice, then the report. */
static void report(struct reclaim_run *run, struct reclaim_args *a)
{
	unsigned mpn;

	a->mpn_now = thps_max_ptes_none_get(&run->ctx, &mpn) < 0 ? -1 : (long)mpn;
	a->mpn_advice = thps_max_ptes_none_advice(&run->g, a->lowutil_bucket);
	const struct rebuilt rb = {run->split_sparse, run->rebuilt_now, run->rebuilt_late};
	if (a->json)
		print_json(a->pid ? run->label : run->cg, a, run->why, &run->sb, &run->sa,
			   &run->res, run->late_sum, &rb);
	else
		print_text(&run->g, run->label, a, run->why, &run->sb, &run->sa, &run->res,
			   run->late_sum, &rb);
}

/* A refusal is a failure the operator must see; "nothing to do" is not. */
static bool refused(const struct reclaim_run *run, const struct reclaim_args *a)
{
	return !run->res.acted && !a->dry_run &&
	       run->sb.waste_bytes + run->sb.partial_unmapped_bytes != 0;
}

int thps_cli_reclaim(int argc, char **argv)
{
	struct reclaim_args a;
	struct reclaim_run run = {};
	int r, ret;

	r = parse_args(argc, argv, &a);
	if (r >= 0)
		return r;
	thps_ctx_init(&run.ctx);
	if (knob_args_check(&a) < 0)
		return 2;
	if (a.restore_mpn)
		return restore_max_ptes_none(&run.ctx) < 0 ? 1 : 0;
	if (a.set_mpn >= 0 && set_max_ptes_none(&run.ctx, &a) < 0)
		return 1;
	if (!a.cgroup && !a.pid)
		return 0; /* only the knob was asked for */
	run.pid = a.pid;
	if (load_system(&run, &a) < 0)
		return 1;
	if (resolve_cgroup(&run, &a) < 0)
		return 2;

	if (probe(&run, &a) < 0 || scan_before(&run, &a) < 0 || act(&run, &a) < 0 ||
	    scan_after(&run, &a) < 0 || recollapse_wait(&run, &a) < 0)
		ret = 1;
	else {
		report(&run, &a);
		ret = refused(&run, &a) ? 1 : 0;
	}
	thps_scan_free(&run.before);
	thps_scan_free(&run.after);
	thps_scan_free(&run.late);
	return ret;
}
