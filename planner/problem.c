/*
 * problem.c -- the allocation problem and its live-bytes profile.
 *
 * Invariants:
 *   1. Every buffer has size > 0, a power-of-two alignment and
 *      padded = align_up(size, alignment) without overflow.
 *   2. Names are unique (checked through a hash map on add).
 *   3. After seal: span.first <= every first <= last <= span.last, and
 *      resident/retained buffers have exactly the span as interval.
 *   4. The profile's segments tile [span.first, span.last] with no gaps and
 *      adjacent segments always differ in live bytes.
 */
#include "mplan/problem.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/sort.h"
#include "mplan/strmap.h"

typedef struct problem_group {
  const char *label;
  size_t *idx;
  size_t n;
} problem_group;

struct mp_problem {
  const mp_alloc *alloc;
  problem_group *groups;
  size_t n_groups, cap_groups;
  char *name;
  mp_buffer *bufs;
  size_t n, cap;
  mp_strpool *names;
  mp_strmap *index;
  bool has_span, sealed;
  int64_t span_first, span_last;
};

static const char *const problem_class_names[MP_CLASS_COUNT] = {
    "activation", "resident", "retained"};

const char *mp_class_name(mp_class c) {
  return (unsigned)c < MP_CLASS_COUNT ? problem_class_names[c] : "?";
}

bool mp_class_parse(const char *name, mp_class *out) {
  for (int c = 0; c < MP_CLASS_COUNT; c++) {
    if (strcmp(name, problem_class_names[c]) == 0) {
      *out = (mp_class)c;
      return true;
    }
  }
  return false;
}

mp_status mp_problem_create(const mp_alloc *a, const char *name,
                            mp_problem **out, mp_error *err) {
  mp_problem *p = mp_calloc(a, 1, sizeof *p);
  if (!p) goto nomem;
  p->alloc = a;
  p->name = mp_strdup(a, name ? name : "");
  if (!p->name) goto nomem;
  if (mp_strpool_create(a, &p->names, err) != MP_OK) goto fail;
  if (mp_strmap_create(a, &p->index, err) != MP_OK) goto fail;
  *out = p;
  return MP_OK;
nomem:
  mp_error_set(err, MP_ERR_NOMEM, "problem: out of memory");
fail:
  mp_problem_destroy(p);
  return MP_ERR_NOMEM;
}

void mp_problem_destroy(mp_problem *p) {
  if (!p) return;
  for (size_t g = 0; g < p->n_groups; g++) mp_free(p->alloc, p->groups[g].idx);
  mp_free(p->alloc, p->groups);
  mp_strmap_destroy(p->index);
  mp_strpool_destroy(p->names);
  mp_free(p->alloc, p->bufs);
  mp_free(p->alloc, p->name);
  mp_free(p->alloc, p);
}

static mp_status problem_check_desc(const mp_buffer_desc *d, size_t *align,
                                    size_t *padded, mp_error *err) {
  if (!d->name || !*d->name) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "buffer with an empty name");
  }
  if (mp_utf8_name("buffer name", d->name, err) != MP_OK) {
    return MP_ERR_BAD_INPUT;
  }
  if (d->size == 0) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "buffer '%s': size is zero",
                        d->name);
  }
  *align = d->alignment ? d->alignment : 1;
  if (!mp_is_pow2(*align)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "buffer '%s': alignment %zu is not a power of two",
                        d->name, *align);
  }
  if (!mp_align_up(d->size, *align, padded)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "buffer '%s': size %zu aligned to %zu overflows",
                        d->name, d->size, *align);
  }
  if (*padded > MP_MAX_BUFFER_BYTES) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "buffer '%s': size %zu is beyond the 2^48 bytes an "
                        "arena may span",
                        d->name, d->size);
  }
  if ((unsigned)d->cls >= MP_CLASS_COUNT) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "buffer '%s': unknown class",
                        d->name);
  }
  if (d->first < -MP_TIME_LIMIT || d->last > MP_TIME_LIMIT) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "buffer '%s': interval [%lld, %lld] is out of range",
                        d->name, (long long)d->first, (long long)d->last);
  }
  if (d->first > d->last) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "buffer '%s': first use %lld is after last use %lld",
                        d->name, (long long)d->first, (long long)d->last);
  }
  size_t pin_end;
  if (d->pinned && !mp_size_add(d->pin, *padded, &pin_end)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "buffer '%s': pinned offset %zu overflows", d->name,
                        d->pin);
  }
  if (d->pinned && d->pin % *align != 0) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "buffer '%s': pinned offset %zu is not a multiple of "
                        "its alignment %zu",
                        d->name, d->pin, *align);
  }
  return MP_OK;
}

mp_status mp_problem_add(mp_problem *p, const mp_buffer_desc *d, size_t *index,
                         mp_error *err) {
  size_t align = 1, padded = 0;
  if (p->sealed) {
    return mp_error_set(err, MP_ERR_INTERNAL, "problem: add after seal");
  }
  mp_status st = problem_check_desc(d, &align, &padded, err);
  if (st != MP_OK) return st;
  if (mp_strmap_get(p->index, d->name, NULL)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "buffer '%s' is defined twice",
                        d->name);
  }
  void *bufs = p->bufs;
  st = mp_grow(p->alloc, &bufs, &p->cap, p->n + 1, sizeof *p->bufs, "problem",
               err);
  if (st != MP_OK) return st;
  p->bufs = bufs;
  const char *name = mp_strpool_cstr(p->names, d->name);
  if (!name) return mp_error_set(err, MP_ERR_NOMEM, "problem: out of memory");
  st = mp_strmap_put(p->index, name, (int64_t)p->n, NULL, err);
  if (st != MP_OK) return st;
  mp_buffer *b = &p->bufs[p->n];
  b->name = name;
  b->size = d->size;
  b->alignment = align;
  b->padded = padded;
  b->first = d->first;
  b->last = d->last;
  b->cls = d->cls;
  b->pinned = d->pinned;
  b->pin = d->pin;
  if (index) *index = p->n;
  p->n++;
  return MP_OK;
}

mp_status mp_problem_set_span(mp_problem *p, int64_t first, int64_t last,
                              mp_error *err) {
  if (p->sealed) {
    return mp_error_set(err, MP_ERR_INTERNAL, "problem: span after seal");
  }
  if (first > last) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "run span [%lld, %lld] is empty",
                        (long long)first, (long long)last);
  }
  p->has_span = true;
  p->span_first = first;
  p->span_last = last;
  return MP_OK;
}

/* Invariants 1-3 as a whole-object check, run inside assert(). */
MP_CHECKER static bool problem_check(const mp_problem *p) {
  for (size_t i = 0; i < p->n; i++) {
    const mp_buffer *b = &p->bufs[i];
    size_t want;
    int64_t idx;
    if (!b->size || !mp_is_pow2(b->alignment)) return false;
    if (!mp_align_up(b->size, b->alignment, &want) || want != b->padded) {
      return false;
    }
    if (!mp_strmap_get(p->index, b->name, &idx) || idx != (int64_t)i) {
      return false;
    }
    if (!p->sealed) continue;
    if (b->first < p->span_first || b->last > p->span_last) return false;
    if (b->cls != MP_CLASS_ACTIVATION &&
        (b->first != p->span_first || b->last != p->span_last)) {
      return false;
    }
  }
  return true;
}

mp_status mp_problem_seal(mp_problem *p, mp_error *err) {
  if (p->sealed) return MP_OK;
  if (!p->has_span) {
    p->span_first = p->n ? p->bufs[0].first : 0;
    p->span_last = p->n ? p->bufs[0].last : 0;
    for (size_t i = 1; i < p->n; i++) {
      if (p->bufs[i].first < p->span_first) p->span_first = p->bufs[i].first;
      if (p->bufs[i].last > p->span_last) p->span_last = p->bufs[i].last;
    }
  }
  for (size_t i = 0; i < p->n; i++) {
    mp_buffer *b = &p->bufs[i];
    if (b->cls != MP_CLASS_ACTIVATION) {
      b->first = p->span_first;
      b->last = p->span_last;
    } else if (b->first < p->span_first || b->last > p->span_last) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "buffer '%s': interval [%lld, %lld] lies outside "
                          "the run [%lld, %lld]",
                          b->name, (long long)b->first, (long long)b->last,
                          (long long)p->span_first, (long long)p->span_last);
    }
  }
  p->sealed = true;
  assert(problem_check(p));
  return MP_OK;
}

mp_status mp_problem_add_group(mp_problem *p, const char *label,
                               const size_t *idx, size_t n, mp_error *err) {
  if (p->sealed) {
    return mp_error_set(err, MP_ERR_INTERNAL, "problem: group after seal");
  }
  for (size_t k = 0; k < n; k++) {
    if (idx[k] >= p->n) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "group '%s': buffer %zu does not exist", label,
                          idx[k]);
    }
    for (size_t j = 0; j < k; j++) {
      if (idx[j] == idx[k]) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "group '%s': buffer '%s' is listed twice", label,
                            p->bufs[idx[k]].name);
      }
    }
  }
  void *g = p->groups;
  mp_status st = mp_grow(p->alloc, &g, &p->cap_groups, p->n_groups + 1,
                         sizeof *p->groups, "problem", err);
  if (st != MP_OK) return st;
  p->groups = g;
  size_t *copy = mp_calloc(p->alloc, n ? n : 1, sizeof *copy);
  const char *name = mp_strpool_cstr(p->names, label ? label : "");
  if (!copy || !name) {
    mp_free(p->alloc, copy);
    return mp_error_set(err, MP_ERR_NOMEM, "problem: out of memory");
  }
  for (size_t k = 0; k < n; k++) copy[k] = idx[k];
  p->groups[p->n_groups++] = (problem_group){name, copy, n};
  return MP_OK;
}

size_t mp_problem_group_count(const mp_problem *p) {
  return p->n_groups;
}

const char *mp_problem_group(const mp_problem *p, size_t i, const size_t **idx,
                             size_t *n) {
  *idx = p->groups[i].idx;
  *n = p->groups[i].n;
  return p->groups[i].label;
}

bool mp_problem_sealed(const mp_problem *p) {
  return p->sealed;
}

const char *mp_problem_name(const mp_problem *p) {
  return p->name;
}

size_t mp_problem_count(const mp_problem *p) {
  return p->n;
}

const mp_buffer *mp_problem_buffer(const mp_problem *p, size_t i) {
  return &p->bufs[i];
}

const mp_buffer *mp_problem_buffers(const mp_problem *p) {
  return p->bufs;
}

bool mp_problem_find(const mp_problem *p, const char *name, size_t *index) {
  int64_t v;
  if (!mp_strmap_get(p->index, name, &v)) return false;
  if (index) *index = (size_t)v;
  return true;
}

void mp_problem_span(const mp_problem *p, int64_t *first, int64_t *last) {
  *first = p->span_first;
  *last = p->span_last;
}

const mp_alloc *mp_problem_alloc(const mp_problem *p) {
  return p->alloc;
}

/* ---- profile ------------------------------------------------------------- */

typedef struct problem_event {
  int64_t t;     /* time at which the change takes effect */
  int64_t delta; /* +1 birth, -1 death (count) */
  size_t bytes;
} problem_event;

/* Sorts events by time (ties in any order: the sweep takes a time's
 * events together). */
static mp_status profile_sort(const mp_alloc *a, problem_event *ev, size_t n,
                              mp_error *err) {
  uint64_t *key = mp_calloc(a, n ? n : 1, sizeof *key);
  if (!key) return mp_error_set(err, MP_ERR_NOMEM, "profile: out of memory");
  for (size_t i = 0; i < n; i++) key[i] = mp_sort_key_i64(ev[i].t);
  mp_status st = mp_radix_sort(a, ev, key, n, sizeof *ev, err);
  mp_free(a, key);
  return st;
}

static mp_status profile_push(mp_profile *prof, size_t *cap, int64_t first,
                              int64_t last, size_t live, size_t count,
                              mp_error *err) {
  if (prof->n_segs && prof->segs[prof->n_segs - 1].live == live &&
      prof->segs[prof->n_segs - 1].count == count) {
    prof->segs[prof->n_segs - 1].last = last;
    return MP_OK;
  }
  void *s = prof->segs;
  mp_status st = mp_grow(prof->alloc, &s, cap, prof->n_segs + 1,
                         sizeof *prof->segs, "profile", err);
  if (st != MP_OK) return st;
  prof->segs = s;
  prof->segs[prof->n_segs++] = (mp_segment){first, last, live, count};
  return MP_OK;
}

static mp_status profile_sweep(const mp_problem *p, problem_event *ev,
                               size_t n_ev, mp_profile *prof, mp_error *err) {
  size_t cap = 0, live = 0, count = 0, e = 0;
  int64_t t = p->span_first;
  while (t <= p->span_last) {
    while (e < n_ev && ev[e].t <= t) {
      live = ev[e].delta > 0 ? live + ev[e].bytes : live - ev[e].bytes;
      count = ev[e].delta > 0 ? count + 1 : count - 1;
      e++;
    }
    /* live is constant until the next event (or the end of the span). */
    int64_t end =
        e < n_ev && ev[e].t - 1 < p->span_last ? ev[e].t - 1 : p->span_last;
    mp_status st = profile_push(prof, &cap, t, end, live, count, err);
    if (st != MP_OK) return st;
    if (end == p->span_last) break;
    t = end + 1;
  }
  return MP_OK;
}

static mp_status profile_peaks(mp_profile *prof, mp_error *err) {
  size_t n = 0;
  for (size_t i = 0; i < prof->n_segs; i++) {
    if (prof->segs[i].live > prof->peak) prof->peak = prof->segs[i].live;
  }
  for (size_t i = 0; i < prof->n_segs; i++)
    n += prof->segs[i].live == prof->peak;
  prof->peaks = mp_calloc(prof->alloc, n ? n : 1, sizeof *prof->peaks);
  if (!prof->peaks) {
    return mp_error_set(err, MP_ERR_NOMEM, "profile: out of memory");
  }
  for (size_t i = 0; i < prof->n_segs; i++) {
    if (prof->segs[i].live == prof->peak) prof->peaks[prof->n_peaks++] = i;
  }
  return MP_OK;
}

/* Invariant 4: segments tile the span, neighbours differ. */
MP_CHECKER static bool profile_check(const mp_problem *p,
                                     const mp_profile *prof) {
  if (!prof->n_segs || prof->segs[0].first != p->span_first ||
      prof->segs[prof->n_segs - 1].last != p->span_last) {
    return false;
  }
  for (size_t i = 1; i < prof->n_segs; i++) {
    const mp_segment *a = &prof->segs[i - 1], *b = &prof->segs[i];
    if (a->last + 1 != b->first || a->first > a->last) return false;
    if (a->live == b->live && a->count == b->count) return false;
  }
  return true;
}

mp_status mp_problem_profile(const mp_problem *p, mp_profile *out,
                             mp_error *err) {
  mp_profile prof = {.alloc = p->alloc};
  problem_event *ev = NULL;
  size_t n_ev = 0;
  mp_status st = MP_OK;
  if (!p->sealed) {
    return mp_error_set(err, MP_ERR_INTERNAL, "problem: profile before seal");
  }
  if (p->n) {
    ev = mp_calloc(p->alloc, p->n, 2 * sizeof *ev);
    if (!ev) {
      return mp_error_set(err, MP_ERR_NOMEM, "profile: out of memory");
    }
  }
  for (size_t i = 0; i < p->n; i++) {
    const mp_buffer *b = &p->bufs[i];
    /* Sums of sizes that each fit size_t can still overflow together. */
    if (!mp_size_add(prof.waste, b->padded - b->size, &prof.waste)) goto ovf;
    if (b->cls != MP_CLASS_ACTIVATION) {
      if (!mp_size_add(prof.fixed, b->padded, &prof.fixed)) goto ovf;
      if (b->cls == MP_CLASS_RETAINED) prof.retained += b->padded;
      continue;
    }
    if (!mp_size_add(prof.no_reuse, b->padded, &prof.no_reuse)) goto ovf;
    ev[n_ev++] = (problem_event){b->first, 1, b->padded};
    if (b->last < p->span_last) {
      ev[n_ev++] = (problem_event){b->last + 1, -1, b->padded};
    }
  }
  st = profile_sort(p->alloc, ev, n_ev, err);
  if (st == MP_OK) st = profile_sweep(p, ev, n_ev, &prof, err);
  if (st == MP_OK) st = profile_peaks(&prof, err);
  assert(st != MP_OK || profile_check(p, &prof));
  mp_free(p->alloc, ev);
  if (st != MP_OK) {
    mp_profile_release(&prof);
    return st;
  }
  *out = prof;
  return MP_OK;
ovf:
  mp_free(p->alloc, ev);
  return mp_error_set(err, MP_ERR_BAD_INPUT,
                      "problem '%s': total buffer bytes overflow", p->name);
}

void mp_profile_release(mp_profile *prof) {
  if (!prof) return;
  mp_free(prof->alloc, prof->segs);
  mp_free(prof->alloc, prof->peaks);
  prof->segs = NULL;
  prof->peaks = NULL;
  prof->n_segs = prof->n_peaks = 0;
}

size_t mp_profile_find(const mp_profile *prof, int64_t t) {
  size_t lo = 0, hi = prof->n_segs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (prof->segs[mid].last < t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < prof->n_segs && prof->segs[lo].first <= t) return lo;
  return prof->n_segs;
}
