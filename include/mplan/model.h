/*
 * mplan/model.h -- loading any model file into an allocation problem.
 *
 * MODEL is detected by content: graph JSON (graph/1), a lifetime table
 * (lifetimes/1), a minimalloc CSV, or -- where allowed -- a plan (plan/1)
 * to be validated or explained. A graph goes through the whole analyzer:
 * dims bound, sizes resolved, ops ordered, lifetimes computed. The model
 * owns everything it loaded.
 */
#ifndef MPLAN_MODEL_H
#define MPLAN_MODEL_H

#include "mplan/backend.h"
#include "mplan/graph.h"
#include "mplan/plan.h"
#include "mplan/problem.h"
#include "mplan/schedule.h"

typedef enum mp_model_format {
  MP_FORMAT_GRAPH = 0,
  MP_FORMAT_LIFETIMES,
  MP_FORMAT_MINIMALLOC,
  MP_FORMAT_PLAN
} mp_model_format;

const char *mp_model_format_name(mp_model_format f);

typedef struct mp_dim_binding {
  const char *name;
  int64_t value;
} mp_dim_binding;

typedef struct mp_load_opts {
  mp_order_kind order;        /* graphs only; MP_ORDER_AUTO by default */
  bool inputs_as_activations; /* graphs only */
  const mp_backend *backend;  /* NULL: default for graphs, none otherwise */
  const mp_dim_binding *dims; /* graphs only */
  size_t n_dims;
  bool allow_plan; /* accept plan/1 files */
} mp_load_opts;

typedef struct mp_model mp_model;

/* Loads path. Borrows o for the call; copies path. Returns an owned model
 * (release with mp_model_destroy). */
mp_status mp_model_load(const char *path, const mp_load_opts *o,
                        const mp_alloc *a, mp_model **out, mp_error *err);
void mp_model_destroy(mp_model *m);

mp_model_format mp_model_format_of(const mp_model *m);
const char *mp_model_path(const mp_model *m);
const char *mp_model_name(const mp_model *m);
const char *mp_model_backend_name(const mp_model *m);
const mp_problem *mp_model_problem(const mp_model *m);

/* The graph, or NULL when the model is not a graph. */
const mp_graph *mp_model_graph(const mp_model *m);

/* The order used ("file" or "topo" for graphs, as recorded for plans). */
const char *mp_model_order_name(const mp_model *m);

/* Steps with a known op: the graph's ops, or a plan's execution list; 0
 * for problem files, whose times are not op steps. */
size_t mp_model_steps(const mp_model *m);
const char *mp_model_step_op(const mp_model *m, size_t step);
const char *mp_model_step_type(const mp_model *m, size_t step);

/* Op index of step k (graphs only). */
uint32_t mp_model_step_op_index(const mp_model *m, size_t step);

/* Producer and last consumer op names of buffer i, or NULL. */
const char *mp_model_producer(const mp_model *m, size_t i);
const char *mp_model_last_consumer(const mp_model *m, size_t i);

/* For plan files: the stored placements, arena size and strategy; NULL /
 * 0 otherwise. */
const mp_placement *mp_model_placements(const mp_model *m);
size_t mp_model_arena_bytes(const mp_model *m);
const char *mp_model_strategy(const mp_model *m);

#endif /* MPLAN_MODEL_H */
