/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prometheus text format 0.0.4: HELP/TYPE before each family, base units, counters end in
 * _total, label values sanitized (text.h) then escaped: one invalid byte in one cgroup name
 * would make Prometheus reject the whole exposition. Per-cgroup series are bounded to the
 * in->max_cgroups cgroups with the most waste, so the text's size does not grow with the number
 * of cgroups a user can create. Nothing here allocates except that selection and
 * format_alloc's buffer. */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s.h"
#include "macro.h"
#include "metrics.h"
#include "text.h"

struct selection;

struct out {
	char *buf;
	size_t size;
	size_t len;
	bool overflow;
	const struct selection *sel;
};

static void put(struct out *o, const char *fmt, ...) _printf_(2, 3);
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->size - o->len) {
		o->overflow = true;
		o->buf[o->len] = '\0';
		return;
	}
	o->len += n;
}

int thps_metrics_escape_label(const char *value, char *out, size_t size)
{
	char clean[THPS_TEXT_MAX + 1];
	size_t n = 0;
	int r = thps_text_sanitize(value, THPS_TEXT_MAX, clean, sizeof(clean));

	if (r < 0)
		return r;
	for (const char *p = clean; *p; p++) {
		const char *rep = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : NULL;
		size_t l = rep ? 2 : 1;

		if (n + l >= size)
			return -ENOBUFS;
		if (rep)
			memcpy(out + n, rep, 2);
		else
			out[n] = *p;
		n += l;
	}
	if (n >= size)
		return -ENOBUFS;
	out[n] = '\0';
	return (int)n;
}

/* Writes a label value, sanitized and escaped, straight into the output. */
static void put_label(struct out *o, const char *value)
{
	char esc[2 * THPS_TEXT_MAX + 1];

	if (thps_metrics_escape_label(value, esc, sizeof(esc)) < 0)
		o->overflow = true; /* cannot happen: esc holds any sanitized value escaped */
	else
		put(o, "%s", esc);
}

/* The cgroups whose series are exported: every per-cgroup family uses the same set. */
struct selected {
	const char *path;
	uint64_t ino;
	uint64_t score; /* low-util waste + partially mapped bytes */
	bool counters;	/* has action, re-collapse or container series */
	bool keep;
	const struct thps_metrics_container *ctr; /* the registration covering it, or NULL */
};

struct selection {
	struct selected *v; /* sorted by path */
	size_t n;
	size_t dropped;
};

static int cmp_sel_path(const void *a, const void *b)
{
	return strcmp(((const struct selected *)a)->path, ((const struct selected *)b)->path);
}

static int cmp_sel_rank(const void *a, const void *b)
{
	const struct selected *x = *(const struct selected *const *)a,
			      *y = *(const struct selected *const *)b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->counters != y->counters)
		return x->counters ? -1 : 1;
	return strcmp(x->path, y->path);
}

static void sel_add(struct selection *s, const char *path, uint64_t ino, uint64_t score,
		    bool counters)
{
	s->v[s->n++] = (struct selected){
	    .path = path ? path : "", .ino = ino, .score = score, .counters = counters};
}

/* Collects every cgroup any series would name, merges duplicates, keeps the max best ranked.
 * Returns 0 or -ENOMEM. */
static int select_cgroups(const struct thps_metrics_input *in, size_t max, struct selection *ret)
{
	const struct thps_scan *sc = in->scan;
	size_t cap = (sc ? sc->n_cgroups : 0) + in->n_actions + in->n_recollapsed +
		     in->n_containers + in->n_promoted;
	struct selection s = {.v = calloc(cap + 1, sizeof(*s.v))};
	_cleanup_free_ struct selected **rank = NULL;
	size_t j = 0;

	if (!s.v)
		return -ENOMEM;
	for (size_t i = 0; sc && i < sc->n_cgroups; i++)
		sel_add(&s, sc->cgroups[i].path, sc->cgroups[i].ino,
			sc->cgroups[i].waste_bytes + sc->cgroups[i].partial_unmapped_bytes, false);
	for (size_t i = 0; i < in->n_actions; i++)
		sel_add(&s, in->actions[i].cgroup, 0, 0, true);
	for (size_t i = 0; i < in->n_recollapsed; i++)
		sel_add(&s, in->recollapsed[i].cgroup, 0, 0, true);
	for (size_t i = 0; i < in->n_containers; i++) {
		sel_add(&s, in->containers[i].cgroup, 0, 0, true);
		s.v[s.n - 1].ctr = &in->containers[i];
	}
	for (size_t i = 0; i < in->n_promoted; i++)
		sel_add(&s, in->promoted[i].cgroup, in->promoted[i].ino, 0, true);
	qsort(s.v, s.n, sizeof(*s.v), cmp_sel_path);
	for (size_t i = 0; i < s.n; i++) {
		if (j > 0 && !strcmp(s.v[j - 1].path, s.v[i].path)) {
			struct selected *d = &s.v[j - 1];
			d->ino = d->ino ? d->ino : s.v[i].ino;
			d->score = MAX(d->score, s.v[i].score);
			d->counters = d->counters || s.v[i].counters;
			d->ctr = d->ctr ? d->ctr : s.v[i].ctr;
			continue;
		}
		s.v[j++] = s.v[i];
	}
	s.n = j;
	rank = calloc(s.n + 1, sizeof(*rank));
	if (!rank) {
		free(s.v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s.n; i++)
		rank[i] = &s.v[i];
	qsort(rank, s.n, sizeof(*rank), cmp_sel_rank);
	for (size_t i = 0; i < s.n; i++)
		rank[i]->keep = i < max;
	s.dropped = s.n > max ? s.n - max : 0;
	*ret = s;
	return 0;
}

static const struct selected *sel_find(const struct selection *s, const char *path)
{
	struct selected key = {.path = path ? path : ""};

	return bsearch(&key, s->v, s->n, sizeof(*s->v), cmp_sel_path);
}

/* Writes NAME{cgroup="...",inode="N" and returns true, or returns false (nothing written) when
 * the cgroup is not among the exported ones. The caller closes the label set. */
static bool cgroup_series(struct out *o, const char *name, const char *cgroup)
{
	const struct selected *e = sel_find(o->sel, cgroup);

	if (!e || !e->keep)
		return false;
	put(o, "%s{cgroup=\"", name);
	put_label(o, cgroup);
	put(o, "\",inode=\"%" PRIu64 "\"", e->ino);
	return true;
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one unlabelled sample. */
static void scalar(struct out *o, const char *name, const char *type, const char *help, uint64_t v)
{
	family(o, name, type, help);
	put(o, "%s %" PRIu64 "\n", name, v);
}

static void scalar_f(struct out *o, const char *name, const char *type, const char *help, int prec,
		     double v)
{
	family(o, name, type, help);
	put(o, "%s %.*f\n", name, prec, v);
}

static void cgroup_value(struct out *o, const char *name, const char *cgroup, uint64_t v)
{
	if (cgroup_series(o, name, cgroup))
		put(o, "} %" PRIu64 "\n", v);
}

static void bucket_label(const struct thps_geometry *g, unsigned b, char *buf, size_t size)
{
	unsigned lo, hi;

	thps_bucket_range(g, b, &lo, &hi);
	snprintf(buf, size, "%u-%u", lo, hi);
}

static void cgroup_hist(struct out *o, const struct thps_scan *s, bool zero)
{
	const char *name = zero ? "thpshrink_cgroup_zero_subpages" : "thpshrink_cgroup_thps";

	family(o, name, "gauge",
	       zero ? "Zero 4 KiB subpages of the cgroup's anonymous THPs, by utilization bucket "
		      "(utilized subpages)."
		    : "Anonymous PMD-mapped THPs of the cgroup, by utilization bucket (utilized "
		      "subpages).");
	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct thps_cgroup_stats *c = &s->cgroups[i];
		for (unsigned b = 0; b < THPS_BUCKETS; b++) {
			char label[32];

			bucket_label(&s->geom, b, label, sizeof(label));
			if (!cgroup_series(o, name, c->path))
				break;
			put(o, ",bucket=\"%s\"} %" PRIu64 "\n", label,
			    zero ? c->hist.zero_subpages[b] : c->hist.thps[b]);
		}
	}
}

/* Every anonymous folio size present (mTHPs and PMD THPs), with a size label in bytes:
 * folios by bucket (the RFC's buckets scaled to the size) and the low-utilization waste. */
static void cgroup_sizes(struct out *o, const struct thps_scan *s)
{
	family(o, "thpshrink_cgroup_folios", "gauge",
	       "Anonymous large folios of the cgroup (PMD THPs and mTHPs), by size in bytes and "
	       "utilization bucket (utilized subpages of that size).");
	for (size_t i = 0; i < s->n_cgroups; i++) {
		struct thps_size_figures z[THPS_MAX_ORDER];
		size_t n =
		    thps_cgroup_sizes(&s->cgroups[i], &s->geom, s->lowutil_max_bucket, false, z);

		for (size_t k = 0; k < n; k++)
			for (unsigned b = 0; b < THPS_BUCKETS; b++) {
				unsigned lo, hi;

				thps_bucket_range_n(z[k].subpages, b, &lo, &hi);
				if (lo > hi)
					continue;
				if (!cgroup_series(o, "thpshrink_cgroup_folios",
						   s->cgroups[i].path))
					break;
				put(o, ",size=\"%" PRIu64 "\",bucket=\"%u-%u\"} %" PRIu64 "\n",
				    z[k].size_bytes, lo, hi, z[k].hist->thps[b]);
			}
	}
	family(o, "thpshrink_cgroup_size_waste_bytes", "gauge",
	       "Zero subpages of the cgroup's low-utilization folios of one size, in bytes.");
	for (size_t i = 0; i < s->n_cgroups; i++) {
		struct thps_size_figures z[THPS_MAX_ORDER];
		size_t n =
		    thps_cgroup_sizes(&s->cgroups[i], &s->geom, s->lowutil_max_bucket, false, z);

		for (size_t k = 0; k < n; k++) {
			if (!cgroup_series(o, "thpshrink_cgroup_size_waste_bytes",
					   s->cgroups[i].path))
				break;
			put(o, ",size=\"%" PRIu64 "\"} %" PRIu64 "\n", z[k].size_bytes,
			    z[k].waste_bytes);
		}
	}
}

static void cgroup_family(struct out *o, const struct thps_scan *s, const char *name,
			  const char *help, size_t offset, bool only_memstat)
{
	family(o, name, "gauge", help);
	for (size_t i = 0; i < s->n_cgroups; i++) {
		const struct thps_cgroup_stats *c = &s->cgroups[i];
		if (only_memstat && !c->have_memstat)
			continue;
		cgroup_value(o, name, c->path, *(const uint64_t *)((const char *)c + offset));
	}
}

static void actions(struct out *o, const struct thps_metrics_input *in)
{
	static const struct {
		const char *name, *help;
		size_t offset;
	} fams[] = {
	    {"thpshrink_actions_total",
	     "Actions taken per cgroup and action (observe: would have acted).",
	     offsetof(struct thps_metrics_action, count)},
	    {"thpshrink_action_failures_total", "Actions the kernel refused or that failed.",
	     offsetof(struct thps_metrics_action, failures)},
	    {"thpshrink_requested_bytes_total", "Bytes the daemon asked the kernel to give back.",
	     offsetof(struct thps_metrics_action, bytes_requested)},
	    {"thpshrink_given_back_bytes_total",
	     "Bytes given back, measured before and after each action (page cache not counted).",
	     offsetof(struct thps_metrics_action, bytes_given_back)},
	    {"thpshrink_page_cache_evicted_bytes_total",
	     "Page cache the cgroup lost during the daemon's actions (memory.stat file).",
	     offsetof(struct thps_metrics_action, bytes_page_cache_evicted)},
	};

	for (size_t f = 0; f < ELEMENTSOF(fams); f++) {
		family(o, fams[f].name, "counter", fams[f].help);
		for (size_t i = 0; i < in->n_actions; i++) {
			const struct thps_metrics_action *a = &in->actions[i];
			if (!cgroup_series(o, fams[f].name, a->cgroup))
				continue;
			put(o, ",action=\"");
			put_label(o, a->action);
			put(o, "\"} %" PRIu64 "\n",
			    *(const uint64_t *)((const char *)a + fams[f].offset));
		}
	}
}

static void scan_summary(struct out *o, const struct thps_scan *s)
{
	const struct thps_scan_summary *m = &s->summary;

	scalar(o, "thpshrink_scan_thps", "gauge",
	       "Distinct THPs whose contents the last scan read.", (uint64_t)(m->thps_scanned));
	scalar(o, "thpshrink_scan_shared_thps", "gauge",
	       "Further mappings of THPs already counted in the last scan.",
	       (uint64_t)(m->thps_shared));
	scalar(o, "thpshrink_scan_read_bytes", "gauge",
	       "Bytes of process memory the last scan read.", (uint64_t)(m->bytes_read));
	family(o, "thpshrink_scan_folios", "gauge",
	       "THPs the last scan counted, by how: read whole, refreshed (read until proven above "
	       "the "
	       "cut), or carried from the memo without a read.");
	put(o, "thpshrink_scan_folios{how=\"read\"} %" PRIu64 "\n", m->folios_read);
	put(o, "thpshrink_scan_folios{how=\"refreshed\"} %" PRIu64 "\n", m->folios_refreshed);
	put(o, "thpshrink_scan_folios{how=\"memo\"} %" PRIu64 "\n", m->folios_memo);
	scalar_f(o, "thpshrink_scan_read_cpu_seconds", "gauge",
		 "CPU time the last scan spent reading THP contents.", 6, m->read_cpu_ns / 1e9);
	scalar(o, "thpshrink_scan_processes", "gauge", "Processes the last scan walked.",
	       (uint64_t)(m->procs_scanned));
	scalar(o, "thpshrink_scan_processes_skipped", "gauge",
	       "Processes the last scan skipped (exited, changed or unreadable).",
	       (uint64_t)(m->procs_skipped));
	scalar(o, "thpshrink_scan_untracked_bytes", "gauge",
	       "Mapped bytes of PTE-mapped large folios (mTHPs) the last scan left uncounted: its "
	       "table of such folios (1,048,576) was full.",
	       (uint64_t)(m->untracked_bytes));
	scalar_f(o, "thpshrink_scan_duration_seconds", "gauge", "Wall-clock time of the last scan.",
		 6, m->wall_ns / 1e9);
	scalar_f(o, "thpshrink_scan_cpu_seconds", "gauge", "CPU time of the last scan.", 6,
		 m->cpu_ns / 1e9);
	scalar_f(o, "thpshrink_scan_throttled_seconds", "gauge",
		 "Time the last scan slept to stay within its THP rate budget.", 6,
		 m->throttled_ns / 1e9);
}

static void kernel_figures(struct out *o, const struct thps_scan *s)
{
	if (s->have_kernel_hist) {
		for (int zero = 0; zero <= 1; zero++) {
			const char *name =
			    zero ? "thpshrink_kernel_zero_subpages" : "thpshrink_kernel_thps";
			family(o, name, "gauge",
			       zero ? "Zero subpages by utilization bucket, machine-wide, from the "
				      "kernel's thp_utilization."
				    : "THPs by utilization bucket, machine-wide, from the kernel's "
				      "thp_utilization.");
			for (unsigned b = 0; b < THPS_BUCKETS; b++) {
				char label[32];

				bucket_label(&s->geom, b, label, sizeof(label));
				put(o, "%s{bucket=\"%s\"} %" PRIu64 "\n", name, label,
				    zero ? s->kernel_hist.zero_subpages[b]
					 : s->kernel_hist.thps[b]);
			}
		}
	}
	if (s->have_vmstat) {
		for (size_t i = 0; i < thps_n_vmstat_fields; i++) {
			uint64_t val = thps_vmstat_value(&s->vmstat, i);
			const char *key = thps_vmstat_fields[i].name;
			char name[96];

			if (val == UINT64_MAX)
				continue;
			snprintf(name, sizeof(name), "thpshrink_vmstat_%s_total", key);
			put(o,
			    "# HELP %s The kernel's /proc/vmstat counter %s.\n# TYPE %s counter\n",
			    name, key, name);
			put(o, "%s %" PRIu64 "\n", name, val);
		}
	}
}

static void sel_free(struct selection *s)
{
	free(s->v);
}

/* The per-cgroup gauges read straight out of struct thps_cgroup_stats, in exposition order. */
static void cgroup_gauges(struct out *o, const struct thps_scan *s)
{
	cgroup_family(o, s, "thpshrink_cgroup_lowutil_thps",
		      "Low-utilization THPs of the cgroup (at or below the low-util bucket).",
		      offsetof(struct thps_cgroup_stats, lowutil_thps), false);
	cgroup_family(o, s, "thpshrink_cgroup_waste_bytes",
		      "Zero subpages of the cgroup's low-utilization THPs, in bytes: what "
		      "a split gives back.",
		      offsetof(struct thps_cgroup_stats, waste_bytes), false);
	cgroup_family(o, s, "thpshrink_cgroup_partially_mapped_thps",
		      "THP folios of the cgroup mapped only partly.",
		      offsetof(struct thps_cgroup_stats, partial_thps), false);
	cgroup_family(o, s, "thpshrink_cgroup_partially_mapped_bytes",
		      "Unmapped but still charged bytes of partly mapped THPs.",
		      offsetof(struct thps_cgroup_stats, partial_unmapped_bytes), false);
	cgroup_family(o, s, "thpshrink_cgroup_memory_current_bytes", "The cgroup's memory.current.",
		      offsetof(struct thps_cgroup_stats, memory_current), true);
	cgroup_family(o, s, "thpshrink_cgroup_anon_thp_bytes", "The cgroup's memory.stat anon_thp.",
		      offsetof(struct thps_cgroup_stats, anon_thp_bytes), true);
}

static void build_info(struct out *o, const struct thps_metrics_input *in)
{
	family(o, "thpshrink_build_info", "gauge", "Build of the running thpshrinkd; always 1.");
	put(o, "thpshrink_build_info{version=\"");
	put_label(o, in->version);
	put(o, "\"} 1\n");
}

static void dry_run(struct out *o, const struct thps_metrics_input *in)
{
	scalar(o, "thpshrink_dry_run", "gauge",
	       "1 if the daemon only observes, whatever the policies say.",
	       (uint64_t)(in->dry_run ? 1 : 0));
}

static void capabilities(struct out *o, const struct thps_metrics_input *in)
{
	family(o, "thpshrink_kernel_capability", "gauge",
	       "What this kernel can do, from the capability probe at start (1 = yes).");
	for (size_t i = 0; i < in->n_capabilities; i++) {
		put(o, "thpshrink_kernel_capability{capability=\"");
		put_label(o, in->capabilities[i].name);
		put(o, "\"} %d\n", in->capabilities[i].value ? 1 : 0);
	}
}

static void give_back_method(struct out *o, const struct thps_metrics_input *in)
{
	static const char *const methods[] = {"process_madvise", "debugfs", "reclaim", "none"};

	if (!in->give_back_method)
		return;
	family(o, "thpshrink_give_back_method", "gauge",
	       "How a split policy gives waste back here (1 = in use): process_madvise and debugfs "
	       "split exactly; reclaim evicts page cache too; none gives nothing back.");
	for (size_t i = 0; i < ELEMENTSOF(methods); i++)
		put(o, "thpshrink_give_back_method{method=\"%s\"} %d\n", methods[i],
		    !strcmp(methods[i], in->give_back_method));
}

static void cgroups_dropped(struct out *o)
{
	scalar(o, "thpshrink_metrics_cgroups_dropped", "gauge",
	       "Cgroups left out of the per-cgroup series this pass (only the ones with the most "
	       "waste are exported; see --metrics-max-cgroups).",
	       (uint64_t)(o->sel->dropped));
}

static void policies(struct out *o, const struct thps_metrics_input *in)
{
	scalar(o, "thpshrink_policies", "gauge", "Policies in force (the last set that loaded).",
	       (uint64_t)(in->policies_loaded));
	scalar(o, "thpshrink_policy_load_errors_total", "counter",
	       "Policy loads or reloads rejected; the last good set stayed in force.",
	       (uint64_t)(in->policy_load_errors_total));
	scalar(o, "thpshrink_policy_last_load_success", "gauge",
	       "1 if the last policy load or reload succeeded.",
	       (uint64_t)(in->policy_last_load_ok ? 1 : 0));
}

static void passes(struct out *o, const struct thps_metrics_input *in)
{
	scalar(o, "thpshrink_scans_total", "counter", "Scan passes completed.",
	       (uint64_t)(in->scans_total));
	scalar(o, "thpshrink_scan_errors_total", "counter", "Scan passes in which a source failed.",
	       (uint64_t)(in->scan_errors_total));
	scalar_f(o, "thpshrink_last_scan_timestamp_seconds", "gauge",
		 "When the last pass ended (Unix time).", 3, in->last_scan_timestamp);
}

static void proc_events(struct out *o, const struct thps_metrics_input *in)
{
	scalar(o, "thpshrink_proc_events_total", "counter",
	       "Process events read from the kernel's proc connector.",
	       (uint64_t)(in->proc_events_total));
	scalar(o, "thpshrink_proc_event_overflows_total", "counter",
	       "Times the proc connector socket overflowed (each forces a full rescan).",
	       (uint64_t)(in->proc_event_overflows_total));
}

static void decisions(struct out *o, const struct thps_metrics_input *in)
{
	family(o, "thpshrink_decisions_total", "counter", "Engine decisions, by outcome.");
	for (size_t i = 0; i < in->n_decisions; i++) {
		put(o, "thpshrink_decisions_total{decision=\"");
		put_label(o, in->decisions[i].name);
		put(o, "\"} %" PRIu64 "\n", in->decisions[i].value);
	}
}

static void recollapsed(struct out *o, const struct thps_metrics_input *in)
{
	family(o, "thpshrink_recollapsed_thps_total", "counter",
	       "THPs khugepaged rebuilt after the daemon split them (lower "
	       "khugepaged/max_ptes_none).");
	for (size_t i = 0; i < in->n_recollapsed; i++)
		cgroup_value(o, "thpshrink_recollapsed_thps_total", in->recollapsed[i].cgroup,
			     in->recollapsed[i].value);
}

/* The series name{label="NAME"} VALUE of each count (the family's header written already). */
static void labelled_counts(struct out *o, const char *name, const char *label,
			    const struct thps_metrics_count *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		put(o, "%s{%s=\"", name, label);
		put_label(o, v[i].name);
		put(o, "\"} %" PRIu64 "\n", v[i].value);
	}
}

/* Only when a policy promotes: the families would be empty otherwise. */
static void promoted(struct out *o, const struct thps_metrics_input *in)
{
	if (!in->promote_enabled)
		return;
	family(o, "thpshrink_promoted_ranges_total", "counter",
	       "Dense ranges the daemon collapsed into THPs (MADV_COLLAPSE).");
	for (size_t i = 0; i < in->n_promoted; i++)
		cgroup_value(o, "thpshrink_promoted_ranges_total", in->promoted[i].cgroup,
			     in->promoted[i].ranges);
	family(o, "thpshrink_promoted_bytes_total", "counter",
	       "Bytes of dense memory the daemon collapsed into THPs.");
	for (size_t i = 0; i < in->n_promoted; i++)
		cgroup_value(o, "thpshrink_promoted_bytes_total", in->promoted[i].cgroup,
			     in->promoted[i].bytes);
	family(o, "thpshrink_promote_opportunity_bytes", "gauge",
	       "Dense memory still in small pages at the last pass (found, not collapsed).");
	for (size_t i = 0; i < in->n_promoted; i++)
		cgroup_value(o, "thpshrink_promote_opportunity_bytes", in->promoted[i].cgroup,
			     in->promoted[i].opportunity_bytes);
	family(o, "thpshrink_promote_failures_total", "counter",
	       "Ranges not collapsed, by reason (no_memory: ENOMEM, refused: EINVAL/EPERM, busy: "
	       "EAGAIN twice or EBUSY, opted_out: MADV_NOHUGEPAGE or THPeligible 0 under THP "
	       "always; processes: thp_disabled: PR_SET_THP_DISABLE, exec: exec() after the "
	       "finder, grew: RSS rose across a collapse; other).");
	labelled_counts(o, "thpshrink_promote_failures_total", "reason", in->promote_failures,
			in->n_promote_failures);
	family(o, "thpshrink_promote_deferred_total", "counter",
	       "Promotion work a bound left for a later pass: processes beyond the plan (plan), "
	       "processes the step's bound did not reach (pass), process walks cut at their own "
	       "bound and resumed where they stopped (process).");
	labelled_counts(o, "thpshrink_promote_deferred_total", "bound", in->promote_deferred,
			in->n_promote_deferred);
}

/* Writes the Kubernetes names a registration carries as labels after the inode ("" where
 * unknown or NULL, so every series of a family has the same labels). Named pod_namespace and
 * pod_name, not namespace and pod: Prometheus' Kubernetes discovery gives those to the target
 * (thpshrinkd's own pod) and would rename ours. Pod labels are not exported: kube-state-metrics'
 * kube_pod_labels has them, joined on namespace and pod. */
static void put_identity(struct out *o, const struct thps_metrics_container *c)
{
	put(o, ",pod_namespace=\"");
	put_label(o, c && c->k8s_namespace ? c->k8s_namespace : "");
	put(o, "\",pod_name=\"");
	put_label(o, c && c->pod ? c->pod : "");
	put(o, "\",container_name=\"");
	put_label(o, c && c->container_name ? c->container_name : "");
	put(o, "\"");
}

/* One series per registration, but at most max of them: registrations are files anyone who
 * can run a container makes, and many may name the same exported cgroup (a pod's), so the
 * cgroup bound alone does not bound this family. */
static void containers(struct out *o, const struct thps_metrics_input *in, size_t max)
{
	size_t n = 0;

	family(o, "thpshrink_container_info", "gauge",
	       "A registered container and its cgroup; always 1. Join on cgroup for the container "
	       "id; pod_namespace, pod_name and container_name where the registration tells "
	       "them.");
	for (size_t i = 0; i < in->n_containers && n < max; i++) {
		if (!cgroup_series(o, "thpshrink_container_info", in->containers[i].cgroup))
			continue;
		put_identity(o, &in->containers[i]);
		put(o, ",container=\"");
		put_label(o, in->containers[i].id);
		put(o, "\",policy=\"");
		put_label(o, in->containers[i].policy);
		put(o, "\"} 1\n");
		n++;
	}
	scalar(o, "thpshrink_metrics_containers_dropped", "gauge",
	       "Registered containers left out of thpshrink_container_info this pass (their cgroup "
	       "is not exported, or --metrics-max-cgroups series were already written).",
	       (uint64_t)(in->n_containers - n));
}

/* Kubernetes identity (k8s.h) of every exported cgroup kubelet's layout names: one info
 * series each, for joins with kube-state-metrics on pod_uid. Bounded by the cgroup selection
 * like every per-cgroup family; the labels come only from text that matched their pattern. */
static void k8s_info(struct out *o)
{
	family(
	    o, "thpshrink_cgroup_info", "gauge",
	    "Kubernetes identity of a cgroup from kubelet's cgroup layout, with the pod namespace, "
	    "pod name and container name of the registration covering it (\"\" where none "
	    "tells them); always 1. Join on cgroup, or with kube_pod_info on pod_uid = uid.");
	for (size_t i = 0; i < o->sel->n; i++) {
		const struct selected *e = &o->sel->v[i];
		struct thps_k8s_id id;

		if (!e->keep || thps_k8s_parse(e->path, &id) != 1)
			continue;
		put(o, "thpshrink_cgroup_info{cgroup=\"");
		put_label(o, e->path);
		put(o, "\",inode=\"%" PRIu64 "\"", e->ino);
		put_identity(o, e->ctr);
		put(o, ",pod_uid=\"%s\",container_id=\"%s\",qos_class=\"%s\"} 1\n", id.pod_uid,
		    id.container_id, thps_k8s_qos_name(id.qos));
	}
}

/* Only with the memo on: without it the daemon reads every folio and these would all be 0. */
static void memo(struct out *o, const struct thps_metrics_input *in)
{
	if (!in->memo_enabled)
		return;
	scalar(o, "thpshrink_scan_memo_entries", "gauge", "THPs the scan memo holds a count of.",
	       (uint64_t)(in->memo_entries));
	scalar(o, "thpshrink_scan_memo_bytes", "gauge", "Memory of the scan memo's table.",
	       (uint64_t)(in->memo_bytes));
	scalar_f(o, "thpshrink_scan_full_refresh_seconds", "gauge",
		 "Time until the refresh rotation has re-read every THP in the memo, at its "
		 "current pace.",
		 1, in->memo_full_refresh_seconds);
	if (in->memo_trust)
		scalar_f(o, "thpshrink_scan_full_verify_seconds", "gauge",
			 "Time until the identity rotation has read every memo THP's head PFN "
			 "again, at its current pace: how long a THP replaced at the same address "
			 "can keep its old count.",
			 1, in->memo_full_verify_seconds);
}

/* Everything the last pass measured; nothing before the first pass (in->scan NULL). */
static void scan_figures(struct out *o, const struct thps_scan *s)
{
	if (!s)
		return;
	scan_summary(o, s);
	cgroup_hist(o, s, false);
	cgroup_hist(o, s, true);
	cgroup_gauges(o, s);
	cgroup_sizes(o, s);
	kernel_figures(o, s);
}

int thps_metrics_format(const struct thps_metrics_input *in, char *buf, size_t size)
{
	_cleanup_(sel_free) struct selection sel = {};
	struct out o = {.buf = buf, .size = size, .sel = &sel};
	size_t max = in && in->max_cgroups ? in->max_cgroups : THPS_METRICS_MAX_CGROUPS_DEFAULT;
	int r;

	if (!in || !buf || size == 0)
		return -EINVAL;
	buf[0] = '\0';
	r = select_cgroups(in, max, &sel);
	if (r < 0)
		return r;

	build_info(&o, in);
	dry_run(&o, in);
	capabilities(&o, in);
	give_back_method(&o, in);
	cgroups_dropped(&o);
	policies(&o, in);
	passes(&o, in);
	proc_events(&o, in);
	decisions(&o, in);
	actions(&o, in);
	recollapsed(&o, in);
	promoted(&o, in);
	containers(&o, in, max);
	k8s_info(&o);
	memo(&o, in);
	scan_figures(&o, in->scan);
	if (o.overflow)
		return -ENOBUFS;
	return (int)o.len;
}

int thps_metrics_format_alloc(const struct thps_metrics_input *in, size_t max, char **ret)
{
	size_t size = MIN((size_t)16384, max);

	for (;;) {
		char *buf = malloc(size);
		int r;

		if (!buf)
			return -ENOMEM;
		r = thps_metrics_format(in, buf, size);
		if (r >= 0) {
			*ret = buf;
			return r;
		}
		free(buf);
		if (r != -ENOBUFS)
			return r;
		if (size >= max)
			return -ENOBUFS;
		size = size * 4 > max ? max : size * 4;
	}
}
