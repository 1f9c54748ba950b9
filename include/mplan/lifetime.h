/*
 * mplan/lifetime.h -- from a scheduled graph to an allocation problem.
 *
 * Rules (DESIGN.md definitions, seed 000 section 5, seed 001 section 2):
 *   - step k is position k in the order; a tensor is live on
 *     first_use <= k <= last_use, both inclusive;
 *   - an activation's first use is its producer's step and its last use is
 *     its LAST consumer's step (a tensor with no consumer dies where it is
 *     born);
 *   - graph outputs live to the last step;
 *   - weights are resident; graph inputs are resident unless
 *     inputs_as_activations, in which case they live from step 0 to their
 *     last consumer; retained state is its own tier.
 *   - a buffer holding several tensors (mplan/alias.h: views, in place)
 *     lives from the first use of any of them to the last use of any of
 *     them; it is as large as the largest, aligned as the strictest, and
 *     takes its name and class from its root tensor.
 * Without an alias map buffer i of the problem is tensor i of the graph.
 */
#ifndef MPLAN_LIFETIME_H
#define MPLAN_LIFETIME_H

#include "mplan/alias.h"
#include "mplan/backend.h"
#include "mplan/problem.h"

typedef struct mp_lifetime_opts {
  bool inputs_as_activations;
  const mp_backend *backend; /* NULL: mp_backend_default */
  const mp_alias *alias;     /* NULL: every tensor its own buffer */
} mp_lifetime_opts;

/* Builds a sealed problem from a linked, resolved graph and an order
 * (order[step] = op index, every op once). Returns an owned problem
 * (release with mp_problem_destroy). Borrows g, order and o. */
mp_status mp_lifetimes_build(const mp_graph *g, const uint32_t *order,
                             const mp_lifetime_opts *o, mp_problem **out,
                             mp_error *err);

/* The class a tensor's buffer gets (weights and, unless
 * inputs_as_activations, graph inputs are resident). */
mp_class mp_lifetime_class(const mp_tensor *t, bool inputs_as_activations);

/* Tensor t's steps under an order (step_of: op -> step, n_steps ops):
 * from its producer's step (0 without one) to its last consumer's, to
 * the last step for a graph output. */
void mp_lifetime_interval(const mp_tensor *t, const uint32_t *step_of,
                          int64_t n_steps, int64_t *first, int64_t *last);

/* The bytes tensor t takes in its buffer: its size, or one byte for an
 * empty tensor (ONNX allows them), so that no buffer has size 0. */
size_t mp_lifetime_size(const mp_tensor *t);

/* Size, alignment, class and name of buffer b (the interval is left for
 * the caller): the one rule lifetimes and the memory-aware scheduler
 * share, so that both count the same bytes. Borrows everything; the name
 * points into g. */
void mp_lifetime_buffer_desc(const mp_graph *g, const mp_lifetime_opts *o,
                             size_t b, mp_buffer_desc *d);

/* Number of buffers: the alias map's, or the graph's tensor count. */
size_t mp_lifetime_buffer_count(const mp_graph *g, const mp_lifetime_opts *o);

#endif /* MPLAN_LIFETIME_H */
