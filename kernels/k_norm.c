/*
 * k_norm.c -- BatchNormalization, LayerNormalization, Softmax/LogSoftmax.
 *
 * Invariants:
 *   1. Statistics (means, variances, exponential sums) are accumulated in
 *      double; each output element is rounded once.
 *   2. Every kernel reads all inputs of a row (or element) before writing
 *      it, so y may equal x (in place).
 */
#include <math.h>

#include "mplan/kernels.h"

void mp_k_batchnorm_f32(int64_t n, int64_t c, int64_t rest, const float *x,
                        const float *scale, const float *bias,
                        const float *mean, const float *var, double eps,
                        float *y) {
  for (int64_t b = 0; b < n; b++) {
    for (int64_t ch = 0; ch < c; ch++) {
      double a = scale[ch] / sqrt((double)var[ch] + eps);
      double off = bias[ch] - mean[ch] * a;
      const float *xs = x + (b * c + ch) * rest;
      float *ys = y + (b * c + ch) * rest;
      for (int64_t i = 0; i < rest; i++) ys[i] = (float)(xs[i] * a + off);
    }
  }
}

void mp_k_layernorm_f32(int64_t outer, int64_t inner, const float *x,
                        const float *scale, const float *bias, double eps,
                        float *y, float *mean, float *inv_std) {
  for (int64_t r = 0; r < outer; r++) {
    const float *xs = x + r * inner;
    float *ys = y + r * inner;
    double s = 0, ss = 0;
    for (int64_t i = 0; i < inner; i++) s += xs[i];
    double mu = s / (double)inner;
    for (int64_t i = 0; i < inner; i++) ss += (xs[i] - mu) * (xs[i] - mu);
    double inv = 1 / sqrt(ss / (double)inner + eps);
    for (int64_t i = 0; i < inner; i++) {
      double v = (xs[i] - mu) * inv * scale[i];
      ys[i] = (float)(bias ? v + bias[i] : v);
    }
    if (mean) mean[r] = (float)mu;
    if (inv_std) inv_std[r] = (float)inv;
  }
}

void mp_k_softmax_f32(int64_t outer, int64_t axis, int64_t inner,
                      const float *x, float *y, bool log_out) {
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t in = 0; in < inner; in++) {
      const float *xs = x + o * axis * inner + in;
      float *ys = y + o * axis * inner + in;
      double mx = -INFINITY, sum = 0;
      for (int64_t a = 0; a < axis; a++) {
        if (xs[a * inner] > mx) mx = xs[a * inner];
      }
      for (int64_t a = 0; a < axis; a++) sum += exp(xs[a * inner] - mx);
      double ls = log(sum);
      for (int64_t a = 0; a < axis; a++) {
        double d = xs[a * inner] - mx;
        ys[a * inner] = (float)(log_out ? d - ls : exp(d) / sum);
      }
    }
  }
}

/* mplan's integer convention: the softmax of the integer values relative
 * to its largest probability, round(127 p / p_max) = round(127 exp(x -
 * max)): the top class is 127 and the others keep their ratios (127 p
 * itself would round a 1000-class distribution to zeros). */
void mp_k_softmax_i8(int64_t outer, int64_t axis, int64_t inner,
                     const int8_t *x, int8_t *y) {
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t in = 0; in < inner; in++) {
      const int8_t *xs = x + o * axis * inner + in;
      int8_t *ys = y + o * axis * inner + in;
      int mx = -128;
      for (int64_t a = 0; a < axis; a++) {
        if (xs[a * inner] > mx) mx = xs[a * inner];
      }
      for (int64_t a = 0; a < axis; a++) {
        ys[a * inner] = (int8_t)lround(127 * exp(xs[a * inner] - mx));
      }
    }
  }
}
