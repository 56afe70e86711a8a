/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the core: histogram math at every bucket edge, geometry, file helpers, the
 * text sanitizer every output shares. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "context.h"
#include "fileio.h"
#include "k8s.h"
#include "macro.h"
#include "pmadvise.h"
#include "proc.h"
#include "probe-scratch.h"
#include "scan.h"
#include "text.h"
#include "thp.h"
#include "test-main.h"

START_TEST(test_bucket_edges)
{
	struct thps_geometry g;

	thps_geometry_default(&g);
	/* bucket = min(u*10/512, 9): the RFC's formula, not its labels */
	ck_assert_uint_eq(thps_bucket(&g, 0), 0);
	ck_assert_uint_eq(thps_bucket(&g, 51), 0);
	ck_assert_uint_eq(thps_bucket(&g, 52), 1);
	ck_assert_uint_eq(thps_bucket(&g, 102), 1);
	ck_assert_uint_eq(thps_bucket(&g, 103), 2);
	ck_assert_uint_eq(thps_bucket(&g, 460), 8);
	ck_assert_uint_eq(thps_bucket(&g, 461), 9);
	ck_assert_uint_eq(thps_bucket(&g, 511), 9);
	ck_assert_uint_eq(thps_bucket(&g, 512), 9);
}
END_TEST

START_TEST(test_bucket_ranges_match_formula)
{
	struct thps_geometry g;
	unsigned lo, hi, expect_lo = 0;

	thps_geometry_default(&g);
	for (unsigned b = 0; b < THPS_BUCKETS; b++) {
		thps_bucket_range(&g, b, &lo, &hi);
		ck_assert_uint_eq(lo, expect_lo);
		ck_assert_uint_eq(thps_bucket(&g, lo), b);
		ck_assert_uint_eq(thps_bucket(&g, hi), b);
		if (b < THPS_BUCKETS - 1)
			ck_assert_uint_eq(thps_bucket(&g, hi + 1), b + 1);
		expect_lo = hi + 1;
	}
	thps_bucket_range(&g, 0, &lo, &hi);
	ck_assert_uint_eq(hi, 51);
	thps_bucket_range(&g, 9, &lo, &hi);
	ck_assert_uint_eq(lo, 461);
	ck_assert_uint_eq(hi, 512);
}
END_TEST

START_TEST(test_hist_add_and_cut)
{
	struct thps_geometry g;
	struct thps_hist h;

	thps_geometry_default(&g);
	memset(&h, 0, sizeof(h));
	thps_hist_add(&h, &g, 0);
	thps_hist_add(&h, &g, 51);
	thps_hist_add(&h, &g, 52);
	thps_hist_add(&h, &g, 512);
	ck_assert_uint_eq(h.thps[0], 2);
	ck_assert_uint_eq(h.zero_subpages[0], 512 + 461);
	ck_assert_uint_eq(h.thps[1], 1);
	ck_assert_uint_eq(h.zero_subpages[1], 460);
	ck_assert_uint_eq(h.thps[9], 1);
	ck_assert_uint_eq(h.zero_subpages[9], 0);
	ck_assert_uint_eq(thps_hist_lowutil_thps(&h, 0), 2);
	ck_assert_uint_eq(thps_hist_lowutil_thps(&h, 1), 3);
	ck_assert_uint_eq(thps_hist_thps(&h), 4);
	ck_assert_uint_eq(thps_hist_zero_subpages(&h), 512 + 461 + 460);
}
END_TEST

START_TEST(test_scan_finish_totals)
{
	struct thps_geometry g;
	struct thps_scan s;
	struct thps_cgroup_stats *a, *b;

	thps_geometry_default(&g);
	thps_scan_init(&s, &g);
	a = thps_scan_cgroup(&s, 10, "/a");
	thps_hist_add(&a->hist, &g, 0);
	b = thps_scan_cgroup(&s, 11, "/b");
	thps_hist_add(&b->hist, &g, 0);
	thps_hist_add(&b->hist, &g, 0);
	b = thps_scan_cgroup(&s, 11, NULL);
	thps_hist_add(&b->hist, &g, 512);
	thps_scan_finish(&s, 0);
	thps_scan_sort(&s);
	ck_assert_str_eq(s.cgroups[0].path, "/b");
	ck_assert_uint_eq(s.cgroups[0].waste_bytes, 2 * 512 * 4096ull);
	ck_assert_uint_eq(s.total.waste_bytes, 3 * 512 * 4096ull);
	ck_assert_uint_eq(thps_hist_thps(&s.total.hist), 4);
	thps_scan_free(&s);
}
END_TEST

START_TEST(test_keyed_u64)
{
	uint64_t v;

	ck_assert_int_eq(find_keyed_u64("anon 5\nanon_thp 4194304\nfile 1\n", "anon_thp", &v), 0);
	ck_assert_uint_eq(v, 4194304);
	ck_assert_int_eq(find_keyed_u64("anon 5\n", "anon_thp", &v), -ENOENT);
	ck_assert_int_eq(find_keyed_u64("anon_thp x\n", "anon_thp", &v), -EINVAL);
	ck_assert_int_eq(parse_u64("12\n", &v), 0);
	ck_assert_int_eq(parse_u64("-1", &v), -EINVAL);
	ck_assert_int_eq(parse_u64("99999999999999999999999", &v), -ERANGE);
}
END_TEST

START_TEST(test_read_file_bounded)
{
	char tmpl[] = "/tmp/thps-core-XXXXXX";
	int fd = mkstemp(tmpl);
	char *buf = NULL;
	size_t len;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "123456789", 9), 9);
	close(fd);
	ck_assert_int_eq(read_file_bounded(tmpl, 16, &buf, &len), 0);
	ck_assert_str_eq(buf, "123456789");
	ck_assert_uint_eq(len, 9);
	free(buf);
	ck_assert_int_eq(read_file_bounded(tmpl, 5, &buf, &len), -EFBIG);
	unlink(tmpl);
	ck_assert_int_eq(read_file_bounded(tmpl, 5, &buf, &len), -ENOENT);
}
END_TEST

START_TEST(test_max_ptes_none_advice)
{
	struct thps_geometry g;

	thps_geometry_default(&g);
	/* bucket 0 = 0-51 utilized: >= 461 zero subpages; 460 keeps them split */
	ck_assert_uint_eq(thps_max_ptes_none_advice(&g, 0), 460);
	/* bucket 3 = 154-204: >= 308 zero subpages; 307 keeps them split */
	ck_assert_uint_eq(thps_max_ptes_none_advice(&g, 3), 307);
	ck_assert_uint_eq(thps_max_ptes_none_advice(&g, 9), 0);
}
END_TEST

static const char *clean(const char *in)
{
	static char out[THPS_TEXT_MAX + 1];

	ck_assert_int_ge(thps_text_sanitize(in, THPS_TEXT_MAX, out, sizeof(out)), 0);
	ck_assert(thps_text_is_clean(out));
	return out;
}

START_TEST(test_text_sanitize)
{
	char out[64], a[THPS_TEXT_MAX + 1], b[THPS_TEXT_MAX + 1];
	char longa[1000], longb[1000];

	ck_assert_str_eq(clean("/system.slice/nginx.service"), "/system.slice/nginx.service");
	ck_assert_str_eq(clean("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	ck_assert_str_eq(clean("evil\xff\xfe\"}{"), "evil\\xff\\xfe\"}{");
	ck_assert_str_eq(clean("a\nb\tc\x1b[31m\x7f"), "a\\x0ab\\x09c\\x1b[31m\\x7f");
	/* overlong "/", a UTF-16 surrogate, above U+10FFFF, a truncated sequence */
	ck_assert_str_eq(clean("\xc0\xaf"), "\\xc0\\xaf");
	ck_assert_str_eq(clean("\xed\xa0\x80"), "\\xed\\xa0\\x80");
	ck_assert_str_eq(clean("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
	ck_assert_str_eq(clean("x\xe2\x82"), "x\\xe2\\x82");
	ck_assert_str_eq(clean(NULL), "");
	ck_assert(!thps_text_is_clean("a\xff"));
	ck_assert(thps_text_is_clean("\xc3\xa9"));

	/* long: cut, hash suffix, exactly max bytes, stable, distinct for distinct inputs */
	memset(longa, 'a', sizeof(longa) - 1);
	longa[sizeof(longa) - 1] = '\0';
	memcpy(longb, longa, sizeof(longb));
	longb[900] = 'b';
	ck_assert_int_eq(thps_text_sanitize(longa, THPS_TEXT_MAX, a, sizeof(a)), THPS_TEXT_MAX);
	ck_assert_int_eq(thps_text_sanitize(longb, THPS_TEXT_MAX, b, sizeof(b)), THPS_TEXT_MAX);
	ck_assert_str_ne(a, b);
	ck_assert_int_eq(strncmp(a, b, THPS_TEXT_MAX - THPS_TEXT_HASH_SUFFIX_LEN), 0);
	ck_assert_int_eq(a[THPS_TEXT_MAX - THPS_TEXT_HASH_SUFFIX_LEN], '~');
	ck_assert_str_eq(clean(longa), a);
	/* the cut never splits a character: 3-byte euros up to the limit */
	for (size_t i = 0; i + 3 < sizeof(longa); i += 3)
		memcpy(longa + i, "\xe2\x82\xac", 3);
	longa[999] = '\0';
	ck_assert(thps_text_is_clean(clean(longa)));
	/* too small a buffer or max */
	ck_assert_int_eq(thps_text_sanitize("x", 63, out, 63), -ENOBUFS);
	ck_assert_int_eq(thps_text_sanitize("x", 10, out, sizeof(out)), -ENOBUFS);
}
END_TEST

/* Whatever sits at the target (a FIFO, a symlink to elsewhere) is replaced, never opened, and
 * no predictable temporary name is used. */
START_TEST(test_write_file_atomic)
{
	char dir[] = "/tmp/thps-atomic-XXXXXX", path[128], other[128], *text = NULL;
	struct stat st;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.prom", dir);
	snprintf(other, sizeof(other), "%s/victim", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(write_file_atomic(path, "one\n", 4, 0644), 0);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(write_file_atomic(other, "keep", 4, 0600), 0);
	ck_assert_int_eq(symlink(other, path), 0);
	ck_assert_int_eq(write_file_atomic(path, "two\n", 4, 0644), 0);
	ck_assert_int_eq(read_file_bounded(other, 64, &text, NULL), 0);
	ck_assert_str_eq(text, "keep");
	free(text);
	ck_assert_int_eq(read_file_bounded(path, 64, &text, NULL), 0);
	ck_assert_str_eq(text, "two\n");
	free(text);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(write_file_atomic("/nonexistent-dir/x.prom", "x", 1, 0644), -ENOENT);
	unlink(path);
	unlink(other);
	ck_assert_int_eq(rmdir(dir), 0); /* no temporary file left behind */
}
END_TEST

/* pmadvise: a pidfd is opened only on the process that started at the given time (a reused pid
 * is never advised); a batch with an unmapped hole fails that iovec alone, the rest are
 * advised; an exited process is -ESRCH. Real processes: our own child. */
START_TEST(test_pidfd_checked_and_batch_errors)
{
	struct thps_ctx ctx;
	uint64_t st, addrs[5];
	int err[5], fd, r;
	long page = sysconf(_SC_PAGESIZE);
	char *m;
	pid_t child;

	thps_ctx_init(&ctx);
	m = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	memset(m, 1, 4 * page);
	ck_assert_int_eq(munmap(m + 2 * page, page), 0); /* a hole at page 2 */
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	ck_assert_int_eq(thps_proc_starttime(&ctx, child, &st), 0);
	fd = thps_pidfd_open(&ctx, child, st);
	if (fd == -ENOSYS) { /* a kernel before 5.3, or valgrind 3.19, which lacks the syscall */
		THPS_CASE_SKIP("pidfd batch errors", "pidfd_open answered ENOSYS here");
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return;
	}
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(thps_pidfd_open(&ctx, child, st + 1), -ESRCH); /* another process */
	for (int i = 0; i < 5; i++)
		addrs[i] = (uint64_t)(uintptr_t)(m + (i % 4) * page);
	r = thps_pmadvise(fd, MADV_COLD, addrs, 5, (uint64_t)page, err);
	if (r == -EPERM) {
		THPS_CASE_SKIP("pidfd batch errors",
			       "process_madvise answered EPERM: no CAP_SYS_NICE here");
		close(fd);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return;
	}
	ck_assert_int_eq(r, 4);
	ck_assert_int_eq(err[0], 0);
	ck_assert_int_eq(err[1], 0);
	ck_assert_int_eq(err[2], -ENOMEM); /* the hole */
	ck_assert_int_eq(err[3], 0);
	ck_assert_int_eq(err[4], 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_int_eq(thps_pmadvise(fd, MADV_COLD, addrs, 1, (uint64_t)page, err), -ESRCH);
	close(fd);
	ck_assert_int_eq(thps_pidfd_open(&ctx, child, st), -ESRCH); /* gone */
	munmap(m, 4 * page);
}
END_TEST

static void mkpath(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (text) {
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(text, f);
		fclose(f);
	} else
		ck_assert_int_eq(mkdir(path, 0755), 0);
}

static bool exists(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return access(path, F_OK) == 0;
}

/* A killed probe's scratch cgroup goes at the next start; a live thpshrink's, our own, and
 * names not exactly ours stay (a fake tree: no cgroup.procs, so nothing is killed). */
START_TEST(test_probe_scratch_clean)
{
	char dir[] = "/tmp/thps-scratch-XXXXXX", rel[64], cmd[64];
	struct thps_ctx ctx;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	thps_ctx_init(&ctx);
	snprintf(ctx.proc_root, sizeof(ctx.proc_root), "%s/proc", dir);
	snprintf(ctx.cgroup_root, sizeof(ctx.cgroup_root), "%s/cg", dir);
	mkpath(dir, "proc", NULL);
	mkpath(dir, "cg", NULL);
	mkpath(dir, "cg/cgroup.controllers", "cpu memory pids\n");
	mkpath(dir, "proc/4000002", NULL);
	mkpath(dir, "proc/4000002/comm", "thpshrinkd\n");
	mkpath(dir, "proc/4000003", NULL);
	mkpath(dir, "proc/4000003/comm", "bash\n");
	mkpath(dir, "cg/thpshrink-probe.4000001", NULL); /* no such pid */
	mkpath(dir, "cg/thpshrink-probe.4000002", NULL); /* a live daemon's */
	mkpath(dir, "cg/thpshrink-probe.4000003", NULL); /* its pid reused by a shell */
	mkpath(dir, "cg/thpshrink-probe.12ab", NULL);
	mkpath(dir, "cg/thpshrink-probe.", NULL);
	mkpath(dir, "cg/other.4000001", NULL);
	snprintf(rel, sizeof(rel), "cg/thpshrink-probe.%d", (int)getpid());
	mkpath(dir, rel, NULL);
	ck_assert_int_eq(thps_probe_scratch_clean(&ctx), 2);
	ck_assert(!exists(dir, "cg/thpshrink-probe.4000001"));
	ck_assert(exists(dir, "cg/thpshrink-probe.4000002"));
	ck_assert(!exists(dir, "cg/thpshrink-probe.4000003"));
	ck_assert(exists(dir, "cg/thpshrink-probe.12ab"));
	ck_assert(exists(dir, "cg/thpshrink-probe."));
	ck_assert(exists(dir, "cg/other.4000001"));
	ck_assert(exists(dir, rel));
	ck_assert_int_eq(thps_probe_scratch_clean(&ctx), 0);
	/* cgroup v1 (no cgroup.controllers): nothing to do */
	snprintf(ctx.cgroup_root, sizeof(ctx.cgroup_root), "%s/proc", dir);
	ck_assert_int_eq(thps_probe_scratch_clean(&ctx), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* kubelet's cgroup layouts under both drivers, and hostile names: a UID and an id come only
 * from text that matched their pattern. */
#define K8S_U "0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b"
#define K8S_U_ "0f6e2a4c_1b3d_4e5f_8a9b_0c1d2e3f4a5b"
#define K8S_ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define K8S_BU "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" K8S_U_ ".slice"
#define K8S_BE "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" K8S_U_ ".slice"
#define K8S_GU "/kubepods.slice/kubepods-pod" K8S_U_ ".slice"

START_TEST(test_k8s_parse)
{
	static const struct {
		const char *path;
		int r;
		const char *qos, *id, *runtime;
	} t[] = {
	    /* systemd driver, three QoS classes, three runtimes */
	    {K8S_BU "/cri-containerd-" K8S_ID ".scope", 1, "burstable", K8S_ID, "containerd"},
	    {K8S_BE "/crio-" K8S_ID ".scope", 1, "besteffort", K8S_ID, "cri-o"},
	    {K8S_GU "/docker-" K8S_ID ".scope", 1, "guaranteed", K8S_ID, "docker"},
	    {K8S_GU "/crio-" K8S_ID ".scope/container", 1, "guaranteed", K8S_ID, "cri-o"},
	    /* the pod's own cgroup, and what sits in a pod without being a container */
	    {K8S_BU, 1, "burstable", "", NULL},
	    {K8S_GU, 1, "guaranteed", "", NULL},
	    {K8S_BE "/crio-conmon-" K8S_ID ".scope", 1, "besteffort", "", NULL},
	    {K8S_BU "/cri-containerd-" K8S_ID "0.scope", 1, "burstable", "", NULL},
	    {K8S_BU "/cri-containerd-" K8S_ID, 1, "burstable", "", NULL},
	    {K8S_BU "/evil-" K8S_ID ".scope", 1, "burstable", "", NULL},
	    /* kubelet --cgroup-root under systemd (kind: /kubelet.slice) */
	    {"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	     "kubelet-kubepods-besteffort-pod" K8S_U_ ".slice/cri-containerd-" K8S_ID ".scope",
	     1, "besteffort", K8S_ID, "containerd"},
	    /* cgroupfs driver */
	    {"/kubepods/burstable/pod" K8S_U "/" K8S_ID, 1, "burstable", K8S_ID, NULL},
	    {"/kubepods/besteffort/pod" K8S_U "/" K8S_ID, 1, "besteffort", K8S_ID, NULL},
	    {"/kubepods/pod" K8S_U "/" K8S_ID, 1, "guaranteed", K8S_ID, NULL},
	    {"/kubepods/pod" K8S_U "/crio-" K8S_ID, 1, "guaranteed", K8S_ID, "cri-o"},
	    {"/kubepods/besteffort/pod" K8S_U, 1, "besteffort", "", NULL},
	    {"/kubepods/pod" K8S_U "/" K8S_ID "/sub", 1, "guaranteed", K8S_ID, NULL},
	    /* not pods */
	    {"/", 0, NULL, NULL, NULL},
	    {"", 0, NULL, NULL, NULL},
	    {"/kubepods.slice", 0, NULL, NULL, NULL},
	    {"/kubepods.slice/kubepods-burstable.slice", 0, NULL, NULL, NULL},
	    {"/kubepods", 0, NULL, NULL, NULL},
	    {"/kubepods/burstable", 0, NULL, NULL, NULL},
	    {"/system.slice/containerd.service", 0, NULL, NULL, NULL},
	    {"/system.slice/system-kubepods.slice/x", 0, NULL, NULL, NULL},
	    /* hostile: a delegated subtree posing as kubelet's, malformed UIDs */
	    {"/user.slice/user-1000.slice/user@1000.service/kubepods.slice/kubepods-pod" K8S_U_
	     ".slice",
	     0, NULL, NULL, NULL},
	    {"/user.slice/kubepods/pod" K8S_U "/" K8S_ID, 0, NULL, NULL, NULL},
	    {"kubepods/pod" K8S_U, 0, NULL, NULL, NULL},
	    {"/kubepods/pod" K8S_U_, 0, NULL, NULL, NULL},			/* '_' in cgroupfs */
	    {"/kubepods.slice/kubepods-pod" K8S_U ".slice", 0, NULL, NULL, NULL}, /* '-' */
	    {"/kubepods/pod0F6E2A4C-1b3d-4e5f-8a9b-0c1d2e3f4a5b", 0, NULL, NULL, NULL},
	    {"/kubepods/pod0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5", 0, NULL, NULL, NULL},
	    {"/kubepods/pod0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5bb", 0, NULL, NULL, NULL},
	    {"/kubepods/pod0f6e2a4c1-b3d-4e5f-8a9b-0c1d2e3f4a5b", 0, NULL, NULL, NULL},
	    {"/kubepods/pod0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5g", 0, NULL, NULL, NULL},
	    {"/kubepods/pod\"0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5", 0, NULL, NULL, NULL},
	    {"/kubepods/guaranteed/pod" K8S_U, 0, NULL, NULL, NULL},
	    {"/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod" K8S_U_ ".slice", 0,
	     NULL, NULL, NULL},
	    {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" K8S_U_ ".scope", 0,
	     NULL, NULL, NULL},
	    {"/kubepods.slice/kubepods-burstable.slice/kubepods-pod" K8S_U_ ".slice", 0, NULL,
	     NULL, NULL},
	    {"/kubepods.slice/kubepods-.slice/kubepods--pod" K8S_U_ ".slice", 0, NULL, NULL, NULL},
	    {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" K8S_U_
	     ".slice\n/x",
	     0, NULL, NULL, NULL}, /* "\n" is part of the name */
	};

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		struct thps_k8s_id id = {.qos = 99};
		int r = thps_k8s_parse(t[i].path, &id);

		ck_assert_msg(r == t[i].r, "%s: %d, expected %d", t[i].path, r, t[i].r);
		if (r != 1) {
			ck_assert_int_eq(id.qos, 99); /* untouched */
			continue;
		}
		ck_assert_str_eq(id.pod_uid, K8S_U);
		ck_assert_str_eq(thps_k8s_qos_name(id.qos), t[i].qos);
		ck_assert_msg(!strcmp(id.container_id, t[i].id), "%s: id %s", t[i].path,
			      id.container_id);
		if (t[i].runtime)
			ck_assert_str_eq(id.runtime, t[i].runtime);
		else
			ck_assert_ptr_null(id.runtime);
	}
	ck_assert_int_eq(thps_k8s_parse(NULL, &(struct thps_k8s_id){}), -EINVAL);
	ck_assert_int_eq(thps_k8s_qos_from_name("besteffort"), THPS_K8S_QOS_BESTEFFORT);
	ck_assert_int_eq(thps_k8s_qos_from_name("BestEffort"), THPS_K8S_QOS_NONE);
	ck_assert_int_eq(thps_k8s_qos_from_name(""), THPS_K8S_QOS_NONE);
	ck_assert(thps_k8s_uid_valid(K8S_U));
	ck_assert(!thps_k8s_uid_valid(K8S_U_));
	ck_assert(!thps_k8s_uid_valid(K8S_U "0"));
}
END_TEST

static Suite *core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("histogram");

	tcase_add_test(tc, test_bucket_edges);
	tcase_add_test(tc, test_bucket_ranges_match_formula);
	tcase_add_test(tc, test_hist_add_and_cut);
	tcase_add_test(tc, test_scan_finish_totals);
	tcase_add_test(tc, test_max_ptes_none_advice);
	suite_add_tcase(s, tc);
	tc = tcase_create("fileio");
	tcase_add_test(tc, test_keyed_u64);
	tcase_add_test(tc, test_read_file_bounded);
	tcase_add_test(tc, test_write_file_atomic);
	tcase_add_test(tc, test_probe_scratch_clean);
	suite_add_tcase(s, tc);
	tc = tcase_create("text");
	tcase_add_test(tc, test_text_sanitize);
	tcase_add_test(tc, test_pidfd_checked_and_batch_errors);
	suite_add_tcase(s, tc);
	tc = tcase_create("k8s");
	tcase_add_test(tc, test_k8s_parse);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(core_suite)
