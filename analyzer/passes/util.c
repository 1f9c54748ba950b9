/*
 * util.c -- graph queries the passes share, and the one table of
 * elementwise ops.
 *
 * Invariants:
 *   1. pass_ew_find knows only ops whose every output element depends on
 *      the inputs' elements at the same (broadcast) position: fusing them
 *      into a loop over the head's output, or writing them over an input,
 *      never consumes a partial result of a reduction (seed 000 section 4).
 *   2. Register costs are live vector values added to a fused loop: one
 *      for a simple unary op or a loaded operand, two for a per-channel
 *      scale and shift (BatchNormalization), three for functions evaluated
 *      by a polynomial or an exponential (seed 000 section 4: "the more
 *      ops a group holds, the more values must stay in registers").
 */
#include <string.h>

#include "mplan/kernels.h"
#include "pass.h"

static const pass_ew pass_ew_table[] = {
    /* simple unary */
    {"Relu", PASS_EW_UNARY, false, 1},
    {"LeakyRelu", PASS_EW_UNARY, false, 1},
    {"ThresholdedRelu", PASS_EW_UNARY, false, 1},
    {"HardSigmoid", PASS_EW_UNARY, false, 1},
    {"HardSwish", PASS_EW_UNARY, false, 2},
    {"Abs", PASS_EW_UNARY, false, 1},
    {"Neg", PASS_EW_UNARY, false, 1},
    {"Floor", PASS_EW_UNARY, false, 1},
    {"Ceil", PASS_EW_UNARY, false, 1},
    {"Round", PASS_EW_UNARY, false, 1},
    {"Sign", PASS_EW_UNARY, false, 1},
    {"Reciprocal", PASS_EW_UNARY, false, 1},
    {"Not", PASS_EW_UNARY, false, 1},
    /* unary by polynomial or exponential */
    {"Sigmoid", PASS_EW_UNARY, false, 3},
    {"Tanh", PASS_EW_UNARY, false, 3},
    {"Exp", PASS_EW_UNARY, false, 3},
    {"Log", PASS_EW_UNARY, false, 3},
    {"Sqrt", PASS_EW_UNARY, false, 3},
    {"Erf", PASS_EW_UNARY, false, 3},
    {"Gelu", PASS_EW_UNARY, false, 3},
    {"Elu", PASS_EW_UNARY, false, 3},
    {"Selu", PASS_EW_UNARY, false, 3},
    {"Celu", PASS_EW_UNARY, false, 3},
    {"Softplus", PASS_EW_UNARY, false, 3},
    {"Softsign", PASS_EW_UNARY, false, 3},
    {"Mish", PASS_EW_UNARY, false, 3},
    {"Swish", PASS_EW_UNARY, false, 3},
    {"Sin", PASS_EW_UNARY, false, 3},
    {"Cos", PASS_EW_UNARY, false, 3},
    /* binary (and n-ary Sum) with an operand broadcast to the output */
    {"Add", PASS_EW_BINARY, true, 1},
    {"Mul", PASS_EW_BINARY, true, 1},
    {"Max", PASS_EW_VARIADIC, true, 1},
    {"Min", PASS_EW_VARIADIC, true, 1},
    {"Sum", PASS_EW_VARIADIC, true, 1},
    {"Sub", PASS_EW_BINARY, false, 1},
    {"Div", PASS_EW_BINARY, false, 1},
    {"Pow", PASS_EW_BINARY, false, 3},
    {"PRelu", PASS_EW_BINARY, false, 1},
    {"Clip", PASS_EW_CLIP, false, 1},
    {"BatchNormalization", PASS_EW_BATCHNORM, false, 2},
};

const pass_ew *pass_ew_find(const char *type) {
  for (size_t i = 0; i < sizeof pass_ew_table / sizeof *pass_ew_table; i++) {
    if (strcmp(pass_ew_table[i].type, type) == 0) return &pass_ew_table[i];
  }
  return NULL;
}

const pass_ew *pass_ew_op(const mp_graph *g, const mp_op *op) {
  const pass_ew *ew = pass_ew_find(op->type);
  if (mp_graph_legacy_pad(g, op)) return NULL;
  const mp_attr *tm = mp_op_attr(op, "training_mode");
  const mp_attr *sp = mp_op_attr(op, "spatial");
  if (ew && ew->kind == PASS_EW_BATCHNORM &&
      ((tm && tm->kind == MP_ATTR_INT && tm->i != 0) ||
       (sp && sp->kind == MP_ATTR_INT && sp->i == 0))) {
    return NULL;
  }
  return ew;
}

int32_t pass_sole_reader(const mp_graph *g, int32_t t) {
  const mp_tensor *x = mp_graph_tensor(g, (size_t)t);
  return x->n_consumers == 1 ? (int32_t)x->consumers[0] : -1;
}

uint32_t pass_reads(const mp_op *op, int32_t t) {
  uint32_t n = 0;
  for (uint32_t k = 0; k < op->n_inputs; k++) n += op->inputs[k] == t;
  return n;
}

bool pass_same_dims(const mp_graph *g, int32_t a, int32_t b) {
  const mp_tensor *x = mp_graph_tensor(g, (size_t)a);
  const mp_tensor *y = mp_graph_tensor(g, (size_t)b);
  if (x->rank != y->rank) return false;
  for (uint32_t k = 0; k < x->rank; k++) {
    if (mp_graph_dim_of(g, &x->shape[k]) != mp_graph_dim_of(g, &y->shape[k]))
      return false;
  }
  return true;
}

bool pass_same_type(const mp_graph *g, int32_t a, int32_t b) {
  return mp_graph_tensor(g, (size_t)a)->dtype ==
             mp_graph_tensor(g, (size_t)b)->dtype &&
         pass_same_dims(g, a, b);
}

bool pass_same_layout(const mp_graph *g, int32_t a, int32_t b) {
  const char *x = mp_graph_tensor(g, (size_t)a)->layout;
  const char *y = mp_graph_tensor(g, (size_t)b)->layout;
  if (!x || !y) return x == y;
  return strcmp(x, y) == 0;
}

int64_t pass_attr_int(const mp_op *op, const char *name, int64_t def) {
  const mp_attr *a = mp_op_attr(op, name);
  return a && a->kind == MP_ATTR_INT ? a->i : def;
}

bool pass_all_equal(const mp_tensor *t, double v) {
  const mp_value *val = t->value;
  if (!val || val->n == 0) return false;
  for (size_t k = 0; k < val->n; k++) {
    double x = val->i ? (double)val->i[k] : val->f[k];
    if (x != v) return false;
  }
  return true;
}

/* ---- a Resize read replicated (absorb rule 6) ---------------------------- */

#define PU_MAX_AXIS ((int64_t)1 << 20)

static const char *pu_attr_s(const mp_op *op, const char *name,
                             const char *def) {
  const mp_attr *a = mp_op_attr(op, name);
  return a && a->kind == MP_ATTR_STRING && a->s ? a->s : def;
}

bool pass_upsample_binary(const mp_op *op) {
  static const char *const types[] = {"Add", "Sub", "Mul", "Div"};
  for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
    if (strcmp(op->type, types[k]) == 0) {
      return op->n_inputs == 2 && op->n_outputs == 1 && !rw_has_mplan_attr(op);
    }
  }
  return false;
}

bool pass_pool_head(const mp_op *op) {
  static const char *const types[] = {"MaxPool", "AveragePool", "GlobalMaxPool",
                                      "GlobalAveragePool"};
  for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
    if (strcmp(op->type, types[k]) == 0) return true;
  }
  return false;
}

bool pass_resize_head(const mp_graph *g, const mp_op *op) {
  if (strcmp(op->type, "Resize") != 0) return false;
  const char *mode = pu_attr_s(op, "mode", "nearest");
  if (op->n_inputs < 3 || op->n_inputs > 4 || op->n_outputs != 1 ||
      op->inputs[0] < 0 || op->outputs[0] < 0 || rw_has_mplan_attr(op) ||
      mp_op_attr(op, "axes") || pass_attr_int(op, "antialias", 0) != 0 ||
      strcmp(pu_attr_s(op, "keep_aspect_ratio_policy", "stretch"), "stretch") !=
          0 ||
      strcmp(pu_attr_s(op, "coordinate_transformation_mode", "half_pixel"),
             "tf_crop_and_resize") == 0 ||
      (strcmp(mode, "nearest") != 0 && strcmp(mode, "linear") != 0)) {
    return false;
  }
  const mp_tensor *x = mp_graph_tensor(g, (size_t)op->inputs[0]);
  const mp_tensor *y = mp_graph_tensor(g, (size_t)op->outputs[0]);
  if (x->rank != 4 || y->rank != 4 || y->dtype != MP_DTYPE_F32 ||
      mp_graph_dim_of(g, &x->shape[0]) != mp_graph_dim_of(g, &y->shape[0]) ||
      mp_graph_dim_of(g, &x->shape[1]) != mp_graph_dim_of(g, &y->shape[1])) {
    return false;
  }
  if (op->inputs[1] >= 0 && mp_graph_tensor(g, (size_t)op->inputs[1])->bytes) {
    return false; /* a roi (read only by tf_crop_and_resize) */
  }
  const mp_tensor *sc =
      op->inputs[2] >= 0 ? mp_graph_tensor(g, (size_t)op->inputs[2]) : NULL;
  if (sc && sc->bytes) { /* scales: 1 on batch and channels */
    return sc->value && sc->value->f && sc->value->n == 4 &&
           sc->value->f[0] == 1 && sc->value->f[1] == 1;
  }
  return op->n_inputs == 4 && op->inputs[3] >= 0; /* sizes */
}

bool pass_upsample_input(const pass_ctx *c, uint32_t head, uint32_t k) {
  const mp_op *h = mp_graph_op(c->g, head);
  if (!pass_upsample_binary(h) || k >= 2 || h->inputs[k] < 0) return false;
  return pass_upsample_of(c, head, h->inputs[k], h->outputs[0]);
}

bool pass_upsample_of(const pass_ctx *c, uint32_t reader, int32_t rt,
                      int32_t yt) {
  const mp_graph *g = c->g;
  const mp_op *h = mp_graph_op(g, reader);
  const mp_tensor *r = mp_graph_tensor(g, (size_t)rt);
  if (r->kind != MP_TENSOR_ACTIVATION || r->producer < 0 ||
      pass_sole_reader(g, rt) != (int32_t)reader || pass_reads(h, rt) != 1 ||
      c->rw->ops[r->producer].dead) {
    return false;
  }
  const mp_tensor *y = mp_graph_tensor(g, (size_t)yt);
  const mp_op *d = mp_graph_op(g, (size_t)r->producer);
  if (strcmp(d->type, "Resize") != 0 || d->n_outputs != 1 || d->n_inputs < 1 ||
      d->inputs[0] < 0) {
    return false;
  }
  const mp_tensor *x = mp_graph_tensor(g, (size_t)d->inputs[0]);
  mp_kresize p = {.linear = false};
  int coord = mp_k_coord_named(
      pu_attr_s(d, "coordinate_transformation_mode", "half_pixel"));
  int nearest =
      mp_k_nearest_named(pu_attr_s(d, "nearest_mode", "round_prefer_floor"));
  if (strcmp(pu_attr_s(d, "mode", "nearest"), "nearest") != 0 || coord < 0 ||
      coord == MP_KC_TF_CROP_AND_RESIZE || nearest < 0 ||
      pass_attr_int(d, "antialias", 0) != 0 || mp_op_attr(d, "axes") ||
      x->dtype != r->dtype || x->rank != r->rank || r->rank != y->rank ||
      r->rank > MP_K_MAX_RANK) {
    return false;
  }
  p.coord = (mp_kcoord)coord;
  p.nearest = (mp_knearest)nearest;
  p.in.rank = p.out.rank = r->rank;
  /* The scales the compiler passes (compile/lower.c lw_resize): the
   * constant scales input when it has one positive entry per axis, the
   * size ratio otherwise. */
  int32_t si = d->inputs[d->n_inputs == 2 ? 1 : d->n_inputs >= 3 ? 2 : 0];
  const mp_value *sv =
      d->n_inputs >= 2 && si >= 0 ? mp_graph_tensor(g, (size_t)si)->value : 0;
  if (sv && sv->n != r->rank) sv = NULL;
  uint32_t grown = 0;
  for (uint32_t a = 0; a < r->rank; a++) {
    int64_t in = mp_graph_dim_of(g, &x->shape[a]);
    int64_t out = mp_graph_dim_of(g, &r->shape[a]);
    /* every output index is checked below: at most 2^20 per axis */
    if (in <= 0 || out <= 0 || out % in != 0 || out > PU_MAX_AXIS ||
        out != mp_graph_dim_of(g, &y->shape[a])) {
      return false;
    }
    double s = sv ? (sv->f ? sv->f[a] : (double)sv->i[a]) : 0;
    p.in.dims[a] = in;
    p.out.dims[a] = out;
    p.scale[a] = sv && s > 0 ? s : (double)out / (double)in;
    grown += out > in;
  }
  if (r->rank + grown > MP_K_MAX_RANK) return false;
  for (uint32_t a = 0; a < r->rank; a++) {
    int64_t f = p.out.dims[a] / p.in.dims[a];
    for (int64_t o = 0; o < p.out.dims[a]; o++) {
      if (mp_k_resize_nearest_src(&p, a, o) != o / f) return false;
    }
  }
  return true;
}
