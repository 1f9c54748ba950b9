/*
 * diff.c -- comparing two snapshots: per-region figures, tensors, the
 * peak, the op order, and the attribution of the arena's change to
 * resident bytes, sizes, order and fragmentation (mplan/diff.h).
 *
 * Invariants:
 *   1. For every region, delta = by_resident + by_sizes + by_order +
 *      by_fragmentation exactly (the terms telescope; checked by assert).
 *   2. Tensors match by name; every name of A or B is classified once.
 *   3. Regions match by name; A's regions come first, in A's order, then
 *      the regions only B has.
 *   4. All arithmetic on figures is int64_t over values <= 2^62
 *      (MP_SNAP_MAX), so it cannot overflow.
 */
#include "mplan/diff.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/strmap.h"
#include "snapshot_internal.h"

struct mp_diff {
  const mp_alloc *alloc;
  const mp_snapshot *a, *b;
  mp_diff_summary sum;
  mp_diff_region *regions;
  size_t n_regions;
  mp_diff_tensor *tensors;
  size_t n_tensors;
};

static const char *const diff_change_names[MP_CHANGE_COUNT] = {
    "grew",   "shrank", "appeared", "vanished", "moved",   "lifetime",
    "joined", "left",   "fused",    "unfused",  "removed", "restored"};

const char *mp_change_name(mp_change c) {
  return c < MP_CHANGE_COUNT ? diff_change_names[c] : "?";
}

static mp_status diff_nomem(mp_error *err) {
  return mp_error_set(err, MP_ERR_NOMEM, "diff: out of memory");
}

/* ---- tensors (invariant 2) ------------------------------------------------
 */

static bool diff_classify(const mp_snapshot *a, const mp_snapshot *b,
                          const mp_snap_tensor *x, const mp_snap_tensor *y,
                          mp_change *c) {
  if (!x || !y) {
    *c = x ? MP_CHANGE_VANISHED : MP_CHANGE_APPEARED;
    return true;
  }
  if (x->size != y->size || x->padded != y->padded) {
    bool grew = y->size != x->size ? y->size > x->size : y->padded > x->padded;
    *c = grew ? MP_CHANGE_GREW : MP_CHANGE_SHRANK;
    return true;
  }
  const char *ra = mp_snapshot_region(a, x->region)->name;
  const char *rb = mp_snapshot_region(b, y->region)->name;
  if (x->cls != y->cls || strcmp(ra, rb) != 0) {
    *c = MP_CHANGE_MOVED;
    return true;
  }
  if (x->first != y->first || x->last != y->last) {
    *c = MP_CHANGE_LIFETIME;
    return true;
  }
  return false;
}

static int64_t diff_abs(int64_t v) {
  return v < 0 ? -v : v;
}

static int diff_tensor_cmp(const void *p, const void *q) {
  const mp_diff_tensor *x = p, *y = q;
  if (x->change != y->change) return x->change < y->change ? -1 : 1;
  int64_t dx = diff_abs(x->delta), dy = diff_abs(y->delta);
  if (dx != dy) return dx > dy ? -1 : 1;
  return strcmp(x->name, y->name);
}

static void diff_add_tensor(mp_diff *d, const mp_snap_tensor *x,
                            const mp_snap_tensor *y) {
  mp_change c;
  if (!diff_classify(d->a, d->b, x, y, &c)) return;
  int64_t delta = (y ? (int64_t)y->padded : 0) - (x ? (int64_t)x->padded : 0);
  /* A tensor only one side has may still be explained by the side that
   * lacks it: a pass put it in another's buffer, fused it away or removed
   * it. Each kind is followed by its reverse in mp_change. */
  const char *host = NULL;
  if (c == MP_CHANGE_VANISHED || c == MP_CHANGE_APPEARED) {
    bool gone = c == MP_CHANGE_VANISHED;
    const mp_snapshot *s = gone ? d->b : d->a;
    const char *name = gone ? x->name : y->name;
    size_t h;
    mp_change kind = MP_CHANGE_JOINED;
    if (mp_snapshot_host(s, name, &h)) {
      host = mp_snapshot_tensor(s, h)->name;
    } else if ((host = mp_snapshot_fused_into(s, name))) {
      kind = MP_CHANGE_FUSED;
    } else if ((host = mp_snapshot_removed_by(s, name))) {
      kind = MP_CHANGE_REMOVED;
    }
    if (host) c = gone ? kind : (mp_change)(kind + 1);
  }
  const char *patch = NULL;
  if (c == MP_CHANGE_APPEARED) patch = mp_snapshot_patch_of(d->b, y->name);
  if (c == MP_CHANGE_VANISHED) patch = mp_snapshot_patch_of(d->a, x->name);
  d->tensors[d->n_tensors++] =
      (mp_diff_tensor){x ? x->name : y->name, c, x, y, delta, host, patch};
  d->sum.count[c]++;
}

static mp_status diff_tensors(mp_diff *d, mp_error *err) {
  size_t na = mp_snapshot_tensor_count(d->a);
  size_t nb = mp_snapshot_tensor_count(d->b);
  d->tensors = mp_calloc(d->alloc, na + nb + 1, sizeof *d->tensors);
  if (!d->tensors) return diff_nomem(err);
  for (size_t i = 0; i < na; i++) {
    const mp_snap_tensor *x = mp_snapshot_tensor(d->a, i);
    size_t j;
    bool both = mp_snapshot_find(d->b, x->name, &j);
    diff_add_tensor(d, x, both ? mp_snapshot_tensor(d->b, j) : NULL);
  }
  for (size_t j = 0; j < nb; j++) {
    const mp_snap_tensor *y = mp_snapshot_tensor(d->b, j);
    size_t i;
    if (!mp_snapshot_find(d->a, y->name, &i)) diff_add_tensor(d, NULL, y);
  }
  qsort(d->tensors, d->n_tensors, sizeof *d->tensors, diff_tensor_cmp);
  return MP_OK;
}

/* ---- order ----------------------------------------------------------------
 */

static mp_status diff_order(mp_diff *d, mp_error *err) {
  mp_diff_summary *s = &d->sum;
  size_t na = mp_snapshot_step_count(d->a), nb = mp_snapshot_step_count(d->b);
  mp_strmap *at = NULL;
  s->steps[0] = na;
  s->steps[1] = nb;
  if (na == 0 || nb == 0) {
    s->order_changed = na != nb;
    return MP_OK;
  }
  mp_status st = mp_strmap_create(d->alloc, &at, err);
  if (st != MP_OK) return st;
  for (size_t k = 0; st == MP_OK && k < na; k++) {
    st = mp_strmap_put(at, mp_snapshot_step_op(d->a, k), (int64_t)k, NULL, err);
    if (st == MP_ERR_BAD_INPUT) st = MP_OK; /* a repeated op: first step */
  }
  size_t common = 0;
  for (size_t k = 0; st == MP_OK && k < nb; k++) {
    int64_t v;
    if (!mp_strmap_get(at, mp_snapshot_step_op(d->b, k), &v)) {
      s->ops_added++;
    } else {
      common++;
      if ((size_t)v != k) s->ops_moved++;
    }
  }
  s->ops_removed =
      mp_strmap_count(at) > common ? mp_strmap_count(at) - common : 0;
  s->order_changed = s->ops_moved || s->ops_added || s->ops_removed;
  mp_strmap_destroy(at);
  return st;
}

/* ---- regions (invariants 1, 3, 4) -----------------------------------------
 */

static const mp_snap_region *diff_find_region(const mp_snapshot *s,
                                              const char *name, uint32_t *k) {
  for (size_t i = 0; i < mp_snapshot_region_count(s); i++) {
    if (strcmp(mp_snapshot_region(s, i)->name, name) == 0) {
      if (k) *k = (uint32_t)i;
      return mp_snapshot_region(s, i);
    }
  }
  return NULL;
}

/* LB of B's activations in region k with A's lifetimes where A has the
 * tensor: the lower bound had only the sizes changed. */
static mp_status diff_counterfactual(const mp_diff *d, const mp_snap_region *rb,
                                     uint32_t k, size_t *lb, mp_error *err) {
  size_t n = mp_snapshot_tensor_count(d->b), m = 0;
  *lb = 0;
  if (!rb) return MP_OK;
  mp_snap_tensor *t = mp_calloc(d->alloc, n + 1, sizeof *t);
  if (!t) return diff_nomem(err);
  for (size_t j = 0; j < n; j++) {
    const mp_snap_tensor *y = mp_snapshot_tensor(d->b, j);
    size_t i;
    if (y->region != k || y->cls != MP_CLASS_ACTIVATION) continue;
    t[m] = *y;
    if (mp_snapshot_find(d->a, y->name, &i)) {
      t[m].first = mp_snapshot_tensor(d->a, i)->first;
      t[m].last = mp_snapshot_tensor(d->a, i)->last;
    }
    m++;
  }
  mp_status st = snap_sweep(d->alloc, t, m, lb, NULL, NULL, err);
  mp_free(d->alloc, t);
  return st;
}

/* Does op name sequence of s over iv equal that of t over jv? */
static bool diff_same_ops(const mp_snapshot *s, const mp_snap_interval *iv,
                          const mp_snapshot *t, const mp_snap_interval *jv) {
  int64_t ns = (int64_t)mp_snapshot_step_count(s);
  int64_t nt = (int64_t)mp_snapshot_step_count(t);
  for (int64_t x = iv->first, y = jv->first; x <= iv->last; x++, y++) {
    const char *p = x >= 0 && x < ns ? mp_snapshot_step_op(s, (size_t)x) : "";
    const char *q = y >= 0 && y < nt ? mp_snapshot_step_op(t, (size_t)y) : "";
    if (strcmp(p, q) != 0) return false;
  }
  return true;
}

static bool diff_peak_moved(const mp_diff *d, const mp_snap_region *ra,
                            const mp_snap_region *rb) {
  if (!ra || !rb) return (ra ? ra->n_peaks : 0) != (rb ? rb->n_peaks : 0);
  if (ra->n_peaks != rb->n_peaks) return true;
  for (size_t k = 0; k < ra->n_peaks; k++) {
    const mp_snap_interval *x = &ra->peaks[k], *y = &rb->peaks[k];
    if (x->first != y->first || x->last != y->last) return true;
    if (!diff_same_ops(d->a, x, d->b, y)) return true;
  }
  return false;
}

static void diff_side(mp_diff_region *r, int side, const mp_snap_region *s) {
  r->arena[side] = s ? s->arena_bytes : 0;
  r->resident[side] = s ? s->resident_bytes : 0;
  r->lower_bound[side] = s ? s->lower_bound_bytes : 0;
  r->fragmentation[side] = (int64_t)r->arena[side] -
                           (int64_t)r->resident[side] -
                           (int64_t)r->lower_bound[side];
}

static mp_status diff_region(mp_diff *d, const char *name, mp_error *err) {
  mp_diff_region *r = &d->regions[d->n_regions++];
  uint32_t kb = 0;
  size_t lb_c = 0;
  r->name = name;
  r->a = diff_find_region(d->a, name, NULL);
  r->b = diff_find_region(d->b, name, &kb);
  diff_side(r, 0, r->a);
  diff_side(r, 1, r->b);
  mp_status st = diff_counterfactual(d, r->b, kb, &lb_c, err);
  if (st != MP_OK) return st;
  r->delta = (int64_t)r->arena[1] - (int64_t)r->arena[0];
  r->by_resident = (int64_t)r->resident[1] - (int64_t)r->resident[0];
  r->by_sizes = (int64_t)lb_c - (int64_t)r->lower_bound[0];
  r->by_order = (int64_t)r->lower_bound[1] - (int64_t)lb_c;
  r->by_fragmentation = r->fragmentation[1] - r->fragmentation[0];
  assert(r->by_resident + r->by_sizes + r->by_order + r->by_fragmentation ==
         r->delta);
  r->peak_moved = diff_peak_moved(d, r->a, r->b);
  mp_diff_summary *s = &d->sum;
  s->total[0] += r->arena[0];
  s->total[1] += r->arena[1];
  s->by_resident += r->by_resident;
  s->by_sizes += r->by_sizes;
  s->by_order += r->by_order;
  s->by_fragmentation += r->by_fragmentation;
  s->peak_moved = s->peak_moved || r->peak_moved;
  return MP_OK;
}

static mp_status diff_regions(mp_diff *d, mp_error *err) {
  size_t na = mp_snapshot_region_count(d->a);
  size_t nb = mp_snapshot_region_count(d->b);
  mp_status st = MP_OK;
  d->regions = mp_calloc(d->alloc, na + nb + 1, sizeof *d->regions);
  if (!d->regions) return diff_nomem(err);
  for (size_t k = 0; st == MP_OK && k < na; k++) {
    st = diff_region(d, mp_snapshot_region(d->a, k)->name, err);
  }
  for (size_t k = 0; st == MP_OK && k < nb; k++) {
    const char *name = mp_snapshot_region(d->b, k)->name;
    if (!diff_find_region(d->a, name, NULL)) st = diff_region(d, name, err);
  }
  d->sum.delta = (int64_t)d->sum.total[1] - (int64_t)d->sum.total[0];
  return st;
}

/* ---- entry ----------------------------------------------------------------
 */

mp_status mp_diff_create(const mp_snapshot *a, const mp_snapshot *b,
                         const mp_alloc *al, mp_diff **out, mp_error *err) {
  mp_diff *d = mp_calloc(al, 1, sizeof *d);
  if (!d) return diff_nomem(err);
  d->alloc = al;
  d->a = a;
  d->b = b;
  const char *ha = mp_snapshot_info(a)->model_sha256;
  const char *hb = mp_snapshot_info(b)->model_sha256;
  d->sum.same_model = ha && hb && strcmp(ha, hb) == 0;
  mp_status st = diff_tensors(d, err);
  if (st == MP_OK) st = diff_order(d, err);
  if (st == MP_OK) st = diff_regions(d, err);
  if (st != MP_OK) {
    mp_diff_destroy(d);
    return st;
  }
  *out = d;
  return MP_OK;
}

void mp_diff_destroy(mp_diff *d) {
  if (!d) return;
  mp_free(d->alloc, d->tensors);
  mp_free(d->alloc, d->regions);
  mp_free(d->alloc, d);
}

const mp_snapshot *mp_diff_old(const mp_diff *d) {
  return d->a;
}

const mp_snapshot *mp_diff_new(const mp_diff *d) {
  return d->b;
}

const mp_diff_summary *mp_diff_summary_of(const mp_diff *d) {
  return &d->sum;
}

size_t mp_diff_region_count(const mp_diff *d) {
  return d->n_regions;
}

const mp_diff_region *mp_diff_region_at(const mp_diff *d, size_t i) {
  return &d->regions[i];
}

size_t mp_diff_tensor_count(const mp_diff *d) {
  return d->n_tensors;
}

const mp_diff_tensor *mp_diff_tensor_at(const mp_diff *d, size_t i) {
  return &d->tensors[i];
}
