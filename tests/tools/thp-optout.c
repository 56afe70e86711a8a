/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thp-optout: the per-service opt-out a fleet uses today when THP always bloats a service, as a
 * launcher: PR_SET_THP_DISABLE, then exec. The flag is inherited across fork and kept across
 * execve, so the service and its children get no THP while the rest of the node keeps THP
 * always (the "optout" peer of tests/vm/scenarios/70-node.sh).
 *
 *   thp-optout PROGRAM [ARG]...
 *
 * libc only: it runs from the VM's initramfs, outside the services' chroot, so it charges none
 * of the chroot's file pages to the service it starts. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: thp-optout PROGRAM [ARG]...\n");
		return 2;
	}
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0) {
		fprintf(stderr, "thp-optout: PR_SET_THP_DISABLE: %s\n", strerror(errno));
		return 1;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "thp-optout: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
