/*
 * import_lifetimes.c -- reader of lifetime tables {"mplan": "lifetimes/1"}.
 *
 * The seed 000 section 8 form, as a pure allocation problem:
 * {"mplan": "lifetimes/1", "name": "...", "steps": 6, "alignment": 16,
 *  "tensors": [{"name": "conv_y", "first_use": 1, "last_use": 2,
 *               "size": 8192, "resident": false}]}
 * "steps" (optional) is the number of steps; every last_use must be below
 * it. "alignment" (default 1) applies to every tensor unless the tensor has
 * its own. "class" may say "retained" for state that survives invocations.
 *
 * Invariants:
 *   1. Steps are 0-based inclusive indices; the run spans [0, steps - 1] or
 *      [0, max last_use].
 *   2. Every error names the file and "tensors[i] ('name').field".
 */
#include <stdio.h>

#include "import.h"
#include "json_util.h"

static const char *const lt_root_keys[] = {
    "mplan", "name", "steps", "alignment", "tensors", "description", NULL};
static const char *const lt_tensor_keys[] = {
    "name",     "first_use", "last_use",  "size",
    "resident", "class",     "alignment", NULL};

static mp_status lt_positive(const char *file, const char *where,
                             const char *key, int64_t v, mp_error *err) {
  if (v <= 0) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %s%s%s: %s is %lld; it must be >= 1", file, where,
                        *where ? "." : "", key, key, (long long)v);
  }
  return MP_OK;
}

static mp_status lt_align(const char *file, const char *where, int64_t v,
                          mp_error *err) {
  if (v <= 0 || !mp_is_pow2((size_t)v)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %salignment: %lld is not a power of two", file,
                        where, (long long)v);
  }
  return MP_OK;
}

typedef struct lt_ctx {
  const char *file;
  int64_t steps; /* -1: not given */
  int64_t align;
  size_t min_align;
  mp_problem *p;
  int64_t max_last;
  mp_error *err;
} lt_ctx;

static mp_status lt_class(lt_ctx *c, const cJSON *t, const char *where,
                          mp_class *cls) {
  bool resident = false;
  const char *name = NULL;
  mp_status st =
      json_bool(c->file, t, where, "resident", false, &resident, c->err);
  if (st == MP_OK)
    st = json_string(c->file, t, where, "class", false, &name, c->err);
  if (st != MP_OK) return st;
  *cls = resident ? MP_CLASS_RESIDENT : MP_CLASS_ACTIVATION;
  if (name && !mp_class_parse(name, cls)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: %s.class: unknown class '%s' (known: activation "
                        "resident retained)",
                        c->file, where, name);
  }
  return MP_OK;
}

static mp_status lt_tensor(lt_ctx *c, const cJSON *t, int i) {
  char where[96];
  int64_t first = 0, last = 0, size = 0, align = c->align;
  mp_buffer_desc d = {0};
  snprintf(where, sizeof where, "tensors[%d]", i);
  if (!cJSON_IsObject(t)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT, "%s: %s: expected an object",
                        c->file, where);
  }
  mp_status st = json_keys(c->file, t, where, lt_tensor_keys, c->err);
  if (st == MP_OK)
    st = json_string(c->file, t, where, "name", true, &d.name, c->err);
  if (st != MP_OK) return st;
  snprintf(where, sizeof where, "tensors[%d] ('%.48s')", i, d.name);
  if (st == MP_OK)
    st = json_int(c->file, t, where, "first_use", true, &first, c->err);
  if (st == MP_OK)
    st = json_int(c->file, t, where, "last_use", true, &last, c->err);
  if (st == MP_OK)
    st = json_int(c->file, t, where, "size", true, &size, c->err);
  if (st == MP_OK)
    st = json_int(c->file, t, where, "alignment", false, &align, c->err);
  if (st == MP_OK) st = lt_class(c, t, where, &d.cls);
  if (st == MP_OK) st = lt_positive(c->file, where, "size", size, c->err);
  if (st != MP_OK) return st;
  if (align != c->align) {
    char w[112];
    snprintf(w, sizeof w, "%s.", where);
    st = lt_align(c->file, w, align, c->err);
    if (st != MP_OK) return st;
  }
  if (first < 0) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: %s.first_use: %lld is negative", c->file, where,
                        (long long)first);
  }
  if (first > last) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: %s: first_use %lld is after last_use %lld",
                        c->file, where, (long long)first, (long long)last);
  }
  if (c->steps >= 0 && last >= c->steps) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: %s.last_use: %lld is not below steps (%lld)",
                        c->file, where, (long long)last, (long long)c->steps);
  }
  d.size = (size_t)size;
  d.alignment = (size_t)align > c->min_align ? (size_t)align : c->min_align;
  d.first = first;
  d.last = last;
  if (last > c->max_last) c->max_last = last;
  st = mp_problem_add(c->p, &d, NULL, c->err);
  if (st != MP_OK) mp_error_prefix(c->err, "%s: %s", c->file, where);
  return st;
}

mp_status mp_import_lifetimes(const char *file, const cJSON *root,
                              size_t min_align, const mp_alloc *a,
                              mp_problem **out, mp_error *err) {
  const char *name = "";
  const cJSON *tensors = NULL;
  lt_ctx c = {file, -1, 1, min_align ? min_align : 1, NULL, 0, err};
  mp_status st = json_format(file, root, "lifetimes/1", err);
  if (st == MP_OK) st = json_keys(file, root, "", lt_root_keys, err);
  if (st == MP_OK) st = json_string(file, root, "", "name", false, &name, err);
  if (st == MP_OK) st = json_int(file, root, "", "steps", false, &c.steps, err);
  if (st == MP_OK)
    st = json_int(file, root, "", "alignment", false, &c.align, err);
  if (st == MP_OK)
    st = json_array(file, root, "", "tensors", true, &tensors, err);
  if (st == MP_OK && c.steps != -1)
    st = lt_positive(file, "", "steps", c.steps, err);
  if (st == MP_OK) st = lt_align(file, "", c.align, err);
  if (st == MP_OK && cJSON_GetArraySize(tensors) == 0) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT, "%s: tensors: the list is empty",
                      file);
  }
  if (st == MP_OK) st = mp_problem_create(a, name, &c.p, err);
  int i = 0;
  for (const cJSON *t = tensors ? tensors->child : NULL; st == MP_OK && t;
       t = t->next, i++) {
    st = lt_tensor(&c, t, i);
  }
  if (st == MP_OK) {
    st = mp_problem_set_span(c.p, 0, c.steps > 0 ? c.steps - 1 : c.max_last,
                             err);
  }
  if (st == MP_OK) st = mp_problem_seal(c.p, err);
  if (st != MP_OK) {
    mp_problem_destroy(c.p);
    return st;
  }
  *out = c.p;
  return MP_OK;
}
