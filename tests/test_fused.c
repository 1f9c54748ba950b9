/*
 * test_fused.c -- the forms of docs/ir-conventions.md run by the runtime
 * give bit for bit what their unfused graphs give: a Conv epilogue
 * (BatchNormalization, Add, Relu), fused_activation Relu6, diamonds
 * (Add,Clip,Mul@0,Div; Sigmoid,Mul@0 after a Relu), horizontal
 * MatMul and Gemm, a DequantizeLinear prologue, and views and in-place
 * ops (depthwise Conv, Relu, Reshape) sharing one buffer -- all in
 * paranoid poison mode with no event.
 *
 * usage: test_fused
 */
#include <stdlib.h>

#include "check.h"
#include "mplan/compile.h"
#include "mplan/lifetime.h"
#include "mplan/runner.h"
#include "mplan/schedule.h"

static mp_graph *g_new(void) {
  mp_graph *g = NULL;
  mp_error err = {0};
  CHECK(mp_graph_create(NULL, "test", "t", &g, &err) == MP_OK);
  return g;
}

/* A tensor; weights get deterministic values from their name, so that
 * the fused and the unfused graph hold the same numbers. */
static int32_t g_t(mp_graph *g, const char *name, mp_dtype dt,
                   mp_tensor_kind kind, uint32_t rank, const int64_t *dims) {
  mp_tensor_desc d = {.name = name, .dtype = dt, .kind = kind, .rank = rank};
  for (uint32_t i = 0; i < rank; i++) d.shape[i] = (mp_dim){dims[i], MP_NO_SYM};
  int32_t t = -1;
  mp_error err = {0};
  CHECK(mp_graph_add_tensor(g, &d, &t, &err) == MP_OK);
  if (kind == MP_TENSOR_WEIGHT) {
    size_t n = 1;
    for (uint32_t i = 0; i < rank; i++) n *= (size_t)dims[i];
    double f[4096];
    int64_t iv[4096];
    uint32_t h = 2166136261u;
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
    for (size_t i = 0; i < n; i++) {
      h = h * 1103515245u + 12345u;
      f[i] = ((h >> 8) % 2001) / 1000.0 - 1.0 + (strstr(name, "var") ? 2.0 : 0);
      iv[i] = (int64_t)((h >> 8) % 255) - 127;
    }
    bool fl = dt == MP_DTYPE_F32;
    CHECK(mp_graph_set_value(g, t, fl ? NULL : iv, fl ? f : NULL, n, &err) ==
          MP_OK);
  }
  return t;
}

static void g_op(mp_graph *g, const char *name, const char *type,
                 const int32_t *in, uint32_t n_in, const int32_t *out,
                 uint32_t n_out, const mp_attr *at, uint32_t n_at) {
  mp_op_desc d = {name, type, n_in, n_out, n_at, in, out, at};
  mp_error err = {0};
  mp_status st = mp_graph_add_op(g, &d, NULL, &err);
  if (st != MP_OK) fprintf(stderr, "%s\n", err.msg);
  CHECK(st == MP_OK);
}

/* Plans g (with tensors sharing the buffers tb says, or none), compiles,
 * runs it paranoid on seeded inputs and returns the bytes of output k. */
static unsigned char *g_run(mp_graph *g, const size_t *tb, size_t *len) {
  mp_error err = {0};
  uint32_t *order = NULL;
  mp_order_kind used;
  mp_problem *p0 = NULL, *p = NULL;
  mp_plan *plan = NULL;
  mp_bundle *b = NULL;
  mp_rt *rt = NULL;
  mp_buf out;
  mp_buf_init(&out, NULL);
  unsigned char *res = NULL;
  mp_lifetime_opts lo = {.inputs_as_activations = false};
  mp_status st = mp_graph_link(g, &err);
  if (st == MP_OK) st = mp_graph_resolve(g, &err);
  if (st == MP_OK) st = mp_schedule(g, MP_ORDER_FILE, &order, &used, &err);
  if (st == MP_OK) st = mp_lifetimes_build(g, order, &lo, &p0, &err);
  size_t nt = mp_graph_tensor_count(g), idx[64];
  if (st == MP_OK && tb) {
    /* Shared buffers: one problem buffer per root, spanning its tensors. */
    st = mp_problem_create(NULL, "shared", &p, &err);
    size_t nb = 0;
    for (size_t t = 0; st == MP_OK && t < nt; t++) {
      if (tb[t] != t) continue;
      mp_buffer_desc d = {
          mp_problem_buffer(p0, t)->name, 0,     16, INT64_MAX, -1,
          mp_problem_buffer(p0, t)->cls,  false, 0};
      for (size_t u = 0; u < nt; u++) {
        const mp_buffer *x = mp_problem_buffer(p0, u);
        if (tb[u] != t) continue;
        if (x->size > d.size) d.size = x->size;
        if (x->first < d.first) d.first = x->first;
        if (x->last > d.last) d.last = x->last;
      }
      idx[t] = nb++;
      st = mp_problem_add(p, &d, NULL, &err);
    }
    for (size_t t = 0; t < nt; t++) idx[t] = idx[tb[t]];
    if (st == MP_OK) st = mp_problem_seal(p, &err);
  }
  const mp_problem *pp = tb ? p : p0;
  if (st == MP_OK) st = mp_plan_solve(pp, NULL, &plan, &err);
  mp_compile_opts co = {.seed = 5};
  if (st == MP_OK) {
    st = mp_compile(g, order, pp, mp_plan_placements(plan), tb ? idx : NULL,
                    &co, NULL, &out, &err);
  }
  mp_rt_opts ro = {true, true, false, -1, 0, 0, 0};
  if (st == MP_OK) st = mp_bundle_load("t", out.data, out.len, NULL, &b, &err);
  if (st == MP_OK) st = mp_rt_create(b, &ro, NULL, &rt, &err);
  for (size_t i = 0; st == MP_OK && i < mp_bundle_input_count(b); i++) {
    const mp_btensor *x = mp_bundle_tensor(b, mp_bundle_input(b, i));
    float buf[4096];
    mp_seed_fill(x->dtype, buf, (size_t)(x->bytes / 4), 11, i);
    st = mp_rt_set_input(rt, i, buf, (size_t)x->bytes, &err);
  }
  if (st == MP_OK) st = mp_rt_run(rt, &err);
  if (st != MP_OK) fprintf(stderr, "g_run: %s\n", err.msg);
  CHECK(st == MP_OK);
  if (st == MP_OK) {
    CHECK_EQ_U(mp_rt_event_count(rt), 0);
    *len = 0;
    for (size_t k = 0; k < mp_bundle_output_count(b); k++) {
      *len += (size_t)mp_bundle_tensor(b, mp_bundle_output(b, k))->bytes;
    }
    res = malloc(*len + 1);
    size_t at = 0;
    for (size_t k = 0; k < mp_bundle_output_count(b); k++) {
      uint32_t t = mp_bundle_output(b, k);
      size_t n = (size_t)mp_bundle_tensor(b, t)->bytes;
      memcpy(res + at, mp_rt_tensor_data(rt, t), n);
      at += n;
    }
  }
  mp_rt_destroy(rt);
  mp_bundle_destroy(b);
  mp_buf_free(&out);
  mp_plan_destroy(plan);
  mp_problem_destroy(p);
  mp_problem_destroy(p0);
  free(order);
  mp_graph_destroy(g);
  return res;
}

static void same(unsigned char *a, size_t la, unsigned char *b, size_t lb,
                 const char *what) {
  bool eq = a && b && la == lb && la > 0 && memcmp(a, b, la) == 0;
  if (!eq) fprintf(stderr, "%s: fused and unfused outputs differ\n", what);
  CHECK(eq);
  printf("%s: %zu output bytes, bit for bit equal: %s\n", what, la,
         eq ? "yes" : "NO");
  free(a);
  free(b);
}

static const int64_t D_X[] = {1, 4, 6, 6}, D_W[] = {4, 4, 3, 3}, D_C[] = {4};
static const int64_t PADS[] = {1, 1, 1, 1};

/* Conv -> BatchNormalization -> Add -> Relu, and the same fused. */
static void test_epilogue(void) {
  mp_attr conv_at[] = {
      {.name = "pads", .kind = MP_ATTR_INTS, .ints = PADS, .n = 4}};
  mp_graph *g = g_new();
  int32_t x = g_t(g, "x", MP_DTYPE_F32, MP_TENSOR_INPUT, 4, D_X);
  int32_t w = g_t(g, "w", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 4, D_W);
  int32_t b = g_t(g, "b", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, D_C);
  int32_t s = g_t(g, "s", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, D_C);
  int32_t bb = g_t(g, "bb", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, D_C);
  int32_t m = g_t(g, "m", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, D_C);
  int32_t v = g_t(g, "var", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, D_C);
  int32_t o = g_t(g, "other", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 4, D_X);
  int32_t c = g_t(g, "c", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 4, D_X);
  int32_t d = g_t(g, "d", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 4, D_X);
  int32_t e = g_t(g, "e", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 4, D_X);
  int32_t y = g_t(g, "y", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 4, D_X);
  g_op(g, "conv", "Conv", (int32_t[]){x, w, b}, 3, &c, 1, conv_at, 1);
  g_op(g, "bn", "BatchNormalization", (int32_t[]){c, s, bb, m, v}, 5, &d, 1,
       NULL, 0);
  g_op(g, "add", "Add", (int32_t[]){d, o}, 2, &e, 1, NULL, 0);
  g_op(g, "relu", "Relu", &e, 1, &y, 1, NULL, 0);
  size_t l1, l2;
  unsigned char *r1 = g_run(g, NULL, &l1);
  g = g_new();
  x = g_t(g, "x", MP_DTYPE_F32, MP_TENSOR_INPUT, 4, D_X);
  w = g_t(g, "w", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 4, D_W);
  b = g_t(g, "b", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, D_C);
  s = g_t(g, "s", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, D_C);
  bb = g_t(g, "bb", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, D_C);
  m = g_t(g, "m", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, D_C);
  v = g_t(g, "var", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, D_C);
  o = g_t(g, "other", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 4, D_X);
  y = g_t(g, "y", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 4, D_X);
  mp_attr fused[] = {
      {.name = "pads", .kind = MP_ATTR_INTS, .ints = PADS, .n = 4},
      {.name = "mplan.epilogue",
       .kind = MP_ATTR_STRING,
       .s = "BatchNormalization,Add,Relu"},
      {.name = "mplan.e0.epsilon", .kind = MP_ATTR_FLOAT, .f = 1e-5}};
  g_op(g, "conv", "Conv", (int32_t[]){x, w, b, s, bb, m, v, o}, 8, &y, 1, fused,
       3);
  unsigned char *r2 = g_run(g, NULL, &l2);
  same(r1, l1, r2, l2, "Conv + epilogue BatchNormalization,Add,Relu");
}

/* Diamonds (docs/ir-conventions.md, Add@j and Mul@j): Conv -> Add(k) ->
 * Clip(0, 6) -> Mul(c, .) -> Div(six), a decomposed HardSwish, against
 * Conv with the epilogue Add,Clip,Mul@0,Div; and Conv -> Relu ->
 * Sigmoid -> Mul(r, .) (SiLU after a fused_activation Relu: Mul@0 taps
 * the value after the Relu, the bundle's entry 1). */
static void test_tap(bool silu) {
  static const int64_t one[] = {1};
  mp_graph *g = g_new();
  int32_t x = g_t(g, "x", MP_DTYPE_F32, MP_TENSOR_INPUT, 4, D_X);
  int32_t w = g_t(g, "w", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 4, D_W);
  int32_t k = g_t(g, "k", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, one);
  int32_t six = g_t(g, "six", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, one);
  int32_t c = g_t(g, "c", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 4, D_X);
  int32_t d = g_t(g, "d", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 4, D_X);
  int32_t e = g_t(g, "e", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 4, D_X);
  int32_t y = g_t(g, "y", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 4, D_X);
  mp_attr pads[] = {
      {.name = "pads", .kind = MP_ATTR_INTS, .ints = PADS, .n = 4}};
  mp_attr clip[] = {{.name = "min", .kind = MP_ATTR_FLOAT, .f = 0},
                    {.name = "max", .kind = MP_ATTR_FLOAT, .f = 6}};
  g_op(g, "conv", "Conv", (int32_t[]){x, w}, 2, &c, 1, pads, 1);
  if (silu) {
    g_op(g, "relu", "Relu", &c, 1, &d, 1, NULL, 0);
    g_op(g, "sig", "Sigmoid", &d, 1, &e, 1, NULL, 0);
    g_op(g, "mul", "Mul", (int32_t[]){e, d}, 2, &y, 1, NULL, 0);
  } else {
    int32_t f = g_t(g, "f", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 4, D_X);
    g_op(g, "add", "Add", (int32_t[]){c, k}, 2, &d, 1, NULL, 0);
    g_op(g, "clip", "Clip", &d, 1, &e, 1, clip, 2);
    g_op(g, "mul", "Mul", (int32_t[]){c, e}, 2, &f, 1, NULL, 0);
    g_op(g, "div", "Div", (int32_t[]){f, six}, 2, &y, 1, NULL, 0);
  }
  size_t l1, l2;
  unsigned char *r1 = g_run(g, NULL, &l1);
  g = g_new();
  x = g_t(g, "x", MP_DTYPE_F32, MP_TENSOR_INPUT, 4, D_X);
  w = g_t(g, "w", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 4, D_W);
  k = g_t(g, "k", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, one);
  six = g_t(g, "six", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, one);
  y = g_t(g, "y", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 4, D_X);
  mp_attr hs[] = {{.name = "pads", .kind = MP_ATTR_INTS, .ints = PADS, .n = 4},
                  {.name = "mplan.epilogue",
                   .kind = MP_ATTR_STRING,
                   .s = "Add,Clip,Mul@0,Div"},
                  {.name = "mplan.e1.min", .kind = MP_ATTR_FLOAT, .f = 0},
                  {.name = "mplan.e1.max", .kind = MP_ATTR_FLOAT, .f = 6}};
  mp_attr sl[] = {
      {.name = "pads", .kind = MP_ATTR_INTS, .ints = PADS, .n = 4},
      {.name = "fused_activation", .kind = MP_ATTR_STRING, .s = "Relu"},
      {.name = "mplan.epilogue", .kind = MP_ATTR_STRING, .s = "Sigmoid,Mul@0"}};
  if (silu) {
    g_op(g, "conv", "Conv", (int32_t[]){x, w}, 2, &y, 1, sl, 3);
  } else {
    g_op(g, "conv", "Conv", (int32_t[]){x, w, -1, k, six}, 5, &y, 1, hs, 4);
  }
  unsigned char *r2 = g_run(g, NULL, &l2);
  same(r1, l1, r2, l2,
       silu ? "Conv + Relu + epilogue Sigmoid,Mul@0 (SiLU)"
            : "Conv + epilogue Add,Clip,Mul@0,Div (HardSwish)");
}

/* Conv + Clip(0, 6) and Conv with fused_activation Relu6. */
static void test_fused_activation(void) {
  mp_graph *g = g_new();
  int32_t x = g_t(g, "x", MP_DTYPE_F32, MP_TENSOR_INPUT, 4, D_X);
  int32_t w = g_t(g, "w", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 4, D_W);
  int32_t c = g_t(g, "c", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 4, D_X);
  int32_t y = g_t(g, "y", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 4, D_X);
  mp_attr pads[] = {
      {.name = "pads", .kind = MP_ATTR_INTS, .ints = PADS, .n = 4}};
  mp_attr clip[] = {{.name = "min", .kind = MP_ATTR_FLOAT, .f = 0},
                    {.name = "max", .kind = MP_ATTR_FLOAT, .f = 6}};
  g_op(g, "conv", "Conv", (int32_t[]){x, w}, 2, &c, 1, pads, 1);
  g_op(g, "clip", "Clip", &c, 1, &y, 1, clip, 2);
  size_t l1, l2;
  unsigned char *r1 = g_run(g, NULL, &l1);
  g = g_new();
  x = g_t(g, "x", MP_DTYPE_F32, MP_TENSOR_INPUT, 4, D_X);
  w = g_t(g, "w", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 4, D_W);
  y = g_t(g, "y", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 4, D_X);
  mp_attr fa[] = {
      {.name = "pads", .kind = MP_ATTR_INTS, .ints = PADS, .n = 4},
      {.name = "fused_activation", .kind = MP_ATTR_STRING, .s = "Relu6"}};
  g_op(g, "conv", "Conv", (int32_t[]){x, w}, 2, &y, 1, fa, 2);
  unsigned char *r2 = g_run(g, NULL, &l2);
  same(r1, l1, r2, l2, "Conv + fused_activation Relu6");
}

/* Two MatMuls (and two Gemms) of one A, and their horizontal fusions. */
static void test_horizontal(bool gemm) {
  static const int64_t da[] = {2, 8}, db1[] = {8, 4}, db2[] = {8, 3},
                       dy1[] = {2, 4}, dy2[] = {2, 3}, dc1[] = {4}, dc2[] = {3};
  const char *type = gemm ? "Gemm" : "MatMul";
  mp_graph *g = g_new();
  int32_t a = g_t(g, "a", MP_DTYPE_F32, MP_TENSOR_INPUT, 2, da);
  int32_t b1 = g_t(g, "b1", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 2, db1);
  int32_t b2 = g_t(g, "b2", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 2, db2);
  int32_t c1 = g_t(g, "c1", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, dc1);
  int32_t c2 = g_t(g, "c2", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, dc2);
  int32_t y1 = g_t(g, "y1", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 2, dy1);
  int32_t y2 = g_t(g, "y2", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 2, dy2);
  g_op(g, "p1", type, (int32_t[]){a, b1, c1}, gemm ? 3 : 2, &y1, 1, NULL, 0);
  g_op(g, "p2", type, (int32_t[]){a, b2, c2}, gemm ? 3 : 2, &y2, 1, NULL, 0);
  if (!gemm) {
    /* the biases are unused by MatMul: read them so that they are legal */
    (void)c1;
    (void)c2;
  }
  size_t l1, l2;
  unsigned char *r1 = g_run(g, NULL, &l1);
  g = g_new();
  a = g_t(g, "a", MP_DTYPE_F32, MP_TENSOR_INPUT, 2, da);
  b1 = g_t(g, "b1", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 2, db1);
  b2 = g_t(g, "b2", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 2, db2);
  c1 = g_t(g, "c1", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, dc1);
  c2 = g_t(g, "c2", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 1, dc2);
  y1 = g_t(g, "y1", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 2, dy1);
  y2 = g_t(g, "y2", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 2, dy2);
  mp_attr h[] = {{.name = "mplan.horizontal", .kind = MP_ATTR_INT, .i = 2}};
  g_op(g, "p", type, (int32_t[]){a, b1, b2, c1, c2}, gemm ? 5 : 3,
       (int32_t[]){y1, y2}, 2, h, 1);
  unsigned char *r2 = g_run(g, NULL, &l2);
  same(r1, l1, r2, l2, gemm ? "horizontal Gemm x2" : "horizontal MatMul x2");
}

/* DequantizeLinear -> MatMul, and MatMul with the prologue. */
static void test_prologue(void) {
  static const int64_t da[] = {2, 8}, db[] = {8, 4}, dy[] = {2, 4}, one[] = {1};
  mp_graph *g = g_new();
  int32_t a = g_t(g, "a", MP_DTYPE_F32, MP_TENSOR_INPUT, 2, da);
  int32_t q = g_t(g, "q", MP_DTYPE_I8, MP_TENSOR_WEIGHT, 2, db);
  int32_t s = g_t(g, "s", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 0, one);
  int32_t z = g_t(g, "z", MP_DTYPE_I8, MP_TENSOR_WEIGHT, 0, one);
  int32_t f = g_t(g, "f", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 2, db);
  int32_t y = g_t(g, "y", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 2, dy);
  g_op(g, "dq", "DequantizeLinear", (int32_t[]){q, s, z}, 3, &f, 1, NULL, 0);
  g_op(g, "mm", "MatMul", (int32_t[]){a, f}, 2, &y, 1, NULL, 0);
  size_t l1, l2;
  unsigned char *r1 = g_run(g, NULL, &l1);
  g = g_new();
  a = g_t(g, "a", MP_DTYPE_F32, MP_TENSOR_INPUT, 2, da);
  q = g_t(g, "q", MP_DTYPE_I8, MP_TENSOR_WEIGHT, 2, db);
  s = g_t(g, "s", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 0, one);
  z = g_t(g, "z", MP_DTYPE_I8, MP_TENSOR_WEIGHT, 0, one);
  y = g_t(g, "y", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 2, dy);
  mp_attr pro[] = {{.name = "mplan.prologue",
                    .kind = MP_ATTR_STRING,
                    .s = "DequantizeLinear:1"}};
  g_op(g, "mm", "MatMul", (int32_t[]){a, q, s, z}, 4, &y, 1, pro, 1);
  unsigned char *r2 = g_run(g, NULL, &l2);
  same(r1, l1, r2, l2, "MatMul + prologue DequantizeLinear:1");
}

/* conv -> depthwise conv (in place) -> Relu (in place) -> Reshape (a
 * view) -> Gemm, with and without the shared buffer. */
static mp_graph *g_views(void) {
  static const int64_t dw[] = {4, 1, 3, 3}, dv[] = {1, 144}, dshape[] = {2},
                       dfw[] = {5, 144}, dy[] = {1, 5};
  mp_attr pads[] = {
      {.name = "pads", .kind = MP_ATTR_INTS, .ints = PADS, .n = 4}};
  mp_attr dwa[] = {{.name = "pads", .kind = MP_ATTR_INTS, .ints = PADS, .n = 4},
                   {.name = "group", .kind = MP_ATTR_INT, .i = 4}};
  mp_attr tb[] = {{.name = "transB", .kind = MP_ATTR_INT, .i = 1}};
  mp_graph *g = g_new();
  int32_t x = g_t(g, "x", MP_DTYPE_F32, MP_TENSOR_INPUT, 4, D_X);
  int32_t w = g_t(g, "w", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 4, D_W);
  int32_t wd = g_t(g, "wd", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 4, dw);
  int32_t sh = g_t(g, "shape", MP_DTYPE_I64, MP_TENSOR_WEIGHT, 1, dshape);
  int32_t fw = g_t(g, "fw", MP_DTYPE_F32, MP_TENSOR_WEIGHT, 2, dfw);
  int32_t c = g_t(g, "c", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 4, D_X);
  int32_t d = g_t(g, "d", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 4, D_X);
  int32_t r = g_t(g, "r", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 4, D_X);
  int32_t v = g_t(g, "v", MP_DTYPE_F32, MP_TENSOR_ACTIVATION, 2, dv);
  int32_t y = g_t(g, "y", MP_DTYPE_F32, MP_TENSOR_OUTPUT, 2, dy);
  g_op(g, "conv", "Conv", (int32_t[]){x, w}, 2, &c, 1, pads, 1);
  g_op(g, "dw", "Conv", (int32_t[]){c, wd}, 2, &d, 1, dwa, 2);
  g_op(g, "relu", "Relu", &d, 1, &r, 1, NULL, 0);
  g_op(g, "reshape", "Reshape", (int32_t[]){r, sh}, 2, &v, 1, NULL, 0);
  g_op(g, "fc", "Gemm", (int32_t[]){v, fw}, 2, &y, 1, tb, 1);
  return g;
}

static void test_views_in_place(void) {
  size_t l1, l2;
  unsigned char *r1 = g_run(g_views(), NULL, &l1);
  /* tensors: x w wd shape fw c d r v y; d, r, v share c's buffer */
  size_t tb[] = {0, 1, 2, 3, 4, 5, 5, 5, 5, 9};
  unsigned char *r2 = g_run(g_views(), tb, &l2);
  same(r1, l1, r2, l2, "in-place depthwise Conv and Relu, Reshape view");
}

int main(void) {
  test_epilogue();
  test_fused_activation();
  test_tap(false);
  test_tap(true);
  test_horizontal(false);
  test_horizontal(true);
  test_prologue();
  test_views_in_place();
  return check_exit("test_fused");
}
