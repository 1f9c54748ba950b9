/*
 * import_backend.c -- reader of backend descriptions {"mplan": "backend/1"}.
 *
 * Invariants:
 *   1. Every alignment is a power of two >= 1.
 *   2. Fields this version cannot honour (regions, banks) are refused with
 *      a clear error instead of being ignored: a plan that silently
 *      disregards a hardware constraint would be wrong, not merely worse.
 */
#include <stdio.h>
#include <string.h>

#include "json_util.h"
#include "mplan/backend.h"
#include "mplan/file.h"

void mp_backend_default(mp_backend *b) {
  memset(b, 0, sizeof *b);
  snprintf(b->name, sizeof b->name, "default");
  b->alignment = 16;
}

size_t mp_backend_align(const mp_backend *b, mp_tensor_kind k) {
  size_t a = (unsigned)k < MP_TENSOR_KIND_COUNT ? b->kind_alignment[k] : 0;
  return a ? a : b->alignment;
}

static const char *const be_keys[] = {
    "mplan", "name",    "description", "alignment", "class_alignment",
    "vlen",  "regions", "banks",       NULL};

static mp_status be_align(const char *file, const char *where, int64_t v,
                          size_t *out, mp_error *err) {
  if (v <= 0 || !mp_is_pow2((size_t)v) || v > (1 << 30)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %s: %lld is not a power of two between 1 and "
                        "2^30",
                        file, where, (long long)v);
  }
  *out = (size_t)v;
  return MP_OK;
}

static mp_status be_classes(const char *file, const cJSON *root, mp_backend *b,
                            mp_error *err) {
  const cJSON *ca = NULL;
  mp_status st =
      json_object(file, root, "", "class_alignment", false, &ca, err);
  for (const cJSON *it = ca ? ca->child : NULL; st == MP_OK && it;
       it = it->next) {
    mp_tensor_kind k;
    int64_t v;
    char where[96];
    snprintf(where, sizeof where, "class_alignment.%.48s", it->string);
    if (!mp_tensor_kind_parse(it->string, &k)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: %s: unknown class (known: input weight "
                          "activation output retained)",
                          file, where);
    }
    if (!json_exact_int(it, &v)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: %s: expected an integer",
                          file, where);
    }
    st = be_align(file, where, v, &b->kind_alignment[k], err);
  }
  return st;
}

static mp_status be_parse(const char *file, const cJSON *root, mp_backend *b,
                          mp_error *err) {
  const char *name = NULL;
  int64_t align = 0, vlen = 0;
  mp_status st = json_format(file, root, "backend/1", err);
  if (st == MP_OK) st = json_keys(file, root, "", be_keys, err);
  if (st == MP_OK) st = json_string(file, root, "", "name", false, &name, err);
  if (st == MP_OK)
    st = json_int(file, root, "", "alignment", true, &align, err);
  if (st == MP_OK) st = json_int(file, root, "", "vlen", false, &vlen, err);
  if (st != MP_OK) return st;
  st = be_align(file, "alignment", align, &b->alignment, err);
  if (st == MP_OK) st = be_classes(file, root, b, err);
  if (st != MP_OK) return st;
  if (vlen < 0 || vlen > 65536 || (vlen && !mp_is_pow2((size_t)vlen))) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: vlen: %lld is not a power of two up to 65536",
                        file, (long long)vlen);
  }
  b->vlen = (uint32_t)vlen;
  if (name) snprintf(b->name, sizeof b->name, "%s", name);
  static const char *const later[] = {"regions", "banks"};
  for (size_t i = 0; i < sizeof later / sizeof *later; i++) {
    if (cJSON_GetObjectItemCaseSensitive(root, later[i])) {
      return mp_error_set(err, MP_ERR_UNSUPPORTED,
                          "%s: %s: memory %s are not supported by this "
                          "version of mplan",
                          file, later[i], later[i]);
    }
  }
  return MP_OK;
}

mp_status mp_backend_load(const char *path, mp_backend *out, mp_error *err) {
  char *text = NULL;
  size_t len;
  cJSON *root = NULL;
  mp_backend b;
  mp_backend_default(&b);
  snprintf(b.name, sizeof b.name, "%s", path);
  mp_status st = mp_file_read(path, NULL, &text, &len, err);
  if (st == MP_OK) st = json_parse(path, text, len, &root, err);
  if (st == MP_OK) st = be_parse(path, root, &b, err);
  cJSON_Delete(root);
  mp_free(NULL, text);
  if (st == MP_OK) *out = b;
  return st;
}
