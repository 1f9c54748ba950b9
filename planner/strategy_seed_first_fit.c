/*
 * strategy_seed_first_fit.c -- the greedy allocator of seed 000 section 8.
 *
 * Buffers are taken in order of first use (ties by id); each goes to the
 * smallest aligned offset at which it overlaps no already-placed buffer
 * whose interval intersects its own. Pinned buffers are placed first, at
 * their pins, and everything else avoids them.
 *
 * Invariants:
 *   1. Because buffers arrive by increasing first use, a placed buffer whose
 *      last use is before the current first use can never conflict again;
 *      it is dropped from the active list. Cost: O(n * L log L) for L the
 *      largest number of simultaneously live buffers.
 *   2. The scan over conflicting ranges sorted by start returns the smallest
 *      feasible aligned offset: every offset it skips overlaps a conflict.
 */
#include <stdlib.h>

#include "strategy.h"

typedef struct seed_range {
  size_t lo, hi;
} seed_range;

static int seed_range_cmp(const void *a, const void *b) {
  const seed_range *x = a, *y = b;
  if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
  return (x->hi > y->hi) - (x->hi < y->hi);
}

typedef struct seed_state {
  mp_strategy_ctx *ctx;
  uint32_t *active; /* placed, unpinned, possibly still live */
  size_t n_active;
  uint32_t *pinned;
  size_t n_pinned;
  seed_range *scratch;
} seed_state;

static bool seed_overlaps(const mp_sbuf *a, const mp_sbuf *b) {
  return a->first <= b->last && b->first <= a->last;
}

/* Smallest aligned x with [x, x + size) clear of every range in r. */
static mp_status seed_fit(seed_range *r, size_t n, const mp_sbuf *b,
                          size_t *out, mp_error *err) {
  size_t x = 0, end;
  qsort(r, n, sizeof *r, seed_range_cmp);
  for (size_t i = 0; i < n; i++) {
    if (r[i].hi <= x) continue;
    if (!mp_size_add(x, b->size, &end)) break;
    if (end <= r[i].lo) break;
    if (!mp_align_up(r[i].hi, b->align, &x)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "the arena would exceed the addressable memory");
    }
  }
  if (!mp_size_add(x, b->size, &end)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "the arena would exceed the addressable memory");
  }
  *out = x;
  return MP_OK;
}

static mp_status seed_place(seed_state *s, uint32_t i, mp_error *err) {
  const mp_sbuf *b = &s->ctx->bufs[i];
  size_t n = 0, kept = 0;
  for (size_t k = 0; k < s->n_active; k++) {
    uint32_t j = s->active[k];
    const mp_sbuf *o = &s->ctx->bufs[j];
    if (o->last < b->first) continue; /* expired for good (invariant 1) */
    s->active[kept++] = j;
    if (seed_overlaps(b, o)) {
      s->scratch[n++] =
          (seed_range){s->ctx->offsets[j], s->ctx->offsets[j] + o->size};
    }
  }
  s->n_active = kept;
  for (size_t k = 0; k < s->n_pinned; k++) {
    uint32_t j = s->pinned[k];
    if (!seed_overlaps(b, &s->ctx->bufs[j])) continue;
    s->scratch[n++] = (seed_range){s->ctx->offsets[j],
                                   s->ctx->offsets[j] + s->ctx->bufs[j].size};
  }
  mp_status st = seed_fit(s->scratch, n, b, &s->ctx->offsets[i], err);
  if (st == MP_OK) s->active[s->n_active++] = i;
  return st;
}

static mp_status seed_solve(mp_strategy_ctx *ctx, mp_error *err) {
  seed_state s = {.ctx = ctx};
  uint32_t *order = NULL;
  size_t n = ctx->n ? ctx->n : 1;
  mp_status st = strategy_order_by_first(ctx, &order, err);
  if (st != MP_OK) return st;
  s.active = mp_calloc(ctx->alloc, n, sizeof *s.active);
  s.pinned = mp_calloc(ctx->alloc, n, sizeof *s.pinned);
  s.scratch = mp_calloc(ctx->alloc, n, sizeof *s.scratch);
  if (!s.active || !s.pinned || !s.scratch) {
    st = mp_error_set(err, MP_ERR_NOMEM, "seed-first-fit: out of memory");
    goto done;
  }
  for (size_t i = 0; i < ctx->n; i++) {
    if (!ctx->bufs[i].pinned) continue;
    ctx->offsets[i] = ctx->bufs[i].pin;
    s.pinned[s.n_pinned++] = (uint32_t)i;
  }
  for (size_t k = 0; k < ctx->n && st == MP_OK; k++) {
    if (!ctx->bufs[order[k]].pinned) st = seed_place(&s, order[k], err);
  }
done:
  mp_free(ctx->alloc, s.scratch);
  mp_free(ctx->alloc, s.pinned);
  mp_free(ctx->alloc, s.active);
  mp_free(ctx->alloc, order);
  return st;
}

const mp_strategy mp_strategy_seed_first_fit = {
    "seed-first-fit",
    "seed 000 section 8: by first use, smallest non-conflicting aligned "
    "offset",
    seed_solve};
