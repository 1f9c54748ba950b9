/*
 * strategy.h -- the interface every placement strategy implements.
 *
 * A strategy packs one tier of buffers into a zero-based address space. It
 * sees only sizes (already padded), alignments, inclusive intervals, pins
 * and ids -- never tensors or ops. It must be deterministic: ties are broken
 * by id. The plan module validates whatever it returns.
 */
#ifndef MPLAN_STRATEGY_H
#define MPLAN_STRATEGY_H

#include "mplan/base.h"

typedef struct mp_sbuf {
  size_t size;  /* padded: a multiple of align */
  size_t align; /* power of two */
  int64_t first, last;
  uint32_t id; /* index in the problem: the tie-breaker */
  bool pinned;
  size_t pin; /* tier-relative offset when pinned */
} mp_sbuf;

typedef struct mp_strategy_ctx {
  const mp_alloc *alloc;
  const mp_sbuf *bufs;
  size_t n;
  size_t *offsets; /* out: n tier-relative offsets */
  double budget_ms;
} mp_strategy_ctx;

typedef struct mp_strategy {
  const char *name;
  const char *description;
  mp_status (*solve)(mp_strategy_ctx *ctx, mp_error *err);
} mp_strategy;

extern const mp_strategy mp_strategy_linear;
extern const mp_strategy mp_strategy_seed_first_fit;

/* ---- helpers shared by strategies (strategy_util.c) ---------------------- */

/* Returns in *out an owned array (release with mp_free(ctx->alloc, ...)) of
 * the indices of ctx's buffers sorted by (first, id). */
mp_status strategy_order_by_first(const mp_strategy_ctx *ctx, uint32_t **out,
                                  mp_error *err);

/* Stacks the unpinned buffers listed in order[0..n) one above the other
 * (no reuse at all), skipping over the byte ranges of all pinned buffers
 * in ctx; pinned buffers go to their pins. O(n log n). */
mp_status strategy_stack(mp_strategy_ctx *ctx, const uint32_t *order, size_t n,
                         mp_error *err);

#endif /* MPLAN_STRATEGY_H */
