/*
 * json_util.h -- cJSON with error positions and element paths.
 *
 * Every helper takes the file name and the JSON path of the element it
 * reads ("tensors[3]"), so an error names the file, the element and the
 * problem: "m.json: tensors[3].shape[1]: expected an integer or a dim
 * name". Syntax errors carry line:column. Private to the analyzer.
 */
#ifndef MPLAN_JSON_UTIL_H
#define MPLAN_JSON_UTIL_H

#include <cJSON.h>

#include "mplan/base.h"

/* Parses text; on a syntax error reports "file:line:col: ...". Returns an
 * owned tree (release with cJSON_Delete). */
mp_status json_parse(const char *file, const char *text, size_t len,
                     cJSON **out, mp_error *err);

/* Rejects keys of obj not listed in allowed (NULL-terminated) and keys that
 * appear twice. where names obj. */
mp_status json_keys(const char *file, const cJSON *obj, const char *where,
                    const char *const *allowed, mp_error *err);

/* Typed member access. A missing optional member leaves *out unchanged and
 * returns MP_OK; a missing required one or a wrong type is an error. */
mp_status json_string(const char *file, const cJSON *obj, const char *where,
                      const char *key, bool required, const char **out,
                      mp_error *err);
mp_status json_int(const char *file, const cJSON *obj, const char *where,
                   const char *key, bool required, int64_t *out, mp_error *err);
mp_status json_bool(const char *file, const cJSON *obj, const char *where,
                    const char *key, bool required, bool *out, mp_error *err);
mp_status json_array(const char *file, const cJSON *obj, const char *where,
                     const char *key, bool required, const cJSON **out,
                     mp_error *err);
mp_status json_object(const char *file, const cJSON *obj, const char *where,
                      const char *key, bool required, const cJSON **out,
                      mp_error *err);

/* true when item is a number holding an integer exactly (|v| <= 2^53). */
bool json_exact_int(const cJSON *item, int64_t *out);

/* Checks root is an object whose "mplan" member equals want (for example
 * "graph/1"); names the version found when it differs. */
mp_status json_format(const char *file, const cJSON *root, const char *want,
                      mp_error *err);

#endif /* MPLAN_JSON_UTIL_H */
