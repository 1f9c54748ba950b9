/*
 * mplan/passes.h -- graph passes and the per-pass table (seed 000
 * sections 3-5, seed 001 section 4, seed 002 section 2.3).
 *
 * The passes rewrite the graph only within docs/ir-conventions.md:
 *   fold       ops whose inputs are all constant, and ops whose outputs
 *              shape inference knows the value of (shape math), become
 *              weights; constants left unread are dropped
 *   eliminate  Identity, inference Dropout, Cast to the same type,
 *              Transpose pairs that cancel, view chains (Reshape, Flatten,
 *              Squeeze, Unsqueeze) collapsed or removed, x*1, x/1, x+0,
 *              x-0, and ops nobody reads
 *   tile       the first stage of a CNN (Conv, pooling, elementwise ops
 *              from the graph input to a tensor the rest reads alone)
 *              runs patch by patch of its output (bands of rows, split
 *              into columns too), joined by Concats, each patch with the
 *              halo its windows need: bit-exact, more MACs; only when
 *              named (not in "all"); kept only if the lower bound does
 *              not rise, also after every other pass
 *   accumulate a Sum of two or more inputs becomes a chain of Adds in
 *              input order (bit-exact), each runnable as soon as its
 *              input exists; kept only if the lower bound does not rise
 *   attention  MatMul, [Mul|Div by one value], [Add of a mask], Softmax
 *              over the keys and MatMul become one op computing a query
 *              row at a time (mplan.attention): the scores and
 *              probabilities no longer exist (bit-exact)
 *   fuse       vertical fusion: Conv, ConvTranspose, Gemm or MatMul with
 *              the chain of elementwise ops after it (mplan.epilogue)
 *   hfuse      horizontal fusion: sibling MatMul/Gemm ops reading the
 *              same input (mplan.horizontal)
 *   absorb     DequantizeLinear or a widening Cast absorbed into the
 *              MatMul/Conv that reads it, a nearest Resize by whole
 *              factors into the Add/Sub/Mul/Div that reads it
 *              (mplan.prologue)
 *   views      Reshape/Flatten/Squeeze/Unsqueeze/Identity outputs share
 *              their input's buffer
 *   concat     the inputs of a Concat along its outermost non-unit axis
 *              are placed as slices of its output's buffer, so that their
 *              producers write the concatenation and the copy vanishes
 *   inplace    elementwise ops and depthwise Conv write into an input's
 *              buffer when nothing reads it later
 * Passes run in that fixed order whatever the order of the list; after
 * every pass the order and the lifetimes are computed again (seed 001
 * section 4: never reuse a stale analysis).
 */
#ifndef MPLAN_PASSES_H
#define MPLAN_PASSES_H

#include "mplan/alias.h"
#include "mplan/problem.h"
#include "mplan/schedule.h"

typedef enum mp_pass_id {
  MP_PASS_FOLD = 0,
  MP_PASS_ELIMINATE,
  MP_PASS_TILE,
  MP_PASS_ACCUMULATE,
  MP_PASS_ATTENTION,
  MP_PASS_FUSE,
  MP_PASS_HFUSE,
  MP_PASS_ABSORB,
  MP_PASS_VIEWS,
  MP_PASS_CONCAT,
  MP_PASS_INPLACE,
  MP_PASS_COUNT
} mp_pass_id;

/* "all": every pass but tile, which recomputes halos (it trades compute
 * for memory and runs only when named). */
#define MP_PASSES_ALL (((1u << MP_PASS_COUNT) - 1u) & ~(1u << MP_PASS_TILE))

const char *mp_pass_name(mp_pass_id p);
/* One line saying what the pass does (help texts). */
const char *mp_pass_summary(mp_pass_id p);

/* Parses "all", "none" or a comma-separated list of pass names into a
 * mask (bit p = pass p); "all" in a list stands for its passes (so
 * "all,tile" is every pass). Unknown or repeated names are errors that
 * list the known ones. */
mp_status mp_passes_parse(const char *text, uint32_t *mask, mp_error *err);

typedef enum mp_fusion_kind {
  MP_FUSION_VERTICAL = 0, /* head + elementwise chain (mplan.epilogue) */
  MP_FUSION_HORIZONTAL,   /* siblings sharing an input (mplan.horizontal) */
  MP_FUSION_PROLOGUE      /* dequantize, widening cast or nearest Resize
                             (mplan.prologue) */
} mp_fusion_kind;

const char *mp_fusion_kind_name(mp_fusion_kind k);

/* One fusion a pass made. Strings are owned by the report. */
typedef struct mp_fusion {
  mp_pass_id pass;
  mp_fusion_kind kind;
  const char *op;            /* the fused op (it keeps its head's name) */
  const char *head_type;     /* "Conv" */
  const char *absorbed;      /* absorbed op types, "Add,Relu" */
  const char *absorbed_ops;  /* their names, comma separated */
  const char *intermediates; /* tensors that no longer exist, comma sep. */
  uint32_t steps;            /* ops absorbed = steps eliminated */
  size_t intermediate_bytes; /* size(intermediate) (the first one) */
  size_t saved_bytes;        /* 2 x size(intermediate) x steps (seed 000
                                section 4): memory traffic saved */
  bool at_peak;              /* an eliminated tensor was live at a peak step
                                before the pass: this fusion can move the peak */
  uint32_t registers;        /* estimated vector registers the group needs */
  int32_t spills;            /* estimated registers spilled; -1: no VLEN */
  bool capped;               /* the register cap ended the group early */
} mp_fusion;

/* One row of the per-pass table. */
typedef struct mp_pass_row {
  mp_pass_id pass;
  size_t ops_before, ops_after;
  size_t tensors_before, tensors_after;
  size_t buffers_before, buffers_after;
  size_t lb_before, lb_after;       /* activation lower bound */
  size_t arena_before, arena_after; /* whole arena; 0 when not measured */
  size_t saved_bytes;               /* sum over the pass's fusions */
  size_t rewrites;                  /* what the pass changed (count) */
  double ms;                        /* the pass and its re-analysis */
  const char *detail;               /* what it did, one line */
  /* The tensors the pass removed from the graph, comma separated ("" for
   * none); the intermediates of its fusions are in its mp_fusion rows. */
  const char *removed;
} mp_pass_row;

/* The per-pass table and the fusions, owned by whoever ran the passes
 * (the model: mp_model_pass_report borrows it). Rows, fusions and their
 * strings are borrowed from the report and live as long as it does. */
typedef struct mp_pass_report mp_pass_report;

void mp_pass_report_destroy(mp_pass_report *r); /* NULL: no-op */
size_t mp_pass_report_rows(const mp_pass_report *r);
const mp_pass_row *mp_pass_report_row(const mp_pass_report *r, size_t i);
size_t mp_pass_report_fusions(const mp_pass_report *r);
const mp_fusion *mp_pass_report_fusion(const mp_pass_report *r, size_t i);
/* The VLEN the register estimates assumed (0: no vector target). */
uint32_t mp_pass_report_vlen(const mp_pass_report *r);
/* The mask of passes that ran. */
uint32_t mp_pass_report_mask(const mp_pass_report *r);
/* The constant subgraphs the fold pass folded without knowing their
 * values (analyzer/passes/fold.c invariant 4), as one graph: their
 * constant inputs are its weights, every tensor they make is an output
 * named as in the model. Compile runs it to get those weights' bytes
 * (mplan/compile.h). NULL when there are none (or r is NULL). */
const mp_graph *mp_pass_report_constants(const mp_pass_report *r);

/* ---- what the tile pass chose (docs/tile.md) ---- */

typedef enum mp_tile_outcome {
  MP_TILE_NO_STAGE, /* no stage with a cut: nothing to try */
  MP_TILE_NO_GAIN,  /* no candidate lowers the bound in file order within
                       the MAC cap (candidates > 0) */
  MP_TILE_DROPPED,  /* patches chosen, then dropped: the bound after every
                       pass is not lower with them (manager.c invariant
                       11), or it rose right after the pass (invariant 6) */
  MP_TILE_KEPT      /* the patches are in the plan */
} mp_tile_outcome;

const char *mp_tile_outcome_name(mp_tile_outcome o); /* "kept", ... */

typedef enum mp_tile_role {
  MP_TILE_COPY, /* computes one patch of an op of the stage (origin) */
  MP_TILE_CROP, /* a Slice: the part of tensor origin a patch reads */
  MP_TILE_JOIN  /* a Concat of patches: a band's columns (column -1) or
                   the bands into the cut tensor (band and column -1) */
} mp_tile_role;

const char *mp_tile_role_name(mp_tile_role r); /* "copy", "crop", "join" */

/* One op the tile pass added. Later passes may fuse it into another op
 * (its name then no longer names an op of the final graph). */
typedef struct mp_tile_op {
  const char *op;
  mp_tile_role role;
  const char *origin;   /* copy: the stage op; crop: the tensor sliced;
                           join: the cut tensor or an export */
  int32_t band, column; /* 0-based; -1: every one */
} mp_tile_op;

/* Tensors besides the cut one a patching may join (tile.c TL_MAX_X) */
#define MP_TILE_MAX_EXPORTS 2

typedef struct mp_tile_info {
  mp_tile_outcome outcome;
  uint32_t cuts;       /* cuts the stage offers */
  size_t candidates;   /* patchings built and measured */
  bool budget_reached; /* the search stopped at its op budget */
  /* The chosen patching (outcome KEPT or DROPPED; else NULL and 0): */
  const char *cut;    /* the tensor the patches make */
  const char *cut_op; /* the op that wrote it */
  /* The other tensors of the stage that later ops read, joined from the
   * patches like cut (exports, tile.c), in the order the pass found them */
  const char *exports[MP_TILE_MAX_EXPORTS];
  uint32_t n_exports;
  uint32_t stage_ops;         /* ops up to and including cut_op */
  uint32_t bands, columns;    /* patches: bands x columns */
  int64_t height, width;      /* the cut tensor's H and W */
  double graph_macs;          /* Conv MACs of the whole graph before */
  double extra_macs;          /* recomputed in the halos */
  size_t lb_before, lb_after; /* lower bound in file order, right after
                                 the pass (lb_before also when no gain) */
  size_t lb_with, lb_without; /* after every pass with and without the
                                 patches (invariant 11); 0: not judged */
  /* The best patching of each of up to 12 cuts, ranked by lb_after
   * (0-based), is judged after every pass in file order (manager.c
   * invariant 13): */
  uint32_t picks;  /* patchings ranked (below 2: none compared) */
  uint32_t picked; /* the one of the lowest bound after every pass in file
                      order (0: the first) */
  uint32_t pick;   /* the one built: the first, or picked when its bound
                      after every pass in the order planned is lower */
  size_t lb_pick, lb_first; /* picked's and the first's bounds after every
                               pass in file order (0: not judged) */
  const mp_tile_op *ops;    /* KEPT: the ops the pass added */
  size_t n_ops;
} mp_tile_info;

/* NULL when the tile pass did not run. Borrowed from r. */
const mp_tile_info *mp_pass_report_tile(const mp_pass_report *r);

/* Measures the arena of a plan for problem p (the command line solves it
 * with the chosen strategy); the analyzer itself knows nothing of
 * offsets. Borrows p. */
typedef mp_status (*mp_arena_fn)(void *ud, const mp_problem *p, size_t *arena,
                                 mp_error *err);

typedef struct mp_pass_opts {
  uint32_t mask;
  /* The order to measure every row with and how bytes are counted; the
   * alias field is ignored (the passes supply it). */
  mp_schedule_opts schedule;
  uint32_t vlen;     /* backend VLEN in bits for the register cap; 0: none */
  mp_arena_fn arena; /* NULL: arena columns stay 0 */
  void *arena_ud;
} mp_pass_opts;

/* Runs the passes of o->mask on *g (linked, resolved). On success *g is
 * the rewritten graph (the old one destroyed: the call takes it), *alias
 * the final graph's buffer map, *order and *info its schedule under
 * o->schedule.order, *report the table (owned: release with
 * mp_alias_release, mp_free(mp_graph_alloc(*g), *order) and
 * mp_pass_report_destroy). On failure *g is unchanged and nothing is
 * returned. */
mp_status mp_passes_run(mp_graph **g, const mp_pass_opts *o, mp_alias *alias,
                        uint32_t **order, mp_schedule_info *info,
                        mp_pass_report **report, mp_error *err);

#endif /* MPLAN_PASSES_H */
