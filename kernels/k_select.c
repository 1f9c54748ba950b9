/*
 * k_select.c -- the selection kernels, whose output size depends on the
 * data: NonZero, Compress, Unique and NonMaxSuppression. Each counts
 * first (the runtime compares the count with the plan's shape before
 * anything is written) and then writes.
 *
 * Invariants:
 *   1. Values are compared exactly: integers as int64 (u64 as uint64),
 *      floats as double; -0 equals +0. Elements are moved as bytes.
 *   2. Orders are deterministic and ONNX's: NonZero and Compress keep
 *      the input's row-major order; Unique's sorted output ascends (a
 *      stable sort, so each value's first occurrence is found first) and
 *      its unsorted output follows first occurrences; NonMaxSuppression
 *      takes candidates by descending score, ties to the lower box index,
 *      as ONNX Runtime's priority queue does, and computes IoU in float.
 *   3. Workspaces are the caller's (sizes in the declarations); a kernel
 *      allocates nothing.
 */
#include <string.h>

#include "mplan/kernels.h"

/* ---- NonZero, Compress --------------------------------------------------- */

int64_t mp_k_count_nonzero(int d, const void *x, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++) count += mp_k_load(x, d, (size_t)i) != 0;
  return count;
}

void mp_k_nonzero(int d, const void *x, const mp_kshape *s, int64_t count,
                  int64_t *y) {
  int64_t n = mp_kshape_count(s), at = 0, idx[MP_K_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; i++) {
    if (mp_k_load(x, d, (size_t)i) != 0) {
      for (uint32_t r = 0; r < s->rank; r++) y[r * count + at] = idx[r];
      at++;
    }
    for (uint32_t r = s->rank; r-- > 0;) { /* the next row-major index */
      if (++idx[r] < s->dims[r]) break;
      idx[r] = 0;
    }
  }
}

int64_t mp_k_compress_count(int cd, const void *cond, int64_t clen,
                            int64_t len) {
  int64_t count = 0, n = clen < len ? clen : len;
  for (int64_t j = 0; j < n; j++)
    count += mp_k_load_i(cond, cd, (size_t)j) != 0;
  return count;
}

void mp_k_compress(size_t es, const void *x, int64_t outer, int64_t len,
                   int64_t inner, int cd, const void *cond, int64_t clen,
                   int64_t count, void *y) {
  const unsigned char *src = x;
  unsigned char *dst = y;
  int64_t n = clen < len ? clen : len;
  size_t run = (size_t)inner * es;
  for (int64_t o = 0; o < outer; o++) {
    int64_t at = 0;
    for (int64_t j = 0; j < n; j++) {
      if (mp_k_load_i(cond, cd, (size_t)j) == 0) continue;
      memcpy(dst + (size_t)((o * count + at) * inner) * es,
             src + (size_t)((o * len + j) * inner) * es, run);
      at++;
    }
  }
}

/* ---- Unique -------------------------------------------------------------- */

typedef struct ks_slices {
  int d;
  const void *x;
  int64_t outer, len, inner;
} ks_slices;

/* Slice a against slice b along the axis, lexicographically in the
 * row-major order of the other dims (numpy's unique with an axis). */
static int ks_slice_cmp(const ks_slices *s, int64_t a, int64_t b) {
  for (int64_t o = 0; o < s->outer; o++) {
    for (int64_t i = 0; i < s->inner; i++) {
      int c =
          mp_k_compare(s->d, s->x, (size_t)((o * s->len + a) * s->inner + i),
                       s->x, (size_t)((o * s->len + b) * s->inner + i));
      if (c) return c;
    }
  }
  return 0;
}

/* What a stable merge sort orders by: slice values (s), an integer key
 * per item (key, ascending) or a float score per item (desc, descending). */
typedef struct ks_order {
  const ks_slices *s;
  const int64_t *key;
  const float *desc;
} ks_order;

/* Item a goes strictly before item b. */
static bool ks_before(const ks_order *o, int64_t a, int64_t b) {
  if (o->s) return ks_slice_cmp(o->s, a, b) < 0;
  if (o->key) return o->key[a] < o->key[b];
  return o->desc[a] > o->desc[b];
}

/* A stable merge sort of v[0..n) (tmp: n more): equal items keep their
 * order. */
static void ks_sort(int64_t *v, int64_t *tmp, int64_t n, const ks_order *o) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n;
      int64_t hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        tmp[k++] = ks_before(o, v[j], v[i]) ? v[j++] : v[i++];
      }
      while (i < mid) tmp[k++] = v[i++];
      while (j < hi) tmp[k++] = v[j++];
    }
    memcpy(v, tmp, (size_t)n * sizeof *v);
  }
}

int64_t mp_k_unique(int d, const void *x, int64_t outer, int64_t len,
                    int64_t inner, bool sorted, int64_t *ws, int64_t *first,
                    int64_t *inverse, int64_t *counts) {
  ks_slices s = {d, x, outer, len, inner};
  int64_t *perm = ws, *tmp = ws + len, *gid = ws + 2 * len,
          *gfirst = ws + 3 * len, *gcount = ws + 4 * len, *rank = ws + 5 * len;
  for (int64_t j = 0; j < len; j++) perm[j] = j;
  ks_order by_value = {&s, NULL, NULL};
  ks_sort(perm, tmp, len, &by_value);
  int64_t groups = 0;
  for (int64_t k = 0; k < len; k++) {
    if (k == 0 || ks_slice_cmp(&s, perm[k - 1], perm[k]) != 0) {
      gfirst[groups] = perm[k]; /* stable: the first occurrence */
      gcount[groups++] = 0;
    }
    gid[perm[k]] = groups - 1;
    gcount[groups - 1]++;
  }
  /* Output order: the groups as sorted, or by first occurrence. */
  for (int64_t g = 0; g < groups; g++) perm[g] = g;
  ks_order by_first = {NULL, gfirst, NULL};
  if (!sorted) ks_sort(perm, tmp, groups, &by_first);
  for (int64_t k = 0; k < groups; k++) {
    rank[perm[k]] = k;
    if (first) first[k] = gfirst[perm[k]];
    if (counts) counts[k] = gcount[perm[k]];
  }
  if (inverse) {
    for (int64_t j = 0; j < len; j++) inverse[j] = rank[gid[j]];
  }
  return groups;
}

void mp_k_gather_slices(size_t es, const void *x, int64_t outer, int64_t len,
                        int64_t inner, const int64_t *which, int64_t count,
                        void *y) {
  const unsigned char *src = x;
  unsigned char *dst = y;
  size_t run = (size_t)inner * es;
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t k = 0; k < count; k++) {
      memcpy(dst + (size_t)((o * count + k) * inner) * es,
             src + (size_t)((o * len + which[k]) * inner) * es, run);
    }
  }
}

/* ---- NonMaxSuppression --------------------------------------------------- */

typedef struct ks_box {
  float y0, x0, y1, x1;
} ks_box;

static ks_box ks_corners(const float *b, bool center) {
  ks_box r;
  if (center) { /* [x_center, y_center, width, height] */
    float hw = b[2] / 2.0f, hh = b[3] / 2.0f;
    r.x0 = b[0] - hw;
    r.x1 = b[0] + hw;
    r.y0 = b[1] - hh;
    r.y1 = b[1] + hh;
  } else { /* [y1, x1, y2, x2], either corner first */
    r.y0 = b[0] < b[2] ? b[0] : b[2];
    r.y1 = b[0] < b[2] ? b[2] : b[0];
    r.x0 = b[1] < b[3] ? b[1] : b[3];
    r.x1 = b[1] < b[3] ? b[3] : b[1];
  }
  return r;
}

static float ks_maxf(float a, float b) {
  return a > b ? a : b;
}

static float ks_minf(float a, float b) {
  return a < b ? a : b;
}

/* b suppresses a: their IoU exceeds iou (ONNX Runtime's test, in float;
 * boxes of no area never suppress). */
static bool ks_suppress(const ks_box *a, const ks_box *b, float iou) {
  float ih = ks_minf(a->y1, b->y1) - ks_maxf(a->y0, b->y0);
  float iw = ks_minf(a->x1, b->x1) - ks_maxf(a->x0, b->x0);
  if (ih <= 0 || iw <= 0) return false;
  float inter = ih * iw;
  float area_a = (a->y1 - a->y0) * (a->x1 - a->x0);
  float area_b = (b->y1 - b->y0) * (b->x1 - b->x0);
  float uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou;
}

int64_t mp_k_nms(const mp_knms *p, const float *boxes, const float *scores,
                 int64_t *ws, int64_t *sel) {
  int64_t n = p->boxes, total = 0;
  int64_t *cand = ws, *tmp = ws + n, *picked = ws + 2 * n;
  for (int64_t b = 0; b < p->batches; b++) {
    const float *bx = boxes + b * n * 4;
    for (int64_t c = 0; c < p->classes; c++) {
      const float *sc = scores + (b * p->classes + c) * n;
      int64_t m = 0;
      for (int64_t i = 0; i < n; i++) {
        if (!p->has_score_threshold || sc[i] > p->score_threshold) {
          cand[m++] = i;
        }
      }
      ks_order by_score = {NULL, NULL, sc}; /* ties: the lower index */
      ks_sort(cand, tmp, m, &by_score);
      int64_t kept = 0;
      for (int64_t k = 0; k < m && kept < p->max_per_class; k++) {
        ks_box a = ks_corners(bx + cand[k] * 4, p->center);
        bool keep = true;
        for (int64_t q = 0; q < kept && keep; q++) {
          ks_box s = ks_corners(bx + picked[q] * 4, p->center);
          keep = !ks_suppress(&a, &s, p->iou_threshold);
        }
        if (!keep) continue;
        picked[kept++] = cand[k];
        if (sel) {
          sel[total * 3] = b;
          sel[total * 3 + 1] = c;
          sel[total * 3 + 2] = cand[k];
        }
        total++;
      }
    }
  }
  return total;
}

/* ---- TfIdfVectorizer ----------------------------------------------------- */

static int64_t k_token(const void *x, int dtype, int64_t i) {
  return dtype == MP_KD_I32 ? ((const int32_t *)x)[i] : ((const int64_t *)x)[i];
}

void mp_k_tfidf(const mp_ktfidf *p, const void *x, float *y, int64_t *ws) {
  for (int64_t r = 0; r < p->rows; r++) {
    int64_t base = r * p->len;
    for (int64_t g = 0; g < p->n_grams; g++) ws[g] = 0;
    /* the n-grams of length n: pool elements [from, to), ids from g0 */
    int64_t g0 = 0;
    for (int64_t n = 1; n <= p->n_counts; n++) {
      int64_t from = p->counts[n - 1];
      int64_t to = n < p->n_counts ? p->counts[n] : p->n_pool;
      int64_t grams = (to - from) / n;
      if (n >= p->min_n && n <= p->max_n && grams > 0) {
        int64_t skips = n == 1 ? 0 : p->max_skip;
        for (int64_t s = 0; s <= skips; s++) {
          int64_t d = s + 1;
          if ((n - 1) * d >= p->len) break; /* no n-gram that wide fits */
          for (int64_t i = 0; i + (n - 1) * d < p->len; i++) {
            for (int64_t q = 0; q < grams; q++) {
              const int64_t *want = p->pool + from + q * n;
              int64_t j = 0;
              while (j < n && k_token(x, p->dtype, base + i + j * d) == want[j])
                j++;
              if (j == n) ws[g0 + q]++;
            }
          }
        }
      }
      g0 += grams;
    }
    float *row = y + r * p->width;
    for (int64_t c = 0; c < p->width; c++) row[c] = 0;
    for (int64_t g = 0; g < p->n_grams; g++) {
      double w = p->weight ? p->weight[g] : 1.0;
      double v = p->mode == 0   ? (double)ws[g]
                 : p->mode == 1 ? (ws[g] ? w : 0.0)
                                : (double)ws[g] * w;
      if (ws[g]) row[p->index[g]] = (float)v;
    }
  }
}
