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

#include "mplan/alias.h"
#include "mplan/backend.h"
#include "mplan/graph.h"
#include "mplan/passes.h"
#include "mplan/plan.h"
#include "mplan/problem.h"
#include "mplan/schedule.h"

typedef enum mp_model_format {
  MP_FORMAT_GRAPH = 0,
  MP_FORMAT_LIFETIMES,
  MP_FORMAT_MINIMALLOC,
  MP_FORMAT_PLAN,
  MP_FORMAT_ONNX,
  MP_FORMAT_PIPELINE
} mp_model_format;

const char *mp_model_format_name(mp_model_format f);

typedef struct mp_dim_binding {
  const char *name;
  int64_t value;
} mp_dim_binding;

/* --shape INPUT=1x3x48x320: a graph input's whole shape. */
typedef struct mp_shape_binding {
  const char *name;
  uint32_t rank;
  int64_t dims[MP_MAX_RANK];
} mp_shape_binding;

/* --value INPUT=V: the value of a scalar graph input (shape math, If). */
typedef struct mp_value_binding {
  const char *name;
  double value;
} mp_value_binding;

/* With capped dims, what the plan made at the cap costs at smaller values
 * of the capped dims (every capped dim scaled by fraction, at least 1). */
typedef struct mp_cap_point {
  double fraction;     /* 0.25, 0.5, 1 */
  size_t arena_bytes;  /* arena of a plan made for those values */
  size_t needed_bytes; /* resident + activation lower bound at those values:
                          what no plan can go below */
  size_t waste_bytes;  /* arena at the cap - needed_bytes */
} mp_cap_point;

#define MP_CAP_POINTS 3

typedef struct mp_load_opts {
  mp_order_kind order;        /* graphs only; MP_ORDER_AUTO by default */
  bool inputs_as_activations; /* graphs only */
  const mp_backend *backend;  /* NULL: default for graphs, none otherwise */
  const mp_dim_binding *dims; /* graphs only */
  size_t n_dims;
  bool allow_plan;                /* accept plan/1 files */
  const mp_shape_binding *shapes; /* graphs and ONNX */
  size_t n_shapes;
  const mp_value_binding *values; /* graphs and ONNX */
  size_t n_values;
  /* Capped dims (NAME<=VALUE): bound at VALUE, a plan valid for every
   * smaller value; recorded on the model. */
  const mp_dim_binding *caps;
  size_t n_caps;
  /* Graph passes (mplan/passes.h): a mask of mp_pass_id bits, 0: none.
   * arena (may be NULL) measures the arena of every pass's problem for
   * the per-pass table. */
  uint32_t passes;
  mp_arena_fn arena;
  void *arena_ud;
  /* --order memory: search budget (mp_schedule_opts). */
  uint64_t order_work;
  double order_budget_ms;
  size_t order_states;
  /* Loading a pipeline's member: a pipeline is refused before it is read
   * (pipelines do not nest, and one naming itself must not recurse). */
  bool member;
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

/* The backend given at load time (regions, banks, alignments), or NULL. */
const mp_backend *mp_model_backend(const mp_model *m);

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

/* The inverse: per graph op, its step (borrowed; NULL without a graph). */
const uint32_t *mp_model_step_of(const mp_model *m);

/* The buffer that holds graph tensor t (graphs only). Without the views
 * and inplace passes every tensor has a buffer of its own (buffer t);
 * with them several tensors share one (docs/ir-conventions.md), so code
 * that goes from tensors to placements must go through this. */
size_t mp_model_tensor_buffer(const mp_model *m, size_t t);

/* The tensor that names buffer b (its root, mplan/alias.h), and all the
 * tensors it holds: *members (borrowed) lists the count returned, in
 * ascending tensor order. Graphs only. */
size_t mp_model_buffer_tensor(const mp_model *m, size_t b);
size_t mp_model_buffer_tensors(const mp_model *m, size_t b,
                               const uint32_t **members);

/* Tensor t's first byte inside its buffer: 0 but for the inputs of a
 * Concat placed as slices of its output (the concat pass). */
uint64_t mp_model_tensor_offset(const mp_model *m, size_t t);

/* Graph tensor t's own steps under the model's order, both inclusive:
 * from the step that writes it (0 when no op does) to its last reader's
 * (the last step for a graph output). Its buffer's steps are the hull
 * over the tensors the buffer holds. Graphs only. */
void mp_model_tensor_steps(const mp_model *m, size_t t, int64_t *first,
                           int64_t *last);

/* The bytes of buffer b that hold a tensor live at step (graphs only; 0
 * otherwise): the union of its live members' byte ranges. A buffer is live
 * over the hull of its tensors' intervals and as large as its largest
 * extent, so at a given step some of its bytes may hold nothing live: a
 * Concat's slice still to be written (the buffer is live from its first
 * slice), or an input an op wrote a smaller output over (a stride-2
 * depthwise Conv in place). *next (may be NULL) receives the earliest
 * later step that writes a tensor of b outside the bytes in use (-1:
 * none), and *writer (may be NULL) the op writing it. Steps are the
 * model's order. */
size_t mp_model_buffer_in_use(const mp_model *m, size_t b, int64_t step,
                              int64_t *next, const char **writer);

/* Why tensor t is in its buffer (MP_ALIAS_OWN without passes). */
mp_alias_rule mp_model_tensor_rule(const mp_model *m, size_t t);

/* The per-pass table (NULL when no pass ran) and what the scheduler did
 * (NULL for models without a graph). Borrowed from the model. */
const mp_pass_report *mp_model_pass_report(const mp_model *m);
const mp_schedule_info *mp_model_schedule_info(const mp_model *m);

/* Producer and last consumer op names of buffer i, or NULL. */
const char *mp_model_producer(const mp_model *m, size_t i);
const char *mp_model_last_consumer(const mp_model *m, size_t i);

/* For plan files: the stored placements, arena size and strategy; NULL /
 * 0 otherwise. */
const mp_placement *mp_model_placements(const mp_model *m);
size_t mp_model_arena_bytes(const mp_model *m);

/* For plan files: the regions' names, capacities (0: unbounded) and the
 * limits mplan validate holds them to; returns how many (0 otherwise). */
size_t mp_model_plan_regions(const mp_model *m, const char *const **names,
                             const size_t **capacity, const size_t **limit);
const char *mp_model_strategy(const mp_model *m);

/* Warnings of the load (an opset newer than known, declarations that
 * inference contradicts); the command line prints them on stderr. */
size_t mp_model_warning_count(const mp_model *m);
const char *mp_model_warning(const mp_model *m, size_t i);

/* Capped dims (NAME<=VALUE) the model was planned at, in option order. */
size_t mp_model_cap_count(const mp_model *m);
const char *mp_model_cap_name(const mp_model *m, size_t i);
int64_t mp_model_cap_value(const mp_model *m, size_t i);

/* The cost of the capped plan at smaller values, recorded by whoever
 * planned them (cli). At most MP_CAP_POINTS; copies p. */
mp_status mp_model_add_cap_point(mp_model *m, const mp_cap_point *p,
                                 mp_error *err);
size_t mp_model_cap_point_count(const mp_model *m);
const mp_cap_point *mp_model_cap_points(const mp_model *m);

#endif /* MPLAN_MODEL_H */
