/*
 * mplan/diff.h -- what changed between two snapshots of a plan, and why.
 *
 * A diff compares A (old) with B (new):
 *   - per region and in total: arena, resident tier, activation tier,
 *     lower bound and fragmentation, old / new / delta / percent;
 *   - per tensor, matched by name: grew, shrank, appeared, vanished,
 *     moved (class or region changed) or only its lifetime changed;
 *   - per region: whether the peak moved (its intervals, or the ops
 *     there);
 *   - the op order: ops at other steps, added, removed;
 *   - why the arena changed, as an exact sum per region:
 *       delta arena = resident + sizes + order + fragmentation
 *     where resident is the change of the resident tier; sizes is
 *     LB(A's lifetimes, B's sizes) - LB(A) and order is LB(B) - LB(A's
 *     lifetimes, B's sizes), LB being the activation lower bound (tensors
 *     only in B keep their own lifetimes, tensors only in A are dropped);
 *     and fragmentation is the change of (activations - lower bound), the
 *     bytes the placement adds to the lower bound. Regions are B's: a
 *     tensor that moved to another region counts under sizes in both.
 */
#ifndef MPLAN_DIFF_H
#define MPLAN_DIFF_H

#include "mplan/snapshot.h"

typedef enum mp_change {
  MP_CHANGE_GREW = 0, /* size (or, at equal size, padded size) grew */
  MP_CHANGE_SHRANK,
  MP_CHANGE_APPEARED, /* only in B */
  MP_CHANGE_VANISHED, /* only in A */
  MP_CHANGE_MOVED,    /* same size, other class or region */
  MP_CHANGE_LIFETIME, /* same size, class and region; other interval */
  MP_CHANGE_JOINED,   /* a buffer in A; in B it lives in another's */
  MP_CHANGE_LEFT,     /* in another's buffer in A; a buffer of its own in B */
  MP_CHANGE_FUSED,    /* a buffer in A; B's fusion into an op removed it */
  MP_CHANGE_UNFUSED,  /* removed by A's fusion; a buffer in B */
  MP_CHANGE_REMOVED,  /* a buffer in A; a pass of B removed it (eliminate) */
  MP_CHANGE_RESTORED, /* removed by a pass of A; a buffer in B */
  MP_CHANGE_COUNT
} mp_change;

/* "grew", "shrank", "appeared", "vanished", "moved", "lifetime",
 * "joined", "left", "fused", "unfused", "removed", "restored". */
const char *mp_change_name(mp_change c);

typedef struct mp_diff_tensor {
  const char *name; /* borrowed from A or B */
  mp_change change;
  const mp_snap_tensor *a; /* NULL when only in B */
  const mp_snap_tensor *b; /* NULL when only in A */
  int64_t delta;           /* padded bytes: B - A (absent = 0) */
  /* joined: its buffer in B; left: in A; fused: the op that absorbed it
   * in B; unfused: in A; else NULL */
  const char *host;
  /* appeared: what part of the tile pass's patches it is in B; vanished:
   * in A ("patch (1, 0) of op 'b2_expand'"); else NULL */
  const char *patch;
} mp_diff_tensor;

typedef struct mp_diff_region {
  const char *name;
  const mp_snap_region *a; /* NULL when the region is only in B */
  const mp_snap_region *b; /* NULL when only in A */
  /* [0] old, [1] new; 0 on the side where the region is absent. */
  size_t arena[2], resident[2], lower_bound[2];
  int64_t fragmentation[2]; /* arena - resident - lower bound */
  int64_t delta;            /* arena[1] - arena[0] */
  /* delta = by_resident + by_sizes + by_order + by_fragmentation. */
  int64_t by_resident, by_sizes, by_order, by_fragmentation;
  bool peak_moved; /* peak intervals or the ops in them differ */
} mp_diff_region;

typedef struct mp_diff_summary {
  size_t total[2]; /* sums of the regions' arenas */
  int64_t delta;
  int64_t by_resident, by_sizes, by_order, by_fragmentation; /* sums */
  size_t count[MP_CHANGE_COUNT]; /* tensors per kind of change */
  size_t steps[2];               /* op steps of A and B (0: no ops) */
  size_t ops_moved;              /* ops in both, at another step */
  size_t ops_added, ops_removed;
  bool order_changed;
  bool peak_moved; /* in some region */
  bool same_model; /* both record the same model SHA-256 */
} mp_diff_summary;

typedef struct mp_diff mp_diff;

/* Compares a (old) with b (new). Borrows both: they must outlive the
 * diff. Borrows al for the diff's lifetime. Returns an owned diff
 * (release with mp_diff_destroy). */
mp_status mp_diff_create(const mp_snapshot *a, const mp_snapshot *b,
                         const mp_alloc *al, mp_diff **out, mp_error *err);
void mp_diff_destroy(mp_diff *d);

/* Accessors: the pointers they return are owned by the diff (or by its
 * snapshots) and valid until it is destroyed. */
const mp_snapshot *mp_diff_old(const mp_diff *d);
const mp_snapshot *mp_diff_new(const mp_diff *d);
const mp_diff_summary *mp_diff_summary_of(const mp_diff *d);
size_t mp_diff_region_count(const mp_diff *d);
const mp_diff_region *mp_diff_region_at(const mp_diff *d, size_t i);

/* Tensors that changed, grouped by kind of change (mp_change order), the
 * largest |delta| first within a group, then by name. */
size_t mp_diff_tensor_count(const mp_diff *d);
const mp_diff_tensor *mp_diff_tensor_at(const mp_diff *d, size_t i);

typedef struct mp_diff_opts {
  size_t top; /* tensors listed per kind of change; 0: 10 */
} mp_diff_opts;

/* The diff for a terminal: header, the per-region table and the total,
 * why, the peak, the order and the changed tensors. o may be NULL. */
mp_status mp_diff_text(const mp_diff *d, const mp_diff_opts *o, mp_buf *out,
                       mp_error *err);

/* The diff as a {"mplan": "diff/1"} JSON document, every changed tensor
 * listed. */
mp_status mp_diff_json(const mp_diff *d, mp_buf *out, mp_error *err);

/* The diff as Markdown: a table of regions and total, why, the peak and
 * the order; the changed tensors in a collapsed <details> block. */
mp_status mp_diff_markdown(const mp_diff *d, const mp_diff_opts *o, mp_buf *out,
                           mp_error *err);

#endif /* MPLAN_DIFF_H */
