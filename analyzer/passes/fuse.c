/*
 * fuse.c -- vertical fusion (seed 000 sections 3.2 and 4, seed 002
 * section 2.3): a reduction-type head (Conv, ConvTranspose, Gemm,
 * MatMul, com.microsoft's MatMulNBits) absorbs the chain of elementwise
 * ops after it, in the form of
 * docs/ir-conventions.md (mplan.epilogue, mplan.e<k>.<attr>).
 *
 * The chain grows from the head's output one reader at a time while
 *   1. the value has exactly one reader and is no graph output or
 *      retained state (a second reader would need the intermediate).
 *      The exception is a diamond (fuse_diamond): the value has two
 *      readers, one starts a run of elementwise ops (each value read
 *      once, by the next) and the other is an Add or Mul closing the run,
 *      reading its last value and the value itself -- SiLU, HardSwish
 *      and GELU written out as elementwise ops. The whole diamond is
 *      absorbed and the closing op becomes the entry Mul@j / Add@j
 *      (docs/ir-conventions.md), j the entry the value entered; it holds
 *      one more vector register until then (condition 4). One diamond per
 *      group: the runtime keeps one tapped value, so a group stops before
 *      a second;
 *   2. the reader is elementwise (pass_ew_find) with one output of the
 *      value's own shape and dtype: it consumes whole elements of the
 *      head's result, never a partial result of a full reduction. An op
 *      like Softmax, LayerNormalization or a Reduce* needs a whole row
 *      first: it is a boundary, counted in the detail (seed 000 section
 *      4: a group must not consume a proper part of a reduction's
 *      output);
 *   3. the value sits where the conventions can say so: first input of
 *      a non-commutative op, any input of a commutative one; Clip takes
 *      both bounds as inputs or both as attributes, and a group holds one
 *      Clip whose bounds are inputs (the bundle's epilogue gives the
 *      bounds of one: compile/lower.c), so it stops before a second;
 *      BatchNormalization has its four parameters;
 *   4. the group fits the vector registers: with the backend's VLEN, a
 *      value of the fused loop (16 lanes of 32 bits) takes
 *      ceil(512 / VLEN) registers; the head needs 3 values (accumulator,
 *      input, weight) and each absorbed op its pass_ew registers; the
 *      group stops before it would need more than 31 registers (v0 is
 *      the mask). A group the cap stopped is counted in the detail with
 *      the spills the next op would have cost;
 *   5. every input the reader adds is written before the head in the
 *      order being planned (the file order, or with --order memory the
 *      memory order of the graph before this pass): the fused op then
 *      runs where the head ran, no input waits longer for it, and the
 *      group's output lives where the intermediates lived (the same
 *      shape and dtype), so fusing never raises the live bytes of any
 *      step of that order. A residual Add whose skip comes first
 *      qualifies; an Add whose other operand is computed after the head
 *      does not (fused, the head's inputs would stay alive until that
 *      operand exists, and the memory order could no longer put the
 *      operand's branch after the head, as it does in RandWire and DARTS
 *      cells);
 *   6. with the absorb pass on, the reader is not an Add, Sub, Mul or Div
 *      whose other operand is a nearest Resize that absorb folds into it
 *      (absorb.c rule 6): absorbed, the binary op reads the small map
 *      replicated and writes over the head's output, so the upsampled map
 *      is never stored; fused here, it would be an epilogue operand.
 *   7. the exception to condition 2: a QuantizeLinear to int8 or uint8
 *      after a Conv's or ConvTranspose's chain (fuse_quantize), per tensor
 *      or per output channel (axis 1), not blocked, ends the group: the
 *      fused op writes its int8 output and the f32 values before it exist
 *      only a plane or a band's row at a time in the workspace
 *      (runtime/ops.c, op_epi_quant). After a Gemm (not transA) or a MatMul of
 * matrices (or stacks of them), per tensor: the runtime computes the product a
 * row (or, with a dequantized weight, a block of rows) at a time. MatMulNBits
 * computes whole outputs: its chains stop before it. An elementwise op, a
 * pool, a Concat of two or a Resize that absorbed a DequantizeLinear
 * (absorb.c rule 9, fuse_ew_head) is a head whose group is its
 * QuantizeLinear alone, per tensor: the runtime computes it a tile, a
 * plane or a block at a time (runtime/ops.c, op_run_ew, op_run_pool_tail,
 * op_run_concat_tail, op_run_resize_tail); a
 * BatchNormalization's per tensor or per channel (axis 1), since it runs a
 * tile of one channel at a time (op_run_bn_head).
 *   8. an elementwise head's chain (Add, Sub, Mul, Div, Clip or a unary
 *      op, not a pool, Concat or BatchNormalization: fuse_ew_run), and a
 *      Conv's or ConvTranspose's, goes on through QDQ pairs: after its
 *      QuantizeLinear (7), the sole reader of the 8-bit value, an
 *      elementwise op that absorbed the pair's DequantizeLinear (absorb
 *      rule 9), per tensor, computing f32 of its shape, is absorbed as two
 *      entries, a DequantizeLinear (that scale and zero point) and the op
 *      (fuse_dq_step); its other inputs obey conditions 3 and 5, and an
 *      Add, Sub, Mul or Div may read the other operand, 8-bit of the
 *      output's shape, under a DequantizeLinear of its own: the entry
 *      Add(DequantizeLinear), a residual Add of a quantized skip. A Conv's
 *      QuantizeLinear whose output a DequantizeLinear reads is left, with
 *      its group, to the fuse run after absorb (fuse_defer_quantize). The
 *      QuantizeLinear then sits inside the epilogue: the pair is a round
 *      trip of each f32 value through int8 or uint8, which the runtime
 *      does a tile at a time with the kernels the two ops run, so the
 *      bits are the unfused graph's. The chain may go on through f32
 *      elementwise ops (1-3) and more pairs, and takes one diamond
 *      (fuse_qdiamond): the 8-bit value has two readers, one starting
 *      such a run that ends in an 8-bit value u, the other an Add or Mul
 *      reading u and the value, both under DequantizeLinears, the value's
 *      with the scale and zero point of the run's first (HardSwish
 *      between QDQ pairs). The closing op becomes a DequantizeLinear
 *      entry (u's) and the entry Mul@j (Add@j), j the run's first op
 *      entry: the value that entered it is the value dequantized, as the
 *      closing op read it. Every op absorbed was an elementwise head of
 *      its own (rule 9) that no group has grown yet; a group the chain
 *      absorbs is never a head afterwards.
 *   9. an f32 Add, Sub, Mul or Div of x, of the output's shape, and a
 *      smaller operand it broadcasts (no mplan.* attribute, neither input
 *      a DequantizeLinear's output) whose value's one reader is an Add,
 *      Sub, Mul or Div of it and x heads a chain (fuse_f32_head) that
 *      grows as condition 8's does: an SE block's x * s + x. Apart, the
 *      op's output and x are live together, whole; fused, the runtime
 *      computes a tile at a time (op_run_ew) and the inplace pass writes
 *      the group over x.
 * A `fused_activation` attribute (the bundled models) becomes an explicit
 * epilogue entry (Relu, or Clip with 0 and 6) as soon as a group absorbs
 * anything, so that one attribute says everything.
 *
 * Optional inputs the head omits are written as -1 before the epilogue
 * inputs (Conv/ConvTranspose: X, W, B; Gemm: A, B, C), so the k-th
 * epilogue input is always at the same place.
 *
 * Invariants:
 *   1. A group's head is a source op with no mplan.* attribute but a
 *      DequantizeLinear or Cast prologue (mplan.prologue, mplan.p.*); an op is
 *      absorbed by at most one group (its chained value has one reader,
 *      and a killed op is never offered again), and never both heads a
 *      group and is absorbed by one (condition 8: a grown head is not
 *      absorbed, an absorbed one is dead when its turn as a head comes).
 *   2. The fused op's output is the tail's output (same name, shape and
 *      dtype as every intermediate, but a QuantizeLinear's, condition 7);
 *      the intermediates disappear.
 *   3. saved_bytes = sum over the intermediates of 2 x size: each one was
 *      written once and read once (seed 000 section 4); but for a chain
 *      through QDQ pairs (8), whose f32 and 8-bit intermediates alternate,
 *      all have the same size, so this is 2 x size(intermediate) x steps.
 *   4. With a VLEN, registers x ceil(512 / VLEN) <= 31 for every group
 *      the pass makes (spills 0 unless a head alone exceeds it).
 */
#include <stdio.h>
#include <string.h>

#include "pass.h"

#define FUSE_MAX 32        /* ops a group may absorb */
#define FUSE_REGS 31       /* vector registers a group may use */
#define FUSE_LOOP_BITS 512 /* bits of one value of the fused loop */

typedef struct fuse_entry {
  const char *type;   /* epilogue entry type */
  int tap;            /* Add/Mul whose operand is the value that entered
                         entry tap (a diamond), or -1 */
  int32_t op;         /* absorbed op, or -1 for a fused_activation */
  const mp_op *attrs; /* op whose attributes the entry carries, or NULL */
  double clip_min, clip_max; /* Relu6 as Clip */
  bool clip_consts;
} fuse_entry;

typedef struct fuse_group {
  uint32_t head;
  fuse_entry e[2 * FUSE_MAX + 1];
  size_t n_entries;
  int32_t ops[FUSE_MAX];     /* absorbed ops, in order */
  int32_t chained[FUSE_MAX]; /* the value each absorbed op chains on */
  int32_t tapped[FUSE_MAX];  /* ... and the earlier one it also reads, or -1 */
  size_t n_ops;
  uint32_t regs; /* values live in the loop */
  bool capped;
  uint32_t cap_spills; /* what the op the cap refused would have cost */
  bool upsample;       /* stopped before a Resize absorb folds (6) */
  bool second_tap;     /* stopped before a second diamond */
  /* condition 8: the inputs an absorbed op adds, in entry order, when
   * they are not its inputs but the chained (and tapped) value */
  int32_t xin[FUSE_MAX][6];
  int8_t n_xin[FUSE_MAX]; /* -1: the default */
  const uint8_t *grown;   /* per op: a head whose group is formed */
  bool deferred;          /* its QuantizeLinear left for the run after
                             absorb (fuse_defer_quantize): so is the group */
} fuse_group;

static uint32_t fuse_lmul(uint32_t vlen) {
  return vlen ? (FUSE_LOOP_BITS + vlen - 1) / vlen : 1;
}

/* The trailing inputs of head's DequantizeLinear prologues (each one's
 * scale and zero point, after every other input: absorb rule 3), or 0. */
static uint32_t fuse_prologue_tail(const mp_op *op) {
  mp_prologue pe[2];
  uint32_t n_dq = 0;
  if (mp_op_prologues(op, pe, &n_dq) <= 0 || n_dq == 0) return 0;
  uint32_t own = mp_op_head_arity(op);
  return op->n_inputs > own ? op->n_inputs - own : 0;
}

/* Rule 1; a head may carry the DequantizeLinear or Cast prologue that the
 * absorb pass gave it (the manager runs fuse again after absorb:
 * invariant 12), and nothing else of mplan's. */
static bool fuse_is_head(const mp_op *op) {
  static const char *const heads[] = {"Conv", "ConvTranspose", "Gemm", "MatMul",
                                      "com.microsoft::MatMulNBits"};
  for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) {
    if (strcmp(op->type, heads[i]) != 0) continue;
    if (op->n_outputs != 1) return false;
    for (uint32_t k = 0; k < op->n_attrs; k++) {
      const mp_attr *a = &op->attrs[k];
      if (strncmp(a->name, "mplan.", 6) != 0) continue;
      bool pro = strcmp(a->name, "mplan.prologue") == 0 &&
                 a->kind == MP_ATTR_STRING && a->s &&
                 (strncmp(a->s, "DequantizeLinear:", 17) == 0 ||
                  strncmp(a->s, "Cast:", 5) == 0);
      if (!pro && strcmp(a->name, "mplan.p.axis") != 0 &&
          strcmp(a->name, "mplan.p.block") != 0) {
        return false;
      }
    }
    return true;
  }
  return false;
}

/* An elementwise op, a pool, a Concat of two or a Resize that absorbed a
 * DequantizeLinear (absorb.c rule 9): its group is its QuantizeLinear
 * alone (condition 7). */
static bool fuse_ew_head(const mp_op *op) {
  const pass_ew *ew = pass_ew_find(op->type);
  const mp_attr *pro = mp_op_attr(op, "mplan.prologue");
  bool pool = pass_pool_head(op) || strcmp(op->type, "Concat") == 0 ||
              strcmp(op->type, "Resize") == 0; /* (pass_resize_head) */
  if ((!pool && (!ew || ew->kind == PASS_EW_VARIADIC)) || !pro ||
      pro->kind != MP_ATTR_STRING || !pro->s ||
      strncmp(pro->s, "DequantizeLinear:", 17) != 0 || op->n_outputs != 1) {
    return false;
  }
  for (uint32_t k = 0; k < op->n_attrs; k++) {
    const char *n = op->attrs[k].name;
    if (strncmp(n, "mplan.", 6) == 0 && strcmp(n, "mplan.prologue") != 0 &&
        strcmp(n, "mplan.p.resize") != 0) { /* absorb.c rule 11 */
      return false;
    }
  }
  return true;
}

/* Condition 9: an f32 Add, Sub, Mul or Div of x, of the output's shape,
 * and a smaller operand it broadcasts, whose value's one reader is an
 * Add, Sub, Mul or Div of it and x (an SE block's x * s + x): written
 * apart, the op's output and x are live together, whole. Neither input
 * comes from a DequantizeLinear (the absorb pass's, rule 9). */
static bool fuse_f32_head(const mp_graph *g, const mp_op *op) {
  if (!pass_upsample_binary(op) || op->outputs[0] < 0 || op->n_attrs != 0) {
    return false;
  }
  int32_t v = op->outputs[0];
  const mp_tensor *tv = mp_graph_tensor(g, (size_t)v);
  if (tv->dtype != MP_DTYPE_F32 || tv->kind != MP_TENSOR_ACTIVATION) {
    return false;
  }
  for (uint32_t k = 0; k < 2; k++) {
    int32_t x = op->inputs[k];
    if (x < 0 || mp_graph_tensor(g, (size_t)x)->dtype != MP_DTYPE_F32) {
      return false;
    }
    int32_t p = mp_graph_tensor(g, (size_t)x)->producer;
    if (p >= 0 && !strcmp(mp_graph_op(g, (size_t)p)->type, "DequantizeLinear"))
      return false;
  }
  int32_t r = pass_sole_reader(g, v);
  if (r < 0) return false;
  const mp_op *rop = mp_graph_op(g, (size_t)r);
  if (!pass_upsample_binary(rop)) return false;
  int32_t other = rop->inputs[0] == v ? rop->inputs[1] : rop->inputs[0];
  int32_t scale = other == op->inputs[0] ? op->inputs[1] : op->inputs[0];
  return (other == op->inputs[0] || other == op->inputs[1]) &&
         pass_same_dims(g, other, v) &&
         mp_graph_tensor(g, (size_t)scale)->bytes <
             mp_graph_tensor(g, (size_t)v)->bytes;
}

static bool fuse_is_reduction(const char *type) {
  static const char *const red[] = {"Softmax",
                                    "LogSoftmax",
                                    "Hardmax",
                                    "LayerNormalization",
                                    "RMSNormalization",
                                    "Attention",
                                    "InstanceNormalization",
                                    "GroupNormalization",
                                    "LpNormalization",
                                    "MeanVarianceNormalization",
                                    "GlobalAveragePool",
                                    "GlobalMaxPool",
                                    "GlobalLpPool",
                                    "ArgMax",
                                    "ArgMin",
                                    "TopK",
                                    NULL};
  if (strncmp(type, "Reduce", 6) == 0) return true;
  for (size_t i = 0; red[i]; i++) {
    if (strcmp(red[i], type) == 0) return true;
  }
  return false;
}

/* The epilogue entry a fused_activation string stands for. */
static bool fuse_activation(const mp_op *op, fuse_entry *e) {
  const mp_attr *a = mp_op_attr(op, "fused_activation");
  memset(e, 0, sizeof *e);
  e->op = -1;
  e->tap = -1;
  if (!a || a->kind != MP_ATTR_STRING || !a->s) return false;
  if (strcmp(a->s, "Relu6") == 0) {
    e->type = "Clip";
    e->clip_consts = true;
    e->clip_min = 0;
    e->clip_max = 6;
    return true;
  }
  const pass_ew *ew = pass_ew_find(a->s);
  if (!ew || ew->kind != PASS_EW_UNARY) return false;
  e->type = ew->type;
  return true;
}

static bool fuse_has_unknown_activation(const mp_op *op) {
  fuse_entry e;
  return mp_op_attr(op, "fused_activation") && !fuse_activation(op, &e);
}

/* Condition 3 of the header. */
static bool fuse_position_ok(const mp_op *r, const pass_ew *ew, int32_t v) {
  if (pass_reads(r, v) != 1) return false;
  bool first = r->inputs[0] == v;
  for (uint32_t k = 0; k < r->n_inputs; k++) {
    if (r->inputs[k] < 0 && ew->kind != PASS_EW_CLIP) return false;
  }
  switch (ew->kind) {
    case PASS_EW_UNARY:
      return first && r->n_inputs == 1;
    case PASS_EW_BINARY:
      return (first || ew->commutative) && r->n_inputs >= 2;
    case PASS_EW_CLIP:
      if (!first) return false;
      if (r->n_inputs == 1) {
        return mp_op_attr(r, "min") && mp_op_attr(r, "max");
      }
      return r->n_inputs == 3 && r->inputs[1] >= 0 && r->inputs[2] >= 0;
    case PASS_EW_BATCHNORM:
      return first && r->n_inputs == 5;
    case PASS_EW_VARIADIC:
    case PASS_EW_NONE:
      break;
  }
  return false;
}

static uint32_t fuse_spills(uint32_t regs, uint32_t vlen) {
  uint32_t need = regs * fuse_lmul(vlen);
  return need > FUSE_REGS ? need - FUSE_REGS : 0;
}

/* Condition 4: true (and grp marked capped, with the spills) when a
 * group of regs values would not fit the registers. */
static bool fuse_capped(const pass_ctx *c, fuse_group *grp, uint32_t regs) {
  if (!c->vlen || !fuse_spills(regs, c->vlen)) return false;
  grp->capped = true;
  grp->cap_spills = fuse_spills(regs, c->vlen);
  return true;
}

/* Condition 5: the inputs op r adds besides v exist before the head. */
static bool fuse_ready(const pass_ctx *c, const uint32_t *pos, uint32_t head,
                       const mp_op *r, int32_t v) {
  for (uint32_t k = 0; k < r->n_inputs; k++) {
    if (r->inputs[k] < 0 || r->inputs[k] == v) continue;
    int32_t p = mp_graph_tensor(c->g, (size_t)r->inputs[k])->producer;
    if (p >= 0 && pos[p] > pos[head]) return false;
  }
  return true;
}

/* Why op r, reading chain value v, cannot be absorbed (conditions 2, 3,
 * 5 and 6 of the header): 0 it can; 1 not elementwise (a reduction is
 * counted in *boundaries); 2 an operand comes after the head (*late); 3
 * its other operand is a Resize the absorb pass folds into r. */
static int fuse_refuse(pass_ctx *c, const uint32_t *pos, uint32_t head,
                       uint32_t r, int32_t v, const pass_ew **ew_out) {
  const mp_graph *g = c->g;
  const mp_op *rop = mp_graph_op(g, r);
  const pass_ew *ew = pass_ew_op(g, rop);
  *ew_out = ew;
  if (!ew || c->rw->ops[r].dead || rop->n_outputs != 1 ||
      rw_has_mplan_attr(rop) || fuse_has_unknown_activation(rop) ||
      !fuse_position_ok(rop, ew, v) || !pass_same_type(g, rop->outputs[0], v)) {
    return 1;
  }
  if (c->mask & (1u << MP_PASS_ABSORB)) {
    for (uint32_t k = 0; k < 2 && k < rop->n_inputs; k++) {
      if (rop->inputs[k] != v && pass_upsample_input(c, r, k)) return 3;
    }
  }
  return fuse_ready(c, pos, head, rop, v) ? 0 : 2;
}

/* Whether the group holds a Clip whose bounds are inputs: the bundle
 * gives the bounds of one such entry (compile/lower.c). */
static bool fuse_has_clip_inputs(const pass_ctx *c, const fuse_group *grp) {
  for (size_t k = 0; k < grp->n_ops; k++) {
    const mp_op *r = mp_graph_op(c->g, (size_t)grp->ops[k]);
    if (strcmp(r->type, "Clip") == 0 && r->n_inputs > 1) return true;
  }
  return false;
}

/* Absorbs op r (chained on v, also reading tap value w, or -1) if the
 * registers allow: false when the cap stops the group. */
static bool fuse_take(pass_ctx *c, fuse_group *grp, uint32_t r, int32_t v,
                      int32_t w, int tap, const pass_ew *ew) {
  const mp_op *rop = mp_graph_op(c->g, r);
  fuse_entry act;
  uint32_t regs = grp->regs + ew->registers + (w >= 0 ? 1 : 0);
  if (ew->kind == PASS_EW_CLIP && rop->n_inputs > 1 &&
      fuse_has_clip_inputs(c, grp)) {
    return false; /* the group stops before a second such Clip */
  }
  bool has_act = fuse_activation(rop, &act);
  if (has_act) regs += pass_ew_find(act.type)->registers;
  if (fuse_capped(c, grp, regs)) return false;
  grp->e[grp->n_entries++] =
      (fuse_entry){ew->type, tap, (int32_t)r, rop, 0, 0, false};
  if (has_act) grp->e[grp->n_entries++] = act;
  grp->ops[grp->n_ops] = (int32_t)r;
  grp->tapped[grp->n_ops] = w;
  grp->n_xin[grp->n_ops] = -1;
  grp->chained[grp->n_ops++] = v;
  grp->regs = regs;
  return true;
}

/* Whether v has two readers, two distinct ops: a diamond's opening
 * value (fuse_diamond, fuse_qdiamond try each as the closing op). */
static bool fuse_two_readers(const mp_graph *g, int32_t v) {
  const mp_tensor *t = mp_graph_tensor(g, (size_t)v);
  return t->n_consumers == 2 && t->consumers[0] != t->consumers[1];
}

/* A diamond (condition 1's exception): chain value v has two readers, a
 * run of elementwise ops from one of them (each value read once, by the
 * next) and an Add or Mul that reads the run's last value and v itself,
 * e.g. SiLU x * Sigmoid(x), HardSwish x * Clip(x + 3, 0, 6) / 6, GELU
 * x * (Erf(x / sqrt 2) + 1) * 0.5. The group absorbs the whole diamond;
 * the closing op becomes the entry Mul@j (Add@j), j the entry v entered,
 * and the loop keeps v in one more register until then. Returns the
 * value after the diamond, or -1 when v does not open one (nothing is
 * absorbed then). */
static int32_t fuse_diamond(pass_ctx *c, const uint32_t *pos, fuse_group *grp,
                            int32_t v) {
  const mp_graph *g = c->g;
  if (!fuse_two_readers(g, v)) return -1;
  const mp_tensor *t = mp_graph_tensor(g, (size_t)v);
  for (int first = 0; first < 2; first++) {
    uint32_t a = t->consumers[first], b = t->consumers[1 - first];
    const mp_op *bop = mp_graph_op(g, b);
    const pass_ew *bew = pass_ew_find(bop->type);
    if (!bew || bew->kind != PASS_EW_BINARY || !bew->commutative ||
        bop->n_inputs != 2 || pass_reads(bop, v) != 1 || c->rw->ops[b].dead) {
      continue;
    }
    /* Walk the run from a to b without absorbing anything. */
    uint32_t run[FUSE_MAX];
    const pass_ew *run_ew[FUSE_MAX];
    size_t n = 0;
    int32_t u = v;
    uint32_t r = a;
    const pass_ew *ew;
    bool ok = true;
    while (ok && r != b) {
      ok = n + 1 < FUSE_MAX && grp->n_ops + n + 1 < FUSE_MAX &&
           fuse_refuse(c, pos, grp->head, r, u, &ew) == 0;
      if (!ok) break;
      run_ew[n] = ew;
      run[n++] = r;
      u = mp_graph_op(g, r)->outputs[0];
      int32_t next = mp_graph_tensor(g, (size_t)u)->kind == MP_TENSOR_ACTIVATION
                         ? pass_sole_reader(g, u)
                         : -1;
      ok = next >= 0;
      r = (uint32_t)next;
    }
    int32_t other = bop->inputs[0] == v ? bop->inputs[1] : bop->inputs[0];
    if (!ok || n == 0 || other != u || !pass_same_type(g, bop->outputs[0], v) ||
        rw_has_mplan_attr(bop) || fuse_has_unknown_activation(bop) ||
        bop->n_outputs != 1) {
      continue;
    }
    /* One tapped value per epilogue (the runtime keeps one): a group that
     * holds a diamond stops before a second. */
    for (size_t k = 0; k < grp->n_ops; k++) {
      if (grp->tapped[k] >= 0) {
        grp->second_tap = true;
        return -1;
      }
    }
    /* Absorb: the run chained as usual, then b on u tapping v. */
    fuse_group save = *grp;
    int tap = (int)grp->n_entries;
    int32_t cur = v;
    bool took = true;
    for (size_t k = 0; took && k < n; k++) {
      took = fuse_take(c, grp, run[k], cur, -1, -1, run_ew[k]);
      cur = mp_graph_op(g, run[k])->outputs[0];
    }
    if (took) took = fuse_take(c, grp, b, u, v, tap, bew);
    if (!took) {
      bool capped = grp->capped;
      uint32_t spills = grp->cap_spills;
      *grp = save;
      grp->capped = capped;
      grp->cap_spills = spills;
      return -1;
    }
    return bop->outputs[0];
  }
  return -1;
}

/* Condition 8's first step: before the absorb pass (the manager runs fuse
 * again after it: invariant 12), a Conv's QuantizeLinear whose 8-bit
 * output q a DequantizeLinear reads is left for the second run, where the
 * chain may go on through the op that absorbed that DequantizeLinear (the
 * manager runs it while such a QuantizeLinear is left: invariant 12), and
 * so is the rest of the group: a head with an epilogue takes no more. */
static bool fuse_defer_quantize(const pass_ctx *c, int32_t q) {
  if (!c->before_absorb) return false;
  const mp_tensor *t = mp_graph_tensor(c->g, (size_t)q);
  for (uint32_t k = 0; k < t->n_consumers; k++) {
    const mp_op *r = mp_graph_op(c->g, t->consumers[k]);
    if (strcmp(r->type, "DequantizeLinear") == 0) return true;
  }
  return false;
}

/* Condition 7: QuantizeLinear r, reading chain value v after a Conv, ends
 * the group. True when r was absorbed. */
static bool fuse_quantize(pass_ctx *c, const uint32_t *pos, fuse_group *grp,
                          uint32_t r, int32_t v) {
  const mp_graph *g = c->g;
  const mp_op *q = mp_graph_op(g, r), *h = mp_graph_op(g, grp->head);
  /* a ConvTranspose's output planes are computed one at a time too */
  bool conv =
      strcmp(h->type, "Conv") == 0 || strcmp(h->type, "ConvTranspose") == 0;
  bool ew = fuse_ew_head(h); /* a run of elements at a time */
  /* a product the runtime computes row by row: A not transposed, both
   * operands matrices or stacks of them */
  bool mm =
      (strcmp(h->type, "Gemm") == 0 && pass_attr_int(h, "transA", 0) == 0) ||
      (strcmp(h->type, "MatMul") == 0 && h->n_inputs == 2 &&
       h->inputs[0] >= 0 && h->inputs[1] >= 0 &&
       mp_graph_tensor(g, (size_t)h->inputs[0])->rank >= 2 &&
       mp_graph_tensor(g, (size_t)h->inputs[1])->rank >= 2);
  if (!(conv || mm || ew) || strcmp(q->type, "QuantizeLinear") != 0 ||
      c->rw->ops[r].dead || q->n_outputs != 1 || q->n_inputs < 2 ||
      q->n_inputs > 3 || q->inputs[0] != v || q->inputs[1] < 0 ||
      pass_reads(q, v) != 1 || rw_has_mplan_attr(q) ||
      pass_attr_int(q, "block_size", 0) != 0 ||
      !pass_same_dims(g, v, q->outputs[0])) {
    return false;
  }
  if (conv && fuse_defer_quantize(c, q->outputs[0])) {
    grp->deferred = true;
    return false;
  }
  const mp_tensor *x = mp_graph_tensor(g, (size_t)v);
  const mp_tensor *y = mp_graph_tensor(g, (size_t)q->outputs[0]);
  const mp_tensor *s = mp_graph_tensor(g, (size_t)q->inputs[1]);
  const mp_tensor *z = q->n_inputs == 3 && q->inputs[2] >= 0
                           ? mp_graph_tensor(g, (size_t)q->inputs[2])
                           : NULL;
  if (x->dtype != MP_DTYPE_F32 || s->dtype != MP_DTYPE_F32 ||
      (y->dtype != MP_DTYPE_I8 && y->dtype != MP_DTYPE_U8) ||
      (x->rank < 2 && !ew) ||
      (z && (z->dtype != y->dtype || z->bytes != s->bytes / 4)) ||
      (!z && y->dtype != MP_DTYPE_U8)) {
    return false;
  }
  int64_t axis = pass_attr_int(q, "axis", 1);
  if (axis < 0) axis += (int64_t)x->rank;
  /* a BatchNormalization head runs a tile of one channel at a time */
  bool bn = ew && strcmp(h->type, "BatchNormalization") == 0;
  if (s->bytes != 4 &&
      ((!conv && !bn) || axis != 1 ||
       (int64_t)s->bytes != 4 * (int64_t)mp_graph_dim_of(g, &x->shape[1]))) {
    return false; /* a product's or another elementwise op's: per tensor */
  }
  /* the scale and the rounded value: two more registers */
  static const pass_ew quantize = {"QuantizeLinear", PASS_EW_NONE, false, 2};
  return fuse_ready(c, pos, grp->head, q, v) &&
         fuse_take(c, grp, r, v, -1, -1, &quantize);
}

/* Condition 8: the elementwise ops a chain through QDQ pairs holds (Add,
 * Sub, Mul, Div, Clip or a unary op, not a pool, Concat or
 * BatchNormalization). */
static bool fuse_chain_kind(const pass_ew *ew) {
  return ew && (ew->kind == PASS_EW_UNARY || ew->kind == PASS_EW_BINARY ||
                ew->kind == PASS_EW_CLIP);
}

/* Condition 8: an elementwise head whose chain goes on through QDQ
 * pairs. */
static bool fuse_ew_chain_head(const mp_op *op) {
  return fuse_ew_head(op) && fuse_chain_kind(pass_ew_find(op->type));
}

/* The scale and zero point (or -1) of op's DequantizeLinear prologue on
 * input k: they follow its own inputs (docs/ir-conventions.md; alone, an
 * absent zero point is omitted). */
static void fuse_dq_params(const mp_op *op, uint32_t k, uint32_t n_dq,
                           int32_t *s, int32_t *z) {
  uint32_t own = mp_op_head_arity(op);
  uint32_t slot = own + (n_dq == 2 ? 2 * k : 0);
  *s = slot < op->n_inputs ? op->inputs[slot] : -1;
  *z = slot + 1 < op->n_inputs ? op->inputs[slot + 1] : -1;
}

/* The DequantizeLinear prologue of r on the input reading u (8-bit), per
 * tensor: its input index, or -1; *n_dq the prologues r has, *ps and *pz
 * that DequantizeLinear's scale and zero point (or -1). */
static int fuse_dq_input(const pass_ctx *c, const mp_op *r, int32_t u,
                         uint32_t *n_dq, int32_t *ps, int32_t *pz) {
  const mp_graph *g = c->g;
  mp_prologue pe[2];
  int n = mp_op_prologues(r, pe, n_dq);
  if (n <= 0 || (uint32_t)n != *n_dq || pass_reads(r, u) != 1) return -1;
  for (uint32_t k = 0; k < r->n_attrs; k++) {
    const char *a = r->attrs[k].name;
    if ((strncmp(a, "mplan.", 6) == 0 && strcmp(a, "mplan.prologue") != 0) ||
        strcmp(a, "fused_activation") == 0) {
      return -1;
    }
  }
  for (int j = 0; j < n; j++) {
    uint32_t k = pe[j].input;
    if (k >= r->n_inputs || r->inputs[k] != u) continue;
    int32_t s, z;
    fuse_dq_params(r, (uint32_t)j, *n_dq, &s, &z);
    const mp_tensor *x = mp_graph_tensor(g, (size_t)u);
    if (s < 0 || mp_graph_tensor(g, (size_t)s)->dtype != MP_DTYPE_F32 ||
        mp_graph_tensor(g, (size_t)s)->bytes != 4 ||
        (x->dtype != MP_DTYPE_I8 && x->dtype != MP_DTYPE_U8) ||
        (z >= 0 && (mp_graph_tensor(g, (size_t)z)->dtype != x->dtype ||
                    mp_graph_tensor(g, (size_t)z)->bytes != 1))) {
      return -1;
    }
    *ps = s;
    *pz = z;
    return (int)k;
  }
  return -1;
}

/* The entry of a binary op whose operand a DequantizeLinear widens. */
static const char *fuse_qoperand_entry(const char *type) {
  static const char *const names[][2] = {{"Add", "Add(DequantizeLinear)"},
                                         {"Sub", "Sub(DequantizeLinear)"},
                                         {"Mul", "Mul(DequantizeLinear)"},
                                         {"Div", "Div(DequantizeLinear)"}};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    if (strcmp(names[k][0], type) == 0) return names[k][1];
  }
  return NULL;
}

/* Condition 8, one step: r reads the chain's 8-bit value u under its
 * DequantizeLinear prologue (per tensor) and computes f32 of u's shape,
 * its other inputs written before the head: f32, or for an Add, Sub, Mul
 * or Div an 8-bit tensor of u's shape under a DequantizeLinear of its
 * own (a residual Add between pairs). The group takes a DequantizeLinear
 * entry (u's scale and zero point), then r's own (Add(DequantizeLinear)
 * for the latter: the operand, its scale and zero point). */
static bool fuse_dq_step(pass_ctx *c, const uint32_t *pos, fuse_group *grp,
                         uint32_t r, int32_t u) {
  const mp_graph *g = c->g;
  const mp_op *rop = mp_graph_op(g, r);
  const pass_ew *ew = pass_ew_op(g, rop);
  uint32_t n_dq = 0, n_o = 0;
  if (!fuse_chain_kind(ew) || c->rw->ops[r].dead || grp->grown[r] ||
      rop->n_outputs != 1 || grp->n_ops + 2 > FUSE_MAX ||
      grp->n_entries + 2 > 2 * FUSE_MAX || strcmp(rop->type, "Not") == 0 ||
      strcmp(rop->type, "PRelu") == 0) {
    return false;
  }
  int32_t su, zu, so = -1, zo = -1;
  int k = fuse_dq_input(c, rop, u, &n_dq, &su, &zu);
  int32_t y = rop->outputs[0];
  uint32_t own = mp_op_head_arity(rop);
  if (k < 0 || mp_graph_tensor(g, (size_t)y)->dtype != MP_DTYPE_F32 ||
      !pass_same_dims(g, y, u) || own >= rop->n_inputs) {
    return false;
  }
  bool ok = false;
  const char *type = ew->type;
  int32_t other = -1;
  switch (ew->kind) {
    case PASS_EW_UNARY:
      ok = k == 0 && own == 1 && n_dq == 1;
      break;
    case PASS_EW_BINARY:
      other = rop->inputs[1 - k];
      ok = (k == 0 || ew->commutative) && own == 2 && other >= 0;
      if (ok && n_dq == 2) { /* the other operand quantized too */
        type = fuse_qoperand_entry(rop->type);
        ok = type && fuse_dq_input(c, rop, other, &n_o, &so, &zo) == 1 - k &&
             pass_same_dims(g, other, y);
      } else {
        ok = ok && n_dq == 1 &&
             mp_graph_tensor(g, (size_t)other)->dtype == MP_DTYPE_F32;
      }
      break;
    case PASS_EW_CLIP:
      ok = k == 0 && own == 3 && n_dq == 1 && rop->inputs[1] >= 0 &&
           rop->inputs[2] >= 0 && !fuse_has_clip_inputs(c, grp);
      break;
    default:
      break;
  }
  if (!ok || !fuse_ready(c, pos, grp->head, rop, u)) return false;
  /* the DequantizeLinear's scale and zero point: two more registers (a
   * quantized operand's: three) */
  uint32_t regs = grp->regs + 2 + ew->registers + (so >= 0 ? 3 : 0);
  if (fuse_capped(c, grp, regs)) return false;
  size_t at = grp->n_ops;
  grp->e[grp->n_entries++] =
      (fuse_entry){"DequantizeLinear", -1, (int32_t)r, NULL, 0, 0, false};
  grp->e[grp->n_entries++] =
      (fuse_entry){type, -1, (int32_t)r, rop, 0, 0, false};
  grp->ops[at] = (int32_t)r;
  grp->tapped[at] = -1;
  grp->chained[at] = u;
  grp->n_ops++;
  grp->regs = regs;
  /* its inputs in entry order: u's scale and zero point, then the op's
   * own but u (a binary op's other operand, then its scale and zero point
   * when quantized; a Clip's bounds) */
  int32_t *x = grp->xin[at];
  int8_t n = 0;
  x[n++] = su;
  x[n++] = zu;
  for (uint32_t j = 0; j < own; j++) {
    if (j != (uint32_t)k) x[n++] = rop->inputs[j];
  }
  if (so >= 0) {
    x[n++] = so;
    x[n++] = zo;
  }
  grp->n_xin[at] = n;
  return true;
}

static int32_t fuse_qdiamond(pass_ctx *c, const uint32_t *pos, fuse_group *grp,
                             int32_t q);

/* Condition 8 after a QuantizeLinear of the chain whose 8-bit output is
 * q: the op reading q (fuse_dq_step) or, with diamonds (not inside a
 * diamond's run), a diamond (fuse_qdiamond). Returns the f32 value the
 * chain goes on from, or -1 (nothing absorbed). */
static int32_t fuse_after_q(pass_ctx *c, const uint32_t *pos, fuse_group *grp,
                            int32_t q, size_t *diamonds) {
  const mp_graph *g = c->g;
  if (mp_graph_tensor(g, (size_t)q)->kind != MP_TENSOR_ACTIVATION) return -1;
  int32_t r = pass_sole_reader(g, q);
  if (r >= 0) {
    return fuse_dq_step(c, pos, grp, (uint32_t)r, q)
               ? mp_graph_op(g, (size_t)r)->outputs[0]
               : -1;
  }
  int32_t w = diamonds ? fuse_qdiamond(c, pos, grp, q) : -1;
  if (w >= 0) (*diamonds)++;
  return w;
}

/* Condition 8: grows an elementwise head's chain from its f32 value v:
 * elementwise ops (conditions 1-3 and 5), a QuantizeLinear (7) and,
 * after it, the op reading its 8-bit output under a DequantizeLinear
 * (fuse_dq_step), or a diamond of such steps (fuse_qdiamond). stop >= 0:
 * the run inside a diamond, which must end in the 8-bit value op stop
 * reads: returns that value, or -1. stop < 0: returns the chain's last
 * value. */
static int32_t fuse_ew_run(pass_ctx *c, const uint32_t *pos, fuse_group *grp,
                           int32_t v, int32_t stop, size_t *diamonds) {
  const mp_graph *g = c->g;
  for (;;) {
    int32_t fail = stop >= 0 ? -1 : v;
    if (grp->n_ops >= FUSE_MAX || grp->capped ||
        mp_graph_tensor(g, (size_t)v)->kind != MP_TENSOR_ACTIVATION) {
      return fail;
    }
    int32_t r = pass_sole_reader(g, v);
    if (r < 0) return fail;
    const mp_op *rop = mp_graph_op(g, (size_t)r);
    const pass_ew *ew;
    int why = fuse_refuse(c, pos, grp->head, (uint32_t)r, v, &ew);
    if (why == 0) {
      if (!fuse_take(c, grp, (uint32_t)r, v, -1, -1, ew)) return fail;
      v = rop->outputs[0];
      continue;
    }
    if (why != 1 || !fuse_quantize(c, pos, grp, (uint32_t)r, v)) return fail;
    int32_t q = rop->outputs[0];
    fail = stop >= 0 ? -1 : q;
    if (stop >= 0 &&
        mp_graph_tensor(g, (size_t)q)->kind == MP_TENSOR_ACTIVATION &&
        pass_sole_reader(g, q) == stop) {
      return q;
    }
    v = fuse_after_q(c, pos, grp, q, stop >= 0 ? NULL : diamonds);
    if (v < 0) return fail;
  }
}

/* Condition 8's diamond: the chain's 8-bit value q has two readers, a
 * (fuse_dq_step) starting a run that ends in an 8-bit value u, and an Add
 * or Mul b reading u and q, each under a DequantizeLinear prologue, q's
 * with a's scale and zero point (HardSwish x * Clip(x + 3, 0, 6) / 6
 * between QDQ pairs). The group absorbs the run, then b as a
 * DequantizeLinear entry (u's) and the entry Mul@j (Add@j), j a's entry:
 * the value that entered it is q dequantized, as b reads it. Returns b's
 * output, or -1 (nothing absorbed). */
static int32_t fuse_qdiamond(pass_ctx *c, const uint32_t *pos, fuse_group *grp,
                             int32_t q) {
  const mp_graph *g = c->g;
  if (!fuse_two_readers(g, q)) return -1;
  const mp_tensor *t = mp_graph_tensor(g, (size_t)q);
  for (int first = 0; first < 2; first++) {
    uint32_t a = t->consumers[first], b = t->consumers[1 - first];
    const mp_op *bop = mp_graph_op(g, b);
    const pass_ew *bew = pass_ew_op(g, bop);
    uint32_t n_dq = 0, n_u = 0;
    int32_t sb, zb, su, zu, sa = -1, za = -1;
    int kq = fuse_dq_input(c, bop, q, &n_dq, &sb, &zb);
    if (!bew || bew->kind != PASS_EW_BINARY || !bew->commutative || kq < 0 ||
        n_dq != 2 || c->rw->ops[b].dead || grp->grown[b] ||
        bop->n_outputs != 1 || mp_op_head_arity(bop) != 2 ||
        mp_graph_tensor(g, (size_t)bop->outputs[0])->dtype != MP_DTYPE_F32 ||
        !pass_same_dims(g, bop->outputs[0], q)) {
      continue;
    }
    int32_t u = bop->inputs[1 - kq];
    if (fuse_dq_input(c, bop, u, &n_u, &su, &zu) != 1 - kq) continue;
    for (size_t k = 0; k < grp->n_ops; k++) {
      if (grp->tapped[k] >= 0) {
        grp->second_tap = true; /* one tapped value per epilogue */
        return -1;
      }
    }
    uint32_t n_a = 0;
    (void)fuse_dq_input(c, mp_graph_op(g, a), q, &n_a, &sa, &za);
    bool ready = true;
    for (uint32_t j = 2; j < bop->n_inputs; j++) {
      int32_t p = bop->inputs[j] >= 0
                      ? mp_graph_tensor(g, (size_t)bop->inputs[j])->producer
                      : -1;
      ready = ready && (p < 0 || pos[p] < pos[grp->head]);
    }
    fuse_group save = *grp;
    int tap = (int)grp->n_entries + 1; /* a's own entry, after its DQ */
    uint32_t regs = 0;
    bool ok = ready && sa == sb && za == zb &&
              fuse_dq_step(c, pos, grp, a, q) &&
              fuse_ew_run(c, pos, grp, mp_graph_op(g, a)->outputs[0],
                          (int32_t)b, NULL) == u &&
              grp->n_ops < FUSE_MAX;
    if (ok) {
      regs = grp->regs + 2 + bew->registers + 1;
      ok = !fuse_capped(c, &save, regs);
    }
    if (!ok) {
      bool capped = grp->capped || save.capped;
      uint32_t spills = grp->capped ? grp->cap_spills : save.cap_spills;
      *grp = save;
      grp->capped = capped;
      grp->cap_spills = spills;
      return -1;
    }
    size_t at = grp->n_ops++;
    grp->e[grp->n_entries++] =
        (fuse_entry){"DequantizeLinear", -1, (int32_t)b, NULL, 0, 0, false};
    grp->e[grp->n_entries++] =
        (fuse_entry){bew->type, tap, (int32_t)b, bop, 0, 0, false};
    grp->ops[at] = (int32_t)b;
    grp->chained[at] = u;
    grp->tapped[at] = q;
    grp->xin[at][0] = su;
    grp->xin[at][1] = zu;
    grp->n_xin[at] = 2;
    grp->regs = regs;
    return bop->outputs[0];
  }
  return -1;
}

/* Grows the group from its head (conditions 1-5 and 7). */
static void fuse_grow(pass_ctx *c, const uint32_t *pos, fuse_group *grp,
                      size_t *boundaries, size_t *late, size_t *diamonds) {
  const mp_graph *g = c->g;
  const mp_op *head = mp_graph_op(g, grp->head);
  int32_t v = head->outputs[0];
  fuse_entry act;
  grp->regs = 3;
  if (fuse_activation(head, &act)) {
    grp->e[grp->n_entries++] = act;
    grp->regs += pass_ew_find(act.type)->registers;
  }
  if (fuse_ew_chain_head(head) || fuse_f32_head(g, head)) {
    (void)fuse_ew_run(c, pos, grp, v, -1, diamonds);
    return;
  }
  if (fuse_ew_head(head)) {
    /* condition 7 only: the QuantizeLinear reading the output */
    int32_t r = mp_graph_tensor(g, (size_t)v)->kind == MP_TENSOR_ACTIVATION
                    ? pass_sole_reader(g, v)
                    : -1;
    if (r >= 0) (void)fuse_quantize(c, pos, grp, (uint32_t)r, v);
    return;
  }
  while (grp->n_ops < FUSE_MAX && !grp->capped) {
    const mp_tensor *t = mp_graph_tensor(g, (size_t)v);
    if (t->kind != MP_TENSOR_ACTIVATION) break;
    int32_t r = pass_sole_reader(g, v);
    if (r < 0) {
      int32_t w = fuse_diamond(c, pos, grp, v);
      if (w < 0) break;
      (*diamonds)++;
      v = w;
      continue;
    }
    const pass_ew *ew;
    int why = fuse_refuse(c, pos, grp->head, (uint32_t)r, v, &ew);
    if (why == 1 && !ew && fuse_is_reduction(mp_graph_op(g, (size_t)r)->type))
      (*boundaries)++;
    if (why == 2) (*late)++;
    if (why == 3) grp->upsample = true;
    if (why == 1 && fuse_quantize(c, pos, grp, (uint32_t)r, v)) {
      /* condition 8: a Conv's or ConvTranspose's chain goes on through
       * the pairs after it (the runtime runs it a plane or a row at a
       * time) */
      int32_t q = mp_graph_op(g, (size_t)r)->outputs[0];
      const char *h = mp_graph_op(g, grp->head)->type;
      int32_t w = strcmp(h, "Conv") == 0 || strcmp(h, "ConvTranspose") == 0
                      ? fuse_after_q(c, pos, grp, q, diamonds)
                      : -1;
      if (w >= 0) (void)fuse_ew_run(c, pos, grp, w, -1, diamonds);
      break;
    }
    if (why || !fuse_take(c, grp, (uint32_t)r, v, -1, -1, ew)) break;
    v = mp_graph_op(g, (size_t)r)->outputs[0];
  }
}

/* A QuantizeLinear without a zero point: its entry still has the slot. */
static bool fuse_no_zero_point(const mp_graph *g, int32_t o) {
  const mp_op *op = mp_graph_op(g, (size_t)o);
  return strcmp(op->type, "QuantizeLinear") == 0 && op->n_inputs == 2;
}

/* The head's inputs, padded to its full count, then each absorbed op's
 * inputs other than the chained value, then a DequantizeLinear prologue's
 * scale and zero point (docs/ir-conventions.md: they follow the epilogue's
 * inputs). */
static mp_status fuse_inputs(pass_ctx *c, const fuse_group *grp,
                             mp_error *err) {
  const mp_op *head = mp_graph_op(c->g, grp->head);
  uint32_t tail = fuse_prologue_tail(head);
  uint32_t own = head->n_inputs - tail;
  if (own < mp_op_head_arity(head)) own = mp_op_head_arity(head);
  uint32_t n = own + tail;
  for (size_t k = 0; k < grp->n_ops; k++) {
    if (grp->n_xin[k] >= 0) {
      n += (uint32_t)grp->n_xin[k];
      continue;
    }
    n += mp_graph_op(c->g, (size_t)grp->ops[k])->n_inputs - 1;
    n -= grp->tapped[k] >= 0;
    n += fuse_no_zero_point(c->g, grp->ops[k]);
  }
  int32_t *in = rw_alloc(c->rw, n, sizeof *in, err);
  if (!in) return MP_ERR_NOMEM;
  uint32_t at = 0;
  for (uint32_t k = 0; k < own; k++) {
    in[at++] = k < head->n_inputs ? head->inputs[k] : -1;
  }
  for (size_t k = 0; k < grp->n_ops; k++) {
    if (grp->n_xin[k] >= 0) {
      for (int8_t j = 0; j < grp->n_xin[k]; j++) in[at++] = grp->xin[k][j];
      continue;
    }
    const mp_op *r = mp_graph_op(c->g, (size_t)grp->ops[k]);
    bool skipped = false, tap_skipped = grp->tapped[k] < 0;
    for (uint32_t j = 0; j < r->n_inputs; j++) {
      if (!skipped && r->inputs[j] == grp->chained[k]) {
        skipped = true;
        continue;
      }
      if (!tap_skipped && r->inputs[j] == grp->tapped[k]) {
        tap_skipped = true;
        continue;
      }
      in[at++] = r->inputs[j];
    }
    if (fuse_no_zero_point(c->g, grp->ops[k])) in[at++] = -1;
  }
  for (uint32_t k = 0; k < tail; k++) {
    in[at++] = head->inputs[head->n_inputs - tail + k];
  }
  return rw_set_inputs(c->rw, grp->head, in, at, err);
}

static mp_status fuse_attr_str(pass_ctx *c, uint32_t op, const char *name,
                               const char *s, mp_error *err) {
  mp_attr a = {.name = name, .kind = MP_ATTR_STRING, .s = s};
  return rw_set_attr(c->rw, op, &a, err);
}

/* mplan.epilogue and every entry's attributes as mplan.e<k>.<name>. */
static mp_status fuse_attrs(pass_ctx *c, const fuse_group *grp, mp_buf *types,
                            mp_error *err) {
  mp_status st = rw_remove_attr(c->rw, grp->head, "fused_activation", err);
  for (size_t k = 0; st == MP_OK && k < grp->n_entries; k++) {
    const fuse_entry *e = &grp->e[k];
    char name[160];
    mp_buf_printf(types, "%s%s", k ? "," : "", e->type);
    if (e->tap >= 0) mp_buf_printf(types, "@%d", e->tap);
    if (e->clip_consts) {
      const double v[2] = {e->clip_min, e->clip_max};
      const char *key[2] = {"min", "max"};
      for (int j = 0; st == MP_OK && j < 2; j++) {
        snprintf(name, sizeof name, "mplan.e%zu.%s", k, key[j]);
        mp_attr a = {.name = name, .kind = MP_ATTR_FLOAT, .f = v[j]};
        st = rw_set_attr(c->rw, grp->head, &a, err);
      }
    }
    for (uint32_t j = 0; st == MP_OK && e->attrs && j < e->attrs->n_attrs;
         j++) {
      mp_attr a = e->attrs->attrs[j];
      /* an absorbed elementwise head's prologue is its DequantizeLinear
       * entry (condition 8) */
      if (strcmp(a.name, "fused_activation") == 0 ||
          strncmp(a.name, "mplan.", 6) == 0) {
        continue;
      }
      snprintf(name, sizeof name, "mplan.e%zu.%s", k, a.name);
      a.name = name;
      st = rw_set_attr(c->rw, grp->head, &a, err);
    }
  }
  if (st == MP_OK) st = mp_buf_status(types, "fuse", err);
  if (st == MP_OK) {
    st = fuse_attr_str(c, grp->head, "mplan.epilogue", mp_buf_str(types), err);
  }
  return st;
}

/* The fusion record: names, saved_bytes = 2 x size x steps. */
static mp_status fuse_record(pass_ctx *c, const fuse_group *grp,
                             const char *types, mp_error *err) {
  const mp_graph *g = c->g;
  const mp_op *head = mp_graph_op(g, grp->head);
  mp_buf ops, mids;
  mp_buf_init(&ops, mp_graph_alloc(g));
  mp_buf_init(&mids, mp_graph_alloc(g));
  mp_fusion f = {
      .kind = MP_FUSION_VERTICAL,
      .op = head->name,
      .head_type = head->type,
      .absorbed = types,
      .steps = (uint32_t)grp->n_ops,
      .registers = grp->regs * fuse_lmul(c->vlen),
      .spills = c->vlen ? (int32_t)fuse_spills(grp->regs, c->vlen) : -1,
      .capped = grp->capped};
  for (size_t k = 0; k < grp->n_ops; k++) {
    const mp_tensor *t = mp_graph_tensor(g, (size_t)grp->chained[k]);
    mp_buf_printf(&ops, "%s%s", k ? "," : "",
                  mp_graph_op(g, (size_t)grp->ops[k])->name);
    mp_buf_printf(&mids, "%s%s", k ? "," : "", t->name);
    if (k == 0) f.intermediate_bytes = t->bytes;
    size_t twice;
    if (mp_size_mul(t->bytes, 2, &twice)) {
      (void)mp_size_add(f.saved_bytes, twice, &f.saved_bytes);
    }
    f.at_peak = f.at_peak || c->at_peak[grp->chained[k]];
  }
  mp_status st = mp_buf_status(&ops, "fuse", err);
  if (st == MP_OK) st = mp_buf_status(&mids, "fuse", err);
  f.absorbed_ops = mp_buf_str(&ops);
  f.intermediates = mp_buf_str(&mids);
  if (st == MP_OK) st = pass_fusion(c, &f, err);
  mp_buf_free(&ops);
  mp_buf_free(&mids);
  return st;
}

static mp_status fuse_apply(pass_ctx *c, const fuse_group *grp, mp_error *err) {
  const mp_op *last = mp_graph_op(c->g, (size_t)grp->ops[grp->n_ops - 1]);
  mp_buf types;
  mp_buf_init(&types, mp_graph_alloc(c->g));
  mp_status st = fuse_inputs(c, grp, err);
  if (st == MP_OK) st = fuse_attrs(c, grp, &types, err);
  if (st == MP_OK) {
    st = rw_set_outputs(c->rw, grp->head, last->outputs, 1, err);
  }
  if (st == MP_OK) st = fuse_record(c, grp, mp_buf_str(&types), err);
  if (st == MP_OK) {
    /* The fused op keeps its head's key: it runs as soon as every input
     * is there (the commit's Kahn order), which is where the head ran
     * when the epilogue's operands were ready before it, the common
     * case (a residual). Running it where the tail ran instead would
     * keep the head's inputs alive to there. */
    for (size_t k = 0; k < grp->n_ops; k++)
      rw_kill(c->rw, (uint32_t)grp->ops[k]);
    pass_tally(c, mp_graph_op(c->g, grp->head)->type);
  }
  mp_buf_free(&types);
  return st;
}

mp_status pass_fuse(pass_ctx *c, mp_error *err) {
  size_t boundaries = 0, capped = 0, cap_spills = 0, spills = 0, late = 0,
         diamonds = 0, upsamples = 0, second_taps = 0;
  size_t n = mp_graph_op_count(c->g);
  const mp_alloc *a = mp_graph_alloc(c->g);
  uint32_t *pos = mp_calloc(a, n + 1, sizeof *pos);
  uint8_t *grown = mp_calloc(a, n + 1, 1);
  mp_status st = pos && grown
                     ? MP_OK
                     : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                                    mp_graph_source(c->g));
  /* Condition 5 reads positions in the order being planned. */
  for (size_t k = 0; st == MP_OK && k < n; k++) pos[c->order[k]] = (uint32_t)k;
  for (uint32_t o = 0; st == MP_OK && o < n; o++) {
    const mp_op *op = mp_graph_op(c->g, o);
    if ((!fuse_is_head(op) && !fuse_ew_head(op) && !fuse_f32_head(c->g, op)) ||
        fuse_has_unknown_activation(op) || c->rw->ops[o].dead) {
      continue; /* dead: absorbed by an earlier head's chain (8) */
    }
    fuse_group grp;
    memset(&grp, 0, sizeof grp);
    grp.head = o;
    grp.grown = grown;
    fuse_grow(c, pos, &grp, &boundaries, &late, &diamonds);
    if (grp.capped) {
      capped++;
      cap_spills += grp.cap_spills;
    }
    upsamples += grp.upsample;
    second_taps += grp.second_tap;
    if (grp.n_ops == 0 || grp.deferred) continue;
    spills += c->vlen ? fuse_spills(grp.regs, c->vlen) : 0;
    grown[o] = 1;
    st = fuse_apply(c, &grp, err);
  }
  mp_free(a, pos);
  mp_free(a, grown);
  if (diamonds) {
    mp_buf_printf(&c->note, "%zu diamond%s (x * f(x))", diamonds,
                  diamonds == 1 ? "" : "s");
  }
  if (boundaries) {
    mp_buf_printf(&c->note, "%s%zu chain%s stopped at a full reduction",
                  c->note.len ? "; " : "", boundaries,
                  boundaries == 1 ? "" : "s");
  }
  if (late) {
    mp_buf_printf(&c->note,
                  "%s%zu chain%s stopped at an operand computed after the "
                  "head",
                  c->note.len ? "; " : "", late, late == 1 ? "" : "s");
  }
  if (second_taps) {
    mp_buf_printf(&c->note, "%s%zu chain%s stopped at a second diamond",
                  c->note.len ? "; " : "", second_taps,
                  second_taps == 1 ? "" : "s");
  }
  if (upsamples) {
    mp_buf_printf(
        &c->note, "%s%zu chain%s stopped at a Resize the absorb pass folds",
        c->note.len ? "; " : "", upsamples, upsamples == 1 ? "" : "s");
  }
  if (c->vlen) {
    mp_buf_printf(&c->note,
                  "%sVLEN %u: %zu group%s capped by registers (avoided "
                  "%zu spilled registers), %zu estimated spills",
                  c->note.len ? "; " : "", c->vlen, capped,
                  capped == 1 ? "" : "s", cap_spills, spills);
  }
  return st;
}
