/* SPDX-License-Identifier: GPL-2.0-or-later */
/* thpshrink validate FILE|DIR...: the daemon's own loader over the given files, so an operator
 * sees exactly the errors the daemon would log, before a reload. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "policy.h"

static void help(void)
{
	printf("Usage: thpshrink validate [--keys] [--check-owner] FILE|DIR...\n\n"
	       "Checks policy files (a directory: every *.json in it, as the daemon loads them).\n"
	       "Policy names must be unique across the files given, as across a directory. Prints "
	       "every error as FILE:LINE:COL: PATH: ...\n"
	       "Exit 0 when all are valid, 1 otherwise.\n\n"
	       "  --keys         list every policy key with its type, range and default\n"
	       "  --check-owner  also refuse files not owned by root or writable by others\n");
}

static void print_errors(struct thps_policy_errors *errs)
{
	for (size_t i = 0; i < errs->n_warnings; i++)
		fprintf(stderr, "warning: %s\n", errs->warnings[i]);
	for (size_t i = 0; i < errs->n; i++)
		fprintf(stderr, "%s\n", errs->msgs[i]);
	if (errs->dropped)
		fprintf(stderr, "(%zu more errors not shown)\n", errs->dropped);
	thps_policy_errors_clear(errs);
}

/* memory.reclaim is a valid choice, but not a free one: say what it costs where it is chosen. */
static void note_reclaim(const struct thps_policy_set *set, size_t from)
{
	for (size_t i = from; i < set->n; i++) {
		const struct thps_policy *p = &set->policies[i];

		if (p->action != THPS_POLICY_RECLAIM || p->mode != THPS_MODE_ENFORCE || !p->file)
			continue;
		printf(
		    "%s:%u:%u: note: policy '%s': action \"reclaim\" writes memory.reclaim, which "
		    "also reclaims the cgroup's page cache (files it may read again at once); "
		    "\"split\" gives back exactly the waste and no page cache\n",
		    p->file, p->line, p->col, p->name);
	}
}

int thps_cli_validate(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"keys", no_argument, NULL, 'k'},
	    {"check-owner", no_argument, NULL, 'o'},
	    {NULL, 0, NULL, 0},
	};
	struct thps_policy_set *all;
	unsigned flags = 0;
	int c, bad = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 'h':
			help();
			return 0;
		case 'k':
			thps_policy_print_keys(stdout);
			return 0;
		case 'o':
			flags |= THPS_POLICY_LOAD_CHECK_OWNER;
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "thpshrink validate: no FILE given (see --help)\n");
		return 2;
	}
	/* files given together are one set, as in the daemon's directory: names must be unique */
	all = thps_policy_set_new();
	if (!all) {
		fprintf(stderr, "thpshrink validate: out of memory\n");
		return 1;
	}
	for (int i = optind; i < argc; i++) {
		struct thps_policy_errors errs = {0};
		struct stat st;
		int r;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			struct thps_policy_set *set = NULL;
			r = thps_policy_set_load_dir(argv[i], flags, &set, &errs);
			if (r >= 0) {
				printf("%s: %zu policies OK\n", argv[i], set->n);
				note_reclaim(set, 0);
			}
			thps_policy_set_free(set);
		} else {
			size_t first = all->n;

			r = thps_policy_load_file(argv[i], flags, all, &errs);
			if (r >= 0) {
				printf("%s: %d policies OK\n", argv[i], r);
				note_reclaim(all, first);
			}
		}
		if (r < 0)
			bad = 1;
		print_errors(&errs);
	}
	{
		struct thps_policy_errors errs = {0};
		if (thps_policy_set_check_unique(all, &errs) < 0)
			bad = 1;
		print_errors(&errs);
	}
	thps_policy_set_free(all);
	return bad;
}
