/*
 * strategy_place.c -- best-fit placement against the buffers placed so far.
 *
 * Invariants:
 *   1. The interval tree holds exactly the placed buffers (pins included).
 *   2. A buffer is placed so that its bytes avoid every placed buffer whose
 *      interval intersects its own: the validator never sees a conflict
 *      from here.
 *   3. Among feasible gaps the smallest wins, ties to the lowest offset;
 *      when no gap fits, the buffer goes on top of its conflicts (not of
 *      the whole arena), which is what makes reuse possible.
 */
#include <stdlib.h>

#include "itree.h"
#include "strategy.h"

static int place_range_cmp(const void *a, const void *b) {
  const strategy_range *x = a, *y = b;
  if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
  return (x->hi > y->hi) - (x->hi < y->hi);
}

mp_status strategy_placer_init(strategy_placer *pl, mp_strategy_ctx *ctx,
                               mp_error *err) {
  pl->ctx = ctx;
  pl->n_scratch = pl->cap_scratch = 0;
  pl->scratch = NULL;
  pl->placed = mp_calloc(ctx->alloc, 1, sizeof *pl->placed);
  if (!pl->placed) {
    return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  }
  mp_status st = itree_init(pl->placed, ctx->alloc, ctx->n, err);
  if (st != MP_OK) {
    mp_free(ctx->alloc, pl->placed);
    pl->placed = NULL;
  }
  return st;
}

void strategy_placer_release(strategy_placer *pl) {
  if (pl->placed) itree_release(pl->placed);
  mp_free(pl->ctx->alloc, pl->placed);
  mp_free(pl->ctx->alloc, pl->scratch);
  pl->placed = NULL;
  pl->scratch = NULL;
}

void strategy_placer_pins(strategy_placer *pl) {
  const mp_strategy_ctx *ctx = pl->ctx;
  for (size_t i = 0; i < ctx->n; i++) {
    const mp_sbuf *b = &ctx->bufs[i];
    if (!b->pinned) continue;
    ctx->offsets[i] = b->pin;
    itree_insert(pl->placed, (uint32_t)i, b->first, b->last);
  }
}

typedef struct place_collect {
  strategy_placer *pl;
  bool oom;
} place_collect;

static void place_visit(void *arg, uint32_t slot) {
  place_collect *c = arg;
  strategy_placer *pl = c->pl;
  void *p = pl->scratch;
  if (mp_grow(pl->ctx->alloc, &p, &pl->cap_scratch, pl->n_scratch + 1,
              sizeof *pl->scratch, "strategy", NULL) != MP_OK) {
    c->oom = true;
    return;
  }
  pl->scratch = p;
  size_t off = pl->ctx->offsets[slot];
  pl->scratch[pl->n_scratch++] =
      (strategy_range){off, off + pl->ctx->bufs[slot].size};
}

/* Scans the conflict ranges, sorted by start, for the best gap (invariant
 * 3). cursor is the end of the union of the ranges seen so far, so a
 * range starting above it opens the gap [cursor, lo). */
static bool place_scan(const strategy_range *r, size_t n, const mp_sbuf *b,
                       size_t *out) {
  size_t cursor = 0, best = SIZE_MAX, best_len = SIZE_MAX, x, end;
  for (size_t k = 0; k < n; k++) {
    if (r[k].lo > cursor && r[k].lo - cursor < best_len &&
        mp_align_up(cursor, b->align, &x) && mp_size_add(x, b->size, &end) &&
        end <= r[k].lo) {
      best_len = r[k].lo - cursor;
      best = x;
    }
    if (r[k].hi > cursor) cursor = r[k].hi;
  }
  if (best == SIZE_MAX) { /* no gap holds it: on top of its conflicts */
    if (!mp_align_up(cursor, b->align, &best) ||
        !mp_size_add(best, b->size, &end)) {
      return false;
    }
  }
  *out = best;
  return true;
}

mp_status strategy_placer_best_fit(strategy_placer *pl, uint32_t i,
                                   mp_error *err) {
  const mp_sbuf *b = &pl->ctx->bufs[i];
  place_collect c = {pl, false};
  pl->n_scratch = 0;
  itree_query(pl->placed, b->first, b->last, place_visit, &c);
  if (c.oom) return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  if (pl->n_scratch > 1) {
    qsort(pl->scratch, pl->n_scratch, sizeof *pl->scratch, place_range_cmp);
  }
  if (!place_scan(pl->scratch, pl->n_scratch, b, &pl->ctx->offsets[i])) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "the arena would exceed the addressable memory");
  }
  itree_insert(pl->placed, i, b->first, b->last);
  return MP_OK;
}
