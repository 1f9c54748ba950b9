/*
 * strategy_util.c -- small pieces shared by several strategies.
 *
 * Invariants:
 *   1. Orders are total (ties broken by id, by a stable radix sort), so
 *      results never depend on a sort's stability.
 *   2. Every offset computed here is overflow-checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/sort.h"
#include "strategy.h"

/* Sorts idx[0..n) (positions in ctx->bufs) stably by keys[pass][pos]
 * ascending, the last of the n_keys key arrays most significant, after
 * putting them in id order: every order is total (invariant 1). */
static mp_status util_order(const mp_strategy_ctx *ctx,
                            const uint64_t *const *keys, size_t n_keys,
                            uint32_t **out, mp_error *err) {
  size_t n = ctx->n;
  uint32_t *idx = mp_calloc(ctx->alloc, n ? n : 1, sizeof *idx);
  uint64_t *k = mp_calloc(ctx->alloc, n ? n : 1, sizeof *k);
  mp_status st =
      idx && k ? MP_OK
               : mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  bool by_id = true; /* positions already in id order: nothing to sort */
  for (size_t i = 0; st == MP_OK && i < n; i++) {
    idx[i] = (uint32_t)i;
    k[i] = ctx->bufs[i].id;
    if (i && k[i] < k[i - 1]) by_id = false;
  }
  if (st == MP_OK && !by_id) {
    st = mp_radix_sort(ctx->alloc, idx, k, n, sizeof *idx, err);
  }
  for (size_t p = 0; st == MP_OK && p < n_keys; p++) {
    for (size_t i = 0; i < n; i++) k[i] = keys[p][idx[i]];
    st = mp_radix_sort(ctx->alloc, idx, k, n, sizeof *idx, err);
  }
  mp_free(ctx->alloc, k);
  if (st != MP_OK) {
    mp_free(ctx->alloc, idx);
    return st;
  }
  *out = idx;
  return MP_OK;
}

mp_status strategy_order_by_first(const mp_strategy_ctx *ctx, uint32_t **out,
                                  mp_error *err) {
  uint64_t *first = mp_calloc(ctx->alloc, ctx->n ? ctx->n : 1, sizeof *first);
  if (!first) return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  for (size_t i = 0; i < ctx->n; i++) {
    first[i] = mp_sort_key_i64(ctx->bufs[i].first);
  }
  const uint64_t *keys[] = {first};
  mp_status st = util_order(ctx, keys, 1, out, err);
  mp_free(ctx->alloc, first);
  return st;
}

mp_status strategy_order_desc(const mp_strategy_ctx *ctx, const uint64_t *k1,
                              const uint64_t *k2, uint32_t **out,
                              mp_error *err) {
  size_t n = ctx->n;
  uint64_t *d1 = mp_calloc(ctx->alloc, n ? n : 1, sizeof *d1);
  uint64_t *d2 = mp_calloc(ctx->alloc, n ? n : 1, sizeof *d2);
  mp_status st =
      d1 && d2 ? MP_OK
               : mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  for (size_t i = 0; st == MP_OK && i < n; i++) {
    d1[i] = ~k1[i]; /* descending */
    d2[i] = ~k2[i];
  }
  const uint64_t *keys[] = {d2, d1};
  if (st == MP_OK) st = util_order(ctx, keys, 2, out, err);
  mp_free(ctx->alloc, d1);
  mp_free(ctx->alloc, d2);
  return st;
}

typedef struct util_range {
  size_t lo, hi;
} util_range;

static int util_range_cmp(const void *a, const void *b) {
  const util_range *x = a, *y = b;
  if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
  return (x->hi > y->hi) - (x->hi < y->hi);
}

static mp_status util_overflow(mp_error *err) {
  return mp_error_set(err, MP_ERR_BAD_INPUT,
                      "the arena would exceed the addressable memory");
}

/* Collects the pinned buffers' byte ranges, sorted, and places them. */
static mp_status util_pins(mp_strategy_ctx *ctx, util_range **out,
                           size_t *n_out, mp_error *err) {
  size_t np = 0;
  for (size_t i = 0; i < ctx->n; i++) np += ctx->bufs[i].pinned;
  util_range *r = mp_calloc(ctx->alloc, np ? np : 1, sizeof *r);
  if (!r) return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  np = 0;
  for (size_t i = 0; i < ctx->n; i++) {
    const mp_sbuf *b = &ctx->bufs[i];
    if (!b->pinned) continue;
    ctx->offsets[i] = b->pin;
    r[np++] = (util_range){b->pin, b->pin + b->size};
  }
  qsort(r, np, sizeof *r, util_range_cmp);
  *out = r;
  *n_out = np;
  return MP_OK;
}

mp_status strategy_stack(mp_strategy_ctx *ctx, const uint32_t *order, size_t n,
                         mp_error *err) {
  util_range *pins = NULL;
  size_t np = 0, j = 0, cursor = 0;
  mp_status st = util_pins(ctx, &pins, &np, err);
  if (st != MP_OK) return st;
  for (size_t k = 0; k < n && st == MP_OK; k++) {
    const mp_sbuf *b = &ctx->bufs[order[k]];
    size_t x = 0, end = 0;
    if (b->pinned) continue;
    if (!mp_align_up(cursor, b->align, &x)) st = util_overflow(err);
    /* Pins are sorted by start; the cursor only grows, so j only grows. */
    while (st == MP_OK) {
      while (j < np && pins[j].hi <= x) j++;
      if (!mp_size_add(x, b->size, &end)) {
        st = util_overflow(err);
      } else if (j < np && pins[j].lo < end) {
        if (!mp_align_up(pins[j].hi, b->align, &x)) st = util_overflow(err);
      } else {
        break;
      }
    }
    if (st != MP_OK) break;
    ctx->offsets[order[k]] = x;
    cursor = end;
  }
  mp_free(ctx->alloc, pins);
  return st;
}

static size_t util_extent(const mp_strategy_ctx *ctx, const size_t *off) {
  size_t top = 0;
  for (size_t i = 0; i < ctx->n; i++) {
    if (off[i] + ctx->bufs[i].size > top) top = off[i] + ctx->bufs[i].size;
  }
  return top;
}

/* No strategy may do worse than no reuse at all. With mixed alignments a
 * packing order can strand more padding than stacking does; then the
 * linear placement is kept, and the detail says so. */
mp_status strategy_guard(mp_strategy_ctx *ctx, mp_error *err) {
  /* The stack is never smaller than the sum of the sizes: when the packing
   * is within it -- nearly always -- there is nothing to compare. */
  size_t sum = 0, mine_quick = util_extent(ctx, ctx->offsets);
  for (size_t i = 0; i < ctx->n && sum < mine_quick; i++) {
    sum += ctx->bufs[i].size;
  }
  if (mine_quick <= sum) return MP_OK;
  size_t *lin = mp_calloc(ctx->alloc, ctx->n + 1, sizeof *lin);
  if (!lin) return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  mp_strategy_ctx l = *ctx;
  l.offsets = lin;
  mp_status st = mp_strategy_linear.solve(&l, err);
  size_t mine = util_extent(ctx, ctx->offsets), base = util_extent(ctx, lin);
  if (st == MP_OK && base < mine) {
    memcpy(ctx->offsets, lin, ctx->n * sizeof *lin);
    size_t len = strlen(ctx->detail);
    snprintf(ctx->detail + len, sizeof ctx->detail - len,
             "%sthe no-reuse stack was %zu B smaller and was kept",
             len ? "; " : "", mine - base);
  }
  mp_free(ctx->alloc, lin);
  return st;
}
