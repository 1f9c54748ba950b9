/*
 * kv_util.h -- helpers shared by the RVV kernels (private to kernels/rvv/):
 * a vector exp in double precision, and int32 -> int8 requantization.
 *
 * Invariants:
 *   1. kv_exp_f64m4 is within 2 ulp of exp in double, so that an f32
 *      result computed through it rounds like the scalar kernel's libm
 *      exp in double (differences are rare last-bit ties).
 *   2. kv_requant_i8m1 is the scalar kc_requant exactly: v / 2^shift
 *      rounded half away from zero, saturated to int8.
 */
#ifndef MPLAN_KV_UTIL_H
#define MPLAN_KV_UTIL_H

#include <riscv_vector.h>
#include <stdint.h>

/* exp(x) for a vector of doubles: n = round(x / ln 2), r = x - n ln 2
 * (two-part ln 2), a degree-13 Taylor polynomial on |r| <= 0.35 (error
 * below 1e-17), then 2^n applied in two halves so that results down to
 * the subnormals and up to the overflow threshold are exact in range.
 * NaN stays NaN, +inf and x > 709.79 give inf, x < -745.2 gives 0. */
static inline vfloat64m4_t kv_exp_f64m4(vfloat64m4_t x, size_t vl) {
  vbool16_t nan = __riscv_vmfne_vv_f64m4_b16(x, x, vl);
  vbool16_t big = __riscv_vmfgt_vf_f64m4_b16(x, 709.782712893384, vl);
  vbool16_t tiny = __riscv_vmflt_vf_f64m4_b16(x, -745.2, vl);
  vfloat64m4_t xc = __riscv_vfmin_vf_f64m4(x, 709.8, vl);
  xc = __riscv_vfmax_vf_f64m4(xc, -745.2, vl);
  vint64m4_t n = __riscv_vfcvt_x_f_v_i64m4(
      __riscv_vfmul_vf_f64m4(xc, 1.4426950408889634, vl), vl);
  vfloat64m4_t nd = __riscv_vfcvt_f_x_v_f64m4(n, vl);
  vfloat64m4_t r =
      __riscv_vfnmsac_vf_f64m4(xc, 6.93147180369123816490e-01, nd, vl);
  r = __riscv_vfnmsac_vf_f64m4(r, 1.90821492927058770002e-10, nd, vl);
  static const double c[14] = {1.0,
                               1.0,
                               0.5,
                               1.0 / 6,
                               1.0 / 24,
                               1.0 / 120,
                               1.0 / 720,
                               1.0 / 5040,
                               1.0 / 40320,
                               1.0 / 362880,
                               1.0 / 3628800,
                               1.0 / 39916800,
                               1.0 / 479001600,
                               1.0 / 6227020800.0};
  vfloat64m4_t p = __riscv_vfmv_v_f_f64m4(c[13], vl);
  for (int k = 12; k >= 0; k--) {
    p = __riscv_vfmadd_vv_f64m4(p, r, __riscv_vfmv_v_f_f64m4(c[k], vl), vl);
  }
  vint64m4_t n1 = __riscv_vsra_vx_i64m4(n, 1, vl);
  vint64m4_t n2 = __riscv_vsub_vv_i64m4(n, n1, vl);
  vfloat64m4_t s1 = __riscv_vreinterpret_v_i64m4_f64m4(
      __riscv_vsll_vx_i64m4(__riscv_vadd_vx_i64m4(n1, 1023, vl), 52, vl));
  vfloat64m4_t s2 = __riscv_vreinterpret_v_i64m4_f64m4(
      __riscv_vsll_vx_i64m4(__riscv_vadd_vx_i64m4(n2, 1023, vl), 52, vl));
  p = __riscv_vfmul_vv_f64m4(__riscv_vfmul_vv_f64m4(p, s1, vl), s2, vl);
  p = __riscv_vfmerge_vfm_f64m4(p, __builtin_inf(), big, vl);
  p = __riscv_vfmerge_vfm_f64m4(p, 0.0, tiny, vl);
  return __riscv_vmerge_vvm_f64m4(p, x, nan, vl);
}

/* Round half away from zero of v / 2^shift, saturated to int8 (v as the
 * magnitude in uint32, so that no step overflows). */
static inline vint8m1_t kv_requant_i8m1(vint32m4_t v, int shift, size_t vl) {
  vbool8_t neg = __riscv_vmslt_vx_i32m4_b8(v, 0, vl);
  vuint32m4_t mag = __riscv_vreinterpret_v_i32m4_u32m4(
      __riscv_vmerge_vvm_i32m4(v, __riscv_vneg_v_i32m4(v, vl), neg, vl));
  uint32_t half = shift > 0 ? (uint32_t)1 << (shift - 1) : 0;
  mag = __riscv_vsrl_vx_u32m4(__riscv_vadd_vx_u32m4(mag, half, vl),
                              (size_t)shift, vl);
  /* 127 for positive results, 128 for negative ones */
  vuint32m4_t cap =
      __riscv_vmerge_vxm_u32m4(__riscv_vmv_v_x_u32m4(127, vl), 128, neg, vl);
  mag = __riscv_vminu_vv_u32m4(mag, cap, vl);
  vint32m4_t r = __riscv_vreinterpret_v_u32m4_i32m4(mag);
  r = __riscv_vmerge_vvm_i32m4(r, __riscv_vneg_v_i32m4(r, vl), neg, vl);
  vint16m2_t r16 = __riscv_vncvt_x_x_w_i16m2(r, vl);
  return __riscv_vncvt_x_x_w_i8m1(r16, vl);
}

/* The same rule for one value (the border outputs of Conv). */
static inline int8_t kv_requant1(int32_t v, int shift) {
  int64_t a = v;
  if (shift > 0) {
    int64_t half = (int64_t)1 << (shift - 1);
    a = a >= 0 ? (a + half) >> shift : -((-a + half) >> shift);
  }
  return (int8_t)(a < -128 ? -128 : a > 127 ? 127 : a);
}

#endif /* MPLAN_KV_UTIL_H */
