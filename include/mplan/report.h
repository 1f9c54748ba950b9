/*
 * mplan/report.h -- turning a model and its plan into things people read.
 *
 * Renderers append to an mp_buf; they never print or write files
 * themselves. The plan must have been made from the model's problem.
 */
#ifndef MPLAN_REPORT_H
#define MPLAN_REPORT_H

#include "mplan/buf.h"
#include "mplan/model.h"
#include "mplan/plan.h"

typedef struct mp_report_opts {
  size_t top;       /* rows in ranked tables; 0: 10 */
  size_t map_width; /* columns of the memory map; 0: 64 */
  size_t map_rows;  /* most rows in the memory map; 0: 200 */
} mp_report_opts;

/* A few lines: model, arena breakdown, lower bound, overhead, strategy. */
mp_status mp_report_summary(const mp_model *m, const mp_plan *plan, mp_buf *out,
                            mp_error *err);

/* The per-pass table (issue 9: ops, buffers, lower bound and arena before
 * and after every pass, saved_bytes, whether the peak moved), the
 * fusions saving most, and for --order memory the scheduling table (every
 * candidate order's peak and the result). Nothing for a model without
 * passes or memory order. */
mp_status mp_report_passes(const mp_model *m, mp_buf *out, mp_error *err);

/* The plan as a plan/1 JSON document (DESIGN.md). */
mp_status mp_report_plan_json(const mp_model *m, const mp_plan *plan,
                              mp_buf *out, mp_error *err);

/* The peak explanation of seed 001 section 5: the peak interval and its
 * ops, the tensors live there ranked by bytes with why each is alive,
 * alignment waste, and a footer with lower bound, arena and overhead. */
mp_status mp_report_explain(const mp_model *m, const mp_plan *plan,
                            const mp_report_opts *o, mp_buf *out,
                            mp_error *err);

/* An ASCII memory map: a row per step (or per change of the live set for
 * problems whose times are not steps), a glyph per buffer across the
 * activation tier's address range, the live bytes at the end of each row. */
mp_status mp_report_memmap(const mp_model *m, const mp_plan *plan,
                           const mp_report_opts *o, mp_buf *out, mp_error *err);

/* ---- files for people and tools (issue 5) ----------------------------- */

/* One event of a verification run (mplan verify, issue 6). */
typedef struct mp_report_event {
  const char *kind;   /* clobber, early-free, use-after-free, redzone, ... */
  int64_t step;       /* step of detection */
  const char *op;     /* culprit op, or NULL */
  const char *tensor; /* victim tensor, or NULL */
  uint64_t byte_first, byte_last; /* inclusive, plan coordinates */
  const char *detail;
} mp_report_event;

/* An op of a verification run that fell back to a scalar kernel on a
 * target with vector kernels (mplan verify --target rv64, issue 7). */
typedef struct mp_report_scalar_op {
  const char *op, *type, *kernel, *dtype;
} mp_report_scalar_op;

/* One setting not asked for and the activation lower bound the model
 * gets under it (DESIGN: explain says what a different order or tiling
 * saves). The command line plans the model again for each; the strings
 * and the tile record are borrowed. */
typedef struct mp_report_what_if {
  const char *setting;      /* as flags: "--passes all,tile --order memory" */
  const char *passes;       /* the passes it ran: "all", "all,tile", "none" */
  const char *order;        /* the order the model got: "memory", "file" */
  size_t lower_bound_bytes; /* the activation lower bound under it */
  const mp_tile_info *tile; /* the tile pass's record; NULL: no tile */
  size_t arena_bytes;       /* the whole arena (all regions) the asked
                               strategy (or this row's) places */
  /* A placement row (another strategy for the same model and order):
   * the strategy, the activation arena it placed, and the lower bound
   * an exact search proved (0: none). NULL strategy: a bound row. */
  const char *strategy;
  size_t activation_arena_bytes;
  size_t proven_lb_bytes;
} mp_report_what_if;

/* The what-if section of mplan explain: a header with the plan's lower
 * bound, then one line per bound row with its change against it
 * (and what the tile pass chose); then, for the placement rows, the
 * activation arena each strategy placed against the plan's. */
mp_status mp_report_what_if_text(const mp_plan *plan,
                                 const mp_report_what_if *rows, size_t n,
                                 mp_buf *out, mp_error *err);

/* What a report records about the run besides the model and the plan.
 * Every field may be NULL. */
typedef struct mp_report_meta {
  const char *model_sha256; /* 64 hex digits of the model file */
  const char *options;      /* the command line as given, for the record */
  const char *plan_options; /* the canonical planning options
                               (mp_snapshot_options_text): SQLite
                               run.plan_options, what mplan check matches */
  const char *created_utc;  /* "2025-01-31T12:00:00Z"; NULL: now */
  /* A verification run's events (verified: it ran; n_events 0 is clean).
   * The SQLite history stores them in verification_event, the HTML
   * report's verification section lists them. */
  bool verified;
  const mp_report_event *events;
  size_t n_events;
  /* Where the verification ran (verification_target, the HTML report's
   * verification section): arch "host" or "rv64", kernels "scalar" or
   * "rvv", vlen in bits (0 without vector kernels), and the ops that fell
   * back to scalar kernels (verification_scalar_op). */
  const char *target_arch, *target_kernels;
  unsigned target_vlen;
  const mp_report_scalar_op *scalar_ops;
  size_t n_scalar_ops;
  /* The lower bound under other settings (--what-if): the plan JSON's
   * "what_if", the SQLite what_if table, the HTML report's table. */
  const mp_report_what_if *what_if;
  size_t n_what_if;
} mp_report_meta;

/* The plan/1 JSON document with what meta records that it holds (its
 * what-if rows as "what_if"); meta may be NULL. */
mp_status mp_report_plan_json_meta(const mp_model *m, const mp_plan *plan,
                                   const mp_report_meta *meta, mp_buf *out,
                                   mp_error *err);

/* The lifetime dump of seed 001 section 2, one entry per buffer in buffer
 * order: birth_op, last_use_op, size_bytes, plus first_use, last_use,
 * padded_bytes, offset and class. YAML:
 *   tensor_lifetime:
 *     tensor_17:
 *       birth_op: conv_3
 *       ...
 * JSON: {"mplan": "lifetime-dump/1", "model": ..., "tensor_lifetime":
 * {"tensor_17": {"birth_op": "conv_3", ...}, ...}}. Ops unknown to the
 * model (weights, problem files) are null. */
mp_status mp_report_lifetimes_yaml(const mp_model *m, const mp_plan *plan,
                                   mp_buf *out, mp_error *err);
mp_status mp_report_lifetimes_json(const mp_model *m, const mp_plan *plan,
                                   mp_buf *out, mp_error *err);

/* What a C header carries besides the plan. */
typedef struct mp_c_header_opts {
  /* Per graph tensor: the bytes it starts with (weights, bound inputs;
   * its `bytes` long), or NULL; NULL: no tensor carries data. */
  const unsigned char *const *data;
} mp_c_header_opts;

/* The plan as a C11 header for a runtime that brings its own kernels:
 * macros for the arena, each region (index, bytes, alignment, capacity)
 * and each tensor (index, offset in its region, bytes, region), and
 * static inline accessors PREFIX_tensors() (name, kind, dtype, region,
 * buffer, offset, bytes, steps, own steps, rule, shape and, with
 * o->data, initial bytes of every tensor placed), PREFIX_regions() and
 * PREFIX_steps() (op, type, operands as indices into the tensor table
 * and attributes, for graphs). prefix names every identifier (NULL:
 * "plan"); names become identifiers as reports/c_header.c says. o may
 * be NULL. */
mp_status mp_report_c_header(const mp_model *m, const mp_plan *plan,
                             const char *prefix, const mp_c_header_opts *o,
                             mp_buf *out, mp_error *err);

/* The graph in Graphviz DOT, built with cgraph: ops as nodes, tensors as
 * edges labelled with name, shape, dtype and bytes; tensors live at the
 * peak highlighted (red), resident tensors dimmed (grey, dashed), ops of
 * the peak interval filled. Models without a graph draw one node per
 * event time and one edge per buffer from its first to its last time. */
mp_status mp_report_dot(const mp_model *m, const mp_plan *plan, mp_buf *out,
                        mp_error *err);

/* Graphviz's layout and rendering context (gvc). Create ONE per process
 * and share it for every drawing: Graphviz 2.42's text-measuring (pango)
 * plugin keeps, in a static variable, a pointer into the font table of
 * the context that measured text last, so a context created after
 * another one was freed makes it read freed memory (found by ASan).
 * Borrows a for the handle's lifetime. Returns an owned handle (release
 * with mp_graphviz_destroy, at the end of the process). */
typedef struct mp_graphviz mp_graphviz;
mp_status mp_graphviz_create(const mp_alloc *a, mp_graphviz **out,
                             mp_error *err);
void mp_graphviz_destroy(mp_graphviz *gv);

/* The same graph laid out with dot and rendered to SVG with gv, in a
 * child process (Graphviz can crash on layouts it cannot route; then it
 * is drawn again without the fusion clusters). Graphviz allocates with
 * malloc, not with the model's allocator. */
mp_status mp_report_svg(mp_graphviz *gv, const mp_model *m, const mp_plan *plan,
                        mp_buf *out, mp_error *err);

typedef struct mp_html_opts {
  /* Largest graph (ops) whose SVG drawing is embedded; 0: 600. Layout
   * time grows quickly with size, and a big drawing helps nobody. */
  size_t svg_max_ops;
  mp_graphviz *graphviz; /* borrowed; NULL: no drawing is embedded */
  /* borrowed: the graph's mp_report_svg drawing when the caller has made
   * it already (one layout for both); NULL: laid out here */
  const mp_buf *svg;
} mp_html_opts;

/* One self-contained HTML file: the viewer (viewer/, embedded at build
 * time), the plan's data as JSON and the graph's SVG, all inline; it makes
 * no network request. Borrows everything; o and meta may be NULL. */
mp_status mp_report_html(const mp_model *m, const mp_plan *plan,
                         const mp_report_meta *meta, const mp_html_opts *o,
                         mp_buf *out, mp_error *err);

#endif /* MPLAN_REPORT_H */
