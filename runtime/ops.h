/*
 * ops.h -- per-kernel validation and execution of one bundle op (private
 * to runtime/).
 */
#ifndef MPLAN_RUNTIME_OPS_H
#define MPLAN_RUNTIME_OPS_H

#include "mplan/bundle.h"

/* The tensors share bytes: the same buffer and overlapping ranges (two
 * slices of one buffer, a Concat's inputs placed in its output, share
 * none). An op whose output shares an input's bytes computes in place. */
static inline bool mp_rt_share_bytes(const mp_btensor *a, const mp_btensor *b) {
  return a && b && a->buffer == b->buffer && a->offset < b->offset + b->bytes &&
         b->offset < a->offset + a->bytes;
}

/* The op at `step` is consistent: arity, parameters, dtypes and shapes
 * agree with what its kernel will read and write, and an output that
 * shares an input's buffer is one this kernel computes in place. On
 * success *workspace is the scratch bytes it needs; on failure why holds
 * the reason (no file or op name: the caller prefixes them). */
bool mp_rt_op_check(const mp_bundle *b, size_t step, size_t *workspace,
                    char *why, size_t cap);

/* Runs the op at `step` of a checked bundle. ptr[t] is tensor t's first
 * byte; ws holds the op's workspace; visit counts the op's earlier runs
 * in this run (a random op draws anew each time). Fails only on
 * data-dependent errors (a Gather index out of range), with the reason
 * in why. Never allocates. */
bool mp_rt_op_run(const mp_bundle *b, size_t step, unsigned char *const *ptr,
                  void *ws, uint64_t visit, char *why, size_t cap);

/* On a build with vector kernels (riscv64 with V, MPLAN_RVV): whether
 * the op at `step` of a checked bundle runs them, for its head and every
 * fused prologue and epilogue step; false for an op that falls back to a
 * scalar kernel, and always false on a build without vector kernels. A
 * view (a copy at most) counts as vector. */
bool mp_rt_op_vector(const mp_bundle *b, size_t step);

/* LOOP ops (ops_loop.c): the step of the enter op of the LOOP at step. */
size_t mp_rt_loop_enter(const mp_bundle *b, size_t step);

/* The bytes [*lo, *hi) of the LOOP at step's output out that iteration
 * iter's scan slice covers (mp_rt_loop_end writes them, and for a slice
 * along an inner axis some bytes between); false when out is not a scan
 * output. */
bool mp_rt_loop_span(const mp_bundle *b, size_t step, uint32_t out,
                     int64_t iter, uint64_t *lo, uint64_t *hi);

/* The end of iteration iter (from 0) of the LOOP at step: writes the
 * iteration's scan slices, then sets *more and either writes the enter
 * op's outputs for the next iteration or the LOOP's outputs. False (why
 * set) when the run takes another count of iterations than the plan. */
bool mp_rt_loop_end(const mp_bundle *b, size_t step, unsigned char *const *ptr,
                    int64_t iter, bool *more, char *why, size_t cap);

#endif /* MPLAN_RUNTIME_OPS_H */
