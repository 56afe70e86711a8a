/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fault and trust tests on fake trees: memory.reclaim answering each errno the kernel can give
 * (injected for real by a seccomp filter in a child, so the actuator's own write sees it), a
 * missing /proc/kpageflags, and the refusal of policy, registration and state files that
 * someone other than root may write. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actuator.h"
#include "policy.h"
#include "registrations.h"
#include "kpageflags.h"
#include "test-main.h"

static char root[64];
static struct thps_ctx ctx;
static struct thps_geometry geom;

static void path_of(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/%s", root, rel);
}

static void put(const char *rel, const char *text, mode_t mode)
{
	char path[PATH_MAX], dir[PATH_MAX];
	FILE *f;

	path_of(path, sizeof(path), rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		mkdir(dir, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/check-trust.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	ck_assert_int_eq(chmod(root, 0755), 0);
	thps_ctx_init_tree(&ctx, root, "cg");
	ctx.cgroup_version = 2;
	thps_geometry_default(&geom);
	put("proc/vmstat", "thp_split_page 7\nthp_underused_split_page 3\n", 0644);
	put("sys/kernel/mm/transparent_hugepage/shrink_underused", "1\n", 0644);
	put("sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none", "409\n", 0644);
	put("cg/work/memory.current", "67108864\n", 0644);
	put("cg/work/memory.stat", "anon 67108864\nanon_thp 67108864\n", 0644);
	put("cg/work/memory.reclaim", "", 0644);
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}

/* Makes write(fd, _, count) fail with err in this process (and only that call shape). */
static int inject_write_errno(int fd, size_t count, int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)fd, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)count, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
}

struct outcome {
	int r, inject, write_status, acted;
	unsigned long long asked, before, after;
	char note[200];
};

/* Runs the reclaim actuator in a child whose write to memory.reclaim fails with err (0: none). */
static struct outcome reclaim_with_errno(int err)
{
	struct thps_act_request req = { .cgroup = "work", .geom = &geom, .amount_bytes = 7340032 };
	struct outcome o = { 0 };
	int p[2], st;
	pid_t pid;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct thps_act_result res;
		/* the actuator's open() of memory.reclaim gets the lowest free fd */
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		close(fd);
		o.inject = err ? inject_write_errno(fd, strlen("7340032"), err) : 0;
		if (o.inject == 0) {
			o.r = thps_actuator_reclaim.act(&ctx, &req, &res);
			o.write_status = res.write_status;
			o.acted = res.acted;
			o.asked = res.asked_bytes;
			o.before = res.before.memory_current;
			o.after = res.after.memory_current;
			snprintf(o.note, sizeof(o.note), "%.199s", res.note);
		}
		_exit(write(p[1], &o, sizeof(o)) == sizeof(o) ? 0 : 3);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &o, sizeof(o)), (ssize_t)sizeof(o));
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_int_eq(o.inject, 0);
	return o;
}

START_TEST(test_reclaim_ok)
{
	struct outcome o = reclaim_with_errno(0);
	char path[PATH_MAX], buf[32] = "";
	FILE *f;

	ck_assert_int_eq(o.r, 0);
	ck_assert(o.acted);
	ck_assert_int_eq(o.write_status, 0);
	path_of(path, sizeof(path), "cg/work/memory.reclaim");
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "7340032");
}
END_TEST

/* EAGAIN: the kernel reclaimed less than asked (it may still have freed memory): the action
 * counts, measured by memory.current, and the note says so. */
START_TEST(test_reclaim_eagain)
{
	struct outcome o = reclaim_with_errno(EAGAIN);

	ck_assert_int_eq(o.r, 0);
	ck_assert(o.acted);
	ck_assert_int_eq(o.write_status, -EAGAIN);
	ck_assert_uint_eq(o.asked, 7340032);
	ck_assert_uint_eq(o.before, 67108864);
	ck_assert_uint_eq(o.after, 67108864);
	ck_assert_ptr_nonnull(strstr(o.note, "EAGAIN"));
}
END_TEST

/* Every other errno of the write is a failure handed to the caller as -errno, never retried
 * (a retry after EINTR would ask the whole amount again) and never a crash. */
START_TEST(test_reclaim_errors)
{
	static const int errs[] = { EBUSY, EINTR, ENOMEM, EINVAL, EPERM, EACCES, ENOENT, ENODEV, EIO };
	int err = errs[_i];
	struct outcome o = reclaim_with_errno(err);

	ck_assert_int_eq(o.r, -err);
	ck_assert_int_eq(o.write_status, -err);
	ck_assert(!o.acted);
	ck_assert_uint_eq(o.asked, 7340032);
	ck_assert_uint_eq(o.before, 67108864);
}
END_TEST

/* No /proc/kpageflags (or not readable): a clear -errno, no crash, nothing leaked. */
START_TEST(test_kpageflags_missing)
{
	struct thps_kpage k;
	char path[PATH_MAX];

	put("proc/kpagecgroup", "", 0444);
	ck_assert_int_eq(thps_kpage_open(&ctx, 512, &k), -ENOENT);
	put("proc/kpageflags", "", 0444);
	ck_assert_int_eq(thps_kpage_open(&ctx, 512, &k), 0);
	thps_kpage_close(&k);
	/* a directory where the file should be */
	path_of(path, sizeof(path), "proc/kpageflags");
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	{
		uint64_t v;
		int r = thps_kpage_open(&ctx, 512, &k);
		if (r == 0) { /* opening a directory O_RDONLY works; reading it must fail cleanly */
			ck_assert_int_lt(thps_kpage_flags(&k, 0, &v), 0);
			thps_kpage_close(&k);
		}
	}
}
END_TEST

static const char policy[] = "{ \"name\": \"p\", \"match\": { \"cgroup\": \"/x\" } }\n";

static int load_policies(struct thps_policy_errors *errs)
{
	struct thps_policy_set *set = NULL;
	char dir[PATH_MAX];
	int r;

	path_of(dir, sizeof(dir), "policies");
	r = thps_policy_set_load_dir(dir, THPS_POLICY_LOAD_CHECK_OWNER, &set, errs);
	thps_policy_set_free(set);
	return r;
}

static bool errs_have(const struct thps_policy_errors *e, const char *what)
{
	for (size_t i = 0; i < e->n; i++)
		if (strstr(e->msgs[i], what))
			return true;
	return false;
}

START_TEST(test_policy_refusals)
{
	struct thps_policy_errors errs = { 0 };
	char path[PATH_MAX];

	put("policies/p.json", policy, 0644);
	ck_assert_int_eq(load_policies(&errs), 0);
	thps_policy_errors_clear(&errs);

	put("policies/p.json", policy, 0664);
	ck_assert_int_eq(load_policies(&errs), -EPERM);
	ck_assert(errs_have(&errs, "writable by group or others"));
	thps_policy_errors_clear(&errs);

	put("policies/p.json", policy, 0646);
	ck_assert_int_eq(load_policies(&errs), -EPERM);
	thps_policy_errors_clear(&errs);

	put("policies/p.json", policy, 0644);
	path_of(path, sizeof(path), "policies/p.json");
	ck_assert_int_eq(chown(path, 65534, 65534), 0);
	ck_assert_int_eq(load_policies(&errs), -EPERM);
	ck_assert(errs_have(&errs, "owned by uid 65534"));
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(chown(path, 0, 0), 0);

	path_of(path, sizeof(path), "policies");
	ck_assert_int_eq(chmod(path, 0777), 0);
	ck_assert_int_eq(load_policies(&errs), -EPERM);
	ck_assert(errs_have(&errs, "writable by group or others"));
	thps_policy_errors_clear(&errs);
	ck_assert_int_eq(chmod(path, 0755), 0);
	ck_assert_int_eq(load_policies(&errs), 0);
	thps_policy_errors_clear(&errs);
}
END_TEST

static const char reg[] =
	"{\"version\":1,\"id\":\"c1\",\"cgroup\":\"/a/b\",\"pid\":7,\"pid_start_time\":9,"
	"\"created\":\"2026-12-03T05:46:40Z\",\"status\":\"created\",\"stage\":\"createRuntime\"}\n";

START_TEST(test_registration_refusals)
{
	struct thps_registration r;
	char dir[PATH_MAX], path[PATH_MAX], link[PATH_MAX];

	path_of(dir, sizeof(dir), "regs");
	put("regs/c1.json", reg, 0644);
	ck_assert_int_eq(thps_registration_load(dir, "c1", &r), 0);
	ck_assert_str_eq(r.cgroup, "/a/b");

	put("regs/c1.json", reg, 0664);
	ck_assert_int_eq(thps_registration_load(dir, "c1", &r), -EPERM);
	put("regs/c1.json", reg, 0646);
	ck_assert_int_eq(thps_registration_load(dir, "c1", &r), -EPERM);
	put("regs/c1.json", reg, 0644);
	path_of(path, sizeof(path), "regs/c1.json");
	ck_assert_int_eq(chown(path, 65534, 65534), 0);
	ck_assert_int_eq(thps_registration_load(dir, "c1", &r), -EPERM);

	/* a symlink to a good file is refused too */
	put("elsewhere/c2.json", "", 0644);
	path_of(link, sizeof(link), "regs/c2.json");
	path_of(path, sizeof(path), "elsewhere/c2.json");
	ck_assert_int_eq(symlink(path, link), 0);
	ck_assert_int_lt(thps_registration_load(dir, "c2", &r), 0);
}
END_TEST

/* The saved max_ptes_none is written back to a global knob as root: a copy someone else could
 * have written is refused, and the knob is left alone. */
START_TEST(test_state_refusals)
{
	char state[PATH_MAX], saved[PATH_MAX + 32], knob[PATH_MAX], buf[32] = "";
	unsigned old = 0, v = 0;
	struct stat st;
	mode_t um = umask(0); /* the saved file must be private whatever the umask */
	FILE *f;

	path_of(state, sizeof(state), "state");
	path_of(knob, sizeof(knob), "sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none");
	ck_assert_int_eq(thps_max_ptes_none_set(&ctx, state, 100, &old), 0);
	umask(um);
	ck_assert_uint_eq(old, 409);
	snprintf(saved, sizeof(saved), "%s/max_ptes_none.saved", state);
	ck_assert_int_eq(stat(saved, &st), 0);
	ck_assert_uint_eq(st.st_mode & 077, 0);

	ck_assert_int_eq(chmod(saved, 0666), 0);
	ck_assert_int_eq(thps_max_ptes_none_restore(&ctx, state, &v), -EPERM);
	ck_assert_int_eq(chmod(saved, 0600), 0);
	ck_assert_int_eq(chown(saved, 65534, 65534), 0);
	ck_assert_int_eq(thps_max_ptes_none_restore(&ctx, state, &v), -EPERM);
	f = fopen(knob, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	ck_assert_str_eq(buf, "100"); /* untouched by the refused restores */

	ck_assert_int_eq(chown(saved, 0, 0), 0);
	ck_assert_int_eq(thps_max_ptes_none_restore(&ctx, state, &v), 0);
	ck_assert_uint_eq(v, 409);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("trust");
	TCase *tc = tcase_create("faults");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_reclaim_ok);
	tcase_add_test(tc, test_reclaim_eagain);
	tcase_add_loop_test(tc, test_reclaim_errors, 0, 9);
	tcase_add_test(tc, test_kpageflags_missing);
	suite_add_tcase(s, tc);
	tc = tcase_create("refusals");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_policy_refusals);
	tcase_add_test(tc, test_registration_refusals);
	tcase_add_test(tc, test_state_refusals);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN_SKIP_IF(suite, geteuid() != 0,
		       "the refusal tests chown files to another uid: run as root")
