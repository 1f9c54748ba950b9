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

/* ---- LSTM, GRU, RNN ---------------------------------------------------- */

static double rnn_sig(double v) {
  return v >= 0 ? 1 / (1 + exp(-v)) : exp(v) / (1 + exp(v));
}

static double rnn_clip(double v, double clip) {
  return clip > 0 ? (v < -clip ? -clip : v > clip ? clip : v) : v;
}

int mp_k_rnn_gates(int cell) {
  return cell == MP_KCELL_LSTM ? 4 : cell == MP_KCELL_GRU ? 3 : 1;
}

/* Gate g's input: its biases, x . W[g], h . R[g]. */
static double rnn_sum(const float *bd, int64_t gh, int64_t g, const float *xt,
                      const float *wd, int64_t in, const float *h,
                      const float *rd, int64_t hn) {
  double z = bd ? (double)bd[g] + (double)bd[gh + g] : 0.0;
  for (int64_t k = 0; k < in; k++) z += (double)xt[k] * wd[g * in + k];
  for (int64_t k = 0; k < hn; k++) z += (double)h[k] * rd[g * hn + k];
  return z;
}

/* One step of one sequence: hs (and cs) from xt and their values. */
static void rnn_step(const mp_krnn *p, const float *xt, const float *wd,
                     const float *rd, const float *bd, const float *pd,
                     float *hs, float *cs, float *gates) {
  int64_t hn = p->hidden, in = p->input;
  int64_t gh = mp_k_rnn_gates(p->cell) * hn;
  if (p->cell == MP_KCELL_RNN) {
    for (int64_t j = 0; j < hn; j++) {
      gates[j] = (float)tanh(
          rnn_clip(rnn_sum(bd, gh, j, xt, wd, in, hs, rd, hn), p->clip));
    }
    for (int64_t j = 0; j < hn; j++) hs[j] = gates[j];
    return;
  }
  if (p->cell == MP_KCELL_GRU) {
    /* z and r, then h: gates[0..hn) z, [hn..2hn) r, [2hn..3hn) h */
    for (int64_t g = 0; g < 2 * hn; g++) {
      gates[g] = (float)rnn_sig(
          rnn_clip(rnn_sum(bd, gh, g, xt, wd, in, hs, rd, hn), p->clip));
    }
    for (int64_t j = 0; j < hn; j++) {
      int64_t g = 2 * hn + j;
      double xh = (bd ? (double)bd[g] : 0.0), hh = bd ? (double)bd[gh + g] : 0;
      for (int64_t k = 0; k < in; k++) xh += (double)xt[k] * wd[g * in + k];
      double rj = gates[hn + j];
      if (p->linear_before_reset) {
        for (int64_t k = 0; k < hn; k++) hh += (double)hs[k] * rd[g * hn + k];
        hh *= rj;
      } else {
        for (int64_t k = 0; k < hn; k++) {
          hh += (double)gates[hn + k] * hs[k] * rd[g * hn + k];
        }
      }
      gates[g] = (float)tanh(rnn_clip(xh + hh, p->clip));
    }
    for (int64_t j = 0; j < hn; j++) {
      double z = gates[j];
      hs[j] = (float)((1 - z) * gates[2 * hn + j] + z * hs[j]);
    }
    return;
  }
  for (int64_t g = 0; g < gh; g++) {
    gates[g] = (float)rnn_sum(bd, gh, g, xt, wd, in, hs, rd, hn);
  }
  for (int64_t j = 0; j < hn; j++) {
    double cp = cs[j];
    double zi = gates[j], zo = gates[hn + j], zf = gates[2 * hn + j];
    double zc = gates[3 * hn + j];
    if (pd) {
      zi += (double)pd[j] * cp;
      zf += (double)pd[2 * hn + j] * cp;
    }
    double ig = rnn_sig(rnn_clip(zi, p->clip));
    double fg = rnn_sig(rnn_clip(zf, p->clip));
    double cg = tanh(rnn_clip(zc, p->clip));
    float cn = (float)(fg * cp + ig * cg);
    if (pd) zo += (double)pd[hn + j] * cn;
    double og = rnn_sig(rnn_clip(zo, p->clip));
    cs[j] = cn;
    hs[j] = (float)(og * tanh((double)cn));
  }
}

void mp_k_rnn(const mp_krnn *p, const float *x, const float *w, const float *r,
              const float *b, const int32_t *lens, const float *h0,
              const float *c0, const float *peep, float *y, float *yh,
              float *yc, float *scratch) {
  int64_t hn = p->hidden, in = p->input, nb = p->batch, dirs = p->dirs;
  int64_t gh = mp_k_rnn_gates(p->cell) * hn;
  float *h = scratch, *c = h + nb * hn, *gates = c + nb * hn; /* gh */
  for (int64_t d = 0; d < dirs; d++) {
    const float *wd = w + d * gh * in, *rd = r + d * gh * hn;
    const float *bd = b ? b + d * 2 * gh : NULL;
    const float *pd = peep ? peep + d * 3 * hn : NULL;
    bool back = dirs == 2 ? d == 1 : p->reverse != 0;
    for (int64_t n = 0; n < nb; n++) {
      /* the state of (batch n, direction d), in yh's layout */
      int64_t at = (p->layout ? n * dirs + d : d * nb + n) * hn;
      float *hs = h + n * hn, *cs = c + n * hn;
      for (int64_t j = 0; j < hn; j++) {
        hs[j] = h0 ? h0[at + j] : 0.0f;
        cs[j] = c0 ? c0[at + j] : 0.0f;
      }
      int64_t len = lens ? lens[n] : p->seq;
      if (len < 0) len = 0;
      if (len > p->seq) len = p->seq;
      for (int64_t s = 0; s < p->seq; s++) {
        int64_t t = s >= len ? s : back ? len - 1 - s : s;
        float *yt = y ? y + (p->layout ? (n * p->seq + t) * dirs + d
                                       : (t * dirs + d) * nb + n) *
                                hn
                      : NULL;
        if (s >= len) { /* past the sequence's end: zeros */
          for (int64_t j = 0; yt && j < hn; j++) yt[j] = 0.0f;
          continue;
        }
        const float *xt = x + (p->layout ? n * p->seq + t : t * nb + n) * in;
        rnn_step(p, xt, wd, rd, bd, pd, hs, cs, gates);
        for (int64_t j = 0; yt && j < hn; j++) yt[j] = hs[j];
      }
      for (int64_t j = 0; j < hn; j++) {
        if (yh) yh[at + j] = hs[j];
        if (yc) yc[at + j] = cs[j];
      }
    }
  }
}
