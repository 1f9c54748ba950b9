/*
 * json_util.c -- cJSON helpers that produce one-line, located errors.
 *
 * Invariants:
 *   1. Numbers are accepted as integers only when exactly representable
 *      (cJSON stores doubles): |v| <= 2^53 and no fractional part.
 *   2. Helpers never write their out-parameter on failure.
 */
#include "json_util.h"

#include <math.h>
#include <string.h>

static void json_line_col(const char *text, size_t off, size_t *line,
                          size_t *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off; i++) {
    if (text[i] == '\n') {
      ++*line;
      *col = 1;
    } else {
      ++*col;
    }
  }
}

/* Where a truncated document leaves something open: the offset of an
 * unterminated string's quote or of the innermost unclosed '{' or '['
 * outside strings, or len when everything closes.
 * Only used to word an error cJSON has already found. */
static size_t json_unclosed(const char *text, size_t len) {
  size_t stack[64], depth = 0, str_start = 0;
  bool in_str = false;
  for (size_t i = 0; i < len; i++) {
    char ch = text[i];
    if (in_str) {
      if (ch == '\\')
        i++;
      else if (ch == '"')
        in_str = false;
    } else if (ch == '"') {
      in_str = true;
      str_start = i;
    } else if (ch == '{' || ch == '[') {
      if (depth < 64) stack[depth] = i;
      depth++;
    } else if ((ch == '}' || ch == ']') && depth) {
      depth--;
    }
  }
  if (in_str) return str_start;
  return depth ? stack[depth <= 64 ? depth - 1 : 63] : len;
}

mp_status json_parse(const char *file, const char *text, size_t len,
                     cJSON **out, mp_error *err) {
  const char *end = NULL;
  size_t line, col;
  /* JSON text is UTF-8 (RFC 8259), and names from it reach every report */
  size_t ok = mp_utf8_prefix(text, len);
  if (ok < len) {
    json_line_col(text, ok, &line, &col);
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s:%zu:%zu: byte 0x%02x: %s",
                        file, line, col, (unsigned char)text[ok],
                        text[ok] ? "not valid UTF-8 (JSON text is UTF-8)"
                                 : "a NUL byte in JSON text");
  }
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  size_t off =
      end && end >= text && end <= text + len ? (size_t)(end - text) : len;
  if (!root) {
    size_t open = json_unclosed(text, len);
    if (open < len) {
      json_line_col(text, open, &line, &col);
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s:%zu:%zu: malformed JSON: unexpected end of "
                          "input ('%c' opened here is never closed)",
                          file, line, col, text[open]);
    }
    json_line_col(text, off, &line, &col);
    if (off >= len) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s:%zu:%zu: malformed JSON: unexpected end of "
                          "input",
                          file, line, col);
    }
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s:%zu:%zu: malformed JSON near '%.12s'", file, line,
                        col, text + off);
  }
  /* cJSON stops after the first value; anything but space after it is an
   * error, not something to ignore. */
  while (off < len && (text[off] == ' ' || text[off] == '\n' ||
                       text[off] == '\r' || text[off] == '\t')) {
    off++;
  }
  if (off < len) {
    cJSON_Delete(root);
    json_line_col(text, off, &line, &col);
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s:%zu:%zu: malformed JSON: data after the end of "
                        "the document",
                        file, line, col);
  }
  *out = root;
  return MP_OK;
}

static const char *json_sep(const char *where) {
  return where && *where ? "." : "";
}

mp_status json_keys(const char *file, const cJSON *obj, const char *where,
                    const char *const *allowed, mp_error *err) {
  if (!cJSON_IsObject(obj)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: %s: expected an object",
                        file, where && *where ? where : "document");
  }
  for (const cJSON *it = obj->child; it; it = it->next) {
    bool known = false;
    for (const char *const *a = allowed; *a && !known; a++) {
      known = strcmp(*a, it->string) == 0;
    }
    if (!known) {
      return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: %s%s%s: unknown field",
                          file, where, json_sep(where), it->string);
    }
    for (const cJSON *o = obj->child; o != it; o = o->next) {
      if (strcmp(o->string, it->string) == 0) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "%s: %s%s%s: field appears twice", file, where,
                            json_sep(where), it->string);
      }
    }
  }
  return MP_OK;
}

static mp_status json_member(const char *file, const cJSON *obj,
                             const char *where, const char *key, bool required,
                             const cJSON **item, mp_error *err) {
  *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!*item && required) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %s%s%s: required field is missing", file, where,
                        json_sep(where), key);
  }
  return MP_OK;
}

static mp_status json_type_error(const char *file, const char *where,
                                 const char *key, const char *want,
                                 mp_error *err) {
  return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: %s%s%s: expected %s", file,
                      where, json_sep(where), key, want);
}

mp_status json_string(const char *file, const cJSON *obj, const char *where,
                      const char *key, bool required, const char **out,
                      mp_error *err) {
  const cJSON *it;
  mp_status st = json_member(file, obj, where, key, required, &it, err);
  if (st != MP_OK || !it) return st;
  if (!cJSON_IsString(it)) {
    return json_type_error(file, where, key, "a string", err);
  }
  *out = it->valuestring;
  return MP_OK;
}

bool json_exact_int(const cJSON *item, int64_t *out) {
  if (!cJSON_IsNumber(item)) return false;
  double v = item->valuedouble;
  if (!(fabs(v) <= 9007199254740992.0) || floor(v) != v) return false;
  *out = (int64_t)v;
  return true;
}

mp_status json_int(const char *file, const cJSON *obj, const char *where,
                   const char *key, bool required, int64_t *out,
                   mp_error *err) {
  const cJSON *it;
  int64_t v;
  mp_status st = json_member(file, obj, where, key, required, &it, err);
  if (st != MP_OK || !it) return st;
  if (!json_exact_int(it, &v)) {
    return json_type_error(file, where, key, "an integer (exact, at most 2^53)",
                           err);
  }
  *out = v;
  return MP_OK;
}

mp_status json_bool(const char *file, const cJSON *obj, const char *where,
                    const char *key, bool required, bool *out, mp_error *err) {
  const cJSON *it;
  mp_status st = json_member(file, obj, where, key, required, &it, err);
  if (st != MP_OK || !it) return st;
  if (!cJSON_IsBool(it))
    return json_type_error(file, where, key, "true or false", err);
  *out = cJSON_IsTrue(it);
  return MP_OK;
}

mp_status json_array(const char *file, const cJSON *obj, const char *where,
                     const char *key, bool required, const cJSON **out,
                     mp_error *err) {
  const cJSON *it;
  mp_status st = json_member(file, obj, where, key, required, &it, err);
  if (st != MP_OK || !it) return st;
  if (!cJSON_IsArray(it))
    return json_type_error(file, where, key, "an array", err);
  *out = it;
  return MP_OK;
}

mp_status json_object(const char *file, const cJSON *obj, const char *where,
                      const char *key, bool required, const cJSON **out,
                      mp_error *err) {
  const cJSON *it;
  mp_status st = json_member(file, obj, where, key, required, &it, err);
  if (st != MP_OK || !it) return st;
  if (!cJSON_IsObject(it)) {
    return json_type_error(file, where, key, "an object", err);
  }
  *out = it;
  return MP_OK;
}

mp_status json_format(const char *file, const cJSON *root, const char *want,
                      mp_error *err) {
  const char *got = NULL;
  if (!cJSON_IsObject(root)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: expected a JSON object with \"mplan\": \"%s\"",
                        file, want);
  }
  mp_status st = json_string(file, root, "", "mplan", true, &got, err);
  if (st != MP_OK) return st;
  if (strcmp(got, want) != 0) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: mplan: unsupported format '%s' (expected '%s')",
                        file, got, want);
  }
  return MP_OK;
}
