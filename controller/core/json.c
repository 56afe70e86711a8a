/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json-c with bounds; see json.h. */
#include <errno.h>
#include <json-c/json.h>
#include <string.h>

#include "json.h"

int thps_json_parse_bounded(const char *buf, size_t len, size_t max_len, void **ret)
{
	struct json_tokener *tok;
	struct json_object *o;
	size_t used;

	if (len > max_len)
		return -EFBIG;
	if (len == 0 || memchr(buf, '\0', len))
		return -EBADMSG;
	tok = json_tokener_new_ex(THPS_JSON_DEPTH);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, buf, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(o);
		json_tokener_free(tok);
		return -EBADMSG;
	}
	used = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	for (; used < len; used++)
		if (!strchr(" \t\r\n", buf[used])) {
			json_object_put(o);
			return -EBADMSG;
		}
	*ret = o;
	return 0;
}

int thps_json_parse_object(const char *buf, size_t len, size_t max_len, void **ret)
{
	void *root;
	int r;

	r = thps_json_parse_bounded(buf, len, max_len, &root);
	if (r < 0)
		return r;
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return -EBADMSG;
	}
	*ret = root;
	return 0;
}
