/*
 * bench_conv_integer.c -- one ConvInteger (uint8 x, int8 w, zero point
 * 128) of a named shape on fixed pseudo-random data, for
 * conv_integer_host.sh, which counts its instructions under callgrind.
 * Prints a hash of the int32 output, so builds can be compared bit for
 * bit.
 *
 * usage: bench_conv_integer SHAPE   (conv3x3 | conv1x1 | stride2 | dw3x3)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/kernels.h"

int main(int argc, char **argv) {
  const char *shape = argc > 1 ? argv[1] : "";
  /* c, m, hw, k, stride, group */
  int64_t c = 32, m = 32, hw = 64, k = 3, s = 1, g = 1;
  if (strcmp(shape, "conv1x1") == 0) {
    c = 32, m = 64, k = 1;
  } else if (strcmp(shape, "stride2") == 0) {
    s = 2;
  } else if (strcmp(shape, "dw3x3") == 0) {
    c = m = g = 64;
  } else if (strcmp(shape, "conv3x3") != 0) {
    fprintf(stderr,
            "usage: bench_conv_integer conv3x3|conv1x1|stride2|dw3x3\n");
    return 2;
  }
  mp_kconv p;
  memset(&p, 0, sizeof p);
  p.n = 1, p.c = c, p.m = m, p.group = g;
  p.in[0] = 1, p.in[1] = p.in[2] = hw;
  p.k[0] = 1, p.k[1] = p.k[2] = k;
  p.stride[0] = 1, p.stride[1] = p.stride[2] = s;
  p.dil[0] = p.dil[1] = p.dil[2] = 1;
  p.pad[1] = p.pad[2] = k / 2;
  p.out[0] = 1;
  p.out[1] = p.out[2] = (hw + 2 * (k / 2) - k) / s + 1;
  int64_t nx = c * hw * hw, nw = m * (c / g) * k * k;
  int64_t ny = m * p.out[1] * p.out[2];
  uint8_t *x = malloc((size_t)nx);
  int8_t *w = malloc((size_t)nw);
  int32_t *y = malloc((size_t)ny * sizeof *y);
  if (!x || !w || !y) return 1;
  uint32_t r = 12345;
  for (int64_t i = 0; i < nx; i++)
    x[i] = (uint8_t)((r = r * 1664525u + 1013904223u) >> 24);
  for (int64_t i = 0; i < nw; i++)
    w[i] = (int8_t)((r = r * 1664525u + 1013904223u) >> 24);
  mp_k_conv_integer(&p, MP_KD_U8, x, 128, MP_KD_I8, w, NULL, 0, y);
  uint64_t h = 1469598103934665603u;
  for (int64_t i = 0; i < ny; i++) {
    h = (h ^ (uint32_t)y[i]) * 1099511628211u;
  }
  printf("%016llx\n", (unsigned long long)h);
  free(x);
  free(w);
  free(y);
  return 0;
}
