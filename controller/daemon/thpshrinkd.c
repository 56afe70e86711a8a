/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrinkd: watches anonymous THP waste per memory cgroup, gives it back where a policy
 * says so, and serves Prometheus metrics. run() reads top to bottom: options → context →
 * manager (capability checks, policies, sources) → READY=1 → loop. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "fileio.h"
#include "http-secure.h"
#include "http.h"
#include "log.h"
#include "manager.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#ifndef RUNSTATEDIR
#define RUNSTATEDIR "/run"
#endif

static void help(void)
{
	printf(
	    "Usage: thpshrinkd [OPTIONS]\n\n"
	    "Measures anonymous THP waste per memory cgroup and gives it back per policy.\n\n"
	    "  --policy-dir DIR           policies (default " SYSCONFDIR "/thpshrink/policies.d)\n"
	    "  --listen ADDR:PORT|unix:PATH|none\n"
	    "                             /metrics endpoint (default 127.0.0.1:9477); unix:PATH\n"
	    "                             serves it on a Unix socket that only root can reach\n"
	    "  --metrics-tls-cert FILE    serve /metrics over TLS 1.2+ with this PEM certificate\n"
	    "  --metrics-tls-key FILE     and this PEM key (0600 or stricter, owned by root)\n"
	    "  --metrics-token-file FILE  require 'Authorization: Bearer <token>' with the token\n"
	    "                             in FILE (0600 or stricter); both files are read at\n"
	    "                             start: a new one takes a restart\n"
	    "  --metrics-max-cgroups N    per-cgroup series for at most the N cgroups with the\n"
	    "                             most waste (default 500); the rest are counted\n"
	    "  --textfile PATH.prom       also write the metrics there each pass (atomically)\n"
	    "  --dry-run                  observe everything whatever the policies say\n"
	    "  --interval SECONDS         time between passes (default 60)\n"
	    "  --max-thps-per-sec N       scanner rate budget (default 0 = unlimited)\n"
	    "  --scan-cpu PERCENT         average share of one CPU passes may use; a pass that\n"
	    "                             overspends delays the next ones (default 5)\n"
	    "  --refresh-cpu PERCENT      share of one CPU for re-reading well-used THPs the last\n"
	    "                             passes counted (default 0.5); THPs near a policy's cut\n"
	    "                             and changed ones are read every pass\n"
	    "  --exact-scan               read every THP every pass (no memo)\n"
	    "  --state-dir DIR            status.json for 'thpshrink explain' (default " RUNSTATEDIR
	    "/thpshrink)\n"
	    "  --registrations-dir DIR    container registrations (default " RUNSTATEDIR
	    "/thpshrink/containers; none = off)\n"
	    "  --cgroup PATH              only watch this cgroup subtree (default: all)\n"
	    "  --once                     one pass, then exit\n"
	    "  -v, --verbose              log every decision, not only changes\n"
	    "  --version, -h/--help\n");
}

static int parse_args(int argc, char **argv, struct manager_options *o)
{
	enum {
		O_POLICY = 256,
		O_LISTEN,
		O_TEXTFILE,
		O_DRY,
		O_INTERVAL,
		O_MAXTHPS,
		O_STATE,
		O_REGS,
		O_ONCE,
		O_VERSION,
		O_CGROUP,
		O_SCANCPU,
		O_MAXCG,
		O_REFRESH,
		O_EXACT,
		O_TLSCERT,
		O_TLSKEY,
		O_TOKEN
	};
	static const struct option opts[] = {
	    {"policy-dir", required_argument, NULL, O_POLICY},
	    {"listen", required_argument, NULL, O_LISTEN},
	    {"textfile", required_argument, NULL, O_TEXTFILE},
	    {"dry-run", no_argument, NULL, O_DRY},
	    {"interval", required_argument, NULL, O_INTERVAL},
	    {"max-thps-per-sec", required_argument, NULL, O_MAXTHPS},
	    {"scan-cpu", required_argument, NULL, O_SCANCPU},
	    {"metrics-max-cgroups", required_argument, NULL, O_MAXCG},
	    {"metrics-tls-cert", required_argument, NULL, O_TLSCERT},
	    {"metrics-tls-key", required_argument, NULL, O_TLSKEY},
	    {"metrics-token-file", required_argument, NULL, O_TOKEN},
	    {"refresh-cpu", required_argument, NULL, O_REFRESH},
	    {"exact-scan", no_argument, NULL, O_EXACT},
	    {"state-dir", required_argument, NULL, O_STATE},
	    {"registrations-dir", required_argument, NULL, O_REGS},
	    {"once", no_argument, NULL, O_ONCE},
	    {"cgroup", required_argument, NULL, O_CGROUP},
	    {"verbose", no_argument, NULL, 'v'},
	    {"version", no_argument, NULL, O_VERSION},
	    {"help", no_argument, NULL, 'h'},
	    {}};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "hv", opts, NULL)) >= 0) {
		switch (c) {
		case O_POLICY:
			o->policy_dir = optarg;
			break;
		case O_LISTEN:
			o->listen = optarg;
			break;
		case O_TLSCERT:
			o->metrics_tls_cert = optarg;
			break;
		case O_TLSKEY:
			o->metrics_tls_key = optarg;
			break;
		case O_TOKEN:
			o->metrics_token_file = optarg;
			break;
		case O_TEXTFILE: {
			size_t l = strlen(optarg);
			if (l < 6 || strcmp(optarg + l - 5, ".prom")) {
				log_error("--textfile '%s': expected a path ending in .prom "
					  "(node_exporter's textfile collector reads only those)",
					  optarg);
				return -EINVAL;
			}
			o->textfile = optarg;
			break;
		}
		case O_DRY:
			o->dry_run = true;
			break;
		case O_INTERVAL:
			if (parse_u64(optarg, &v) < 0 || v == 0 || v > 86400) {
				log_error(
				    "--interval '%s': expected whole seconds between 1 and 86400",
				    optarg);
				return -EINVAL;
			}
			o->interval_usec = v * 1000000ULL;
			break;
		case O_MAXTHPS:
			if (parse_u64(optarg, &v) < 0) {
				log_error("--max-thps-per-sec '%s': expected a whole number (0 = "
					  "unlimited)",
					  optarg);
				return -EINVAL;
			}
			o->max_thps_per_sec = v;
			break;
		case O_SCANCPU:
			if (parse_u64(optarg, &v) < 0 || v == 0 || v > 100) {
				log_error("--scan-cpu '%s': expected a whole percentage of one "
					  "CPU, 1 to 100",
					  optarg);
				return -EINVAL;
			}
			o->scan_cpu_percent = (unsigned)v;
			break;
		case O_MAXCG:
			if (parse_u64(optarg, &v) < 0 || v == 0 || v > 2000) {
				log_error("--metrics-max-cgroups '%s': expected a whole number "
					  "from 1 to 2000",
					  optarg);
				return -EINVAL;
			}
			o->metrics_max_cgroups = (size_t)v;
			break;
		case O_REFRESH: {
			char *end;
			double d = strtod(optarg, &end);
			if (end == optarg || *end || !(d > 0 && d <= 100)) {
				log_error("--refresh-cpu '%s': expected a percentage of one CPU "
					  "above 0, at most 100 (e.g. 0.5)",
					  optarg);
				return -EINVAL;
			}
			o->refresh_cpu_percent = d;
			break;
		}
		case O_EXACT:
			o->exact_scan = true;
			break;
		case O_STATE:
			o->state_dir = optarg;
			break;
		case O_REGS:
			o->registrations_dir = optarg;
			break;
		case O_ONCE:
			o->once = true;
			break;
		case O_CGROUP:
			if (optarg[0] != '/') {
				log_error("--cgroup '%s': expected a path under the cgroup mount, "
					  "starting with '/'",
					  optarg);
				return -EINVAL;
			}
			o->cgroup = optarg;
			break;
		case 'v':
			thps_log_set_max_level(LOG_DEBUG);
			break;
		case O_VERSION:
			printf("thpshrinkd %s\n", PACKAGE_VERSION);
			return 0;
		case 'h':
			help();
			return 0;
		default:
			return -EINVAL;
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s'; see --help", argv[optind]);
		return -EINVAL;
	}
	return 1;
}

static const char *secret_error(int r)
{
	switch (r) {
	case -EPERM:
		return "must be owned by root and, as a secret, give group and others no access "
		       "(chmod 0600; a Kubernetes Secret: defaultMode 0400)";
	case -EFBIG:
		return "larger than 64 KiB";
	case -EINVAL:
		return "not a regular file";
	default:
		return NULL;
	}
}

/* Reads what protects /metrics, as the options ask. Any file that does not do its job stops
 * the start: the operator asked for protection and would otherwise get none. Returns 0 or
 * -errno, logged here. */
static int load_metrics_security(const struct manager_options *o, struct http_security *sec)
{
	_cleanup_free_ char *tok = NULL;
	size_t len = 0, tlen;
	const char *why;
	int r;

	if (!!o->metrics_tls_cert != !!o->metrics_tls_key) {
		log_error("--metrics-tls-cert and --metrics-tls-key go together: TLS needs both");
		return -EINVAL;
	}
	if (o->metrics_tls_cert) {
		r = http_secret_read(o->metrics_tls_cert, true, &sec->cert_pem, &len);
		if (r < 0) {
			why = secret_error(r);
			return why ? log_error_errno(r, "--metrics-tls-cert '%s': %s",
						     o->metrics_tls_cert, why)
				   : log_error_errno(r, "--metrics-tls-cert '%s': %m",
						     o->metrics_tls_cert);
		}
		r = http_secret_read(o->metrics_tls_key, false, &sec->key_pem, &sec->key_len);
		if (r < 0) {
			why = secret_error(r);
			return why ? log_error_errno(r, "--metrics-tls-key '%s': %s",
						     o->metrics_tls_key, why)
				   : log_error_errno(r, "--metrics-tls-key '%s': %m",
						     o->metrics_tls_key);
		}
		r = http_tls_check(sec->cert_pem, sec->key_pem, sec->key_len);
		if (r == -EBADMSG)
			return log_error_errno(r,
					       "--metrics-tls-cert '%s': no PEM X.509 certificate "
					       "GnuTLS can read",
					       o->metrics_tls_cert);
		if (r == -ENOKEY)
			return log_error_errno(r,
					       "--metrics-tls-key '%s': no unencrypted PEM private "
					       "key GnuTLS can read",
					       o->metrics_tls_key);
		if (r == -EKEYREJECTED)
			return log_error_errno(r,
					       "--metrics-tls-key '%s' is not the key of the "
					       "certificate in '%s'",
					       o->metrics_tls_key, o->metrics_tls_cert);
		if (r < 0)
			return log_error_errno(r, "Failed to check the TLS certificate: %m");
	}
	if (o->metrics_token_file) {
		r = http_secret_read(o->metrics_token_file, false, &tok, &len);
		if (r < 0) {
			why = secret_error(r);
			return why ? log_error_errno(r, "--metrics-token-file '%s': %s",
						     o->metrics_token_file, why)
				   : log_error_errno(r, "--metrics-token-file '%s': %m",
						     o->metrics_token_file);
		}
		r = http_token_parse(tok, len, &sec->token, &tlen);
		explicit_bzero(tok, len);
		if (r < 0)
			return log_error_errno(r,
					       "--metrics-token-file '%s': expected one token of 1 "
					       "to %d printable characters without spaces",
					       o->metrics_token_file, HTTP_TOKEN_MAX);
		sec->token_len = tlen;
	}
	/* A socket systemd passes (LISTEN_FDS) is served whatever --listen says. */
	if ((sec->cert_pem || sec->token) && (!o->listen || !strcmp(o->listen, "none")) &&
	    !getenv("LISTEN_FDS")) {
		log_error("--metrics-tls-* and --metrics-token-file protect an endpoint, but "
			  "--listen is none");
		return -EINVAL;
	}
	if (sec->token && !sec->cert_pem && o->listen && strncmp(o->listen, "127.", 4) &&
	    strncmp(o->listen, "[::1]", 5) && strncmp(o->listen, "unix:", 5))
		log_warning("--metrics-token-file without TLS on '%s': the token crosses the "
			    "network in clear; add --metrics-tls-cert/--metrics-tls-key",
			    o->listen);
	if (sec->cert_pem || sec->token)
		log_info("Metrics endpoint: %s, %s", sec->cert_pem ? "TLS 1.2+" : "plain HTTP",
			 sec->token ? "bearer token required (read at start)" : "no token");
	return 0;
}

static int run(int argc, char **argv)
{
	struct manager_options o = {
	    .policy_dir = SYSCONFDIR "/thpshrink/policies.d",
	    .listen = "127.0.0.1:9477",
	    .state_dir = RUNSTATEDIR "/thpshrink",
	    .registrations_dir = RUNSTATEDIR "/thpshrink/containers",
	    .interval_usec = 60 * 1000000ULL,
	};
	struct manager *m = NULL;
	struct http_security sec = {0};
	struct thps_ctx ctx;
	sigset_t mask;
	int r;

	r = parse_args(argc, argv, &o);
	if (r <= 0)
		return r < 0 ? 2 : 0;
	thps_ctx_init(&ctx);
	r = load_metrics_security(&o, &sec);
	if (r < 0) {
		http_security_clear(&sec);
		return 1;
	}
	http_set_security(&sec);

	/* Blocked before any thread exists, so sd-event's signalfd sees them all. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	r = manager_new(&ctx, &o, &m);
	if (r >= 0) {
		if (o.once)
			r = manager_pass(m, "once");
		else
			r = manager_run(m);
	}
	manager_free(m);
	http_security_clear(&sec);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	thps_log_set_prefix("thpshrinkd");
	return run(argc, argv);
}
