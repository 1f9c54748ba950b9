/*
 * k_pool.c -- MaxPool, AveragePool (GlobalAveragePool is an AveragePool
 * whose window is the whole plane) and reductions.
 *
 * Invariants:
 *   1. A window is clipped to the input; MaxPool over an empty window
 *      writes the dtype's lowest value, AveragePool 0.
 *   2. AveragePool divides by the number of window positions inside the
 *      input, or, with count_include_pad, inside the padded input
 *      [-pad, in + pad_end) (ONNX/ONNX Runtime semantics with ceil_mode).
 *   3. MaxPool's index is that of the first element holding the value
 *      written (the first NaN, when one is read), so ties go to the
 *      earliest position in the window, as ONNX Runtime's strict > does.
 */
#include <math.h>

#include "mplan/kernels.h"

static int64_t kp_plane(const int64_t *d) {
  return d[0] * d[1] * d[2];
}

typedef struct kp_win {
  double best, sum;
  int64_t inside, padded;
  int64_t at[3]; /* where best was read (max), or -1 */
} kp_win;

static void kp_window(const mp_kpool *p, int d, const void *xc,
                      const int64_t *o, bool max, kp_win *w) {
  w->best = -INFINITY;
  w->sum = 0;
  w->inside = w->padded = 0;
  w->at[0] = w->at[1] = w->at[2] = -1;
  for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
    int64_t i0 = o[0] * p->stride[0] - p->pad[0] + k0 * p->dil[0];
    if (i0 >= p->in[0] + p->pad_end[0]) continue;
    for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
      int64_t i1 = o[1] * p->stride[1] - p->pad[1] + k1 * p->dil[1];
      if (i1 >= p->in[1] + p->pad_end[1]) continue;
      for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
        int64_t i2 = o[2] * p->stride[2] - p->pad[2] + k2 * p->dil[2];
        if (i2 >= p->in[2] + p->pad_end[2]) continue;
        w->padded++;
        if (i0 < 0 || i1 < 0 || i2 < 0 || i0 >= p->in[0] || i1 >= p->in[1] ||
            i2 >= p->in[2]) {
          continue;
        }
        double v =
            mp_k_load(xc, d, (size_t)((i0 * p->in[1] + i1) * p->in[2] + i2));
        w->inside++;
        if (max) {
          /* The first element inside, then a larger one or the first
           * NaN (which then stays): the value of invariant 1's rule,
           * and the index of its first occurrence. */
          if (w->at[0] < 0 || ((v > w->best || v != v) && w->best == w->best)) {
            w->best = v;
            w->at[0] = i0;
            w->at[1] = i1;
            w->at[2] = i2;
          }
        } else {
          w->sum += p->lp > 0 ? pow(fabs(v), p->lp) : v;
        }
      }
    }
  }
}

/* The index MaxPool's Indices output gives for w's maximum in plane pl. */
static int64_t kp_index(const mp_kpool *p, const kp_win *w, int64_t pl,
                        bool col_major) {
  if (w->at[0] < 0) return -1;
  const int64_t *i = w->at, *n = p->in;
  int64_t pos = col_major ? i[0] + n[0] * (i[1] + n[1] * i[2])
                          : (i[0] * n[1] + i[1]) * n[2] + i[2];
  return pl * kp_plane(n) + pos;
}

static void kp_run(const mp_kpool *p, int d, const void *x, void *y, bool max,
                   int64_t *idx, bool col_major) {
  int64_t pin = kp_plane(p->in), pout = kp_plane(p->out);
  size_t es = mp_kd_size(d);
  for (int64_t pl = 0; pl < p->n * p->c; pl++) {
    const char *xc = (const char *)x + (size_t)(pl * pin) * es;
    int64_t o[3];
    for (o[0] = 0; o[0] < p->out[0]; o[0]++)
      for (o[1] = 0; o[1] < p->out[1]; o[1]++)
        for (o[2] = 0; o[2] < p->out[2]; o[2]++) {
          kp_win w;
          kp_window(p, d, xc, o, max, &w);
          size_t at = (size_t)(pl * pout +
                               (o[0] * p->out[1] + o[1]) * p->out[2] + o[2]);
          double v;
          if (max) {
            v = w.best;
            if (idx) idx[at] = kp_index(p, &w, pl, col_major);
          } else if (p->lp > 0) {
            v = pow(w.sum, 1 / p->lp);
          } else {
            int64_t cnt = p->count_include_pad ? w.padded : w.inside;
            v = cnt ? w.sum / (double)cnt : 0;
            if (!mp_kd_is_float(d))
              v = v < 0 ? -floor(-v + 0.5) : floor(v + 0.5);
          }
          mp_k_store(y, d, at, v);
        }
  }
}

void mp_k_lppool(const mp_kpool *p, int d, const void *x, void *y) {
  kp_run(p, d, x, y, false, NULL, false);
}

void mp_k_maxpool(const mp_kpool *p, int d, const void *x, void *y) {
  kp_run(p, d, x, y, true, NULL, false);
}

void mp_k_maxpool_idx(const mp_kpool *p, int d, const void *x, void *y,
                      int64_t *idx, bool col_major) {
  kp_run(p, d, x, y, true, idx, col_major);
}

void mp_k_avgpool(const mp_kpool *p, int d, const void *x, void *y) {
  kp_run(p, d, x, y, false, NULL, false);
}

static double kr_init(mp_kreduce op) {
  switch (op) {
    case MP_KR_MAX:
      return -INFINITY;
    case MP_KR_MIN:
      return INFINITY;
    case MP_KR_PROD:
      return 1;
    default:
      return 0;
  }
}

static double kr_step(mp_kreduce op, double acc, double v) {
  switch (op) {
    case MP_KR_MAX:
      return v > acc || v != v ? v : acc;
    case MP_KR_MIN:
      return v < acc || v != v ? v : acc;
    case MP_KR_PROD:
      return acc * v;
    case MP_KR_L1:
      return acc + fabs(v);
    case MP_KR_L2:
    case MP_KR_SUM_SQUARE:
      return acc + v * v;
    case MP_KR_LOG_SUM_EXP:
      return acc + exp(v);
    default:
      return acc + v;
  }
}

static double kr_final(mp_kreduce op, double acc, int64_t count, int d) {
  /* a bool max (min) over nothing is false (true): the dtype's least
   * (greatest) value, as -inf (inf) is for the numbers */
  if (d == MP_KD_BOOL && count == 0) return op == MP_KR_MIN;
  switch (op) {
    case MP_KR_MEAN: {
      double v = count ? acc / (double)count : 0;
      if (!mp_kd_is_float(d)) v = v < 0 ? -floor(-v + 0.5) : floor(v + 0.5);
      return v;
    }
    case MP_KR_L2:
      return sqrt(acc);
    case MP_KR_LOG_SUM:
    case MP_KR_LOG_SUM_EXP:
      return log(acc);
    default:
      return acc;
  }
}

void mp_k_reduce(mp_kreduce op, int d, const mp_kshape *xs, uint32_t mask,
                 const void *x, void *y) {
  /* Each output (the kept dims, in order) is reduced by scanning its
   * elements in input order: no accumulator array, so no allocation. */
  int64_t on = 1, count = 1;
  for (uint32_t i = xs->rank; i-- > 0;) {
    if (mask >> i & 1) {
      count *= xs->dims[i];
    } else {
      on *= xs->dims[i];
    }
  }
  int64_t n = mp_kshape_count(xs);
  /* Reduce output by output: decompose o into the kept dims, iterate the
   * reduced dims. */
  for (int64_t o = 0; o < on; o++) {
    int64_t base = 0, rem = o, stride = 1;
    int64_t xstride[MP_K_MAX_RANK];
    for (uint32_t i = xs->rank; i-- > 0;) {
      xstride[i] = stride;
      stride *= xs->dims[i];
    }
    for (uint32_t i = xs->rank; i-- > 0;) {
      if (mask >> i & 1) continue;
      int64_t di = rem % xs->dims[i];
      rem /= xs->dims[i];
      base += di * xstride[i];
    }
    double acc = kr_init(op);
    int64_t idx[MP_K_MAX_RANK] = {0};
    for (int64_t c = 0; c < count && n > 0; c++) {
      int64_t off = base;
      for (uint32_t i = 0; i < xs->rank; i++) off += idx[i] * xstride[i];
      acc = kr_step(op, acc, mp_k_load(x, d, (size_t)off));
      for (uint32_t i = xs->rank; i-- > 0;) {
        if (!(mask >> i & 1)) continue;
        if (++idx[i] < xs->dims[i]) break;
        idx[i] = 0;
      }
    }
    mp_k_store(y, d, (size_t)o, kr_final(op, acc, count, d));
  }
}
