/*
 * k_random.c -- the random ops: RandomUniform(Like), RandomNormal(Like),
 * Bernoulli, Multinomial and Dropout in training mode, over one
 * counter-based stream.
 *
 * ONNX leaves the generator to the implementation (two runtimes give
 * different values for the same seed), so the numbers are mplan's own;
 * what they promise is determinism: a value depends only on the op's
 * stream key and the element's index, never on the order elements are
 * computed in, the plan, the target or an earlier op. So a poison run,
 * the no-reuse run it is compared with, the rewritten graph and the
 * rv64 runner all draw the same uniforms.
 *
 * Invariants:
 *   1. Draw i of stream key is splitmix64's output function applied to
 *      key + (i + 1) x 0x9e3779b97f4a7c15: a bijection of the counter for
 *      a fixed key, so no two draws of one stream repeat a state.
 *   2. A uniform takes the draw's top 53 bits: k / 2^53, in [0, 1).
 *   3. A normal value i is Box-Muller over draws 2i and 2i + 1:
 *      sqrt(-2 ln(1 - u1)) cos(2 pi u2), so the logarithm never sees 0.
 *   4. Bernoulli is 1 where u < p: p <= 0 always gives 0, p >= 1 always
 *      1. Dropout keeps element i where u >= ratio and scales it by
 *      1 / (1 - ratio), the reference's mask and scale.
 *   5. Every value is computed in double and rounded once, at the store
 *      (mp_k_store), so every output dtype sees the same draws.
 *   6. Multinomial sample s of row b takes uniform b x samples + s and
 *      returns the first class whose running sum of exp(x - max) exceeds
 *      u times the row's total (the last class with a positive weight
 *      when rounding leaves none): a class of weight 0 or NaN is never
 *      drawn; a row with no positive weight gives class 0. The running
 *      sums are computed once a row, and each sample bisects them.
 */
#include <math.h>
#include <string.h>

#include "mplan/kernels.h"

#define K_GOLDEN 0x9e3779b97f4a7c15u

static uint64_t k_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

uint64_t mp_k_rand_key(bool has_seed, double seed, const char *name,
                       uint64_t visit) {
  uint64_t key;
  if (has_seed) {
    double s = seed == 0 ? 0 : seed; /* -0 and +0 are one seed */
    memcpy(&key, &s, sizeof key);
    key = k_mix(key ^ 0x5eedu);
  } else {
    key = 0xcbf29ce484222325u; /* FNV-1a over the op's name */
    for (const unsigned char *p = (const unsigned char *)name; p && *p; p++) {
      key = (key ^ *p) * 0x100000001b3u;
    }
    key = k_mix(key);
  }
  return visit ? k_mix(key + visit * K_GOLDEN) : key;
}

uint64_t mp_k_rand_bits(uint64_t key, uint64_t i) {
  return k_mix(key + (i + 1) * K_GOLDEN);
}

double mp_k_rand_uniform(uint64_t key, uint64_t i) {
  return (double)(mp_k_rand_bits(key, i) >> 11) * 0x1p-53;
}

double mp_k_rand_normal(uint64_t key, uint64_t i) {
  double u1 = mp_k_rand_uniform(key, 2 * i);
  double u2 = mp_k_rand_uniform(key, 2 * i + 1);
  return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}

void mp_k_random(const mp_krandom *r, int64_t count, const void *x, int xd,
                 void *y, int yd, bool *mask) {
  double scale = r->a < 1 ? 1.0 / (1.0 - r->a) : 0;
  for (int64_t i = 0; i < count; i++) {
    uint64_t k = (uint64_t)i;
    double v = 0;
    switch (r->kind) {
      case MP_KRAND_UNIFORM:
        v = r->a + (r->b - r->a) * mp_k_rand_uniform(r->key, k);
        break;
      case MP_KRAND_NORMAL:
        v = r->a + r->b * mp_k_rand_normal(r->key, k);
        break;
      case MP_KRAND_BERNOULLI:
        v = mp_k_rand_uniform(r->key, k) < mp_k_load(x, xd, (size_t)i);
        break;
      case MP_KRAND_DROPOUT: {
        bool keep = mp_k_rand_uniform(r->key, k) >= r->a;
        v = keep ? mp_k_load(x, xd, (size_t)i) * scale : 0;
        if (mask) mask[i] = keep;
        break;
      }
      default:
        break;
    }
    mp_k_store(y, yd, (size_t)i, v);
  }
}

void mp_k_multinomial(uint64_t key, int64_t batch, int64_t classes,
                      int64_t samples, const void *x, int xd, void *y, int yd,
                      double *run) {
  for (int64_t b = 0; b < batch; b++) {
    const size_t row = (size_t)(b * classes);
    double top = -INFINITY, total = 0;
    int64_t last = 0; /* the last class of positive weight, or 0 */
    for (int64_t c = 0; c < classes; c++) {
      double v = mp_k_load(x, xd, row + (size_t)c);
      if (v > top) top = v;
    }
    /* run[c]: the sum of the positive weights of classes 0..c, rising
     * only at a class of positive weight (0 or NaN is never drawn) */
    for (int64_t c = 0; c < classes; c++) {
      double w = exp(mp_k_load(x, xd, row + (size_t)c) - top);
      if (w > 0) total += w, last = c;
      run[c] = total;
    }
    for (int64_t s = 0; s < samples; s++) {
      double want = mp_k_rand_uniform(key, (uint64_t)(b * samples + s)) * total;
      int64_t lo = 0, hi = classes; /* the first c with run[c] > want */
      while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (run[mid] > want) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      mp_k_store(y, yd, (size_t)(b * samples + s),
                 (double)(lo < classes ? lo : last));
    }
  }
}
