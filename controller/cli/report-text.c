/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The text report. Bucket rows are labelled with the utilized-subpage ranges that the RFC's
 * bucket formula really produces (0-51, 52-102, ...), not the RFC's printed labels. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "macro.h"
#include "report-text.h"
#include "text.h"
#include "units.h"

static void print_bytes(FILE *f, const char *label, uint64_t bytes)
{
	char h[32];

	thps_format_bytes(h, sizeof(h), bytes);
	fprintf(f, "  %-24s %s (%" PRIu64 " bytes)\n", label, h, bytes);
}

/* The RFC's two columns per bucket, for folios of nr subpages; kernel, when not NULL, adds the
 * kernel's own two. Buckets that no utilization of so small a folio reaches are left out. */
static void print_hist(FILE *f, uint32_t nr, const struct thps_hist *h,
		       const struct thps_hist *kernel, bool pmd)
{
	fprintf(f, "  %-18s %10s %14s", "utilized subpages", pmd ? "THPs" : "folios",
		"zero subpages");
	if (kernel)
		fprintf(f, "  | %12s %14s", "kernel THPs", "kernel zero");
	fputc('\n', f);
	for (unsigned b = 0; b < THPS_BUCKETS; b++) {
		unsigned lo, hi;
		char label[32];

		thps_bucket_range_n(nr, b, &lo, &hi);
		if (lo > hi)
			continue;
		snprintf(label, sizeof(label), "%u-%u", lo, hi);
		fprintf(f, "  %-18s %10" PRIu64 " %14" PRIu64, label, h->thps[b],
			h->zero_subpages[b]);
		if (kernel)
			fprintf(f, "  | %12" PRIu64 " %14" PRIu64, kernel->thps[b],
				kernel->zero_subpages[b]);
		fputc('\n', f);
	}
}

/* One table per folio size present: the PMD size as ever ("THPs"), then each smaller size
 * (mTHP) under a title line. The PMD table is shown alone, untitled, when nothing else is. */
static void print_size_tables(FILE *f, const struct thps_geometry *g,
			      const struct thps_cgroup_stats *c, const struct thps_hist *kernel,
			      unsigned cut)
{
	struct thps_size_figures z[THPS_MAX_ORDER];
	size_t n = thps_cgroup_sizes(c, g, cut, false, z);

	if (n == 0 || (n == 1 && z[0].subpages == g->subpages) || kernel) {
		print_hist(f, g->subpages, &c->hist, kernel, true);
		if (n <= 1 && (n == 0 || z[0].subpages == g->subpages))
			return;
	}
	for (size_t i = 0; i < n; i++) {
		char sz[32], w[32];

		if (kernel && z[i].subpages == g->subpages)
			continue;
		thps_format_folio_size(sz, sizeof(sz), z[i].size_bytes);
		thps_format_bytes(w, sizeof(w), z[i].waste_bytes);
		fprintf(f,
			"  %s %s (%u subpages): %" PRIu64 " folios, %" PRIu64
			" low-utilization, waste %s (%" PRIu64 " bytes)",
			sz, z[i].subpages == g->subpages ? "THPs" : "folios", z[i].subpages,
			z[i].folios, z[i].lowutil_folios, w, z[i].waste_bytes);
		if (z[i].partial_folios)
			fprintf(f, ", %" PRIu64 " partially mapped", z[i].partial_folios);
		fputc('\n', f);
		if (z[i].folios)
			print_hist(f, z[i].subpages, z[i].hist, NULL, z[i].subpages == g->subpages);
	}
}

static void print_figures(FILE *f, const struct thps_geometry *g, const struct thps_cgroup_stats *c,
			  unsigned cut)
{
	struct thps_size_figures z[THPS_MAX_ORDER];
	size_t n = thps_cgroup_sizes(c, g, cut, true, z);
	unsigned lo, hi, cut_lo, cut_hi;
	uint64_t smaller = 0;

	thps_bucket_range(g, 0, &lo, &hi);
	thps_bucket_range(g, MIN(cut, THPS_BUCKETS - 1), &cut_lo, &cut_hi);
	for (size_t i = 0; i < n; i++)
		if (z[i].subpages != g->subpages)
			smaller += z[i].folios;
	fprintf(f, "  %-24s %" PRIu64 "\n", "THPs", thps_hist_thps(&c->hist));
	if (smaller)
		fprintf(f, "  %-24s %" PRIu64 "\n", "smaller folios (mTHP)", smaller);
	fprintf(f, "  %-24s %" PRIu64 " (utilized %u-%u subpages", "low-utilization THPs",
		c->lowutil_thps, lo, cut_hi);
	for (size_t i = 0; i < n && smaller; i++) {
		char sz[32];

		if (z[i].subpages == g->subpages || !z[i].folios)
			continue;
		thps_bucket_range_n(z[i].subpages, MIN(cut, THPS_BUCKETS - 1), &cut_lo, &cut_hi);
		thps_format_folio_size(sz, sizeof(sz), z[i].size_bytes);
		fprintf(f, "; %s: 0-%u of %u", sz, cut_hi, z[i].subpages);
	}
	fputs(")\n", f);
	print_bytes(f, "waste (zero subpages)", c->waste_bytes);
	fprintf(f, "  %-24s %" PRIu64 "\n", "partially mapped THPs", c->partial_thps);
	print_bytes(f, "partial unmapped", c->partial_unmapped_bytes);
	if (c->have_dense)
		print_bytes(f, "dense in small pages", c->dense_small_bytes);
}

/* Cgroup names are chosen by whoever creates them: keep control bytes and broken UTF-8 away
 * from the operator's terminal. */
static void print_name(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("(unknown)", f);
		return;
	}
	while (*p) {
		size_t n = thps_utf8_len(p, SIZE_MAX);

		if (n == 0 || *p < 0x20 || *p == 0x7f || *p == '\\') {
			fprintf(f, "\\x%02x", *p);
			p++;
		} else {
			fwrite(p, 1, n, f);
			p += n;
		}
	}
}

static void print_vmstat(FILE *f, const struct thps_scan *scan)
{
	const struct thps_vmstat *v = &scan->vmstat;
	bool any = false;

	fputs("kernel counters:", f);
	for (size_t i = 0; i < thps_n_vmstat_fields; i++)
		if (thps_vmstat_value(v, i) != UINT64_MAX) {
			fprintf(f, "%s %s %" PRIu64, any ? "," : "", thps_vmstat_fields[i].name,
				thps_vmstat_value(v, i));
			any = true;
		}
	fputs(any ? "\n" : " none\n", f);
}

static void print_cgroup(FILE *f, const struct thps_scan *scan, const struct thps_cgroup_stats *c,
			 unsigned cut)
{
	fputs("cgroup ", f);
	print_name(f, c->path);
	fprintf(f, " (inode %" PRIu64 ")\n", c->ino);
	print_size_tables(f, &scan->geom, c, NULL, cut);
	print_figures(f, &scan->geom, c, cut);
	if (c->have_memstat) {
		print_bytes(f, "memory.current", c->memory_current);
		print_bytes(f, "anon_thp", c->anon_thp_bytes);
	}
	fputc('\n', f);
}

static void print_total(FILE *f, const struct thps_scan *scan, unsigned cut)
{
	fprintf(f, "machine total%s\n",
		scan->have_kernel_hist ? " (beside it: the kernel's thp_utilization, machine-wide)"
				       : "");
	print_size_tables(f, &scan->geom, &scan->total,
			  scan->have_kernel_hist ? &scan->kernel_hist : NULL, cut);
	print_figures(f, &scan->geom, &scan->total, cut);
	if (scan->have_kernel_hist)
		fprintf(f, "  %-24s last scan at %.2f s, took %.2f s\n", "kernel thp_utilization",
			scan->kernel_last_scan_time, scan->kernel_last_scan_duration);
	fputc('\n', f);
}

static void print_none(FILE *f, const struct thps_scan *scan, const struct thps_report_opts *o)
{
	const char *hint;
	const char *mode = o->thp_mode ? o->thp_mode : "unknown";
	bool mthp = o->mthp_modes && *o->mthp_modes;

	if (!strcmp(mode, "never") && mthp)
		hint = "no PMD-size THPs; the smaller sizes follow their own modes";
	else if (!strcmp(mode, "never"))
		hint = "the kernel allocates no THPs at all";
	else if (!strcmp(mode, "madvise"))
		hint = "only memory a program madvise(MADV_HUGEPAGE)s gets THPs";
	else if (!strcmp(mode, "always"))
		hint = "every large enough anonymous mapping may get THPs";
	else
		hint = "could not read transparent_hugepage/enabled";
	if (!scan->summary.method) {
		fputs("no per-cgroup THP figures: the scanner source did not run", f);
		if (scan->have_kernel_hist)
			fputs(" (the kernel's machine-wide histogram follows)", f);
		fputs("\n\n", f);
		return;
	}
	fprintf(f, "no anonymous THPs%s found in %" PRIu64 " process%s",
		mthp ? " nor smaller large folios (mTHP)" : "", scan->summary.procs_scanned,
		scan->summary.procs_scanned == 1 ? "" : "es");
	if (o->pid > 0)
		fprintf(f, " (pid %d)", (int)o->pid);
	if (o->cgroup) {
		fputs(" (cgroup ", f);
		print_name(f, o->cgroup);
		fputc(')', f);
	}
	fprintf(f, "; THP mode is [%s]: %s", mode, hint);
	if (mthp)
		fprintf(f, "; mTHP sizes: %s", o->mthp_modes);
	fputs("\n\n", f);
}

static void print_summary(FILE *f, const struct thps_scan *scan)
{
	const struct thps_scan_summary *s = &scan->summary;
	char h[32];

	thps_format_bytes(h, sizeof(h), s->bytes_read);
	fprintf(f,
		"scan: %" PRIu64 " process%s scanned, %" PRIu64 " skipped; %" PRIu64 " THPs read"
		" (%" PRIu64 " further mappings of shared THPs); %s read (%" PRIu64 " bytes);"
		" %.3f s wall, %.3f s CPU, %.3f s throttled; method %s\n",
		s->procs_scanned, s->procs_scanned == 1 ? "" : "es", s->procs_skipped,
		s->thps_scanned, s->thps_shared, h, s->bytes_read, s->wall_ns / 1e9,
		s->cpu_ns / 1e9, s->throttled_ns / 1e9, s->method ? s->method : "none");
	if (s->untracked_bytes) {
		thps_format_bytes(h, sizeof(h), s->untracked_bytes);
		fprintf(f,
			"scan: %s of PTE-mapped large folios left uncounted: the scan's table of "
			"such folios (%" PRIu32 ") was full\n",
			h, THPS_SCAN_MAX_PTE_FOLIOS);
	}
}

int thps_report_text_sources(FILE *f, const struct thps_source_status *st, size_t n)
{
	fputs("sources:", f);
	if (n == 0)
		fputs(" none", f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s %s: ", i ? ";" : "", st[i].name);
		if (st[i].usable)
			fputs("usable", f);
		else
			fprintf(f, "not usable: %s", st[i].reason);
	}
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}

int thps_report_text(FILE *f, const struct thps_scan *scan, const struct thps_report_opts *opts)
{
	_cleanup_free_ const struct thps_cgroup_stats **order = NULL;
	ssize_t n;

	n = thps_report_order(scan, &order);
	if (n < 0)
		return (int)n;
	if (n == 0)
		print_none(f, scan, opts);
	for (ssize_t i = 0; i < n; i++)
		print_cgroup(f, scan, order[i], opts->lowutil_max_bucket);
	if (n > 0 || scan->have_kernel_hist)
		print_total(f, scan, opts->lowutil_max_bucket);
	if (scan->have_vmstat)
		print_vmstat(f, scan);
	print_summary(f, scan);
	thps_report_text_sources(f, opts->sources, opts->n_sources);
	return ferror(f) ? -EIO : 0;
}
