/*
 * graph.c -- the graph IR: storage, links, dim binding and sizes.
 *
 * Invariants:
 *   1. Tensor, op and dim names are unique, interned in g->names, and
 *      indexed by hash maps.
 *   2. Every tensor index stored in an op is in range (checked on add).
 *   3. After link: producer is the only op listing the tensor as an output,
 *      and consumers holds each consuming op once, in ascending order.
 *   4. After resolve: bytes = product(shape) * dtype size without overflow,
 *      every dim >= 1, except that weights and inferred tensors may be
 *      empty (a dim of 0, bytes 0) as ONNX allows.
 * Every error message starts with the graph's source so that it names the
 * file as well as the element.
 */
#include "mplan/graph.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mplan/strmap.h"

typedef struct graph_dim {
  const char *name;
  int64_t value; /* -1: unbound */
} graph_dim;

struct mp_graph {
  const mp_alloc *alloc;
  char *source;
  const char *name;
  mp_strpool *names;
  mp_strmap *tensor_index, *op_index, *dim_index;
  mp_tensor *tensors;
  size_t n_tensors, cap_tensors;
  mp_op *ops;
  size_t n_ops, cap_ops;
  graph_dim *dims;
  size_t n_dims, cap_dims;
  uint32_t *consumers; /* all consumer lists, back to back */
  bool linked;
  int64_t opset;
  const char **warnings; /* interned in names */
  size_t n_warnings, cap_warnings;
};

/* A name from a file that is not valid UTF-8 (the reports carry names as
 * UTF-8): the error names the source too. */
static mp_status graph_utf8(const char *source, const char *what, const char *s,
                            mp_error *err) {
  mp_status st = mp_utf8_name(what, s, err);
  if (st != MP_OK) mp_error_prefix(err, "%s", source);
  return st;
}

mp_status mp_graph_create(const mp_alloc *a, const char *source,
                          const char *name, mp_graph **out, mp_error *err) {
  if (name && graph_utf8(source ? source : "<graph>", "the graph name", name,
                         err) != MP_OK) {
    return MP_ERR_BAD_INPUT;
  }
  mp_graph *g = mp_calloc(a, 1, sizeof *g);
  if (!g) return mp_error_set(err, MP_ERR_NOMEM, "graph: out of memory");
  g->alloc = a;
  mp_status st = MP_ERR_NOMEM;
  g->source = mp_strdup(a, source ? source : "<graph>");
  if (!g->source) goto nomem;
  if ((st = mp_strpool_create(a, &g->names, err)) != MP_OK) goto fail;
  if ((st = mp_strmap_create(a, &g->tensor_index, err)) != MP_OK) goto fail;
  if ((st = mp_strmap_create(a, &g->op_index, err)) != MP_OK) goto fail;
  if ((st = mp_strmap_create(a, &g->dim_index, err)) != MP_OK) goto fail;
  g->name = mp_strpool_cstr(g->names, name ? name : "");
  if (!g->name) goto nomem;
  *out = g;
  return MP_OK;
nomem:
  st = mp_error_set(err, MP_ERR_NOMEM, "graph: out of memory");
fail:
  mp_graph_destroy(g);
  return st;
}

static void graph_free_op(const mp_alloc *a, mp_op *op) {
  for (uint32_t k = 0; k < op->n_attrs; k++) {
    mp_free(a, (void *)(uintptr_t)op->attrs[k].ints);
    mp_free(a, (void *)(uintptr_t)op->attrs[k].floats);
  }
  mp_free(a, (void *)(uintptr_t)op->attrs);
  mp_free(a, (void *)(uintptr_t)op->inputs);
  mp_free(a, (void *)(uintptr_t)op->outputs);
}

void mp_graph_destroy(mp_graph *g) {
  if (!g) return;
  for (size_t i = 0; i < g->n_ops; i++) graph_free_op(g->alloc, &g->ops[i]);
  for (size_t i = 0; i < g->n_tensors; i++) {
    mp_free(g->alloc, (void *)(uintptr_t)g->tensors[i].value);
  }
  mp_free(g->alloc, (void *)(uintptr_t)g->warnings);
  mp_free(g->alloc, g->consumers);
  mp_free(g->alloc, g->dims);
  mp_free(g->alloc, g->ops);
  mp_free(g->alloc, g->tensors);
  mp_strmap_destroy(g->dim_index);
  mp_strmap_destroy(g->op_index);
  mp_strmap_destroy(g->tensor_index);
  mp_strpool_destroy(g->names);
  mp_free(g->alloc, g->source);
  mp_free(g->alloc, g);
}

static mp_status graph_nomem(const mp_graph *g, mp_error *err) {
  return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", g->source);
}

/* Interns s (or returns NULL for NULL). *ok is cleared on exhaustion. */
static const char *graph_intern(mp_graph *g, const char *s, bool *ok) {
  if (!s) return NULL;
  const char *r = mp_strpool_cstr(g->names, s);
  if (!r) *ok = false;
  return r;
}

mp_status mp_graph_add_dim(mp_graph *g, const char *name, int64_t value,
                           int32_t *index, mp_error *err) {
  bool ok = true;
  if (!name || !*name) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: a dim has an empty name",
                        g->source);
  }
  if (graph_utf8(g->source, "dim name", name, err) != MP_OK) {
    return MP_ERR_BAD_INPUT;
  }
  if (mp_strmap_get(g->dim_index, name, NULL)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: dim '%s' declared twice",
                        g->source, name);
  }
  if (g->n_dims >= INT32_MAX) return graph_nomem(g, err);
  void *d = g->dims;
  mp_status st = mp_grow(g->alloc, &d, &g->cap_dims, g->n_dims + 1,
                         sizeof *g->dims, g->source, err);
  if (st != MP_OK) return st;
  g->dims = d;
  const char *n = graph_intern(g, name, &ok);
  if (!ok) return graph_nomem(g, err);
  st = mp_strmap_put(g->dim_index, n, (int64_t)g->n_dims, NULL, err);
  if (st != MP_OK) return st;
  g->dims[g->n_dims] = (graph_dim){n, value};
  if (index) *index = (int32_t)g->n_dims;
  g->n_dims++;
  return MP_OK;
}

mp_status mp_graph_dim_index(mp_graph *g, const char *name, int32_t *index,
                             mp_error *err) {
  int64_t v;
  if (mp_strmap_get(g->dim_index, name, &v)) {
    *index = (int32_t)v;
    return MP_OK;
  }
  return mp_graph_add_dim(g, name, -1, index, err);
}

bool mp_graph_find_dim(const mp_graph *g, const char *name, int32_t *index) {
  int64_t v;
  if (!mp_strmap_get(g->dim_index, name, &v)) return false;
  if (index) *index = (int32_t)v;
  return true;
}

mp_status mp_graph_mark_output(mp_graph *g, int32_t t, mp_error *err) {
  mp_tensor *x = &g->tensors[t];
  if (x->kind == MP_TENSOR_INPUT || x->kind == MP_TENSOR_WEIGHT) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: tensor '%s' is a graph %s and cannot be a graph "
                        "output",
                        g->source, x->name, mp_tensor_kind_name(x->kind));
  }
  if (x->kind == MP_TENSOR_ACTIVATION) x->kind = MP_TENSOR_OUTPUT;
  return MP_OK;
}

mp_status mp_graph_add_tensor(mp_graph *g, const mp_tensor_desc *d,
                              int32_t *index, mp_error *err) {
  bool ok = true;
  if (!d->name || !*d->name) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: a tensor has an empty name",
                        g->source);
  }
  if (graph_utf8(g->source, "tensor name", d->name, err) != MP_OK) {
    return MP_ERR_BAD_INPUT;
  }
  if (mp_strmap_get(g->tensor_index, d->name, NULL)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: tensor '%s' is declared twice", g->source,
                        d->name);
  }
  if ((unsigned)d->dtype >= MP_DTYPE_COUNT || (d->pending && d->rank) ||
      (unsigned)d->kind >= MP_TENSOR_KIND_COUNT || d->rank > MP_MAX_RANK) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: tensor '%s': bad dtype, kind or rank", g->source,
                        d->name);
  }
  for (uint32_t k = 0; k < d->rank; k++) {
    if (d->shape[k].sym != MP_NO_SYM &&
        (d->shape[k].sym < 0 || (size_t)d->shape[k].sym >= g->n_dims)) {
      return mp_error_set(err, MP_ERR_INTERNAL,
                          "%s: tensor '%s': bad dim symbol", g->source,
                          d->name);
    }
  }
  if (g->n_tensors >= INT32_MAX) return graph_nomem(g, err);
  void *t = g->tensors;
  mp_status st = mp_grow(g->alloc, &t, &g->cap_tensors, g->n_tensors + 1,
                         sizeof *g->tensors, g->source, err);
  if (st != MP_OK) return st;
  g->tensors = t;
  mp_tensor *nt = &g->tensors[g->n_tensors];
  memset(nt, 0, sizeof *nt);
  nt->name = graph_intern(g, d->name, &ok);
  nt->layout = graph_intern(g, d->layout, &ok);
  if (!ok) return graph_nomem(g, err);
  st = mp_strmap_put(g->tensor_index, nt->name, (int64_t)g->n_tensors, NULL,
                     err);
  if (st != MP_OK) return st;
  nt->dtype = d->dtype;
  nt->kind = d->kind;
  nt->pinned = d->pinned;
  nt->pin = d->pin;
  nt->rank = d->rank;
  memcpy(nt->shape, d->shape, sizeof nt->shape);
  nt->producer = -1;
  nt->origin = d->pending ? MP_SHAPE_PENDING : MP_SHAPE_GIVEN;
  if (index) *index = (int32_t)g->n_tensors;
  g->n_tensors++;
  g->linked = false;
  return MP_OK;
}

static mp_status graph_copy_ids(mp_graph *g, const int32_t *src, uint32_t n,
                                const int32_t **dst, mp_error *err) {
  *dst = NULL;
  if (n == 0) return MP_OK;
  int32_t *d = mp_calloc(g->alloc, n, sizeof *d);
  if (!d) return graph_nomem(g, err);
  memcpy(d, src, n * sizeof *d);
  *dst = d;
  return MP_OK;
}

static mp_status graph_copy_attrs(mp_graph *g, const mp_op_desc *d, mp_op *op,
                                  mp_error *err) {
  bool ok = true;
  mp_attr *at = NULL;
  op->attrs = NULL;
  op->n_attrs = 0;
  if (d->n_attrs == 0) return MP_OK;
  at = mp_calloc(g->alloc, d->n_attrs, sizeof *at);
  if (!at) return graph_nomem(g, err);
  op->attrs = at;
  for (uint32_t k = 0; k < d->n_attrs; k++) {
    const mp_attr *s = &d->attrs[k];
    at[k] = *s;
    at[k].ints = NULL;
    at[k].floats = NULL;
    op->n_attrs = k + 1;
    at[k].name = graph_intern(g, s->name, &ok);
    at[k].s = graph_intern(g, s->s, &ok);
    if (s->kind == MP_ATTR_INTS && s->n) {
      int64_t *v = mp_calloc(g->alloc, s->n, sizeof *v);
      if (v) memcpy(v, s->ints, s->n * sizeof *v);
      at[k].ints = v;
      ok = ok && v;
    } else if (s->kind == MP_ATTR_FLOATS && s->n) {
      double *v = mp_calloc(g->alloc, s->n, sizeof *v);
      if (v) memcpy(v, s->floats, s->n * sizeof *v);
      at[k].floats = v;
      ok = ok && v;
    }
    if (!ok) return graph_nomem(g, err);
  }
  return MP_OK;
}

static mp_status graph_check_op(const mp_graph *g, const mp_op_desc *d,
                                mp_error *err) {
  if (!d->name || !*d->name || !d->type || !*d->type) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: an op has an empty name or type", g->source);
  }
  if (graph_utf8(g->source, "op name", d->name, err) != MP_OK ||
      graph_utf8(g->source, "op type", d->type, err) != MP_OK) {
    return MP_ERR_BAD_INPUT;
  }
  if (mp_strmap_get(g->op_index, d->name, NULL)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: op '%s' is declared twice",
                        g->source, d->name);
  }
  if (d->n_outputs == 0) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: op '%s' has no outputs",
                        g->source, d->name);
  }
  for (uint32_t k = 0; k < d->n_inputs + d->n_outputs; k++) {
    bool is_in = k < d->n_inputs;
    int32_t t = is_in ? d->inputs[k] : d->outputs[k - d->n_inputs];
    if ((t < 0 && !is_in) || (t >= 0 && (size_t)t >= g->n_tensors)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: op '%s': %s %u refers to no tensor", g->source,
                          d->name, is_in ? "input" : "output",
                          is_in ? k : k - d->n_inputs);
    }
  }
  for (uint32_t k = 0; k < d->n_outputs; k++) {
    for (uint32_t j = 0; j < k; j++) {
      if (d->outputs[j] == d->outputs[k]) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "%s: op '%s' lists output '%s' twice", g->source,
                            d->name, g->tensors[d->outputs[k]].name);
      }
    }
  }
  return MP_OK;
}

mp_status mp_graph_add_op(mp_graph *g, const mp_op_desc *d, int32_t *index,
                          mp_error *err) {
  bool ok = true;
  mp_status st = graph_check_op(g, d, err);
  if (st != MP_OK) return st;
  if (g->n_ops >= INT32_MAX) return graph_nomem(g, err);
  void *o = g->ops;
  st = mp_grow(g->alloc, &o, &g->cap_ops, g->n_ops + 1, sizeof *g->ops,
               g->source, err);
  if (st != MP_OK) return st;
  g->ops = o;
  mp_op op = {0};
  op.name = graph_intern(g, d->name, &ok);
  op.type = graph_intern(g, d->type, &ok);
  if (!ok) return graph_nomem(g, err);
  op.n_inputs = d->n_inputs;
  op.n_outputs = d->n_outputs;
  st = graph_copy_ids(g, d->inputs, d->n_inputs, &op.inputs, err);
  if (st == MP_OK) {
    st = graph_copy_ids(g, d->outputs, d->n_outputs, &op.outputs, err);
  }
  if (st == MP_OK) st = graph_copy_attrs(g, d, &op, err);
  if (st == MP_OK) {
    st = mp_strmap_put(g->op_index, op.name, (int64_t)g->n_ops, NULL, err);
  }
  if (st != MP_OK) {
    graph_free_op(g->alloc, &op);
    return st;
  }
  g->ops[g->n_ops] = op;
  if (index) *index = (int32_t)g->n_ops;
  g->n_ops++;
  g->linked = false;
  return MP_OK;
}

/* ---- link ---------------------------------------------------------------- */

static mp_status graph_set_producers(mp_graph *g, mp_error *err) {
  for (size_t i = 0; i < g->n_tensors; i++) g->tensors[i].producer = -1;
  for (size_t o = 0; o < g->n_ops; o++) {
    const mp_op *op = &g->ops[o];
    for (uint32_t k = 0; k < op->n_outputs; k++) {
      mp_tensor *t = &g->tensors[op->outputs[k]];
      if (t->producer >= 0) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "%s: tensor '%s' is produced by both op '%s' and "
                            "op '%s'",
                            g->source, t->name, g->ops[t->producer].name,
                            op->name);
      }
      if (t->kind == MP_TENSOR_INPUT || t->kind == MP_TENSOR_WEIGHT) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "%s: op '%s' writes tensor '%s', which is a "
                            "graph %s",
                            g->source, op->name, t->name,
                            mp_tensor_kind_name(t->kind));
      }
      t->producer = (int32_t)o;
    }
  }
  return MP_OK;
}

static mp_status graph_set_consumers(mp_graph *g, mp_error *err) {
  size_t total = 0;
  for (size_t i = 0; i < g->n_tensors; i++) g->tensors[i].n_consumers = 0;
  for (size_t o = 0; o < g->n_ops; o++) {
    const mp_op *op = &g->ops[o];
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (!mp_op_first_read(op, k)) continue;
      g->tensors[op->inputs[k]].n_consumers++;
      total++;
    }
  }
  mp_free(g->alloc, g->consumers);
  g->consumers = mp_calloc(g->alloc, total ? total : 1, sizeof *g->consumers);
  if (!g->consumers) return graph_nomem(g, err);
  size_t at = 0;
  for (size_t i = 0; i < g->n_tensors; i++) {
    g->tensors[i].consumers = g->consumers + at;
    at += g->tensors[i].n_consumers;
    g->tensors[i].n_consumers = 0;
  }
  /* Ops are visited in index order, so every list comes out ascending. */
  for (size_t o = 0; o < g->n_ops; o++) {
    const mp_op *op = &g->ops[o];
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (!mp_op_first_read(op, k)) continue;
      mp_tensor *t = &g->tensors[op->inputs[k]];
      ((uint32_t *)(uintptr_t)t->consumers)[t->n_consumers++] = (uint32_t)o;
    }
  }
  return MP_OK;
}

/* Invariant 3 as a whole-graph check, run inside assert(). */
MP_CHECKER static bool graph_check_links(const mp_graph *g) {
  for (size_t i = 0; i < g->n_tensors; i++) {
    const mp_tensor *t = &g->tensors[i];
    if (t->producer >= 0) {
      const mp_op *p = &g->ops[t->producer];
      bool found = false;
      for (uint32_t k = 0; k < p->n_outputs; k++) {
        found = found || p->outputs[k] == (int32_t)i;
      }
      if (!found) return false;
    }
    for (uint32_t c = 1; c < t->n_consumers; c++) {
      if (t->consumers[c - 1] >= t->consumers[c]) return false;
    }
  }
  return true;
}

mp_status mp_graph_link(mp_graph *g, mp_error *err) {
  mp_status st = graph_set_producers(g, err);
  if (st == MP_OK) st = graph_set_consumers(g, err);
  if (st != MP_OK) return st;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const mp_tensor *t = &g->tensors[i];
    bool needs_producer =
        t->kind == MP_TENSOR_ACTIVATION || t->kind == MP_TENSOR_OUTPUT;
    if (needs_producer && t->producer < 0) {
      if (t->n_consumers) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "%s: tensor '%s' (%s) is read by op '%s' but no "
                            "op produces it",
                            g->source, t->name, mp_tensor_kind_name(t->kind),
                            g->ops[t->consumers[0]].name);
      }
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: tensor '%s' (%s) is produced by no op",
                          g->source, t->name, mp_tensor_kind_name(t->kind));
    }
  }
  g->linked = true;
  assert(graph_check_links(g));
  return MP_OK;
}

/* ---- dims and sizes ------------------------------------------------------ */

mp_status mp_graph_bind_dim(mp_graph *g, const char *name, int64_t value,
                            mp_error *err) {
  int64_t idx;
  if (!mp_strmap_get(g->dim_index, name, &idx)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: --dim %s: the graph has no dim named '%s'",
                        g->source, name, name);
  }
  if (value <= 0) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: --dim %s=%" PRId64 ": a dim must be >= 1",
                        g->source, name, value);
  }
  g->dims[idx].value = value;
  return MP_OK;
}

static mp_status graph_resolve_tensor(mp_graph *g, mp_tensor *t,
                                      mp_error *err) {
  int64_t elems = 1, bytes;
  if (t->origin == MP_SHAPE_PENDING) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: tensor '%s': shape unknown (shape inference "
                        "could not derive it)",
                        g->source, t->name);
  }
  if (mp_dtype_bits(t->dtype) == 0) {
    return mp_error_set(err, MP_ERR_UNSUPPORTED,
                        "%s: tensor '%s': dtype %s has no fixed size and "
                        "cannot be planned",
                        g->source, t->name, mp_dtype_name(t->dtype));
  }
  for (uint32_t k = 0; k < t->rank; k++) {
    mp_dim *d = &t->shape[k];
    if (d->sym != MP_NO_SYM) {
      d->value = g->dims[d->sym].value;
      if (d->value < 0) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "%s: tensor '%s': dim '%s' is not bound (use "
                            "--dim %s=VALUE)",
                            g->source, t->name, g->dims[d->sym].name,
                            g->dims[d->sym].name);
      }
    }
    if (d->value < 0 && d->sym == MP_NO_SYM) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: tensor '%s': shape[%u] is unknown (bind the "
                          "input's shape with --shape NAME=DxDx...)",
                          g->source, t->name, k);
    }
    /* ONNX has empty tensors (an unused Resize roi is shape [0], an
     * empty axes input of ReduceSum); JSON readers refuse 0 themselves,
     * so only an ONNX model's inputs, weights and inferred tensors may
     * be empty here. A declared activation of 0 elements is refused. */
    bool empty_ok = t->origin != MP_SHAPE_GIVEN ||
                    t->kind == MP_TENSOR_WEIGHT || t->kind == MP_TENSOR_INPUT;
    if (d->value < 0 || (d->value == 0 && !empty_ok)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: tensor '%s': shape[%u] is %" PRId64
                          "; dims must be >= 1",
                          g->source, t->name, k, d->value);
    }
    if (!mp_i64_mul(elems, d->value, &elems)) goto overflow;
  }
  /* elems x bits stays below 2^63 for bytes to fit 64 bits and for the
   * 4-bit types' rounding up to be exact */
  size_t nbytes = 0;
  if (!mp_i64_mul(elems, (int64_t)mp_dtype_bits(t->dtype), &bytes) ||
      (uint64_t)bytes / 8 > SIZE_MAX ||
      !mp_dtype_bytes(t->dtype, (size_t)elems, &nbytes)) {
    goto overflow;
  }
  t->bytes = nbytes;
  return MP_OK;
overflow: {
  char shape[256];
  return mp_error_set(
      err, MP_ERR_BAD_INPUT, "%s: tensor '%s': shape %s x %s overflows 64 bits",
      g->source, t->name, mp_graph_shape_str(g, t, shape, sizeof shape),
      mp_dtype_name(t->dtype));
}
}

mp_status mp_graph_resolve(mp_graph *g, mp_error *err) {
  for (size_t i = 0; i < g->n_tensors; i++) {
    mp_status st = graph_resolve_tensor(g, &g->tensors[i], err);
    if (st != MP_OK) return st;
  }
  return MP_OK;
}

/* ---- shape inference support --------------------------------------------- */

const char *mp_shape_origin_name(mp_shape_origin o) {
  switch (o) {
    case MP_SHAPE_GIVEN:
      return "given";
    case MP_SHAPE_INFERRED:
      return "inferred";
    case MP_SHAPE_DECLARED:
      return "declared";
    case MP_SHAPE_PENDING:
      return "pending";
  }
  return "?";
}

static mp_status graph_check_shape(const mp_graph *g, int32_t t, mp_dtype dt,
                                   uint32_t rank, const mp_dim *shape,
                                   mp_error *err) {
  if (t < 0 || (size_t)t >= g->n_tensors || (unsigned)dt >= MP_DTYPE_COUNT) {
    return mp_error_set(err, MP_ERR_INTERNAL, "%s: bad tensor or dtype",
                        g->source);
  }
  if (rank > MP_MAX_RANK) {
    return mp_error_set(err, MP_ERR_UNSUPPORTED,
                        "%s: tensor '%s': rank %u exceeds the maximum of %d",
                        g->source, g->tensors[t].name, rank, MP_MAX_RANK);
  }
  for (uint32_t k = 0; k < rank; k++) {
    if (shape[k].sym != MP_NO_SYM &&
        (shape[k].sym < 0 || (size_t)shape[k].sym >= g->n_dims)) {
      return mp_error_set(err, MP_ERR_INTERNAL,
                          "%s: tensor '%s': bad dim symbol", g->source,
                          g->tensors[t].name);
    }
  }
  return MP_OK;
}

mp_status mp_graph_set_shape(mp_graph *g, int32_t t, mp_dtype dtype,
                             uint32_t rank, const mp_dim *shape,
                             mp_shape_origin origin, mp_error *err) {
  mp_status st = graph_check_shape(g, t, dtype, rank, shape, err);
  if (st != MP_OK) return st;
  mp_tensor *x = &g->tensors[t];
  x->dtype = dtype;
  x->rank = rank;
  memset(x->shape, 0, sizeof x->shape);
  if (rank) memcpy(x->shape, shape, rank * sizeof *shape);
  x->origin = origin;
  return MP_OK;
}

mp_status mp_graph_declare(mp_graph *g, int32_t t, mp_dtype dtype,
                           uint32_t rank, const mp_dim *shape, mp_error *err) {
  mp_status st = graph_check_shape(g, t, dtype, rank, shape, err);
  if (st != MP_OK) return st;
  mp_tensor *x = &g->tensors[t];
  x->has_decl = true;
  x->decl_dtype = dtype;
  x->decl_rank = rank;
  memset(x->decl, 0, sizeof x->decl);
  if (rank) memcpy(x->decl, shape, rank * sizeof *shape);
  return MP_OK;
}

mp_status mp_graph_set_value(mp_graph *g, int32_t t, const int64_t *i,
                             const double *f, size_t n, mp_error *err) {
  if (n > MP_VALUE_MAX || (!i == !f)) {
    return mp_error_set(err, MP_ERR_INTERNAL, "%s: bad constant value",
                        g->source);
  }
  size_t el = i ? sizeof *i : sizeof *f;
  /* One block: the header, then the elements (8-byte aligned either way). */
  mp_value *v = mp_calloc(g->alloc, 1, sizeof *v + (n ? n : 1) * el);
  if (!v) return graph_nomem(g, err);
  void *data = v + 1;
  if (n) memcpy(data, i ? (const void *)i : (const void *)f, n * el);
  v->n = n;
  v->i = i ? data : NULL;
  v->f = f ? data : NULL;
  mp_tensor *x = &g->tensors[t];
  mp_free(g->alloc, (void *)(uintptr_t)x->value);
  x->value = v;
  return MP_OK;
}

void mp_graph_set_dim_value(mp_graph *g, int32_t sym, int64_t value) {
  assert(sym >= 0 && (size_t)sym < g->n_dims);
  g->dims[sym].value = value;
}

int64_t mp_graph_dim_of(const mp_graph *g, const mp_dim *d) {
  return d->sym != MP_NO_SYM ? g->dims[d->sym].value : d->value;
}

void mp_graph_set_opset(mp_graph *g, int64_t opset) {
  g->opset = opset;
}

int64_t mp_graph_opset(const mp_graph *g) {
  return g->opset;
}

const mp_attr *mp_op_attr(const mp_op *op, const char *name) {
  for (uint32_t k = 0; k < op->n_attrs; k++) {
    if (strcmp(op->attrs[k].name, name) == 0) return &op->attrs[k];
  }
  return NULL;
}

uint32_t mp_op_head_arity(const mp_op *op) {
  static const char *const three[] = {"Conv", "ConvTranspose", "Gemm", "Clip"};
  static const char *const two[] = {"MatMul", "Add", "Sub",
                                    "Mul",    "Div", "Concat"};
  if (strcmp(op->type, "com.microsoft::MatMulNBits") == 0) return 6;
  if (strcmp(op->type, "BatchNormalization") == 0) return 5;
  if (strcmp(op->type, "Resize") == 0) return 4; /* x, roi, scales, sizes */
  for (size_t k = 0; k < 4; k++) {
    if (strcmp(op->type, three[k]) == 0) return 3;
  }
  for (size_t k = 0; k < 6; k++) {
    if (strcmp(op->type, two[k]) == 0) return 2;
  }
  return 1; /* an elementwise unary head (absorb.c rule 9) */
}

int mp_op_prologues(const mp_op *op, mp_prologue out[2], uint32_t *n_dq) {
  const mp_attr *a = mp_op_attr(op, "mplan.prologue");
  if (n_dq) *n_dq = 0;
  if (!a) return 0;
  if (a->kind != MP_ATTR_STRING || !a->s) return -1;
  int n = 0;
  for (const char *p = a->s;; n++) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : 0;
    if (n == 2 || !colon || len == 0 || len >= sizeof out[n].kind ||
        colon[1] < '0' || colon[1] > '9') {
      return -1;
    }
    memcpy(out[n].kind, p, len);
    out[n].kind[len] = '\0';
    const char *d = colon + 1;
    uint32_t v = 0;
    while (*d >= '0' && *d <= '9' && v < 1000)
      v = v * 10 + (uint32_t)(*d++ - '0');
    out[n].input = v;
    if (n == 1 && out[0].input == v) return -1;
    if (n_dq && strcmp(out[n].kind, "DequantizeLinear") == 0) (*n_dq)++;
    if (*d == '\0') return n + 1;
    if (*d != ',') return -1;
    p = d + 1;
  }
}

double mp_resize_aspect_scale(const int64_t *dims, const uint32_t *at,
                              const int64_t *sizes, size_t n, bool largest) {
  double best = 0;
  bool any = false;
  for (size_t k = 0; k < n; k++) {
    if (dims[at[k]] == 0) continue;
    double s = (double)sizes[k] / (double)dims[at[k]];
    if (!any || (largest ? s > best : s < best)) best = s;
    any = true;
  }
  return any ? best : 1;
}

uint32_t mp_op_legacy_pad(const mp_op *op, int64_t opset, uint32_t ra,
                          const int64_t *a, uint32_t rb, const int64_t *b) {
  static const char *const axis_ops[] = {"Add",   "Sub",     "Mul", "Div",
                                         "Pow",   "And",     "Or",  "Xor",
                                         "Equal", "Greater", "Less"};
  if (opset <= 0 || opset >= 7 || op->n_inputs < 2) return 0;
  if (strcmp(op->type, "PRelu") == 0) {
    return ra >= 3 && rb == 1 && b[0] > 1 && b[0] == a[1] ? ra - 2 : 0;
  }
  const mp_attr *bc = mp_op_attr(op, "broadcast");
  const mp_attr *ax = mp_op_attr(op, "axis");
  if (!bc || bc->kind != MP_ATTR_INT || bc->i != 1 || !ax ||
      ax->kind != MP_ATTR_INT) {
    return 0;
  }
  bool known = false;
  for (size_t k = 0; k < sizeof axis_ops / sizeof *axis_ops; k++) {
    known |= strcmp(op->type, axis_ops[k]) == 0;
  }
  int64_t at = ax->i < 0 ? ax->i + (int64_t)ra : ax->i;
  if (!known || at < 0 || at + (int64_t)rb > (int64_t)ra) return 0;
  return (uint32_t)((int64_t)ra - at - (int64_t)rb);
}

uint32_t mp_graph_legacy_pad(const mp_graph *g, const mp_op *op) {
  if (g->opset <= 0 || g->opset >= 7 || op->n_inputs < 2 || op->inputs[0] < 0 ||
      op->inputs[1] < 0) {
    return 0;
  }
  const mp_tensor *x = &g->tensors[op->inputs[0]];
  const mp_tensor *s = &g->tensors[op->inputs[1]];
  int64_t a[MP_MAX_RANK], b[MP_MAX_RANK];
  for (uint32_t k = 0; k < x->rank; k++)
    a[k] = mp_graph_dim_of(g, &x->shape[k]);
  for (uint32_t k = 0; k < s->rank; k++)
    b[k] = mp_graph_dim_of(g, &s->shape[k]);
  return mp_op_legacy_pad(op, g->opset, x->rank, a, s->rank, b);
}

mp_status mp_graph_warn(mp_graph *g, mp_error *err, const char *fmt, ...) {
  char text[MP_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  void *w = (void *)(uintptr_t)g->warnings;
  mp_status st = mp_grow(g->alloc, &w, &g->cap_warnings, g->n_warnings + 1,
                         sizeof *g->warnings, g->source, err);
  if (st != MP_OK) return st;
  g->warnings = w;
  const char *s = mp_strpool_cstr(g->names, text);
  if (!s) return graph_nomem(g, err);
  g->warnings[g->n_warnings++] = s;
  return MP_OK;
}

size_t mp_graph_warning_count(const mp_graph *g) {
  return g->n_warnings;
}

const char *mp_graph_warning(const mp_graph *g, size_t i) {
  return g->warnings[i];
}

/* ---- accessors ----------------------------------------------------------- */

const char *mp_graph_name(const mp_graph *g) {
  return g->name;
}

const char *mp_graph_source(const mp_graph *g) {
  return g->source;
}

size_t mp_graph_tensor_count(const mp_graph *g) {
  return g->n_tensors;
}

size_t mp_graph_op_count(const mp_graph *g) {
  return g->n_ops;
}

const mp_tensor *mp_graph_tensor(const mp_graph *g, size_t i) {
  return &g->tensors[i];
}

const mp_op *mp_graph_op(const mp_graph *g, size_t i) {
  return &g->ops[i];
}

bool mp_graph_find_tensor(const mp_graph *g, const char *name, int32_t *index) {
  int64_t v;
  if (!mp_strmap_get(g->tensor_index, name, &v)) return false;
  if (index) *index = (int32_t)v;
  return true;
}

bool mp_graph_find_op(const mp_graph *g, const char *name, int32_t *index) {
  int64_t v;
  if (!mp_strmap_get(g->op_index, name, &v)) return false;
  if (index) *index = (int32_t)v;
  return true;
}

size_t mp_graph_dim_count(const mp_graph *g) {
  return g->n_dims;
}

const char *mp_graph_dim_name(const mp_graph *g, size_t i) {
  return g->dims[i].name;
}

int64_t mp_graph_dim_value(const mp_graph *g, size_t i) {
  return g->dims[i].value;
}

const mp_alloc *mp_graph_alloc(const mp_graph *g) {
  return g->alloc;
}

char *mp_graph_shape_str(const mp_graph *g, const mp_tensor *t, char *buf,
                         size_t cap) {
  size_t len = 0;
  if (cap == 0) return buf;
  buf[0] = '\0';
  len += (size_t)snprintf(buf, cap, "[");
  for (uint32_t k = 0; k < t->rank && len < cap; k++) {
    const mp_dim *d = &t->shape[k];
    const char *sep = k ? "," : "";
    if (d->sym != MP_NO_SYM && d->value > 0) {
      len += (size_t)snprintf(buf + len, cap - len, "%s%s=%" PRId64, sep,
                              g->dims[d->sym].name, d->value);
    } else if (d->sym != MP_NO_SYM) {
      len += (size_t)snprintf(buf + len, cap - len, "%s%s", sep,
                              g->dims[d->sym].name);
    } else {
      len +=
          (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, sep, d->value);
    }
  }
  if (len < cap) snprintf(buf + len, cap - len, "]");
  return buf;
}

/* ---- control flow ------------------------------------------------------ */

mp_status mp_graph_loop_of(const mp_graph *g, const uint32_t *step_of,
                           const mp_alloc *a, uint32_t *loop_of,
                           mp_error *err) {
  size_t n = mp_graph_op_count(g);
  for (size_t o = 0; o < n; o++) loop_of[o] = 0;
  uint8_t *mark = mp_calloc(a, n + 1, sizeof *mark);
  uint32_t *stack = mp_calloc(a, n + 1, sizeof *stack);
  int64_t *entered = mp_calloc(a, n + 1, sizeof *entered);
  if (!mark || !stack || !entered) {
    mp_free(a, mark);
    mp_free(a, stack);
    mp_free(a, entered);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", g->source);
  }
  for (size_t o = 0; o < n; o++) entered[o] = -1;
  for (size_t l = 0; l < n; l++) {
    const mp_op *op = mp_graph_op(g, l);
    if (strcmp(op->type, "Loop") != 0 && strcmp(op->type, "Scan") != 0)
      continue;
    int64_t k = -1;
    for (uint32_t j = 0; j < op->n_attrs; j++) {
      if (strcmp(op->attrs[j].name, "mplan.enter_input") == 0)
        k = op->attrs[j].i;
    }
    if (k < 0 || k >= op->n_inputs || op->inputs[k] < 0) continue;
    int32_t e = mp_graph_tensor(g, (size_t)op->inputs[k])->producer;
    if (e < 0) continue;
    /* bit 1: depends on e; bit 2: l depends on it */
    memset(mark, 0, n);
    size_t top = 0;
    stack[top++] = (uint32_t)e;
    mark[e] |= 1;
    while (top) {
      const mp_op *u = mp_graph_op(g, stack[--top]);
      for (uint32_t i = 0; i < u->n_outputs; i++) {
        const mp_tensor *t = mp_graph_tensor(g, (size_t)u->outputs[i]);
        for (uint32_t c = 0; c < t->n_consumers; c++) {
          if (mark[t->consumers[c]] & 1) continue;
          mark[t->consumers[c]] |= 1;
          stack[top++] = t->consumers[c];
        }
      }
    }
    stack[top++] = (uint32_t)l;
    mark[l] |= 2;
    while (top) {
      const mp_op *u = mp_graph_op(g, stack[--top]);
      for (uint32_t i = 0; i < u->n_inputs; i++) {
        if (u->inputs[i] < 0) continue;
        int32_t pr = mp_graph_tensor(g, (size_t)u->inputs[i])->producer;
        if (pr < 0 || (mark[pr] & 2)) continue;
        mark[pr] |= 2;
        stack[top++] = (uint32_t)pr;
      }
    }
    for (size_t o = 0; o < n; o++) {
      if (mark[o] != 3 || o == (size_t)e || o == l) continue;
      if ((int64_t)step_of[e] > entered[o]) {
        entered[o] = step_of[e];
        loop_of[o] = step_of[l] + 1;
      }
    }
  }
  mp_free(a, mark);
  mp_free(a, stack);
  mp_free(a, entered);
  return MP_OK;
}
