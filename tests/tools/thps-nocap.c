/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thps-nocap: runs a program as root without CAP_SYS_NICE, as a container runtime or a
 * hardened unit that leaves it out would: process_madvise() on other processes is then refused
 * (EPERM), which is what the daemon's fallback is tested against.
 *
 *   thps-nocap PROG ARGS...
 *
 * Drops CAP_SYS_NICE from the bounding set (so the exec cannot regain it) and from the
 * effective, permitted and inheritable sets, then execs PROG. libc only: no libcap in the VM. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	const unsigned idx = CAP_TO_INDEX(CAP_SYS_NICE), mask = CAP_TO_MASK(CAP_SYS_NICE);

	if (argc < 2) {
		fprintf(stderr, "usage: thps-nocap PROG ARGS...\n");
		return 2;
	}
	if (prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) < 0) {
		fprintf(stderr, "thps-nocap: PR_CAPBSET_DROP: %s\n", strerror(errno));
		return 1;
	}
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0) {
		fprintf(stderr, "thps-nocap: capget: %s\n", strerror(errno));
		return 1;
	}
	d[idx].effective &= ~mask;
	d[idx].permitted &= ~mask;
	d[idx].inheritable &= ~mask;
	if (syscall(SYS_capset, &h, d) < 0) {
		fprintf(stderr, "thps-nocap: capset: %s\n", strerror(errno));
		return 1;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "thps-nocap: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
