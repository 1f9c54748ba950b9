/*
 * import_graph.c -- reader of graph JSON {"mplan": "graph/1"} (DESIGN.md).
 *
 * {"mplan": "graph/1", "name": "...", "dims": {"N": 1, "S": null},
 *  "tensors": [{"name", "dtype", "shape": [..numbers or dim names..],
 *               "kind": "input|weight|activation|output|retained",
 *               "layout": "NCHW"}],
 *  "ops": [{"name", "op", "inputs": [...], "outputs": [...], "attrs": {}}],
 *  "outputs": ["..."]}
 *
 * Invariants:
 *   1. Unknown fields are errors (a typo must not be silently ignored).
 *   2. Dim names used in shapes must be declared in "dims".
 *   3. Every error names the file and the JSON path of the element.
 *   4. The returned graph is linked (producers, consumers, structure
 *      checked) but dims are not yet bound nor sizes resolved.
 *   5. An activation or output without "shape" is pending: shape inference
 *      derives it and its dtype ("dtype" is still required, as documentation
 *      of the file; the inferred one is used).
 */
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "json_util.h"

typedef struct gin {
  const char *file;
  mp_graph *g;
  const mp_alloc *a;
  mp_error *err;
} gin;

static const char *const gin_root_keys[] = {
    "mplan", "name",    "description", "dims", "tensors",
    "ops",   "outputs", "subgraphs",   NULL};
static const char *const gin_tensor_keys[] = {"name", "dtype",  "shape",
                                              "kind", "layout", "description",
                                              "data", "pin",    NULL};
static const char *const gin_op_keys[] = {
    "name", "op", "inputs", "outputs", "attrs", "description", NULL};

static mp_status gin_dims(gin *in, const cJSON *root) {
  const cJSON *dims = NULL;
  mp_status st = json_object(in->file, root, "", "dims", false, &dims, in->err);
  if (st != MP_OK || !dims) return st;
  for (const cJSON *d = dims->child; d; d = d->next) {
    int64_t v = -1;
    if (!cJSON_IsNull(d) && (!json_exact_int(d, &v) || v <= 0)) {
      return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                          "%s: dims.%s: expected an integer >= 1 or null",
                          in->file, d->string);
    }
    st = mp_graph_add_dim(in->g, d->string, v, NULL, in->err);
    if (st != MP_OK) return st;
  }
  return MP_OK;
}

static mp_status gin_shape(gin *in, const cJSON *shape, const char *where,
                           mp_tensor_desc *d) {
  int n = cJSON_GetArraySize(shape);
  if (n > MP_MAX_RANK) {
    return mp_error_set(in->err, MP_ERR_UNSUPPORTED,
                        "%s: %s.shape: rank %d exceeds the maximum of %d",
                        in->file, where, n, MP_MAX_RANK);
  }
  d->rank = (uint32_t)n;
  int k = 0;
  for (const cJSON *it = shape->child; it; it = it->next, k++) {
    int64_t v;
    int32_t sym;
    if (cJSON_IsString(it)) {
      if (!mp_graph_find_dim(in->g, it->valuestring, &sym)) {
        return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                            "%s: %s.shape[%d]: dim '%s' is not declared in "
                            "\"dims\"",
                            in->file, where, k, it->valuestring);
      }
      d->shape[k] = (mp_dim){-1, sym};
    } else if (json_exact_int(it, &v)) {
      if (v <= 0) {
        return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                            "%s: %s.shape[%d]: dim %lld must be >= 1", in->file,
                            where, k, (long long)v);
      }
      d->shape[k] = (mp_dim){v, MP_NO_SYM};
    } else {
      return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                          "%s: %s.shape[%d]: expected an integer or a dim "
                          "name",
                          in->file, where, k);
    }
  }
  return MP_OK;
}

static mp_status gin_tensor(gin *in, const cJSON *t, int i) {
  char where[64];
  snprintf(where, sizeof where, "tensors[%d]", i);
  mp_tensor_desc d = {.kind = MP_TENSOR_ACTIVATION};
  const char *dtype = NULL, *kind = NULL;
  const cJSON *shape = NULL;
  if (!cJSON_IsObject(t)) {
    return mp_error_set(in->err, MP_ERR_BAD_INPUT, "%s: %s: expected an object",
                        in->file, where);
  }
  mp_status st = json_keys(in->file, t, where, gin_tensor_keys, in->err);
  if (st == MP_OK)
    st = json_string(in->file, t, where, "name", true, &d.name, in->err);
  if (st != MP_OK) return st;
  snprintf(where, sizeof where, "tensors[%d] ('%.32s')", i, d.name);
  if (cJSON_GetObjectItemCaseSensitive(t, "data")) {
    return mp_error_set(in->err, MP_ERR_UNSUPPORTED,
                        "%s: %s.data: tensor data is not supported by this "
                        "version of mplan",
                        in->file, where);
  }
  if (st == MP_OK)
    st = json_string(in->file, t, where, "dtype", true, &dtype, in->err);
  if (st == MP_OK)
    st = json_string(in->file, t, where, "kind", false, &kind, in->err);
  if (st == MP_OK)
    st = json_string(in->file, t, where, "layout", false, &d.layout, in->err);
  if (st == MP_OK)
    st = json_array(in->file, t, where, "shape", false, &shape, in->err);
  int64_t pin = -1;
  if (st == MP_OK)
    st = json_int(in->file, t, where, "pin", false, &pin, in->err);
  if (st != MP_OK) return st;
  if (cJSON_GetObjectItemCaseSensitive(t, "pin")) {
    if (pin < 0) {
      return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                          "%s: %s.pin: offset %lld is negative", in->file,
                          where, (long long)pin);
    }
    d.pinned = true;
    d.pin = (size_t)pin;
  }
  if (!mp_dtype_parse(dtype, &d.dtype)) {
    return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                        "%s: %s.dtype: unknown dtype '%s' (known: f32 f16 "
                        "bf16 i8 u8 i32 i64 bool)",
                        in->file, where, dtype);
  }
  if (kind && !mp_tensor_kind_parse(kind, &d.kind)) {
    return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                        "%s: %s.kind: unknown kind '%s' (known: input weight "
                        "activation output retained)",
                        in->file, where, kind);
  }
  /* An activation's or output's shape may be left to shape inference
   * (DESIGN.md); inputs, weights and retained state must give theirs. */
  if (!shape && d.kind != MP_TENSOR_ACTIVATION && d.kind != MP_TENSOR_OUTPUT) {
    return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                        "%s: %s.shape: required for a tensor of kind %s",
                        in->file, where, mp_tensor_kind_name(d.kind));
  }
  d.pending = shape == NULL;
  st = shape ? gin_shape(in, shape, where, &d) : MP_OK;
  if (st == MP_OK) st = mp_graph_add_tensor(in->g, &d, NULL, in->err);
  return st;
}

/* Resolves a list of tensor names to indices; "" is an omitted optional
 * input (-1) where allow_empty. Returns an owned array in *ids. */
static mp_status gin_names(gin *in, const cJSON *arr, const char *where,
                           const char *key, bool allow_empty, int32_t **ids,
                           uint32_t *n) {
  int count = cJSON_GetArraySize(arr), k = 0;
  int32_t *v = mp_calloc(in->a, count ? (size_t)count : 1, sizeof *v);
  if (!v)
    return mp_error_set(in->err, MP_ERR_NOMEM, "%s: out of memory", in->file);
  for (const cJSON *it = arr->child; it; it = it->next, k++) {
    if (!cJSON_IsString(it)) {
      mp_free(in->a, v);
      return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                          "%s: %s.%s[%d]: expected a tensor name", in->file,
                          where, key, k);
    }
    if (allow_empty && it->valuestring[0] == '\0') {
      v[k] = -1;
    } else if (!mp_graph_find_tensor(in->g, it->valuestring, &v[k])) {
      mp_free(in->a, v);
      return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                          "%s: %s.%s[%d]: tensor '%s' is not declared in "
                          "\"tensors\"",
                          in->file, where, key, k, it->valuestring);
    }
  }
  *ids = v;
  *n = (uint32_t)count;
  return MP_OK;
}

/* Classifies one attribute value; lists must be all numbers. */
static mp_status gin_attr(gin *in, const cJSON *v, const char *where,
                          mp_attr *at, int64_t *ints, double *floats) {
  int64_t iv;
  at->name = v->string;
  if (json_exact_int(v, &iv)) {
    at->kind = MP_ATTR_INT;
    at->i = iv;
  } else if (cJSON_IsNumber(v)) {
    at->kind = MP_ATTR_FLOAT;
    at->f = v->valuedouble;
  } else if (cJSON_IsString(v)) {
    at->kind = MP_ATTR_STRING;
    at->s = v->valuestring;
  } else if (cJSON_IsArray(v)) {
    bool all_int = true;
    size_t k = 0;
    for (const cJSON *e = v->child; e; e = e->next, k++) {
      if (!cJSON_IsNumber(e)) {
        return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                            "%s: %s.attrs.%s[%zu]: expected a number", in->file,
                            where, v->string, k);
      }
      all_int = all_int && json_exact_int(e, &ints[k]);
      floats[k] = e->valuedouble;
    }
    at->kind = all_int ? MP_ATTR_INTS : MP_ATTR_FLOATS;
    at->ints = ints;
    at->floats = floats;
    at->n = k;
  } else {
    return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                        "%s: %s.attrs.%s: expected a number, a string or a "
                        "list of numbers",
                        in->file, where, v->string);
  }
  return MP_OK;
}

static mp_status gin_op_add(gin *in, const cJSON *o, const char *where,
                            mp_op_desc *d) {
  const cJSON *attrs = NULL;
  mp_status st =
      json_object(in->file, o, where, "attrs", false, &attrs, in->err);
  if (st != MP_OK) return st;
  size_t n = attrs ? (size_t)cJSON_GetArraySize(attrs) : 0, total = 0;
  for (const cJSON *v = attrs ? attrs->child : NULL; v; v = v->next) {
    total += cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;
  }
  mp_attr *at = mp_calloc(in->a, n ? n : 1, sizeof *at);
  int64_t *ints = mp_calloc(in->a, total ? total : 1, sizeof *ints);
  double *floats = mp_calloc(in->a, total ? total : 1, sizeof *floats);
  if (!at || !ints || !floats) {
    st = mp_error_set(in->err, MP_ERR_NOMEM, "%s: out of memory", in->file);
  }
  size_t k = 0, used = 0;
  for (const cJSON *v = attrs ? attrs->child : NULL; st == MP_OK && v;
       v = v->next, k++) {
    st = gin_attr(in, v, where, &at[k], ints + used, floats + used);
    used += at[k].n;
  }
  if (st == MP_OK) {
    d->attrs = at;
    d->n_attrs = (uint32_t)n;
    st = mp_graph_add_op(in->g, d, NULL, in->err);
  }
  mp_free(in->a, floats);
  mp_free(in->a, ints);
  mp_free(in->a, at);
  return st;
}

static mp_status gin_op(gin *in, const cJSON *o, int i) {
  char where[96];
  snprintf(where, sizeof where, "ops[%d]", i);
  mp_op_desc d = {0};
  const cJSON *ins = NULL, *outs = NULL;
  int32_t *in_ids = NULL, *out_ids = NULL;
  if (!cJSON_IsObject(o)) {
    return mp_error_set(in->err, MP_ERR_BAD_INPUT, "%s: %s: expected an object",
                        in->file, where);
  }
  mp_status st = json_keys(in->file, o, where, gin_op_keys, in->err);
  if (st == MP_OK)
    st = json_string(in->file, o, where, "name", true, &d.name, in->err);
  if (st != MP_OK) return st;
  snprintf(where, sizeof where, "ops[%d] ('%.48s')", i, d.name);
  if (st == MP_OK)
    st = json_string(in->file, o, where, "op", true, &d.type, in->err);
  if (st == MP_OK)
    st = json_array(in->file, o, where, "inputs", false, &ins, in->err);
  if (st == MP_OK)
    st = json_array(in->file, o, where, "outputs", true, &outs, in->err);
  if (st == MP_OK && cJSON_GetArraySize(outs) == 0) {
    st = mp_error_set(in->err, MP_ERR_BAD_INPUT,
                      "%s: %s.outputs: an op must have at least one output",
                      in->file, where);
  }
  if (st == MP_OK && ins) {
    st = gin_names(in, ins, where, "inputs", true, &in_ids, &d.n_inputs);
  }
  if (st == MP_OK) {
    st = gin_names(in, outs, where, "outputs", false, &out_ids, &d.n_outputs);
  }
  if (st == MP_OK) {
    d.inputs = in_ids;
    d.outputs = out_ids;
    st = gin_op_add(in, o, where, &d);
  }
  mp_free(in->a, in_ids);
  mp_free(in->a, out_ids);
  return st;
}

static mp_status gin_outputs(gin *in, const cJSON *root) {
  const cJSON *outs = NULL;
  mp_status st =
      json_array(in->file, root, "", "outputs", false, &outs, in->err);
  if (st != MP_OK || !outs) return st;
  int k = 0;
  for (const cJSON *it = outs->child; it; it = it->next, k++) {
    int32_t t;
    if (!cJSON_IsString(it)) {
      return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                          "%s: outputs[%d]: expected a tensor name", in->file,
                          k);
    }
    if (!mp_graph_find_tensor(in->g, it->valuestring, &t)) {
      return mp_error_set(in->err, MP_ERR_BAD_INPUT,
                          "%s: outputs[%d]: tensor '%s' is not declared in "
                          "\"tensors\"",
                          in->file, k, it->valuestring);
    }
    st = mp_graph_mark_output(in->g, t, in->err);
    if (st != MP_OK) return st;
  }
  return MP_OK;
}

static mp_status gin_list(gin *in, const cJSON *root, const char *key,
                          mp_status (*each)(gin *, const cJSON *, int)) {
  const cJSON *arr = NULL;
  mp_status st = json_array(in->file, root, "", key, true, &arr, in->err);
  int i = 0;
  for (const cJSON *it = arr ? arr->child : NULL; st == MP_OK && it;
       it = it->next, i++) {
    st = each(in, it, i);
  }
  if (st == MP_OK && i == 0) {
    st = mp_error_set(in->err, MP_ERR_BAD_INPUT, "%s: %s: the list is empty",
                      in->file, key);
  }
  return st;
}

static mp_status gin_subgraphs(gin *in, const cJSON *root) {
  const cJSON *sub = cJSON_GetObjectItemCaseSensitive(root, "subgraphs");
  if (!sub || cJSON_GetArraySize(sub) == 0) return MP_OK;
  return mp_error_set(in->err, MP_ERR_UNSUPPORTED,
                      "%s: subgraphs: subgraphs are not supported by this "
                      "version of mplan",
                      in->file);
}

mp_status mp_import_graph_json(const char *file, const cJSON *root,
                               const mp_alloc *a, mp_graph **out,
                               mp_error *err) {
  const char *name = NULL;
  gin in = {file, NULL, a, err};
  mp_status st = json_format(file, root, "graph/1", err);
  if (st == MP_OK) st = json_keys(file, root, "", gin_root_keys, err);
  if (st == MP_OK) st = json_string(file, root, "", "name", false, &name, err);
  if (st == MP_OK) st = mp_graph_create(a, file, name ? name : "", &in.g, err);
  if (st == MP_OK) st = gin_subgraphs(&in, root);
  if (st == MP_OK) st = gin_dims(&in, root);
  if (st == MP_OK) st = gin_list(&in, root, "tensors", gin_tensor);
  if (st == MP_OK) st = gin_list(&in, root, "ops", gin_op);
  if (st == MP_OK) st = gin_outputs(&in, root);
  if (st == MP_OK) st = mp_graph_link(in.g, err);
  if (st != MP_OK) {
    mp_graph_destroy(in.g);
    return st;
  }
  *out = in.g;
  return MP_OK;
}
