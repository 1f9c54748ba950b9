/*
 * test_runtime.c -- the bundle loader against truncated and corrupted
 * bundles, the executor's allocation discipline, and kernels on known
 * results.
 *
 * usage: test_runtime SOURCE_DIR
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mplan/compile.h"
#include "mplan/kernels.h"
#include "mplan/runner.h"

typedef struct count_alloc {
  long calls;
} count_alloc;

static void *count_fn(void *ud, void *ptr, size_t size) {
  ((count_alloc *)ud)->calls++;
  if (size == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, size);
}

/* model's bundle; a model named "*.onnx.bin" is planned with every graph
 * pass (its point is a rewrite the passes make). */
static mp_buf bundle_of(const char *src, const char *model) {
  char path[1024];
  size_t n = strlen(model);
  mp_load_opts lo = {.passes = n > 9 && strcmp(model + n - 9, ".onnx.bin") == 0
                                   ? MP_PASSES_ALL
                                   : 0};
  snprintf(path, sizeof path, "%s/%s", src, model);
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_buf out;
  mp_buf_init(&out, NULL);
  mp_compile_opts co = {.seed = 7};
  mp_status st = mp_model_load(path, &lo, NULL, &m, &err);
  if (st == MP_OK) st = mp_plan_solve(mp_model_problem(m), NULL, &plan, &err);
  if (st == MP_OK) {
    st = mp_compile_model(m, mp_model_problem(m), mp_plan_placements(plan), &co,
                          NULL, &out, &err);
  }
  if (st != MP_OK) fprintf(stderr, "bundle_of %s: %s\n", model, err.msg);
  CHECK(st == MP_OK);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return out;
}

/* Recomputes the CRC so that a corruption reaches the field checks. */
static void fix_crc(unsigned char *p, size_t len) {
  memset(p + 24, 0, 4);
  uint32_t crc = mp_crc32(0, p, len);
  for (int i = 0; i < 4; i++) p[24 + i] = (unsigned char)(crc >> (8 * i));
}

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static mp_status load(const unsigned char *p, size_t len, mp_error *err) {
  mp_bundle *b = NULL;
  mp_status st = mp_bundle_load("t.mpk", p, len, NULL, &b, err);
  mp_bundle_destroy(b);
  return st;
}

/* Section offsets, as the loader computes them. */
static size_t section(const unsigned char *p, int which) {
  static const size_t rec[] = {1, 32, 48, 128, 32, 4};
  size_t at = 96;
  for (int i = 0; i < which; i++) {
    uint32_t n = (uint32_t)p[32 + 4 * i] | (uint32_t)p[33 + 4 * i] << 8 |
                 (uint32_t)p[34 + 4 * i] << 16 | (uint32_t)p[35 + 4 * i] << 24;
    at += n * rec[i];
    at = (at + 7) & ~(size_t)7;
  }
  return at;
}

/* One corruption with a fixed CRC, and the message it must produce. */
static void corrupt(const mp_buf *good, void (*mutate)(unsigned char *),
                    const char *want) {
  unsigned char *p = malloc(good->len);
  memcpy(p, good->data, good->len);
  mutate(p);
  fix_crc(p, good->len);
  mp_error err = {0};
  mp_status st = load(p, good->len, &err);
  CHECK(st == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, want);
  free(p);
}

static void m_region_size(unsigned char *p) {
  put_u64(p + section(p, 1) + 32 + 8, 16); /* scratch region of 16 bytes */
}
static void m_kernel(unsigned char *p) {
  p[section(p, 4) + 8] = 200; /* op 0: kernel id 200 */
}
static void m_dims(unsigned char *p) {
  put_u64(p + section(p, 3) + 56, 7); /* tensor 0: dim 0 = 7 */
}
static void m_weight_data(unsigned char *p) {
  /* tensor 1 (conv1_w): its data past the weight blob */
  put_u64(p + section(p, 3) + 128 + 40, (uint64_t)1 << 39);
}
static void m_weight_region(unsigned char *p) {
  /* buffer 1 (a weight) into the scratch region (1) */
  put_u32(p + section(p, 2) + 48 + 4, 1);
}
static void m_version(unsigned char *p) {
  put_u32(p + 8, 2);
}
static void m_ref(unsigned char *p) {
  /* every ref of op 0 points at tensor 100000 */
  size_t op = section(p, 4);
  uint32_t r0 = (uint32_t)p[op + 16] | (uint32_t)p[op + 17] << 8;
  uint32_t nops = (uint32_t)p[48] | (uint32_t)p[49] << 8;
  size_t refs = op + 32 * (size_t)nops;
  refs = (refs + 7) & ~(size_t)7;
  put_u32(p + refs + 4 * r0, 100000);
}
static void m_lifetime(unsigned char *p) {
  /* tensor 3 (conv1_out, produced at step 0) says it is born at step 5 */
  put_u32(p + section(p, 3) + 3 * 128 + 32, 5);
}

static void test_loader(const char *src) {
  mp_buf good = bundle_of(src, "tests/data/tiny_net.json");
  mp_error err = {0};
  CHECK(load((const unsigned char *)good.data, good.len, &err) == MP_OK);
  /* Every truncation is refused (the header's size and the CRC). */
  size_t refused = 0, tried = 0;
  for (size_t n = 0; n < good.len; n++) {
    tried++;
    if (load((const unsigned char *)good.data, n, &err) == MP_ERR_BAD_INPUT)
      refused++;
  }
  CHECK_EQ_U(refused, tried);
  CHECK_HAS(err.msg, "invalid bundle");
  size_t truncations = tried;
  /* Every single-byte flip is refused (CRC-32 catches all of them). */
  unsigned char *p = malloc(good.len);
  refused = tried = 0;
  for (size_t at = 0; at < good.len; at++) {
    memcpy(p, good.data, good.len);
    p[at] ^= 0x5a;
    tried++;
    if (load(p, good.len, &err) == MP_ERR_BAD_INPUT) refused++;
  }
  free(p);
  CHECK_EQ_U(refused, tried);
  printf("loader: %zu truncations and %zu byte flips refused\n", truncations,
         refused);
  mp_buf_free(&good);
  /* Field checks behind a valid CRC, each with its message, on a real
   * model. */
  mp_buf v2 = bundle_of(src, "models/mobilenet_v2.json");
  corrupt(&v2, m_region_size, "outside region");
  corrupt(&v2, m_kernel, "unknown kernel id 200");
  corrupt(&v2, m_dims, "where its shape and dtype give");
  corrupt(&v2, m_weight_data, "inside the");
  corrupt(&v2, m_weight_region,
          "must be persistent and apart from the activation arena");
  corrupt(&v2, m_version, "version 2");
  corrupt(&v2, m_ref, "is tensor 100000");
  corrupt(&v2, m_lifetime, "born at 5");
  mp_buf_free(&v2);
}

/* tests/data/loop_ort.onnx.bin (Loop, Scan, nested loops): the loop field
 * of an op record and a LOOP's enter step are checked at load, and the
 * run matches what the loops compute, in poison and paranoid mode. */
static void m_loop_self(unsigned char *p) {
  put_u32(p + section(p, 4) + 28, 1); /* op 0 repeated by itself */
}
static void m_loop_not_loop(unsigned char *p) {
  put_u32(p + section(p, 4) + 28, 3); /* op 0 repeated by op 2 */
}
static void m_loop_enter(unsigned char *p) {
  /* every LOOP's params[1] (its enter step) made 0: the first is right
   * (lp's enter runs first), the second is not */
  size_t ops = section(p, 4), params = section(p, 6);
  uint32_t n_ops = (uint32_t)p[48] | (uint32_t)p[49] << 8;
  for (uint32_t k = 0; k < n_ops; k++) {
    unsigned char *r = p + ops + 32 * (size_t)k;
    if ((r[8] | r[9] << 8) != MP_BOP_LOOP) continue;
    uint32_t p0 = (uint32_t)r[20] | (uint32_t)r[21] << 8 |
                  (uint32_t)r[22] << 16 | (uint32_t)r[23] << 24;
    put_u64(p + params + 8 * ((size_t)p0 + 1), 0);
  }
}

static void test_loops(const char *src) {
  mp_buf good = bundle_of(src, "tests/data/loop_ort.onnx.bin");
  corrupt(&good, m_loop_self, "is not a later step");
  corrupt(&good, m_loop_not_loop, "which is no loop entered before it");
  corrupt(&good, m_loop_enter, "bad parameters, arity or enter op");
  mp_error err = {0};
  mp_bundle *b = NULL;
  mp_rt *rt = NULL;
  CHECK(mp_bundle_load("loops", good.data, good.len, NULL, &b, &err) == MP_OK);
  mp_rt_opts o = {true, true, false, -1, 0, 0, 0};
  CHECK(mp_rt_create(b, &o, NULL, &rt, &err) == MP_OK);
  float x[12], seq[30], seq2[10];
  for (int i = 0; i < 12; i++) x[i] = ((float)(i % 5) - 2.0f) / 4;
  for (int i = 0; i < 30; i++) seq[i] = (float)i;
  for (int i = 0; i < 10; i++) seq2[i] = (float)(i + 1);
  CHECK(mp_rt_set_input(rt, 0, x, sizeof x, &err) == MP_OK);
  CHECK(mp_rt_set_input(rt, 1, seq, sizeof seq, &err) == MP_OK);
  CHECK(mp_rt_set_input(rt, 2, seq2, sizeof seq2, &err) == MP_OK);
  CHECK(mp_rt_run(rt, &err) == MP_OK);
  CHECK_EQ_U(mp_rt_event_count(rt), 0);
  uint32_t t;
  /* lp: acc = x + (0 + 1 + 2 + 3) relu(x); count = 4 */
  CHECK(mp_bundle_find_tensor(b, "acc", &t));
  const float *acc = mp_rt_tensor_data(rt, t);
  for (int i = 0; i < 12; i++) {
    CHECK(acc[i] == x[i] + 6.0f * (x[i] > 0 ? x[i] : 0));
  }
  CHECK(mp_bundle_find_tensor(b, "count", &t));
  CHECK(*(const float *)mp_rt_tensor_data(rt, t) == 4.0f);
  /* wl: v0 = |x[0..3)| + 0.25 = 0.75, 0.5, 0.25 (sum 1.5), doubled
   * while the doubled sum stays below 6: 3, then 6 (two iterations) */
  CHECK(mp_bundle_find_tensor(b, "v_final", &t));
  const float *v = mp_rt_tensor_data(rt, t);
  CHECK(v[0] == 3.0f && v[1] == 2.0f && v[2] == 1.0f);
  /* sc: s_all[k] = seq[0] + ... + seq[k]; step k reads seq2 column 4-k
   * (reversed) and writes prods slice 4-k (reversed): prods[a][c][j] =
   * seq[4-j][a][c] x seq2[a][j] */
  CHECK(mp_bundle_find_tensor(b, "s_all", &t));
  const float *sa = mp_rt_tensor_data(rt, t);
  for (int k = 0; k < 5; k++) {
    for (int j = 0; j < 6; j++) {
      float want = 0;
      for (int q = 0; q <= k; q++) want += seq[q * 6 + j];
      CHECK(sa[k * 6 + j] == want);
    }
  }
  CHECK(mp_bundle_find_tensor(b, "prods", &t));
  const float *pr = mp_rt_tensor_data(rt, t);
  for (int a = 0; a < 2; a++) {
    for (int c = 0; c < 3; c++) {
      for (int k = 0; k < 5; k++) {
        CHECK(pr[(a * 3 + c) * 5 + k] ==
              seq[(4 - k) * 6 + a * 3 + c] * seq2[a * 5 + k]);
      }
    }
  }
  /* outer: z -> (z + 0 + 1) / 2, three times; none: 0 iterations, v0 */
  CHECK(mp_bundle_find_tensor(b, "z_final", &t));
  const float *z = mp_rt_tensor_data(rt, t);
  CHECK(z[0] == ((((0.75f + 1) / 2 + 1) / 2 + 1) / 2));
  CHECK(mp_bundle_find_tensor(b, "v_none", &t));
  CHECK(((const float *)mp_rt_tensor_data(rt, t))[1] == 0.5f);
  mp_rt_destroy(rt);
  mp_bundle_destroy(b);
  mp_buf_free(&good);
}

/* Structured fuzzing behind a valid CRC: random bytes of the records and
 * parameters changed, the CRC fixed. Every mutant is refused with a
 * message or, when the loader accepts it, runs to the end (under ASan in
 * the sanitizer build: no access outside the regions). Seed printed. */
static void test_fuzz(const char *src, const char *model, size_t min_refused) {
  mp_buf good = bundle_of(src, model);
  unsigned char *p = malloc(good.len);
  uint64_t seed = 20261129, s = seed;
  size_t refused = 0, accepted = 0, ran = 0;
  /* the weights (64-aligned, last) stay: changing them is not a
   * structural mutation (and a trip count made 2^40 runs as long as the
   * loop cap lets it) */
  uint64_t wbytes = 0;
  const unsigned char *h = (const unsigned char *)good.data;
  for (int i = 7; i >= 0; i--) wbytes = wbytes << 8 | h[72 + i];
  size_t end = good.len - (size_t)wbytes - 64;
  const int mutants = 3000;
  for (int it = 0; it < mutants; it++) {
    memcpy(p, good.data, good.len);
    int n = 1 + (int)(s % 4);
    for (int k = 0; k < n; k++) {
      s = s * 6364136223846793005u + 1442695040888963407u;
      size_t at = 32 + (size_t)(s >> 33) % (end - 32);
      s = s * 6364136223846793005u + 1442695040888963407u;
      p[at] = (unsigned char)(s >> 56);
    }
    fix_crc(p, good.len);
    mp_error err = {0};
    mp_bundle *b = NULL;
    mp_status st = mp_bundle_load("fuzz", p, good.len, NULL, &b, &err);
    if (st != MP_OK) {
      CHECK(st == MP_ERR_BAD_INPUT);
      CHECK(strstr(err.msg, "invalid bundle") != NULL);
      refused++;
      continue;
    }
    accepted++;
    mp_rt *rt = NULL;
    mp_rt_opts o = {true, true, false, -1, 0, 0, 0};
    if (mp_rt_create(b, &o, NULL, &rt, &err) == MP_OK) {
      if (mp_rt_run(rt, &err) == MP_OK) ran++;
      mp_rt_destroy(rt);
    }
    mp_bundle_destroy(b);
  }
  printf(
      "fuzz %s (seed %llu): %d mutants behind a valid CRC, %zu refused, "
      "%zu accepted (%zu ran to the end)\n",
      model, (unsigned long long)seed, mutants, refused, accepted, ran);
  CHECK(refused > min_refused);
  free(p);
  mp_buf_free(&good);
}

/* mp_rt_run allocates nothing, in poison and paranoid mode too. */
static void test_no_alloc(const char *src) {
  mp_buf good = bundle_of(src, "models/mobilenet_v1.json");
  count_alloc ca = {0};
  mp_alloc a = {count_fn, &ca};
  mp_error err = {0};
  mp_bundle *b = NULL;
  mp_rt *rt = NULL;
  mp_rt_opts o = {true, true, false, -1, 0, 0, 0};
  CHECK(mp_bundle_load("v1", good.data, good.len, &a, &b, &err) == MP_OK);
  CHECK(mp_rt_create(b, &o, &a, &rt, &err) == MP_OK);
  long before = ca.calls;
  CHECK(mp_rt_run(rt, &err) == MP_OK);
  CHECK(mp_rt_run(rt, &err) == MP_OK);
  CHECK_EQ_I(ca.calls - before, 0);
  CHECK(before > 0);
  CHECK_EQ_U(mp_rt_event_count(rt), 0);
  printf("allocator calls: %ld to load and create, %ld during two runs\n",
         before, ca.calls - before);
  mp_rt_destroy(rt);
  mp_bundle_destroy(b);
  mp_buf_free(&good);
}

/* Conv on a hand-computed case: 1x1x3x3 input, 2x2 kernel, pad 1. */
static void test_kernels(void) {
  float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 0, 0, -1}, y[16];
  float scratch[16];
  mp_kconv p = {1,         1,         1,         1,
                {1, 3, 3}, {1, 4, 4}, {1, 2, 2}, {1, 1, 1},
                {1, 1, 1}, {0, 1, 1}, 0};
  mp_k_conv_f32(&p, x, w, NULL, y, scratch);
  /* y[i][j] = x[i-1][j-1] - x[i][j] over the zero-padded input */
  CHECK(y[0] == -1 && y[5] == 1 - 5 && y[15] == 9 && y[3] == 0 && y[12] == 0);
  /* In-place depthwise equals out-of-place. */
  float a[2 * 16], b2[2 * 8], wd[2 * 3] = {1, 2, 3, -1, 0, 1}, s[16];
  for (int i = 0; i < 32; i++) a[i] = (float)(i * 7 % 11) - 5;
  mp_kconv d = {1,          2,         2,         2,
                {1, 1, 16}, {1, 1, 8}, {1, 1, 3}, {1, 1, 2},
                {1, 1, 1},  {0, 0, 1}, 0};
  mp_k_conv_f32(&d, a, wd, NULL, b2, s);
  mp_k_conv_f32(&d, a, wd, NULL, a, s);
  CHECK(memcmp(a, b2, sizeof b2) == 0);
  /* Relu is max(x, +0): a negative or -0 gives +0 (1 / Relu(x) is +inf,
   * as in ONNX Runtime), NaN stays NaN. */
  float rx[4] = {-3.0f, -0.0f, 2.5f, NAN}, ry[4];
  mp_kunary_params rp = {0, 0};
  mp_k_unary(MP_KU_RELU, &rp, MP_KD_F32, rx, ry, 4);
  CHECK(ry[0] == 0 && !signbit(ry[0]) && !signbit(ry[1]) && ry[2] == 2.5f &&
        isnan(ry[3]));
  /* Broadcast add and int8 requantization. */
  float u[6] = {1, 2, 3, 4, 5, 6}, v[3] = {10, 20, 30}, r[6];
  mp_kshape su = {2, {2, 3}}, sv = {1, {3}};
  mp_kbcast bc;
  CHECK(mp_k_bcast_init(&bc, &su, &su, &sv, NULL));
  mp_k_binary(MP_KB_ADD, &bc, MP_KD_F32, u, v, MP_KD_F32, r, false);
  CHECK(r[0] == 11 && r[5] == 36);
  int8_t ia[2] = {100, -100}, ib[2] = {100, 100}, ic[1];
  int32_t bias[1] = {3};
  mp_kgemm g = {1, 1, 2, false, false, 1, 1, 0, 0, 4};
  mp_k_gemm_i8(&g, ia, ib, bias, ic);
  CHECK_EQ_I(ic[0], 0); /* (10000 - 10000 + 3) / 16 = 0.19 -> 0 */
  bias[0] = 24;
  mp_k_gemm_i8(&g, ia, ib, bias, ic);
  CHECK_EQ_I(ic[0], 2); /* 24 / 16 = 1.5 -> 2 (half away from zero) */
}

/* f16 and bf16 (mp_k_load, mp_k_store) against their definitions, over
 * every bit pattern: each value loads and stores back to its bits; at
 * each midpoint between neighbours the store rounds to the even one, and
 * just off it to the nearer; past the largest finite value's midpoint it
 * overflows to infinity; NaN stays a (quiet) NaN, zeros keep their sign. */
static void test_half(int kd, uint16_t max_finite, uint16_t qnan) {
  int bad = 0;
  for (uint32_t h = 0; h <= 0xffff; h++) {
    uint16_t bits = (uint16_t)h, got;
    double v = mp_k_load(&bits, kd, 0);
    mp_k_store(&got, kd, 0, v);
    if (isnan(v) ? (got & 0x7fffu) != qnan : got != bits) bad++;
  }
  CHECK_EQ_I(bad, 0);
  for (uint16_t h = 0; h < max_finite; h++) {
    uint16_t lo = h, hi = (uint16_t)(h + 1), got[3];
    double a = mp_k_load(&lo, kd, 0), b = mp_k_load(&hi, kd, 0);
    double mid = (a + b) / 2, off = (b - a) / 1024;
    mp_k_store(&got[0], kd, 0, mid);
    mp_k_store(&got[1], kd, 0, mid - off);
    mp_k_store(&got[2], kd, 0, -(mid + off));
    if (got[0] != (h % 2 ? hi : lo) || got[1] != lo ||
        got[2] != (uint16_t)(hi | 0x8000u)) {
      bad++;
    }
  }
  CHECK_EQ_I(bad, 0);
  uint16_t top = max_finite, next = (uint16_t)(max_finite + 1), got;
  double m = mp_k_load(&top, kd, 0),
         step = m - mp_k_load(&(uint16_t){(uint16_t)(top - 1)}, kd, 0);
  mp_k_store(&got, kd, 0, m + step / 2); /* the tie rounds to even: inf */
  CHECK_EQ_U(got, next);
  mp_k_store(&got, kd, 0, m + step / 2 - step / 1024);
  CHECK_EQ_U(got, top);
  mp_k_store(&got, kd, 0, -1e300);
  CHECK_EQ_U(got, next | 0x8000u);
  mp_k_store(&got, kd, 0, NAN);
  CHECK_EQ_U(got & 0x7fffu, qnan);
  mp_k_store(&got, kd, 0, -0.0);
  CHECK_EQ_U(got, 0x8000u);
  mp_k_store(&got, kd, 0, 1e-300); /* below half the least subnormal */
  CHECK_EQ_U(got, 0);
}

/* GridSample far outside the input: a grid value of 1e30 or infinity
 * reads what one 50 pixels out reads (zero, or the border) in every mode,
 * instead of converting an out-of-range double to an integer (undefined;
 * the sanitizer build checks float-cast-overflow); reflection stays
 * finite. */
static void test_grid_far(void) {
  float x[6] = {1, 2, 3, 4, 5, 6};
  for (int mode = MP_KGRID_BILINEAR; mode <= MP_KGRID_BICUBIC; mode++) {
    for (int pad = MP_KGRID_ZEROS; pad <= MP_KGRID_REFLECTION; pad++) {
      for (int align = 0; align < 2; align++) {
        mp_kgrid p = {1,
                      1,
                      2,
                      3,
                      1,
                      3,
                      (mp_kgrid_mode)mode,
                      (mp_kgrid_padding)pad,
                      align != 0};
        float far[6] = {1e30f, -1e30f, -INFINITY, INFINITY, 1e30f, 3};
        float near[6] = {50, -50, -50, 50, 50, 3};
        float a[3], b[3];
        mp_k_grid_sample(&p, MP_KD_F32, x, MP_KD_F32, far, a);
        mp_k_grid_sample(&p, MP_KD_F32, x, MP_KD_F32, near, b);
        for (int i = 0; i < 3; i++) {
          if (pad == MP_KGRID_REFLECTION) {
            CHECK(isfinite(a[i]));
          } else {
            CHECK(a[i] == b[i]);
          }
        }
      }
    }
  }
}

/* ConvInteger against the definition, window by window: random shapes
 * with groups, strides, dilations and pads, int8 and uint8 operands, a
 * per-channel w_zero_point; the ONNX node tests cover only uint8 with
 * scalar zero points. */
static void test_conv_integer(void) {
  uint32_t seed = 12345;
#define CI_RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
  int checked = 0;
  for (int trial = 0; trial < 200; trial++) {
    int64_t g = 1 + CI_RND() % 2, cg = 1 + CI_RND() % 3, mg = 1 + CI_RND() % 3;
    int64_t c = g * cg, m = g * mg, in1 = 1 + CI_RND() % 7,
            in2 = 1 + CI_RND() % 9;
    int64_t k1 = 1 + CI_RND() % 3, k2 = 1 + CI_RND() % 3;
    int64_t s1 = 1 + CI_RND() % 2, s2 = 1 + CI_RND() % 3;
    int64_t d1 = 1 + CI_RND() % 2, d2 = 1 + CI_RND() % 2;
    int64_t p1 = CI_RND() % 3, p2 = CI_RND() % 3;
    int64_t o1 = (in1 + 2 * p1 - d1 * (k1 - 1) - 1) / s1 + 1;
    int64_t o2 = (in2 + 2 * p2 - d2 * (k2 - 1) - 1) / s2 + 1;
    if (in1 + 2 * p1 < d1 * (k1 - 1) + 1 || in2 + 2 * p2 < d2 * (k2 - 1) + 1)
      continue;
    bool ux = CI_RND() % 2, uw = CI_RND() % 2, per = CI_RND() % 2;
    unsigned char x[2 * 3 * 7 * 9], w[6 * 3 * 3 * 3], wz[6];
    int32_t y[6 * 11 * 13]; /* o1 <= in1 + 2 p1, o2 <= in2 + 2 p2 */
    for (size_t i = 0; i < sizeof x; i++) x[i] = (unsigned char)CI_RND();
    for (size_t i = 0; i < sizeof w; i++) w[i] = (unsigned char)CI_RND();
    for (size_t i = 0; i < sizeof wz; i++) wz[i] = (unsigned char)CI_RND();
    int32_t xzp =
        ux ? (int32_t)(CI_RND() % 256) : (int32_t)(CI_RND() % 256) - 128;
    mp_kconv p = {1,
                  c,
                  m,
                  g,
                  {1, in1, in2},
                  {1, o1, o2},
                  {1, k1, k2},
                  {1, s1, s2},
                  {1, d1, d2},
                  {0, p1, p2},
                  0};
    mp_k_conv_integer(&p, ux ? MP_KD_U8 : MP_KD_I8, x, xzp,
                      uw ? MP_KD_U8 : MP_KD_I8, w, wz, per ? m : 1, y);
    for (int64_t oc = 0; oc < m; oc++) {
      int32_t z = uw ? wz[per ? oc : 0] : (int8_t)wz[per ? oc : 0];
      for (int64_t a = 0; a < o1; a++) {
        for (int64_t b = 0; b < o2; b++) {
          int64_t want = 0;
          for (int64_t ic = 0; ic < cg; ic++) {
            for (int64_t u = 0; u < k1; u++) {
              for (int64_t v = 0; v < k2; v++) {
                int64_t i = a * s1 + u * d1 - p1, j = b * s2 + v * d2 - p2;
                if (i < 0 || i >= in1 || j < 0 || j >= in2) continue;
                size_t xi = (size_t)(((oc / mg * cg + ic) * in1 + i) * in2 + j);
                size_t wi = (size_t)(((oc * cg + ic) * k1 + u) * k2 + v);
                int32_t xv = ux ? x[xi] : (int8_t)x[xi];
                int32_t wv = uw ? w[wi] : (int8_t)w[wi];
                want += (int64_t)(xv - xzp) * (wv - z);
              }
            }
          }
          CHECK_EQ_I(y[(oc * o1 + a) * o2 + b], want);
          checked++;
        }
      }
    }
  }
#undef CI_RND
  CHECK(checked > 1000);
}

/* DynamicQuantizeLinear: the range holds 0, the zero point maps 0 exactly,
 * and every zero input gives zeros. */
static void test_dynamic_quantize(void) {
  float x[6] = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f}, sc;
  uint8_t y[6], zp;
  mp_k_dynamic_quantize(6, x, y, &sc, &zp);
  CHECK(sc == 2.5f / 255.0f);
  CHECK_EQ_I(zp, 102); /* round(1 / (2.5 / 255)) = round(102.0) */
  CHECK_EQ_I(y[0], 0);
  CHECK_EQ_I(y[2], zp);
  CHECK_EQ_I(y[5], 255);
  float pos[3] = {2.0f, 4.0f, 8.0f};
  mp_k_dynamic_quantize(3, pos, y, &sc, &zp);
  CHECK(zp == 0 && sc == 8.0f / 255.0f && y[2] == 255 && y[0] == 64);
  float zero[3] = {0, 0, 0};
  y[0] = 7;
  mp_k_dynamic_quantize(3, zero, y, &sc, &zp);
  CHECK(sc == 0.0f && zp == 0 && y[0] == 0 && y[2] == 0);
}

/* mp_k_dequantize_range (a Conv weight's panel of output channels): every
 * run [e0, e0 + n) of a [4, 5, 3] tensor, per tensor, per axis (each
 * axis), blocked along each axis (block 2, the last block short), with
 * and without zero points, for int8, uint8, int4, uint4 (runs that start
 * and end inside a byte) and int32, gives the bytes of the same elements
 * of the whole tensor's dequantization. */
static void test_dequantize_range(void) {
  enum { N = 60 };
  static const int dts[] = {MP_KD_I8, MP_KD_U8, MP_KD_I4, MP_KD_U4, MP_KD_I32};
  static const int64_t dims[3] = {4, 5, 3};
  int32_t xq[N], zq[N];
  float sc[N], whole[N], run[N];
  uint32_t seed = 12345;
  for (int i = 0; i < N; i++) {
    seed = seed * 1103515245u + 12345u;
    xq[i] = (int32_t)(seed >> 8);
    zq[i] = (int32_t)(seed >> 3);
    sc[i] = (float)((seed >> 16) % 97 + 1) / 64.0f;
  }
  int checked = 0, wrong = 0;
  for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
    for (int axis = 0; axis < 3; axis++) {
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < axis; i++) outer *= dims[i];
      for (int i = axis + 1; i < 3; i++) inner *= dims[i];
      for (int cfg = 0; cfg < 3; cfg++) { /* per tensor, per axis, blocked */
        if (cfg == 0 && axis > 0) continue;
        int64_t ch = cfg == 0 ? 1 : dims[axis], block = cfg == 2 ? 2 : 0;
        int64_t in = cfg == 0 ? N : inner, out = cfg == 0 ? 1 : outer;
        int ns = cfg == 0 ? 1 : (int)ch;
        for (int z = 0; z < 2; z++) {
          const void *pz = z ? zq : NULL;
          if (block) {
            mp_k_dequantize_blocked(out, ch, in, block, dts[d], xq, sc, pz,
                                    whole);
          } else {
            mp_k_dequantize(out, ch, in, dts[d], xq, sc, ns, pz, whole);
          }
          for (int64_t e0 = 0; e0 < N; e0++) {
            for (int64_t n = 1; e0 + n <= N; n += 4) {
              memset(run, 0xa5, sizeof run);
              mp_k_dequantize_range(ch, in, block, dts[d], xq, sc, ns, pz, e0,
                                    n, run);
              checked++;
              if (memcmp(run, whole + e0, (size_t)n * 4) != 0 ||
                  memcmp(run + n, &(uint32_t){0xa5a5a5a5u}, 4) != 0) {
                wrong++;
              }
            }
          }
        }
      }
    }
  }
  CHECK_EQ_I(wrong, 0);
  CHECK(checked > 10000);
}

/* Weights given as graph JSON data reach the kernels exactly. */
static void test_data_weights(const char *src) {
  mp_buf bundle = bundle_of(src, "tests/data/data_weights.json");
  mp_error err = {0};
  mp_bundle *b = NULL;
  mp_rt *rt = NULL;
  float x[3] = {1, 1, 2}, want[2] = {1 + 2 + 6 + 0.5f, 0}; /* -9 + 10 = 1 */
  want[1] = 1;
  CHECK(mp_bundle_load("dw", bundle.data, bundle.len, NULL, &b, &err) == MP_OK);
  CHECK(mp_rt_create(b, NULL, NULL, &rt, &err) == MP_OK);
  CHECK(mp_rt_set_input(rt, 0, x, sizeof x, &err) == MP_OK);
  CHECK(mp_rt_run(rt, &err) == MP_OK);
  const float *y = mp_rt_tensor_data(rt, mp_bundle_output(b, 0));
  CHECK(y[0] == want[0] && y[1] == want[1]);
  mp_rt_destroy(rt);
  mp_bundle_destroy(b);
  mp_buf_free(&bundle);
}

/* The selection kernels' orders (k_select.c invariant 2): NMS ties go to
 * the lower box index, corners may come in either order, center boxes;
 * Unique compares u64 as unsigned and -0 as +0, keeps first occurrences
 * when unsorted, and orders slices lexicographically with an axis. */
/* One step of each optimizer on values whose results are exact in
 * binary (the formulas of kernels.h worked by hand), and BatchNorm's batch
 * statistics. */
static void test_train_kernels(void) {
  float x = 1, g = 2, v = 4, xn, vn, hn;
  mp_koptim p = {.kind = MP_KOPT_MOMENTUM, .r = 1, .alpha = 0.5, .beta = 0.25};
  /* t = 0: the gradient enters whole (v' = 0.5 x 4 + 2); then beta */
  mp_k_optim_f32(&p, 1, &x, &g, &v, NULL, &xn, &vn, NULL);
  CHECK(vn == 4 && xn == -3);
  p.t = 1; /* v' = 2 + 0.25 x 2 = 2.5 */
  mp_k_optim_f32(&p, 1, &x, &g, &v, NULL, &xn, &vn, NULL);
  CHECK(vn == 2.5f && xn == -1.5f);
  p.kind = MP_KOPT_NESTEROV; /* x' = 1 - (2 + 0.5 x 2.5) */
  mp_k_optim_f32(&p, 1, &x, &g, &v, NULL, &xn, &vn, NULL);
  CHECK(vn == 2.5f && xn == -2.25f);
  /* Adagrad: r' = 1 / (1 + 1 x 1); g' = 0.5 x 2 + 1 = 2; h' = 5 + 4 = 9;
   * x' = 2 - 0.5 x 2 / 3 */
  float ax = 2, ag = 1, ah = 5;
  mp_koptim q = {
      .kind = MP_KOPT_ADAGRAD, .r = 1, .t = 1, .decay = 1, .norm = 0.5};
  mp_k_optim_f32(&q, 1, &ax, &ag, &ah, NULL, &xn, &hn, NULL);
  CHECK(hn == 9 && xn == (float)(2 - 1.0 / 3));
  /* Adam at t = 0 (no bias correction): v' = 0.5 x 2 = 1, h' = 0.25 x 4
   * = 1, x' = 0.5 (3 - 1 / 1); at t = 2 the rate is sqrt(1 - 0.75^2) /
   * (1 - 0.5^2) */
  float dx = 3, dg = 2, dv = 0, dh = 0;
  mp_koptim a = {.kind = MP_KOPT_ADAM,
                 .r = 1,
                 .alpha = 0.5,
                 .beta = 0.75,
                 .norm_post = 0.5};
  mp_k_optim_f32(&a, 1, &dx, &dg, &dv, &dh, &xn, &vn, &hn);
  CHECK(vn == 1 && hn == 1 && xn == 1);
  a.t = 2;
  mp_k_optim_f32(&a, 1, &dx, &dg, &dv, &dh, &xn, &vn, &hn);
  CHECK(xn == (float)(0.5 * (3 - sqrt(1 - 0.5625) / 0.75)));
  /* two channels over a batch of two: channel 0 holds 1..4, channel 1
   * holds 5 four times */
  float bx[8] = {1, 2, 5, 5, 3, 4, 5, 5}, mean[2], var[2];
  mp_k_batchnorm_stats_f32(2, 2, 2, bx, mean, var);
  CHECK(mean[0] == 2.5f && var[0] == 1.25f && mean[1] == 5 && var[1] == 0);
}

/* The random stream (k_random.c): keys, determinism, independence of
 * the element count, and the moments of 200,000 draws within 5 standard
 * errors (uniform, normal, Bernoulli, Dropout); every count and moment is
 * computed here from the draws. */
static void test_random_kernels(void) {
  /* a seed names the stream whatever the op's name; -0 is 0; a name
   * without a seed, and each run (visit), give another stream */
  uint64_t k = mp_k_rand_key(true, 3.0, "a", 0);
  CHECK(k == mp_k_rand_key(true, 3.0, "b", 0));
  CHECK(mp_k_rand_key(true, 0.0, "a", 0) == mp_k_rand_key(true, -0.0, "a", 0));
  CHECK(k != mp_k_rand_key(true, 4.0, "a", 0));
  CHECK(k != mp_k_rand_key(true, 3.0, "a", 1));
  CHECK(mp_k_rand_key(false, 0, "a", 0) != mp_k_rand_key(false, 0, "b", 0));
  CHECK(mp_k_rand_key(false, 0, "a", 0) == mp_k_rand_key(false, 0, "a", 0));
  enum { N = 200000 };
  static float y[N], y2[N], x[N];
  static bool mask[N];
  mp_krandom u = {MP_KRAND_UNIFORM, k, -1, 3};
  mp_k_random(&u, N, NULL, 0, y, MP_KD_F32, NULL);
  mp_k_random(&u, 10, NULL, 0, y2, MP_KD_F32, NULL);
  CHECK(memcmp(y, y2, 10 * sizeof *y) == 0); /* value i is draw i's */
  double s = 0, ss = 0, lag = 0;
  bool inside = true;
  for (int i = 0; i < N; i++) {
    inside = inside && y[i] >= -1 && y[i] < 3;
    s += y[i];
    ss += (double)y[i] * y[i];
    if (i) lag += ((double)y[i] - 1) * ((double)y[i - 1] - 1);
  }
  double mean = s / N, var = ss / N - mean * mean;
  CHECK(inside);
  CHECK(fabs(mean - 1) < 5 * sqrt(16.0 / 12 / N));
  CHECK(fabs(var - 16.0 / 12) < 5 * (16.0 / 12) * sqrt(0.8 / N));
  CHECK(fabs(lag / (N - 1) / var) < 5 / sqrt((double)N));
  mp_krandom nrm = {MP_KRAND_NORMAL, k, 2, 0.5};
  mp_k_random(&nrm, N, NULL, 0, y, MP_KD_F32, NULL);
  s = ss = 0;
  for (int i = 0; i < N; i++) {
    s += y[i];
    ss += (double)y[i] * y[i];
  }
  mean = s / N, var = ss / N - mean * mean;
  CHECK(fabs(mean - 2) < 5 * 0.5 / sqrt((double)N));
  CHECK(fabs(var - 0.25) < 5 * 0.25 * sqrt(2.0 / N));
  /* Bernoulli at 0.3, and the certain ends 0 and 1 */
  for (int i = 0; i < N; i++) x[i] = i < 10 ? 0 : i < 20 ? 1 : 0.3f;
  mp_krandom b = {MP_KRAND_BERNOULLI, k, 0, 0};
  mp_k_random(&b, N, x, MP_KD_F32, y, MP_KD_F32, NULL);
  double ones = 0;
  bool ends = true, binary = true;
  for (int i = 0; i < N; i++) {
    binary = binary && (y[i] == 0 || y[i] == 1);
    if (i < 20) ends = ends && y[i] == (i >= 10);
    if (i >= 20) ones += y[i];
  }
  CHECK(binary && ends);
  CHECK(fabs(ones / (N - 20) - 0.3) < 5 * sqrt(0.21 / (N - 20)));
  /* Dropout at 0.25 in place: kept elements scaled by 4/3, the mask true
   * exactly there */
  for (int i = 0; i < N; i++) x[i] = y2[i] = (float)(i % 7 + 1);
  mp_krandom d = {MP_KRAND_DROPOUT, k, 0.25, 0};
  mp_k_random(&d, N, x, MP_KD_F32, x, MP_KD_F32, mask);
  double kept = 0;
  bool exact = true;
  for (int i = 0; i < N; i++) {
    float want = (float)((double)y2[i] * (1 / 0.75));
    exact = exact && x[i] == (mask[i] ? want : 0);
    kept += mask[i];
  }
  CHECK(exact);
  CHECK(fabs(kept / N - 0.75) < 5 * sqrt(0.1875 / N));
  /* Multinomial: weights 1 : 3 : 0 (log 0 = -inf) over 2 rows */
  float lg[6] = {0, (float)log(3.0), -INFINITY, 0, (float)log(3.0), -INFINITY};
  static int64_t cls[2 * 50000];
  double run[3];
  mp_k_multinomial(k, 2, 3, 50000, lg, MP_KD_F32, cls, MP_KD_I64, run);
  double c1 = 0;
  bool never = true;
  for (int i = 0; i < 100000; i++) {
    never = never && cls[i] >= 0 && cls[i] < 2;
    c1 += cls[i] == 1;
  }
  CHECK(never);
  CHECK(fabs(c1 / 100000 - 0.75) < 5 * sqrt(0.1875 / 100000));
}

static void test_select_kernels(void) {
  /* three identical boxes with equal scores: the lowest index wins and
   * suppresses the others; box 3 (corners swapped) overlaps none */
  float boxes[16] = {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 3, 3, 2, 2};
  float scores[4] = {0.5f, 0.5f, 0.5f, 0.4f};
  int64_t ws[12], sel[12];
  mp_knms p = {.batches = 1,
               .classes = 1,
               .boxes = 4,
               .max_per_class = 9,
               .iou_threshold = 0.5f};
  CHECK_EQ_I(mp_k_nms(&p, boxes, scores, ws, sel), 2);
  CHECK(sel[2] == 0 && sel[5] == 3);
  p.max_per_class = 1; /* the cap per class */
  CHECK_EQ_I(mp_k_nms(&p, boxes, scores, ws, NULL), 1);
  p.max_per_class = 9;
  p.has_score_threshold = true; /* strictly above it */
  p.score_threshold = 0.4f;
  CHECK_EQ_I(mp_k_nms(&p, boxes, scores, ws, NULL), 1);
  /* center boxes [xc, yc, w, h]: IoU 1/3 of two unit squares shifted by
   * half is not above 0.4 but is above 0.3 */
  float cb[8] = {0.5f, 0.5f, 1, 1, 1.0f, 0.5f, 1, 1}, cs[2] = {1, 0.9f};
  mp_knms q = {.batches = 1,
               .classes = 1,
               .boxes = 2,
               .max_per_class = 5,
               .iou_threshold = 0.4f,
               .center = true};
  CHECK_EQ_I(mp_k_nms(&q, cb, cs, ws, NULL), 2);
  q.iou_threshold = 0.3f;
  CHECK_EQ_I(mp_k_nms(&q, cb, cs, ws, NULL), 1);

  uint64_t u[4] = {UINT64_MAX, 1, UINT64_MAX, 0};
  int64_t uws[6 * 4], first[4], inv[4], cnt[4];
  CHECK_EQ_I(mp_k_unique(MP_KD_U64, u, 1, 4, 1, true, uws, first, inv, cnt), 3);
  CHECK(first[0] == 3 && first[1] == 1 && first[2] == 0 && cnt[2] == 2);
  CHECK(inv[0] == 2 && inv[1] == 1 && inv[2] == 2 && inv[3] == 0);
  float z[3] = {0.0f, -0.0f, 2.0f};
  CHECK_EQ_I(mp_k_unique(MP_KD_F32, z, 1, 3, 1, false, uws, first, inv, cnt),
             2);
  CHECK(first[0] == 0 && cnt[0] == 2 && first[1] == 2);
  /* rows of [3, 2] along axis 0: (2,1) (1,5) (2,1) -> (1,5) (2,1) */
  int32_t rows[6] = {2, 1, 1, 5, 2, 1};
  CHECK_EQ_I(mp_k_unique(MP_KD_I32, rows, 1, 3, 2, true, uws, first, inv, cnt),
             2);
  CHECK(first[0] == 1 && first[1] == 0 && cnt[1] == 2 && inv[2] == 1);
}

/* tests/data/select_ops.json run end to end: every output of the four
 * selection ops exactly (its declared shapes are what the data gives). */
static void test_select_ops(const char *src) {
  mp_buf bundle = bundle_of(src, "tests/data/select_ops.json");
  mp_error err = {0};
  mp_bundle *b = NULL;
  mp_rt *rt = NULL;
  float x[30];
  for (int i = 0; i < 30; i++) x[i] = (float)(i % 7) - 3.0f;
  CHECK(mp_bundle_load("sel", bundle.data, bundle.len, NULL, &b, &err) ==
        MP_OK);
  CHECK(mp_rt_create(b, NULL, NULL, &rt, &err) == MP_OK);
  CHECK(mp_rt_set_input(rt, 0, x, sizeof x, &err) == MP_OK);
  CHECK(mp_rt_run(rt, &err) == MP_OK);
  CHECK_EQ_I(mp_bundle_output_count(b), 7);
  const float *kept = mp_rt_tensor_data(rt, mp_bundle_output(b, 0));
  static const int rows[3] = {0, 2, 3}; /* keep = [1, 0, 1, 1] */
  for (int n = 0; n < 2; n++) {
    for (int r = 0; r < 3; r++) {
      for (int k = 0; k < 3; k++) {
        float v = x[(n * 5 + rows[r]) * 3 + k];
        CHECK(kept[(n * 3 + r) * 3 + k] == (v > 0 ? v : 0));
      }
    }
  }
  static const int64_t want[][8] = {{0, 0, 1, 0, 2, 2},       /* NonZero */
                                    {1, 3, 7, 9},             /* Unique */
                                    {1, 0, 3, 6},             /* indices */
                                    {1, 0, 1, 2, 0, 0, 3, 1}, /* inverse */
                                    {3, 3, 1, 1},             /* counts */
                                    {0, 0, 3, 0, 0, 0}};      /* NMS */
  static const int len[] = {6, 4, 4, 8, 4, 6};
  for (int o = 0; o < 6; o++) {
    const int64_t *y =
        mp_rt_tensor_data(rt, mp_bundle_output(b, (size_t)o + 1));
    for (int i = 0; i < len[o]; i++) CHECK_EQ_I(y[i], want[o][i]);
  }
  mp_rt_destroy(rt);
  mp_bundle_destroy(b);
  mp_buf_free(&bundle);
}

/* DFT and STFT with the workspace's tables give the bits of the direct
 * sums (k_linalg.c invariant 3): real and complex signals, lengths that
 * are and are not powers of two, zero padding, truncation, onesided,
 * inverse, strided axes, a window. */
static void test_dft_tables(void) {
  static float x[2 * 3 * 67 * 2], y0[2 * 3 * 80 * 2], y1[2 * 3 * 80 * 2];
  static double ws[4 * 80];
  uint32_t seed = 99;
  for (size_t i = 0; i < sizeof x / sizeof *x; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)((int32_t)(seed >> 8) % 2001 - 1000) / 100.0f;
  }
  static const int64_t lens[][3] = {{67, 67, 67}, {67, 64, 33}, {67, 80, 80},
                                    {16, 16, 16}, {67, 80, 41}, {1, 1, 1}};
  size_t runs = 0;
  for (size_t c = 0; c < sizeof lens / sizeof *lens; c++) {
    for (int64_t cx = 1; cx <= 2; cx++) {
      for (int inv = 0; inv < 2; inv++) {
        mp_kdft p = {.outer = 2,
                     .len = lens[c][0],
                     .inner = 3,
                     .cx = cx,
                     .n = lens[c][1],
                     .n_out = lens[c][2],
                     .inverse = inv};
        CHECK(mp_k_dft_workspace(p.n, p.len) <= sizeof ws / sizeof *ws);
        memset(y0, 0x5a, sizeof y0);
        memset(y1, 0xa5, sizeof y1);
        mp_k_dft(&p, MP_KD_F32, x, y0, NULL);
        mp_k_dft(&p, MP_KD_F32, x, y1, ws);
        size_t n = (size_t)(p.outer * p.inner * p.n_out * 2);
        CHECK(memcmp(y0, y1, n * sizeof *y0) == 0);
        runs++;
      }
    }
  }
  /* STFT: 3 frames of 16 with a step of 20 over a signal of 67, a
   * window of 16 */
  float win[16];
  for (int j = 0; j < 16; j++) win[j] = 0.5f - 0.5f * cosf(0.3927f * j);
  mp_kstft st = {.batch = 2,
                 .len = 67,
                 .cx = 2,
                 .frames = 3,
                 .step = 20,
                 .frame = 16,
                 .n_out = 9};
  memset(y0, 0, sizeof y0);
  memset(y1, 1, sizeof y1);
  mp_k_stft(&st, MP_KD_F32, x, MP_KD_F32, win, y0, NULL);
  mp_k_stft(&st, MP_KD_F32, x, MP_KD_F32, win, y1, ws);
  CHECK(memcmp(y0, y1, 2 * 3 * 9 * 2 * sizeof *y0) == 0);
  CHECK(runs == 24);
}

int main(int argc, char **argv) {
  const char *src = argc > 1 ? argv[1] : ".";
  test_kernels();
  test_dft_tables();
  test_half(MP_KD_F16, 0x7bff, 0x7e00);
  test_half(MP_KD_BF16, 0x7f7f, 0x7fc0);
  /* spot values: 65504 is f16's largest, 2^-24 its least subnormal, 2^-133
   * bf16's; 1 + 2^-8 (1 + half a bf16 step) rounds to 1, its next up to
   * 1 + 2^-7 */
  uint16_t hv[4] = {0x7bff, 0x0001, 0x3f80, 0x0001};
  CHECK(mp_k_load(hv, MP_KD_F16, 0) == 65504 &&
        mp_k_load(hv, MP_KD_F16, 1) == ldexp(1, -24) &&
        mp_k_load(hv, MP_KD_BF16, 2) == 1 &&
        mp_k_load(hv, MP_KD_BF16, 3) == ldexp(1, -133));
  mp_k_store(hv, MP_KD_BF16, 0, 1 + ldexp(1, -8));
  mp_k_store(hv, MP_KD_BF16, 1, 1 + ldexp(1, -8) + ldexp(1, -20));
  CHECK(hv[0] == 0x3f80 && hv[1] == 0x3f81);
  test_conv_integer();
  test_grid_far();
  test_dynamic_quantize();
  test_dequantize_range();
  test_loader(src);
  test_fuzz(src, "tests/data/tiny_net.json", 2000);
  /* epilogue entries that read an earlier value (MP_BEPI_TAP) */
  test_fuzz(src, "tests/data/tap_net.json", 1500);
  /* binary ops that read a Resize's input replicated (mplan.prologue
   * "Resize:k": a third parameter) */
  test_fuzz(src, "tests/data/passes/upsample.onnx.bin", 1500);
  /* the quantized and recurrent kernels and the If copy (parameters,
   * zero points, sequence_lens, cells); its 30 KB of weights take most of
   * the mutations, which then run with other weights */
  test_fuzz(src, "tests/data/quant_rnn.onnx.bin", 600);
  /* the index, layout and selection ops (runtime/ops_index.c): their
   * parameters, index tensors and shapes */
  test_fuzz(src, "tests/data/index_ops.onnx.bin", 1500);
  /* normalisations, losses (class indices), BitShift, window fills */
  test_fuzz(src, "tests/data/stats_ops.onnx.bin", 1000);
  /* Einsum's label strides, Det, ReverseSequence, Pow of two dtypes */
  test_fuzz(src, "tests/data/linalg_ops.onnx.bin", 1000);
  /* GridSample's modes, padding modes and positions outside the grid */
  test_fuzz(src, "tests/data/grid_ops.onnx.bin", 1000);
  /* cubic Resize: its two extra parameters */
  test_fuzz(src, "tests/data/resize_cubic.onnx.bin", 1000);
  /* MaxPool's Indices and storage_order, MaxUnpool's window and indices,
   * RoiAlign's rois and batch indices, Dropout's mask */
  test_fuzz(src, "tests/data/pool_roi_ops.onnx.bin", 1000);
  /* DFT's axis and length, STFT's frames, MelWeightMatrix's scalars */
  test_fuzz(src, "tests/data/signal_ops.onnx.bin", 1000);
  /* tf_crop_and_resize: the roi input and extrapolation_value */
  test_fuzz(src, "tests/data/resize_crop.onnx.bin", 1000);
  /* the selection ops: shapes, conditions, counts against the plan */
  test_fuzz(src, "tests/data/select_ops.json", 1000);
  test_no_alloc(src);
  test_data_weights(src);
  test_select_kernels();
  test_select_ops(src);
  /* Loop and Scan: counts, enter steps, repeated ops */
  test_fuzz(src, "tests/data/loop_ort.onnx.bin", 1000);
  /* TfIdfVectorizer: the pool, its counts, indexes and skips */
  test_fuzz(src, "tests/data/tfidf_ort.onnx.bin", 1000);
  /* the optimizers and BatchNorm's training mode: counts, shapes, R, T */
  test_fuzz(src, "tests/data/train_ops.onnx.bin", 1000);
  test_train_kernels();
  /* the random ops: kinds, seeds, shapes, ratio, the Loop's draws */
  test_fuzz(src, "tests/data/random_ops.onnx.bin", 1000);
  test_random_kernels();
  test_loops(src);
  return check_exit("test_runtime");
}
