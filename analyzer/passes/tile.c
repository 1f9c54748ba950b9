/*
 * tile.c -- the tile pass (seed 000 section 7; MCUNetV2's patch-based
 * inference): the first stage of a convolutional network runs patch by
 * patch of its output, so that its large early activations are never
 * whole at once.
 *
 * What it tiles. A prefix of the ops in graph order (topological: the
 * committed graph's order) that reads one 4-D graph input and otherwise
 * only weights and what the prefix itself makes, whose ops are each
 *   - a Conv, MaxPool or AveragePool over two spatial dims with explicit
 *     pads no wider than its window (no auto_pad, no ceil_mode, one
 *     output);
 *   - or elementwise (pass_ew_op: unary, binary, Clip, inference
 *     BatchNormalization), its activation operands of the output's dims
 *     and its weight operands constant along H and W (extent 1 there, or
 *     no such axis once broadcast; BatchNormalization's are per channel);
 *   - or a QuantizeLinear or DequantizeLinear (a QDQ model's pairs) whose
 *     scale and zero point are weights of one value or one per channel
 *     (not blocked, not along H or W);
 *   - or a Concat of channels whose inputs all have the output's H and W
 *     (a weight among them is read through a Slice per patch);
 *   - or a ConstantOfShape of constant inputs (the zeros a TensorFlow
 *     export concatenates to pad channels): a fill of one value, so each
 *     patch makes its own crop of it (invariant 4) instead of slicing one
 *     fill that would stay live across the patches; it is never a cut;
 *   - or a DequantizeLinear of weights alone (a QDQ model's Conv weight):
 *     like the ConstantOfShape it runs once, and every patch's Conv reads
 *     its output whole as its weight (a Conv or pool reads only input 0
 *     by rows and columns);
 *   - or a Transpose [0, 3, 1, 2] of an NHWC graph input (the input is
 *     then sliced on its axes 1 and 2), as the stage's first op or after
 *     ops that run on the NHWC input (TL_PRE: elementwise with operands
 *     of one element, QuantizeLinear, DequantizeLinear; a TensorFlow
 *     export normalizing its input, a quantizer's pair), each the sole
 *     reader of the one before, up to the Transpose; their copies read
 *     and write NHWC parts;
 * over tensors of rank 4 in NCHW (or no layout), with no mplan.*
 * attribute, writing activations (a graph output ends the stage; no
 * retained state, no pinned offset). A prefix ending at op i is a cut when the
 * output T of op i is read by a later op (or is a graph output), and at
 * most TL_MAX_X other tensors it makes are (exports: an encoder's skip, or
 * a decoder's Conv of it that the prefix takes in), each an NCHW
 * activation of an op copied per patch: then the rest of the graph sees
 * only T and the exports, each whole.
 *
 * The rewrite, for a cut and nh x nw patches. T's rows are split into nh
 * bands and its columns into nw, each as equal as integers allow. For
 * patch (r, q), each tensor of the prefix gets the hull of the rows and
 * columns its readers in the patch need (the receptive field, walked back
 * op by op), and each op is copied to compute exactly those: a Conv or
 * pool reads what its window touches, and its pads are what is left of
 * the original padding at the image's edges. A reader that needs less
 * than its input's patch holds reads a Slice of it (a residual Add reads
 * the middle of a patch its Conv branch read with a halo); the graph
 * input is read through a Slice. A crop of an activation's
 * DequantizeLinear output is that DequantizeLinear of the same crop of its
 * input instead (the 8-bit values sliced; elementwise, so the same bits):
 * absorb gives a DequantizeLinear's integers to its readers only when
 * every reader can take them, which a Slice of the f32 output cannot. The
 * patch's part of T is a new tensor; with nw > 1 a Concat along W joins a
 * band's parts, and one Concat along H writes T from the bands (with one band,
 * the Concat along W writes T). All new ops take the key of op i, patch by
 * patch, so the file order runs one patch after the other.
 *
 * Exports. Each is split into the same grid of parts and joined the same
 * way (NAME.tR and NAME.tiles after the op that makes it). Along an axis,
 * part i begins where T's part i first needs the export, or at an even
 * split when T's part needs none of it (tl_own), so a patch computes
 * little more of it than it did for T: the walk back starts from T's part
 * and the export's part together, and the patch reads its part through a
 * Slice when it computes more. A grid that would give an export an empty
 * part is not built.
 *
 * Exactness: every element of every patch tensor is computed from the
 * same input values with the same window and the same pads as in the
 * untiled graph (padding exists only at the image's edges, where the
 * patch keeps it), so T is the same bit for bit. AveragePool's divisor
 * follows, as the window and its pads are the same.
 *
 * Which cut and patches. Every cut (T at least 2 rows; those that leave
 * only T first, then those with exports) and every nh =
 * 1 .. min(rows, TL_MAX_BANDS) and nw = 1 .. min(columns, TL_MAX_COLS)
 * with nh x nw >= 2 is built and measured: the activation lower bound of
 * the rewritten graph in its file order, each tensor its own buffer. The
 * lowest wins, ties to fewer recomputed MACs, among the candidates whose
 * recomputed Conv MACs (the halos patches compute twice) stay within
 * TL_MAX_EXTRA_PCT percent of the graph's Conv MACs; a candidate only
 * wins if it is below the graph's own bound. Cuts go latest first; a cut
 * whose later steps alone hold more than the best bound so far cannot
 * win and is skipped. For a cut, more bands are tried until TL_FLAT in a
 * row did not lower the bound (the halos grow as the bands thin), and
 * more columns until one more column did not lower the cut's best. The
 * search stops, the same on every machine, after TL_BUDGET ops
 * committed. The best patching of each cut measured (below the graph's
 * bound) is ranked, up to TL_PICKS / 2 cuts that leave only T and as many
 * with exports (before fusion, cuts with exports often tie at what the
 * rest of the graph holds, and would crowd out the others), by bound and
 * then MACs, one cut per set of Convs copied: cuts that differ only by
 * the ops after their last Conv keep the best of them, so that the picks
 * span depths (BlazeFace: five cuts after one Conv filled half the
 * ranks, and the cut that is best after every pass was not among them).
 * A cut whose later steps hold more than its part's last ranked bound
 * (or, while its part has room, the graph's) is skipped. The pass builds
 * the one the manager picks (pass_tile_pick:
 * manager.c invariant 13 judges them after every pass), the first by default.
 * The manager keeps the rewrite only when the lower bound under the order being
 * planned does not rise (the pass is guarded), and then only if it is still
 * lower after every other pass (manager.c invariant 11).
 *
 * Why not in --passes all: the pass trades compute for memory (the
 * recomputed halos), which a plan must not do unasked; it runs when named
 * (--passes tile, or all,tile).
 *
 * Invariants:
 *   1. The prefix's ops are all killed and T and the exports keep their
 *      names, kinds and shapes (each written by its last Concat); nothing
 *      after the prefix changes.
 *   2. Each patch tensor's range [lo, hi) per spatial axis lies within its
 *      tensor's extent, and each copied op's output range is the patch's
 *      need of it, so the parts cover T exactly once, in order; an
 *      export's parts are a partition of it too (tl_own), each within
 *      what its patch computes of it.
 *   3. A copied Conv or pool gets, per axis, a begin pad lo_read - first
 *      >= 0 and an end pad end - hi_read >= 0, where [first, end) is the
 *      span its windows cover unclipped and [lo_read, hi_read) what it
 *      reads: its output then has exactly the patch's extent.
 *   4. A crop of a ConstantOfShape's output is a ConstantOfShape of the
 *      crop's shape with the same value and no input (its output's shape
 *      is the shape; compile lowers it as a fill): every element is the
 *      value either way, so the bits are the same. The patch's copy runs
 *      where the patch does, and the whole fill goes when nothing after
 *      the cut reads it (BlazeFace in QDQ form: 65,536 + 16,384 B of
 *      zeros were live across all the patches).
 */
#include <stdio.h>
#include <string.h>

#include "mplan/lifetime.h"
#include "mplan/schedule.h"
#include "pass.h"

#define TL_MAX_BANDS 16
#define TL_MAX_COLS 8
#define TL_MAX_EXTRA_PCT 25
#define TL_FLAT 2 /* bands in a row that did not lower the bound: stop */
#define TL_PICKS PASS_TILE_PICKS /* cuts whose best the manager judges */
#define TL_MAX_WORK 16384        /* prefix ops x patches of one candidate */
/* tensors besides T a cut may leave to later ops */
#define TL_MAX_X MP_TILE_MAX_EXPORTS
/* Ops committed and measured over all candidates (each costs the whole
 * graph plus its patches): past it the search stops with the best so far,
 * the same on every machine. */
#define TL_BUDGET ((size_t)1 << 19)

typedef enum tl_kind {
  TL_NONE = 0,
  TL_WINDOW, /* Conv, MaxPool, AveragePool */
  TL_EW,     /* elementwise */
  TL_CAT,    /* Concat of channels (weights read through a Slice too) */
  TL_TIN,    /* the NHWC graph input transposed to NCHW */
  TL_PRE,    /* before TL_TIN: the NHWC input scaled or quantized */
  TL_CONST   /* a weight's DequantizeLinear, run once and read whole like
                a weight, or a ConstantOfShape, filled per patch */
} tl_kind;

typedef struct tl_win {                   /* per spatial axis (0: H, 1: W) */
  int64_t k[2], s[2], d[2], pb[2], pe[2]; /* kernel, stride, dilation, pads */
} tl_win;

typedef struct tl_crop {
  int32_t x, part;
  int64_t lo[2], hi[2];
  int ax; /* the first spatial axis of x as read (1: the NHWC input) */
} tl_crop;

typedef struct tl_ctx {
  pass_ctx *c;
  const mp_graph *g;
  size_t n_t;
  uint32_t len;  /* ops in the tileable prefix */
  int32_t src;   /* the graph input the prefix reads */
  uint8_t *kind; /* per op of the prefix: tl_kind */
  tl_win *win;   /* per op of the prefix (TL_WINDOW) */
  int64_t *lo;   /* per tensor x 2 axes: what the patch needs */
  int64_t *hi;
  int32_t *part;  /* per tensor: its patch tensor in the rewrite */
  uint32_t *cuts; /* ops ending a cut */
  size_t n_cuts;
  int32_t *cut_x;       /* per op: the TL_MAX_X exports of its cut (-1: none) */
  int32_t ex[TL_MAX_X]; /* the exports of the patching being built */
  uint32_t n_ex;
  bool seed; /* tl_need seeds each export with its part (own) */
  int64_t own[TL_MAX_X][2][TL_MAX_BANDS + 1]; /* part bounds per axis */
  tl_crop *crops;                             /* Slices made in this patch */
  size_t n_crops, cap_crops;
  double graph_macs;
  bool log;          /* the final build: record each op in the report */
  int32_t band, col; /* the patch being built */
} tl_ctx;

/* Records the op just added (at index op of rw) when z->log. */
static mp_status tl_log(tl_ctx *z, const rw_graph *rw, uint32_t op,
                        mp_tile_role role, const char *origin, int32_t band,
                        int32_t col, mp_error *err) {
  if (!z->log) return MP_OK;
  const mp_tile_op e = {.op = rw->ops[op].name,
                        .role = role,
                        .origin = origin,
                        .band = band,
                        .column = col};
  return pass_tile_op(z->c, &e, err);
}

static const mp_tensor *tl_t(const tl_ctx *z, int32_t t) {
  return mp_graph_tensor(z->g, (size_t)t);
}

static const mp_op *tl_producer(const tl_ctx *z, int32_t t) {
  return mp_graph_op(z->g, (size_t)tl_t(z, t)->producer);
}

static bool tl_spatial(const tl_ctx *z, int32_t t) {
  mp_tensor_kind k = tl_t(z, t)->kind;
  return k == MP_TENSOR_ACTIVATION || k == MP_TENSOR_INPUT ||
         k == MP_TENSOR_OUTPUT;
}

static bool tl_nchw(const mp_tensor *x) {
  return x->rank == 4 && (!x->layout || strcmp(x->layout, "NCHW") == 0);
}

static int64_t tl_ext(const mp_tensor *x, int j) {
  return x->shape[2 + j].value;
}

/* The H and W axes of input x as op o reads it: 1 and 2 for the NHWC
 * graph input a TL_TIN Transpose or a TL_PRE op reads, else 2 and 3;
 * tl_out_ax: those of op o's output (1 and 2 for TL_PRE). */
static int tl_ax(const tl_ctx *z, uint32_t o) {
  return z->kind[o] == TL_TIN || z->kind[o] == TL_PRE ? 1 : 2;
}

static int tl_out_ax(const tl_ctx *z, uint32_t o) {
  return z->kind[o] == TL_PRE ? 1 : 2;
}

/* Read whole by a patch (its part is itself): the graph input, a weight
 * a TL_CAT joins, and a TL_CONST's output. */
static bool tl_whole(const tl_ctx *z, int32_t x) {
  const mp_tensor *xt = tl_t(z, x);
  return x == z->src || !tl_spatial(z, x) ||
         (xt->producer >= 0 && z->kind[xt->producer] == TL_CONST);
}

static bool tl_ints(const mp_op *op, const char *name, int64_t *v, size_t at,
                    int64_t def) {
  const mp_attr *t = mp_op_attr(op, name);
  if (!t) {
    *v = def;
    return true;
  }
  if (t->kind != MP_ATTR_INTS || t->n <= at) return false;
  *v = t->ints[at];
  return true;
}

/* The window of a Conv or pool, when it is one the pass copies. */
static bool tl_window(const tl_ctx *z, const mp_op *op, tl_win *w) {
  bool conv = strcmp(op->type, "Conv") == 0;
  if (!conv && strcmp(op->type, "MaxPool") != 0 &&
      strcmp(op->type, "AveragePool") != 0) {
    return false;
  }
  const mp_attr *ap = mp_op_attr(op, "auto_pad");
  if ((ap && (ap->kind != MP_ATTR_STRING || strcmp(ap->s, "NOTSET") != 0)) ||
      pass_attr_int(op, "ceil_mode", 0) != 0 || op->n_outputs != 1) {
    return false;
  }
  const mp_attr *ks = mp_op_attr(op, "kernel_shape");
  if (ks && (ks->kind != MP_ATTR_INTS || ks->n != 2)) return false;
  const mp_tensor *wt = conv && op->n_inputs >= 2 && op->inputs[1] >= 0
                            ? tl_t(z, op->inputs[1])
                            : NULL;
  if (conv && !wt) return false;
  if (!ks && !(wt && wt->rank == 4)) return false;
  const mp_attr *pads = mp_op_attr(op, "pads");
  if (pads && (pads->kind != MP_ATTR_INTS || pads->n != 4)) return false;
  for (int j = 0; j < 2; j++) {
    w->k[j] = ks ? ks->ints[j] : wt->shape[2 + j].value;
    if (!tl_ints(op, "strides", &w->s[j], (size_t)j, 1) ||
        !tl_ints(op, "dilations", &w->d[j], (size_t)j, 1) ||
        !tl_ints(op, "pads", &w->pb[j], (size_t)j, 0) ||
        !tl_ints(op, "pads", &w->pe[j], (size_t)j + 2, 0)) {
      return false;
    }
    /* a pad wider than the window would leave an output row or column
     * that reads no input at all, and its patch nothing to read */
    int64_t span = (w->k[j] - 1) * w->d[j];
    if (w->k[j] < 1 || w->s[j] < 1 || w->d[j] < 1 || w->pb[j] < 0 ||
        w->pe[j] < 0 || w->pb[j] > span || w->pe[j] > span) {
      return false;
    }
  }
  return true;
}

/* Weight operand x of an elementwise op with output y: constant along H
 * and W (no such axis once broadcast, or extent 1 there). */
static bool tl_flat(const mp_tensor *x, const mp_tensor *y) {
  if (x->rank > y->rank) return false;
  for (int j = 0; j < 2; j++) {
    int64_t a = (int64_t)x->rank - (int64_t)(y->rank - 2 - (uint32_t)j);
    if (a >= 0 && x->shape[a].value != 1) return false;
  }
  return true;
}

/* A tensor of one element (a scalar, or dims of 1). */
static bool tl_one(const mp_tensor *t) {
  size_t n = 1;
  for (uint32_t j = 0; j < t->rank; j++) n *= (size_t)t->shape[j].value;
  return n == 1;
}

/* A weight or what a TL_CONST op made (a QDQ model's dequantized Conv
 * weight): a Conv's weight and bias, read whole by every patch. */
static bool tl_whole_param(const tl_ctx *z, int32_t x) {
  const mp_tensor *xt = tl_t(z, x);
  return !tl_spatial(z, x) ||
         (xt->producer >= 0 && z->kind[xt->producer] == TL_CONST);
}

/* A DequantizeLinear of weights alone (a QDQ model's Conv weight): like
 * a ConstantOfShape, it runs once before the patches (the absorb pass
 * later gives the Convs its integers). */
static bool tl_const_dq(const tl_ctx *z, const mp_op *op) {
  if (strcmp(op->type, "DequantizeLinear") != 0) return false;
  const mp_tensor *y = tl_t(z, op->outputs[0]);
  if (y->pinned || y->kind != MP_TENSOR_ACTIVATION) return false;
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    if (op->inputs[k] >= 0 && tl_spatial(z, op->inputs[k])) return false;
  }
  return true;
}

static bool tl_to_nchw(const mp_op *op) {
  static const int64_t nhwc[4] = {0, 3, 1, 2};
  const mp_attr *perm = mp_op_attr(op, "perm");
  return strcmp(op->type, "Transpose") == 0 && op->n_inputs == 1 && perm &&
         perm->kind == MP_ATTR_INTS && perm->n == 4 &&
         memcmp(perm->ints, nhwc, sizeof nhwc) == 0;
}

/* An op that may run on the NHWC graph input before its TL_TIN Transpose:
 * elementwise (unary, binary, Clip) or a QuantizeLinear or
 * DequantizeLinear whose data input is from (from < 0: the graph input or
 * a TL_PRE op's output), of its own dims, and every other operand a
 * weight of one element (TensorFlow normalizing its input, a quantizer's
 * pairs). */
static bool tl_pre_op(const tl_ctx *z, const mp_op *op, int32_t from) {
  const pass_ew *ew = pass_ew_op(z->g, op);
  bool quant = strcmp(op->type, "QuantizeLinear") == 0 ||
               strcmp(op->type, "DequantizeLinear") == 0;
  if ((!quant && (!ew || ew->kind == PASS_EW_VARIADIC ||
                  ew->kind == PASS_EW_BATCHNORM)) ||
      rw_has_mplan_attr(op) || op->n_outputs != 1 || op->outputs[0] < 0 ||
      mp_op_attr(op, "block_size")) {
    return false;
  }
  int32_t y = op->outputs[0];
  const mp_tensor *yt = tl_t(z, y);
  if (yt->rank != 4 || yt->pinned || yt->kind != MP_TENSOR_ACTIVATION ||
      (yt->layout && strcmp(yt->layout, "NHWC") != 0)) {
    return false;
  }
  int n_data = 0;
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    int32_t x = op->inputs[k];
    if (x < 0) continue;
    const mp_tensor *xt = tl_t(z, x);
    bool data =
        from >= 0 ? x == from
                  : xt->kind == MP_TENSOR_INPUT ||
                        (xt->producer >= 0 && z->kind[xt->producer] == TL_PRE);
    if (!tl_spatial(z, x)) {
      if (!tl_one(xt)) return false;
    } else if (data && pass_same_dims(z->g, x, y) && (!quant || k == 0)) {
      n_data++;
    } else {
      return false;
    }
  }
  return n_data == 1;
}

/* tl_pre_op, when the sole readers from its output on are such ops up to
 * a Transpose to NCHW (the input is NHWC). */
static bool tl_pre(const tl_ctx *z, const mp_op *op) {
  if (!tl_pre_op(z, op, -1)) return false;
  for (int32_t t = op->outputs[0];;) {
    int32_t r = pass_sole_reader(z->g, t);
    if (r < 0) return false;
    const mp_op *next = mp_graph_op(z->g, (size_t)r);
    if (tl_to_nchw(next)) return true;
    if (!tl_pre_op(z, next, t)) return false;
    t = next->outputs[0];
  }
}

/* A QuantizeLinear or DequantizeLinear of an activation whose scale and
 * zero point (weights) are one value or one per channel (axis 1, or the
 * batch): each element is quantized alone by parameters that do not vary
 * along H and W, so a patch's copy computes its elements' bits. */
static bool tl_quant(const tl_ctx *z, const mp_op *op) {
  if (strcmp(op->type, "QuantizeLinear") != 0 &&
      strcmp(op->type, "DequantizeLinear") != 0) {
    return false;
  }
  const mp_attr *bs = mp_op_attr(op, "block_size");
  const mp_attr *ax = mp_op_attr(op, "axis");
  int64_t axis = ax && ax->kind == MP_ATTR_INT ? ax->i : 1;
  if (axis < 0) axis += 4; /* (the input is 4-D) */
  int32_t x = op->inputs[0];
  if ((bs && (bs->kind != MP_ATTR_INT || bs->i != 0)) || op->n_inputs < 2 ||
      x < 0 || !tl_spatial(z, x) || !tl_nchw(tl_t(z, x)) ||
      !pass_same_dims(z->g, x, op->outputs[0])) {
    return false;
  }
  for (uint32_t k = 1; k < op->n_inputs; k++) {
    int32_t p = op->inputs[k];
    if (p < 0) continue;
    const mp_tensor *pt = tl_t(z, p);
    if (pt->kind != MP_TENSOR_WEIGHT) return false;
    if (!tl_one(pt) && (axis < 0 || axis > 1)) {
      return false; /* per row or per column: varies along H or W */
    }
  }
  return true;
}

static tl_kind tl_classify(tl_ctx *z, uint32_t o) {
  const mp_op *op = mp_graph_op(z->g, o);
  if (rw_has_mplan_attr(op) || op->n_outputs != 1 || op->outputs[0] < 0 ||
      op->n_inputs < 1) {
    return TL_NONE;
  }
  const mp_tensor *y = tl_t(z, op->outputs[0]);
  if (tl_const_dq(z, op)) return TL_CONST;
  if (tl_pre(z, op)) return TL_PRE;
  /* retained state written, or an offset the user pinned: not ours to
   * split into copies */
  if (!tl_nchw(y) || y->pinned ||
      (y->kind != MP_TENSOR_ACTIVATION && y->kind != MP_TENSOR_OUTPUT)) {
    return TL_NONE;
  }
  if (strcmp(op->type, "ConstantOfShape") == 0) {
    /* zeros that pad channels: its inputs are constants (the shape) */
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (op->inputs[k] >= 0 && tl_spatial(z, op->inputs[k])) return TL_NONE;
    }
    return TL_CONST;
  }
  if (strcmp(op->type, "Transpose") == 0 && op->n_inputs == 1) {
    /* NHWC -> NCHW of the graph input (a TensorFlow export's first op),
     * maybe after TL_PRE ops */
    const mp_tensor *x = op->inputs[0] >= 0 ? tl_t(z, op->inputs[0]) : NULL;
    bool ok = tl_to_nchw(op) && x && x->rank == 4 &&
              (x->kind == MP_TENSOR_INPUT ||
               (x->producer >= 0 && z->kind[x->producer] == TL_PRE));
    return ok ? TL_TIN : TL_NONE;
  }
  if (strcmp(op->type, "Concat") == 0) {
    /* channels: every input of the output's H and W (a weight of zeros
     * that pads channels, say), read by a patch through a Slice */
    const mp_attr *ax = mp_op_attr(op, "axis");
    bool any = false;
    if (!ax || ax->kind != MP_ATTR_INT || (ax->i != 1 && ax->i != -3)) {
      return TL_NONE;
    }
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      int32_t x = op->inputs[k];
      if (x < 0) return TL_NONE;
      const mp_tensor *xt = tl_t(z, x);
      if (!tl_nchw(xt) || tl_ext(xt, 0) != tl_ext(y, 0) ||
          tl_ext(xt, 1) != tl_ext(y, 1) ||
          xt->shape[0].value != y->shape[0].value) {
        return TL_NONE;
      }
      if (xt->kind != MP_TENSOR_WEIGHT && !tl_spatial(z, x)) return TL_NONE;
      any = any || tl_spatial(z, x);
    }
    return any ? TL_CAT : TL_NONE;
  }
  if (tl_window(z, op, &z->win[o])) {
    int32_t x = op->inputs[0];
    if (x < 0 || !tl_spatial(z, x) || !tl_nchw(tl_t(z, x))) return TL_NONE;
    for (uint32_t k = 1; k < op->n_inputs; k++) {
      if (op->inputs[k] >= 0 && !tl_whole_param(z, op->inputs[k])) {
        return TL_NONE;
      }
    }
    return TL_WINDOW;
  }
  if (tl_quant(z, op)) return TL_EW;
  const pass_ew *ew = pass_ew_op(z->g, op);
  if (!ew || ew->kind == PASS_EW_VARIADIC) return TL_NONE;
  bool any = false;
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    int32_t x = op->inputs[k];
    if (x < 0) continue;
    const mp_tensor *xt = tl_t(z, x);
    if (tl_spatial(z, x)) {
      if (!pass_same_dims(z->g, x, op->outputs[0]) || !tl_nchw(xt)) {
        return TL_NONE;
      }
      any = true;
    } else if (ew->kind != PASS_EW_BATCHNORM && !tl_flat(xt, y)) {
      /* (BatchNormalization's operands are per channel, not broadcast) */
      return TL_NONE;
    }
  }
  return any ? TL_EW : TL_NONE;
}

/* Along axis j: the part of input x that op o reads for its output range
 * [a, b), and for a window the unclipped span [*first, *end). */
static void tl_req(const tl_ctx *z, uint32_t o, int32_t x, int j, int64_t a,
                   int64_t b, int64_t *lo, int64_t *hi, int64_t *first,
                   int64_t *end) {
  if (z->kind[o] == TL_WINDOW) {
    const tl_win *w = &z->win[o];
    int64_t n = tl_ext(tl_t(z, x), j);
    *first = a * w->s[j] - w->pb[j];
    *end = (b - 1) * w->s[j] - w->pb[j] + (w->k[j] - 1) * w->d[j] + 1;
    *lo = *first < 0 ? 0 : *first;
    *hi = *end > n ? n : *end;
  } else {
    *first = *lo = a;
    *end = *hi = b;
  }
}

/* The Conv MACs of op for an output of h x w (0 for other ops). */
static double tl_macs(const tl_ctx *z, const mp_op *op, int64_t h, int64_t w) {
  if (strcmp(op->type, "Conv") != 0 || op->n_inputs < 2 || op->inputs[1] < 0) {
    return 0;
  }
  const mp_tensor *y = tl_t(z, op->outputs[0]), *wt = tl_t(z, op->inputs[1]);
  double m = (double)h * (double)w;
  for (uint32_t j = 0; j < y->rank && j < 2; j++)
    m *= (double)y->shape[j].value;
  for (uint32_t j = 1; j < wt->rank; j++) m *= (double)wt->shape[j].value;
  return m;
}

static double tl_macs_whole(const tl_ctx *z, const mp_op *op) {
  if (op->n_outputs < 1 || op->outputs[0] < 0) return 0;
  const mp_tensor *y = tl_t(z, op->outputs[0]);
  return y->rank == 4 ? tl_macs(z, op, tl_ext(y, 0), tl_ext(y, 1)) : 0;
}

/* The tileable prefix and its cuts. */
/* The cut ending at op o leaves tensors besides T to later ops. */
static bool tl_has_x(const tl_ctx *z, uint32_t o) {
  return z->cut_x[(size_t)o * TL_MAX_X] >= 0;
}

/* A tensor the stage makes that a later op may read whole once its parts
 * are joined: an NCHW activation of at least one row and column, from an
 * op copied per patch. */
static bool tl_exportable(const tl_ctx *z, int32_t t) {
  const mp_tensor *x = tl_t(z, t);
  if (x->kind != MP_TENSOR_ACTIVATION || !tl_nchw(x) || x->producer < 0) {
    return false;
  }
  tl_kind k = (tl_kind)z->kind[x->producer];
  return k != TL_CONST && k != TL_PRE && tl_ext(x, 0) >= 1 && tl_ext(x, 1) >= 1;
}

static mp_status tl_scan(tl_ctx *z, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(z->g);
  size_t n_ops = mp_graph_op_count(z->g);
  uint32_t *open = mp_calloc(a, z->n_t + 1, sizeof *open);
  bool *made = mp_calloc(a, z->n_t + 1, sizeof *made);
  if (!open || !made) {
    mp_free(a, open);
    mp_free(a, made);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(z->g));
  }
  size_t n_open = 0; /* tensors made in the prefix read after it */
  z->src = -1;
  for (uint32_t o = 0; o < n_ops; o++) {
    z->kind[o] = (uint8_t)tl_classify(z, o);
    if (z->kind[o] == TL_NONE) break;
    const mp_op *op = mp_graph_op(z->g, o);
    bool ok = true;
    for (uint32_t k = 0; k < op->n_inputs && ok; k++) {
      int32_t x = op->inputs[k];
      if (x < 0 || !tl_spatial(z, x)) continue;
      if (made[x]) {
        /* one reader less after the prefix (each reading op once) */
        if (mp_op_first_read(op, k) && open[x] && --open[x] == 0) n_open--;
      } else if (tl_t(z, x)->kind == MP_TENSOR_INPUT &&
                 (z->src < 0 || z->src == x)) {
        z->src = x;
      } else {
        ok = false;
      }
    }
    if (!ok) break;
    int32_t y = op->outputs[0];
    const mp_tensor *yt = tl_t(z, y);
    made[y] = true;
    open[y] = yt->n_consumers + (yt->kind == MP_TENSOR_OUTPUT);
    if (open[y]) n_open++;
    z->len = o + 1;
    if (open[y] > 0 && n_open <= 1 + TL_MAX_X && tl_ext(yt, 0) >= 2 &&
        z->kind[o] != TL_CONST && z->kind[o] != TL_PRE) {
      /* (a TL_CONST stays, a TL_PRE op's output is NHWC: not cuts);
       * the other tensors read later are exports, joined like T */
      int32_t xs[TL_MAX_X];
      for (uint32_t k = 0; k < TL_MAX_X; k++) xs[k] = -1;
      uint32_t nx = 0;
      bool ok_x = true;
      for (size_t t = 0; n_open > 1 && t < z->n_t && ok_x; t++) {
        if (!made[t] || !open[t] || (int32_t)t == y) continue;
        ok_x = tl_exportable(z, (int32_t)t);
        xs[nx++] = (int32_t)t;
      }
      if (ok_x) {
        memcpy(&z->cut_x[(size_t)o * TL_MAX_X], xs, sizeof xs);
        z->cuts[z->n_cuts++] = o;
      }
    }
  }
  mp_free(a, open);
  mp_free(a, made);
  return MP_OK;
}

/* What each prefix tensor needs for T's part [a0, b0) x [a1, b1). */
static void tl_need(tl_ctx *z, uint32_t cut, const int64_t *a,
                    const int64_t *b) {
  for (uint32_t o = 0; o <= cut; o++) {
    const mp_op *op = mp_graph_op(z->g, o);
    for (uint32_t k = 0; k <= op->n_inputs; k++) {
      int32_t t = k < op->n_inputs ? op->inputs[k] : op->outputs[0];
      if (t < 0) continue;
      for (int j = 0; j < 2; j++) {
        z->lo[2 * t + j] = INT64_MAX;
        z->hi[2 * t + j] = INT64_MIN;
      }
    }
  }
  int32_t t = mp_graph_op(z->g, cut)->outputs[0];
  for (int j = 0; j < 2; j++) {
    z->lo[2 * t + j] = a[j];
    z->hi[2 * t + j] = b[j];
  }
  for (uint32_t k = 0; z->seed && k < z->n_ex; k++) {
    int32_t x = z->ex[k];
    int32_t at[2] = {z->band, z->col};
    for (int j = 0; j < 2; j++) {
      z->lo[2 * x + j] = z->own[k][j][at[j]];
      z->hi[2 * x + j] = z->own[k][j][at[j] + 1];
    }
  }
  for (uint32_t o = cut + 1; o-- > 0;) {
    const mp_op *op = mp_graph_op(z->g, o);
    int32_t y = op->outputs[0];
    if (z->lo[2 * y] >= z->hi[2 * y]) continue; /* not read for this patch */
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      int32_t x = op->inputs[k];
      if (x < 0 || !tl_spatial(z, x) || (k && z->kind[o] == TL_WINDOW)) {
        continue; /* (a window's weight and bias are read whole) */
      }
      for (int j = 0; j < 2; j++) {
        int64_t lo, hi, first, end;
        tl_req(z, o, x, j, z->lo[2 * y + j], z->hi[2 * y + j], &lo, &hi, &first,
               &end);
        if (lo < z->lo[2 * x + j]) z->lo[2 * x + j] = lo;
        if (hi > z->hi[2 * x + j]) z->hi[2 * x + j] = hi;
      }
    }
  }
}

/* A tensor like x of h x w. */
static mp_status tl_tensor(rw_graph *rw, int32_t like, const mp_tensor *x,
                           int ax, int64_t h, int64_t w, const char *suffix,
                           int32_t *id, mp_error *err) {
  mp_dim d[MP_MAX_RANK];
  memcpy(d, x->shape, x->rank * sizeof *d);
  d[ax] = (mp_dim){.value = h, .sym = MP_NO_SYM};
  d[ax + 1] = (mp_dim){.value = w, .sym = MP_NO_SYM};
  return rw_new_tensor_dims(rw, like, suffix, x->rank, d, id, err);
}

/* Adds op's copy named after it with suffix, reading in (op's input
 * count; NULL: no input, a fill's copy) and writing out, with op's
 * attributes (pads replaced when given), and records it as a copy of
 * this patch. */
static mp_status tl_emit(tl_ctx *z, rw_graph *rw, uint32_t key,
                         const char *suffix, const mp_op *op, const int32_t *in,
                         int32_t out, const int64_t *pads, mp_error *err) {
  uint32_t nop = (uint32_t)rw->n_ops;
  mp_status st = rw_new_op(rw, key, op->name, suffix, op->type, in,
                           in ? op->n_inputs : 0, &out, 1, err);
  for (uint32_t k = 0; k < op->n_attrs && st == MP_OK; k++) {
    st = rw_set_attr(rw, nop, &op->attrs[k], err);
  }
  if (st == MP_OK && pads) {
    const mp_attr pa = {
        .name = "pads", .kind = MP_ATTR_INTS, .ints = pads, .n = 4};
    st = rw_set_attr(rw, nop, &pa, err);
  }
  if (st == MP_OK) {
    st = tl_log(z, rw, nop, MP_TILE_COPY, op->name, z->band, z->col, err);
  }
  return st;
}

/* Op p is a DequantizeLinear of an activation in the stage (TL_EW). */
static bool tl_dq_act(const tl_ctx *z, int32_t p) {
  return p >= 0 && (uint32_t)p < z->len && z->kind[p] == TL_EW &&
         strcmp(mp_graph_op(z->g, (size_t)p)->type, "DequantizeLinear") == 0;
}

/* The crop [lo, hi) of x (read on axes ax and ax + 1) this patch made
 * already, or -1. */
static int32_t tl_find_crop(const tl_ctx *z, int32_t x, int ax,
                            const int64_t *lo, const int64_t *hi) {
  for (size_t k = 0; k < z->n_crops; k++) {
    const tl_crop *cr = &z->crops[k];
    if (cr->x == x && cr->ax == ax && cr->lo[0] == lo[0] &&
        cr->hi[0] == hi[0] && cr->lo[1] == lo[1] && cr->hi[1] == hi[1]) {
      return cr->part;
    }
  }
  return -1;
}

/* Records t as the crop [lo, hi) of x in this patch, into *out. */
static mp_status tl_keep_crop(tl_ctx *z, int32_t x, int32_t t, int ax,
                              const int64_t *lo, const int64_t *hi,
                              int32_t *out, mp_error *err) {
  void *arr = z->crops;
  mp_status st =
      mp_grow(mp_graph_alloc(z->g), &arr, &z->cap_crops, z->n_crops + 1,
              sizeof *z->crops, mp_graph_source(z->g), err);
  if (st != MP_OK) return st;
  z->crops = arr;
  z->crops[z->n_crops++] = (tl_crop){x, t, {lo[0], lo[1]}, {hi[0], hi[1]}, ax};
  *out = t;
  return MP_OK;
}

static mp_status tl_read(tl_ctx *z, rw_graph *rw, uint32_t key, const char *tag,
                         int32_t x, int ax, const int64_t *lo,
                         const int64_t *hi, int32_t *out, mp_error *err);

/* The crop [lo, hi) of DequantizeLinear p's output, written into t as
 * the DequantizeLinear of the same crop of its input: elementwise, so
 * the same bits, and no Slice reads an f32 copy, which would keep absorb
 * from giving the integers to its other readers. */
static mp_status tl_crop_dq(tl_ctx *z, rw_graph *rw, uint32_t key,
                            const char *tag, int32_t p, int ax,
                            const int64_t *lo, const int64_t *hi, int32_t t,
                            mp_error *err) {
  const mp_op *dq = mp_graph_op(z->g, (size_t)p);
  int32_t *in = rw_alloc(rw, dq->n_inputs, sizeof *in, err);
  if (!in) return MP_ERR_NOMEM;
  memcpy(in, dq->inputs, dq->n_inputs * sizeof *in);
  mp_status st =
      tl_read(z, rw, key, tag, dq->inputs[0], ax, lo, hi, &in[0], err);
  char sfx[48];
  snprintf(sfx, sizeof sfx, "%s.crop", tag);
  return st == MP_OK ? tl_emit(z, rw, key, sfx, dq, in, t, NULL, err) : st;
}

/* x is written by a TL_CONST ConstantOfShape (a fill of one value). */
static bool tl_fill(const tl_ctx *z, int32_t x) {
  int32_t p = tl_t(z, x)->producer;
  return p >= 0 && (uint32_t)p < z->len && z->kind[p] == TL_CONST &&
         strcmp(mp_graph_op(z->g, (size_t)p)->type, "ConstantOfShape") == 0;
}

/* The crop [lo, hi) of fill x, as a fill of the crop's shape in the patch
 * (invariant 4): the ConstantOfShape's copy, with its value and no input
 * (its output's shape is the shape). */
static mp_status tl_crop_fill(tl_ctx *z, rw_graph *rw, uint32_t key,
                              const char *tag, int32_t x, const int64_t *lo,
                              const int64_t *hi, int32_t *out, mp_error *err) {
  if ((*out = tl_find_crop(z, x, 2, lo, hi)) >= 0) return MP_OK;
  int32_t t = -1;
  mp_status st = tl_tensor(rw, x, tl_t(z, x), 2, hi[0] - lo[0], hi[1] - lo[1],
                           tag, &t, err);
  if (st == MP_OK) {
    st = tl_emit(z, rw, key, tag, tl_producer(z, x), NULL, t, NULL, err);
  }
  return st == MP_OK ? tl_keep_crop(z, x, t, 2, lo, hi, out, err) : st;
}

/* The patch tensor of x holding [lo, hi) on its axes ax and ax + 1:
 * x's part, or a Slice of it (of x itself when it is read whole). */
static mp_status tl_read(tl_ctx *z, rw_graph *rw, uint32_t key, const char *tag,
                         int32_t x, int ax, const int64_t *lo,
                         const int64_t *hi, int32_t *out, mp_error *err) {
  const mp_tensor *xt = tl_t(z, x);
  bool whole = tl_whole(z, x);
  int64_t have_lo[2], have_hi[2];
  bool same = true;
  for (int j = 0; j < 2; j++) {
    have_lo[j] = whole ? 0 : z->lo[2 * x + j];
    have_hi[j] = whole ? xt->shape[ax + j].value : z->hi[2 * x + j];
    same = same && lo[j] == have_lo[j] && hi[j] == have_hi[j];
  }
  int32_t from = whole ? x : z->part[x];
  if (tl_fill(z, x)) return tl_crop_fill(z, rw, key, tag, x, lo, hi, out, err);
  if (same) {
    *out = from;
    return MP_OK;
  }
  if ((*out = tl_find_crop(z, x, ax, lo, hi)) >= 0) return MP_OK;
  char sfx[48];
  snprintf(sfx, sizeof sfx, "%s.crop", tag);
  int32_t t = -1;
  mp_status st =
      tl_tensor(rw, x, xt, ax, hi[0] - lo[0], hi[1] - lo[1], sfx, &t, err);
  if (st == MP_OK && !whole && tl_dq_act(z, xt->producer)) {
    st = tl_crop_dq(z, rw, key, tag, xt->producer, ax, lo, hi, t, err);
    return st == MP_OK ? tl_keep_crop(z, x, t, ax, lo, hi, out, err) : st;
  }
  int64_t v[6]; /* starts v[0..n), ends v[2..2+n), axes v[4..4+n) */
  size_t n = 0;
  for (int j = 0; j < 2; j++) {
    if (lo[j] == have_lo[j] && hi[j] == have_hi[j]) continue;
    v[n] = lo[j] - have_lo[j];
    v[2 + n] = hi[j] - have_lo[j];
    v[4 + n] = ax + j;
    n++;
  }
  const mp_attr at[3] = {
      {.name = "starts", .kind = MP_ATTR_INTS, .ints = &v[0], .n = n},
      {.name = "ends", .kind = MP_ATTR_INTS, .ints = &v[2], .n = n},
      {.name = "axes", .kind = MP_ATTR_INTS, .ints = &v[4], .n = n}};
  uint32_t op = (uint32_t)rw->n_ops;
  if (st == MP_OK) {
    st = rw_new_op(rw, key, xt->name, tag, "Slice", &from, 1, &t, 1, err);
  }
  for (int k = 0; k < 3 && st == MP_OK; k++) {
    st = rw_set_attr(rw, op, &at[k], err);
  }
  if (st == MP_OK) {
    st = tl_log(z, rw, op, MP_TILE_CROP, xt->name, z->band, z->col, err);
  }
  return st == MP_OK ? tl_keep_crop(z, x, t, ax, lo, hi, out, err) : st;
}

/* Copies op o for the patch tagged tag (output [lo, hi) of its tensor). */
static mp_status tl_copy(tl_ctx *z, rw_graph *rw, uint32_t key, const char *tag,
                         uint32_t o, double *macs, mp_error *err) {
  const mp_op *op = mp_graph_op(z->g, o);
  int32_t y = op->outputs[0];
  /* (a Concat of channels may have any number of inputs) */
  int32_t *in = rw_alloc(rw, op->n_inputs + 1u, sizeof *in, err);
  if (!in) return MP_ERR_NOMEM;
  const int64_t *ylo = &z->lo[2 * y], *yhi = &z->hi[2 * y];
  int64_t pads[4] = {0, 0, 0, 0};
  mp_status st = MP_OK;
  for (uint32_t k = 0; k < op->n_inputs && st == MP_OK; k++) {
    int32_t x = op->inputs[k];
    in[k] = x;
    if (x < 0 || (!tl_spatial(z, x) && z->kind[o] != TL_CAT) ||
        (k && z->kind[o] == TL_WINDOW)) {
      continue;
    }
    int64_t lo[2], hi[2];
    for (int j = 0; j < 2; j++) {
      int64_t first, end;
      tl_req(z, o, x, j, ylo[j], yhi[j], &lo[j], &hi[j], &first, &end);
      pads[j] = lo[j] - first; /* invariant 3 */
      pads[2 + j] = end - hi[j];
    }
    st = tl_read(z, rw, key, tag, x, tl_ax(z, o), lo, hi, &in[k], err);
  }
  int32_t out = -1;
  if (st == MP_OK) {
    st = tl_tensor(rw, y, tl_t(z, y), tl_out_ax(z, o), yhi[0] - ylo[0],
                   yhi[1] - ylo[1], tag, &out, err);
  }
  if (st == MP_OK) {
    st = tl_emit(z, rw, key, tag, op, in, out,
                 z->kind[o] == TL_WINDOW ? pads : NULL, err);
  }
  z->part[y] = out;
  *macs += tl_macs(z, op, yhi[0] - ylo[0], yhi[1] - ylo[1]);
  return st;
}

/* One Concat of parts along axis into out, named after the op writing
 * the cut tensor t; band: the band it joins the columns of (-1: it joins
 * the bands). */
static mp_status tl_concat(tl_ctx *z, rw_graph *rw, uint32_t key,
                           const mp_op *last, int32_t t, const char *suffix,
                           const int32_t *parts, uint32_t n, int64_t axis,
                           int32_t out, int32_t band, mp_error *err) {
  const mp_attr ax = {.name = "axis", .kind = MP_ATTR_INT, .i = axis};
  uint32_t cat = (uint32_t)rw->n_ops;
  mp_status st =
      rw_new_op(rw, key, last->name, suffix, "Concat", parts, n, &out, 1, err);
  if (st == MP_OK) st = rw_set_attr(rw, cat, &ax, err);
  if (st == MP_OK) {
    st = tl_log(z, rw, cat, MP_TILE_JOIN, tl_t(z, t)->name, band, -1, err);
  }
  return st;
}

/* The parts of each export of the cut along each axis (z->own): part i
 * begins where T's part i first needs the export (so a patch computes
 * little more than it did for T), or at an even split when T's part
 * needs none of it; false when a part would be empty. */
static bool tl_own(tl_ctx *z, uint32_t cut, uint32_t nh, uint32_t nw,
                   const int64_t *ext) {
  uint32_t n[2] = {nh, nw};
  z->seed = false;
  if (z->n_ex == 0) return true;
  for (uint32_t k = 0; k < z->n_ex; k++) {
    const mp_tensor *x = tl_t(z, z->ex[k]);
    for (int j = 0; j < 2; j++) {
      z->own[k][j][0] = 0;
      z->own[k][j][n[j]] = tl_ext(x, j);
    }
  }
  for (int j = 0; j < 2; j++) {
    for (uint32_t i = 1; i < n[j]; i++) {
      int64_t a[2] = {0, 0}, b[2] = {ext[0], ext[1]};
      a[j] = ext[j] * i / n[j];
      b[j] = ext[j] * (i + 1) / n[j];
      tl_need(z, cut, a, b);
      for (uint32_t k = 0; k < z->n_ex; k++) {
        int32_t x = z->ex[k];
        int64_t e = tl_ext(tl_t(z, x), j), prev = z->own[k][j][i - 1];
        int64_t v = z->lo[2 * x + j] < z->hi[2 * x + j] ? z->lo[2 * x + j]
                                                        : e * i / n[j];
        z->own[k][j][i] = v < prev ? prev : v > e ? e : v;
      }
    }
  }
  for (uint32_t k = 0; k < z->n_ex; k++) {
    for (int j = 0; j < 2; j++) {
      for (uint32_t i = 0; i < n[j]; i++) {
        if (z->own[k][j][i + 1] <= z->own[k][j][i]) return false;
      }
    }
  }
  z->seed = z->n_ex > 0;
  return true;
}

/* Joins the parts of x (T or an export, made by op last): the columns of
 * band `band` (rows rows) into a band tensor, or with one band, or when
 * band is -1 the bands, into x itself; *out: what they were joined into. */
static mp_status tl_join(tl_ctx *z, rw_graph *rw, uint32_t key,
                         const mp_op *last, int32_t x, const int32_t *parts,
                         uint32_t n, int32_t band, uint32_t nh, int64_t rows,
                         int32_t *out, mp_error *err) {
  const mp_tensor *xt = tl_t(z, x);
  if (band < 0 || nh == 1) {
    *out = x;
    return tl_concat(z, rw, key, last, x, ".tiles", parts, n, band < 0 ? 2 : 3,
                     x, band < 0 ? -1 : 0, err);
  }
  char sfx[32];
  snprintf(sfx, sizeof sfx, ".t%d", band);
  mp_status st = tl_tensor(rw, x, xt, 2, rows, tl_ext(xt, 1), sfx, out, err);
  return st == MP_OK
             ? tl_concat(z, rw, key, last, x, sfx, parts, n, 3, *out, band, err)
             : st;
}

/* Fill op o is read by no op after the cut and is no graph output: each
 * patch made its own (tl_crop_fill). */
static bool tl_fill_done(const tl_ctx *z, uint32_t o, uint32_t cut) {
  int32_t y = mp_graph_op(z->g, o)->outputs[0];
  const mp_tensor *yt = tl_t(z, y);
  if (!tl_fill(z, y) || yt->kind != MP_TENSOR_ACTIVATION) return false;
  for (uint32_t k = 0; k < yt->n_consumers; k++) {
    if (yt->consumers[k] > cut) return false;
  }
  return true;
}

/* The rewrite for a cut and nh x nw patches into rw; *macs: the patches'
 * Conv MACs. */
static mp_status tl_build(tl_ctx *z, rw_graph *rw, uint32_t cut, uint32_t nh,
                          uint32_t nw, double *macs, bool *ok, mp_error *err) {
  const mp_op *last = mp_graph_op(z->g, cut);
  int32_t t = last->outputs[0];
  const mp_tensor *tt = tl_t(z, t);
  int64_t ext[2] = {tl_ext(tt, 0), tl_ext(tt, 1)};
  int32_t *bands = rw_alloc(rw, nh, sizeof *bands, err);
  int32_t *cols = rw_alloc(rw, nw, sizeof *cols, err);
  int32_t *xbands = rw_alloc(rw, (size_t)TL_MAX_X * nh, sizeof *xbands, err);
  int32_t *xcols = rw_alloc(rw, (size_t)TL_MAX_X * nw, sizeof *xcols, err);
  if (!bands || !cols || !xbands || !xcols) return MP_ERR_NOMEM;
  *macs = 0;
  z->n_ex = 0;
  for (uint32_t k = 0; k < TL_MAX_X; k++) {
    int32_t x = z->cut_x[(size_t)cut * TL_MAX_X + k];
    if (x >= 0) z->ex[z->n_ex++] = x;
  }
  if (!tl_own(z, cut, nh, nw, ext)) {
    *ok = false;
    return MP_OK;
  }
  *ok = true;
  mp_status st = MP_OK;
  for (uint32_t r = 0; r < nh && st == MP_OK; r++) {
    int64_t a[2], b[2];
    a[0] = ext[0] * r / nh;
    b[0] = ext[0] * (r + 1) / nh;
    for (uint32_t q = 0; q < nw && st == MP_OK; q++) {
      char tag[32];
      if (nw == 1) {
        snprintf(tag, sizeof tag, ".t%u", r);
      } else {
        snprintf(tag, sizeof tag, ".t%ux%u", r, q);
      }
      a[1] = ext[1] * q / nw;
      b[1] = ext[1] * (q + 1) / nw;
      z->band = (int32_t)r;
      z->col = (int32_t)q;
      tl_need(z, cut, a, b);
      z->n_crops = 0;
      for (uint32_t o = 0; o <= cut && st == MP_OK; o++) {
        int32_t y = mp_graph_op(z->g, o)->outputs[0];
        if (z->kind[o] != TL_CONST && z->lo[2 * y] < z->hi[2 * y]) {
          st = tl_copy(z, rw, cut, tag, o, macs, err);
        }
      }
      cols[q] = z->part[t];
      for (uint32_t k = 0; k < z->n_ex && st == MP_OK; k++) {
        int32_t x = z->ex[k];
        int64_t lo[2] = {z->own[k][0][r], z->own[k][1][q]};
        int64_t hi[2] = {z->own[k][0][r + 1], z->own[k][1][q + 1]};
        st = tl_read(z, rw, cut, tag, x, 2, lo, hi, &xcols[k * nw + q], err);
      }
    }
    /* a band's columns joined (with one band, into T and the exports) */
    for (uint32_t k = 0; k < z->n_ex && st == MP_OK; k++) {
      xbands[k * nh + r] = xcols[k * nw];
      if (nw > 1) {
        st = tl_join(z, rw, cut, tl_producer(z, z->ex[k]), z->ex[k],
                     &xcols[k * nw], nw, (int32_t)r, nh,
                     z->own[k][0][r + 1] - z->own[k][0][r], &xbands[k * nh + r],
                     err);
      }
    }
    bands[r] = cols[0];
    if (st == MP_OK && nw > 1) {
      st = tl_join(z, rw, cut, last, t, cols, nw, (int32_t)r, nh, b[0] - a[0],
                   &bands[r], err);
    }
  }
  /* the bands joined into T and the exports */
  int32_t out;
  if (st == MP_OK && nh > 1) {
    st = tl_join(z, rw, cut, last, t, bands, nh, -1, nh, 0, &out, err);
  }
  for (uint32_t k = 0; k < z->n_ex && st == MP_OK && nh > 1; k++) {
    st = tl_join(z, rw, cut, tl_producer(z, z->ex[k]), z->ex[k],
                 &xbands[k * nh], nh, -1, nh, 0, &out, err);
  }
  z->seed = false;
  for (uint32_t o = 0; o <= cut; o++) {
    /* a TL_CONST stays whole, but a fill only while read after the cut */
    if (z->kind[o] != TL_CONST || tl_fill_done(z, o, cut)) rw_kill(rw, o);
  }
  return st;
}

/* The activation lower bound of g in its file order; with rest (one per
 * op of the prefix), also the most bytes live at a step after op o:
 * what no tiling up to o changes (the steps after the last Concat are
 * the steps after o, with the same live tensors). */
static mp_status tl_bound(const tl_ctx *z, const mp_graph *g, size_t *lb,
                          size_t *rest, mp_error *err) {
  uint32_t *order = NULL;
  mp_order_kind used;
  mp_problem *p = NULL;
  mp_profile prof = {0};
  mp_lifetime_opts lo = {.inputs_as_activations = z->c->inputs_act,
                         .backend = z->c->backend};
  mp_status st = mp_schedule(g, MP_ORDER_FILE, &order, &used, err);
  if (st == MP_OK) st = mp_lifetimes_build(g, order, &lo, &p, err);
  if (st == MP_OK) st = mp_problem_profile(p, &prof, err);
  if (st == MP_OK) *lb = prof.peak;
  for (uint32_t o = 0; rest && st == MP_OK && o < z->len; o++) {
    rest[o] = 0; /* the file order: op o runs at step o */
    for (size_t k = 0; k < prof.n_segs; k++) {
      if (prof.segs[k].last > (int64_t)o && prof.segs[k].live > rest[o]) {
        rest[o] = prof.segs[k].live;
      }
    }
  }
  mp_profile_release(&prof);
  mp_problem_destroy(p);
  mp_free(mp_graph_alloc(g), order);
  return st;
}

/* Builds a candidate on its own rewrite and measures it. */
static mp_status tl_try(tl_ctx *z, uint32_t cut, uint32_t nh, uint32_t nw,
                        size_t *lb, double *macs, mp_error *err) {
  rw_graph *rw = NULL;
  mp_graph *g2 = NULL;
  mp_status st = rw_create(z->g, &rw, err);
  bool ok = false;
  if (st == MP_OK) st = tl_build(z, rw, cut, nh, nw, macs, &ok, err);
  if (st == MP_OK && !ok) *lb = SIZE_MAX; /* an export's part is empty */
  if (st == MP_OK && ok) st = rw_commit(rw, &g2, err);
  if (st == MP_OK && ok) st = tl_bound(z, g2, lb, NULL, err);
  if (g2) mp_graph_destroy(g2);
  rw_destroy(rw);
  return st;
}

typedef pass_tile_rank tl_best;

/* Puts cut's best b into top (n of cap kept), ranked by bound, then by
 * recomputed MACs; an equal one ranks after those already there. Of two
 * cuts with the same prefix MACs (no Conv between them) only the better
 * stays. */
static void tl_rank(tl_best *top, uint32_t *n, uint32_t cap, const tl_best *b) {
  for (uint32_t k = 0; k < *n; k++) {
    if (top[k].prefix != b->prefix) continue;
    if (b->lb > top[k].lb || (b->lb == top[k].lb && b->extra >= top[k].extra)) {
      return;
    }
    memmove(&top[k], &top[k + 1], (*n - k - 1) * sizeof *top);
    --*n;
    break;
  }
  uint32_t at = *n;
  while (at > 0 && (b->lb < top[at - 1].lb || (b->lb == top[at - 1].lb &&
                                               b->extra < top[at - 1].extra))) {
    at--;
  }
  if (at >= cap) return;
  uint32_t last = *n < cap ? *n : cap - 1;
  memmove(&top[at + 1], &top[at], (last - at) * sizeof *top);
  top[at] = *b;
  if (*n < cap) ++*n;
}

/* Measures the candidates (the rules at the top) into *m: the graph's
 * bound, the patchings tried, and the best of each cut, ranked. */
static mp_status tl_search(tl_ctx *z, pass_tile_memo *m, mp_error *err) {
  size_t base = 0;
  size_t *rest = mp_calloc(mp_graph_alloc(z->g), z->len + 1, sizeof *rest);
  if (!rest) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(z->g));
  }
  mp_status st = tl_bound(z, z->g, &base, rest, err);
  /* the best patching of each cut, ranked: half the picks for cuts that
   * leave T alone, half for cuts with exports (their bound before the
   * other passes often ties at what the rest of the graph holds, so
   * they would crowd out the others, which fusion may favour) */
  tl_best top[TL_PICKS], part[2][TL_PICKS / 2];
  uint32_t n_top = 0, n_part[2] = {0, 0};
  size_t spent = 0, tried = 0;
  bool cut_short = false;
  /* latest cut first: its rest is the lowest, and a cut whose rest is
   * above the best bound so far can neither win nor tie */
  for (size_t i = 2 * z->n_cuts; i-- > 0 && st == MP_OK && !cut_short;) {
    /* the cuts with T alone first, then those with exports */
    uint32_t cut = z->cuts[i % z->n_cuts];
    if (tl_has_x(z, cut) != (i < z->n_cuts)) continue;
    /* a cut whose rest is above its part's last ranked cannot be ranked */
    int h = tl_has_x(z, cut);
    size_t bar = n_part[h] == TL_PICKS / 2 ? part[h][n_part[h] - 1].lb : base;
    if (rest[cut] > bar) continue;
    const mp_tensor *tt = tl_t(z, mp_graph_op(z->g, cut)->outputs[0]);
    double prefix = 0;
    for (uint32_t o = 0; o <= cut; o++) {
      prefix += tl_macs_whole(z, mp_graph_op(z->g, o));
    }
    tl_best cb = {.lb = base}; /* this cut's best below the graph's bound */
    size_t prev_nw = SIZE_MAX; /* the best bound with one column less */
    for (uint32_t nw = 1;
         nw <= TL_MAX_COLS && nw <= tl_ext(tt, 1) && st == MP_OK && !cut_short;
         nw++) {
      size_t best_nw = SIZE_MAX, prev = SIZE_MAX;
      unsigned flat = 0; /* bands in a row that did not lower the bound */
      for (uint32_t nh = 1;
           nh <= TL_MAX_BANDS && nh <= tl_ext(tt, 0) && st == MP_OK; nh++) {
        if (nh * nw < 2) continue;
        size_t work = (size_t)(cut + 1) * nh * nw;
        if (work > TL_MAX_WORK) break;
        size_t cost = mp_graph_op_count(z->g) + work;
        if (spent + cost > TL_BUDGET) {
          cut_short = true;
          break;
        }
        spent += cost;
        tried++;
        size_t lb = 0;
        double macs = 0;
        st = tl_try(z, cut, nh, nw, &lb, &macs, err);
        double extra = macs - prefix;
        if (st != MP_OK || extra * 100.0 > TL_MAX_EXTRA_PCT * z->graph_macs) {
          break; /* more patches recompute more */
        }
        if (lb < cb.lb || (lb == cb.lb && cb.nh && extra < cb.extra)) {
          cb = (tl_best){lb, extra, prefix, cut, nh, nw};
        }
        if (lb < best_nw) best_nw = lb;
        if (lb <= rest[cut]) break; /* more bands cannot go lower */
        flat = lb < prev ? 0 : flat + 1;
        prev = lb;
        if (flat == TL_FLAT) break; /* the halos have caught up */
      }
      if (best_nw >= prev_nw) break; /* a column more did not help */
      prev_nw = best_nw;
    }
    if (cb.nh) {
      tl_rank(part[h], &n_part[h], TL_PICKS / 2, &cb);
    }
  }
  for (int h = 0; h < 2; h++) {
    for (uint32_t k = 0; k < n_part[h]; k++) {
      tl_rank(top, &n_top, TL_PICKS, &part[h][k]);
    }
  }
  mp_free(mp_graph_alloc(z->g), rest);
  *m = (pass_tile_memo){.set = true,
                        .ops = mp_graph_op_count(z->g),
                        .tensors = z->n_t,
                        .cuts = z->n_cuts,
                        .base = base,
                        .tried = tried,
                        .cut_short = cut_short,
                        .n = n_top};
  memcpy(m->top, top, n_top * sizeof *top);
  return st;
}

static mp_status tl_run(tl_ctx *z, mp_error *err) {
  mp_tile_info *info = pass_tile_info(z->c);
  mp_status st = tl_scan(z, err);
  if (st != MP_OK || z->n_cuts == 0) return st;
  info->outcome = MP_TILE_NO_GAIN;
  info->cuts = (uint32_t)z->n_cuts;
  for (size_t o = 0; o < mp_graph_op_count(z->g); o++) {
    z->graph_macs += tl_macs_whole(z, mp_graph_op(z->g, o));
  }
  pass_tile_memo *memo = pass_tile_memo_of(z->c), m = {0};
  bool reuse = memo && memo->set && memo->ops == mp_graph_op_count(z->g) &&
               memo->tensors == z->n_t && memo->cuts == z->n_cuts;
  if (reuse) {
    m = *memo;
  } else {
    st = tl_search(z, &m, err);
    if (st != MP_OK) return st;
    if (memo) *memo = m;
  }
  size_t base = m.base, tried = m.tried;
  bool cut_short = m.cut_short;
  tl_best best = {.lb = base};
  info->candidates = tried;
  info->budget_reached = cut_short;
  info->graph_macs = z->graph_macs;
  info->lb_before = info->lb_after = base;
  info->picks = m.n;
  if (m.n) { /* the manager's pick (its invariant 13) */
    info->pick = pass_tile_pick(z->c) < m.n ? pass_tile_pick(z->c) : 0;
    best = m.top[info->pick];
  }
  if (best.nh == 0) {
    if (tried) {
      mp_buf_printf(&z->c->note,
                    "no cut of %zu lowers the bound in file order (%zu B) "
                    "within +%d%% Conv MACs (%zu candidate%s%s)",
                    z->n_cuts, base, TL_MAX_EXTRA_PCT, tried,
                    tried == 1 ? "" : "s",
                    cut_short ? "; search budget reached" : "");
    }
    return MP_OK;
  }
  double macs = 0;
  z->log = true;
  bool ok = false;
  st = tl_build(z, z->c->rw, best.cut, best.nh, best.nw, &macs, &ok, err);
  if (st == MP_OK && !ok) { /* it was measured, so it builds */
    st = mp_error_set(err, MP_ERR_INTERNAL,
                      "%s: tile: patching %u x %u "
                      "up to op %u no longer builds",
                      mp_graph_source(z->g), best.nh, best.nw, best.cut);
  }
  if (st != MP_OK) return st;
  const mp_op *last = mp_graph_op(z->g, best.cut);
  const mp_tensor *t = tl_t(z, last->outputs[0]);
  info->outcome = MP_TILE_KEPT; /* until the manager drops it */
  info->cut = pass_str(z->c, t->name, err);
  info->cut_op = pass_str(z->c, last->name, err);
  if (!info->cut || !info->cut_op) return MP_ERR_NOMEM;
  for (uint32_t k = 0; k < z->n_ex; k++) { /* (tl_build set them) */
    info->exports[k] = pass_str(z->c, tl_t(z, z->ex[k])->name, err);
    if (!info->exports[k]) return MP_ERR_NOMEM;
  }
  info->n_exports = z->n_ex;
  info->stage_ops = best.cut + 1;
  info->bands = best.nh;
  info->columns = best.nw;
  info->height = tl_ext(t, 0);
  info->width = tl_ext(t, 1);
  info->extra_macs = best.extra;
  info->lb_after = best.lb;
  pass_tally(z->c, "patches");
  z->c->tally_count[z->c->n_tally - 1] = (size_t)best.nh * best.nw;
  z->c->rewrites = best.cut + 1;
  mp_buf_printf(
      &z->c->note,
      "%u x %u of %u ops up to '%s' (%lld x %lld); bound in file order "
      "%zu -> %zu B; Conv MACs +%.1f%% (%.0f recomputed); %zu "
      "candidate%s%s",
      best.nh, best.nw, best.cut + 1, t->name, (long long)tl_ext(t, 0),
      (long long)tl_ext(t, 1), base, best.lb,
      z->graph_macs > 0 ? 100.0 * best.extra / z->graph_macs : 0.0, best.extra,
      tried, tried == 1 ? "" : "s",
      cut_short ? " (search budget reached)" : "");
  for (uint32_t k = 0; k < info->n_exports; k++) {
    mp_buf_printf(&z->c->note, "%s'%s'", k ? ", " : "; also joins ",
                  info->exports[k]);
  }
  return MP_OK;
}

mp_status pass_tile(pass_ctx *c, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(c->g);
  size_t n_ops = mp_graph_op_count(c->g), n_t = mp_graph_tensor_count(c->g);
  tl_ctx z = {.c = c, .g = c->g, .n_t = n_t};
  z.kind = mp_calloc(a, n_ops + 1, sizeof *z.kind);
  z.win = mp_calloc(a, n_ops + 1, sizeof *z.win);
  z.cuts = mp_calloc(a, n_ops + 1, sizeof *z.cuts);
  z.cut_x = mp_calloc(a, (n_ops + 1) * TL_MAX_X, sizeof *z.cut_x);
  for (size_t i = 0; z.cut_x && i < (n_ops + 1) * TL_MAX_X; i++) {
    z.cut_x[i] = -1;
  }
  z.lo = mp_calloc(a, 2 * n_t + 2, sizeof *z.lo);
  z.hi = mp_calloc(a, 2 * n_t + 2, sizeof *z.hi);
  z.part = mp_calloc(a, n_t + 1, sizeof *z.part);
  mp_status st = MP_OK;
  if (!z.kind || !z.win || !z.cuts || !z.cut_x || !z.lo || !z.hi || !z.part) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                      mp_graph_source(c->g));
  }
  if (st == MP_OK) st = tl_run(&z, err);
  mp_free(a, z.kind);
  mp_free(a, z.win);
  mp_free(a, z.cuts);
  mp_free(a, z.cut_x);
  mp_free(a, z.lo);
  mp_free(a, z.hi);
  mp_free(a, z.part);
  mp_free(a, z.crops);
  return st;
}
