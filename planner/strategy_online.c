/*
 * strategy_online.c -- what a dynamic allocator would get.
 *
 * Buffers are allocated and freed in execution order (frees at a step before
 * allocations, allocations by id) from a free list with best-fit search and
 * coalescing, growing the arena only when no free block holds the request:
 * the behaviour of an ONNX Runtime style arena. It knows nothing of the
 * future, which is exactly what planning buys over it.
 *
 * Invariants:
 *   1. Free blocks are disjoint, never adjacent (coalesced on free) and lie
 *      below `top`, the end of the highest block in use; the space above top
 *      is free implicitly. A block freed at the top lowers top instead.
 *   2. Two ordered sets index the free blocks: by offset (for coalescing)
 *      and by length (for best fit): O(log n) an operation.
 *   3. Pinned buffers' bytes are reserved for the whole run: an online
 *      allocator cannot move data that a pin will need later.
 */
#include <stdlib.h>

#include "mplan/sort.h"
#include "otree.h"
#include "strategy.h"

typedef struct ol_event {
  int64_t t;
  uint32_t alloc; /* 0: free (first), 1: allocate */
  uint32_t id;    /* tie-break: buffer id */
  uint32_t i;     /* index in ctx */
} ol_event;

/* Sorts events by time, frees before allocations, then buffer id (each a
 * stable radix sort, the least significant key first). */
static mp_status ol_sort(const mp_alloc *a, ol_event *ev, size_t n,
                         mp_error *err) {
  uint64_t *key = mp_calloc(a, n ? n : 1, sizeof *key);
  if (!key) return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  bool by_id = true;
  for (size_t i = 0; i < n; i++) {
    key[i] = ev[i].id;
    if (i && ev[i].id < ev[i - 1].id) by_id = false;
  }
  mp_status st = by_id ? MP_OK : mp_radix_sort(a, ev, key, n, sizeof *ev, err);
  for (size_t i = 0; st == MP_OK && i < n; i++) key[i] = ev[i].alloc;
  if (st == MP_OK) st = mp_radix_sort(a, ev, key, n, sizeof *ev, err);
  for (size_t i = 0; st == MP_OK && i < n; i++) {
    key[i] = mp_sort_key_i64(ev[i].t);
  }
  if (st == MP_OK) st = mp_radix_sort(a, ev, key, n, sizeof *ev, err);
  mp_free(a, key);
  return st;
}

typedef struct ol_state {
  mp_strategy_ctx *ctx;
  otree by_off, by_len;
  size_t *off, *len; /* per block slot */
  uint32_t *free_slots;
  size_t n_free_slots;
  size_t top, high;
} ol_state;

static uint32_t ol_new_block(ol_state *s, size_t off, size_t len) {
  uint32_t b = s->free_slots[--s->n_free_slots];
  s->off[b] = off;
  s->len[b] = len;
  otree_insert(&s->by_off, b, off);
  otree_insert(&s->by_len, b, len);
  return b;
}

static void ol_drop_block(ol_state *s, uint32_t b) {
  otree_erase(&s->by_off, b);
  otree_erase(&s->by_len, b);
  s->free_slots[s->n_free_slots++] = b;
}

/* Returns a free region [off, off + len) to the free list (invariant 1). */
static void ol_release(ol_state *s, size_t off, size_t len) {
  if (len == 0) return;
  uint32_t prev = otree_prev(&s->by_off, off, 0);
  uint32_t next = otree_next(&s->by_off, off, UINT32_MAX - 1);
  if (prev != OTREE_NIL && s->off[prev] + s->len[prev] == off) {
    off = s->off[prev];
    len += s->len[prev];
    ol_drop_block(s, prev);
  }
  if (next != OTREE_NIL && off + len == s->off[next]) {
    len += s->len[next];
    ol_drop_block(s, next);
  }
  if (off + len == s->top) {
    s->top = off;
  } else {
    ol_new_block(s, off, len);
  }
}

static void ol_take(ol_state *s, uint32_t b, size_t x, size_t size) {
  size_t off = s->off[b], end = off + s->len[b];
  ol_drop_block(s, b);
  if (x > off) ol_new_block(s, off, x - off);
  if (x + size < end) ol_new_block(s, x + size, end - (x + size));
}

static mp_status ol_alloc(ol_state *s, uint32_t i, mp_error *err) {
  const mp_sbuf *b = &s->ctx->bufs[i];
  size_t x, end;
  /* The smallest block with len >= size, then larger ones while alignment
   * keeps the buffer from fitting. */
  for (uint32_t k = otree_next(&s->by_len, b->size - 1, UINT32_MAX - 1);
       k != OTREE_NIL; k = otree_next(&s->by_len, s->len[k], k)) {
    if (mp_align_up(s->off[k], b->align, &x) &&
        x + b->size <= s->off[k] + s->len[k]) {
      ol_take(s, k, x, b->size);
      s->ctx->offsets[i] = x;
      return MP_OK;
    }
  }
  /* Grow: from the free block that ends at top, if any, else from top. */
  size_t start = s->top;
  uint32_t last = otree_prev(&s->by_off, s->top, 0);
  if (last != OTREE_NIL && s->off[last] + s->len[last] == s->top) {
    start = s->off[last];
    ol_drop_block(s, last);
  }
  if (!mp_align_up(start, b->align, &x) || !mp_size_add(x, b->size, &end)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "the arena would exceed the addressable memory");
  }
  if (x > start) ol_new_block(s, start, x - start);
  s->top = end;
  if (end > s->high) s->high = end;
  s->ctx->offsets[i] = x;
  return MP_OK;
}

/* Pins: reserve their bytes; the gaps below the highest pin are free. */
static mp_status ol_pins(ol_state *s, mp_error *err) {
  mp_strategy_ctx *ctx = s->ctx;
  size_t np = 0;
  strategy_range *r = mp_calloc(ctx->alloc, ctx->n + 1, sizeof *r);
  if (!r) return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  for (size_t i = 0; i < ctx->n; i++) {
    if (!ctx->bufs[i].pinned) continue;
    ctx->offsets[i] = ctx->bufs[i].pin;
    r[np++] = (strategy_range){ctx->bufs[i].pin,
                               ctx->bufs[i].pin + ctx->bufs[i].size};
  }
  /* Insertion sort by start: pins are few. */
  for (size_t a = 1; a < np; a++) {
    strategy_range v = r[a];
    size_t b = a;
    while (b > 0 && r[b - 1].lo > v.lo) {
      r[b] = r[b - 1];
      b--;
    }
    r[b] = v;
  }
  size_t cursor = 0;
  for (size_t k = 0; k < np; k++) {
    if (r[k].lo > cursor) ol_new_block(s, cursor, r[k].lo - cursor);
    if (r[k].hi > cursor) cursor = r[k].hi;
  }
  s->top = s->high = cursor;
  mp_free(ctx->alloc, r);
  return MP_OK;
}

static mp_status ol_init(ol_state *s, mp_strategy_ctx *ctx, mp_error *err) {
  size_t slots = 2 * ctx->n + 2;
  s->ctx = ctx;
  s->off = mp_calloc(ctx->alloc, slots, sizeof *s->off);
  s->len = mp_calloc(ctx->alloc, slots, sizeof *s->len);
  s->free_slots = mp_calloc(ctx->alloc, slots, sizeof *s->free_slots);
  if (!s->off || !s->len || !s->free_slots) {
    return mp_error_set(err, MP_ERR_NOMEM, "strategy: out of memory");
  }
  for (size_t k = 0; k < slots; k++) {
    s->free_slots[k] = (uint32_t)(slots - 1 - k);
  }
  s->n_free_slots = slots;
  mp_status st = otree_init(&s->by_off, ctx->alloc, slots, err);
  if (st == MP_OK) st = otree_init(&s->by_len, ctx->alloc, slots, err);
  return st;
}

static mp_status ol_solve(mp_strategy_ctx *ctx, mp_error *err) {
  ol_state s = {0};
  size_t n_ev = 0;
  ol_event *ev = mp_calloc(ctx->alloc, 2 * ctx->n + 1, sizeof *ev);
  mp_status st = ev ? ol_init(&s, ctx, err)
                    : mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  if (st == MP_OK) st = ol_pins(&s, err);
  for (size_t i = 0; st == MP_OK && i < ctx->n; i++) {
    if (ctx->bufs[i].pinned) continue;
    ev[n_ev++] =
        (ol_event){ctx->bufs[i].first, 1, ctx->bufs[i].id, (uint32_t)i};
    ev[n_ev++] =
        (ol_event){ctx->bufs[i].last + 1, 0, ctx->bufs[i].id, (uint32_t)i};
  }
  if (st == MP_OK) st = ol_sort(ctx->alloc, ev, n_ev, err);
  for (size_t e = 0; st == MP_OK && e < n_ev; e++) {
    uint32_t i = ev[e].i;
    if (ev[e].alloc) {
      st = ol_alloc(&s, i, err);
    } else {
      ol_release(&s, ctx->offsets[i], ctx->bufs[i].size);
    }
  }
  otree_release(&s.by_len);
  otree_release(&s.by_off);
  mp_free(ctx->alloc, s.free_slots);
  mp_free(ctx->alloc, s.len);
  mp_free(ctx->alloc, s.off);
  mp_free(ctx->alloc, ev);
  return st;
}

const mp_strategy mp_strategy_online_best_fit = {
    "online-best-fit",
    "a dynamic allocator's result: allocate and free in execution order, "
    "best-fit free list with coalescing",
    ol_solve};
