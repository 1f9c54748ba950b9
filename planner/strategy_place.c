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

#include "segset.h"
#include "strategy.h"

static bool place_less(const strategy_range *x, const strategy_range *y) {
  return x->lo < y->lo || (x->lo == y->lo && x->hi < y->hi);
}

/* Sorts by (lo, hi). This runs once per placed buffer on its conflicts, so
 * it is the heuristics' hot loop: a quicksort with the comparison inlined
 * and insertion sort below 24 elements, instead of qsort's indirect calls.
 * Recursion goes into the smaller half only (O(log n) depth). */
static void place_sort(strategy_range *v, size_t n) {
  while (n > 24) {
    strategy_range *a = &v[0], *b = &v[n / 2], *c = &v[n - 1], t;
    strategy_range pivot = place_less(a, b) ? (place_less(b, c)   ? *b
                                               : place_less(a, c) ? *c
                                                                  : *a)
                                            : (place_less(a, c)   ? *a
                                               : place_less(b, c) ? *c
                                                                  : *b);
    size_t i = 0, j = n - 1;
    for (;;) {
      while (place_less(&v[i], &pivot)) i++;
      while (place_less(&pivot, &v[j])) j--;
      if (i >= j) break;
      t = v[i];
      v[i] = v[j];
      v[j] = t;
      i++;
      j--;
    }
    size_t left = j + 1;
    if (left < n - left) {
      place_sort(v, left);
      v += left;
      n -= left;
    } else {
      place_sort(v + left, n - left);
      n = left;
    }
  }
  for (size_t i = 1; i < n; i++) {
    strategy_range x = v[i];
    size_t j = i;
    while (j > 0 && place_less(&x, &v[j - 1])) {
      v[j] = v[j - 1];
      j--;
    }
    v[j] = x;
  }
}

mp_status strategy_placer_init(strategy_placer *pl, mp_strategy_ctx *ctx,
                               mp_error *err) {
  pl->ctx = ctx;
  pl->n_scratch = pl->cap_scratch = 0;
  pl->scratch = NULL;
  return segset_create(ctx, &pl->placed, err);
}

void strategy_placer_release(strategy_placer *pl) {
  segset_destroy(pl->placed);
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
    segset_insert(pl->placed, (uint32_t)i);
  }
}

typedef struct place_collect {
  strategy_placer *pl;
  bool oom;
} place_collect;

static void place_visit(void *arg, uint32_t slot) {
  place_collect *c = arg;
  strategy_placer *pl = c->pl;
  if (pl->n_scratch == pl->cap_scratch) {
    void *p = pl->scratch;
    if (mp_grow(pl->ctx->alloc, &p, &pl->cap_scratch, pl->n_scratch + 1,
                sizeof *pl->scratch, "strategy", NULL) != MP_OK) {
      c->oom = true;
      return;
    }
    pl->scratch = p;
  }
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
  segset_query(pl->placed, b->first, b->last, place_visit, &c);
  if (c.oom) return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  place_sort(pl->scratch, pl->n_scratch);
  if (!place_scan(pl->scratch, pl->n_scratch, b, &pl->ctx->offsets[i])) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "the arena would exceed the addressable memory");
  }
  segset_insert(pl->placed, i);
  return MP_OK;
}
