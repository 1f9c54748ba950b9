/*
 * k_linalg.c -- Einsum (any number of operands, repeated labels for
 * diagonals, broadcast labels) and Det.
 *
 * Invariants:
 *   1. Einsum visits every assignment of its labels once, in odometer
 *      order (the last label fastest), and adds the product of the
 *      operands' elements (each read through its per-label strides, 0 for
 *      a broadcast dim) into a double accumulator per output element;
 *      each output is rounded once to its dtype.
 *   2. Det: Gaussian elimination with partial pivoting in double; a
 *      singular matrix gives 0.
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
