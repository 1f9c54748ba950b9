/*
 * rewrite.c -- recording edits to a graph and committing them as a new,
 * linked, resolved graph.
 *
 * Invariants:
 *   1. The source graph is never modified; everything an edit allocates
 *      is owned by the rewrite (blocks, pool) until rw_destroy.
 *   2. subst is acyclic: rw_replace(from, to) resolves `to` first and
 *      refuses to make a tensor stand for itself.
 *   3. The committed graph keeps every tensor's name, dtype, shape, shape
 *      origin, constant value and declaration, every op's name, and the
 *      dims, opset and warnings of the source: a pass changes structure,
 *      never what a tensor is.
 *   4. The committed op order is topological and otherwise follows the
 *      keys (a fused op keeps its head's key and runs as soon as its
 *      inputs are ready), so the rewritten file order is the old one
 *      minus what was removed.
 */
#include "rewrite.h"

#include <stdio.h>
#include <string.h>

mp_status rw_create(const mp_graph *g, rw_graph **out, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  size_t n_ops = mp_graph_op_count(g), n_t = mp_graph_tensor_count(g);
  rw_graph *rw = mp_calloc(a, 1, sizeof *rw);
  if (!rw) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(g));
  }
  rw->src = g;
  rw->a = a;
  rw->n_ops = n_ops;
  rw->cap_ops = n_ops + 1;
  rw->n_src_tensors = n_t;
  rw->ops = mp_calloc(a, n_ops + 1, sizeof *rw->ops);
  rw->subst = mp_calloc(a, n_t + 1, sizeof *rw->subst);
  rw->to_weight = mp_calloc(a, n_t + 1, sizeof *rw->to_weight);
  mp_status st = MP_OK;
  if (!rw->ops || !rw->subst || !rw->to_weight) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                      mp_graph_source(g));
  }
  if (st == MP_OK) st = mp_strpool_create(a, &rw->pool, err);
  if (st != MP_OK) {
    rw_destroy(rw);
    return st;
  }
  for (size_t t = 0; t < n_t; t++) rw->subst[t] = (int32_t)t;
  for (size_t o = 0; o < n_ops; o++) {
    const mp_op *op = mp_graph_op(g, o);
    rw->ops[o] = (rw_op){op->name,     op->type,      op->inputs,  op->outputs,
                         op->n_inputs, op->n_outputs, op->n_attrs, op->attrs,
                         (uint32_t)o,  false};
  }
  *out = rw;
  return MP_OK;
}

void rw_destroy(rw_graph *rw) {
  if (!rw) return;
  for (size_t i = 0; i < rw->n_blocks; i++) mp_free(rw->a, rw->blocks[i]);
  mp_free(rw->a, rw->blocks);
  mp_strpool_destroy(rw->pool);
  mp_strmap_destroy(rw->names[0]);
  mp_strmap_destroy(rw->names[1]);
  mp_free(rw->a, rw->added);
  mp_free(rw->a, rw->to_weight);
  mp_free(rw->a, rw->subst);
  mp_free(rw->a, rw->ops);
  mp_free(rw->a, rw);
}

static mp_status rw_nomem(const rw_graph *rw, mp_error *err) {
  return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                      mp_graph_source(rw->src));
}

void *rw_alloc(rw_graph *rw, size_t count, size_t size, mp_error *err) {
  void *blocks = rw->blocks;
  if (mp_grow(rw->a, &blocks, &rw->cap_blocks, rw->n_blocks + 1,
              sizeof *rw->blocks, mp_graph_source(rw->src), err) != MP_OK) {
    return NULL;
  }
  rw->blocks = blocks;
  void *p = mp_calloc(rw->a, count ? count : 1, size);
  if (!p) {
    rw_nomem(rw, err);
    return NULL;
  }
  rw->blocks[rw->n_blocks++] = p;
  return p;
}

const char *rw_str(rw_graph *rw, const char *s, mp_error *err) {
  const char *r = mp_strpool_cstr(rw->pool, s);
  if (!r) rw_nomem(rw, err);
  return r;
}

static mp_status rw_ids(rw_graph *rw, const int32_t *src, uint32_t n,
                        const int32_t **dst, mp_error *err) {
  int32_t *d = rw_alloc(rw, n, sizeof *d, err);
  if (!d) return MP_ERR_NOMEM;
  if (n) memcpy(d, src, n * sizeof *d);
  *dst = d;
  rw->changes++;
  return MP_OK;
}

mp_status rw_set_inputs(rw_graph *rw, uint32_t op, const int32_t *in,
                        uint32_t n, mp_error *err) {
  mp_status st = rw_ids(rw, in, n, &rw->ops[op].inputs, err);
  if (st == MP_OK) rw->ops[op].n_inputs = n;
  return st;
}

mp_status rw_set_outputs(rw_graph *rw, uint32_t op, const int32_t *out,
                         uint32_t n, mp_error *err) {
  mp_status st = rw_ids(rw, out, n, &rw->ops[op].outputs, err);
  if (st == MP_OK) rw->ops[op].n_outputs = n;
  return st;
}

const mp_attr *rw_attr(const rw_op *op, const char *name) {
  for (uint32_t k = 0; k < op->n_attrs; k++) {
    if (strcmp(op->attrs[k].name, name) == 0) return &op->attrs[k];
  }
  return NULL;
}

bool rw_has_mplan_attr(const mp_op *op) {
  for (uint32_t k = 0; k < op->n_attrs; k++) {
    if (strncmp(op->attrs[k].name, "mplan.", 6) == 0) return true;
  }
  return false;
}

/* A copy of the op's attributes with room for one more. */
static mp_attr *rw_attrs_copy(rw_graph *rw, const rw_op *o, mp_error *err) {
  mp_attr *at = rw_alloc(rw, o->n_attrs + 1, sizeof *at, err);
  if (at && o->n_attrs) memcpy(at, o->attrs, o->n_attrs * sizeof *at);
  return at;
}

mp_status rw_set_attr(rw_graph *rw, uint32_t op, const mp_attr *a,
                      mp_error *err) {
  rw_op *o = &rw->ops[op];
  mp_attr *at = rw_attrs_copy(rw, o, err);
  if (!at) return MP_ERR_NOMEM;
  mp_attr copy = *a;
  copy.name = rw_str(rw, a->name, err);
  if (!copy.name) return MP_ERR_NOMEM;
  if (a->s && !(copy.s = rw_str(rw, a->s, err))) return MP_ERR_NOMEM;
  if (a->ints && a->n) { /* lists too: a caller's array may not outlive it */
    int64_t *v = rw_alloc(rw, a->n, sizeof *v, err);
    if (!v) return MP_ERR_NOMEM;
    memcpy(v, a->ints, a->n * sizeof *v);
    copy.ints = v;
  }
  if (a->floats && a->n) {
    double *v = rw_alloc(rw, a->n, sizeof *v, err);
    if (!v) return MP_ERR_NOMEM;
    memcpy(v, a->floats, a->n * sizeof *v);
    copy.floats = v;
  }
  uint32_t k = 0;
  while (k < o->n_attrs && strcmp(at[k].name, a->name) != 0) k++;
  at[k] = copy;
  o->attrs = at;
  if (k == o->n_attrs) o->n_attrs++;
  rw->changes++;
  return MP_OK;
}

mp_status rw_remove_attr(rw_graph *rw, uint32_t op, const char *name,
                         mp_error *err) {
  rw_op *o = &rw->ops[op];
  if (!rw_attr(o, name)) return MP_OK;
  mp_attr *at = rw_attrs_copy(rw, o, err);
  if (!at) return MP_ERR_NOMEM;
  uint32_t n = 0;
  for (uint32_t k = 0; k < o->n_attrs; k++) {
    if (strcmp(o->attrs[k].name, name) != 0) at[n++] = o->attrs[k];
  }
  o->attrs = at;
  o->n_attrs = n;
  rw->changes++;
  return MP_OK;
}

void rw_kill(rw_graph *rw, uint32_t op) {
  rw->ops[op].dead = true;
  rw->changes++;
}

int32_t rw_resolve(const rw_graph *rw, int32_t t) {
  while (t >= 0 && (size_t)t < rw->n_src_tensors && rw->subst[t] != t) {
    t = rw->subst[t];
  }
  return t;
}

/* Is name free among the source's tensors (ops) and the new ones? */
static bool rw_name_free(const rw_graph *rw, const char *name, bool op) {
  int32_t i;
  int64_t v;
  if (op ? mp_graph_find_op(rw->src, name, &i)
         : mp_graph_find_tensor(rw->src, name, &i)) {
    return false;
  }
  return !rw->names[op] || !mp_strmap_get(rw->names[op], name, &v);
}

/* base + suffix, then base + suffix + "_2", "_3", ... until free; the
 * name is then taken (names[op]). */
static const char *rw_free_name(rw_graph *rw, const char *base,
                                const char *suffix, bool op, mp_error *err) {
  size_t cap = strlen(base) + strlen(suffix) + 16;
  char *b = rw_alloc(rw, cap, 1, err);
  if (!b) return NULL;
  if (!rw->names[op] && mp_strmap_create(rw->a, &rw->names[op], err) != MP_OK) {
    return NULL;
  }
  for (unsigned k = 1;; k++) {
    if (k == 1) {
      snprintf(b, cap, "%s%s", base, suffix);
    } else {
      snprintf(b, cap, "%s%s_%u", base, suffix, k);
    }
    if (rw_name_free(rw, b, op)) {
      return mp_strmap_put(rw->names[op], b, 0, NULL, err) == MP_OK ? b : NULL;
    }
  }
}

mp_status rw_new_tensor(rw_graph *rw, int32_t like, const char *suffix,
                        int32_t *id, mp_error *err) {
  const char *name = rw_free_name(
      rw, mp_graph_tensor(rw->src, (size_t)like)->name, suffix, false, err);
  if (!name) return MP_ERR_NOMEM;
  void *arr = rw->added;
  mp_status st = mp_grow(rw->a, &arr, &rw->cap_new, rw->n_new + 1,
                         sizeof *rw->added, mp_graph_source(rw->src), err);
  if (st != MP_OK) return st;
  rw->added = arr;
  rw->added[rw->n_new] = (rw_new){.like = like, .name = name, .form = -1};
  *id = (int32_t)(rw->n_src_tensors + rw->n_new++);
  rw->changes++;
  return MP_OK;
}

mp_status rw_new_tensor_dims(rw_graph *rw, int32_t like, const char *suffix,
                             uint32_t rank, const mp_dim *shape, int32_t *id,
                             mp_error *err) {
  if (rank > MP_MAX_RANK) {
    return mp_error_set(err, MP_ERR_INTERNAL, "%s: rank %u for a new tensor",
                        mp_graph_source(rw->src), rank);
  }
  mp_status st = rw_new_tensor(rw, like, suffix, id, err);
  if (st != MP_OK) return st;
  rw_new *n = &rw->added[rw->n_new - 1];
  n->shaped = true;
  n->rank = rank;
  memcpy(n->shape, shape, rank * sizeof *shape);
  return MP_OK;
}

mp_status rw_new_tensor_form(rw_graph *rw, int32_t like, int32_t form,
                             const char *suffix, int32_t *id, mp_error *err) {
  const mp_tensor *f = mp_graph_tensor(rw->src, (size_t)form);
  mp_status st =
      rw_new_tensor_dims(rw, like, suffix, f->rank, f->shape, id, err);
  if (st == MP_OK) rw->added[rw->n_new - 1].form = form;
  return st;
}

mp_status rw_new_op(rw_graph *rw, uint32_t key, const char *base,
                    const char *suffix, const char *type, const int32_t *in,
                    uint32_t n_in, const int32_t *out, uint32_t n_out,
                    mp_error *err) {
  const char *nm = rw_free_name(rw, base, suffix, true, err);
  const char *ty = nm ? rw_str(rw, type, err) : NULL;
  if (!ty) return MP_ERR_NOMEM;
  void *ops = rw->ops;
  mp_status st = mp_grow(rw->a, &ops, &rw->cap_ops, rw->n_ops + 1,
                         sizeof *rw->ops, mp_graph_source(rw->src), err);
  if (st != MP_OK) return st;
  rw->ops = ops;
  uint32_t o = (uint32_t)rw->n_ops++;
  rw->ops[o] = (rw_op){.name = nm, .type = ty, .key = key};
  st = rw_set_inputs(rw, o, in, n_in, err);
  if (st == MP_OK) st = rw_set_outputs(rw, o, out, n_out, err);
  return st;
}

void rw_replace(rw_graph *rw, int32_t from, int32_t to) {
  to = rw_resolve(rw, to);
  if (to == from) return; /* invariant 2 */
  rw->subst[from] = to;
  rw->changes++;
}

void rw_fold(rw_graph *rw, int32_t t) {
  rw->to_weight[t] = true;
  rw->changes++;
}

/* ---- commit -------------------------------------------------------------- */

typedef struct rw_commit_ctx {
  rw_graph *rw;
  mp_graph *g;     /* the new graph */
  int32_t *map;    /* source tensor -> new tensor, or -1 */
  bool *read;      /* source tensor read by a live op (after subst) */
  int32_t *writer; /* source tensor -> live op writing it, or -1 */
  uint32_t *indeg; /* live op -> live ops it waits for */
  uint32_t *succ_start, *succ; /* live op -> live ops waiting for it */
  uint32_t *stamp;             /* de-duplicates edges per reader */
  uint64_t *heap;              /* (key << 32 | op) */
  size_t n_heap;
  int32_t *ids; /* scratch for one op's tensor list */
} rw_commit_ctx;

static void rw_heap_push(rw_commit_ctx *c, uint64_t x) {
  size_t i = c->n_heap++;
  while (i > 0 && c->heap[(i - 1) / 2] > x) {
    c->heap[i] = c->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  c->heap[i] = x;
}

static uint64_t rw_heap_pop(rw_commit_ctx *c) {
  uint64_t top = c->heap[0], x = c->heap[--c->n_heap];
  size_t i = 0;
  for (;;) {
    size_t k = 2 * i + 1;
    if (k >= c->n_heap) break;
    if (k + 1 < c->n_heap && c->heap[k + 1] < c->heap[k]) k++;
    if (c->heap[k] >= x) break;
    c->heap[i] = c->heap[k];
    i = k;
  }
  if (c->n_heap) c->heap[i] = x;
  return top;
}

static const char *rw_tensor_name(const rw_graph *rw, size_t t) {
  return t < rw->n_src_tensors ? mp_graph_tensor(rw->src, t)->name
                               : rw->added[t - rw->n_src_tensors].name;
}

/* Who writes and who reads each tensor once the edits apply. */
static mp_status rw_mark(rw_commit_ctx *c, mp_error *err) {
  const rw_graph *rw = c->rw;
  size_t n_t = rw->n_src_tensors;
  for (size_t t = 0; t < n_t + rw->n_new; t++) c->writer[t] = -1;
  for (size_t o = 0; o < rw->n_ops; o++) {
    const rw_op *op = &rw->ops[o];
    if (op->dead) continue;
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      int32_t t = rw_resolve(rw, op->inputs[k]);
      if (t >= 0) c->read[t] = true;
    }
    for (uint32_t k = 0; k < op->n_outputs; k++) {
      int32_t t = op->outputs[k];
      bool added = (size_t)t >= n_t;
      if (c->writer[t] >= 0 || (!added && rw->to_weight[t])) {
        return mp_error_set(err, MP_ERR_INTERNAL,
                            "%s: after a pass, tensor '%s' is written twice "
                            "or is both folded and written",
                            mp_graph_source(rw->src), rw_tensor_name(rw, t));
      }
      c->writer[t] = (int32_t)o;
    }
  }
  for (size_t t = n_t; t < n_t + rw->n_new; t++) {
    if (c->read[t] && c->writer[t] < 0) {
      return mp_error_set(err, MP_ERR_INTERNAL,
                          "%s: a pass added tensor '%s' but no op writing it",
                          mp_graph_source(rw->src), rw_tensor_name(rw, t));
    }
  }
  for (size_t t = 0; t < n_t; t++) {
    const mp_tensor *x = mp_graph_tensor(rw->src, t);
    bool source = x->kind == MP_TENSOR_WEIGHT || x->kind == MP_TENSOR_INPUT ||
                  x->kind == MP_TENSOR_RETAINED || rw->to_weight[t];
    if (x->kind == MP_TENSOR_OUTPUT && c->writer[t] < 0) {
      return mp_error_set(err, MP_ERR_INTERNAL,
                          "%s: a pass removed the op writing graph output "
                          "'%s'",
                          mp_graph_source(rw->src), x->name);
    }
    if (c->read[t] && !source && c->writer[t] < 0) {
      return mp_error_set(err, MP_ERR_INTERNAL,
                          "%s: a pass removed the op writing '%s' but left "
                          "readers of it",
                          mp_graph_source(rw->src), x->name);
    }
  }
  return MP_OK;
}

static bool rw_keep(const rw_commit_ctx *c, size_t t) {
  const rw_graph *rw = c->rw;
  if (t >= rw->n_src_tensors) return c->writer[t] >= 0;
  const mp_tensor *x = mp_graph_tensor(rw->src, t);
  switch (x->kind) {
    case MP_TENSOR_INPUT:
    case MP_TENSOR_RETAINED:
      return true;
    case MP_TENSOR_WEIGHT:
      /* A weight nobody read in the source stays as it was; one that
       * lost its last reader in this rewrite is a dead constant. */
      return c->read[t] || x->n_consumers == 0;
    default:
      if (rw->to_weight[t]) return c->read[t];
      return c->writer[t] >= 0;
  }
}

/* A source tensor as it is, or a new one as a copy of its model that is
 * an intermediate activation (no value, no declaration). */
static mp_status rw_add_tensor(rw_commit_ctx *c, size_t t, mp_error *err) {
  const rw_graph *rw = c->rw;
  bool added = t >= rw->n_src_tensors;
  const mp_tensor *x = mp_graph_tensor(
      rw->src, added ? (size_t)rw->added[t - rw->n_src_tensors].like : t);
  mp_tensor_desc d = {.name = rw_tensor_name(rw, t),
                      .dtype = x->dtype,
                      .kind = added              ? MP_TENSOR_ACTIVATION
                              : rw->to_weight[t] ? MP_TENSOR_WEIGHT
                                                 : x->kind,
                      .rank = x->rank,
                      .layout = x->layout};
  memcpy(d.shape, x->shape, sizeof d.shape);
  const rw_new *nw = added ? &rw->added[t - rw->n_src_tensors] : NULL;
  if (nw && nw->shaped) {
    d.rank = nw->rank;
    memcpy(d.shape, nw->shape, nw->rank * sizeof *nw->shape);
  }
  if (nw && nw->form >= 0) {
    d.layout = mp_graph_tensor(rw->src, (size_t)nw->form)->layout;
  }
  int32_t nt = -1;
  mp_status st = mp_graph_add_tensor(c->g, &d, &nt, err);
  if (st == MP_OK && nw && nw->shaped) {
    st = mp_graph_set_shape(c->g, nt, x->dtype, nw->rank, nw->shape,
                            MP_SHAPE_INFERRED, err);
  } else if (st == MP_OK && x->origin != MP_SHAPE_GIVEN) {
    st = mp_graph_set_shape(c->g, nt, x->dtype, x->rank, x->shape, x->origin,
                            err);
  }
  if (st == MP_OK && x->value && !added) {
    st = mp_graph_set_value(c->g, nt, x->value->i, x->value->f, x->value->n,
                            err);
  }
  if (st == MP_OK && x->has_decl && !added) {
    st = mp_graph_declare(c->g, nt, x->decl_dtype, x->decl_rank, x->decl, err);
  }
  c->map[t] = nt;
  return st;
}

static mp_status rw_add_op(rw_commit_ctx *c, const rw_op *op, mp_error *err) {
  mp_op_desc d = {.name = op->name,
                  .type = op->type,
                  .n_inputs = op->n_inputs,
                  .n_outputs = op->n_outputs,
                  .n_attrs = op->n_attrs,
                  .inputs = c->ids,
                  .outputs = c->ids + op->n_inputs,
                  .attrs = op->attrs};
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    int32_t t = rw_resolve(c->rw, op->inputs[k]);
    c->ids[k] = t >= 0 ? c->map[t] : -1;
  }
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    c->ids[op->n_inputs + k] = c->map[op->outputs[k]];
  }
  return mp_graph_add_op(c->g, &d, NULL, err);
}

/* The live op op waits for (the writer of its k-th input), or -1. */
static int32_t rw_dep(const rw_commit_ctx *c, const rw_op *op, uint32_t k) {
  int32_t t = rw_resolve(c->rw, op->inputs[k]);
  return t >= 0 ? c->writer[t] : -1;
}

/* Edges between live ops, de-duplicated, as CSR (two passes). */
static void rw_edges(rw_commit_ctx *c, bool fill) {
  const rw_graph *rw = c->rw;
  for (size_t r = 0; r < rw->n_ops; r++) {
    const rw_op *op = &rw->ops[r];
    if (op->dead) continue;
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      int32_t p = rw_dep(c, op, k);
      if (p < 0 || c->stamp[p] == r + 1 + (fill ? rw->n_ops : 0)) continue;
      c->stamp[p] = (uint32_t)(r + 1 + (fill ? rw->n_ops : 0));
      if (fill) {
        c->succ[c->succ_start[p] + c->indeg[p]++] = (uint32_t)r;
      } else {
        c->succ_start[p + 1]++;
      }
    }
  }
}

/* Live ops in Kahn order, smallest key first (invariant 4). */
static mp_status rw_ops(rw_commit_ctx *c, mp_error *err) {
  rw_graph *rw = c->rw;
  size_t n = rw->n_ops, added = 0, n_live = 0;
  rw_edges(c, false);
  for (size_t o = 0; o < n; o++) c->succ_start[o + 1] += c->succ_start[o];
  c->succ = mp_calloc(rw->a, c->succ_start[n] + 1, sizeof *c->succ);
  if (!c->succ) return rw_nomem(rw, err);
  rw_edges(c, true); /* indeg[] counts fills here; reset below */
  for (size_t o = 0; o < n; o++) c->indeg[o] = 0;
  for (size_t o = 0; o < n; o++) {
    for (uint32_t k = c->succ_start[o]; k < c->succ_start[o + 1]; k++) {
      c->indeg[c->succ[k]]++;
    }
  }
  for (size_t o = 0; o < n; o++) {
    if (rw->ops[o].dead) continue;
    n_live++;
    if (!c->indeg[o]) rw_heap_push(c, (uint64_t)rw->ops[o].key << 32 | o);
  }
  mp_status st = MP_OK;
  while (st == MP_OK && c->n_heap) {
    uint32_t o = (uint32_t)(rw_heap_pop(c) & 0xffffffffu);
    st = rw_add_op(c, &rw->ops[o], err);
    added++;
    for (uint32_t k = c->succ_start[o]; k < c->succ_start[o + 1]; k++) {
      uint32_t r = c->succ[k];
      if (--c->indeg[r] == 0) {
        rw_heap_push(c, (uint64_t)rw->ops[r].key << 32 | r);
      }
    }
  }
  if (st == MP_OK && added != n_live) {
    st = mp_error_set(err, MP_ERR_INTERNAL, "%s: a pass made the graph cyclic",
                      mp_graph_source(rw->src));
  }
  return st;
}

static mp_status rw_meta(rw_commit_ctx *c, mp_error *err) {
  const mp_graph *src = c->rw->src;
  mp_status st = MP_OK;
  for (size_t i = 0; st == MP_OK && i < mp_graph_dim_count(src); i++) {
    st = mp_graph_add_dim(c->g, mp_graph_dim_name(src, i),
                          mp_graph_dim_value(src, i), NULL, err);
  }
  mp_graph_set_opset(c->g, mp_graph_opset(src));
  for (size_t i = 0; st == MP_OK && i < mp_graph_warning_count(src); i++) {
    st = mp_graph_warn(c->g, err, "%s", mp_graph_warning(src, i));
  }
  return st;
}

mp_status rw_commit(rw_graph *rw, mp_graph **out, mp_error *err) {
  const mp_graph *src = rw->src;
  const mp_alloc *a = rw->a;
  size_t n_t = rw->n_src_tensors + rw->n_new, n = rw->n_ops, max_ids = 0;
  for (size_t o = 0; o < n; o++) {
    size_t k = (size_t)rw->ops[o].n_inputs + rw->ops[o].n_outputs;
    if (k > max_ids) max_ids = k;
  }
  rw_commit_ctx c = {.rw = rw};
  c.map = mp_calloc(a, n_t + 1, sizeof *c.map);
  c.read = mp_calloc(a, n_t + 1, sizeof *c.read);
  c.writer = mp_calloc(a, n_t + 1, sizeof *c.writer);
  c.indeg = mp_calloc(a, n + 1, sizeof *c.indeg);
  c.succ_start = mp_calloc(a, n + 2, sizeof *c.succ_start);
  c.stamp = mp_calloc(a, n + 1, sizeof *c.stamp);
  c.heap = mp_calloc(a, n + 1, sizeof *c.heap);
  c.ids = mp_calloc(a, max_ids + 1, sizeof *c.ids);
  mp_status st = MP_OK;
  if (!c.map || !c.read || !c.writer || !c.indeg || !c.succ_start || !c.stamp ||
      !c.heap || !c.ids) {
    st = rw_nomem(rw, err);
  }
  if (st == MP_OK) st = rw_mark(&c, err);
  if (st == MP_OK) {
    st =
        mp_graph_create(a, mp_graph_source(src), mp_graph_name(src), &c.g, err);
  }
  if (st == MP_OK) st = rw_meta(&c, err);
  for (size_t t = 0; st == MP_OK && t < n_t; t++) {
    c.map[t] = -1;
    if (rw_keep(&c, t)) st = rw_add_tensor(&c, t, err);
  }
  if (st == MP_OK) st = rw_ops(&c, err);
  if (st == MP_OK) st = mp_graph_link(c.g, err);
  if (st == MP_OK) st = mp_graph_resolve(c.g, err);
  mp_free(a, c.map);
  mp_free(a, c.read);
  mp_free(a, c.writer);
  mp_free(a, c.indeg);
  mp_free(a, c.succ_start);
  mp_free(a, c.succ);
  mp_free(a, c.stamp);
  mp_free(a, c.heap);
  mp_free(a, c.ids);
  if (st != MP_OK) {
    mp_graph_destroy(c.g);
    return st;
  }
  *out = c.g;
  return MP_OK;
}
