/*
 * exec.c -- the executor: regions allocated once, ops run in order with
 * the scalar kernels, and poison mode (mplan/runtime.h).
 *
 * Invariants:
 *   1. mp_rt_create allocates everything; mp_rt_run allocates nothing (a
 *      test counts allocator calls during a run).
 *   2. In poison mode, outside the buffers live at the current step (data
 *      and red zones), every byte of a scratch region holds the poison:
 *      the run fills everything first and re-poisons a buffer's whole
 *      extent when its planned lifetime ends.
 *   3. A tensor's checksum is recorded right after its producer ran (and
 *      after an injected out-of-bounds write, which lands outside it), and
 *      any later check compares against it; its shadow copy gives the
 *      exact changed byte range.
 *   4. A tensor is reported once until it is produced again, so that one
 *      corruption is one event.
 *   5. Regions are allocated with a guard of MP_RT_GUARD poison bytes past
 *      their end, so that an injected write one element past the last
 *      buffer stays inside the allocation.
 *   6. With opts.max_ops, every op rt_step runs counts (a LOOP too, and
 *      each body op once an iteration), and so does every iteration a
 *      LOOP starts (a body the passes emptied still costs), and the run
 *      fails before the op or iteration that would pass the limit: a
 *      Loop whose condition never turns false on the seeded inputs ends
 *      in one line, not after MP_RT_LOOP_MAX iterations of each nested
 *      Loop.
 *   7. A checksum is a sum over the tensor's 8-byte words, each mixed with
 *      its offset, so that the words a write covers can be taken out and
 *      put back: between two iterations of a LOOP only the slice each
 *      scan output gained is hashed again (rt_loop_back), not the whole
 *      output, which made poison runs quadratic in the trip count.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/runtime.h"
#include "ops.h"

#define MP_RT_GUARD 64

struct mp_rt {
  const mp_alloc *alloc;
  const mp_bundle *b;
  mp_rt_opts o;
  uint8_t poison;
  size_t n_regions;
  unsigned char **raw;    /* per region: the allocation */
  unsigned char **base;   /* per region: aligned start */
  unsigned char **ptr;    /* per tensor: first byte */
  uint64_t *sum;          /* per tensor: checksum */
  uint64_t *pre;          /* per tensor: a LOOP scan slice's sum before */
  bool *valid;            /* per tensor: holds a recorded checksum */
  bool *reported;         /* per tensor: already named in an event */
  unsigned char **shadow; /* per tensor: shadow copy (produced tensors) */
  unsigned char *shadow_mem;
  unsigned char **staged; /* per graph input */
  unsigned char *staged_mem;
  unsigned char *ws;
  uint64_t *ivs;      /* per buffer: [start, end) pairs for the free check */
  uint32_t *released; /* buffers released after the current step */
  uint64_t *visits;   /* per step: its runs so far in this run */
  uint64_t op_runs;   /* ops and Loop iterations run so far (rt_count) */
  mp_rt_event *events;
  size_t n_events, dropped;
  uint64_t checks;
  bool stop;
  /* LOOP ops running their body again (rt_loop): enter and LOOP steps */
  int32_t act_enter[MP_RT_LOOP_DEPTH + 1], act_end[MP_RT_LOOP_DEPTH + 1];
  int n_act;
};

static const char *const ev_names[MP_EV_COUNT] = {
    "clobber",    "early-free", "use-after-free", "redzone",
    "free-write", "guard",      "output-mismatch"};

const char *mp_event_kind_name(mp_event_kind k) {
  return k < MP_EV_COUNT ? ev_names[k] : "?";
}

bool mp_event_kind_parse(const char *name, mp_event_kind *out) {
  for (int k = 0; k < MP_EV_COUNT; k++) {
    if (strcmp(name, ev_names[k]) == 0) {
      *out = (mp_event_kind)k;
      return true;
    }
  }
  return false;
}

/* The part of the checksum of the n bytes at p (invariant 7) that the
 * 8-byte words overlapping [lo, hi) give: each word (the last one padded
 * with zeros) mixed with its offset by splitmix64's finalizer. */
static uint64_t rt_hash_span(const unsigned char *p, size_t n, size_t lo,
                             size_t hi) {
  uint64_t h = 0;
  for (size_t i = lo & ~(size_t)7; i < hi && i < n; i += 8) {
    uint64_t w = 0;
    memcpy(&w, p + i, n - i < 8 ? n - i : 8);
    w ^= (uint64_t)i * 0x9e3779b97f4a7c15u;
    w = (w ^ (w >> 30)) * 0xbf58476d1ce4e5b9u;
    w = (w ^ (w >> 27)) * 0x94d049bb133111ebu;
    h += w ^ (w >> 31);
  }
  return h;
}

/* 64-bit checksum of n bytes. */
static uint64_t rt_hash(const unsigned char *p, size_t n) {
  return rt_hash_span(p, n, 0, n);
}

void mp_rt_destroy(mp_rt *rt) {
  if (!rt) return;
  const mp_alloc *a = rt->alloc;
  for (size_t r = 0; rt->raw && r < rt->n_regions; r++) mp_free(a, rt->raw[r]);
  mp_free(a, rt->raw);
  mp_free(a, rt->base);
  mp_free(a, rt->ptr);
  mp_free(a, rt->sum);
  mp_free(a, rt->pre);
  mp_free(a, rt->valid);
  mp_free(a, rt->reported);
  mp_free(a, rt->shadow);
  mp_free(a, rt->shadow_mem);
  mp_free(a, rt->staged);
  mp_free(a, rt->staged_mem);
  mp_free(a, rt->ws);
  mp_free(a, rt->ivs);
  mp_free(a, rt->released);
  mp_free(a, rt->visits);
  mp_free(a, rt->events);
  mp_free(a, rt);
}

/* Written by an op (retained state too: it is the update of this run). */
static bool rt_produced(const mp_btensor *t) {
  return t->kind == MP_BT_ACTIVATION || t->kind == MP_BT_OUTPUT ||
         t->kind == MP_BT_RETAINED;
}

static mp_status rt_alloc_regions(mp_rt *rt, mp_error *err) {
  const mp_bundle *b = rt->b;
  for (size_t r = 0; r < rt->n_regions; r++) {
    const mp_bregion *g = mp_bundle_region(b, r);
    size_t n = (size_t)g->size + g->alignment + MP_RT_GUARD;
    rt->raw[r] = mp_calloc(rt->alloc, n, 1);
    if (!rt->raw[r]) {
      return mp_error_set(err, MP_ERR_NOMEM,
                          "out of memory allocating region '%s' (%llu bytes)",
                          g->name, (unsigned long long)g->size);
    }
    uintptr_t p = (uintptr_t)rt->raw[r];
    p = (p + g->alignment - 1) & ~(uintptr_t)(g->alignment - 1);
    rt->base[r] = (unsigned char *)p;
  }
  return MP_OK;
}

static mp_status rt_alloc_tables(mp_rt *rt, mp_error *err) {
  const mp_bundle *b = rt->b;
  const mp_alloc *a = rt->alloc;
  size_t nt = mp_bundle_tensor_count(b), nb = mp_bundle_buffer_count(b);
  size_t ni = mp_bundle_input_count(b), shadow = 0, staged = 0;
  rt->ptr = mp_calloc(a, nt + 1, sizeof *rt->ptr);
  rt->sum = mp_calloc(a, nt + 1, sizeof *rt->sum);
  rt->pre = mp_calloc(a, nt + 1, sizeof *rt->pre);
  rt->valid = mp_calloc(a, nt + 1, sizeof *rt->valid);
  rt->reported = mp_calloc(a, nt + 1, sizeof *rt->reported);
  rt->shadow = mp_calloc(a, nt + 1, sizeof *rt->shadow);
  rt->staged = mp_calloc(a, ni + 1, sizeof *rt->staged);
  rt->ivs = mp_calloc(a, 2 * nb + 2, sizeof *rt->ivs);
  rt->released = mp_calloc(a, nb + 1, sizeof *rt->released);
  rt->visits = mp_calloc(a, mp_bundle_op_count(b) + 1, sizeof *rt->visits);
  rt->events = mp_calloc(a, rt->o.max_events, sizeof *rt->events);
  rt->ws = mp_calloc(a, mp_bundle_workspace(b) + 64, 1);
  if (!rt->ptr || !rt->sum || !rt->pre || !rt->valid || !rt->reported ||
      !rt->shadow || !rt->staged || !rt->ivs || !rt->released || !rt->visits ||
      !rt->events || !rt->ws) {
    return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  }
  for (size_t t = 0; t < nt; t++) {
    const mp_btensor *x = mp_bundle_tensor(b, t);
    const mp_bbuffer *u = mp_bundle_buffer(b, x->buffer);
    rt->ptr[t] = rt->base[u->region] + u->offset + x->offset;
    if (rt->o.poison && rt_produced(x)) shadow += (size_t)x->bytes;
  }
  for (size_t i = 0; i < ni; i++) {
    staged += (size_t)mp_bundle_tensor(b, mp_bundle_input(b, i))->bytes;
  }
  rt->shadow_mem = mp_calloc(a, shadow + 1, 1);
  rt->staged_mem = mp_calloc(a, staged + 1, 1);
  if (!rt->shadow_mem || !rt->staged_mem) {
    return mp_error_set(err, MP_ERR_NOMEM, "out of memory (shadow copies)");
  }
  shadow = staged = 0;
  for (size_t t = 0; t < nt; t++) {
    const mp_btensor *x = mp_bundle_tensor(b, t);
    if (rt->o.poison && rt_produced(x)) {
      rt->shadow[t] = rt->shadow_mem + shadow;
      shadow += (size_t)x->bytes;
    }
  }
  for (size_t i = 0; i < ni; i++) {
    rt->staged[i] = rt->staged_mem + staged;
    staged += (size_t)mp_bundle_tensor(b, mp_bundle_input(b, i))->bytes;
  }
  return MP_OK;
}

mp_status mp_rt_create(const mp_bundle *b, const mp_rt_opts *o,
                       const mp_alloc *a, mp_rt **out, mp_error *err) {
  mp_rt *rt = mp_calloc(a, 1, sizeof *rt);
  if (!rt) return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  rt->alloc = a;
  rt->b = b;
  if (o) rt->o = *o;
  if (!o) rt->o.oob_op = -1;
  if (rt->o.paranoid) rt->o.poison = true;
  if (!rt->o.max_events) rt->o.max_events = 256;
  rt->poison = rt->o.poison_byte ? rt->o.poison_byte : 0xA5;
  rt->n_regions = mp_bundle_region_count(b);
  rt->raw = mp_calloc(a, rt->n_regions + 1, sizeof *rt->raw);
  rt->base = mp_calloc(a, rt->n_regions + 1, sizeof *rt->base);
  mp_status st = rt->raw && rt->base
                     ? MP_OK
                     : mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  if (st == MP_OK) st = rt_alloc_regions(rt, err);
  if (st == MP_OK) st = rt_alloc_tables(rt, err);
  if (st == MP_OK && rt->o.oob_op >= (int32_t)mp_bundle_op_count(b)) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT, "oob injection: no op %d",
                      rt->o.oob_op);
  }
  if (st != MP_OK) {
    mp_rt_destroy(rt);
    return st;
  }
  *out = rt;
  return MP_OK;
}

mp_status mp_rt_set_input(mp_rt *rt, size_t i, const void *data, size_t len,
                          mp_error *err) {
  const mp_bundle *b = rt->b;
  if (i >= mp_bundle_input_count(b)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "no graph input %zu", i);
  }
  const mp_btensor *t = mp_bundle_tensor(b, mp_bundle_input(b, i));
  if (len != t->bytes) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "input '%s': %zu bytes given, it has %llu", t->name,
                        len, (unsigned long long)t->bytes);
  }
  if (len) memcpy(rt->staged[i], data, len);
  return MP_OK;
}

/* ---- events -----------------------------------------------------------------
 */

static void rt_event(mp_rt *rt, mp_event_kind kind, int32_t step, int32_t op,
                     int32_t tensor, int32_t buffer, uint32_t region,
                     uint64_t first, uint64_t last, const char *fmt, ...)
    MP_PRINTF(10, 11);

static void rt_event(mp_rt *rt, mp_event_kind kind, int32_t step, int32_t op,
                     int32_t tensor, int32_t buffer, uint32_t region,
                     uint64_t first, uint64_t last, const char *fmt, ...) {
  if (rt->o.fail_fast) rt->stop = true;
  if (rt->n_events == rt->o.max_events) {
    rt->dropped++;
    return;
  }
  mp_rt_event *e = &rt->events[rt->n_events++];
  const mp_bregion *g = mp_bundle_region(rt->b, region);
  *e = (mp_rt_event){
      kind,           step, op, tensor, buffer, region, g->base + first,
      g->base + last, ""};
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->detail, sizeof e->detail, fmt, ap);
  va_end(ap);
}

/* First and last index where p differs from q (or from the poison when q
 * is NULL); false when none. */
static bool rt_diff(const unsigned char *p, const unsigned char *q, uint8_t pv,
                    size_t n, size_t *lo, size_t *hi) {
  size_t i = 0, j = n;
  while (i < n && p[i] == (q ? q[i] : pv)) i++;
  if (i == n) return false;
  while (j > i && p[j - 1] == (q ? q[j - 1] : pv)) j--;
  *lo = i;
  *hi = j - 1;
  return true;
}

static bool rt_all_poison(const unsigned char *p, size_t n, uint8_t pv) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != pv) return false;
  }
  return true;
}

/* ---- checks -----------------------------------------------------------------
 */

static void rt_record(mp_rt *rt, uint32_t t) {
  const mp_btensor *x = mp_bundle_tensor(rt->b, t);
  rt->sum[t] = rt_hash(rt->ptr[t], (size_t)x->bytes);
  rt->valid[t] = true;
  rt->reported[t] = false;
  if (rt->shadow[t]) memcpy(rt->shadow[t], rt->ptr[t], (size_t)x->bytes);
}

/* The reference bytes of a resident tensor: weights from the bundle,
 * inputs from the staged copy. */
static const unsigned char *rt_reference(const mp_rt *rt, uint32_t t) {
  const mp_btensor *x = mp_bundle_tensor(rt->b, t);
  if (rt->shadow[t]) return rt->shadow[t];
  if (x->kind == MP_BT_WEIGHT) return mp_bundle_weights(rt->b) + x->data_offset;
  for (size_t i = 0; i < mp_bundle_input_count(rt->b); i++) {
    if (mp_bundle_input(rt->b, i) == t) return rt->staged[i];
  }
  return NULL;
}

typedef enum rt_when {
  RT_BEFORE_READ,
  RT_AFTER_OP,
  RT_AFTER_RELEASE,
  RT_AT_END
} rt_when;

/* Checks tensor t against its checksum; a mismatch is an event. */
static void rt_verify(mp_rt *rt, uint32_t t, int32_t step, int32_t culprit,
                      rt_when when, int32_t released) {
  const mp_bundle *b = rt->b;
  const mp_btensor *x = mp_bundle_tensor(b, t);
  if (!rt->valid[t] || rt->reported[t]) return;
  rt->checks++;
  if (rt_hash(rt->ptr[t], (size_t)x->bytes) == rt->sum[t]) return;
  rt->reported[t] = true;
  const mp_bbuffer *u = mp_bundle_buffer(b, x->buffer);
  size_t lo = 0, hi = x->bytes ? (size_t)x->bytes - 1 : 0;
  const unsigned char *ref = rt_reference(rt, t);
  if (ref) (void)rt_diff(rt->ptr[t], ref, 0, (size_t)x->bytes, &lo, &hi);
  uint64_t at = u->offset + x->offset;
  bool poisoned = rt_all_poison(rt->ptr[t] + lo, hi - lo + 1, rt->poison);
  bool freed = u->last < step || (when == RT_AFTER_RELEASE && u->last <= step);
  const mp_bopr *op = culprit >= 0 ? mp_bundle_op(b, (size_t)culprit) : NULL;
  if (poisoned && freed && when == RT_BEFORE_READ) {
    rt_event(rt, MP_EV_USE_AFTER_FREE, step, culprit, (int32_t)t,
             (int32_t)x->buffer, u->region, at + lo, at + hi,
             "'%s' reads '%s', whose buffer was released after step %d "
             "(its last use is step %d)",
             op ? op->name : "?", x->name, u->last, x->last);
  } else if (poisoned && freed) {
    rt_event(rt, MP_EV_EARLY_FREE, step, culprit, (int32_t)t,
             (int32_t)x->buffer, u->region, at + lo, at + hi,
             "'%s' was poisoned when its buffer was released after step %d, "
             "but it is read until step %d",
             x->name, u->last, x->last);
  } else if (when == RT_AFTER_RELEASE && released >= 0) {
    rt_event(rt, MP_EV_CLOBBER, step, culprit, (int32_t)t, released, u->region,
             at + lo, at + hi,
             "'%s' was poisoned by the release of '%s' after step %d while "
             "live",
             x->name, mp_bundle_buffer(b, (size_t)released)->name, step);
  } else {
    const char *how = when == RT_AFTER_OP ? "changed by"
                      : when == RT_BEFORE_READ
                          ? "changed before being read by"
                          : "changed by the end of the run; last op";
    rt_event(
        rt, MP_EV_CLOBBER, step, culprit, (int32_t)t, (int32_t)x->buffer,
        u->region, at + lo, at + hi, "'%s' %s '%s'%s", x->name, how,
        op ? op->name : "?",
        when == RT_AFTER_OP ? "" : " (run with --paranoid to name the writer)");
  }
}

static bool rt_buffer_live(const mp_bbuffer *u, int32_t step) {
  return u->first <= step && (step <= u->last || u->output);
}

/* Red zones of live buffers and region guards, after op `step`. */
static void rt_check_zones(mp_rt *rt, int32_t step) {
  const mp_bundle *b = rt->b;
  for (size_t i = 0; i < mp_bundle_buffer_count(b); i++) {
    const mp_bbuffer *u = mp_bundle_buffer(b, i);
    if (!(u->rz_before | u->rz_after) || !rt_buffer_live(u, step)) continue;
    unsigned char *d = rt->base[u->region] + u->offset;
    size_t lo, hi;
    rt->checks++;
    if (rt_diff(d - u->rz_before, NULL, rt->poison, u->rz_before, &lo, &hi)) {
      rt_event(rt, MP_EV_REDZONE, step, step, -1, (int32_t)i, u->region,
               u->offset - u->rz_before + lo, u->offset - u->rz_before + hi,
               "red zone before '%s' written by '%s'", u->name,
               mp_bundle_op(b, (size_t)step)->name);
      memset(d - u->rz_before, rt->poison, u->rz_before);
    }
    if (rt_diff(d + u->size, NULL, rt->poison, u->rz_after, &lo, &hi)) {
      rt_event(rt, MP_EV_REDZONE, step, step, -1, (int32_t)i, u->region,
               u->offset + u->size + lo, u->offset + u->size + hi,
               "red zone after '%s' written by '%s'", u->name,
               mp_bundle_op(b, (size_t)step)->name);
      memset(d + u->size, rt->poison, u->rz_after);
    }
  }
  for (size_t r = 0; r < rt->n_regions; r++) {
    const mp_bregion *g = mp_bundle_region(b, r);
    unsigned char *end = rt->base[r] + g->size;
    size_t lo, hi;
    rt->checks++;
    if (rt_diff(end, NULL, rt->poison, MP_RT_GUARD, &lo, &hi)) {
      rt_event(rt, MP_EV_GUARD, step, step, -1, -1, (uint32_t)r, g->size + lo,
               g->size + hi, "'%s' wrote past the end of region '%s'",
               mp_bundle_op(b, (size_t)step)->name, g->name);
      memset(end, rt->poison, MP_RT_GUARD);
    }
  }
}

static int rt_cmp_iv(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Is the op at step s one the LOOP at step l runs again (its loop field
 * names l, or a loop inside l)? The loader made every chain end. */
static bool rt_in_loop(const mp_bundle *b, size_t s, size_t l) {
  for (uint32_t v = mp_bundle_op(b, s)->loop; v;
       v = mp_bundle_op(b, v - 1)->loop) {
    if (v - 1 == l) return true;
  }
  return false;
}

/* Bytes first written at step `first` and read until `last` that hold a
 * value while a LOOP runs its body again, though the plan has them born
 * later: the LOOP's outputs (the slices of its scan outputs written so
 * far), and what an op it does not repeat wrote once between its enter
 * op and it and the body still reads (what the body captures). */
static bool rt_loop_holds(const mp_rt *rt, int32_t first, int32_t last) {
  for (int i = 0; i < rt->n_act; i++) {
    int32_t e = rt->act_enter[i], l = rt->act_end[i];
    if (first == l) return true;
    if (first > e && first < l && last >= l &&
        !rt_in_loop(rt->b, (size_t)first, (size_t)l)) {
      return true;
    }
  }
  return false;
}

/* Live at step as the run stands: by the plan, or held by a loop. */
static bool rt_live_now(const mp_rt *rt, const mp_bbuffer *u, int32_t step) {
  return rt_buffer_live(u, step) || rt_loop_holds(rt, u->first, u->last);
}

/* Paranoid: no byte of a scratch region outside the live buffers (with
 * their red zones) changed from the poison (invariant 2). */
static void rt_check_free(mp_rt *rt, int32_t step) {
  const mp_bundle *b = rt->b;
  for (size_t r = 0; r < rt->n_regions; r++) {
    const mp_bregion *g = mp_bundle_region(b, r);
    if (g->kind != MP_BREGION_SCRATCH) continue;
    size_t n = 0;
    for (size_t i = 0; i < mp_bundle_buffer_count(b); i++) {
      const mp_bbuffer *u = mp_bundle_buffer(b, i);
      if (u->region != r || !rt_live_now(rt, u, step)) continue;
      rt->ivs[2 * n] = u->offset - u->rz_before;
      rt->ivs[2 * n + 1] = u->offset + u->size + u->rz_after;
      n++;
    }
    qsort(rt->ivs, n, 2 * sizeof *rt->ivs, rt_cmp_iv);
    uint64_t at = 0;
    for (size_t k = 0; k <= n && !rt->stop; k++) {
      uint64_t end = k < n ? rt->ivs[2 * k] : g->size;
      size_t lo, hi;
      rt->checks++;
      if (end > at && rt_diff(rt->base[r] + at, NULL, rt->poison,
                              (size_t)(end - at), &lo, &hi)) {
        rt_event(rt, MP_EV_FREE_WRITE, step, step, -1, -1, (uint32_t)r, at + lo,
                 at + hi, "'%s' wrote bytes that belong to no live buffer",
                 mp_bundle_op(b, (size_t)step)->name);
        memset(rt->base[r] + at + lo, rt->poison, hi - lo + 1);
      }
      if (k < n && rt->ivs[2 * k + 1] > at) at = rt->ivs[2 * k + 1];
    }
  }
}

/* Tensors live after step: produced, and read later (or outputs); a
 * graph input planned as an activation (--inputs activation) until its
 * last read, resident tensors for the whole run. */
static bool rt_tensor_live_after(const mp_bundle *b, const mp_btensor *x,
                                 int32_t step) {
  if (x->kind == MP_BT_OUTPUT) return x->first <= step;
  if (x->kind == MP_BT_ACTIVATION) return x->first <= step && x->last > step;
  if (x->kind == MP_BT_INPUT && mp_bundle_buffer(b, x->buffer)->cls == 0) {
    return x->last > step;
  }
  return true;
}

static bool rt_overlap(const mp_bundle *b, const mp_btensor *x, uint32_t buf) {
  const mp_bbuffer *u = mp_bundle_buffer(b, x->buffer);
  const mp_bbuffer *v = mp_bundle_buffer(b, buf);
  if (u->region != v->region) return false;
  uint64_t a0 = u->offset + x->offset, a1 = a0 + x->bytes;
  uint64_t b0 = v->offset - v->rz_before,
           b1 = v->offset + v->size + v->rz_after;
  return a0 < b1 && b0 < a1;
}

/* Re-poisons buffers whose planned lifetime ends at step; in paranoid
 * mode re-checks the live tensors those bytes overlap. */
static void rt_release(mp_rt *rt, int32_t step) {
  const mp_bundle *b = rt->b;
  size_t n = 0;
  for (size_t i = 0; i < mp_bundle_buffer_count(b); i++) {
    const mp_bbuffer *u = mp_bundle_buffer(b, i);
    if (u->cls != 0 || u->last != step || u->output) continue;
    memset(rt->base[u->region] + u->offset - u->rz_before, rt->poison,
           (size_t)(u->size + u->rz_before + u->rz_after));
    rt->released[n++] = (uint32_t)i;
  }
  if (!rt->o.paranoid) return;
  for (size_t k = 0; k < n; k++) {
    for (size_t t = 0; t < mp_bundle_tensor_count(b); t++) {
      const mp_btensor *x = mp_bundle_tensor(b, t);
      if (!rt_produced(x) || !rt_tensor_live_after(b, x, step)) continue;
      if (!rt_overlap(b, x, rt->released[k])) continue;
      rt_verify(rt, (uint32_t)t, step, step, RT_AFTER_RELEASE,
                (int32_t)rt->released[k]);
    }
  }
}

/* ---- the run
 * ------------------------------------------------------------------ */

static void rt_prepare(mp_rt *rt) {
  const mp_bundle *b = rt->b;
  memset(rt->visits, 0, (mp_bundle_op_count(b) + 1) * sizeof *rt->visits);
  rt->op_runs = 0;
  if (rt->o.poison) {
    for (size_t r = 0; r < rt->n_regions; r++) {
      memset(rt->base[r], rt->poison,
             (size_t)mp_bundle_region(b, r)->size + MP_RT_GUARD);
    }
  }
  for (size_t t = 0; t < mp_bundle_tensor_count(b); t++) {
    const mp_btensor *x = mp_bundle_tensor(b, t);
    rt->valid[t] = rt->reported[t] = false;
    if (x->kind == MP_BT_WEIGHT && x->bytes) {
      memcpy(rt->ptr[t], mp_bundle_weights(b) + x->data_offset,
             (size_t)x->bytes);
    }
  }
  for (size_t i = 0; i < mp_bundle_input_count(b); i++) {
    uint32_t t = mp_bundle_input(b, i);
    size_t n = (size_t)mp_bundle_tensor(b, t)->bytes;
    if (n) memcpy(rt->ptr[t], rt->staged[i], n);
  }
  if (rt->o.poison) {
    for (size_t t = 0; t < mp_bundle_tensor_count(b); t++) {
      const mp_btensor *x = mp_bundle_tensor(b, t);
      if (!rt_produced(x)) rt_record(rt, (uint32_t)t);
    }
  }
  rt->n_events = rt->dropped = 0;
  rt->checks = 0;
  rt->stop = false;
  rt->n_act = 0;
}

/* The injected fault: one element written past output 0, as a kernel with
 * an off-by-one loop bound would. It writes the complement of the bytes
 * there, so the write always changes them (a write of identical bytes is
 * harmless and undetectable by definition). */
static void rt_inject_oob(mp_rt *rt, size_t step) {
  const mp_bopr *op = mp_bundle_op(rt->b, step);
  uint32_t t = op->out[0];
  const mp_btensor *x = mp_bundle_tensor(rt->b, t);
  unsigned char *p = rt->ptr[t] + x->bytes;
  size_t es = mp_kd_size(x->dtype) ? mp_kd_size(x->dtype) : 1; /* 4-bit */
  for (size_t i = 0; i < es; i++) p[i] = (unsigned char)~p[i];
}

static void rt_check_live(mp_rt *rt, int32_t step) {
  const mp_bundle *b = rt->b;
  for (size_t t = 0; t < mp_bundle_tensor_count(b) && !rt->stop; t++) {
    const mp_btensor *x = mp_bundle_tensor(b, t);
    if (rt_tensor_live_after(b, x, step) || x->first == step ||
        (rt_produced(x) && rt_loop_holds(rt, x->first, x->last))) {
      rt_verify(rt, (uint32_t)t, step, step, RT_AFTER_OP, -1);
    }
  }
}

/* An op never changes its inputs, except one that is in its output's
 * buffer by design (in place): a change means the op wrote over a tensor
 * it was still reading (live at this step, invariant 3). */
static void rt_check_inputs_kept(mp_rt *rt, size_t k) {
  const mp_bundle *b = rt->b;
  const mp_bopr *op = mp_bundle_op(b, k);
  for (uint32_t i = 0; i < op->n_in; i++) {
    uint32_t t = op->in[i];
    if (t == MP_BUNDLE_NONE) continue;
    /* In place: an output shares bytes with the input (two slices of one
     * buffer share none, so the input is still checked). */
    bool in_place = false;
    for (uint32_t j = 0; j < op->n_out; j++) {
      in_place = in_place || mp_rt_share_bytes(mp_bundle_tensor(b, op->out[j]),
                                               mp_bundle_tensor(b, t));
    }
    if (!in_place) rt_verify(rt, t, (int32_t)k, (int32_t)k, RT_AFTER_OP, -1);
  }
}

/* The sums of the slices iteration iter of the LOOP at step l writes into
 * its recorded scan outputs, before mp_rt_loop_end writes them. */
static void rt_loop_pre(mp_rt *rt, size_t l, int64_t iter) {
  const mp_bopr *op = mp_bundle_op(rt->b, l);
  for (uint32_t i = 0; i < op->n_out; i++) {
    uint32_t t = op->out[i];
    uint64_t lo, hi;
    if (rt->valid[t] && mp_rt_loop_span(rt->b, l, i, iter, &lo, &hi)) {
      rt->pre[t] =
          rt_hash_span(rt->ptr[t], (size_t)mp_bundle_tensor(rt->b, t)->bytes,
                       (size_t)lo, (size_t)hi);
    }
  }
}

/* Output i of the LOOP at step l, when it is a scan output recorded
 * before iteration iter: its checksum and shadow copy take the slice the
 * iteration wrote (rt_loop_pre took out what was there), and the rest
 * keeps what was recorded. */
static bool rt_loop_slice(mp_rt *rt, size_t l, uint32_t i, int64_t iter) {
  uint32_t t = mp_bundle_op(rt->b, l)->out[i];
  uint64_t lo, hi;
  if (!rt->valid[t] || !mp_rt_loop_span(rt->b, l, i, iter, &lo, &hi)) {
    return false;
  }
  size_t n = (size_t)mp_bundle_tensor(rt->b, t)->bytes;
  rt->sum[t] +=
      rt_hash_span(rt->ptr[t], n, (size_t)lo, (size_t)hi) - rt->pre[t];
  if (rt->shadow[t]) {
    memcpy(rt->shadow[t] + lo, rt->ptr[t] + lo, (size_t)(hi - lo));
  }
  return true;
}

/* After the last iteration of the LOOP at step l: a scan output recorded
 * before holds the rows of the earlier iterations and the last slice;
 * any other byte that changed was written by an op of the body, an event
 * named after the LOOP (--paranoid names the op). */
static void rt_loop_last(mp_rt *rt, size_t l, int64_t iter) {
  const mp_bopr *op = mp_bundle_op(rt->b, l);
  for (uint32_t i = 0; i < op->n_out; i++) {
    if (rt_loop_slice(rt, l, i, iter)) {
      rt_verify(rt, op->out[i], (int32_t)l, (int32_t)l, RT_AFTER_OP, -1);
    }
  }
}

/* Before iteration iter + 1 of the LOOP at step l: in poison mode the
 * tensors it wrote for it are produced again (a scan output recorded
 * before, only the slice iteration iter wrote: invariant 7; rt_loop_pre
 * ran before the slices were written), and every buffer the body
 * writes afresh is released (invariant 2): born inside the body (after
 * the enter step, before l) and written only by ops the loop repeats
 * (an enclosing loop may hold it past l). A tensor an op of the
 * enclosing graph wrote between them (once) keeps its bytes. */
static void rt_loop_back(mp_rt *rt, size_t l, int64_t iter) {
  const mp_bundle *b = rt->b;
  const mp_bopr *op = mp_bundle_op(b, l);
  int32_t enter = (int32_t)mp_rt_loop_enter(b, l);
  const mp_bopr *e = mp_bundle_op(b, (size_t)enter);
  size_t nb = mp_bundle_buffer_count(b), nt = mp_bundle_tensor_count(b);
  uint32_t *mark = rt->released; /* free until rt_release */
  for (uint32_t i = 0; i < e->n_out; i++) rt_record(rt, e->out[i]);
  for (uint32_t i = 0; i < op->n_out; i++) {
    if (!rt_loop_slice(rt, l, i, iter)) rt_record(rt, op->out[i]);
  }
  for (size_t i = 0; i < nb; i++) {
    const mp_bbuffer *u = mp_bundle_buffer(b, i);
    mark[i] =
        u->cls == 0 && !u->output && u->first > enter && u->first < (int32_t)l;
  }
  for (size_t t = 0; t < nt; t++) {
    const mp_btensor *x = mp_bundle_tensor(b, t);
    if (mark[x->buffer] && x->first > enter && x->first < (int32_t)l &&
        !rt_in_loop(b, (size_t)x->first, l)) {
      mark[x->buffer] = 0;
    }
  }
  for (size_t i = 0; i < nb; i++) {
    const mp_bbuffer *u = mp_bundle_buffer(b, i);
    if (!mark[i]) continue;
    memset(rt->base[u->region] + u->offset - u->rz_before, rt->poison,
           (size_t)(u->size + u->rz_before + u->rz_after));
  }
  for (size_t t = 0; t < nt; t++) {
    if (mark[mp_bundle_tensor(b, t)->buffer]) rt->valid[t] = false;
  }
}

static mp_status rt_step(mp_rt *rt, size_t k, mp_error *err);

/* Counts one op run (invariant 6): false, with the error set, when it
 * would pass opts.max_ops. */
static bool rt_count(mp_rt *rt, size_t k, mp_error *err) {
  if (!rt->o.max_ops || ++rt->op_runs <= rt->o.max_ops) return true;
  const mp_bopr *op = mp_bundle_op(rt->b, k);
  mp_error_set(err, MP_ERR_BAD_INPUT,
               "op '%s' (%s) at step %zu: the run would pass %" PRIu64
               " ops, its --max-ops (a loop's body ops count once an "
               "iteration, and so does each iteration)",
               op->name, op->type, k, rt->o.max_ops);
  return false;
}

/* The LOOP at step k: the body ran once in step order; each iteration
 * ends here, and another one runs the body's ops again (rt_in_loop), the
 * ops of the enclosing graph the plan put between them running once. */
static mp_status rt_loop(mp_rt *rt, size_t k, mp_error *err) {
  const mp_bundle *b = rt->b;
  const mp_bopr *op = mp_bundle_op(b, k);
  size_t enter = mp_rt_loop_enter(b, k);
  for (int64_t iter = 0;; iter++) {
    char why[300];
    bool more = false;
    if (rt->o.poison) rt_loop_pre(rt, k, iter);
    if (!mp_rt_loop_end(b, k, rt->ptr, iter, &more, why, sizeof why)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT, "op '%s' (%s) at step %zu: %s",
                          op->name, op->type, k, why);
    }
    if (!more && rt->o.poison) rt_loop_last(rt, k, iter);
    if (!more || rt->stop) return MP_OK;
    if (!rt_count(rt, k, err)) return MP_ERR_BAD_INPUT;
    if (rt->o.poison) rt_loop_back(rt, k, iter);
    rt->act_enter[rt->n_act] = (int32_t)enter;
    rt->act_end[rt->n_act++] = (int32_t)k;
    mp_status st = MP_OK;
    for (size_t s = enter + 1; s < k && !rt->stop && st == MP_OK; s++) {
      if (rt_in_loop(b, s, k)) st = rt_step(rt, s, err);
    }
    rt->n_act--;
    if (st != MP_OK) return st;
  }
}

static mp_status rt_step(mp_rt *rt, size_t k, mp_error *err) {
  const mp_bundle *b = rt->b;
  const mp_bopr *op = mp_bundle_op(b, k);
  int32_t s = (int32_t)k;
  if (!rt_count(rt, k, err)) return MP_ERR_BAD_INPUT;
  if (rt->o.poison) {
    for (uint32_t i = 0; i < op->n_in; i++) {
      if (op->in[i] != MP_BUNDLE_NONE) {
        rt_verify(rt, op->in[i], s, s, RT_BEFORE_READ, -1);
      }
    }
  }
  bool loop = op->kernel == MP_BOP_LOOP;
  if (loop) {
    mp_status st = rt_loop(rt, k, err);
    if (st != MP_OK) return st;
  } else {
    char why[300];
    if (!mp_rt_op_run(b, k, rt->ptr, rt->ws, rt->visits[k]++, why,
                      sizeof why)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT, "op '%s' (%s) at step %zu: %s",
                          op->name, op->type, k, why);
    }
  }
  if (rt->o.oob_op == s) rt_inject_oob(rt, k);
  if (!rt->o.poison || rt->stop) return MP_OK;
  /* a LOOP writes its enter op's outputs, which it reads */
  if (!loop) rt_check_inputs_kept(rt, k);
  for (uint32_t i = 0; i < op->n_out; i++) rt_record(rt, op->out[i]);
  rt_check_zones(rt, s);
  if (rt->o.paranoid) {
    rt_check_live(rt, s);
    rt_check_free(rt, s);
  }
  rt_release(rt, s);
  return MP_OK;
}

mp_status mp_rt_run(mp_rt *rt, mp_error *err) {
  const mp_bundle *b = rt->b;
  size_t steps = mp_bundle_op_count(b);
  rt_prepare(rt);
  for (size_t k = 0; k < steps && !rt->stop; k++) {
    mp_status st = rt_step(rt, k, err);
    if (st != MP_OK) return st;
  }
  if (rt->o.poison && !rt->stop) {
    int32_t end = (int32_t)steps;
    for (size_t i = 0; i < mp_bundle_output_count(b); i++) {
      rt_verify(rt, mp_bundle_output(b, i), end, end - 1, RT_AT_END, -1);
    }
  }
  return MP_OK;
}

size_t mp_rt_event_count(const mp_rt *rt) {
  return rt->n_events;
}

const mp_rt_event *mp_rt_event_at(const mp_rt *rt, size_t i) {
  return &rt->events[i];
}

size_t mp_rt_events_dropped(const mp_rt *rt) {
  return rt->dropped;
}

uint64_t mp_rt_check_count(const mp_rt *rt) {
  return rt->checks;
}

const void *mp_rt_tensor_data(const mp_rt *rt, uint32_t t) {
  return rt->ptr[t];
}
