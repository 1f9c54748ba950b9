/*
 * model.c -- format detection and the analyzer pipeline for one file.
 *
 * graph/1:       parse -> link -> bind dims -> resolve sizes -> order ->
 *                lifetimes -> sealed problem
 * lifetimes/1:   parse -> sealed problem
 * minimalloc:    parse -> sealed problem
 * plan/1:        parse -> sealed problem + placements + names
 * ONNX:          import -> bind dims, input shapes and values -> order ->
 *                shape inference (refused while any tensor is unknown) ->
 *                resolve sizes -> lifetimes -> sealed problem
 * (graph JSON with omitted intermediate shapes takes the ONNX route.)
 * Graphs, after sizes: passes (each re-analysed; mplan/passes.h) -> the
 * requested order over the final graph and its buffer map -> lifetimes.
 *
 * Invariants:
 *   1. On success the problem is sealed and, for graphs, buffer b holds
 *      the tensors the alias map gives it (without passes: tensor b).
 *   2. Options that cannot apply to the detected format are errors, not
 *      silently ignored (a --dim on a CSV means the user is confused).
 *   3. Nothing is kept from a failed load.
 */
#include "mplan/model.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "json_util.h"
#include "mplan/file.h"
#include "mplan/lifetime.h"
#include "mplan/onnx.h"
#include "mplan/shape.h"

struct mp_model {
  const mp_alloc *alloc;
  char *path;
  mp_model_format format;
  char backend[64];
  bool has_backend;
  mp_backend be; /* a copy of the backend given, if any */
  mp_graph *graph;
  uint32_t *order;
  mp_order_kind order_used;
  mp_alias alias; /* graphs: tensor -> buffer */
  mp_pass_report *passes;
  mp_schedule_info sched;
  mp_problem *problem;
  const char **producer; /* graphs: per buffer, borrowed from the graph */
  const char **consumer;
  uint32_t *step_of; /* graphs: op -> step under order */
  mp_plan_file pf;   /* plans */
  char **cap_names;  /* capped dims */
  int64_t *cap_values;
  size_t n_caps;
  mp_cap_point cap_points[MP_CAP_POINTS];
  size_t n_cap_points;
};

const char *mp_model_format_name(mp_model_format f) {
  switch (f) {
    case MP_FORMAT_GRAPH:
      return "graph/1";
    case MP_FORMAT_LIFETIMES:
      return "lifetimes/1";
    case MP_FORMAT_MINIMALLOC:
      return "minimalloc-csv";
    case MP_FORMAT_PLAN:
      return "plan/1";
    case MP_FORMAT_ONNX:
      return "onnx";
    case MP_FORMAT_PIPELINE:
      return "pipeline/1";
  }
  return "?";
}

void mp_model_destroy(mp_model *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n_caps; i++) mp_free(m->alloc, m->cap_names[i]);
  mp_free(m->alloc, m->cap_names);
  mp_free(m->alloc, m->cap_values);
  mp_plan_file_release(&m->pf, m->alloc);
  mp_free(m->alloc, (void *)(uintptr_t)m->producer);
  mp_free(m->alloc, m->step_of);
  mp_free(m->alloc, (void *)(uintptr_t)m->consumer);
  mp_problem_destroy(m->problem);
  mp_free(m->alloc, m->order);
  mp_alias_release(&m->alias);
  mp_pass_report_destroy(m->passes);
  mp_graph_destroy(m->graph);
  mp_free(m->alloc, m->path);
  mp_free(m->alloc, m);
}

/* ---- graphs -------------------------------------------------------------- */

static mp_status model_caps(mp_model *m, const mp_load_opts *o, mp_error *err) {
  if (o->n_caps == 0) return MP_OK;
  m->cap_names = mp_calloc(m->alloc, o->n_caps, sizeof *m->cap_names);
  m->cap_values = mp_calloc(m->alloc, o->n_caps, sizeof *m->cap_values);
  if (!m->cap_names || !m->cap_values) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", m->path);
  }
  for (size_t i = 0; i < o->n_caps; i++) {
    mp_status st =
        mp_graph_bind_dim(m->graph, o->caps[i].name, o->caps[i].value, err);
    if (st != MP_OK) return st;
    m->cap_names[i] = mp_strdup(m->alloc, o->caps[i].name);
    if (!m->cap_names[i]) {
      return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", m->path);
    }
    m->cap_values[i] = o->caps[i].value;
    m->n_caps = i + 1;
  }
  return MP_OK;
}

static mp_status model_bind_dims(mp_model *m, const mp_load_opts *o,
                                 mp_error *err) {
  for (size_t i = 0; i < o->n_dims; i++) {
    mp_status st =
        mp_graph_bind_dim(m->graph, o->dims[i].name, o->dims[i].value, err);
    if (st != MP_OK) return st;
  }
  return model_caps(m, o, err);
}

/* The graph input named by a --shape or --value option. */
static mp_status model_input(mp_model *m, const char *flag, const char *name,
                             int32_t *t, mp_error *err) {
  if (!mp_graph_find_tensor(m->graph, name, t) ||
      mp_graph_tensor(m->graph, (size_t)*t)->kind != MP_TENSOR_INPUT) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %s %s: the graph has no input named '%s'", m->path,
                        flag, name, name);
  }
  return MP_OK;
}

/* --shape: every dim of the input, checked against fixed and bound dims;
 * named dims get bound by it, unnamed (unknown) ones set. */
static mp_status model_bind_shape(mp_model *m, const mp_shape_binding *b,
                                  mp_error *err) {
  int32_t t;
  mp_status st = model_input(m, "--shape", b->name, &t, err);
  if (st != MP_OK) return st;
  const mp_tensor *x = mp_graph_tensor(m->graph, (size_t)t);
  if (x->rank != b->rank) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: --shape %s: the input has rank %u, the option "
                        "gives %u dims",
                        m->path, b->name, x->rank, b->rank);
  }
  mp_dim dims[MP_MAX_RANK];
  for (uint32_t k = 0; k < x->rank; k++) {
    dims[k] = x->shape[k];
    int64_t have = mp_graph_dim_of(m->graph, &x->shape[k]);
    if (have >= 0 && have != b->dims[k]) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: --shape %s: dim %u is %" PRId64
                          " in the model (or bound earlier), not %" PRId64,
                          m->path, b->name, k, have, b->dims[k]);
    }
    if (x->shape[k].sym != MP_NO_SYM) {
      mp_graph_set_dim_value(m->graph, x->shape[k].sym, b->dims[k]);
    }
    dims[k].value = b->dims[k];
  }
  st = mp_graph_set_shape(m->graph, t, x->dtype, x->rank, dims, MP_SHAPE_GIVEN,
                          err);
  /* an empty input's value is known: it has no element (a ReduceSum's
   * empty axes are then a constant, as an initializer's would be) */
  bool empty = false;
  for (uint32_t k = 0; k < b->rank; k++) empty = empty || b->dims[k] == 0;
  if (st == MP_OK && empty) {
    static const int64_t none_i = 0;
    static const double none_f = 0;
    bool fl = mp_dtype_is_float(x->dtype);
    st = mp_graph_set_value(m->graph, t, fl ? NULL : &none_i,
                            fl ? &none_f : NULL, 0, err);
  }
  return st;
}

static mp_status model_bind_value(mp_model *m, const mp_value_binding *b,
                                  mp_error *err) {
  int32_t t;
  mp_status st = model_input(m, "--value", b->name, &t, err);
  if (st != MP_OK) return st;
  const mp_tensor *x = mp_graph_tensor(m->graph, (size_t)t);
  for (uint32_t k = 0; k < x->rank; k++) {
    if (mp_graph_dim_of(m->graph, &x->shape[k]) != 1) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: --value %s: the input is not a scalar (bind "
                          "its shape to 1s first)",
                          m->path, b->name);
    }
  }
  bool fl = mp_dtype_is_float(x->dtype);
  int64_t iv = (int64_t)b->value;
  if (!fl && (double)iv != b->value) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: --value %s: the input is %s; %g is not an "
                        "integer",
                        m->path, b->name, mp_dtype_name(x->dtype), b->value);
  }
  return mp_graph_set_value(m->graph, t, fl ? NULL : &iv, fl ? &b->value : NULL,
                            1, err);
}

/* Every graph input's dims must be known before inference runs. */
static mp_status model_inputs_bound(const mp_model *m, mp_error *err) {
  const mp_graph *g = m->graph;
  for (size_t i = 0; i < mp_graph_tensor_count(g); i++) {
    const mp_tensor *t = mp_graph_tensor(g, i);
    if (t->kind != MP_TENSOR_INPUT) continue;
    if (t->origin == MP_SHAPE_PENDING) {
      return mp_error_set(err, MP_ERR_UNSUPPORTED,
                          "%s: graph input '%s' is not a tensor (a sequence, "
                          "map or optional), which mplan cannot size",
                          m->path, t->name);
    }
    for (uint32_t k = 0; k < t->rank; k++) {
      if (mp_graph_dim_of(g, &t->shape[k]) >= 0) continue;
      char shape[256];
      mp_graph_shape_str(g, t, shape, sizeof shape);
      if (t->shape[k].sym != MP_NO_SYM) {
        const char *dn = mp_graph_dim_name(g, (size_t)t->shape[k].sym);
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "%s: graph input '%s' %s: dim '%s' is not bound "
                            "(use --dim %s=VALUE or --shape %s=DxDx...)",
                            m->path, t->name, shape, dn, dn, t->name);
      }
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: graph input '%s' %s: dim %u is unknown (use "
                          "--shape %s=DxDx...)",
                          m->path, t->name, shape, k, t->name);
    }
  }
  return MP_OK;
}

/* After an inference with no failure: every shape known, dims resolved. */
static mp_status model_infer_finish(mp_model *m, mp_error *err) {
  mp_status st = mp_shape_check_resolved(m->graph, err);
  if (st == MP_OK) st = mp_graph_resolve(m->graph, err);
  return st;
}

/* Binding, ordering and shape inference (which also checks given shapes);
 * all: mp_shape_infer_all, and no check that every shape is known. */
static mp_status model_infer_as(mp_model *m, const mp_load_opts *o, bool all,
                                uint32_t *failed, mp_error *err) {
  mp_status st = model_bind_dims(m, o, err);
  for (size_t i = 0; st == MP_OK && i < o->n_shapes; i++) {
    st = model_bind_shape(m, &o->shapes[i], err);
  }
  for (size_t i = 0; st == MP_OK && i < o->n_values; i++) {
    st = model_bind_value(m, &o->values[i], err);
  }
  if (st == MP_OK) st = model_inputs_bound(m, err);
  if (st == MP_OK) {
    /* Inference needs any topological order; the requested one is made
     * once sizes are known (model_order). */
    bool basic = o->order == MP_ORDER_FILE || o->order == MP_ORDER_TOPO;
    st = mp_schedule(m->graph, basic ? o->order : MP_ORDER_AUTO, &m->order,
                     &m->order_used, err);
  }
  if (st == MP_OK && all) {
    return mp_shape_infer_all(m->graph, m->order, failed, err);
  }
  if (st == MP_OK) st = mp_shape_infer(m->graph, m->order, NULL, err);
  if (st == MP_OK) st = model_infer_finish(m, err);
  return st;
}

static mp_status model_infer(mp_model *m, const mp_load_opts *o,
                             mp_error *err) {
  return model_infer_as(m, o, false, NULL, err);
}

/* Producer and last consumer names per buffer, under the chosen order:
 * the op that writes the buffer first and the op that reads it last,
 * over all the tensors it holds. */
static mp_status model_names(mp_model *m, mp_error *err) {
  const mp_graph *g = m->graph;
  size_t n = mp_graph_tensor_count(g), n_ops = mp_graph_op_count(g);
  size_t nb = m->alias.n_buffers;
  uint32_t *step_of = mp_calloc(m->alloc, n_ops ? n_ops : 1, sizeof *step_of);
  m->producer = mp_calloc(m->alloc, nb ? nb : 1, sizeof *m->producer);
  m->consumer = mp_calloc(m->alloc, nb ? nb : 1, sizeof *m->consumer);
  uint32_t *first = mp_calloc(m->alloc, nb ? nb : 1, sizeof *first);
  uint32_t *last = mp_calloc(m->alloc, nb ? nb : 1, sizeof *last);
  if (!step_of || !m->producer || !m->consumer || !first || !last) {
    mp_free(m->alloc, step_of);
    mp_free(m->alloc, first);
    mp_free(m->alloc, last);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", m->path);
  }
  for (size_t k = 0; k < n_ops; k++) step_of[m->order[k]] = (uint32_t)k;
  for (size_t i = 0; i < n; i++) {
    const mp_tensor *t = mp_graph_tensor(g, i);
    size_t b = m->alias.buffer_of[i];
    if (t->producer >= 0 &&
        (!m->producer[b] || step_of[t->producer] < first[b])) {
      first[b] = step_of[t->producer];
      m->producer[b] = mp_graph_op(g, (size_t)t->producer)->name;
    }
    for (uint32_t c = 0; c < t->n_consumers; c++) {
      uint32_t op = t->consumers[c];
      if (!m->consumer[b] || step_of[op] > last[b]) {
        last[b] = step_of[op];
        m->consumer[b] = mp_graph_op(g, op)->name;
      }
    }
  }
  m->step_of = step_of;
  mp_free(m->alloc, first);
  mp_free(m->alloc, last);
  return MP_OK;
}

/* The requested order over the final graph: after the passes (which
 * re-analyse after every one and return the last graph's order), or
 * directly. */
static mp_status model_order(mp_model *m, const mp_load_opts *o,
                             mp_error *err) {
  mp_schedule_opts so = {.order = o->order,
                         .backend = o->backend,
                         .inputs_as_activations = o->inputs_as_activations,
                         .budget_work = o->order_work,
                         .budget_ms = o->order_budget_ms,
                         .max_states = o->order_states};
  mp_status st;
  mp_free(m->alloc, m->order);
  m->order = NULL;
  if (o->passes) {
    mp_pass_opts po = {.mask = o->passes,
                       .schedule = so,
                       .vlen = o->backend ? o->backend->vlen : 0,
                       .arena = o->arena,
                       .arena_ud = o->arena_ud};
    st = mp_passes_run(&m->graph, &po, &m->alias, &m->order, &m->sched,
                       &m->passes, err);
  } else {
    st = mp_schedule_run(m->graph, &so, &m->order, &m->sched, err);
    if (st == MP_OK) {
      st = mp_alias_identity(m->alloc, mp_graph_tensor_count(m->graph),
                             &m->alias, err);
    }
  }
  if (st == MP_OK) m->order_used = m->sched.used;
  return st;
}

/* The analyzer pipeline after shape inference. */
static mp_status model_after_infer(mp_model *m, const mp_load_opts *o,
                                   mp_error *err) {
  mp_lifetime_opts lo = {.inputs_as_activations = o->inputs_as_activations,
                         .backend = o->backend};
  mp_status st = model_order(m, o, err);
  lo.alias = &m->alias;
  if (st == MP_OK)
    st = mp_lifetimes_build(m->graph, m->order, &lo, &m->problem, err);
  if (st == MP_OK) st = model_names(m, err);
  return st;
}

static mp_status model_no_ops(const mp_model *m, mp_error *err) {
  return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: ops: the graph has no ops",
                      m->path);
}

/* The analyzer pipeline once m->graph holds an imported, linked graph. */
static mp_status model_pipeline(mp_model *m, const mp_load_opts *o,
                                mp_error *err) {
  if (mp_graph_op_count(m->graph) == 0) return model_no_ops(m, err);
  /* Also when every shape is written in the file: inference checks them
   * (a declared size the op does not compute is an error). */
  mp_status st = model_infer(m, o, err);
  if (st == MP_OK) st = model_after_infer(m, o, err);
  return st;
}

static mp_status model_graph(mp_model *m, const cJSON *root,
                             const mp_load_opts *o, mp_error *err) {
  mp_status st = mp_import_graph_json(m->path, root, m->alloc, &m->graph, err);
  if (st == MP_OK) st = model_pipeline(m, o, err);
  return st;
}

/* Op `failed` failed inside a branch of an If whose condition is unknown
 * (the importer names branch ops IF/then/... and IF/else/...): the error
 * says so, and which scalar graph inputs decide the condition. */
static void model_branch_hint(const mp_model *m, uint32_t failed,
                              mp_error *err) {
  const mp_graph *g = m->graph;
  const char *name = mp_graph_op(g, failed)->name;
  const mp_op *best = NULL;
  const char *side = NULL;
  for (size_t o = 0; o < mp_graph_op_count(g); o++) {
    const mp_op *op = mp_graph_op(g, o);
    if (strcmp(op->type, "If") != 0 || op->n_inputs < 1 || op->inputs[0] < 0 ||
        mp_graph_tensor(g, (size_t)op->inputs[0])->value) {
      continue;
    }
    size_t n = strlen(op->name);
    if (strncmp(name, op->name, n) != 0 || (best && strlen(best->name) < n))
      continue;
    if (strncmp(name + n, "/then/", 6) == 0 ||
        strncmp(name + n, "/else/", 6) == 0) {
      best = op;
      side = name[n + 1] == 't' ? "then" : "else";
    }
  }
  if (!best) return;
  /* The scalar graph inputs the condition depends on. */
  size_t nt = mp_graph_tensor_count(g);
  uint8_t *seen = mp_calloc(m->alloc, nt + 1, 1);
  int32_t *stack = mp_calloc(m->alloc, nt + 1, sizeof *stack);
  char inputs[200] = "";
  size_t sp = 0, found = 0;
  if (seen && stack) {
    stack[sp++] = best->inputs[0];
    seen[best->inputs[0]] = 1;
  }
  while (sp > 0) {
    const mp_tensor *t = mp_graph_tensor(g, (size_t)stack[--sp]);
    size_t elems = 1;
    for (uint32_t k = 0; k < t->rank; k++) {
      int64_t d = mp_graph_dim_of(g, &t->shape[k]);
      elems = d == 1 ? elems : 0;
    }
    if (t->kind == MP_TENSOR_INPUT && elems == 1 && found < 3) {
      size_t len = strlen(inputs);
      snprintf(inputs + len, sizeof inputs - len, "%s--value %s=V",
               found ? ", " : "", t->name);
      found++;
    }
    if (t->producer < 0) continue;
    const mp_op *p = mp_graph_op(g, (size_t)t->producer);
    for (uint32_t k = 0; k < p->n_inputs; k++) {
      int32_t x = p->inputs[k];
      if (x >= 0 && !seen[x]) {
        seen[x] = 1;
        stack[sp++] = x;
      }
    }
  }
  mp_free(m->alloc, stack);
  mp_free(m->alloc, seen);
  size_t len = strlen(err->msg);
  snprintf(err->msg + len, sizeof err->msg - len,
           " (in the %s branch of If '%s', whose condition is not known%s%s%s)",
           side, best->name, found ? ": " : "", inputs,
           found ? " picks the branch that runs" : "");
}

/* An If whose condition is known runs one branch; the other may not even
 * have shapes that hold for these inputs (Silero VAD's 8 kHz path at 16
 * kHz). So an ONNX model is inferred once going past failures, to find
 * the conditions, and imported again with the taken branches only, until
 * no new condition comes out (each round leaves out at least one branch);
 * the last inference is then the strict one. */
static mp_status model_onnx(mp_model *m, const char *data, size_t len,
                            const mp_load_opts *o, mp_error *err) {
  m->format = MP_FORMAT_ONNX;
  mp_onnx_ifs f = {0};
  mp_status st = mp_onnx_import(m->path, data, len, m->alloc, &m->graph, err);
  if (st == MP_OK && mp_graph_op_count(m->graph) == 0)
    st = model_no_ops(m, err);
  while (st == MP_OK) {
    size_t n0 = f.n;
    uint32_t failed = UINT32_MAX;
    mp_status inf = model_infer_as(m, o, true, &failed, err);
    if (inf == MP_ERR_NOMEM) {
      st = inf;
      break;
    }
    /* err keeps inf's failure: mp_onnx_known_ifs writes it only when
     * memory runs out */
    st = mp_onnx_known_ifs(m->graph, &f, err);
    if (st == MP_OK && f.n == n0) {
      /* Nothing more to leave out: inf is the strict inference's result
       * (its first failure is the strict one's). */
      if (inf != MP_OK && failed != UINT32_MAX) {
        model_branch_hint(m, failed, err);
      }
      st = inf == MP_OK ? model_infer_finish(m, err) : inf;
      break;
    }
    if (st != MP_OK) break;
    mp_graph_destroy(m->graph);
    m->graph = NULL;
    mp_free(m->alloc, m->order);
    m->order = NULL;
    st = mp_onnx_import_taken(m->path, data, len, m->alloc, f.v, f.n, &m->graph,
                              err);
  }
  mp_onnx_ifs_free(m->alloc, &f);
  if (st == MP_OK) st = model_after_infer(m, o, err);
  return st;
}

static bool model_has_ext(const char *path, const char *ext) {
  size_t n = strlen(path), e = strlen(ext);
  return n > e && strcmp(path + n - e, ext) == 0;
}

/* ---- detection ----------------------------------------------------------- */

static mp_status model_graph_only(const mp_model *m, const mp_load_opts *o,
                                  mp_error *err) {
  const char *what = o->n_dims || o->n_caps      ? "--dim"
                     : o->n_shapes               ? "--shape"
                     : o->n_values               ? "--value"
                     : o->order != MP_ORDER_AUTO ? "--order"
                     : o->inputs_as_activations  ? "--inputs activation"
                     : o->passes                 ? "--passes"
                                                 : NULL;
  if (!what) return MP_OK;
  return mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: %s applies only to graph models, and this file is "
                      "a %s",
                      m->path, what, mp_model_format_name(m->format));
}

static size_t model_min_align(const mp_load_opts *o) {
  return o->backend ? o->backend->alignment : 1;
}

static mp_status model_json(mp_model *m, const char *text, size_t len,
                            const mp_load_opts *o, mp_error *err) {
  cJSON *root = NULL;
  const char *fmt = NULL;
  mp_status st = json_parse(m->path, text, len, &root, err);
  if (st != MP_OK) return st;
  const cJSON *f = cJSON_IsObject(root)
                       ? cJSON_GetObjectItemCaseSensitive(root, "mplan")
                       : NULL;
  if (cJSON_IsString(f)) fmt = f->valuestring;
  if (!fmt) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: not an mplan document: the top-level object has "
                      "no \"mplan\" format field",
                      m->path);
  } else if (strncmp(fmt, "graph/", 6) == 0) {
    m->format = MP_FORMAT_GRAPH;
    st = model_graph(m, root, o, err);
  } else if (strncmp(fmt, "pipeline/", 9) == 0) {
    m->format = MP_FORMAT_PIPELINE;
    if (o->member) {
      st = mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: is a pipeline; members must be graph JSON or "
                        "ONNX",
                        m->path);
    } else if (o->n_dims || o->n_caps || o->n_shapes || o->n_values) {
      st = mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: a pipeline binds its models' dims and shapes "
                        "itself (\"shapes\", \"dims\" per model)",
                        m->path);
    }
    if (st == MP_OK) {
      st = mp_import_pipeline(m->path, root, m->alloc, &m->graph, err);
    }
    if (st == MP_OK) st = model_pipeline(m, o, err);
  } else if (strncmp(fmt, "lifetimes/", 10) == 0) {
    m->format = MP_FORMAT_LIFETIMES;
    st = model_graph_only(m, o, err);
    if (st == MP_OK) {
      st = mp_import_lifetimes(m->path, root, model_min_align(o), m->alloc,
                               &m->problem, err);
    }
  } else if (strncmp(fmt, "plan/", 5) == 0 && o->allow_plan) {
    m->format = MP_FORMAT_PLAN;
    st = model_graph_only(m, o, err);
    if (st == MP_OK) {
      st = mp_import_plan(m->path, root, m->alloc, &m->problem, &m->pf, err);
    }
  } else if (strncmp(fmt, "plan/", 5) == 0) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: this is a plan, not a model (use mplan validate "
                      "or mplan explain on it)",
                      m->path);
  } else if (strncmp(fmt, "backend/", 8) == 0) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: this is a backend description, not a model (give "
                      "it with --backend)",
                      m->path);
  } else {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: mplan: unknown format '%s' (this mplan reads "
                      "graph/1, pipeline/1, lifetimes/1, plan/1, minimalloc "
                      "CSV and ONNX)",
                      m->path, fmt);
  }
  cJSON_Delete(root);
  return st;
}

static bool model_is_csv(const char *text, size_t len) {
  size_t end = 0;
  while (end < len && text[end] != '\n') end++;
  char head[512];
  size_t n = end < sizeof head - 1 ? end : sizeof head - 1;
  memcpy(head, text, n);
  head[n] = '\0';
  /* Loose on purpose: a header that names some minimalloc columns is a
   * CSV, and the CSV reader then says precisely what is wrong with it. */
  return strchr(head, ',') && (strstr(head, "lower") || strstr(head, "upper") ||
                               strncmp(head, "id,", 3) == 0);
}

static mp_status model_detect(mp_model *m, const char *text, size_t len,
                              const mp_load_opts *o, mp_error *err) {
  size_t i = 0;
  /* ONNX first: a protobuf may contain any byte, including '{'. */
  if (mp_onnx_sniff(text, len)) return model_onnx(m, text, len, o, err);
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) i = 3;
  while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' ||
                     text[i] == '\t')) {
    i++;
  }
  if (i == len) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: the file is empty",
                        m->path);
  }
  if (text[i] == '{' || text[i] == '[') {
    return model_json(m, text + i, len - i, o, err);
  }
  if (model_is_csv(text + i, len - i)) {
    m->format = MP_FORMAT_MINIMALLOC;
    mp_status st = model_graph_only(m, o, err);
    if (st != MP_OK) return st;
    return mp_import_minimalloc(m->path, text + i, len - i, model_min_align(o),
                                m->alloc, &m->problem, err);
  }
  /* Content that is none of the text formats, in a file named .onnx, is
   * read as ONNX so that the protobuf reader says what is wrong. */
  if (model_has_ext(m->path, ".onnx")) {
    return model_onnx(m, text, len, o, err);
  }
  return mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: unrecognised model format (expected ONNX, graph "
                      "JSON, a lifetime table, or a minimalloc CSV with an "
                      "id,lower,upper,size header)",
                      m->path);
}

mp_status mp_model_load(const char *path, const mp_load_opts *o,
                        const mp_alloc *a, mp_model **out, mp_error *err) {
  mp_load_opts none = {0};
  char *text = NULL;
  size_t len = 0;
  if (!o) o = &none;
  mp_model *m = mp_calloc(a, 1, sizeof *m);
  if (!m) return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", path);
  m->alloc = a;
  m->order_used = MP_ORDER_FILE;
  snprintf(m->backend, sizeof m->backend, "%s",
           o->backend ? o->backend->name : "default");
  if (o->backend) {
    m->be = *o->backend;
    m->has_backend = true;
  }
  m->path = mp_strdup(a, path);
  mp_status st =
      m->path ? MP_OK
              : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", path);
  if (st == MP_OK) st = mp_file_read(path, a, &text, &len, err);
  if (st == MP_OK) st = model_detect(m, text, len, o, err);
  if (st == MP_OK && !o->backend && !m->graph) {
    /* Problem files carry their own alignments: no backend applies. */
    snprintf(m->backend, sizeof m->backend, "none");
  }
  mp_free(a, text);
  if (st != MP_OK) {
    mp_model_destroy(m);
    return st;
  }
  *out = m;
  return MP_OK;
}

/* ---- accessors ----------------------------------------------------------- */

mp_model_format mp_model_format_of(const mp_model *m) {
  return m->format;
}

const char *mp_model_path(const mp_model *m) {
  return m->path;
}

const char *mp_model_name(const mp_model *m) {
  return mp_problem_name(m->problem);
}

const char *mp_model_backend_name(const mp_model *m) {
  return m->backend;
}

const mp_backend *mp_model_backend(const mp_model *m) {
  return m->has_backend ? &m->be : NULL;
}

const mp_problem *mp_model_problem(const mp_model *m) {
  return m->problem;
}

const mp_graph *mp_model_graph(const mp_model *m) {
  return m->graph;
}

const char *mp_model_order_name(const mp_model *m) {
  if (m->format == MP_FORMAT_PLAN && m->pf.order) return m->pf.order;
  if (!m->graph) return "file";
  return mp_order_name(m->order_used);
}

size_t mp_model_steps(const mp_model *m) {
  if (m->graph) return mp_graph_op_count(m->graph);
  return m->format == MP_FORMAT_PLAN ? m->pf.n_steps : 0;
}

const char *mp_model_step_op(const mp_model *m, size_t step) {
  if (step >= mp_model_steps(m)) return NULL;
  if (m->graph) return mp_graph_op(m->graph, m->order[step])->name;
  return m->pf.step_op ? m->pf.step_op[step] : NULL;
}

const char *mp_model_step_type(const mp_model *m, size_t step) {
  if (step >= mp_model_steps(m)) return NULL;
  if (m->graph) return mp_graph_op(m->graph, m->order[step])->type;
  return m->pf.step_type ? m->pf.step_type[step] : NULL;
}

uint32_t mp_model_step_op_index(const mp_model *m, size_t step) {
  return m->order[step];
}

size_t mp_model_tensor_buffer(const mp_model *m, size_t t) {
  return m->alias.buffer_of ? m->alias.buffer_of[t] : t;
}

size_t mp_model_buffer_tensor(const mp_model *m, size_t b) {
  return m->alias.root ? m->alias.root[b] : b;
}

size_t mp_model_buffer_tensors(const mp_model *m, size_t b,
                               const uint32_t **members) {
  if (!m->alias.members) {
    *members = NULL;
    return 0;
  }
  *members = m->alias.members + m->alias.start[b];
  return m->alias.start[b + 1] - m->alias.start[b];
}

uint64_t mp_model_tensor_offset(const mp_model *m, size_t t) {
  return m->alias.offset ? m->alias.offset[t] : 0;
}

const uint32_t *mp_model_step_of(const mp_model *m) {
  return m->graph ? m->step_of : NULL;
}

void mp_model_tensor_steps(const mp_model *m, size_t t, int64_t *first,
                           int64_t *last) {
  if (!m->graph || !m->step_of) {
    *first = *last = 0;
    return;
  }
  mp_lifetime_interval(mp_graph_tensor(m->graph, t), m->step_of,
                       (int64_t)mp_graph_op_count(m->graph), first, last);
}

/* Is member k of buffer b live at step, and its byte range. */
static bool model_member_live(const mp_model *m, uint32_t t, int64_t step,
                              int64_t *first, uint64_t *lo, uint64_t *hi) {
  const mp_tensor *x = mp_graph_tensor(m->graph, t);
  int64_t f, l;
  mp_lifetime_interval(x, m->step_of, (int64_t)mp_graph_op_count(m->graph), &f,
                       &l);
  *first = f;
  *lo = m->alias.offset[t];
  *hi = *lo + mp_lifetime_size(x);
  return f <= step && step <= l;
}

/* The union of the live members' byte ranges is measured by a sweep from
 * the lowest offset up: each round takes the live range that starts
 * lowest above the cursor (clipped to it) and moves the cursor to its
 * end, so no byte is counted twice: no allocation, O(k^2) in the k
 * members. The first MW_RUNS runs of the union (touching pieces joined)
 * are kept to tell which later writes land outside it. */
#define MW_RUNS 64
size_t mp_model_buffer_in_use(const mp_model *m, size_t b, int64_t step,
                              int64_t *next, const char **writer) {
  if (next) *next = -1;
  if (writer) *writer = NULL;
  if (!m->graph || !m->step_of || b >= m->alias.n_buffers) return 0;
  const uint32_t *mem = m->alias.members + m->alias.start[b];
  size_t n = m->alias.start[b + 1] - m->alias.start[b], written = 0, runs = 0;
  uint64_t cursor = 0, lo, hi, run_lo[MW_RUNS], run_hi[MW_RUNS];
  int64_t f;
  for (;;) {
    uint64_t start = UINT64_MAX, end = 0;
    for (size_t k = 0; k < n; k++) {
      if (!model_member_live(m, mem[k], step, &f, &lo, &hi) || hi <= cursor) {
        continue;
      }
      uint64_t from = lo > cursor ? lo : cursor;
      if (from < start || (from == start && hi > end)) {
        start = from;
        end = hi;
      }
    }
    if (start == UINT64_MAX) break;
    if (runs && run_hi[runs - 1] == start) {
      run_hi[runs - 1] = end;
    } else if (runs < MW_RUNS) {
      run_lo[runs] = start;
      run_hi[runs++] = end;
    }
    written += (size_t)(end - start);
    cursor = end;
  }
  for (size_t k = 0; k < n; k++) {
    model_member_live(m, mem[k], step, &f, &lo, &hi);
    bool inside = false;
    for (size_t r = 0; r < runs && !inside; r++) {
      inside = run_lo[r] <= lo && hi <= run_hi[r];
    }
    const mp_tensor *x = mp_graph_tensor(m->graph, mem[k]);
    if (f > step && !inside && x->producer >= 0 && next &&
        (*next < 0 || f < *next)) {
      *next = f;
      if (writer) *writer = mp_graph_op(m->graph, (size_t)x->producer)->name;
    }
  }
  return written;
}

mp_alias_rule mp_model_tensor_rule(const mp_model *m, size_t t) {
  return m->alias.rule ? (mp_alias_rule)m->alias.rule[t] : MP_ALIAS_OWN;
}

const mp_pass_report *mp_model_pass_report(const mp_model *m) {
  return m->passes;
}

const mp_schedule_info *mp_model_schedule_info(const mp_model *m) {
  return m->graph ? &m->sched : NULL;
}

const char *mp_model_producer(const mp_model *m, size_t i) {
  if (m->producer) return m->producer[i];
  return m->pf.buf_producer ? m->pf.buf_producer[i] : NULL;
}

const char *mp_model_last_consumer(const mp_model *m, size_t i) {
  if (m->consumer) return m->consumer[i];
  return m->pf.buf_consumer ? m->pf.buf_consumer[i] : NULL;
}

const mp_placement *mp_model_placements(const mp_model *m) {
  return m->pf.placements;
}

size_t mp_model_plan_regions(const mp_model *m, const char *const **names,
                             const size_t **capacity, const size_t **limit) {
  if (m->format != MP_FORMAT_PLAN) return 0;
  *names = (const char *const *)m->pf.region_names;
  *capacity = m->pf.region_capacity;
  *limit = m->pf.region_limit;
  return m->pf.n_regions;
}

size_t mp_model_arena_bytes(const mp_model *m) {
  return m->pf.arena_bytes;
}

const char *mp_model_strategy(const mp_model *m) {
  return m->pf.strategy;
}

size_t mp_model_warning_count(const mp_model *m) {
  return m->graph ? mp_graph_warning_count(m->graph) : 0;
}

const char *mp_model_warning(const mp_model *m, size_t i) {
  return mp_graph_warning(m->graph, i);
}

size_t mp_model_cap_count(const mp_model *m) {
  return m->n_caps;
}

const char *mp_model_cap_name(const mp_model *m, size_t i) {
  return m->cap_names[i];
}

int64_t mp_model_cap_value(const mp_model *m, size_t i) {
  return m->cap_values[i];
}

mp_status mp_model_add_cap_point(mp_model *m, const mp_cap_point *p,
                                 mp_error *err) {
  if (m->n_cap_points == MP_CAP_POINTS) {
    return mp_error_set(err, MP_ERR_INTERNAL, "%s: too many cap points",
                        m->path);
  }
  m->cap_points[m->n_cap_points++] = *p;
  return MP_OK;
}

size_t mp_model_cap_point_count(const mp_model *m) {
  return m->n_cap_points;
}

const mp_cap_point *mp_model_cap_points(const mp_model *m) {
  return m->cap_points;
}
