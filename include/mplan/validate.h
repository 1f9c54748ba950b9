/*
 * mplan/validate.h -- the independent proof that a plan is safe.
 *
 * The validator shares no code with any strategy. It checks, for every
 * buffer: the offset is a multiple of its alignment, a pinned buffer sits at
 * its pin, and [offset, offset + padded) lies inside its region; and for
 * every pair of buffers whose live intervals intersect, that their byte
 * ranges are disjoint. The pair check is a sweep over time with an ordered
 * set of live byte ranges: O(n log n), never all pairs.
 */
#ifndef MPLAN_VALIDATE_H
#define MPLAN_VALIDATE_H

#include "mplan/plan.h"

typedef enum mp_violation_kind {
  MP_VIOLATION_NONE = 0,
  MP_VIOLATION_OVERLAP,    /* a and b are live together and share bytes */
  MP_VIOLATION_MISALIGNED, /* a's offset is not a multiple of its alignment */
  MP_VIOLATION_OUTSIDE,    /* a does not fit inside its region */
  MP_VIOLATION_PIN         /* a is pinned but placed elsewhere */
} mp_violation_kind;

typedef struct mp_violation {
  mp_violation_kind kind;
  size_t a, b; /* buffer indices (b only for overlaps) */
} mp_violation;

/* Checks placements (one per buffer of the sealed problem p) against region
 * capacities region_bytes[0..n_regions). Returns MP_OK, or MP_ERR_CHECK with
 * a message naming the buffers, their intervals and byte ranges; *first
 * (when not NULL) receives the first violation found. Borrows everything. */
mp_status mp_validate(const mp_problem *p, const mp_placement *placements,
                      const size_t *region_bytes, size_t n_regions,
                      mp_violation *first, mp_error *err);

#endif /* MPLAN_VALIDATE_H */
