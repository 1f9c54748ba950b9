/*
 * ops_linalg.c -- check and run of Einsum and Det (kernels/k_linalg.c).
 *
 * Einsum parameters (compile/lower.c parses the equation): n_in,
 * n_labels, then per operand its rank and one label per axis, then the
 * output's rank and labels (an ellipsis is already spelled out as
 * labels). Label dims come from the operands: every axis with a label has
 * its dim or 1 (broadcast, stride 0); two axes of one operand with one
 * label (a diagonal) must have the same dim.
 *
 * Invariants (those of ops.c, and): float tensors of one dtype; outputs
 * share no input's bytes.
 */
#include "op_ctx.h"

static bool la_float(op_ctx *c, const mp_btensor *t, int d) {
  if (!t || !mp_kd_is_float(t->dtype) || (d && t->dtype != d)) {
    return op_fail(c, "needs float tensors of one dtype");
  }
  return true;
}

/* Decodes the parameters into p (strides from the tensors' shapes) and
 * the output shape; false with a reason on any inconsistency. */
static bool la_einsum_spec(op_ctx *c, mp_keinsum *p, mp_kshape *ys) {
  op_rd r = op_reader(c);
  memset(p, 0, sizeof *p);
  p->n_in = (uint32_t)rd_range(&r, 1, MP_K_MAX_OPERANDS);
  p->n_labels = (uint32_t)rd_range(&r, 0, MP_K_MAX_LABELS);
  if (r.bad || c->op->n_in != p->n_in || c->op->n_out != 1)
    return op_fail(c, "bad arity");
  for (uint32_t l = 0; l < p->n_labels; l++) p->dim[l] = -1;
  for (uint32_t k = 0; k < p->n_in; k++) {
    const mp_btensor *t = op_in(c, k);
    if (!la_float(c, t, op_in(c, 0) ? op_in(c, 0)->dtype : 0)) return false;
    uint32_t rank = (uint32_t)rd_range(&r, 0, MP_K_MAX_RANK);
    if (r.bad || rank != t->shape.rank)
      return op_fail(c, "operand %u: the equation has another rank", k);
    int64_t st[MP_K_MAX_RANK], own[MP_K_MAX_LABELS];
    mp_kshape_strides(&t->shape, st);
    for (uint32_t l = 0; l < p->n_labels; l++) own[l] = -1;
    for (uint32_t a = 0; a < rank; a++) {
      int64_t l = rd_range(&r, 0, (int64_t)p->n_labels - 1);
      if (r.bad) return op_fail(c, "bad parameters");
      int64_t dim = t->shape.dims[a];
      if (own[l] >= 0 && own[l] != dim) {
        return op_fail(c, "operand %u: a diagonal of dims %lld and %lld", k,
                       (long long)own[l], (long long)dim);
      }
      if (own[l] < 0 && dim != 1) {
        if (p->dim[l] > 1 && p->dim[l] != dim) {
          return op_fail(c, "label %lld has dims %lld and %lld", (long long)l,
                         (long long)p->dim[l], (long long)dim);
        }
        p->dim[l] = dim;
      }
      if (own[l] < 0 && dim == 1 && p->dim[l] < 0) p->dim[l] = 1;
      own[l] = dim;
      if (dim != 1) p->stride[k][l] += st[a];
    }
  }
  uint32_t yr = (uint32_t)rd_range(&r, 0, MP_K_MAX_RANK);
  ys->rank = r.bad ? 0 : yr;
  int64_t lab[MP_K_MAX_RANK];
  for (uint32_t a = 0; a < ys->rank; a++) {
    lab[a] = rd_range(&r, 0, (int64_t)p->n_labels - 1);
  }
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  for (uint32_t l = 0; l < p->n_labels; l++) {
    if (p->dim[l] < 0) return op_fail(c, "label %u is on no operand", l);
  }
  int64_t n = 1;
  for (uint32_t a = ys->rank; a-- > 0;) {
    if (p->ystride[lab[a]]) return op_fail(c, "an output label repeats");
    ys->dims[a] = p->dim[lab[a]];
    p->ystride[lab[a]] = n;
    n *= ys->dims[a];
  }
  /* a label of one element moves nothing: its strides do not matter */
  p->n_out = n;
  return true;
}

static bool la_check_einsum(op_ctx *c) {
  mp_keinsum p;
  mp_kshape ys;
  if (!la_einsum_spec(c, &p, &ys)) return false;
  const mp_btensor *y = op_out(c, 0);
  if (!la_float(c, y, op_in(c, 0)->dtype)) return false;
  c->need_ws += (size_t)p.n_out * sizeof(double);
  return op_out_of_place(c, y, &ys);
}

static bool la_run_einsum(op_ctx *c) {
  mp_keinsum p;
  mp_kshape ys;
  if (!la_einsum_spec(c, &p, &ys)) return false;
  const void *x[MP_K_MAX_OPERANDS];
  for (uint32_t k = 0; k < p.n_in; k++) x[k] = op_pin(c, k);
  mp_k_einsum(op_in(c, 0)->dtype, &p, x, op_pout(c, 0),
              (double *)(void *)c->ws);
  return true;
}

static bool la_check_det(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0);
  if (c->op->n_in != 1 || c->op->n_out != 1 || c->op->n_params)
    return op_fail(c, "bad arity or parameters");
  if (!la_float(c, x, 0)) return false;
  uint32_t r = x->shape.rank;
  if (r < 2 || x->shape.dims[r - 1] != x->shape.dims[r - 2])
    return op_fail(c, "needs square matrices");
  mp_kshape want = {r - 2, {0}};
  for (uint32_t a = 0; a + 2 < r; a++) want.dims[a] = x->shape.dims[a];
  int64_t n = x->shape.dims[r - 1];
  c->need_ws += (size_t)(n * n) * sizeof(double);
  const mp_btensor *y = op_out(c, 0);
  if (!la_float(c, y, x->dtype)) return false;
  return op_out_of_place(c, y, &want);
}

static bool la_run_det(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0);
  int64_t n = x->shape.dims[x->shape.rank - 1];
  mp_k_det(x->dtype, op_div(op_count(x), n * n), n, op_pin(c, 0), op_pout(c, 0),
           (double *)(void *)c->ws);
  return true;
}

bool op_linalg_dispatch(op_ctx *c, bool run, bool *handled) {
  *handled = true;
  switch (c->op->kernel) {
    case MP_BOP_EINSUM:
      return run ? la_run_einsum(c) : la_check_einsum(c);
    case MP_BOP_DET:
      return run ? la_run_det(c) : la_check_det(c);
    default:
      *handled = false;
      return false;
  }
}
