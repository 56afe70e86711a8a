/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The scanner's record decoders: /proc/PID/maps lines, /proc/PID/pagemap entries (the
 * fallback walk) and /proc/kpageflags (the folio search), fed from a fake proc root that holds
 * the input. Layout: maps text up to the first NUL byte; the rest is both the pagemap and the
 * kpageflags file. Invariants: every THP the walk reports is THP-aligned inside a VMA, and a
 * folio found for a PFN contains it and fits in one aligned THP-sized block. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "kpageflags.h"
#include "maps.h"
#include "pagemap.h"

static char root[64];

static void put(const char *rel, const uint8_t *p, size_t n)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n))
		abort();
	close(fd);
}

static void rmroot(void)
{
	static const char *const files[] = { "1/maps", "1/pagemap", "kpageflags", "1" };
	char path[128];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, files[i]);
		(void)(i == 3 ? rmdir(path) : unlink(path));
	}
	rmdir(root);
}

struct walk {
	struct thps_kpage *k;
	struct thps_geometry g;
	unsigned n;
};

static void check_folio(struct walk *w, uint64_t pfn)
{
	uint64_t head;
	uint32_t pages;

	if (thps_kpage_folio(w->k, pfn, &head, &pages) == 1) {
		if (pfn < head || pfn - head >= pages || pages > w->g.subpages ||
		    head / w->g.subpages != pfn / w->g.subpages)
			abort();
	}
}

static int on_thp(void *ud, uint64_t addr, uint64_t head_pfn)
{
	struct walk *w = ud;

	if (addr % w->g.thp_size || head_pfn == 0)
		abort();
	check_folio(w, head_pfn);
	return ++w->n > 4096 ? -E2BIG : 0;
}

static int on_page(void *ud, uint64_t addr, uint64_t pfn)
{
	struct walk *w = ud;

	if (addr % w->g.page_size || pfn == 0)
		abort();
	check_folio(w, pfn);
	return ++w->n > 4096 ? -E2BIG : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t mlen = nul ? (size_t)(nul - data) : size;
	const uint8_t *bin = nul ? nul + 1 : data + size;
	size_t blen = size - (size_t)(bin - data);
	struct thps_ctx ctx = { 0 };
	struct thps_pm_walker pw;
	struct thps_kpage k;
	struct walk w = { .k = &k };
	struct thps_pm_visitor v = { .thp = on_thp, .page = on_page };
	struct thps_vma vma;
	char path[128];
	char *text;

	if (!root[0]) {
		snprintf(root, sizeof(root), "/tmp/fuzz-pagemap.%d", (int)getpid());
		if (mkdir(root, 0700) < 0 && errno != EEXIST)
			abort();
		snprintf(path, sizeof(path), "%s/1", root);
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			abort();
		atexit(rmroot);
	}
	/* maps lines on their own */
	text = fuzz_strndup(data, mlen);
	for (char *l = text, *e; l && *l; l = e ? e + 1 : NULL) {
		e = strchr(l, '\n');
		if (e)
			*e = 0;
		(void)thps_maps_parse_line(l, &vma);
	}
	free(text);
	/* pagemap windows on their own */
	for (size_t n = 1; n <= 8 && n * 8 <= blen; n *= 2) {
		uint64_t e[8];
		memcpy(e, bin, n * 8);
		(void)thps_pm_entries_whole_thp(e, n);
	}

	put("1/maps", data, mlen);
	put("1/pagemap", bin, blen);
	put("kpageflags", bin, blen);
	snprintf(ctx.proc_root, sizeof(ctx.proc_root), "%s", root);
	/* small pages make small THPs: the fuzzer reaches whole-THP windows with 8 entries */
	w.g = (struct thps_geometry){ .page_size = 4096, .thp_size = 4096 * 8, .subpages = 8 };
	if (thps_kpage_open(&ctx, w.g.subpages, &k) < 0)
		abort();
	if (thps_pm_walker_init(&pw, &w.g, false) < 0)
		abort();
	pw.max_vma_fallback = 64 * w.g.thp_size; /* bounds the walk of a huge fuzzed VMA */
	(void)thps_pm_walk(&pw, &ctx, 1, &v, &w);
	for (uint64_t pfn = 0; pfn < blen / 8 && pfn < 64; pfn++)
		check_folio(&w, pfn);
	thps_pm_walker_done(&pw);
	thps_kpage_close(&k);
	return 0;
}
