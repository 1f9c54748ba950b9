/*
 * snapshot.c -- the memory facts of a plan: building them (from a model
 * just planned, or for the readers of snapshot_read.c and snapshot_db.c),
 * deriving lower bounds and peaks, writing baseline/1 and comparing the
 * options two snapshots were made with.
 *
 * Invariants:
 *   1. Every region's lower bound and peak intervals are derived here by
 *      one sweep over its activation tensors, whatever the source; a
 *      recorded lower bound must equal the derived one.
 *   2. Arena and resident bytes come from the source when it records them
 *      (baselines, region sizes of plans) and must then cover the placed
 *      tensors; otherwise they are the end of the region's last tensor
 *      and last resident/retained tensor (the rule of planner/plan.c).
 *   3. Every byte count and time is at most MP_SNAP_MAX, so differences
 *      of two snapshots' figures fit an int64_t.
 *   4. Options are stored as one canonical JSON object (keys sorted,
 *      bindings sorted by name): equal options give equal text.
 *   5. A baseline is printed with one top-level key per line and one
 *      array element (tensor, step) per line; every token is cJSON's.
 */
#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "mplan/file.h"
#include "mplan/passes.h"
#include "mplan/sha256.h"
#include "report_util.h"
#include "snapshot_internal.h"

/* ---- building ------------------------------------------------------------ */

mp_status snap_create(const mp_alloc *a, const char *kind, const char *source,
                      mp_snapshot **out, mp_error *err) {
  mp_snapshot *s = mp_calloc(a, 1, sizeof *s);
  bool ok = s != NULL;
  if (ok) {
    s->alloc = a;
    ok = mp_strpool_create(a, &s->pool, NULL) == MP_OK &&
         mp_strmap_create(a, &s->by_name, NULL) == MP_OK &&
         mp_strmap_create(a, &s->hosts, NULL) == MP_OK &&
         mp_strmap_create(a, &s->fused, NULL) == MP_OK &&
         mp_strmap_create(a, &s->removed, NULL) == MP_OK &&
         mp_strmap_create(a, &s->patched, NULL) == MP_OK;
  }
  if (ok) {
    s->info.kind = snap_str(s, kind, &ok);
    s->info.source = snap_str(s, source, &ok);
    s->info.time_word = "step";
  }
  if (!ok) {
    mp_snapshot_destroy(s);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", source);
  }
  *out = s;
  return MP_OK;
}

void mp_snapshot_destroy(mp_snapshot *s) {
  if (!s) return;
  mp_free(s->alloc, s->tensors);
  mp_free(s->alloc, s->regions);
  mp_free(s->alloc, s->peaks);
  mp_free(s->alloc, s->steps);
  mp_strmap_destroy(s->by_name);
  mp_strmap_destroy(s->hosts);
  mp_strmap_destroy(s->fused);
  mp_strmap_destroy(s->removed);
  mp_strmap_destroy(s->patched);
  mp_free(s->alloc, s->patches);
  mp_free(s->alloc, s->gone_by);
  mp_free(s->alloc, s->members);
  mp_free(s->alloc, s->what_if);
  mp_strpool_destroy(s->pool);
  mp_free(s->alloc, s);
}

const char *snap_str(mp_snapshot *s, const char *text, bool *ok) {
  if (!text) return NULL;
  const char *c = mp_strpool_cstr(s->pool, text);
  if (!c) *ok = false;
  return c;
}

mp_status snap_region(mp_snapshot *s, const char *name, uint32_t *index,
                      mp_error *err) {
  for (size_t k = 0; k < s->n_regions; k++) {
    if (strcmp(s->regions[k].r.name, name) == 0) {
      *index = (uint32_t)k;
      return MP_OK;
    }
  }
  if (s->n_regions >= UINT32_MAX) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: too many regions",
                        s->info.source);
  }
  void *p = s->regions;
  mp_status st = mp_grow(s->alloc, &p, &s->cap_regions, s->n_regions + 1,
                         sizeof *s->regions, s->info.source, err);
  if (st != MP_OK) return st;
  s->regions = p;
  bool ok = true;
  snap_region_rec *r = &s->regions[s->n_regions];
  memset(r, 0, sizeof *r);
  r->r.name = snap_str(s, name, &ok);
  if (!ok) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", s->info.source);
  }
  *index = (uint32_t)s->n_regions++;
  return MP_OK;
}

static mp_status snap_bad(const mp_snapshot *s, const char *where,
                          const char *what, mp_error *err) {
  return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: %s: %s", s->info.source,
                      where, what);
}

mp_status snap_tensor(mp_snapshot *s, const mp_snap_tensor *t,
                      const char *where, mp_error *err) {
  if (!t->name || !*t->name) return snap_bad(s, where, "empty name", err);
  if (t->size == 0) return snap_bad(s, where, "size must be >= 1", err);
  if (t->padded < t->size) {
    return snap_bad(s, where, "padded size is below the size", err);
  }
  if (t->padded > MP_SNAP_MAX || (t->placed && t->offset > MP_SNAP_MAX)) {
    return snap_bad(s, where, "byte counts above 2^62 are not supported", err);
  }
  if (t->first > t->last) {
    return snap_bad(s, where, "first use is after last use", err);
  }
  if (t->first < -(int64_t)MP_SNAP_MAX || t->last > (int64_t)MP_SNAP_MAX) {
    return snap_bad(s, where, "times beyond +-2^62 are not supported", err);
  }
  if (t->region >= s->n_regions) {
    return mp_error_set(err, MP_ERR_INTERNAL, "%s: %s: no region %u",
                        s->info.source, where, (unsigned)t->region);
  }
  bool ok = true;
  const char *name = snap_str(s, t->name, &ok);
  if (!ok) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", s->info.source);
  }
  int64_t prev;
  mp_status st =
      mp_strmap_put(s->by_name, name, (int64_t)s->n_tensors, &prev, err);
  if (st == MP_ERR_BAD_INPUT) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %s: tensor '%s' is listed twice", s->info.source,
                        where, name);
  }
  if (st != MP_OK) return st;
  void *p = s->tensors;
  st = mp_grow(s->alloc, &p, &s->cap_tensors, s->n_tensors + 1,
               sizeof *s->tensors, s->info.source, err);
  if (st != MP_OK) return st; /* the map keeps a dangling index: unused */
  s->tensors = p;
  s->tensors[s->n_tensors] = *t;
  s->tensors[s->n_tensors++].name = name;
  return MP_OK;
}

mp_status snap_step(mp_snapshot *s, const char *op, mp_error *err) {
  void *p = (void *)s->steps;
  mp_status st = mp_grow(s->alloc, &p, &s->cap_steps, s->n_steps + 1,
                         sizeof *s->steps, s->info.source, err);
  if (st != MP_OK) return st;
  s->steps = p;
  bool ok = true;
  s->steps[s->n_steps] = snap_str(s, op ? op : "", &ok);
  if (!ok) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", s->info.source);
  }
  s->n_steps++;
  return MP_OK;
}

/* ---- the sweep (invariant 1) --------------------------------------------- */

typedef struct snap_event {
  int64_t t;
  size_t bytes;
  bool end; /* leaves the live set at t */
} snap_event;

static int snap_event_cmp(const void *a, const void *b) {
  const snap_event *x = a, *y = b;
  return (x->t > y->t) - (x->t < y->t);
}

/* Applies every event at ev[*i].t; returns false on overflow. Whatever
 * leaves at t was added at an earlier time, so it never underflows. */
static bool snap_apply(const snap_event *ev, size_t n, size_t *i,
                       size_t *live) {
  int64_t t = ev[*i].t;
  size_t add = 0, sub = 0;
  for (; *i < n && ev[*i].t == t; (*i)++) {
    size_t *sum = ev[*i].end ? &sub : &add;
    if (!mp_size_add(*sum, ev[*i].bytes, sum)) return false;
  }
  if (!mp_size_add(*live, add, live)) return false;
  *live -= sub;
  return true;
}

mp_status snap_sweep(const mp_alloc *a, const mp_snap_tensor *t, size_t n,
                     size_t *lb, mp_snap_interval *peaks, size_t *n_peaks,
                     mp_error *err) {
  snap_event *ev = mp_calloc(a, 2 * n + 1, sizeof *ev);
  size_t m = 0, live = 0, best = 0, np = 0;
  if (!ev) return mp_error_set(err, MP_ERR_NOMEM, "lower bound: out of memory");
  for (size_t k = 0; k < n; k++) {
    ev[m++] = (snap_event){t[k].first, t[k].padded, false};
    ev[m++] = (snap_event){t[k].last + 1, t[k].padded, true};
  }
  qsort(ev, m, sizeof *ev, snap_event_cmp);
  for (int pass = 0; pass < 2; pass++) {
    live = 0;
    for (size_t i = 0; i < m;) {
      int64_t from = ev[i].t;
      if (!snap_apply(ev, m, &i, &live)) {
        mp_free(a, ev);
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "live bytes overflow the address space");
      }
      if (pass == 0 && live > best) best = live;
      if (pass == 0 || !peaks || live != best || best == 0) continue;
      /* [from, next event - 1]: live > 0, so an end event follows.
       * Adjacent runs at the peak merge. */
      int64_t to = ev[i].t - 1;
      if (np && peaks[np - 1].last + 1 == from) {
        peaks[np - 1].last = to;
      } else {
        peaks[np++] = (mp_snap_interval){from, to};
      }
    }
  }
  mp_free(a, ev);
  *lb = best;
  if (n_peaks) *n_peaks = np;
  return MP_OK;
}

/* ---- finishing (invariants 1 and 2) -------------------------------------- */

static mp_status snap_region_ends(mp_snapshot *s, uint32_t k, size_t *end,
                                  size_t *fixed_end, size_t *fixed_sum,
                                  mp_error *err) {
  *end = *fixed_end = *fixed_sum = 0;
  for (size_t i = 0; i < s->n_tensors; i++) {
    const mp_snap_tensor *t = &s->tensors[i];
    if (t->region != k) continue;
    bool fixed = t->cls != MP_CLASS_ACTIVATION;
    if (fixed && !mp_size_add(*fixed_sum, t->padded, fixed_sum)) {
      return snap_bad(s, s->regions[k].r.name, "resident bytes overflow", err);
    }
    if (!t->placed) continue;
    size_t e = t->offset + t->padded; /* both <= 2^62 (invariant 3) */
    if (e > *end) *end = e;
    if (fixed && e > *fixed_end) *fixed_end = e;
  }
  return MP_OK;
}

static mp_status snap_finish_region(mp_snapshot *s, uint32_t k,
                                    mp_snap_tensor *scratch, size_t *peak_at,
                                    mp_error *err) {
  snap_region_rec *r = &s->regions[k];
  size_t n = 0, lb = 0, end, fixed_end, fixed_sum;
  char where[160];
  snprintf(where, sizeof where, "region '%.100s'", r->r.name);
  r->r.tensors = 0;
  for (size_t i = 0; i < s->n_tensors; i++) {
    if (s->tensors[i].region != k) continue;
    r->r.tensors++;
    if (s->tensors[i].cls == MP_CLASS_ACTIVATION) scratch[n++] = s->tensors[i];
  }
  mp_status st = snap_sweep(s->alloc, scratch, n, &lb, s->peaks + *peak_at,
                            &r->r.n_peaks, err);
  if (st == MP_OK)
    st = snap_region_ends(s, k, &end, &fixed_end, &fixed_sum, err);
  if (st != MP_OK) return st;
  if (r->has_lb && r->r.lower_bound_bytes != lb) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %s: lower_bound_bytes is %zu, but its tensors "
                        "give %zu (edited by hand?)",
                        s->info.source, where, r->r.lower_bound_bytes, lb);
  }
  r->r.lower_bound_bytes = lb;
  if (!r->has_resident) r->r.resident_bytes = fixed_end;
  if (!r->has_arena) r->r.arena_bytes = end;
  if (r->r.arena_bytes > MP_SNAP_MAX || r->r.resident_bytes < fixed_sum ||
      r->r.resident_bytes < fixed_end || r->r.arena_bytes < end ||
      r->r.arena_bytes < r->r.resident_bytes ||
      r->r.arena_bytes - r->r.resident_bytes < lb) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %s: arena %zu B and resident %zu B cannot hold "
                        "its tensors (resident tensors %zu B, activation "
                        "lower bound %zu B, tensors end at %zu B)",
                        s->info.source, where, r->r.arena_bytes,
                        r->r.resident_bytes, fixed_sum, lb, end);
  }
  *peak_at += r->r.n_peaks;
  return MP_OK;
}

mp_status snap_finish(mp_snapshot *s, mp_error *err) {
  mp_snap_tensor *scratch =
      mp_calloc(s->alloc, s->n_tensors + 1, sizeof *scratch);
  s->peaks = mp_calloc(s->alloc, s->n_tensors + 1, sizeof *s->peaks);
  size_t at = 0, total = 0;
  mp_status st = MP_OK;
  if (!scratch || !s->peaks) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", s->info.source);
  }
  for (uint32_t k = 0; st == MP_OK && k < s->n_regions; k++) {
    st = snap_finish_region(s, k, scratch, &at, err);
    if (st == MP_OK &&
        !mp_size_add(total, s->regions[k].r.arena_bytes, &total)) {
      st = snap_bad(s, "regions", "the total overflows", err);
    }
  }
  /* Peak pointers are set only now: s->peaks no longer moves. */
  for (size_t k = 0, p = 0; st == MP_OK && k < s->n_regions; k++) {
    s->regions[k].r.peaks = s->regions[k].r.n_peaks ? s->peaks + p : NULL;
    p += s->regions[k].r.n_peaks;
  }
  if (st == MP_OK && total > MP_SNAP_MAX) {
    st =
        snap_bad(s, "regions", "byte counts above 2^62 are not supported", err);
  }
  mp_free(s->alloc, scratch);
  if (st == MP_OK) s->finished = true;
  return st;
}

/* ---- accessors ----------------------------------------------------------- */

const mp_snap_info *mp_snapshot_info(const mp_snapshot *s) {
  return &s->info;
}

size_t mp_snapshot_region_count(const mp_snapshot *s) {
  return s->n_regions;
}

const mp_snap_region *mp_snapshot_region(const mp_snapshot *s, size_t i) {
  return &s->regions[i].r;
}

size_t mp_snapshot_tensor_count(const mp_snapshot *s) {
  return s->n_tensors;
}

const mp_snap_tensor *mp_snapshot_tensor(const mp_snapshot *s, size_t i) {
  return &s->tensors[i];
}

mp_status snap_member(mp_snapshot *s, const char *member, size_t buffer,
                      mp_error *err) {
  bool ok = true;
  const char *name = snap_str(s, member, &ok);
  if (!ok) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", s->info.source);
  }
  mp_status st = mp_strmap_put(s->hosts, name, (int64_t)buffer, NULL, err);
  if (st == MP_ERR_BAD_INPUT) return MP_OK; /* listed twice: the first */
  void *p = s->members;
  if (st == MP_OK) {
    st = mp_grow(s->alloc, &p, &s->cap_members, s->n_members + 1,
                 sizeof *s->members, s->info.source, err);
  }
  if (st == MP_OK) {
    s->members = p;
    s->members[s->n_members++] = (snap_member_rec){name, buffer};
  }
  return st;
}

mp_status snap_gone(mp_snapshot *s, const char *names, const char *by,
                    bool fused, mp_error *err) {
  bool ok = true;
  const char *o = snap_str(s, by, &ok), *list = snap_str(s, names, &ok);
  void *p = s->gone_by;
  mp_status st = ok ? mp_grow(s->alloc, &p, &s->cap_gone_by, s->n_gone_by + 1,
                              sizeof *s->gone_by, s->info.source, err)
                    : MP_ERR_NOMEM;
  if (st == MP_OK) s->gone_by = p;
  size_t idx = s->n_gone_by;
  if (st == MP_OK) s->gone_by[s->n_gone_by++] = (snap_gone_rec){o, list, fused};
  mp_strmap *map = fused ? s->fused : s->removed;
  for (const char *at = names; st == MP_OK && at && *at;) {
    const char *end = strchr(at, ',');
    size_t n = end ? (size_t)(end - at) : strlen(at);
    const char *name = mp_strpool_add(s->pool, at, n);
    if (!name) {
      st = MP_ERR_NOMEM;
    } else {
      st = mp_strmap_put(map, name, (int64_t)idx, NULL, err);
      if (st == MP_ERR_BAD_INPUT) st = MP_OK; /* listed twice: the first */
    }
    at = end ? end + 1 : NULL;
  }
  if (st == MP_ERR_NOMEM) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", s->info.source);
  }
  return st;
}

mp_status snap_patch(mp_snapshot *s, const char *name, const char *what,
                     mp_error *err) {
  bool ok = true;
  int64_t v;
  if (mp_strmap_get(s->patched, name, &v)) return MP_OK; /* the first */
  const char *n = snap_str(s, name, &ok), *w = snap_str(s, what, &ok);
  void *p = s->patches;
  mp_status st = ok ? mp_grow(s->alloc, &p, &s->cap_patches, s->n_patches + 1,
                              sizeof *s->patches, s->info.source, err)
                    : MP_ERR_NOMEM;
  if (st == MP_OK) {
    s->patches = p;
    st = mp_strmap_put(s->patched, n, (int64_t)s->n_patches, NULL, err);
  }
  if (st == MP_OK) s->patches[s->n_patches++] = (snap_patch_rec){n, w};
  if (st == MP_ERR_NOMEM) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", s->info.source);
  }
  return st;
}

mp_status snap_what_if(mp_snapshot *s, const char *setting, size_t lb,
                       size_t arena, mp_error *err) {
  bool ok = true;
  const char *n = snap_str(s, setting, &ok);
  void *p = s->what_if;
  mp_status st = ok ? mp_grow(s->alloc, &p, &s->cap_what_if, s->n_what_if + 1,
                              sizeof *s->what_if, s->info.source, err)
                    : MP_ERR_NOMEM;
  if (st == MP_OK) {
    s->what_if = p;
    s->what_if[s->n_what_if++] = (mp_snap_what_if){n, lb, arena};
  }
  if (st == MP_ERR_NOMEM) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", s->info.source);
  }
  return st;
}

mp_status mp_snapshot_add_what_if(mp_snapshot *s, const char *setting,
                                  size_t lower_bound_bytes, size_t arena_bytes,
                                  mp_error *err) {
  return snap_what_if(s, setting, lower_bound_bytes, arena_bytes, err);
}

size_t mp_snapshot_what_if(const mp_snapshot *s, const mp_snap_what_if **out) {
  *out = s->what_if;
  return s->n_what_if;
}

const char *mp_snapshot_patch_of(const mp_snapshot *s, const char *name) {
  int64_t v;
  if (!mp_strmap_get(s->patched, name, &v) || (size_t)v >= s->n_patches) {
    return NULL;
  }
  return s->patches[v].what;
}

static const char *snap_gone_by(const mp_snapshot *s, const mp_strmap *map,
                                const char *name) {
  int64_t v;
  if (!mp_strmap_get(map, name, &v) || (size_t)v >= s->n_gone_by) return NULL;
  return s->gone_by[v].by;
}

const char *mp_snapshot_fused_into(const mp_snapshot *s, const char *name) {
  return snap_gone_by(s, s->fused, name);
}

const char *mp_snapshot_removed_by(const mp_snapshot *s, const char *name) {
  return snap_gone_by(s, s->removed, name);
}

bool mp_snapshot_host(const mp_snapshot *s, const char *name, size_t *buffer) {
  int64_t v;
  if (!mp_strmap_get(s->hosts, name, &v) || (size_t)v >= s->n_tensors) {
    return false;
  }
  *buffer = (size_t)v;
  return true;
}

bool mp_snapshot_find(const mp_snapshot *s, const char *name, size_t *index) {
  int64_t v;
  if (!mp_strmap_get(s->by_name, name, &v) || (size_t)v >= s->n_tensors) {
    return false;
  }
  *index = (size_t)v;
  return true;
}

size_t mp_snapshot_step_count(const mp_snapshot *s) {
  return s->n_steps;
}

const char *mp_snapshot_step_op(const mp_snapshot *s, size_t step) {
  return step < s->n_steps ? s->steps[step] : NULL;
}

size_t mp_snapshot_total_bytes(const mp_snapshot *s) {
  size_t total = 0;
  for (size_t k = 0; k < s->n_regions; k++) {
    total += s->regions[k].r.arena_bytes; /* checked in snap_finish */
  }
  return total;
}

/* ---- options (invariant 4) ----------------------------------------------- */

typedef struct snap_named {
  const char *name;
  size_t index;
} snap_named;

static int snap_named_cmp(const void *a, const void *b) {
  const snap_named *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* Adds {name: value, ...} sorted by name; value(i) makes item i. */
typedef cJSON *(*snap_item_fn)(const mp_run_options *ro, size_t i);

static cJSON *snap_dim_item(const mp_run_options *ro, size_t i) {
  return cJSON_CreateNumber((double)ro->dims[i].value);
}

static cJSON *snap_cap_item(const mp_run_options *ro, size_t i) {
  return cJSON_CreateNumber((double)ro->caps[i].value);
}

static cJSON *snap_value_item(const mp_run_options *ro, size_t i) {
  return cJSON_CreateNumber(ro->values[i].value);
}

static cJSON *snap_shape_item(const mp_run_options *ro, size_t i) {
  const mp_shape_binding *b = &ro->shapes[i];
  char text[MP_MAX_RANK * 21 + 8];
  size_t len = 0;
  if (b->rank == 0) snprintf(text, sizeof text, "scalar");
  for (uint32_t d = 0; d < b->rank && len < sizeof text; d++) {
    int w = snprintf(text + len, sizeof text - len, "%s%lld", d ? "x" : "",
                     (long long)b->dims[d]);
    if (w > 0) len += (size_t)w;
  }
  return cJSON_CreateString(text);
}

static bool snap_add_map(const mp_alloc *a, cJSON *root, const char *key,
                         const mp_run_options *ro, size_t n,
                         const char *(*name)(const mp_run_options *, size_t),
                         snap_item_fn item) {
  cJSON *o = cJSON_AddObjectToObject(root, key);
  snap_named *v = mp_calloc(a, n + 1, sizeof *v);
  bool ok = o && v;
  for (size_t i = 0; ok && i < n; i++) v[i] = (snap_named){name(ro, i), i};
  if (ok) qsort(v, n, sizeof *v, snap_named_cmp);
  for (size_t i = 0; ok && i < n; i++) {
    cJSON *x = item(ro, v[i].index);
    ok = x && cJSON_AddItemToObject(o, v[i].name, x);
    if (!ok) cJSON_Delete(x);
  }
  mp_free(a, v);
  return ok;
}

static const char *snap_dim_name(const mp_run_options *ro, size_t i) {
  return ro->dims[i].name;
}
static const char *snap_cap_name(const mp_run_options *ro, size_t i) {
  return ro->caps[i].name;
}
static const char *snap_shape_name(const mp_run_options *ro, size_t i) {
  return ro->shapes[i].name;
}
static const char *snap_value_name(const mp_run_options *ro, size_t i) {
  return ro->values[i].name;
}

/* The canonical options text (owned, cJSON_free) or NULL when out of
 * memory. Keys in alphabetical order. */
static char *snap_options_json(const mp_alloc *a, const mp_run_options *ro,
                               const char *backend) {
  cJSON *o = cJSON_CreateObject();
  bool ok = o != NULL;
  ok = ok && cJSON_AddStringToObject(o, "backend", backend ? backend : "");
  ok = ok && cJSON_AddNumberToObject(o, "budget_ms", ro->budget_ms);
  if (ro->budget_work) {
    ok = ok &&
         cJSON_AddNumberToObject(o, "budget_work", (double)ro->budget_work);
  }
  ok = ok &&
       snap_add_map(a, o, "caps", ro, ro->n_caps, snap_cap_name, snap_cap_item);
  ok = ok &&
       snap_add_map(a, o, "dims", ro, ro->n_dims, snap_dim_name, snap_dim_item);
  ok = ok &&
       cJSON_AddStringToObject(
           o, "inputs", ro->inputs_as_activations ? "activation" : "resident");
  ok = ok && cJSON_AddStringToObject(o, "order", mp_order_name(ro->order));
  if (ro->order_work) {
    ok = ok && cJSON_AddNumberToObject(o, "order_work", (double)ro->order_work);
  }
  if (ro->passes) {
    char names[256] = "all";
    size_t n = 0;
    for (int p = 0; p < MP_PASS_COUNT && ro->passes != MP_PASSES_ALL; p++) {
      if (ro->passes >> p & 1) {
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", n ? "," : "",
                              mp_pass_name((mp_pass_id)p));
      }
    }
    ok = ok && cJSON_AddStringToObject(o, "passes", names);
  }
  ok = ok && snap_add_map(a, o, "shapes", ro, ro->n_shapes, snap_shape_name,
                          snap_shape_item);
  ok = ok &&
       cJSON_AddStringToObject(
           o, "strategy", ro->strategy ? ro->strategy : MP_STRATEGY_DEFAULT);
  ok = ok && snap_add_map(a, o, "values", ro, ro->n_values, snap_value_name,
                          snap_value_item);
  char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return text;
}

/* "'linear'" for strings, the compact JSON otherwise; into buf. */
static void snap_value_text(const cJSON *v, char *buf, size_t cap) {
  if (!v) {
    snprintf(buf, cap, "(none)");
  } else if (cJSON_IsString(v)) {
    snprintf(buf, cap, "'%.200s'", v->valuestring);
  } else {
    char *t = cJSON_PrintUnformatted(v);
    snprintf(buf, cap, "%.200s", t ? t : "?");
    cJSON_free(t);
  }
}

static bool snap_json_equal(const cJSON *x, const cJSON *y) {
  return x && y && cJSON_Compare(x, y, true);
}

/* Appends "key X (now Y)" for every differing key of the union. */
static void snap_option_diffs(const cJSON *base, const cJSON *now, mp_buf *b) {
  size_t n = 0;
  for (int pass = 0; pass < 2; pass++) {
    const cJSON *from = pass ? now : base, *other = pass ? base : now;
    for (const cJSON *v = from->child; v; v = v->next) {
      const cJSON *w = cJSON_GetObjectItemCaseSensitive(other, v->string);
      if (pass && w) continue; /* listed in the first pass */
      if (snap_json_equal(v, w)) continue;
      char x[256], y[256];
      snap_value_text(pass ? w : v, x, sizeof x);
      snap_value_text(pass ? v : w, y, sizeof y);
      mp_buf_printf(b, "%s%s %s (now %s)", n++ ? ", " : "", v->string, x, y);
    }
  }
}

mp_status mp_snapshot_same_options(const mp_snapshot *baseline,
                                   const mp_snapshot *now, mp_error *err) {
  const char *src = baseline->info.source;
  if (!baseline->info.options || !now->info.options) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: records no planning options to compare with "
                        "(%s)",
                        src, baseline->info.kind);
  }
  if (strcmp(baseline->info.options, now->info.options) == 0) return MP_OK;
  cJSON *x = cJSON_Parse(baseline->info.options);
  cJSON *y = cJSON_Parse(now->info.options);
  mp_buf b;
  mp_buf_init(&b, baseline->alloc);
  mp_status st = MP_ERR_BAD_INPUT;
  if (!x || !y) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", src);
  } else {
    snap_option_diffs(x, y, &b);
    if (b.len == 0) st = MP_OK; /* same values, different spelling */
  }
  if (st == MP_ERR_BAD_INPUT) {
    mp_error_set(err, st,
                 "%s: baseline made with other options: %s; check with the "
                 "baseline's options or refresh it with --update-baseline",
                 src, b.failed ? "(out of memory)" : mp_buf_str(&b));
  }
  mp_buf_free(&b);
  cJSON_Delete(x);
  cJSON_Delete(y);
  return st;
}

mp_status mp_snapshot_options_text(const mp_run_options *ro,
                                   const char *backend, mp_buf *out,
                                   mp_error *err) {
  char *text = snap_options_json(NULL, ro, backend);
  if (text) mp_buf_puts(out, text);
  cJSON_free(text);
  return text ? mp_buf_status(out, "options", err)
              : mp_error_set(err, MP_ERR_NOMEM, "options: out of memory");
}

/* ---- from a plan just made ----------------------------------------------- */

static mp_status snap_plan_info(mp_snapshot *s, const mp_model *m,
                                const mp_plan *plan, const mp_run_options *ro,
                                mp_error *err) {
  const mp_plan_summary *sum = mp_plan_summary_of(plan);
  char sha[MP_SHA256_HEX];
  bool ok = true;
  mp_status st = mp_sha256_file(mp_model_path(m), s->alloc, sha, err);
  if (st != MP_OK) return st;
  s->info.tool = "mplan " MP_VERSION;
  s->info.model_path = snap_str(s, mp_model_path(m), &ok);
  s->info.model_name = snap_str(s, mp_model_name(m), &ok);
  s->info.model_format =
      snap_str(s, mp_model_format_name(mp_model_format_of(m)), &ok);
  s->info.model_sha256 = snap_str(s, sha, &ok);
  s->info.strategy = snap_str(s, sum->strategy, &ok);
  s->info.strategy_detail =
      sum->detail && *sum->detail ? snap_str(s, sum->detail, &ok) : NULL;
  s->info.order = snap_str(s, mp_model_order_name(m), &ok);
  s->info.backend = snap_str(s, mp_model_backend_name(m), &ok);
  s->info.time_word =
      mp_model_format_of(m) == MP_FORMAT_MINIMALLOC ? "t" : "step";
  if (ok && ro) {
    char *opts = snap_options_json(s->alloc, ro, mp_model_backend_name(m));
    s->info.options = snap_str(s, opts, &ok);
    if (!opts) ok = false;
    cJSON_free(opts);
  }
  if (!ok) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", s->info.source);
  }
  return MP_OK;
}

/* The plan's regions, in index order. This mplan's plan API has region
 * indices only (one region today), so a one-region plan's region is
 * "arena" and others are named by index; with named regions in the plan
 * (mp_plan_region_at), this function is the one place to read them. */
/* The plan's regions, by the names the backend gave them. */
static mp_status snap_plan_regions(mp_snapshot *s, const mp_plan *plan,
                                   mp_error *err) {
  mp_status st = MP_OK;
  for (size_t k = 0; st == MP_OK && k < mp_plan_region_count(plan); k++) {
    uint32_t idx;
    st = snap_region(s, mp_plan_region_at(plan, k)->name, &idx, err);
  }
  return st;
}

static mp_status snap_plan_tensors(mp_snapshot *s, const mp_model *m,
                                   const mp_plan *plan, mp_error *err) {
  const mp_problem *p = mp_plan_problem(plan);
  const mp_placement *pl = mp_plan_placements(plan);
  size_t n = mp_problem_count(p);
  mp_status st = snap_plan_regions(s, plan, err);
  for (size_t i = 0; st == MP_OK && i < n; i++) {
    const mp_buffer *b = mp_problem_buffer(p, i);
    mp_snap_tensor t = {.name = b->name,
                        .cls = b->cls,
                        .region = pl[i].region,
                        .size = b->size,
                        .padded = b->padded,
                        .first = b->first,
                        .last = b->last,
                        .placed = true,
                        .offset = pl[i].offset};
    char where[64];
    snprintf(where, sizeof where, "buffer %zu", i);
    st = snap_tensor(s, &t, where, err);
    /* The graph tensors sharing it (views, in-place writes, slices). */
    const mp_graph *g = mp_model_graph(m);
    const uint32_t *members = NULL;
    size_t nm = g ? mp_model_buffer_tensors(m, i, &members) : 0;
    for (size_t k = 0; st == MP_OK && k < nm; k++) {
      const char *name = mp_graph_tensor(g, members[k])->name;
      if (strcmp(name, b->name) != 0) st = snap_member(s, name, i, err);
    }
  }
  const mp_pass_report *r = mp_model_pass_report(m);
  for (size_t k = 0; st == MP_OK && r && k < mp_pass_report_fusions(r); k++) {
    const mp_fusion *f = mp_pass_report_fusion(r, k);
    st = snap_gone(s, f->intermediates, f->op, true, err);
  }
  for (size_t k = 0; st == MP_OK && r && k < mp_pass_report_rows(r); k++) {
    const mp_pass_row *row = mp_pass_report_row(r, k);
    st = snap_gone(s, row->removed, mp_pass_name(row->pass), false, err);
  }
  const mp_tile_info *ti = r ? mp_pass_report_tile(r) : NULL;
  const mp_graph *g = mp_model_graph(m);
  for (size_t k = 0; st == MP_OK && ti && g && k < ti->n_ops; k++) {
    const mp_tile_op *to = &ti->ops[k];
    int32_t i;
    if (!mp_graph_find_op(g, to->op, &i)) continue; /* fused away */
    const mp_op *op = mp_graph_op(g, (size_t)i);
    if (op->n_outputs < 1 || op->outputs[0] < 0) continue;
    char what[300];
    report_patch_what(what, sizeof what, mp_tile_role_name(to->role),
                      to->origin, to->band, to->column);
    st = snap_patch(s, mp_graph_tensor(g, (size_t)op->outputs[0])->name, what,
                    err);
  }
  for (size_t k = 0; st == MP_OK && k < mp_model_steps(m); k++) {
    st = snap_step(s, mp_model_step_op(m, k), err);
  }
  return st;
}

mp_status mp_snapshot_of_plan(const mp_model *m, const mp_plan *plan,
                              const mp_run_options *ro, const mp_alloc *a,
                              mp_snapshot **out, mp_error *err) {
  mp_snapshot *s = NULL;
  mp_status st = snap_create(a, "model", mp_model_path(m), &s, err);
  if (st == MP_OK) st = snap_plan_info(s, m, plan, ro, err);
  if (st == MP_OK) st = snap_plan_tensors(s, m, plan, err);
  if (st == MP_OK) st = snap_finish(s, err);
  if (st != MP_OK) {
    mp_snapshot_destroy(s);
    return st;
  }
  *out = s;
  return MP_OK;
}

/* ---- baseline/1 (invariant 5) -------------------------------------------- */

typedef struct snap_doc {
  cJSON *root;
  bool ok;
} snap_doc;

static void snap_put_str(snap_doc *d, cJSON *o, const char *k, const char *v) {
  if (v) rj_str(&d->ok, o, k, v);
}

static void snap_doc_head(const mp_snapshot *s, snap_doc *d) {
  const mp_snap_info *in = &s->info;
  snap_put_str(d, d->root, "mplan", "baseline/1");
  snap_put_str(d, d->root, "tool", in->tool);
  cJSON *m = rj_obj(&d->ok, d->root, "model");
  if (m) {
    snap_put_str(d, m, "path", in->model_path);
    snap_put_str(d, m, "name", in->model_name);
    snap_put_str(d, m, "format", in->model_format);
    snap_put_str(d, m, "sha256", in->model_sha256);
  }
  if (d->ok && in->options) {
    cJSON *o = cJSON_Parse(in->options);
    if (!o || !cJSON_AddItemToObject(d->root, "options", o)) {
      cJSON_Delete(o);
      d->ok = false;
    }
  }
  cJSON *p = rj_obj(&d->ok, d->root, "plan");
  if (p) {
    snap_put_str(d, p, "strategy", in->strategy);
    snap_put_str(d, p, "strategy_detail", in->strategy_detail);
    snap_put_str(d, p, "order", in->order);
    snap_put_str(d, p, "backend", in->backend);
    snap_put_str(d, p, "time", in->time_word);
  }
  if (d->ok) {
    rj_num(&d->ok, d->root, "total_bytes", (double)mp_snapshot_total_bytes(s));
  }
}

static void snap_doc_body(const mp_snapshot *s, snap_doc *d) {
  cJSON *regions = rj_arr(&d->ok, d->root, "regions");
  for (size_t k = 0; regions && k < s->n_regions; k++) {
    const mp_snap_region *r = &s->regions[k].r;
    cJSON *o = rj_push_obj(&d->ok, regions);
    if (!o) return;
    snap_put_str(d, o, "name", r->name);
    rj_num(&d->ok, o, "arena_bytes", (double)r->arena_bytes);
    rj_num(&d->ok, o, "resident_bytes", (double)r->resident_bytes);
    rj_num(&d->ok, o, "lower_bound_bytes", (double)r->lower_bound_bytes);
    rj_num(&d->ok, o, "tensors", (double)r->tensors);
  }
  cJSON *steps = rj_arr(&d->ok, d->root, "steps");
  for (size_t k = 0; steps && k < s->n_steps; k++) {
    cJSON *x = cJSON_CreateString(s->steps[k]);
    if (!x || !cJSON_AddItemToArray(steps, x)) {
      cJSON_Delete(x);
      d->ok = false;
      return;
    }
  }
  cJSON *tensors = rj_arr(&d->ok, d->root, "tensors");
  for (size_t i = 0; tensors && i < s->n_tensors; i++) {
    const mp_snap_tensor *t = &s->tensors[i];
    cJSON *o = rj_push_obj(&d->ok, tensors);
    if (!o) return;
    snap_put_str(d, o, "name", t->name);
    snap_put_str(d, o, "class", mp_class_name(t->cls));
    snap_put_str(d, o, "region", s->regions[t->region].r.name);
    rj_num(&d->ok, o, "size", (double)t->size);
    rj_num(&d->ok, o, "padded", (double)t->padded);
    rj_num(&d->ok, o, "first", (double)t->first);
    rj_num(&d->ok, o, "last", (double)t->last);
    /* the tensors that live in this one's buffer (views, in place,
     * Concat slices), so that a diff of two baselines can name them */
    cJSON *holds = NULL;
    for (size_t m = 0; d->ok && m < s->n_members; m++) {
      if (s->members[m].host != i) continue;
      if (!holds) holds = rj_arr(&d->ok, o, "holds");
      cJSON *x = holds ? cJSON_CreateString(s->members[m].name) : NULL;
      if (!x || !cJSON_AddItemToArray(holds, x)) {
        cJSON_Delete(x);
        d->ok = false;
      }
    }
  }
  /* what fusions and passes removed, one line each (absent when none) */
  for (int fused = 1; d->ok && fused >= 0; fused--) {
    cJSON *arr = NULL;
    for (size_t k = 0; d->ok && k < s->n_gone_by; k++) {
      const snap_gone_rec *g = &s->gone_by[k];
      if (g->fused != (fused == 1) || !g->names || !*g->names) continue;
      if (!arr) arr = rj_arr(&d->ok, d->root, fused ? "fused" : "removed");
      cJSON *o = arr ? rj_push_obj(&d->ok, arr) : NULL;
      if (!o) return;
      snap_put_str(d, o, fused ? "op" : "pass", g->by);
      snap_put_str(d, o, "tensors", g->names);
    }
  }
  /* the tile pass's tensors, one line each (absent when none) */
  cJSON *arr = NULL;
  for (size_t k = 0; d->ok && k < s->n_patches; k++) {
    if (!arr) arr = rj_arr(&d->ok, d->root, "patches");
    cJSON *o = arr ? rj_push_obj(&d->ok, arr) : NULL;
    if (!o) return;
    snap_put_str(d, o, "tensor", s->patches[k].name);
    snap_put_str(d, o, "patch", s->patches[k].what);
  }
}

/* Appends item compactly; false when out of memory. */
static bool snap_print(const cJSON *item, mp_buf *out) {
  char *t = cJSON_PrintUnformatted(item);
  if (!t) return false;
  mp_buf_puts(out, t);
  cJSON_free(t);
  return true;
}

/* One top-level key a line; arrays one element a line (invariant 5). */
static bool snap_layout(const cJSON *root, mp_buf *out) {
  mp_buf_puts(out, "{\n");
  for (const cJSON *v = root->child; v; v = v->next) {
    cJSON *key = cJSON_CreateString(v->string);
    bool ok = key && (mp_buf_puts(out, "  "), snap_print(key, out));
    cJSON_Delete(key);
    if (!ok) return false;
    mp_buf_puts(out, ": ");
    if (cJSON_IsArray(v) && v->child) {
      mp_buf_puts(out, "[\n");
      for (const cJSON *e = v->child; e; e = e->next) {
        mp_buf_puts(out, "    ");
        if (!snap_print(e, out)) return false;
        mp_buf_puts(out, e->next ? ",\n" : "\n");
      }
      mp_buf_puts(out, "  ]");
    } else if (!snap_print(v, out)) {
      return false;
    }
    mp_buf_puts(out, v->next ? ",\n" : "\n");
  }
  mp_buf_puts(out, "}\n");
  return true;
}

mp_status mp_snapshot_baseline_json(const mp_snapshot *s, mp_buf *out,
                                    mp_error *err) {
  if (!s->info.options) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: a baseline must record the planning options, and "
                        "this snapshot has none",
                        s->info.source);
  }
  snap_doc d = {cJSON_CreateObject(), true};
  if (!d.root) d.ok = false;
  if (d.ok) snap_doc_head(s, &d);
  if (d.ok) snap_doc_body(s, &d);
  if (d.ok) d.ok = snap_layout(d.root, out);
  cJSON_Delete(d.root);
  if (!d.ok) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: baseline: out of memory",
                        s->info.source);
  }
  return mp_buf_status(out, "baseline", err);
}

/* ---- detection ----------------------------------------------------------- */

mp_status mp_snapshot_detect(const char *path, const mp_alloc *a,
                             mp_snap_source *out, mp_error *err) {
  static const char sqlite_magic[16] = "SQLite format 3";
  unsigned char head[16];
  size_t n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    return mp_error_set(err, MP_ERR_IO, "%s: cannot open: %s", path,
                        strerror(errno));
  }
  n = fread(head, 1, sizeof head, f);
  fclose(f);
  size_t k = 0;
  while (k < n && (head[k] == ' ' || head[k] == '\t' || head[k] == '\n' ||
                   head[k] == '\r')) {
    k++;
  }
  if (n == sizeof head && memcmp(head, sqlite_magic, sizeof head) == 0) {
    *out = MP_SNAP_DATABASE;
    return MP_OK;
  }
  if (k == n || head[k] != '{') {
    *out = MP_SNAP_MODEL; /* ONNX, CSV: not JSON at all */
    return MP_OK;
  }
  char *data = NULL;
  size_t len = 0;
  mp_status st = mp_file_read(path, a, &data, &len, err);
  if (st != MP_OK) return st;
  mp_snap_source kind = MP_SNAP_MODEL;
  cJSON *root = cJSON_ParseWithLength(data, len);
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "mplan");
  if (cJSON_IsString(fmt) && strncmp(fmt->valuestring, "baseline/", 9) == 0) {
    kind = MP_SNAP_BASELINE;
  } else if (cJSON_IsString(fmt) &&
             strncmp(fmt->valuestring, "plan/", 5) == 0) {
    kind = MP_SNAP_PLAN;
  }
  cJSON_Delete(root);
  mp_free(a, data);
  *out = kind;
  return MP_OK;
}
