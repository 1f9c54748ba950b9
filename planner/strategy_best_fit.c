/*
 * strategy_best_fit.c -- greedy by size with best-fit gaps (Pisarchyk & Lee
 * 2020's offset planner; XLA's decreasing-size best-fit heap), in three
 * orderings:
 *   best-fit-size      size, then duration (spatial)
 *   best-fit-duration  duration, then size (temporal)
 *   best-fit-conflict  number of buffers overlapping in time, then size
 * each descending, ties by id. Every buffer goes into the smallest gap among
 * the already-placed buffers that overlap it in time, else on top of them.
 *
 * Invariants:
 *   1. Pinned buffers are placed first, at their pins.
 *   2. Conflict degrees come from two sorted arrays of interval ends:
 *      degree(i) = #(first_j <= last_i) - #(last_j < first_i) - 1, which is
 *      O(n log n), not all pairs.
 */
#include <stdlib.h>

#include "strategy.h"

typedef enum bf_order { BF_SIZE, BF_DURATION, BF_CONFLICT } bf_order;

static int bf_cmp_i64(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return (*x > *y) - (*x < *y);
}

/* Number of values in sorted v[0..n) that are <= x (or < x when strict). */
static size_t bf_count(const int64_t *v, size_t n, int64_t x, bool strict) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strict ? v[mid] < x : v[mid] <= x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

static mp_status bf_degrees(const mp_strategy_ctx *ctx, uint64_t *deg,
                            mp_error *err) {
  size_t n = ctx->n;
  int64_t *firsts = mp_calloc(ctx->alloc, n ? n : 1, sizeof *firsts);
  int64_t *lasts = mp_calloc(ctx->alloc, n ? n : 1, sizeof *lasts);
  if (!firsts || !lasts) {
    mp_free(ctx->alloc, firsts);
    mp_free(ctx->alloc, lasts);
    return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    firsts[i] = ctx->bufs[i].first;
    lasts[i] = ctx->bufs[i].last;
  }
  qsort(firsts, n, sizeof *firsts, bf_cmp_i64);
  qsort(lasts, n, sizeof *lasts, bf_cmp_i64);
  for (size_t i = 0; i < n; i++) {
    size_t started = bf_count(firsts, n, ctx->bufs[i].last, false);
    size_t ended = bf_count(lasts, n, ctx->bufs[i].first, true);
    deg[i] = started - ended - 1;
  }
  mp_free(ctx->alloc, firsts);
  mp_free(ctx->alloc, lasts);
  return MP_OK;
}

static mp_status bf_keys(const mp_strategy_ctx *ctx, bf_order order,
                         uint64_t *k1, uint64_t *k2, mp_error *err) {
  for (size_t i = 0; i < ctx->n; i++) {
    const mp_sbuf *b = &ctx->bufs[i];
    uint64_t duration = (uint64_t)(b->last - b->first) + 1;
    k1[i] = order == BF_DURATION ? duration : b->size;
    k2[i] = order == BF_SIZE ? duration : b->size;
  }
  return order == BF_CONFLICT ? bf_degrees(ctx, k1, err) : MP_OK;
}

static mp_status bf_solve(mp_strategy_ctx *ctx, bf_order order, mp_error *err) {
  size_t n = ctx->n ? ctx->n : 1;
  uint64_t *k1 = mp_calloc(ctx->alloc, n, sizeof *k1);
  uint64_t *k2 = mp_calloc(ctx->alloc, n, sizeof *k2);
  uint32_t *idx = NULL;
  strategy_placer pl = {.ctx = ctx};
  mp_status st = MP_OK;
  if (!k1 || !k2) {
    st = mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  }
  if (st == MP_OK) st = bf_keys(ctx, order, k1, k2, err);
  if (st == MP_OK) st = strategy_order_desc(ctx, k1, k2, &idx, err);
  if (st == MP_OK) st = strategy_placer_init(&pl, ctx, err);
  if (st == MP_OK) strategy_placer_pins(&pl);
  for (size_t k = 0; st == MP_OK && k < ctx->n; k++) {
    if (!ctx->bufs[idx[k]].pinned) {
      st = strategy_placer_best_fit(&pl, idx[k], err);
    }
  }
  if (pl.placed) strategy_placer_release(&pl);
  mp_free(ctx->alloc, idx);
  mp_free(ctx->alloc, k2);
  mp_free(ctx->alloc, k1);
  return st;
}

static mp_status bf_size(mp_strategy_ctx *ctx, mp_error *err) {
  return bf_solve(ctx, BF_SIZE, err);
}

static mp_status bf_duration(mp_strategy_ctx *ctx, mp_error *err) {
  return bf_solve(ctx, BF_DURATION, err);
}

static mp_status bf_conflict(mp_strategy_ctx *ctx, mp_error *err) {
  return bf_solve(ctx, BF_CONFLICT, err);
}

const mp_strategy mp_strategy_best_fit_size = {
    "best-fit-size",
    "largest first (then longest), each into the smallest gap among its "
    "time conflicts",
    bf_size};

const mp_strategy mp_strategy_best_fit_duration = {
    "best-fit-duration",
    "longest-lived first (then largest), each into the smallest gap",
    bf_duration};

const mp_strategy mp_strategy_best_fit_conflict = {
    "best-fit-conflict",
    "most time conflicts first (then largest), each into the smallest gap",
    bf_conflict};
