/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pause: the pod sandbox's process for 49-containerd's locally built pause image (no
 * registry in the VM). As kubernetes' pause: it holds the pod's namespaces, reaps what is
 * reparented to it and exits 0 on SIGTERM or SIGINT, so StopPodSandbox does not wait for
 * its kill timeout. Linked statically: the image holds nothing else. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

static void on_child(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	struct sigaction term = { .sa_handler = on_term };
	struct sigaction child = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP };

	if (sigaction(SIGTERM, &term, NULL) < 0 || sigaction(SIGINT, &term, NULL) < 0 ||
	    sigaction(SIGCHLD, &child, NULL) < 0)
		return 1;
	for (;;)
		pause();
}
