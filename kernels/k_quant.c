/*
 * k_quant.c -- QuantizeLinear and DequantizeLinear (int8, uint8, int4,
 * uint4; int32 dequantized).
 *
 * Invariants:
 *   1. Quantization rounds half to even (ONNX) and saturates to the
 *      output type; a zero point absent is 0.
 *   2. Per-axis parameters index by the channel of the [outer, ch, inner]
 *      view; per-tensor parameters (n_scale 1) apply everywhere; blocked
 *      parameters (opset 21) are [outer, ceil(ch / block), inner], one
 *      for each run of block channels, the last run possibly shorter.
 *   3. DynamicQuantizeLinear computes its range, scale and zero point in
 *      f32 as the ONNX reference does, then quantizes as QuantizeLinear.
 *   4. A run of elements dequantized alone (mp_k_dequantize_range) gets
 *      the bits the whole tensor's dequantization gives them: each element
 *      is the same expression of its own parameters.
 */
#include <math.h>

#include "mplan/kernels.h"

/* The parameter element (o, c, i) uses (invariant 2): the only one, the
 * channel's, or its block's at (o, c / block, i). */
static size_t kq_param(int64_t outer_i, int64_t ch, int64_t inner,
                       int64_t block, int n_scale, int64_t c, int64_t i) {
  if (n_scale == 1) return 0;
  if (block == 0) return (size_t)c;
  int64_t nb = ch / block + (ch % block != 0);
  return (size_t)((outer_i * nb + c / block) * inner + i);
}

static void kq_quantize(int64_t outer, int64_t ch, int64_t inner, int64_t block,
                        const float *x, const float *scale, int n_scale,
                        const void *zp, int dy, void *y) {
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t c = 0; c < ch; c++) {
      for (int64_t i = 0; i < inner; i++) {
        size_t q = kq_param(o, ch, inner, block, n_scale, c, i);
        size_t at = (size_t)((o * ch + c) * inner + i);
        double z = zp ? mp_k_load(zp, dy, q) : 0;
        /* the division in f32, as ONNX and ONNX Runtime do: a quotient
         * that f32 rounds to .5 must round to even from there */
        float d = x[at] / scale[q];
        double v = nearbyint((double)d) + z;
        mp_k_store(y, dy, at, v);
      }
    }
  }
  mp_k_nibble_pad(y, dy, (size_t)(outer * ch * inner));
}

/* Elements [e0, e0 + n) of the [outer, ch, inner] view into y[0..n): the
 * whole tensor, or a run of it (a Conv's output channels, invariant 4). */
static void kq_dequantize(int64_t ch, int64_t inner, int64_t block, int dx,
                          const void *x, const float *scale, int n_scale,
                          const void *zp, int64_t e0, int64_t n, float *y) {
  if (n <= 0 || ch <= 0 || inner <= 0) return;
  int64_t i = e0 % inner, c = e0 / inner % ch, o = e0 / inner / ch;
  for (int64_t j = 0; j < n; j++) {
    size_t q = kq_param(o, ch, inner, block, n_scale, c, i);
    int64_t z = zp ? mp_k_load_i(zp, dx, q) : 0;
    y[j] =
        (float)((double)(mp_k_load_i(x, dx, (size_t)(e0 + j)) - z) * scale[q]);
    if (++i == inner) {
      i = 0;
      if (++c == ch) c = 0, o++;
    }
  }
}

void mp_k_dequantize_cols(int64_t rows, int64_t cols, int64_t c0, int64_t nc,
                          int axis, int64_t block, int dx, const void *x,
                          const float *scale, int n_scale, const void *zp,
                          float *y) {
  /* the [outer, ch, inner] view of invariant 2: [1, rows, cols] for axis
   * 0, [rows, cols, 1] for axis 1 */
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t j = c0; j < c0 + nc; j++) {
      size_t q = axis == 0 ? kq_param(0, rows, cols, block, n_scale, r, j)
                           : kq_param(r, cols, 1, block, n_scale, j, 0);
      int64_t z = zp ? mp_k_load_i(zp, dx, q) : 0;
      int64_t v = mp_k_load_i(x, dx, (size_t)(r * cols + j));
      y[r * nc + (j - c0)] = (float)((double)(v - z) * scale[q]);
    }
  }
}

void mp_k_quantize(int64_t outer, int64_t ch, int64_t inner, const float *x,
                   const float *scale, int n_scale, const void *zp, int dy,
                   void *y) {
  kq_quantize(outer, ch, inner, 0, x, scale, n_scale, zp, dy, y);
}

void mp_k_dequantize(int64_t outer, int64_t ch, int64_t inner, int dx,
                     const void *x, const float *scale, int n_scale,
                     const void *zp, float *y) {
  kq_dequantize(ch, inner, 0, dx, x, scale, n_scale, zp, 0, outer * ch * inner,
                y);
}

void mp_k_quantize_blocked(int64_t outer, int64_t ch, int64_t inner,
                           int64_t block, const float *x, const float *scale,
                           const void *zp, int dy, void *y) {
  kq_quantize(outer, ch, inner, block, x, scale, 0, zp, dy, y);
}

void mp_k_dequantize_blocked(int64_t outer, int64_t ch, int64_t inner,
                             int64_t block, int dx, const void *x,
                             const float *scale, const void *zp, float *y) {
  kq_dequantize(ch, inner, block, dx, x, scale, 0, zp, 0, outer * ch * inner,
                y);
}

void mp_k_dequantize_range(int64_t ch, int64_t inner, int64_t block, int dx,
                           const void *x, const float *scale, int n_scale,
                           const void *zp, int64_t e0, int64_t n, float *y) {
  kq_dequantize(ch, inner, block, dx, x, scale, n_scale, zp, e0, n, y);
}

void mp_k_dynamic_quantize(size_t n, const float *x, uint8_t *y, float *scale,
                           uint8_t *zp) {
  float lo = 0.0f, hi = 0.0f; /* the range always holds 0 */
  for (size_t i = 0; i < n; i++) {
    if (x[i] < lo) lo = x[i];
    if (x[i] > hi) hi = x[i];
  }
  float s = (hi - lo) / 255.0f;
  if (!(s > 0.0f) || !isfinite(s)) {
    /* every x is 0 (or the range is not finite: nothing to scale by) */
    *scale = 0.0f;
    *zp = 0;
    for (size_t i = 0; i < n; i++) y[i] = 0;
    return;
  }
  float z = nearbyintf(-lo / s);
  uint8_t q = (uint8_t)(z < 0.0f ? 0.0f : z > 255.0f ? 255.0f : z);
  *scale = s;
  *zp = q;
  mp_k_quantize(1, 1, (int64_t)n, x, scale, 1, zp, MP_KD_U8, y);
}

void mp_k_requantize(int64_t n, const int32_t *acc, int32_t bias, float mult,
                     int32_t zp, int dy, void *y) {
  for (int64_t i = 0; i < n; i++) {
    /* the sum wraps like the int32 it is; then one f32 product */
    int32_t a = (int32_t)((uint32_t)acc[i] + (uint32_t)bias);
    float v = (float)a * mult;
    mp_k_store(y, dy, (size_t)i, (double)nearbyintf(v) + zp);
  }
}

/* The bits-wide value i of a packed row (bits 2 or 4: the lowest bits
 * first). A row's blocks follow each other, each block * bits / 8 bytes,
 * so element i of a row is at bit i * bits whatever its block. */
static int kq_nbits_at(const uint8_t *row, int bits, int64_t i) {
  if (bits == 8) return row[i];
  int64_t at = i * bits;
  return (row[at / 8] >> (at % 8)) & ((1 << bits) - 1);
}

void mp_k_dequantize_nbits(const mp_knbits *w, int64_t n0, int64_t nn,
                           float *y) {
  int64_t k = w->k, kb = (k + w->block - 1) / w->block;
  int64_t zrow = (kb * w->bits + 7) / 8, blob = w->block * w->bits / 8;
  const float *fz = w->zp_dt == MP_KD_F32 ? (const float *)w->zp : NULL;
  const uint8_t *iz = w->zp_dt == MP_KD_U8 ? (const uint8_t *)w->zp : NULL;
  for (int64_t r = 0; r < nn; r++) {
    int64_t n = n0 + r;
    const uint8_t *row = w->b + n * kb * blob;
    for (int64_t i = 0; i < k; i++) {
      int64_t j = w->g_idx ? w->g_idx[i] : i / w->block;
      int q = kq_nbits_at(row, w->bits, i);
      float s = w->scale[n * kb + j];
      if (fz) {
        y[r * k + i] = ((float)q - fz[n * kb + j]) * s;
      } else {
        int z =
            iz ? kq_nbits_at(iz + n * zrow, w->bits, j) : 1 << (w->bits - 1);
        y[r * k + i] = (float)((double)(q - z) * s);
      }
    }
  }
}
