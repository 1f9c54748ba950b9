/*
 * test_shape.c -- shape inference rules on small hand-built graphs: conv
 * arithmetic (pads, auto_pad, strides, dilations, groups), transposed
 * conv, matmul broadcasting, pooling with ceil_mode, reshape with 0/-1,
 * value propagation through shape math, DequantizeLinear's values (the
 * runtime's bits), broadcasting errors, unknown ops and declarations, and graph
 * JSON with omitted intermediate shapes.
 *
 * usage: test_shape SOURCE_DIR
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mplan/kernels.h"
#include "mplan/model.h"
#include "mplan/schedule.h"
#include "mplan/shape.h"

static mp_graph *g_new(void) {
  mp_graph *g = NULL;
  mp_error err;
  CHECK_EQ_I(mp_graph_create(NULL, "t.onnx", "t", &g, &err), MP_OK);
  return g;
}

static int32_t g_tensor(mp_graph *g, const char *name, mp_tensor_kind kind,
                        uint32_t rank, const int64_t *dims) {
  mp_tensor_desc d = {
      .name = name, .dtype = MP_DTYPE_F32, .kind = kind, .rank = rank};
  for (uint32_t k = 0; k < rank; k++) d.shape[k] = (mp_dim){dims[k], -1};
  int32_t t = -1;
  mp_error err;
  CHECK_EQ_I(mp_graph_add_tensor(g, &d, &t, &err), MP_OK);
  return t;
}

static int32_t g_pending(mp_graph *g, const char *name) {
  mp_tensor_desc d = {.name = name, .pending = true};
  int32_t t = -1;
  mp_error err;
  CHECK_EQ_I(mp_graph_add_tensor(g, &d, &t, &err), MP_OK);
  return t;
}

/* A typed weight of n values (integers or, with f, floats). */
static int32_t g_weight(mp_graph *g, const char *name, mp_dtype dt,
                        uint32_t rank, const int64_t *dims, size_t n,
                        const int64_t *i, const double *f) {
  mp_tensor_desc d = {
      .name = name, .dtype = dt, .kind = MP_TENSOR_WEIGHT, .rank = rank};
  for (uint32_t k = 0; k < rank; k++) d.shape[k] = (mp_dim){dims[k], -1};
  int32_t t = -1;
  mp_error err;
  CHECK_EQ_I(mp_graph_add_tensor(g, &d, &t, &err), MP_OK);
  CHECK_EQ_I(mp_graph_set_value(g, t, i, f, n, &err), MP_OK);
  return t;
}

/* An i64 weight of n values (a 1-D constant, as shape math uses). */
static int32_t g_ints(mp_graph *g, const char *name, size_t n,
                      const int64_t *v) {
  const int64_t d[1] = {(int64_t)n};
  return g_weight(g, name, MP_DTYPE_I64, 1, d, n, v, NULL);
}

static void g_op(mp_graph *g, const char *name, const char *type, uint32_t n_in,
                 const int32_t *in, int32_t out, uint32_t n_attrs,
                 const mp_attr *attrs) {
  mp_op_desc d = {name, type, n_in, 1, n_attrs, in, &out, attrs};
  mp_error err;
  CHECK_EQ_I(mp_graph_add_op(g, &d, NULL, &err), MP_OK);
}

/* Links, orders and infers; returns the status of inference. */
static mp_status g_infer(mp_graph *g, mp_error *err) {
  uint32_t *order = NULL;
  mp_order_kind used;
  mp_status st = mp_graph_link(g, err);
  if (st == MP_OK) st = mp_schedule(g, MP_ORDER_AUTO, &order, &used, err);
  if (st == MP_OK) st = mp_shape_infer(g, order, NULL, err);
  free(order);
  return st;
}

/* "[1,8,10,10]" of tensor t (NULL when pending). */
static const char *g_shape(const mp_graph *g, int32_t t, char *buf) {
  const mp_tensor *x = mp_graph_tensor(g, (size_t)t);
  if (x->origin == MP_SHAPE_PENDING) return "pending";
  return mp_graph_shape_str(g, x, buf, 128);
}

/* An INTS attribute from a literal list. */
#define INTS(nm, ...)                                                         \
  (mp_attr) {                                                                 \
    .name = nm, .kind = MP_ATTR_INTS, .ints = (const int64_t[]){__VA_ARGS__}, \
    .n = sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)             \
  }

/* One Conv of x [1,3,10,10] (or given) with weights w; returns the shape. */
static void conv_case(const int64_t *xd, const int64_t *wd, uint32_t n_attrs,
                      const mp_attr *attrs, const char *want) {
  mp_graph *g = g_new();
  char buf[128];
  mp_error err = {0};
  int32_t in[2] = {g_tensor(g, "x", MP_TENSOR_INPUT, 4, xd),
                   g_tensor(g, "w", MP_TENSOR_WEIGHT, 4, wd)};
  int32_t y = g_pending(g, "y");
  g_op(g, "conv", "Conv", 2, in, y, n_attrs, attrs);
  CHECK_EQ_I(g_infer(g, &err), MP_OK);
  CHECK_STR(g_shape(g, y, buf), want);
  mp_graph_destroy(g);
}

static void test_conv(void) {
  const int64_t x[4] = {1, 3, 10, 10}, w[4] = {8, 3, 3, 3};
  mp_attr a[3];
  a[0] = INTS("pads", 1, 1, 1, 1);
  conv_case(x, w, 1, a, "[1,8,10,10]");
  a[0] = INTS("strides", 2, 2);
  conv_case(x, w, 1, a, "[1,8,4,4]");
  a[1] =
      (mp_attr){.name = "auto_pad", .kind = MP_ATTR_STRING, .s = "SAME_UPPER"};
  conv_case(x, w, 2, a, "[1,8,5,5]");
  a[1].s = "VALID";
  conv_case(x, w, 2, a, "[1,8,4,4]");
  a[0] = INTS("dilations", 2, 2);
  conv_case(x, w, 1, a, "[1,8,6,6]");
  a[0] = INTS("pads", 0, 1, 2, 3); /* asymmetric: H 0+2, W 1+3 */
  conv_case(x, w, 1, a, "[1,8,10,12]");
  /* Depthwise: group = channels, W [C,1,k,k]. */
  const int64_t dw[4] = {3, 1, 3, 3};
  a[0] = (mp_attr){.name = "group", .kind = MP_ATTR_INT, .i = 3};
  conv_case(x, dw, 1, a, "[1,3,8,8]");
  /* Channels that contradict the weights: an error naming the op. */
  mp_graph *g = g_new();
  mp_error err = {0};
  const int64_t w5[4] = {8, 5, 3, 3};
  int32_t in[2] = {g_tensor(g, "x", MP_TENSOR_INPUT, 4, x),
                   g_tensor(g, "w", MP_TENSOR_WEIGHT, 4, w5)};
  g_op(g, "c1", "Conv", 2, in, g_pending(g, "y"), 0, NULL);
  CHECK_EQ_I(g_infer(g, &err), MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "op 'c1' (Conv): X has 3 channels but W expects 5");
  mp_graph_destroy(g);
}

static void test_conv_transpose_and_pool(void) {
  mp_graph *g = g_new();
  char buf[128];
  mp_error err = {0};
  const int64_t x[4] = {1, 4, 5, 5}, w[4] = {4, 2, 3, 3};
  int32_t in[2] = {g_tensor(g, "x", MP_TENSOR_INPUT, 4, x),
                   g_tensor(g, "w", MP_TENSOR_WEIGHT, 4, w)};
  int32_t y = g_pending(g, "y"), y2 = g_pending(g, "y2"),
          p1 = g_pending(g, "p1"), p2 = g_pending(g, "p2");
  mp_attr s2[2] = {INTS("strides", 2, 2), INTS("output_padding", 1, 1)};
  g_op(g, "ct", "ConvTranspose", 2, in, y, 1, s2);
  g_op(g, "ct2", "ConvTranspose", 2, in, y2, 2, s2);
  /* MaxPool k3 s2 on 11: floor((11-3)/2)+1 = 5; ceil_mode on 12 too. */
  mp_attr pool[3] = {INTS("kernel_shape", 3, 3),
                     INTS("strides", 2, 2),
                     {.name = "ceil_mode", .kind = MP_ATTR_INT, .i = 1}};
  g_op(g, "mp", "MaxPool", 1, &y, p1, 2, pool);
  g_op(g, "mpc", "MaxPool", 1, &y2, p2, 3, pool);
  CHECK_EQ_I(g_infer(g, &err), MP_OK);
  CHECK_STR(g_shape(g, y, buf), "[1,2,11,11]");
  CHECK_STR(g_shape(g, y2, buf), "[1,2,12,12]");
  CHECK_STR(g_shape(g, p1, buf), "[1,2,5,5]");
  CHECK_STR(g_shape(g, p2, buf), "[1,2,6,6]"); /* ceil(9/2)+1 */
  mp_graph_destroy(g);
}

static void test_matmul(void) {
  mp_graph *g = g_new();
  char buf[128];
  mp_error err = {0};
  const int64_t a[4] = {2, 1, 3, 4}, b[3] = {5, 4, 6}, v[1] = {4},
                m[2] = {4, 6}, ga[2] = {4, 3}, gb[2] = {4, 5};
  int32_t ab[2] = {g_tensor(g, "a", MP_TENSOR_INPUT, 4, a),
                   g_tensor(g, "b", MP_TENSOR_WEIGHT, 3, b)};
  int32_t vm[2] = {g_tensor(g, "v", MP_TENSOR_INPUT, 1, v),
                   g_tensor(g, "m", MP_TENSOR_WEIGHT, 2, m)};
  int32_t gg[2] = {g_tensor(g, "ga", MP_TENSOR_INPUT, 2, ga),
                   g_tensor(g, "gb", MP_TENSOR_WEIGHT, 2, gb)};
  int32_t y1 = g_pending(g, "y1"), y2 = g_pending(g, "y2"),
          y3 = g_pending(g, "y3");
  mp_attr ta = {.name = "transA", .kind = MP_ATTR_INT, .i = 1};
  g_op(g, "mm", "MatMul", 2, ab, y1, 0, NULL);
  g_op(g, "mv", "MatMul", 2, vm, y2, 0, NULL);
  g_op(g, "gemm", "Gemm", 2, gg, y3, 1, &ta);
  CHECK_EQ_I(g_infer(g, &err), MP_OK);
  CHECK_STR(g_shape(g, y1, buf), "[2,5,3,6]"); /* batch dims broadcast */
  CHECK_STR(g_shape(g, y2, buf), "[6]");       /* vector promoted, dropped */
  CHECK_STR(g_shape(g, y3, buf), "[3,5]");
  mp_graph_destroy(g);
}

/* Shape -> Gather -> Concat -> Reshape: the target shape is a value only
 * inference can compute (what real exporters emit). */
static void test_shape_math(void) {
  mp_graph *g = g_new();
  char buf[128];
  mp_error err = {0};
  const int64_t xd[4] = {2, 3, 4, 5};
  int32_t x = g_tensor(g, "x", MP_TENSOR_INPUT, 4, xd);
  int32_t s = g_pending(g, "s"), nc = g_pending(g, "nc"),
          tgt = g_pending(g, "target"), y = g_pending(g, "y"),
          sl = g_pending(g, "sl"), r2 = g_pending(g, "r2");
  int32_t idx = g_ints(g, "idx", 2, (const int64_t[]){0, 1});
  int32_t m1 = g_ints(g, "minus1", 1, (const int64_t[]){-1});
  g_op(g, "shape", "Shape", 1, &x, s, 0, NULL);
  g_op(g, "gather", "Gather", 2, (const int32_t[]){s, idx}, nc, 0, NULL);
  mp_attr ax0 = {.name = "axis", .kind = MP_ATTR_INT, .i = 0};
  g_op(g, "concat", "Concat", 2, (const int32_t[]){nc, m1}, tgt, 1, &ax0);
  g_op(g, "reshape", "Reshape", 2, (const int32_t[]){x, tgt}, y, 0, NULL);
  /* Slice with negative start and step over the shape: [5,4,3,2]. */
  int32_t st = g_ints(g, "st", 1, (const int64_t[]){-1});
  int32_t en = g_ints(g, "en", 1, (const int64_t[]){-100});
  int32_t axes = g_ints(g, "axes", 1, (const int64_t[]){0});
  int32_t step = g_ints(g, "step", 1, (const int64_t[]){-2});
  g_op(g, "slice", "Slice", 5, (const int32_t[]){s, st, en, axes, step}, sl, 0,
       NULL);
  /* Reshape with 0 (copy) and -1 (infer). */
  int32_t z = g_ints(g, "zm", 2, (const int64_t[]){0, -1});
  g_op(g, "reshape0", "Reshape", 2, (const int32_t[]){y, z}, r2, 0, NULL);
  CHECK_EQ_I(g_infer(g, &err), MP_OK);
  CHECK_STR(g_shape(g, y, buf), "[2,3,20]");
  CHECK_STR(g_shape(g, r2, buf), "[2,60]");
  const mp_value *v = mp_graph_tensor(g, (size_t)tgt)->value;
  CHECK(v && v->n == 3 && v->i[0] == 2 && v->i[1] == 3 && v->i[2] == -1);
  v = mp_graph_tensor(g, (size_t)sl)->value;
  CHECK(v && v->n == 2 && v->i[0] == 5 && v->i[1] == 3);
  mp_graph_destroy(g);
}

static void test_broadcast_resize(void) {
  mp_graph *g = g_new();
  char buf[128];
  mp_error err = {0};
  const int64_t a[3] = {4, 1, 3}, b[2] = {5, 1}, x[4] = {1, 3, 4, 4};
  int32_t ab[2] = {g_tensor(g, "a", MP_TENSOR_INPUT, 3, a),
                   g_tensor(g, "b", MP_TENSOR_INPUT, 2, b)};
  int32_t y = g_pending(g, "y"), r = g_pending(g, "r");
  g_op(g, "add", "Add", 2, ab, y, 0, NULL);
  int32_t xi = g_tensor(g, "x", MP_TENSOR_INPUT, 4, x);
  mp_tensor_desc sd = {.name = "scales",
                       .dtype = MP_DTYPE_F32,
                       .kind = MP_TENSOR_WEIGHT,
                       .rank = 1,
                       .shape = {{4, -1}}};
  int32_t sc;
  CHECK_EQ_I(mp_graph_add_tensor(g, &sd, &sc, &err), MP_OK);
  CHECK_EQ_I(
      mp_graph_set_value(g, sc, NULL, (const double[]){1, 1, 2, 2.5}, 4, &err),
      MP_OK);
  g_op(g, "resize", "Resize", 3, (const int32_t[]){xi, -1, sc}, r, 0, NULL);
  CHECK_EQ_I(g_infer(g, &err), MP_OK);
  CHECK_STR(g_shape(g, y, buf), "[4,5,3]");
  CHECK_STR(g_shape(g, r, buf), "[1,3,8,10]");
  mp_graph_destroy(g);
  /* Shapes that do not broadcast. */
  g = g_new();
  const int64_t p[1] = {3}, q[1] = {4};
  int32_t pq[2] = {g_tensor(g, "p", MP_TENSOR_INPUT, 1, p),
                   g_tensor(g, "q", MP_TENSOR_INPUT, 1, q)};
  g_op(g, "bad_add", "Add", 2, pq, g_pending(g, "y"), 0, NULL);
  CHECK_EQ_I(g_infer(g, &err), MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "op 'bad_add' (Add): shapes do not broadcast: dim 3 vs 4");
  mp_graph_destroy(g);
}

/* An op with no rule leaves its outputs pending (and everything after
 * them), unless a declaration gives them. */
static void test_unknown_op(void) {
  mp_graph *g = g_new();
  char buf[128];
  mp_error err = {0};
  const int64_t x[2] = {2, 3};
  int32_t xi = g_tensor(g, "x", MP_TENSOR_INPUT, 2, x);
  int32_t t = g_pending(g, "t"), y = g_pending(g, "y");
  g_op(g, "frob", "Frobnicate", 1, &xi, t, 0, NULL);
  g_op(g, "relu", "Relu", 1, &t, y, 0, NULL);
  CHECK_EQ_I(g_infer(g, &err), MP_OK);
  CHECK_STR(g_shape(g, y, buf), "pending");
  CHECK_EQ_I(mp_shape_check_resolved(g, &err), MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "2 tensors of unknown shape");
  CHECK_HAS(err.msg, "'t' (from Frobnicate 'frob')");
  CHECK_HAS(err.msg, "ops with no shape rule: Frobnicate");
  mp_graph_destroy(g);
  g = g_new();
  xi = g_tensor(g, "x", MP_TENSOR_INPUT, 2, x);
  t = g_pending(g, "t");
  y = g_pending(g, "y");
  const mp_dim dd[3] = {{2, -1}, {3, -1}, {7, -1}};
  CHECK_EQ_I(mp_graph_declare(g, t, MP_DTYPE_F32, 3, dd, &err), MP_OK);
  g_op(g, "frob", "Frobnicate", 1, &xi, t, 0, NULL);
  g_op(g, "relu", "Relu", 1, &t, y, 0, NULL);
  CHECK_EQ_I(g_infer(g, &err), MP_OK);
  CHECK_STR(g_shape(g, y, buf), "[2,3,7]");
  CHECK_EQ_I(mp_graph_tensor(g, (size_t)t)->origin, MP_SHAPE_DECLARED);
  CHECK_EQ_I(mp_shape_check_resolved(g, &err), MP_OK);
  mp_graph_destroy(g);
}

/* Graph JSON may omit intermediate shapes (DESIGN.md). */
static void test_graph_json(const char *root) {
  char path[1200];
  mp_model *m = NULL;
  mp_error err = {0};
  char buf[128];
  snprintf(path, sizeof path, "%s/tests/data/infer_graph.json", root);
  mp_dim_binding n = {"N", 2};
  mp_load_opts o = {.dims = &n, .n_dims = 1};
  mp_status st = mp_model_load(path, &o, NULL, &m, &err);
  if (st != MP_OK) fprintf(stderr, "%s\n", err.msg);
  CHECK_EQ_I(st, MP_OK);
  if (st != MP_OK) return;
  const mp_graph *g = mp_model_graph(m);
  int32_t t;
  CHECK(mp_graph_find_tensor(g, "pooled", &t));
  CHECK_STR(mp_graph_shape_str(g, mp_graph_tensor(g, (size_t)t), buf, 128),
            "[2,16,1,1]");
  CHECK(mp_graph_find_tensor(g, "logits", &t));
  CHECK_STR(mp_graph_shape_str(g, mp_graph_tensor(g, (size_t)t), buf, 128),
            "[N=2,10]");
  CHECK_EQ_U(mp_graph_tensor(g, (size_t)t)->bytes, 80);
  mp_model_destroy(m);
}

/* DequantizeLinear of known int32 values (a bias as ONNX Runtime's
 * quantizer writes it): inference knows the values, and they are the
 * bits the runtime's kernel computes, for differences v - z beyond 2^24
 * and a -0 (0 times a negative scale) too. Blocked parameters and a zero point
 * of another type (refused at compile) leave the values unknown. */
static void test_dequantize_values(void) {
  const int64_t xd[2] = {2, 4}, cd[1] = {2}, one[1] = {1};
  const int64_t xv[8] = {
      2147483647, -2147483647 - 1, 16777224, 0, 123456789, -5, 0, 33554433};
  const float sf[2] = {0.1f, -3.0517578e-05f};
  const int32_t zv[2] = {7, -3};
  const double sv[2] = {sf[0], sf[1]};
  const int64_t zi[2] = {zv[0], zv[1]};
  for (int form = 0; form < 4; form++) {
    mp_graph *g = g_new();
    mp_error err = {0};
    int32_t in[3] = {
        g_weight(g, "xq", MP_DTYPE_I32, 2, xd, 8, xv, NULL),
        form == 1 ? g_weight(g, "s", MP_DTYPE_F32, 1, one, 1, NULL, sv + 1)
                  : g_weight(g, "s", MP_DTYPE_F32, 1, cd, 2, NULL, sv),
        form == 3   ? g_weight(g, "z", MP_DTYPE_I64, 1, cd, 2, zi, NULL)
        : form == 1 ? -1
                    : g_weight(g, "z", MP_DTYPE_I32, 1, cd, 2, zi, NULL)};
    int32_t y = g_pending(g, "y");
    mp_attr axis = {.name = "axis", .kind = MP_ATTR_INT, .i = 0};
    mp_attr block = {.name = "block_size", .kind = MP_ATTR_INT, .i = 4};
    g_op(g, "dq", "DequantizeLinear", 3, in, y, 1, form == 2 ? &block : &axis);
    if (form == 2) {
      /* blocked: the scale has the input's rank */
      mp_graph_destroy(g);
      g = g_new();
      const int64_t bd[2] = {2, 1};
      in[0] = g_weight(g, "xq", MP_DTYPE_I32, 2, xd, 8, xv, NULL);
      in[1] = g_weight(g, "s", MP_DTYPE_F32, 2, bd, 2, NULL, sv);
      in[2] = g_weight(g, "z", MP_DTYPE_I32, 2, bd, 2, zi, NULL);
      y = g_pending(g, "y");
      mp_attr ba[2] = {{.name = "axis", .kind = MP_ATTR_INT, .i = 1}, block};
      g_op(g, "dq", "DequantizeLinear", 3, in, y, 2, ba);
    }
    CHECK_EQ_I(g_infer(g, &err), MP_OK);
    const mp_value *v = mp_graph_tensor(g, (size_t)y)->value;
    if (form >= 2) {
      CHECK(v == NULL);
      mp_graph_destroy(g);
      continue;
    }
    CHECK(v && v->f && v->n == 8);
    int32_t x32[8];
    for (int k = 0; k < 8; k++) x32[k] = (int32_t)xv[k];
    float want[8], got[8];
    if (form == 0) {
      mp_k_dequantize(1, 2, 4, MP_KD_I32, x32, sf, 2, zv, want);
    } else {
      mp_k_dequantize(1, 1, 8, MP_KD_I32, x32, sf + 1, 1, NULL, want);
    }
    for (int k = 0; k < 8 && v && v->f; k++) got[k] = (float)v->f[k];
    CHECK(v && v->f && memcmp(got, want, sizeof want) == 0);
    if (form == 1) CHECK(got[3] == 0 && signbit(got[3]));
    mp_graph_destroy(g);
  }
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : ".";
  test_conv();
  test_conv_transpose_and_pool();
  test_matmul();
  test_shape_math();
  test_broadcast_resize();
  test_dequantize_values();
  test_unknown_op();
  test_graph_json(root);
  return check_exit("test_shape");
}
