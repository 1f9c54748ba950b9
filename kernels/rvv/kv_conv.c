/*
 * kv_conv.c -- RVV Conv (f32 and int8): general, grouped, depthwise and
 * 1x1, with the scalar kernel's signature (mplan/kernels_rvv.h).
 *
 * Vectorised over the output width, im2col-free: for one output row and
 * a block of up to four output channels of one group, each vector of
 * input row elements (unit stride, or strided for stride > 1) is loaded
 * once per tap and multiplied into the accumulators of all channels of
 * the block, which stay in registers over every tap. In the chunks of a
 * row that padding reaches, a tap whose input column falls outside the
 * row is masked off for those lanes. A 1x1 convolution with unit strides and no
 * padding is run as one row of the whole plane, so that short rows do not waste
 * lanes.
 *
 * LMUL: 4 for the f32 and int32 accumulators (register pressure, seed 000
 * section 4): a block keeps 4 accumulators and one input vector live,
 * 5 x 4 = 20 of the 32 vector registers for f32, and 4 x 4 + 1 (int8 row,
 * m1) + 2 (widened to int16, m2) = 19 for int8; LMUL 8 would need 40 and
 * spill every tap, LMUL 2 would double the loop overhead per element.
 *
 * Invariants:
 *   1. Each output element is bias + the taps in the scalar order
 *      (input channel, kd, kh, kw); f32 with fused multiply-adds (the
 *      scalar kernel, built with -ffp-contract=off, rounds each product
 *      and each sum), int8 in wrapping int32, which is exact.
 *   2. In place (depthwise, y in x's bytes) each output channel is
 *      computed into scratch and copied down afterwards, in increasing
 *      channel order, as the scalar kernel does; otherwise y is written
 *      directly and never read.
 *   3. ConvTranspose (mp_kv_conv_transpose_f32) scatters instead: for one
 *      output channel, input channel, input row and the taps (kd, kh)
 *      that land inside the output, each tap kw adds the input row times
 *      its weight into the output columns o = i * s - p + kw * d it
 *      reaches (a strided load and store, stride s). An output element
 *      gets its terms in the scalar kernel's order, input channel, then
 *      input position ascending: within one input row its terms come from
 *      different columns i with different taps, so the taps run from the
 *      last to the first (i ascending). Fused multiply-adds, as the Conv.
 *      The output channels are independent: computing one channel alone
 *      (m = 1, its weights gathered) gives the same bits.
 */
#include <riscv_vector.h>
#include <string.h>

#include "kv_util.h"
#include "mplan/kernels_rvv.h"

#define KV_OCB 4
#define KV_KW 16

typedef struct kv_cg {
  const mp_kconv *p;
  int64_t cg, mg, pin, pout, ks;
  int64_t lo, hi; /* interior output columns */
  /* per tap kw < KV_KW: the output columns it reads inside the row */
  int64_t klo[KV_KW], khi[KV_KW];
} kv_cg;

/* Output positions o in [0, out) whose input o*s - p + off is in [0, in)
 * (the scalar kernel's kc_range). */
static void kv_range(int64_t out, int64_t in, int64_t s, int64_t p, int64_t off,
                     int64_t *lo, int64_t *hi) {
  int64_t a = p - off, b = in + p - off;
  int64_t l = a <= 0 ? 0 : (a + s - 1) / s;
  int64_t h = b <= 0 ? 0 : (b + s - 1) / s;
  *lo = l < out ? l : out;
  *hi = h < out ? h : out;
  if (*hi < *lo) *hi = *lo;
}

static void kv_geom(const mp_kconv *p, kv_cg *g) {
  g->p = p;
  g->cg = p->c / p->group;
  g->mg = p->m / p->group;
  g->pin = p->in[0] * p->in[1] * p->in[2];
  g->pout = p->out[0] * p->out[1] * p->out[2];
  g->ks = p->k[0] * p->k[1] * p->k[2];
  int64_t l0, h0, l1, h1;
  kv_range(p->out[2], p->in[2], p->stride[2], p->pad[2], 0, &l0, &h0);
  kv_range(p->out[2], p->in[2], p->stride[2], p->pad[2],
           (p->k[2] - 1) * p->dil[2], &l1, &h1);
  for (int64_t kw = 0; kw < p->k[2] && kw < KV_KW; kw++) {
    kv_range(p->out[2], p->in[2], p->stride[2], p->pad[2], kw * p->dil[2],
             &g->klo[kw], &g->khi[kw]);
  }
  g->lo = l0 > l1 ? l0 : l1;
  g->hi = h0 < h1 ? h0 : h1;
  if (g->hi < g->lo) g->hi = g->lo;
}

/* 1x1, unit strides, no padding: the plane as one row. */
static bool kv_pointwise(const mp_kconv *p, mp_kconv *q) {
  for (int i = 0; i < 3; i++) {
    if (p->k[i] != 1 || p->stride[i] != 1 || p->pad[i] != 0 ||
        p->in[i] != p->out[i]) {
      return false;
    }
  }
  *q = *p;
  q->in[0] = q->in[1] = q->out[0] = q->out[1] = 1;
  q->in[2] = q->out[2] = p->in[0] * p->in[1] * p->in[2];
  return true;
}

/* Input row index of output row o for tap k along dim d, or -1. */
static int64_t kv_src(const mp_kconv *p, int d, int64_t o, int64_t k) {
  int64_t i = o * p->stride[d] - p->pad[d] + k * p->dil[d];
  return i >= 0 && i < p->in[d] ? i : -1;
}

/* Columns [a, b) of the chunk [ow, ow + vl) that tap kw reads inside the
 * input row; false when that is the whole chunk (no mask needed). */
static inline __attribute__((always_inline)) bool kv_tap_cols(
    const kv_cg *g, int64_t ow, size_t vl, int64_t kw, size_t *a, size_t *b) {
  const mp_kconv *p = g->p;
  int64_t lo, hi;
  if (kw < KV_KW) {
    lo = g->klo[kw];
    hi = g->khi[kw];
  } else {
    kv_range(p->out[2], p->in[2], p->stride[2], p->pad[2], kw * p->dil[2], &lo,
             &hi);
  }
  int64_t end = ow + (int64_t)vl;
  if (lo <= ow && hi >= end) return false;
  lo = lo < ow ? ow : lo > end ? end : lo;
  hi = hi < lo ? lo : hi > end ? end : hi;
  *a = (size_t)(lo - ow);
  *b = (size_t)(hi - ow);
  return true;
}

/* Lanes [a, b) of vl. */
static inline __attribute__((always_inline)) vbool8_t kv_lanes(size_t a,
                                                               size_t b,
                                                               size_t vl) {
  vuint32m4_t id = __riscv_vid_v_u32m4(vl);
  return __riscv_vmand_mm_b8(__riscv_vmsgeu_vx_u32m4_b8(id, (uint32_t)a, vl),
                             __riscv_vmsltu_vx_u32m4_b8(id, (uint32_t)b, vl),
                             vl);
}

/* The address of lane 0 of a row load: where padding puts it before the
 * row it is formed as an integer, since only the lanes of the mask, which
 * are inside the row, are accessed. */
#define KV_LANE0(T, row, off)               \
  ((const T *)(uintptr_t)((intptr_t)(row) + \
                          (intptr_t)(off) * (intptr_t)sizeof(T)))

/* ---- f32 ------------------------------------------------------------------
 */

/* One output row for nb (1..4, a constant after inlining) output
 * channels: w points at the first channel's weights, the others follow at
 * cg * ks. Chunks that padding reaches mask the taps that fall outside
 * the input row: masked loads touch no other element and masked
 * multiply-adds leave those accumulators as they are, as the scalar
 * kernel skips the tap. */
static inline __attribute__((always_inline)) void kv_row_f32(
    const kv_cg *g, const float *xb, const float *w, const float *b,
    float *const *yr, int64_t od, int64_t oh, int nb) {
  const mp_kconv *p = g->p;
  int64_t wst = g->cg * g->ks, s2 = p->stride[2];
  ptrdiff_t sb = (ptrdiff_t)(s2 * (int64_t)sizeof(float));
  for (int64_t ow = 0; ow < p->out[2];) {
    size_t vl = __riscv_vsetvl_e32m4((size_t)(p->out[2] - ow));
    bool inside = ow >= g->lo && ow + (int64_t)vl <= g->hi;
    vfloat32m4_t a0 = __riscv_vfmv_v_f_f32m4(b ? b[0] : 0.0f, vl);
    vfloat32m4_t a1 = a0, a2 = a0, a3 = a0;
    if (nb > 1) a1 = __riscv_vfmv_v_f_f32m4(b ? b[1] : 0.0f, vl);
    if (nb > 2) a2 = __riscv_vfmv_v_f_f32m4(b ? b[2] : 0.0f, vl);
    if (nb > 3) a3 = __riscv_vfmv_v_f_f32m4(b ? b[3] : 0.0f, vl);
    for (int64_t ic = 0; ic < g->cg; ic++) {
      for (int64_t kd = 0; kd < p->k[0]; kd++) {
        int64_t id = kv_src(p, 0, od, kd);
        if (id < 0) continue;
        for (int64_t kh = 0; kh < p->k[1]; kh++) {
          int64_t ih = kv_src(p, 1, oh, kh);
          if (ih < 0) continue;
          const float *xr = xb + ic * g->pin + (id * p->in[1] + ih) * p->in[2];
          int64_t x0 = ow * s2 - p->pad[2];
          const float *wr = w + ic * g->ks + (kd * p->k[1] + kh) * p->k[2];
          for (int64_t kw = 0; kw < p->k[2]; kw++) {
            int64_t off = x0 + kw * p->dil[2];
            size_t la = 0, lb = 0;
            if (inside || !kv_tap_cols(g, ow, vl, kw, &la, &lb)) {
              const float *xp = xr + off;
              vfloat32m4_t xv = s2 == 1 ? __riscv_vle32_v_f32m4(xp, vl)
                                        : __riscv_vlse32_v_f32m4(xp, sb, vl);
              a0 = __riscv_vfmacc_vf_f32m4(a0, wr[kw], xv, vl);
              if (nb > 1)
                a1 = __riscv_vfmacc_vf_f32m4(a1, wr[wst + kw], xv, vl);
              if (nb > 2)
                a2 = __riscv_vfmacc_vf_f32m4(a2, wr[2 * wst + kw], xv, vl);
              if (nb > 3)
                a3 = __riscv_vfmacc_vf_f32m4(a3, wr[3 * wst + kw], xv, vl);
              continue;
            }
            if (la == lb) continue;
            vbool8_t m = kv_lanes(la, lb, vl);
            const float *xp = KV_LANE0(float, xr, off);
            vfloat32m4_t z = __riscv_vfmv_v_f_f32m4(0.0f, vl);
            vfloat32m4_t xv = s2 == 1
                                  ? __riscv_vle32_v_f32m4_mu(m, z, xp, vl)
                                  : __riscv_vlse32_v_f32m4_mu(m, z, xp, sb, vl);
            a0 = __riscv_vfmacc_vf_f32m4_mu(m, a0, wr[kw], xv, vl);
            if (nb > 1)
              a1 = __riscv_vfmacc_vf_f32m4_mu(m, a1, wr[wst + kw], xv, vl);
            if (nb > 2)
              a2 = __riscv_vfmacc_vf_f32m4_mu(m, a2, wr[2 * wst + kw], xv, vl);
            if (nb > 3)
              a3 = __riscv_vfmacc_vf_f32m4_mu(m, a3, wr[3 * wst + kw], xv, vl);
          }
        }
      }
    }
    __riscv_vse32_v_f32m4(yr[0] + ow, a0, vl);
    if (nb > 1) __riscv_vse32_v_f32m4(yr[1] + ow, a1, vl);
    if (nb > 2) __riscv_vse32_v_f32m4(yr[2] + ow, a2, vl);
    if (nb > 3) __riscv_vse32_v_f32m4(yr[3] + ow, a3, vl);
    ow += (int64_t)vl;
  }
}

static void kv_row_f32_1(const kv_cg *g, const void *xb, const void *w,
                         const void *b, void *const *yr, int64_t od,
                         int64_t oh) {
  kv_row_f32(g, xb, w, b, (float *const *)yr, od, oh, 1);
}

static void kv_row_f32_4(const kv_cg *g, const void *xb, const void *w,
                         const void *b, void *const *yr, int64_t od,
                         int64_t oh) {
  kv_row_f32(g, xb, w, b, (float *const *)yr, od, oh, 4);
}

/* ---- int8 ------------------------------------------------------------------
 */

static inline __attribute__((always_inline)) vint16m2_t
kv_ld_i8(vbool8_t m, bool masked, const int8_t *xp, int64_t s, size_t vl) {
  vint8m1_t v;
  if (masked) {
    vint8m1_t z = __riscv_vmv_v_x_i8m1(0, vl);
    v = s == 1 ? __riscv_vle8_v_i8m1_mu(m, z, xp, vl)
               : __riscv_vlse8_v_i8m1_mu(m, z, xp, (ptrdiff_t)s, vl);
  } else {
    v = s == 1 ? __riscv_vle8_v_i8m1(xp, vl)
               : __riscv_vlse8_v_i8m1(xp, (ptrdiff_t)s, vl);
  }
  return __riscv_vsext_vf2_i16m2(v, vl);
}

/* The int8 row: as kv_row_f32, int16 products accumulated into int32
 * (wrapping, exact), requantized at the end. */
static inline __attribute__((always_inline)) void kv_row_i8(
    const kv_cg *g, const int8_t *xb, const int8_t *w, const int32_t *b,
    int8_t *const *yr, int64_t od, int64_t oh, int nb) {
  const mp_kconv *p = g->p;
  int64_t wst = g->cg * g->ks, s2 = p->stride[2];
  for (int64_t ow = 0; ow < p->out[2];) {
    size_t vl = __riscv_vsetvl_e32m4((size_t)(p->out[2] - ow));
    bool inside = ow >= g->lo && ow + (int64_t)vl <= g->hi;
    vint32m4_t a0 = __riscv_vmv_v_x_i32m4(b ? b[0] : 0, vl);
    vint32m4_t a1 = a0, a2 = a0, a3 = a0;
    if (nb > 1) a1 = __riscv_vmv_v_x_i32m4(b ? b[1] : 0, vl);
    if (nb > 2) a2 = __riscv_vmv_v_x_i32m4(b ? b[2] : 0, vl);
    if (nb > 3) a3 = __riscv_vmv_v_x_i32m4(b ? b[3] : 0, vl);
    for (int64_t ic = 0; ic < g->cg; ic++) {
      for (int64_t kd = 0; kd < p->k[0]; kd++) {
        int64_t id = kv_src(p, 0, od, kd);
        if (id < 0) continue;
        for (int64_t kh = 0; kh < p->k[1]; kh++) {
          int64_t ih = kv_src(p, 1, oh, kh);
          if (ih < 0) continue;
          const int8_t *xr = xb + ic * g->pin + (id * p->in[1] + ih) * p->in[2];
          int64_t x0 = ow * s2 - p->pad[2];
          const int8_t *wr = w + ic * g->ks + (kd * p->k[1] + kh) * p->k[2];
          for (int64_t kw = 0; kw < p->k[2]; kw++) {
            int64_t off = x0 + kw * p->dil[2];
            size_t la = 0, lb = 0;
            bool masked = !inside && kv_tap_cols(g, ow, vl, kw, &la, &lb);
            if (masked && la == lb) continue;
            vbool8_t m = kv_lanes(la, masked ? lb : vl, vl);
            vint16m2_t xv =
                kv_ld_i8(m, masked, KV_LANE0(int8_t, xr, off), s2, vl);
            if (!masked) {
              a0 = __riscv_vwmacc_vx_i32m4(a0, wr[kw], xv, vl);
              if (nb > 1)
                a1 = __riscv_vwmacc_vx_i32m4(a1, wr[wst + kw], xv, vl);
              if (nb > 2)
                a2 = __riscv_vwmacc_vx_i32m4(a2, wr[2 * wst + kw], xv, vl);
              if (nb > 3)
                a3 = __riscv_vwmacc_vx_i32m4(a3, wr[3 * wst + kw], xv, vl);
              continue;
            }
            a0 = __riscv_vwmacc_vx_i32m4_mu(m, a0, wr[kw], xv, vl);
            if (nb > 1)
              a1 = __riscv_vwmacc_vx_i32m4_mu(m, a1, wr[wst + kw], xv, vl);
            if (nb > 2)
              a2 = __riscv_vwmacc_vx_i32m4_mu(m, a2, wr[2 * wst + kw], xv, vl);
            if (nb > 3)
              a3 = __riscv_vwmacc_vx_i32m4_mu(m, a3, wr[3 * wst + kw], xv, vl);
          }
        }
      }
    }
    int sh = p->shift;
    __riscv_vse8_v_i8m1(yr[0] + ow, kv_requant_i8m1(a0, sh, vl), vl);
    if (nb > 1)
      __riscv_vse8_v_i8m1(yr[1] + ow, kv_requant_i8m1(a1, sh, vl), vl);
    if (nb > 2)
      __riscv_vse8_v_i8m1(yr[2] + ow, kv_requant_i8m1(a2, sh, vl), vl);
    if (nb > 3)
      __riscv_vse8_v_i8m1(yr[3] + ow, kv_requant_i8m1(a3, sh, vl), vl);
    ow += (int64_t)vl;
  }
}

static void kv_row_i8_1(const kv_cg *g, const void *xb, const void *w,
                        const void *b, void *const *yr, int64_t od,
                        int64_t oh) {
  kv_row_i8(g, xb, w, b, (int8_t *const *)yr, od, oh, 1);
}

static void kv_row_i8_4(const kv_cg *g, const void *xb, const void *w,
                        const void *b, void *const *yr, int64_t od,
                        int64_t oh) {
  kv_row_i8(g, xb, w, b, (int8_t *const *)yr, od, oh, 4);
}

/* ---- the driver ------------------------------------------------------------
 */

typedef void (*kv_row_fn)(const kv_cg *g, const void *xb, const void *w,
                          const void *b, void *const *yr, int64_t od,
                          int64_t oh);

typedef struct kv_conv_ops {
  size_t xes, yes; /* bytes of an x (and w) element and of a y element */
  kv_row_fn row1, row4;
} kv_conv_ops;

static bool kv_overlap(const void *a, size_t na, const void *b, size_t nb) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x < y + nb && y < x + na;
}

/* Output channels [oc, oc + nb) of batch bi, rows written through yc
 * (nb plane pointers). */
static void kv_block(const kv_cg *g, const kv_conv_ops *o, const char *xb,
                     const char *w, const char *b, char *const *yc, int nb) {
  const mp_kconv *p = g->p;
  for (int64_t od = 0; od < p->out[0]; od++) {
    for (int64_t oh = 0; oh < p->out[1]; oh++) {
      void *yr[KV_OCB];
      int64_t at = (od * p->out[1] + oh) * p->out[2] * (int64_t)o->yes;
      for (int j = 0; j < nb; j++) yr[j] = yc[j] + at;
      if (nb == KV_OCB) {
        o->row4(g, xb, w, b, yr, od, oh);
      } else {
        o->row1(g, xb, w, b, yr, od, oh);
      }
    }
  }
}

static void kv_conv(const mp_kconv *p0, const kv_conv_ops *o, const void *x,
                    const void *w, const void *b, void *y, void *scratch) {
  mp_kconv flat;
  const mp_kconv *p = kv_pointwise(p0, &flat) ? &flat : p0;
  kv_cg g;
  kv_geom(p, &g);
  size_t xbytes = (size_t)(p->n * p->c * g.pin) * o->xes;
  size_t ybytes = (size_t)(p->n * p->m * g.pout) * o->yes;
  bool inplace = kv_overlap(x, xbytes, y, ybytes);
  const char *xc = x, *wc = w, *bc = b;
  char *yc = y;
  for (int64_t bi = 0; bi < p->n; bi++) {
    for (int64_t oc = 0; oc < p->m;) {
      int64_t grp = oc / g.mg, left = (grp + 1) * g.mg - oc;
      int nb = inplace ? 1 : left >= KV_OCB ? KV_OCB : 1;
      const char *xb = xc + (size_t)((bi * p->c + grp * g.cg) * g.pin) * o->xes;
      const char *wb = wc + (size_t)(oc * g.cg * g.ks) * o->xes;
      const char *bb = bc ? bc + 4 * oc : NULL;
      char *planes[KV_OCB];
      for (int j = 0; j < nb; j++) {
        planes[j] = yc + (size_t)((bi * p->m + oc + j) * g.pout) * o->yes;
      }
      if (inplace) planes[0] = scratch;
      kv_block(&g, o, xb, wb, bb, planes, nb);
      if (inplace) {
        mp_kv_memmove(yc + (size_t)((bi * p->m + oc) * g.pout) * o->yes,
                      scratch, (size_t)g.pout * o->yes);
      }
      oc += nb;
    }
  }
}

static const kv_conv_ops kv_f32_ops = {4, 4, kv_row_f32_1, kv_row_f32_4};
static const kv_conv_ops kv_i8_ops = {1, 1, kv_row_i8_1, kv_row_i8_4};

void mp_kv_conv_f32(const mp_kconv *p, const float *x, const float *w,
                    const float *b, float *y, void *scratch) {
  kv_conv(p, &kv_f32_ops, x, w, b, y, scratch);
}

void mp_kv_conv_i8(const mp_kconv *p, const int8_t *x, const int8_t *w,
                   const int32_t *b, int8_t *y, void *scratch) {
  kv_conv(p, &kv_i8_ops, x, w, b, y, scratch);
}

void mp_kv_conv_transpose_f32(const mp_kconv *p, const float *x, const float *w,
                              const float *b, float *y) {
  int64_t cg = p->c / p->group, mg = p->m / p->group;
  int64_t pin = p->in[0] * p->in[1] * p->in[2];
  int64_t pout = p->out[0] * p->out[1] * p->out[2];
  int64_t ks = p->k[0] * p->k[1] * p->k[2], s2 = p->stride[2];
  ptrdiff_t sb = (ptrdiff_t)(s2 * (int64_t)sizeof(float));
  /* per tap kw < KV_KW: the input columns i whose output column
   * i * s2 + kw * d - p is in the row */
  int64_t clo[KV_KW], chi[KV_KW];
  for (int64_t k2 = 0; k2 < p->k[2] && k2 < KV_KW; k2++) {
    kv_range(p->in[2], p->out[2], s2, 0, k2 * p->dil[2] - p->pad[2], &clo[k2],
             &chi[k2]);
  }
  for (int64_t bi = 0; bi < p->n; bi++) {
    for (int64_t oc = 0; oc < p->m; oc++) {
      float *out = y + (bi * p->m + oc) * pout;
      float b0 = b ? b[oc] : 0.0f;
      for (int64_t o = 0; o < pout;) {
        size_t vl = __riscv_vsetvl_e32m8((size_t)(pout - o));
        __riscv_vse32_v_f32m8(out + o, __riscv_vfmv_v_f_f32m8(b0, vl), vl);
        o += (int64_t)vl;
      }
      int64_t g = oc / mg, ocg = oc % mg;
      for (int64_t icg = 0; icg < cg; icg++) {
        int64_t ic = g * cg + icg;
        const float *xin = x + (bi * p->c + ic) * pin;
        const float *wk = w + (ic * mg + ocg) * ks;
        for (int64_t i0 = 0; i0 < p->in[0]; i0++) {
          for (int64_t i1 = 0; i1 < p->in[1]; i1++) {
            const float *xr = xin + (i0 * p->in[1] + i1) * p->in[2];
            for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
              int64_t o0 = i0 * p->stride[0] - p->pad[0] + k0 * p->dil[0];
              if (o0 < 0 || o0 >= p->out[0]) continue;
              for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
                int64_t o1 = i1 * p->stride[1] - p->pad[1] + k1 * p->dil[1];
                if (o1 < 0 || o1 >= p->out[1]) continue;
                float *orow = out + (o0 * p->out[1] + o1) * p->out[2];
                const float *wr = wk + (k0 * p->k[1] + k1) * p->k[2];
                for (int64_t k2 = p->k[2] - 1; k2 >= 0; k2--) {
                  int64_t off = k2 * p->dil[2] - p->pad[2];
                  int64_t lo = k2 < KV_KW ? clo[k2] : 0;
                  int64_t hi = k2 < KV_KW ? chi[k2] : 0;
                  if (k2 >= KV_KW) {
                    kv_range(p->in[2], p->out[2], s2, 0, off, &lo, &hi);
                  }
                  for (int64_t i2 = lo; i2 < hi;) {
                    size_t vl = __riscv_vsetvl_e32m8((size_t)(hi - i2));
                    vfloat32m8_t xv = __riscv_vle32_v_f32m8(xr + i2, vl);
                    float *op = orow + i2 * s2 + off;
                    vfloat32m8_t ov = s2 == 1
                                          ? __riscv_vle32_v_f32m8(op, vl)
                                          : __riscv_vlse32_v_f32m8(op, sb, vl);
                    ov = __riscv_vfmacc_vf_f32m8(ov, wr[k2], xv, vl);
                    if (s2 == 1) {
                      __riscv_vse32_v_f32m8(op, ov, vl);
                    } else {
                      __riscv_vsse32_v_f32m8(op, sb, ov, vl);
                    }
                    i2 += (int64_t)vl;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}
