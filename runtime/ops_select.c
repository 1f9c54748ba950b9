/*
 * ops_select.c -- check and run of the ops whose output shape depends on
 * the data: NonZero, Compress, Unique and NonMaxSuppression
 * (kernels/k_select.c).
 *
 * The runtime runs the shapes of the plan. A plan holds such an op's
 * output at a declared shape, at the one the input's known value gives,
 * or at the op's bound (analyzer/shape.c invariant 7).
 *
 * Invariants:
 *   1. A run counts what the op selects before it writes a byte, and
 *      fails the op (one line, nothing written) unless the count is the
 *      one the plan holds: an output is never written past its bytes and
 *      never left partly stale.
 *   2. Every other dim of an output is checked against the input's when
 *      the bundle is loaded; only the selected count waits for the run.
 *   3. Scratch (sort orders, groups, candidates) lives in the workspace
 *      the check asked for; nothing is allocated while running.
 */
#include "op_ctx.h"

/* Output k, or NULL when the op leaves it out. */
static const mp_btensor *sl_out(const op_ctx *c, uint32_t k) {
  if (k >= c->op->n_out || c->op->out[k] == MP_BUNDLE_NONE) return NULL;
  return op_out(c, k);
}

/* Invariant 1: the count found against the count planned. */
static bool sl_count(op_ctx *c, const char *what, int64_t found,
                     int64_t planned) {
  if (found == planned) return true;
  return op_fail(c,
                 "selects %lld %s where the plan holds %lld (the runtime runs "
                 "the planned shapes: declare the output's shape, or give "
                 "the input's value)",
                 (long long)found, what, (long long)planned);
}

/* y: dtype, and shape want except dim `free` (the selected count, which
 * may be any); fails when it shares an input's bytes. */
static bool sl_shape(op_ctx *c, const mp_btensor *y, int dtype,
                     const mp_kshape *want, uint32_t free) {
  if (y->dtype != dtype) {
    return op_fail(c, "output '%s' must be %s", y->name, mp_kd_name(dtype));
  }
  mp_kshape w = *want;
  if (free < w.rank && y->shape.rank == w.rank)
    w.dims[free] = y->shape.dims[free];
  return op_out_of_place(c, y, &w);
}

/* [outer, len, inner] of x around axis (-1: x flattened). */
static void sl_split(const mp_btensor *x, int64_t axis, int64_t *outer,
                     int64_t *len, int64_t *inner) {
  if (axis < 0) {
    *outer = *inner = 1;
    *len = op_count(x);
  } else {
    op_split3(&x->shape, axis, false, outer, len, inner);
  }
}

/* The shape of y's counterpart of x around axis: x's with len at axis,
 * or [len] when flattened. */
static mp_kshape sl_around(const mp_btensor *x, int64_t axis, int64_t len) {
  mp_kshape s = x->shape;
  if (axis < 0) {
    s.rank = 1;
    s.dims[0] = len;
  } else {
    s.dims[axis] = len;
  }
  return s;
}

/* ---- NonZero ------------------------------------------------------------- */

static bool sl_nonzero(op_ctx *c, bool run) {
  const mp_btensor *x = op_in(c, 0), *y = sl_out(c, 0);
  if (c->op->n_params || !x || !y || c->op->n_in != 1 || c->op->n_out != 1)
    return op_fail(c, "needs one input and one output");
  if (x->shape.rank == 0) return op_fail(c, "a scalar input");
  mp_kshape want = {2, {x->shape.rank, 1}};
  if (!sl_shape(c, y, MP_KD_I64, &want, 1)) return false;
  if (!run) return true;
  int64_t n = mp_k_count_nonzero(x->dtype, op_pin(c, 0), op_count(x));
  if (!sl_count(c, "nonzero elements", n, y->shape.dims[1])) return false;
  mp_k_nonzero(x->dtype, op_pin(c, 0), &x->shape, n, op_pout(c, 0));
  return true;
}

/* ---- Compress ------------------------------------------------------------ */

static bool sl_compress(op_ctx *c, bool run) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *cond = op_in(c, 1), *y = sl_out(c, 0);
  if (!x || !cond || !y || c->op->n_in != 2 || c->op->n_out != 1)
    return op_fail(c, "needs x, condition and one output");
  int64_t axis = rd_range(&r, -1, (int64_t)x->shape.rank - 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (cond->shape.rank != 1 || mp_kd_is_float(cond->dtype))
    return op_fail(c, "condition '%s' must be 1-D bool", cond->name);
  int64_t outer, len, inner;
  sl_split(x, axis, &outer, &len, &inner);
  mp_kshape want = sl_around(x, axis, 1);
  uint32_t at = axis < 0 ? 0 : (uint32_t)axis;
  if (!sl_shape(c, y, x->dtype, &want, at)) return false;
  if (!run) return true;
  int64_t n =
      mp_k_compress_count(cond->dtype, op_pin(c, 1), op_count(cond), len);
  if (!sl_count(c, "slices", n, y->shape.dims[at])) return false;
  mp_k_compress(mp_kd_size(x->dtype), op_pin(c, 0), outer, len, inner,
                cond->dtype, op_pin(c, 1), op_count(cond), n, op_pout(c, 0));
  return true;
}

/* ---- Unique -------------------------------------------------------------- */

static bool sl_unique(op_ctx *c, bool run) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *y = sl_out(c, 0);
  if (!x || !y || c->op->n_in != 1 || c->op->n_out > 4)
    return op_fail(c, "needs one input and at most four outputs");
  bool sorted = rd_range(&r, 0, 1) != 0;
  int64_t axis = rd_range(&r, -1, (int64_t)x->shape.rank - 1);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  int64_t outer, len, inner;
  sl_split(x, axis, &outer, &len, &inner);
  uint32_t at = axis < 0 ? 0 : (uint32_t)axis;
  mp_kshape want = sl_around(x, axis, 1);
  if (!sl_shape(c, y, x->dtype, &want, at)) return false;
  int64_t k = y->shape.dims[at];
  mp_kshape per_unique = {1, {k}}, per_slice = {1, {len}};
  const mp_btensor *ix = sl_out(c, 1), *inv = sl_out(c, 2), *cnt = sl_out(c, 3);
  if ((ix && !sl_shape(c, ix, MP_KD_I64, &per_unique, 1)) ||
      (inv && !sl_shape(c, inv, MP_KD_I64, &per_slice, 1)) ||
      (cnt && !sl_shape(c, cnt, MP_KD_I64, &per_unique, 1))) {
    return false;
  }
  /* the kernel's 6 * len, and first, inverse and counts (invariant 1:
   * kept here until the count is checked) */
  c->need_ws += (size_t)len * 9 * sizeof(int64_t);
  if (!run) return true;
  int64_t *ws = (int64_t *)(void *)c->ws, *first = ws + 6 * len,
          *inverse = ws + 7 * len, *counts = ws + 8 * len;
  int64_t n = mp_k_unique(x->dtype, op_pin(c, 0), outer, len, inner, sorted, ws,
                          first, inverse, counts);
  if (!sl_count(c, "unique values", n, k)) return false;
  mp_k_gather_slices(mp_kd_size(x->dtype), op_pin(c, 0), outer, len, inner,
                     first, n, op_pout(c, 0));
  if (ix) memcpy(op_pout(c, 1), first, (size_t)n * sizeof *first);
  if (inv) memcpy(op_pout(c, 2), inverse, (size_t)len * sizeof *inverse);
  if (cnt) memcpy(op_pout(c, 3), counts, (size_t)n * sizeof *counts);
  return true;
}

/* ---- NonMaxSuppression --------------------------------------------------- */

/* Optional scalar input k: present (one element) or left out. */
static bool sl_scalar(op_ctx *c, uint32_t k, bool integer) {
  const mp_btensor *t = op_in(c, k);
  if (!t) return true;
  if (op_count(t) != 1 || mp_kd_is_float(t->dtype) == integer) {
    return op_fail(c, "'%s' must be one %s", t->name,
                   integer ? "integer" : "float");
  }
  return true;
}

static bool sl_nms(op_ctx *c, bool run) {
  op_rd r = op_reader(c);
  const mp_btensor *bx = op_in(c, 0), *sc = op_in(c, 1), *y = sl_out(c, 0);
  if (!bx || !sc || !y || c->op->n_in > 5 || c->op->n_out != 1)
    return op_fail(c, "needs boxes, scores and one output");
  mp_knms p = {0};
  p.center = rd_range(&r, 0, 1) != 0;
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  if (bx->dtype != MP_KD_F32 || sc->dtype != MP_KD_F32 || bx->shape.rank != 3 ||
      bx->shape.dims[2] != 4 || sc->shape.rank != 3 ||
      sc->shape.dims[0] != bx->shape.dims[0] ||
      sc->shape.dims[2] != bx->shape.dims[1]) {
    return op_fail(c,
                   "needs f32 boxes [batches, boxes, 4] and scores "
                   "[batches, classes, boxes]");
  }
  if (!sl_scalar(c, 2, true) || !sl_scalar(c, 3, false) ||
      !sl_scalar(c, 4, false)) {
    return false;
  }
  mp_kshape want = {2, {1, 3}};
  if (!sl_shape(c, y, MP_KD_I64, &want, 0)) return false;
  p.batches = bx->shape.dims[0];
  p.boxes = bx->shape.dims[1];
  p.classes = sc->shape.dims[1];
  c->need_ws += (size_t)p.boxes * 3 * sizeof(int64_t);
  if (!run) return true;
  if (op_in(c, 2)) {
    int64_t m = mp_k_load_i(op_pin(c, 2), op_in(c, 2)->dtype, 0);
    p.max_per_class = m < 0 ? 0 : m;
  }
  if (op_in(c, 3)) {
    double iou = mp_k_load(op_pin(c, 3), op_in(c, 3)->dtype, 0);
    if (!(iou >= 0 && iou <= 1)) {
      return op_fail(c, "iou_threshold %g is outside [0, 1]", iou);
    }
    p.iou_threshold = (float)iou;
  }
  if (op_in(c, 4)) {
    p.has_score_threshold = true;
    p.score_threshold = (float)mp_k_load(op_pin(c, 4), op_in(c, 4)->dtype, 0);
  }
  int64_t *ws = (int64_t *)(void *)c->ws;
  int64_t n = mp_k_nms(&p, op_pin(c, 0), op_pin(c, 1), ws, NULL);
  if (!sl_count(c, "boxes", n, y->shape.dims[0])) return false;
  mp_k_nms(&p, op_pin(c, 0), op_pin(c, 1), ws, op_pout(c, 0));
  return true;
}

/* ---- TfIdfVectorizer (not a selection op: its shape is fixed) ---------- */

/* The parameters (bundle.h) into k, checked: the pool cut into whole
 * n-grams, every index inside y's last dim, a weight per n-gram. */
static bool sl_tfidf_params(op_ctx *c, mp_ktfidf *k) {
  const mp_bopr *o = c->op;
  op_rd r = op_reader(c);
  memset(k, 0, sizeof *k);
  k->min_n = rd_range(&r, 1, 64);
  k->max_n = rd_range(&r, k->min_n, 64);
  k->max_skip = rd_range(&r, 0, INT32_MAX);
  k->mode = rd_range(&r, 0, 2);
  k->n_counts = rd_range(&r, 1, 64);
  if (r.bad || r.at + k->n_counts > r.n) return op_fail(c, "bad parameters");
  k->counts = o->params + r.at;
  r.at += (uint32_t)k->n_counts;
  k->n_pool = rd_range(&r, 0, INT32_MAX);
  if (r.bad || r.at + k->n_pool > r.n) return op_fail(c, "bad parameters");
  k->pool = o->params + r.at;
  r.at += (uint32_t)k->n_pool;
  /* n-grams of each length: whole, in order */
  int64_t grams = 0;
  for (int64_t n = 1; n <= k->n_counts; n++) {
    int64_t from = k->counts[n - 1];
    int64_t to = n < k->n_counts ? k->counts[n] : k->n_pool;
    if (from < 0 || to < from || to > k->n_pool || (to - from) % n) {
      return op_fail(c, "ngram_counts do not cut the pool into whole n-grams");
    }
    grams += (to - from) / n;
  }
  k->n_grams = rd_i(&r);
  if (r.bad || k->n_grams != grams || r.at + grams > r.n) {
    return op_fail(c, "ngram_indexes must give one column per n-gram (%lld)",
                   (long long)grams);
  }
  k->index = o->params + r.at;
  r.at += (uint32_t)grams;
  int64_t nw = rd_i(&r);
  if (r.bad || (nw != 0 && nw != grams) || r.at + nw != r.n) {
    return op_fail(c, "weights must give one per n-gram");
  }
  k->weight = nw ? (const double *)(const void *)(o->params + r.at) : NULL;
  return true;
}

static bool sl_tfidf(op_ctx *c, bool run) {
  mp_ktfidf k;
  const mp_btensor *x = op_in(c, 0);
  if (c->op->n_in != 1 || c->op->n_out != 1 || !x) {
    return op_fail(c, "bad arity");
  }
  if (!sl_tfidf_params(c, &k)) return false;
  const mp_btensor *y = op_out(c, 0);
  if ((x->dtype != MP_KD_I32 && x->dtype != MP_KD_I64) ||
      (x->shape.rank != 1 && x->shape.rank != 2) || y->dtype != MP_KD_F32 ||
      y->shape.rank != x->shape.rank ||
      (x->shape.rank == 2 && y->shape.dims[0] != x->shape.dims[0])) {
    return op_fail(c, "takes int32 or int64 [C] or [N, C] to float [N, width]");
  }
  k.rows = x->shape.rank == 2 ? x->shape.dims[0] : 1;
  k.len = x->shape.dims[x->shape.rank - 1];
  k.width = y->shape.dims[y->shape.rank - 1];
  k.dtype = x->dtype;
  for (int64_t g = 0; g < k.n_grams; g++) {
    if (k.index[g] < 0 || k.index[g] >= k.width) {
      return op_fail(c, "ngram index %lld is outside the %lld columns",
                     (long long)k.index[g], (long long)k.width);
    }
  }
  if (!run) {
    c->need_ws += (size_t)k.n_grams * sizeof(int64_t) + 8;
    return op_out_of_place(c, y, &y->shape);
  }
  mp_k_tfidf(&k, op_pin(c, 0), op_pout(c, 0), (int64_t *)(void *)c->ws);
  return true;
}

bool op_select_dispatch(op_ctx *c, bool run, bool *handled) {
  *handled = true;
  switch (c->op->kernel) {
    case MP_BOP_NON_ZERO:
      return sl_nonzero(c, run);
    case MP_BOP_COMPRESS:
      return sl_compress(c, run);
    case MP_BOP_UNIQUE:
      return sl_unique(c, run);
    case MP_BOP_NMS:
      return sl_nms(c, run);
    case MP_BOP_TFIDF:
      return sl_tfidf(c, run);
    default:
      *handled = false;
      return false;
  }
}
