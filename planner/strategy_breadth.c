/*
 * strategy_breadth.c -- greedy by breadth (Pisarchyk & Lee 2020).
 *
 * The paper visits operators in decreasing breadth (bytes an op touches)
 * and places each op's unplaced tensors, largest first. The planner sees
 * buffers, not ops, so a step's breadth here is the bytes live at it -- the
 * profile -- and the visit is done in one sort: a buffer is placed when the
 * widest step it is live at is visited, i.e. ordered by (max breadth over
 * its interval desc, that step asc, size desc, id). Each goes into the
 * smallest gap among its placed time conflicts.
 *
 * Invariants:
 *   1. Steps are the sections between consecutive interval events, so any
 *      time scale costs O(n log n), not O(span).
 *   2. The widest step of a buffer comes from a max segment tree over the
 *      sections: O(log n) a query; ties go to the earliest section.
 */
#include <stdlib.h>

#include "strategy.h"

static int br_cmp_i64(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return (*x > *y) - (*x < *y);
}

/* Index of the section starting at or containing t: the last start <= t. */
static size_t br_section(const int64_t *starts, size_t n, int64_t t) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (starts[mid] <= t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo - 1;
}

typedef struct br_state {
  size_t n_sec, width; /* width: power of two >= n_sec */
  int64_t *starts;
  uint64_t *live;
  uint32_t *tree; /* section index of the max in each node's range */
} br_state;

static uint32_t br_better(const br_state *s, uint32_t a, uint32_t b) {
  if (a == UINT32_MAX) return b;
  if (b == UINT32_MAX) return a;
  if (s->live[a] != s->live[b]) return s->live[a] > s->live[b] ? a : b;
  return a < b ? a : b;
}

static void br_build(br_state *s) {
  for (size_t i = 0; i < s->width; i++) {
    s->tree[s->width + i] = i < s->n_sec ? (uint32_t)i : UINT32_MAX;
  }
  for (size_t i = s->width; i-- > 1;) {
    s->tree[i] = br_better(s, s->tree[2 * i], s->tree[2 * i + 1]);
  }
}

/* The widest section in [lo, hi], ties to the earliest. */
static uint32_t br_query(const br_state *s, size_t lo, size_t hi) {
  uint32_t best = UINT32_MAX;
  for (lo += s->width, hi += s->width + 1; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) best = br_better(s, best, s->tree[lo++]);
    if (hi & 1) best = br_better(s, best, s->tree[--hi]);
  }
  return best;
}

/* Sections and the bytes live in each (a difference array over them). */
static mp_status br_sections(const mp_strategy_ctx *ctx, br_state *s,
                             mp_error *err) {
  size_t n = ctx->n, m = 0;
  s->starts = mp_calloc(ctx->alloc, 2 * n + 1, sizeof *s->starts);
  if (!s->starts) return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    s->starts[m++] = ctx->bufs[i].first;
    s->starts[m++] = ctx->bufs[i].last + 1;
  }
  qsort(s->starts, m, sizeof *s->starts, br_cmp_i64);
  size_t u = 0;
  for (size_t k = 0; k < m; k++) {
    if (!u || s->starts[u - 1] != s->starts[k]) s->starts[u++] = s->starts[k];
  }
  s->n_sec = u;
  for (s->width = 1; s->width < u; s->width *= 2) {
  }
  s->live = mp_calloc(ctx->alloc, u + 1, sizeof *s->live);
  s->tree = mp_calloc(ctx->alloc, 2 * s->width, sizeof *s->tree);
  if (!s->live || !s->tree) return mp_error_set(err, MP_ERR_NOMEM, "oom");
  for (size_t i = 0; i < n; i++) {
    s->live[br_section(s->starts, u, ctx->bufs[i].first)] += ctx->bufs[i].size;
    s->live[br_section(s->starts, u, ctx->bufs[i].last + 1)] -=
        ctx->bufs[i].size;
  }
  for (size_t k = 1; k < u; k++) s->live[k] += s->live[k - 1];
  br_build(s);
  return MP_OK;
}

static mp_status br_solve(mp_strategy_ctx *ctx, mp_error *err) {
  size_t n = ctx->n ? ctx->n : 1;
  br_state s = {0};
  uint64_t *k1 = mp_calloc(ctx->alloc, n, sizeof *k1);
  uint64_t *k2 = mp_calloc(ctx->alloc, n, sizeof *k2);
  uint32_t *idx = NULL;
  strategy_placer pl = {.ctx = ctx};
  mp_status st = k1 && k2 ? br_sections(ctx, &s, err)
                          : mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; st == MP_OK && i < ctx->n; i++) {
    const mp_sbuf *b = &ctx->bufs[i];
    size_t lo = br_section(s.starts, s.n_sec, b->first);
    size_t hi = br_section(s.starts, s.n_sec, b->last);
    uint32_t w = br_query(&s, lo, hi);
    k1[i] = s.live[w];
    /* Earlier sections first, then larger buffers (sizes above 2^40 only
     * lose this tie-break, which stays deterministic). */
    uint64_t size = b->size < (1ull << 40) ? b->size : (1ull << 40) - 1;
    k2[i] = ((uint64_t)(s.n_sec - w) << 40) | size;
  }
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
  mp_free(ctx->alloc, s.tree);
  mp_free(ctx->alloc, s.live);
  mp_free(ctx->alloc, s.starts);
  mp_free(ctx->alloc, k2);
  mp_free(ctx->alloc, k1);
  return st;
}

const mp_strategy mp_strategy_greedy_breadth = {
    "greedy-breadth",
    "widest steps first (Pisarchyk & Lee): buffers of the step with the "
    "most live bytes, largest first, each into the smallest gap",
    br_solve};
