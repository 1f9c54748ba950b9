/*
 * k_index.c -- index, layout and selection kernels: ArgMax/ArgMin,
 * GatherElements/ScatterElements, GatherND/ScatterND, Trilu, CumSum,
 * Hardmax, DepthToSpace/SpaceToDepth, Tile, Expand, OneHot, TopK and the
 * float classes (IsNaN, IsInf).
 *
 * Invariants:
 *   1. Indices reach a kernel already checked and normalised to
 *      [0, len) (the runtime fails the op on one out of range), so a
 *      kernel never reads or writes outside its tensors.
 *   2. Elements are moved as bytes (es bytes each) where the op only
 *      moves them; compared or combined through mp_k_load (floats, as
 *      double) or mp_k_load_i (integers, exactly), and stored through the
 *      same conversions as every other kernel (integers wrap, float to
 *      integer saturates).
 *   3. Ties go to the lower index (ArgMax/ArgMin without select_last_index,
 *      Hardmax, TopK), as ONNX specifies; NaN never wins a comparison.
 */
#include <math.h>
#include <string.h>

#include "mplan/kernels.h"

/* Stores an integer with the element width's truncation (wrapping). */
static void kx_store_i(void *p, int d, size_t k, int64_t v) {
  uint64_t u = (uint64_t)v;
  memcpy((unsigned char *)p + k * mp_kd_size(d), &u, mp_kd_size(d));
}

/* The index of the largest (smallest: is_min) of len elements of x at
 * base, base + inner, ...; ties to the first, or the last with last. */
static int64_t kx_best(int d, const void *x, size_t base, int64_t len,
                       int64_t inner, bool is_min, bool last) {
  int64_t best = 0;
  for (int64_t k = 1; k < len; k++) {
    int c = mp_k_compare(d, x, base + (size_t)(k * inner), x,
                         base + (size_t)(best * inner));
    if (is_min) c = -c;
    if (c > 0 || (c == 0 && last)) best = k;
  }
  return best;
}

void mp_k_arg(int d, bool is_min, bool last, int64_t outer, int64_t len,
              int64_t inner, const void *x, int64_t *y) {
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      y[o * inner + i] = kx_best(d, x, (size_t)(o * len * inner + i), len,
                                 inner, is_min, last);
    }
  }
}

/* Element offset of multi-index idx (rank r) under strides st. */
static int64_t kx_off(uint32_t r, const int64_t *idx, const int64_t *st) {
  int64_t off = 0;
  for (uint32_t d = 0; d < r; d++) off += idx[d] * st[d];
  return off;
}

/* Advances multi-index idx through shape s; false after the last. */
static bool kx_next(const mp_kshape *s, int64_t *idx) {
  for (uint32_t d = s->rank; d-- > 0;) {
    if (++idx[d] < s->dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

/* Offset (strides st) of multi-index at with its axis coordinate v. */
static int64_t kx_off_at(uint32_t r, int64_t *at, const int64_t *st,
                         uint32_t axis, int64_t v) {
  int64_t keep = at[axis];
  at[axis] = v;
  int64_t off = kx_off(r, at, st);
  at[axis] = keep;
  return off;
}

void mp_k_gather_elements(size_t es, const mp_kshape *xs, const mp_kshape *is,
                          uint32_t axis, const int64_t *idx, const void *x,
                          void *y) {
  int64_t st[MP_K_MAX_RANK], at[MP_K_MAX_RANK] = {0};
  mp_kshape_strides(xs, st);
  int64_t n = mp_kshape_count(is);
  for (int64_t i = 0; i < n; i++) {
    int64_t src = kx_off_at(xs->rank, at, st, axis, idx[i]);
    memcpy((char *)y + (size_t)i * es, (const char *)x + (size_t)src * es, es);
    (void)kx_next(is, at);
  }
}

/* One reduction of ScatterElements/ScatterND: dst[k] = dst[k] op src[j]. */
static void kx_reduce(mp_kscatter red, int d, void *dst, size_t k,
                      const void *src, size_t j) {
  size_t es = mp_kd_size(d);
  if (red == MP_KSCATTER_NONE) {
    memcpy((char *)dst + k * es, (const char *)src + j * es, es);
    return;
  }
  if (red == MP_KSCATTER_MAX || red == MP_KSCATTER_MIN) {
    int c = mp_k_compare(d, src, j, dst, k);
    if ((red == MP_KSCATTER_MAX && c > 0) || (red == MP_KSCATTER_MIN && c < 0))
      memcpy((char *)dst + k * es, (const char *)src + j * es, es);
    return;
  }
  if (mp_kd_is_float(d)) {
    double a = mp_k_load(dst, d, k), b = mp_k_load(src, d, j);
    mp_k_store(dst, d, k, red == MP_KSCATTER_ADD ? a + b : a * b);
    return;
  }
  uint64_t a = (uint64_t)mp_k_load_i(dst, d, k),
           b = (uint64_t)mp_k_load_i(src, d, j);
  kx_store_i(dst, d, k, (int64_t)(red == MP_KSCATTER_ADD ? a + b : a * b));
}

void mp_k_scatter_elements(int d, mp_kscatter red, const mp_kshape *xs,
                           const mp_kshape *is, uint32_t axis,
                           const int64_t *idx, const void *x,
                           const void *updates, void *y) {
  size_t es = mp_kd_size(d);
  if (y != x) memmove(y, x, (size_t)mp_kshape_count(xs) * es);
  int64_t st[MP_K_MAX_RANK], at[MP_K_MAX_RANK] = {0};
  mp_kshape_strides(xs, st);
  int64_t n = mp_kshape_count(is);
  for (int64_t i = 0; i < n; i++) {
    int64_t dst = kx_off_at(xs->rank, at, st, axis, idx[i]);
    kx_reduce(red, d, y, (size_t)dst, updates, (size_t)i);
    (void)kx_next(is, at);
  }
}

void mp_k_gather_nd(size_t es, int64_t batches, int64_t per_batch,
                    int64_t tuples, int64_t block, const int64_t *offs,
                    const void *x, void *y) {
  for (int64_t b = 0; b < batches; b++) {
    for (int64_t t = 0; t < tuples; t++) {
      int64_t i = b * tuples + t;
      memcpy((char *)y + (size_t)(i * block) * es,
             (const char *)x + (size_t)(b * per_batch + offs[i]) * es,
             (size_t)block * es);
    }
  }
}

void mp_k_scatter_nd(int d, mp_kscatter red, int64_t n_x, int64_t tuples,
                     int64_t block, const int64_t *offs, const void *x,
                     const void *updates, void *y) {
  size_t es = mp_kd_size(d);
  if (y != x) memmove(y, x, (size_t)n_x * es);
  for (int64_t t = 0; t < tuples; t++) {
    for (int64_t e = 0; e < block; e++) {
      kx_reduce(red, d, y, (size_t)(offs[t] + e), updates,
                (size_t)(t * block + e));
    }
  }
}

void mp_k_trilu(size_t es, int64_t batches, int64_t rows, int64_t cols,
                bool upper, int64_t k, const void *x, void *y) {
  for (int64_t b = 0; b < batches; b++) {
    for (int64_t i = 0; i < rows; i++) {
      for (int64_t j = 0; j < cols; j++) {
        size_t at = (size_t)((b * rows + i) * cols + j) * es;
        bool keep = upper ? j - i >= k : j - i <= k;
        if (keep) {
          memmove((char *)y + at, (const char *)x + at, es);
        } else {
          memset((char *)y + at, 0, es);
        }
      }
    }
  }
}

void mp_k_cumsum(int d, bool exclusive, bool reverse, int64_t outer,
                 int64_t len, int64_t inner, const void *x, void *y) {
  bool fl = mp_kd_is_float(d);
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      double sf = 0;
      uint64_t si = 0;
      for (int64_t s = 0; s < len; s++) {
        int64_t k = reverse ? len - 1 - s : s;
        size_t at = (size_t)((o * len + k) * inner + i);
        double vf = fl ? mp_k_load(x, d, at) : 0;
        uint64_t vi = fl ? 0 : (uint64_t)mp_k_load_i(x, d, at);
        if (!exclusive) sf += vf, si += vi;
        if (fl) {
          mp_k_store(y, d, at, sf);
        } else {
          kx_store_i(y, d, at, (int64_t)si);
        }
        if (exclusive) sf += vf, si += vi;
      }
    }
  }
}

void mp_k_hardmax(int d, int64_t outer, int64_t len, int64_t inner,
                  const void *x, void *y) {
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      size_t base = (size_t)(o * len * inner + i);
      int64_t best = kx_best(d, x, base, len, inner, false, false);
      for (int64_t k = 0; k < len; k++) {
        mp_k_store(y, d, base + (size_t)(k * inner), k == best ? 1.0 : 0.0);
      }
    }
  }
}

void mp_k_depth_space(size_t es, bool to_space, bool crd, int64_t n, int64_t c,
                      int64_t h, int64_t w, int64_t b, const void *x, void *y) {
  /* The space side is [n, c, h * b, w * b]; the depth side [n, c * b * b,
   * h, w]. DCR puts the block offset first in the depth channel, CRD
   * last. SpaceToDepth is DCR. */
  for (int64_t ni = 0; ni < n; ni++) {
    for (int64_t ci = 0; ci < c; ci++) {
      for (int64_t bi = 0; bi < b; bi++) {
        for (int64_t bj = 0; bj < b; bj++) {
          int64_t dc = crd ? (ci * b + bi) * b + bj : (bi * b + bj) * c + ci;
          for (int64_t hi = 0; hi < h; hi++) {
            for (int64_t wi = 0; wi < w; wi++) {
              int64_t deep = ((ni * c * b * b + dc) * h + hi) * w + wi;
              int64_t wide =
                  ((ni * c + ci) * h * b + hi * b + bi) * w * b + wi * b + bj;
              int64_t from = to_space ? deep : wide,
                      to = to_space ? wide : deep;
              memcpy((char *)y + (size_t)to * es,
                     (const char *)x + (size_t)from * es, es);
            }
          }
        }
      }
    }
  }
}

void mp_k_tile(size_t es, const mp_kshape *xs, const mp_kshape *ys,
               const void *x, void *y) {
  int64_t st[MP_K_MAX_RANK], at[MP_K_MAX_RANK] = {0}, src[MP_K_MAX_RANK];
  mp_kshape_strides(xs, st);
  int64_t n = mp_kshape_count(ys);
  for (int64_t i = 0; i < n; i++) {
    for (uint32_t d = 0; d < ys->rank; d++) src[d] = at[d] % xs->dims[d];
    memcpy((char *)y + (size_t)i * es,
           (const char *)x + (size_t)kx_off(xs->rank, src, st) * es, es);
    (void)kx_next(ys, at);
  }
}

void mp_k_expand(size_t es, const mp_kshape *xs, const mp_kshape *ys,
                 const void *x, void *y) {
  int64_t st[MP_K_MAX_RANK], bst[MP_K_MAX_RANK], at[MP_K_MAX_RANK] = {0};
  mp_kshape_strides(xs, st);
  uint32_t lead = ys->rank - xs->rank;
  for (uint32_t d = 0; d < ys->rank; d++) {
    bst[d] = d < lead || xs->dims[d - lead] == 1 ? 0 : st[d - lead];
  }
  int64_t n = mp_kshape_count(ys);
  for (int64_t i = 0; i < n; i++) {
    memcpy((char *)y + (size_t)i * es,
           (const char *)x + (size_t)kx_off(ys->rank, at, bst) * es, es);
    (void)kx_next(ys, at);
  }
}

void mp_k_onehot(size_t es, int64_t outer, int64_t depth, int64_t inner,
                 const int64_t *idx, const void *off, const void *on, void *y) {
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t k = 0; k < depth; k++) {
      for (int64_t i = 0; i < inner; i++) {
        int64_t v = idx[o * inner + i];
        memcpy((char *)y + (size_t)((o * depth + k) * inner + i) * es,
               v == k ? on : off, es);
      }
    }
  }
}

void mp_k_topk(int d, bool largest, int64_t outer, int64_t len, int64_t inner,
               int64_t k, const void *x, void *values, int64_t *indices,
               int64_t *ws) {
  size_t es = mp_kd_size(d);
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      size_t base = (size_t)(o * len * inner + i);
      /* ws[0..n) holds the best n so far, best first: insertion keeps it
       * sorted, and an equal element goes after those already in (the
       * lower index wins a tie). */
      int64_t n = 0;
      for (int64_t e = 0; e < len; e++) {
        int64_t at = n;
        while (at > 0) {
          int c = mp_k_compare(d, x, base + (size_t)(e * inner), x,
                               base + (size_t)(ws[at - 1] * inner));
          if (!largest) c = -c;
          if (c <= 0) break;
          at--;
        }
        if (at >= k) continue;
        int64_t last = n < k ? n : k - 1;
        for (int64_t j = last; j > at; j--) ws[j] = ws[j - 1];
        ws[at] = e;
        if (n < k) n++;
      }
      for (int64_t j = 0; j < k; j++) {
        size_t to = (size_t)((o * k + j) * inner + i);
        indices[to] = ws[j];
        memcpy((char *)values + to * es,
               (const char *)x + (base + (size_t)(ws[j] * inner)) * es, es);
      }
    }
  }
}

void mp_k_fpclass(int d, bool nan, bool neg, bool pos, const void *x,
                  uint8_t *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double v = mp_k_load(x, d, i);
    y[i] = nan ? v != v : (isinf(v) && ((v > 0 && pos) || (v < 0 && neg)));
  }
}

void mp_k_reverse_sequence(size_t es, bool time_major, int64_t t, int64_t b,
                           int64_t rest, const int64_t *lens, const void *x,
                           void *y) {
  for (int64_t bi = 0; bi < b; bi++) {
    for (int64_t ti = 0; ti < t; ti++) {
      int64_t from = ti < lens[bi] ? lens[bi] - 1 - ti : ti;
      int64_t to_at = time_major ? ti * b + bi : bi * t + ti;
      int64_t from_at = time_major ? from * b + bi : bi * t + from;
      memcpy((char *)y + (size_t)(to_at * rest) * es,
             (const char *)x + (size_t)(from_at * rest) * es,
             (size_t)rest * es);
    }
  }
}

void mp_k_max_unpool(size_t es, int64_t nx, const void *x, const int64_t *idx,
                     uint32_t rank, const int64_t *from, const int64_t *to,
                     void *y) {
  int64_t ny = 1;
  for (uint32_t k = 0; k < rank; k++) ny *= to[k];
  memset(y, 0, (size_t)ny * es);
  const char *xs = x;
  char *ys = y;
  for (int64_t i = 0; i < nx; i++) {
    int64_t rest = idx[i], at = 0, stride = 1;
    for (uint32_t k = rank; k-- > 0;) {
      at += (rest % from[k]) * stride;
      rest /= from[k];
      stride *= to[k];
    }
    memcpy(ys + (size_t)at * es, xs + (size_t)i * es, es);
  }
}
