/*
 * k_move.c -- data movement: Transpose, Concat/Split blocks, Slice,
 * Gather, Pad, Resize.
 *
 * Invariants:
 *   1. Dtype-agnostic kernels move whole elements of es bytes with memcpy
 *      (memmove where source and destination may be one buffer).
 *   2. Every source index is inside x for shapes and parameters the loader
 *      accepted (Slice and Pad indices are derived, never read from data;
 *      Gather indices arrive normalised and checked).
 */
#include <math.h>
#include <string.h>

#include "mplan/kernels.h"

void mp_k_transpose(size_t es, const mp_kshape *xs, const uint32_t *perm,
                    const void *x, void *y) {
  mp_k_transpose_dtype(0, es, xs, perm, x, y);
}

void mp_k_transpose_dtype(int d4, size_t es, const mp_kshape *xs,
                          const uint32_t *perm, const void *x, void *y) {
  int64_t xst[MP_K_MAX_RANK], st[MP_K_MAX_RANK], dims[MP_K_MAX_RANK];
  int64_t idx[MP_K_MAX_RANK] = {0};
  mp_kshape_strides(xs, xst);
  for (uint32_t i = 0; i < xs->rank; i++) {
    dims[i] = xs->dims[perm[i]];
    st[i] = xst[perm[i]];
  }
  int64_t n = mp_kshape_count(xs), off = 0;
  const char *px = x;
  char *py = y;
  for (int64_t i = 0; i < n; i++) {
    if (d4) { /* 4-bit elements: nibble by nibble */
      mp_k_store_nibble(y, d4, (size_t)i, mp_k_load_i(x, d4, (size_t)off));
    } else {
      memcpy(py + (size_t)i * es, px + (size_t)off * es, es);
    }
    for (uint32_t d = xs->rank; d-- > 0;) {
      off += st[d];
      if (++idx[d] < dims[d]) break;
      off -= st[d] * dims[d];
      idx[d] = 0;
    }
  }
  if (d4) mp_k_nibble_pad(y, d4, (size_t)n);
}

void mp_k_copy_block(size_t es, int64_t outer, int64_t inner, const void *src,
                     int64_t src_len, int64_t src_off, void *dst,
                     int64_t dst_len, int64_t dst_off, int64_t len) {
  const char *s = src;
  char *d = dst;
  size_t row = (size_t)(len * inner) * es;
  for (int64_t o = 0; o < outer; o++) {
    memmove(d + (size_t)((o * dst_len + dst_off) * inner) * es,
            s + (size_t)((o * src_len + src_off) * inner) * es, row);
  }
}

void mp_k_slice(size_t es, const mp_kshape *xs, const mp_kshape *ys,
                const int64_t *start, const int64_t *step, const void *x,
                void *y) {
  int64_t xst[MP_K_MAX_RANK], idx[MP_K_MAX_RANK] = {0}, off = 0;
  mp_kshape_strides(xs, xst);
  for (uint32_t d = 0; d < xs->rank; d++) off += start[d] * xst[d];
  int64_t n = mp_kshape_count(ys);
  const char *px = x;
  char *py = y;
  for (int64_t i = 0; i < n; i++) {
    memcpy(py + (size_t)i * es, px + (size_t)off * es, es);
    for (uint32_t d = ys->rank; d-- > 0;) {
      off += step[d] * xst[d];
      if (++idx[d] < ys->dims[d]) break;
      off -= step[d] * xst[d] * ys->dims[d];
      idx[d] = 0;
    }
  }
}

void mp_k_gather(size_t es, int64_t outer, int64_t axis_len, int64_t inner,
                 const int64_t *idx, int64_t n_idx, const void *x, void *y) {
  const char *px = x;
  char *py = y;
  size_t row = (size_t)inner * es;
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t j = 0; j < n_idx; j++) {
      memcpy(py + (size_t)(o * n_idx + j) * row,
             px + (size_t)(o * axis_len + idx[j]) * row, row);
    }
  }
}

/* Source index along one axis of length n for output coordinate o, or -1
 * for the constant. */
static int64_t kp_src(int64_t o, int64_t pad, int64_t n, mp_kpad_mode mode) {
  int64_t i = o - pad;
  if (i >= 0 && i < n) return i;
  if (mode == MP_KPAD_CONSTANT) return -1;
  if (mode == MP_KPAD_EDGE) return i < 0 ? 0 : n - 1;
  if (mode == MP_KPAD_WRAP) return (i % n + n) % n;
  if (n == 1) return 0;
  /* Reflect without repeating the edge: period 2(n-1). */
  int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

void mp_k_pad(size_t es, const mp_kshape *xs, const mp_kshape *ys,
              const int64_t *pad_begin, mp_kpad_mode mode, const void *value,
              const void *x, void *y) {
  int64_t xst[MP_K_MAX_RANK], idx[MP_K_MAX_RANK] = {0};
  mp_kshape_strides(xs, xst);
  int64_t n = mp_kshape_count(ys);
  const char *px = x;
  char *py = y;
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    bool constant = false;
    for (uint32_t d = 0; d < ys->rank && !constant; d++) {
      int64_t s = kp_src(idx[d], pad_begin[d], xs->dims[d], mode);
      if (s < 0) constant = true;
      off += s * xst[d];
    }
    memcpy(py + (size_t)i * es, constant ? value : px + (size_t)off * es, es);
    for (uint32_t d = ys->rank; d-- > 0;) {
      if (++idx[d] < ys->dims[d]) break;
      idx[d] = 0;
    }
  }
}

/* Input coordinate of output coordinate o along one axis. */
static double kr_coord(const mp_kresize *p, uint32_t d, int64_t o) {
  double s = p->scale[d], in = (double)p->in.dims[d];
  switch (p->coord) {
    case MP_KC_ASYMMETRIC:
      return o / s;
    case MP_KC_ALIGN_CORNERS:
      /* ONNX: o (in - 1) / (length_resized - 1), length_resized = in x
       * scale (not rounded) */
      return in * s - 1 <= 0 ? 0 : o * (in - 1) / (in * s - 1);
    case MP_KC_PYTORCH_HALF_PIXEL:
      return p->out.dims[d] > 1 ? (o + 0.5) / s - 0.5 : 0;
    case MP_KC_TF_HALF_PIXEL_FOR_NN:
      return (o + 0.5) / s;
    case MP_KC_TF_CROP_AND_RESIZE: {
      double a = p->roi[d], b = p->roi[p->in.rank + d];
      int64_t n = p->out.dims[d];
      return n > 1 ? a * (in - 1) +
                         (double)o * (b - a) * (in - 1) / (double)(n - 1)
                   : 0.5 * (a + b) * (in - 1);
    }
    case MP_KC_HALF_PIXEL_SYMMETRIC: {
      /* the input's centre on the output's: out / (in x scale) is the
       * part of the scaled length the output keeps */
      double adj = (double)p->out.dims[d] / (s * in);
      return in / 2 * (1 - adj) + (o + 0.5) / s - 0.5;
    }
    default:
      return (o + 0.5) / s - 0.5;
  }
}

static int64_t kr_nearest(const mp_kresize *p, double c, int64_t n) {
  double r;
  switch (p->nearest) {
    case MP_KN_FLOOR:
      r = floor(c);
      break;
    case MP_KN_CEIL:
      r = ceil(c);
      break;
    case MP_KN_ROUND_PREFER_CEIL:
      r = floor(c + 0.5);
      break;
    default:
      r = c == floor(c) + 0.5 ? floor(c) : floor(c + 0.5);
      break;
  }
  int64_t i = (int64_t)r;
  return i < 0 ? 0 : i >= n ? n - 1 : i;
}

int64_t mp_k_resize_nearest_src(const mp_kresize *p, uint32_t d, int64_t o) {
  return kr_nearest(p, kr_coord(p, d, o), p->in.dims[d]);
}

int mp_k_coord_named(const char *name) {
  static const char *const names[] = {
      "half_pixel",          "asymmetric",           "align_corners",
      "pytorch_half_pixel",  "tf_half_pixel_for_nn", "tf_crop_and_resize",
      "half_pixel_symmetric"};
  for (int k = 0; k < (int)(sizeof names / sizeof *names); k++) {
    if (strcmp(name, names[k]) == 0) return k;
  }
  return -1;
}

int mp_k_nearest_named(const char *name) {
  static const char *const names[] = {"round_prefer_floor", "round_prefer_ceil",
                                      "floor", "ceil"};
  for (int k = 0; k < (int)(sizeof names / sizeof *names); k++) {
    if (strcmp(name, names[k]) == 0) return k;
  }
  return -1;
}

/* The cubic convolution weights (coefficient a) of the four taps at
 * distances 1 + t, t, 1 - t and 2 - t (Resize's cubic, GridSample's
 * bicubic with a = -0.75). */
static void k_cubic_weights(double t, double a, double *c) {
  double u = t + 1, v = 1 - t, s = 2 - t;
  c[0] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  c[2] = ((a + 2) * v - (a + 3)) * v * v + 1;
  c[3] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
}

/* One axis of a cubic resize: the taps of output index o (their input
 * indices, clamped to the edge, and weights; zero weights left out) as
 * ONNX's reference picks them: the position x, f = ceil(x) - 1 and
 * t = x - f in (0, 1], taps f - 1 .. f + 2. */
static int kr_cubic_taps(const mp_kresize *p, uint32_t a, int64_t o,
                         int64_t *at, double *w) {
  double x = kr_coord(p, a, o), f = ceil(x) - 1, c[4];
  k_cubic_weights(x - f, p->cubic_a, c);
  int64_t nd = p->in.dims[a];
  double sum = 0;
  for (int k = 0; k < 4; k++) {
    double idx = f - 1 + k;
    if (p->exclude_outside && (idx < 0 || idx >= (double)nd)) c[k] = 0;
    sum += c[k];
  }
  int n = 0;
  for (int k = 0; k < 4; k++) {
    if (c[k] == 0) continue;
    double idx = f - 1 + k;
    at[n] = !(idx >= 0) ? 0 : idx >= (double)nd ? nd - 1 : (int64_t)idx;
    w[n++] = p->exclude_outside && sum != 0 ? c[k] / sum : c[k];
  }
  return n;
}

/* The cubic convolution kernel of coefficient a at distance x. */
static double kr_cubic_kernel(double x, double a) {
  x = fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  return x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a : 0;
}

/* One axis of an antialiased resize (ONNX's reference): the filter
 * (triangle, or the cubic kernel) stretched by 1 / s where the scale s is
 * below 1, over the taps around the position x (f = ceil(x) - 1, t = x -
 * f in (0, 1], taps f + start .. f + 1 - start), normalised to sum 1,
 * then without the taps outside when exclude_outside (renormalised);
 * indices clamped to the edge, zero weights left out. */
static int kr_antialias_taps(const mp_kresize *p, uint32_t a, int64_t o,
                             int64_t *at, double *w) {
  double s = p->scale[a] < 1 ? p->scale[a] : 1, x = kr_coord(p, a, o);
  double f = ceil(x) - 1, t = x - f, c[MP_K_RESIZE_TAPS], sum = 0;
  int64_t start = (int64_t)floor((p->cubic ? -2 : -1) / s) + 1;
  int64_t n = 2 - 2 * start, nd = p->in.dims[a];
  if (n > MP_K_RESIZE_TAPS) return 0; /* the runtime refuses such scales */
  for (int64_t k = 0; k < n; k++) {
    double arg = ((double)(start + k) - t) * s;
    c[k] = p->cubic ? kr_cubic_kernel(arg, p->cubic_a)
                    : (fabs(arg) < 1 ? 1 - fabs(arg) : 0);
    sum += c[k];
  }
  double kept = 0;
  for (int64_t k = 0; k < n; k++) {
    c[k] = sum != 0 ? c[k] / sum : 0;
    double idx = f + (double)(start + k);
    if (p->exclude_outside && (idx < 0 || idx >= (double)nd)) c[k] = 0;
    kept += c[k];
  }
  int m = 0;
  for (int64_t k = 0; k < n; k++) {
    if (c[k] == 0) continue;
    double idx = f + (double)(start + k);
    at[m] = !(idx >= 0) ? 0 : idx >= (double)nd ? nd - 1 : (int64_t)idx;
    w[m++] = p->exclude_outside && kept != 0 ? c[k] / kept : c[k];
  }
  return m;
}

/* One output element of a cubic or antialiased resize: the product of
 * the axes' taps. */
static double kr_cubic(const mp_kresize *p, int d, const void *x,
                       const int64_t *xst, const int64_t *idx) {
  uint32_t r = p->in.rank;
  int64_t at[MP_K_MAX_RANK][MP_K_RESIZE_TAPS];
  double w[MP_K_MAX_RANK][MP_K_RESIZE_TAPS];
  int n[MP_K_MAX_RANK], k[MP_K_MAX_RANK] = {0};
  for (uint32_t a = 0; a < r; a++) {
    n[a] = p->antialias ? kr_antialias_taps(p, a, idx[a], at[a], w[a])
                        : kr_cubic_taps(p, a, idx[a], at[a], w[a]);
    if (n[a] == 0) return 0;
  }
  double acc = 0;
  for (;;) {
    double wt = 1;
    int64_t off = 0;
    for (uint32_t a = 0; a < r; a++) {
      wt *= w[a][k[a]];
      off += at[a][k[a]] * xst[a];
    }
    acc += wt * mp_k_load(x, d, (size_t)off);
    uint32_t a = r;
    while (a-- > 0) {
      if (++k[a] < n[a]) break;
      k[a] = 0;
    }
    if (a == UINT32_MAX) return acc;
  }
}

/* tf_crop_and_resize: output idx maps outside the input on some axis
 * (ONNX's reference then gives extrapolation_value). */
static bool kr_outside(const mp_kresize *p, const int64_t *idx) {
  if (p->coord != MP_KC_TF_CROP_AND_RESIZE) return false;
  for (uint32_t a = 0; a < p->in.rank; a++) {
    double c = kr_coord(p, a, idx[a]);
    if (!(c >= 0 && c <= (double)(p->in.dims[a] - 1))) return true;
  }
  return false;
}

void mp_k_resize(const mp_kresize *p, int d, const void *x, void *y) {
  int64_t xst[MP_K_MAX_RANK], idx[MP_K_MAX_RANK] = {0};
  mp_kshape_strides(&p->in, xst);
  size_t es = mp_kd_size(d);
  int64_t n = mp_kshape_count(&p->out);
  uint32_t r = p->in.rank;
  for (int64_t i = 0; i < n; i++) {
    if (kr_outside(p, idx)) {
      mp_k_store(y, d, (size_t)i, p->extrapolation);
    } else if (p->cubic || (p->linear && p->antialias)) {
      mp_k_store(y, d, (size_t)i, kr_cubic(p, d, x, xst, idx));
    } else if (!p->linear) {
      int64_t off = 0;
      for (uint32_t a = 0; a < r; a++) {
        off += mp_k_resize_nearest_src(p, a, idx[a]) * xst[a];
      }
      memcpy((char *)y + (size_t)i * es, (const char *)x + (size_t)off * es,
             es);
    } else {
      /* n-linear: the 2^r corners of the cell, each weighted. Axes with
       * equal in and out sizes and scale 1 contribute one corner. */
      int64_t lo[MP_K_MAX_RANK], hi[MP_K_MAX_RANK];
      double w[MP_K_MAX_RANK];
      for (uint32_t a = 0; a < r; a++) {
        double c = kr_coord(p, a, idx[a]);
        int64_t nd = p->in.dims[a];
        if (c < 0) c = 0;
        if (c > (double)(nd - 1)) c = (double)(nd - 1);
        lo[a] = (int64_t)floor(c);
        hi[a] = lo[a] + 1 < nd ? lo[a] + 1 : lo[a];
        w[a] = c - (double)lo[a];
      }
      double acc = 0;
      for (uint32_t corner = 0; corner < (1u << r); corner++) {
        double wt = 1;
        int64_t off = 0;
        for (uint32_t a = 0; a < r; a++) {
          bool up = corner >> a & 1;
          wt *= up ? w[a] : 1 - w[a];
          off += (up ? hi[a] : lo[a]) * xst[a];
        }
        if (wt != 0) acc += wt * mp_k_load(x, d, (size_t)off);
      }
      mp_k_store(y, d, (size_t)i, acc);
    }
    for (uint32_t a = r; a-- > 0;) {
      if (++idx[a] < p->out.dims[a]) break;
      idx[a] = 0;
    }
  }
}

/* GridSample (kernels.h): ONNX's steps, in double. */
static double kg_reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo) {
    double dx = lo - x, n = floor(dx / rng), r = dx - n * rng;
    return fmod(n, 2) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi, n = floor(dx / rng), r = dx - n * rng;
    return fmod(n, 2) == 0 ? hi - r : lo + r;
  }
  return x;
}

static double kg_clamp(double v, double lo, double hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* Pixel (r, c) of one plane with the padding mode; border holds x_min,
 * y_min, x_max, y_max. */
static double kg_pixel(const mp_kgrid *p, int d, const void *x, size_t plane,
                       int64_t r, int64_t c, const double *border) {
  int64_t h = p->h, w = p->w;
  if (p->padding == MP_KGRID_ZEROS) {
    if (r < 0 || r >= h || c < 0 || c >= w) return 0;
  } else if (p->padding == MP_KGRID_BORDER) {
    r = r < 0 ? 0 : r >= h ? h - 1 : r;
    c = c < 0 ? 0 : c >= w ? w - 1 : c;
  } else {
    c = (int64_t)kg_reflect((double)c, border[0], border[2]);
    r = (int64_t)kg_reflect((double)r, border[1], border[3]);
    r = r < 0 ? 0 : r >= h ? h - 1 : r;
    c = c < 0 ? 0 : c >= w ? w - 1 : c;
  }
  return mp_k_load(x, d, plane + (size_t)(r * w + c));
}

void mp_k_grid_sample(const mp_kgrid *p, int d, const void *x, int dg,
                      const void *grid, void *y) {
  double lo_x = p->align ? 0 : -0.5, lo_y = lo_x;
  double hi_x = p->align ? (double)(p->w - 1) : (double)p->w - 0.5;
  double hi_y = p->align ? (double)(p->h - 1) : (double)p->h - 0.5;
  double border[4] = {lo_x, lo_y, hi_x, hi_y};
  int64_t hw = p->ho * p->wo;
  for (int64_t n = 0; n < p->n; n++) {
    for (int64_t i = 0; i < hw; i++) {
      size_t g = (size_t)((n * hw + i) * 2);
      double gx = mp_k_load(grid, dg, g), gy = mp_k_load(grid, dg, g + 1);
      double fx = p->align ? (gx + 1) / 2 * (double)(p->w - 1)
                           : ((gx + 1) * (double)p->w - 1) / 2;
      double fy = p->align ? (gy + 1) / 2 * (double)(p->h - 1)
                           : ((gy + 1) * (double)p->h - 1) / 2;
      if (p->mode == MP_KGRID_NEAREST) fx = nearbyint(fx), fy = nearbyint(fy);
      if (fx < lo_x || fx > hi_x || fy < lo_y || fy > hi_y) {
        if (p->padding == MP_KGRID_BORDER && p->mode != MP_KGRID_BICUBIC) {
          fx = kg_clamp(fx, 0, (double)(p->w - 1));
          fy = kg_clamp(fy, 0, (double)(p->h - 1));
        } else if (p->padding == MP_KGRID_REFLECTION) {
          fx = kg_reflect(fx, lo_x, hi_x);
          fy = kg_reflect(fy, lo_y, hi_y);
        }
      }
      /* Past 4 pixels outside, every tap (cubic reaches 2) reads what it
       * reads at 4 pixels out, zero or the border: clamped there, a huge
       * or infinite grid value converts to an integer safely. NaN stays
       * NaN (read as nothing below). */
      fx = kg_clamp(fx, -4, (double)p->w + 4);
      fy = kg_clamp(fy, -4, (double)p->h + 4);
      for (int64_t c = 0; c < p->c; c++) {
        size_t plane = (size_t)((n * p->c + c) * p->h * p->w);
        double v = 0;
        if (fx != fx || fy != fy) {
          v = 0; /* a NaN grid position reads nothing */
        } else if (p->mode == MP_KGRID_NEAREST) {
          v = kg_pixel(p, d, x, plane, (int64_t)fy, (int64_t)fx, border);
        } else if (p->mode == MP_KGRID_BILINEAR) {
          double x1 = floor(fx), y1 = floor(fy);
          double dx2 = x1 + 1 - fx, dx1 = fx - x1, dy2 = y1 + 1 - fy,
                 dy1 = fy - y1;
          int64_t c1 = (int64_t)x1, r1 = (int64_t)y1;
          double p11 = kg_pixel(p, d, x, plane, r1, c1, border);
          double p12 = kg_pixel(p, d, x, plane, r1, c1 + 1, border);
          double p21 = kg_pixel(p, d, x, plane, r1 + 1, c1, border);
          double p22 = kg_pixel(p, d, x, plane, r1 + 1, c1 + 1, border);
          v = dy2 * (dx2 * p11 + dx1 * p12) + dy1 * (dx2 * p21 + dx1 * p22);
        } else {
          double x0 = floor(fx), y0 = floor(fy), cx[4], cy[4];
          k_cubic_weights(fx - x0, -0.75, cx);
          k_cubic_weights(fy - y0, -0.75, cy);
          for (int64_t j = 0; j < 4; j++) {
            double row = 0;
            for (int64_t k = 0; k < 4; k++) {
              row += cx[k] * kg_pixel(p, d, x, plane, (int64_t)y0 - 1 + j,
                                      (int64_t)x0 - 1 + k, border);
            }
            v += cy[j] * row;
          }
        }
        mp_k_store(y, d, (size_t)((n * p->c + c) * hw + i), v);
      }
    }
  }
}

/* One bilinear sample of plane at (yy, xx) as ONNX Runtime's RoiAlign
 * takes it: 0 beyond one pixel outside, the position clamped to the
 * image, the four corner terms weighted (max: the largest term, else
 * their sum). */
static double km_roi_sample(const mp_kroi *p, int d, const void *x,
                            size_t plane, double yy, double xx) {
  if (yy < -1.0 || yy > (double)p->h || xx < -1.0 || xx > (double)p->w)
    return 0;
  if (yy <= 0) yy = 0;
  if (xx <= 0) xx = 0;
  int64_t y0 = (int64_t)yy, x0 = (int64_t)xx, y1, x1;
  if (y0 >= p->h - 1) {
    y0 = y1 = p->h - 1;
    yy = (double)y0;
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= p->w - 1) {
    x0 = x1 = p->w - 1;
    xx = (double)x0;
  } else {
    x1 = x0 + 1;
  }
  double ly = yy - (double)y0, lx = xx - (double)x0, hy = 1 - ly, hx = 1 - lx;
  double t[4] = {hy * hx * mp_k_load(x, d, plane + (size_t)(y0 * p->w + x0)),
                 hy * lx * mp_k_load(x, d, plane + (size_t)(y0 * p->w + x1)),
                 ly * hx * mp_k_load(x, d, plane + (size_t)(y1 * p->w + x0)),
                 ly * lx * mp_k_load(x, d, plane + (size_t)(y1 * p->w + x1))};
  if (!p->max) return t[0] + t[1] + t[2] + t[3];
  double m = t[0];
  for (int k = 1; k < 4; k++) m = t[k] > m ? t[k] : m;
  return m;
}

void mp_k_roi_align(const mp_kroi *p, int d, const void *x, int dr,
                    const void *rois, const int64_t *batch, void *y) {
  double off = p->half_pixel ? 0.5 : 0.0;
  size_t at = 0;
  for (int64_t r = 0; r < p->rois; r++) {
    double b[4];
    for (int k = 0; k < 4; k++) {
      b[k] = mp_k_load(rois, dr, (size_t)(r * 4 + k)) * p->scale - off;
    }
    double rw = b[2] - b[0], rh = b[3] - b[1];
    if (!p->half_pixel) {
      rw = rw > 1.0 ? rw : 1.0;
      rh = rh > 1.0 ? rh : 1.0;
    }
    double bh = rh / (double)p->oh, bw = rw / (double)p->ow;
    int64_t gh = p->sampling > 0 ? p->sampling : (int64_t)ceil(rh / p->oh);
    int64_t gw = p->sampling > 0 ? p->sampling : (int64_t)ceil(rw / p->ow);
    double count = (double)(gh * gw > 1 ? gh * gw : 1);
    for (int64_t ch = 0; ch < p->c; ch++) {
      size_t plane = (size_t)((batch[r] * p->c + ch) * p->h * p->w);
      for (int64_t ph = 0; ph < p->oh; ph++) {
        for (int64_t pw = 0; pw < p->ow; pw++) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; iy++) {
            double yy =
                b[1] + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
            for (int64_t ix = 0; ix < gw; ix++) {
              double xx =
                  b[0] + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
              double v = km_roi_sample(p, d, x, plane, yy, xx);
              if (!p->max) {
                acc += v;
              } else if (first || v > acc) {
                acc = v;
              }
              first = false;
            }
          }
          mp_k_store(y, d, at++, p->max ? acc : acc / count);
        }
      }
    }
  }
}
