/*
 * absorb.c -- absorption of a producer into the op that reads it (seed 000
 * section 3.3), as mplan.prologue = "<kind>:<i>" (docs/ir-conventions.md):
 * the op reads the producer's input at its input i and applies the
 * producer on the fly; the intermediate no longer exists.
 *
 *   - DequantizeLinear or a widening Cast into a MatMul, a Gemm or a
 *     Conv: the head reads the narrow tensor and widens it in its
 *     accumulation loop.
 *   - A nearest Resize by whole factors into an elementwise Add, Sub, Mul
 *     or Div (a feature pyramid's upsample-and-add): the op reads the small
 *     tensor replicated, element o of axis d from o / f_d.
 *   - DequantizeLinear into an elementwise op (rule 9): the op widens its
 *     8-bit input a tile at a time.
 *
 * Rules:
 *   1. The intermediate is an activation (no graph output) with one
 *      reader, the head, which reads it once.
 *   2. The head is a MatMul, Gemm or Conv with no mplan.prologue and no
 *      mplan.horizontal (its prologues are chosen once, on a single
 *      product); or, for a Resize, an Add, Sub, Mul or Div with no
 *      mplan.* attribute; or an elementwise head of rule 9.
 *   3. DequantizeLinear to f32, f16 or bf16 (its scale's type): a
 *      16-bit head runs through f32 and rounds its prologue's results to
 *      its own type, as the DequantizeLinear rounded its output
 *      (runtime/ops.c, op_pro_round); per tensor (a one-element scale, no
 *      block_size);
 *      or, into a MatMul's weight (input 1, a matrix), a Gemm's (input 1,
 *      transA or not) or a Conv's weight (input 1), also per axis or
 *      blocked (opset 21), written as mplan.p.axis and mplan.p.block on
 *      the head: the runtime widens that weight a panel at a time, of the
 *      output's columns for a MatMul or a Gemm (runtime/ops.c,
 *      op_run_gemm_panels), of output channels for a Conv
 *      (op_run_conv_panels), so the f32 weight never exists whole. Its
 *      scale and zero point (-1 when not given) follow all other inputs
 *      of the head, in that order. A Conv's omitted bias or a Gemm's omitted C
 * is written as -1 first, so positions stay fixed.
 *   4. Cast: widening (the element grows) to the head's output dtype, so
 *      the target type is the head's own.
 *   5. Only the product's operands (input 0 or 1) qualify. When both
 *      do and the runtime widens each a part at a time (ab_panels), both
 *      are absorbed (a QDQ Conv's or MatMul's activation and weight: two
 *      entries, mplan.prologue "DequantizeLinear:0,DequantizeLinear:1").
 *      Otherwise one: widening a tensor whole into the workspace only
 *      moves its bytes out of the arena, so one widened a part at a time
 *      goes first, then the larger intermediate; ties go to input 0.
 *   6. Resize: mode nearest, no antialias, no axes; its output has the
 *      head's output shape (the other operand broadcasts to it as
 *      before); every axis grows by a whole factor f_d = out_d / in_d;
 *      and for every output index o the kernel's own coordinate mapping
 *      (mp_k_resize_nearest_src, with the scales the compiler would pass;
 *      pass_upsample_input in util.c, which the fuse pass also asks)
 *      reads in index o / f_d -- so the replicated read is exact, whatever
 *      the coordinate transformation and nearest modes. Each axis with
 *      f_d > 1 costs the runtime one more broadcast dim: rank + those axes
 *      <= MP_K_MAX_RANK; and no axis is longer than 2^20 (each index
 *      is checked).
 *   7. The absorbed op reads a 4-bit tensor only as a DequantizeLinear
 *      into a MatMul's, a Gemm's or a Conv's weight (rule 3's panels): the
 *      heads' kernels address their other inputs in whole bytes.
 *   8. The exception to rule 1: a DequantizeLinear's or Cast's output read
 *      by several ops (a QDQ model's one pair per tensor, shared by its
 *      readers) is absorbed by every one of them, or by none: each reads
 *      it once, as input 0 or 1, and absorbs it by rules 2-7 given what
 *      the others take (ab_shared, a fixed point: a tensor one reader
 *      would not take is dropped, and the readers looked at again). Each
 *      head widens the narrow tensor itself; the op is removed with its
 *      last reader's absorption, and the narrow tensor lives until the
 *      last reader instead of the f32 one. saved_bytes: one read each,
 *      and the write once.
 *   9. An elementwise head (ab_ew_head: Add, Sub, Mul or Div, Clip, or a
 *      unary op but Not, with an f32 output, no fused_activation and no
 *      mplan.* attribute) takes a DequantizeLinear per tensor (one f32
 *      scale, no block_size) from int8 or uint8 of its output's shape to
 *      f32, on input 0 or 1 of a binary op or input 0 of the others;
 *      both inputs of a binary op may be taken (the runtime widens each a
 *      tile of the output at a time, runtime/ops.c op_run_ew, so rule 5
 *      treats them as parts). A Resize (rule 6) is taken alone. The fuse
 *      pass then ends such an op in its QuantizeLinear (fuse.c condition
 *      7), so an Add between two QDQ pairs reads and writes 8 bits, and a
 *      pair shared by a Conv and a residual Add is absorbed by both (rule
 *      8). Every element is the DequantizeLinear kernel's, then the op's,
 *      then the QuantizeLinear's: the unfused bits. A pool
 *      (pass_pool_head: MaxPool with one output, AveragePool,
 *      GlobalMaxPool, GlobalAveragePool) with an f32 output takes the same
 *      DequantizeLinear on its input, of the input's own shape: the
 *      runtime widens and pools one (batch, channel) plane at a time
 *      (op_run_pool_tail), each output reading its own plane only. So does
 *      a Concat of two pieces, on either (of its own shape): the runtime
 *      widens a piece's block a tile at a time into its slice
 *      (op_run_concat_tail). So does a nearest or linear Resize of a 4-D
 *      map that keeps batch and channels (pass_resize_head), on its input:
 *      the runtime widens and resizes one (batch, channel) plane at a time
 *      (op_run_resize_tail; a decoder's upsampling between QDQ pairs).
 *      A BatchNormalization in inference mode (pass_ew_op) with its four
 *      parameters takes it on X, of X's own shape: the runtime widens a
 *      tile of one channel at a time (op_run_bn_head).
 *  10. A ConvTranspose (f32) takes a DequantizeLinear (per tensor, rule
 *      3) or a widening Cast on X only: the runtime widens the input rows
 *      a band of output rows reads (op_conv_band, op_convt_rows), in the
 *      kernel's order of terms, so X is never f32 whole. Its weight stays
 *      as it is.
 *  11. Rule 9's DequantizeLinear on input k of an Add, Sub, Mul or Div may
 *      read the 8-bit output of a nearest Resize by whole factors onto the
 *      op's output (pass_upsample_of: rule 6's mapping), that
 *      DequantizeLinear its only reader and the op the DequantizeLinear's
 *      (ab_resize_under): a feature pyramid's upsample-and-add between QDQ
 *      pairs, whose Resize the eliminate pass moved onto the 8 bits (its
 *      rule 8). The op absorbs both, reads the Resize's input (int
 *      attribute mplan.p.resize = k) and the runtime widens, for each tile
 *      of the output, the small map's elements under it and reads them
 *      replicated (op_widen_replicated): the values the Resize then the
 *      DequantizeLinear gave, and the upsampled map never exists. The
 *      other input is not replicated.
 */
#include <stdio.h>
#include <string.h>

#include "pass.h"

/* Rule 9: an elementwise head (Add, Sub, Mul, Div, Clip or a unary op
 * but Not), a pool (pass_pool_head), a Concat of two or a Resize
 * (pass_resize_head), with one f32 output and no attribute of mplan's. */
static bool ab_ew_head(const pass_ctx *c, const mp_op *op) {
  const pass_ew *ew = pass_ew_op(c->g, op);
  bool concat = strcmp(op->type, "Concat") == 0;
  if (pass_resize_head(c->g, op)) return true;
  if (pass_pool_head(op) || concat) {
    return op->n_inputs == (concat ? 2u : 1u) && op->n_outputs == 1 &&
           op->outputs[0] >= 0 && !rw_has_mplan_attr(op) &&
           mp_graph_tensor(c->g, (size_t)op->outputs[0])->dtype == MP_DTYPE_F32;
  }
  if (!ew || op->n_outputs != 1 || op->outputs[0] < 0 ||
      rw_has_mplan_attr(op) || mp_op_attr(op, "fused_activation") ||
      mp_graph_tensor(c->g, (size_t)op->outputs[0])->dtype != MP_DTYPE_F32) {
    return false;
  }
  switch (ew->kind) {
    case PASS_EW_UNARY:
      return op->n_inputs == 1 && strcmp(op->type, "Not") != 0;
    case PASS_EW_CLIP:
      return op->n_inputs >= 1 && op->n_inputs <= 3;
    case PASS_EW_BINARY:
      return op->n_inputs == 2 &&
             (strcmp(op->type, "Add") == 0 || strcmp(op->type, "Sub") == 0 ||
              strcmp(op->type, "Mul") == 0 || strcmp(op->type, "Div") == 0);
    case PASS_EW_BATCHNORM: /* inference (pass_ew_op), its four parameters */
      for (uint32_t k = 0; k < op->n_inputs; k++) {
        if (op->inputs[k] < 0) return false;
      }
      return op->n_inputs == 5;
    default:
      return false;
  }
}

static bool ab_head(const pass_ctx *c, const mp_op *op) {
  if (ab_ew_head(c, op)) return true;
  return (strcmp(op->type, "MatMul") == 0 || strcmp(op->type, "Conv") == 0 ||
          strcmp(op->type, "Gemm") == 0 ||
          strcmp(op->type, "ConvTranspose") == 0) &&
         !mp_op_attr(op, "mplan.prologue") &&
         !mp_op_attr(op, "mplan.horizontal") &&
         !mp_op_attr(op, "mplan.attention");
}

/* Rule 11: input k of elementwise head (an Add, Sub, Mul or Div) is a
 * DequantizeLinear of a nearest Resize's 8-bit output by whole factors
 * onto head's output (pass_upsample_of), that DequantizeLinear its only
 * reader: head absorbs both and reads the Resize's input replicated. */
static bool ab_resize_under(const pass_ctx *c, uint32_t head, uint32_t k) {
  const mp_graph *g = c->g;
  const mp_op *h = mp_graph_op(g, head);
  if (!pass_upsample_binary(h) || k >= 2 || h->inputs[k] < 0 ||
      pass_sole_reader(g, h->inputs[k]) != (int32_t)head) {
    return false;
  }
  int32_t p = mp_graph_tensor(g, (size_t)h->inputs[k])->producer;
  const mp_op *d = p >= 0 ? mp_graph_op(g, (size_t)p) : NULL;
  if (!d || strcmp(d->type, "DequantizeLinear") != 0 || d->inputs[0] < 0) {
    return false;
  }
  for (uint32_t j = 0; j < 2; j++) { /* one input replicated */
    if (j != k && h->inputs[j] >= 0 &&
        !pass_same_dims(g, h->inputs[j], h->outputs[0])) {
      const mp_tensor *o = mp_graph_tensor(g, (size_t)h->inputs[j]);
      if (o->producer >= 0 && strcmp(mp_graph_op(g, (size_t)o->producer)->type,
                                     "DequantizeLinear") == 0) {
        return false;
      }
    }
  }
  return pass_upsample_of(c, (uint32_t)p, d->inputs[0], h->outputs[0]);
}

/* The prologue kind if input k of head may be absorbed (rules 1, 3, 4,
 * 6, and 8 when shared says input k's tensor is absorbed by all its
 * readers; shared NULL: none is). */
static const char *ab_kind(const pass_ctx *c, uint32_t head, uint32_t k,
                           const bool *shared) {
  const mp_graph *g = c->g;
  const mp_op *h = mp_graph_op(g, head);
  if (pass_upsample_binary(h)) {
    if (pass_upsample_input(c, head, k)) return "Resize"; /* 1 and 6 */
    if (!ab_ew_head(c, h)) return NULL;
  }
  int32_t y = h->inputs[k];
  if (y < 0) return NULL;
  const mp_tensor *yt = mp_graph_tensor(g, (size_t)y);
  if (yt->kind != MP_TENSOR_ACTIVATION || yt->producer < 0 ||
      (pass_sole_reader(g, y) != (int32_t)head && !(shared && shared[y])) ||
      pass_reads(h, y) != 1 || c->rw->ops[yt->producer].dead) {
    return NULL;
  }
  const mp_op *d = mp_graph_op(g, (size_t)yt->producer);
  if (d->n_outputs != 1 || d->n_inputs < 1 || d->inputs[0] < 0) return NULL;
  const mp_tensor *x = mp_graph_tensor(g, (size_t)d->inputs[0]);
  if (ab_ew_head(c, h)) {
    /* rule 9: an 8-bit tensor of the output's shape, per tensor, to f32 */
    const mp_tensor *sc = d->n_inputs >= 2 && d->inputs[1] >= 0
                              ? mp_graph_tensor(g, (size_t)d->inputs[1])
                              : NULL;
    const mp_tensor *zp = d->n_inputs >= 3 && d->inputs[2] >= 0
                              ? mp_graph_tensor(g, (size_t)d->inputs[2])
                              : NULL;
    bool ok = strcmp(d->type, "DequantizeLinear") == 0 && sc &&
              sc->dtype == MP_DTYPE_F32 && sc->bytes == 4 &&
              (!zp || (zp->dtype == x->dtype && zp->bytes == 1)) &&
              yt->dtype == MP_DTYPE_F32 &&
              pass_attr_int(d, "block_size", 0) == 0 &&
              (x->dtype == MP_DTYPE_I8 || x->dtype == MP_DTYPE_U8) &&
              (pass_pool_head(h) || strcmp(h->type, "Concat") == 0 ||
               pass_resize_head(g, h) || pass_same_dims(g, y, h->outputs[0]) ||
               ab_resize_under(c, head, k)) &&
              (k == 0 || mp_op_head_arity(h) == 2);
    return ok ? "DequantizeLinear" : NULL;
  }
  bool wide = yt->dtype == MP_DTYPE_F32 || yt->dtype == MP_DTYPE_F16 ||
              yt->dtype == MP_DTYPE_BF16;
  /* a ConvTranspose: X only, widened a band of rows at a time (rule 10) */
  if (strcmp(h->type, "ConvTranspose") == 0 &&
      (k != 0 || yt->dtype != MP_DTYPE_F32)) {
    return NULL;
  }
  bool panels = k == 1 && wide &&
                ((strcmp(h->type, "MatMul") == 0 && x->rank == 2) ||
                 (strcmp(h->type, "Gemm") == 0 && x->rank == 2) ||
                 (strcmp(h->type, "Conv") == 0 && x->rank >= 3));
  if (mp_dtype_size(x->dtype) == 0 && !panels) return NULL; /* rule 7 */
  if (strcmp(d->type, "DequantizeLinear") == 0) {
    if (d->n_inputs < 2 || d->inputs[1] < 0) return NULL;
    const mp_tensor *scale = mp_graph_tensor(g, (size_t)d->inputs[1]);
    bool one = scale->bytes == mp_dtype_size(scale->dtype) &&
               pass_attr_int(d, "block_size", 0) == 0;
    /* rule 3: a float result of the scale's own type, which the head
     * computes in (a 16-bit head through f32, its prologue's results
     * rounded to the head's type) */
    if (!wide || scale->dtype != yt->dtype || (!one && !panels)) return NULL;
    return "DequantizeLinear";
  }
  if (mp_dtype_size(x->dtype) == 0) return NULL; /* a 4-bit Cast: rule 7 */
  if (strcmp(d->type, "Cast") == 0) {
    const mp_tensor *out = mp_graph_tensor(g, (size_t)h->outputs[0]);
    if (mp_dtype_size(yt->dtype) > mp_dtype_size(x->dtype) &&
        yt->dtype == out->dtype) {
      return "Cast";
    }
  }
  return NULL;
}

/* Rule 11: the Resize whose 8-bit output DequantizeLinear dq reads. */
static const mp_op *ab_resize_op(const mp_graph *g, const mp_op *dq) {
  const mp_tensor *rt = mp_graph_tensor(g, (size_t)dq->inputs[0]);
  return mp_graph_op(g, (size_t)rt->producer);
}

/* Rule 11 for input k of head: mplan.p.resize = k, the Resize killed and
 * recorded (its 8-bit output never exists). */
static mp_status ab_resize_apply(pass_ctx *c, uint32_t head, int32_t k,
                                 mp_error *err) {
  const mp_graph *g = c->g;
  const mp_op *h = mp_graph_op(g, head);
  const mp_op *d = mp_graph_op(
      g, (size_t)mp_graph_tensor(g, (size_t)h->inputs[k])->producer);
  const mp_tensor *rt = mp_graph_tensor(g, (size_t)d->inputs[0]);
  const mp_op *rs = ab_resize_op(g, d);
  mp_attr a = {.name = "mplan.p.resize", .kind = MP_ATTR_INT, .i = k};
  mp_status st = rw_set_attr(c->rw, head, &a, err);
  if (st != MP_OK) return st;
  rw_kill(c->rw, (uint32_t)rt->producer);
  size_t saved = rt->bytes;
  (void)mp_size_mul(rt->bytes, 2, &saved);
  mp_fusion f = {.kind = MP_FUSION_PROLOGUE,
                 .op = h->name,
                 .head_type = h->type,
                 .absorbed = "Resize",
                 .absorbed_ops = rs->name,
                 .intermediates = rt->name,
                 .steps = 1,
                 .intermediate_bytes = rt->bytes,
                 .saved_bytes = saved,
                 .at_peak = c->at_peak[d->inputs[0]],
                 .spills = -1};
  pass_tally(c, "Resize");
  return pass_fusion(c, &f, err);
}

/* Absorbs the producers of head inputs ks[0..n) (n = 1 or 2, ks
 * increasing) of kinds kinds[]: one mplan.prologue entry each, in that
 * order, and each DequantizeLinear's scale and zero point appended in the
 * same order (every zero point has its slot, -1 when absent: omitted
 * after a Clip epilogue's operands, the lowering could not tell the two
 * apart). */
static mp_status ab_apply(pass_ctx *c, uint32_t head, const uint32_t *ks,
                          const char *const *kinds, uint32_t n,
                          const bool *shared, uint32_t *left, mp_error *err) {
  const mp_graph *g = c->g;
  const rw_op *h = &c->rw->ops[head];
  const mp_op *d[2];
  const mp_tensor *yt[2];
  int32_t yid[2] = {-1, -1};
  uint32_t own = h->n_inputs, extra = 0;
  uint32_t arity = mp_op_head_arity(mp_graph_op(g, head));
  if (own < arity) own = arity; /* Conv's, Gemm's, Clip's omitted inputs */
  for (uint32_t j = 0; j < n; j++) {
    yid[j] = h->inputs[ks[j]];
    yt[j] = mp_graph_tensor(g, (size_t)yid[j]);
    d[j] = mp_graph_op(g, (size_t)yt[j]->producer);
    if (strcmp(kinds[j], "DequantizeLinear") == 0) extra += 2;
  }
  int32_t *in = rw_alloc(c->rw, own + extra, sizeof *in, err);
  if (!in) return MP_ERR_NOMEM;
  for (uint32_t j = 0; j < own; j++) {
    in[j] = j < h->n_inputs ? h->inputs[j] : -1;
  }
  char value[96] = "";
  uint32_t at = own;
  int32_t up = -1; /* rule 11: the input read replicated */
  for (uint32_t j = 0; j < n; j++) {
    in[ks[j]] = d[j]->inputs[0];
    if (strcmp(kinds[j], "DequantizeLinear") == 0 &&
        ab_resize_under(c, head, ks[j])) {
      up = (int32_t)ks[j];
      in[ks[j]] = ab_resize_op(g, d[j])->inputs[0];
    }
    size_t len = strlen(value);
    snprintf(value + len, sizeof value - len, "%s%s:%u", j ? "," : "", kinds[j],
             ks[j]);
    if (strcmp(kinds[j], "DequantizeLinear") != 0) continue;
    bool zp = d[j]->n_inputs >= 3 && d[j]->inputs[2] >= 0;
    in[at++] = d[j]->inputs[1];
    in[at++] = zp ? d[j]->inputs[2] : -1;
  }
  mp_attr a = {.name = "mplan.prologue", .kind = MP_ATTR_STRING, .s = value};
  mp_status st = rw_set_inputs(c->rw, head, in, own + extra, err);
  if (st == MP_OK) st = rw_set_attr(c->rw, head, &a, err);
  if (st == MP_OK && up >= 0) st = ab_resize_apply(c, head, up, err);
  for (uint32_t j = 0; j < n && st == MP_OK; j++) {
    if (strcmp(kinds[j], "DequantizeLinear") != 0) continue;
    const mp_tensor *scale = mp_graph_tensor(g, (size_t)d[j]->inputs[1]);
    if (scale->bytes == mp_dtype_size(scale->dtype) &&
        pass_attr_int(d[j], "block_size", 0) == 0) {
      continue;
    }
    /* rule 3: per axis or blocked, input 1 only (the shape rule checked
     * the scale) */
    const mp_tensor *x = mp_graph_tensor(g, (size_t)d[j]->inputs[0]);
    int64_t axis = pass_attr_int(d[j], "axis", 1);
    mp_attr ax = {.name = "mplan.p.axis",
                  .kind = MP_ATTR_INT,
                  .i = axis < 0 ? axis + (int64_t)x->rank : axis};
    mp_attr bl = {.name = "mplan.p.block",
                  .kind = MP_ATTR_INT,
                  .i = pass_attr_int(d[j], "block_size", 0)};
    st = rw_set_attr(c->rw, head, &ax, err);
    if (st == MP_OK && bl.i > 0) st = rw_set_attr(c->rw, head, &bl, err);
  }
  for (uint32_t j = 0; j < n && st == MP_OK; j++) {
    /* rule 8: a shared tensor's op goes with its last reader's turn */
    bool last = !shared || !shared[yid[j]] || --left[yid[j]] == 0;
    if (last) rw_kill(c->rw, (uint32_t)yt[j]->producer);
    size_t saved = yt[j]->bytes;
    if (last) (void)mp_size_mul(yt[j]->bytes, 2, &saved);
    mp_fusion f = {.kind = MP_FUSION_PROLOGUE,
                   .op = h->name,
                   .head_type = h->type,
                   .absorbed = kinds[j],
                   .absorbed_ops = d[j]->name,
                   .intermediates = yt[j]->name,
                   .steps = 1,
                   .intermediate_bytes = yt[j]->bytes,
                   .saved_bytes = saved,
                   .at_peak = c->at_peak[h->inputs[ks[j]]],
                   .spills = -1};
    pass_tally(c, kinds[j]);
    st = pass_fusion(c, &f, err);
  }
  return st;
}

/* Rule 5: whether the runtime widens head input k under a prologue
 * a part at a time (runtime/ops.c): a DequantizeLinear'd or Cast weight
 * of a MatMul (a matrix), a Gemm or a Conv, a panel; a MatMul's batched B
 * (rank 3 or more), a matrix of its batch; A of a MatMul or a Gemm, a
 * block of rows (with transA, a block of the stored A's columns); X of a
 * Conv, a panel of groups (group > 1) or a band of output rows (one
 * group). Otherwise the whole f32 tensor is in its workspace. */
static bool ab_panels(const pass_ctx *c, const mp_op *h, uint32_t k) {
  const mp_graph *g = c->g;
  if (ab_ew_head(c, h)) return true; /* rule 9: a run at a time */
  bool mm = strcmp(h->type, "MatMul") == 0, gemm = strcmp(h->type, "Gemm") == 0;
  bool conv = strcmp(h->type, "Conv") == 0;
  if (strcmp(h->type, "ConvTranspose") == 0) return k == 0; /* rule 10 */
  const mp_tensor *x = mp_graph_tensor(g, (size_t)h->inputs[k]);
  if (k == 1) return (mm && x->rank >= 2) || gemm || conv;
  if (mm || gemm) return x->rank >= 2;
  return conv;
}

/* Rule 5: the inputs of head o to absorb, ks[0..n) (n returned), and
 * their kinds kk, given shared (rule 8). */
static uint32_t ab_choose(const pass_ctx *c, uint32_t o, const bool *shared,
                          uint32_t ks[2], const char *kk[2]) {
  const mp_op *h = mp_graph_op(c->g, o);
  const char *kinds[2] = {NULL, NULL};
  size_t bytes[2] = {0, 0};
  bool panels[2] = {false, false};
  /* The product's own operands only (X and W, A and B): the inputs an
   * epilogue added are not what the head multiplies. */
  for (uint32_t k = 0; k < 2 && k < h->n_inputs; k++) {
    kinds[k] = ab_kind(c, o, k, shared);
    if (!kinds[k]) continue;
    bytes[k] = mp_graph_tensor(c->g, (size_t)h->inputs[k])->bytes;
    panels[k] = strcmp(kinds[k], "Resize") != 0 && ab_panels(c, h, k);
  }
  uint32_t n = 0;
  ks[0] = ks[1] = 0;
  for (uint32_t k = 0; k < 2; k++) {
    if (kinds[k] && strcmp(kinds[k], "Resize") == 0) {
      ks[0] = k; /* rule 6 alone: the replicated read */
      kk[0] = kinds[k];
      kk[1] = NULL;
      return 1;
    }
  }
  if (kinds[0] && kinds[1] && panels[0] && panels[1]) {
    ks[0] = 0, ks[1] = 1, n = 2; /* rule 5: both a part at a time */
  } else if (kinds[0] || kinds[1]) {
    uint32_t k = !kinds[0]                ? 1
                 : !kinds[1]              ? 0
                 : panels[0] != panels[1] ? (panels[1] ? 1 : 0)
                 : bytes[1] > bytes[0]    ? 1
                                          : 0;
    ks[0] = k, n = 1;
  }
  kk[0] = kinds[ks[0]];
  kk[1] = n == 2 ? kinds[1] : NULL;
  return n;
}

/* Whether head o absorbs tensor t (one of its inputs 0 and 1) under
 * shared. */
static bool ab_takes(const pass_ctx *c, uint32_t o, int32_t t,
                     const bool *shared) {
  const mp_op *h = mp_graph_op(c->g, o);
  uint32_t ks[2];
  const char *kk[2];
  uint32_t n = ab_choose(c, o, shared, ks, kk);
  for (uint32_t j = 0; j < n; j++) {
    if (h->inputs[ks[j]] == t) return true;
  }
  return false;
}

/* Rule 8: shared[t] for each DequantizeLinear or Cast output t that all
 * of its readers (two or more) absorb, and left[t], their count. Starts
 * from every such tensor whose readers are heads that read it once as
 * input 0 or 1, then drops a tensor some reader would not take, until
 * none is dropped (each reader's choice depends on the other inputs it
 * could take). */
static mp_status ab_shared(pass_ctx *c, bool **shared, uint32_t **left,
                           mp_error *err) {
  const mp_graph *g = c->g;
  size_t nt = mp_graph_tensor_count(g);
  bool *sh = rw_alloc(c->rw, nt, sizeof *sh, err); /* zeroed */
  uint32_t *lf = rw_alloc(c->rw, nt, sizeof *lf, err);
  if (!sh || !lf) return MP_ERR_NOMEM;
  for (size_t t = 0; t < nt; t++) {
    const mp_tensor *x = mp_graph_tensor(g, t);
    if (x->kind != MP_TENSOR_ACTIVATION || x->producer < 0 ||
        x->n_consumers < 2) {
      continue;
    }
    const mp_op *d = mp_graph_op(g, (size_t)x->producer);
    if (strcmp(d->type, "DequantizeLinear") != 0 &&
        strcmp(d->type, "Cast") != 0) {
      continue;
    }
    bool ok = true;
    for (uint32_t i = 0; ok && i < x->n_consumers; i++) {
      const mp_op *r = mp_graph_op(g, x->consumers[i]);
      ok = ab_head(c, r) && pass_reads(r, (int32_t)t) == 1 &&
           (r->inputs[0] == (int32_t)t ||
            (r->n_inputs > 1 && r->inputs[1] == (int32_t)t));
    }
    sh[t] = ok;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t t = 0; t < nt; t++) {
      if (!sh[t]) continue;
      const mp_tensor *x = mp_graph_tensor(g, t);
      for (uint32_t i = 0; i < x->n_consumers; i++) {
        if (!ab_takes(c, x->consumers[i], (int32_t)t, sh)) {
          sh[t] = false;
          changed = true;
          break;
        }
      }
    }
  }
  for (size_t t = 0; t < nt; t++) {
    if (sh[t]) lf[t] = mp_graph_tensor(g, t)->n_consumers;
  }
  *shared = sh;
  *left = lf;
  return MP_OK;
}

mp_status pass_absorb(pass_ctx *c, mp_error *err) {
  bool *shared = NULL;
  uint32_t *left = NULL;
  mp_status st = ab_shared(c, &shared, &left, err);
  for (uint32_t o = 0; st == MP_OK && o < mp_graph_op_count(c->g); o++) {
    const mp_op *h = mp_graph_op(c->g, o);
    if (!ab_head(c, h) && !pass_upsample_binary(h)) continue;
    uint32_t ks[2];
    const char *kk[2];
    uint32_t n = ab_choose(c, o, shared, ks, kk);
    if (n) st = ab_apply(c, o, ks, kk, n, shared, left, err);
  }
  return st;
}
