/*
 * ops_stats.c -- check and run of the ops of kernels/k_stats.c:
 * Instance- and GroupNormalization, LRN, ImageScaler,
 * MeanVarianceNormalization,
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 *
 * Invariants (those of ops.c, and):
 *   1. Float tensors only (f32 or f64), all of one dtype.
 *   2. A loss's class indices are checked at run time before the kernel
 *      runs: each in [0, C) or equal to the ignore_index; another fails
 *      the op with the value and the tensor named.
 *   3. Outputs share no input's bytes.
 */
#include "op_ctx.h"

/* y has shape want and dtype d, apart from every input. */
static bool st_out(op_ctx *c, const mp_btensor *y, const mp_kshape *want,
                   int d) {
  if (y->dtype != d)
    return op_fail(c, "output '%s' has another dtype", y->name);
  return op_out_of_place(c, y, want);
}

static bool st_float_in(op_ctx *c, const mp_btensor *x, uint32_t min_rank) {
  if (!x || !mp_kd_is_float(x->dtype) || x->shape.rank < min_rank) {
    return op_fail(c, "needs a float input of rank %u or more", min_rank);
  }
  return true;
}

/* The input of an op of one float input (rank min_rank or more) and one
 * output, or NULL when it has failed. */
static const mp_btensor *st_one_in(op_ctx *c, uint32_t min_rank) {
  const mp_btensor *x = op_in(c, 0);
  if (c->op->n_in != 1 || c->op->n_out != 1) {
    (void)op_fail(c, "bad arity");
    return NULL;
  }
  return st_float_in(c, x, min_rank) ? x : NULL;
}

/* ---- Instance- and GroupNormalization, LRN, MeanVarianceNormalization --- */

/* INSTANCENORM: epsilon; GROUPNORM: epsilon, groups, per_channel. The
 * groups (C for an InstanceNormalization) and whether scale and B are
 * per channel, or false for bad parameters. */
static bool st_norm_params(op_ctx *c, const mp_btensor *x, double *eps,
                           int64_t *groups, bool *per_channel) {
  op_rd r = op_reader(c);
  bool group = c->op->kernel == MP_BOP_GROUPNORM;
  *eps = rd_f(&r);
  *groups = group ? rd_range(&r, 1, x->shape.dims[1] > 0 ? x->shape.dims[1] : 1)
                  : x->shape.dims[1];
  *per_channel = group ? rd_range(&r, 0, 1) != 0 : true;
  return !r.bad && r.at == r.n;
}

static bool st_check_norm(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0), *s = op_in(c, 1), *b = op_in(c, 2);
  if (c->op->n_in != 3 || c->op->n_out != 1 || !s || !b)
    return op_fail(c, "needs X, scale and B");
  if (!st_float_in(c, x, 2)) return false;
  double eps;
  int64_t groups;
  bool per_channel;
  if (!st_norm_params(c, x, &eps, &groups, &per_channel) ||
      (groups > 0 && x->shape.dims[1] % groups != 0)) {
    return op_fail(c, "bad parameters (the groups must divide C)");
  }
  mp_kshape ch = {1, {per_channel ? x->shape.dims[1] : groups}};
  if (s->dtype != x->dtype || b->dtype != x->dtype ||
      !op_expect_shape(c, s, &ch) || !op_expect_shape(c, b, &ch)) {
    return op_fail(c, "scale and B must be [%s] of the input's dtype",
                   per_channel ? "C" : "num_groups");
  }
  return st_out(c, op_out(c, 0), &x->shape, x->dtype);
}

static bool st_run_norm(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0);
  double eps;
  int64_t n, ch, rest, groups;
  bool per_channel;
  (void)st_norm_params(c, x, &eps, &groups, &per_channel);
  op_split3(&x->shape, 1, false, &n, &ch, &rest);
  mp_k_groupnorm(x->dtype, n, ch, rest, groups, per_channel, op_pin(c, 0),
                 op_pin(c, 1), op_pin(c, 2), eps, op_pout(c, 0));
  return true;
}

static bool st_check_lrn(op_ctx *c) {
  op_rd r = op_reader(c);
  (void)rd_range(&r, 1, 1 << 20);
  for (int k = 0; k < 3; k++) (void)rd_f(&r);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const mp_btensor *x = st_one_in(c, 2);
  return x && st_out(c, op_out(c, 0), &x->shape, x->dtype);
}

static bool st_run_lrn(op_ctx *c) {
  op_rd r = op_reader(c);
  int64_t size = rd_i(&r);
  double alpha = rd_f(&r), beta = rd_f(&r), bias = rd_f(&r);
  const mp_btensor *x = op_in(c, 0);
  int64_t n, ch, rest;
  op_split3(&x->shape, 1, false, &n, &ch, &rest);
  mp_k_lrn(x->dtype, n, ch, rest, size, alpha, beta, bias, op_pin(c, 0),
           op_pout(c, 0));
  return true;
}

static bool st_check_lpnorm(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = st_one_in(c, 1);
  if (!x) return false;
  (void)rd_range(&r, 0, x->shape.rank - 1);
  (void)rd_range(&r, 1, 2);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  return st_out(c, op_out(c, 0), &x->shape, x->dtype);
}

static bool st_run_lpnorm(op_ctx *c) {
  op_rd r = op_reader(c);
  int64_t axis = rd_i(&r), p = rd_i(&r);
  const mp_btensor *x = op_in(c, 0);
  int64_t outer, len, inner;
  op_split3(&x->shape, axis, false, &outer, &len, &inner);
  mp_k_lpnorm(x->dtype, outer, len, inner, (int)p, op_pin(c, 0), op_pout(c, 0));
  return true;
}

/* ImageScaler: the biases go to the workspace as doubles (C of them). */
static bool st_check_image_scaler(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = st_one_in(c, 2);
  if (!x) return false;
  (void)rd_f(&r);
  int64_t nb = rd_range(&r, 0, x->shape.dims[1]);
  for (int64_t k = 0; k < nb; k++) (void)rd_f(&r);
  if (r.bad || r.at != r.n || (nb && nb != x->shape.dims[1])) {
    return op_fail(c, "bad parameters (one bias per channel, or none)");
  }
  c->need_ws += (size_t)x->shape.dims[1] * sizeof(double);
  return st_out(c, op_out(c, 0), &x->shape, x->dtype);
}

static bool st_run_image_scaler(op_ctx *c) {
  op_rd r = op_reader(c);
  double scale = rd_f(&r), *bias = (double *)(void *)c->ws;
  int64_t nb = rd_i(&r);
  const mp_btensor *x = op_in(c, 0);
  int64_t n, ch, rest;
  op_split3(&x->shape, 1, false, &n, &ch, &rest);
  for (int64_t k = 0; k < ch; k++) bias[k] = nb ? rd_f(&r) : 0;
  mp_k_image_scaler(x->dtype, n, ch, rest, scale, bias, op_pin(c, 0),
                    op_pout(c, 0));
  return true;
}

static bool st_check_mvn(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = st_one_in(c, 1);
  if (!x) return false;
  int64_t mask = rd_range(&r, 0, ((int64_t)1 << x->shape.rank) - 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  int64_t kept = 1;
  for (uint32_t a = 0; a < x->shape.rank; a++) {
    if (!((mask >> a) & 1)) kept *= x->shape.dims[a];
  }
  c->need_ws += (size_t)kept * 2 * sizeof(double);
  return st_out(c, op_out(c, 0), &x->shape, x->dtype);
}

static bool st_run_mvn(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0);
  mp_k_mvn(x->dtype, &x->shape, (uint32_t)c->op->params[0], op_pin(c, 0),
           op_pout(c, 0), (double *)(void *)c->ws);
  return true;
}

/* ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ------------------ */

/* Parameters reduction, has_ignore, ignore; inputs input (scores) [N, C,
 * d...], target [N, d...] (i32 or i64), optional weight [C]; outputs the
 * loss ([N, d...] or a scalar), and for SoftmaxCrossEntropyLoss an
 * optional log_prob of the scores' shape. */
static bool st_check_loss(op_ctx *c, bool softmax) {
  op_rd r = op_reader(c);
  int64_t red = rd_range(&r, MP_KLOSS_NONE, MP_KLOSS_MEAN);
  (void)rd_range(&r, 0, 1);
  (void)rd_i(&r);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const mp_btensor *x = op_in(c, 0), *t = op_in(c, 1), *w = op_in(c, 2);
  if (c->op->n_in < 2 || c->op->n_in > 3 || !t || c->op->n_out < 1 ||
      c->op->n_out > (softmax ? 2u : 1u)) {
    return op_fail(c, "bad arity");
  }
  if (!st_float_in(c, x, 2)) return false;
  if (t->dtype != MP_KD_I32 && t->dtype != MP_KD_I64)
    return op_fail(c, "target '%s' is not i32 or i64", t->name);
  mp_kshape ts = {0, {0}};
  for (uint32_t d = 0; d < x->shape.rank; d++) {
    if (d != 1) ts.dims[ts.rank++] = x->shape.dims[d];
  }
  if (!op_expect_shape(c, t, &ts)) return false;
  mp_kshape ch = {1, {x->shape.dims[1]}};
  if (w && (w->dtype != x->dtype || !op_expect_shape(c, w, &ch)))
    return op_fail(c, "weight must be [C] of the input's dtype");
  mp_kshape scalar = {0, {0}};
  if (!st_out(c, op_out(c, 0), red == MP_KLOSS_NONE ? &ts : &scalar, x->dtype))
    return false;
  if (c->op->n_out == 2 && (!st_out(c, op_out(c, 1), &x->shape, x->dtype) ||
                            op_aliases(op_out(c, 0), op_out(c, 1)))) {
    return op_fail(c, "log_prob must be apart, of the scores' shape");
  }
  c->need_ws += (size_t)op_count(t) * 8 + 64;
  if (softmax && c->op->n_out == 1)
    c->need_ws += (size_t)op_count(x) * mp_kd_size(x->dtype);
  return true;
}

static bool st_run_loss(op_ctx *c, bool softmax) {
  const int64_t *p = c->op->params;
  const mp_btensor *x = op_in(c, 0), *t = op_in(c, 1);
  mp_knll k = {0, 0, 0, (mp_kloss)p[0], p[1] != 0, p[2]};
  op_split3(&x->shape, 1, false, &k.n, &k.c, &k.rest);
  int64_t *target = (int64_t *)(void *)c->ws, nt = op_count(t);
  for (int64_t i = 0; i < nt; i++) {
    int64_t v = mp_k_load_i(op_pin(c, 1), t->dtype, (size_t)i);
    if ((v < 0 || v >= k.c) && !(k.has_ignore && v == k.ignore)) {
      return op_fail(c, "class %lld of '%s' is out of range [0, %lld)",
                     (long long)v, t->name, (long long)k.c);
    }
    target[i] = v;
  }
  const void *in = op_pin(c, 0);
  if (softmax) {
    void *lp = c->op->n_out == 2 ? op_pout(c, 1)
                                 : c->ws + ((size_t)nt * 8 + 63) / 64 * 64;
    mp_k_log_softmax_axis1(x->dtype, k.n, k.c, k.rest, in, lp);
    in = lp;
  }
  mp_k_nll_loss(x->dtype, &k, in, target, op_pin(c, 2), op_pout(c, 0));
  return true;
}

/* ---- dispatch ------------------------------------------------------------ */

bool op_stats_dispatch(op_ctx *c, bool run, bool *handled) {
  *handled = true;
  switch (c->op->kernel) {
    case MP_BOP_INSTANCENORM:
    case MP_BOP_GROUPNORM:
      return run ? st_run_norm(c) : st_check_norm(c);
    case MP_BOP_LRN:
      return run ? st_run_lrn(c) : st_check_lrn(c);
    case MP_BOP_MVN:
      return run ? st_run_mvn(c) : st_check_mvn(c);
    case MP_BOP_LPNORM:
      return run ? st_run_lpnorm(c) : st_check_lpnorm(c);
    case MP_BOP_IMAGE_SCALER:
      return run ? st_run_image_scaler(c) : st_check_image_scaler(c);
    case MP_BOP_NLL_LOSS:
      return run ? st_run_loss(c, false) : st_check_loss(c, false);
    case MP_BOP_SCE_LOSS:
      return run ? st_run_loss(c, true) : st_check_loss(c, true);
    default:
      *handled = false;
      return false;
  }
}
