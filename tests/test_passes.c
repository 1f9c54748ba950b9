#define _POSIX_C_SOURCE 200809L
/*
 * test_passes.c -- every graph pass on graphs built to exercise it
 * (tests/data/passes/): the exact rewrite (ops gone, inputs and
 * attributes of fused ops in the form of docs/ir-conventions.md, which
 * tensors share a buffer and why), the fusion records (saved_bytes =
 * 2 x size x steps, the register cap), the per-pass rows, the boundary
 * and safety rules (no fusion across a full reduction, no in-place write
 * over a tensor read later, no output aliasing an input), and a property
 * test: random graphs through random sets of passes always give a valid
 * plan whose buffers cover their tensors' lifetimes.
 *
 * usage: test_passes SOURCE_DIR
 */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "mplan/lifetime.h"
#include "mplan/model.h"
#include "mplan/passes.h"
#include "mplan/plan.h"

static char root[1024];

#define P(name) (1u << MP_PASS_##name)

static mp_model *load_with(const char *path, uint32_t mask, uint32_t vlen,
                           mp_order_kind order) {
  mp_backend be;
  mp_backend_default(&be);
  be.vlen = vlen;
  mp_load_opts o = {.passes = mask, .backend = &be, .order = order};
  mp_model *m = NULL;
  mp_error err = {0};
  if (mp_model_load(path, &o, NULL, &m, &err) != MP_OK) {
    fprintf(stderr, "%s: %s\n", path, err.msg);
    CHECK(!"load failed");
    return NULL;
  }
  /* Whatever the passes did, the plan must prove itself. */
  mp_plan *plan = NULL;
  if (mp_plan_solve(mp_model_problem(m), NULL, &plan, &err) != MP_OK) {
    fprintf(stderr, "%s: %s\n", path, err.msg);
    CHECK(!"plan failed");
  }
  mp_plan_destroy(plan);
  return m;
}

static mp_model *load(const char *rel, uint32_t mask, uint32_t vlen) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  return load_with(path, mask, vlen, MP_ORDER_AUTO);
}

static const mp_op *op_named(const mp_model *m, const char *name) {
  int32_t o;
  const mp_graph *g = mp_model_graph(m);
  return mp_graph_find_op(g, name, &o) ? mp_graph_op(g, (size_t)o) : NULL;
}

static bool has_tensor(const mp_model *m, const char *name) {
  return mp_graph_find_tensor(mp_model_graph(m), name, NULL);
}

static const mp_attr *attr(const mp_op *op, const char *name) {
  for (uint32_t k = 0; op && k < op->n_attrs; k++) {
    if (strcmp(op->attrs[k].name, name) == 0) return &op->attrs[k];
  }
  return NULL;
}

static const char *attr_s(const mp_op *op, const char *name) {
  const mp_attr *a = attr(op, name);
  return a && a->kind == MP_ATTR_STRING ? a->s : NULL;
}

/* The op's inputs (or outputs) as "a,b,-,c" ('-' for an omitted one). */
static const char *names(const mp_model *m, const mp_op *op, bool inputs) {
  static char buf[512];
  buf[0] = '\0';
  if (!op) return "(no op)";
  uint32_t n = inputs ? op->n_inputs : op->n_outputs;
  for (uint32_t k = 0; k < n; k++) {
    int32_t t = inputs ? op->inputs[k] : op->outputs[k];
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", k ? "," : "",
             t < 0 ? "-" : mp_graph_tensor(mp_model_graph(m), (size_t)t)->name);
  }
  return buf;
}

static size_t buf_of(const mp_model *m, const char *tensor) {
  int32_t t = -1;
  if (!mp_graph_find_tensor(mp_model_graph(m), tensor, &t)) return (size_t)-1;
  return mp_model_tensor_buffer(m, (size_t)t);
}

static mp_alias_rule rule_of(const mp_model *m, const char *tensor) {
  int32_t t = -1;
  if (!mp_graph_find_tensor(mp_model_graph(m), tensor, &t)) return MP_ALIAS_OWN;
  return mp_model_tensor_rule(m, (size_t)t);
}

static const mp_fusion *fusion_of(const mp_model *m, const char *op) {
  const mp_pass_report *r = mp_model_pass_report(m);
  for (size_t i = 0; r && i < mp_pass_report_fusions(r); i++) {
    if (strcmp(mp_pass_report_fusion(r, i)->op, op) == 0) {
      return mp_pass_report_fusion(r, i);
    }
  }
  return NULL;
}

static const mp_pass_row *row_of(const mp_model *m, mp_pass_id p) {
  const mp_pass_report *r = mp_model_pass_report(m);
  for (size_t i = 0; r && i < mp_pass_report_rows(r); i++) {
    if (mp_pass_report_row(r, i)->pass == p) return mp_pass_report_row(r, i);
  }
  return NULL;
}

/* ---- fuse ---------------------------------------------------------------- */

/* Rule 7: Softmax and LayerNormalization write over their inputs (the
 * graph output y over the activation v); 8,192 -> 6,144 B. */
static void test_inplace_row(void) {
  mp_model *m = load("tests/data/passes/rows_f32.json", P(INPLACE), 0);
  if (!m) return;
  CHECK(rule_of(m, "p") == MP_ALIAS_ROW);
  CHECK(rule_of(m, "y") == MP_ALIAS_ROW);
  CHECK(buf_of(m, "p") == buf_of(m, "q"));
  CHECK(buf_of(m, "y") == buf_of(m, "v"));
  CHECK_STR(mp_alias_rule_name(MP_ALIAS_ROW), "in place (row-wise)");
  const mp_pass_row *row = row_of(m, MP_PASS_INPLACE);
  CHECK(row && row->lb_before == 8192 && row->lb_after == 6144);
  mp_model_destroy(m);
}

/* Rule 7 for opset 23's row ops: RMSNormalization and RotaryEmbedding
 * write over their inputs; 8,192 -> 4,608 B. */
static void test_inplace_row_rope(void) {
  mp_model *m = load("tests/data/passes/rows_rope.json", P(INPLACE), 0);
  if (!m) return;
  CHECK(rule_of(m, "n") == MP_ALIAS_ROW);
  CHECK(rule_of(m, "r") == MP_ALIAS_ROW);
  CHECK(buf_of(m, "q") == buf_of(m, "n"));
  CHECK(buf_of(m, "n") == buf_of(m, "r"));
  const mp_pass_row *row = row_of(m, MP_PASS_INPLACE);
  CHECK(row && row->lb_before == 8192 && row->lb_after == 4608);
  mp_model_destroy(m);
}

/* Rule 7 for opset 24's TensorScatter: the present KV cache in the past
 * cache's bytes; 16,384 -> 8,704 B. */
static void test_inplace_kv_scatter(void) {
  mp_model *m = load("tests/data/passes/kv_scatter.json", P(INPLACE), 0);
  if (!m) return;
  CHECK(rule_of(m, "present") == MP_ALIAS_ROW);
  CHECK(buf_of(m, "present") == buf_of(m, "cache"));
  const mp_pass_row *row = row_of(m, MP_PASS_INPLACE);
  CHECK(row && row->lb_before == 16384 && row->lb_after == 8704);
  mp_model_destroy(m);
}

/* The attention pass: MatMul(Q, Kt), Mul by the scale, Add of the mask,
 * Softmax and MatMul(P, V) become the second MatMul with mplan.attention;
 * the four [1, 4, 64, 64] intermediates are gone: 147,456 -> 65,536 B.
 * A Softmax between MatMuls by weights (rows_f32.json) is left alone. */
static void test_attention(void) {
  mp_model *m = load("tests/data/passes/attn_decomposed.json", P(ATTENTION), 0);
  if (!m) return;
  const mp_op *op = op_named(m, "context");
  CHECK(op && attr(op, "mplan.attention") && op->n_inputs == 5);
  const mp_attr *so = attr(op, "mplan.attention.scale");
  CHECK(so && so->kind == MP_ATTR_STRING && strcmp(so->s, "Mul") == 0);
  CHECK(!op_named(m, "scores") && !op_named(m, "softmax"));
  CHECK(!has_tensor(m, "s") && !has_tensor(m, "s_scaled") &&
        !has_tensor(m, "s_masked") && !has_tensor(m, "p"));
  const mp_pass_row *row = row_of(m, MP_PASS_ATTENTION);
  CHECK(row && row->lb_before == 147456 && row->lb_after == 65536 &&
        row->ops_before == 10 && row->ops_after == 6);
  const mp_fusion *f = fusion_of(m, "context");
  CHECK(f && f->steps == 4 && f->saved_bytes == 2u * 65536 * 4 && f->at_peak);
  CHECK(f && strcmp(f->absorbed, "MatMul,Mul,Add,Softmax") == 0);
  mp_model_destroy(m);
  m = load("tests/data/passes/rows_f32.json", P(ATTENTION), 0);
  if (!m) return;
  CHECK(op_named(m, "softmax") && !attr(op_named(m, "v"), "mplan.attention"));
  mp_model_destroy(m);
  m = load("tests/data/passes/attn_chained.json", P(ATTENTION), 0);
  if (!m) return;
  CHECK(attr(op_named(m, "o"), "mplan.attention") && op_named(m, "sm2") &&
        !attr(op_named(m, "y"), "mplan.attention"));
  mp_model_destroy(m);
}

/* Diamonds: SiLU, a decomposed HardSwish and a decomposed GELU after
 * Convs become one fused op each, the closing Mul reading the head's
 * value (Mul@0); a Sigmoid closed by a Sub (not commutative) is left. */
static void test_fuse_diamond(void) {
  mp_model *m = load("tests/data/passes/act_f32.json", P(FUSE), 0);
  if (!m) return;
  CHECK_EQ_U(mp_graph_op_count(mp_model_graph(m)), 6);
  const mp_op *c1 = op_named(m, "conv1"), *c2 = op_named(m, "conv2"),
              *c3 = op_named(m, "conv3");
  CHECK_STR(attr_s(c1, "mplan.epilogue"), "Sigmoid,Mul@0");
  CHECK_STR(names(m, c1, true), "x,w1,b1");
  CHECK_STR(names(m, c1, false), "silu");
  CHECK_STR(attr_s(c2, "mplan.epilogue"), "Add,Clip,Mul@0,Div");
  CHECK_STR(names(m, c2, true), "silu,w2,-,three,six");
  CHECK_STR(names(m, c2, false), "hs");
  CHECK_STR(attr_s(c3, "mplan.epilogue"), "Div,Erf,Add,Mul@0,Mul");
  CHECK_STR(names(m, c3, true), "hs,w3,-,sqrt2,one,half");
  CHECK(!attr(op_named(m, "conv4"), "mplan.epilogue"));
  CHECK(op_named(m, "s4") && op_named(m, "y"));
  for (const char *gone[] = {"c1", "sig", "c2", "hs_add", "hs_clip", "hs_mul",
                             "c3", "g_div", "g_erf", "g_add", "g_mul", NULL},
                  **t = gone;
       *t; t++) {
    CHECK(!has_tensor(m, *t));
  }
  const mp_fusion *f = fusion_of(m, "conv2");
  CHECK(f != NULL);
  if (f) {
    CHECK_EQ_U(f->steps, 4);
    CHECK_STR(f->intermediates, "c2,hs_add,hs_clip,hs_mul");
    CHECK_EQ_U(f->saved_bytes, 2 * 2048 * 4);
  }
  /* The tapped value takes a register until the Mul: 3 (head) + 3
   * (Sigmoid) + 1 (Mul) + 1 (tap). */
  f = fusion_of(m, "conv1");
  CHECK(f && f->registers == 8);
  const mp_pass_row *row = row_of(m, MP_PASS_FUSE);
  CHECK(row && row->detail && strstr(row->detail, "Conv 3; 3 diamonds"));
  mp_model_destroy(m);
  /* One diamond per group: the second (t + Relu(t)) stays unfused. */
  m = load("tests/data/passes/two_diamonds.json", P(FUSE), 0);
  if (!m) return;
  CHECK_STR(attr_s(op_named(m, "conv"), "mplan.epilogue"), "Sigmoid,Mul@0");
  CHECK(op_named(m, "relu") && op_named(m, "add"));
  row = row_of(m, MP_PASS_FUSE);
  if (row) CHECK_HAS(row->detail, "1 chain stopped at a second diamond");
  mp_model_destroy(m);
}

static void test_fuse(void) {
  mp_model *m = load("tests/data/passes/convnet.json", P(FUSE), 0);
  if (!m) return;
  CHECK_EQ_U(mp_graph_op_count(mp_model_graph(m)), 9);
  const mp_op *c1 = op_named(m, "conv1");
  CHECK_STR(attr_s(c1, "mplan.epilogue"), "BatchNormalization,Relu,Sigmoid");
  CHECK_STR(names(m, c1, true), "x,w1,b1,bn_s,bn_b,bn_m,bn_v");
  CHECK_STR(names(m, c1, false), "r1");
  const mp_attr *eps = attr(c1, "mplan.e0.epsilon");
  CHECK(eps && eps->kind == MP_ATTR_FLOAT && eps->f > 0.00099 &&
        eps->f < 0.00101);
  /* The residual Add: its other operand was written before pw. */
  const mp_op *pw = op_named(m, "pw");
  CHECK_STR(attr_s(pw, "mplan.epilogue"), "Add");
  CHECK_STR(names(m, pw, true), "d1,wpw,bpw,r1");
  CHECK_STR(names(m, pw, false), "a1");
  /* dw's reader is a Conv: nothing to absorb, its attribute stays. */
  const mp_op *dw = op_named(m, "dw");
  CHECK(!attr(dw, "mplan.epilogue"));
  CHECK_STR(attr_s(dw, "fused_activation"), "Relu6");
  for (const char *gone[] = {"c1", "n1", "q1", "p1", NULL}, **t = gone; *t;
       t++) {
    CHECK(!has_tensor(m, *t));
  }
  CHECK(!op_named(m, "bn1") && !op_named(m, "add"));
  /* Gemm -> Softmax: a full reduction is a boundary. */
  CHECK(!attr(op_named(m, "fc"), "mplan.epilogue"));
  const mp_fusion *f = fusion_of(m, "conv1");
  CHECK(f != NULL);
  if (f) {
    CHECK_EQ_U(f->steps, 3);
    CHECK_EQ_U(f->intermediate_bytes, 2048);
    CHECK_EQ_U(f->saved_bytes, 2 * 2048 * 3);
    CHECK_STR(f->intermediates, "c1,n1,q1");
    CHECK_STR(f->absorbed_ops, "bn1,relu1,sig1");
    CHECK_EQ_I(f->spills, -1); /* no VLEN: no register estimate */
  }
  f = fusion_of(m, "pw");
  CHECK(f && f->at_peak && f->saved_bytes == 4096);
  const mp_pass_row *row = row_of(m, MP_PASS_FUSE);
  CHECK(row && row->ops_before == 13 && row->ops_after == 9 &&
        row->saved_bytes == 12288 + 4096);
  if (row) CHECK_HAS(row->detail, "1 chain stopped at a full reduction");
  mp_model_destroy(m);
}

/* The register cap: at VLEN 128 a value takes 4 registers; the head (3
 * values) + BatchNormalization (2) + Relu (1) = 24 registers; Sigmoid (3
 * more: 36 > 31) is refused. At VLEN 512 everything fits. */
static void test_fuse_cap(void) {
  mp_model *m = load("tests/data/passes/convnet.json", P(FUSE), 128);
  if (!m) return;
  const mp_op *c1 = op_named(m, "conv1");
  CHECK_STR(attr_s(c1, "mplan.epilogue"), "BatchNormalization,Relu");
  CHECK_STR(names(m, c1, false), "q1");
  CHECK(op_named(m, "sig1") != NULL);
  const mp_fusion *f = fusion_of(m, "conv1");
  CHECK(f && f->capped && f->registers == 24 && f->spills == 0);
  const mp_pass_row *row = row_of(m, MP_PASS_FUSE);
  if (row) {
    CHECK_HAS(row->detail,
              "VLEN 128: 1 group capped by registers (avoided 5 "
              "spilled registers)");
  }
  CHECK_EQ_U(mp_pass_report_vlen(mp_model_pass_report(m)), 128);
  mp_model_destroy(m);
  m = load("tests/data/passes/convnet.json", P(FUSE), 512);
  if (!m) return;
  CHECK_STR(attr_s(op_named(m, "conv1"), "mplan.epilogue"),
            "BatchNormalization,Relu,Sigmoid");
  f = fusion_of(m, "conv1");
  CHECK(f && !f->capped && f->registers == 9 && f->spills == 0);
  mp_model_destroy(m);
}

/* fused_activation (the bundled models) becomes an explicit epilogue
 * entry; an Add whose other operand comes after the head is not fused
 * into it (it would keep the head's inputs alive), but into the op that
 * writes that operand. */
static void test_fuse_resnet(void) {
  mp_model *m = load("models/resnet50.json", P(FUSE), 0);
  if (!m) return;
  const mp_op *down = op_named(m, "s1b1_down");
  CHECK_STR(attr_s(down, "mplan.epilogue"), "Add,Relu");
  CHECK(!attr(down, "fused_activation"));
  CHECK_STR(names(m, down, true),
            "pool1_out,s1b1_down_w,s1b1_down_b,s1b1_c_out");
  CHECK(!attr(op_named(m, "s1b1_c"), "mplan.epilogue"));
  CHECK_STR(attr_s(op_named(m, "s1b2_c"), "mplan.epilogue"), "Add,Relu");
  const mp_pass_row *row = row_of(m, MP_PASS_FUSE);
  CHECK(row && row->lb_before == 2408448 && row->lb_after == 1806336);
  if (row) {
    CHECK_HAS(row->detail,
              "4 chains stopped at an operand computed after the head");
  }
  mp_model_destroy(m);
  /* Relu6 as Clip(0, 6) in front of an absorbed Add. */
  char path[] = "/tmp/mplan_relu6_XXXXXX";
  int fd = mkstemp(path);
  static const char graph[] =
      "{\"mplan\":\"graph/1\",\"name\":\"r6\",\"tensors\":["
      "{\"name\":\"x\",\"dtype\":\"i8\",\"shape\":[1,4,8,8],\"kind\":"
      "\"input\"},"
      "{\"name\":\"w\",\"dtype\":\"i8\",\"shape\":[4,4,1,1],\"kind\":"
      "\"weight\"},"
      "{\"name\":\"s\",\"dtype\":\"i8\",\"shape\":[1,4,8,8]},"
      "{\"name\":\"c\",\"dtype\":\"i8\",\"shape\":[1,4,8,8]},"
      "{\"name\":\"y\",\"dtype\":\"i8\",\"shape\":[1,4,8,8],\"kind\":"
      "\"output\"}],\"ops\":["
      "{\"name\":\"skip\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":"
      "[\"s\"]},"
      "{\"name\":\"conv\",\"op\":\"Conv\",\"inputs\":[\"x\",\"w\"],"
      "\"outputs\":[\"c\"],\"attrs\":{\"fused_activation\":\"Relu6\"}},"
      "{\"name\":\"add\",\"op\":\"Add\",\"inputs\":[\"s\",\"c\"],"
      "\"outputs\":[\"y\"]}],\"outputs\":[\"y\"]}";
  CHECK(fd >= 0 &&
        write(fd, graph, sizeof graph - 1) == (ssize_t)(sizeof graph - 1));
  if (fd >= 0) close(fd);
  m = load_with(path, P(FUSE), 0, MP_ORDER_AUTO);
  remove(path);
  if (!m) return;
  const mp_op *conv = op_named(m, "conv");
  CHECK_STR(attr_s(conv, "mplan.epilogue"), "Clip,Add");
  /* The omitted bias is written as -1 before the epilogue's input. */
  CHECK_STR(names(m, conv, true), "x,w,-,s");
  CHECK_STR(names(m, conv, false), "y");
  const mp_attr *lo = attr(conv, "mplan.e0.min"),
                *hi = attr(conv, "mplan.e0.max");
  CHECK(lo && hi && lo->f == 0 && hi->f == 6);
  CHECK(!attr(conv, "fused_activation"));
  mp_model_destroy(m);
}

/* ---- inplace and views --------------------------------------------------- */

static void test_inplace(void) {
  mp_model *m = load("tests/data/passes/convnet.json", P(INPLACE), 0);
  if (!m) return;
  /* conv1 -> bn1 -> relu1 -> sig1: each writes over its input. */
  size_t b = buf_of(m, "c1");
  CHECK(buf_of(m, "n1") == b && buf_of(m, "q1") == b && buf_of(m, "r1") == b);
  CHECK(rule_of(m, "n1") == MP_ALIAS_ELEMENTWISE);
  CHECK(rule_of(m, "c1") == MP_ALIAS_OWN);
  /* dw reads r1, which add reads later: no in-place depthwise there. */
  CHECK(buf_of(m, "d1") != b);
  /* add writes over p1 (its first input nobody reads later). */
  CHECK(buf_of(m, "a1") == buf_of(m, "p1"));
  /* dw2 (stride 2, its input read by nothing else): in place, TinyEngine
   * style; the buffer is as large as the input. */
  CHECK(buf_of(m, "d2") == buf_of(m, "a1"));
  CHECK(rule_of(m, "d2") == MP_ALIAS_DEPTHWISE);
  CHECK(buf_of(m, "mr") == buf_of(m, "mp"));
  /* The input is never written over. */
  CHECK(buf_of(m, "x") != b);
  const mp_problem *p = mp_model_problem(m);
  const mp_buffer *big = mp_problem_buffer(p, buf_of(m, "a1"));
  CHECK_EQ_U(big->size, 2048);
  /* The shared buffer lives from conv1 (step 0) to add (step 6). */
  const mp_buffer *chain = mp_problem_buffer(p, b);
  CHECK(chain->first == 0 && chain->last == 6);
  CHECK_STR(chain->name, "c1");
  const uint32_t *members;
  CHECK_EQ_U(mp_model_buffer_tensors(m, b, &members), 4);
  /* The Softmax writes the graph output over its input (rule 7). */
  CHECK(buf_of(m, "probs") == buf_of(m, "logits"));
  CHECK(rule_of(m, "probs") == MP_ALIAS_ROW);
  CHECK_EQ_U(mp_problem_count(p), 21);
  mp_model_destroy(m);
}

/* Rule 4: a fused op writes over its epilogue operand (the residual),
 * never over one its head reads (the reduction reads whole windows). */
static void test_inplace_epilogue(void) {
  mp_model *m = load("tests/data/passes/convnet.json", P(FUSE) | P(INPLACE), 0);
  if (!m) return;
  CHECK_STR(attr_s(op_named(m, "pw"), "mplan.epilogue"), "Add");
  CHECK(buf_of(m, "a1") == buf_of(m, "r1"));
  CHECK(rule_of(m, "a1") == MP_ALIAS_EPILOGUE);
  mp_model_destroy(m);
  char path[] = "/tmp/mplan_epi_XXXXXX";
  int fd = mkstemp(path);
  static const char graph[] =
      "{\"mplan\":\"graph/1\",\"name\":\"e\",\"tensors\":["
      "{\"name\":\"x\",\"dtype\":\"i8\",\"shape\":[1,4,8,8],\"kind\":"
      "\"input\"},"
      "{\"name\":\"w\",\"dtype\":\"i8\",\"shape\":[4,4,3,3],\"kind\":"
      "\"weight\"},"
      "{\"name\":\"a\",\"dtype\":\"i8\",\"shape\":[1,4,8,8]},"
      "{\"name\":\"c\",\"dtype\":\"i8\",\"shape\":[1,4,8,8]},"
      "{\"name\":\"y\",\"dtype\":\"i8\",\"shape\":[1,4,8,8],\"kind\":"
      "\"output\"}],\"ops\":["
      "{\"name\":\"relu\",\"op\":\"Relu\",\"inputs\":[\"x\"],"
      "\"outputs\":[\"a\"]},"
      "{\"name\":\"conv\",\"op\":\"Conv\",\"inputs\":[\"a\",\"w\"],"
      "\"outputs\":[\"c\"],\"attrs\":{\"pads\":[1,1,1,1]}},"
      "{\"name\":\"add\",\"op\":\"Add\",\"inputs\":[\"c\",\"a\"],"
      "\"outputs\":[\"y\"]}],\"outputs\":[\"y\"]}";
  CHECK(fd >= 0 &&
        write(fd, graph, sizeof graph - 1) == (ssize_t)(sizeof graph - 1));
  if (fd >= 0) close(fd);
  m = load_with(path, P(FUSE) | P(INPLACE), 0, MP_ORDER_AUTO);
  remove(path);
  if (!m) return;
  CHECK_STR(names(m, op_named(m, "conv"), true), "a,w,-,a");
  CHECK(buf_of(m, "y") != buf_of(m, "a"));
  mp_model_destroy(m);
}

/* Rule 6: an Add writing a Concat slice moves its first branch's result
 * into the slice and writes over it there (tests/data/passes/
 * concat_add.json, whose description derives the figures), unless the
 * move raises the lower bound (concat_add_guard.json). */
static int64_t offset_of(const mp_model *m, const char *tensor) {
  int32_t t = -1;
  if (!mp_graph_find_tensor(mp_model_graph(m), tensor, &t)) return -1;
  return (int64_t)mp_model_tensor_offset(m, (size_t)t);
}

static void test_inplace_slice(void) {
  mp_model *m = load("tests/data/passes/concat_add.json", P(CONCAT), 0);
  if (!m) return;
  /* The concat pass alone: slices in y, each pooling result apart. */
  CHECK(buf_of(m, "n1") == buf_of(m, "y") && buf_of(m, "b1") != buf_of(m, "y"));
  CHECK_EQ_U(row_of(m, MP_PASS_CONCAT)->lb_after, 3072);
  mp_model_destroy(m);
  m = load("tests/data/passes/concat_add.json", P(CONCAT) | P(INPLACE), 0);
  if (!m) return;
  static const char *const b[] = {"b0", "b1", "b2"}, *const n[] = {"n0", "n1",
                                                                   "n2"};
  for (int k = 0; k < 3; k++) {
    CHECK(buf_of(m, b[k]) == buf_of(m, "y"));
    CHECK(rule_of(m, b[k]) == MP_ALIAS_CONCAT);
    CHECK(rule_of(m, n[k]) == MP_ALIAS_ELEMENTWISE);
    CHECK(offset_of(m, b[k]) == 512 * k && offset_of(m, n[k]) == 512 * k);
  }
  CHECK(buf_of(m, "p") != buf_of(m, "y") && buf_of(m, "c0") != buf_of(m, "y"));
  /* The concat pass placed the slices with the moves (judged together). */
  const mp_pass_row *row = row_of(m, MP_PASS_CONCAT);
  CHECK(row && row->lb_before == 3072 && row->lb_after == 2560);
  CHECK(row && strstr(row->detail, "into a Concat slice 3, Concat input 3"));
  mp_model_destroy(m);
  /* Fused first: the Conv writes over its residual, in the slice. */
  m = load("tests/data/passes/concat_add.json",
           P(FUSE) | P(CONCAT) | P(INPLACE), 0);
  if (!m) return;
  CHECK(rule_of(m, "b2") == MP_ALIAS_CONCAT && offset_of(m, "b2") == 1024);
  CHECK(rule_of(m, "n2") == MP_ALIAS_EPILOGUE && offset_of(m, "n2") == 1024);
  mp_model_destroy(m);
  /* A placement that pays off only with the moves: the concat pass
   * alone keeps none; with inplace to come it judges them together. */
  m = load("tests/data/passes/concat_add_late.json", P(CONCAT), 0);
  if (!m) return;
  CHECK(buf_of(m, "n0") != buf_of(m, "y") && buf_of(m, "n1") != buf_of(m, "y"));
  CHECK(row_of(m, MP_PASS_CONCAT)->rewrites == 0);
  mp_model_destroy(m);
  m = load("tests/data/passes/concat_add_late.json", P(CONCAT) | P(INPLACE), 0);
  if (!m) return;
  for (int k = 0; k < 2; k++) {
    CHECK(buf_of(m, b[k]) == buf_of(m, "y") &&
          buf_of(m, n[k]) == buf_of(m, "y"));
    CHECK(rule_of(m, b[k]) == MP_ALIAS_CONCAT && offset_of(m, n[k]) == 512 * k);
  }
  row = row_of(m, MP_PASS_CONCAT);
  CHECK(row && row->lb_before == 2048 && row->lb_after == 2048);
  CHECK(row && strstr(row->detail, "into a Concat slice 2, Concat input 2"));
  CHECK_EQ_U(mp_problem_count(mp_model_problem(m)), 10);
  mp_model_destroy(m);
  /* The guard: b0 in y would keep y live across the wide step. The
   * concat pass places the slices without the moves (with them the
   * bound rises); the inplace pass then moves b1 and b2 alone. */
  m = load("tests/data/passes/concat_add_guard.json", P(CONCAT) | P(INPLACE),
           0);
  if (!m) return;
  CHECK(buf_of(m, "b0") != buf_of(m, "y") && rule_of(m, "b0") == MP_ALIAS_OWN);
  CHECK(buf_of(m, "b1") == buf_of(m, "y") && buf_of(m, "b2") == buf_of(m, "y"));
  row = row_of(m, MP_PASS_INPLACE);
  CHECK(row && row->lb_before == 5632 && row->lb_after == 5632);
  CHECK(row && strstr(row->detail, "into a Concat slice 2"));
  mp_model_destroy(m);
}

static void test_views(void) {
  mp_model *m = load("tests/data/passes/convnet.json", P(VIEWS), 0);
  if (!m) return;
  CHECK(buf_of(m, "fl") == buf_of(m, "mr"));
  CHECK(rule_of(m, "fl") == MP_ALIAS_VIEW);
  CHECK_EQ_U(mp_problem_count(mp_model_problem(m)), 27);
  mp_model_destroy(m);
  /* A view of a graph input shares the resident bytes; a view that is a
   * graph output never aliases an input. */
  char path[] = "/tmp/mplan_views_XXXXXX";
  int fd = mkstemp(path);
  static const char graph[] =
      "{\"mplan\":\"graph/1\",\"name\":\"v\",\"tensors\":["
      "{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,8],\"kind\":\"input\"},"
      "{\"name\":\"xv\",\"dtype\":\"f32\",\"shape\":[1,16]},"
      "{\"name\":\"r\",\"dtype\":\"f32\",\"shape\":[1,16]},"
      "{\"name\":\"out_in\",\"dtype\":\"f32\",\"shape\":[1,16],\"kind\":"
      "\"output\"},"
      "{\"name\":\"out_act\",\"dtype\":\"f32\",\"shape\":[2,8],\"kind\":"
      "\"output\"}],\"ops\":["
      "{\"name\":\"v1\",\"op\":\"Flatten\",\"inputs\":[\"x\"],\"outputs\":"
      "[\"xv\"],\"attrs\":{\"axis\":0}},"
      "{\"name\":\"relu\",\"op\":\"Relu\",\"inputs\":[\"xv\"],\"outputs\":"
      "[\"r\"]},"
      "{\"name\":\"v2\",\"op\":\"Flatten\",\"inputs\":[\"x\"],\"outputs\":"
      "[\"out_in\"],\"attrs\":{\"axis\":0}},"
      "{\"name\":\"v3\",\"op\":\"Reshape\",\"inputs\":[\"r\"],\"outputs\":"
      "[\"out_act\"]}],\"outputs\":[\"out_in\",\"out_act\"]}";
  CHECK(fd >= 0 &&
        write(fd, graph, sizeof graph - 1) == (ssize_t)(sizeof graph - 1));
  if (fd >= 0) close(fd);
  m = load_with(path, P(VIEWS) | P(INPLACE), 0, MP_ORDER_AUTO);
  remove(path);
  if (!m) return;
  CHECK(buf_of(m, "xv") == buf_of(m, "x"));
  CHECK(mp_problem_buffer(mp_model_problem(m), buf_of(m, "xv"))->cls ==
        MP_CLASS_RESIDENT);
  CHECK(buf_of(m, "out_in") != buf_of(m, "x"));
  CHECK(buf_of(m, "out_act") == buf_of(m, "r"));
  /* relu may not write over xv: it is the graph input's bytes. */
  CHECK(buf_of(m, "r") != buf_of(m, "xv"));
  mp_model_destroy(m);
}

/* ---- fold, eliminate, hfuse, absorb (ONNX: constant values) -------------- */

static const char ops_onnx[] = "tests/data/passes/ops.onnx.bin";

static void test_fold(void) {
  mp_model *m = load(ops_onnx, P(FOLD), 0);
  if (!m) return;
  const mp_graph *g = mp_model_graph(m);
  int32_t t;
  CHECK(mp_graph_find_tensor(g, "tgt", &t) &&
        mp_graph_tensor(g, (size_t)t)->kind == MP_TENSOR_WEIGHT);
  CHECK(mp_graph_find_tensor(g, "wtt", &t) &&
        mp_graph_tensor(g, (size_t)t)->kind == MP_TENSOR_WEIGHT);
  /* Read by nothing once folded: gone. */
  CHECK(!has_tensor(m, "sh") && !has_tensor(m, "d0") && !has_tensor(m, "wt"));
  CHECK(!op_named(m, "shape") && !op_named(m, "w_transpose"));
  /* The large dequantized weight is not folded: it would stay resident. */
  CHECK(op_named(m, "dq") != NULL);
  const mp_pass_row *row = row_of(m, MP_PASS_FOLD);
  CHECK(row && row->ops_before == 29 && row->ops_after == 24);
  /* Shape(o1) no longer keeps o1 alive: the lower bound drops. */
  CHECK(row && row->lb_after < row->lb_before);
  mp_model_destroy(m);
}

static void test_eliminate(void) {
  mp_model *m = load(ops_onnx, P(ELIMINATE), 0);
  if (!m) return;
  for (const char *
           gone[] = {"ident", "drop", "cast_same", "tr1", "tr2", "mul_one",
                     "add_zero", "reshape1", "reshape2", "shape", NULL},
          **o = gone;
       *o; o++) {
    if (op_named(m, *o)) fprintf(stderr, "op %s survived\n", *o);
    CHECK(!op_named(m, *o));
  }
  CHECK_STR(names(m, op_named(m, "q_proj"), true), "x,wq");
  CHECK_STR(names(m, op_named(m, "sum"), true), "o1,o3");
  CHECK_EQ_U(mp_graph_op_count(mp_model_graph(m)), 16);
  const mp_pass_row *row = row_of(m, MP_PASS_ELIMINATE);
  if (row) {
    CHECK_HAS(row->detail, "Transpose pair 1");
    CHECK_HAS(row->detail, "multiply by one 1");
    CHECK_HAS(row->detail, "view chain 1");
  }
  mp_model_destroy(m);
}

static void test_hfuse(void) {
  mp_model *m = load(ops_onnx, P(HFUSE), 0);
  if (!m) return;
  const mp_op *q = op_named(m, "q_proj");
  const mp_attr *h = attr(q, "mplan.horizontal");
  CHECK(h && h->kind == MP_ATTR_INT && h->i == 3);
  CHECK_STR(names(m, q, true), "a1,wq,wk,wv");
  CHECK_STR(names(m, q, false), "q,k,v");
  CHECK(!op_named(m, "k_proj") && !op_named(m, "v_proj"));
  mp_model_destroy(m);
  /* After vertical fusion Q has an epilogue: only K and V remain. */
  m = load(ops_onnx, P(FUSE) | P(HFUSE), 0);
  if (!m) return;
  const mp_op *k = op_named(m, "k_proj");
  CHECK_STR(attr_s(op_named(m, "q_proj"), "mplan.epilogue"), "Add,Relu");
  CHECK(attr(k, "mplan.horizontal") && attr(k, "mplan.horizontal")->i == 2);
  CHECK_STR(names(m, k, false), "k,v");
  mp_model_destroy(m);
  /* VLEN 128 fits 3 siblings (7 values x 4 registers <= 31). */
  m = load(ops_onnx, P(HFUSE), 128);
  if (!m) return;
  const mp_fusion *f = fusion_of(m, "q_proj");
  CHECK(f && f->kind == MP_FUSION_HORIZONTAL && f->registers == 28 &&
        f->spills == 0 && f->saved_bytes == 0 && f->steps == 2);
  mp_model_destroy(m);
}

static void test_absorb(void) {
  mp_model *m = load(ops_onnx, P(ABSORB), 0);
  if (!m) return;
  const mp_op *o = op_named(m, "out_proj");
  CHECK_STR(attr_s(o, "mplan.prologue"), "DequantizeLinear:1");
  CHECK_STR(names(m, o, true), "att,w8,s8,z8");
  const mp_op *s = op_named(m, "side_proj");
  CHECK_STR(attr_s(s, "mplan.prologue"), "Cast:0");
  CHECK_STR(names(m, s, true), "xi8,w2");
  CHECK(!op_named(m, "dq") && !op_named(m, "widen"));
  const mp_fusion *f = fusion_of(m, "out_proj");
  CHECK(f && f->kind == MP_FUSION_PROLOGUE && f->saved_bytes == 2048 &&
        f->intermediate_bytes == 1024);
  mp_model_destroy(m);
}

/* Rule 6: a nearest Resize by whole factors folds into the Add, Mul or Sub
 * reading it (tests/data/passes/gen_upsample.py says which ones). */
static void test_absorb_resize(void) {
  mp_model *m = load("tests/data/passes/upsample.onnx.bin", P(ABSORB), 0);
  if (!m) return;
  const mp_op *o = op_named(m, "add_floor");
  CHECK_STR(attr_s(o, "mplan.prologue"), "Resize:1");
  CHECK_STR(names(m, o, true), "lateral,coarse");
  o = op_named(m, "mul_half"); /* the ONNX defaults, sizes given */
  CHECK_STR(attr_s(o, "mplan.prologue"), "Resize:0");
  CHECK_STR(names(m, o, true), "coarse,p1");
  o = op_named(m, "add_wide"); /* factors 4 and 2 */
  CHECK_STR(attr_s(o, "mplan.prologue"), "Resize:1");
  CHECK_STR(names(m, o, true), "p2,wide_low");
  o = op_named(m, "add_early");
  CHECK_STR(attr_s(o, "mplan.prologue"), "Resize:1");
  CHECK_STR(names(m, o, true), "lateral2,coarse");
  for (const char *gone[] = {"up_floor", "up_half", "up_wide", "up_early"},
                  **t = gone;
       t < gone + 4; t++) {
    CHECK(!has_tensor(m, *t));
  }
  /* Not a replication (round_prefer_ceil reads input 1 for output 1),
   * linear, and two readers: kept. */
  for (const char *kept[] = {"resize_ceil", "resize_linear", "resize_two",
                             "sub_ceil", "add_linear", "add_two"},
                  **k = kept;
       k < kept + 6; k++) {
    if (!op_named(m, *k)) fprintf(stderr, "op %s vanished\n", *k);
    CHECK(op_named(m, *k) && !attr(op_named(m, *k), "mplan.prologue"));
  }
  const mp_fusion *f = fusion_of(m, "add_wide");
  CHECK(f && f->kind == MP_FUSION_PROLOGUE && f->saved_bytes == 2048 &&
        f->intermediate_bytes == 1024 && strcmp(f->absorbed, "Resize") == 0 &&
        strcmp(f->absorbed_ops, "resize_wide") == 0);
  const mp_pass_row *row = row_of(m, MP_PASS_ABSORB);
  o = op_named(m, "mul_bcast"); /* the other operand broadcasts */
  CHECK_STR(attr_s(o, "mplan.prologue"), "Resize:0");
  CHECK_STR(names(m, o, true), "coarse,chscale");
  CHECK(row && row->ops_before == 24 && row->ops_after == 19);
  if (row) CHECK_HAS(row->detail, "Resize 5");
  mp_model_destroy(m);
  /* Fuse alone makes add_early lateral2's epilogue, the upsampled map its
   * operand (condition 5 holds: up_early comes first); with absorb on,
   * fuse leaves it to absorb (condition 6), which stores no upsampled map;
   * so it does for lateral's add_floor, whose operand comes later. */
  m = load("tests/data/passes/upsample.onnx.bin", P(FUSE), 0);
  if (!m) return;
  CHECK_STR(attr_s(op_named(m, "lateral2"), "mplan.epilogue"), "Add");
  CHECK(has_tensor(m, "up_early"));
  mp_model_destroy(m);
  m = load("tests/data/passes/upsample.onnx.bin", P(FUSE) | P(ABSORB), 0);
  if (!m) return;
  CHECK(!attr(op_named(m, "lateral2"), "mplan.epilogue"));
  CHECK_STR(attr_s(op_named(m, "add_early"), "mplan.prologue"), "Resize:1");
  CHECK(!has_tensor(m, "up_early"));
  row = row_of(m, MP_PASS_FUSE);
  if (row) CHECK_HAS(row->detail, "2 chains stopped at a Resize the absorb");
  mp_model_destroy(m);
  /* With inplace the Adds write over their full-size operand, never over
   * the replicated one: the lower bound loses the three upsampled maps. */
  m = load("tests/data/passes/upsample.onnx.bin", P(ABSORB) | P(INPLACE), 0);
  if (!m) return;
  CHECK_EQ_U(buf_of(m, "p1"), buf_of(m, "lateral"));
  CHECK(buf_of(m, "p1") != buf_of(m, "coarse"));
  CHECK(buf_of(m, "p3") != buf_of(m, "wide_low"));
  mp_model_destroy(m);
  /* An axis over 2^20 is not checked index by index: the Resize stays. */
  m = load("tests/data/passes/upsample_long.json", P(ABSORB), 0);
  if (!m) return;
  CHECK(op_named(m, "resize") && !attr(op_named(m, "add"), "mplan.prologue"));
  CHECK_STR(attr_s(op_named(m, "add2"), "mplan.prologue"), "Resize:1");
  CHECK(!op_named(m, "resize2"));
  mp_model_destroy(m);
}

/* ---- tile ---------------------------------------------------------------- */

static const mp_attr *attr_of(const mp_op *op, const char *name) {
  for (uint32_t k = 0; k < op->n_attrs; k++) {
    if (strcmp(op->attrs[k].name, name) == 0) return &op->attrs[k];
  }
  return NULL;
}

static int64_t pad_of(const mp_op *op, size_t k) {
  const mp_attr *a = attr_of(op, "pads");
  return a && a->kind == MP_ATTR_INTS && a->n == 4 ? a->ints[k] : 0;
}

/* The ".tiles" Concat of export xop (the op that makes it) writes it
 * whole, with its name and g0's shape, from parts that cover it once
 * along the Concat's axis (H, or W with one band); *xname: its name. */
static void check_export(const mp_model *m, const mp_graph *g0, const char *xop,
                         const char **xname) {
  char name[256];
  snprintf(name, sizeof name, "%s.tiles", xop);
  const mp_op *cat = op_named(m, name);
  CHECK(cat && strcmp(cat->type, "Concat") == 0);
  *xname = NULL;
  if (!cat) return;
  const mp_graph *g = mp_model_graph(m);
  const mp_tensor *x = mp_graph_tensor(g, (size_t)cat->outputs[0]);
  int32_t i0 = -1;
  CHECK(mp_graph_find_tensor(g0, x->name, &i0));
  const mp_tensor *x0 = i0 >= 0 ? mp_graph_tensor(g0, (size_t)i0) : NULL;
  CHECK(x0 && x0->producer >= 0 &&
        strcmp(mp_graph_op(g0, (size_t)x0->producer)->name, xop) == 0);
  for (uint32_t d = 0; x0 && d < 4; d++) {
    CHECK(x->shape[d].value == x0->shape[d].value);
  }
  *xname = x->name;
  const mp_attr *ax = attr_of(cat, "axis");
  int64_t axis = ax && ax->kind == MP_ATTR_INT ? ax->i : -1;
  CHECK(axis == 2 || axis == 3);
  int64_t sum = 0;
  for (uint32_t b = 0; b < cat->n_inputs; b++) {
    const mp_tensor *p = mp_graph_tensor(g, (size_t)cat->inputs[b]);
    CHECK(p->shape[0].value == x->shape[0].value &&
          p->shape[1].value == x->shape[1].value &&
          p->shape[5 - axis].value == x->shape[5 - axis].value &&
          p->shape[axis].value >= 1);
    sum += p->shape[axis].value;
  }
  CHECK(axis >= 2 && sum == x->shape[axis].value);
}

/* The tile pass on a graph: one Concat along H (named after the cut's
 * op, ".tiles") joins the bands, whose rows cover the cut tensor once, in
 * order, each the full width (a band of patches is joined along W first);
 * every copy of an op (".tR" in band R, ".tRxQ" in its column Q) has its
 * original's type, and pads between 0 and the original's (the first band
 * keeps the top pad, the first column the left one; the last keep what
 * their last window reaches of the bottom and right ones); the ops after
 * the cut are the original ones; the bound falls; each export (the ops
 * xops make them) is joined whole too (check_export). Returns the number of
 * bands (0: not tiled). */
static size_t check_tile_x(const char *rel, const char *cut_op,
                           const char *const *xops, size_t nx) {
  mp_model *m0 = load(rel, 0, 0), *m = load(rel, P(TILE), 0);
  size_t bands = 0;
  const char *xnames[4] = {NULL, NULL, NULL, NULL};
  if (!m0 || !m || nx > 4) goto done;
  const mp_graph *g0 = mp_model_graph(m0), *g = mp_model_graph(m);
  for (size_t k = 0; k < nx; k++) check_export(m, g0, xops[k], &xnames[k]);
  char name[256];
  snprintf(name, sizeof name, "%s.tiles", cut_op);
  const mp_op *cat = op_named(m, name);
  CHECK(cat && strcmp(cat->type, "Concat") == 0);
  if (!cat) goto done;
  const mp_attr *ax = attr_of(cat, "axis");
  CHECK(ax && ax->kind == MP_ATTR_INT && ax->i == 2);
  const mp_tensor *t = mp_graph_tensor(g, (size_t)cat->outputs[0]);
  int32_t t0i = -1;
  CHECK(mp_graph_find_tensor(g0, t->name, &t0i));
  const mp_tensor *t0 = t0i >= 0 ? mp_graph_tensor(g0, (size_t)t0i) : NULL;
  CHECK(t0 && t0->shape[2].value == t->shape[2].value && t0->kind == t->kind);
  int64_t rows = 0, h = t->shape[2].value;
  bands = cat->n_inputs;
  for (uint32_t b = 0; b < cat->n_inputs; b++) {
    const mp_tensor *p = mp_graph_tensor(g, (size_t)cat->inputs[b]);
    int64_t lo = h * b / bands, hi = h * (b + 1) / bands;
    CHECK_EQ_U((size_t)p->shape[2].value, (size_t)(hi - lo));
    CHECK(p->shape[1].value == t->shape[1].value &&
          p->shape[3].value == t->shape[3].value);
    rows += p->shape[2].value;
  }
  CHECK_EQ_U((size_t)rows, (size_t)h);
  size_t copies = 0;
  for (size_t o = 0; o < mp_graph_op_count(g); o++) {
    const mp_op *op = mp_graph_op(g, o);
    const char *dot = strstr(op->name, ".t");
    bool joins = strcmp(op->type, "Concat") == 0 &&
                 strncmp(op->name, cut_op, strlen(cut_op)) == 0;
    for (size_t k = 0; k < nx; k++) {
      joins = joins || (strcmp(op->type, "Concat") == 0 &&
                        strncmp(op->name, xops[k], strlen(xops[k])) == 0 &&
                        op->name[strlen(xops[k])] == '.');
    }
    if (!dot || strcmp(op->type, "Slice") == 0 || joins) {
      /* not a copy: an op of the original graph, unchanged */
      if (!dot) {
        const mp_op *orig = NULL;
        int32_t k;
        if (mp_graph_find_op(g0, op->name, &k))
          orig = mp_graph_op(g0, (size_t)k);
        CHECK(orig && strcmp(orig->type, op->type) == 0 &&
              orig->n_inputs == op->n_inputs);
      }
      continue;
    }
    snprintf(name, sizeof name, "%.*s", (int)(dot - op->name), op->name);
    int32_t k = -1;
    CHECK(mp_graph_find_op(g0, name, &k));
    if (k < 0) continue;
    const mp_op *orig = mp_graph_op(g0, (size_t)k);
    CHECK(strcmp(orig->type, op->type) == 0);
    copies++;
    if (!attr_of(orig, "kernel_shape")) continue;
    /* ".tR" (a band) or ".tRxQ" (a patch of band R, column Q) */
    char *end = NULL;
    long b = strtol(dot + 2, &end, 10), q = 0;
    bool cols = end && *end == 'x';
    if (cols) q = strtol(end + 1, NULL, 10);
    for (size_t e = 0; e < 4; e++) {
      CHECK(pad_of(op, e) >= 0 && pad_of(op, e) <= pad_of(orig, e));
    }
    if (b == 0) CHECK(pad_of(op, 0) == pad_of(orig, 0));
    if (q == 0) CHECK(pad_of(op, 1) == pad_of(orig, 1));
  }
  CHECK(copies >= bands);
  const mp_pass_report *r = mp_model_pass_report(m);
  const mp_pass_row *row = mp_pass_report_row(r, 0);
  CHECK(row && row->pass == MP_PASS_TILE && row->lb_after < row->lb_before);
  CHECK(row && strstr(row->detail, "patches ") == row->detail);
  /* the record says the same, and names every op the pass added */
  const mp_tile_info *ti = mp_pass_report_tile(r);
  CHECK(ti && ti->outcome == MP_TILE_KEPT);
  if (!ti || ti->outcome != MP_TILE_KEPT) goto done;
  CHECK_STR(ti->cut, t->name);
  CHECK_STR(ti->cut_op, cut_op);
  CHECK(row && ti->lb_after == row->lb_after &&
        ti->lb_before == row->lb_before);
  CHECK(ti->bands * ti->columns >= 2 && ti->height == h &&
        ti->width == t->shape[3].value && ti->stage_ops >= 1);
  CHECK_EQ_U(ti->bands, ti->columns > 1 ? bands : cat->n_inputs);
  CHECK(ti->candidates >= 1 && ti->graph_macs > 0 && ti->extra_macs >= 0);
  /* the record names the exports, in the order of xops */
  CHECK_EQ_U(ti->n_exports, nx);
  for (size_t x = 0; x < nx && x < ti->n_exports; x++) {
    CHECK(xnames[x] && strcmp(ti->exports[x], xnames[x]) == 0);
  }
  size_t joins = 0, listed = 0;
  for (size_t k = 0; k < ti->n_ops; k++) {
    const mp_tile_op *e = &ti->ops[k];
    int32_t i = -1;
    if (!mp_graph_find_op(g, e->op, &i)) continue; /* fused away */
    const mp_op *op = mp_graph_op(g, (size_t)i);
    listed++;
    CHECK(e->band < (int32_t)ti->bands && e->column < (int32_t)ti->columns);
    if (e->role == MP_TILE_JOIN) {
      joins++;
      CHECK_STR(op->type, "Concat");
      bool mine = strcmp(e->origin, t->name) == 0;
      for (size_t x = 0; x < nx; x++) {
        mine = mine || (xnames[x] && strcmp(e->origin, xnames[x]) == 0);
      }
      CHECK(mine);
    } else if (e->role == MP_TILE_CROP) {
      CHECK_STR(op->type, "Slice");
      CHECK(e->band >= 0 && e->column >= 0);
    } else {
      int32_t k0 = -1;
      CHECK(mp_graph_find_op(g0, e->origin, &k0));
      CHECK(k0 >= 0 &&
            strcmp(mp_graph_op(g0, (size_t)k0)->type, op->type) == 0);
      CHECK(e->band >= 0 && e->column >= 0);
    }
  }
  CHECK_EQ_U(joins,
             (1 + nx) * ((ti->columns > 1 ? ti->bands : 0) + (ti->bands > 1)));
  size_t added = 0; /* every op of g not in g0 is listed */
  for (size_t o = 0; o < mp_graph_op_count(g); o++) {
    int32_t k0;
    added += !mp_graph_find_op(g0, mp_graph_op(g, o)->name, &k0);
  }
  CHECK_EQ_U(listed, added);
done:
  mp_model_destroy(m0);
  mp_model_destroy(m);
  return bands;
}

static size_t check_tile(const char *rel, const char *cut_op) {
  return check_tile_x(rel, cut_op, NULL, 0);
}

/* Channels padded by a ConstantOfShape's zeros (tile.c invariant 4):
 * each patch fills its own crop (a ConstantOfShape of no input and of
 * the crop's shape, one per patch), no Slice reads a fill, the whole
 * fill is gone, and the bound is the floor of any patching joined into
 * the cut tensor: c3 and its parts, each live at the join (with one
 * fill sliced per patch, 64 KiB of zeros stayed live across the patches:
 * 104,576 B in 40 patches). */
static void test_tile_fill(void) {
  CHECK(check_tile("tests/data/passes/tile_pad.json", "pw3") >= 2);
  mp_model *m = load("tests/data/passes/tile_pad.json", P(TILE), 0);
  const mp_graph *g = m ? mp_model_graph(m) : NULL;
  size_t fills = 0, fill_elems = 0, c3 = 0;
  for (size_t o = 0; g && o < mp_graph_op_count(g); o++) {
    const mp_op *op = mp_graph_op(g, o);
    if (strcmp(op->type, "ConstantOfShape") == 0) {
      const mp_tensor *y = mp_graph_tensor(g, (size_t)op->outputs[0]);
      CHECK(op->n_inputs == 0 && strncmp(op->name, "zfill.t", 7) == 0);
      CHECK(y->shape[1].value == 8 && y->shape[2].value < 64);
      fills++;
      fill_elems += (size_t)(y->shape[2].value * y->shape[3].value);
    }
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      int32_t p = mp_graph_tensor(g, (size_t)op->inputs[k])->producer;
      const mp_op *from = p >= 0 ? mp_graph_op(g, (size_t)p) : NULL;
      CHECK(!from || strcmp(from->type, "ConstantOfShape") != 0 ||
            strcmp(op->type, "Concat") == 0);
    }
    if (strcmp(op->name, "pw3.tiles") == 0) {
      c3 = mp_graph_tensor(g, (size_t)op->outputs[0])->bytes;
    }
  }
  int32_t k = -1;
  CHECK(g && !mp_graph_find_op(g, "zfill", &k));
  const mp_tile_info *ti =
      m ? mp_pass_report_tile(mp_model_pass_report(m)) : NULL;
  CHECK(ti && fills == (size_t)ti->bands * ti->columns);
  /* the crops cover the padded map (and its halos) at least once */
  CHECK(fill_elems >= 64 * 32);
  const mp_pass_row *row =
      m ? mp_pass_report_row(mp_model_pass_report(m), 0) : NULL;
  CHECK(row && c3 > 0 && row->lb_after == 2 * c3);
  mp_model_destroy(m);
}

static void test_tile(void) {
  /* a cut whose stage leaves a second tensor to later ops (a skip): its
   * parts are joined too, and it keeps its name and shape */
  static const char *const skip[] = {"pool1"};
  CHECK(check_tile_x("tests/data/passes/tile_skip.json", "project2", skip, 1) >=
        2);
  /* a stem with every kind the pass copies: asymmetric pads, dilation, a
   * depthwise Conv, pooling, a residual Add reading a Slice of its band */
  CHECK(check_tile("tests/data/passes/tile_stem.json", "add3") >= 2);
  mp_model *m = load("tests/data/passes/tile_stem.json", P(TILE), 0);
  size_t crops = 0;
  for (size_t o = 0; m && o < mp_graph_op_count(mp_model_graph(m)); o++) {
    const mp_op *op = mp_graph_op(mp_model_graph(m), o);
    crops +=
        strncmp(op->name, "p1.t", 4) == 0 && strcmp(op->type, "Slice") == 0;
  }
  CHECK(crops >= 1);
  mp_model_destroy(m);
  /* a QDQ stem whose residual Add reads less of a DequantizeLinear's
   * output than the patch holds: no Slice reads an f32 DequantizeLinear
   * output; the Add's part is a copy of that DequantizeLinear reading a
   * Slice of its 8-bit input */
  CHECK(check_tile("tests/data/passes/tile_qdq_skip.json", "q_c3") >= 2);
  m = load("tests/data/passes/tile_qdq_skip.json", P(TILE), 0);
  size_t dq_crops = 0;
  for (size_t o = 0; m && o < mp_graph_op_count(mp_model_graph(m)); o++) {
    const mp_graph *g = mp_model_graph(m);
    const mp_op *op = mp_graph_op(g, o);
    int32_t p = mp_graph_tensor(g, (size_t)op->inputs[0])->producer;
    const mp_op *from = p >= 0 ? mp_graph_op(g, (size_t)p) : NULL;
    if (strcmp(op->type, "Slice") == 0) {
      CHECK(!from || strcmp(from->type, "DequantizeLinear") != 0);
    }
    if (strncmp(op->name, "dq_c1.t", 7) == 0 && strstr(op->name, ".crop")) {
      CHECK_STR(op->type, "DequantizeLinear");
      CHECK(from && strcmp(from->type, "Slice") == 0);
      dq_crops++;
    }
  }
  CHECK(dq_crops >= 1);
  mp_model_destroy(m);
  test_tile_fill();
  /* MobileNetV2: the 112x112 maps go in bands; the bound falls 4x */
  m = load("models/mobilenet_v2.json", P(TILE), 0);
  const mp_pass_row *row =
      m ? mp_pass_report_row(mp_model_pass_report(m), 0) : NULL;
  CHECK(row && row->lb_after * 4 < row->lb_before);
  mp_model_destroy(m);
  CHECK(check_tile("models/mobilenet_v2.json", "b4_project") >= 2);
  /* nothing to tile: the first op pads itself (auto_pad), or pads wider
   * than its window (rows that read no input) */
  static const char *const untileable[] = {"\"auto_pad\":\"SAME_UPPER\"",
                                           "\"pads\":[3,1,3,1]"};
  for (size_t k = 0; k < 2; k++) {
    char path[] = "/tmp/mplan_tile_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f,
            "{\"mplan\":\"graph/1\",\"name\":\"ap\",\"tensors\":["
            "{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[1,2,32,8],"
            "\"kind\":\"input\"},{\"name\":\"w\",\"dtype\":\"f32\","
            "\"shape\":[4,2,3,3],\"kind\":\"weight\"},{\"name\":\"c\","
            "\"dtype\":\"f32\"},{\"name\":\"r\",\"dtype\":\"f32\"},"
            "{\"name\":\"y\",\"dtype\":\"f32\",\"kind\":\"output\"}],"
            "\"ops\":[{\"name\":\"conv\",\"op\":\"Conv\",\"inputs\":"
            "[\"x\",\"w\"],\"outputs\":[\"c\"],\"attrs\":{"
            "\"kernel_shape\":[3,3],%s}},{\"name\":\"relu\",\"op\":"
            "\"Relu\",\"inputs\":[\"c\"],\"outputs\":[\"r\"]},{\"name\":"
            "\"gap\",\"op\":\"GlobalAveragePool\",\"inputs\":[\"r\"],"
            "\"outputs\":[\"y\"]}],\"outputs\":[\"y\"]}",
            untileable[k]);
    fclose(f);
    m = load_with(path, P(TILE), 0, MP_ORDER_AUTO);
    row = m ? mp_pass_report_row(mp_model_pass_report(m), 0) : NULL;
    CHECK(row && row->ops_after == row->ops_before &&
          strcmp(row->detail, "nothing to do") == 0);
    const mp_tile_info *ti =
        m ? mp_pass_report_tile(mp_model_pass_report(m)) : NULL;
    CHECK(ti && ti->outcome == MP_TILE_NO_STAGE && !ti->cut && !ti->n_ops);
    mp_model_destroy(m);
    unlink(path);
  }
  /* a stage whose patches cannot lower the bound: the peak is the
   * MatMul after it */
  m = load("tests/data/passes/tile_late.json", P(TILE), 0);
  const mp_tile_info *ti =
      m ? mp_pass_report_tile(mp_model_pass_report(m)) : NULL;
  CHECK(ti && ti->outcome == MP_TILE_NO_GAIN && ti->cuts >= 1 && !ti->cut &&
        ti->lb_before == ti->lb_after && ti->lb_before >= 4096 * 4);
  mp_model_destroy(m);
  /* without tile in the list there is no record */
  m = load("models/mobilenet_v2.json", MP_PASSES_ALL, 0);
  CHECK(m && mp_model_pass_report(m) &&
        !mp_pass_report_tile(mp_model_pass_report(m)));
  mp_model_destroy(m);
}

/* ---- the whole list ------------------------------------------------------ */

static void test_parse(void) {
  uint32_t mask = 0;
  mp_error err = {0};
  CHECK(mp_passes_parse("all", &mask, &err) == MP_OK && mask == MP_PASSES_ALL);
  CHECK(mp_passes_parse("none", &mask, &err) == MP_OK && mask == 0);
  CHECK(mp_passes_parse("inplace,fold", &mask, &err) == MP_OK &&
        mask == (P(INPLACE) | P(FOLD)));
  CHECK(mp_passes_parse("fold,bogus", &mask, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg,
            "unknown pass 'bogus' (known: fold, eliminate, tile, accumulate, "
            "attention, fuse");
  CHECK(mp_passes_parse("fold,fold", &mask, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "pass 'fold' is listed twice");
  CHECK(mp_passes_parse("", &mask, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "an empty pass name");
  /* "all" leaves tile out (it recomputes rows); "all,tile" adds it */
  CHECK(!(MP_PASSES_ALL & P(TILE)) && (MP_PASSES_ALL & P(INPLACE)));
  CHECK(mp_passes_parse("all,tile", &mask, &err) == MP_OK &&
        mask == (MP_PASSES_ALL | P(TILE)));
  CHECK(mp_passes_parse("tile,all", &mask, &err) == MP_OK &&
        mask == (MP_PASSES_ALL | P(TILE)));
  CHECK(mp_passes_parse("all,fold", &mask, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "pass 'fold' is listed twice ('all' holds it)");
  CHECK(mp_passes_parse("fold,all", &mask, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "'all' and a pass it holds are both listed");
  CHECK(mp_passes_parse("all,", &mask, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "an empty pass name");
  CHECK(mp_passes_parse("fold,,views", &mask, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "an empty pass name");
  CHECK(mp_passes_parse("concat,none", &mask, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "'none' stands alone");
  CHECK(mp_passes_parse("views,concat", &mask, &err) == MP_OK &&
        mask == (P(VIEWS) | P(CONCAT)));
}

/* Every pass, then the memory order: rows chain (a row's after is the
 * next row's before), and the plan matches the last row. */
static void test_all(void) {
  mp_model *m = NULL;
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", root, ops_onnx);
  m = load_with(path, MP_PASSES_ALL, 0, MP_ORDER_MEMORY);
  if (!m) return;
  const mp_pass_report *r = mp_model_pass_report(m);
  /* all but tile, and fuse again after absorb, which gives ops.onnx.bin's
   * MatMul a DequantizeLinear prologue (manager.c invariant 12) */
  CHECK_EQ_U(mp_pass_report_rows(r), MP_PASS_COUNT);
  for (size_t i = 1; i < mp_pass_report_rows(r); i++) {
    if (mp_pass_report_row(r, i - 1)->pass == MP_PASS_ABSORB) {
      CHECK(mp_pass_report_row(r, i)->pass == MP_PASS_FUSE);
    }
  }
  for (size_t i = 1; i < mp_pass_report_rows(r); i++) {
    const mp_pass_row *a = mp_pass_report_row(r, i - 1);
    const mp_pass_row *b = mp_pass_report_row(r, i);
    CHECK(a->ops_after == b->ops_before && a->lb_after == b->lb_before &&
          a->buffers_after == b->buffers_before);
  }
  const mp_pass_row *last = mp_pass_report_row(r, mp_pass_report_rows(r) - 1);
  mp_profile prof;
  mp_error err = {0};
  CHECK(mp_problem_profile(mp_model_problem(m), &prof, &err) == MP_OK);
  CHECK_EQ_U(prof.peak, last->lb_after);
  CHECK_EQ_U(mp_graph_op_count(mp_model_graph(m)), last->ops_after);
  CHECK_EQ_U(mp_problem_count(mp_model_problem(m)), last->buffers_after);
  CHECK_STR(mp_model_order_name(m), "memory");
  CHECK(mp_model_schedule_info(m)->peak == prof.peak);
  mp_profile_release(&prof);
  mp_model_destroy(m);
}

/* ---- property: random graphs, random passes ------------------------------ */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
  return (uint32_t)((rng_state >> 33) % n);
}

/* Every fifth op of a random graph (from the second) is a channel
 * Concat of two earlier tensors into c<o> [1,8,4,4] and a 1x1 Conv back
 * to 4 channels: work for the concat pass. */
static bool rnd_is_cat(uint64_t seed, size_t o) {
  return o > 0 && (seed + o) % 5 == 0;
}

/* A random graph JSON of elementwise ops, views, convs, matmuls and
 * Concats over [1, C, 4, 4] f32 tensors, written to path. */
static bool rnd_graph_file(const char *path, uint64_t seed) {
  static const char *const types[] = {"Relu",    "Add",     "Conv", "Mul",
                                      "Sigmoid", "Reshape", "Conv", "Clip"};
  FILE *f = fopen(path, "w");
  if (!f) return false;
  rng_state = seed;
  size_t n_ops = 3 + rnd(12), n_t = 1;
  fprintf(f, "{\"mplan\":\"graph/1\",\"name\":\"r%llu\",\"tensors\":[",
          (unsigned long long)seed);
  fprintf(f,
          "{\"name\":\"t0\",\"dtype\":\"f32\",\"shape\":[1,4,4,4],"
          "\"kind\":\"input\",\"layout\":\"NCHW\"},");
  fprintf(f,
          "{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[4,4,1,1],"
          "\"kind\":\"weight\"},");
  fprintf(f,
          "{\"name\":\"dw\",\"dtype\":\"f32\",\"shape\":[4,1,3,3],"
          "\"kind\":\"weight\"},");
  fprintf(f,
          "{\"name\":\"b\",\"dtype\":\"f32\",\"shape\":[4],"
          "\"kind\":\"weight\"},");
  fprintf(f,
          "{\"name\":\"wc\",\"dtype\":\"f32\",\"shape\":[4,8,1,1],"
          "\"kind\":\"weight\"}");
  for (size_t o = 0; o < n_ops; o++) {
    if (rnd_is_cat(seed, o)) {
      fprintf(f,
              ",{\"name\":\"c%zu\",\"dtype\":\"f32\",\"shape\":[1,8,4,4],"
              "\"layout\":\"NCHW\"}",
              o);
    }
    fprintf(f,
            ",{\"name\":\"t%zu\",\"dtype\":\"f32\",\"shape\":[1,4,4,4],"
            "\"layout\":\"NCHW\"%s}",
            o + 1, o + 1 == n_ops ? ",\"kind\":\"output\"" : "");
  }
  fprintf(f, "],\"ops\":[");
  for (size_t o = 0; o < n_ops; o++, n_t++) {
    const char *type = types[rnd(8)];
    size_t a = n_t - 1 - rnd(n_t < 3 ? (uint32_t)n_t : 3);
    size_t b2 = n_t - 1 - rnd(n_t < 4 ? (uint32_t)n_t : 4);
    if (rnd_is_cat(seed, o)) {
      if (b2 == a) b2 = a ? a - 1 : a + 1;
      fprintf(f,
              ",{\"name\":\"cat%zu\",\"op\":\"Concat\",\"inputs\":"
              "[\"t%zu\",\"t%zu\"],\"outputs\":[\"c%zu\"],\"attrs\":"
              "{\"axis\":1}},{\"name\":\"op%zu\",\"op\":\"Conv\","
              "\"inputs\":[\"c%zu\",\"wc\"],\"outputs\":[\"t%zu\"]}",
              o, a, b2, o, o, o, o + 1);
      continue;
    }
    fprintf(f, "%s{\"name\":\"op%zu\",\"op\":\"%s\",\"inputs\":[\"t%zu\"",
            o ? "," : "", o, type, a);
    if (!strcmp(type, "Add") || !strcmp(type, "Mul")) {
      fprintf(f, ",\"t%zu\"", b2);
    } else if (!strcmp(type, "Conv") && rnd(2)) {
      fprintf(f,
              ",\"dw\",\"b\"],\"outputs\":[\"t%zu\"],\"attrs\":{"
              "\"group\":4,\"pads\":[1,1,1,1],\"kernel_shape\":[3,3]}}",
              o + 1);
      continue;
    } else if (!strcmp(type, "Conv")) {
      fprintf(f, ",\"w\"");
    }
    fprintf(f, "],\"outputs\":[\"t%zu\"]", o + 1);
    if (!strcmp(type, "Clip")) fprintf(f, ",\"attrs\":{\"min\":0,\"max\":6}");
    fprintf(f, "}");
  }
  fprintf(f, "],\"outputs\":[\"t%zu\"]}\n", n_ops);
  return fclose(f) == 0;
}

/* No tensor is read after an op wrote over its bytes: for every tensor
 * written in place by op w, every tensor of the same buffer written
 * before w is last read at w's step or earlier (what poison mode checks
 * at run time, here on the schedule). */
static bool no_read_after_overwrite(const mp_model *m,
                                    const uint32_t *step_of) {
  const mp_graph *g = mp_model_graph(m);
  for (size_t y = 0; y < mp_graph_tensor_count(g); y++) {
    mp_alias_rule r = mp_model_tensor_rule(m, y);
    /* A Concat slice is placed, not written over anything: its bytes
     * belong to no other slice (disjoint ranges, checked below for the
     * in-place writes into a slice). */
    if (r == MP_ALIAS_OWN || r == MP_ALIAS_VIEW || r == MP_ALIAS_CONCAT) {
      continue;
    }
    uint32_t w = step_of[mp_graph_tensor(g, y)->producer];
    const uint32_t *members;
    size_t n =
        mp_model_buffer_tensors(m, mp_model_tensor_buffer(m, y), &members);
    uint64_t y0 = mp_model_tensor_offset(m, y);
    uint64_t y1 = y0 + mp_graph_tensor(g, y)->bytes;
    for (size_t k = 0; k < n; k++) {
      const mp_tensor *x = mp_graph_tensor(g, members[k]);
      uint64_t x0 = mp_model_tensor_offset(m, members[k]);
      if (x->producer >= 0 && step_of[x->producer] >= w) continue;
      if (x0 >= y1 || x0 + x->bytes <= y0) continue; /* other slice */
      for (uint32_t c = 0; c < x->n_consumers; c++) {
        if (step_of[x->consumers[c]] > w) {
          fprintf(stderr,
                  "'%s' is read at step %u after '%s' wrote over it "
                  "at step %u\n",
                  x->name, step_of[x->consumers[c]],
                  mp_graph_tensor(g, y)->name, w);
          return false;
        }
      }
    }
  }
  return true;
}

static void test_property(void) {
  char path[] = "/tmp/mplan_rnd_XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  size_t shared = 0, fused = 0, slices = 0, moved = 0;
  for (uint64_t seed = 1; seed <= 200; seed++) {
    if (!rnd_graph_file(path, seed)) {
      CHECK(!"cannot write a random graph");
      break;
    }
    uint32_t mask =
        (uint32_t)(seed * 2654435761u) & ((1u << MP_PASS_COUNT) - 1);
    mp_order_kind order = seed % 3 == 0 ? MP_ORDER_MEMORY : MP_ORDER_AUTO;
    mp_model *m = load_with(path, mask, seed % 2 ? 128 : 0, order);
    if (!m) {
      fprintf(stderr, "seed %llu mask %u\n", (unsigned long long)seed, mask);
      continue;
    }
    const mp_graph *g = mp_model_graph(m);
    const mp_problem *p = mp_model_problem(m);
    /* Every tensor's own lifetime lies inside its buffer's. */
    uint32_t *step_of = calloc(mp_graph_op_count(g) + 1, sizeof *step_of);
    for (size_t k = 0; step_of && k < mp_model_steps(m); k++) {
      step_of[mp_model_step_op_index(m, k)] = (uint32_t)k;
    }
    bool ok = step_of != NULL;
    for (size_t t = 0; ok && t < mp_graph_tensor_count(g); t++) {
      const mp_tensor *x = mp_graph_tensor(g, t);
      const mp_buffer *b = mp_problem_buffer(p, mp_model_tensor_buffer(m, t));
      if (b->cls != MP_CLASS_ACTIVATION) continue;
      if (x->producer >= 0 && step_of[x->producer] < b->first) ok = false;
      for (uint32_t c = 0; c < x->n_consumers; c++) {
        if (step_of[x->consumers[c]] > b->last) ok = false;
      }
      if (mp_model_tensor_offset(m, t) + x->bytes > b->size) ok = false;
    }
    if (!ok)
      fprintf(stderr, "seed %llu: a tensor outlives its buffer\n",
              (unsigned long long)seed);
    CHECK(ok);
    if (step_of && !no_read_after_overwrite(m, step_of)) {
      fprintf(stderr, "seed %llu mask %u\n", (unsigned long long)seed, mask);
      CHECK(!"a tensor is read after it was overwritten");
    }
    for (size_t t = 0; t < mp_graph_tensor_count(g); t++) {
      slices += mp_model_tensor_rule(m, t) == MP_ALIAS_CONCAT;
    }
    if (!(mask & (P(VIEWS) | P(CONCAT) | P(INPLACE)))) {
      CHECK_EQ_U(mp_problem_count(p), mp_graph_tensor_count(g));
    }
    const mp_pass_row *ip = row_of(m, MP_PASS_INPLACE);
    const mp_pass_row *cc = row_of(m, MP_PASS_CONCAT);
    moved += (ip && strstr(ip->detail, "into a Concat slice")) ||
             (cc && strstr(cc->detail, "into a Concat slice"));
    shared += mp_problem_count(p) < mp_graph_tensor_count(g);
    fused += mp_model_pass_report(m) &&
             mp_pass_report_fusions(mp_model_pass_report(m)) > 0;
    free(step_of);
    mp_model_destroy(m);
  }
  remove(path);
  fprintf(stderr,
          "property: %zu plans with shared buffers, %zu with fusions, %zu "
          "Concat slices, %zu with inputs moved into a slice\n",
          shared, fused, slices, moved);
  CHECK(shared > 20 && fused > 20 && slices > 20 && moved > 5);
}

int main(int argc, char **argv) {
  snprintf(root, sizeof root, "%s", argc > 1 ? argv[1] : ".");
  test_parse();
  test_fuse();
  test_fuse_diamond();
  test_inplace_row();
  test_inplace_row_rope();
  test_inplace_kv_scatter();
  test_attention();
  test_fuse_cap();
  test_fuse_resnet();
  test_inplace();
  test_inplace_slice();
  test_inplace_epilogue();
  test_views();
  test_fold();
  test_eliminate();
  test_hfuse();
  test_absorb();
  test_absorb_resize();
  test_tile();
  test_all();
  test_property();
  return check_exit("test_passes");
}
