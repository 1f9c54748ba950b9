/*
 * shape.c -- shape inference: the rule table, the driver and the helpers
 * the per-family rule files share (shape_elementwise.c, shape_nn.c,
 * shape_tensor.c).
 *
 * Invariants:
 *   1. One rule per op type, in one table sorted by name (checked by
 *      assert on first use through the binary search's precondition).
 *   2. A rule runs only when every present input is known (dtype and all
 *      dims concrete); so an unknown tensor never yields a guessed one.
 *   3. An inferred shape is checked against the tensor's declaration:
 *      unbound declared symbols are bound by it, contradictions become
 *      warnings naming the tensor and both shapes (the inferred one is
 *      kept, and counted in stats->mismatched).
 *   4. Where no rule applies, a complete declaration is used
 *      (MP_SHAPE_DECLARED); otherwise the tensor stays pending.
 *   5. Values are kept only for tensors of at most MP_VALUE_MAX elements.
 *   6. Every dim a rule reads or writes is at most SH_DIM_MAX and the
 *      product of a shape's nonzero dims at most SH_ELEMS_MAX (sh_bounded),
 *      so rules multiply a dim by another or by a bounded attribute without
 *      overflowing; a shape beyond that is an error naming the tensor.
 *   7. An op whose output shape depends on its input's values (NonZero,
 *      Compress, Unique, NonMaxSuppression) gets its exact shape when
 *      those values are known, else its complete declaration; failing
 *      both, its bound rule sets the largest shape the op can produce (the
 *      plan then holds the worst case, as XLA's bounded dynamic shapes
 *      do) and a warning names the op and its bounded outputs. Shapes
 *      computed from a bound are bounds too; the runtime, which runs
 *      fixed shapes, refuses these ops (compile/lower.c).
 */
#include "mplan/shape.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shape_rules.h"

typedef struct sh_entry {
  const char *type;
  sh_rule_fn fn;
} sh_entry;

/* Sorted by type (strcmp order): one rule per ONNX op type. */
static const sh_entry sh_table[] = {
    {"Abs", sh_unary},
    {"Acos", sh_unary},
    {"Acosh", sh_unary},
    {"Add", sh_binary},
    {"And", sh_compare},
    {"ArgMax", sh_argminmax},
    {"ArgMin", sh_argminmax},
    {"Asin", sh_unary},
    {"Asinh", sh_unary},
    {"Atan", sh_unary},
    {"Atanh", sh_unary},
    {"Attention", sh_attention},
    {"AveragePool", sh_pool},
    {"BatchNormalization", sh_batchnorm},
    {"Bernoulli", sh_random_like},
    {"BitShift", sh_binary},
    {"BitwiseAnd", sh_binary},
    {"BitwiseNot", sh_unary},
    {"BitwiseOr", sh_binary},
    {"BitwiseXor", sh_binary},
    {"BlackmanWindow", sh_window},
    {"Cast", sh_cast},
    {"CastLike", sh_castlike},
    {"Ceil", sh_unary},
    {"Celu", sh_unary},
    {"Clip", sh_unary},
    {"Compress", sh_compress},
    {"Concat", sh_concat},
    {"ConstantOfShape", sh_constant_of_shape},
    {"Conv", sh_conv},
    {"ConvInteger", sh_conv},
    {"ConvTranspose", sh_conv_transpose},
    {"Cos", sh_unary},
    {"Cosh", sh_unary},
    {"CumSum", sh_unary},
    {"DFT", sh_dft},
    {"DepthToSpace", sh_depth_to_space},
    {"DequantizeLinear", sh_dequantize},
    {"Det", sh_det},
    {"Div", sh_binary},
    {"Dropout", sh_dropout},
    {"DynamicQuantizeLinear", sh_dyn_quantize},
    {"Einsum", sh_einsum},
    {"Elu", sh_unary},
    {"Equal", sh_compare},
    {"Erf", sh_unary},
    {"Exp", sh_unary},
    {"Expand", sh_expand},
    {"EyeLike", sh_eyelike},
    {"Flatten", sh_flatten},
    {"Floor", sh_unary},
    {"GRU", sh_rnn},
    {"Gather", sh_gather},
    {"GatherElements", sh_gather_elements},
    {"GatherND", sh_gather_nd},
    {"Gelu", sh_unary},
    {"Gemm", sh_gemm},
    {"GlobalAveragePool", sh_global_pool},
    {"GlobalLpPool", sh_global_pool},
    {"GlobalMaxPool", sh_global_pool},
    {"Greater", sh_compare},
    {"GreaterOrEqual", sh_compare},
    {"GridSample", sh_grid_sample},
    {"GroupNormalization", sh_same_as_first},
    {"HammingWindow", sh_window},
    {"HannWindow", sh_window},
    {"HardSigmoid", sh_unary},
    {"HardSwish", sh_unary},
    {"Hardmax", sh_unary},
    {"Identity", sh_unary},
    {"If", sh_if},
    {"ImageScaler", sh_unary},
    {"InstanceNormalization", sh_same_as_first},
    {"IsInf", sh_isx},
    {"IsNaN", sh_isx},
    {"LRN", sh_unary},
    {"LSTM", sh_rnn},
    {"LayerNormalization", sh_layernorm},
    {"LeakyRelu", sh_unary},
    {"Less", sh_compare},
    {"LessOrEqual", sh_compare},
    {"Log", sh_unary},
    {"LogSoftmax", sh_unary},
    {"Loop", sh_loop},
    {"LpNormalization", sh_unary},
    {"LpPool", sh_pool},
    {"MatMul", sh_matmul},
    {"MatMulInteger", sh_matmul},
    {"Max", sh_variadic},
    {"MaxPool", sh_pool},
    {"MaxUnpool", sh_max_unpool},
    {"Mean", sh_variadic},
    {"MeanVarianceNormalization", sh_unary},
    {"MelWeightMatrix", sh_mel_weight_matrix},
    {"Min", sh_variadic},
    {"Mish", sh_unary},
    {"Mod", sh_binary},
    {"Mul", sh_binary},
    {"Multinomial", sh_multinomial},
    {"Neg", sh_unary},
    {"NegativeLogLikelihoodLoss", sh_loss},
    {"NonZero", sh_nonzero},
    {"Not", sh_unary_bool},
    {"OneHot", sh_onehot},
    {"Or", sh_compare},
    {"PRelu", sh_prelu},
    {"Pad", sh_pad},
    {"Pow", sh_binary},
    {"QLinearConv", sh_conv},
    {"QLinearMatMul", sh_matmul},
    {"QuantizeLinear", sh_quantize},
    {"RMSNormalization", sh_same_as_first},
    {"RNN", sh_rnn},
    {"RandomNormal", sh_random},
    {"RandomNormalLike", sh_random_like},
    {"RandomUniform", sh_random},
    {"RandomUniformLike", sh_random_like},
    {"Range", sh_range},
    {"Reciprocal", sh_unary},
    {"ReduceL1", sh_reduce},
    {"ReduceL2", sh_reduce},
    {"ReduceLogSum", sh_reduce},
    {"ReduceLogSumExp", sh_reduce},
    {"ReduceMax", sh_reduce},
    {"ReduceMean", sh_reduce},
    {"ReduceMin", sh_reduce},
    {"ReduceProd", sh_reduce},
    {"ReduceSum", sh_reduce},
    {"ReduceSumSquare", sh_reduce},
    {"Relu", sh_unary},
    {"Reshape", sh_reshape},
    {"Resize", sh_resize},
    {"ReverseSequence", sh_same_as_first},
    {"RoiAlign", sh_roi_align},
    {"RotaryEmbedding", sh_same_as_first},
    {"Round", sh_unary},
    {"STFT", sh_stft},
    {"Scan", sh_scan},
    {"Scatter", sh_same_as_first},
    {"ScatterElements", sh_same_as_first},
    {"ScatterND", sh_same_as_first},
    {"Selu", sh_unary},
    {"Shape", sh_shape},
    {"Shrink", sh_unary},
    {"Sigmoid", sh_unary},
    {"Sign", sh_unary},
    {"Sin", sh_unary},
    {"Sinh", sh_unary},
    {"Size", sh_size},
    {"Slice", sh_slice},
    {"Softmax", sh_unary},
    {"SoftmaxCrossEntropyLoss", sh_loss},
    {"Softplus", sh_unary},
    {"Softsign", sh_unary},
    {"SpaceToDepth", sh_space_to_depth},
    {"Split", sh_split},
    {"Sqrt", sh_unary},
    {"Squeeze", sh_squeeze},
    {"Sub", sh_binary},
    {"Sum", sh_variadic},
    {"Swish", sh_unary},
    {"Tan", sh_unary},
    {"Tanh", sh_unary},
    {"TensorScatter", sh_same_as_first},
    {"ThresholdedRelu", sh_unary},
    {"Tile", sh_tile},
    {"TopK", sh_topk},
    {"Transpose", sh_transpose},
    {"Trilu", sh_unary},
    {"Unsqueeze", sh_unsqueeze},
    {"Upsample", sh_upsample},
    {"Where", sh_where},
    {"Xor", sh_compare},
    {"com.microsoft::MatMulNBits", sh_matmul_nbits},
    {"mplan.LoopEnter", sh_loop_enter},
    {"mplan.ScanEnter", sh_scan_enter},
};

#define SH_N_RULES (sizeof sh_table / sizeof *sh_table)

/* Invariant 7: the bound rules, tried after the exact rule and the
 * declaration. */
static const sh_entry sh_bounds[] = {
    {"Compress", sh_compress_bound},
    {"NonMaxSuppression", sh_nms_bound},
    {"NonZero", sh_nonzero_bound},
    {"Unique", sh_unique_bound},
};

static sh_rule_fn sh_bound_rule(const char *type) {
  for (size_t k = 0; k < sizeof sh_bounds / sizeof *sh_bounds; k++) {
    if (strcmp(sh_bounds[k].type, type) == 0) return sh_bounds[k].fn;
  }
  return NULL;
}

static int sh_entry_cmp(const void *key, const void *e) {
  return strcmp(key, ((const sh_entry *)e)->type);
}

static sh_rule_fn sh_lookup(const char *type) {
  const sh_entry *e =
      bsearch(type, sh_table, SH_N_RULES, sizeof *sh_table, sh_entry_cmp);
  return e ? e->fn : NULL;
}

bool mp_shape_has_rule(const char *type) {
  return sh_lookup(type) != NULL;
}

/* Invariant 1, run inside assert(). */
MP_CHECKER static bool sh_table_sorted(void) {
  for (size_t k = 1; k < SH_N_RULES; k++) {
    if (strcmp(sh_table[k - 1].type, sh_table[k].type) >= 0) return false;
  }
  return true;
}

/* ---- helpers for rules --------------------------------------------------- */

mp_status sh_fail(sh_ctx *c, const char *fmt, ...) {
  char msg[MP_ERROR_MAX / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mp_error_set(c->err, MP_ERR_BAD_INPUT, "%s: op '%s' (%s): %s",
                      mp_graph_source(c->g), c->op->name, c->op->type, msg);
}

const sh_fact *sh_in(const sh_ctx *c, uint32_t k) {
  return k < c->n_in && c->in[k].present ? &c->in[k] : NULL;
}

void sh_set(sh_ctx *c, uint32_t k, mp_dtype dt, uint32_t rank,
            const int64_t *d) {
  if (k >= c->n_out) return;
  sh_out *o = &c->out[k];
  o->set = true;
  o->dt = dt;
  o->rank = rank;
  o->has_value = false;
  for (uint32_t j = 0; j < rank && j < MP_MAX_RANK; j++) o->d[j] = d[j];
}

static bool sh_value_fits(const sh_out *o, size_t n) {
  int64_t e = 1;
  for (uint32_t j = 0; j < o->rank; j++) {
    if (!mp_i64_mul(e, o->d[j], &e)) return false;
  }
  return n <= MP_VALUE_MAX && (int64_t)n == e;
}

void sh_set_ints(sh_ctx *c, uint32_t k, const int64_t *v, size_t n) {
  if (k >= c->n_out || !c->out[k].set || !sh_value_fits(&c->out[k], n)) {
    return;
  }
  sh_out *o = &c->out[k];
  if (n) memmove(o->i, v, n * sizeof *v);
  o->n = n;
  o->is_float = false;
  o->has_value = true;
}

void sh_set_floats(sh_ctx *c, uint32_t k, const double *v, size_t n) {
  if (k >= c->n_out || !c->out[k].set || !sh_value_fits(&c->out[k], n)) {
    return;
  }
  sh_out *o = &c->out[k];
  if (n) memmove(o->f, v, n * sizeof *v);
  o->n = n;
  o->is_float = true;
  o->has_value = true;
}

static const mp_attr *sh_attr(const sh_ctx *c, const char *name) {
  return mp_op_attr(c->op, name);
}

bool sh_has_attr(const sh_ctx *c, const char *name) {
  return sh_attr(c, name) != NULL;
}

int64_t sh_attr_i(const sh_ctx *c, const char *name, int64_t def) {
  const mp_attr *a = sh_attr(c, name);
  if (!a) return def;
  if (a->kind == MP_ATTR_INT) return a->i;
  if (a->kind == MP_ATTR_FLOAT) return mp_f64_to_i64(a->f);
  return def;
}

double sh_attr_f(const sh_ctx *c, const char *name, double def) {
  const mp_attr *a = sh_attr(c, name);
  if (!a) return def;
  if (a->kind == MP_ATTR_FLOAT) return a->f;
  if (a->kind == MP_ATTR_INT) return (double)a->i;
  return def;
}

const char *sh_attr_s(const sh_ctx *c, const char *name, const char *def) {
  const mp_attr *a = sh_attr(c, name);
  return a && a->kind == MP_ATTR_STRING && a->s ? a->s : def;
}

const int64_t *sh_attr_ints(const sh_ctx *c, const char *name, size_t *n) {
  const mp_attr *a = sh_attr(c, name);
  if (!a || a->kind != MP_ATTR_INTS) return NULL;
  *n = a->n;
  return a->ints;
}

const double *sh_attr_floats(const sh_ctx *c, const char *name, size_t *n) {
  const mp_attr *a = sh_attr(c, name);
  if (!a || a->kind != MP_ATTR_FLOATS) return NULL;
  *n = a->n;
  return a->floats;
}

const int64_t *sh_ints(const sh_ctx *c, uint32_t k, size_t *n) {
  const sh_fact *f = sh_in(c, k);
  if (!f || !f->v || !f->v->i) return NULL;
  *n = f->v->n;
  return f->v->i;
}

bool sh_doubles(const sh_ctx *c, uint32_t k, double *buf, size_t *n) {
  const sh_fact *f = sh_in(c, k);
  if (!f || !f->v) return false;
  for (size_t j = 0; j < f->v->n; j++) {
    buf[j] = f->v->f ? f->v->f[j] : (double)f->v->i[j];
  }
  *n = f->v->n;
  return true;
}

int64_t sh_elems(const sh_fact *f) {
  return sh_dims_elems(f->rank, f->d);
}

mp_status sh_axis(sh_ctx *c, int64_t axis, uint32_t rank, uint32_t *out) {
  int64_t a = axis < 0 ? axis + (int64_t)rank : axis;
  if (a < 0 || a >= (int64_t)rank) {
    return sh_fail(c, "axis %" PRId64 " is out of range for rank %u", axis,
                   rank);
  }
  *out = (uint32_t)a;
  return MP_OK;
}

mp_status sh_broadcast(sh_ctx *c, uint32_t ra, const int64_t *a, uint32_t rb,
                       const int64_t *b, uint32_t *r, int64_t *out) {
  uint32_t n = ra > rb ? ra : rb;
  int64_t tmp[MP_MAX_RANK];
  for (uint32_t j = 0; j < n; j++) {
    int64_t x = j + ra >= n ? a[j + ra - n] : 1;
    int64_t y = j + rb >= n ? b[j + rb - n] : 1;
    if (x != y && x != 1 && y != 1) {
      return sh_fail(c, "shapes do not broadcast: dim %" PRId64 " vs %" PRId64,
                     x, y);
    }
    tmp[j] = x == 1 ? y : x;
  }
  memcpy(out, tmp, n * sizeof *out);
  *r = n;
  return MP_OK;
}

bool sh_is_float(mp_dtype t) {
  return mp_dtype_is_float(t);
}

/* ---- the driver ---------------------------------------------------------- */

typedef struct sh_run {
  mp_graph *g;
  mp_error *err;
  sh_fact *in;
  sh_out *out;
  int64_t *ibuf;
  double *fbuf;
  uint32_t max_in, max_out;
  mp_shape_stats stats;
} sh_run;

/* The facts about tensor t; false when it is not known (invariant 2). */
int64_t sh_dims_elems(uint32_t rank, const int64_t *d) {
  int64_t n = 1;
  for (uint32_t j = 0; j < rank; j++) {
    if (d[j] < 0 || !mp_i64_mul(n, d[j], &n)) return INT64_MAX;
  }
  return n;
}

/* Invariant 6: the dims fit, and so does the product of the nonzero ones
 * (a zero dim makes a tensor empty, not small enough for any other dim). */
static bool sh_bounded(uint32_t rank, const int64_t *d) {
  int64_t n = 1;
  for (uint32_t j = 0; j < rank; j++) {
    if (d[j] > SH_DIM_MAX) return false;
    if (d[j] > 0 && (!mp_i64_mul(n, d[j], &n) || n > SH_ELEMS_MAX)) {
      return false;
    }
  }
  return true;
}

static mp_status sh_too_big(sh_run *r, const mp_op *op, const char *what,
                            const mp_tensor *x, uint32_t rank,
                            const int64_t *d) {
  char text[256];
  size_t len = (size_t)snprintf(text, sizeof text, "[");
  for (uint32_t j = 0; j < rank && len < sizeof text; j++) {
    len += (size_t)snprintf(text + len, sizeof text - len, "%s%" PRId64,
                            j ? "," : "", d[j]);
  }
  if (len < sizeof text) snprintf(text + len, sizeof text - len, "]");
  return mp_error_set(r->err, MP_ERR_BAD_INPUT,
                      "%s: op '%s' (%s): %s '%s' has shape %s, beyond the "
                      "2^48 elements a tensor may have",
                      mp_graph_source(r->g), op->name, op->type, what, x->name,
                      text);
}

static bool sh_fact_of(const mp_graph *g, int32_t t, sh_fact *f) {
  const mp_tensor *x = mp_graph_tensor(g, (size_t)t);
  memset(f, 0, sizeof *f);
  f->present = true;
  if (x->origin == MP_SHAPE_PENDING) return false;
  f->dt = x->dtype;
  f->rank = x->rank;
  for (uint32_t j = 0; j < x->rank; j++) {
    f->d[j] = mp_graph_dim_of(g, &x->shape[j]);
    if (f->d[j] < 0) return false;
  }
  f->v = x->value;
  return true;
}

static void sh_shape_text(const mp_graph *g, uint32_t rank, const mp_dim *d,
                          char *buf, size_t cap) {
  size_t len = (size_t)snprintf(buf, cap, "[");
  for (uint32_t j = 0; j < rank && len < cap; j++) {
    int64_t v = mp_graph_dim_of(g, &d[j]);
    if (v >= 0) {
      len +=
          (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, j ? "," : "", v);
    } else {
      len += (size_t)snprintf(buf + len, cap - len, "%s?", j ? "," : "");
    }
  }
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

/* Merges an inferred shape with tensor t's declaration (invariant 3). */
static mp_status sh_unify(sh_run *r, int32_t t, const sh_out *o, mp_dim *dims) {
  const mp_tensor *x = mp_graph_tensor(r->g, (size_t)t);
  bool bad = x->has_decl && (x->decl_rank != o->rank);
  for (uint32_t j = 0; j < o->rank; j++) {
    dims[j] = (mp_dim){o->d[j], MP_NO_SYM};
    if (!x->has_decl || j >= x->decl_rank) continue;
    const mp_dim *dd = &x->decl[j];
    int64_t dv = mp_graph_dim_of(r->g, dd);
    if (dd->sym != MP_NO_SYM) {
      if (dv < 0) {
        mp_graph_set_dim_value(r->g, dd->sym, o->d[j]);
        dv = o->d[j];
      }
      if (dv == o->d[j]) dims[j].sym = dd->sym;
    }
    if (dv >= 0 && dv != o->d[j]) bad = true;
  }
  if (x->has_decl && x->decl_dtype != o->dt) bad = true;
  if (!bad) return MP_OK;
  char want[256], got[256];
  sh_shape_text(r->g, x->decl_rank, x->decl, want, sizeof want);
  sh_shape_text(r->g, o->rank, dims, got, sizeof got);
  r->stats.mismatched++;
  return mp_graph_warn(
      r->g, r->err,
      "%s: tensor '%s': inferred %s %s, but the model declares %s "
      "%s; using the inferred shape",
      mp_graph_source(r->g), x->name, mp_dtype_name(o->dt), got,
      mp_dtype_name(x->decl_dtype), want);
}

static mp_status sh_store(sh_run *r, const mp_op *op) {
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    const sh_out *o = &r->out[k];
    int32_t t = op->outputs[k];
    mp_dim dims[MP_MAX_RANK];
    if (!o->set) continue;
    if (o->rank > MP_MAX_RANK) {
      return mp_error_set(r->err, MP_ERR_UNSUPPORTED,
                          "%s: op '%s' (%s): output rank %u exceeds the "
                          "maximum of %d",
                          mp_graph_source(r->g), op->name, op->type, o->rank,
                          MP_MAX_RANK);
    }
    for (uint32_t j = 0; j < o->rank; j++) {
      if (o->d[j] < 0) {
        return mp_error_set(r->err, MP_ERR_BAD_INPUT,
                            "%s: op '%s' (%s): output '%s' would have dim "
                            "%" PRId64,
                            mp_graph_source(r->g), op->name, op->type,
                            mp_graph_tensor(r->g, (size_t)t)->name, o->d[j]);
      }
    }
    if (!sh_bounded(o->rank, o->d)) {
      return sh_too_big(r, op, "output", mp_graph_tensor(r->g, (size_t)t),
                        o->rank, o->d);
    }
    mp_status st = sh_unify(r, t, o, dims);
    if (st == MP_OK) {
      st = mp_graph_set_shape(r->g, t, o->dt, o->rank, dims, MP_SHAPE_INFERRED,
                              r->err);
    }
    if (st == MP_OK && o->has_value) {
      st = mp_graph_set_value(r->g, t, o->is_float ? NULL : o->i,
                              o->is_float ? o->f : NULL, o->n, r->err);
    }
    if (st != MP_OK) return st;
  }
  return MP_OK;
}

/* Uses complete declarations where no rule applied (invariant 4). */
static mp_status sh_declared(sh_run *r, const mp_op *op) {
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    const mp_tensor *x = mp_graph_tensor(r->g, (size_t)op->outputs[k]);
    if (x->origin != MP_SHAPE_PENDING || !x->has_decl) continue;
    bool full = true;
    for (uint32_t j = 0; j < x->decl_rank; j++) {
      full = full && mp_graph_dim_of(r->g, &x->decl[j]) >= 0;
    }
    if (!full) continue;
    mp_dim dims[MP_MAX_RANK];
    for (uint32_t j = 0; j < x->decl_rank; j++) {
      dims[j] = x->decl[j];
      dims[j].value = mp_graph_dim_of(r->g, &x->decl[j]);
    }
    mp_status st =
        mp_graph_set_shape(r->g, op->outputs[k], x->decl_dtype, x->decl_rank,
                           dims, MP_SHAPE_DECLARED, r->err);
    if (st != MP_OK) return st;
  }
  return MP_OK;
}

/* Appends "[1,96,112,112] i8" to buf. */
static void sh_fmt(char *buf, size_t cap, uint32_t rank, const int64_t *d,
                   mp_dtype dt) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (uint32_t j = 0; j < rank && n < cap; j++) {
    n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, j ? "," : "", d[j]);
  }
  if (n < cap) snprintf(buf + n, cap - n, "] %s", mp_dtype_name(dt));
}

/* Shapes written in the file for an op's outputs (graph JSON) must be the
 * shapes the op computes when its rule can compute them (st: the rule's
 * status): a wrong size would be planned silently otherwise. Where the
 * rule cannot (no rule, or inputs it needs are absent, such as a Reshape
 * given only its data), the written shapes stand. The values a rule
 * computes (shape math) are kept. */
static mp_status sh_check_given(sh_run *r, const mp_op *op, mp_status st) {
  if (st == MP_ERR_NOMEM) return st;
  if (st != MP_OK) return MP_OK;
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    const sh_out *o = &r->out[k];
    const mp_tensor *x = mp_graph_tensor(r->g, (size_t)op->outputs[k]);
    if (!o->set || x->origin != MP_SHAPE_GIVEN) continue;
    int64_t given[MP_MAX_RANK];
    bool same = o->rank == x->rank && o->dt == x->dtype, bound = true;
    for (uint32_t j = 0; j < x->rank; j++) {
      given[j] = mp_graph_dim_of(r->g, &x->shape[j]);
      bound = bound && given[j] >= 0;
      same = same && j < o->rank && given[j] == o->d[j];
    }
    if (!bound) continue; /* an unbound dim: mp_graph_resolve names it */
    if (!same) {
      char want[160], got[160];
      sh_fmt(want, sizeof want, x->rank, given, x->dtype);
      sh_fmt(got, sizeof got, o->rank, o->d, o->dt);
      return mp_error_set(r->err, MP_ERR_BAD_INPUT,
                          "%s: op '%s' (%s): output '%s' is declared %s but "
                          "the op computes %s from its inputs",
                          mp_graph_source(r->g), op->name, op->type, x->name,
                          want, got);
    }
    if (o->has_value && !x->value) {
      mp_status vs =
          mp_graph_set_value(r->g, op->outputs[k], o->is_float ? NULL : o->i,
                             o->is_float ? o->f : NULL, o->n, r->err);
      if (vs != MP_OK) return vs;
    }
  }
  return MP_OK;
}

/* Empties the rule outputs of op, each with its value buffers. */
static void sh_outs_clear(sh_run *r, const mp_op *op) {
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    r->out[k] = (sh_out){.i = r->ibuf + (size_t)k * MP_VALUE_MAX,
                         .f = r->fbuf + (size_t)k * MP_VALUE_MAX};
  }
}

/* Invariant 7: the outputs still pending after the declarations take the
 * bound rule's shapes, and one warning names them. */
static mp_status sh_bounded_outputs(sh_run *r, const mp_op *op, sh_ctx *c,
                                    sh_rule_fn bound) {
  sh_outs_clear(r, op);
  c->exact = 0;
  mp_status st = bound(c);
  if (st != MP_OK) return st == MP_ERR_UNSUPPORTED ? MP_OK : st;
  char list[512];
  size_t n = 0;
  list[0] = '\0';
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    const mp_tensor *x = mp_graph_tensor(r->g, (size_t)op->outputs[k]);
    sh_out *o = &r->out[k];
    if (x->origin != MP_SHAPE_PENDING) o->set = false;
    if (!o->set || (k < 32 && (c->exact >> k & 1u)) || n >= sizeof list)
      continue;
    char shape[160];
    sh_fmt(shape, sizeof shape, o->rank, o->d, o->dt);
    n += (size_t)snprintf(list + n, sizeof list - n, "%s'%s' %s", n ? ", " : "",
                          x->name, shape);
  }
  st = sh_store(r, op);
  if (st != MP_OK || !n) return st;
  return mp_graph_warn(r->g, r->err,
                       "%s: op '%s' (%s): its output shape depends on the "
                       "data; planned at its bound: %s",
                       mp_graph_source(r->g), op->name, op->type, list);
}

static mp_status sh_op(sh_run *r, const mp_op *op) {
  sh_ctx c = {r->g,         op,     mp_graph_opset(r->g),
              op->n_inputs, r->in,  op->n_outputs,
              r->out,       r->err, 0};
  bool known = true;
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    if (op->inputs[k] < 0) {
      memset(&r->in[k], 0, sizeof r->in[k]);
    } else if (!sh_fact_of(r->g, op->inputs[k], &r->in[k])) {
      known = false;
    }
  }
  bool pending = false;
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    const mp_tensor *x = mp_graph_tensor(r->g, (size_t)op->outputs[k]);
    pending = pending || x->origin == MP_SHAPE_PENDING;
  }
  sh_outs_clear(r, op);
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    if (op->inputs[k] >= 0 && r->in[k].present &&
        !sh_bounded(r->in[k].rank, r->in[k].d)) {
      return sh_too_big(r, op, "input",
                        mp_graph_tensor(r->g, (size_t)op->inputs[k]),
                        r->in[k].rank, r->in[k].d);
    }
  }
  sh_rule_fn fn = sh_lookup(op->type);
  if (!pending) return sh_check_given(r, op, fn && known ? fn(&c) : MP_OK);
  if (!fn) r->stats.no_rule++;
  mp_status st = fn && known ? fn(&c) : MP_ERR_UNSUPPORTED;
  if (st == MP_OK) return sh_store(r, op);
  if (st != MP_ERR_UNSUPPORTED) return st;
  st = sh_declared(r, op);
  sh_rule_fn bound = sh_bound_rule(op->type);
  if (st != MP_OK || !bound || !known) return st;
  return sh_bounded_outputs(r, op, &c, bound);
}

static void sh_count(sh_run *r) {
  for (size_t i = 0; i < mp_graph_tensor_count(r->g); i++) {
    switch (mp_graph_tensor(r->g, i)->origin) {
      case MP_SHAPE_GIVEN:
        r->stats.given++;
        break;
      case MP_SHAPE_INFERRED:
        r->stats.inferred++;
        break;
      case MP_SHAPE_DECLARED:
        r->stats.declared++;
        break;
      case MP_SHAPE_PENDING:
        r->stats.pending++;
        break;
    }
  }
}

static mp_status sh_infer(mp_graph *g, const uint32_t *order, bool all,
                          uint32_t *failed, mp_shape_stats *stats,
                          mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  sh_run r = {.g = g, .err = err};
  assert(sh_table_sorted());
  for (size_t o = 0; o < mp_graph_op_count(g); o++) {
    const mp_op *op = mp_graph_op(g, o);
    if (op->n_inputs > r.max_in) r.max_in = op->n_inputs;
    if (op->n_outputs > r.max_out) r.max_out = op->n_outputs;
  }
  r.in = mp_calloc(a, r.max_in + 1, sizeof *r.in);
  r.out = mp_calloc(a, r.max_out + 1, sizeof *r.out);
  r.ibuf = mp_calloc(a, (size_t)(r.max_out + 1) * MP_VALUE_MAX, sizeof *r.ibuf);
  r.fbuf = mp_calloc(a, (size_t)(r.max_out + 1) * MP_VALUE_MAX, sizeof *r.fbuf);
  mp_status st = MP_OK;
  if (!r.in || !r.out || !r.ibuf || !r.fbuf) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                      mp_graph_source(g));
  }
  mp_status first_st = MP_OK;
  if (failed) *failed = UINT32_MAX;
  mp_error first = {MP_OK, ""};
  for (size_t s = 0; st == MP_OK && s < mp_graph_op_count(g); s++) {
    st = sh_op(&r, mp_graph_op(g, order[s]));
    if (all && st != MP_OK && st != MP_ERR_NOMEM) {
      if (first_st == MP_OK) { /* the first failure is the one returned */
        if (err) first = *err;
        if (failed) *failed = order[s];
        first_st = st;
      }
      st = MP_OK;
    }
  }
  if (st == MP_OK && first_st != MP_OK) {
    if (err) *err = first;
    st = first_st;
  }
  mp_free(a, r.fbuf);
  mp_free(a, r.ibuf);
  mp_free(a, r.out);
  mp_free(a, r.in);
  if (st != MP_OK) return st;
  sh_count(&r);
  if (stats) *stats = r.stats;
  return MP_OK;
}

mp_status mp_shape_infer(mp_graph *g, const uint32_t *order,
                         mp_shape_stats *stats, mp_error *err) {
  return sh_infer(g, order, false, NULL, stats, err);
}

mp_status mp_shape_infer_all(mp_graph *g, const uint32_t *order,
                             uint32_t *failed, mp_error *err) {
  return sh_infer(g, order, true, failed, NULL, err);
}

mp_status mp_shape_check_resolved(const mp_graph *g, mp_error *err) {
  size_t pending = 0, listed = 0, types = 0;
  char list[600] = "", norule[300] = "";
  for (size_t i = 0; i < mp_graph_tensor_count(g); i++) {
    const mp_tensor *t = mp_graph_tensor(g, i);
    if (t->origin != MP_SHAPE_PENDING) continue;
    pending++;
    const mp_op *op =
        t->producer >= 0 ? mp_graph_op(g, (size_t)t->producer) : NULL;
    if (listed < 3) {
      size_t len = strlen(list);
      snprintf(list + len, sizeof list - len, "%s'%s' (from %s '%s')",
               listed ? ", " : "", t->name, op ? op->type : "?",
               op ? op->name : "?");
      listed++;
    }
    if (op && !mp_shape_has_rule(op->type) && types < 5 &&
        !strstr(norule, op->type)) {
      size_t len = strlen(norule);
      snprintf(norule + len, sizeof norule - len, "%s%s", types ? ", " : "",
               op->type);
      types++;
    }
  }
  if (pending == 0) return MP_OK;
  return mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: %zu tensor%s of unknown shape, so the model cannot "
                      "be planned: %s%s%s%s%s",
                      mp_graph_source(g), pending, pending == 1 ? "" : "s",
                      list, pending > listed ? ", ..." : "",
                      types ? "; ops with no shape rule: " : "", norule,
                      types ? " (declare their outputs in value_info)" : "");
}
