/*
 * attention.c -- scaled dot-product attention written out as ops (a
 * MatMul of queries and transposed keys, a Mul or Div by one value, an
 * Add of a mask, a Softmax over the keys and a MatMul with the values)
 * becomes one op that computes it one query row at a time: the scores
 * and probabilities, [B..., S, T] tensors each, shrink to one row of T
 * floats of the op's scratch (seed 000 section 4: the Softmax's row
 * reduction completes inside the op before its result is used, so no
 * partial reduction is consumed). The op is the second MatMul with
 * mplan.attention (docs/ir-conventions.md): inputs [Q, Kt, V, scale or
 * omitted, mask or omitted], mplan.attention.scale "Mul" or "Div" when
 * the scale is given.
 *
 * Rules:
 *   1. A Softmax over the last axis (opset >= 13: axis -1 or rank - 1,
 *      the default; before: axis rank - 1, which its 2-D view makes the
 *      same rows), one output, no mplan.* attribute.
 *   2. Back from its input: an optional Add of two inputs (the chain
 *      either one, the other the mask), then an optional Mul of two
 *      inputs (the chain either one) or Div (the chain its dividend) by a
 *      one-element tensor, then the head: a MatMul Q x Kt.
 *   3. Forward: the Softmax's output is input 0 of a MatMul P x V.
 *   4. Every intermediate (the head's output to the Softmax's) is an
 *      activation, not a graph output, read once by one op, the next of
 *      the chain; no op of the chain has an mplan.* attribute or a
 *      fused_activation.
 *   5. Q, Kt and V are computed (not weights: a Softmax between two
 *      MatMuls by weights is a layer, not attention, and keeps its ops);
 *      all f32 (the row kernel is the ops' own f32 kernels, so the rewrite
 *      is bit-exact: runtime/ops_attn.c); Q [B..., S, D], Kt [B..., D,
 *      T], V [B..., T, Dv] of one rank >= 2 with the same leading dims
 *      (no MatMul broadcasting); the mask of rank <= that, each dim 1 or
 *      the scores'.
 * Invariants:
 *   1. The fused op is the second MatMul (its name, position and output);
 *      the ops it absorbs are killed. Every input it reads existed when
 *      the second MatMul ran, so no order constraint is added. A chain
 *      whose head is an earlier chain's fused op (attention applied to an
 *      attention's output) keeps its ops.
 *   2. The fusion record lists the absorbed ops and the intermediates:
 *      saved_bytes = 2 x size(scores) x ops absorbed.
 *   3. Q and Kt are read by the fused op, so they live to the second
 *      MatMul's step, not the first's: the pass is guarded (manager.c),
 *      its rewrite dropped if the lower bound rises.
 */
#include <string.h>

#include "pass.h"

#define AT_CHAIN 5 /* head, Mul/Div, Add, Softmax, the second MatMul */

/* op is of type t, with n inputs and one output, no mplan.* attribute
 * and no fused_activation. */
static bool at_plain(const mp_op *op, const char *t, uint32_t n) {
  return strcmp(op->type, t) == 0 && op->n_inputs == n && op->n_outputs == 1 &&
         !rw_has_mplan_attr(op) && !mp_op_attr(op, "fused_activation");
}

static bool at_f32(const mp_graph *g, int32_t t) {
  return t >= 0 && mp_graph_tensor(g, (size_t)t)->dtype == MP_DTYPE_F32;
}

/* Rule 4: t is an activation read once, by one op only. */
static bool at_inner(const mp_graph *g, int32_t t) {
  const mp_tensor *x = mp_graph_tensor(g, (size_t)t);
  if (x->kind != MP_TENSOR_ACTIVATION || x->n_consumers != 1) return false;
  return pass_reads(mp_graph_op(g, x->consumers[0]), t) == 1;
}

/* The producer of t when t qualifies as an intermediate; -1 otherwise. */
static int32_t at_back(const mp_graph *g, int32_t t) {
  return t >= 0 && at_inner(g, t) ? mp_graph_tensor(g, (size_t)t)->producer
                                  : -1;
}

static bool at_weight(const mp_graph *g, int32_t t) {
  return mp_graph_tensor(g, (size_t)t)->kind == MP_TENSOR_WEIGHT;
}

static int64_t at_dim(const mp_graph *g, int32_t t, uint32_t i) {
  const mp_tensor *x = mp_graph_tensor(g, (size_t)t);
  return mp_graph_dim_of(g, &x->shape[i]);
}

/* Rule 5: the shapes of Q, Kt, V, the mask (or -1) and the scale (or -1). */
static bool at_shapes(const mp_graph *g, int32_t q, int32_t kt, int32_t v,
                      int32_t mask, int32_t scale) {
  const mp_tensor *tq = mp_graph_tensor(g, (size_t)q);
  uint32_t r = tq->rank;
  if (r < 2 || mp_graph_tensor(g, (size_t)kt)->rank != r ||
      mp_graph_tensor(g, (size_t)v)->rank != r) {
    return false;
  }
  for (uint32_t i = 0; i + 2 < r; i++) {
    if (at_dim(g, kt, i) != at_dim(g, q, i) ||
        at_dim(g, v, i) != at_dim(g, q, i)) {
      return false;
    }
  }
  int64_t s = at_dim(g, q, r - 2), d = at_dim(g, q, r - 1);
  int64_t t = at_dim(g, kt, r - 1);
  if (at_dim(g, kt, r - 2) != d || at_dim(g, v, r - 2) != t) return false;
  if (scale >= 0 &&
      (!at_f32(g, scale) || mp_graph_tensor(g, (size_t)scale)->bytes != 4)) {
    return false;
  }
  if (mask < 0) return true;
  const mp_tensor *tm = mp_graph_tensor(g, (size_t)mask);
  if (!at_f32(g, mask) || tm->rank > r) return false;
  for (uint32_t i = 0; i < tm->rank; i++) {
    uint32_t a = r - tm->rank + i;
    int64_t n = at_dim(g, mask, i);
    int64_t full = a == r - 1 ? t : a == r - 2 ? s : at_dim(g, q, a);
    if (n != 1 && n != full) return false;
  }
  return true;
}

/* Rule 1: the Softmax's axis is the last. */
static bool at_last_axis(const pass_ctx *c, const mp_op *sm, uint32_t rank) {
  int64_t opset = mp_graph_opset(c->g);
  int64_t def = opset > 0 && opset < 13 ? 1 : -1;
  int64_t axis = pass_attr_int(sm, "axis", def);
  return axis == -1 || axis == (int64_t)rank - 1;
}

/* t is an intermediate made by a MatMul (depth 0), or by a Mul or Div
 * whose chain input is (depth 1): the side of an Add or Mul that leads to
 * the head. */
static bool at_leads(const mp_graph *g, int32_t t, int depth) {
  int32_t at = at_back(g, t);
  if (at < 0) return false;
  const mp_op *op = mp_graph_op(g, (size_t)at);
  if (at_plain(op, "MatMul", 2)) return true;
  if (depth == 0 || !(at_plain(op, "Mul", 2) || at_plain(op, "Div", 2))) {
    return false;
  }
  return at_leads(g, op->inputs[0], 0) ||
         (op->type[0] == 'M' && at_leads(g, op->inputs[1], 0));
}

/* The chain ending in Softmax sm, rewritten when it qualifies. */
static mp_status at_try(pass_ctx *c, uint32_t sm_i, mp_error *err) {
  const mp_graph *g = c->g;
  const mp_op *sm = mp_graph_op(g, sm_i);
  if (!at_plain(sm, "Softmax", 1)) return MP_OK;
  int32_t p = sm->outputs[0];
  if (!at_f32(g, p) || !at_inner(g, p) ||
      !at_last_axis(c, sm, mp_graph_tensor(g, (size_t)p)->rank)) {
    return MP_OK;
  }
  uint32_t mm2_i = mp_graph_tensor(g, (size_t)p)->consumers[0];
  const mp_op *mm2 = mp_graph_op(g, mm2_i);
  if (!at_plain(mm2, "MatMul", 2) || mm2->inputs[0] != p) return MP_OK;
  /* back from the Softmax: Add, Mul/Div, the head (rule 2) */
  uint32_t killed[AT_CHAIN], n_killed = 0;
  int32_t inter[AT_CHAIN], mask = -1, scale = -1, t = sm->inputs[0];
  uint32_t n_inter = 0;
  const char *scale_op = NULL;
  killed[n_killed++] = sm_i;
  inter[n_inter++] = p;
  int32_t at = at_back(g, t);
  if (at < 0) return MP_OK;
  const mp_op *op = mp_graph_op(g, (size_t)at);
  if (at_plain(op, "Add", 2)) {
    int32_t in0 = op->inputs[0], in1 = op->inputs[1];
    bool chain0 = at_leads(g, in0, 1);
    if (!chain0 && !at_leads(g, in1, 1)) return MP_OK;
    mask = chain0 ? in1 : in0;
    killed[n_killed++] = (uint32_t)at;
    inter[n_inter++] = t;
    t = chain0 ? in0 : in1;
    op = mp_graph_op(g, (size_t)at_back(g, t));
    at = at_back(g, t);
  }
  if (at_plain(op, "Mul", 2) || at_plain(op, "Div", 2)) {
    bool div = op->type[0] == 'D';
    int32_t in0 = op->inputs[0], in1 = op->inputs[1];
    bool chain0 = at_leads(g, in0, 0);
    if (!chain0 && (div || !at_leads(g, in1, 0))) return MP_OK;
    scale = chain0 ? in1 : in0;
    scale_op = div ? "Div" : "Mul";
    killed[n_killed++] = (uint32_t)at;
    inter[n_inter++] = t;
    t = chain0 ? in0 : in1;
    at = at_back(g, t);
    op = mp_graph_op(g, (size_t)at);
  }
  if (!at_plain(op, "MatMul", 2)) return MP_OK;
  killed[n_killed++] = (uint32_t)at;
  inter[n_inter++] = t; /* the scores */
  int32_t q = op->inputs[0], kt = op->inputs[1], v = mm2->inputs[1];
  if (at_weight(g, q) || at_weight(g, kt) || at_weight(g, v) || !at_f32(g, q) ||
      !at_f32(g, kt) || !at_f32(g, v) || !at_f32(g, mm2->outputs[0]) ||
      (mask >= 0 && mask == t) || !at_shapes(g, q, kt, v, mask, scale)) {
    return MP_OK;
  }
  /* a chain whose head is an earlier chain's fused op stays (invariant 1
   * would kill it) */
  for (uint32_t k = 0; k < n_killed; k++) {
    const rw_op *o = &c->rw->ops[killed[k]];
    if (o->dead || rw_attr(o, "mplan.attention")) return MP_OK;
  }
  /* invariant 1: the second MatMul becomes the fused op */
  int32_t in[5] = {q, kt, v, scale, mask};
  mp_attr on = {.name = "mplan.attention", .kind = MP_ATTR_INT, .i = 1};
  mp_status st = rw_set_inputs(c->rw, mm2_i, in, 5, err);
  if (st == MP_OK) st = rw_set_attr(c->rw, mm2_i, &on, err);
  if (st == MP_OK && scale_op) {
    mp_attr so = {
        .name = "mplan.attention.scale", .kind = MP_ATTR_STRING, .s = scale_op};
    st = rw_set_attr(c->rw, mm2_i, &so, err);
  }
  for (uint32_t k = 0; k < n_killed; k++) rw_kill(c->rw, killed[k]);
  /* invariant 2: absorbed ops from the head on, their intermediates */
  mp_buf types, names, tensors;
  mp_buf_init(&types, mp_graph_alloc(g));
  mp_buf_init(&names, mp_graph_alloc(g));
  mp_buf_init(&tensors, mp_graph_alloc(g));
  bool peak = false;
  for (uint32_t k = n_killed; k-- > 0;) {
    const mp_op *o = mp_graph_op(g, killed[k]);
    bool first = k == n_killed - 1;
    mp_buf_printf(&types, "%s%s", first ? "" : ",", o->type);
    mp_buf_printf(&names, "%s%s", first ? "" : ",", o->name);
    mp_buf_printf(&tensors, "%s%s", first ? "" : ",",
                  mp_graph_tensor(g, (size_t)inter[k])->name);
    peak = peak || (c->at_peak && c->at_peak[inter[k]]);
  }
  size_t bytes = mp_graph_tensor(g, (size_t)inter[n_inter - 1])->bytes;
  mp_fusion f = {.kind = MP_FUSION_VERTICAL,
                 .op = mm2->name,
                 .head_type = "MatMul",
                 .absorbed = mp_buf_str(&types),
                 .absorbed_ops = mp_buf_str(&names),
                 .intermediates = mp_buf_str(&tensors),
                 .steps = n_killed,
                 .intermediate_bytes = bytes,
                 .saved_bytes = 2 * bytes * n_killed,
                 .at_peak = peak,
                 .registers = 0,
                 .spills = -1};
  if (st == MP_OK) st = mp_buf_status(&types, "attention", err);
  if (st == MP_OK) st = mp_buf_status(&names, "attention", err);
  if (st == MP_OK) st = mp_buf_status(&tensors, "attention", err);
  if (st == MP_OK) st = pass_fusion(c, &f, err);
  if (st == MP_OK) pass_tally(c, "attention");
  mp_buf_free(&types);
  mp_buf_free(&names);
  mp_buf_free(&tensors);
  return st;
}

mp_status pass_attention(pass_ctx *c, mp_error *err) {
  mp_status st = MP_OK;
  for (size_t o = 0; st == MP_OK && o < mp_graph_op_count(c->g); o++) {
    st = at_try(c, (uint32_t)o, err);
  }
  return st;
}
