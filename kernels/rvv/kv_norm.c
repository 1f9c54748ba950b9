/*
 * kv_norm.c -- RVV BatchNormalization, LayerNormalization and
 * Softmax/LogSoftmax (f32; Softmax also int8), with the scalar kernels'
 * signatures (mplan/kernels_rvv.h).
 *
 * Like the scalar kernels, statistics and per-element arithmetic are in
 * double and each output is rounded once: f32 at LMUL 2 widened to f64 at
 * LMUL 4. LMUL 2 for register pressure (seed 000 section 4): Softmax's
 * vector exp keeps about six f64 m4 values live, LayerNorm four.
 *
 * Softmax along [outer, axis, inner]: with inner 1 the axis is contiguous
 * and reduced with vector reductions; otherwise the vector runs across
 * inner (contiguous) and the axis is a loop, elementwise max and sums.
 *
 * Invariants:
 *   1. Sums over a row use unordered vector reductions in double
 *      (vfredusum): they differ from the scalar kernel's ordered double
 *      sums by reassociation only, far below one f32 rounding.
 *   2. Every kernel reads all of a row (or of a run of columns) before
 *      writing it, so y may equal x (in place).
 *   3. int8 Softmax is exact: round(127 exp(-k)) for k = max - x in
 *      0..255 is a table of 256 bytes (k >= 6 gives 0).
 */
#include <math.h>
#include <riscv_vector.h>

#include "kv_util.h"
#include "mplan/kernels_rvv.h"

static vfloat64m4_t kv_ldw(const float *p, size_t vl) {
  return __riscv_vfwcvt_f_f_v_f64m4(__riscv_vle32_v_f32m2(p, vl), vl);
}

static void kv_stn(float *p, vfloat64m4_t v, size_t vl) {
  __riscv_vse32_v_f32m2(p, __riscv_vfncvt_f_f_w_f32m2(v, vl), vl);
}

void mp_kv_batchnorm_f32(int64_t n, int64_t c, int64_t rest, const float *x,
                         const float *scale, const float *bias,
                         const float *mean, const float *var, double eps,
                         float *y) {
  for (int64_t b = 0; b < n; b++) {
    for (int64_t ch = 0; ch < c; ch++) {
      double a = scale[ch] / sqrt((double)var[ch] + eps);
      double off = bias[ch] - mean[ch] * a;
      const float *xs = x + (b * c + ch) * rest;
      float *ys = y + (b * c + ch) * rest;
      for (int64_t i = 0; i < rest;) {
        size_t vl = __riscv_vsetvl_e32m2((size_t)(rest - i));
        vfloat64m4_t v = __riscv_vfmul_vf_f64m4(kv_ldw(xs + i, vl), a, vl);
        kv_stn(ys + i, __riscv_vfadd_vf_f64m4(v, off, vl), vl);
        i += (int64_t)vl;
      }
    }
  }
}

/* Sum over n elements of f(x) in double: x itself, or (x - mu)^2. */
static double kv_row_sum(const float *x, int64_t n, bool sq, double mu) {
  vfloat64m1_t acc = __riscv_vfmv_s_f_f64m1(0.0, 1);
  for (int64_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e32m2((size_t)(n - i));
    vfloat64m4_t v = kv_ldw(x + i, vl);
    if (sq) {
      v = __riscv_vfsub_vf_f64m4(v, mu, vl);
      v = __riscv_vfmul_vv_f64m4(v, v, vl);
    }
    acc = __riscv_vfredusum_vs_f64m4_f64m1(v, acc, vl);
    i += (int64_t)vl;
  }
  return __riscv_vfmv_f_s_f64m1_f64(acc);
}

void mp_kv_layernorm_f32(int64_t outer, int64_t inner, const float *x,
                         const float *scale, const float *bias, double eps,
                         float *y, float *mean, float *inv_std) {
  for (int64_t r = 0; r < outer; r++) {
    const float *xs = x + r * inner;
    float *ys = y + r * inner;
    double mu = kv_row_sum(xs, inner, false, 0) / (double)inner;
    double ss = kv_row_sum(xs, inner, true, mu);
    double inv = 1 / sqrt(ss / (double)inner + eps);
    for (int64_t i = 0; i < inner;) {
      size_t vl = __riscv_vsetvl_e32m2((size_t)(inner - i));
      vfloat64m4_t v = __riscv_vfsub_vf_f64m4(kv_ldw(xs + i, vl), mu, vl);
      v = __riscv_vfmul_vf_f64m4(v, inv, vl);
      v = __riscv_vfmul_vv_f64m4(v, kv_ldw(scale + i, vl), vl);
      if (bias) v = __riscv_vfadd_vv_f64m4(v, kv_ldw(bias + i, vl), vl);
      kv_stn(ys + i, v, vl);
      i += (int64_t)vl;
    }
    if (mean) mean[r] = (float)mu;
    if (inv_std) inv_std[r] = (float)inv;
  }
}

/* One contiguous row (inner 1): max, sum of exp in double, output. */
static void kv_softmax_row(const float *x, float *y, int64_t n, bool lg) {
  vfloat32m1_t mxv = __riscv_vfmv_s_f_f32m1(-INFINITY, 1);
  for (int64_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e32m4((size_t)(n - i));
    mxv = __riscv_vfredmax_vs_f32m4_f32m1(__riscv_vle32_v_f32m4(x + i, vl), mxv,
                                          vl);
    i += (int64_t)vl;
  }
  double mx = __riscv_vfmv_f_s_f32m1_f32(mxv);
  vfloat64m1_t acc = __riscv_vfmv_s_f_f64m1(0.0, 1);
  for (int64_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e32m2((size_t)(n - i));
    vfloat64m4_t e =
        kv_exp_f64m4(__riscv_vfsub_vf_f64m4(kv_ldw(x + i, vl), mx, vl), vl);
    acc = __riscv_vfredusum_vs_f64m4_f64m1(e, acc, vl);
    i += (int64_t)vl;
  }
  double sum = __riscv_vfmv_f_s_f64m1_f64(acc), ls = log(sum);
  for (int64_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e32m2((size_t)(n - i));
    vfloat64m4_t d = __riscv_vfsub_vf_f64m4(kv_ldw(x + i, vl), mx, vl);
    d = lg ? __riscv_vfsub_vf_f64m4(d, ls, vl)
           : __riscv_vfdiv_vf_f64m4(kv_exp_f64m4(d, vl), sum, vl);
    kv_stn(y + i, d, vl);
    i += (int64_t)vl;
  }
}

/* Columns [i, i + vl) of one [axis, inner] block: the vector runs across
 * inner. LogSoftmax takes log of each column's sum through a small stack
 * array, so vl is capped at KV_COLS there. */
#define KV_COLS 64

static void kv_softmax_cols(const float *x, float *y, int64_t axis,
                            int64_t inner, size_t vl, bool lg) {
  vfloat32m2_t mx = __riscv_vfmv_v_f_f32m2(-INFINITY, vl);
  for (int64_t a = 0; a < axis; a++) {
    vfloat32m2_t v = __riscv_vle32_v_f32m2(x + a * inner, vl);
    /* x > mx ? x : mx, as the scalar loop (NaN never replaces) */
    mx = __riscv_vmerge_vvm_f32m2(mx, v, __riscv_vmfgt_vv_f32m2_b16(v, mx, vl),
                                  vl);
  }
  vfloat64m4_t mxd = __riscv_vfwcvt_f_f_v_f64m4(mx, vl);
  vfloat64m4_t sum = __riscv_vfmv_v_f_f64m4(0.0, vl);
  for (int64_t a = 0; a < axis; a++) {
    vfloat64m4_t d = __riscv_vfsub_vv_f64m4(kv_ldw(x + a * inner, vl), mxd, vl);
    sum = __riscv_vfadd_vv_f64m4(sum, kv_exp_f64m4(d, vl), vl);
  }
  vfloat64m4_t ls = sum;
  if (lg) {
    double buf[KV_COLS];
    __riscv_vse64_v_f64m4(buf, sum, vl);
    for (size_t k = 0; k < vl; k++) buf[k] = log(buf[k]);
    ls = __riscv_vle64_v_f64m4(buf, vl);
  }
  for (int64_t a = 0; a < axis; a++) {
    vfloat64m4_t d = __riscv_vfsub_vv_f64m4(kv_ldw(x + a * inner, vl), mxd, vl);
    d = lg ? __riscv_vfsub_vv_f64m4(d, ls, vl)
           : __riscv_vfdiv_vv_f64m4(kv_exp_f64m4(d, vl), sum, vl);
    kv_stn(y + a * inner, d, vl);
  }
}

void mp_kv_softmax_f32(int64_t outer, int64_t axis, int64_t inner,
                       const float *x, float *y, bool log_out) {
  for (int64_t o = 0; o < outer; o++) {
    const float *xs = x + o * axis * inner;
    float *ys = y + o * axis * inner;
    if (inner == 1) {
      kv_softmax_row(xs, ys, axis, log_out);
      continue;
    }
    for (int64_t i = 0; i < inner;) {
      size_t left = (size_t)(inner - i);
      if (log_out && left > KV_COLS) left = KV_COLS;
      size_t vl = __riscv_vsetvl_e32m2(left);
      kv_softmax_cols(xs + i, ys + i, axis, inner, vl, log_out);
      i += (int64_t)vl;
    }
  }
}

/* round(127 exp(-k)) for k = 0..5; 0 beyond. */
static const uint8_t kv_sm_i8[256] = {127, 47, 17, 6, 2, 1};

/* int8 Softmax of n elements at stride st (1: along a contiguous axis,
 * reduced; inner > 1: columns, one vector across them). */
static void kv_sm_i8_row(const int8_t *x, int8_t *y, int64_t n) {
  vint8m1_t mxv = __riscv_vmv_s_x_i8m1(-128, 1);
  for (int64_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e8m4((size_t)(n - i));
    mxv = __riscv_vredmax_vs_i8m4_i8m1(__riscv_vle8_v_i8m4(x + i, vl), mxv, vl);
    i += (int64_t)vl;
  }
  int8_t mx = __riscv_vmv_x_s_i8m1_i8(mxv);
  for (int64_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e8m4((size_t)(n - i));
    vuint8m4_t k = __riscv_vreinterpret_v_i8m4_u8m4(
        __riscv_vrsub_vx_i8m4(__riscv_vle8_v_i8m4(x + i, vl), mx, vl));
    __riscv_vse8_v_u8m4((uint8_t *)y + i,
                        __riscv_vluxei8_v_u8m4(kv_sm_i8, k, vl), vl);
    i += (int64_t)vl;
  }
}

void mp_kv_softmax_i8(int64_t outer, int64_t axis, int64_t inner,
                      const int8_t *x, int8_t *y) {
  for (int64_t o = 0; o < outer; o++) {
    const int8_t *xo = x + o * axis * inner;
    int8_t *yo = y + o * axis * inner;
    if (inner == 1) {
      kv_sm_i8_row(xo, yo, axis);
      continue;
    }
    for (int64_t i = 0; i < inner;) {
      size_t vl = __riscv_vsetvl_e8m4((size_t)(inner - i));
      vint8m4_t mx = __riscv_vmv_v_x_i8m4(-128, vl);
      for (int64_t a = 0; a < axis; a++) {
        mx = __riscv_vmax_vv_i8m4(
            mx, __riscv_vle8_v_i8m4(xo + a * inner + i, vl), vl);
      }
      for (int64_t a = 0; a < axis; a++) {
        vint8m4_t v = __riscv_vle8_v_i8m4(xo + a * inner + i, vl);
        vuint8m4_t k =
            __riscv_vreinterpret_v_i8m4_u8m4(__riscv_vsub_vv_i8m4(mx, v, vl));
        __riscv_vse8_v_u8m4((uint8_t *)yo + a * inner + i,
                            __riscv_vluxei8_v_u8m4(kv_sm_i8, k, vl), vl);
      }
      i += (int64_t)vl;
    }
  }
}
