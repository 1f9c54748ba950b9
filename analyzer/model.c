/*
 * model.c -- format detection and the analyzer pipeline for one file.
 *
 * graph/1:       parse -> link -> bind dims -> resolve sizes -> order ->
 *                lifetimes -> sealed problem
 * lifetimes/1:   parse -> sealed problem
 * minimalloc:    parse -> sealed problem
 * plan/1:        parse -> sealed problem + placements + names
 *
 * Invariants:
 *   1. On success the problem is sealed and, for graphs, buffer i is
 *      tensor i.
 *   2. Options that cannot apply to the detected format are errors, not
 *      silently ignored (a --dim on a CSV means the user is confused).
 *   3. Nothing is kept from a failed load.
 */
#include "mplan/model.h"

#include <stdio.h>
#include <string.h>

#include "import.h"
#include "json_util.h"
#include "mplan/file.h"
#include "mplan/lifetime.h"

struct mp_model {
  const mp_alloc *alloc;
  char *path;
  mp_model_format format;
  char backend[64];
  mp_graph *graph;
  uint32_t *order;
  mp_order_kind order_used;
  mp_problem *problem;
  const char **producer; /* graphs: per buffer, borrowed from the graph */
  const char **consumer;
  mp_plan_file pf; /* plans */
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
  }
  return "?";
}

void mp_model_destroy(mp_model *m) {
  if (!m) return;
  mp_plan_file_release(&m->pf, m->alloc);
  mp_free(m->alloc, (void *)(uintptr_t)m->producer);
  mp_free(m->alloc, (void *)(uintptr_t)m->consumer);
  mp_problem_destroy(m->problem);
  mp_free(m->alloc, m->order);
  mp_graph_destroy(m->graph);
  mp_free(m->alloc, m->path);
  mp_free(m->alloc, m);
}

/* ---- graphs -------------------------------------------------------------- */

static mp_status model_bind(mp_model *m, const mp_load_opts *o, mp_error *err) {
  for (size_t i = 0; i < o->n_dims; i++) {
    mp_status st =
        mp_graph_bind_dim(m->graph, o->dims[i].name, o->dims[i].value, err);
    if (st != MP_OK) return st;
  }
  return mp_graph_resolve(m->graph, err);
}

/* Producer and last consumer names, under the chosen order. */
static mp_status model_names(mp_model *m, mp_error *err) {
  const mp_graph *g = m->graph;
  size_t n = mp_graph_tensor_count(g), n_ops = mp_graph_op_count(g);
  uint32_t *step_of = mp_calloc(m->alloc, n_ops ? n_ops : 1, sizeof *step_of);
  m->producer = mp_calloc(m->alloc, n ? n : 1, sizeof *m->producer);
  m->consumer = mp_calloc(m->alloc, n ? n : 1, sizeof *m->consumer);
  if (!step_of || !m->producer || !m->consumer) {
    mp_free(m->alloc, step_of);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", m->path);
  }
  for (size_t k = 0; k < n_ops; k++) step_of[m->order[k]] = (uint32_t)k;
  for (size_t i = 0; i < n; i++) {
    const mp_tensor *t = mp_graph_tensor(g, i);
    if (t->producer >= 0) {
      m->producer[i] = mp_graph_op(g, (size_t)t->producer)->name;
    }
    uint32_t best = 0;
    for (uint32_t c = 0; c < t->n_consumers; c++) {
      uint32_t op = t->consumers[c];
      if (!m->consumer[i] || step_of[op] > best) {
        best = step_of[op];
        m->consumer[i] = mp_graph_op(g, op)->name;
      }
    }
  }
  mp_free(m->alloc, step_of);
  return MP_OK;
}

static mp_status model_graph(mp_model *m, const cJSON *root,
                             const mp_load_opts *o, mp_error *err) {
  mp_lifetime_opts lo = {o->inputs_as_activations, o->backend};
  mp_status st = mp_import_graph_json(m->path, root, m->alloc, &m->graph, err);
  if (st == MP_OK && mp_graph_op_count(m->graph) == 0) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT, "%s: ops: the graph has no ops",
                      m->path);
  }
  if (st == MP_OK) st = model_bind(m, o, err);
  if (st == MP_OK) {
    st = mp_schedule(m->graph, o->order, &m->order, &m->order_used, err);
  }
  if (st == MP_OK)
    st = mp_lifetimes_build(m->graph, m->order, &lo, &m->problem, err);
  if (st == MP_OK) st = model_names(m, err);
  return st;
}

/* ---- detection ----------------------------------------------------------- */

static mp_status model_graph_only(const mp_model *m, const mp_load_opts *o,
                                  mp_error *err) {
  const char *what = o->n_dims                   ? "--dim"
                     : o->order != MP_ORDER_AUTO ? "--order"
                     : o->inputs_as_activations  ? "--inputs activation"
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
  } else {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: mplan: unknown format '%s' (this mplan reads "
                      "graph/1, lifetimes/1, plan/1 and minimalloc CSV)",
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
  if ((unsigned char)text[i] == 0x08) {
    return mp_error_set(err, MP_ERR_UNSUPPORTED,
                        "%s: this looks like an ONNX model; ONNX import is "
                        "not supported by this version of mplan",
                        m->path);
  }
  return mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: unrecognised model format (expected graph JSON, a "
                      "lifetime table, or a minimalloc CSV with an "
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
  m->path = mp_strdup(a, path);
  mp_status st =
      m->path ? MP_OK
              : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", path);
  if (st == MP_OK) st = mp_file_read(path, a, &text, &len, err);
  if (st == MP_OK) st = model_detect(m, text, len, o, err);
  if (st == MP_OK && !o->backend && m->format != MP_FORMAT_GRAPH) {
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

const mp_problem *mp_model_problem(const mp_model *m) {
  return m->problem;
}

const mp_graph *mp_model_graph(const mp_model *m) {
  return m->graph;
}

const char *mp_model_order_name(const mp_model *m) {
  if (m->format == MP_FORMAT_PLAN && m->pf.order) return m->pf.order;
  if (m->format != MP_FORMAT_GRAPH) return "file";
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

size_t mp_model_arena_bytes(const mp_model *m) {
  return m->pf.arena_bytes;
}

const char *mp_model_strategy(const mp_model *m) {
  return m->pf.strategy;
}
