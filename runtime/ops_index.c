/*
 * ops_index.c -- check and run of the index, layout and selection ops
 * (kernels/k_index.c): ArgMax/ArgMin, GatherElements, ScatterElements,
 * GatherND, ScatterND, Trilu, CumSum, Hardmax, DepthToSpace/SpaceToDepth,
 * Tile, Expand, OneHot, TopK, IsNaN/IsInf, MaxUnpool, RoiAlign, Dropout.
 *
 * Invariants (those of ops.c, and):
 *   1. An index read from a tensor at run time is checked against the
 *      dim it indexes before any kernel runs (an op with one out of range
 *      fails with the index and the tensor named; OneHot's out-of-range
 *      index is defined by ONNX as all off and is not an error), and
 *      normalised into the workspace the check sized.
 *   2. Outputs never share an input's bytes, except where the kernel
 *      allows it: ScatterElements, ScatterND, Trilu and CumSum over their
 *      first input with the same shape (they read each element before
 *      writing it, or copy the input first).
 */
#include "op_ctx.h"

#include <math.h>
#include <stdint.h>

static bool ix_index_dtype(const mp_btensor *t) {
  return t && (t->dtype == MP_KD_I32 || t->dtype == MP_KD_I64);
}

/* y has shape want, and shares no input's bytes except input 0's when
 * inplace0 and y has its shape. */
static bool ix_out(op_ctx *c, const mp_btensor *y, const mp_kshape *want,
                   bool inplace0) {
  if (!op_expect_shape(c, y, want)) return false;
  for (uint32_t k = 0; k < c->op->n_in; k++) {
    const mp_btensor *x = op_in(c, k);
    if (!op_aliases(x, y)) continue;
    if (k == 0 && inplace0 && x->offset == y->offset && x->bytes == y->bytes) {
      continue;
    }
    return op_fail(c, "output '%s' shares an input's buffer", y->name);
  }
  return true;
}

/* Reads index i of tensor input k, checked against [-len, len) and made
 * non-negative (invariant 1). */
static bool ix_index(op_ctx *c, uint32_t k, size_t i, int64_t len,
                     int64_t *out) {
  const mp_btensor *t = op_in(c, k);
  int64_t v = mp_k_load_i(op_pin(c, k), t->dtype, i);
  if (v < -len || v >= len) {
    return op_fail(c, "index %lld of '%s' is out of range [%lld, %lld)",
                   (long long)v, t->name, (long long)-len, (long long)len);
  }
  *out = v < 0 ? v + len : v;
  return true;
}

/* ---- ArgMax, ArgMin ------------------------------------------------------ */

static bool ix_check_arg(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0);
  if (!x || c->op->n_in != 1 || c->op->n_out != 1 || x->shape.rank == 0)
    return op_fail(c, "bad arity");
  (void)rd_range(&r, 0, 1);
  int64_t axis = rd_range(&r, 0, x->shape.rank - 1);
  int64_t keep = rd_range(&r, 0, 1);
  (void)rd_range(&r, 0, 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const mp_btensor *y = op_out(c, 0);
  if (y->dtype != MP_KD_I64 || x->dtype == MP_KD_BOOL) {
    return op_fail(c, "needs a numeric input and an i64 output");
  }
  mp_kshape want = {0, {0}};
  for (uint32_t d = 0; d < x->shape.rank; d++) {
    if ((int64_t)d != axis) {
      want.dims[want.rank++] = x->shape.dims[d];
    } else if (keep) {
      want.dims[want.rank++] = 1;
    }
  }
  return ix_out(c, y, &want, false);
}

static bool ix_run_arg(op_ctx *c) {
  const int64_t *p = c->op->params;
  const mp_btensor *x = op_in(c, 0);
  int64_t outer, len, inner;
  op_split3(&x->shape, p[1], false, &outer, &len, &inner);
  mp_k_arg(x->dtype, p[0] != 0, p[3] != 0, outer, len, inner, op_pin(c, 0),
           (int64_t *)op_pout(c, 0));
  return true;
}

/* ---- GatherElements, ScatterElements ------------------------------------- */

/* Indices (input 1) of data's rank, no dim larger than data's but along
 * axis; updates (input 2, scatter) of the indices' shape. */
static bool ix_check_elements(op_ctx *c, bool scatter) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *ix = op_in(c, 1);
  const mp_btensor *u = scatter ? op_in(c, 2) : NULL;
  if (!x || !ix || (scatter && !u) || c->op->n_in != (scatter ? 3u : 2u) ||
      c->op->n_out != 1 || x->shape.rank == 0) {
    return op_fail(c, "bad arity");
  }
  int64_t axis = rd_range(&r, 0, x->shape.rank - 1);
  if (scatter) (void)rd_range(&r, 0, MP_KSCATTER_MIN);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const mp_btensor *y = op_out(c, 0);
  if (!ix_index_dtype(ix) || y->dtype != x->dtype ||
      (u && u->dtype != x->dtype)) {
    return op_fail(c, "indices must be i32 or i64, data and output alike");
  }
  if (ix->shape.rank != x->shape.rank) {
    return op_fail(c, "indices '%s' do not have the data's rank", ix->name);
  }
  for (uint32_t d = 0; d < x->shape.rank; d++) {
    if ((int64_t)d != axis && ix->shape.dims[d] > x->shape.dims[d]) {
      return op_fail(c, "indices '%s' are larger than the data off the axis",
                     ix->name);
    }
  }
  if (u && !op_expect_shape(c, u, &ix->shape)) return false;
  c->need_ws += (size_t)op_count(ix) * 8;
  return ix_out(c, y, scatter ? &x->shape : &ix->shape, scatter);
}

static bool ix_run_elements(op_ctx *c, bool scatter) {
  const int64_t *p = c->op->params;
  const mp_btensor *x = op_in(c, 0), *ix = op_in(c, 1);
  uint32_t axis = (uint32_t)p[0];
  int64_t *idx = (int64_t *)(void *)c->ws, n = op_count(ix);
  for (int64_t i = 0; i < n; i++) {
    if (!ix_index(c, 1, (size_t)i, x->shape.dims[axis], &idx[i])) return false;
  }
  if (scatter) {
    mp_k_scatter_elements(x->dtype, (mp_kscatter)p[1], &x->shape, &ix->shape,
                          axis, idx, op_pin(c, 0), op_pin(c, 2), op_pout(c, 0));
  } else {
    mp_k_gather_elements(mp_kd_size(x->dtype), &x->shape, &ix->shape, axis, idx,
                         op_pin(c, 0), op_pout(c, 0));
  }
  return true;
}

/* ---- GatherND, ScatterND ------------------------------------------------- */

/* data [B..., D...] (b batch dims), indices [B..., T..., k]: the batches,
 * tuples per batch, the elements a tuple selects (block) and a batch's
 * elements. */
typedef struct ix_nd {
  int64_t b, k, batches, tuples, block, per_batch;
} ix_nd;

static bool ix_nd_shape(op_ctx *c, const mp_btensor *x, const mp_btensor *ix,
                        int64_t b, ix_nd *s) {
  uint32_t r = x->shape.rank, q = ix->shape.rank;
  if (q < 1 || b < 0 || b >= (int64_t)q || b >= (int64_t)r) {
    return op_fail(c, "batch_dims %lld does not fit the ranks", (long long)b);
  }
  int64_t k = ix->shape.dims[q - 1];
  if (k < 1 || b + k > (int64_t)r) {
    return op_fail(c, "index tuples of %lld do not fit data of rank %u",
                   (long long)k, r);
  }
  s->b = b, s->k = k, s->batches = 1, s->tuples = 1, s->block = 1;
  s->per_batch = 1;
  for (int64_t d = 0; d < b; d++) {
    if (ix->shape.dims[d] != x->shape.dims[d]) {
      return op_fail(c, "batch dim %lld differs", (long long)d);
    }
    s->batches *= x->shape.dims[d];
  }
  for (int64_t d = b; d < (int64_t)q - 1; d++) s->tuples *= ix->shape.dims[d];
  for (int64_t d = b + k; d < (int64_t)r; d++) s->block *= x->shape.dims[d];
  for (int64_t d = b; d < (int64_t)r; d++) s->per_batch *= x->shape.dims[d];
  return true;
}

static bool ix_check_nd(op_ctx *c, bool scatter) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *ix = op_in(c, 1);
  const mp_btensor *u = scatter ? op_in(c, 2) : NULL;
  if (!x || !ix || (scatter && !u) || c->op->n_in != (scatter ? 3u : 2u) ||
      c->op->n_out != 1 || x->shape.rank == 0) {
    return op_fail(c, "bad arity");
  }
  int64_t p0 = scatter ? rd_range(&r, 0, MP_KSCATTER_MIN)
                       : rd_range(&r, 0, MP_K_MAX_RANK - 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const mp_btensor *y = op_out(c, 0);
  if (ix->dtype != MP_KD_I64 || y->dtype != x->dtype ||
      (u && u->dtype != x->dtype)) {
    return op_fail(c, "indices must be i64, data and output alike");
  }
  ix_nd s;
  if (!ix_nd_shape(c, x, ix, scatter ? 0 : p0, &s)) return false;
  /* the output (gather) or the updates (scatter): [B..., T..., D...] */
  mp_kshape want = {0, {0}};
  for (uint32_t d = 0; d + 1 < ix->shape.rank; d++)
    want.dims[want.rank++] = ix->shape.dims[d];
  for (int64_t d = s.b + s.k; d < (int64_t)x->shape.rank; d++) {
    if (want.rank == MP_K_MAX_RANK) return op_fail(c, "result rank too large");
    want.dims[want.rank++] = x->shape.dims[d];
  }
  c->need_ws += (size_t)(s.batches * s.tuples) * 8;
  if (scatter) {
    if (!op_expect_shape(c, u, &want)) return false;
    return ix_out(c, y, &x->shape, true);
  }
  return ix_out(c, y, &want, false);
}

static bool ix_run_nd(op_ctx *c, bool scatter) {
  const int64_t *p = c->op->params;
  const mp_btensor *x = op_in(c, 0), *ix = op_in(c, 1);
  ix_nd s;
  if (!ix_nd_shape(c, x, ix, scatter ? 0 : p[0], &s)) return false;
  int64_t st[MP_K_MAX_RANK];
  mp_kshape_strides(&x->shape, st);
  int64_t *offs = (int64_t *)(void *)c->ws, n = s.batches * s.tuples;
  for (int64_t t = 0; t < n; t++) {
    int64_t off = 0;
    for (int64_t j = 0; j < s.k; j++) {
      int64_t v = 0;
      if (!ix_index(c, 1, (size_t)(t * s.k + j), x->shape.dims[s.b + j], &v))
        return false;
      off += v * st[s.b + j];
    }
    offs[t] = off;
  }
  if (scatter) {
    /* one batch (batch_dims 0): offsets are into the whole tensor */
    mp_k_scatter_nd(x->dtype, (mp_kscatter)p[0], op_count(x), n, s.block, offs,
                    op_pin(c, 0), op_pin(c, 2), op_pout(c, 0));
  } else {
    mp_k_gather_nd(mp_kd_size(x->dtype), s.batches, s.per_batch, s.tuples,
                   s.block, offs, op_pin(c, 0), op_pout(c, 0));
  }
  return true;
}

/* ---- Trilu, CumSum, Hardmax ---------------------------------------------- */

static bool ix_check_trilu(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *k = op_in(c, 1);
  (void)rd_range(&r, 0, 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (!x || c->op->n_in > 2 || c->op->n_out != 1 || x->shape.rank < 2)
    return op_fail(c, "needs a tensor of rank 2 or more");
  if (k && (k->dtype != MP_KD_I64 || op_count(k) != 1))
    return op_fail(c, "k '%s' is not one i64", k->name);
  const mp_btensor *y = op_out(c, 0);
  if (y->dtype != x->dtype) return op_fail(c, "output dtype differs");
  return ix_out(c, y, &x->shape, true);
}

static bool ix_run_trilu(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0);
  int64_t k = op_in(c, 1) ? mp_k_load_i(op_pin(c, 1), MP_KD_I64, 0) : 0;
  uint32_t rk = x->shape.rank;
  int64_t rows = x->shape.dims[rk - 2], cols = x->shape.dims[rk - 1];
  int64_t batches = op_div(op_count(x), rows * cols);
  mp_k_trilu(mp_kd_size(x->dtype), batches, rows, cols, c->op->params[0] != 0,
             k, op_pin(c, 0), op_pout(c, 0));
  return true;
}

static bool ix_check_cumsum(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *a = op_in(c, 1);
  (void)rd_range(&r, 0, 1);
  (void)rd_range(&r, 0, 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (!x || !a || c->op->n_in != 2 || c->op->n_out != 1 || x->shape.rank == 0)
    return op_fail(c, "bad arity");
  if (!ix_index_dtype(a) || op_count(a) != 1)
    return op_fail(c, "axis '%s' is not one i32 or i64", a->name);
  const mp_btensor *y = op_out(c, 0);
  if (y->dtype != x->dtype || x->dtype == MP_KD_BOOL)
    return op_fail(c, "needs a numeric input and output of one dtype");
  return ix_out(c, y, &x->shape, true);
}

static bool ix_run_cumsum(op_ctx *c) {
  const int64_t *p = c->op->params;
  const mp_btensor *x = op_in(c, 0);
  int64_t axis;
  if (!ix_index(c, 1, 0, x->shape.rank, &axis)) return false;
  int64_t outer, len, inner;
  op_split3(&x->shape, axis, false, &outer, &len, &inner);
  mp_k_cumsum(x->dtype, p[0] != 0, p[1] != 0, outer, len, inner, op_pin(c, 0),
              op_pout(c, 0));
  return true;
}

static bool ix_check_hardmax(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0);
  if (!x || c->op->n_in != 1 || c->op->n_out != 1 || x->shape.rank == 0)
    return op_fail(c, "bad arity");
  (void)rd_range(&r, 0, x->shape.rank - 1);
  (void)rd_range(&r, 0, 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const mp_btensor *y = op_out(c, 0);
  if (y->dtype != x->dtype || !mp_kd_is_float(x->dtype))
    return op_fail(c, "needs a float input and output of one dtype");
  return ix_out(c, y, &x->shape, false);
}

static bool ix_run_hardmax(op_ctx *c) {
  const int64_t *p = c->op->params;
  const mp_btensor *x = op_in(c, 0);
  int64_t outer, len, inner;
  op_split3(&x->shape, p[0], p[1] != 0, &outer, &len, &inner);
  mp_k_hardmax(x->dtype, outer, len, inner, op_pin(c, 0), op_pout(c, 0));
  return true;
}

/* ---- DepthToSpace, SpaceToDepth, Tile, Expand -----------------------------
 */

static bool ix_check_depth_space(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0);
  if (!x || c->op->n_in != 1 || c->op->n_out != 1 || x->shape.rank != 4)
    return op_fail(c, "needs one 4-D input");
  int64_t to_space = rd_range(&r, 0, 1);
  (void)rd_range(&r, 0, to_space);
  int64_t b = rd_range(&r, 1, 1 << 16);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const int64_t *d = x->shape.dims;
  for (int k = 1; k < 4; k++) {
    if (d[k] > INT64_MAX / (b * b)) return op_fail(c, "dims too large");
  }
  mp_kshape want = {4, {d[0], d[1], d[2], d[3]}};
  if (to_space) {
    if (d[1] % (b * b)) return op_fail(c, "channels not a multiple of b*b");
    want.dims[1] = d[1] / (b * b), want.dims[2] = d[2] * b;
    want.dims[3] = d[3] * b;
  } else {
    if (d[2] % b || d[3] % b) return op_fail(c, "H or W not a multiple of b");
    want.dims[1] = d[1] * b * b, want.dims[2] = d[2] / b;
    want.dims[3] = d[3] / b;
  }
  const mp_btensor *y = op_out(c, 0);
  if (y->dtype != x->dtype) return op_fail(c, "output dtype differs");
  return ix_out(c, y, &want, false);
}

static bool ix_run_depth_space(op_ctx *c) {
  const int64_t *p = c->op->params;
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  /* the depth side's spatial dims and the space side's channels */
  const mp_kshape *deep = p[0] ? &x->shape : &y->shape;
  const mp_kshape *wide = p[0] ? &y->shape : &x->shape;
  mp_k_depth_space(mp_kd_size(x->dtype), p[0] != 0, p[1] != 0, deep->dims[0],
                   wide->dims[1], deep->dims[2], deep->dims[3], p[2],
                   op_pin(c, 0), op_pout(c, 0));
  return true;
}

/* Tile: y a whole multiple of x per dim; Expand: x broadcasts to y. The
 * repeats or shape input (1) is what made y's shape: not read. */
static bool ix_check_tile(op_ctx *c, bool expand) {
  const mp_btensor *x = op_in(c, 0);
  if (!x || c->op->n_in != 2 || c->op->n_out != 1 || c->op->n_params)
    return op_fail(c, "bad arity or parameters");
  const mp_btensor *y = op_out(c, 0);
  if (y->dtype != x->dtype) return op_fail(c, "output dtype differs");
  if (expand ? y->shape.rank < x->shape.rank : y->shape.rank != x->shape.rank)
    return op_fail(c, "output rank does not fit the input's");
  uint32_t lead = y->shape.rank - x->shape.rank;
  for (uint32_t d = 0; d < x->shape.rank; d++) {
    int64_t xd = x->shape.dims[d], yd = y->shape.dims[d + lead];
    if (expand ? xd != 1 && xd != yd : xd == 0 ? yd != 0 : yd % xd != 0) {
      return op_fail(c, "output dim %u (%lld) does not %s input dim %lld",
                     d + lead, (long long)yd, expand ? "broadcast" : "repeat",
                     (long long)xd);
    }
  }
  return ix_out(c, y, &y->shape, false);
}

static bool ix_run_tile(op_ctx *c, bool expand) {
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  size_t es = mp_kd_size(x->dtype);
  if (expand) {
    mp_k_expand(es, &x->shape, &y->shape, op_pin(c, 0), op_pout(c, 0));
  } else {
    mp_k_tile(es, &x->shape, &y->shape, op_pin(c, 0), op_pout(c, 0));
  }
  return true;
}

/* ---- OneHot, TopK, IsNaN, IsInf -------------------------------------------
 */

static bool ix_check_onehot(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *ix = op_in(c, 0), *v = op_in(c, 1);
  if (!ix || !v || c->op->n_in != 2 || c->op->n_out != 1)
    return op_fail(c, "bad arity");
  const mp_btensor *y = op_out(c, 0);
  int64_t axis = rd_range(&r, 0, y->shape.rank - 1);
  if (r.bad || r.at != r.n || y->shape.rank != ix->shape.rank + 1)
    return op_fail(c, "bad parameters");
  if (op_count(v) != 2 || v->dtype != y->dtype)
    return op_fail(c, "values '%s' are not [off, on] of the output's dtype",
                   v->name);
  if (ix->dtype == MP_KD_BOOL) return op_fail(c, "indices are bool");
  mp_kshape want = {0, {0}};
  for (uint32_t d = 0, s = 0; d < y->shape.rank; d++) {
    want.dims[want.rank++] =
        (int64_t)d == axis ? y->shape.dims[d] : ix->shape.dims[s++];
  }
  c->need_ws += (size_t)op_count(ix) * 8;
  return ix_out(c, y, &want, false);
}

static bool ix_run_onehot(op_ctx *c) {
  const mp_btensor *ix = op_in(c, 0), *v = op_in(c, 1), *y = op_out(c, 0);
  uint32_t axis = (uint32_t)c->op->params[0];
  int64_t outer, depth, inner;
  op_split3(&y->shape, axis, false, &outer, &depth, &inner);
  int64_t *idx = (int64_t *)(void *)c->ws, n = op_count(ix);
  for (int64_t i = 0; i < n; i++) {
    /* float indices are truncated, as ONNX casts them to int64 */
    double f = mp_k_load(op_pin(c, 0), ix->dtype, (size_t)i);
    int64_t k =
        mp_kd_is_float(ix->dtype)
            ? (f != f || f < -9e18 || f > 9e18 ? -1 - depth : (int64_t)f)
            : mp_k_load_i(op_pin(c, 0), ix->dtype, (size_t)i);
    idx[i] = k < -depth || k >= depth ? -1 : k < 0 ? k + depth : k;
  }
  size_t es = mp_kd_size(v->dtype);
  const char *vals = op_pin(c, 1);
  mp_k_onehot(es, outer, depth, inner, idx, vals, vals + es, op_pout(c, 0));
  return true;
}

static bool ix_check_topk(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0);
  if (!x || c->op->n_in < 1 || c->op->n_in > 2 || c->op->n_out != 2 ||
      x->shape.rank == 0) {
    return op_fail(c, "bad arity");
  }
  int64_t axis = rd_range(&r, 0, x->shape.rank - 1);
  (void)rd_range(&r, 0, 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const mp_btensor *v = op_out(c, 0), *ix = op_out(c, 1);
  if (v->dtype != x->dtype || ix->dtype != MP_KD_I64 || x->dtype == MP_KD_BOOL)
    return op_fail(c, "needs numeric values and i64 indices");
  mp_kshape want = x->shape;
  int64_t k = v->shape.rank == x->shape.rank ? v->shape.dims[axis] : -1;
  if (k < 0 || k > x->shape.dims[axis]) {
    return op_fail(c, "values '%s' do not hold k <= %lld along axis %lld",
                   v->name, (long long)x->shape.dims[axis], (long long)axis);
  }
  want.dims[axis] = k;
  c->need_ws += (size_t)(k + 1) * 8;
  return ix_out(c, v, &want, false) && ix_out(c, ix, &want, false) &&
         (!op_aliases(v, ix) ||
          op_fail(c, "values and indices share a buffer"));
}

static bool ix_run_topk(op_ctx *c) {
  const int64_t *p = c->op->params;
  const mp_btensor *x = op_in(c, 0), *v = op_out(c, 0);
  int64_t outer, len, inner;
  op_split3(&x->shape, p[0], false, &outer, &len, &inner);
  int64_t k = v->shape.dims[p[0]];
  if (k == 0) return true;
  mp_k_topk(x->dtype, p[1] != 0, outer, len, inner, k, op_pin(c, 0),
            op_pout(c, 0), (int64_t *)op_pout(c, 1), (int64_t *)(void *)c->ws);
  return true;
}

static bool ix_check_fpclass(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0);
  for (int k = 0; k < 3; k++) (void)rd_range(&r, 0, 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (!x || c->op->n_in != 1 || c->op->n_out != 1)
    return op_fail(c, "bad arity");
  const mp_btensor *y = op_out(c, 0);
  if (!mp_kd_is_float(x->dtype) || y->dtype != MP_KD_BOOL)
    return op_fail(c, "needs a float input and a bool output");
  return ix_out(c, y, &x->shape, false);
}

static bool ix_run_fpclass(op_ctx *c) {
  const int64_t *p = c->op->params;
  const mp_btensor *x = op_in(c, 0);
  mp_k_fpclass(x->dtype, p[0] != 0, p[1] != 0, p[2] != 0, op_pin(c, 0),
               (uint8_t *)op_pout(c, 0), (size_t)op_count(x));
  return true;
}

/* ---- ReverseSequence, Pow of two dtypes ------------------------------------
 */

static bool ix_check_reverse_sequence(op_ctx *c) {
  op_rd r = op_reader(c);
  (void)rd_range(&r, 0, 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const mp_btensor *x = op_in(c, 0), *l = op_in(c, 1);
  if (!x || !l || c->op->n_in != 2 || c->op->n_out != 1 || x->shape.rank < 2)
    return op_fail(c, "needs a tensor of rank 2 or more and sequence_lens");
  int64_t b = x->shape.dims[c->op->params[0] == 0 ? 1 : 0]; /* batch */
  if (l->dtype != MP_KD_I64 || l->shape.rank != 1 || l->shape.dims[0] != b)
    return op_fail(c, "sequence_lens '%s' is not i64 [%lld]", l->name,
                   (long long)b);
  const mp_btensor *y = op_out(c, 0);
  if (y->dtype != x->dtype) return op_fail(c, "output dtype differs");
  c->need_ws += (size_t)b * 8;
  return ix_out(c, y, &x->shape, false);
}

static bool ix_run_reverse_sequence(op_ctx *c) {
  bool time_major = c->op->params[0] == 0; /* time_axis 0 */
  const mp_btensor *x = op_in(c, 0);
  int64_t t = x->shape.dims[time_major ? 0 : 1];
  int64_t b = x->shape.dims[time_major ? 1 : 0];
  int64_t rest = op_div(op_count(x), t * b);
  int64_t *lens = (int64_t *)(void *)c->ws;
  for (int64_t i = 0; i < b; i++) {
    lens[i] = mp_k_load_i(op_pin(c, 1), MP_KD_I64, (size_t)i);
    if (lens[i] < 1 || lens[i] > t) {
      return op_fail(c, "sequence length %lld is not in [1, %lld]",
                     (long long)lens[i], (long long)t);
    }
  }
  mp_k_reverse_sequence(mp_kd_size(x->dtype), time_major, t, b, rest, lens,
                        op_pin(c, 0), op_pout(c, 0));
  return true;
}

static bool ix_check_pow_mixed(op_ctx *c) {
  const mp_btensor *a = op_in(c, 0), *b = op_in(c, 1);
  if (!a || !b || c->op->n_in != 2 || c->op->n_out != 1 || c->op->n_params)
    return op_fail(c, "bad arity or parameters");
  const mp_btensor *y = op_out(c, 0);
  if (y->dtype != a->dtype || a->dtype == MP_KD_BOOL || b->dtype == MP_KD_BOOL)
    return op_fail(c, "needs numeric operands and the base's dtype out");
  mp_kbcast bc;
  if (!mp_k_bcast_init(&bc, &y->shape, &a->shape, &b->shape, NULL))
    return op_fail(c, "operands do not broadcast to the output");
  return ix_out(c, y, &y->shape, false);
}

static bool ix_run_pow_mixed(op_ctx *c) {
  const mp_btensor *a = op_in(c, 0), *b = op_in(c, 1), *y = op_out(c, 0);
  mp_kbcast bc;
  (void)mp_k_bcast_init(&bc, &y->shape, &a->shape, &b->shape, NULL);
  mp_k_pow_mixed(&bc, a->dtype, op_pin(c, 0), b->dtype, op_pin(c, 1), y->dtype,
                 op_pout(c, 0));
  return true;
}

/* ---- GridSample ------------------------------------------------------------
 */

static bool ix_grid(op_ctx *c, mp_kgrid *g) {
  op_rd r = op_reader(c);
  memset(g, 0, sizeof *g);
  g->mode = (mp_kgrid_mode)rd_range(&r, 0, MP_KGRID_BICUBIC);
  g->padding = (mp_kgrid_padding)rd_range(&r, 0, MP_KGRID_REFLECTION);
  g->align = rd_range(&r, 0, 1) != 0;
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  const mp_btensor *x = op_in(c, 0), *gr = op_in(c, 1);
  if (!x || !gr || c->op->n_in != 2 || c->op->n_out != 1)
    return op_fail(c, "needs X and grid");
  if (x->shape.rank != 4 || gr->shape.rank != 4 || gr->shape.dims[3] != 2 ||
      gr->shape.dims[0] != x->shape.dims[0] || !mp_kd_is_float(x->dtype) ||
      !mp_kd_is_float(gr->dtype)) {
    return op_fail(c, "needs float X [N, C, H, W] and grid [N, Ho, Wo, 2]");
  }
  g->n = x->shape.dims[0], g->c = x->shape.dims[1];
  g->h = x->shape.dims[2], g->w = x->shape.dims[3];
  g->ho = gr->shape.dims[1], g->wo = gr->shape.dims[2];
  return true;
}

static bool ix_check_grid_sample(op_ctx *c) {
  mp_kgrid g;
  if (!ix_grid(c, &g)) return false;
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  if (y->dtype != x->dtype) return op_fail(c, "output dtype differs");
  mp_kshape want = {4, {g.n, g.c, g.ho, g.wo}};
  return ix_out(c, y, &want, false);
}

static bool ix_run_grid_sample(op_ctx *c) {
  mp_kgrid g;
  if (!ix_grid(c, &g)) return false;
  mp_k_grid_sample(&g, op_in(c, 0)->dtype, op_pin(c, 0), op_in(c, 1)->dtype,
                   op_pin(c, 1), op_pout(c, 0));
  return true;
}

/* ---- MaxUnpool, RoiAlign, Dropout ---------------------------------------- */

/* MaxUnpool's parameters, and the shape the window gives (`from`, where
 * the indices point). */
static bool ix_unpool(op_ctx *c, mp_kshape *from) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *ix = op_in(c, 1), *os = op_in(c, 2);
  int64_t nd = rd_range(&r, 1, 3), k[3], s[3], pb[3], pe[3];
  int64_t *arr[] = {k, s, pb, pe};
  int64_t lo[] = {1, 1, 0, 0};
  if (r.bad) return op_fail(c, "bad parameters");
  for (int a = 0; a < 4; a++) {
    for (int64_t i = 0; i < nd; i++) arr[a][i] = rd_range(&r, lo[a], INT32_MAX);
  }
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (!x || !ix || c->op->n_in > 3 || c->op->n_out != 1 ||
      x->shape.rank != (uint32_t)nd + 2) {
    return op_fail(c, "needs x of rank %lld and its indices",
                   (long long)nd + 2);
  }
  if (ix->dtype != MP_KD_I64 || !op_same_shape(&ix->shape, &x->shape))
    return op_fail(c, "indices '%s' must be i64 of x's shape", ix->name);
  if (os && (os->dtype != MP_KD_I64 || op_count(os) != nd + 2))
    return op_fail(c, "output_shape '%s' must be %lld i64", os->name,
                   (long long)nd + 2);
  /* With output_shape the pads are left out (ONNX's reference). */
  *from = x->shape;
  for (int64_t i = 0; i < nd; i++) {
    int64_t pads = os ? 0 : pb[i] + pe[i];
    from->dims[2 + i] = (x->shape.dims[2 + i] - 1) * s[i] - pads + k[i];
    if (from->dims[2 + i] < 1) return op_fail(c, "the window gives no output");
  }
  return true;
}

static bool ix_check_max_unpool(op_ctx *c) {
  mp_kshape from;
  if (!ix_unpool(c, &from)) return false;
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  if (y->dtype != x->dtype) return op_fail(c, "output dtype differs");
  /* With output_shape, y may be larger than the window's shape (its
   * values are checked against y's when the op runs). */
  mp_kshape want = from;
  bool larger = y->shape.rank == from.rank && op_in(c, 2);
  for (uint32_t i = 0; larger && i < from.rank; i++) {
    larger = y->shape.dims[i] >= from.dims[i] &&
             (i >= 2 || y->shape.dims[i] == from.dims[i]);
  }
  if (larger) want = y->shape;
  return ix_out(c, y, &want, false);
}

static bool ix_run_max_unpool(op_ctx *c) {
  mp_kshape from;
  if (!ix_unpool(c, &from)) return false;
  const mp_btensor *x = op_in(c, 0), *os = op_in(c, 2), *y = op_out(c, 0);
  if (os) {
    for (uint32_t i = 0; i < y->shape.rank; i++) {
      int64_t v = mp_k_load_i(op_pin(c, 2), MP_KD_I64, i);
      if (v != y->shape.dims[i]) {
        return op_fail(c,
                       "output_shape '%s' gives %lld for dim %u, the plan "
                       "%lld",
                       os->name, (long long)v, i, (long long)y->shape.dims[i]);
      }
    }
  }
  int64_t nx = op_count(x), nf = 1;
  for (uint32_t i = 0; i < from.rank; i++) nf *= from.dims[i];
  const int64_t *idx = op_pin(c, 1);
  for (int64_t i = 0; i < nx; i++) {
    int64_t v = mp_k_load_i(idx, MP_KD_I64, (size_t)i);
    if (v < 0 || v >= nf) {
      return op_fail(c, "index %lld of '%s' is out of range [0, %lld)",
                     (long long)v, op_in(c, 1)->name, (long long)nf);
    }
  }
  mp_k_max_unpool(mp_kd_size(x->dtype), nx, op_pin(c, 0), idx, from.rank,
                  from.dims, y->shape.dims, op_pout(c, 0));
  return true;
}

/* RoiAlign's limit on roi coordinates (after spatial_scale). */
#define IX_ROI_LIMIT 1e9

static bool ix_roi(op_ctx *c, mp_kroi *k) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *rois = op_in(c, 1), *bi = op_in(c, 2);
  memset(k, 0, sizeof *k);
  k->max = rd_range(&r, 0, 1) != 0;
  k->oh = rd_range(&r, 1, INT32_MAX);
  k->ow = rd_range(&r, 1, INT32_MAX);
  k->sampling = rd_range(&r, 0, MP_K_ROI_MAX_GRID);
  k->scale = rd_f(&r);
  k->half_pixel = rd_range(&r, 0, 1) != 0;
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (!x || !rois || !bi || c->op->n_in != 3 || c->op->n_out != 1 ||
      x->shape.rank != 4 || !mp_kd_is_float(x->dtype)) {
    return op_fail(c, "needs a float x [n, c, h, w], rois and batch_indices");
  }
  if (rois->shape.rank != 2 || rois->shape.dims[1] != 4 ||
      !mp_kd_is_float(rois->dtype)) {
    return op_fail(c, "rois '%s' must be float [num_rois, 4]", rois->name);
  }
  k->n = x->shape.dims[0];
  k->c = x->shape.dims[1];
  k->h = x->shape.dims[2];
  k->w = x->shape.dims[3];
  k->rois = rois->shape.dims[0];
  if (bi->dtype != MP_KD_I64 || op_count(bi) != k->rois) {
    return op_fail(c, "batch_indices '%s' must be %lld i64", bi->name,
                   (long long)k->rois);
  }
  if (!(k->scale > 0) || !isfinite(k->scale))
    return op_fail(c, "spatial_scale must be positive");
  return true;
}

static bool ix_check_roi_align(op_ctx *c) {
  mp_kroi k;
  if (!ix_roi(c, &k)) return false;
  const mp_btensor *y = op_out(c, 0);
  if (y->dtype != op_in(c, 0)->dtype) return op_fail(c, "output dtype differs");
  mp_kshape want = {4, {k.rois, k.c, k.oh, k.ow}};
  return ix_out(c, y, &want, false);
}

static bool ix_run_roi_align(op_ctx *c) {
  mp_kroi k;
  if (!ix_roi(c, &k)) return false;
  const int64_t *bi = op_pin(c, 2);
  for (int64_t i = 0; i < k.rois; i++) {
    int64_t v = mp_k_load_i(bi, MP_KD_I64, (size_t)i);
    if (v < 0 || v >= k.n) {
      return op_fail(c, "batch index %lld of '%s' is out of range [0, %lld)",
                     (long long)v, op_in(c, 2)->name, (long long)k.n);
    }
  }
  /* The boxes are data: each must be finite and, with an adaptive grid,
   * ask for at most MP_K_ROI_MAX_GRID samples a side of a bin. */
  const mp_btensor *rois = op_in(c, 1);
  double off = k.half_pixel ? 0.5 : 0.0;
  for (int64_t i = 0; i < k.rois; i++) {
    double b[4];
    for (int j = 0; j < 4; j++) {
      b[j] =
          mp_k_load(op_pin(c, 1), rois->dtype, (size_t)(i * 4 + j)) * k.scale -
          off;
      if (!(fabs(b[j]) <= IX_ROI_LIMIT)) {
        return op_fail(c, "roi %lld of '%s' is not finite or beyond %g",
                       (long long)i, rois->name, IX_ROI_LIMIT);
      }
    }
    double side[2] = {(b[3] - b[1]) / (double)k.oh,
                      (b[2] - b[0]) / (double)k.ow};
    for (int j = 0; k.sampling == 0 && j < 2; j++) {
      if (ceil(side[j]) > MP_K_ROI_MAX_GRID) {
        return op_fail(c,
                       "roi %lld of '%s' asks for %g samples a side of a bin "
                       "(at most %d; give sampling_ratio)",
                       (long long)i, rois->name, ceil(side[j]),
                       MP_K_ROI_MAX_GRID);
      }
    }
  }
  mp_k_roi_align(&k, op_in(c, 0)->dtype, op_pin(c, 0), op_in(c, 1)->dtype,
                 op_pin(c, 1), bi, op_pout(c, 0));
  return true;
}

/* Dropout as inference runs it: y = x, mask all true. In training mode
 * (a training_mode input that is true when the op runs) with a ratio
 * other than 0 it drops at random, from the op's stream (k_random.c). */
static bool ix_check_dropout(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0), *ratio = op_in(c, 1), *tm = op_in(c, 2);
  op_rd r = op_reader(c);
  uint64_t key;
  if (!op_random_key(c, &r, &key)) return false;
  if (r.at != r.n) return op_fail(c, "bad parameters");
  if (!x || c->op->n_in > 3 || c->op->n_out < 1 || c->op->n_out > 2)
    return op_fail(c, "bad arity");
  if (ratio && (!mp_kd_is_float(ratio->dtype) || op_count(ratio) != 1))
    return op_fail(c, "ratio '%s' must be one float", ratio->name);
  if (tm && (tm->dtype != MP_KD_BOOL || op_count(tm) != 1))
    return op_fail(c, "training_mode '%s' must be one bool", tm->name);
  const mp_btensor *y = op_out(c, 0),
                   *mask = c->op->n_out > 1 ? op_out(c, 1) : NULL;
  if (!y || y->dtype != x->dtype) return op_fail(c, "output dtype differs");
  if (mask && (mask->dtype != MP_KD_BOOL || op_aliases(mask, x)))
    return op_fail(c, "mask '%s' must be bool apart from x", mask->name);
  if (mask && !op_expect_shape(c, mask, &x->shape)) return false;
  if (op_aliases(x, y) && (x->offset != y->offset || x->bytes != y->bytes))
    return op_fail(c, "output '%s' overlaps x at another offset", y->name);
  return op_expect_shape(c, y, &x->shape);
}

static bool ix_run_dropout(op_ctx *c) {
  const mp_btensor *ratio = op_in(c, 1), *tm = op_in(c, 2);
  const mp_btensor *y = op_out(c, 0),
                   *mask = c->op->n_out > 1 ? op_out(c, 1) : NULL;
  if (tm && mp_k_load_i(op_pin(c, 2), MP_KD_BOOL, 0) != 0) {
    double p = ratio ? mp_k_load(op_pin(c, 1), ratio->dtype, 0) : 0.5;
    if (!(p >= 0 && p < 1)) {
      return op_fail(c, "training_mode is true with ratio %g, outside [0, 1)",
                     p);
    }
    op_rd r = op_reader(c);
    mp_krandom k = {MP_KRAND_DROPOUT, 0, p, 0};
    if (!op_random_key(c, &r, &k.key)) return false;
    mp_k_random(&k, op_count(y), op_pin(c, 0), y->dtype, op_pout(c, 0),
                y->dtype, mask ? (bool *)op_pout(c, 1) : NULL);
    return true;
  }
  if (op_pout(c, 0) != op_pin(c, 0))
    memcpy(op_pout(c, 0), op_pin(c, 0), y->bytes);
  if (mask) memset(op_pout(c, 1), 1, (size_t)op_count(mask));
  return true;
}

/* ---- dispatch ------------------------------------------------------------ */

bool op_index_dispatch(op_ctx *c, bool run, bool *handled) {
  *handled = true;
  switch (c->op->kernel) {
    case MP_BOP_ARG:
      return run ? ix_run_arg(c) : ix_check_arg(c);
    case MP_BOP_GATHER_ELEMENTS:
      return run ? ix_run_elements(c, false) : ix_check_elements(c, false);
    case MP_BOP_SCATTER_ELEMENTS:
      return run ? ix_run_elements(c, true) : ix_check_elements(c, true);
    case MP_BOP_GATHER_ND:
      return run ? ix_run_nd(c, false) : ix_check_nd(c, false);
    case MP_BOP_SCATTER_ND:
      return run ? ix_run_nd(c, true) : ix_check_nd(c, true);
    case MP_BOP_TRILU:
      return run ? ix_run_trilu(c) : ix_check_trilu(c);
    case MP_BOP_CUMSUM:
      return run ? ix_run_cumsum(c) : ix_check_cumsum(c);
    case MP_BOP_HARDMAX:
      return run ? ix_run_hardmax(c) : ix_check_hardmax(c);
    case MP_BOP_DEPTH_SPACE:
      return run ? ix_run_depth_space(c) : ix_check_depth_space(c);
    case MP_BOP_TILE:
      return run ? ix_run_tile(c, false) : ix_check_tile(c, false);
    case MP_BOP_EXPAND:
      return run ? ix_run_tile(c, true) : ix_check_tile(c, true);
    case MP_BOP_ONEHOT:
      return run ? ix_run_onehot(c) : ix_check_onehot(c);
    case MP_BOP_TOPK:
      return run ? ix_run_topk(c) : ix_check_topk(c);
    case MP_BOP_FPCLASS:
      return run ? ix_run_fpclass(c) : ix_check_fpclass(c);
    case MP_BOP_REVERSE_SEQUENCE:
      return run ? ix_run_reverse_sequence(c) : ix_check_reverse_sequence(c);
    case MP_BOP_POW_MIXED:
      return run ? ix_run_pow_mixed(c) : ix_check_pow_mixed(c);
    case MP_BOP_GRID_SAMPLE:
      return run ? ix_run_grid_sample(c) : ix_check_grid_sample(c);
    case MP_BOP_MAX_UNPOOL:
      return run ? ix_run_max_unpool(c) : ix_check_max_unpool(c);
    case MP_BOP_ROI_ALIGN:
      return run ? ix_run_roi_align(c) : ix_check_roi_align(c);
    case MP_BOP_DROPOUT:
      return run ? ix_run_dropout(c) : ix_check_dropout(c);
    default:
      *handled = false;
      return false;
  }
}
