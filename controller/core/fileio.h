/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Bounded reads of small kernel and config files. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads at most max-1 bytes of path into a NUL-terminated malloc'd buffer.
 * Returns 0, -EFBIG if the file is larger than max-1, or -errno. */
int read_file_bounded(const char *path, size_t max, char **ret, size_t *ret_len);
/* read_file_bounded() of root/fmt... (see thps_path): the common "a file under a root". */
int read_file_at(size_t max, char **ret, const char *root, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same from an open fd (read from its current offset). */
int read_fd_bounded(int fd, size_t max, char **ret, size_t *ret_len);

/* Reads a file holding one unsigned decimal number (e.g. memory.current).
 * Returns 0, -EINVAL if it holds something else, or -errno. */
int read_u64_file(const char *path, uint64_t *ret);

/* Finds "key value" (space separated, as memory.stat and /proc/vmstat) in text.
 * Returns 0, -ENOENT if absent, -EINVAL if the value is not a number. */
int find_keyed_u64(const char *text, const char *key, uint64_t *ret);

/* Writes s to an existing file (a kernel knob) in one write(). Returns 0 or -errno. */
int write_file_string(const char *path, const char *s);

/* Replaces path with len bytes of data, atomically: writes a new file "DIR/.NAME.XXXXXX"
 * (mkostemp: an unpredictable name opened O_EXCL, so nothing planted in the directory, no FIFO
 * nor symlink, can be opened instead), gives it mode, fsyncs it, renames it over path and
 * fsyncs the directory. Returns 0 or -errno (the temporary file is removed). */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* fsync()s a directory, so that a rename or unlink in it is durable. Returns 0 or -errno. */
int fsync_directory(const char *dir);

/* Parses a decimal u64 with nothing after it. Returns 0 or -EINVAL / -ERANGE. */
int parse_u64(const char *s, uint64_t *ret);

/* Whether a directory has any entry but . and .. (an unmounted /sys/kernel/debug has none).
 * False also when it cannot be opened. */
bool dir_has_entries(const char *path);
