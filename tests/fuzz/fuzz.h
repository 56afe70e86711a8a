/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Every fuzz target defines this; replay.c (make check) and libFuzzer (CI) both call it. */
#pragma once
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated copy of the input, for parsers that take C strings. Caller frees. */
char *fuzz_strndup(const uint8_t *data, size_t size);
