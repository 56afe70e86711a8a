/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kpageflags.h"
#include "macro.h"

int thps_kpage_open(const struct thps_ctx *ctx, uint32_t block_pages, struct thps_kpage *ret)
{
	char path[PATH_MAX];
	_cleanup_close_ int ffd = -1;
	int cfd, r;
	uint64_t *block;

	if (block_pages == 0 || block_pages > 65536)
		return -EINVAL;
	r = thps_path(path, sizeof(path), ctx->proc_root, "kpageflags");
	if (r < 0)
		return r;
	ffd = open(path, O_RDONLY | O_CLOEXEC);
	if (ffd < 0)
		return negative_errno();
	r = thps_path(path, sizeof(path), ctx->proc_root, "kpagecgroup");
	if (r < 0)
		return r;
	cfd = open(path, O_RDONLY | O_CLOEXEC);
	if (cfd < 0 && errno != ENOENT)
		return negative_errno();
	block = calloc(block_pages, sizeof(uint64_t));
	if (!block) {
		if (cfd >= 0)
			close(cfd);
		return -ENOMEM;
	}
	*ret = (struct thps_kpage){
	    .flags_fd = TAKE_FD(ffd),
	    .cgroup_fd = cfd,
	    .block_pfn = UINT64_MAX,
	    .block_len = block_pages,
	    .block = block,
	};
	return 0;
}

void thps_kpage_close(struct thps_kpage *k)
{
	if (k->flags_fd >= 0)
		close(k->flags_fd);
	if (k->cgroup_fd >= 0)
		close(k->cgroup_fd);
	free(k->block);
	k->flags_fd = k->cgroup_fd = -1;
	k->block = NULL;
}

static int read_u64s(int fd, uint64_t pfn, uint64_t *v, size_t n)
{
	ssize_t got;

	if (pfn > (UINT64_MAX >> 4))
		return -ENXIO;
	got = pread(fd, v, n * sizeof(uint64_t), (off_t)(pfn * sizeof(uint64_t)));
	if (got < 0)
		return negative_errno();
	if ((size_t)got != n * sizeof(uint64_t))
		return -ENXIO;
	return 0;
}

int thps_kpage_flags(const struct thps_kpage *k, uint64_t pfn, uint64_t *ret)
{
	return read_u64s(k->flags_fd, pfn, ret, 1);
}

int thps_kpage_cgroup(const struct thps_kpage *k, uint64_t pfn, uint64_t *ret)
{
	if (k->cgroup_fd < 0) {
		*ret = 0;
		return 0;
	}
	return read_u64s(k->cgroup_fd, pfn, ret, 1);
}

int thps_kpage_folio(struct thps_kpage *k, uint64_t pfn, uint64_t *ret_head, uint32_t *ret_pages)
{
	uint64_t base = pfn - pfn % k->block_len;
	uint32_t i = pfn - base, h, n;
	int r;

	if (k->block_pfn != base) {
		uint64_t f;

		/* most PTE-mapped pages are small: 8 bytes decide before the block's 4 KiB */
		r = read_u64s(k->flags_fd, pfn, &f, 1);
		if (r == -ENXIO)
			return 0;
		if (r < 0)
			return r;
		if (!thps_kpf_is_anon_thp_page(f))
			return 0;
		k->block_pfn = UINT64_MAX;
		r = read_u64s(k->flags_fd, base, k->block, k->block_len);
		if (r == -ENXIO)
			return 0; /* a block cut by the end of PFN space holds no THP */
		if (r < 0)
			return r;
		k->block_pfn = base;
	}
	if (!thps_kpf_is_anon_thp_page(k->block[i]))
		return 0;
	for (h = i; !(k->block[h] & THPS_KPF(COMPOUND_HEAD)); h--)
		if (h == 0 || !(k->block[h] & THPS_KPF(COMPOUND_TAIL)))
			return 0; /* head outside the block: not a THP-sized folio */
	if (!thps_kpf_is_anon_thp_head(k->block[h]))
		return 0;
	for (n = 1; h + n < k->block_len && (k->block[h + n] & THPS_KPF(COMPOUND_TAIL)) &&
		    !(k->block[h + n] & THPS_KPF(COMPOUND_HEAD));
	     n++)
		;
	*ret_head = base + h;
	*ret_pages = n;
	return 1;
}
