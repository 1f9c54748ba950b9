/*
 * kv_quant.c -- RVV QuantizeLinear (f32 to int8/uint8) and
 * DequantizeLinear (int8/uint8 to f32), with the scalar kernels'
 * signatures (mplan/kernels_rvv.h).
 *
 * LMUL: the f32/int32 side at m4, narrowed to int16 m2 and int8/uint8 m1
 * (or widened the other way): one chain keeps 4 + 2 + 1 registers live,
 * and m4 is the widest f32 group whose int8 end is still a whole register
 * (m8 f32 would need e8 m2 and 8 + 4 + 2 registers per value).
 *
 * Invariants:
 *   1. Exact against the scalar kernel: the division is f32 as there,
 *      vfcvt.x.f rounds half to even under the default rounding mode as
 *      nearbyint does, the zero point is added saturating and the result
 *      clamped to the output type; NaN gives 0 as the scalar store does.
 *   2. Dequantization subtracts the zero point in int16 (|x - zp| <= 255
 *      for 8-bit types) and multiplies in f32, which rounds like the
 *      scalar double product rounded to f32 (the difference is exact in
 *      f32). int32 input goes to the scalar kernel.
 */
#include <riscv_vector.h>

#include "mplan/kernels_rvv.h"

bool mp_kv_dequantize_vector(int dx) {
  return dx == MP_KD_I8 || dx == MP_KD_U8;
}

static void kv_quant_run(const float *x, float s, int32_t z, int dy, void *y,
                         size_t n) {
  int32_t lo = dy == MP_KD_I8 ? -128 : 0, hi = dy == MP_KD_I8 ? 127 : 255;
  for (size_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e32m4(n - i);
    vfloat32m4_t d =
        __riscv_vfdiv_vf_f32m4(__riscv_vle32_v_f32m4(x + i, vl), s, vl);
    vint32m4_t q =
        __riscv_vsadd_vx_i32m4(__riscv_vfcvt_x_f_v_i32m4(d, vl), z, vl);
    q = __riscv_vmin_vx_i32m4(__riscv_vmax_vx_i32m4(q, lo, vl), hi, vl);
    q = __riscv_vmerge_vxm_i32m4(q, 0, __riscv_vmfne_vv_f32m4_b8(d, d, vl), vl);
    vuint16m2_t h =
        __riscv_vncvt_x_x_w_u16m2(__riscv_vreinterpret_v_i32m4_u32m4(q), vl);
    __riscv_vse8_v_u8m1((uint8_t *)y + i, __riscv_vncvt_x_x_w_u8m1(h, vl), vl);
    i += vl;
  }
}

void mp_kv_quantize(int64_t outer, int64_t ch, int64_t inner, const float *x,
                    const float *scale, int n_scale, const void *zp, int dy,
                    void *y) {
  if (dy != MP_KD_I8 && dy != MP_KD_U8) {
    mp_k_quantize(outer, ch, inner, x, scale, n_scale, zp, dy, y);
    return;
  }
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t c = 0; c < ch; c++) {
      size_t q = n_scale == 1 ? 0 : (size_t)c;
      int32_t z = zp ? (int32_t)mp_k_load_i(zp, dy, q) : 0;
      size_t at = (size_t)((o * ch + c) * inner);
      kv_quant_run(x + at, scale[q], z, dy, (uint8_t *)y + at, (size_t)inner);
    }
  }
}

void mp_kv_dequantize(int64_t outer, int64_t ch, int64_t inner, int dx,
                      const void *x, const float *scale, int n_scale,
                      const void *zp, float *y) {
  if (!mp_kv_dequantize_vector(dx)) {
    mp_k_dequantize(outer, ch, inner, dx, x, scale, n_scale, zp, y);
    return;
  }
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t c = 0; c < ch; c++) {
      size_t q = n_scale == 1 ? 0 : (size_t)c;
      int16_t z = zp ? (int16_t)mp_k_load_i(zp, dx, q) : 0;
      size_t at = (size_t)((o * ch + c) * inner), n = (size_t)inner;
      for (size_t i = 0; i < n;) {
        size_t vl = __riscv_vsetvl_e32m4(n - i);
        vint16m2_t v;
        if (dx == MP_KD_I8) {
          v = __riscv_vsext_vf2_i16m2(
              __riscv_vle8_v_i8m1((const int8_t *)x + at + i, vl), vl);
        } else {
          v = __riscv_vreinterpret_v_u16m2_i16m2(__riscv_vzext_vf2_u16m2(
              __riscv_vle8_v_u8m1((const uint8_t *)x + at + i, vl), vl));
        }
        v = __riscv_vsub_vx_i16m2(v, z, vl);
        vfloat32m4_t f = __riscv_vfwcvt_f_x_v_f32m4(v, vl);
        __riscv_vse32_v_f32m4(y + at + i,
                              __riscv_vfmul_vf_f32m4(f, scale[q], vl), vl);
        i += vl;
      }
    }
  }
}

unsigned mp_kv_vlen(void) {
  return (unsigned)__riscv_vsetvlmax_e8m1() * 8;
}
