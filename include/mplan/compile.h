/*
 * mplan/compile.h -- writing the program bundle of a planned graph
 * (`mplan compile`; format in mplan/bundle.h).
 */
#ifndef MPLAN_COMPILE_H
#define MPLAN_COMPILE_H

#include "mplan/buf.h"
#include "mplan/model.h"
#include "mplan/onnx.h"
#include "mplan/passes.h"

typedef struct mp_compile_opts {
  uint64_t seed;            /* stream of the pseudo-random weights */
  const mp_onnx_data *onnx; /* weight bytes of an ONNX model, or NULL */
  /* Red zones the plan reserved: per problem buffer, the bytes before its
   * data (the rest of the planned size past the data is the zone after);
   * NULL: none. */
  const uint32_t *rz_before;
  /* Names of the plan's regions (the backend's, fastest first); NULL or
   * past n_region_names: "arena" for region 0, "regionN" after it. */
  const char *const *region_names;
  size_t n_region_names;
  /* Per tensor: its first byte inside its buffer (a Concat slice,
   * mplan/alias.h); NULL: every tensor starts its buffer. */
  const uint64_t *tensor_offset;
  /* Constant subgraphs the fold pass folded without their values
   * (mp_pass_report_constants): the weights named like their outputs
   * get the bytes they compute when run; NULL: none. */
  const mp_graph *constants;
} mp_compile_opts;

/* Appends the bundle of graph g run in `order`, whose tensors' buffers
 * (tensor_buffer[t], NULL: buffer t) are the buffers of problem p placed
 * at pl. Weights come from o->onnx, else from the graph's constant
 * values, else are pseudo-random (deterministic in o->seed, scaled by the
 * weight's role). Unsupported ops and dtypes are MP_ERR_UNSUPPORTED
 * naming them. Borrows everything. */
mp_status mp_compile(const mp_graph *g, const uint32_t *order,
                     const mp_problem *p, const mp_placement *pl,
                     const size_t *tensor_buffer, const mp_compile_opts *o,
                     const mp_alloc *a, mp_buf *out, mp_error *err);

/* The same for a loaded graph model and a plan of its problem (or of a
 * problem with the same buffers, padded for red zones). Reads the model
 * file again for ONNX weights. */
mp_status mp_compile_model(const mp_model *m, const mp_problem *p,
                           const mp_placement *pl, const mp_compile_opts *o,
                           const mp_alloc *a, mp_buf *out, mp_error *err);

#endif /* MPLAN_COMPILE_H */
