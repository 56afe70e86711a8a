/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A small, bounded JSON parser that keeps the line and column of every key and value.
 * json-c gives no positions per node, and an operator needs "file:line:col: path" for every
 * error in a policy file. Hostile input is bounded: size, depth, node count, string length. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define PJSON_MAX_DEPTH	 32
#define PJSON_MAX_NODES	 65536
#define PJSON_MAX_STRING 4096

enum pjson_type { PJSON_NULL, PJSON_BOOL, PJSON_NUMBER, PJSON_STRING, PJSON_ARRAY, PJSON_OBJECT };

struct pjson {
	enum pjson_type type;
	unsigned line, col; /* of the value's first character, 1-based */
	char *key;	    /* member name when inside an object, else NULL */
	unsigned key_line, key_col;
	char *str;	     /* decoded string, or the raw text of a number */
	double num;	     /* PJSON_NUMBER */
	bool b;		     /* PJSON_BOOL */
	struct pjson *items; /* array elements / object members, in file order */
	size_t n_items;
};

/* Parses text[0..len). Returns 0, -ENOMEM, or -EINVAL with a message in err (size errsz) and
 * the error's position in *ret_line and *ret_col. Duplicate keys are kept (callers report them). */
int pjson_parse(const char *text, size_t len, struct pjson **ret, char *err, size_t errsz,
		unsigned *ret_line, unsigned *ret_col);
void pjson_free(struct pjson *j);
const char *pjson_type_name(enum pjson_type t);
/* The member called key, the first one if duplicated, or NULL. */
const struct pjson *pjson_get(const struct pjson *obj, const char *key);
