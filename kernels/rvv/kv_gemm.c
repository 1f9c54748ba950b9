/*
 * kv_gemm.c -- RVV Gemm/MatMul (f32 and int8), the scalar kernel's
 * signature (mplan/kernels_rvv.h).
 *
 * Vectorised over the columns j of y: for a block of up to four rows of
 * A, each vector of a row of B (unit stride, or strided by K when B is
 * transposed) is loaded once per k and multiplied into the four row
 * accumulators, which stay in registers over the whole k loop. The f32
 * epilogue alpha * AB + beta * C is a second pass over the row in double,
 * as the scalar kernel computes it (skipped when alpha is 1 and there is
 * no C, where it is the identity).
 *
 * LMUL: 4 for the accumulators (register pressure, seed 000 section 4):
 * four accumulators and the B vector are 20 of the 32 vector registers
 * (f32), 4 x 4 + 1 + 2 = 19 for int8 (B at e8 m1 widened to e16 m2); the
 * epilogue pass uses f32 m2 widened to f64 m4 (6 registers).
 *
 * Invariants:
 *   1. y[i, j] sums k in increasing order (f32 with fused multiply-adds;
 *      int8 in wrapping int32 starting from C, exact), like the scalar
 *      kernel.
 *   2. y is written only after every read of its block (y never aliases
 *      A, B or C: the loader refuses in place for products).
 */
#include <riscv_vector.h>

#include "kv_util.h"
#include "mplan/kernels_rvv.h"

#define KV_ROWS 4

static inline __attribute__((always_inline)) vfloat32m4_t
kv_bf32(const mp_kgemm *p, const float *b, int64_t k, int64_t j, size_t vl) {
  if (p->trans_b) {
    return __riscv_vlse32_v_f32m4(
        b + j * p->k + k, (ptrdiff_t)(p->k * (int64_t)sizeof(float)), vl);
  }
  return __riscv_vle32_v_f32m4(b + k * p->n + j, vl);
}

static inline __attribute__((always_inline)) float kv_af32(const mp_kgemm *p,
                                                           const float *a,
                                                           int64_t i,
                                                           int64_t k) {
  return p->trans_a ? a[k * p->m + i] : a[i * p->k + k];
}

/* Rows [i, i + nb) of y (nb 1..4, a constant after inlining), before the
 * epilogue. */
static inline __attribute__((always_inline)) void kv_rows_f32(
    const mp_kgemm *p, const float *a, const float *b, float *y, int64_t i,
    int nb) {
  for (int64_t j = 0; j < p->n;) {
    size_t vl = __riscv_vsetvl_e32m4((size_t)(p->n - j));
    vfloat32m4_t a0 = __riscv_vfmv_v_f_f32m4(0.0f, vl);
    vfloat32m4_t a1 = a0, a2 = a0, a3 = a0;
    for (int64_t k = 0; k < p->k; k++) {
      vfloat32m4_t bv = kv_bf32(p, b, k, j, vl);
      a0 = __riscv_vfmacc_vf_f32m4(a0, kv_af32(p, a, i, k), bv, vl);
      if (nb > 1)
        a1 = __riscv_vfmacc_vf_f32m4(a1, kv_af32(p, a, i + 1, k), bv, vl);
      if (nb > 2)
        a2 = __riscv_vfmacc_vf_f32m4(a2, kv_af32(p, a, i + 2, k), bv, vl);
      if (nb > 3)
        a3 = __riscv_vfmacc_vf_f32m4(a3, kv_af32(p, a, i + 3, k), bv, vl);
    }
    __riscv_vse32_v_f32m4(y + i * p->n + j, a0, vl);
    if (nb > 1) __riscv_vse32_v_f32m4(y + (i + 1) * p->n + j, a1, vl);
    if (nb > 2) __riscv_vse32_v_f32m4(y + (i + 2) * p->n + j, a2, vl);
    if (nb > 3) __riscv_vse32_v_f32m4(y + (i + 3) * p->n + j, a3, vl);
    j += (int64_t)vl;
  }
}

/* y[i, :] = alpha y[i, :] + beta C[i, :], in double, rounded once. */
static void kv_epilogue_f32(const mp_kgemm *p, const float *c, float *row,
                            int64_t i) {
  for (int64_t j = 0; j < p->n;) {
    size_t vl = __riscv_vsetvl_e32m2((size_t)(p->n - j));
    vfloat64m4_t v =
        __riscv_vfwcvt_f_f_v_f64m4(__riscv_vle32_v_f32m2(row + j, vl), vl);
    v = __riscv_vfmul_vf_f64m4(v, p->alpha, vl);
    if (c) {
      const float *cp = c + i * p->c_rs + j * p->c_cs;
      vfloat32m2_t cv =
          p->c_cs == 1 ? __riscv_vle32_v_f32m2(cp, vl)
          : p->c_cs == 0
              ? __riscv_vfmv_v_f_f32m2(*cp, vl)
              : __riscv_vlse32_v_f32m2(
                    cp, (ptrdiff_t)(p->c_cs * (int64_t)sizeof(float)), vl);
      v = __riscv_vfmacc_vf_f64m4(v, p->beta,
                                  __riscv_vfwcvt_f_f_v_f64m4(cv, vl), vl);
    }
    __riscv_vse32_v_f32m2(row + j, __riscv_vfncvt_f_f_w_f32m2(v, vl), vl);
    j += (int64_t)vl;
  }
}

void mp_kv_gemm_f32(const mp_kgemm *p, const float *a, const float *b,
                    const float *c, float *y) {
  int64_t i = 0;
  for (; i + KV_ROWS <= p->m; i += KV_ROWS) kv_rows_f32(p, a, b, y, i, 4);
  for (; i < p->m; i++) kv_rows_f32(p, a, b, y, i, 1);
  if (p->alpha == 1 && !c) return;
  for (i = 0; i < p->m; i++) kv_epilogue_f32(p, c, y + i * p->n, i);
}

/* ---- int8 ------------------------------------------------------------------
 */

static inline __attribute__((always_inline)) vint16m2_t
kv_bi8(const mp_kgemm *p, const int8_t *b, int64_t k, int64_t j, size_t vl) {
  vint8m1_t v =
      p->trans_b ? __riscv_vlse8_v_i8m1(b + j * p->k + k, (ptrdiff_t)p->k, vl)
                 : __riscv_vle8_v_i8m1(b + k * p->n + j, vl);
  return __riscv_vsext_vf2_i16m2(v, vl);
}

static inline __attribute__((always_inline)) int16_t kv_ai8(const mp_kgemm *p,
                                                            const int8_t *a,
                                                            int64_t i,
                                                            int64_t k) {
  return p->trans_a ? a[k * p->m + i] : a[i * p->k + k];
}

static inline __attribute__((always_inline)) vint32m4_t
kv_ci32(const mp_kgemm *p, const int32_t *c, int64_t i, int64_t j, size_t vl) {
  if (!c) return __riscv_vmv_v_x_i32m4(0, vl);
  const int32_t *cp = c + i * p->c_rs + j * p->c_cs;
  if (p->c_cs == 0) return __riscv_vmv_v_x_i32m4(*cp, vl);
  if (p->c_cs == 1) return __riscv_vle32_v_i32m4(cp, vl);
  return __riscv_vlse32_v_i32m4(
      cp, (ptrdiff_t)(p->c_cs * (int64_t)sizeof(int32_t)), vl);
}

static inline __attribute__((always_inline)) void kv_rows_i8(
    const mp_kgemm *p, const int8_t *a, const int8_t *b, const int32_t *c,
    int8_t *y, int64_t i, int nb) {
  for (int64_t j = 0; j < p->n;) {
    size_t vl = __riscv_vsetvl_e32m4((size_t)(p->n - j));
    vint32m4_t a0 = kv_ci32(p, c, i, j, vl), a1 = a0, a2 = a0, a3 = a0;
    if (nb > 1) a1 = kv_ci32(p, c, i + 1, j, vl);
    if (nb > 2) a2 = kv_ci32(p, c, i + 2, j, vl);
    if (nb > 3) a3 = kv_ci32(p, c, i + 3, j, vl);
    for (int64_t k = 0; k < p->k; k++) {
      vint16m2_t bv = kv_bi8(p, b, k, j, vl);
      a0 = __riscv_vwmacc_vx_i32m4(a0, kv_ai8(p, a, i, k), bv, vl);
      if (nb > 1)
        a1 = __riscv_vwmacc_vx_i32m4(a1, kv_ai8(p, a, i + 1, k), bv, vl);
      if (nb > 2)
        a2 = __riscv_vwmacc_vx_i32m4(a2, kv_ai8(p, a, i + 2, k), bv, vl);
      if (nb > 3)
        a3 = __riscv_vwmacc_vx_i32m4(a3, kv_ai8(p, a, i + 3, k), bv, vl);
    }
    int sh = p->shift;
    __riscv_vse8_v_i8m1(y + i * p->n + j, kv_requant_i8m1(a0, sh, vl), vl);
    if (nb > 1)
      __riscv_vse8_v_i8m1(y + (i + 1) * p->n + j, kv_requant_i8m1(a1, sh, vl),
                          vl);
    if (nb > 2)
      __riscv_vse8_v_i8m1(y + (i + 2) * p->n + j, kv_requant_i8m1(a2, sh, vl),
                          vl);
    if (nb > 3)
      __riscv_vse8_v_i8m1(y + (i + 3) * p->n + j, kv_requant_i8m1(a3, sh, vl),
                          vl);
    j += (int64_t)vl;
  }
}

void mp_kv_gemm_i8(const mp_kgemm *p, const int8_t *a, const int8_t *b,
                   const int32_t *c, int8_t *y) {
  int64_t i = 0;
  for (; i + KV_ROWS <= p->m; i += KV_ROWS) kv_rows_i8(p, a, b, c, y, i, 4);
  for (; i < p->m; i++) kv_rows_i8(p, a, b, c, y, i, 1);
}
