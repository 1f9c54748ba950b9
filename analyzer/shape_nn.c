/*
 * shape_nn.c -- shape rules of neural-network ops: convolutions (grouped,
 * depthwise, integer and quantized), transposed convolution, pooling,
 * Gemm/MatMul (batched, broadcast, integer, quantized), normalizations,
 * recurrent layers, Resize/Upsample, depth/space shuffles, losses.
 *
 * Invariants:
 *   1. Spatial output sizes follow the ONNX operator definitions (opset
 *      <= 17): explicit pads, auto_pad SAME_UPPER/SAME_LOWER/VALID,
 *      strides, dilations and ceil_mode.
 *   2. Channel counts are checked against the weights (C == W[1] x group):
 *      a contradiction is an error naming the op, not a guess.
 *   3. Rules that need a value (Resize sizes/scales) say MP_ERR_UNSUPPORTED
 *      when it is not known rather than inventing one.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "mplan/onnx.h"
#include "shape_rules.h"

/* Spatial attributes of a window op over k spatial dims. */
typedef struct nn_window {
  uint32_t k;
  int64_t kernel[MP_MAX_RANK], stride[MP_MAX_RANK], dil[MP_MAX_RANK];
  int64_t pad_begin[MP_MAX_RANK], pad_end[MP_MAX_RANK];
  const char *auto_pad;
} nn_window;

#define NN_MAX ((int64_t)1 << 31)

/* Reads strides, dilations, pads and auto_pad; kernel comes from the
 * kernel_shape attribute or from kernel_dims (weights) when absent. */
static mp_status nn_window_of(sh_ctx *c, uint32_t k, const int64_t *kernel_dims,
                              nn_window *w) {
  size_t n;
  const int64_t *v;
  w->k = k;
  for (uint32_t j = 0; j < k; j++) {
    w->kernel[j] = kernel_dims ? kernel_dims[j] : 0;
    w->stride[j] = w->dil[j] = 1;
    w->pad_begin[j] = w->pad_end[j] = 0;
  }
  if ((v = sh_attr_ints(c, "kernel_shape", &n))) {
    if (n != k)
      return sh_fail(c, "kernel_shape has %zu dims, expected %u", n, k);
    memcpy(w->kernel, v, k * sizeof *v);
  } else if (!kernel_dims) {
    return sh_fail(c, "kernel_shape is missing");
  }
  if ((v = sh_attr_ints(c, "strides", &n))) {
    if (n != k) return sh_fail(c, "strides has %zu dims, expected %u", n, k);
    memcpy(w->stride, v, k * sizeof *v);
  }
  if ((v = sh_attr_ints(c, "dilations", &n))) {
    if (n != k) return sh_fail(c, "dilations has %zu dims, expected %u", n, k);
    memcpy(w->dil, v, k * sizeof *v);
  }
  if ((v = sh_attr_ints(c, "pads", &n))) {
    if (n != 2 * k)
      return sh_fail(c, "pads has %zu values, expected %u", n, 2 * k);
    memcpy(w->pad_begin, v, k * sizeof *v);
    memcpy(w->pad_end, v + k, k * sizeof *v);
  }
  w->auto_pad = sh_attr_s(c, "auto_pad", "NOTSET");
  for (uint32_t j = 0; j < k; j++) {
    if (w->kernel[j] < 1 || w->stride[j] < 1 || w->dil[j] < 1 ||
        w->pad_begin[j] < 0 || w->pad_end[j] < 0) {
      return sh_fail(c,
                     "kernel, strides and dilations must be >= 1 and pads "
                     ">= 0");
    }
    /* Bounded, so that the window arithmetic below cannot overflow. */
    if (w->kernel[j] > NN_MAX || w->stride[j] > NN_MAX || w->dil[j] > NN_MAX ||
        w->pad_begin[j] > NN_MAX || w->pad_end[j] > NN_MAX) {
      return sh_fail(c,
                     "kernel, strides, dilations and pads must be <= "
                     "2^31");
    }
  }
  return MP_OK;
}

static int64_t nn_div(int64_t a, int64_t b, bool ceil_mode) {
  if (a < 0) return -1;
  return ceil_mode ? (a + b - 1) / b : a / b;
}

/* Output size of spatial dim j of input size d (invariant 1). */
static mp_status nn_out(sh_ctx *c, const nn_window *w, uint32_t j, int64_t d,
                        bool ceil_mode, int64_t *out) {
  int64_t span = w->dil[j] * (w->kernel[j] - 1) + 1;
  if (strcmp(w->auto_pad, "SAME_UPPER") == 0 ||
      strcmp(w->auto_pad, "SAME_LOWER") == 0) {
    *out = (d + w->stride[j] - 1) / w->stride[j];
  } else if (strcmp(w->auto_pad, "VALID") == 0) {
    *out = nn_div(d - span, w->stride[j], ceil_mode) + 1;
  } else {
    *out = nn_div(d + w->pad_begin[j] + w->pad_end[j] - span, w->stride[j],
                  ceil_mode) +
           1;
  }
  if (*out < 1) {
    return sh_fail(c,
                   "spatial dim %u: input %" PRId64
                   " is smaller than the window %" PRId64,
                   j, d, span);
  }
  return MP_OK;
}

mp_status sh_conv(sh_ctx *c) {
  bool q = strcmp(c->op->type, "QLinearConv") == 0;
  const sh_fact *x = sh_in(c, 0), *wt = sh_in(c, q ? 3 : 1);
  if (!x || !wt) return sh_fail(c, "needs X and W");
  if (x->rank < 3 || wt->rank != x->rank) {
    return sh_fail(c,
                   "X (rank %u) and W (rank %u) must have the same rank "
                   ">= 3",
                   x->rank, wt->rank);
  }
  int64_t group = sh_attr_i(c, "group", 1), cin;
  if (group < 1 || __builtin_mul_overflow(wt->d[1], group, &cin) ||
      x->d[1] != cin || wt->d[0] % group) {
    return sh_fail(c,
                   "X has %" PRId64 " channels but W expects %" PRId64
                   " x group %" PRId64,
                   x->d[1], wt->d[1], group);
  }
  nn_window w;
  uint32_t k = x->rank - 2;
  mp_status st = nn_window_of(c, k, wt->d + 2, &w);
  int64_t d[MP_MAX_RANK] = {x->d[0], wt->d[0]};
  for (uint32_t j = 0; st == MP_OK && j < k; j++) {
    st = nn_out(c, &w, j, x->d[j + 2], false, &d[j + 2]);
  }
  if (st != MP_OK) return st;
  mp_dtype dt = x->dt;
  if (strcmp(c->op->type, "ConvInteger") == 0) dt = MP_DTYPE_I32;
  if (q) dt = sh_in(c, 7) ? c->in[7].dt : MP_DTYPE_U8;
  sh_set(c, 0, dt, x->rank, d);
  return MP_OK;
}

mp_status sh_conv_transpose(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *wt = sh_in(c, 1);
  if (!x || !wt) return sh_fail(c, "needs X and W");
  if (x->rank < 3 || wt->rank != x->rank) {
    return sh_fail(c, "X and W must have the same rank >= 3");
  }
  int64_t group = sh_attr_i(c, "group", 1);
  if (group < 1 || x->d[1] != wt->d[0]) {
    return sh_fail(c, "X has %" PRId64 " channels but W has %" PRId64, x->d[1],
                   wt->d[0]);
  }
  uint32_t k = x->rank - 2;
  nn_window w;
  mp_status st = nn_window_of(c, k, wt->d + 2, &w);
  if (st != MP_OK) return st;
  size_t n_os = 0, n_op = 0;
  const int64_t *os = sh_attr_ints(c, "output_shape", &n_os);
  const int64_t *op = sh_attr_ints(c, "output_padding", &n_op);
  int64_t d[MP_MAX_RANK] = {x->d[0], 0};
  if (__builtin_mul_overflow(wt->d[1], group, &d[1])) {
    return sh_fail(c, "W[1] x group overflows");
  }
  for (uint32_t j = 0; j < k; j++) {
    int64_t opad = op && n_op == k ? op[j] : 0, v;
    bool over = false;
    if (opad < 0 || opad > NN_MAX) {
      return sh_fail(c, "output_padding must be in [0, 2^31]");
    }
    if (os && (n_os == k || n_os == k + 2)) {
      v = os[n_os - k + j];
    } else if (strncmp(w.auto_pad, "SAME", 4) == 0) {
      over = __builtin_mul_overflow(x->d[j + 2], w.stride[j], &v);
    } else {
      /* window attributes are <= 2^31 (nn_window_of): only the first
       * product can overflow */
      over = __builtin_mul_overflow(w.stride[j], x->d[j + 2] - 1, &v) ||
             __builtin_add_overflow(v,
                                    opad + (w.kernel[j] - 1) * w.dil[j] + 1 -
                                        w.pad_begin[j] - w.pad_end[j],
                                    &v);
    }
    if (over) return sh_fail(c, "spatial dim %u overflows 64 bits", j);
    if (v < 1) return sh_fail(c, "spatial dim %u would be < 1", j);
    d[j + 2] = v;
  }
  sh_set(c, 0, x->dt, x->rank, d);
  return MP_OK;
}

mp_status sh_pool(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x || x->rank < 3) return sh_fail(c, "needs X of rank >= 3");
  uint32_t k = x->rank - 2;
  nn_window w;
  mp_status st = nn_window_of(c, k, NULL, &w);
  bool ceil_mode = sh_attr_i(c, "ceil_mode", 0) != 0;
  int64_t d[MP_MAX_RANK] = {x->d[0], x->d[1]};
  for (uint32_t j = 0; st == MP_OK && j < k; j++) {
    st = nn_out(c, &w, j, x->d[j + 2], ceil_mode, &d[j + 2]);
  }
  if (st != MP_OK) return st;
  sh_set(c, 0, x->dt, x->rank, d);
  sh_set(c, 1, MP_DTYPE_I64, x->rank, d);
  return MP_OK;
}

mp_status sh_global_pool(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x || x->rank < 2) return sh_fail(c, "needs X of rank >= 2");
  int64_t d[MP_MAX_RANK];
  for (uint32_t j = 0; j < x->rank; j++) d[j] = j < 2 ? x->d[j] : 1;
  sh_set(c, 0, x->dt, x->rank, d);
  return MP_OK;
}

mp_status sh_gemm(sh_ctx *c) {
  const sh_fact *a = sh_in(c, 0), *b = sh_in(c, 1);
  if (!a || !b || a->rank != 2 || b->rank != 2) {
    return sh_fail(c, "A and B must be matrices");
  }
  bool ta = sh_attr_i(c, "transA", 0), tb = sh_attr_i(c, "transB", 0);
  int64_t m = a->d[ta ? 1 : 0], ka = a->d[ta ? 0 : 1];
  int64_t kb = b->d[tb ? 1 : 0], n = b->d[tb ? 0 : 1];
  if (ka != kb) {
    return sh_fail(c, "inner dims differ: %" PRId64 " vs %" PRId64, ka, kb);
  }
  int64_t d[2] = {m, n};
  sh_set(c, 0, a->dt, 2, d);
  return MP_OK;
}

mp_status sh_matmul(sh_ctx *c) {
  bool q = strcmp(c->op->type, "QLinearMatMul") == 0;
  const sh_fact *a = sh_in(c, 0), *b = sh_in(c, q ? 3 : 1);
  if (!a || !b || a->rank < 1 || b->rank < 1) {
    return sh_fail(c, "A and B must have rank >= 1");
  }
  /* numpy matmul: a vector is promoted to a matrix and the added dim is
   * removed from the result. */
  int64_t ad[MP_MAX_RANK], bd[MP_MAX_RANK], d[MP_MAX_RANK];
  uint32_t ar = a->rank, br = b->rank, r;
  memcpy(ad, a->d, sizeof ad);
  memcpy(bd, b->d, sizeof bd);
  if (ar == 1) ad[1] = ad[0], ad[0] = 1, ar = 2;
  if (br == 1) bd[1] = 1, br = 2;
  if (ad[ar - 1] != bd[br - 2]) {
    return sh_fail(c, "inner dims differ: %" PRId64 " vs %" PRId64, ad[ar - 1],
                   bd[br - 2]);
  }
  mp_status st = sh_broadcast(c, ar - 2, ad, br - 2, bd, &r, d);
  if (st != MP_OK) return st;
  if (a->rank > 1) d[r++] = ad[ar - 2];
  if (b->rank > 1) d[r++] = bd[br - 1];
  mp_dtype dt = a->dt;
  if (strcmp(c->op->type, "MatMulInteger") == 0) dt = MP_DTYPE_I32;
  if (q) dt = sh_in(c, 7) ? c->in[7].dt : MP_DTYPE_U8;
  sh_set(c, 0, dt, r, d);
  return MP_OK;
}

/* com.microsoft::MatMulNBits: Y [..., N] from A [..., K] and the weight
 * W [N, K] packed into B [N, ceil(K / block_size), block_size * bits / 8]
 * uint8; attributes K, N, bits (2 to 8), block_size (a power of 2 >= 16);
 * scales [N * blocks] of A's type, zero points packed uint8 or of A's type,
 * g_idx int32 [K]. */
mp_status sh_matmul_nbits(sh_ctx *c) {
  const sh_fact *a = sh_in(c, 0), *b = sh_in(c, 1);
  int64_t k = sh_attr_i(c, "K", 0), n = sh_attr_i(c, "N", 0);
  int64_t bits = sh_attr_i(c, "bits", 4), bs = sh_attr_i(c, "block_size", 0);
  if (!a || a->rank < 1) return sh_fail(c, "needs A of rank >= 1");
  if (k < 1 || n < 1 || k > INT32_MAX || n > INT32_MAX) {
    return sh_fail(
        c, "attributes K %" PRId64 " and N %" PRId64 " must be in [1, 2^31)", k,
        n);
  }
  if (bits < 2 || bits > 8 || bs < 16 || bs > (1 << 20) || (bs & (bs - 1))) {
    return sh_fail(c,
                   "bits %" PRId64 " (2 to 8) or block_size %" PRId64
                   " (a power of 2 >= 16) out of range",
                   bits, bs);
  }
  if (a->d[a->rank - 1] != k) {
    return sh_fail(c, "A's last dim %" PRId64 " is not K %" PRId64,
                   a->d[a->rank - 1], k);
  }
  int64_t kb = (k + bs - 1) / bs, want = n * kb * (bs * bits / 8);
  if (b && (b->dt != MP_DTYPE_U8 || sh_elems(b) != want)) {
    return sh_fail(c,
                   "B must be uint8 of %" PRId64
                   " bytes (N x blocks x "
                   "block_size * bits / 8)",
                   want);
  }
  const sh_fact *s = sh_in(c, 2), *z = sh_in(c, 3), *g = sh_in(c, 4);
  if (s && (s->dt != a->dt || sh_elems(s) != n * kb)) {
    return sh_fail(c,
                   "scales must be %" PRId64 " values of A's type (N x blocks)",
                   n * kb);
  }
  if (z && z->dt == MP_DTYPE_U8 && sh_elems(z) != n * ((kb * bits + 7) / 8)) {
    return sh_fail(c,
                   "uint8 zero points must be %" PRId64
                   " bytes (N rows of blocks x bits, packed)",
                   n * ((kb * bits + 7) / 8));
  }
  if (z && z->dt != MP_DTYPE_U8 && (z->dt != a->dt || sh_elems(z) != n * kb)) {
    return sh_fail(c,
                   "zero points must be packed uint8, or %" PRId64
                   " values of A's type (N x blocks)",
                   n * kb);
  }
  if (g && (g->dt != MP_DTYPE_I32 || sh_elems(g) != k)) {
    return sh_fail(c, "g_idx must be %" PRId64 " int32 values (K)", k);
  }
  int64_t d[MP_MAX_RANK];
  memcpy(d, a->d, a->rank * sizeof *d);
  d[a->rank - 1] = n;
  sh_set(c, 0, a->dt, a->rank, d);
  return MP_OK;
}

mp_status sh_batchnorm(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *mean = sh_in(c, 3);
  if (!x || x->rank < 2) return sh_fail(c, "needs X of rank >= 2");
  int64_t ch = x->d[1];
  sh_set(c, 0, x->dt, x->rank, x->d);
  for (uint32_t k = 1; k < c->n_out; k++) {
    sh_set(c, k, mean ? mean->dt : x->dt, 1, &ch);
  }
  return MP_OK;
}

mp_status sh_layernorm(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  uint32_t axis;
  if (!x) return sh_fail(c, "input 0 is missing");
  mp_status st = sh_axis(c, sh_attr_i(c, "axis", -1), x->rank, &axis);
  if (st != MP_OK) return st;
  int64_t d[MP_MAX_RANK];
  for (uint32_t j = 0; j < x->rank; j++) d[j] = j < axis ? x->d[j] : 1;
  sh_set(c, 0, x->dt, x->rank, x->d);
  mp_dtype stash = sh_attr_i(c, "stash_type", 1) == 1 ? MP_DTYPE_F32 : x->dt;
  sh_set(c, 1, stash, x->rank, d);
  sh_set(c, 2, stash, x->rank, d);
  return MP_OK;
}

/* Attention (opset 23): Y [batch, q_seq, q_heads x v_head] for 3-D
 * inputs, [batch, q_heads, q_seq, v_head] for 4-D; present_key and
 * present_value [batch, kv_heads, past + kv_seq, head or v_head];
 * qk_matmul_output [batch, q_heads, q_seq, past + kv_seq]. */
mp_status sh_attention(sh_ctx *c) {
  const sh_fact *q = sh_in(c, 0), *k = sh_in(c, 1), *v = sh_in(c, 2),
                *pk = sh_in(c, 4);
  if (!q || !k || !v || (q->rank != 3 && q->rank != 4) || k->rank != q->rank ||
      v->rank != q->rank) {
    return sh_fail(c, "needs Q, K and V, all of rank 3 or all of rank 4");
  }
  bool three = q->rank == 3;
  int64_t qh = q->d[1], kvh = k->d[1], vh, seq_q = q->d[2], seq_kv = k->d[2];
  if (three) {
    qh = sh_attr_i(c, "q_num_heads", 0), kvh = sh_attr_i(c, "kv_num_heads", 0);
    if (qh < 1 || kvh < 1 || q->d[2] % qh || v->d[2] % kvh) {
      return sh_fail(c,
                     "3-D inputs need q_num_heads and kv_num_heads that "
                     "divide the hidden sizes (q_num_heads %lld of Q's "
                     "%lld, kv_num_heads %lld of V's %lld)",
                     (long long)qh, (long long)q->d[2], (long long)kvh,
                     (long long)v->d[2]);
    }
    seq_q = q->d[1], seq_kv = k->d[1];
    vh = v->d[2] / kvh;
  } else {
    vh = v->d[3];
  }
  int64_t past = pk && pk->rank == 4 ? pk->d[2] : 0;
  int64_t head = three ? q->d[2] / qh : q->d[3];
  int64_t y3[3] = {q->d[0], seq_q, qh * vh}, y4[4] = {q->d[0], qh, seq_q, vh};
  int64_t pkd[4] = {q->d[0], kvh, past + seq_kv, head};
  int64_t pvd[4] = {q->d[0], kvh, past + seq_kv, vh};
  int64_t qkd[4] = {q->d[0], qh, seq_q, past + seq_kv};
  sh_set(c, 0, q->dt, q->rank, three ? y3 : y4);
  sh_set(c, 1, q->dt, 4, pkd);
  sh_set(c, 2, q->dt, 4, pvd);
  sh_set(c, 3, q->dt, 4, qkd);
  return MP_OK;
}

mp_status sh_rnn(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *r = sh_in(c, 2);
  if (!x || x->rank != 3 || !r || r->rank != 3) {
    return sh_fail(c, "needs X and R of rank 3");
  }
  bool batch_first = sh_attr_i(c, "layout", 0) == 1;
  int64_t dirs =
      strcmp(sh_attr_s(c, "direction", "forward"), "bidirectional") == 0 ? 2
                                                                         : 1;
  int64_t hidden = sh_attr_i(c, "hidden_size", r->d[2]);
  int64_t seq = x->d[batch_first ? 1 : 0], batch = x->d[batch_first ? 0 : 1];
  int64_t y[4] = {seq, dirs, batch, hidden}, h[3] = {dirs, batch, hidden};
  if (batch_first) {
    y[0] = batch, y[1] = seq, y[2] = dirs;
    h[0] = batch, h[1] = dirs;
  }
  sh_set(c, 0, x->dt, 4, y);
  sh_set(c, 1, x->dt, 3, h);
  sh_set(c, 2, x->dt, 3, h);
  return MP_OK;
}

/* Output dims from scales (floor(d x s)) or sizes (invariant 3). */
static mp_status nn_scaled(sh_ctx *c, const sh_fact *x, uint32_t scales_in,
                           uint32_t sizes_in) {
  double s[MP_VALUE_MAX];
  size_t n = 0, na = 0;
  int64_t d[MP_MAX_RANK];
  memcpy(d, x->d, x->rank * sizeof *d);
  /* Resize-18's axes: the scales or sizes are those of these axes, the
   * other axes keep their dims */
  uint32_t at[MP_MAX_RANK];
  const int64_t *axes = sh_attr_ints(c, "axes", &na);
  if (!axes) na = x->rank;
  if (na > x->rank) return sh_fail(c, "%zu axes for rank %u", na, x->rank);
  for (uint32_t k = 0; k < na; k++) {
    if (!axes) {
      at[k] = k;
      continue;
    }
    mp_status st = sh_axis(c, axes[k], x->rank, &at[k]);
    if (st != MP_OK) return st;
    for (uint32_t j = 0; j < k; j++) {
      if (at[j] == at[k]) return sh_fail(c, "axis %u is repeated", at[k]);
    }
  }
  const int64_t *sz = sizes_in ? sh_ints(c, sizes_in, &n) : NULL;
  if (sz && n == na) {
    const char *p = sh_attr_s(c, "keep_aspect_ratio_policy", "stretch");
    bool smaller = strcmp(p, "not_smaller") == 0;
    if (strcmp(p, "stretch") != 0 && !smaller && strcmp(p, "not_larger") != 0) {
      return sh_fail(c, "keep_aspect_ratio_policy '%s' is not known", p);
    }
    if (strcmp(p, "stretch") == 0) {
      for (uint32_t k = 0; k < na; k++) d[at[k]] = sz[k];
    } else {
      /* opset 18: one scale for the axes, the smallest (not_larger) or
       * largest (not_smaller) of sizes / dims; each axis
       * round_half_up(scale x dim) */
      double sc = mp_resize_aspect_scale(x->d, at, sz, na, smaller);
      for (uint32_t k = 0; k < na; k++) {
        double v = floor(sc * (double)x->d[at[k]] + 0.5);
        if (!(v >= 0 && v < 9e18)) return sh_fail(c, "size %u is invalid", k);
        d[at[k]] = (int64_t)v;
      }
    }
    sh_set(c, 0, x->dt, x->rank, d);
    return MP_OK;
  }
  if (sh_in(c, sizes_in) && sizes_in && !sz && sh_elems(sh_in(c, sizes_in))) {
    return MP_ERR_UNSUPPORTED; /* sizes given but not known */
  }
  if (!sh_doubles(c, scales_in, s, &n)) return MP_ERR_UNSUPPORTED;
  if (n != na) {
    return sh_fail(c, "%zu scales for %zu axes of an input of rank %u", n, na,
                   x->rank);
  }
  for (uint32_t k = 0; k < na; k++) {
    double v = floor((double)x->d[at[k]] * s[k] + 1e-9);
    if (!(v >= 0 && v < 9e18)) return sh_fail(c, "scale %u is invalid", k);
    d[at[k]] = (int64_t)v;
  }
  sh_set(c, 0, x->dt, x->rank, d);
  return MP_OK;
}

mp_status sh_resize(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  if (c->opset == 10 || c->n_in == 2) return nn_scaled(c, x, 1, 0);
  return nn_scaled(c, x, 2, 3);
}

mp_status sh_upsample(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  size_t n;
  const double *s = sh_attr_floats(c, "scales", &n);
  if (!x) return sh_fail(c, "input 0 is missing");
  if (!s) return nn_scaled(c, x, 1, 0);
  if (n != x->rank) return sh_fail(c, "%zu scales for rank %u", n, x->rank);
  int64_t d[MP_MAX_RANK];
  for (uint32_t j = 0; j < x->rank; j++) {
    double v = floor((double)x->d[j] * s[j] + 1e-9);
    if (!(v >= 0 && v < 9e18)) return sh_fail(c, "scale %u is invalid", j);
    d[j] = (int64_t)v;
  }
  sh_set(c, 0, x->dt, x->rank, d);
  return MP_OK;
}

mp_status sh_depth_to_space(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  int64_t b = sh_attr_i(c, "blocksize", 0);
  if (!x || x->rank != 4) return sh_fail(c, "needs X of rank 4");
  if (b < 1 || b > NN_MAX) return sh_fail(c, "blocksize must be in [1, 2^31]");
  if (x->d[1] % (b * b)) {
    return sh_fail(c, "channels %" PRId64 " not divisible by blocksize^2",
                   x->d[1]);
  }
  int64_t d[4] = {x->d[0], x->d[1] / (b * b), 0, 0};
  if (!mp_i64_mul(x->d[2], b, &d[2]) || !mp_i64_mul(x->d[3], b, &d[3])) {
    return sh_fail(c, "output dims overflow");
  }
  sh_set(c, 0, x->dt, 4, d);
  return MP_OK;
}

mp_status sh_space_to_depth(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  int64_t b = sh_attr_i(c, "blocksize", 0);
  if (!x || x->rank != 4) return sh_fail(c, "needs X of rank 4");
  if (b < 1 || b > NN_MAX) return sh_fail(c, "blocksize must be in [1, 2^31]");
  if (x->d[2] % b || x->d[3] % b) {
    return sh_fail(c, "spatial dims not divisible by blocksize");
  }
  int64_t d[4] = {x->d[0], 0, x->d[2] / b, x->d[3] / b};
  if (!mp_i64_mul(x->d[1], b * b, &d[1])) {
    return sh_fail(c, "output channels overflow");
  }
  sh_set(c, 0, x->dt, 4, d);
  return MP_OK;
}

mp_status sh_grid_sample(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *g = sh_in(c, 1);
  if (!x || !g || x->rank != 4 || g->rank != 4) {
    return sh_fail(c, "needs X and grid of rank 4");
  }
  int64_t d[4] = {x->d[0], x->d[1], g->d[1], g->d[2]};
  sh_set(c, 0, x->dt, 4, d);
  return MP_OK;
}

mp_status sh_roi_align(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *rois = sh_in(c, 1);
  if (!x || !rois || x->rank != 4 || rois->rank != 2) {
    return sh_fail(c, "needs X of rank 4 and rois of rank 2");
  }
  int64_t d[4] = {rois->d[0], x->d[1], sh_attr_i(c, "output_height", 1),
                  sh_attr_i(c, "output_width", 1)};
  sh_set(c, 0, x->dt, 4, d);
  return MP_OK;
}

mp_status sh_loss(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *t = sh_in(c, 1);
  if (!x || !t) return sh_fail(c, "needs scores and labels");
  if (strcmp(sh_attr_s(c, "reduction", "mean"), "none") == 0) {
    sh_set(c, 0, x->dt, t->rank, t->d);
  } else {
    sh_set(c, 0, x->dt, 0, NULL);
  }
  sh_set(c, 1, x->dt, x->rank, x->d);
  return MP_OK;
}

mp_status sh_max_unpool(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  size_t n;
  if (!x || x->rank < 3) return sh_fail(c, "needs X of rank >= 3");
  const int64_t *os = sh_ints(c, 2, &n);
  if (os && n == x->rank) {
    sh_set(c, 0, x->dt, x->rank, os);
    return MP_OK;
  }
  if (sh_in(c, 2)) return MP_ERR_UNSUPPORTED;
  nn_window w;
  uint32_t k = x->rank - 2;
  mp_status st = nn_window_of(c, k, NULL, &w);
  if (st != MP_OK) return st;
  int64_t d[MP_MAX_RANK] = {x->d[0], x->d[1]};
  for (uint32_t j = 0; j < k; j++) {
    /* window attributes are <= 2^31 (nn_window_of): only the product can
     * overflow (ConvTranspose's rule, sh_conv_transpose) */
    int64_t v;
    if (__builtin_mul_overflow(x->d[j + 2] - 1, w.stride[j], &v) ||
        __builtin_add_overflow(v, w.kernel[j] - w.pad_begin[j] - w.pad_end[j],
                               &v)) {
      return sh_fail(c, "spatial dim %u overflows 64 bits", j);
    }
    if (v < 1) return sh_fail(c, "spatial dim %u would be < 1", j);
    d[j + 2] = v;
  }
  sh_set(c, 0, x->dt, x->rank, d);
  return MP_OK;
}

/* DFT: the signal with its axis dim the transform's bins (dft_length, or
 * the dim; onesided keeps n / 2 + 1) and a last dim of 2 (re, im). The
 * axis is an attribute up to opset 19, an input (default -2) from 20. */
mp_status sh_dft(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x || x->rank < 2) return sh_fail(c, "needs a signal of rank >= 2");
  int64_t axis = sh_attr_i(c, "axis", 1);
  size_t n;
  if (c->opset >= 20) {
    axis = -2;
    if (sh_in(c, 2)) {
      const int64_t *a = sh_ints(c, 2, &n);
      if (!a || n != 1) return MP_ERR_UNSUPPORTED;
      axis = a[0];
    }
  }
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis > (int64_t)x->rank - 2) {
    return sh_fail(c, "axis %" PRId64 " of a signal of rank %u", axis, x->rank);
  }
  int64_t len = x->d[axis];
  if (sh_in(c, 1)) {
    const int64_t *v = sh_ints(c, 1, &n);
    if (!v || n != 1) return MP_ERR_UNSUPPORTED;
    len = v[0];
  }
  if (len < 1 || len > SH_DIM_MAX)
    return sh_fail(c, "dft_length %" PRId64, len);
  int64_t d[MP_MAX_RANK];
  memcpy(d, x->d, x->rank * sizeof *d);
  d[axis] = sh_attr_i(c, "onesided", 0) ? len / 2 + 1 : len;
  d[x->rank - 1] = 2;
  sh_set(c, 0, x->dt, x->rank, d);
  return MP_OK;
}

/* STFT: [batch, frames, bins, 2], frames = 1 + (length - frame) / step,
 * the frame the window's length or frame_length. */
mp_status sh_stft(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *win = sh_in(c, 2);
  if (!x || x->rank != 3) return sh_fail(c, "needs a signal of rank 3");
  size_t n;
  const int64_t *step = sh_ints(c, 1, &n);
  if (!step || n != 1) return MP_ERR_UNSUPPORTED;
  int64_t frame;
  if (win) {
    if (win->rank != 1) return sh_fail(c, "the window must be a vector");
    frame = win->d[0];
  } else {
    const int64_t *fl = sh_in(c, 3) ? sh_ints(c, 3, &n) : NULL;
    if (!sh_in(c, 3)) return sh_fail(c, "needs a window or a frame_length");
    if (!fl || n != 1) return MP_ERR_UNSUPPORTED;
    frame = fl[0];
  }
  if (step[0] < 1 || frame < 1 || frame > x->d[1]) {
    return sh_fail(c,
                   "frame_step %" PRId64 " and frame length %" PRId64
                   " do not fit a signal of %" PRId64,
                   step[0], frame, x->d[1]);
  }
  int64_t d[4] = {x->d[0], 1 + (x->d[1] - frame) / step[0],
                  sh_attr_i(c, "onesided", 1) ? frame / 2 + 1 : frame, 2};
  sh_set(c, 0, x->dt, 4, d);
  return MP_OK;
}

/* MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] of output_datatype
 * (f32 by default). */
mp_status sh_mel_weight_matrix(sh_ctx *c) {
  size_t n0, n1;
  const int64_t *bins = sh_ints(c, 0, &n0), *len = sh_ints(c, 1, &n1);
  if (!bins || !len || n0 != 1 || n1 != 1) return MP_ERR_UNSUPPORTED;
  if (bins[0] < 1 || len[0] < 1 || bins[0] > SH_DIM_MAX ||
      len[0] > SH_DIM_MAX) {
    return sh_fail(c, "num_mel_bins %" PRId64 " and dft_length %" PRId64,
                   bins[0], len[0]);
  }
  mp_dtype dt = MP_DTYPE_F32;
  if (sh_has_attr(c, "output_datatype") &&
      !mp_onnx_dtype((int32_t)sh_attr_i(c, "output_datatype", 1), &dt)) {
    return sh_fail(c, "unknown output_datatype");
  }
  int64_t d[2] = {len[0] / 2 + 1, bins[0]};
  sh_set(c, 0, dt, 2, d);
  return MP_OK;
}
