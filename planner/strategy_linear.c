/*
 * strategy_linear.c -- the no-reuse baseline.
 *
 * Every buffer gets bytes of its own, stacked in order of first use (ties by
 * id), as TFLite Micro's linear planner does. The arena equals the sum of
 * padded sizes plus alignment gaps: the upper bound every other strategy
 * must stay under.
 *
 * Invariants:
 *   1. No two buffers share a byte, whatever their intervals.
 *   2. Pinned buffers sit at their pins; the stack skips over them.
 */
#include "strategy.h"

static mp_status linear_solve(mp_strategy_ctx *ctx, mp_error *err) {
  uint32_t *order;
  mp_status st = strategy_order_by_first(ctx, &order, err);
  if (st != MP_OK) return st;
  st = strategy_stack(ctx, order, ctx->n, err);
  mp_free(ctx->alloc, order);
  return st;
}

const mp_strategy mp_strategy_linear = {
    "linear", "no reuse: every buffer stacked in order of first use",
    linear_solve};
