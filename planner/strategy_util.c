/*
 * strategy_util.c -- small pieces shared by several strategies.
 *
 * Invariants:
 *   1. Orders are total (ties broken by id), so results never depend on the
 *      C library's qsort stability.
 *   2. Every offset computed here is overflow-checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategy.h"

typedef struct util_key {
  int64_t first;
  uint64_t id;  /* tie-breaker */
  uint32_t idx; /* position in ctx->bufs */
} util_key;

static int util_key_cmp(const void *a, const void *b) {
  const util_key *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

mp_status strategy_order_by_first(const mp_strategy_ctx *ctx, uint32_t **out,
                                  mp_error *err) {
  size_t n = ctx->n;
  util_key *k = mp_calloc(ctx->alloc, n ? n : 1, sizeof *k);
  uint32_t *idx = mp_calloc(ctx->alloc, n ? n : 1, sizeof *idx);
  if (!k || !idx) {
    mp_free(ctx->alloc, k);
    mp_free(ctx->alloc, idx);
    return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    k[i] = (util_key){ctx->bufs[i].first, ctx->bufs[i].id, (uint32_t)i};
  }
  qsort(k, n, sizeof *k, util_key_cmp);
  for (size_t i = 0; i < n; i++) idx[i] = k[i].idx;
  mp_free(ctx->alloc, k);
  *out = idx;
  return MP_OK;
}

typedef struct util_key2 {
  uint64_t k1, k2, id;
  uint32_t idx;
} util_key2;

static int util_key2_cmp(const void *a, const void *b) {
  const util_key2 *x = a, *y = b;
  if (x->k1 != y->k1) return x->k1 > y->k1 ? -1 : 1;
  if (x->k2 != y->k2) return x->k2 > y->k2 ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

mp_status strategy_order_desc(const mp_strategy_ctx *ctx, const uint64_t *k1,
                              const uint64_t *k2, uint32_t **out,
                              mp_error *err) {
  size_t n = ctx->n;
  util_key2 *k = mp_calloc(ctx->alloc, n ? n : 1, sizeof *k);
  uint32_t *idx = mp_calloc(ctx->alloc, n ? n : 1, sizeof *idx);
  if (!k || !idx) {
    mp_free(ctx->alloc, k);
    mp_free(ctx->alloc, idx);
    return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    k[i] = (util_key2){k1[i], k2[i], ctx->bufs[i].id, (uint32_t)i};
  }
  qsort(k, n, sizeof *k, util_key2_cmp);
  for (size_t i = 0; i < n; i++) idx[i] = k[i].idx;
  mp_free(ctx->alloc, k);
  *out = idx;
  return MP_OK;
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
