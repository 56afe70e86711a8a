/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel capability probe: gather (reads only, unless THPS_PROBE_WRITE_TEST) then a
 * pure decide step that turns facts into findings an operator can act on. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "kparse.h"
#include "macro.h"
#include "pmadvise.h"
#include "probe.h"

#define SMALL_MAX     4096
#define MOUNTINFO_MAX (1024 * 1024)
/* memory.reclaim learnt "swappiness=" in Linux 6.12: Debian's 6.12 takes "0 swappiness=60"
 * and its image holds the "swappiness=%d" token, 6.1's does not (tests/vm 10-probe). */
#define SWAPPINESS_MAJOR 6
#define SWAPPINESS_MINOR 12
/* process_madvise(2) arrived in 5.10 with MADV_COLD and MADV_PAGEOUT for other processes. */
#define PMADVISE_MAJOR 5
#define PMADVISE_MINOR 10

void thps_probe_init(struct thps_probe *p)
{
	memset(p, 0, sizeof(*p));
	p->kver_major = p->kver_minor = -1;
	p->reclaim_swappiness = -1;
	p->shrink_underused = -1;
	p->max_ptes_none = -1;
	p->subpages = 512;
	p->thp_utilization_error = -ENOENT;
	p->pmadvise_allowed = -ENODATA;
	snprintf(p->pmadvise_why, sizeof(p->pmadvise_why), "CAP_SYS_NICE unknown");
	p->split_mech = THPS_SPLIT_MECH_NONE;
}

int thps_parse_kernel_release(const char *release, int *ret_major, int *ret_minor)
{
	unsigned maj, min;
	int n = 0;

	if (sscanf(release, "%u.%u%n", &maj, &min, &n) != 2 || n == 0 || maj > 1000 || min > 1000)
		return -EINVAL;
	*ret_major = (int)maj;
	*ret_minor = (int)min;
	return 0;
}

int thps_parse_bracketed(const char *text, char *ret, size_t size)
{
	const char *a = strchr(text, '['), *b;
	size_t n;

	if (!a)
		return -EINVAL;
	b = strchr(a + 1, ']');
	if (!b || b == a + 1 || strchr(b + 1, '['))
		return -EINVAL;
	n = (size_t)(b - a - 1);
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(ret, a + 1, n);
	ret[n] = 0;
	return 0;
}

int thps_read_bracketed(const char *root, const char *rel, char *ret, size_t size)
{
	_cleanup_free_ char *text = NULL;
	int r;

	r = read_file_at(256, &text, root, "%s", rel);
	if (r < 0)
		return r;
	return thps_parse_bracketed(text, ret, size);
}

/* Is word a whole space-separated token of text? */
static bool has_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *s = text; (s = strstr(s, word)); s += n)
		if ((s == text || s[-1] == ' ' || s[-1] == ',' || s[-1] == '\n') &&
		    (s[n] == 0 || s[n] == ' ' || s[n] == ',' || s[n] == '\n'))
			return true;
	return false;
}

static bool file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Reads a small file under root; -ENOENT and friends are facts for the caller. */
static int read_small(const char *root, const char *rel, char **ret)
{
	return read_file_at(SMALL_MAX, ret, root, "%s", rel);
}

static bool under_has(const char *root, const char *rel)
{
	char path[PATH_MAX];

	return thps_path(path, sizeof(path), root, "%s", rel) == 0 && file_exists(path);
}

static int version_of(const char *root, bool *v2mem)
{
	_cleanup_free_ char *ctl = NULL;

	*v2mem = false;
	if (read_small(root, "cgroup.controllers", &ctl) == 0) {
		*v2mem = has_word(ctl, "memory");
		return 2;
	}
	if (under_has(root, "memory.usage_in_bytes"))
		return 1;
	return 0;
}

/* mountinfo escapes spaces and friends as \ooo. */
static void unescape_octal(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else
			*d++ = *s++;
	}
	*d = 0;
}

int thps_memcg_find(const struct thps_ctx *ctx, char *root, size_t size, bool *ret_v2_memory)
{
	_cleanup_free_ char *info = NULL;
	char best[PATH_MAX] = "";
	int best_rank = 0, best_version = 0, r;
	bool best_v2mem = false;
	char *save = NULL;

	if (ctx->cgroup_root[0]) {
		bool v2mem;
		int v = version_of(ctx->cgroup_root, &v2mem);

		if (strlen(ctx->cgroup_root) >= size)
			return -ENAMETOOLONG;
		strcpy(root, ctx->cgroup_root);
		*ret_v2_memory = v2mem;
		return v;
	}
	r = thps_path(best, sizeof(best), ctx->proc_root, "self/mountinfo");
	if (r < 0)
		return r;
	r = read_file_bounded(best, MOUNTINFO_MAX, &info, NULL);
	best[0] = 0;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	for (char *line = strtok_r(info, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[6] = {0}, *sep, *fstype, *source, *opts, *tok = NULL, *s2 = NULL;
		int rank = 0, nf = 0;
		bool v2mem = false;

		sep = strstr(line, " - ");
		if (!sep)
			continue;
		*sep = 0;
		for (tok = strtok_r(line, " ", &s2); tok && nf < 6; tok = strtok_r(NULL, " ", &s2))
			f[nf++] = tok;
		if (nf < 5)
			continue;
		fstype = strtok_r(sep + 3, " ", &s2);
		source = fstype ? strtok_r(NULL, " ", &s2) : NULL;
		opts = source ? strtok_r(NULL, " ", &s2) : NULL;
		if (!fstype || !opts)
			continue;
		unescape_octal(f[4]);
		if (strcmp(fstype, "cgroup2") == 0) {
			version_of(f[4], &v2mem);
			rank = v2mem ? 3 : 1;
		} else if (strcmp(fstype, "cgroup") == 0 && has_word(opts, "memory"))
			rank = 2;
		if (rank > best_rank && strlen(f[4]) < sizeof(best)) {
			best_rank = rank;
			best_version = rank == 2 ? 1 : 2;
			best_v2mem = v2mem;
			strcpy(best, f[4]);
		}
	}
	if (!best_rank)
		return 0;
	if (strlen(best) >= size)
		return -ENAMETOOLONG;
	strcpy(root, best);
	*ret_v2_memory = best_v2mem;
	return best_version;
}

static void gather_thp(const struct thps_ctx *ctx, struct thps_probe *p)
{
	static const char *const base = "kernel/mm/transparent_hugepage/";
	char rel[128];
	uint64_t v;

	snprintf(rel, sizeof(rel), "%senabled", base);
	(void)thps_read_bracketed(ctx->sys_root, rel, p->thp_enabled, sizeof(p->thp_enabled));
	snprintf(rel, sizeof(rel), "%sdefrag", base);
	(void)thps_read_bracketed(ctx->sys_root, rel, p->thp_defrag, sizeof(p->thp_defrag));
	snprintf(rel, sizeof(rel), "%sshrink_underused", base);
	{
		_cleanup_free_ char *t = NULL;
		if (read_small(ctx->sys_root, rel, &t) == 0 && parse_u64(t, &v) == 0 && v <= 1)
			p->shrink_underused = (int)v;
	}
	{
		unsigned mpn;
		if (thps_max_ptes_none_get(ctx, &mpn) == 0 && mpn < 65536)
			p->max_ptes_none = (int)mpn;
	}
}

static void gather_debugfs(const struct thps_ctx *ctx, struct thps_probe *p)
{
	char path[PATH_MAX];

	/* An unmounted /sys/kernel/debug is an empty directory. */
	p->debugfs_mounted = dir_has_entries(ctx->debugfs_root);
	if (thps_path(path, sizeof(path), ctx->debugfs_root, "split_huge_pages") == 0 &&
	    file_exists(path)) {
		p->have_split_file = true;
		p->split_file_writable = access(path, W_OK) == 0;
	}
	if (thps_path(path, sizeof(path), ctx->debugfs_root, "thp_utilization") < 0 ||
	    !file_exists(path))
		return;
	p->have_thp_utilization = true;
	p->thp_utilization_error =
	    thps_thp_utilization_read(ctx, &p->kernel_hist, &p->kernel_last_scan_time,
				      &p->kernel_last_scan_duration, &p->thp_utilization_bad_line);
}

static void gather_cgroup(const struct thps_ctx *ctx, unsigned flags, struct thps_probe *p)
{
	_cleanup_free_ char *sub = NULL;
	char path[PATH_MAX];
	int v, r;

	/* What the kernel would accept, by version; a write test below overrides it. */
	if (p->kver_major >= 0)
		p->reclaim_swappiness =
		    p->kver_major > SWAPPINESS_MAJOR ||
		    (p->kver_major == SWAPPINESS_MAJOR && p->kver_minor >= SWAPPINESS_MINOR);
	v = thps_memcg_find(ctx, p->cgroup_root, sizeof(p->cgroup_root), &p->v2_memory);
	if (v <= 0) {
		p->cgroup_root[0] = 0;
		return;
	}
	p->cgroup_version = v;
	if (v != 2)
		return;
	if (read_small(p->cgroup_root, "cgroup.subtree_control", &sub) == 0)
		p->v2_subtree_memory = has_word(sub, "memory");
	p->have_memory_reclaim = p->v2_memory && under_has(p->cgroup_root, "memory.reclaim");
	if (!p->have_memory_reclaim)
		return;
	if (flags & THPS_PROBE_WRITE_TEST) {
		/* Asks to reclaim 0 bytes: kernels before 6.12 reject the key with EINVAL. */
		if (thps_path(path, sizeof(path), p->cgroup_root, "memory.reclaim") == 0) {
			r = write_file_string(path, "0 swappiness=60");
			if (r == 0 || r == -EINVAL) {
				p->reclaim_swappiness = r == 0;
				p->swappiness_tested = true;
				return;
			}
		}
	}
}

static void gather_vmstat(const struct thps_ctx *ctx, struct thps_probe *p)
{
	struct thps_vmstat v;

	if (thps_vmstat_read(ctx, &v) < 0)
		return;
	p->vm_thp_split_free = v.thp_split_free != UINT64_MAX;
	p->vm_thp_split_unmap = v.thp_split_unmap != UINT64_MAX;
	p->vm_thp_underused_split_page = v.thp_underused_split_page != UINT64_MAX;
}

int thps_probe_run(const struct thps_ctx *ctx, unsigned flags, struct thps_probe *ret)
{
	_cleanup_free_ struct thps_probe *p = malloc(sizeof(*p));
	_cleanup_free_ char *rel = NULL;
	struct thps_geometry g;

	if (!p)
		return -ENOMEM;
	thps_probe_init(p);
	if (read_small(ctx->proc_root, "sys/kernel/osrelease", &rel) == 0) {
		rel[strcspn(rel, "\n")] = 0;
		snprintf(p->kernel_release, sizeof(p->kernel_release), "%s", rel);
		(void)thps_parse_kernel_release(rel, &p->kver_major, &p->kver_minor);
	}
	if (thps_geometry_load(ctx, &g) == 0)
		p->subpages = g.subpages;
	gather_thp(ctx, p);
	gather_debugfs(ctx, p);
	gather_vmstat(ctx, p);
	gather_cgroup(ctx, flags, p);
	p->have_pagemap = under_has(ctx->proc_root, "self/pagemap");
	p->have_kpageflags = under_has(ctx->proc_root, "kpageflags");
	p->pmadvise_allowed = thps_pmadvise_allowed(ctx, p->pmadvise_why, sizeof(p->pmadvise_why));
	if (p->pmadvise_allowed < 0)
		snprintf(p->pmadvise_why, sizeof(p->pmadvise_why), "cannot read CapEff: %s",
			 strerror(-p->pmadvise_allowed));
	thps_probe_decide(p);
	*ret = *p;
	return 0;
}

/* ---- decide ---- */

static struct thps_finding *add(struct thps_probe *p, const char *key, bool ok, const char *fmt,
				...) _printf_(4, 5);
static struct thps_finding *add(struct thps_probe *p, const char *key, bool ok, const char *fmt,
				...)
{
	struct thps_finding *f;
	va_list ap;

	if (p->n_findings >= THPS_PROBE_MAX_FINDINGS)
		abort(); /* a programming error: the table has a fixed number of keys */
	f = &p->findings[p->n_findings++];
	f->key = key;
	f->ok = ok;
	va_start(ap, fmt);
	vsnprintf(f->value, sizeof(f->value), fmt, ap);
	va_end(ap);
	f->follows[0] = 0;
	return f;
}

static void follows(struct thps_finding *f, const char *fmt, ...) _printf_(2, 3);
static void follows(struct thps_finding *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->follows, sizeof(f->follows), fmt, ap);
	va_end(ap);
}

static void decide_cgroup(struct thps_probe *p)
{
	struct thps_finding *f;

	if (p->cgroup_version == 2 && p->v2_memory) {
		f = add(p, "cgroup.memory", true, "cgroup v2 at %s", p->cgroup_root);
		follows(f, "Per-cgroup figures are read from the v2 hierarchy; actions on cgroups "
			   "are possible.");
		f = add(p, "cgroup.subtree_control", p->v2_subtree_memory, "%s",
			p->v2_subtree_memory ? "memory enabled for child cgroups"
					     : "memory not in the root's subtree_control");
		if (p->v2_subtree_memory)
			follows(f, "Child cgroups have memory.* files (memory.current, "
				   "memory.stat, memory.reclaim).");
		else
			follows(f,
				"Child cgroups have no memory.* files: per-cgroup figures and "
				"reclaim need "
				"'+memory' in %s/cgroup.subtree_control.",
				p->cgroup_root);
	} else if (p->cgroup_version == 2) {
		f = add(p, "cgroup.memory", false, "cgroup v2 at %s without the memory controller",
			p->cgroup_root);
		follows(
		    f,
		    "The memory controller is not on the v2 hierarchy: no per-cgroup memory "
		    "figures "
		    "and no memory.reclaim; thpshrink reports per process and machine-wide only.");
	} else if (p->cgroup_version == 1) {
		f = add(p, "cgroup.memory", false, "cgroup v1 at %s", p->cgroup_root);
		follows(
		    f, "Read-only reporting: thpshrink reads memory.usage_in_bytes and memory.stat "
		       "(rss_huge) of v1 cgroups but never writes to a v1 hierarchy, and v1 has no "
		       "memory.reclaim, so it takes no per-cgroup action here.");
	} else {
		f = add(p, "cgroup.memory", false, "no memory cgroup hierarchy mounted");
		follows(f, "No per-cgroup figures or actions: thpshrink reports per process and "
			   "machine-wide only.");
	}

	f = add(p, "cgroup.memory_reclaim", p->have_memory_reclaim, "%s",
		p->have_memory_reclaim ? "present" : "absent");
	if (p->have_memory_reclaim)
		follows(
		    f,
		    "The reclaim actuator can ask a cgroup to give memory back; the kernel's THP "
		    "shrinkers run as part of it (judge the result by memory.current: the write "
		    "may fail with EAGAIN even when it freed memory).");
	else
		follows(f,
			"No proactive reclaim: thpshrink cannot ask the kernel to shrink a cgroup "
			"(it needs cgroup v2 with the memory controller, Linux >= 5.19).");

	if (!p->have_memory_reclaim) {
		f = add(p, "cgroup.memory_reclaim_swappiness", false,
			"n/a here (no memory.reclaim)%s",
			p->reclaim_swappiness < 0 ? ""
			: p->reclaim_swappiness
			    ? "; this kernel would accept it (inferred: Linux >= 6.12)"
			    : "; this kernel would not (inferred: Linux < 6.12)");
		follows(f, "Nothing to pass without memory.reclaim.");
	} else if (p->reclaim_swappiness < 0) {
		f = add(p, "cgroup.memory_reclaim_swappiness", false,
			"unknown (kernel version unreadable)");
		follows(f, "thpshrink writes plain byte amounts to memory.reclaim; with swap on, a "
			   "request may also swap out anonymous memory.");
	} else {
		f = add(p, "cgroup.memory_reclaim_swappiness", p->reclaim_swappiness == 1,
			"%s (%s)", p->reclaim_swappiness ? "accepted" : "not accepted",
			p->swappiness_tested	? "tested by writing '0 swappiness=60'"
			: p->reclaim_swappiness ? "inferred: Linux >= 6.12"
						: "inferred: Linux < 6.12");
		if (p->reclaim_swappiness)
			follows(
			    f, "The reclaim actuator can pass 'swappiness=0' so that a request "
			       "does not "
			       "swap out the cgroup's anonymous memory (THP shrinkers still run).");
		else
			follows(
			    f,
			    "memory.reclaim takes only a byte amount here: with swap on, a request "
			    "may also swap out anonymous memory, so keep reclaim budgets small.");
	}
}

static void decide_thp(struct thps_probe *p)
{
	struct thps_finding *f;
	unsigned full = p->subpages ? p->subpages - 1 : 511;
	bool never = strcmp(p->thp_enabled, "never") == 0;

	if (!p->thp_enabled[0]) {
		f = add(p, "thp.enabled", false, "absent");
		follows(f, "This kernel has no transparent huge pages: there is nothing to measure "
			   "or shrink.");
	} else {
		f = add(p, "thp.enabled", !never, "%s", p->thp_enabled);
		if (never)
			follows(f, "No new THPs are made: existing ones can still be measured, but "
				   "waste will not grow.");
		else if (!strcmp(p->thp_enabled, "always"))
			follows(f, "Every anonymous mapping may get THPs: the most waste to "
				   "expect, and the most to give back.");
		else
			follows(f, "Only regions that ask (madvise(MADV_HUGEPAGE)) get THPs: waste "
				   "is limited "
				   "to programs that request huge pages.");
	}
	f = add(p, "thp.defrag", true, "%s", p->thp_defrag[0] ? p->thp_defrag : "absent");
	follows(
	    f,
	    "How hard a fault works to get a huge page; it does not change what thpshrink can do.");

	if (p->max_ptes_none < 0) {
		f = add(p, "khugepaged.max_ptes_none", true, "absent");
		follows(f, "No khugepaged: split ranges are not re-collapsed.");
	} else if ((unsigned)p->max_ptes_none >= full) {
		f = add(p, "khugepaged.max_ptes_none", false, "%d (of %u subpages)",
			p->max_ptes_none, p->subpages);
		follows(
		    f,
		    "Re-collapse risk: khugepaged rebuilds a range when at most %d of its PTEs are "
		    "empty or zero, i.e. always, so split THPs come back (zeros and all) within "
		    "seconds; the underused shrinker is also off. Lower it (e.g. to %u) before "
		    "the workload faults its THPs in.",
		    p->max_ptes_none, p->subpages * 8 / 10);
	} else {
		f = add(p, "khugepaged.max_ptes_none", true, "%d (of %u subpages)",
			p->max_ptes_none, p->subpages);
		follows(
		    f,
		    "A THP counts as underused when more than %d of its subpages are zero; "
		    "khugepaged rebuilds a split range only if at most %d of its PTEs are empty "
		    "or zero, so mostly-zero ranges stay split.",
		    p->max_ptes_none, p->max_ptes_none);
	}

	p->underused_shrinker_active =
	    p->shrink_underused == 1 && p->max_ptes_none >= 0 && (unsigned)p->max_ptes_none < full;
	if (p->shrink_underused < 0) {
		f = add(p, "thp.shrink_underused", false, "absent");
		if (p->vm_thp_split_free)
			follows(f, "No upstream underused-THP shrinker; the RFC's low-utilization "
				   "shrinker "
				   "(always on) splits bucket-0 THPs when memory.reclaim runs.");
		else
			follows(
			    f,
			    "No underused-THP shrinker (upstream has one from Linux 6.12): reclaim "
			    "does not split mostly-zero THPs on this kernel.");
	} else if (p->shrink_underused == 0) {
		f = add(p, "thp.shrink_underused", false, "0 (disabled)");
		follows(f, "memory.reclaim will not split underused THPs; enable it with "
			   "'echo 1 > .../transparent_hugepage/shrink_underused'.");
	} else if (!p->underused_shrinker_active) {
		f = add(p, "thp.shrink_underused", false, "1, inactive (max_ptes_none %d)",
			p->max_ptes_none);
		follows(f,
			"Enabled but idle: the kernel only treats THPs as underused when "
			"max_ptes_none < %u, and only THPs faulted in after it was lowered.",
			full);
	} else {
		f = add(p, "thp.shrink_underused", true, "1, active (max_ptes_none %d)",
			p->max_ptes_none);
		follows(
		    f,
		    "memory.reclaim splits THPs with more than %d zero subpages and frees those "
		    "subpages, but only THPs faulted in after max_ptes_none was lowered.",
		    p->max_ptes_none);
	}
}

/* The split.process_madvise finding and the split mechanism as inferred (the measured
 * probe may overrule it): process_madvise where this process may advise others, else debugfs. */
static void decide_pmadvise(struct thps_probe *p)
{
	bool old_kernel = p->kver_major >= 0 &&
			  (p->kver_major < PMADVISE_MAJOR ||
			   (p->kver_major == PMADVISE_MAJOR && p->kver_minor < PMADVISE_MINOR));
	struct thps_finding *f;

	if (old_kernel) {
		f = add(p, "split.process_madvise", false, "unavailable (Linux < 5.10)");
		follows(f, "process_madvise(2) arrived in Linux 5.10: splits need debugfs "
			   "split_huge_pages here.");
	} else if (p->pmadvise_allowed > 0) {
		f = add(p, "split.process_madvise", true, "allowed (CAP_SYS_NICE)");
		follows(
		    f,
		    "The split actuator splits each wasteful folio exactly by "
		    "process_madvise(MADV_COLD) on one of its pages, through a pidfd: no debugfs, "
		    "works under kernel lockdown, spares the page cache.%s",
		    p->split_frees_zero_subpages
			? ""
			: " On this kernel a split keeps zero subpages: it gives back only the "
			  "unmapped subpages of partially mapped folios.");
	} else {
		if (p->pmadvise_allowed == 0)
			f = add(p, "split.process_madvise", false, "not allowed (no CAP_SYS_NICE)");
		else
			f = add(p, "split.process_madvise", false, "unknown (%.120s)",
				p->pmadvise_why);
		follows(f, "This process may not advise others (%.200s): %s", p->pmadvise_why,
			p->have_split_debugfs ? "splits fall back to debugfs split_huge_pages."
					      : "debugfs split_huge_pages is not writable either, "
						"so there are no exact splits.");
	}
	p->split_mech = p->have_split_pmadvise	? THPS_SPLIT_MECH_PMADVISE
			: p->have_split_debugfs ? THPS_SPLIT_MECH_DEBUGFS
						: THPS_SPLIT_MECH_NONE;
	p->split_mech_measured = false;
}

/* The RFC's debugfs thp_utilization: the kernel's own histogram, where the kernel has it. */
static void decide_thp_utilization(struct thps_probe *p)
{
	struct thps_finding *f;

	if (!p->have_thp_utilization && !p->debugfs_mounted) {
		f = add(p, "debugfs.thp_utilization", false, "unknown (debugfs not mounted)");
		follows(
		    f, "Only the RFC-patched kernel has thp_utilization; without debugfs it cannot "
		       "be read anyway: thpshrink's own scanner provides the histogram.");
	} else if (!p->have_thp_utilization) {
		f = add(p, "debugfs.thp_utilization", false, "absent");
		follows(
		    f,
		    "This kernel lacks the RFC's thp_utilization (only the patched kernel has it): "
		    "thpshrink's own scanner provides the histogram.");
	} else if (p->thp_utilization_error < 0) {
		f = add(p, "debugfs.thp_utilization", false, "present, unreadable (%s%s%d)",
			strerror(-p->thp_utilization_error),
			p->thp_utilization_error == -EINVAL ? " at line " : ", line ",
			p->thp_utilization_bad_line);
		follows(
		    f, "The file does not match the RFC's format: the debugfs source is not used.");
	} else {
		f = add(p, "debugfs.thp_utilization", true,
			"present (bucket 0: %llu THPs, %llu zero subpages; last scan %.2f s)",
			(unsigned long long)p->kernel_hist.thps[0],
			(unsigned long long)p->kernel_hist.zero_subpages[0],
			p->kernel_last_scan_time);
		follows(f, "The debugfs source reports the kernel's own machine-wide histogram, "
			   "refreshed once per full pass over memory.");
	}
}

static void decide_split(struct thps_probe *p)
{
	struct thps_finding *f;

	p->have_split_pmadvise =
	    p->pmadvise_allowed > 0 &&
	    (p->kver_major < 0 || p->kver_major > PMADVISE_MAJOR ||
	     (p->kver_major == PMADVISE_MAJOR && p->kver_minor >= PMADVISE_MINOR));

	f = add(p, "debugfs", p->debugfs_mounted, "%s",
		p->debugfs_mounted ? "mounted" : "not mounted");
	if (p->debugfs_mounted)
		follows(f, "Kernel debug files (split_huge_pages, the RFC's thp_utilization) are "
			   "reachable.");
	else
		follows(f,
			"split_huge_pages and thp_utilization are out of reach: exact-range splits "
			"need 'mount -t debugfs none /sys/kernel/debug' (root).");

	p->have_split_debugfs = p->debugfs_mounted && p->have_split_file && p->split_file_writable;
	f = add(p, "debugfs.split_huge_pages", p->have_split_debugfs, "%s",
		!p->debugfs_mounted	 ? "unreachable (debugfs not mounted)"
		: !p->have_split_file	 ? "absent"
		: p->split_file_writable ? "present, writable"
					 : "present, not writable");
	if (p->have_split_debugfs)
		follows(f,
			"The split actuator can split the exact low-utilization THP ranges of a "
			"process%s.",
			p->have_split_pmadvise ? " (its fallback: process_madvise comes first)"
					       : "");
	else if (p->have_split_pmadvise)
		follows(f, "Not needed: process_madvise splits the exact folios instead (below).");
	else
		follows(f, "No exact-range splits: only memory.reclaim (where available) can give "
			   "THP memory back.");

	if (p->vm_thp_split_free && p->vm_thp_split_unmap)
		p->split_kind = THPS_SPLIT_RFC;
	else if (p->vm_thp_underused_split_page || p->shrink_underused >= 0)
		p->split_kind = THPS_SPLIT_UPSTREAM;
	else
		p->split_kind = THPS_SPLIT_KEEPS_ZERO;
	p->split_frees_zero_subpages = p->split_kind != THPS_SPLIT_KEEPS_ZERO;
	switch (p->split_kind) {
	case THPS_SPLIT_RFC:
		f = add(p, "split.frees_zero_subpages", true,
			"yes (RFC patch 003: vmstat thp_split_free, thp_split_unmap)");
		follows(
		    f,
		    "A split frees the zero subpages of a THP at once: splitting low-utilization "
		    "THPs gives their waste back.");
		break;
	case THPS_SPLIT_UPSTREAM:
		f = add(p, "split.frees_zero_subpages", true,
			"yes (Linux >= 6.12: zero subpages remapped to the shared zero page)");
		follows(f, "A split of an anonymous THP frees its zero subpages at once: splitting "
			   "low-utilization THPs gives their waste back.");
		break;
	default:
		f = add(p, "split.frees_zero_subpages", false, "no");
		follows(f, "A split keeps every subpage, zero ones too: splits and reclaim free "
			   "nothing of a sparse THP here without swap; a split still frees the "
			   "unmapped subpages of partially mapped THPs.");
	}

	decide_pmadvise(p);
}

void thps_probe_decide(struct thps_probe *p)
{
	struct thps_finding *f;
	unsigned full = p->subpages ? p->subpages - 1 : 511;

	p->n_findings = 0;
	f = add(p, "kernel", p->kver_major >= 0, "%s",
		p->kernel_release[0] ? p->kernel_release : "unknown");
	follows(f, "Version-based answers below are marked 'inferred'.");
	decide_cgroup(p);
	decide_thp(p);
	decide_split(p);
	decide_thp_utilization(p);
	p->can_reclaim = p->cgroup_version == 2 && p->v2_memory && p->have_memory_reclaim;
	p->recollapse_risk = p->max_ptes_none >= 0 && (unsigned)p->max_ptes_none >= full;
}

bool thps_probe_split_frees(const struct thps_probe *p)
{
	return p->split_frees_zero_subpages;
}

const struct thps_finding *thps_probe_finding(const struct thps_probe *p, const char *key)
{
	for (size_t i = 0; i < p->n_findings; i++)
		if (!strcmp(p->findings[i].key, key))
			return &p->findings[i];
	return NULL;
}

static const char *yesno(bool b)
{
	return b ? "yes" : "no";
}

static const char *split_mech_name(enum thps_split_mech m)
{
	switch (m) {
	case THPS_SPLIT_MECH_PMADVISE:
		return "process_madvise";
	case THPS_SPLIT_MECH_DEBUGFS:
		return "debugfs";
	default:
		return "none";
	}
}

void thps_probe_mode(const struct thps_probe *p, char *buf, size_t size)
{
	bool v2 = p->cgroup_version == 2 && p->v2_memory;
	const char *sparse = p->split_frees_zero_subpages
				 ? ""
				 : " (partially mapped folios only: a split keeps zero subpages "
				   "here)";

	switch (p->split_mech) {
	case THPS_SPLIT_MECH_PMADVISE:
		/* no cgroup to write to: a split acts on one process's folios */
		snprintf(buf, size, "exact splits via process_madvise%s%s", sparse,
			 v2 ? (p->can_reclaim ? "; memory.reclaim per cgroup" : "")
			 : p->cgroup_version == 1 ? "; per process: cgroup v1 figures are read-only"
						  : "; per process: no memory cgroups");
		return;
	case THPS_SPLIT_MECH_DEBUGFS:
		if (v2) {
			snprintf(buf, size, "exact splits via debugfs split_huge_pages%s%s", sparse,
				 p->can_reclaim ? "; memory.reclaim per cgroup" : "");
			return;
		}
		break;
	default:
		if (p->can_reclaim) {
			snprintf(buf, size, "memory.reclaim per cgroup; no exact splits");
			return;
		}
	}
	snprintf(buf, size, "read-only reporting");
}

void thps_probe_print(FILE *f, const struct thps_probe *p)
{
	char mode[256];

	for (size_t i = 0; i < p->n_findings; i++) {
		const struct thps_finding *x = &p->findings[i];

		fprintf(f, "%-4s %-33s %s\n     %s\n", x->ok ? "ok" : "--", x->key, x->value,
			x->follows);
	}
	fprintf(f, "\ncan reclaim (cgroup v2 memory.reclaim): %s\n", yesno(p->can_reclaim));
	fprintf(f, "split frees zero subpages:              %s\n",
		yesno(p->split_frees_zero_subpages));
	fprintf(f, "exact-range splits (debugfs):           %s\n", yesno(p->have_split_debugfs));
	fprintf(f, "exact splits (process_madvise):         %s\n", yesno(p->have_split_pmadvise));
	fprintf(f, "split mechanism:                        %s (%s)\n",
		split_mech_name(p->split_mech), p->split_mech_measured ? "measured" : "inferred");
	fprintf(f, "re-collapse risk (max_ptes_none):       %s\n", yesno(p->recollapse_risk));
	thps_probe_mode(p, mode, sizeof(mode));
	fprintf(f, "mode: %s\n", mode);
}

static const char *split_kind_name(enum thps_split_kind k)
{
	switch (k) {
	case THPS_SPLIT_RFC:
		return "rfc";
	case THPS_SPLIT_UPSTREAM:
		return "upstream";
	default:
		return "none";
	}
}

#define ADD(o, k, v)                                                                               \
	do {                                                                                       \
		json_object *v_ = (v);                                                             \
		if (!v_ || json_object_object_add((o), (k), v_) < 0) {                             \
			json_object_put(v_);                                                       \
			return false;                                                              \
		}                                                                                  \
	} while (0)

static bool fill_json(json_object *o, const struct thps_probe *p)
{
	json_object *arr, *x;
	char mode[256];

	ADD(o, "kernel", json_object_new_string(p->kernel_release));
	ADD(o, "cgroup_version", json_object_new_int(p->cgroup_version));
	ADD(o, "cgroup_root", json_object_new_string(p->cgroup_root));
	ADD(o, "can_reclaim", json_object_new_boolean(p->can_reclaim));
	ADD(o, "reclaim_swappiness",
	    json_object_new_string(p->reclaim_swappiness < 0 ? "unknown"
				   : p->reclaim_swappiness   ? "yes"
							     : "no"));
	ADD(o, "reclaim_swappiness_tested", json_object_new_boolean(p->swappiness_tested));
	ADD(o, "split_frees_zero_subpages", json_object_new_boolean(p->split_frees_zero_subpages));
	ADD(o, "split_kind", json_object_new_string(split_kind_name(p->split_kind)));
	ADD(o, "have_split_debugfs", json_object_new_boolean(p->have_split_debugfs));
	ADD(o, "have_split_pmadvise", json_object_new_boolean(p->have_split_pmadvise));
	ADD(o, "split_mechanism", json_object_new_string(split_mech_name(p->split_mech)));
	ADD(o, "split_mechanism_measured", json_object_new_boolean(p->split_mech_measured));
	thps_probe_mode(p, mode, sizeof(mode));
	ADD(o, "mode", json_object_new_string(mode));
	ADD(o, "recollapse_risk", json_object_new_boolean(p->recollapse_risk));
	ADD(o, "underused_shrinker_active", json_object_new_boolean(p->underused_shrinker_active));
	if (p->max_ptes_none >= 0)
		ADD(o, "max_ptes_none", json_object_new_int(p->max_ptes_none));
	else if (json_object_object_add(o, "max_ptes_none", NULL) < 0)
		return false;
	ADD(o, "have_thp_utilization",
	    json_object_new_boolean(p->have_thp_utilization && p->thp_utilization_error == 0));
	if (p->have_thp_utilization && p->thp_utilization_error == 0) {
		json_object *k = json_object_new_object();

		ADD(o, "thp_utilization", k);
		arr = json_object_new_array();
		ADD(k, "buckets", arr);
		for (unsigned b = 0; b < THPS_BUCKETS; b++) {
			x = json_object_new_object();
			if (!x || json_object_array_add(arr, x) < 0) {
				json_object_put(x);
				return false;
			}
			ADD(x, "thps", json_object_new_uint64(p->kernel_hist.thps[b]));
			ADD(x, "zero_subpages",
			    json_object_new_uint64(p->kernel_hist.zero_subpages[b]));
		}
		ADD(k, "last_scan_time", json_object_new_double(p->kernel_last_scan_time));
		ADD(k, "last_scan_duration", json_object_new_double(p->kernel_last_scan_duration));
	}
	arr = json_object_new_array();
	ADD(o, "findings", arr);
	for (size_t i = 0; i < p->n_findings; i++) {
		const struct thps_finding *fi = &p->findings[i];

		x = json_object_new_object();
		if (!x || json_object_array_add(arr, x) < 0) {
			json_object_put(x);
			return false;
		}
		ADD(x, "key", json_object_new_string(fi->key));
		ADD(x, "value", json_object_new_string(fi->value));
		ADD(x, "ok", json_object_new_boolean(fi->ok));
		ADD(x, "follows", json_object_new_string(fi->follows));
	}
	return true;
}

json_object *thps_probe_to_json(const struct thps_probe *p)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	if (!fill_json(o, p)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}
