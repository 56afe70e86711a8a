/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reclaim: asks the kernel to reclaim from one cgroup through memory.reclaim (cgroup v2). The
 * kernel's shrinkers do the splitting (upstream's underused-THP shrinker, or the RFC's), so this
 * is the gentle way: the kernel picks the THPs. The write often fails with EAGAIN even when it
 * freed what was asked, so the answer is memory.current before and after, not the write. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "actuator.h"
#include "fileio.h"

static int reclaim_file(const struct thps_ctx *ctx, const char *cgroup, char *buf, size_t size)
{
	return thps_path(buf, size, ctx->cgroup_root, "%s/memory.reclaim", cgroup);
}

static int reclaim_probe(const struct thps_ctx *ctx, char *why, size_t size)
{
	char path[PATH_MAX];
	int r;

	if (ctx->cgroup_version != 2) {
		snprintf(why, size,
			 "needs the cgroup v2 memory controller (memory.reclaim); cgroup v1 is "
			 "read-only for thpshrink");
		return 0;
	}
	r = reclaim_file(ctx, "/", path, sizeof(path));
	if (r < 0)
		return r;
	/* The root has no memory.reclaim before 6.x; its children are what we act on anyway. */
	snprintf(why, size, "memory.reclaim of cgroup v2");
	return 1;
}

static int reclaim_act(const struct thps_ctx *ctx, const struct thps_act_request *req,
		       struct thps_act_result *res)
{
	char path[PATH_MAX], num[32], why[384];
	int r, frees;

	memset(res, 0, sizeof(*res));
	res->actuator = "reclaim";
	if (ctx->cgroup_version != 2) {
		snprintf(res->note, sizeof(res->note),
			 "refused: cgroup v1 has no memory.reclaim; "
			 "thpshrink only acts on cgroup v2");
		return 0;
	}
	r = reclaim_file(ctx, req->cgroup, path, sizeof(path));
	if (r < 0)
		return r;
	if (access(path, W_OK) < 0) {
		snprintf(res->note, sizeof(res->note),
			 "refused: '%.200s': %s (memory.reclaim needs Linux >= 5.19 "
			 "and the memory controller enabled for this cgroup)",
			 path, strerror(errno));
		return 0;
	}
	if (req->amount_bytes == 0) {
		snprintf(res->note, sizeof(res->note),
			 "nothing to reclaim: no low-utilization waste found");
		return 0;
	}
	frees = thps_reclaim_frees_zero_subpages(ctx, req->geom, why, sizeof(why));
	if (frees < 0)
		return frees;
	r = thps_act_snapshot(ctx, req->cgroup, &res->before);
	if (r < 0)
		return r;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)req->amount_bytes);
	res->asked_bytes = req->amount_bytes;
	res->write_status = write_file_string(path, num);
	if (res->write_status < 0 && res->write_status != -EAGAIN)
		return res->write_status;
	res->acted = true;
	r = thps_act_snapshot(ctx, req->cgroup, &res->after);
	if (r < 0)
		return r;
	if (!frees)
		snprintf(res->note, sizeof(res->note), "%s", why);
	else if (res->write_status == -EAGAIN)
		snprintf(res->note, sizeof(res->note),
			 "memory.reclaim answered EAGAIN (it does so also when "
			 "it freed memory): measured by memory.current");
	return 0;
}

const struct thps_actuator_ops thps_actuator_reclaim = {
    .name = "reclaim",
    .description = "write the cgroup's memory.reclaim; the kernel's THP shrinker splits",
    .probe = reclaim_probe,
    .act = reclaim_act,
};
