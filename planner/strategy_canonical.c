/*
 * strategy_canonical.c -- the skyline heuristic behind the exact search.
 *
 * First a descent: repeatedly place, among the unplaced buffers, the one
 * that can go lowest (its lowest offset above the placed buffers it
 * overlaps in time), ties broken by a static preorder -- the exact
 * search's first descent with no capacity, so it never backtracks; four
 * preorders, the smallest arena kept. Then a bounded improvement: a
 * bisection on the capacity between the lower bound and that arena, each
 * probe the exact search limited to CANON_NODES_PER_BUFFER x n nodes (a
 * count, not a time, so the result is the same on every machine).
 *
 * Invariants:
 *   1. Never worse than its own descent, which is a complete placement.
 *   2. The bisection runs up to CANON_IMPROVE_MAX buffers, the descent up
 *      to EX_MAX_BUFFERS; above that, or with pinned
 *      buffers (which the descent does not honour), it falls back to
 *      best-fit-size and says so in the detail.
 */
#include <stdio.h>
#include <string.h>

#include "exact.h"
#include "strategy.h"

#define CANON_NODES_PER_BUFFER 10
#define CANON_PROBES 8
/* The bisection's nodes cost O(n) each: above this many buffers only the
 * descent runs, so that the heuristic stays interactive. */
#define CANON_IMPROVE_MAX 1500

static size_t canon_extent(const mp_strategy_ctx *ctx, const size_t *off) {
  size_t top = 0;
  for (size_t i = 0; i < ctx->n; i++) {
    if (off[i] + ctx->bufs[i].size > top) top = off[i] + ctx->bufs[i].size;
  }
  return top;
}

/* The best of the descents into ctx->offsets. */
static mp_status canon_dives(mp_strategy_ctx *ctx, ex_problem *ex,
                             size_t *trial, size_t *best, mp_error *err) {
  *best = SIZE_MAX;
  for (int h = 0; h < ex_orders(); h++) {
    mp_status st = ex_dive(ex, h, trial, err);
    if (st != MP_OK) return st;
    size_t e = canon_extent(ctx, trial);
    if (e < *best) {
      *best = e;
      memcpy(ctx->offsets, trial, ctx->n * sizeof *trial);
    }
  }
  return MP_OK;
}

/* Node-bounded bisection between the lower bound and best. */
static mp_status canon_improve(mp_strategy_ctx *ctx, ex_problem *ex,
                               size_t *trial, size_t best, mp_error *err) {
  size_t lo = ex_lower_bound(ex);
  uint64_t nodes = (uint64_t)CANON_NODES_PER_BUFFER * (ctx->n + 1);
  for (int k = 0; k < CANON_PROBES && lo < best; k++) {
    size_t cap = lo + (best - 1 - lo) / 2;
    ex_result r;
    mp_status st = ex_decide(ex, cap, 1e300, nodes, 0, trial, &r, err);
    if (st != MP_OK) return st;
    if (r == EX_FOUND) {
      best = canon_extent(ctx, trial);
      memcpy(ctx->offsets, trial, ctx->n * sizeof *trial);
    } else {
      lo = cap + 1;
    }
  }
  return MP_OK;
}

static mp_status canon_solve(mp_strategy_ctx *ctx, mp_error *err) {
  bool pinned = false;
  for (size_t i = 0; i < ctx->n; i++) pinned = pinned || ctx->bufs[i].pinned;
  ex_problem *ex = NULL;
  mp_error why;
  mp_status st = pinned ? MP_ERR_UNSUPPORTED : ex_create(ctx, &ex, &why);
  if (st == MP_ERR_UNSUPPORTED) {
    snprintf(ctx->detail, sizeof ctx->detail,
             "canonical: %.180s; best-fit-size used",
             pinned ? "pinned buffers" : why.msg);
    return mp_strategy_best_fit_size.solve(ctx, err);
  }
  if (st != MP_OK) {
    if (err) *err = why;
    return st;
  }
  size_t *trial = mp_calloc(ctx->alloc, ctx->n + 1, sizeof *trial);
  size_t best = SIZE_MAX;
  st = trial ? canon_dives(ctx, ex, trial, &best, err)
             : mp_error_set(err, MP_ERR_NOMEM, "canonical: out of memory");
  if (st == MP_OK && ctx->n <= CANON_IMPROVE_MAX) {
    st = canon_improve(ctx, ex, trial, best, err);
  }
  mp_free(ctx->alloc, trial);
  ex_destroy(ex);
  return st;
}

const mp_strategy mp_strategy_canonical = {
    "canonical",
    "skyline descent (the buffer that can go lowest next, four preorders), "
    "then a node-bounded bisection with the exact search",
    canon_solve};
