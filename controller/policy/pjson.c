/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Recursive descent over RFC 8259 JSON with positions. Strict: no comments, no NaN, no
 * trailing commas, UTF-8 only, no NUL in strings (it would cut a C string short). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "pjson.h"
#include "text.h"

struct parser {
	const char *s;
	size_t len, pos;
	unsigned line, col;
	size_t nodes;
	char *err;
	size_t errsz;
	unsigned err_line, err_col;
	int r;
};

static int fail(struct parser *p, const char *fmt, ...) _printf_(2, 3);
static int fail(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	if (p->r == 0) {
		va_start(ap, fmt);
		vsnprintf(p->err, p->errsz, fmt, ap);
		va_end(ap);
		p->err_line = p->line;
		p->err_col = p->col;
		p->r = -EINVAL;
	}
	return p->r;
}

static int peek(const struct parser *p)
{
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static void advance(struct parser *p)
{
	if (p->pos >= p->len)
		return;
	if (p->s[p->pos] == '\n') {
		p->line++;
		p->col = 1;
	} else if (((unsigned char)p->s[p->pos] & 0xc0) != 0x80) {
		p->col++; /* columns count characters, not UTF-8 continuation bytes */
	}
	p->pos++;
}

static void skip_ws(struct parser *p)
{
	for (int c = peek(p); c == ' ' || c == '\t' || c == '\n' || c == '\r'; c = peek(p))
		advance(p);
}

static void describe(int c, char *buf, size_t size)
{
	if (c < 0)
		snprintf(buf, size, "end of file");
	else if (c >= 0x20 && c < 0x7f)
		snprintf(buf, size, "'%c'", c);
	else
		snprintf(buf, size, "byte 0x%02x", (unsigned)c);
}

static int expect_word(struct parser *p, const char *w)
{
	size_t n = strlen(w);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n) != 0)
		return fail(p, "invalid literal, expected %s", w);
	for (size_t i = 0; i < n; i++)
		advance(p);
	return 0;
}

static int hex4(struct parser *p, unsigned *ret)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		int c = peek(p);
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return fail(p, "invalid \\u escape in string");
		advance(p);
	}
	*ret = v;
	return 0;
}

static int put_utf8(char *buf, size_t *n, uint32_t cp)
{
	if (cp < 0x80) {
		buf[(*n)++] = (char)cp;
	} else if (cp < 0x800) {
		buf[(*n)++] = (char)(0xc0 | (cp >> 6));
		buf[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		buf[(*n)++] = (char)(0xe0 | (cp >> 12));
		buf[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		buf[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		buf[(*n)++] = (char)(0xf0 | (cp >> 18));
		buf[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		buf[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		buf[(*n)++] = (char)(0x80 | (cp & 0x3f));
	}
	return 0;
}

static int parse_string(struct parser *p, char **ret)
{
	_cleanup_free_ char *buf = malloc(PJSON_MAX_STRING + 4);
	size_t n = 0;

	if (!buf)
		return p->r = -ENOMEM;
	advance(p); /* opening quote */
	for (;;) {
		int c = peek(p);
		if (n > PJSON_MAX_STRING)
			return fail(p, "string longer than %d bytes", PJSON_MAX_STRING);
		if (c < 0)
			return fail(p, "unterminated string");
		if (c == '"') {
			advance(p);
			break;
		}
		if (c < 0x20)
			return fail(p, "control character in string (escape it)");
		if (c == '\\') {
			advance(p);
			c = peek(p);
			const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
			const char *e = c > 0 ? strchr(from, c) : NULL;
			if (e) {
				buf[n++] = to[e - from];
				advance(p);
				continue;
			}
			if (c != 'u')
				return fail(p, "invalid escape in string");
			advance(p);
			unsigned cp, lo;
			if (hex4(p, &cp) < 0)
				return p->r;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return fail(p, "lone surrogate in \\u escape");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (peek(p) != '\\')
					return fail(p, "lone surrogate in \\u escape");
				advance(p);
				if (peek(p) != 'u')
					return fail(p, "lone surrogate in \\u escape");
				advance(p);
				if (hex4(p, &lo) < 0)
					return p->r;
				if (lo < 0xdc00 || lo > 0xdfff)
					return fail(p, "lone surrogate in \\u escape");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			if (cp == 0)
				return fail(p, "\\u0000 is not allowed in strings");
			put_utf8(buf, &n, cp);
			continue;
		}
		size_t k = thps_utf8_len((const unsigned char *)p->s + p->pos, p->len - p->pos);
		if (k == 0)
			return fail(p, "invalid UTF-8 in string");
		for (size_t i = 0; i < k; i++) {
			buf[n++] = p->s[p->pos];
			advance(p);
		}
	}
	buf[n] = 0;
	/* give the slack back: a hostile file may hold tens of thousands of strings */
	*ret = realloc(buf, n + 1) ?: buf;
	buf = NULL;
	return 0;
}

static int parse_number(struct parser *p, struct pjson *j)
{
	size_t start = p->pos;
	char *end;

	if (peek(p) == '-')
		advance(p);
	if (peek(p) == '0') {
		advance(p);
	} else if (peek(p) >= '1' && peek(p) <= '9') {
		while (peek(p) >= '0' && peek(p) <= '9')
			advance(p);
	} else {
		return fail(p, "invalid number");
	}
	if (peek(p) == '.') {
		advance(p);
		if (!(peek(p) >= '0' && peek(p) <= '9'))
			return fail(p, "invalid number: digit expected after '.'");
		while (peek(p) >= '0' && peek(p) <= '9')
			advance(p);
	}
	if (peek(p) == 'e' || peek(p) == 'E') {
		advance(p);
		if (peek(p) == '+' || peek(p) == '-')
			advance(p);
		if (!(peek(p) >= '0' && peek(p) <= '9'))
			return fail(p, "invalid number: digit expected in exponent");
		while (peek(p) >= '0' && peek(p) <= '9')
			advance(p);
	}
	if (p->pos - start > 64)
		return fail(p, "number longer than 64 characters");
	j->str = strndup(p->s + start, p->pos - start);
	if (!j->str)
		return p->r = -ENOMEM;
	j->num = strtod(j->str, &end);
	j->type = PJSON_NUMBER;
	return 0;
}

static int parse_value(struct parser *p, struct pjson *j, unsigned depth);

static int grow(struct parser *p, struct pjson *j, size_t *cap)
{
	if (++p->nodes > PJSON_MAX_NODES)
		return fail(p, "more than %d values", PJSON_MAX_NODES);
	if (j->n_items == *cap) {
		size_t c = *cap ? *cap * 2 : 4;
		struct pjson *n = realloc(j->items, c * sizeof(*n));
		if (!n)
			return p->r = -ENOMEM;
		j->items = n;
		*cap = c;
	}
	memset(&j->items[j->n_items], 0, sizeof(j->items[0]));
	j->n_items++;
	return 0;
}

static int parse_container(struct parser *p, struct pjson *j, unsigned depth)
{
	bool object = peek(p) == '{';
	int close = object ? '}' : ']';
	size_t cap = 0;
	char what[32];

	if (depth >= PJSON_MAX_DEPTH)
		return fail(p, "nested deeper than %d levels", PJSON_MAX_DEPTH);
	j->type = object ? PJSON_OBJECT : PJSON_ARRAY;
	advance(p);
	skip_ws(p);
	if (peek(p) == close) {
		advance(p);
		return 0;
	}
	for (;;) {
		struct pjson *item;
		if (grow(p, j, &cap) < 0)
			return p->r;
		item = &j->items[j->n_items - 1];
		skip_ws(p);
		if (object) {
			if (peek(p) != '"') {
				describe(peek(p), what, sizeof(what));
				return fail(p, "expected a key in double quotes, got %s", what);
			}
			item->key_line = p->line;
			item->key_col = p->col;
			if (parse_string(p, &item->key) < 0)
				return p->r;
			skip_ws(p);
			if (peek(p) != ':') {
				describe(peek(p), what, sizeof(what));
				return fail(p, "expected ':' after key, got %s", what);
			}
			advance(p);
			skip_ws(p);
		}
		if (parse_value(p, item, depth + 1) < 0)
			return p->r;
		skip_ws(p);
		if (peek(p) == ',') {
			advance(p);
			skip_ws(p);
			if (peek(p) == close)
				return fail(p, "trailing comma");
			continue;
		}
		if (peek(p) == close) {
			advance(p);
			return 0;
		}
		describe(peek(p), what, sizeof(what));
		return fail(p, "expected ',' or '%c', got %s", close, what);
	}
}

static int parse_value(struct parser *p, struct pjson *j, unsigned depth)
{
	int c = peek(p);
	char what[32];

	j->line = p->line;
	j->col = p->col;
	switch (c) {
	case '{':
	case '[':
		return parse_container(p, j, depth);
	case '"':
		j->type = PJSON_STRING;
		return parse_string(p, &j->str);
	case 't':
		j->type = PJSON_BOOL;
		j->b = true;
		return expect_word(p, "true");
	case 'f':
		j->type = PJSON_BOOL;
		return expect_word(p, "false");
	case 'n':
		j->type = PJSON_NULL;
		return expect_word(p, "null");
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return parse_number(p, j);
		describe(c, what, sizeof(what));
		return fail(p, "expected a JSON value, got %s", what);
	}
}

static void pjson_clear(struct pjson *j)
{
	for (size_t i = 0; i < j->n_items; i++)
		pjson_clear(&j->items[i]);
	free(j->items);
	free(j->key);
	free(j->str);
}

void pjson_free(struct pjson *j)
{
	if (!j)
		return;
	pjson_clear(j);
	free(j);
}

int pjson_parse(const char *text, size_t len, struct pjson **ret, char *err, size_t errsz,
		unsigned *ret_line, unsigned *ret_col)
{
	struct parser p = {.s = text, .len = len, .line = 1, .col = 1, .err = err, .errsz = errsz};
	struct pjson *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	skip_ws(&p);
	if (parse_value(&p, j, 0) == 0) {
		skip_ws(&p);
		if (p.pos < p.len)
			fail(&p, "unexpected data after the JSON value");
	}
	if (p.r < 0) {
		pjson_free(j);
		if (ret_line)
			*ret_line = p.err_line;
		if (ret_col)
			*ret_col = p.err_col;
		return p.r;
	}
	*ret = j;
	return 0;
}

const char *pjson_type_name(enum pjson_type t)
{
	static const char *const names[] = {"null",   "boolean", "number",
					    "string", "array",	 "object"};
	return t < ELEMENTSOF(names) ? names[t] : "?";
}

const struct pjson *pjson_get(const struct pjson *obj, const char *key)
{
	if (!obj || obj->type != PJSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n_items; i++)
		if (!strcmp(obj->items[i].key, key))
			return &obj->items[i];
	return NULL;
}
