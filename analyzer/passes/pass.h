/*
 * pass.h -- what every pass sees and the helpers they share. Private to
 * analyzer/passes/.
 *
 * A graph pass (fold, eliminate, fuse, hfuse, absorb, accumulate) reads c->g
 * and records edits in c->rw; the manager commits them as a new graph. An alias
 * pass (views, concat, inplace) leaves the graph alone and extends the buffer
 * map through c->parent, c->rel and c->rule (parent links into the same buffer,
 * at a byte offset from the parent; mplan/alias.h). Both report what they did
 * through the tally, the note and fusion records.
 */
#ifndef MPLAN_PASSES_PASS_H
#define MPLAN_PASSES_PASS_H

#include "mplan/buf.h"
#include "mplan/passes.h"
#include "rewrite.h"

#define PASS_TALLY_MAX 24

typedef struct pass_ctx {
  mp_pass_id id;
  const mp_graph *g;           /* linked, resolved */
  const mp_alias *alias;       /* g's buffer map before the pass */
  const bool *at_peak;         /* per tensor: its buffer is live at a peak step
                                  of g's order before the pass */
  uint32_t vlen;               /* backend VLEN in bits, 0: none */
  rw_graph *rw;                /* graph passes */
  const mp_backend *backend;   /* alignments (never NULL: the default) */
  bool inputs_act;             /* graph inputs count as activations */
  const uint32_t *order;       /* g's order before the pass (measured) */
  const uint32_t *made;        /* accumulate: per tensor, 0 or 1 + the step
                                  producing it, from a measured rewrite of g
                                  (manager.c invariant 8); NULL: from order */
  uint32_t mask;               /* the passes asked for (1 << mp_pass_id) */
  bool before_absorb;          /* fuse: absorb is asked for and has not run
                                  yet (fuse.c condition 8) */
  const bool *concat_keep_out; /* concat: per tensor, an input not to place
                                  as a slice (manager.c invariant 9); NULL:
                                  none */
  const bool *inplace_apart;   /* inplace: per tensor, an output not to
                                  write over a larger input (manager.c
                                  invariant 9); NULL: none */
  uint32_t *parent;            /* alias passes: per tensor */
  int64_t *rel;                /* alias passes: first byte minus the parent's */
  uint8_t *rule;               /* alias passes: per tensor, mp_alias_rule */
  mp_pass_report *report;
  /* What the pass did, for the row's detail. */
  const char *tally_label[PASS_TALLY_MAX];
  size_t tally_count[PASS_TALLY_MAX];
  size_t n_tally;
  size_t rewrites;
  size_t reordered;    /* accumulate: integer chains not in input order */
  size_t folded_large; /* fold: ops the constants graph got (invariant 4) */
  size_t saved_bytes;
  mp_buf note;
} pass_ctx;

typedef mp_status (*pass_fn)(pass_ctx *c, mp_error *err);

mp_status pass_fold(pass_ctx *c, mp_error *err);
mp_status pass_eliminate(pass_ctx *c, mp_error *err);
mp_status pass_tile(pass_ctx *c, mp_error *err);
mp_status pass_fuse(pass_ctx *c, mp_error *err);
mp_status pass_hfuse(pass_ctx *c, mp_error *err);
mp_status pass_absorb(pass_ctx *c, mp_error *err);
mp_status pass_accumulate(pass_ctx *c, mp_error *err);
mp_status pass_attention(pass_ctx *c, mp_error *err);
mp_status pass_views(pass_ctx *c, mp_error *err);
mp_status pass_concat(pass_ctx *c, mp_error *err);
mp_status pass_inplace(pass_ctx *c, mp_error *err);

/* Where the fold pass keeps the graph of mp_pass_report_constants (NULL
 * until it makes one; the report owns it). */
mp_graph **pass_constants(pass_ctx *c);

/* The report's tile record (mplan/passes.h), marked as run; the tile
 * pass fills it. */
mp_tile_info *pass_tile_info(pass_ctx *c);
/* Which of the tile pass's ranked patchings to build (manager.c
 * invariant 13; 0: the best by its own bound). */
uint32_t pass_tile_pick(const pass_ctx *c);

/* The tile pass's search, kept across the pass manager's runs of one
 * graph (manager.c invariant 13): the pass sees the same graph in each
 * (fold and eliminate before it read no order), and the runs differ only
 * in the patching they build. */
#define PASS_TILE_PICKS 12
typedef struct pass_tile_rank { /* a patching: the bound in file order */
  size_t lb;                    /* right after the pass, the recomputed */
  double extra, prefix;         /* Conv MACs and those of the stage */
  uint32_t cut, nh, nw;         /* (nh 0: none) */
} pass_tile_rank;
typedef struct pass_tile_memo {
  bool set;
  size_t ops, tensors, cuts; /* the graph searched (a check) */
  size_t base, tried;        /* its bound; patchings measured */
  bool cut_short;            /* the search stopped at its budget */
  uint32_t n;                /* ranked: the best of each of n cuts */
  pass_tile_rank top[PASS_TILE_PICKS];
} pass_tile_memo;
/* NULL when the run keeps none. */
pass_tile_memo *pass_tile_memo_of(pass_ctx *c);
/* Appends one op the tile pass added (copies the strings). */
mp_status pass_tile_op(pass_ctx *c, const mp_tile_op *op, mp_error *err);
/* s copied into the report's strings (NULL stays NULL; NULL and err set
 * when out of memory). */
const char *pass_str(pass_ctx *c, const char *s, mp_error *err);

/* Counts one rewrite under label (a static string) for the detail. */
void pass_tally(pass_ctx *c, const char *label);

/* Records a fusion in the report (copies the strings) and adds its
 * saved_bytes to the pass's. */
mp_status pass_fusion(pass_ctx *c, const mp_fusion *f, mp_error *err);

/* ---- graph queries ------------------------------------------------------- */

/* The only op reading t, when exactly one op reads it; -1 otherwise. */
int32_t pass_sole_reader(const mp_graph *g, int32_t t);

/* How many of op's inputs are tensor t. */
uint32_t pass_reads(const mp_op *op, int32_t t);

/* The same dims (by value), whatever the dtypes. */
bool pass_same_dims(const mp_graph *g, int32_t a, int32_t b);

/* Same dtype and the same dims (dims by value). */
bool pass_same_type(const mp_graph *g, int32_t a, int32_t b);

/* Same layout tag (both unspecified counts as the same). */
bool pass_same_layout(const mp_graph *g, int32_t a, int32_t b);

/* The integer attribute name of op, or def when absent. */
int64_t pass_attr_int(const mp_op *op, const char *name, int64_t def);

/* Every element of a constant known to equal v (false when the values
 * are not known). */
bool pass_all_equal(const mp_tensor *t, double v);

/* ---- a Resize read replicated -------------------------------------------- */

/* An Add, Sub, Mul or Div of two inputs and one output, no mplan.* attribute:
 * the ops a Resize prologue may go on. */
bool pass_upsample_binary(const mp_op *op);

/* A pool the runtime computes one (batch, channel) plane at a time under a
 * DequantizeLinear prologue (absorb.c rule 9): MaxPool, AveragePool,
 * GlobalMaxPool or GlobalAveragePool. */
bool pass_pool_head(const mp_op *op);

/* A Resize that absorb.c rule 9 may give a DequantizeLinear prologue (and
 * fuse.c condition 7 its QuantizeLinear): opset 11's inputs (x, roi,
 * scales[, sizes]), nearest or linear without antialias, no crop, no
 * axes, no keep_aspect_ratio_policy but stretch (its one scale would
 * apply to batch and channels too), a 4-D f32 output whose batch and channels
 * are x's (scales of 1 there): the runtime resizes one (batch, channel) plane
 * at a time (runtime/ops.c, op_run_resize_tail). */
bool pass_resize_head(const mp_graph *g, const mp_op *op);

/* Rules 1 and 6 of absorb.c: input k of op head is the output of a nearest
 * Resize, read only there, that replicates its input by whole factors, so
 * head can read the Resize's input instead (mplan.prologue "Resize:k"). */
bool pass_upsample_input(const pass_ctx *c, uint32_t head, uint32_t k);
/* Whether tensor rt, which op reader alone reads (once), is the output of
 * a live nearest Resize by whole factors onto the dims of tensor yt, in
 * the mapping pass_upsample_input describes (absorb.c rule 11: reader a
 * DequantizeLinear, yt the output of the op reading it). */
bool pass_upsample_of(const pass_ctx *c, uint32_t reader, int32_t rt,
                      int32_t yt);

/* ---- elementwise ops ------------------------------------------------------
 * One table says which ops work element by element and what they cost in
 * vector registers inside a fused loop. */
typedef enum pass_ew_kind {
  PASS_EW_NONE = 0,
  PASS_EW_UNARY,     /* y = f(x) */
  PASS_EW_BINARY,    /* y = f(x, z), z broadcast to x */
  PASS_EW_CLIP,      /* Clip: x, optional min and max */
  PASS_EW_BATCHNORM, /* x, scale, B, mean, var (per channel) */
  PASS_EW_VARIADIC   /* Sum, Max, Min of n inputs: y = x0, then y op= xk;
                        never absorbed by fusion (no epilogue form), in
                        place only over x0 */
} pass_ew_kind;

typedef struct pass_ew {
  const char *type;
  pass_ew_kind kind;
  bool commutative;   /* binary: the chained value may be either input */
  uint32_t registers; /* live vector values it adds to a fused loop */
} pass_ew;

/* The table entry of op type, or NULL when the op is not elementwise. */
const pass_ew *pass_ew_find(const char *type);

/* The entry of op, or NULL when this op is not elementwise although its
 * type may be: BatchNormalization in training mode reduces its input
 * over the batch first (and with spatial=0, before opset 9, its operands
 * are per activation, not per channel), and an op of opset < 7 may align input
 * 1 with input 0 from an axis on (mp_graph_legacy_pad), not broadcast as the
 * passes assume. */
const pass_ew *pass_ew_op(const mp_graph *g, const mp_op *op);

#endif /* MPLAN_PASSES_PASS_H */
