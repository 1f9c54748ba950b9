/*
 * k_train.c -- the training-mode kernels: BatchNormalization's batch
 * statistics and the three optimizers of ONNX's ai.onnx.preview.training
 * domain (Adagrad, Momentum with its Nesterov mode, Adam). Each is
 * deterministic: one step of an update rule on given tensors.
 *
 * Invariants:
 *   1. Everything is computed in double from the f32 inputs and rounded
 *      once, at the store: an output depends on no other output's
 *      rounding.
 *   2. The update of element i reads element i of each input only, so
 *      the caller may alias an output with the input it replaces (the
 *      runtime does not: it writes them out of place).
 */
#include <math.h>

#include "mplan/kernels.h"

void mp_k_batchnorm_stats_f32(int64_t n, int64_t c, int64_t rest,
                              const float *x, float *mean, float *var) {
  double count = (double)(n * rest);
  for (int64_t ch = 0; ch < c; ch++) {
    double s = 0, ss = 0;
    for (int64_t b = 0; b < n; b++) {
      const float *xs = x + (b * c + ch) * rest;
      for (int64_t i = 0; i < rest; i++) s += xs[i];
    }
    double mu = count > 0 ? s / count : 0;
    for (int64_t b = 0; b < n; b++) {
      const float *xs = x + (b * c + ch) * rest;
      for (int64_t i = 0; i < rest; i++) ss += (xs[i] - mu) * (xs[i] - mu);
    }
    mean[ch] = (float)mu;
    var[ch] = (float)(count > 0 ? ss / count : 0);
  }
}

void mp_k_optim_f32(const mp_koptim *p, int64_t count, const float *x,
                    const float *g, const float *s1, const float *s2,
                    float *x_new, float *s1_new, float *s2_new) {
  double r = p->r, t = (double)p->t;
  if (p->kind == MP_KOPT_ADAGRAD) r /= 1 + t * p->decay;
  if (p->kind == MP_KOPT_ADAM && p->t > 0) {
    r *= sqrt(1 - pow(p->beta, t)) / (1 - pow(p->alpha, t));
  }
  /* Momentum's first step takes the gradient whole. */
  double gain = p->t > 0 ? p->beta : 1;
  for (int64_t i = 0; i < count; i++) {
    double gr = p->norm * x[i] + g[i];
    double xn;
    switch (p->kind) {
      case MP_KOPT_ADAGRAD: {
        double h = s1[i] + gr * gr;
        s1_new[i] = (float)h;
        xn = x[i] - r * gr / (sqrt(h) + p->epsilon);
        break;
      }
      case MP_KOPT_MOMENTUM:
      case MP_KOPT_NESTEROV: {
        double v = p->alpha * s1[i] + gain * gr;
        s1_new[i] = (float)v;
        xn = x[i] - r * (p->kind == MP_KOPT_NESTEROV ? gr + p->alpha * v : v);
        break;
      }
      default: { /* MP_KOPT_ADAM */
        double v = p->alpha * s1[i] + (1 - p->alpha) * gr;
        double h = p->beta * s2[i] + (1 - p->beta) * gr * gr;
        s1_new[i] = (float)v;
        s2_new[i] = (float)h;
        xn = (1 - p->norm_post) * (x[i] - r * v / (sqrt(h) + p->epsilon));
        break;
      }
    }
    x_new[i] = (float)xn;
  }
}
