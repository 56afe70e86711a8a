/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The JSON report, written by hand: small, deterministic, no allocation. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "k8s.h"
#include "macro.h"
#include "registrations.h"
#include "text.h"
#include "report-json.h"

void thps_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*p) {
		size_t n = thps_utf8_len(p, SIZE_MAX);

		if (n == 0) {
			fputs("\\ufffd", f);
			p++;
		} else if (*p == '"' || *p == '\\') {
			fputc('\\', f);
			fputc(*p++, f);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p++);
		} else {
			fwrite(p, 1, n, f);
			p += n;
		}
	}
	fputc('"', f);
}

static void json_u64_or_null(FILE *f, bool have, uint64_t v)
{
	if (have)
		fprintf(f, "%" PRIu64, v);
	else
		fputs("null", f);
}

static void json_buckets_n(FILE *f, uint32_t nr, const struct thps_hist *h, const char *ind)
{
	fputs("[\n", f);
	for (unsigned b = 0; b < THPS_BUCKETS; b++) {
		unsigned lo, hi;

		thps_bucket_range_n(nr, b, &lo, &hi);
		fprintf(f,
			"%s  {\"bucket\": %u, \"lo\": %u, \"hi\": %u, \"thps\": %" PRIu64
			", \"zero_subpages\": %" PRIu64 "}%s\n",
			ind, b, lo, hi, h->thps[b], h->zero_subpages[b],
			b + 1 < THPS_BUCKETS ? "," : "");
	}
	fprintf(f, "%s]", ind);
}

static void json_buckets(FILE *f, const struct thps_geometry *g, const struct thps_hist *h,
			 const char *ind)
{
	json_buckets_n(f, g->subpages, h, ind);
}

/* "sizes": one entry per folio size present (PMD THPs and mTHPs), smallest first. A bucket
 * that no utilization of so small a folio reaches has lo > hi and stays empty. */
static void json_sizes(FILE *f, const struct thps_scan *scan, const struct thps_cgroup_stats *c,
		       unsigned cut, const char *ind)
{
	struct thps_size_figures z[THPS_MAX_ORDER];
	size_t n = thps_cgroup_sizes(c, &scan->geom, cut, false, z);
	char in2[32];

	snprintf(in2, sizeof(in2), "%s    ", ind);
	fprintf(f, "%s\"sizes\": [%s", ind, n ? "\n" : "");
	for (size_t i = 0; i < n; i++) {
		fprintf(f,
			"%s  {\n%s\"size\": %" PRIu64 ",\n%s\"subpages\": %" PRIu32
			",\n%s\"folios\": %" PRIu64 ",\n%s\"zero_subpages\": %" PRIu64
			",\n%s\"lowutil_folios\": %" PRIu64 ",\n%s\"waste_bytes\": %" PRIu64
			",\n%s\"partial_folios\": %" PRIu64
			",\n%s\"partial_unmapped_bytes\": %" PRIu64 ",\n%s\"buckets\": ",
			ind, in2, z[i].size_bytes, in2, z[i].subpages, in2, z[i].folios, in2,
			z[i].zero_subpages, in2, z[i].lowutil_folios, in2, z[i].waste_bytes, in2,
			z[i].partial_folios, in2, z[i].partial_unmapped_bytes, in2);
		json_buckets_n(f, z[i].subpages, z[i].hist, in2);
		fprintf(f, "\n%s  }%s\n", ind, i + 1 < n ? "," : "");
	}
	fprintf(f, "%s]", n ? ind : "");
}

/* The figures a cgroup and the total share. ind is the indent of the object's members. */
static void json_figures(FILE *f, const struct thps_scan *scan, const struct thps_cgroup_stats *c,
			 unsigned cut, const char *ind)
{
	fprintf(f, "%s\"thps\": %" PRIu64 ",\n", ind, thps_hist_thps(&c->hist));
	fprintf(f, "%s\"zero_subpages\": %" PRIu64 ",\n", ind, thps_hist_zero_subpages(&c->hist));
	fprintf(f, "%s\"lowutil_thps\": %" PRIu64 ",\n", ind, c->lowutil_thps);
	fprintf(f, "%s\"waste_bytes\": %" PRIu64 ",\n", ind, c->waste_bytes);
	fprintf(f, "%s\"partial_thps\": %" PRIu64 ",\n", ind, c->partial_thps);
	fprintf(f, "%s\"partial_unmapped_bytes\": %" PRIu64 ",\n", ind, c->partial_unmapped_bytes);
	if (c->have_dense)
		fprintf(f, "%s\"dense_small_bytes\": %" PRIu64 ",\n", ind, c->dense_small_bytes);
	fprintf(f, "%s\"buckets\": ", ind);
	json_buckets(f, &scan->geom, &c->hist, ind);
	fputs(",\n", f);
	json_sizes(f, scan, c, cut, ind);
}

/* "kubernetes": {...}, for a cgroup kubelet's layout names (k8s.h); nothing otherwise. The
 * fields are matched patterns of hex and dashes: nothing to escape. */
static void json_k8s(FILE *f, const char *path, const char *ind)
{
	struct thps_k8s_id id;

	if (!path || thps_k8s_parse(path, &id) != 1)
		return;
	fprintf(f, "%s\"kubernetes\": {\"pod_uid\": \"%s\", \"container_id\": ", ind, id.pod_uid);
	if (id.container_id[0])
		fprintf(f, "\"%s\"", id.container_id);
	else
		fputs("null", f);
	fprintf(f, ", \"qos_class\": \"%s\"},\n", thps_k8s_qos_name(id.qos));
}

/* "identity": {...}, the names of the registration covering the cgroup (registrations.h:
 * validated Kubernetes names, at most 16 labels); nothing when none tells any. */
static void json_identity(FILE *f, const struct thps_registration_list *regs, const char *path,
			  const char *ind)
{
	const struct thps_registration *g = regs ? thps_registration_covering(regs, path) : NULL;
	const char *sep = "";

	if (!g || (!g->k8s_namespace[0] && !g->pod[0] && !g->container[0] && !g->n_labels))
		return;
	fprintf(f, "%s\"identity\": {", ind);
	if (g->k8s_namespace[0]) {
		fputs("\"namespace\": ", f);
		thps_json_string(f, g->k8s_namespace);
		sep = ", ";
	}
	if (g->pod[0]) {
		fprintf(f, "%s\"pod\": ", sep);
		thps_json_string(f, g->pod);
		sep = ", ";
	}
	if (g->container[0]) {
		fprintf(f, "%s\"container_name\": ", sep);
		thps_json_string(f, g->container);
		sep = ", ";
	}
	if (g->n_labels) {
		fprintf(f, "%s\"labels\": {", sep);
		for (size_t i = 0; i < g->n_labels && i < THPS_REGISTRATION_LABELS_MAX; i++) {
			fputs(i ? ", " : "", f);
			thps_json_string(f, g->labels[i].key);
			fputs(": ", f);
			thps_json_string(f, g->labels[i].value);
		}
		fputs("}", f);
	}
	fputs("},\n", f);
}

static void json_cgroup(FILE *f, const struct thps_scan *scan, const struct thps_cgroup_stats *c,
			const struct thps_report_opts *opts, bool last)
{
	unsigned cut = opts->lowutil_max_bucket;

	fputs("    {\n      \"path\": ", f);
	thps_json_string(f, c->path);
	fprintf(f, ",\n      \"ino\": %" PRIu64 ",\n", c->ino);
	json_k8s(f, c->path, "      ");
	json_identity(f, opts->regs, c->path, "      ");
	fputs("      \"memory_current\": ", f);
	json_u64_or_null(f, c->have_memstat, c->memory_current);
	fputs(",\n      \"anon_thp_bytes\": ", f);
	json_u64_or_null(f, c->have_memstat, c->anon_thp_bytes);
	fputs(",\n", f);
	json_figures(f, scan, c, cut, "      ");
	fprintf(f, "\n    }%s\n", last ? "" : ",");
}

/* The kernel's file is parsed text: keep a NaN or inf out of the JSON. */
static void json_seconds(FILE *f, double v)
{
	if (isfinite(v) && v >= 0)
		fprintf(f, "%.3f", v);
	else
		fputs("null", f);
}

static void json_kernel(FILE *f, const struct thps_scan *scan)
{
	if (!scan->have_kernel_hist) {
		fputs("null", f);
		return;
	}
	fputs("{\n    \"last_scan_time\": ", f);
	json_seconds(f, scan->kernel_last_scan_time);
	fputs(",\n    \"last_scan_duration\": ", f);
	json_seconds(f, scan->kernel_last_scan_duration);
	fputs(",\n", f);
	fprintf(
	    f, "    \"thps\": %" PRIu64 ",\n    \"zero_subpages\": %" PRIu64 ",\n    \"buckets\": ",
	    thps_hist_thps(&scan->kernel_hist), thps_hist_zero_subpages(&scan->kernel_hist));
	json_buckets(f, &scan->geom, &scan->kernel_hist, "    ");
	fputs("\n  }", f);
}

static void json_vmstat(FILE *f, const struct thps_scan *scan)
{
	const struct thps_vmstat *v = &scan->vmstat;

	if (!scan->have_vmstat) {
		fputs("null", f);
		return;
	}
	fputs("{\n", f);
	for (size_t i = 0; i < thps_n_vmstat_fields; i++) {
		uint64_t value = thps_vmstat_value(v, i);

		fprintf(f, "    \"%s\": ", thps_vmstat_fields[i].name);
		json_u64_or_null(f, value != UINT64_MAX, value);
		fputs(i + 1 < thps_n_vmstat_fields ? ",\n" : "\n", f);
	}
	fputs("  }", f);
}

static void json_summary(FILE *f, const struct thps_scan *scan)
{
	const struct thps_scan_summary *s = &scan->summary;

	fprintf(f,
		"{\n    \"procs_scanned\": %" PRIu64 ",\n    \"procs_skipped\": %" PRIu64
		",\n    \"thps_scanned\": %" PRIu64 ",\n    \"thps_shared\": %" PRIu64
		",\n    \"bytes_read\": %" PRIu64 ",\n    \"untracked_bytes\": %" PRIu64
		",\n    \"wall_ns\": %" PRIu64 ",\n    \"cpu_ns\": %" PRIu64
		",\n    \"throttled_ns\": %" PRIu64 ",\n    \"method\": ",
		s->procs_scanned, s->procs_skipped, s->thps_scanned, s->thps_shared, s->bytes_read,
		s->untracked_bytes, s->wall_ns, s->cpu_ns, s->throttled_ns);
	thps_json_string(f, s->method);
	fputs("\n  }", f);
}

static void json_sources(FILE *f, const struct thps_report_opts *o)
{
	fputs("[", f);
	for (size_t i = 0; i < o->n_sources; i++) {
		fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
		thps_json_string(f, o->sources[i].name);
		fprintf(f,
			", \"usable\": %s, \"reason\": ", o->sources[i].usable ? "true" : "false");
		thps_json_string(f, o->sources[i].usable ? NULL : o->sources[i].reason);
		fputs("}", f);
	}
	fputs(o->n_sources ? "\n  ]" : "]", f);
}

int thps_report_json(FILE *f, const struct thps_scan *scan, const struct thps_report_opts *opts)
{
	_cleanup_free_ const struct thps_cgroup_stats **order = NULL;
	ssize_t n;

	n = thps_report_order(scan, &order);
	if (n < 0)
		return (int)n;
	fprintf(f, "{\n  \"schema_version\": %d,\n", THPS_REPORT_SCHEMA_VERSION);
	fprintf(f,
		"  \"geometry\": {\"page_size\": %" PRIu32 ", \"thp_size\": %" PRIu64
		", \"subpages\": %" PRIu32 "},\n",
		scan->geom.page_size, scan->geom.thp_size, scan->geom.subpages);
	fputs("  \"thp_mode\": ", f);
	thps_json_string(f, opts->thp_mode);
	fputs(",\n  \"filter\": {\"pid\": ", f);
	json_u64_or_null(f, opts->pid > 0, (uint64_t)opts->pid);
	fputs(", \"cgroup\": ", f);
	thps_json_string(f, opts->cgroup);
	fprintf(f, "},\n  \"lowutil_max_bucket\": %u,\n", opts->lowutil_max_bucket);
	fputs(n ? "  \"cgroups\": [\n" : "  \"cgroups\": [],\n", f);
	for (ssize_t i = 0; i < n; i++)
		json_cgroup(f, scan, order[i], opts, i + 1 == n);
	if (n)
		fputs("  ],\n", f);
	fputs("  \"total\": {\n", f);
	json_figures(f, scan, &scan->total, opts->lowutil_max_bucket, "    ");
	fputs("\n  },\n  \"kernel_hist\": ", f);
	json_kernel(f, scan);
	fputs(",\n  \"vmstat\": ", f);
	json_vmstat(f, scan);
	fputs(",\n  \"summary\": ", f);
	json_summary(f, scan);
	fputs(",\n  \"sources\": ", f);
	json_sources(f, opts);
	fputs("\n}\n", f);
	return ferror(f) ? -EIO : 0;
}
