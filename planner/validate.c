/*
 * validate.c -- the independent safety proof of a plan.
 *
 * It shares nothing with the strategies on purpose: a bug in a strategy
 * must not be able to hide itself here.
 *
 * Invariants:
 *   1. Events are processed in time order; at equal times deaths (at
 *      last + 1) come before births, because intervals are inclusive: a
 *      buffer whose last step is t - 1 is gone at t.
 *   2. The ordered set holds exactly the buffers live at the current time,
 *      keyed by offset, and their byte ranges are pairwise disjoint (else we
 *      have already stopped). Hence a new range overlaps some live range iff
 *      it overlaps its predecessor or its successor in offset order.
 *   3. Each buffer is inserted and erased once: O(n log n) in all.
 */
#include "mplan/validate.h"

#include <inttypes.h>
#include <stdlib.h>

#include "mplan/sort.h"
#include "otree.h"

typedef struct validate_event {
  int64_t t;
  uint32_t birth; /* 0 death, 1 birth: deaths sort first */
  uint32_t id;
} validate_event;

/* Sorts events by time, deaths before births, then id: built in id order,
 * they need a stable sort by birth and then one by time. */
static mp_status validate_sort(const mp_alloc *a, validate_event *ev, size_t n,
                               mp_error *err) {
  uint64_t *key = mp_calloc(a, n ? n : 1, sizeof *key);
  if (!key) return mp_error_set(err, MP_ERR_NOMEM, "validate: out of memory");
  for (size_t i = 0; i < n; i++) key[i] = ev[i].birth;
  mp_status st = mp_radix_sort(a, ev, key, n, sizeof *ev, err);
  for (size_t i = 0; st == MP_OK && i < n; i++) {
    key[i] = mp_sort_key_i64(ev[i].t);
  }
  if (st == MP_OK) st = mp_radix_sort(a, ev, key, n, sizeof *ev, err);
  mp_free(a, key);
  return st;
}

static mp_status validate_overlap(const mp_problem *p, const mp_placement *pl,
                                  size_t i, size_t j, mp_violation *first,
                                  mp_error *err) {
  const mp_buffer *a = mp_problem_buffer(p, i), *b = mp_problem_buffer(p, j);
  size_t a0 = pl[i].offset, a1 = a0 + a->padded;
  size_t b0 = pl[j].offset, b1 = b0 + b->padded;
  int64_t t0 = a->first > b->first ? a->first : b->first;
  int64_t t1 = a->last < b->last ? a->last : b->last;
  if (first) *first = (mp_violation){MP_VIOLATION_OVERLAP, i, j};
  return mp_error_set(err, MP_ERR_CHECK,
                      "overlap: '%s' (live %" PRId64 "..%" PRId64
                      ", bytes %zu..%zu) and '%s' "
                      "(live %" PRId64 "..%" PRId64
                      ", bytes %zu..%zu) share bytes %zu..%zu "
                      "while both are live at %" PRId64 "..%" PRId64,
                      a->name, a->first, a->last, a0, a1 - 1, b->name, b->first,
                      b->last, b0, b1 - 1, a0 > b0 ? a0 : b0,
                      (a1 < b1 ? a1 : b1) - 1, t0, t1);
}

static mp_status validate_each(const mp_problem *p, const mp_placement *pl,
                               const size_t *region_bytes, size_t n_regions,
                               mp_violation *first, mp_error *err) {
  for (size_t i = 0; i < mp_problem_count(p); i++) {
    const mp_buffer *b = mp_problem_buffer(p, i);
    size_t end;
    if (pl[i].offset % b->alignment != 0) {
      if (first) *first = (mp_violation){MP_VIOLATION_MISALIGNED, i, i};
      return mp_error_set(err, MP_ERR_CHECK,
                          "misaligned: '%s' at offset %zu is not a multiple "
                          "of its alignment %zu",
                          b->name, pl[i].offset, b->alignment);
    }
    if (b->pinned && pl[i].offset != b->pin) {
      if (first) *first = (mp_violation){MP_VIOLATION_PIN, i, i};
      return mp_error_set(err, MP_ERR_CHECK,
                          "pin ignored: '%s' is pinned at offset %zu but "
                          "placed at %zu",
                          b->name, b->pin, pl[i].offset);
    }
    if (pl[i].region >= n_regions ||
        !mp_size_add(pl[i].offset, b->padded, &end) ||
        end > region_bytes[pl[i].region]) {
      if (first) *first = (mp_violation){MP_VIOLATION_OUTSIDE, i, i};
      if (pl[i].region >= n_regions) {
        return mp_error_set(err, MP_ERR_CHECK,
                            "outside: '%s' is placed in region %u, but the "
                            "plan has %zu",
                            b->name, pl[i].region, n_regions);
      }
      return mp_error_set(err, MP_ERR_CHECK,
                          "outside: '%s' (offset %zu, %zu bytes) ends beyond "
                          "region %u of %zu bytes",
                          b->name, pl[i].offset, b->padded, pl[i].region,
                          region_bytes[pl[i].region]);
    }
  }
  return MP_OK;
}

/* Region-local keys: placements in different regions never collide, so the
 * key orders by (region, offset). Offsets fit in 48 bits in practice; we
 * check rather than assume. */
static bool validate_key(const mp_placement *pl, uint64_t *key) {
  if (pl->offset >= (1ull << 48) || pl->region >= (1u << 15)) return false;
  *key = ((uint64_t)pl->region << 48) | pl->offset;
  return true;
}

static mp_status validate_sweep(const mp_problem *p, const mp_placement *pl,
                                validate_event *ev, size_t n_ev,
                                mp_violation *first, mp_error *err) {
  otree live;
  mp_status st =
      otree_init(&live, mp_problem_alloc(p), mp_problem_count(p), err);
  for (size_t e = 0; st == MP_OK && e < n_ev; e++) {
    uint32_t id = ev[e].id;
    uint64_t key;
    if (!validate_key(&pl[id], &key)) {
      st = mp_error_set(err, MP_ERR_UNSUPPORTED,
                        "'%s': offset %zu is beyond 2^48 bytes",
                        mp_problem_buffer(p, id)->name, pl[id].offset);
      break;
    }
    if (!ev[e].birth) {
      otree_erase(&live, id);
      continue;
    }
    uint32_t prev = otree_prev(&live, key, id);
    uint32_t next = otree_next(&live, key, id);
    size_t end = pl[id].offset + mp_problem_buffer(p, id)->padded;
    if (prev != OTREE_NIL && pl[prev].region == pl[id].region &&
        pl[prev].offset + mp_problem_buffer(p, prev)->padded > pl[id].offset) {
      st = validate_overlap(p, pl, prev, id, first, err);
    } else if (next != OTREE_NIL && pl[next].region == pl[id].region &&
               pl[next].offset < end) {
      st = validate_overlap(p, pl, id, next, first, err);
    } else {
      otree_insert(&live, id, key);
    }
  }
  otree_release(&live);
  return st;
}

mp_status mp_validate(const mp_problem *p, const mp_placement *placements,
                      const size_t *region_bytes, size_t n_regions,
                      mp_violation *first, mp_error *err) {
  size_t n = mp_problem_count(p);
  if (!mp_problem_sealed(p)) {
    return mp_error_set(err, MP_ERR_INTERNAL, "validate: problem not sealed");
  }
  mp_status st =
      validate_each(p, placements, region_bytes, n_regions, first, err);
  if (st != MP_OK || n == 0) return st;
  validate_event *ev = mp_calloc(mp_problem_alloc(p), n, 2 * sizeof *ev);
  if (!ev) return mp_error_set(err, MP_ERR_NOMEM, "validate: out of memory");
  size_t n_ev = 0;
  for (size_t i = 0; i < n; i++) {
    const mp_buffer *b = mp_problem_buffer(p, i);
    ev[n_ev++] = (validate_event){b->first, 1, (uint32_t)i};
    ev[n_ev++] = (validate_event){b->last + 1, 0, (uint32_t)i};
  }
  st = validate_sort(mp_problem_alloc(p), ev, n_ev, err);
  if (st == MP_OK) st = validate_sweep(p, placements, ev, n_ev, first, err);
  mp_free(mp_problem_alloc(p), ev);
  if (st == MP_OK && first) *first = (mp_violation){MP_VIOLATION_NONE, 0, 0};
  return st;
}
