/*
 * k_stats.c -- kernels built on per-slice statistics: Group- and
 * InstanceNormalization, LRN, ImageScaler, MeanVarianceNormalization,
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 *
 * Invariants:
 *   1. Statistics (means, variances, sums of squares, exponential sums and
 *      loss sums) accumulate in double in a fixed order and every output
 *      is rounded once to its dtype (f32 or f64: mp_k_load/mp_k_store).
 *   2. A loss's class indices arrive checked: in [0, C), or the
 *      ignore_index (the runtime fails the op on any other).
 */
#include <math.h>
#include <string.h>

#include "mplan/kernels.h"

void mp_k_groupnorm(int d, int64_t n, int64_t c, int64_t rest, int64_t groups,
                    bool per_channel, const void *x, const void *scale,
                    const void *bias, double eps, void *y) {
  if (groups <= 0) return; /* no channel (an empty axis 1) */
  int64_t cg = c / groups, len = cg * rest;
  for (int64_t b = 0; b < n; b++) {
    for (int64_t g = 0; g < groups; g++) {
      size_t base = (size_t)((b * c + g * cg) * rest);
      double s = 0, ss = 0;
      for (int64_t i = 0; i < len; i++) s += mp_k_load(x, d, base + (size_t)i);
      double mu = s / (double)len;
      for (int64_t i = 0; i < len; i++) {
        double v = mp_k_load(x, d, base + (size_t)i) - mu;
        ss += v * v;
      }
      double den = sqrt(ss / (double)len + eps);
      for (int64_t k = 0; k < cg; k++) {
        size_t at = per_channel ? (size_t)(g * cg + k) : (size_t)g;
        size_t cb = base + (size_t)(k * rest);
        double a = mp_k_load(scale, d, at) / den;
        double off = mp_k_load(bias, d, at);
        for (int64_t i = 0; i < rest; i++) {
          double v = mp_k_load(x, d, cb + (size_t)i);
          mp_k_store(y, d, cb + (size_t)i, (v - mu) * a + off);
        }
      }
    }
  }
}

void mp_k_lrn(int d, int64_t n, int64_t c, int64_t rest, int64_t size,
              double alpha, double beta, double bias, const void *x, void *y) {
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo; /* floor, ceil */
  for (int64_t b = 0; b < n; b++) {
    for (int64_t ch = 0; ch < c; ch++) {
      int64_t c0 = ch - lo < 0 ? 0 : ch - lo;
      int64_t c1 = ch + hi >= c ? c - 1 : ch + hi;
      for (int64_t i = 0; i < rest; i++) {
        double sq = 0;
        for (int64_t k = c0; k <= c1; k++) {
          double v = mp_k_load(x, d, (size_t)((b * c + k) * rest + i));
          sq += v * v;
        }
        size_t at = (size_t)((b * c + ch) * rest + i);
        double den = pow(bias + alpha / (double)size * sq, beta);
        mp_k_store(y, d, at, mp_k_load(x, d, at) / den);
      }
    }
  }
}

void mp_k_lpnorm(int d, int64_t outer, int64_t len, int64_t inner, int p,
                 const void *x, void *y) {
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      size_t base = (size_t)(o * len * inner + i);
      double s = 0;
      for (int64_t k = 0; k < len; k++) {
        double v = mp_k_load(x, d, base + (size_t)(k * inner));
        s += p == 1 ? fabs(v) : v * v;
      }
      double norm = p == 1 ? s : sqrt(s);
      for (int64_t k = 0; k < len; k++) {
        size_t at = base + (size_t)(k * inner);
        double v = mp_k_load(x, d, at);
        mp_k_store(y, d, at, norm != 0 ? v / norm : 0);
      }
    }
  }
}

void mp_k_image_scaler(int d, int64_t n, int64_t c, int64_t rest, double scale,
                       const double *bias, const void *x, void *y) {
  for (int64_t b = 0; b < n; b++) {
    for (int64_t ch = 0; ch < c; ch++) {
      for (int64_t i = 0; i < rest; i++) {
        size_t at = (size_t)((b * c + ch) * rest + i);
        mp_k_store(y, d, at, mp_k_load(x, d, at) * scale + bias[ch]);
      }
    }
  }
}

void mp_k_mvn(int d, const mp_kshape *xs, uint32_t mask, const void *x, void *y,
              double *ws) {
  /* ws: the mean and the mean square of each kept index, by the reduced
   * index (the kept dims in order), then the count per kept index */
  int64_t kept = 1, red = 1, kst[MP_K_MAX_RANK];
  for (uint32_t a = xs->rank; a-- > 0;) {
    kst[a] = (mask >> a) & 1u ? 0 : kept;
    if ((mask >> a) & 1u) {
      red *= xs->dims[a];
    } else {
      kept *= xs->dims[a];
    }
  }
  double *mean = ws, *msq = ws + kept;
  for (int64_t k = 0; k < kept; k++) mean[k] = msq[k] = 0;
  int64_t n = mp_kshape_count(xs), at[MP_K_MAX_RANK] = {0};
  for (int pass = 0; pass < 2; pass++) {
    memset(at, 0, sizeof at);
    for (int64_t i = 0; i < n; i++) {
      int64_t k = 0;
      for (uint32_t a = 0; a < xs->rank; a++) k += at[a] * kst[a];
      double v = mp_k_load(x, d, (size_t)i);
      if (pass == 0) {
        mean[k] += v;
        msq[k] += v * v;
      } else {
        /* ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) */
        double mu = mean[k] / (double)red;
        double var = msq[k] / (double)red - mu * mu;
        mp_k_store(y, d, (size_t)i, (v - mu) / (sqrt(var) + 1e-9));
      }
      for (uint32_t a = xs->rank; a-- > 0;) {
        if (++at[a] < xs->dims[a]) break;
        at[a] = 0;
      }
    }
  }
}

void mp_k_nll_loss(int d, const mp_knll *p, const void *input,
                   const int64_t *target, const void *weight, void *loss) {
  double sum = 0, wsum = 0;
  for (int64_t b = 0; b < p->n; b++) {
    for (int64_t i = 0; i < p->rest; i++) {
      int64_t t = target[b * p->rest + i];
      double l = 0, w = 0;
      if (!p->has_ignore || t != p->ignore) {
        w = weight ? mp_k_load(weight, d, (size_t)t) : 1.0;
        l = -mp_k_load(input, d, (size_t)((b * p->c + t) * p->rest + i)) * w;
      }
      if (p->reduction == MP_KLOSS_NONE) {
        mp_k_store(loss, d, (size_t)(b * p->rest + i), l);
      }
      sum += l;
      wsum += w;
    }
  }
  if (p->reduction == MP_KLOSS_SUM) mp_k_store(loss, d, 0, sum);
  if (p->reduction == MP_KLOSS_MEAN) mp_k_store(loss, d, 0, sum / wsum);
}

void mp_k_log_softmax_axis1(int d, int64_t n, int64_t c, int64_t rest,
                            const void *x, void *y) {
  for (int64_t b = 0; b < n; b++) {
    for (int64_t i = 0; i < rest; i++) {
      double mx = -INFINITY, s = 0;
      for (int64_t k = 0; k < c; k++) {
        double v = mp_k_load(x, d, (size_t)((b * c + k) * rest + i));
        mx = v > mx ? v : mx;
      }
      for (int64_t k = 0; k < c; k++) {
        s += exp(mp_k_load(x, d, (size_t)((b * c + k) * rest + i)) - mx);
      }
      double ls = log(s);
      for (int64_t k = 0; k < c; k++) {
        size_t at = (size_t)((b * c + k) * rest + i);
        mp_k_store(y, d, at, mp_k_load(x, d, at) - mx - ls);
      }
    }
  }
}
