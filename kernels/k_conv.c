/*
 * k_conv.c -- Conv (f32, int8), ConvTranspose (f32), Gemm (f32, int8).
 *
 * Conv is computed one output channel at a time into a scratch plane
 * (weight-stationary: for each weight tap the valid output range of a row
 * is computed once, so the inner loop has no bounds test), then copied
 * out. That order is what makes in-place depthwise convolution safe.
 *
 * Invariants:
 *   1. Each output element is bias + the sum over (input channel, kd, kh,
 *      kw) in increasing order; f32 sums in f32, int8 in wrapping int32.
 *   2. Only output channel (b, oc) is written after reading input channels
 *      of group g(oc); for depthwise, input channel (b, oc) only.
 */
#include <string.h>

#include "mplan/kernels.h"

/* Output positions o in [0, out) whose input o*s - p + off is in [0, in). */
static void kc_range(int64_t out, int64_t in, int64_t s, int64_t p, int64_t off,
                     int64_t *lo, int64_t *hi) {
  int64_t a = p - off;      /* need o*s >= a */
  int64_t b = in + p - off; /* need o*s < b */
  int64_t l = a <= 0 ? 0 : (a + s - 1) / s;
  int64_t h = b <= 0 ? 0 : (b + s - 1) / s;
  *lo = l < out ? l : out;
  *hi = h < out ? h : out;
  if (*hi < *lo) *hi = *lo;
}

static int64_t kc_plane(const int64_t *d) {
  return d[0] * d[1] * d[2];
}

/* acc[o] += w * x[...] over every output position valid for tap (kd,kh,kw). */
#define KC_TAP(ACC_T, W_EXPR, X_EXPR)                                      \
  do {                                                                     \
    int64_t d0, d1, h0, h1, w0, w1;                                        \
    kc_range(p->out[0], p->in[0], p->stride[0], p->pad[0], kd * p->dil[0], \
             &d0, &d1);                                                    \
    kc_range(p->out[1], p->in[1], p->stride[1], p->pad[1], kh * p->dil[1], \
             &h0, &h1);                                                    \
    kc_range(p->out[2], p->in[2], p->stride[2], p->pad[2], kw * p->dil[2], \
             &w0, &w1);                                                    \
    for (int64_t od = d0; od < d1; od++) {                                 \
      int64_t id = od * p->stride[0] - p->pad[0] + kd * p->dil[0];         \
      for (int64_t oh = h0; oh < h1; oh++) {                               \
        int64_t ih = oh * p->stride[1] - p->pad[1] + kh * p->dil[1];       \
        ACC_T *row = acc + (od * p->out[1] + oh) * p->out[2];              \
        int64_t base =                                                     \
            (id * p->in[1] + ih) * p->in[2] - p->pad[2] + kw * p->dil[2];  \
        for (int64_t ow = w0; ow < w1; ow++) {                             \
          row[ow] W_EXPR(X_EXPR(xin[base + ow * p->stride[2]]));           \
        }                                                                  \
      }                                                                    \
    }                                                                      \
  } while (0)

#define KC_F32_ADD(v) += wv * (v)
#define KC_ID(v) v

void mp_k_conv_f32(const mp_kconv *p, const float *x, const float *w,
                   const float *b, float *y, void *scratch) {
  int64_t cg = p->c / p->group, mg = p->m / p->group;
  int64_t pin = kc_plane(p->in), pout = kc_plane(p->out), ks = kc_plane(p->k);
  float *acc = scratch;
  for (int64_t bi = 0; bi < p->n; bi++) {
    for (int64_t oc = 0; oc < p->m; oc++) {
      int64_t g = oc / mg;
      float bias = b ? b[oc] : 0.0f;
      for (int64_t o = 0; o < pout; o++) acc[o] = bias;
      for (int64_t icg = 0; icg < cg; icg++) {
        const float *xin = x + (bi * p->c + g * cg + icg) * pin;
        const float *wk = w + (oc * cg + icg) * ks;
        for (int64_t kd = 0; kd < p->k[0]; kd++) {
          for (int64_t kh = 0; kh < p->k[1]; kh++) {
            for (int64_t kw = 0; kw < p->k[2]; kw++) {
              float wv = wk[(kd * p->k[1] + kh) * p->k[2] + kw];
              KC_TAP(float, KC_F32_ADD, KC_ID);
            }
          }
        }
      }
      memmove(y + (bi * p->m + oc) * pout, acc, (size_t)pout * sizeof *acc);
    }
  }
}

/* Round half away from zero of v / 2^shift, saturated to int8. */
static int8_t kc_requant(int32_t v, int shift) {
  int64_t a = v;
  if (shift > 0) {
    int64_t half = (int64_t)1 << (shift - 1);
    a = a >= 0 ? (a + half) >> shift : -((-a + half) >> shift);
  }
  return (int8_t)(a < -128 ? -128 : a > 127 ? 127 : a);
}

/* Wrapping int32 multiply-accumulate (never undefined). */
#define KC_I8_ADD(v) = (int32_t)((uint32_t)row[ow] + (uint32_t)(wv * (v)))

void mp_k_conv_i8(const mp_kconv *p, const int8_t *x, const int8_t *w,
                  const int32_t *b, int8_t *y, void *scratch) {
  int64_t cg = p->c / p->group, mg = p->m / p->group;
  int64_t pin = kc_plane(p->in), pout = kc_plane(p->out), ks = kc_plane(p->k);
  int32_t *acc = scratch;
  for (int64_t bi = 0; bi < p->n; bi++) {
    for (int64_t oc = 0; oc < p->m; oc++) {
      int64_t g = oc / mg;
      int32_t bias = b ? b[oc] : 0;
      for (int64_t o = 0; o < pout; o++) acc[o] = bias;
      for (int64_t icg = 0; icg < cg; icg++) {
        const int8_t *xin = x + (bi * p->c + g * cg + icg) * pin;
        const int8_t *wk = w + (oc * cg + icg) * ks;
        for (int64_t kd = 0; kd < p->k[0]; kd++) {
          for (int64_t kh = 0; kh < p->k[1]; kh++) {
            for (int64_t kw = 0; kw < p->k[2]; kw++) {
              int32_t wv = wk[(kd * p->k[1] + kh) * p->k[2] + kw];
              KC_TAP(int32_t, KC_I8_ADD, KC_ID);
            }
          }
        }
      }
      int8_t *out = y + (bi * p->m + oc) * pout;
      for (int64_t o = 0; o < pout; o++) out[o] = kc_requant(acc[o], p->shift);
    }
  }
}

void mp_k_conv_transpose_f32(const mp_kconv *p, const float *x, const float *w,
                             const float *b, float *y) {
  int64_t cg = p->c / p->group, mg = p->m / p->group;
  int64_t pin = kc_plane(p->in), pout = kc_plane(p->out), ks = kc_plane(p->k);
  for (int64_t bi = 0; bi < p->n; bi++) {
    for (int64_t oc = 0; oc < p->m; oc++) {
      float *out = y + (bi * p->m + oc) * pout;
      for (int64_t o = 0; o < pout; o++) out[o] = b ? b[oc] : 0.0f;
      int64_t g = oc / mg, ocg = oc % mg;
      for (int64_t icg = 0; icg < cg; icg++) {
        int64_t ic = g * cg + icg;
        const float *xin = x + (bi * p->c + ic) * pin;
        const float *wk = w + (ic * mg + ocg) * ks;
        for (int64_t i0 = 0; i0 < p->in[0]; i0++)
          for (int64_t i1 = 0; i1 < p->in[1]; i1++)
            for (int64_t i2 = 0; i2 < p->in[2]; i2++) {
              float xv = xin[(i0 * p->in[1] + i1) * p->in[2] + i2];
              for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
                int64_t o0 = i0 * p->stride[0] - p->pad[0] + k0 * p->dil[0];
                if (o0 < 0 || o0 >= p->out[0]) continue;
                for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
                  int64_t o1 = i1 * p->stride[1] - p->pad[1] + k1 * p->dil[1];
                  if (o1 < 0 || o1 >= p->out[1]) continue;
                  for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
                    int64_t o2 = i2 * p->stride[2] - p->pad[2] + k2 * p->dil[2];
                    if (o2 < 0 || o2 >= p->out[2]) continue;
                    out[(o0 * p->out[1] + o1) * p->out[2] + o2] +=
                        xv * wk[(k0 * p->k[1] + k1) * p->k[2] + k2];
                  }
                }
              }
            }
      }
    }
  }
}

void mp_k_gemm_f32(const mp_kgemm *p, const float *a, const float *b,
                   const float *c, float *y) {
  for (int64_t i = 0; i < p->m; i++) {
    float *row = y + i * p->n;
    if (!p->trans_b) {
      for (int64_t j = 0; j < p->n; j++) row[j] = 0;
      for (int64_t k = 0; k < p->k; k++) {
        float av = p->trans_a ? a[k * p->m + i] : a[i * p->k + k];
        const float *brow = b + k * p->n;
        for (int64_t j = 0; j < p->n; j++) row[j] += av * brow[j];
      }
    } else {
      for (int64_t j = 0; j < p->n; j++) {
        float s = 0;
        const float *bcol = b + j * p->k;
        for (int64_t k = 0; k < p->k; k++) {
          s += (p->trans_a ? a[k * p->m + i] : a[i * p->k + k]) * bcol[k];
        }
        row[j] = s;
      }
    }
    for (int64_t j = 0; j < p->n; j++) {
      double v = p->alpha * row[j];
      if (c) v += p->beta * c[i * p->c_rs + j * p->c_cs];
      row[j] = (float)v;
    }
  }
}

void mp_k_gemm_i8(const mp_kgemm *p, const int8_t *a, const int8_t *b,
                  const int32_t *c, int8_t *y) {
  for (int64_t i = 0; i < p->m; i++) {
    for (int64_t j = 0; j < p->n; j++) {
      uint32_t s = c ? (uint32_t)c[i * p->c_rs + j * p->c_cs] : 0;
      for (int64_t k = 0; k < p->k; k++) {
        int32_t av = p->trans_a ? a[k * p->m + i] : a[i * p->k + k];
        int32_t bv = p->trans_b ? b[j * p->k + k] : b[k * p->n + j];
        s += (uint32_t)(av * bv);
      }
      y[i * p->n + j] = kc_requant((int32_t)s, p->shift);
    }
  }
}

/* ConvInteger, weight by weight: every (channel, tap) adds w' * (x - xzp)
 * to the output positions whose window reads a real input element there,
 * a contiguous run of the innermost spatial dim. */
static inline int32_t conv_q(const void *p, bool u, int64_t i) {
  return u ? (int32_t)((const uint8_t *)p)[i] : (int32_t)((const int8_t *)p)[i];
}

/* The output indices o in [0, out) with 0 <= o * s + k * d - pad < in:
 * [*lo, *hi). */
static void conv_run(int64_t out, int64_t in, int64_t s, int64_t k, int64_t d,
                     int64_t pad, int64_t *lo, int64_t *hi) {
  int64_t off = k * d - pad; /* input index of o = 0 */
  int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t b = in - off <= 0 ? 0 : (in - off - 1) / s + 1;
  *lo = a < out ? a : out;
  *hi = b < out ? b : out;
  if (*hi < *lo) *hi = *lo;
}

void mp_k_conv_integer(const mp_kconv *p, int dx, const void *x, int32_t xzp,
                       int dw, const void *w, const void *wzp, int64_t n_wzp,
                       int32_t *y) {
  bool ux = dx == MP_KD_U8, uw = dw == MP_KD_U8;
  int64_t pin = p->in[0] * p->in[1] * p->in[2];
  int64_t pout = p->out[0] * p->out[1] * p->out[2];
  int64_t ks = p->k[0] * p->k[1] * p->k[2];
  int64_t cg = p->c / p->group, mg = p->m / p->group;
  for (int64_t b = 0; b < p->n; b++) {
    for (int64_t oc = 0; oc < p->m; oc++) {
      int32_t *yp = y + (b * p->m + oc) * pout;
      for (int64_t i = 0; i < pout; i++) yp[i] = 0;
      int32_t wz = wzp ? conv_q(wzp, uw, n_wzp == 1 ? 0 : oc) : 0;
      for (int64_t ic = 0; ic < cg; ic++) {
        int64_t xc = oc / mg * cg + ic;
        int64_t xbase = (b * p->c + xc) * pin;
        for (int64_t t = 0; t < ks; t++) {
          int32_t wv = conv_q(w, uw, (oc * cg + ic) * ks + t) - wz;
          if (wv == 0) continue;
          int64_t k0 = t / (p->k[1] * p->k[2]), k1 = t / p->k[2] % p->k[1];
          int64_t k2 = t % p->k[2];
          int64_t a0, e0, a1, e1, a2, e2;
          conv_run(p->out[0], p->in[0], p->stride[0], k0, p->dil[0], p->pad[0],
                   &a0, &e0);
          conv_run(p->out[1], p->in[1], p->stride[1], k1, p->dil[1], p->pad[1],
                   &a1, &e1);
          conv_run(p->out[2], p->in[2], p->stride[2], k2, p->dil[2], p->pad[2],
                   &a2, &e2);
          for (int64_t o0 = a0; o0 < e0; o0++) {
            int64_t i0 = o0 * p->stride[0] + k0 * p->dil[0] - p->pad[0];
            for (int64_t o1 = a1; o1 < e1; o1++) {
              int64_t i1 = o1 * p->stride[1] + k1 * p->dil[1] - p->pad[1];
              int32_t *yr = yp + (o0 * p->out[1] + o1) * p->out[2];
              int64_t xr = xbase + (i0 * p->in[1] + i1) * p->in[2] +
                           k2 * p->dil[2] - p->pad[2];
              int64_t st = p->stride[2];
              /* Sums wrap in 32 bits (two's complement), as int32 does in
               * ONNX Runtime, instead of overflowing. */
              if (st == 1) {
                /* contiguous, from the row's first input element xr + a2
                 * (>= 0): the compiler vectorises these */
                uint32_t *yu = (uint32_t *)yr + a2, bias = (uint32_t)(wv * xzp);
                int64_t len = e2 - a2;
                if (ux) {
                  const uint8_t *xq = (const uint8_t *)x + xr + a2;
                  for (int64_t o2 = 0; o2 < len; o2++) {
                    yu[o2] += (uint32_t)wv * xq[o2] - bias;
                  }
                } else {
                  const int8_t *xq = (const int8_t *)x + xr + a2;
                  for (int64_t o2 = 0; o2 < len; o2++) {
                    yu[o2] += (uint32_t)wv * (uint32_t)(int32_t)xq[o2] - bias;
                  }
                }
              } else if (ux) {
                const uint8_t *xq = (const uint8_t *)x;
                for (int64_t o2 = a2; o2 < e2; o2++) {
                  int32_t v = wv * ((int32_t)xq[xr + o2 * st] - xzp);
                  yr[o2] = (int32_t)((uint32_t)yr[o2] + (uint32_t)v);
                }
              } else {
                const int8_t *xq = (const int8_t *)x;
                for (int64_t o2 = a2; o2 < e2; o2++) {
                  int32_t v = wv * ((int32_t)xq[xr + o2 * st] - xzp);
                  yr[o2] = (int32_t)((uint32_t)yr[o2] + (uint32_t)v);
                }
              }
            }
          }
        }
      }
    }
  }
}

void mp_k_matmul_integer(int64_t m, int64_t k, int64_t n, int da, const void *a,
                         const void *azp, int64_t n_azp, int db, const void *b,
                         const void *bzp, int64_t n_bzp, int32_t *y) {
  bool ua = da == MP_KD_U8, ub = db == MP_KD_U8;
  for (int64_t i = 0; i < m; i++) {
    int32_t *yr = y + i * n;
    for (int64_t j = 0; j < n; j++) yr[j] = 0;
    int32_t az = azp ? conv_q(azp, ua, n_azp == 1 ? 0 : i) : 0;
    for (int64_t t = 0; t < k; t++) {
      int32_t av = conv_q(a, ua, i * k + t) - az;
      if (av == 0) continue;
      for (int64_t j = 0; j < n; j++) {
        int32_t bz = bzp ? conv_q(bzp, ub, n_bzp == 1 ? 0 : j) : 0;
        int32_t v = av * (conv_q(b, ub, t * n + j) - bz);
        yr[j] = (int32_t)((uint32_t)yr[j] + (uint32_t)v);
      }
    }
  }
}
