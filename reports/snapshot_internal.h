/*
 * snapshot_internal.h -- building a snapshot, shared by its readers
 * (snapshot.c, snapshot_read.c, snapshot_db.c). Private to reports/.
 *
 * Life cycle: snap_create -> snap_region / snap_tensor / snap_step ...
 * -> snap_finish (derives lower bounds and peaks, checks recorded
 * figures against the tensors) -> the public accessors.
 */
#ifndef MPLAN_SNAPSHOT_INTERNAL_H
#define MPLAN_SNAPSHOT_INTERNAL_H

#include "mplan/snapshot.h"
#include "mplan/strmap.h"

typedef struct snap_region_rec {
  mp_snap_region r;
  bool has_arena;    /* arena_bytes was recorded by the source */
  bool has_resident; /* resident_bytes was recorded */
  bool has_lb;       /* lower_bound_bytes was recorded: checked */
} snap_region_rec;

/* What snap_gone recorded: the tensors (comma separated) the fusion into
 * op by (fused) or the pass by removed. */
typedef struct snap_gone_rec {
  const char *by, *names;
  bool fused;
} snap_gone_rec;

/* What snap_patch recorded: tensor name is a part the tile pass computes
 * (what says which: "patch (1, 0) of op 'b2_expand'"). */
typedef struct snap_patch_rec {
  const char *name, *what;
} snap_patch_rec;

/* What snap_member recorded: tensor name lives in tensor host's buffer. */
typedef struct snap_member_rec {
  const char *name;
  size_t host;
} snap_member_rec;

struct mp_snapshot {
  const mp_alloc *alloc;
  mp_strpool *pool;       /* every string of the snapshot */
  mp_strmap *by_name;     /* tensor name -> index */
  mp_strmap *hosts;       /* a tensor sharing another's buffer -> that index */
  mp_strmap *fused;       /* a tensor a fusion removed -> index in gone_by */
  mp_strmap *removed;     /* a tensor a pass removed -> index in gone_by */
  snap_gone_rec *gone_by; /* fused ops and pass names, in record order */
  size_t n_gone_by, cap_gone_by;
  mp_strmap *patched;      /* a tile pass's tensor -> index in patches */
  snap_patch_rec *patches; /* in record order */
  size_t n_patches, cap_patches;
  snap_member_rec *members; /* hosts' entries, in record order */
  size_t n_members, cap_members;
  mp_snap_what_if *what_if; /* in record order */
  size_t n_what_if, cap_what_if;
  mp_snap_info info;
  mp_snap_tensor *tensors;
  size_t n_tensors, cap_tensors;
  snap_region_rec *regions;
  size_t n_regions, cap_regions;
  mp_snap_interval *peaks; /* every region's peaks, region by region */
  const char **steps;
  size_t n_steps, cap_steps;
  bool finished;
};

/* An empty snapshot of the given kind read from source (both copied). */
mp_status snap_create(const mp_alloc *a, const char *kind, const char *source,
                      mp_snapshot **out, mp_error *err);

/* A pooled copy of text (NULL stays NULL); sets *ok = false when out of
 * memory. */
const char *snap_str(mp_snapshot *s, const char *text, bool *ok);

/* Adds a what-if row (setting copied). */
mp_status snap_what_if(mp_snapshot *s, const char *setting, size_t lb,
                       size_t arena, mp_error *err);

/* The index of region name, added when new. */
mp_status snap_region(mp_snapshot *s, const char *name, uint32_t *index,
                      mp_error *err);

/* Adds a tensor (name copied). where names it in errors ("tensors[3]").
 * Rejects a duplicate name, size 0, padded < size, first > last and
 * values above MP_SNAP_MAX. */
mp_status snap_tensor(mp_snapshot *s, const mp_snap_tensor *t,
                      const char *where, mp_error *err);

/* Records that tensor member lives in the buffer of tensor buffer (an
 * index of a tensor already added): a view, an in-place write or a
 * Concat slice. A member listed twice keeps its first buffer. */
mp_status snap_member(mp_snapshot *s, const char *member, size_t buffer,
                      mp_error *err);

/* Records that the fusion into op (fused true) or the pass named by
 * (false) removed the tensors named in names (comma separated, as
 * mp_fusion and mp_pass_row have them). A tensor listed twice keeps its
 * first. */
mp_status snap_gone(mp_snapshot *s, const char *names, const char *by,
                    bool fused, mp_error *err);

/* Records that tensor name is a part of the tile pass's patches (both
 * copied; a tensor recorded twice keeps its first); what is as
 * report_patch_what writes it. */
mp_status snap_patch(mp_snapshot *s, const char *name, const char *what,
                     mp_error *err);

/* Appends the op of the next step (copied). */
mp_status snap_step(mp_snapshot *s, const char *op, mp_error *err);

/* Derives every region's lower bound and peak intervals by a sweep, and
 * arena/resident bytes from placed tensors where not recorded; refuses
 * recorded figures that contradict the tensors (naming s's source). */
mp_status snap_finish(mp_snapshot *s, mp_error *err);

/* The lower bound of activation tensors t[0..n) (padded sizes over their
 * intervals) and, when peaks is not NULL, its maximal peak intervals
 * (*n_peaks of them; room for n). a is for scratch memory. */
mp_status snap_sweep(const mp_alloc *a, const mp_snap_tensor *t, size_t n,
                     size_t *lb, mp_snap_interval *peaks, size_t *n_peaks,
                     mp_error *err);

#endif /* MPLAN_SNAPSHOT_INTERNAL_H */
