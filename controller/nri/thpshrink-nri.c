/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink-nri: the NRI plugin. containerd and CRI-O ignore hooks.d but call NRI plugins at
 * every container's creation, start, stop and removal with the pod's namespace, name, UID and
 * labels; this writes and removes the same registration files as thpshrink-oci-hook, with that
 * identity added.
 *
 *   thpshrink-nri [--socket PATH] [--registrations-dir DIR] [--plugin-name NAME]
 *                 [--plugin-idx NN] [--backoff-max SECONDS]
 *
 * A program of its own, not a part of thpshrinkd: the daemon's loop stays free of a
 * runtime's timing (NRI waits for each answer while it creates a container), the plugin links
 * only core, the OCI parser and protobuf-c, and either can restart without the other. It
 * reconnects when the runtime goes away (a restart of containerd), after 0.5 s, doubling up to
 * --backoff-max. Started by a runtime (NRI_PLUGIN_SOCKET names a connected fd), it exits when
 * that connection ends, as the runtime expects. SIGTERM and SIGINT end it. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "nri-session.h"
#include "registrations.h"

#define NRI_SOCKET_DEFAULT "/var/run/nri/nri.sock"
#define SEND_TIMEOUT_S	   5

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: thpshrink-nri [--socket PATH] [--registrations-dir DIR] "
		   "[--plugin-name NAME] [--plugin-idx NN] [--backoff-max SECONDS]\n"
		   "Registers containers with thpshrinkd as the NRI runtime (containerd, CRI-O) "
		   "creates and removes them.\n");
}

/* Returns 0, 1 to exit successfully (--help), or -EINVAL (logged). */
static int parse_args(int argc, char **argv, struct nri_opts *o, double *backoff_max)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"registrations-dir", required_argument, NULL, 'd'},
	    {"plugin-name", required_argument, NULL, 'n'},
	    {"plugin-idx", required_argument, NULL, 'i'},
	    {"backoff-max", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	char *end;
	int c;

	o->socket_path = NRI_SOCKET_DEFAULT;
	o->dir = THPS_REGISTRATIONS_DIR;
	o->name = getenv("NRI_PLUGIN_NAME") ? getenv("NRI_PLUGIN_NAME") : "thpshrink";
	o->idx = getenv("NRI_PLUGIN_IDX") ? getenv("NRI_PLUGIN_IDX") : "50";
	*backoff_max = 30;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0)
		switch (c) {
		case 's':
			o->socket_path = optarg;
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'n':
			o->name = optarg;
			break;
		case 'i':
			o->idx = optarg;
			break;
		case 'b':
			*backoff_max = strtod(optarg, &end);
			if (*end || !(*backoff_max >= 0.5 && *backoff_max <= 3600))
				return log_error_errno(-EINVAL,
						       "--backoff-max: expected seconds in "
						       "[0.5, 3600], got '%s'",
						       optarg);
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	if (optind < argc)
		return log_error_errno(-EINVAL, "Unexpected argument '%s'", argv[optind]);
	if (strlen(o->idx) != 2 || o->idx[0] < '0' || o->idx[0] > '9' || o->idx[1] < '0' ||
	    o->idx[1] > '9')
		return log_error_errno(-EINVAL, "--plugin-idx: expected two digits, got '%s'",
				       o->idx);
	if (!thps_name_valid(o->name, THPS_OCI_NAME_MAX, false))
		return log_error_errno(-EINVAL,
				       "--plugin-name: expected [A-Za-z0-9_.-]{1,64}, "
				       "got '%s'",
				       o->name);
	return 0;
}

/* Returns a connected socket or -errno. */
static int connect_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return negative_errno();
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return negative_errno();
	return TAKE_FD(fd);
}

static void set_send_timeout(int fd)
{
	struct timeval tv = {.tv_sec = SEND_TIMEOUT_S};

	/* Best effort: without it a runtime that stops reading could only block an answer. */
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void sleep_interruptible(double s)
{
	struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (time_t)s) * 1e9)};

	while (!stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Started by the runtime on a connected fd: one session, then exit. */
static int run_preconnected(const struct nri_opts *o, const char *env)
{
	char *end;
	long fd = strtol(env, &end, 10);
	bool registered;

	if (*end || fd < 3 || fd > 65535)
		return log_error_errno(-EINVAL,
				       "NRI_PLUGIN_SOCKET: expected an fd number, got "
				       "'%.16s'",
				       env);
	set_send_timeout((int)fd);
	return nri_session_run(o, (int)fd, &stop, &registered);
}

static int run(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	double backoff = 0.5, backoff_max;
	struct nri_opts o = {0};
	const char *env;
	bool warned = false;
	int r;

	r = parse_args(argc, argv, &o, &backoff_max);
	if (r != 0)
		return r;
	thps_ctx_init(&o.ctx);
	/* No SA_RESTART: a signal wakes poll() and the sleeps. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	env = getenv("NRI_PLUGIN_SOCKET");
	if (env && *env)
		return run_preconnected(&o, env);
	while (!stop) {
		_cleanup_close_ int fd = connect_socket(o.socket_path);
		bool registered = false;

		if (fd < 0) {
			/* The runtime may start after us or be restarting: said once, then quiet
			 * until it answers. */
			if (!warned)
				log_warning_errno(fd,
						  "NRI: cannot connect to '%s' (%m), retrying "
						  "up to every %.1fs",
						  o.socket_path, backoff_max);
			warned = true;
		} else {
			log_info("NRI: connected to '%s'", o.socket_path);
			warned = false;
			set_send_timeout(fd);
			(void)nri_session_run(&o, fd, &stop, &registered);
			if (registered)
				backoff = 0.5;
			if (stop)
				break;
			log_info("NRI: reconnecting in %.1fs", backoff);
		}
		sleep_interruptible(backoff);
		backoff = backoff * 2 > backoff_max ? backoff_max : backoff * 2;
	}
	log_info("NRI: stopping");
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	thps_log_set_prefix("thpshrink-nri");
	r = run(argc, argv);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
