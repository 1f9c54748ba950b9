/*
 * ops_attn.c -- check and run of the transformer ops of opsets 23 and 24
 * (kernels/k_attn.c): RMSNormalization, RotaryEmbedding, Attention and
 * TensorScatter.
 *
 * Invariants (those of ops.c, and):
 *   1. Float tensors (f32 or f64; f16 and bf16 through f32, ops.c
 *      invariant 5), every float operand of the op's one dtype; masks
 *      may be bool, position ids are int64.
 *   2. Every index the kernel computes comes from shapes this file
 *      checked: the heads divide the hidden sizes, the past and present
 *      caches, the mask's broadcast dims and the outputs all have the
 *      shapes the kernel reads and writes.
 *   3. Values read as indices are checked when the op runs, before the
 *      kernel, else the op fails naming the value: position ids in [0,
 *      the cache's rows), nonpad_kv_seqlen in [0, past + kv_seq],
 *      TensorScatter's write indices where the update fits (linear) or
 *      inside the cache (circular).
 *   4. RMSNormalization, RotaryEmbedding and TensorScatter may write over
 *      their input (at the same offset); Attention's outputs share no
 *      input's bytes.
 *   5. On riscv64 with V, f32 runs the RVV kernels (kernels/rvv/kv_attn.c;
 *      ops.c's op_vec says so), other dtypes the scalar ones.
 */
#include <math.h>

#include "op_ctx.h"
#ifdef MPLAN_RVV
#include "mplan/kernels_rvv.h"
#endif

static bool at_float(const mp_btensor *t, int d) {
  return t && t->dtype == d && mp_kd_is_float(d);
}

/* y has x's dtype and shape; in place only over x itself. */
static bool at_same_out(op_ctx *c, const mp_btensor *x, const mp_btensor *y) {
  if (y->dtype != x->dtype) {
    return op_fail(c, "output '%s' has another dtype", y->name);
  }
  if (op_aliases(x, y) && x->offset != y->offset) {
    return op_fail(c, "in place at another offset");
  }
  for (uint32_t k = 1; k < c->op->n_in; k++) {
    if (op_aliases(op_in(c, k), y)) {
      return op_fail(c, "output '%s' shares a parameter's buffer", y->name);
    }
  }
  return op_expect_shape(c, y, &x->shape);
}

/* ---- RMSNormalization ---------------------------------------------------- */

static bool at_check_rmsnorm(op_ctx *c) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *s = op_in(c, 1);
  if (c->op->n_in != 2 || c->op->n_out != 1 || !x || !s) {
    return op_fail(c, "needs X and scale, and one output");
  }
  if (!mp_kd_is_float(x->dtype) || x->shape.rank < 1) {
    return op_fail(c, "needs a float input of rank 1 or more");
  }
  int64_t axis = rd_range(&r, 0, x->shape.rank - 1);
  (void)rd_f(&r);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  int64_t outer, mid, inner;
  op_split3(&x->shape, axis, true, &outer, &mid, &inner);
  if (!at_float(s, x->dtype) || (op_count(s) != mid && op_count(s) != 1)) {
    return op_fail(c, "scale '%s' is not %s of %lld elements (or one)", s->name,
                   mp_kd_name(x->dtype), (long long)mid);
  }
  /* one scale for every element: repeated into the workspace */
  c->need_ws = op_repeat_bytes(s, mid, x->dtype);
  return at_same_out(c, x, op_out(c, 0));
}

static bool at_run_rmsnorm(op_ctx *c) {
  op_rd r = op_reader(c);
  int64_t axis = rd_i(&r), outer, mid, inner;
  double eps = rd_f(&r);
  const mp_btensor *x = op_in(c, 0);
  op_split3(&x->shape, axis, true, &outer, &mid, &inner);
  unsigned char *ws = c->ws;
  const void *scale =
      op_repeat_one(op_in(c, 1), op_pin(c, 1), mid, x->dtype, &ws);
#ifdef MPLAN_RVV
  if (x->dtype == MP_KD_F32) {
    mp_kv_rmsnorm_f32(outer, mid, op_pin(c, 0), scale, eps, op_pout(c, 0));
    return true;
  }
#endif
  mp_k_rmsnorm(x->dtype, outer, mid, op_pin(c, 0), scale, eps, op_pout(c, 0));
  return true;
}

/* ---- RotaryEmbedding ----------------------------------------------------- */

/* The kernel's view of the op (invariant 2); false with why set. */
static bool at_rope(op_ctx *c, mp_krope *p) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *co = op_in(c, 1), *si = op_in(c, 2),
                   *pos = op_in(c, 3);
  if (c->op->n_in < 3 || c->op->n_in > 4 || c->op->n_out != 1 || !x || !co ||
      !si) {
    return op_fail(c, "needs X, cos_cache and sin_cache, and one output");
  }
  const mp_kshape *xs = &x->shape;
  if (!mp_kd_is_float(x->dtype) || (xs->rank != 3 && xs->rank != 4)) {
    return op_fail(c, "needs a float input of rank 3 or 4");
  }
  p->interleaved = rd_range(&r, 0, 1) != 0;
  int64_t nh = rd_range(&r, 0, INT32_MAX), rot = rd_range(&r, 0, INT32_MAX);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  p->batch = xs->dims[0];
  if (xs->rank == 4) { /* [batch, heads, seq, head] */
    p->heads = xs->dims[1], p->seq = xs->dims[2], p->head = xs->dims[3];
    p->sh = p->seq * p->head, p->ss = p->head, p->sb = p->heads * p->sh;
  } else { /* [batch, seq, heads x head] */
    if (nh < 1 || xs->dims[2] % nh != 0) {
      return op_fail(c, "num_heads %lld does not divide the hidden size %lld",
                     (long long)nh, (long long)xs->dims[2]);
    }
    p->heads = nh, p->seq = xs->dims[1], p->head = xs->dims[2] / nh;
    p->sh = p->head, p->ss = xs->dims[2], p->sb = p->seq * p->ss;
  }
  p->rot = rot ? rot : p->head;
  if (p->rot % 2 != 0 || p->rot > p->head) {
    return op_fail(c, "rotary_embedding_dim %lld with heads of %lld",
                   (long long)p->rot, (long long)p->head);
  }
  if (!at_float(co, x->dtype) || !at_float(si, x->dtype)) {
    return op_fail(c, "cos_cache and sin_cache must be %s",
                   mp_kd_name(x->dtype));
  }
  mp_kshape want = {3, {p->batch, p->seq, p->rot / 2}};
  if (pos) {
    mp_kshape ps = {2, {p->batch, p->seq}};
    if (pos->dtype != MP_KD_I64 || !op_expect_shape(c, pos, &ps)) {
      return op_fail(c, "position_ids must be int64 [batch, seq]");
    }
    want.rank = 2;
    want.dims[0] = co->shape.rank == 2 ? co->shape.dims[0] : 0;
    want.dims[1] = p->rot / 2;
  }
  if (!op_expect_shape(c, co, &want) || !op_expect_shape(c, si, &want)) {
    return false;
  }
  return at_same_out(c, x, op_out(c, 0));
}

static bool at_check_rotary(op_ctx *c) {
  mp_krope p;
  return at_rope(c, &p);
}

static bool at_run_rotary(op_ctx *c) {
  mp_krope p;
  if (!at_rope(c, &p)) return false;
  const mp_btensor *pos = op_in(c, 3);
  const int64_t *ids = op_pin(c, 3);
  int64_t rows = op_in(c, 1)->shape.dims[0];
  for (int64_t i = 0; pos && i < op_count(pos); i++) {
    if (ids[i] < 0 || ids[i] >= rows) {
      return op_fail(c, "position id %lld of '%s' is out of range [0, %lld)",
                     (long long)ids[i], pos->name, (long long)rows);
    }
  }
#ifdef MPLAN_RVV
  if (op_in(c, 0)->dtype == MP_KD_F32) {
    mp_kv_rotary_f32(&p, op_pin(c, 0), op_pin(c, 1), op_pin(c, 2),
                     pos ? ids : NULL, op_pout(c, 0));
    return true;
  }
#endif
  mp_k_rotary(op_in(c, 0)->dtype, &p, op_pin(c, 0), op_pin(c, 1), op_pin(c, 2),
              pos ? ids : NULL, op_pout(c, 0));
  return true;
}

/* ---- Attention ----------------------------------------------------------- */

/* Element strides (b, h, row) of a [batch, rows, heads x dim] tensor (3-D)
 * or a [batch, heads, rows, dim] one. */
static void at_strides(bool three, int64_t heads, int64_t rows, int64_t dim,
                       int64_t *st) {
  st[0] = heads * rows * dim;
  st[1] = three ? dim : rows * dim;
  st[2] = three ? heads * dim : dim;
}

/* The mask's strides over (b, h, i, j) broadcast to [batch, q_heads,
 * q_seq, total] (a last dim up to total: the keys after it are masked). */
static bool at_mask(op_ctx *c, const mp_btensor *m, mp_kattn *p, int d) {
  if (!m) {
    p->mask_kind = MP_KATTN_MASK_NONE;
    return true;
  }
  if (m->dtype != MP_KD_BOOL && m->dtype != d) {
    return op_fail(c, "attn_mask '%s' must be bool or %s", m->name,
                   mp_kd_name(d));
  }
  p->mask_kind =
      m->dtype == MP_KD_BOOL ? MP_KATTN_MASK_BOOL : MP_KATTN_MASK_FLOAT;
  int64_t full[4] = {p->batch, p->q_heads, p->q_seq, p->past + p->kv_seq};
  uint32_t rank = m->shape.rank;
  if (rank < 1 || rank > 4) {
    return op_fail(c, "attn_mask '%s' has rank %u", m->name, rank);
  }
  int64_t stride = 1;
  for (int a = 3; a >= 0; a--) {
    int at = a - (4 - (int)rank); /* the mask's axis, or < 0: broadcast */
    int64_t n = at >= 0 ? m->shape.dims[at] : 1;
    bool ok = a == 3 ? n >= 1 && n <= full[3] : n == 1 || n == full[a];
    if (!ok) {
      return op_fail(c,
                     "attn_mask '%s' dim %d is %lld, which does not "
                     "broadcast to %lld",
                     m->name, at, (long long)n, (long long)full[a]);
    }
    if (a == 3) p->mask_len = n;
    p->m_st[a] = n == 1 && a != 3 ? 0 : stride;
    stride *= n;
  }
  return true;
}

/* The kernel's view of the op (invariant 2); false with why set. */
static bool at_attn(op_ctx *c, mp_kattn *p) {
  op_rd r = op_reader(c);
  const mp_btensor *q = op_in(c, 0), *k = op_in(c, 1), *v = op_in(c, 2);
  const mp_btensor *pk = op_in(c, 4), *pv = op_in(c, 5);
  if (c->op->n_in < 3 || c->op->n_in > 7 || c->op->n_out < 1 ||
      c->op->n_out > 4 || !q || !k || !v) {
    return op_fail(c, "needs Q, K and V, and one to four outputs");
  }
  int d = q->dtype;
  uint32_t rank = q->shape.rank;
  if (!mp_kd_is_float(d) || !at_float(k, d) || !at_float(v, d) ||
      (rank != 3 && rank != 4) || k->shape.rank != rank ||
      v->shape.rank != rank) {
    return op_fail(c, "Q, K and V must be floats of one dtype, all 3-D or 4-D");
  }
  int64_t qh = rd_range(&r, 0, INT32_MAX), kvh = rd_range(&r, 0, INT32_MAX);
  p->causal = rd_range(&r, 0, 1) != 0;
  p->scale = rd_f(&r);
  p->softcap = rd_f(&r);
  p->qk_mode = (int)rd_i(&r);
  if (r.bad || r.at != r.n || (p->qk_mode != 0 && p->qk_mode != 3)) {
    return op_fail(c, "bad parameters");
  }
  const int64_t *qd = q->shape.dims, *kd = k->shape.dims, *vd = v->shape.dims;
  bool three = rank == 3;
  p->batch = qd[0];
  if (three) {
    if (qh < 1 || kvh < 1 || qd[2] % qh || kd[2] % kvh || vd[2] % kvh) {
      return op_fail(c,
                     "q_num_heads %lld and kv_num_heads %lld must divide "
                     "the hidden sizes %lld, %lld and %lld",
                     (long long)qh, (long long)kvh, (long long)qd[2],
                     (long long)kd[2], (long long)vd[2]);
    }
    p->q_heads = qh, p->kv_heads = kvh, p->q_seq = qd[1], p->kv_seq = kd[1];
    p->head = qd[2] / qh, p->v_head = vd[2] / kvh;
    if (kd[2] / kvh != p->head) {
      return op_fail(c, "K's heads are not Q's head size %lld",
                     (long long)p->head);
    }
  } else {
    p->q_heads = qd[1], p->kv_heads = kd[1], p->q_seq = qd[2];
    p->kv_seq = kd[2], p->head = qd[3], p->v_head = vd[3];
  }
  if (kd[0] != p->batch || vd[0] != p->batch ||
      vd[three ? 1 : 2] != p->kv_seq || (!three && vd[1] != p->kv_heads) ||
      (!three && kd[3] != p->head)) {
    return op_fail(c, "Q, K and V disagree on the batch, heads or lengths");
  }
  if (p->kv_heads < 1 || p->q_heads % p->kv_heads != 0) {
    return op_fail(c, "%lld query heads are not a multiple of %lld kv heads",
                   (long long)p->q_heads, (long long)p->kv_heads);
  }
  at_strides(three, p->q_heads, p->q_seq, p->head, p->q_st);
  at_strides(three, p->kv_heads, p->kv_seq, p->head, p->k_st);
  at_strides(three, p->kv_heads, p->kv_seq, p->v_head, p->v_st);
  at_strides(three, p->q_heads, p->q_seq, p->v_head, p->y_st);
  if (!p->scale) p->scale = 1 / sqrt((double)p->head);
  p->past = 0;
  if (!pk != !pv) return op_fail(c, "past_key and past_value come together");
  if (pk) {
    p->past = pk->shape.rank == 4 ? pk->shape.dims[2] : -1;
    mp_kshape wk = {4, {p->batch, p->kv_heads, p->past, p->head}};
    mp_kshape wv = {4, {p->batch, p->kv_heads, p->past, p->v_head}};
    if (!at_float(pk, d) || !at_float(pv, d) || !op_expect_shape(c, pk, &wk) ||
        !op_expect_shape(c, pv, &wv)) {
      return op_fail(c,
                     "past_key and past_value must be %s of [%lld, %lld, "
                     "past, head size]",
                     mp_kd_name(d), (long long)p->batch,
                     (long long)p->kv_heads);
    }
  }
  if (!at_mask(c, op_in(c, 3), p, d)) return false;
  int64_t total = p->past + p->kv_seq;
  const mp_btensor *np = op_in(c, 6);
  mp_kshape wn = {1, {p->batch}};
  if (np && (np->dtype != MP_KD_I64 || !op_expect_shape(c, np, &wn))) {
    return op_fail(c, "nonpad_kv_seqlen must be int64 [batch]");
  }
  p->nonpad = NULL; /* the run points it at the checked values */
  mp_kshape wy = {rank, {p->batch, p->q_seq, p->q_heads * p->v_head}};
  if (!three) {
    mp_kshape w4 = {4, {p->batch, p->q_heads, p->q_seq, p->v_head}};
    wy = w4;
  }
  mp_kshape want[4] = {wy,
                       {4, {p->batch, p->kv_heads, total, p->head}},
                       {4, {p->batch, p->kv_heads, total, p->v_head}},
                       {4, {p->batch, p->q_heads, p->q_seq, total}}};
  for (uint32_t o = 0; o < c->op->n_out; o++) {
    const mp_btensor *y = op_out(c, o);
    if (y->dtype != d)
      return op_fail(c, "output '%s' is not Q's dtype", y->name);
    if (!op_out_of_place(c, y, &want[o])) return false;
    for (uint32_t j = 0; j < o; j++) {
      if (op_aliases(op_out(c, j), y)) {
        return op_fail(c, "outputs '%s' and '%s' share bytes",
                       op_out(c, j)->name, y->name);
      }
    }
  }
  c->need_ws = (size_t)total * sizeof(double);
  return true;
}

static bool at_check_attention(op_ctx *c) {
  mp_kattn p;
  return at_attn(c, &p);
}

static bool at_run_attention(op_ctx *c) {
  mp_kattn p;
  if (!at_attn(c, &p)) return false;
  int d = op_in(c, 0)->dtype;
  const mp_btensor *np = op_in(c, 6);
  if (np) { /* invariant 3 */
    const int64_t *n = op_pin(c, 6);
    for (int64_t b = 0; b < p.batch; b++) {
      if (n[b] < 0 || n[b] > p.past + p.kv_seq) {
        return op_fail(c, "nonpad_kv_seqlen %lld of '%s' is outside [0, %lld]",
                       (long long)n[b], np->name,
                       (long long)(p.past + p.kv_seq));
      }
    }
    p.nonpad = n;
  }
#ifdef MPLAN_RVV
  if (d == MP_KD_F32) {
    mp_kv_attention_f32(&p, op_pin(c, 0), op_pin(c, 1), op_pin(c, 2),
                        op_pin(c, 3), op_pin(c, 4), op_pin(c, 5), op_pout(c, 0),
                        c->op->n_out > 3 ? op_pout(c, 3) : NULL,
                        (double *)c->ws);
  } else
#endif
  {
    mp_k_attention(d, &p, op_pin(c, 0), op_pin(c, 1), op_pin(c, 2),
                   op_pin(c, 3), op_pin(c, 4), op_pin(c, 5), op_pout(c, 0),
                   c->op->n_out > 3 ? op_pout(c, 3) : NULL, (double *)c->ws);
  }
  if (c->op->n_out > 1) {
    mp_k_attention_present(d, &p, false, op_pin(c, 4), op_pin(c, 1),
                           op_pout(c, 1));
  }
  if (c->op->n_out > 2) {
    mp_k_attention_present(d, &p, true, op_pin(c, 5), op_pin(c, 2),
                           op_pout(c, 2));
  }
  return true;
}

/* ---- TensorScatter --------------------------------------------------------
 */

/* [batch, pre, rows, inner] of the past cache and the update's seq along
 * the axis; false with why set. */
static bool at_scatter(op_ctx *c, int64_t *v, bool *circular) {
  op_rd r = op_reader(c);
  const mp_btensor *x = op_in(c, 0), *u = op_in(c, 1), *w = op_in(c, 2);
  if (c->op->n_in < 2 || c->op->n_in > 3 || c->op->n_out != 1 || !x || !u) {
    return op_fail(c, "needs past_cache and update, and one output");
  }
  uint32_t rank = x->shape.rank;
  int64_t axis = rd_range(&r, 1, rank > 1 ? rank - 1 : 1);
  *circular = rd_range(&r, 0, 1) != 0;
  if (r.bad || r.at != r.n || rank < 2) return op_fail(c, "bad parameters");
  if (u->dtype != x->dtype || u->shape.rank != rank) {
    return op_fail(c, "update '%s' is not a %s of rank %u", u->name,
                   mp_kd_name(x->dtype), rank);
  }
  v[0] = x->shape.dims[0], v[1] = v[4] = 1;
  for (uint32_t i = 0; i < rank; i++) {
    int64_t a = x->shape.dims[i], b = u->shape.dims[i];
    if ((int64_t)i == axis ? b > a : b != a) {
      return op_fail(c, "update '%s' dim %u is %lld against the cache's %lld",
                     u->name, i, (long long)b, (long long)a);
    }
    if (i > 0 && (int64_t)i < axis) v[1] *= a;
    if ((int64_t)i > axis) v[4] *= a;
  }
  v[2] = x->shape.dims[axis], v[3] = u->shape.dims[axis];
  mp_kshape wb = {1, {v[0]}};
  if (w && (w->dtype != MP_KD_I64 || !op_expect_shape(c, w, &wb))) {
    return op_fail(c, "write_indices must be int64 [batch]");
  }
  return at_same_out(c, x, op_out(c, 0));
}

static bool at_check_scatter(op_ctx *c) {
  int64_t v[5];
  bool circular;
  return at_scatter(c, v, &circular);
}

static bool at_run_scatter(op_ctx *c) {
  int64_t v[5];
  bool circular;
  if (!at_scatter(c, v, &circular)) return false;
  const mp_btensor *x = op_in(c, 0), *w = op_in(c, 2);
  const int64_t *at = w ? op_pin(c, 2) : NULL;
  for (int64_t b = 0; at && b < v[0]; b++) { /* invariant 3 */
    if (at[b] < 0 ||
        (circular ? at[b] >= v[2] && v[3] > 0 : at[b] > v[2] - v[3])) {
      return op_fail(c,
                     "write index %lld of '%s' does not fit %lld rows of "
                     "%lld (%s)",
                     (long long)at[b], w->name, (long long)v[3],
                     (long long)v[2], circular ? "circular" : "linear");
    }
  }
  mp_k_tensor_scatter(mp_kd_size(x->dtype), v[0], v[1], v[2], v[3], v[4],
                      circular, at, op_pin(c, 0), op_pin(c, 1), op_pout(c, 0));
  return true;
}

/* ---- dispatch ------------------------------------------------------------ */

bool op_attn_dispatch(op_ctx *c, bool run, bool *handled) {
  *handled = true;
  switch (c->op->kernel) {
    case MP_BOP_RMSNORM:
      return run ? at_run_rmsnorm(c) : at_check_rmsnorm(c);
    case MP_BOP_ROTARY:
      return run ? at_run_rotary(c) : at_check_rotary(c);
    case MP_BOP_ATTENTION:
      return run ? at_run_attention(c) : at_check_attention(c);
    case MP_BOP_TENSOR_SCATTER:
      return run ? at_run_scatter(c) : at_check_scatter(c);
    default:
      *handled = false;
      return false;
  }
}
