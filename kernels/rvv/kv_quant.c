/*
 * kv_quant.c -- RVV QuantizeLinear (f32 to int8/uint8) and
 * DequantizeLinear (int8/uint8 to f32; and of a matrix's columns, the
 * panels a MatMul widens its dequantized weight in, or of a run of a
 * tensor's elements, a Conv's output channels, from int8, uint8, int4 or
 * uint4), with the scalar kernels' signatures (mplan/kernels_rvv.h).
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
 *   3. The columns kernel reads 8-bit and 4-bit elements alike by an
 *      indexed load of their bytes (byte e / 2 and a shift of 4 for the
 *      odd element of a 4-bit pair, int4 sign-extended by (v ^ 8) - 8),
 *      indices relative to the row's first element so they stay small;
 *      the parameters are gathered by the same indices the scalar kernel
 *      computes. v - z is exact in int32 and in f32 (|v - z| < 2^9), and
 *      one f32 multiply rounds as the scalar double product rounded to
 *      f32 does (invariant 2): the same bits.
 *   4. The range kernel (a run of a tensor's elements: a Conv's output
 *      channels, a transposed Gemm weight's rows) cuts the run into
 *      segments whose parameters are one value (per tensor, or one
 *      channel's along an inner axis), contiguous (blocked along an inner
 *      axis: one block row's), or one per block along the last axis
 *      (index (c + j) / block, as the columns kernel computes it), and
 *      reads each segment's elements and parameters as invariant 3 does.
 *   5. MatMulNBits with a float zero point computes ((float)q - zp) *
 *      scale, two f32 operations as the scalar kernel does; with g_idx
 *      the row's values are converted first (exact) and each element's
 *      scale and zero point gathered by its block, then (v - z) * s in
 *      f32, which for an integer z is invariant 2's single rounding.
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

bool mp_kv_dequantize_cols_vector(int dx) {
  return dx == MP_KD_I8 || dx == MP_KD_U8 || dx == MP_KD_I4 || dx == MP_KD_U4;
}

/* Elements e0 + idx[i] of x (dtype dx, 8 or 4 bits) as int32 (invariant
 * 3); idx small (within a row or a parameter tensor). */
static vint32m4_t kv_elems(const void *x, int dx, size_t e0, vuint32m4_t idx,
                           size_t vl) {
  const uint8_t *b = (const uint8_t *)x;
  if (dx == MP_KD_I8 || dx == MP_KD_U8) {
    vuint8m1_t v = __riscv_vluxei32_v_u8m1(b + e0, idx, vl);
    return dx == MP_KD_I8 ? __riscv_vsext_vf4_i32m4(
                                __riscv_vreinterpret_v_u8m1_i8m1(v), vl)
                          : __riscv_vreinterpret_v_u32m4_i32m4(
                                __riscv_vzext_vf4_u32m4(v, vl));
  }
  vuint32m4_t e = __riscv_vadd_vx_u32m4(idx, (uint32_t)(e0 & 1), vl);
  vuint8m1_t by =
      __riscv_vluxei32_v_u8m1(b + e0 / 2, __riscv_vsrl_vx_u32m4(e, 1, vl), vl);
  vuint32m4_t sh =
      __riscv_vsll_vx_u32m4(__riscv_vand_vx_u32m4(e, 1, vl), 2, vl);
  vuint32m4_t nib = __riscv_vand_vx_u32m4(
      __riscv_vsrl_vv_u32m4(__riscv_vzext_vf4_u32m4(by, vl), sh, vl), 0xf, vl);
  vint32m4_t v = __riscv_vreinterpret_v_u32m4_i32m4(nib);
  if (dx == MP_KD_I4) {
    v = __riscv_vsub_vx_i32m4(__riscv_vxor_vx_i32m4(v, 8, vl), 8, vl);
  }
  return v;
}

void mp_kv_dequantize_cols(int64_t rows, int64_t cols, int64_t c0, int64_t nc,
                           int axis, int64_t block, int dx, const void *x,
                           const float *scale, int n_scale, const void *zp,
                           float *y) {
  if (!mp_kv_dequantize_cols_vector(dx)) {
    mp_k_dequantize_cols(rows, cols, c0, nc, axis, block, dx, x, scale, n_scale,
                         zp, y);
    return;
  }
  int64_t nb = block ? cols / block + (cols % block != 0) : 0;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t j = 0; j < nc;) {
      size_t vl = __riscv_vsetvl_e32m4((size_t)(nc - j));
      vuint32m4_t id = __riscv_vid_v_u32m4(vl);
      vint32m4_t v = kv_elems(x, dx, (size_t)(r * cols + c0 + j), id, vl);
      /* the parameters of invariant 2 of k_quant.c: one; the row's
       * (axis 0) or the columns' (axis 1); blocked, the rows' block's
       * row of them (axis 0) or the row's, one per block of columns */
      vfloat32m4_t s;
      vint32m4_t z;
      if (n_scale == 1 || (axis == 0 && !block)) {
        size_t q = n_scale == 1 ? 0 : (size_t)r;
        s = __riscv_vfmv_v_f_f32m4(scale[q], vl);
        z = __riscv_vmv_v_x_i32m4(zp ? (int32_t)mp_k_load_i(zp, dx, q) : 0, vl);
      } else {
        vuint32m4_t q;
        size_t q0;
        if (axis == 0 || !block) { /* contiguous along the columns */
          q0 = axis == 0 ? (size_t)((r / block) * cols + c0 + j)
                         : (size_t)(c0 + j);
          q = id;
        } else {
          q0 = (size_t)(r * nb);
          q = __riscv_vdivu_vx_u32m4(
              __riscv_vadd_vx_u32m4(id, (uint32_t)(c0 + j), vl),
              (uint32_t)block, vl);
        }
        s = __riscv_vluxei32_v_f32m4(scale + q0,
                                     __riscv_vsll_vx_u32m4(q, 2, vl), vl);
        z = zp ? kv_elems(zp, dx, q0, q, vl) : __riscv_vmv_v_x_i32m4(0, vl);
      }
      vfloat32m4_t f =
          __riscv_vfcvt_f_x_v_f32m4(__riscv_vsub_vv_i32m4(v, z, vl), vl);
      __riscv_vse32_v_f32m4(y + r * nc + j, __riscv_vfmul_vv_f32m4(f, s, vl),
                            vl);
      j += (int64_t)vl;
    }
  }
}

unsigned mp_kv_vlen(void) {
  return (unsigned)__riscv_vsetvlmax_e8m1() * 8;
}

/* y[0..len) from elements e.. of x, parameter index q0 (step 0), q0 + j
 * (step 1) or q0 + (c0 + j) / block (step 2) for element j (invariant
 * 4). */
static void kv_deq_seg(int dx, const void *x, size_t e, const float *scale,
                       const void *zp, size_t q0, int step, size_t c0,
                       size_t block, size_t len, float *y) {
  for (size_t j = 0; j < len;) {
    size_t vl = __riscv_vsetvl_e32m4(len - j);
    vuint32m4_t id = __riscv_vid_v_u32m4(vl);
    vint32m4_t v = kv_elems(x, dx, e + j, id, vl);
    vfloat32m4_t s;
    vint32m4_t z;
    if (step == 0) {
      s = __riscv_vfmv_v_f_f32m4(scale[q0], vl);
      z = __riscv_vmv_v_x_i32m4(zp ? (int32_t)mp_k_load_i(zp, dx, q0) : 0, vl);
    } else {
      size_t qb = step == 1 ? q0 + j : q0;
      vuint32m4_t q =
          step == 1 ? id
                    : __riscv_vdivu_vx_u32m4(
                          __riscv_vadd_vx_u32m4(id, (uint32_t)(c0 + j), vl),
                          (uint32_t)block, vl);
      s = __riscv_vluxei32_v_f32m4(scale + qb, __riscv_vsll_vx_u32m4(q, 2, vl),
                                   vl);
      z = zp ? kv_elems(zp, dx, qb, q, vl) : __riscv_vmv_v_x_i32m4(0, vl);
    }
    vfloat32m4_t f =
        __riscv_vfcvt_f_x_v_f32m4(__riscv_vsub_vv_i32m4(v, z, vl), vl);
    __riscv_vse32_v_f32m4(y + j, __riscv_vfmul_vv_f32m4(f, s, vl), vl);
    j += vl;
  }
}

void mp_kv_dequantize_range(int64_t ch, int64_t inner, int64_t block, int dx,
                            const void *x, const float *scale, int n_scale,
                            const void *zp, int64_t e0, int64_t n, float *y) {
  if (!mp_kv_dequantize_cols_vector(dx) || ch <= 0 || inner <= 0) {
    mp_k_dequantize_range(ch, inner, block, dx, x, scale, n_scale, zp, e0, n,
                          y);
    return;
  }
  if (n_scale == 1 && !block) {
    kv_deq_seg(dx, x, (size_t)e0, scale, zp, 0, 0, 0, 0, (size_t)n, y);
    return;
  }
  int64_t nb = block ? ch / block + (ch % block != 0) : 0;
  for (int64_t e = e0, end = e0 + n; e < end;) {
    int64_t i = e % inner, c = e / inner % ch, o = e / inner / ch, len;
    float *to = y + (e - e0);
    if (inner > 1) { /* one channel's run along the inner axis */
      len = inner - i < end - e ? inner - i : end - e;
      if (block) {
        kv_deq_seg(dx, x, (size_t)e, scale, zp,
                   (size_t)((o * nb + c / block) * inner + i), 1, 0, 0,
                   (size_t)len, to);
      } else {
        kv_deq_seg(dx, x, (size_t)e, scale, zp, (size_t)c, 0, 0, 0, (size_t)len,
                   to);
      }
    } else { /* along the channels of one outer index */
      len = ch - c < end - e ? ch - c : end - e;
      if (block) {
        kv_deq_seg(dx, x, (size_t)e, scale, zp, (size_t)(o * nb), 2, (size_t)c,
                   (size_t)block, (size_t)len, to);
      } else {
        kv_deq_seg(dx, x, (size_t)e, scale, zp, (size_t)c, 1, 0, 0, (size_t)len,
                   to);
      }
    }
    e += len;
  }
}

/* One block's run of len values of a MatMulNBits row into y (bits 2 or
 * 4: per = 8 / bits values a byte, the lowest bits first, and the last
 * byte's first len % per values; 8: len bytes). Each value q becomes (q -
 * z) * s, q - z exact in int16 and one f32 multiply (invariant 2); with a
 * float zero point (fz, z 0) ((float)q - zf) * s, each operation in f32
 * as the scalar kernel does them (invariant 5). The values of a byte go
 * out as per strided stores. */
typedef struct kv_nbz {
  int16_t z;
  bool fz;
  float zf, s;
} kv_nbz;

static vfloat32m4_t kv_nbits_val(vuint8m1_t f, const kv_nbz *p, size_t vl) {
  vint16m2_t w =
      __riscv_vreinterpret_v_u16m2_i16m2(__riscv_vzext_vf2_u16m2(f, vl));
  vfloat32m4_t v =
      __riscv_vfwcvt_f_x_v_f32m4(__riscv_vsub_vx_i16m2(w, p->z, vl), vl);
  if (p->fz) v = __riscv_vfsub_vf_f32m4(v, p->zf, vl);
  return __riscv_vfmul_vf_f32m4(v, p->s, vl);
}

static void kv_nbits_run(const uint8_t *q, int bits, int64_t len,
                         const kv_nbz *p, float *y) {
  int per = 8 / bits;
  size_t bytes = (size_t)len / (size_t)per;
  ptrdiff_t stride = per * (ptrdiff_t)sizeof(float);
  uint8_t mask = (uint8_t)((1 << bits) - 1);
  for (size_t i = 0; i < bytes;) {
    size_t vl = __riscv_vsetvl_e32m4(bytes - i);
    vuint8m1_t v = __riscv_vle8_v_u8m1(q + i, vl);
    if (per == 1) {
      __riscv_vse32_v_f32m4(y + i, kv_nbits_val(v, p, vl), vl);
    } else {
      for (int f = 0; f < per; f++) {
        vuint8m1_t x = __riscv_vand_vx_u8m1(
            __riscv_vsrl_vx_u8m1(v, (size_t)(f * bits), vl), mask, vl);
        __riscv_vsse32_v_f32m4(y + per * i + f, stride, kv_nbits_val(x, p, vl),
                               vl);
      }
    }
    i += vl;
  }
  for (int64_t e = (int64_t)bytes * per; e < len; e++) { /* the last byte */
    int x = (q[bytes] >> (bits * (e % per))) & mask;
    y[e] =
        p->fz ? ((float)x - p->zf) * p->s : (float)((double)(x - p->z) * p->s);
  }
}

/* With g_idx (invariant 5): the row's values as f32 first (z 0, s 1:
 * exact), then each element's scale and zero point gathered by its
 * block, y = (y - z) * s in f32. An integer zero point z is exact in f32,
 * so y - z is q - z exactly and the product rounds once, as the scalar
 * double product rounded to f32 does. */
static void kv_nbits_gidx(const mp_knbits *w, int64_t n, float *y) {
  int64_t k = w->k, kb = (k + w->block - 1) / w->block;
  int64_t zrow = (kb * w->bits + 7) / 8;
  kv_nbz one = {0, false, 0, 1};
  kv_nbits_run(w->b + n * kb * (w->block * w->bits / 8), w->bits, k, &one, y);
  const float *sc = w->scale + n * kb;
  const float *fz =
      w->zp_dt == MP_KD_F32 ? (const float *)w->zp + n * kb : NULL;
  const uint8_t *iz =
      w->zp_dt == MP_KD_U8 ? (const uint8_t *)w->zp + n * zrow : NULL;
  float def = (float)(1 << (w->bits - 1));
  for (size_t i = 0; i < (size_t)k;) {
    size_t vl = __riscv_vsetvl_e32m4((size_t)k - i);
    vuint32m4_t g = __riscv_vreinterpret_v_i32m4_u32m4(
        __riscv_vle32_v_i32m4(w->g_idx + i, vl));
    vuint32m4_t off = __riscv_vsll_vx_u32m4(g, 2, vl);
    vfloat32m4_t s = __riscv_vluxei32_v_f32m4(sc, off, vl);
    vfloat32m4_t z;
    if (fz) {
      z = __riscv_vluxei32_v_f32m4(fz, off, vl);
    } else if (iz) {
      vuint32m4_t bit = __riscv_vmul_vx_u32m4(g, (uint32_t)w->bits, vl);
      vuint8m1_t by =
          __riscv_vluxei32_v_u8m1(iz, __riscv_vsrl_vx_u32m4(bit, 3, vl), vl);
      vuint8m1_t sh = __riscv_vncvt_x_x_w_u8m1(
          __riscv_vncvt_x_x_w_u16m2(__riscv_vand_vx_u32m4(bit, 7, vl), vl), vl);
      vuint8m1_t zq = __riscv_vand_vx_u8m1(__riscv_vsrl_vv_u8m1(by, sh, vl),
                                           (uint8_t)((1 << w->bits) - 1), vl);
      z = __riscv_vfwcvt_f_xu_v_f32m4(__riscv_vzext_vf2_u16m2(zq, vl), vl);
    } else {
      z = __riscv_vfmv_v_f_f32m4(def, vl);
    }
    vfloat32m4_t v = __riscv_vle32_v_f32m4(y + i, vl);
    v = __riscv_vfmul_vv_f32m4(__riscv_vfsub_vv_f32m4(v, z, vl), s, vl);
    __riscv_vse32_v_f32m4(y + i, v, vl);
    i += vl;
  }
}

void mp_kv_dequantize_nbits(const mp_knbits *w, int64_t n0, int64_t nn,
                            float *y) {
  int64_t k = w->k, kb = (k + w->block - 1) / w->block;
  int64_t blob = w->block * w->bits / 8, zrow = (kb * w->bits + 7) / 8;
  for (int64_t r = 0; r < nn; r++) {
    int64_t n = n0 + r;
    if (w->g_idx) {
      kv_nbits_gidx(w, n, y + r * k);
      continue;
    }
    for (int64_t j = 0; j < kb; j++) {
      kv_nbz p = {(int16_t)(1 << (w->bits - 1)), false, 0,
                  w->scale[n * kb + j]};
      if (w->zp_dt == MP_KD_F32) {
        p.z = 0, p.fz = true, p.zf = ((const float *)w->zp)[n * kb + j];
      } else if (w->zp_dt == MP_KD_U8) {
        const uint8_t *zr = (const uint8_t *)w->zp + n * zrow;
        int64_t bit = j * w->bits;
        p.z = (int16_t)((zr[bit / 8] >> (bit % 8)) & ((1 << w->bits) - 1));
      }
      int64_t e = j * w->block, len = e + w->block < k ? w->block : k - e;
      kv_nbits_run(w->b + (n * kb + j) * blob, w->bits, len, &p, y + r * k + e);
    }
  }
}
