/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Replays a committed corpus through a fuzz target, so that every fuzz finding stays a
 * regression test in `make check` (run without libFuzzer, under ASan in CI).
 * Usage: fuzz-NAME FILE|DIR... */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rbe");
	uint8_t *buf;
	long n;

	if (!f) {
		fprintf(stderr, "replay: cannot open '%s'\n", path);
		return -1;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	if (n < 0 || n > (16 << 20)) {
		fclose(f);
		fprintf(stderr, "replay: '%s' too large\n", path);
		return -1;
	}
	buf = malloc(n ? n : 1);
	if (!buf || fread(buf, 1, n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, errors = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: '%s' does not exist\n", argv[i]);
			errors++;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			struct dirent **names;
			int n = scandir(argv[i], &names, NULL, alphasort);
			for (int k = 0; k < n; k++) {
				char p[4096];
				if (names[k]->d_name[0] != '.') {
					snprintf(p, sizeof(p), "%s/%s", argv[i], names[k]->d_name);
					errors += replay_file(p) < 0;
					files++;
				}
				free(names[k]);
			}
			free(names);
		} else {
			errors += replay_file(argv[i]) < 0;
			files++;
		}
	}
	printf("replay: %d inputs, %d unreadable\n", files, errors);
	return errors || files == 0 ? 1 : 0;
}
