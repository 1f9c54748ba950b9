/*
 * test_kernels_rvv.c -- every RVV kernel against its scalar twin (the
 * specification), cross-compiled for riscv64 and run under qemu-riscv64
 * at VLEN 128, 256 and 512 (one ctest each; argv[1] is the VLEN the run
 * must see).
 *
 * Sizes are ragged around the vector length of each kernel's element
 * type and LMUL: 1, vl - 1, vl, vl + 1, 2 vl + 3 and a large count, with
 * strided and broadcast operands (Conv strides and dilations, transposed
 * Gemm operands, broadcast binary operands, transposes, pads, in place).
 *
 * Tolerance, stated per kernel family:
 *   - integer, int8 and data-movement kernels: exact (bytes equal);
 *   - Conv, ConvTranspose and Gemm f32: |rvv - scalar| <= 1e-5 + 1e-5
 *     |scalar|: the RVV kernels accumulate with fused multiply-adds (one
 * rounding per tap instead of up to two), so over K <= 300 taps of values in
 * [-1, 1] the sums may differ by a few ulp of their partial sums;
 *   - the other f32 kernels: |rvv - scalar| <= 1e-6 + 1e-6 |scalar|:
 *     both compute in double and round once to f32; the vector exp and
 *     the unordered double reductions (Softmax, LayerNorm, global pools)
 *     differ from libm and from ordered sums far below an f32 ulp, so a
 *     difference is at most one f32 rounding;
 *   - NaN matches NaN and infinities match exactly everywhere.
 */
#include <math.h>
#include <riscv_vector.h>
#include <stdlib.h>

#include "check.h"
#include "mplan/kernels_rvv.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static float rndf(void) { /* [-1, 1) */
  return (float)((double)(rnd() >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static void fill_f32(float *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = rndf();
}

static void fill_i8(int8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (int8_t)(rnd() >> 56);
}

static void *xalloc(size_t n) {
  void *p = calloc(n ? n : 1, 1);
  if (!p) abort();
  return p;
}

/* Compares n f32 values; prints the first difference with its context. */
static bool same_f32(const char *what, const float *got, const float *want,
                     size_t n, double rel, double abs_floor) {
  for (size_t i = 0; i < n; i++) {
    double g = got[i], w = want[i];
    if (isnan(g) && isnan(w)) continue;
    if (isinf(w) || isinf(g)) {
      if (g == w) continue;
    } else if (fabs(g - w) <= abs_floor + rel * fabs(w)) {
      continue;
    }
    fprintf(stderr, "%s: element %zu of %zu: rvv %.9g, scalar %.9g\n", what, i,
            n, g, w);
    return false;
  }
  return true;
}

static bool same_bytes(const char *what, const void *got, const void *want,
                       size_t n) {
  const unsigned char *a = got, *b = want;
  for (size_t i = 0; i < n; i++) {
    if (a[i] != b[i]) {
      fprintf(stderr, "%s: byte %zu of %zu: rvv %u, scalar %u\n", what, i, n,
              a[i], b[i]);
      return false;
    }
  }
  return true;
}

#define TOL_MAC 1e-5
#define TOL_F 1e-6

/* 1, vl - 1, vl, vl + 1, 2 vl + 3 and large, for a kernel whose vector
 * holds vl elements. */
static size_t sizes(size_t vl, size_t *out) {
  size_t n = 0;
  out[n++] = 1;
  if (vl > 2) out[n++] = vl - 1;
  out[n++] = vl;
  out[n++] = vl + 1;
  out[n++] = 2 * vl + 3;
  out[n++] = 1000 + vl / 2;
  return n;
}

/* ---- Conv ------------------------------------------------------------------
 */

typedef struct conv_case {
  int64_t n, c, m, group, in[3], k[3], s[3], d[3], pb[3], pe[3];
} conv_case;

static void conv_out(const conv_case *t, mp_kconv *p) {
  memset(p, 0, sizeof *p);
  p->n = t->n;
  p->c = t->c;
  p->m = t->m;
  p->group = t->group;
  for (int i = 0; i < 3; i++) {
    p->in[i] = t->in[i];
    p->k[i] = t->k[i];
    p->stride[i] = t->s[i];
    p->dil[i] = t->d[i];
    p->pad[i] = t->pb[i];
    int64_t ext = (t->k[i] - 1) * t->d[i] + 1;
    p->out[i] = (t->in[i] + t->pb[i] + t->pe[i] - ext) / t->s[i] + 1;
  }
}

static void test_conv_case(const conv_case *t, bool inplace) {
  mp_kconv p;
  conv_out(t, &p);
  if (p.out[0] < 1 || p.out[1] < 1 || p.out[2] < 1) return;
  int64_t pin = p.in[0] * p.in[1] * p.in[2],
          pout = p.out[0] * p.out[1] * p.out[2];
  int64_t ks = p.k[0] * p.k[1] * p.k[2], cg = p.c / p.group;
  size_t nx = (size_t)(p.n * p.c * pin), ny = (size_t)(p.n * p.m * pout);
  size_t nw = (size_t)(p.m * cg * ks), big = nx > ny ? nx : ny;
  char what[160];
  snprintf(what, sizeof what,
           "conv c%lld m%lld g%lld in %lldx%lldx%lld k %lldx%lldx%lld s%lld "
           "d%lld p%lld%s",
           (long long)p.c, (long long)p.m, (long long)p.group,
           (long long)p.in[0], (long long)p.in[1], (long long)p.in[2],
           (long long)p.k[0], (long long)p.k[1], (long long)p.k[2],
           (long long)p.stride[2], (long long)p.dil[2], (long long)p.pad[2],
           inplace ? " in place" : "");
  /* f32 */
  float *x = xalloc(big * 4), *w = xalloc(nw * 4), *b = xalloc((size_t)p.m * 4);
  float *ys = xalloc(big * 4), *yv = xalloc(big * 4);
  void *scratch = xalloc((size_t)pout * 4 + 64);
  fill_f32(x, nx);
  fill_f32(w, nw);
  fill_f32(b, (size_t)p.m);
  if (inplace) {
    memcpy(ys, x, nx * 4);
    memcpy(yv, x, nx * 4);
    mp_k_conv_f32(&p, ys, w, b, ys, scratch);
    mp_kv_conv_f32(&p, yv, w, b, yv, scratch);
  } else {
    mp_k_conv_f32(&p, x, w, b, ys, scratch);
    mp_kv_conv_f32(&p, x, w, b, yv, scratch);
  }
  CHECK(same_f32(what, yv, ys, ny, TOL_MAC, TOL_MAC));
  /* no bias */
  mp_k_conv_f32(&p, inplace ? ys : x, w, NULL, inplace ? ys : ys, scratch);
  if (!inplace) {
    mp_kv_conv_f32(&p, x, w, NULL, yv, scratch);
    CHECK(same_f32(what, yv, ys, ny, TOL_MAC, TOL_MAC));
  }
  /* int8, exact */
  int8_t *xi = xalloc(big), *wi = xalloc(nw), *yis = xalloc(big),
         *yiv = xalloc(big);
  int32_t *bi = xalloc((size_t)p.m * 4);
  fill_i8(xi, nx);
  fill_i8(wi, nw);
  for (int64_t i = 0; i < p.m; i++) bi[i] = (int32_t)(rnd() % 4001) - 2000;
  p.shift = (int)(rnd() % 9);
  if (inplace) {
    memcpy(yis, xi, nx);
    memcpy(yiv, xi, nx);
    mp_k_conv_i8(&p, yis, wi, bi, yis, scratch);
    mp_kv_conv_i8(&p, yiv, wi, bi, yiv, scratch);
  } else {
    mp_k_conv_i8(&p, xi, wi, bi, yis, scratch);
    mp_kv_conv_i8(&p, xi, wi, bi, yiv, scratch);
  }
  CHECK(same_bytes(what, yiv, yis, ny));
  free(x), free(w), free(b), free(ys), free(yv), free(scratch);
  free(xi), free(wi), free(yis), free(yiv), free(bi);
}

static void test_conv(void) {
  size_t sz[8], n = sizes(__riscv_vsetvlmax_e32m4(), sz);
  for (size_t i = 0; i < n; i++) {
    int64_t wd = (int64_t)sz[i];
    if (wd > 600) wd = 300; /* rows long enough for several vectors */
    /* general 3x3, pad 1, with a 4 + 1 channel block split */
    conv_case g = {1,         3,         5,         1,         {1, 3, wd},
                   {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}};
    test_conv_case(&g, false);
    /* stride 2 (strided loads), dilation 2, asymmetric pads */
    conv_case s = {2,         2,         4,         1,         {1, 4, wd + 4},
                   {1, 3, 3}, {1, 2, 2}, {1, 1, 2}, {0, 0, 2}, {0, 1, 1}};
    test_conv_case(&s, false);
    /* grouped */
    conv_case gr = {1,         4,         8,         2,         {1, 2, wd},
                    {1, 2, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 1}, {0, 1, 0}};
    test_conv_case(&gr, false);
    /* depthwise 3x3, out of place and in place */
    conv_case dw = {1,         3,         3,         3,         {1, 3, wd},
                    {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}};
    test_conv_case(&dw, false);
    test_conv_case(&dw, true);
    /* 1x1 pointwise over the plane, and 1x1 with stride 2 */
    conv_case pw = {1,         5,         6,         1,         {1, 2, wd},
                    {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}};
    test_conv_case(&pw, false);
    conv_case pws = {1,         3,         4,         1,         {1, 3, wd + 1},
                     {1, 1, 1}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}};
    test_conv_case(&pws, false);
  }
  /* 3-D, and a window wider than the input (all border) */
  conv_case d3 = {1,         2,         3,         1,         {3, 4, 9},
                  {2, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}};
  test_conv_case(&d3, false);
  conv_case wide = {1,         2,         4,         1,         {1, 3, 2},
                    {1, 3, 5}, {1, 1, 1}, {1, 1, 1}, {0, 1, 3}, {0, 1, 3}};
  test_conv_case(&wide, false);
}

/* ---- ConvTranspose ---------------------------------------------------------
 */

/* x [n, c, in], w [c, m/group, k]; out = (in - 1) s - pb - pe + (k - 1) d
 * + 1 + op (output padding). Against the scalar kernel (TOL_MAC), and each
 * output channel computed alone (m = 1, its weights gathered, as the
 * runtime does a plane at a time) gives the whole output's bits. */
static void test_convt_case(const conv_case *t, const int64_t op[3]) {
  mp_kconv p;
  memset(&p, 0, sizeof p);
  p.n = t->n, p.c = t->c, p.m = t->m, p.group = t->group;
  for (int i = 0; i < 3; i++) {
    p.in[i] = t->in[i], p.k[i] = t->k[i], p.stride[i] = t->s[i];
    p.dil[i] = t->d[i], p.pad[i] = t->pb[i];
    p.out[i] = (t->in[i] - 1) * t->s[i] - t->pb[i] - t->pe[i] +
               (t->k[i] - 1) * t->d[i] + 1 + op[i];
    if (p.out[i] < 1) return;
  }
  int64_t pin = p.in[0] * p.in[1] * p.in[2];
  int64_t pout = p.out[0] * p.out[1] * p.out[2];
  int64_t ks = p.k[0] * p.k[1] * p.k[2], cg = p.c / p.group;
  int64_t mg = p.m / p.group;
  size_t nx = (size_t)(p.n * p.c * pin), ny = (size_t)(p.n * p.m * pout);
  size_t nw = (size_t)(p.c * mg * ks);
  char what[160];
  snprintf(what, sizeof what,
           "conv-transpose c%lld m%lld g%lld in %lldx%lldx%lld k "
           "%lldx%lldx%lld s%lld d%lld p%lld out %lld",
           (long long)p.c, (long long)p.m, (long long)p.group,
           (long long)p.in[0], (long long)p.in[1], (long long)p.in[2],
           (long long)p.k[0], (long long)p.k[1], (long long)p.k[2],
           (long long)p.stride[2], (long long)p.dil[2], (long long)p.pad[2],
           (long long)p.out[2]);
  float *x = xalloc(nx * 4), *w = xalloc(nw * 4), *b = xalloc((size_t)p.m * 4);
  float *ys = xalloc(ny * 4), *yv = xalloc(ny * 4), *y1 = xalloc(ny * 4);
  float *wt = xalloc((size_t)(cg * ks) * 4);
  fill_f32(x, nx);
  fill_f32(w, nw);
  fill_f32(b, (size_t)p.m);
  mp_k_conv_transpose_f32(&p, x, w, b, ys);
  mp_kv_conv_transpose_f32(&p, x, w, b, yv);
  CHECK(same_f32(what, yv, ys, ny, TOL_MAC, TOL_MAC));
  mp_k_conv_transpose_f32(&p, x, w, NULL, ys);
  mp_kv_conv_transpose_f32(&p, x, w, NULL, yv);
  CHECK(same_f32(what, yv, ys, ny, TOL_MAC, TOL_MAC));
  mp_kconv one = p;
  one.n = 1, one.m = 1, one.group = 1, one.c = cg;
  for (int64_t bi = 0; bi < p.n; bi++) {
    for (int64_t oc = 0; oc < p.m; oc++) {
      for (int64_t i = 0; i < cg; i++) {
        memcpy(wt + i * ks, w + ((oc / mg * cg + i) * mg + oc % mg) * ks,
               (size_t)ks * 4);
      }
      mp_kv_conv_transpose_f32(&one, x + (bi * p.c + oc / mg * cg) * pin, wt,
                               NULL, y1 + (bi * p.m + oc) * pout);
    }
  }
  CHECK(same_bytes(what, y1, yv, ny * 4));
  free(x), free(w), free(b), free(ys), free(yv), free(y1), free(wt);
}

static void test_conv_transpose(void) {
  size_t sz[8], n = sizes(__riscv_vsetvlmax_e32m8(), sz);
  static const int64_t op0[3] = {0, 0, 0}, op1[3] = {0, 1, 1};
  for (size_t i = 0; i < n; i++) {
    int64_t wd = (int64_t)sz[i];
    if (wd > 600) wd = 300;
    /* stride 1, 3x3, pad 1 */
    conv_case g = {1,         3,         5,         1,         {1, 3, wd},
                   {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}};
    test_convt_case(&g, op0);
    /* stride 2 with output padding (strided stores), 4x4 pad 1 */
    conv_case s2 = {2,         4,         6,         2,         {1, 2, wd},
                    {1, 4, 4}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}};
    test_convt_case(&s2, op1);
    /* stride 3, dilation 2, asymmetric pads: taps overlap columns */
    conv_case s3 = {1,         2,         3,         1,         {1, 3, wd},
                    {1, 3, 5}, {1, 3, 3}, {1, 1, 2}, {0, 0, 2}, {0, 1, 3}};
    test_convt_case(&s3, op1);
  }
  /* 3-D, and pads wider than the kernel's reach at the borders */
  conv_case d3 = {1,         2,         4,         2,         {3, 2, 7},
                  {2, 3, 3}, {2, 1, 2}, {1, 1, 1}, {1, 1, 2}, {0, 1, 1}};
  test_convt_case(&d3, op1);
  /* a row kernel of 18 taps: those past KV_KW find their columns alone */
  conv_case kw = {1,          2,         3,         1,         {1, 2, 40},
                  {1, 1, 18}, {1, 1, 2}, {1, 1, 1}, {0, 0, 3}, {0, 0, 2}};
  test_convt_case(&kw, op0);
}

/* ---- Gemm ------------------------------------------------------------------
 */

static void test_gemm_case(int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                           int cmode) {
  mp_kgemm p = {m, n, k, ta, tb, 1.0, 1.0, 0, 0, 0};
  if (cmode == 3) {
    p.alpha = 0.75;
    p.beta = -1.5;
  }
  /* C: none, scalar, row vector [n], column [m,1], full [m,n] */
  static const int64_t rs[5] = {0, 0, 0, 1, 0}, cs[5] = {0, 0, 1, 0, 1};
  p.c_rs = cmode == 4 ? n : rs[cmode];
  p.c_cs = cs[cmode];
  char what[128];
  snprintf(what, sizeof what, "gemm %lldx%lldx%lld ta%d tb%d c%d", (long long)m,
           (long long)n, (long long)k, ta, tb, cmode);
  size_t na = (size_t)(m * k), nb = (size_t)(k * n), ny = (size_t)(m * n);
  float *a = xalloc(na * 4), *b = xalloc(nb * 4), *c = xalloc(ny * 4 + 4);
  float *ys = xalloc(ny * 4), *yv = xalloc(ny * 4);
  fill_f32(a, na);
  fill_f32(b, nb);
  fill_f32(c, ny + 1);
  const float *pc = cmode ? c : NULL;
  mp_k_gemm_f32(&p, a, b, pc, ys);
  mp_kv_gemm_f32(&p, a, b, pc, yv);
  CHECK(same_f32(what, yv, ys, ny, TOL_MAC, TOL_MAC));
  int8_t *ai = xalloc(na), *bi = xalloc(nb), *yis = xalloc(ny),
         *yiv = xalloc(ny);
  int32_t *ci = xalloc(ny * 4 + 4);
  fill_i8(ai, na);
  fill_i8(bi, nb);
  for (size_t i = 0; i <= ny; i++) ci[i] = (int32_t)(rnd() % 20001) - 10000;
  p.shift = (int)(rnd() % 10);
  mp_k_gemm_i8(&p, ai, bi, cmode ? ci : NULL, yis);
  mp_kv_gemm_i8(&p, ai, bi, cmode ? ci : NULL, yiv);
  CHECK(same_bytes(what, yiv, yis, ny));
  free(a), free(b), free(c), free(ys), free(yv);
  free(ai), free(bi), free(yis), free(yiv), free(ci);
}

static void test_gemm(void) {
  size_t sz[8], n = sizes(__riscv_vsetvlmax_e32m4(), sz);
  for (size_t i = 0; i < n; i++) {
    int64_t cols = (int64_t)sz[i];
    for (int t = 0; t < 4; t++) {
      test_gemm_case(5, cols, 7, t & 1, t >> 1 & 1, t % 5);
      test_gemm_case(1, cols, 33, t & 1, t >> 1 & 1, (t + 2) % 5);
    }
    test_gemm_case(4, cols, 16, false, false, 4);
    test_gemm_case(6, cols, 3, true, true, 3);
    test_gemm_case((int64_t)sz[i] % 9 + 1, 3, (int64_t)sz[i], false, true, 2);
  }
}

/* ---- elementwise ------------------------------------------------------------
 */

static const float specials[] = {0.0f,   -0.0f,   NAN,    INFINITY, -INFINITY,
                                 1e-30f, -1e-30f, 100.0f, -100.0f,  3.0f,
                                 -3.0f,  0.5f,    89.0f,  -104.0f,  1e-4f};

static void fill_special(float *x, size_t n) {
  fill_f32(x, n);
  for (size_t i = 0; i < n; i++) {
    if (rnd() % 4 == 0)
      x[i] = specials[rnd() % (sizeof specials / 4)];
    else if (rnd() % 3 == 0)
      x[i] *= 12;
  }
}

static void test_unary(void) {
  size_t sz[8], nsz = sizes(__riscv_vsetvlmax_e32m2(), sz);
  mp_kunary_params prm[3] = {{0.2, 0.5}, {-0.5, 6.0}, {0.01, 1.0}};
  for (int op = 0; op < MP_KU_COUNT; op++) {
    if (!mp_kv_unary_vector((mp_kunary)op, MP_KD_F32)) continue;
    bool exact = op == MP_KU_RELU || op == MP_KU_CLIP || op == MP_KU_NEG ||
                 op == MP_KU_ABS || op == MP_KU_IDENTITY ||
                 op == MP_KU_LEAKYRELU;
    for (size_t s = 0; s < nsz; s++) {
      size_t n = sz[s];
      float *x = xalloc(n * 4), *ys = xalloc(n * 4), *yv = xalloc(n * 4);
      fill_special(x, n);
      const mp_kunary_params *p = &prm[s % 3];
      char what[64];
      snprintf(what, sizeof what, "unary %d n %zu", op, n);
      mp_k_unary((mp_kunary)op, p, MP_KD_F32, x, ys, n);
      mp_kv_unary((mp_kunary)op, p, MP_KD_F32, x, yv, n);
      CHECK(exact ? same_bytes(what, yv, ys, n * 4)
                  : same_f32(what, yv, ys, n, TOL_F, TOL_F));
      mp_kv_unary((mp_kunary)op, p, MP_KD_F32, x, x, n); /* in place */
      CHECK(same_bytes(what, x, yv, n * 4));
      free(x), free(ys), free(yv);
    }
  }
  /* int8 Relu and Clip, with bounds inside, outside and not integral (the
   * scalar fallback) */
  mp_kunary_params ip[4] = {
      {-20, 100}, {-INFINITY, INFINITY}, {-300, 6}, {0.5, 90.5}};
  nsz = sizes(__riscv_vsetvlmax_e8m4(), sz);
  for (size_t s = 0; s < nsz; s++) {
    size_t n = sz[s];
    int8_t *x = xalloc(n), *ys = xalloc(n), *yv = xalloc(n);
    fill_i8(x, n);
    for (int k = 0; k < 4; k++) {
      mp_kunary op = k == 1 ? MP_KU_RELU : MP_KU_CLIP;
      mp_k_unary(op, &ip[k], MP_KD_I8, x, ys, n);
      mp_kv_unary(op, &ip[k], MP_KD_I8, x, yv, n);
      CHECK(same_bytes("unary i8", yv, ys, n));
    }
    free(x), free(ys), free(yv);
  }
}

static void test_binary_shapes(const mp_kshape *ys, const mp_kshape *as,
                               const mp_kshape *bs) {
  mp_kbcast bc;
  CHECK(mp_k_bcast_init(&bc, ys, as, bs, NULL));
  size_t n = (size_t)mp_kshape_count(ys), na = (size_t)mp_kshape_count(as),
         nb = (size_t)mp_kshape_count(bs);
  float *a = xalloc(na * 4), *b = xalloc(nb * 4), *y1 = xalloc(n * 4),
        *y2 = xalloc(n * 4);
  fill_special(a, na);
  fill_special(b, nb);
  for (size_t i = 0; i < nb; i++) {
    if (rnd() % 5 == 0) b[i] = i < na ? a[i] : 0.0f; /* ties */
  }
  for (int op = 0; op < MP_KB_COUNT; op++) {
    for (int dy = MP_KD_F32; dy <= MP_KD_BOOL; dy += MP_KD_BOOL - MP_KD_F32) {
      if (!mp_kv_binary_vector((mp_kbinary)op, MP_KD_F32, dy, false)) continue;
      char what[64];
      snprintf(what, sizeof what, "binary %d n %zu", op, n);
      mp_k_binary((mp_kbinary)op, &bc, MP_KD_F32, a, b, dy, y1, false);
      mp_kv_binary((mp_kbinary)op, &bc, MP_KD_F32, a, b, dy, y2, false);
      CHECK(same_bytes(what, y2, y1, n * mp_kd_size(dy)));
    }
  }
  int8_t *ai = xalloc(na), *bi = xalloc(nb), *z1 = xalloc(n), *z2 = xalloc(n);
  fill_i8(ai, na);
  fill_i8(bi, nb);
  for (int op = 0; op < MP_KB_COUNT; op++) {
    for (int sat = 0; sat < 2; sat++) {
      if (!mp_kv_binary_vector((mp_kbinary)op, MP_KD_I8, MP_KD_I8, sat)) {
        continue;
      }
      mp_k_binary((mp_kbinary)op, &bc, MP_KD_I8, ai, bi, MP_KD_I8, z1, sat);
      mp_kv_binary((mp_kbinary)op, &bc, MP_KD_I8, ai, bi, MP_KD_I8, z2, sat);
      CHECK(same_bytes("binary i8", z2, z1, n));
    }
  }
  free(a), free(b), free(y1), free(y2), free(ai), free(bi), free(z1), free(z2);
}

static void test_binary(void) {
  size_t sz[8], nsz = sizes(__riscv_vsetvlmax_e32m4(), sz);
  for (size_t s = 0; s < nsz; s++) {
    int64_t n = (int64_t)sz[s];
    mp_kshape v = {1, {n}}, one = {1, {1}}, rk0 = {0, {0}};
    test_binary_shapes(&v, &v, &v);
    test_binary_shapes(&v, &v, &one);
    test_binary_shapes(&v, &rk0, &v);
    mp_kshape y3 = {3, {2, 3, n}}, b3 = {2, {3, 1}}, c3 = {3, {2, 1, n}};
    test_binary_shapes(&y3, &y3, &b3); /* [2,3,n] + [3,1] */
    test_binary_shapes(&y3, &c3, &y3); /* [2,1,n] + [2,3,n] */
    mp_kshape y4 = {4, {1, 3, 2, n}}, b4 = {4, {1, 3, 1, 1}};
    test_binary_shapes(&y4, &y4, &b4); /* a bias per channel */
    mp_kshape yc = {2, {n, 3}}, ac = {2, {n, 1}}, bc2 = {1, {3}};
    test_binary_shapes(&yc, &ac, &bc2); /* outer product */
    /* a map read replicated (a Resize prologue): [1, 3, 2, f, n, f] +
     * [1, 3, 2, 1, n, 1], f = 2 and 3; the short last dim is run across */
    for (int64_t f = 2; f <= 3; f++) {
      mp_kshape yr = {6, {1, 3, 2, f, n, f}}, br = {6, {1, 3, 2, 1, n, 1}};
      test_binary_shapes(&yr, &yr, &br);
      test_binary_shapes(&yr, &br, &yr);
    }
  }
  /* in place: y is a */
  mp_kshape v = {1, {37}};
  mp_kbcast bc;
  (void)mp_k_bcast_init(&bc, &v, &v, &v, NULL);
  float a[37], b[37], y[37];
  fill_f32(a, 37);
  fill_f32(b, 37);
  mp_k_binary(MP_KB_MUL, &bc, MP_KD_F32, a, b, MP_KD_F32, y, false);
  mp_kv_binary(MP_KB_MUL, &bc, MP_KD_F32, a, b, MP_KD_F32, a, false);
  CHECK(same_bytes("binary in place", a, y, sizeof y));
}

/* ---- normalisation, softmax -------------------------------------------------
 */

static void test_norm(void) {
  size_t sz[8], nsz = sizes(__riscv_vsetvlmax_e32m2(), sz);
  for (size_t s = 0; s < nsz; s++) {
    int64_t n = (int64_t)sz[s], rows = 3, tot = rows * n;
    float *x = xalloc((size_t)tot * 4), *y1 = xalloc((size_t)tot * 4),
          *y2 = xalloc((size_t)tot * 4), *p = xalloc((size_t)n * 16);
    float m1[3], m2[3], i1[3], i2[3];
    fill_f32(x, (size_t)tot);
    fill_f32(p, (size_t)n * 4);
    for (int64_t i = 0; i < n; i++) p[3 * n + i] = fabsf(p[3 * n + i]) + 0.1f;
    char what[64];
    snprintf(what, sizeof what, "batchnorm rest %lld", (long long)n);
    mp_k_batchnorm_f32(1, rows, n, x, p, p + 1, p + 2, p + 3 * n, 1e-5, y1);
    mp_kv_batchnorm_f32(1, rows, n, x, p, p + 1, p + 2, p + 3 * n, 1e-5, y2);
    CHECK(same_f32(what, y2, y1, (size_t)tot, TOL_F, TOL_F));
    snprintf(what, sizeof what, "layernorm inner %lld", (long long)n);
    mp_k_layernorm_f32(rows, n, x, p, p + n, 1e-5, y1, m1, i1);
    mp_kv_layernorm_f32(rows, n, x, p, p + n, 1e-5, y2, m2, i2);
    CHECK(same_f32(what, y2, y1, (size_t)tot, TOL_F, TOL_F));
    CHECK(same_f32(what, m2, m1, 3, TOL_F, TOL_F));
    CHECK(same_f32(what, i2, i1, 3, TOL_F, TOL_F));
    mp_k_layernorm_f32(rows, n, x, p, NULL, 1e-5, y1, NULL, NULL);
    mp_kv_layernorm_f32(rows, n, x, p, NULL, 1e-5, y2, NULL, NULL);
    CHECK(same_f32(what, y2, y1, (size_t)tot, TOL_F, TOL_F));
    for (int lg = 0; lg < 2; lg++) {
      for (int shape = 0; shape < 3; shape++) {
        /* [rows, n, 1], [1, n, rows] and [1, rows, n]: the axis
         * contiguous, or columns across inner */
        int64_t o = shape == 0 ? rows : 1, a = shape == 2 ? rows : n,
                in = shape == 0   ? 1
                     : shape == 1 ? rows
                                  : n;
        for (int64_t i = 0; i < tot; i++) x[i] *= 8;
        snprintf(what, sizeof what, "softmax log%d %lldx%lldx%lld", lg,
                 (long long)o, (long long)a, (long long)in);
        mp_k_softmax_f32(o, a, in, x, y1, lg);
        mp_kv_softmax_f32(o, a, in, x, y2, lg);
        CHECK(same_f32(what, y2, y1, (size_t)tot, TOL_F, TOL_F));
        mp_kv_softmax_f32(o, a, in, x, x, lg); /* in place */
        CHECK(same_bytes(what, x, y2, (size_t)tot * 4));
        fill_f32(x, (size_t)tot);
      }
    }
    int8_t *xi = xalloc((size_t)tot), *z1 = xalloc((size_t)tot),
           *z2 = xalloc((size_t)tot);
    for (int shape = 0; shape < 2; shape++) {
      fill_i8(xi, (size_t)tot);
      for (int64_t i = 0; i < tot; i++) {
        if (rnd() % 3 == 0) xi[i] = (int8_t)(xi[i] / 40 + 100);
      }
      int64_t a = shape ? rows : n, in = shape ? n : 1, o = shape ? 1 : rows;
      mp_k_softmax_i8(o, a, in, xi, z1);
      mp_kv_softmax_i8(o, a, in, xi, z2);
      CHECK(same_bytes("softmax i8", z2, z1, (size_t)tot));
    }
    free(x), free(y1), free(y2), free(p), free(xi), free(z1), free(z2);
  }
}

/* ---- pools ------------------------------------------------------------------
 */

static void test_pool_case(const mp_kpool *p) {
  int64_t pin = p->in[0] * p->in[1] * p->in[2],
          pout = p->out[0] * p->out[1] * p->out[2];
  size_t nx = (size_t)(p->n * p->c * pin), ny = (size_t)(p->n * p->c * pout);
  float *x = xalloc(nx * 4), *y1 = xalloc(ny * 4), *y2 = xalloc(ny * 4);
  fill_f32(x, nx);
  x[nx / 2] = NAN;
  bool global = pout == 1 && p->pad[2] == 0 && p->k[2] == p->in[2];
  mp_k_maxpool(p, MP_KD_F32, x, y1);
  mp_kv_maxpool(p, MP_KD_F32, x, y2);
  CHECK(same_f32("maxpool", y2, y1, ny, 0, 0));
  x[nx / 2] = 0.25f;
  mp_k_avgpool(p, MP_KD_F32, x, y1);
  mp_kv_avgpool(p, MP_KD_F32, x, y2);
  CHECK(global ? same_f32("avgpool", y2, y1, ny, TOL_F, TOL_F)
               : same_bytes("avgpool", y2, y1, ny * 4));
  int8_t *xi = xalloc(nx), *z1 = xalloc(ny), *z2 = xalloc(ny);
  fill_i8(xi, nx);
  mp_k_maxpool(p, MP_KD_I8, xi, z1);
  mp_kv_maxpool(p, MP_KD_I8, xi, z2);
  CHECK(same_bytes("maxpool i8", z2, z1, ny));
  mp_k_avgpool(p, MP_KD_I8, xi, z1);
  mp_kv_avgpool(p, MP_KD_I8, xi, z2); /* the scalar fallback */
  CHECK(same_bytes("avgpool i8", z2, z1, ny));
  free(x), free(y1), free(y2), free(xi), free(z1), free(z2);
}

static void pool_shape(mp_kpool *p, int64_t h, int64_t w, int64_t k, int64_t s,
                       int64_t pad, bool ceil_mode, bool incl) {
  memset(p, 0, sizeof *p);
  p->n = 1;
  p->c = 2;
  p->in[0] = 1;
  p->in[1] = h;
  p->in[2] = w;
  p->k[0] = 1;
  p->k[1] = p->k[2] = k;
  p->stride[0] = 1;
  p->stride[1] = p->stride[2] = s;
  p->dil[0] = p->dil[1] = p->dil[2] = 1;
  p->pad[1] = p->pad[2] = pad;
  p->pad_end[1] = p->pad_end[2] = pad;
  p->out[0] = 1;
  for (int d = 1; d < 3; d++) {
    int64_t span = p->in[d] + 2 * pad - k;
    p->out[d] = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode)
      p->pad_end[d] += (p->out[d] - 1) * s + k - (p->in[d] + 2 * pad);
  }
  p->count_include_pad = incl;
}

static void test_pool(void) {
  size_t sz[8], nsz = sizes(__riscv_vsetvlmax_e32m4(), sz);
  mp_kpool p;
  for (size_t s = 0; s < nsz; s++) {
    int64_t w = (int64_t)sz[s] > 400 ? 400 : (int64_t)sz[s];
    pool_shape(&p, 3, w + 2, 3, 1, 1, false, false);
    test_pool_case(&p);
    pool_shape(&p, 5, 2 * w + 1, 3, 2, 1, true, true);
    test_pool_case(&p);
    pool_shape(&p, 4, w + 1, 2, 2, 0, true, false);
    test_pool_case(&p);
    pool_shape(&p, 2, w, 1, 1, 0, false, false);
    p.k[1] = 2;
    p.k[2] = w;
    p.out[1] = 1;
    p.out[2] = 1;
    test_pool_case(&p); /* global */
  }
}

/* ---- data movement
 * ------------------------------------------------------------ */

static void test_move(void) {
  size_t sz[8], nsz = sizes(__riscv_vsetvlmax_e8m8(), sz);
  for (size_t s = 0; s < nsz; s++) {
    size_t n = sz[s];
    unsigned char *a = xalloc(n + 64), *b = xalloc(n + 64);
    for (size_t i = 0; i < n + 64; i++) a[i] = (unsigned char)rnd();
    memcpy(b, a, n + 64);
    memmove(a + 7, a + 3, n); /* forward overlap */
    mp_kv_memmove(b + 7, b + 3, n);
    CHECK(same_bytes("memmove up", b, a, n + 64));
    memmove(a + 1, a + 9, n); /* backward overlap */
    mp_kv_memmove(b + 1, b + 9, n);
    CHECK(same_bytes("memmove down", b, a, n + 64));
    free(a), free(b);
  }
  static const size_t es_list[4] = {1, 2, 4, 8};
  nsz = sizes(__riscv_vsetvlmax_e32m8(), sz);
  for (size_t s = 0; s < nsz; s++) {
    int64_t n = (int64_t)sz[s] > 300 ? 300 : (int64_t)sz[s];
    for (int e = 0; e < 4; e++) {
      size_t es = es_list[e];
      mp_kshape xs = {4, {2, 3, n, 5}};
      size_t cnt = (size_t)mp_kshape_count(&xs), bytes = cnt * es;
      unsigned char *x = xalloc(bytes), *y1 = xalloc(8 * bytes + 64),
                    *y2 = xalloc(8 * bytes + 64);
      for (size_t i = 0; i < bytes; i++) x[i] = (unsigned char)rnd();
      static const uint32_t perms[4][4] = {
          {0, 1, 3, 2}, {3, 2, 1, 0}, {0, 2, 1, 3}, {1, 0, 2, 3}};
      for (int k = 0; k < 4; k++) {
        mp_k_transpose(es, &xs, perms[k], x, y1);
        mp_kv_transpose(es, &xs, perms[k], x, y2);
        CHECK(same_bytes("transpose", y2, y1, bytes));
      }
      /* Concat of x into a [2, 3 + 4, n*5] block at offset 4, and Split
       * back */
      memset(y1, 0, 4 * bytes);
      memset(y2, 0, 4 * bytes);
      mp_k_copy_block(es, 2, n * 5, x, 3, 0, y1, 7, 4, 3);
      mp_kv_copy_block(es, 2, n * 5, x, 3, 0, y2, 7, 4, 3);
      CHECK(same_bytes("concat", y2, y1, 4 * bytes));
      /* Pad with negative and positive pads, constant value */
      mp_kshape ps = {4, {2, 3, n, 5}};
      int64_t pb[4] = {1, -1, 2, 1}, pe[4] = {0, 1, -1, 3};
      for (int d = 0; d < 4; d++) ps.dims[d] = xs.dims[d] + pb[d] + pe[d];
      uint64_t value = 0xa5a5a5a5a5a5a5a5u;
      mp_k_pad(es, &xs, &ps, pb, MP_KPAD_CONSTANT, &value, x, y1);
      mp_kv_pad(es, &xs, &ps, pb, MP_KPAD_CONSTANT, &value, x, y2);
      CHECK(same_bytes("pad", y2, y1, (size_t)mp_kshape_count(&ps) * es));
      mp_k_pad(es, &xs, &ps, pb, MP_KPAD_REFLECT, &value, x, y1);
      mp_kv_pad(es, &xs, &ps, pb, MP_KPAD_REFLECT, &value, x, y2);
      CHECK(
          same_bytes("pad reflect", y2, y1, (size_t)mp_kshape_count(&ps) * es));
      free(x), free(y1), free(y2);
    }
  }
}

/* ---- quantization
 * ------------------------------------------------------------- */

static void test_quant(void) {
  size_t sz[8], nsz = sizes(__riscv_vsetvlmax_e32m4(), sz);
  for (size_t s = 0; s < nsz; s++) {
    int64_t n = (int64_t)sz[s], ch = 3, tot = 2 * ch * n;
    float *x = xalloc((size_t)tot * 4), *f1 = xalloc((size_t)tot * 4),
          *f2 = xalloc((size_t)tot * 4);
    uint8_t *q1 = xalloc((size_t)tot), *q2 = xalloc((size_t)tot);
    float scale[3] = {0.05f, 0.5f, 0.003f};
    for (int64_t i = 0; i < tot; i++) {
      x[i] = rndf() * 9;
      if (rnd() % 7 == 0) x[i] = (float)((int)(rnd() % 41) - 20) * 0.025f;
      if (rnd() % 50 == 0) x[i] = specials[rnd() % (sizeof specials / 4)];
    }
    for (int dy = MP_KD_I8; dy <= MP_KD_U8; dy++) {
      uint8_t zp[3] = {(uint8_t)(rnd() % 256), 0, 3};
      for (int per = 0; per < 2; per++) {
        int64_t o = per ? 2 : 1, c = per ? ch : 1, in = per ? n : tot;
        int ns = per ? 3 : 1;
        mp_k_quantize(o, c, in, x, scale, ns, zp, dy, q1);
        mp_kv_quantize(o, c, in, x, scale, ns, zp, dy, q2);
        CHECK(same_bytes("quantize", q2, q1, (size_t)tot));
        mp_k_dequantize(o, c, in, dy, q1, scale, ns, per ? zp : NULL, f1);
        mp_kv_dequantize(o, c, in, dy, q1, scale, ns, per ? zp : NULL, f2);
        CHECK(same_bytes("dequantize", f2, f1, (size_t)tot * 4));
      }
    }
    free(x), free(f1), free(f2), free(q1), free(q2);
  }
}

/* n random quantized bytes, zero points and positive scales. */
static void fill_quant(uint8_t *x, uint8_t *zp, float *sc, size_t n) {
  for (size_t i = 0; i < n; i++) {
    x[i] = (uint8_t)rnd();
    zp[i] = (uint8_t)rnd();
    sc[i] = rndf() * 0.1f + 0.001f;
  }
}

/* A matrix's columns dequantized (a MatMul's weight panel): int8, uint8,
 * int4 and uint4 (odd row lengths, so a row may start inside a byte), per
 * tensor, per row, per column, blocked along either axis (the last block
 * short), with and without zero points; the same bytes as the scalar
 * kernel. */
static void test_dequantize_cols(void) {
  size_t sz[8], nsz = sizes(__riscv_vsetvlmax_e32m4(), sz);
  static const int dts[] = {MP_KD_I8, MP_KD_U8, MP_KD_I4, MP_KD_U4};
  for (size_t s = 0; s < nsz; s++) {
    int64_t rows = 5, cols = (int64_t)sz[s] + 3, block = 3;
    int64_t c0 = cols > 4 ? 1 : 0, nc = cols - c0 - (cols > 6 ? 2 : 0);
    size_t n = (size_t)(rows * cols);
    uint8_t *x = xalloc(n), *zp = xalloc(n);
    float *sc = xalloc(n * 4), *y1 = xalloc((size_t)(rows * nc) * 4),
          *y2 = xalloc((size_t)(rows * nc) * 4);
    fill_quant(x, zp, sc, n);
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
      for (int cfg = 0; cfg < 5; cfg++) {
        /* per tensor, per row, per column, blocked rows, blocked columns */
        int axis = cfg == 2 || cfg == 4 ? 1 : 0;
        int64_t bl = cfg >= 3 ? block : 0;
        int ns = cfg == 0 ? 1 : 2;
        for (int z = 0; z < 2; z++) {
          const void *pz = z ? zp : NULL;
          mp_k_dequantize_cols(rows, cols, c0, nc, axis, bl, dts[d], x, sc, ns,
                               pz, y1);
          mp_kv_dequantize_cols(rows, cols, c0, nc, axis, bl, dts[d], x, sc, ns,
                                pz, y2);
          CHECK(same_bytes("dequantize_cols", y2, y1, (size_t)(rows * nc) * 4));
        }
      }
    }
    free(x), free(zp), free(sc), free(y1), free(y2);
  }
}

/* A run of a tensor's elements dequantized (a Conv's output channels, a
 * transposed Gemm weight's rows): int8, uint8, int4 and uint4; per
 * tensor, per channel and blocked (block 3, the last block short), with
 * the channel axis inner (inner > 1) or last (inner 1); with and without
 * zero points; runs that start and end inside a byte and cross channels
 * and outer indices; the same bytes as the scalar kernel. */
static void test_dequantize_range(void) {
  size_t sz[8], nsz = sizes(__riscv_vsetvlmax_e32m4(), sz);
  static const int dts[] = {MP_KD_I8, MP_KD_U8, MP_KD_I4, MP_KD_U4};
  for (size_t s = 0; s < nsz; s++) {
    int64_t w = (int64_t)sz[s] + 1, outer = 3, total = outer * 7 * w;
    uint8_t *x = xalloc((size_t)total), *zp = xalloc((size_t)total);
    float *sc = xalloc((size_t)total * 4), *y1 = xalloc((size_t)total * 4),
          *y2 = xalloc((size_t)total * 4);
    fill_quant(x, zp, sc, (size_t)total);
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
      for (int cfg = 0; cfg < 5; cfg++) {
        /* per tensor; per channel, inner w or 1; blocked, inner w or 1 */
        int64_t ch = cfg == 2 || cfg == 4 ? 7 * w : 7;
        int64_t inner = cfg == 2 || cfg == 4 ? 1 : w;
        int64_t bl = cfg >= 3 ? 3 : 0;
        int ns = cfg == 0 ? 1 : 2;
        int64_t e0 = rnd() % 5, n = total - e0 - (int64_t)(rnd() % 4);
        for (int z = 0; z < 2; z++) {
          const void *pz = z ? zp : NULL;
          mp_k_dequantize_range(ch, inner, bl, dts[d], x, sc, ns, pz, e0, n,
                                y1);
          mp_kv_dequantize_range(ch, inner, bl, dts[d], x, sc, ns, pz, e0, n,
                                 y2);
          CHECK(same_bytes("dequantize_range", y2, y1, (size_t)n * 4));
        }
      }
    }
    free(x), free(zp), free(sc), free(y1), free(y2);
  }
}

/* MatMulNBits' weight rows unpacked: 2, 4 and 8 bits, blocks of 16 and
 * 32, K a whole number of blocks, one with a short last block and an odd
 * one (its last byte part used); zero points none, packed uint8 (kb odd:
 * a row's last zero-point byte part used) and f32 (fractional); with and
 * without g_idx (each element a random block); rows from n0 = 1; the
 * same bytes as the scalar kernel. */
static void test_dequantize_nbits(void) {
  size_t sz[8], nsz = sizes(__riscv_vsetvlmax_e32m4(), sz);
  static const int64_t blocks[] = {16, 32};
  static const int zdt[] = {0, MP_KD_U8, MP_KD_F32};
  for (size_t s = 0; s < nsz; s++) {
    int64_t ks[3] = {64, (int64_t)sz[s] * 2 + 16, (int64_t)sz[s] + 37};
    for (int bits = 2; bits <= 8; bits *= 2) {
      for (size_t bi = 0; bi < 2; bi++) {
        for (size_t ki = 0; ki < 3; ki++) {
          int64_t k = ks[ki], bl = blocks[bi], n = 5;
          int64_t kb = (k + bl - 1) / bl, blob = bl * bits / 8;
          size_t nb = (size_t)(n * kb * blob), nz = (size_t)(n * kb);
          uint8_t *b = xalloc(nb), *zp = xalloc(nz), *junk = xalloc(nz);
          float *sc = xalloc(nz * 4), *fz = xalloc(nz * 4),
                *y1 = xalloc((size_t)(4 * k) * 4),
                *y2 = xalloc((size_t)(4 * k) * 4);
          int32_t *gi = xalloc((size_t)k * 4);
          fill_quant(b, junk, sc, nz);
          for (size_t i = 0; i < nb; i++) b[i] = (uint8_t)rnd();
          for (size_t i = 0; i < nz; i++) zp[i] = (uint8_t)rnd();
          for (size_t i = 0; i < nz; i++) {
            fz[i] = (float)(rnd() % (1u << bits)) + rndf();
          }
          for (int64_t i = 0; i < k; i++)
            gi[i] = (int32_t)(rnd() % (uint64_t)kb);
          for (int z = 0; z < 3; z++) {
            for (int g = 0; g < 2; g++) {
              mp_knbits w = {k,
                             bl,
                             bits,
                             zdt[z],
                             b,
                             sc,
                             z == 2 ? (const void *)fz : zp,
                             g ? gi : NULL};
              if (!z) w.zp = NULL;
              mp_k_dequantize_nbits(&w, 1, 4, y1);
              mp_kv_dequantize_nbits(&w, 1, 4, y2);
              CHECK(
                  same_bytes("dequantize_nbits", y2, y1, (size_t)(4 * k) * 4));
            }
          }
          free(b), free(zp), free(junk), free(sc), free(fz), free(y1);
          free(y2), free(gi);
        }
      }
    }
  }
}

/* ---- opset 23: RMSNormalization, RotaryEmbedding, Attention --------------
 */

static void test_rmsnorm_rotary(void) {
  size_t sz[8], nsz = sizes(__riscv_vsetvlmax_e32m2(), sz);
  for (size_t s = 0; s < nsz; s++) {
    int64_t n = (int64_t)sz[s], rows = 3, tot = rows * n;
    float *x = xalloc((size_t)tot * 4), *y1 = xalloc((size_t)tot * 4),
          *y2 = xalloc((size_t)tot * 4), *g = xalloc((size_t)n * 4);
    fill_f32(x, (size_t)tot);
    fill_f32(g, (size_t)n);
    char what[64];
    snprintf(what, sizeof what, "rmsnorm inner %lld", (long long)n);
    mp_k_rmsnorm(MP_KD_F32, rows, n, x, g, 1e-5, y1);
    mp_kv_rmsnorm_f32(rows, n, x, g, 1e-5, y2);
    CHECK(same_f32(what, y2, y1, (size_t)tot, TOL_F, TOL_F));
    mp_kv_rmsnorm_f32(rows, n, x, g, 1e-5, x); /* in place */
    CHECK(same_bytes(what, x, y2, (size_t)tot * 4));
    free(x), free(y1), free(y2), free(g);
    /* RotaryEmbedding: pairs n per head, two more elements not rotated,
     * 4-D [1, 2, 3, head] with position ids or 3-D [2, 3, 2 x head]
     * with caches per position; halves or interleaved */
    for (int layout = 0; layout < 4; layout++) {
      bool four = layout < 2, inter = layout % 2;
      mp_krope p = {four ? 1 : 2, 3, 2, 2 * n + 2, 2 * n, 0, 0, 0, inter};
      p.sh = four ? p.seq * p.head : p.head;
      p.ss = four ? p.head : p.heads * p.head;
      p.sb = p.heads * p.seq * p.head;
      size_t all = (size_t)(p.batch * p.sb), rows_c = 7;
      size_t nc = four ? rows_c * (size_t)n : (size_t)(p.batch * p.seq * n);
      float *xr = xalloc(all * 4), *r1 = xalloc(all * 4), *r2 = xalloc(all * 4),
            *co = xalloc(nc * 4), *si = xalloc(nc * 4);
      int64_t pos[3] = {6, 0, 3};
      fill_f32(xr, all);
      fill_f32(co, nc);
      fill_f32(si, nc);
      snprintf(what, sizeof what, "rotary %s%s half %lld", four ? "4-D" : "3-D",
               inter ? " interleaved" : "", (long long)n);
      mp_k_rotary(MP_KD_F32, &p, xr, co, si, four ? pos : NULL, r1);
      mp_kv_rotary_f32(&p, xr, co, si, four ? pos : NULL, r2);
      CHECK(same_f32(what, r2, r1, all, TOL_F, TOL_F));
      mp_kv_rotary_f32(&p, xr, co, si, four ? pos : NULL, xr); /* in place */
      CHECK(same_bytes(what, xr, r2, all * 4));
      free(xr), free(r1), free(r2), free(co), free(si);
    }
  }
}

/* One Attention case: head and v_head d, total keys t (past p of them),
 * 4 query heads on kv heads kvh, 3-D or 4-D, the mask kind, causal,
 * softcap, qk mode. */
static void attn_case(int64_t d, int64_t t, int64_t past, int64_t kvh,
                      bool three, int mask, bool causal, double cap, int mode,
                      bool pad) {
  /* pad: opset 24's nonpad_kv_seqlen, all keys but one, then all */
  static int64_t nonpad[2];
  nonpad[0] = t - 1, nonpad[1] = t;
  mp_kattn p = {2,    4,      kvh,   3,   t - past,
                past, d,      d + 1, {0}, {0},
                {0},  {0},    {0},   0,   mask,
                mode, causal, 0.37,  cap, pad ? nonpad : NULL};
  int64_t dims[4][3] = {{p.q_heads, p.q_seq, p.head},
                        {p.kv_heads, p.kv_seq, p.head},
                        {p.kv_heads, p.kv_seq, p.v_head},
                        {p.q_heads, p.q_seq, p.v_head}};
  int64_t *st[4] = {p.q_st, p.k_st, p.v_st, p.y_st};
  size_t n[4];
  for (int k = 0; k < 4; k++) {
    st[k][0] = dims[k][0] * dims[k][1] * dims[k][2];
    st[k][1] = three ? dims[k][2] : dims[k][1] * dims[k][2];
    st[k][2] = three ? dims[k][0] * dims[k][2] : dims[k][2];
    n[k] = (size_t)(p.batch * st[k][0]);
  }
  /* a [q_seq, total] mask broadcast over batch and heads */
  p.mask_len = t;
  p.m_st[2] = t, p.m_st[3] = 1;
  size_t nq = (size_t)(p.batch * p.q_heads * p.q_seq * t);
  float *q = xalloc(n[0] * 4), *k = xalloc(n[1] * 4), *v = xalloc(n[2] * 4),
        *y1 = xalloc(n[3] * 4), *y2 = xalloc(n[3] * 4),
        *pk = xalloc((size_t)(p.batch * kvh * past * d + 1) * 4),
        *pv = xalloc((size_t)(p.batch * kvh * past * (d + 1) + 1) * 4),
        *mf = xalloc((size_t)(p.q_seq * t) * 4), *qk1 = xalloc(nq * 4),
        *qk2 = xalloc(nq * 4);
  unsigned char *mb = xalloc((size_t)(p.q_seq * t));
  double *row = xalloc((size_t)t * 8);
  fill_f32(q, n[0]);
  fill_f32(k, n[1]);
  fill_f32(v, n[2]);
  fill_f32(pk, (size_t)(p.batch * kvh * past * d));
  fill_f32(pv, (size_t)(p.batch * kvh * past * (d + 1)));
  fill_f32(mf, (size_t)(p.q_seq * t));
  for (int64_t i = 0; i < p.q_seq * t; i++) mb[i] = i % 3 != 1;
  const void *m = mask == MP_KATTN_MASK_BOOL    ? (const void *)mb
                  : mask == MP_KATTN_MASK_FLOAT ? (const void *)mf
                                                : NULL;
  char what[96];
  snprintf(what, sizeof what,
           "attention head %lld total %lld past %lld kvh %lld %s mask %d "
           "causal %d softcap %g mode %d nonpad %d",
           (long long)d, (long long)t, (long long)past, (long long)kvh,
           three ? "3-D" : "4-D", mask, causal, cap, mode, pad);
  mp_k_attention(MP_KD_F32, &p, q, k, v, m, pk, pv, y1, qk1, row);
  mp_kv_attention_f32(&p, q, k, v, m, pk, pv, y2, qk2, row);
  CHECK(same_f32(what, y2, y1, n[3], TOL_F, TOL_F));
  CHECK(same_f32(what, qk2, qk1, nq, TOL_F, TOL_F));
  free(q), free(k), free(v), free(y1), free(y2), free(pk), free(pv);
  free(mf), free(qk1), free(qk2), free(mb), free(row);
}

static void test_attention(void) {
  size_t sz[8], nsz = sizes(__riscv_vsetvlmax_e32m2(), sz);
  for (size_t s = 0; s + 1 < nsz; s++) { /* not the 1000-wide head */
    int64_t d = (int64_t)sz[s];
    attn_case(d, 5, 0, 4, false, MP_KATTN_MASK_NONE, false, 0, 0, false);
    attn_case(d, 7, 2, 2, true, MP_KATTN_MASK_BOOL, true, 0, 3, false);
    attn_case(d, (int64_t)sz[s] + 2, 1, 1, false, MP_KATTN_MASK_FLOAT, false,
              1.5, 3, false);
    attn_case(d, 4, 0, 2, true, MP_KATTN_MASK_FLOAT, true, 0, 0, false);
    attn_case(d, 6, 0, 2, false, MP_KATTN_MASK_NONE, true, 0, 3, true);
    attn_case(d, 6, 2, 4, true, MP_KATTN_MASK_BOOL, true, 0, 0, true);
  }
}

int main(int argc, char **argv) {
  unsigned want = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
  printf("rvv kernels at VLEN %u\n", mp_kv_vlen());
  if (want) CHECK_EQ_U(mp_kv_vlen(), want);
  test_conv();
  test_conv_transpose();
  test_gemm();
  test_unary();
  test_binary();
  test_norm();
  test_rmsnorm_rotary();
  test_attention();
  test_pool();
  test_move();
  test_quant();
  test_dequantize_cols();
  test_dequantize_range();
  test_dequantize_nbits();
  printf("rvv kernels: %d checks\n", check_count);
  return check_exit("test_kernels_rvv");
}
