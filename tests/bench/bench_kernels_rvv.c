/*
 * bench_kernels_rvv.c -- one kernel, scalar or RVV, on a fixed f32 shape,
 * between two marker calls, for counting executed instructions under
 * qemu-riscv64 (tests/bench/rvv_insn_count.sh). Deterministic: fixed
 * inputs, no timing.
 *
 *   bench_kernels_rvv --markers        the marker addresses (hex)
 *   bench_kernels_rvv KERNEL IMPL      KERNEL conv3x3 | dw3x3 | conv1x1 |
 *                                      convt4x4 | gemm | rmsnorm | attention |
 *                                      dq4cols | dq4range | empty; IMPL
 *                                      scalar (the
 *                                      scalar kernel as built, scalar
 *                                      code) | autovec (the same source
 *                                      auto-vectorised by clang) | rvv
 *
 * The markers are empty non-inlined functions; everything executed from
 * the first marker's entry to the second's is the kernel call (plus the
 * few instructions of the call sequence, which the "empty" kernel
 * measures as a baseline).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/kernels_rvv.h"

/* kernels/k_conv.c compiled with clang's auto-vectoriser (CMake target
 * mp_kernels_autovec): the scalar source, vectorised by the compiler. */
void mp_ka_conv_f32(const mp_kconv *p, const float *x, const float *w,
                    const float *b, float *y, void *scratch);
void mp_ka_gemm_f32(const mp_kgemm *p, const float *a, const float *b,
                    const float *c, float *y);
void mp_ka_conv_transpose_f32(const mp_kconv *p, const float *x, const float *w,
                              const float *b, float *y);

typedef enum { B_SCALAR, B_AUTOVEC, B_RVV } bench_impl;

__attribute__((noinline)) void bench_begin(void);
__attribute__((noinline)) void bench_end(void);

__attribute__((noinline)) void bench_begin(void) {
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void bench_end(void) {
  __asm__ volatile("" ::: "memory");
}

typedef struct bench_shape {
  const char *name, *shape;
  int64_t c, m, group, hw, k, pad;
} bench_shape;

/* The shapes of the table (tests/bench/README.md). */
static const bench_shape bench_shapes[] = {
    {"conv3x3", "16x24x24 -> 16, 3x3 pad 1", 16, 16, 1, 24, 3, 1},
    {"dw3x3", "32x24x24 depthwise 3x3 pad 1", 32, 32, 32, 24, 3, 1},
    {"conv1x1", "32x24x24 -> 32, 1x1", 32, 32, 1, 24, 1, 0},
};

static float *bench_data(size_t n, unsigned seed) {
  float *p = malloc(n * sizeof *p + 64);
  if (!p) exit(2);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    p[i] = (float)((seed >> 9) & 0xffff) / 32768.0f - 1.0f;
  }
  return p;
}

static const char *const bench_impl_names[] = {"scalar", "autovec", "rvv"};

static int bench_conv(const bench_shape *s, bench_impl impl) {
  mp_kconv p;
  memset(&p, 0, sizeof p);
  p.n = 1;
  p.c = s->c;
  p.m = s->m;
  p.group = s->group;
  for (int i = 0; i < 3; i++) {
    p.in[i] = p.out[i] = i ? s->hw : 1;
    p.k[i] = i ? s->k : 1;
    p.pad[i] = i ? s->pad : 0;
    p.stride[i] = p.dil[i] = 1;
  }
  size_t plane = (size_t)(s->hw * s->hw);
  float *x = bench_data((size_t)s->c * plane, 1);
  float *w = bench_data((size_t)(s->m * (s->c / s->group) * s->k * s->k), 2);
  float *b = bench_data((size_t)s->m, 3);
  float *y = bench_data((size_t)s->m * plane, 4);
  float *scratch = bench_data(plane, 5);
  bench_begin();
  if (impl == B_RVV) {
    mp_kv_conv_f32(&p, x, w, b, y, scratch);
  } else if (impl == B_AUTOVEC) {
    mp_ka_conv_f32(&p, x, w, b, y, scratch);
  } else {
    mp_k_conv_f32(&p, x, w, b, y, scratch);
  }
  bench_end();
  printf("%s %s y[7] = %.6g\n", s->name, bench_impl_names[impl], y[7]);
  return 0;
}

/* ConvTranspose 16x12x12 -> 16x24x24, 4x4, stride 2, pad 1: a decoder's
 * 2x upsampling. */
static int bench_convt(bench_impl impl) {
  mp_kconv p;
  memset(&p, 0, sizeof p);
  p.n = 1, p.c = 16, p.m = 16, p.group = 1;
  for (int i = 0; i < 3; i++) {
    p.in[i] = i ? 12 : 1;
    p.out[i] = i ? 24 : 1;
    p.k[i] = i ? 4 : 1;
    p.pad[i] = i ? 1 : 0;
    p.stride[i] = i ? 2 : 1;
    p.dil[i] = 1;
  }
  float *x = bench_data(16 * 144, 1), *w = bench_data(16 * 16 * 16, 2);
  float *b = bench_data(16, 3), *y = bench_data(16 * 576, 4);
  bench_begin();
  if (impl == B_RVV) {
    mp_kv_conv_transpose_f32(&p, x, w, b, y);
  } else if (impl == B_AUTOVEC) {
    mp_ka_conv_transpose_f32(&p, x, w, b, y);
  } else {
    mp_k_conv_transpose_f32(&p, x, w, b, y);
  }
  bench_end();
  printf("convt4x4 %s y[7] = %.6g\n", bench_impl_names[impl], y[7]);
  return 0;
}

static int bench_gemm(bench_impl impl) {
  mp_kgemm g = {48, 64, 64, false, false, 1.0, 1.0, 0, 1, 0};
  float *a = bench_data(48 * 64, 1), *b = bench_data(64 * 64, 2);
  float *c = bench_data(64, 3), *y = bench_data(48 * 64, 4);
  bench_begin();
  if (impl == B_RVV) {
    mp_kv_gemm_f32(&g, a, b, c, y);
  } else if (impl == B_AUTOVEC) {
    mp_ka_gemm_f32(&g, a, b, c, y);
  } else {
    mp_k_gemm_f32(&g, a, b, c, y);
  }
  bench_end();
  printf("gemm %s y[7] = %.6g\n", bench_impl_names[impl], y[7]);
  return 0;
}

/* RMSNormalization of 64 rows of 256 (autovec: the scalar kernel). */
static int bench_rmsnorm(bench_impl impl) {
  float *x = bench_data(64 * 256, 1), *g = bench_data(256, 2);
  float *y = bench_data(64 * 256, 3);
  bench_begin();
  if (impl == B_RVV) {
    mp_kv_rmsnorm_f32(64, 256, x, g, 1e-5, y);
  } else {
    mp_k_rmsnorm(MP_KD_F32, 64, 256, x, g, 1e-5, y);
  }
  bench_end();
  printf("rmsnorm %s y[7] = %.6g\n", bench_impl_names[impl], y[7]);
  return 0;
}

/* Attention, 4-D: 4 heads, 16 queries on 64 keys, head size 32, causal
 * (autovec: the scalar kernel). */
static int bench_attention(bench_impl impl) {
  mp_kattn p = {1,   4,    4,     16,  64,
                0,   32,   32,    {0}, {0},
                {0}, {0},  {0},   0,   MP_KATTN_MASK_NONE,
                0,   true, 0.125, 0,   NULL};
  int64_t *st[4] = {p.q_st, p.k_st, p.v_st, p.y_st}, rows[4] = {16, 64, 64, 16};
  for (int k = 0; k < 4; k++) {
    st[k][0] = 4 * rows[k] * 32, st[k][1] = rows[k] * 32, st[k][2] = 32;
  }
  float *q = bench_data(4 * 16 * 32, 1), *k = bench_data(4 * 64 * 32, 2);
  float *v = bench_data(4 * 64 * 32, 3), *y = bench_data(4 * 16 * 32, 4);
  double *row = malloc(64 * sizeof *row);
  if (!row) exit(2);
  bench_begin();
  if (impl == B_RVV) {
    mp_kv_attention_f32(&p, q, k, v, NULL, NULL, NULL, y, NULL, row);
  } else {
    mp_k_attention(MP_KD_F32, &p, q, k, v, NULL, NULL, NULL, y, NULL, row);
  }
  bench_end();
  printf("attention %s y[7] = %.6g\n", bench_impl_names[impl], y[7]);
  return 0;
}

/* An int4 [256, 256] weight (bytes of a fixed pattern), 2,048 int4 zero
 * points and f32 scales (8 blocks of 32 along one axis); returns an f32
 * output of 64 x 256. */
static float *bench_q4(uint8_t **x, uint8_t **zp, float **s) {
  *x = malloc(256 * 256 / 2), *zp = malloc(8 * 256 / 2);
  if (!*x || !*zp) exit(2);
  for (int i = 0; i < 256 * 256 / 2; i++) (*x)[i] = (uint8_t)(i * 37 + 11);
  for (int i = 0; i < 8 * 256 / 2; i++) (*zp)[i] = (uint8_t)(i * 13 + 5);
  *s = bench_data(8 * 256, 1);
  return bench_data(256 * 64, 2);
}

/* A MatMul weight's panel dequantized: 64 columns of an int4 [256, 256]
 * weight blocked by 32 along its rows, with int4 zero points (autovec:
 * the scalar kernel). */
static int bench_dq4cols(bench_impl impl) {
  uint8_t *x, *zp;
  float *s, *y = bench_q4(&x, &zp, &s);
  bench_begin();
  if (impl == B_RVV) {
    mp_kv_dequantize_cols(256, 256, 64, 64, 0, 32, MP_KD_I4, x, s, 2, zp, y);
  } else {
    mp_k_dequantize_cols(256, 256, 64, 64, 0, 32, MP_KD_I4, x, s, 2, zp, y);
  }
  bench_end();
  printf("dq4cols %s y[7] = %.6g\n", bench_impl_names[impl], y[7]);
  return 0;
}

/* 64 rows of an int4 [256, 256] weight blocked by 32 along its columns,
 * int4 zero points: a transposed Gemm weight's panel of output columns,
 * or a Conv's panel of output channels (mp_k_dequantize_range). */
static int bench_dq4range(bench_impl impl) {
  uint8_t *x, *zp;
  float *s, *y = bench_q4(&x, &zp, &s);
  bench_begin();
  if (impl == B_RVV) {
    mp_kv_dequantize_range(256, 1, 32, MP_KD_I4, x, s, 2, zp, 64 * 256,
                           64 * 256, y);
  } else {
    mp_k_dequantize_range(256, 1, 32, MP_KD_I4, x, s, 2, zp, 64 * 256, 64 * 256,
                          y);
  }
  bench_end();
  printf("dq4range %s y[7] = %.6g\n", bench_impl_names[impl], y[7]);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--markers") == 0) {
    printf("%lx %lx\n", (unsigned long)(uintptr_t)bench_begin,
           (unsigned long)(uintptr_t)bench_end);
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr,
            "usage: bench_kernels_rvv --markers | KERNEL scalar|autovec|rvv\n");
    return 2;
  }
  bench_impl impl = strcmp(argv[2], "rvv") == 0       ? B_RVV
                    : strcmp(argv[2], "autovec") == 0 ? B_AUTOVEC
                                                      : B_SCALAR;
  if (strcmp(argv[1], "empty") == 0) {
    bench_begin();
    bench_end();
    return 0;
  }
  if (strcmp(argv[1], "gemm") == 0) return bench_gemm(impl);
  if (strcmp(argv[1], "convt4x4") == 0) return bench_convt(impl);
  if (strcmp(argv[1], "rmsnorm") == 0) return bench_rmsnorm(impl);
  if (strcmp(argv[1], "attention") == 0) return bench_attention(impl);
  if (strcmp(argv[1], "dq4cols") == 0) return bench_dq4cols(impl);
  if (strcmp(argv[1], "dq4range") == 0) return bench_dq4range(impl);
  for (size_t i = 0; i < sizeof bench_shapes / sizeof *bench_shapes; i++) {
    if (strcmp(argv[1], bench_shapes[i].name) == 0) {
      return bench_conv(&bench_shapes[i], impl);
    }
  }
  fprintf(stderr, "bench_kernels_rvv: unknown kernel '%s'\n", argv[1]);
  return 2;
}
