/*
 * kv_pool.c -- RVV MaxPool (f32, int8) and AveragePool (f32), with the
 * scalar kernels' signatures (mplan/kernels_rvv.h).
 *
 * Vectorised over the output width like Conv: the interior columns, whose
 * window row lies inside the input, take one (strided) vector load per
 * tap; the border columns are computed one by one. A global pool (one
 * output, the window the whole unpadded plane) is a vector reduction of
 * the plane instead.
 *
 * LMUL: MaxPool f32 at m4 (best, the loaded taps and a mask: 8 of 32
 * registers plus masks), int8 at m4 likewise; AveragePool sums f32 taps
 * in double, f32 m2 widened to an f64 m4 sum (register pressure: m4 f32
 * would need an m8 sum, 16 registers for one value).
 *
 * Invariants:
 *   1. Taps are visited in the scalar order; MaxPool keeps the scalar
 *      rule (a NaN tap replaces the best and stays), AveragePool sums in
 *      double in the same order (exact against the scalar kernel), except
 *      the global pool, whose unordered reduction differs by
 *      reassociation in double only, and whose NaN is the canonical one.
 *   2. The divisor is the count of taps inside the input, or with
 *      count_include_pad inside [-pad, in + pad_end), as the scalar
 *      kernel counts them.
 */
#include <math.h>
#include <riscv_vector.h>

#include "mplan/kernels_rvv.h"

bool mp_kv_pool_vector(bool max, int d) {
  return d == MP_KD_F32 || (max && d == MP_KD_I8);
}

static int64_t kv_idx(const mp_kpool *p, int d, int64_t o, int64_t k) {
  return o * p->stride[d] - p->pad[d] + k * p->dil[d];
}

/* Taps k along dim d of output o inside the input, and inside the padded
 * extent [-pad, in + pad_end). */
static void kv_taps(const mp_kpool *p, int d, int64_t o, int64_t *inside,
                    int64_t *padded) {
  *inside = *padded = 0;
  for (int64_t k = 0; k < p->k[d]; k++) {
    int64_t i = kv_idx(p, d, o, k);
    if (i >= p->in[d] + p->pad_end[d]) continue;
    (*padded)++;
    *inside += i >= 0 && i < p->in[d];
  }
}

/* Interior output columns [lo, hi): every tap of the row inside. */
static void kv_cols(const mp_kpool *p, int64_t *lo, int64_t *hi) {
  int64_t s = p->stride[2], last = (p->k[2] - 1) * p->dil[2];
  int64_t l = p->pad[2] <= 0 ? 0 : (p->pad[2] + s - 1) / s;
  int64_t b = p->in[2] + p->pad[2] - last; /* need o*s < b */
  int64_t h = b <= 0 ? 0 : (b + s - 1) / s;
  *lo = l < p->out[2] ? l : p->out[2];
  *hi = h < p->out[2] ? h : p->out[2];
  if (*hi < *lo) *hi = *lo;
}

/* One output element by the scalar rule (border columns). */
static double kv_point(const mp_kpool *p, int d, const void *xc,
                       const int64_t *o, bool max) {
  double best = -INFINITY, sum = 0;
  int64_t inside = 0, padded = 0;
  for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
    int64_t i0 = kv_idx(p, 0, o[0], k0);
    if (i0 >= p->in[0] + p->pad_end[0]) continue;
    for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
      int64_t i1 = kv_idx(p, 1, o[1], k1);
      if (i1 >= p->in[1] + p->pad_end[1]) continue;
      for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
        int64_t i2 = kv_idx(p, 2, o[2], k2);
        if (i2 >= p->in[2] + p->pad_end[2]) continue;
        padded++;
        if (i0 < 0 || i1 < 0 || i2 < 0 || i0 >= p->in[0] || i1 >= p->in[1] ||
            i2 >= p->in[2]) {
          continue;
        }
        double v =
            mp_k_load(xc, d, (size_t)((i0 * p->in[1] + i1) * p->in[2] + i2));
        inside++;
        if (v > best || v != v) best = v;
        sum += v;
      }
    }
  }
  if (max) return best;
  int64_t cnt = p->count_include_pad ? padded : inside;
  return cnt ? sum / (double)cnt : 0;
}

/* Row (o0, o1), interior columns, MaxPool f32. */
static void kv_max_f32(const mp_kpool *p, const float *x, float *y, int64_t o0,
                       int64_t o1, int64_t lo, int64_t hi) {
  ptrdiff_t st = (ptrdiff_t)(p->stride[2] * (int64_t)sizeof(float));
  for (int64_t ow = lo; ow < hi;) {
    size_t vl = __riscv_vsetvl_e32m4((size_t)(hi - ow));
    vfloat32m4_t best = __riscv_vfmv_v_f_f32m4(-INFINITY, vl);
    for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
      int64_t i0 = kv_idx(p, 0, o0, k0);
      if (i0 < 0 || i0 >= p->in[0]) continue;
      for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
        int64_t i1 = kv_idx(p, 1, o1, k1);
        if (i1 < 0 || i1 >= p->in[1]) continue;
        const float *r = x + (i0 * p->in[1] + i1) * p->in[2];
        for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
          vfloat32m4_t v =
              __riscv_vlse32_v_f32m4(r + kv_idx(p, 2, ow, k2), st, vl);
          vbool8_t take =
              __riscv_vmor_mm_b8(__riscv_vmfgt_vv_f32m4_b8(v, best, vl),
                                 __riscv_vmfne_vv_f32m4_b8(v, v, vl), vl);
          best = __riscv_vmerge_vvm_f32m4(best, v, take, vl);
        }
      }
    }
    __riscv_vse32_v_f32m4(y + ow, best, vl);
    ow += (int64_t)vl;
  }
}

static void kv_max_i8(const mp_kpool *p, const int8_t *x, int8_t *y, int64_t o0,
                      int64_t o1, int64_t lo, int64_t hi) {
  ptrdiff_t st = (ptrdiff_t)p->stride[2];
  for (int64_t ow = lo; ow < hi;) {
    size_t vl = __riscv_vsetvl_e8m4((size_t)(hi - ow));
    vint8m4_t best = __riscv_vmv_v_x_i8m4(-128, vl);
    for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
      int64_t i0 = kv_idx(p, 0, o0, k0);
      if (i0 < 0 || i0 >= p->in[0]) continue;
      for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
        int64_t i1 = kv_idx(p, 1, o1, k1);
        if (i1 < 0 || i1 >= p->in[1]) continue;
        const int8_t *r = x + (i0 * p->in[1] + i1) * p->in[2];
        for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
          best = __riscv_vmax_vv_i8m4(
              best, __riscv_vlse8_v_i8m4(r + kv_idx(p, 2, ow, k2), st, vl), vl);
        }
      }
    }
    __riscv_vse8_v_i8m4(y + ow, best, vl);
    ow += (int64_t)vl;
  }
}

static void kv_avg_f32(const mp_kpool *p, const float *x, float *y, int64_t o0,
                       int64_t o1, int64_t lo, int64_t hi) {
  ptrdiff_t st = (ptrdiff_t)(p->stride[2] * (int64_t)sizeof(float));
  int64_t in0, pd0, in1, pd1;
  kv_taps(p, 0, o0, &in0, &pd0);
  kv_taps(p, 1, o1, &in1, &pd1);
  int64_t cnt =
      p->count_include_pad ? pd0 * pd1 * p->k[2] : in0 * in1 * p->k[2];
  for (int64_t ow = lo; ow < hi;) {
    size_t vl = __riscv_vsetvl_e32m2((size_t)(hi - ow));
    vfloat64m4_t sum = __riscv_vfmv_v_f_f64m4(0.0, vl);
    for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
      int64_t i0 = kv_idx(p, 0, o0, k0);
      if (i0 < 0 || i0 >= p->in[0]) continue;
      for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
        int64_t i1 = kv_idx(p, 1, o1, k1);
        if (i1 < 0 || i1 >= p->in[1]) continue;
        const float *r = x + (i0 * p->in[1] + i1) * p->in[2];
        for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
          vfloat32m2_t v =
              __riscv_vlse32_v_f32m2(r + kv_idx(p, 2, ow, k2), st, vl);
          sum = __riscv_vfadd_vv_f64m4(sum, __riscv_vfwcvt_f_f_v_f64m4(v, vl),
                                       vl);
        }
      }
    }
    vfloat64m4_t v = cnt ? __riscv_vfdiv_vf_f64m4(sum, (double)cnt, vl)
                         : __riscv_vfmv_v_f_f64m4(0.0, vl);
    __riscv_vse32_v_f32m2(y + ow, __riscv_vfncvt_f_f_w_f32m2(v, vl), vl);
    ow += (int64_t)vl;
  }
}

/* The window is the whole unpadded plane and there is one output. */
static bool kv_global(const mp_kpool *p) {
  for (int d = 0; d < 3; d++) {
    if (p->out[d] != 1 || p->pad[d] != 0 || p->pad_end[d] != 0 ||
        p->k[d] != p->in[d] || (p->k[d] > 1 && p->dil[d] != 1)) {
      return false;
    }
  }
  return true;
}

static double kv_global_f32(const float *x, int64_t n, bool max) {
  vfloat32m1_t mx = __riscv_vfmv_s_f_f32m1(-INFINITY, 1);
  vfloat64m1_t sum = __riscv_vfmv_s_f_f64m1(0.0, 1);
  size_t nans = 0;
  for (int64_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e32m4((size_t)(n - i));
    vfloat32m4_t v = __riscv_vle32_v_f32m4(x + i, vl);
    if (max) {
      mx = __riscv_vfredmax_vs_f32m4_f32m1(v, mx, vl);
      nans += __riscv_vcpop_m_b8(__riscv_vmfne_vv_f32m4_b8(v, v, vl), vl);
    } else {
      sum = __riscv_vfwredusum_vs_f32m4_f64m1(v, sum, vl);
    }
    i += (int64_t)vl;
  }
  if (max) return nans ? NAN : __riscv_vfmv_f_s_f32m1_f32(mx);
  return n ? __riscv_vfmv_f_s_f64m1_f64(sum) / (double)n : 0;
}

static void kv_pool(const mp_kpool *p, int d, const void *x, void *y,
                    bool max) {
  int64_t pin = p->in[0] * p->in[1] * p->in[2];
  int64_t pout = p->out[0] * p->out[1] * p->out[2];
  size_t es = mp_kd_size(d);
  int64_t lo, hi;
  kv_cols(p, &lo, &hi);
  bool global = d == MP_KD_F32 && kv_global(p);
  for (int64_t pl = 0; pl < p->n * p->c; pl++) {
    const char *xc = (const char *)x + (size_t)(pl * pin) * es;
    char *yc = (char *)y + (size_t)(pl * pout) * es;
    if (global) {
      mp_k_store(yc, d, 0, kv_global_f32((const float *)xc, pin, max));
      continue;
    }
    int64_t o[3];
    for (o[0] = 0; o[0] < p->out[0]; o[0]++) {
      for (o[1] = 0; o[1] < p->out[1]; o[1]++) {
        int64_t row = (o[0] * p->out[1] + o[1]) * p->out[2];
        if (d == MP_KD_I8) {
          kv_max_i8(p, (const int8_t *)xc, (int8_t *)yc + row, o[0], o[1], lo,
                    hi);
        } else if (max) {
          kv_max_f32(p, (const float *)xc, (float *)yc + row, o[0], o[1], lo,
                     hi);
        } else {
          kv_avg_f32(p, (const float *)xc, (float *)yc + row, o[0], o[1], lo,
                     hi);
        }
        for (o[2] = 0; o[2] < p->out[2]; o[2]++) {
          if (o[2] == lo) o[2] = hi;
          if (o[2] >= p->out[2]) break;
          mp_k_store(yc, d, (size_t)(row + o[2]), kv_point(p, d, xc, o, max));
        }
      }
    }
  }
}

void mp_kv_maxpool(const mp_kpool *p, int d, const void *x, void *y) {
  if (!mp_kv_pool_vector(true, d)) {
    mp_k_maxpool(p, d, x, y);
    return;
  }
  kv_pool(p, d, x, y, true);
}

void mp_kv_avgpool(const mp_kpool *p, int d, const void *x, void *y) {
  if (!mp_kv_pool_vector(false, d)) {
    mp_k_avgpool(p, d, x, y);
    return;
  }
  kv_pool(p, d, x, y, false);
}
