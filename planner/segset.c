/*
 * segset.c -- placed buffers in a static segment tree over time.
 *
 * Invariants:
 *   1. The leaves are the elementary time ranges between consecutive
 *      distinct interval events (every first and every last + 1), so every
 *      buffer's interval is exactly a run of whole leaves [lo[b], hi[b]].
 *   2. Node storage is laid out once (CSR) from each buffer's canonical
 *      decomposition; inserting only appends, so nothing is ever moved.
 *   3. A query reports a buffer at most once (a per-query stamp), although
 *      several of its canonical nodes may meet the query's range.
 */
#include "segset.h"

#include <stdlib.h>

#include "mplan/sort.h"

struct segset {
  const mp_alloc *alloc;
  size_t width; /* a power of two >= the number of leaves */
  size_t n_coords;
  int64_t *coords;   /* leaf i starts at coords[i] */
  uint32_t *lo, *hi; /* per buffer, its leaves */
  uint32_t *at;      /* CSR: node storage starts (2 * width + 1) */
  uint32_t *fill;    /* per node, how much is used */
  uint32_t *items;
  uint32_t *stamp; /* per buffer, the last query that reported it */
  uint32_t now;
  size_t n;
};

static uint32_t segset_leaf(const segset *s, int64_t t) {
  size_t lo = 0, hi = s->n_coords;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->coords[mid] <= t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return (uint32_t)(lo - 1);
}

/* Calls f on every canonical node of leaves [lo, hi]. */
#define SEGSET_EACH_NODE(s, lo_, hi_, node, body)                            \
  for (size_t l_ = (lo_) + (s)->width, r_ = (hi_) + (s)->width + 1; l_ < r_; \
       l_ >>= 1, r_ >>= 1) {                                                 \
    if (l_ & 1) {                                                            \
      size_t node = l_++;                                                    \
      body;                                                                  \
    }                                                                        \
    if (r_ & 1) {                                                            \
      size_t node = --r_;                                                    \
      body;                                                                  \
    }                                                                        \
  }

static bool segset_coords(segset *s, const mp_strategy_ctx *ctx) {
  size_t m = 0, u = 0;
  s->coords = mp_calloc(s->alloc, 2 * ctx->n + 1, sizeof *s->coords);
  uint64_t *key = mp_calloc(s->alloc, 2 * ctx->n + 1, sizeof *key);
  if (!s->coords || !key) {
    mp_free(s->alloc, key);
    return false;
  }
  for (size_t i = 0; i < ctx->n; i++) {
    key[m++] = mp_sort_key_i64(ctx->bufs[i].first);
    key[m++] = mp_sort_key_i64(ctx->bufs[i].last + 1);
  }
  if (mp_radix_sort(s->alloc, NULL, key, m, 0, NULL) != MP_OK) {
    mp_free(s->alloc, key);
    return false;
  }
  for (size_t k = 0; k < m; k++) {
    int64_t c = (int64_t)(key[k] ^ mp_sort_key_i64(0));
    if (!u || s->coords[u - 1] != c) s->coords[u++] = c;
  }
  mp_free(s->alloc, key);
  s->n_coords = u;
  for (s->width = 1; s->width < u; s->width *= 2) {
  }
  return true;
}

static bool segset_layout(segset *s, const mp_strategy_ctx *ctx) {
  size_t nodes = 2 * s->width + 1, total = 0;
  s->at = mp_calloc(s->alloc, nodes + 1, sizeof *s->at);
  s->fill = mp_calloc(s->alloc, nodes, sizeof *s->fill);
  s->lo = mp_calloc(s->alloc, ctx->n + 1, sizeof *s->lo);
  s->hi = mp_calloc(s->alloc, ctx->n + 1, sizeof *s->hi);
  s->stamp = mp_calloc(s->alloc, ctx->n + 1, sizeof *s->stamp);
  if (!s->at || !s->fill || !s->lo || !s->hi || !s->stamp) return false;
  for (size_t i = 0; i < ctx->n; i++) {
    s->lo[i] = segset_leaf(s, ctx->bufs[i].first);
    s->hi[i] = segset_leaf(s, ctx->bufs[i].last);
    SEGSET_EACH_NODE(s, s->lo[i], s->hi[i], node, {
      s->at[node + 1]++;
      total++;
    });
  }
  for (size_t k = 0; k < nodes; k++) s->at[k + 1] += s->at[k];
  s->items = mp_calloc(s->alloc, total + 1, sizeof *s->items);
  return s->items != NULL;
}

mp_status segset_create(const mp_strategy_ctx *ctx, segset **out,
                        mp_error *err) {
  segset *s = mp_calloc(ctx->alloc, 1, sizeof *s);
  if (!s) return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  s->alloc = ctx->alloc;
  s->n = ctx->n;
  if (ctx->n >= UINT32_MAX / 4 || !segset_coords(s, ctx) ||
      !segset_layout(s, ctx)) {
    segset_destroy(s);
    return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  }
  *out = s;
  return MP_OK;
}

void segset_destroy(segset *s) {
  if (!s) return;
  void *all[] = {s->coords, s->lo, s->hi, s->at, s->fill, s->items, s->stamp};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++)
    mp_free(s->alloc, all[k]);
  mp_free(s->alloc, s);
}

void segset_insert(segset *s, uint32_t slot) {
  SEGSET_EACH_NODE(s, s->lo[slot], s->hi[slot], node,
                   { s->items[s->at[node] + s->fill[node]++] = slot; });
}

void segset_query(segset *s, int64_t first, int64_t last,
                  void (*visit)(void *arg, uint32_t slot), void *arg) {
  size_t lo = segset_leaf(s, first), hi = segset_leaf(s, last);
  if (++s->now == 0) { /* wrapped: forget every old stamp */
    for (size_t i = 0; i < s->n; i++) s->stamp[i] = 0;
    s->now = 1;
  }
  /* Every node meeting [lo, hi]: the ranges of its ancestors, level by
   * level up to the root. */
  for (size_t l = lo + s->width, r = hi + s->width; l >= 1; l >>= 1, r >>= 1) {
    for (size_t node = l; node <= r; node++) {
      for (uint32_t k = s->at[node], e = k + s->fill[node]; k < e; k++) {
        uint32_t b = s->items[k];
        if (s->stamp[b] == s->now) continue;
        s->stamp[b] = s->now;
        visit(arg, b);
      }
    }
  }
}
