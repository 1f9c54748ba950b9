/*
 * k_linalg.c -- Einsum (any number of operands, repeated labels for
 * diagonals, broadcast labels), Det, and the signal ops DFT, STFT and
 * MelWeightMatrix.
 *
 * Invariants:
 *   1. Einsum visits every assignment of its labels once, in odometer
 *      order (the last label fastest), and adds the product of the
 *      operands' elements (each read through its per-label strides, 0 for
 *      a broadcast dim) into a double accumulator per output element;
 *      each output is rounded once to its dtype.
 *   2. Det: Gaussian elimination with partial pivoting in double; a
 *      singular matrix gives 0.
 *   3. DFT and STFT sum each bin directly in double (no FFT: the lengths
 *      are those of a frame or an axis), the angle of every twiddle taken
 *      from k * j mod n, so bin values do not drift with k. With a
 *      workspace the n twiddles and the signal's windowed samples are
 *      computed once per call (n sin/cos pairs, not n_out * len) by the
 *      same expressions, so the bins are the same bits as without.
 */
#include <math.h>
#include <string.h>

#include "mplan/kernels.h"

void mp_k_einsum(int d, const mp_keinsum *p, const void *const *x, void *y,
                 double *acc) {
  for (int64_t i = 0; i < p->n_out; i++) acc[i] = 0;
  bool empty = false;
  for (uint32_t l = 0; l < p->n_labels; l++) empty = empty || p->dim[l] == 0;
  int64_t at[MP_K_MAX_LABELS] = {0}, off[MP_K_MAX_OPERANDS] = {0}, yoff = 0;
  while (!empty) {
    double v = 1;
    for (uint32_t k = 0; k < p->n_in; k++) {
      v *= mp_k_load(x[k], d, (size_t)off[k]);
    }
    acc[yoff] += v;
    uint32_t l = p->n_labels;
    while (l-- > 0) {
      at[l]++;
      for (uint32_t k = 0; k < p->n_in; k++) off[k] += p->stride[k][l];
      yoff += p->ystride[l];
      if (at[l] < p->dim[l]) break;
      for (uint32_t k = 0; k < p->n_in; k++) off[k] -= p->stride[k][l] * at[l];
      yoff -= p->ystride[l] * at[l];
      at[l] = 0;
    }
    empty = l == UINT32_MAX; /* every label wrapped: done */
  }
  for (int64_t i = 0; i < p->n_out; i++) mp_k_store(y, d, (size_t)i, acc[i]);
}

void mp_k_det(int d, int64_t batches, int64_t n, const void *x, void *y,
              double *a) {
  for (int64_t b = 0; b < batches; b++) {
    for (int64_t i = 0; i < n * n; i++) {
      a[i] = mp_k_load(x, d, (size_t)(b * n * n + i));
    }
    double det = 1;
    for (int64_t c = 0; c < n && det != 0; c++) {
      int64_t piv = c;
      for (int64_t r = c + 1; r < n; r++) {
        if (fabs(a[r * n + c]) > fabs(a[piv * n + c])) piv = r;
      }
      if (a[piv * n + c] == 0) {
        det = 0;
        break;
      }
      if (piv != c) {
        for (int64_t k = 0; k < n; k++) {
          double t = a[c * n + k];
          a[c * n + k] = a[piv * n + k];
          a[piv * n + k] = t;
        }
        det = -det;
      }
      det *= a[c * n + c];
      for (int64_t r = c + 1; r < n; r++) {
        double f = a[r * n + c] / a[c * n + c];
        for (int64_t k = c; k < n; k++) a[r * n + k] -= f * a[c * n + k];
      }
    }
    mp_k_store(y, d, (size_t)b, det);
  }
}

/* ---- DFT, STFT, MelWeightMatrix ------------------------------------------ */

#define KL_TWO_PI 6.283185307179586476925286766559

/* The angle of twiddle k * j mod n (invariant 3). */
static double kl_angle(double sign, int64_t kj, int64_t n) {
  return sign * KL_TWO_PI * (double)kj / (double)n;
}

/* The twiddles of a length-n transform: cos in ws[0, n), sin in
 * ws[n, 2n). */
static void kl_twiddles(int64_t n, bool inverse, double *ws) {
  double sign = inverse ? 1.0 : -1.0;
  for (int64_t m = 0; m < n; m++) {
    double ang = kl_angle(sign, m, n);
    ws[m] = cos(ang);
    ws[n + m] = sin(ang);
  }
}

/* Bins 0 .. n_out-1 of the length-n transform of one signal: sample j of
 * it is x[at + j * stride * cx] (and the next element when cx is 2: the
 * imaginary part), times win[j] (dtype dw; NULL: 1), for j < len, and 0
 * beyond; bin k goes to y[yat + 2 * k * ystride]. The caller keeps n
 * below 2^31, so k * j fits. ws: NULL, or the twiddles (kl_twiddles)
 * followed by room for 2 * min(len, n) samples. */
static void kl_dft1(int d, const void *x, size_t at, size_t stride, int64_t cx,
                    int64_t len, int dw, const void *win, int64_t n,
                    int64_t n_out, bool inverse, void *y, size_t yat,
                    size_t ystride, double *ws) {
  int64_t m = len < n ? len : n;
  double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / (double)n : 1.0;
  if (ws) {
    const double *tc = ws, *ts = ws + n;
    double *sa = ws + 2 * n, *sb = sa + m;
    for (int64_t j = 0; j < m; j++) {
      size_t xi = at + (size_t)j * stride * (size_t)cx;
      double w = win ? mp_k_load(win, dw, (size_t)j) : 1.0;
      sa[j] = w * mp_k_load(x, d, xi);
      sb[j] = cx == 2 ? w * mp_k_load(x, d, xi + 1) : 0.0;
    }
    for (int64_t k = 0; k < n_out; k++) {
      double re = 0, im = 0;
      for (int64_t j = 0, kj = 0; j < m; j++) {
        double c = tc[kj], s = ts[kj];
        re += sa[j] * c - sb[j] * s;
        im += sa[j] * s + sb[j] * c;
        kj += k; /* k * j mod n, as k < n */
        if (kj >= n) kj -= n;
      }
      size_t yi = yat + (size_t)k * ystride * 2;
      mp_k_store(y, d, yi, re * scale);
      mp_k_store(y, d, yi + 1, im * scale);
    }
    return;
  }
  for (int64_t k = 0; k < n_out; k++) {
    double re = 0, im = 0;
    for (int64_t j = 0; j < m; j++) {
      size_t xi = at + (size_t)j * stride * (size_t)cx;
      double w = win ? mp_k_load(win, dw, (size_t)j) : 1.0;
      double a = w * mp_k_load(x, d, xi);
      double b = cx == 2 ? w * mp_k_load(x, d, xi + 1) : 0.0;
      double ang = kl_angle(sign, (k * j) % n, n);
      double c = cos(ang), s = sin(ang);
      re += a * c - b * s;
      im += a * s + b * c;
    }
    size_t yi = yat + (size_t)k * ystride * 2;
    mp_k_store(y, d, yi, re * scale);
    mp_k_store(y, d, yi + 1, im * scale);
  }
}

size_t mp_k_dft_workspace(int64_t n, int64_t len) {
  return (size_t)(2 * n + 2 * (len < n ? len : n));
}

void mp_k_dft(const mp_kdft *p, int d, const void *x, void *y, double *ws) {
  if (ws) kl_twiddles(p->n, p->inverse, ws);
  for (int64_t o = 0; o < p->outer; o++) {
    for (int64_t i = 0; i < p->inner; i++) {
      size_t at = (size_t)((o * p->len * p->inner + i) * p->cx);
      size_t yat = (size_t)((o * p->n_out * p->inner + i) * 2);
      kl_dft1(d, x, at, (size_t)p->inner, p->cx, p->len, 0, NULL, p->n,
              p->n_out, p->inverse, y, yat, (size_t)p->inner, ws);
    }
  }
}

void mp_k_stft(const mp_kstft *p, int d, const void *x, int dw,
               const void *window, void *y, double *ws) {
  if (ws) kl_twiddles(p->frame, false, ws);
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t f = 0; f < p->frames; f++) {
      size_t at = (size_t)((b * p->len + f * p->step) * p->cx);
      size_t yat = (size_t)((b * p->frames + f) * p->n_out * 2);
      kl_dft1(d, x, at, 1, p->cx, p->frame, dw, window, p->frame, p->n_out,
              false, y, yat, 1, ws);
    }
  }
}
bool mp_k_mel_weight_matrix(int64_t bins, int64_t dft_length,
                            double sample_rate, double lo_hz, double hi_hz,
                            int d, void *y) {
  int64_t spec = dft_length / 2 + 1, points = bins + 2;
  for (int64_t i = 0; i < spec * bins; i++) mp_k_store(y, d, (size_t)i, 0.0);
  double lo_mel = 2595.0 * log10(1.0 + lo_hz / 700.0);
  double hi_mel = 2595.0 * log10(1.0 + hi_hz / 700.0);
  /* ONNX's reference divides the mel range by bins + 2 points (not the
   * bins + 1 gaps), then floors each edge to a bin */
  double step = (hi_mel - lo_mel) / (double)points;
  int64_t edge[3];
  for (int64_t i = 0; i < bins; i++) {
    for (int e = 0; e < 3; e++) {
      double mel = (double)(i + e) * step + lo_mel;
      double hz = 700.0 * (pow(10.0, mel / 2595.0) - 1.0);
      double v = floor((double)(dft_length + 1) * hz / sample_rate);
      if (!(v >= 0 && v < (double)spec)) return false;
      edge[e] = (int64_t)v;
    }
    int64_t up = edge[1] - edge[0], down = edge[2] - edge[1];
    if (up == 0) {
      mp_k_store(y, d, (size_t)(edge[1] * bins + i), 1.0);
    } else {
      for (int64_t j = edge[0]; j <= edge[1]; j++) {
        mp_k_store(y, d, (size_t)(j * bins + i),
                   (double)(j - edge[0]) / (double)up);
      }
    }
    for (int64_t j = edge[1]; down > 0 && j < edge[2]; j++) {
      mp_k_store(y, d, (size_t)(j * bins + i),
                 (double)(edge[2] - j) / (double)down);
    }
  }
  return true;
}
