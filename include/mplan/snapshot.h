/*
 * mplan/snapshot.h -- the memory facts of one plan, in a form that can be
 * saved (a baseline), read back and compared (mplan check, mplan diff).
 *
 * A snapshot holds, per region, the arena, the resident tier and the
 * activation lower bound with its peak intervals; per tensor its class,
 * region, size, padded size and live interval; the op order; and where it
 * came from: the tool version, the model, and the options that produced
 * it. It is made from four sources:
 *   - a model just planned (mp_snapshot_of_plan),
 *   - a baseline file {"mplan": "baseline/1"} (mp_snapshot_load),
 *   - a plan file {"mplan": "plan/1"} (mp_snapshot_load),
 *   - a run of a report database (mp_snapshot_load_run).
 * Lower bounds and peak intervals are always derived from the tensors by
 * one sweep, whatever the source, so that two snapshots compare like with
 * like; a recorded lower bound that disagrees with its tensors is refused.
 *
 * Regions: a plan places every buffer in a region (mp_placement.region).
 * Today there is one, "arena"; every snapshot is per region already.
 */
#ifndef MPLAN_SNAPSHOT_H
#define MPLAN_SNAPSHOT_H

#include "mplan/buf.h"
#include "mplan/model.h"
#include "mplan/plan.h"

/* Byte counts and times in a snapshot are at most this (2^62), so that
 * any difference of two of them fits an int64_t. */
#define MP_SNAP_MAX ((size_t)1 << 62)

typedef struct mp_snap_tensor {
  const char *name; /* owned by the snapshot; unique in it */
  mp_class cls;
  uint32_t region; /* index into the snapshot's regions */
  size_t size;     /* bytes as declared */
  size_t padded;   /* bytes reserved: size rounded up to the alignment */
  int64_t first;   /* inclusive live interval */
  int64_t last;
  bool placed; /* offset known (plans and runs; not baselines) */
  size_t offset;
} mp_snap_tensor;

typedef struct mp_snap_interval {
  int64_t first, last; /* inclusive */
} mp_snap_interval;

typedef struct mp_snap_region {
  const char *name;              /* "arena" */
  size_t arena_bytes;            /* the region's size */
  size_t resident_bytes;         /* end of its resident and retained tiers */
  size_t lower_bound_bytes;      /* max live activation bytes in the region */
  size_t tensors;                /* tensors placed in the region */
  const mp_snap_interval *peaks; /* maximal runs of time at the lower
                                    bound, in time order (none when 0) */
  size_t n_peaks;
} mp_snap_region;

/* Where a snapshot came from. Strings are owned by the snapshot; NULL
 * when the source does not record them. */
typedef struct mp_snap_info {
  const char *kind;   /* "model", "baseline/1", "plan/1" or "run" */
  const char *source; /* the file it was read from, "DB:ID" for runs */
  const char *tool;   /* "mplan 0.1.0" */
  const char *model_path;
  const char *model_name;
  const char *model_format; /* "graph/1", "minimalloc-csv", ... */
  const char *model_sha256;
  const char *strategy;
  const char *strategy_detail;
  const char *order;     /* the order used: "file", "topo" */
  const char *backend;   /* backend name */
  const char *options;   /* canonical options JSON (models, baselines) */
  const char *command;   /* the recorded command line (runs) */
  const char *time_word; /* "step" when times are op steps, else "t" */
  int64_t run_id;        /* runs: the run's id; 0 otherwise */
} mp_snap_info;

/* The planning options that decide a plan; recorded in baselines and
 * compared by mplan check (mp_snapshot_same_options). Every field is
 * borrowed. */
typedef struct mp_run_options {
  const char *strategy; /* NULL: MP_STRATEGY_DEFAULT */
  double budget_ms;     /* 0: none */
  mp_order_kind order;  /* as asked (auto, file, topo) */
  bool inputs_as_activations;
  const mp_dim_binding *dims;
  size_t n_dims;
  const mp_dim_binding *caps; /* NAME<=MAX */
  size_t n_caps;
  const mp_shape_binding *shapes;
  size_t n_shapes;
  const mp_value_binding *values;
  size_t n_values;
  uint32_t passes;      /* --passes: mp_pass_id bits; recorded only when set, so
                           a plan without passes keeps the options it had */
  uint64_t budget_work; /* recorded only when set, as passes */
  uint64_t order_work;  /* --order-work; recorded only when set */
} mp_run_options;

typedef struct mp_snapshot mp_snapshot;

/* The snapshot of a plan just made from m. ro (may be NULL: options not
 * recorded) is copied in canonical form together with m's backend name;
 * the model file is hashed (SHA-256). Borrows m, plan and ro for the
 * call; borrows a for the snapshot's lifetime. Returns an owned snapshot
 * (release with mp_snapshot_destroy). */
mp_status mp_snapshot_of_plan(const mp_model *m, const mp_plan *plan,
                              const mp_run_options *ro, const mp_alloc *a,
                              mp_snapshot **out, mp_error *err);

/* The canonical options text of ro for a model planned on backend (what
 * baselines record and mp_snapshot_same_options compares; the report
 * database keeps it as run.plan_options). Appends to out. */
mp_status mp_snapshot_options_text(const mp_run_options *ro,
                                   const char *backend, mp_buf *out,
                                   mp_error *err);

/* Reads a baseline/1 or plan/1 file. Every field is checked; errors name
 * the file and the element ("b.json: tensors[3].size: expected an integer
 * >= 1"). Other documents are refused naming their format. Returns an
 * owned snapshot (release with mp_snapshot_destroy). */
mp_status mp_snapshot_load(const char *path, const mp_alloc *a,
                           mp_snapshot **out, mp_error *err);

/* Reads run `run` of the report database db_path, opened read-only (the
 * file is never created or changed): run is a run id ("7"), or a
 * negative number counting from the latest run ("-1" the latest, "-2"
 * the one before). Returns an owned snapshot (mp_snapshot_destroy). */
mp_status mp_snapshot_load_run(const char *db_path, const char *run,
                               const mp_alloc *a, mp_snapshot **out,
                               mp_error *err);

/* The latest run of report database db_path (opened read-only) of a
 * model file named model_base (the last component of its path) planned
 * with the canonical options `options` (mp_snapshot_options_text), as a
 * snapshot whose options are those; runs written before schema version 9
 * recorded none and never match. MP_ERR_BAD_INPUT, naming the database,
 * the model and how many runs of it there are, when no run matches. */
mp_status mp_snapshot_load_latest(const char *db_path, const char *model_base,
                                  const char *options, const mp_alloc *a,
                                  mp_snapshot **out, mp_error *err);

void mp_snapshot_destroy(mp_snapshot *s);

/* What a file holds, by content, for commands that take several kinds:
 * an SQLite header, or a JSON object whose "mplan" names a baseline or a
 * plan; anything else (ONNX, CSV, other JSON) is a model. Reads the whole
 * file only when it starts like JSON. */
typedef enum mp_snap_source {
  MP_SNAP_MODEL = 0, /* anything else: a model for mp_model_load */
  MP_SNAP_BASELINE,  /* {"mplan": "baseline/..."} */
  MP_SNAP_PLAN,      /* {"mplan": "plan/..."} */
  MP_SNAP_DATABASE   /* an SQLite file */
} mp_snap_source;

/* Looks at path's content (borrows a for the read). Fails only when the
 * file cannot be read. */
mp_status mp_snapshot_detect(const char *path, const mp_alloc *a,
                             mp_snap_source *out, mp_error *err);

/* Accessors: the pointers they return are owned by the snapshot and
 * valid until it is destroyed. */
const mp_snap_info *mp_snapshot_info(const mp_snapshot *s);
size_t mp_snapshot_region_count(const mp_snapshot *s);
const mp_snap_region *mp_snapshot_region(const mp_snapshot *s, size_t i);
size_t mp_snapshot_tensor_count(const mp_snapshot *s);
const mp_snap_tensor *mp_snapshot_tensor(const mp_snapshot *s, size_t i);
bool mp_snapshot_find(const mp_snapshot *s, const char *name, size_t *index);
/* Plans and runs that record buffer members: true when tensor name has no
 * buffer of its own but lives in tensor *buffer's (a view, an in-place
 * write, a Concat slice). */
bool mp_snapshot_host(const mp_snapshot *s, const char *name, size_t *buffer);
/* Plans and runs made with --passes: the op a fusion removed tensor name
 * into (borrowed from the snapshot), or NULL. */
const char *mp_snapshot_fused_into(const mp_snapshot *s, const char *name);
/* ... the pass that removed tensor name otherwise (eliminate, fold), or
 * NULL. */
const char *mp_snapshot_removed_by(const mp_snapshot *s, const char *name);
/* Plans, baselines and models made with the tile pass: what part of the
 * patches tensor name is ("patch (1, 0) of op 'b2_expand'", "band 1 of
 * 'T'"), or NULL. */
const char *mp_snapshot_patch_of(const mp_snapshot *s, const char *name);

/* Plans and runs made with --what-if: the other settings the plan was
 * compared with (mplan explain's "what else lowers the bound"), in
 * record order. */
typedef struct mp_snap_what_if {
  const char *setting; /* "--passes all,tile --order memory" */
  size_t lower_bound_bytes;
  size_t arena_bytes; /* 0: not recorded */
} mp_snap_what_if;

size_t mp_snapshot_what_if(const mp_snapshot *s, const mp_snap_what_if **out);

/* Appends a what-if row to a snapshot made with mp_snapshot_of_plan (a
 * model planned with its what-if settings, as mplan diff --what-if does);
 * copies setting. */
mp_status mp_snapshot_add_what_if(mp_snapshot *s, const char *setting,
                                  size_t lower_bound_bytes, size_t arena_bytes,
                                  mp_error *err);

/* Op names by step (graphs, plans of graphs, runs); 0 steps otherwise. */
size_t mp_snapshot_step_count(const mp_snapshot *s);
const char *mp_snapshot_step_op(const mp_snapshot *s, size_t step);

/* Sum of every region's arena: the memory the plan needs in all. */
size_t mp_snapshot_total_bytes(const mp_snapshot *s);

/* The snapshot as a baseline/1 document: tool, model, options, per-region
 * totals, the op order and one line per tensor (so that a refreshed
 * baseline reads well in a code review). Appends to out. A snapshot
 * without options (made with ro NULL, or read from a plan or a run) is
 * refused: a baseline that cannot be compared is no baseline. */
mp_status mp_snapshot_baseline_json(const mp_snapshot *s, mp_buf *out,
                                    mp_error *err);

/* MP_OK when the baseline was made with the options of now; otherwise
 * MP_ERR_BAD_INPUT with one line naming the baseline's file and every
 * option that differs, with both values. A baseline without options
 * (or a now without) is refused the same way. Borrows both. */
mp_status mp_snapshot_same_options(const mp_snapshot *baseline,
                                   const mp_snapshot *now, mp_error *err);

#endif /* MPLAN_SNAPSHOT_H */
