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
  uint64_t budget_work; /* mp_plan_opts.budget_work */
  unsigned threads;     /* mp_plan_opts.threads */
  /* out, optional: what a searching or meta strategy has to say (which
   * heuristic won, whether the result is proven optimal) and the best
   * lower bound it proved on the tier's size (0: none beyond the
   * profile's). */
  char detail[256];
  size_t proven_lb;
} mp_strategy_ctx;

typedef struct mp_strategy {
  const char *name;
  const char *description;
  mp_status (*solve)(mp_strategy_ctx *ctx, mp_error *err);
} mp_strategy;

extern const mp_strategy mp_strategy_linear;
extern const mp_strategy mp_strategy_seed_first_fit;
extern const mp_strategy mp_strategy_best_fit_size;
extern const mp_strategy mp_strategy_best_fit_duration;
extern const mp_strategy mp_strategy_best_fit_conflict;
extern const mp_strategy mp_strategy_greedy_breadth;
extern const mp_strategy mp_strategy_online_best_fit;
extern const mp_strategy mp_strategy_exact;
extern const mp_strategy mp_strategy_canonical;
extern const mp_strategy mp_strategy_auto;

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

/* Sorts the buffers of ctx by (k1 desc, k2 desc, id asc) and returns the
 * order as an owned array of indices (release with mp_free(ctx->alloc)). */
mp_status strategy_order_desc(const mp_strategy_ctx *ctx, const uint64_t *k1,
                              const uint64_t *k2, uint32_t **out,
                              mp_error *err);

/* ---- best-fit placement (strategy_place.c) --------------------------------
 * Places buffers one at a time at the best-fitting gap among the already
 * placed buffers that overlap them in time, found through an interval tree:
 * O(log n + k) to find the k conflicts, O(k log k) to scan their gaps. */
typedef struct strategy_range {
  size_t lo, hi;
} strategy_range;

typedef struct strategy_placer {
  mp_strategy_ctx *ctx;
  struct segset *placed;
  strategy_range *scratch;
  size_t n_scratch, cap_scratch;
} strategy_placer;

mp_status strategy_placer_init(strategy_placer *pl, mp_strategy_ctx *ctx,
                               mp_error *err);
void strategy_placer_release(strategy_placer *pl);

/* Puts every pinned buffer at its pin (call first). */
void strategy_placer_pins(strategy_placer *pl);

/* Places unpinned buffer i into the smallest gap that holds it (ties: the
 * lowest), else on top of everything it conflicts with. */
mp_status strategy_placer_best_fit(strategy_placer *pl, uint32_t i,
                                   mp_error *err);

/* No strategy may do worse than no reuse: when the linear stack of ctx's
 * buffers is smaller than ctx->offsets' packing (possible with mixed
 * alignments), it replaces it and ctx->detail says so. */
mp_status strategy_guard(mp_strategy_ctx *ctx, mp_error *err);

#endif /* MPLAN_STRATEGY_H */
