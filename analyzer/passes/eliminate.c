/*
 * eliminate.c -- op elimination (seed 000 section 3.1): ops whose output
 * equals an input, or that nobody reads.
 *
 * Rules, each "y is x": readers of y read x instead and the op goes.
 *   1. Identity.
 *   2. Dropout in inference (no training_mode, or a constant false one),
 *      its mask output unread.
 *   3. Cast to the type the input already has.
 *   4. Transpose of a Transpose whose permutations compose to the
 *      identity: y is the first one's input.
 *   5. A view op (Reshape, Flatten, Squeeze, Unsqueeze) whose output has
 *      the input's shape; or a chain of view ops that ends where it
 *      started. A Reshape reading another view op reads that op's input
 *      instead (a Reshape chain collapses) when its target shape has no
 *      0 entry (0 would copy a dim of the input it no longer reads).
 *   6. x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0 with a constant of known
 *      values that does not broadcast x to a larger shape.
 *   7. Dead ops: no output read by a live op, no graph output, no
 *      retained state, no control flow.
 *   8. A move between two QDQ pairs of one scale and zero point: an op
 *      that only moves, selects or repeats elements (el_move: Transpose,
 *      the view ops, Slice, DepthToSpace, SpaceToDepth, a nearest Resize
 *      but tf_crop_and_resize, MaxPool with one output, GlobalMaxPool, a
 *      Concat) whose data inputs are all DequantizeLinear outputs and
 *      whose output's one reader is a QuantizeLinear, all per tensor with
 *      the same known scale s and zero point z, and the QuantizeLinear's
 *      type the DequantizeLinears' inputs'. The op then reads the 8-bit
 *      inputs and writes the QuantizeLinear's output; the QuantizeLinear
 *      goes (and each DequantizeLinear no one else reads, by rule 7).
 *      Exact: each output element is some input element n (for MaxPool
 *      the largest; DequantizeLinear is monotone for s > 0), and
 *      QuantizeLinear(DequantizeLinear(n)) = n: with m = n - z, |m| <=
 *      255, fl(fl(m s) / s) is within 255 * 2^-23 of m, so it rounds to
 *      m, for a normal s with 256 s finite (checked), the division in
 *      f32 or f64 (opset 23's precision). A Concat's data input may
 *      instead be a ConstantOfShape of f32 zeros that only the Concat
 *      reads (a TensorFlow Pad's channel padding): QuantizeLinear(0) = z
 *      exactly, so it becomes a ConstantOfShape of z in the 8-bit type
 *      (at least one input must come from a DequantizeLinear). With no
 *      op between, QuantizeLinear(DequantizeLinear(n)) of one scale and
 *      zero point is n.
 *   9. A Pad with zeros (mode constant, value 0, no axes input) of the
 *      spatial dims only, by known pads >= 0, whose one reader is a Conv
 *      reading it once, as X, with explicit pads (no auto_pad): the Conv
 *      reads the Pad's input and its pads grow by the Pad's (TensorFlow
 *      exports a stride-2 Conv's asymmetric padding as such a Pad). The
 *      output shape is the same, and so is every sum but for the terms
 *      0 * w the padded zeros added: each is a zero, which changes a sum
 *      only when the sum is -0 (in f32, a bias of -0 and every product so
 *      far -0), so a Conv with a bias element of -0 or of unknown value
 *      keeps its Pad; exact for finite weights (0 * inf is NaN). A
 *      QuantizeLinear and DequantizeLinear pair of one known zero point
 *      z between the Pad and the Conv (a QDQ model's activation pair)
 *      moves before the padding: Q(0) = z and DQ(z) = (z - z) s = +0, so
 *      the Conv read zeros there, and the pair's copies quantize x.
 *  10. A move of one data input x that copies elements (rule 8's ops but
 *      Concat and the MaxPools), each at least once (its output no
 *      smaller than x: not a Slice that drops some), whose output's one
 *      reader is a
 *      QuantizeLinear, per tensor with a known scale, to 8 bits, where
 *      rule 8 does not apply (x is no DequantizeLinear's of that scale):
 *      a copy of the QuantizeLinear quantizes x instead, and the op moves
 *      the 8-bit values into its output. Exact: each output element is an
 *      element of x, quantized alone either way (a max of any x, which
 *      may hold NaN, is not taken here). The f32 output never exists (a
 *      TensorFlow model's NHWC -> NCHW Transpose of its normalized input,
 *      before its first Conv's pair).
 *  11. A Transpose whose input a chain of elementwise ops makes from a
 *      graph input, each op's other operands constants of one element
 *      and its data input of its output's type, each output read by the
 *      next op alone: the Transpose reads the graph input, and copies of
 *      the ops, in the same order, read and write tensors of its output's
 *      shape. Exact: an element's value is the same function of the same
 *      input element and constants. Memory is the same; a TensorFlow
 *      model's NHWC -> NCHW Transpose then comes first, where the tile
 *      pass can start its stage. Only from a graph input: elsewhere the
 *      ops may be a Conv's chain the moved Transpose would cut.
 *
 * Invariants:
 *   1. y is never a graph output or retained state: a graph output keeps
 *      its name and its writer (the views pass can still make it free).
 *   2. Rules 1-6 read ops as already edited by this pass (rw->ops, and
 *      tensors through rw_resolve), so chains collapse in one pass.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pass.h"

typedef struct el_ctx {
  pass_ctx *c;
  const mp_graph *g;
  rw_graph *rw;
} el_ctx;

static bool el_is_view(const char *type) {
  return strcmp(type, "Reshape") == 0 || strcmp(type, "Flatten") == 0 ||
         strcmp(type, "Squeeze") == 0 || strcmp(type, "Unsqueeze") == 0;
}

static bool el_replaceable(const el_ctx *e, int32_t y) {
  mp_tensor_kind k = mp_graph_tensor(e->g, (size_t)y)->kind;
  return k != MP_TENSOR_OUTPUT && k != MP_TENSOR_RETAINED;
}

/* The live op of the rewrite writing (resolved) tensor t, or -1. */
static int32_t el_writer(const el_ctx *e, int32_t t) {
  /* a tensor rule 8 added (a quantized fill) is none of the source's */
  if (t < 0 || (size_t)t >= mp_graph_tensor_count(e->g) ||
      e->rw->to_weight[t]) {
    return -1;
  }
  int32_t p = mp_graph_tensor(e->g, (size_t)t)->producer;
  if (p < 0 || e->rw->ops[p].dead) return -1;
  const rw_op *op = &e->rw->ops[p];
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    if (op->outputs[k] == t) return p;
  }
  return -1;
}

static int32_t el_input(const el_ctx *e, uint32_t o, uint32_t k) {
  const rw_op *op = &e->rw->ops[o];
  return k < op->n_inputs ? rw_resolve(e->rw, op->inputs[k]) : -1;
}

static void el_same(el_ctx *e, uint32_t o, int32_t y, int32_t x,
                    const char *label) {
  rw_replace(e->rw, y, x);
  rw_kill(e->rw, o);
  pass_tally(e->c, label);
}

static bool el_dropout(const el_ctx *e, uint32_t o) {
  const rw_op *op = &e->rw->ops[o];
  if (op->n_outputs > 1) {
    const mp_tensor *mask = mp_graph_tensor(e->g, (size_t)op->outputs[1]);
    if (mask->n_consumers || mask->kind != MP_TENSOR_ACTIVATION) return false;
  }
  int32_t tm = el_input(e, o, 2);
  return tm < 0 || pass_all_equal(mp_graph_tensor(e->g, (size_t)tm), 0);
}

/* The permutation of a Transpose (default: reversed dims). */
static bool el_perm(const mp_graph *g, const rw_op *op, int32_t in,
                    int64_t *perm, uint32_t *rank) {
  *rank = mp_graph_tensor(g, (size_t)in)->rank;
  const mp_attr *a = rw_attr(op, "perm");
  for (uint32_t k = 0; k < *rank; k++) perm[k] = *rank - 1 - k;
  if (!a) return true;
  if (a->kind != MP_ATTR_INTS || a->n != *rank) return false;
  for (uint32_t k = 0; k < *rank; k++) perm[k] = a->ints[k];
  return true;
}

/* Rule 4. */
static bool el_transpose_pair(el_ctx *e, uint32_t o, int32_t *x) {
  int32_t mid = el_input(e, o, 0);
  int32_t p = el_writer(e, mid);
  if (p < 0 || strcmp(e->rw->ops[p].type, "Transpose") != 0) return false;
  int32_t src = el_input(e, (uint32_t)p, 0);
  int64_t p1[MP_MAX_RANK], p2[MP_MAX_RANK];
  uint32_t r1, r2;
  if (src < 0 || !el_perm(e->g, &e->rw->ops[p], src, p1, &r1) ||
      !el_perm(e->g, &e->rw->ops[o], mid, p2, &r2) || r1 != r2) {
    return false;
  }
  /* y[i] = mid[p2[i]] = src[p1[p2[i]]]: the identity iff p1[p2[i]] == i. */
  for (uint32_t i = 0; i < r1; i++) {
    if (p2[i] < 0 || p2[i] >= (int64_t)r1 || p1[p2[i]] != (int64_t)i)
      return false;
  }
  *x = src;
  return true;
}

/* Rule 5: the start of the view chain ending at op o's data input. */
static int32_t el_chain_start(const el_ctx *e, int32_t t) {
  for (size_t guard = 0; guard < e->rw->n_ops; guard++) {
    int32_t p = el_writer(e, t);
    if (p < 0 || !el_is_view(e->rw->ops[p].type)) return t;
    /* a view with no input (a graph that only plans) starts the chain */
    int32_t in = el_input(e, (uint32_t)p, 0);
    if (in < 0) return t;
    t = in;
  }
  return t;
}

static bool el_shape_has_zero(const el_ctx *e, uint32_t o) {
  const rw_op *op = &e->rw->ops[o];
  const mp_attr *az = rw_attr(op, "allowzero");
  int32_t s = el_input(e, o, 1);
  const mp_tensor *st = s >= 0 ? mp_graph_tensor(e->g, (size_t)s) : NULL;
  if (!st || !st->value || !st->value->i) return true; /* unknown: refuse */
  if (az && az->kind == MP_ATTR_INT && az->i) return false;
  for (size_t k = 0; k < st->value->n; k++) {
    if (st->value->i[k] == 0) return true;
  }
  return false;
}

static mp_status el_view(el_ctx *e, uint32_t o, int32_t y, mp_error *err) {
  int32_t in = el_input(e, o, 0);
  if (in < 0) return MP_OK;
  int32_t start = el_chain_start(e, in);
  if (pass_same_type(e->g, start, y)) {
    el_same(e, o, y, start, start == in ? "no-op view" : "view chain");
    return MP_OK;
  }
  const rw_op *op = &e->rw->ops[o];
  if (start == in || strcmp(op->type, "Reshape") != 0 ||
      el_shape_has_zero(e, o)) {
    return MP_OK;
  }
  int32_t *ins = rw_alloc(e->rw, op->n_inputs, sizeof *ins, err);
  if (!ins) return MP_ERR_NOMEM;
  memcpy(ins, op->inputs, op->n_inputs * sizeof *ins);
  ins[0] = start;
  mp_status st = rw_set_inputs(e->rw, o, ins, op->n_inputs, err);
  if (st == MP_OK) pass_tally(e->c, "Reshape chain");
  return st;
}

/* Rule 6: which input is x when the op is x (op) neutral. */
static bool el_neutral(const el_ctx *e, uint32_t o, int32_t y, int32_t *x) {
  const rw_op *op = &e->rw->ops[o];
  static const struct {
    const char *type;
    double neutral;
    bool either; /* the neutral constant may be the first input */
  } rules[] = {
      {"Mul", 1, true}, {"Div", 1, false}, {"Add", 0, true}, {"Sub", 0, false}};
  if (op->n_inputs != 2) return false;
  for (size_t r = 0; r < sizeof rules / sizeof *rules; r++) {
    if (strcmp(op->type, rules[r].type) != 0) continue;
    for (uint32_t k = 0; k < 2; k++) {
      int32_t a = el_input(e, o, k), b = el_input(e, o, 1 - k);
      if (k == 0 && !rules[r].either) continue;
      if (a < 0 || b < 0) continue;
      const mp_tensor *ct = mp_graph_tensor(e->g, (size_t)a);
      bool constant = ct->kind == MP_TENSOR_WEIGHT || e->rw->to_weight[a];
      if (constant && pass_all_equal(ct, rules[r].neutral) &&
          pass_same_type(e->g, b, y)) {
        *x = b;
        return true;
      }
    }
  }
  return false;
}

/* Rule 8: the data inputs of a move op o (0 when o is none). */
static uint32_t el_move(const el_ctx *e, uint32_t o) {
  static const char *const one[] = {
      "Transpose", "Reshape",      "Flatten",      "Squeeze",      "Unsqueeze",
      "Slice",     "DepthToSpace", "SpaceToDepth", "GlobalMaxPool"};
  const rw_op *op = &e->rw->ops[o];
  const mp_op *g = mp_graph_op(e->g, o);
  if (op->n_outputs != 1 || op->n_inputs < 1) return 0;
  for (size_t k = 0; k < sizeof one / sizeof *one; k++) {
    if (strcmp(op->type, one[k]) == 0) return 1;
  }
  if (strcmp(op->type, "MaxPool") == 0) return 1;
  if (strcmp(op->type, "Concat") == 0) return op->n_inputs;
  if (strcmp(op->type, "Resize") == 0) {
    const mp_attr *m = mp_op_attr(g, "mode");
    const mp_attr *ct = mp_op_attr(g, "coordinate_transformation_mode");
    bool nearest = !m || (m->kind == MP_ATTR_STRING && m->s &&
                          strcmp(m->s, "nearest") == 0);
    bool crop = ct && ct->kind == MP_ATTR_STRING && ct->s &&
                strcmp(ct->s, "tf_crop_and_resize") == 0;
    return nearest && !crop ? 1 : 0;
  }
  return 0;
}

/* Rule 8: the known per-tensor scale *s and zero point *z of
 * QuantizeLinear or DequantizeLinear o (of type type). */
static bool el_qparams(const el_ctx *e, uint32_t o, const char *type, double *s,
                       int64_t *z) {
  const rw_op *op = &e->rw->ops[o];
  if (op->dead || strcmp(op->type, type) != 0 || op->n_inputs < 2 ||
      op->n_inputs > 3 || op->n_outputs != 1 ||
      pass_attr_int(mp_graph_op(e->g, o), "block_size", 0) != 0) {
    return false;
  }
  /* opset 23's precision: the division in f32 (1) or f64 (11) only (in
   * bf16 the error above could reach one step) */
  int64_t prec = pass_attr_int(mp_graph_op(e->g, o), "precision", 1);
  if (prec != 0 && prec != 1 && prec != 11) return false;
  int32_t st = el_input(e, o, 1), zt = el_input(e, o, 2);
  if (st < 0) return false;
  const mp_tensor *sc = mp_graph_tensor(e->g, (size_t)st);
  if (sc->dtype != MP_DTYPE_F32 || !sc->value || sc->value->n != 1 ||
      !sc->value->f) {
    return false;
  }
  *s = sc->value->f[0];
  *z = 0;
  if (zt >= 0) {
    const mp_tensor *zp = mp_graph_tensor(e->g, (size_t)zt);
    if (!zp->value || zp->value->n != 1 || !zp->value->i) return false;
    *z = zp->value->i[0];
  }
  return *s >= FLT_MIN && *s <= FLT_MAX / 256;
}

/* Rule 8 with no move: n when tensor x is DequantizeLinear(n) of
 * QuantizeLinear q's known per-tensor scale and zero point, n of q's 8-bit
 * output type, so that Q(x) = n; else -1. */
static int32_t el_dq_source(const el_ctx *e, uint32_t q, int32_t x) {
  double sq, sd;
  int64_t zq, zd;
  int32_t d = el_writer(e, x);
  if (d < 0 || !el_qparams(e, q, "QuantizeLinear", &sq, &zq) ||
      !el_qparams(e, (uint32_t)d, "DequantizeLinear", &sd, &zd) || sq != sd ||
      zq != zd) {
    return -1;
  }
  int32_t n = el_input(e, (uint32_t)d, 0);
  mp_dtype qt = mp_graph_tensor(e->g, (size_t)e->rw->ops[q].outputs[0])->dtype;
  if (n < 0 || mp_graph_tensor(e->g, (size_t)n)->dtype != qt ||
      (qt != MP_DTYPE_I8 && qt != MP_DTYPE_U8)) {
    return -1;
  }
  return n;
}

/* The one live op reading resolved tensor t once, or -1 (the ops rules
 * 8 and 9 added count). */
static int32_t el_sole_reader(const el_ctx *e, int32_t t) {
  int32_t r = -1;
  for (size_t o = 0; o < e->rw->n_ops; o++) {
    const rw_op *op = &e->rw->ops[o];
    for (uint32_t k = 0; !op->dead && k < op->n_inputs; k++) {
      if (rw_resolve(e->rw, op->inputs[k]) != t) continue;
      if (r >= 0) return -1;
      r = (int32_t)o;
    }
  }
  return r;
}

/* Rule 8: the ConstantOfShape writing t, read by Concat o only, when
 * it fills f32 zeros (the channel padding of a TensorFlow Pad); else -1. */
static int32_t el_zero_fill(const el_ctx *e, uint32_t o, int32_t t) {
  int32_t w = el_writer(e, t);
  if (w < 0 || strcmp(e->rw->ops[w].type, "ConstantOfShape") != 0 ||
      !el_replaceable(e, t) || el_sole_reader(e, t) != (int32_t)o ||
      mp_graph_tensor(e->g, (size_t)t)->dtype != MP_DTYPE_F32) {
    return -1;
  }
  const mp_attr *v = rw_attr(&e->rw->ops[w], "value");
  const mp_attr *dt = rw_attr(&e->rw->ops[w], "value.dtype");
  bool zero = !v ||
              (v->kind == MP_ATTR_FLOATS && v->n == 1 && v->floats[0] == 0) ||
              (v->kind == MP_ATTR_INTS && v->n == 1 && v->ints[0] == 0) ||
              ((v->kind == MP_ATTR_FLOAT || v->kind == MP_ATTR_INT) &&
               v->f == 0 && v->i == 0);
  return zero && (!dt || dt->i == MP_DTYPE_F32) ? w : -1;
}

/* Rule 8: the zeros ConstantOfShape w fills become the same fill of
 * zero point z in like's 8-bit type, written by a new ConstantOfShape
 * where w was (w goes); *t is the new tensor. */
static mp_status el_fill_quantized(el_ctx *e, int32_t w, int32_t like,
                                   int64_t z, int32_t *t, mp_error *err) {
  const mp_tensor *ft = mp_graph_tensor(e->g, (size_t)e->rw->ops[w].outputs[0]);
  mp_dtype qt = mp_graph_tensor(e->g, (size_t)like)->dtype;
  mp_status st =
      rw_new_tensor_dims(e->rw, like, "_fill", ft->rank, ft->shape, t, err);
  if (st == MP_OK) {
    const rw_op *c = &e->rw->ops[w];
    st = rw_new_op(e->rw, c->key, c->name, "_q", "ConstantOfShape", c->inputs,
                   c->n_inputs, t, 1, err);
  }
  uint32_t f = (uint32_t)e->rw->n_ops - 1;
  mp_attr value = {.name = "value", .kind = MP_ATTR_INTS, .ints = &z, .n = 1};
  mp_attr type = {.name = "value.dtype", .kind = MP_ATTR_INT, .i = qt};
  if (st == MP_OK) st = rw_set_attr(e->rw, f, &value, err);
  if (st == MP_OK) st = rw_set_attr(e->rw, f, &type, err);
  if (st == MP_OK) rw_kill(e->rw, (uint32_t)w);
  return st;
}

/* Rule 8 on move op o with output y. */
static mp_status el_requant(el_ctx *e, uint32_t o, int32_t y, uint32_t n,
                            mp_error *err) {
  const rw_op *op = &e->rw->ops[o];
  /* y's one reader in the source graph is a QuantizeLinear (cheap), and
   * still its one reader after the edits (rw_replace adds readers) */
  const mp_tensor *yt = mp_graph_tensor(e->g, (size_t)y);
  if (yt->n_consumers != 1 || strcmp(mp_graph_op(e->g, yt->consumers[0])->type,
                                     "QuantizeLinear") != 0) {
    return MP_OK;
  }
  int32_t q = el_sole_reader(e, y);
  double sq, s;
  int64_t zq, z;
  if (q < 0 || el_input(e, (uint32_t)q, 0) != y ||
      !el_qparams(e, (uint32_t)q, "QuantizeLinear", &sq, &zq)) {
    return MP_OK;
  }
  int32_t yq = e->rw->ops[q].outputs[0];
  mp_dtype qt = mp_graph_tensor(e->g, (size_t)yq)->dtype;
  uint32_t n_in = op->n_inputs, pairs = 0;
  bool concat = strcmp(op->type, "Concat") == 0;
  int32_t *in = rw_alloc(e->rw, 2 * (size_t)n_in, sizeof *in, err);
  if (!in) return MP_ERR_NOMEM;
  int32_t *fill = in + n_in; /* a zero fill's writer, or -1 */
  for (uint32_t k = 0; k < n_in; k++) {
    in[k] = el_input(e, o, k);
    fill[k] = k < n && concat ? el_zero_fill(e, o, in[k]) : -1;
    if (k >= n || fill[k] >= 0) continue;
    pairs++;
    int32_t d = el_writer(e, in[k]);
    if (d < 0 || !el_qparams(e, (uint32_t)d, "DequantizeLinear", &s, &z) ||
        s != sq || z != zq) {
      return MP_OK;
    }
    in[k] = el_input(e, (uint32_t)d, 0);
    if (in[k] < 0 || mp_graph_tensor(e->g, (size_t)in[k])->dtype != qt ||
        (qt != MP_DTYPE_I8 && qt != MP_DTYPE_U8)) {
      return MP_OK;
    }
  }
  if (pairs == 0) return MP_OK; /* a constant: the fold pass's */
  mp_status st = MP_OK;
  for (uint32_t k = 0; st == MP_OK && k < n_in; k++) {
    /* Q(0) = 0 / s rounded, + z: exactly z */
    if (fill[k] >= 0) st = el_fill_quantized(e, fill[k], yq, zq, &in[k], err);
  }
  if (st == MP_OK) st = rw_set_inputs(e->rw, o, in, n_in, err);
  if (st == MP_OK) st = rw_set_outputs(e->rw, o, &yq, 1, err);
  if (st == MP_OK) {
    rw_kill(e->rw, (uint32_t)q);
    pass_tally(e->c, "QDQ pair around a move");
  }
  return st;
}

/* Op o's inputs with input k replaced by x, in memory the rewrite owns;
 * NULL when out of memory. */
static int32_t *el_inputs_with(el_ctx *e, uint32_t o, uint32_t k, int32_t x,
                               mp_error *err) {
  const rw_op *op = &e->rw->ops[o];
  int32_t *in = rw_alloc(e->rw, op->n_inputs, sizeof *in, err);
  if (in) {
    memcpy(in, op->inputs, op->n_inputs * sizeof *in);
    in[k] = x;
  }
  return in;
}

/* Op o reads x as its input 0. */
static mp_status el_set_input0(el_ctx *e, uint32_t o, int32_t x,
                               mp_error *err) {
  int32_t *in = el_inputs_with(e, o, 0, x, err);
  return in ? rw_set_inputs(e->rw, o, in, e->rw->ops[o].n_inputs, err)
            : MP_ERR_NOMEM;
}

/* A copy of op o named o's name + suffix at source position key: its
 * type, attributes and inputs, but input k is x, and it writes tensor t;
 * o goes. */
static mp_status el_copy_op(el_ctx *e, uint32_t o, uint32_t key, uint32_t k,
                            int32_t x, int32_t t, const char *suffix,
                            mp_error *err) {
  int32_t *in = el_inputs_with(e, o, k, x, err);
  if (!in) return MP_ERR_NOMEM;
  const rw_op *op = &e->rw->ops[o];
  mp_status st = rw_new_op(e->rw, key, op->name, suffix, op->type, in,
                           op->n_inputs, &t, 1, err);
  op = &e->rw->ops[o]; /* rw_new_op may move the ops */
  uint32_t f = (uint32_t)e->rw->n_ops - 1;
  for (uint32_t a = 0; st == MP_OK && a < op->n_attrs; a++) {
    st = rw_set_attr(e->rw, f, &op->attrs[a], err);
  }
  if (st == MP_OK) rw_kill(e->rw, o);
  return st;
}

/* Rule 10 on move op o (one data input x, output y). */
static mp_status el_hoist_quant(el_ctx *e, uint32_t o, int32_t y, int32_t x,
                                mp_error *err) {
  double s;
  int64_t z;
  const char *type = e->rw->ops[o].type;
  int32_t q = el_sole_reader(e, y);
  /* a move that drops elements (a Slice, a Resize down) keeps its
   * QuantizeLinear: quantizing all of x could take more bytes than y */
  if (strcmp(type, "MaxPool") == 0 || strcmp(type, "GlobalMaxPool") == 0 ||
      mp_graph_tensor(e->g, (size_t)y)->bytes <
          mp_graph_tensor(e->g, (size_t)x)->bytes ||
      q < 0 || el_input(e, (uint32_t)q, 0) != y ||
      !el_qparams(e, (uint32_t)q, "QuantizeLinear", &s, &z)) {
    return MP_OK;
  }
  int32_t yq = e->rw->ops[q].outputs[0], t;
  mp_dtype qt = mp_graph_tensor(e->g, (size_t)yq)->dtype;
  if (qt != MP_DTYPE_I8 && qt != MP_DTYPE_U8) return MP_OK;
  mp_status st = rw_new_tensor_form(e->rw, yq, x, "_early", &t, err);
  if (st == MP_OK) {
    st = el_copy_op(e, (uint32_t)q, e->rw->ops[o].key, 0, x, t, "_early", err);
  }
  if (st == MP_OK) st = el_set_input0(e, o, t, err);
  if (st == MP_OK) st = rw_set_outputs(e->rw, o, &yq, 1, err);
  if (st == MP_OK) pass_tally(e->c, "QuantizeLinear before a move");
  return st;
}

/* Rule 11: which input of op p is its data input when p is an
 * elementwise op whose other operands are constants of one element, of
 * the data input's dtype and output dtype alike; -1 otherwise. */
static int el_scalar_ew(const el_ctx *e, uint32_t p) {
  const rw_op *op = &e->rw->ops[p];
  const pass_ew *ew = pass_ew_op(e->g, mp_graph_op(e->g, p));
  if (!ew || op->n_outputs != 1 || rw_has_mplan_attr(mp_graph_op(e->g, p)) ||
      (ew->kind != PASS_EW_UNARY && ew->kind != PASS_EW_BINARY &&
       ew->kind != PASS_EW_CLIP)) {
    return -1;
  }
  int data = -1;
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    int32_t t = el_input(e, p, k);
    if (t < 0) continue;
    const mp_tensor *tt = mp_graph_tensor(e->g, (size_t)t);
    bool constant = tt->kind == MP_TENSOR_WEIGHT || e->rw->to_weight[t];
    if (constant && tt->bytes == mp_dtype_size(tt->dtype)) continue;
    if (data >= 0 || !pass_same_type(e->g, t, op->outputs[0])) return -1;
    data = (int)k;
  }
  return data;
}

/* Rule 11 on Transpose op o (output y, input x). */
static mp_status el_transpose_first(el_ctx *e, uint32_t o, int32_t y, int32_t x,
                                    mp_error *err) {
  enum { MAX_CHAIN = 8 };
  uint32_t chain[MAX_CHAIN];
  int data[MAX_CHAIN];
  int n = 0;
  int32_t at = x, next = (int32_t)o;
  while (n < MAX_CHAIN) {
    int32_t p = el_writer(e, at);
    int d = p >= 0 ? el_scalar_ew(e, (uint32_t)p) : -1;
    if (d < 0 || !el_replaceable(e, at) || el_sole_reader(e, at) != next) {
      break;
    }
    chain[n] = (uint32_t)p;
    data[n++] = d;
    next = p;
    at = el_input(e, (uint32_t)p, (uint32_t)d);
  }
  /* only from a graph input: elsewhere the ops may belong to a Conv's
   * chain the Transpose would cut */
  if (n == 0 || mp_graph_tensor(e->g, (size_t)at)->kind != MP_TENSOR_INPUT) {
    return MP_OK;
  }
  int32_t t;
  mp_status st = rw_new_tensor_form(e->rw, y, y, "_first", &t, err);
  if (st == MP_OK) {
    st =
        el_copy_op(e, o, e->rw->ops[chain[n - 1]].key, 0, at, t, "_first", err);
  }
  for (int k = n - 1; st == MP_OK && k >= 0; k--) {
    int32_t out = y;
    if (k > 0) st = rw_new_tensor_form(e->rw, y, y, "_first", &out, err);
    if (st == MP_OK) {
      st = el_copy_op(e, chain[k], e->rw->ops[chain[k]].key, (uint32_t)data[k],
                      t, out, "_nchw", err);
    }
    t = out;
  }
  if (st == MP_OK) pass_tally(e->c, "Transpose before elementwise ops");
  return st;
}

/* Rule 9: the n pads of Pad op (attribute, or a constant input 1); false
 * when they are not known. */
static bool el_pad_pads(const el_ctx *e, uint32_t o, const int64_t **pads,
                        size_t *n) {
  const rw_op *op = &e->rw->ops[o];
  int32_t pt = el_input(e, o, 1);
  if (pt >= 0) {
    const mp_value *v = mp_graph_tensor(e->g, (size_t)pt)->value;
    if (!v || !v->i) return false;
    *pads = v->i;
    *n = v->n;
    return true;
  }
  const mp_attr *a = rw_attr(op, "pads");
  if (!a || a->kind != MP_ATTR_INTS) return false;
  *pads = a->ints;
  *n = a->n;
  return true;
}

/* Rule 9: whether Pad op o pads with zeros (mode constant, value 0, no
 * axes input). */
static bool el_pad_zero(const el_ctx *e, uint32_t o) {
  const rw_op *op = &e->rw->ops[o];
  const mp_attr *m = rw_attr(op, "mode");
  if (m && (m->kind != MP_ATTR_STRING || strcmp(m->s, "constant") != 0)) {
    return false;
  }
  if (el_input(e, o, 3) >= 0) return false; /* Pad-18's axes */
  int32_t vt = el_input(e, o, 2);
  if (vt >= 0) return pass_all_equal(mp_graph_tensor(e->g, (size_t)vt), 0);
  const mp_attr *v = rw_attr(op, "value");
  return !v || (v->kind == MP_ATTR_FLOAT && v->f == 0);
}

/* Rule 9: whether Conv c's sums stay the same with terms 0 * w added: an
 * integer Conv, or f32 with no bias element of -0 (a sum is -0 only when
 * the bias is and every product so far, and -0 + +0 is +0). */
static bool el_pad_exact(const el_ctx *e, uint32_t c) {
  int32_t xt = el_input(e, c, 0), bt = el_input(e, c, 2);
  if (mp_graph_tensor(e->g, (size_t)xt)->dtype != MP_DTYPE_F32) return true;
  if (bt < 0) return true;
  const mp_value *v = mp_graph_tensor(e->g, (size_t)bt)->value;
  if (!v || !v->f) return false;
  for (size_t k = 0; k < v->n; k++) {
    if (v->f[k] == 0 && signbit(v->f[k])) return false;
  }
  return true;
}

/* Rule 9: the one live op reading op o's one output, once and as its
 * input 0, when that output is no graph output; else -1. */
static int32_t el_next(const el_ctx *e, uint32_t o) {
  const rw_op *op = &e->rw->ops[o];
  if (op->n_outputs != 1 || !el_replaceable(e, op->outputs[0])) return -1;
  int32_t r = el_sole_reader(e, op->outputs[0]);
  return r >= 0 && el_input(e, (uint32_t)r, 0) == op->outputs[0] ? r : -1;
}

/* Rule 9: the QuantizeLinear q and DequantizeLinear d between a Pad and
 * its Conv go before the padding: copies of both (same inputs but the
 * first, same attributes) read x and write tensors of x's shape; *cx is
 * the new DequantizeLinear's output. */
static mp_status el_pad_pair(el_ctx *e, uint32_t q, uint32_t d, int32_t x,
                             int32_t *cx, mp_error *err) {
  const uint32_t pair[2] = {q, d};
  mp_status st = MP_OK;
  *cx = x;
  for (int k = 0; st == MP_OK && k < 2; k++) {
    int32_t t;
    st = rw_new_tensor_form(e->rw, e->rw->ops[pair[k]].outputs[0], x,
                            "_unpadded", &t, err);
    if (st == MP_OK) {
      st = el_copy_op(e, pair[k], e->rw->ops[pair[k]].key, 0, *cx, t,
                      "_unpadded", err);
    }
    *cx = t;
  }
  return st;
}

/* Rule 9 on Pad op o (output y, input x). */
static mp_status el_pad_conv(el_ctx *e, uint32_t o, int32_t y, int32_t x,
                             mp_error *err) {
  const int64_t *pads;
  size_t n;
  uint32_t rank = mp_graph_tensor(e->g, (size_t)x)->rank;
  if (e->rw->ops[o].n_outputs != 1 || rank < 3 || !el_pad_zero(e, o) ||
      !el_pad_pads(e, o, &pads, &n) || n != 2 * (size_t)rank || pads[0] ||
      pads[1] || pads[rank] || pads[rank + 1]) {
    return MP_OK;
  }
  int32_t c = el_next(e, o), q = -1, d = -1;
  if (c >= 0 && strcmp(e->rw->ops[c].type, "QuantizeLinear") == 0) {
    /* Q(0) = z, DQ(z) = (z - z) s = +0: the Conv reads zeros there */
    double sq, sd;
    int64_t zq, zd;
    q = c;
    d = el_next(e, (uint32_t)q);
    c = d >= 0 ? el_next(e, (uint32_t)d) : -1;
    if (c < 0 || !el_qparams(e, (uint32_t)q, "QuantizeLinear", &sq, &zq) ||
        !el_qparams(e, (uint32_t)d, "DequantizeLinear", &sd, &zd) || zq != zd) {
      return MP_OK;
    }
  }
  if (c < 0) return MP_OK;
  const rw_op *conv = &e->rw->ops[c];
  size_t nd = rank - 2;
  const mp_attr *ap = rw_attr(conv, "auto_pad");
  const mp_attr *cp = rw_attr(conv, "pads");
  if (strcmp(conv->type, "Conv") != 0 || conv->n_outputs != 1 ||
      rw_has_mplan_attr(mp_graph_op(e->g, (uint32_t)c)) ||
      (ap && (ap->kind != MP_ATTR_STRING || strcmp(ap->s, "NOTSET") != 0)) ||
      (cp && (cp->kind != MP_ATTR_INTS || cp->n != 2 * nd)) ||
      !el_pad_exact(e, (uint32_t)c)) {
    return MP_OK;
  }
  int64_t *sum = rw_alloc(e->rw, 2 * nd, sizeof *sum, err);
  if (!sum) return MP_ERR_NOMEM;
  for (size_t k = 0; k < nd; k++) {
    for (size_t end = 0; end < 2; end++) {
      int64_t by = pads[end * rank + 2 + k];
      int64_t had = cp ? cp->ints[end * nd + k] : 0;
      if (by < 0 || had < 0 || by > INT32_MAX - had) return MP_OK;
      sum[end * nd + k] = by + had;
    }
  }
  mp_attr a = {.name = "pads", .kind = MP_ATTR_INTS, .ints = sum, .n = 2 * nd};
  mp_status st = rw_set_attr(e->rw, (uint32_t)c, &a, err);
  if (st != MP_OK || q < 0) {
    if (st == MP_OK) el_same(e, o, y, x, "Pad into Conv");
    return st;
  }
  int32_t cx = x;
  if (el_dq_source(e, (uint32_t)q, x) >= 0) {
    /* x = DQ(n) of the pair's scale and zero point: DQ(Q(x)) = x */
    rw_kill(e->rw, (uint32_t)q);
    rw_kill(e->rw, (uint32_t)d);
  } else {
    st = el_pad_pair(e, (uint32_t)q, (uint32_t)d, x, &cx, err);
  }
  if (st == MP_OK) st = el_set_input0(e, (uint32_t)c, cx, err);
  if (st == MP_OK) {
    rw_kill(e->rw, o);
    pass_tally(e->c, "Pad into Conv (through a QDQ pair)");
  }
  return st;
}

/* Rules 1-6, 8 and 9 on one op. */
static mp_status el_op(el_ctx *e, uint32_t o, mp_error *err) {
  const rw_op *op = &e->rw->ops[o];
  if (op->dead || op->n_outputs == 0) return MP_OK;
  int32_t y = op->outputs[0], x = el_input(e, o, 0), n;
  if (!el_replaceable(e, y) || x < 0) return MP_OK;
  if (strcmp(op->type, "Identity") == 0) {
    el_same(e, o, y, x, "Identity");
  } else if (strcmp(op->type, "Dropout") == 0 && el_dropout(e, o)) {
    el_same(e, o, y, x, "Dropout");
  } else if (strcmp(op->type, "Cast") == 0 && op->n_outputs == 1 &&
             pass_same_type(e->g, x, y)) {
    el_same(e, o, y, x, "no-op Cast");
  } else if (strcmp(op->type, "Transpose") == 0) {
    int32_t src;
    if (el_transpose_pair(e, o, &src) && pass_same_type(e->g, src, y)) {
      el_same(e, o, y, src, "Transpose pair");
    } else if (op->n_inputs == 1 && op->n_outputs == 1) {
      mp_status st = el_transpose_first(e, o, y, x, err);
      if (st != MP_OK) return st;
    }
  } else if (el_is_view(op->type) && op->n_outputs == 1) {
    mp_status st = el_view(e, o, y, err);
    if (st != MP_OK) return st;
  } else if (strcmp(op->type, "QuantizeLinear") == 0 &&
             (n = el_dq_source(e, o, x)) >= 0) {
    el_same(e, o, y, n, "QDQ pair cancelling");
  } else if (strcmp(op->type, "Pad") == 0) {
    mp_status st = el_pad_conv(e, o, y, x, err);
    if (st != MP_OK) return st;
  } else if (el_neutral(e, o, y, &x)) {
    el_same(e, o, y, x,
            op->type[0] == 'M' || op->type[0] == 'D' ? "multiply by one"
                                                     : "add zero");
  }
  uint32_t moved = el_move(e, o);
  if (!moved || e->rw->ops[o].dead) return MP_OK;
  mp_status st = el_requant(e, o, y, moved, err);
  /* rule 10 where rule 8 did not apply (o still writes y) */
  if (st == MP_OK && moved == 1 && e->rw->ops[o].outputs[0] == y) {
    st = el_hoist_quant(e, o, y, el_input(e, o, 0), err);
  }
  return st;
}

static bool el_control(const char *type) {
  return strcmp(type, "If") == 0 || strcmp(type, "Loop") == 0 ||
         strcmp(type, "Scan") == 0 || strncmp(type, "mplan.", 6) == 0;
}

/* Rule 7, in reverse topological order so that chains of dead ops go at
 * once. readers[t] counts live reads of resolved tensor t. */
static mp_status el_dead(el_ctx *e, const uint32_t *order, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(e->g);
  size_t n = mp_graph_op_count(e->g);
  uint32_t *readers =
      mp_calloc(a, mp_graph_tensor_count(e->g) + 1, sizeof *readers);
  if (!readers) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(e->g));
  }
  /* reads of the source's tensors, by its ops and by those rules 8 and 9
   * added (whose own outputs are read, and not counted) */
  size_t n_t = mp_graph_tensor_count(e->g);
  for (size_t o = 0; o < e->rw->n_ops; o++) {
    const rw_op *op = &e->rw->ops[o];
    for (uint32_t k = 0; !op->dead && k < op->n_inputs; k++) {
      int32_t t = rw_resolve(e->rw, op->inputs[k]);
      if (t >= 0 && (size_t)t < n_t) readers[t]++;
    }
  }
  for (size_t s = n; s-- > 0;) {
    uint32_t o = order[s];
    const rw_op *op = &e->rw->ops[o];
    bool used = op->dead || el_control(op->type);
    for (uint32_t k = 0; !used && k < op->n_outputs; k++) {
      const mp_tensor *t = mp_graph_tensor(e->g, (size_t)op->outputs[k]);
      used = readers[op->outputs[k]] > 0 || t->kind == MP_TENSOR_OUTPUT ||
             t->kind == MP_TENSOR_RETAINED;
    }
    if (used) continue;
    rw_kill(e->rw, o);
    pass_tally(e->c, "dead op");
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      int32_t t = rw_resolve(e->rw, op->inputs[k]);
      if (t >= 0 && (size_t)t < n_t) readers[t]--;
    }
  }
  mp_free(a, readers);
  return MP_OK;
}

mp_status pass_eliminate(pass_ctx *c, mp_error *err) {
  el_ctx e = {c, c->g, c->rw};
  const mp_alloc *a = mp_graph_alloc(c->g);
  uint32_t *order = NULL;
  mp_order_kind used;
  mp_status st = mp_schedule(c->g, MP_ORDER_TOPO, &order, &used, err);
  for (size_t s = 0; st == MP_OK && s < mp_graph_op_count(c->g); s++) {
    st = el_op(&e, order[s], err);
  }
  if (st == MP_OK) st = el_dead(&e, order, err);
  mp_free(a, order);
  return st;
}
