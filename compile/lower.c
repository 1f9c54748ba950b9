/*
 * lower.c -- lowering graph ops (ONNX types and attributes, and the fused
 * forms of docs/ir-conventions.md) to bundle ops: a kernel id, the input
 * list, and the kernel's parameters (layouts in mplan/bundle.h).
 *
 * Invariants:
 *   1. Everything shape-like that ONNX passes as a tensor (Slice starts,
 *      Pad pads, Resize scales, Reduce axes, Clip bounds aside) must be a
 *      constant known at compile time; it becomes a parameter, so the
 *      loader can check shapes before anything runs.
 *   2. An op or a variant the runtime lacks is MP_ERR_UNSUPPORTED naming
 *      the op and the variant; nothing is approximated silently.
 *   3. Fused heads get their own inputs padded to the head's full arity
 *      (an omitted bias is an explicit "none"), so that the runtime finds
 *      the epilogue's and the prologue's inputs by position.
 */
#include "lower.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lw {
  const mp_graph *g;
  const mp_op *op;
  lw_op *o;
  mp_error *err;
  bool overflow;
} lw;

int lw_kdtype(mp_dtype d) {
  switch (d) {
    case MP_DTYPE_F32:
      return MP_KD_F32;
    case MP_DTYPE_F64:
      return MP_KD_F64;
    case MP_DTYPE_I8:
      return MP_KD_I8;
    case MP_DTYPE_U8:
      return MP_KD_U8;
    case MP_DTYPE_I16:
      return MP_KD_I16;
    case MP_DTYPE_U16:
      return MP_KD_U16;
    case MP_DTYPE_I32:
      return MP_KD_I32;
    case MP_DTYPE_U32:
      return MP_KD_U32;
    case MP_DTYPE_I64:
      return MP_KD_I64;
    case MP_DTYPE_U64:
      return MP_KD_U64;
    case MP_DTYPE_BOOL:
      return MP_KD_BOOL;
    case MP_DTYPE_F16:
      return MP_KD_F16;
    case MP_DTYPE_BF16:
      return MP_KD_BF16;
    case MP_DTYPE_I4:
      return MP_KD_I4;
    case MP_DTYPE_U4:
      return MP_KD_U4;
    default:
      return 0;
  }
}

/* Floating dtypes: f32, f64, f16, bf16 (fills write them as doubles). */
static bool lw_is_float(mp_dtype d) {
  return mp_kd_is_float(lw_kdtype(d));
}

int lw_shift(int64_t k) {
  int bits = 0;
  while (bits < 62 && ((int64_t)1 << bits) < k) bits++;
  int s = 5 + (bits + 1) / 2;
  return s > 31 ? 31 : s;
}

static mp_status lw_unsup(lw *x, const char *fmt, ...) MP_PRINTF(2, 3);

static mp_status lw_unsup(lw *x, const char *fmt, ...) {
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mp_error_set(x->err, MP_ERR_UNSUPPORTED, "%s: op '%s' (%s): %s",
                      mp_graph_source(x->g), x->op->name, x->op->type, msg);
}

static void lw_p(lw *x, int64_t v) {
  if (x->o->n_params == LW_MAX_PARAMS) {
    x->overflow = true;
    return;
  }
  x->o->params[x->o->n_params++] = v;
}

static void lw_pf(lw *x, double v) {
  int64_t i;
  memcpy(&i, &v, sizeof i);
  lw_p(x, i);
}

static void lw_in(lw *x, int32_t t) {
  if (x->o->n_in == LW_MAX_INPUTS) {
    x->overflow = true;
    return;
  }
  x->o->in[x->o->n_in++] = t;
}

static const mp_attr *lw_attr(const lw *x, const char *name) {
  return mp_op_attr(x->op, name);
}

static int64_t lw_int(const lw *x, const char *name, int64_t def) {
  const mp_attr *a = lw_attr(x, name);
  return a && a->kind == MP_ATTR_INT ? a->i : def;
}

static double lw_float(const lw *x, const char *name, double def) {
  const mp_attr *a = lw_attr(x, name);
  if (!a) return def;
  return a->kind == MP_ATTR_FLOAT ? a->f
         : a->kind == MP_ATTR_INT ? (double)a->i
                                  : def;
}

static const char *lw_str(const lw *x, const char *name, const char *def) {
  const mp_attr *a = lw_attr(x, name);
  return a && a->kind == MP_ATTR_STRING ? a->s : def;
}

/* An INTS attribute into out (at most max); -1 when absent. */
static int lw_ints(const lw *x, const char *name, int64_t *out, int max) {
  const mp_attr *a = lw_attr(x, name);
  if (!a || a->kind != MP_ATTR_INTS || a->n > (size_t)max) return -1;
  for (size_t i = 0; i < a->n; i++) out[i] = a->ints[i];
  return (int)a->n;
}

/* A FLOATS attribute into out (at most max); -1 when absent. */
static int lw_floats(const lw *x, const char *name, double *out, int max) {
  const mp_attr *a = lw_attr(x, name);
  if (!a || a->kind != MP_ATTR_FLOATS || a->n > (size_t)max) return -1;
  for (size_t i = 0; i < a->n; i++) out[i] = a->floats[i];
  return (int)a->n;
}

static const mp_tensor *lw_t(const lw *x, uint32_t k) {
  if (k >= x->op->n_inputs || x->op->inputs[k] < 0) return NULL;
  return mp_graph_tensor(x->g, (size_t)x->op->inputs[k]);
}

static const mp_tensor *lw_out(const lw *x, uint32_t k) {
  return mp_graph_tensor(x->g, (size_t)x->op->outputs[k]);
}

static int64_t lw_dim(const lw *x, const mp_tensor *t, uint32_t i) {
  return mp_graph_dim_of(x->g, &t->shape[i]);
}

/* The constant integer values of input k (invariant 1); -1 when unknown. */
static int lw_const_ints(const lw *x, uint32_t k, int64_t *out, int max) {
  const mp_tensor *t = lw_t(x, k);
  if (!t || !t->value || t->value->n > (size_t)max) return -1;
  for (size_t i = 0; i < t->value->n; i++) {
    out[i] = t->value->i ? t->value->i[i] : mp_f64_to_i64(t->value->f[i]);
  }
  return (int)t->value->n;
}

static int lw_const_floats(const lw *x, uint32_t k, double *out, int max) {
  const mp_tensor *t = lw_t(x, k);
  if (!t || !t->value || t->value->n > (size_t)max) return -1;
  for (size_t i = 0; i < t->value->n; i++) {
    out[i] = t->value->f ? t->value->f[i] : (double)t->value->i[i];
  }
  return (int)t->value->n;
}

static void lw_copy_inputs(lw *x) {
  for (uint32_t k = 0; k < x->op->n_inputs; k++) lw_in(x, x->op->inputs[k]);
}

static int64_t lw_axis(int64_t a, uint32_t rank) {
  return a < 0 ? a + (int64_t)rank : a;
}

/* axes[0..n) of an attribute or input resolved in place to [0, rank); an
 * error names the first that is out of range. */
static mp_status lw_axes(lw *x, int64_t *axes, int n, uint32_t rank) {
  for (int k = 0; k < n; k++) {
    int64_t a = lw_axis(axes[k], rank);
    if (a < 0 || a >= (int64_t)rank) {
      return lw_unsup(x, "axis %lld", (long long)axes[k]);
    }
    axes[k] = a;
  }
  return MP_OK;
}

/* ---- unary and binary tables ----------------------------------------------
 */

typedef struct lw_name {
  const char *type;
  int code;
} lw_name;

static const lw_name lw_unary[] = {{"Relu", MP_KU_RELU},
                                   {"Sigmoid", MP_KU_SIGMOID},
                                   {"Tanh", MP_KU_TANH},
                                   {"Exp", MP_KU_EXP},
                                   {"Sqrt", MP_KU_SQRT},
                                   {"Erf", MP_KU_ERF},
                                   {"Gelu", MP_KU_GELU},
                                   {"HardSigmoid", MP_KU_HARDSIGMOID},
                                   {"HardSwish", MP_KU_HARDSWISH},
                                   {"LeakyRelu", MP_KU_LEAKYRELU},
                                   {"Clip", MP_KU_CLIP},
                                   {"Neg", MP_KU_NEG},
                                   {"Abs", MP_KU_ABS},
                                   {"Floor", MP_KU_FLOOR},
                                   {"Ceil", MP_KU_CEIL},
                                   {"Reciprocal", MP_KU_RECIPROCAL},
                                   {"Log", MP_KU_LOG},
                                   {"Sin", MP_KU_SIN},
                                   {"Cos", MP_KU_COS},
                                   {"Tan", MP_KU_TAN},
                                   {"Asin", MP_KU_ASIN},
                                   {"Acos", MP_KU_ACOS},
                                   {"Atan", MP_KU_ATAN},
                                   {"Sinh", MP_KU_SINH},
                                   {"Cosh", MP_KU_COSH},
                                   {"Asinh", MP_KU_ASINH},
                                   {"Acosh", MP_KU_ACOSH},
                                   {"Atanh", MP_KU_ATANH},
                                   {"Elu", MP_KU_ELU},
                                   {"Selu", MP_KU_SELU},
                                   {"Softplus", MP_KU_SOFTPLUS},
                                   {"Softsign", MP_KU_SOFTSIGN},
                                   {"Not", MP_KU_NOT},
                                   {"Sign", MP_KU_SIGN},
                                   {"Round", MP_KU_ROUND},
                                   {"ThresholdedRelu", MP_KU_THRESHOLDEDRELU},
                                   {"Celu", MP_KU_CELU},
                                   {"Shrink", MP_KU_SHRINK},
                                   {"Mish", MP_KU_MISH},
                                   {"BitwiseNot", MP_KU_BITNOT},
                                   {"Swish", MP_KU_SWISH},
                                   {NULL, 0}};

static const lw_name lw_binary[] = {{"Add", MP_KB_ADD},
                                    {"Sub", MP_KB_SUB},
                                    {"Mul", MP_KB_MUL},
                                    {"Div", MP_KB_DIV},
                                    {"Pow", MP_KB_POW},
                                    {"PRelu", MP_KB_PRELU},
                                    {"Equal", MP_KB_EQUAL},
                                    {"Less", MP_KB_LESS},
                                    {"LessOrEqual", MP_KB_LESS_EQUAL},
                                    {"Greater", MP_KB_GREATER},
                                    {"GreaterOrEqual", MP_KB_GREATER_EQUAL},
                                    {"And", MP_KB_AND},
                                    {"Or", MP_KB_OR},
                                    {"Xor", MP_KB_XOR},
                                    {"Mod", MP_KB_MOD},
                                    {"BitShift", MP_KB_SHL},
                                    {"BitwiseAnd", MP_KB_BITAND},
                                    {"BitwiseOr", MP_KB_BITOR},
                                    {"BitwiseXor", MP_KB_BITXOR},
                                    {NULL, 0}};

static int lw_find(const lw_name *t, const char *type) {
  for (; t->type; t++) {
    if (strcmp(t->type, type) == 0) return t->code;
  }
  return -1;
}

/* alpha and beta of a unary op from the attributes read through get(name,
 * default) with the given prefix ("" or "mplan.e<k>."). */
static void lw_unary_params(const lw *x, int u, const char *pre, double *alpha,
                            double *beta) {
  char a[64], b[64];
  snprintf(a, sizeof a, "%salpha", pre);
  snprintf(b, sizeof b, "%sbeta", pre);
  *alpha = *beta = 0;
  switch (u) {
    case MP_KU_HARDSIGMOID:
      *alpha = lw_float(x, a, 0.2);
      *beta = lw_float(x, b, 0.5);
      break;
    case MP_KU_LEAKYRELU:
      *alpha = lw_float(x, a, 0.01);
      break;
    case MP_KU_ELU:
    case MP_KU_THRESHOLDEDRELU:
    case MP_KU_CELU:
    case MP_KU_SWISH:
      *alpha = lw_float(x, a, 1.0);
      break;
    case MP_KU_SHRINK: {
      char l[64], bi[64];
      snprintf(l, sizeof l, "%slambd", pre);
      snprintf(bi, sizeof bi, "%sbias", pre);
      *alpha = lw_float(x, l, 0.5);
      *beta = lw_float(x, bi, 0.0);
      break;
    }
    case MP_KU_SELU: {
      char gname[64];
      snprintf(gname, sizeof gname, "%sgamma", pre);
      *alpha = lw_float(x, a, 1.67326319217681884765625);
      *beta = lw_float(x, gname, 1.05070102214813232421875);
      break;
    }
    case MP_KU_CLIP: {
      char lo[64], hi[64];
      snprintf(lo, sizeof lo, "%smin", pre);
      snprintf(hi, sizeof hi, "%smax", pre);
      *alpha = lw_float(x, lo, -INFINITY);
      *beta = lw_float(x, hi, INFINITY);
      break;
    }
    default:
      break;
  }
}

/* ---- the fused head tail
 * ----------------------------------------------------- */

/* Appends the prologue and the epilogue (docs/ir-conventions.md) and the
 * head's inputs; full is the head's full own arity (invariant 3). */
bool lw_qoperand(const char *type, int *op) {
  static const char suffix[] = "(DequantizeLinear)";
  size_t n = strlen(type), sn = sizeof suffix - 1;
  if (n <= sn || strcmp(type + n - sn, suffix) != 0) return false;
  char name[16];
  if (n - sn >= sizeof name) return false;
  memcpy(name, type, n - sn);
  name[n - sn] = '\0';
  int k = lw_find(lw_binary, name);
  if (k < 0 || k >= MP_KB_EQUAL || k == MP_KB_PRELU) return false;
  if (op) *op = k;
  return true;
}

int lw_epilogue_inputs(const char *type) {
  const char *at = strchr(type, '@');
  if (at) {
    /* Add@j / Mul@j: the operand is the value that entered entry j */
    char op[16];
    size_t n = (size_t)(at - type);
    if (n >= sizeof op) return -2;
    memcpy(op, type, n);
    op[n] = '\0';
    if (strcmp(op, "Add") && strcmp(op, "Mul")) return -2;
    const char *d = at + 1;
    if (*d < '0' || *d > '9') return -2;
    while (*d >= '0' && *d <= '9') d++;
    return *d ? -2 : 0;
  }
  if (lw_qoperand(type, NULL)) return 3; /* operand, scale, zero point */
  if (strcmp(type, "Clip") == 0) return -1;
  if (strcmp(type, "BatchNormalization") == 0) return 4;
  if (strcmp(type, "QuantizeLinear") == 0) return 2; /* scale, zero point */
  if (strcmp(type, "DequantizeLinear") == 0) return 2;
  if (lw_find(lw_binary, type) >= 0) return 1;
  if (lw_find(lw_unary, type) >= 0 || strcmp(type, "Relu6") == 0) return 0;
  return -2;
}

bool lw_clip_attrs(const mp_op *op, int k) {
  char lo[48], hi[48];
  snprintf(lo, sizeof lo, "mplan.e%d.min", k);
  snprintf(hi, sizeof hi, "mplan.e%d.max", k);
  return mp_op_attr(op, lo) || mp_op_attr(op, hi);
}

static mp_status lw_tail(lw *x, uint32_t full) {
  const char *epi = lw_str(x, "mplan.epilogue", NULL);
  const char *fa = lw_str(x, "fused_activation", NULL);
  const char *pro = lw_str(x, "mplan.prologue", NULL);
  char list[2048] = "";
  if (fa) {
    if (strcmp(fa, "Relu") && strcmp(fa, "Relu6")) {
      return lw_unsup(x, "fused_activation '%s' (Relu and Relu6 are known)",
                      fa);
    }
    snprintf(list, sizeof list, "%s",
             strcmp(fa, "Relu") == 0 ? "Relu" : "Relu6");
  }
  if (epi && *epi) {
    size_t n = strlen(list);
    snprintf(list + n, sizeof list - n, "%s%s", n ? "," : "", epi);
  }
  /* Split the list and count the fixed extra inputs. */
  char *names[64];
  int n_epi = 0;
  for (char *p = list; *p && n_epi < 64;) {
    names[n_epi++] = p;
    char *c = strchr(p, ',');
    if (!c) break;
    *c = '\0';
    p = c + 1;
  }
  if (n_epi == 64) return lw_unsup(x, "an epilogue of 64 or more ops");
  uint32_t fixed = 0, clips = 0;
  /* the prologue entries (at most two, on distinct inputs); a
   * DequantizeLinear's scale and zero point follow everything else, in
   * the entries' order; the last one's zero point may be omitted */
  mp_prologue pe[2];
  uint32_t n_dq = 0, pro_n = 0;
  int n_pro = pro ? mp_op_prologues(x->op, pe, &n_dq) : 0;
  int pro_kind[2] = {0, 0};
  if (n_pro < 0) {
    return lw_unsup(x, "mplan.prologue '%s' is not a list of <kind>:<input>",
                    pro);
  }
  for (int j = 0; j < n_pro; j++) {
    if (strcmp(pe[j].kind, "DequantizeLinear") == 0) {
      /* blocked (mplan.p.block, absorb rule 3, on input 1): kind 3 */
      pro_kind[j] =
          pe[j].input == 1 && lw_int(x, "mplan.p.block", 0) > 0 ? 3 : 1;
    } else if (strcmp(pe[j].kind, "Cast") == 0) {
      pro_kind[j] = 2;
    } else {
      return lw_unsup(x, "mplan.prologue '%s'", pro);
    }
  }
  int fa_n = fa ? 1 : 0;
  for (int k = 0; k < n_epi; k++) {
    int extra = lw_epilogue_inputs(names[k]);
    if (extra == -1 && k >= fa_n && lw_clip_attrs(x->op, k - fa_n)) extra = 0;
    if (extra == -2) {
      return lw_unsup(x,
                      "epilogue op '%s' is not an elementwise op the "
                      "runtime knows",
                      names[k]);
    }
    if (extra == -1) clips++;
    if (extra > 0) fixed += (uint32_t)extra;
    const char *tap = strchr(names[k], '@');
    if (tap && atoi(tap + 1) > k - (fa ? 1 : 0)) {
      return lw_unsup(x, "epilogue entry '%s' taps a later entry", names[k]);
    }
  }
  uint32_t n = x->op->n_inputs, own = full;
  if (n_dq) {
    pro_n = n >= full + fixed + 2 * n_dq ? 2 * n_dq : 2 * n_dq - 1;
    if (n < fixed + pro_n + (full < 2 ? 1 : 2)) {
      return lw_unsup(x, "too few inputs");
    }
  }
  int64_t rest = (int64_t)n - fixed - pro_n;
  uint32_t clip_in = 0;
  if (rest > full) {
    if (clips != 1 || rest - full > 2) {
      return lw_unsup(x, "%u inputs do not match the head and its epilogue", n);
    }
    clip_in = (uint32_t)(rest - full);
  } else {
    if (rest < (full < 2 ? 1 : 2)) {
      return lw_unsup(x, "too few inputs for the head");
    }
    own = (uint32_t)rest;
  }
  for (int j = 0; j < n_pro; j++) {
    if (pe[j].input >= own || pe[j].input > 1) {
      return lw_unsup(x, "prologue input %u is not a product operand",
                      pe[j].input);
    }
  }
  for (uint32_t k = 0; k < full; k++) lw_in(x, k < own ? x->op->inputs[k] : -1);
  lw_p(x, n_pro);
  for (int j = 0; j < n_pro; j++) {
    lw_p(x, pro_kind[j]);
    lw_p(x, pe[j].input);
    lw_p(x, pe[j].input == 1 ? lw_int(x, "mplan.p.axis", 1) : 1);
    if (pro_kind[j] == 3) lw_p(x, lw_int(x, "mplan.p.block", 0));
  }
  lw_p(x, n_epi);
  uint32_t at = own;
  for (int k = 0; k < n_epi; k++) {
    const char *t = names[k];
    char pre[32];
    snprintf(pre, sizeof pre, "mplan.e%d.", k - (fa ? 1 : 0));
    double alpha = 0, beta = 0;
    uint32_t extra = 0;
    int code;
    if (strcmp(t, "Relu6") == 0) {
      code = MP_BEPI_UNARY | MP_KU_CLIP;
      alpha = 0;
      beta = 6;
    } else if (strcmp(t, "BatchNormalization") == 0) {
      code = MP_BEPI_BATCHNORM;
      extra = 4;
      char e[48];
      snprintf(e, sizeof e, "%sepsilon", pre);
      alpha = lw_float(x, e, 1e-5);
    } else if (strcmp(t, "QuantizeLinear") == 0) {
      code = MP_BEPI_QUANTIZE; /* the last entry, or before a DQ one */
      extra = 2;
    } else if (strcmp(t, "DequantizeLinear") == 0) {
      /* after a QuantizeLinear entry: the 8-bit type between them is
       * either zero point's, else uint8 (ONNX's default) */
      int32_t qz = k > 0 && strcmp(names[k - 1], "QuantizeLinear") == 0
                       ? x->op->inputs[at - 1]
                       : -2;
      int32_t dz = x->op->inputs[at + 1];
      if (qz == -2) {
        return lw_unsup(x,
                        "epilogue DequantizeLinear entry %d does not "
                        "follow a QuantizeLinear entry",
                        k);
      }
      int kq = qz >= 0 ? lw_kdtype(mp_graph_tensor(x->g, (size_t)qz)->dtype)
                       : MP_KD_U8;
      int kz =
          dz >= 0 ? lw_kdtype(mp_graph_tensor(x->g, (size_t)dz)->dtype) : kq;
      if (qz < 0 && dz >= 0) kq = kz;
      if (kq != kz || (kq != MP_KD_I8 && kq != MP_KD_U8)) {
        return lw_unsup(x,
                        "epilogue QuantizeLinear and DequantizeLinear "
                        "entries %d and %d: zero points of two types, "
                        "or not 8-bit",
                        k - 1, k);
      }
      code = MP_BEPI_DEQUANTIZE | kq;
      extra = 2;
    } else if (lw_qoperand(t, &code)) {
      code |= MP_BEPI_BINARY; /* its operand widened by a DequantizeLinear */
      extra = 3;
    } else if (strchr(t, '@')) {
      /* the entry index in the bundle counts a fused_activation entry */
      char op[16];
      snprintf(op, sizeof op, "%.*s", (int)(strchr(t, '@') - t), t);
      code = MP_BEPI_TAP | lw_find(lw_binary, op);
      alpha = atoi(strchr(t, '@') + 1) + (fa ? 1 : 0);
    } else if (lw_find(lw_binary, t) >= 0) {
      code = MP_BEPI_BINARY | lw_find(lw_binary, t);
      extra = 1;
    } else {
      int u = lw_find(lw_unary, t);
      code = MP_BEPI_UNARY | u;
      lw_unary_params(x, u, pre, &alpha, &beta);
      if (u == MP_KU_CLIP && !(k >= fa_n && lw_clip_attrs(x->op, k - fa_n))) {
        extra = clip_in;
      }
    }
    lw_p(x, code);
    lw_p(x, extra);
    lw_pf(x, alpha);
    lw_pf(x, beta);
    for (uint32_t j = 0; j < extra; j++) lw_in(x, x->op->inputs[at + j]);
    at += extra;
  }
  for (uint32_t j = 0; j < 2 * n_dq; j++) {
    lw_in(x, j < pro_n ? x->op->inputs[at + j] : -1);
  }
  if (n_epi || n_pro) x->o->flags |= MP_BOPF_FUSED;
  return MP_OK;
}

/* ---- Conv, ConvTranspose, pools
 * ------------------------------------------------ */

/* kernel, strides, dilations, begin and end pads of a windowed op over the
 * nd spatial dims of x (output dims y), auto_pad resolved. */
static mp_status lw_window(lw *x, const mp_tensor *in, const mp_tensor *w,
                           const mp_tensor *y, int64_t nd, bool transpose,
                           int64_t *k, int64_t *s, int64_t *d, int64_t *pb,
                           int64_t *pe, int64_t *op) {
  int64_t tmp[16];
  for (int64_t i = 0; i < nd; i++) {
    k[i] = w ? lw_dim(x, w, (uint32_t)(2 + i)) : 1;
    s[i] = d[i] = 1;
    pb[i] = pe[i] = op[i] = 0;
  }
  if (lw_ints(x, "kernel_shape", tmp, 16) == nd) memcpy(k, tmp, nd * sizeof *k);
  if (lw_ints(x, "strides", tmp, 16) == nd) memcpy(s, tmp, nd * sizeof *s);
  if (lw_ints(x, "dilations", tmp, 16) == nd) memcpy(d, tmp, nd * sizeof *d);
  if (lw_ints(x, "output_padding", tmp, 16) == nd)
    memcpy(op, tmp, nd * sizeof *op);
  int np = lw_ints(x, "pads", tmp, 16);
  const char *ap = lw_str(x, "auto_pad", "NOTSET");
  if (np == 2 * nd) {
    for (int64_t i = 0; i < nd; i++) {
      pb[i] = tmp[i];
      pe[i] = tmp[nd + i];
    }
  } else if (np >= 0) {
    return lw_unsup(x, "pads has %d values for %lld spatial dims", np,
                    (long long)nd);
  }
  /* A graph JSON declares the shapes, so nothing checked these yet: the
   * kernel is W's, and every number is one a window can have (below
   * 2^31, none of the products below overflows). */
  const int64_t lim = (int64_t)1 << 31;
  for (int64_t i = 0; i < nd; i++) {
    if (w && k[i] != lw_dim(x, w, (uint32_t)(2 + i))) {
      return lw_unsup(x, "kernel_shape[%lld] is %lld, W's dim %lld is %lld",
                      (long long)i, (long long)k[i], (long long)(2 + i),
                      (long long)lw_dim(x, w, (uint32_t)(2 + i)));
    }
    if (k[i] < 1 || k[i] >= lim || s[i] < 1 || s[i] >= lim || d[i] < 1 ||
        d[i] >= lim || pb[i] < 0 || pb[i] >= lim || pe[i] < 0 || pe[i] >= lim ||
        op[i] < 0 || op[i] >= lim) {
      return lw_unsup(x,
                      "spatial dim %lld: kernel %lld, stride %lld, dilation "
                      "%lld, pads %lld and %lld, output padding %lld (each "
                      "below 2^31; kernel, stride and dilation at least 1)",
                      (long long)i, (long long)k[i], (long long)s[i],
                      (long long)d[i], (long long)pb[i], (long long)pe[i],
                      (long long)op[i]);
    }
  }
  bool same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0;
  bool out_shape = lw_attr(x, "output_shape") != NULL;
  if (same || (transpose && out_shape && np < 0)) {
    for (int64_t i = 0; i < nd; i++) {
      int64_t in_d = lw_dim(x, in, (uint32_t)(2 + i));
      int64_t out_d = lw_dim(x, y, (uint32_t)(2 + i));
      int64_t ext = (k[i] - 1) * d[i] + 1, total;
      if (transpose) {
        total = s[i] * (in_d - 1) + op[i] + ext - out_d;
        /* output_shape larger than the pads allow: the rest is
         * output_padding (ONNX computes it implicitly) */
        if (total < 0) {
          op[i] -= total;
          total = 0;
        }
      } else {
        total = (out_d - 1) * s[i] + ext - in_d;
      }
      if (total < 0) total = 0;
      bool upper = strcmp(ap, "SAME_LOWER") != 0;
      pb[i] = upper ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    }
  } else if (strcmp(ap, "VALID") == 0) {
    for (int64_t i = 0; i < nd; i++) pb[i] = pe[i] = 0;
  }
  return MP_OK;
}

/* Conv, ConvTranspose, and the integer ConvInteger and QLinearConv (their
 * inputs as they are, the same parameters with shift 0, and no prologue
 * or epilogue), as bundle kernel kernel. */
static mp_status lw_conv(lw *x, int kernel) {
  bool transpose = kernel == MP_BOP_CONV_TRANSPOSE;
  bool qlinear = kernel == MP_BOP_QLINEAR_CONV; /* W is input 3 */
  bool integer = qlinear || kernel == MP_BOP_CONV_INTEGER;
  const mp_tensor *in = lw_t(x, 0), *w = lw_t(x, qlinear ? 3 : 1);
  const mp_tensor *y = lw_out(x, 0);
  if (!in || !w || in->rank < 3 || in->rank > 5 || w->rank != in->rank) {
    return lw_unsup(x, "1 to 3 spatial dims with X and W are supported");
  }
  int64_t nd = in->rank - 2, k[3], s[3], d[3], pb[3], pe[3], op[3];
  mp_status st = lw_window(x, in, w, y, nd, transpose, k, s, d, pb, pe, op);
  if (st != MP_OK) return st;
  x->o->kernel = kernel;
  if (integer) lw_copy_inputs(x);
  lw_p(x, nd);
  lw_p(x, lw_int(x, "group", 1));
  int64_t kk = lw_dim(x, w, 1);
  for (int64_t i = 0; i < nd; i++) kk *= k[i];
  lw_p(x, integer ? 0 : lw_int(x, "mplan.shift", lw_shift(kk)));
  int64_t *arr[] = {k, s, d, pb, pe, op};
  int64_t fill[] = {1, 1, 1, 0, 0, 0};
  for (int a = 0; a < 6; a++) {
    for (int i = 0; i < 3; i++) lw_p(x, i < nd ? arr[a][i] : fill[a]);
  }
  return integer ? MP_OK : lw_tail(x, 3);
}

/* LSTM, GRU, RNN: X, W, R, [B], [sequence_lens], [initial_h], and for
 * LSTM [initial_c], [P]; parameters hidden_size, directions, reverse,
 * layout, clip (f64 bits), cell (mp_kcell), linear_before_reset. Only the
 * default activations (the importer joins the list with commas), and no
 * input_forget. */
static mp_status lw_rnn(lw *x, int cell) {
  static const char *const def[3] = {"Sigmoid,Tanh,Tanh", "Sigmoid,Tanh",
                                     "Tanh"};
  const mp_attr *dir = lw_attr(x, "direction");
  const char *dn = dir && dir->kind == MP_ATTR_STRING ? dir->s : "forward";
  bool both = strcmp(dn, "bidirectional") == 0;
  bool rev = strcmp(dn, "reverse") == 0;
  if (!both && !rev && strcmp(dn, "forward") != 0) {
    return lw_unsup(x, "direction '%s'", dn);
  }
  const mp_attr *act = lw_attr(x, "activations");
  char want[64];
  snprintf(want, sizeof want, "%s%s%s", def[cell], both ? "," : "",
           both ? def[cell] : "");
  if (act && (act->kind != MP_ATTR_STRING || strcmp(act->s, want) != 0)) {
    return lw_unsup(x, "activations other than the defaults (%s)", want);
  }
  if (lw_int(x, "input_forget", 0) != 0) return lw_unsup(x, "input_forget");
  x->o->kernel = MP_BOP_RNN;
  lw_copy_inputs(x);
  lw_p(x, lw_int(x, "hidden_size", 0));
  lw_p(x, both ? 2 : 1);
  lw_p(x, rev);
  lw_p(x, lw_int(x, "layout", 0));
  lw_pf(x, lw_float(x, "clip", 0.0));
  lw_p(x, cell);
  lw_p(x, lw_int(x, "linear_before_reset", 0));
  return MP_OK;
}

static mp_status lw_pool(lw *x, int kind, bool global) {
  const mp_tensor *in = lw_t(x, 0), *y = lw_out(x, 0);
  if (!in || in->rank < 3 || in->rank > 5) {
    return lw_unsup(x, "1 to 3 spatial dims are supported");
  }
  bool indices = x->op->n_outputs == 2 && x->op->outputs[1] >= 0;
  if (x->op->n_outputs > 2 || (indices && (global || kind != MP_BOP_MAXPOOL)))
    return lw_unsup(x, "a second output");
  int64_t nd = in->rank - 2, k[3], s[3], d[3], pb[3], pe[3], op[3];
  int64_t order = lw_int(x, "storage_order", 0);
  if (global) {
    for (int64_t i = 0; i < nd; i++) {
      k[i] = lw_dim(x, in, (uint32_t)(2 + i));
      s[i] = d[i] = 1;
      pb[i] = pe[i] = 0;
      if (k[i] == 0) {
        return lw_unsup(x, "a global pool over the empty spatial axis %lld",
                        (long long)(2 + i));
      }
    }
  } else {
    if (order != 0 && (!indices || order != 1 || nd > 2))
      return lw_unsup(x, "storage_order %lld%s", (long long)order,
                      indices ? "" : " without the Indices output");
    mp_status st = lw_window(x, in, NULL, y, nd, false, k, s, d, pb, pe, op);
    if (st != MP_OK) return st;
  }
  /* DequantizeLinear prologue (absorb.c rule 9): the tail follows the
   * parameters and brings the inputs */
  const char *pro = lw_str(x, "mplan.prologue", NULL);
  bool tail = pro || lw_attr(x, "mplan.epilogue");
  if (tail && (!pro || strcmp(pro, "DequantizeLinear:0") != 0 || indices ||
               kind == MP_BOP_LPPOOL)) {
    return lw_unsup(x,
                    "a pool takes a DequantizeLinear prologue on its input "
                    "only (and then a QuantizeLinear), not '%s'",
                    pro ? pro : "");
  }
  x->o->kernel = kind;
  if (!tail) lw_in(x, x->op->inputs[0]);
  lw_p(x, nd);
  int64_t *arr[] = {k, s, d, pb, pe};
  int64_t fill[] = {1, 1, 1, 0, 0};
  for (int a = 0; a < 5; a++) {
    for (int i = 0; i < 3; i++) lw_p(x, i < nd ? arr[a][i] : fill[a]);
  }
  lw_p(x, kind == MP_BOP_LPPOOL ? 0 : lw_int(x, "count_include_pad", 0));
  if (indices) lw_p(x, order);
  if (kind == MP_BOP_LPPOOL) {
    /* p: an int from opset 2, a float in opset 1 */
    const mp_attr *pa = lw_attr(x, "p");
    double pv = !pa ? 2 : pa->kind == MP_ATTR_INT ? (double)pa->i : pa->f;
    if (!(pv > 0) || !isfinite(pv)) return lw_unsup(x, "p %g", pv);
    lw_pf(x, pv);
  }
  return tail ? lw_tail(x, 1) : MP_OK;
}

/* MaxUnpool: the window only checks the output shape when no
 * output_shape input gives it. */
static mp_status lw_max_unpool(lw *x) {
  const mp_tensor *in = lw_t(x, 0), *y = lw_out(x, 0);
  if (!in || in->rank < 3 || in->rank > 5) {
    return lw_unsup(x, "1 to 3 spatial dims are supported");
  }
  int64_t nd = in->rank - 2, k[3], s[3], d[3], pb[3], pe[3], op[3];
  mp_status st = lw_window(x, in, NULL, y, nd, false, k, s, d, pb, pe, op);
  if (st != MP_OK) return st;
  x->o->kernel = MP_BOP_MAX_UNPOOL;
  lw_copy_inputs(x);
  lw_p(x, nd);
  int64_t *arr[] = {k, s, pb, pe};
  for (int a = 0; a < 4; a++) {
    for (int64_t i = 0; i < nd; i++) lw_p(x, arr[a][i]);
  }
  return MP_OK;
}

static mp_status lw_roi_align(lw *x) {
  const char *m = lw_str(x, "mode", "avg");
  /* opset 10 had no such attribute and sampled as output_half_pixel */
  bool v10 = mp_graph_opset(x->g) > 0 && mp_graph_opset(x->g) < 16;
  const char *ct = lw_str(x, "coordinate_transformation_mode",
                          v10 ? "output_half_pixel" : "half_pixel");
  bool avg = strcmp(m, "avg") == 0, hp = strcmp(ct, "half_pixel") == 0;
  if ((!avg && strcmp(m, "max") != 0) ||
      (!hp && strcmp(ct, "output_half_pixel") != 0)) {
    return lw_unsup(x, "mode '%s', coordinate_transformation_mode '%s'", m, ct);
  }
  int64_t oh = lw_int(x, "output_height", 1), ow = lw_int(x, "output_width", 1);
  int64_t sr = lw_int(x, "sampling_ratio", 0);
  if (oh < 1 || ow < 1 || sr < 0 || sr > MP_K_ROI_MAX_GRID) {
    return lw_unsup(x,
                    "output %lld x %lld with sampling_ratio %lld (at most "
                    "%d)",
                    (long long)oh, (long long)ow, (long long)sr,
                    MP_K_ROI_MAX_GRID);
  }
  x->o->kernel = MP_BOP_ROI_ALIGN;
  lw_copy_inputs(x);
  lw_p(x, !avg);
  lw_p(x, oh);
  lw_p(x, ow);
  lw_p(x, sr);
  lw_pf(x, lw_float(x, "spatial_scale", 1.0));
  lw_p(x, hp);
  return MP_OK;
}

/* ---- Gemm, MatMul
 * ------------------------------------------------------------------ */

static mp_status lw_gemm(lw *x, bool gemm) {
  if (!gemm && lw_int(x, "mplan.attention", 0)) {
    /* the attention pass's MatMul: Q, Kt, V, scale, mask, a row at a
     * time (docs/ir-conventions.md) */
    const char *so = lw_str(x, "mplan.attention.scale", "");
    x->o->kernel = MP_BOP_ATTN_ROWS;
    lw_copy_inputs(x);
    lw_p(x, strcmp(so, "Mul") == 0 ? 1 : strcmp(so, "Div") == 0 ? 2 : 0);
    return MP_OK;
  }
  int64_t h = lw_int(x, "mplan.horizontal", 0);
  x->o->kernel = gemm ? MP_BOP_GEMM : MP_BOP_MATMUL;
  if (gemm) {
    lw_p(x, lw_int(x, "transA", 0));
    lw_p(x, lw_int(x, "transB", 0));
    lw_pf(x, lw_float(x, "alpha", 1.0));
    lw_pf(x, lw_float(x, "beta", 1.0));
  }
  int64_t kk = 1;
  const mp_tensor *a = lw_t(x, 0);
  if (a && a->rank >= 1) {
    kk = lw_dim(x, a, gemm && lw_int(x, "transA", 0) ? 0 : a->rank - 1);
  }
  lw_p(x, lw_int(x, "mplan.shift", lw_shift(kk)));
  lw_p(x, h);
  if (h) {
    lw_copy_inputs(x);
    lw_p(x, 0); /* the head tail: no prologue, no epilogue */
    lw_p(x, 0);
    return MP_OK;
  }
  return lw_tail(x, gemm ? 3 : 2);
}

/* ---- com.microsoft's MatMulNBits
 * ------------------------------------------------------------------ */

/* A, B, scales, zero points, g_idx (act order), bias, then a fused
 * epilogue's inputs. */
static mp_status lw_matmul_nbits(lw *x) {
  if (lw_attr(x, "mplan.prologue")) {
    return lw_unsup(x, "a MatMulNBits carries no prologue");
  }
  x->o->kernel = MP_BOP_MATMUL_NBITS;
  lw_p(x, lw_int(x, "K", 0));
  lw_p(x, lw_int(x, "N", 0));
  lw_p(x, lw_int(x, "bits", 4));
  lw_p(x, lw_int(x, "block_size", 0));
  return lw_tail(x, mp_op_head_arity(x->op));
}

/* ---- elementwise
 * ----------------------------------------------------------------------- */

static mp_status lw_unary_op(lw *x, int u) {
  double alpha, beta;
  lw_unary_params(x, u, "", &alpha, &beta);
  if (u == MP_KU_GELU &&
      strcmp(lw_str(x, "approximate", "none"), "tanh") == 0) {
    u = MP_KU_GELU_TANH;
  }
  x->o->kernel = MP_BOP_UNARY;
  lw_p(x, u);
  lw_pf(x, alpha);
  lw_pf(x, beta);
  /* an elementwise head (absorb.c rule 9): its tail follows */
  if (lw_attr(x, "mplan.prologue")) return lw_tail(x, u == MP_KU_CLIP ? 3 : 1);
  lw_copy_inputs(x);
  return MP_OK;
}

static mp_status lw_binary_op(lw *x, int b) {
  const char *dqp = lw_str(x, "mplan.prologue", NULL);
  if ((dqp && strncmp(dqp, "DequantizeLinear:", 17) == 0) ||
      (!dqp && lw_attr(x, "mplan.epilogue"))) {
    /* an elementwise head (absorb.c rule 9, or an f32 one: fuse.c
     * condition 9): parameter 4, then its tail */
    if (lw_attr(x, "fused_activation") || mp_graph_legacy_pad(x->g, x->op)) {
      return lw_unsup(x,
                      "a DequantizeLinear prologue with a fused "
                      "activation or an operand aligned from an axis");
    }
    x->o->kernel = MP_BOP_BINARY;
    lw_p(x, b);
    lw_p(x, 0);
    lw_p(x, 4);
    mp_status st = lw_tail(x, 2);
    /* absorb.c rule 11: 1 + the input read replicated, after the tail */
    int64_t rep = lw_int(x, "mplan.p.resize", -1);
    if (st == MP_OK && rep >= 0) {
      if (rep > 1) {
        return lw_unsup(x,
                        "mplan.p.resize %lld (an Add, Sub, Mul or Div reads "
                        "input 0 or 1 replicated)",
                        (long long)rep);
      }
      lw_p(x, rep + 1);
    }
    return st;
  }
  const mp_tensor *a = lw_t(x, 0), *c = lw_t(x, 1);
  if (a && c && a->dtype != c->dtype && b == MP_KB_POW &&
      !lw_attr(x, "fused_activation") && !lw_attr(x, "mplan.prologue")) {
    x->o->kernel = MP_BOP_POW_MIXED; /* base and exponent of two dtypes */
    lw_copy_inputs(x);
    return MP_OK;
  }
  if (!a || !c || a->dtype != c->dtype) {
    return lw_unsup(x, "operands of different dtypes");
  }
  if (b == MP_KB_MOD && lw_int(x, "fmod", 0)) b = MP_KB_FMOD;
  if (b == MP_KB_SHL && strcmp(lw_str(x, "direction", "LEFT"), "RIGHT") == 0) {
    b = MP_KB_SHR;
  }
  if (b == MP_KB_MOD && lw_is_float(a->dtype)) {
    return lw_unsup(x, "Mod of floats needs fmod=1");
  }
  /* fused_activation of the bundled graphs (docs/ir-conventions.md):
   * applied to the result, 0 none, 1 Relu, 2 Relu6. */
  const char *fa = lw_str(x, "fused_activation", NULL);
  int act = 0;
  if (fa && strcmp(fa, "Relu") == 0) {
    act = 1;
  } else if (fa && strcmp(fa, "Relu6") == 0) {
    act = 2;
  } else if (fa) {
    return lw_unsup(x, "fused_activation '%s' (Relu and Relu6 are known)", fa);
  }
  /* A Resize the absorb pass folded in (docs/ir-conventions.md):
   * mplan.prologue "Resize:k" reads input k replicated to the output. */
  const char *pro = lw_str(x, "mplan.prologue", NULL);
  int up = 0;
  if (pro) {
    if (strcmp(pro, "Resize:0") == 0 || strcmp(pro, "Resize:1") == 0) {
      up = pro[7] - '0' + 1;
    } else {
      return lw_unsup(x, "mplan.prologue '%s' on a %s (Resize:0 or Resize:1)",
                      pro, x->op->type);
    }
  }
  /* Input 1 aligned from an axis on, as before opset 7: 3 in the place of
   * the prologue's input, then the unit dims appended to its dims. */
  uint32_t pad = mp_graph_legacy_pad(x->g, x->op);
  if (pad && (up || act)) {
    return lw_unsup(x,
                    "an operand aligned from an axis (before opset 7) with a "
                    "prologue is not supported");
  }
  x->o->kernel = MP_BOP_BINARY;
  lw_p(x, b);
  lw_p(x, act);
  if (up) lw_p(x, up);
  if (pad) {
    lw_p(x, 3);
    lw_p(x, pad);
  }
  lw_copy_inputs(x);
  return MP_OK;
}

/* ---- data movement and the rest
 * -------------------------------------------------------- */

static mp_status lw_slice(lw *x) {
  const mp_tensor *in = lw_t(x, 0), *y = lw_out(x, 0);
  int64_t starts[MP_MAX_RANK], ends[MP_MAX_RANK], axes[MP_MAX_RANK],
      steps[MP_MAX_RANK];
  int ns, ne, na, nst;
  if (x->op->n_inputs >= 3) {
    ns = lw_const_ints(x, 1, starts, MP_MAX_RANK);
    ne = lw_const_ints(x, 2, ends, MP_MAX_RANK);
    na = x->op->n_inputs > 3 && lw_t(x, 3)
             ? lw_const_ints(x, 3, axes, MP_MAX_RANK)
             : -2;
    nst = x->op->n_inputs > 4 && lw_t(x, 4)
              ? lw_const_ints(x, 4, steps, MP_MAX_RANK)
              : -2;
  } else {
    ns = lw_ints(x, "starts", starts, MP_MAX_RANK);
    ne = lw_ints(x, "ends", ends, MP_MAX_RANK);
    na = lw_attr(x, "axes") ? lw_ints(x, "axes", axes, MP_MAX_RANK) : -2;
    nst = -2;
  }
  if (ns < 0 || ne != ns || na == -1 || nst == -1 || (na >= 0 && na != ns) ||
      (nst >= 0 && nst != ns)) {
    return lw_unsup(x, "starts, ends, axes and steps must be constants");
  }
  int64_t start[MP_MAX_RANK], step[MP_MAX_RANK];
  for (uint32_t i = 0; i < in->rank; i++) {
    start[i] = 0;
    step[i] = 1;
  }
  for (int j = 0; j < ns; j++) {
    int64_t ax = lw_axis(na >= 0 ? axes[j] : j, in->rank);
    if (ax < 0 || ax >= in->rank) return lw_unsup(x, "bad axis");
    int64_t dim = lw_dim(x, in, (uint32_t)ax), st = nst >= 0 ? steps[j] : 1;
    int64_t b = starts[j];
    if (st == 0) return lw_unsup(x, "step 0");
    if (b < 0) b += dim;
    if (st > 0) {
      b = b < 0 ? 0 : b > dim ? dim : b;
    } else {
      b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
    }
    start[ax] = b;
    step[ax] = st;
  }
  for (uint32_t i = 0; i < in->rank; i++) {
    if (lw_dim(x, y, i) == 0) start[i] = 0;
  }
  x->o->kernel = MP_BOP_SLICE;
  lw_in(x, x->op->inputs[0]);
  for (uint32_t i = 0; i < in->rank; i++) lw_p(x, start[i]);
  for (uint32_t i = 0; i < in->rank; i++) lw_p(x, step[i]);
  return MP_OK;
}

static mp_status lw_pad(lw *x) {
  const mp_tensor *in = lw_t(x, 0);
  int64_t pads[2 * MP_MAX_RANK];
  int np = x->op->n_inputs >= 2 ? lw_const_ints(x, 1, pads, 2 * MP_MAX_RANK)
                                : lw_ints(x, "pads", pads, 2 * MP_MAX_RANK);
  if (x->op->n_inputs > 3 && lw_t(x, 3)) {
    /* Pad-18's axes: the pads given are those axes' (begins, then ends),
     * the others' are 0 */
    int64_t axes[MP_MAX_RANK], full[2 * MP_MAX_RANK] = {0};
    int na = lw_const_ints(x, 3, axes, MP_MAX_RANK);
    if (na < 0 || np != 2 * na) {
      return lw_unsup(x, "pads and axes must be constants, two pads an axis");
    }
    mp_status st = lw_axes(x, axes, na, in->rank);
    if (st != MP_OK) return st;
    for (int k = 0; k < na; k++) {
      full[axes[k]] = pads[k];
      full[in->rank + axes[k]] = pads[na + k];
    }
    memcpy(pads, full, 2 * in->rank * sizeof *full);
    np = 2 * (int)in->rank;
  }
  if (np != 2 * (int)in->rank) {
    return lw_unsup(x, "pads must be a constant for every axis");
  }
  double v = lw_float(x, "value", 0);
  if (x->op->n_inputs >= 3 && lw_t(x, 2)) {
    double cv[1];
    if (lw_const_floats(x, 2, cv, 1) != 1) {
      return lw_unsup(x, "constant_value must be a constant");
    }
    v = cv[0];
  }
  const char *mode = lw_str(x, "mode", "constant");
  int m = strcmp(mode, "constant") == 0  ? MP_KPAD_CONSTANT
          : strcmp(mode, "reflect") == 0 ? MP_KPAD_REFLECT
          : strcmp(mode, "edge") == 0    ? MP_KPAD_EDGE
          : strcmp(mode, "wrap") == 0    ? MP_KPAD_WRAP
                                         : -1;
  if (m < 0) return lw_unsup(x, "mode '%s'", mode);
  x->o->kernel = MP_BOP_PAD;
  lw_in(x, x->op->inputs[0]);
  lw_p(x, m);
  for (uint32_t i = 0; i < in->rank; i++) lw_p(x, pads[i]);
  lw_pf(x, v);
  return MP_OK;
}

static mp_status lw_resize(lw *x) {
  const mp_tensor *in = lw_t(x, 0), *y = lw_out(x, 0);
  const char *mode = lw_str(x, "mode", "nearest");
  const char *ct = lw_str(x, "coordinate_transformation_mode", "half_pixel");
  const char *nm = lw_str(x, "nearest_mode", "round_prefer_floor");
  int lin = strcmp(mode, "linear") == 0    ? 1
            : strcmp(mode, "nearest") == 0 ? 0
            : strcmp(mode, "cubic") == 0   ? 2
                                           : -1;
  int c = mp_k_coord_named(ct), n = mp_k_nearest_named(nm);
  bool crop = c == MP_KC_TF_CROP_AND_RESIZE;
  /* antialias stretches linear and cubic filters; nearest ignores it */
  bool aa = lin > 0 && lw_int(x, "antialias", 0) != 0;
  if (lin < 0 || c < 0 || n < 0 ||
      (crop && (aa || !lw_t(x, 1) || lw_attr(x, "axes")))) {
    return lw_unsup(x,
                    "mode '%s', coordinate_transformation_mode '%s'%s "
                    "(tf_crop_and_resize needs its roi, no axes and no "
                    "antialias)",
                    mode, ct, aa ? " with antialias" : "");
  }
  if (!in || y->rank != in->rank) {
    return lw_unsup(x, "output rank %u is not the input's", y->rank);
  }
  double scales[MP_MAX_RANK];
  int sidx = x->op->n_inputs == 2 ? 1 : 2;
  int ns = lw_t(x, (uint32_t)sidx)
               ? lw_const_floats(x, (uint32_t)sidx, scales, MP_MAX_RANK)
               : -2;
  /* Resize-18's axes: the scales given are those axes'; the others are 1
   * (the shape rule checked the axes) */
  int64_t axes[MP_MAX_RANK];
  int na = lw_ints(x, "axes", axes, MP_MAX_RANK);
  if (na >= 0) {
    double full[MP_MAX_RANK];
    for (uint32_t i = 0; i < in->rank; i++) full[i] = 1;
    mp_status st = lw_axes(x, axes, na, in->rank);
    if (st != MP_OK) return st;
    for (int k = 0; ns == na && k < na; k++) full[axes[k]] = scales[k];
    memcpy(scales, full, in->rank * sizeof *full);
    ns = ns == na ? (int)in->rank : -2; /* sizes: y's dims over x's */
  }
  /* keep_aspect_ratio_policy (opset 18, with sizes): the resized axes
   * share one scale (mp_resize_aspect_scale, as the shape rule) */
  const char *pol = lw_str(x, "keep_aspect_ratio_policy", "stretch");
  double aspect = 0;
  bool resized[MP_MAX_RANK] = {false};
  if (strcmp(pol, "stretch") != 0 && ns != (int)in->rank) {
    int64_t sz[MP_MAX_RANK], dims[MP_MAX_RANK];
    uint32_t at[MP_MAX_RANK];
    int nsz = lw_t(x, 3) ? lw_const_ints(x, 3, sz, MP_MAX_RANK) : -1;
    int nax = na >= 0 ? na : (int)in->rank;
    if (nsz != nax) {
      return lw_unsup(x, "keep_aspect_ratio_policy '%s' without constant sizes",
                      pol);
    }
    for (uint32_t i = 0; i < in->rank; i++) dims[i] = lw_dim(x, in, i);
    for (int k = 0; k < nax; k++) {
      at[k] = na >= 0 ? (uint32_t)axes[k] : (uint32_t)k;
      resized[at[k]] = true;
    }
    aspect = mp_resize_aspect_scale(dims, at, sz, (size_t)nax,
                                    strcmp(pol, "not_smaller") == 0);
  }
  /* DequantizeLinear prologue (absorb.c rule 9, pass_resize_head): the
   * tail follows the parameters and brings the four own inputs */
  const char *pro = lw_str(x, "mplan.prologue", NULL);
  bool tail = pro || lw_attr(x, "mplan.epilogue");
  if (tail && (!pro || strcmp(pro, "DequantizeLinear:0") != 0 || crop ||
               lin == 2 || aa || in->rank != 4)) {
    return lw_unsup(x,
                    "a Resize takes a DequantizeLinear prologue on its input "
                    "only (and then a QuantizeLinear), nearest or linear, "
                    "4-D, not '%s'",
                    pro ? pro : "");
  }
  x->o->kernel = MP_BOP_RESIZE;
  if (!tail) lw_in(x, x->op->inputs[0]);
  if (crop) lw_in(x, x->op->inputs[1]); /* the roi, read when it runs */
  lw_p(x, aa ? lin + 2 : lin);
  lw_p(x, c);
  lw_p(x, n);
  for (uint32_t i = 0; i < in->rank; i++) {
    double s = (ns == (int)in->rank && ns > 0 && scales[i] > 0)
                   ? scales[i]
                   : (double)lw_dim(x, y, i) / (double)lw_dim(x, in, i);
    if (aspect > 0 && resized[i]) s = aspect;
    /* an empty axis has nothing to sample: any scale, but not 0/0 */
    if (!(s > 0) && lw_dim(x, in, i) == 0) s = 1;
    if (aa && s < 1.0 / MP_K_RESIZE_MIN_INV) {
      return lw_unsup(x, "antialias at scale %g on axis %u (1/%d at least)", s,
                      i, MP_K_RESIZE_MIN_INV);
    }
    lw_pf(x, s);
  }
  if (lin == 2) {
    lw_pf(x, lw_float(x, "cubic_coeff_a", -0.75));
    lw_p(x, lw_int(x, "exclude_outside", 0) != 0);
  }
  if (crop) lw_pf(x, lw_float(x, "extrapolation_value", 0.0));
  return tail ? lw_tail(x, 4) : MP_OK;
}

/* Upsample (opsets 7 to 9, deprecated by Resize): the Resize kernel with
 * ONNX Runtime's Upsample sampling, asymmetric coordinates and, for
 * nearest, the floor of the source position (its "simple" rounding for
 * scales >= 1; it rounds up when shrinking, which is refused here). */
static mp_status lw_upsample(lw *x) {
  const mp_tensor *in = lw_t(x, 0), *y = lw_out(x, 0);
  const char *mode = lw_str(x, "mode", "nearest");
  int lin = strcmp(mode, "nearest") == 0                                   ? 0
            : strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0 ? 1
                                                                           : -1;
  if (lin < 0) return lw_unsup(x, "mode '%s'", mode);
  if (!in || y->rank != in->rank) {
    return lw_unsup(x, "output rank %u is not the input's", y->rank);
  }
  double scales[MP_MAX_RANK];
  int ns = x->op->n_inputs >= 2 && lw_t(x, 1)
               ? lw_const_floats(x, 1, scales, MP_MAX_RANK)
               : lw_floats(x, "scales", scales, MP_MAX_RANK);
  if (ns != (int)in->rank) {
    return lw_unsup(x, "scales must be a constant with one value per axis");
  }
  for (uint32_t i = 0; i < in->rank; i++) {
    if (!(scales[i] >= 1.0) || !isfinite(scales[i])) {
      return lw_unsup(x, "scale %g on axis %u (Upsample only enlarges here)",
                      scales[i], i);
    }
  }
  x->o->kernel = MP_BOP_RESIZE;
  lw_in(x, x->op->inputs[0]);
  lw_p(x, lin);
  lw_p(x, mp_k_coord_named("asymmetric"));
  lw_p(x, mp_k_nearest_named("floor"));
  for (uint32_t i = 0; i < in->rank; i++) lw_pf(x, scales[i]);
  return MP_OK;
}

/* DFT (opsets 17 and 20: axis an attribute, then an input). The length
 * decides the output shape, so a dft_length input must be a constant. */
static mp_status lw_dft(lw *x) {
  const mp_tensor *in = lw_t(x, 0);
  if (!in || in->rank < 2) return lw_unsup(x, "a signal of rank < 2");
  int64_t rank = in->rank, v[1], axis = lw_int(x, "axis", 1);
  if (mp_graph_opset(x->g) >= 20) {
    axis = -2;
    if (lw_t(x, 2)) {
      if (lw_const_ints(x, 2, v, 1) != 1)
        return lw_unsup(x, "axis must be a constant");
      axis = v[0];
    }
  }
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank - 2) {
    return lw_unsup(x,
                    "axis %lld of a signal of rank %lld (the last dim is "
                    "real or complex)",
                    (long long)axis, (long long)rank);
  }
  int64_t n = lw_dim(x, in, (uint32_t)axis);
  if (lw_t(x, 1)) {
    if (lw_const_ints(x, 1, v, 1) != 1)
      return lw_unsup(x, "dft_length must be a constant");
    n = v[0];
  }
  int64_t onesided = lw_int(x, "onesided", 0),
          inverse = lw_int(x, "inverse", 0);
  if (n < 1 || n >= ((int64_t)1 << 31) || (onesided && inverse)) {
    return lw_unsup(x, "dft_length %lld%s", (long long)n,
                    onesided && inverse ? " with onesided and inverse" : "");
  }
  x->o->kernel = MP_BOP_DFT;
  lw_in(x, x->op->inputs[0]);
  lw_p(x, axis);
  lw_p(x, n);
  lw_p(x, onesided != 0);
  lw_p(x, inverse != 0);
  return MP_OK;
}

static mp_status lw_reduce(lw *x, int r) {
  const mp_tensor *in = lw_t(x, 0);
  int64_t axes[MP_MAX_RANK];
  int na = lw_ints(x, "axes", axes, MP_MAX_RANK);
  if (na < 0 && x->op->n_inputs >= 2 && lw_t(x, 1)) {
    na = lw_const_ints(x, 1, axes, MP_MAX_RANK);
    if (na < 0) return lw_unsup(x, "axes must be a constant");
  }
  uint32_t mask = 0;
  if (na <= 0) {
    if (lw_int(x, "noop_with_empty_axes", 0)) {
      x->o->kernel = MP_BOP_VIEW;
      lw_in(x, x->op->inputs[0]);
      return MP_OK;
    }
    mask = (1u << in->rank) - 1;
  }
  for (int j = 0; j < na; j++) {
    int64_t a = lw_axis(axes[j], in->rank);
    if (a < 0 || a >= in->rank) return lw_unsup(x, "bad axis");
    mask |= 1u << a;
  }
  x->o->kernel = MP_BOP_REDUCE;
  lw_in(x, x->op->inputs[0]);
  lw_p(x, r);
  lw_p(x, mask);
  return MP_OK;
}

/* The output's constant values (Shape, Size, Range, ConstantOfShape
 * folded by shape inference) as FILL parameters. */
static bool lw_fill_value(lw *x) {
  const mp_tensor *y = lw_out(x, 0);
  int64_t n = 1;
  for (uint32_t i = 0; i < y->rank; i++) n *= lw_dim(x, y, i);
  if (!y->value || (int64_t)y->value->n != n || n > LW_MAX_PARAMS) return false;
  x->o->kernel = MP_BOP_FILL;
  bool fl = mp_kd_is_float(lw_kdtype(y->dtype));
  for (int64_t i = 0; i < n; i++) {
    if (fl) {
      lw_pf(x, y->value->f ? y->value->f[i] : (double)y->value->i[i]);
    } else {
      lw_p(x, y->value->i ? y->value->i[i] : mp_f64_to_i64(y->value->f[i]));
    }
  }
  return true;
}

static mp_status lw_constant_of_shape(lw *x) {
  const mp_attr *v = lw_attr(x, "value");
  const mp_tensor *y = lw_out(x, 0);
  x->o->kernel = MP_BOP_FILL;
  bool fl = lw_is_float(y->dtype);
  double f = 0;
  int64_t i = 0;
  if (v && v->kind == MP_ATTR_FLOATS && v->n == 1) {
    f = v->floats[0];
    i = mp_f64_to_i64(f);
  } else if (v && v->kind == MP_ATTR_INTS && v->n == 1) {
    i = v->ints[0];
    f = (double)i;
  } else if (v) {
    return lw_unsup(x, "value is not a one-element tensor");
  }
  if (fl) {
    lw_pf(x, f);
  } else {
    lw_p(x, i);
  }
  return MP_OK;
}

/* EyeLike: ones where the column is the row plus k, as a fill. */
static mp_status lw_eye_like(lw *x) {
  const mp_tensor *y = lw_out(x, 0);
  if (y->rank != 2) return lw_unsup(x, "an output of rank %u", y->rank);
  int64_t rows = lw_dim(x, y, 0), cols = lw_dim(x, y, 1);
  if (rows * cols > LW_MAX_PARAMS) {
    return lw_unsup(x, "more than %d elements", LW_MAX_PARAMS);
  }
  int64_t k = lw_int(x, "k", 0);
  bool fl = lw_is_float(y->dtype);
  x->o->kernel = MP_BOP_FILL;
  for (int64_t i = 0; i < rows; i++) {
    for (int64_t j = 0; j < cols; j++) {
      if (fl) {
        lw_pf(x, j - i == k ? 1.0 : 0.0);
      } else {
        lw_p(x, j - i == k);
      }
    }
  }
  return MP_OK;
}

/* A reduction attribute as mp_kscatter ("none" when absent). */
static int lw_scatter_reduction(lw *x) {
  const char *r = lw_str(x, "reduction", "none");
  static const char *const names[] = {"none", "add", "mul", "max", "min"};
  for (int k = 0; k < 5; k++) {
    if (strcmp(r, names[k]) == 0) return k;
  }
  return -1;
}

/* HannWindow, HammingWindow, BlackmanWindow: a fill of the window's
 * values, a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N the size
 * (periodic) or the size - 1 (symmetric). */
static mp_status lw_window_fill(lw *x, const char *t) {
  const mp_tensor *y = lw_out(x, 0);
  if (y->rank != 1) return lw_unsup(x, "an output of rank %u", y->rank);
  int64_t n = lw_dim(x, y, 0);
  if (n > LW_MAX_PARAMS)
    return lw_unsup(x, "more than %d values", LW_MAX_PARAMS);
  double a0 = 0.5, a1 = 0.5, a2 = 0;
  if (t[0] == 'H' && t[2] == 'm') a0 = 25.0 / 46.0, a1 = 1 - a0; /* Hamming */
  if (t[0] == 'B') a0 = 0.42, a1 = 0.5, a2 = 0.08;
  double den = (double)(lw_int(x, "periodic", 1) ? n : n - 1);
  bool fl = lw_is_float(y->dtype);
  x->o->kernel = MP_BOP_FILL;
  for (int64_t i = 0; i < n; i++) {
    double a = den > 0 ? 2 * 3.14159265358979323846 * (double)i / den : 0;
    double v = a0 - a1 * cos(a) + a2 * cos(2 * a);
    if (fl) {
      lw_pf(x, v);
    } else {
      lw_p(x, mp_f64_to_i64(v));
    }
  }
  return MP_OK;
}

/* A loss's reduction (mp_kloss) and ignore_index. */
static mp_status lw_loss(lw *x, int kernel) {
  const char *red = lw_str(x, "reduction", "mean");
  int r = strcmp(red, "none") == 0   ? MP_KLOSS_NONE
          : strcmp(red, "sum") == 0  ? MP_KLOSS_SUM
          : strcmp(red, "mean") == 0 ? MP_KLOSS_MEAN
                                     : -1;
  if (r < 0) return lw_unsup(x, "reduction '%s'", red);
  x->o->kernel = kernel;
  lw_copy_inputs(x);
  lw_p(x, r);
  lw_p(x, lw_attr(x, "ignore_index") != NULL);
  lw_p(x, lw_int(x, "ignore_index", 0));
  return MP_OK;
}

/* Einsum's equation as labels (runtime/ops_linalg.c): letters, and an
 * ellipsis spelled out as labels aligned to the right; without "->" the
 * output is the ellipsis, then the letters seen once in ASCII order. */
static mp_status lw_einsum(lw *x) {
  const char *eq = lw_str(x, "equation", NULL);
  char buf[256];
  size_t n = 0;
  for (const char *p = eq ? eq : ""; *p && n + 1 < sizeof buf; p++) {
    if (*p != ' ') buf[n++] = *p;
  }
  buf[n] = '\0';
  if (!eq || n + 1 >= sizeof buf) return lw_unsup(x, "equation");
  char *arrow = strstr(buf, "->");
  if (arrow) *arrow = '\0';
  uint32_t n_in = x->op->n_inputs;
  if (n_in < 1 || n_in > MP_K_MAX_OPERANDS)
    return lw_unsup(x, "%u operands", n_in);
  /* ids: 'A'-'Z' 0..25, 'a'-'z' 26..51 (ASCII order), ellipsis 52.. */
  int lab[MP_K_MAX_OPERANDS][MP_MAX_RANK], rank[MP_K_MAX_OPERANDS];
  int ell_at[MP_K_MAX_OPERANDS], letters[MP_K_MAX_OPERANDS], seen[52] = {0};
  int ell = 0;
  char *term = buf;
  for (uint32_t k = 0; k < n_in; k++) {
    char *end = strchr(term, ',');
    if ((k + 1 < n_in) != (end != NULL))
      return lw_unsup(x, "equation operands");
    if (end) *end = '\0';
    const mp_tensor *t = lw_t(x, k);
    if (!t) return lw_unsup(x, "an omitted operand");
    rank[k] = (int)t->rank;
    letters[k] = 0;
    ell_at[k] = -1;
    for (const char *p = term; *p; p++) {
      if (strncmp(p, "...", 3) == 0 && ell_at[k] < 0) {
        ell_at[k] = letters[k];
        p += 2;
        continue;
      }
      bool up = *p >= 'A' && *p <= 'Z', lo = *p >= 'a' && *p <= 'z';
      if (!up && !lo) return lw_unsup(x, "equation character '%c'", *p);
      if (letters[k] >= MP_MAX_RANK) return lw_unsup(x, "equation rank");
      int id = up ? *p - 'A' : 26 + *p - 'a';
      lab[k][letters[k]++] = id;
      seen[id]++;
    }
    int e = rank[k] - letters[k];
    if (e < 0 || (ell_at[k] < 0 && e != 0)) {
      return lw_unsup(x, "operand %u has rank %d, not the equation's", k,
                      rank[k]);
    }
    ell = e > ell ? e : ell;
    term = end ? end + 1 : term;
  }
  int out[MP_MAX_RANK], n_out = 0;
  if (arrow) {
    for (const char *p = arrow + 2; *p; p++) {
      if (n_out >= MP_MAX_RANK) return lw_unsup(x, "equation rank");
      if (strncmp(p, "...", 3) == 0) {
        for (int j = 0; j < ell && n_out < MP_MAX_RANK; j++)
          out[n_out++] = 52 + j;
        p += 2;
        continue;
      }
      bool up = *p >= 'A' && *p <= 'Z', lo = *p >= 'a' && *p <= 'z';
      if (!up && !lo) return lw_unsup(x, "equation character '%c'", *p);
      out[n_out++] = up ? *p - 'A' : 26 + *p - 'a';
    }
  } else {
    for (int j = 0; j < ell && n_out < MP_MAX_RANK; j++) out[n_out++] = 52 + j;
    for (int id = 0; id < 52; id++) {
      if (seen[id] == 1 && n_out < MP_MAX_RANK) out[n_out++] = id;
    }
  }
  /* Compact ids: output labels first, in order, then the summed ones in
   * order of first appearance (the kernel sums the last fastest). */
  int map[52 + MP_MAX_RANK], n_labels = 0;
  for (int i = 0; i < 52 + MP_MAX_RANK; i++) map[i] = -1;
  for (int a = 0; a < n_out; a++) {
    if (map[out[a]] < 0) map[out[a]] = n_labels++;
  }
  x->o->kernel = MP_BOP_EINSUM;
  lw_copy_inputs(x);
  int ids[MP_K_MAX_OPERANDS][MP_MAX_RANK];
  for (uint32_t k = 0; k < n_in; k++) {
    int e = rank[k] - letters[k], a = 0;
    for (int i = 0; i <= letters[k]; i++) {
      if (i == ell_at[k]) {
        for (int j = ell - e; j < ell; j++) ids[k][a++] = 52 + j;
      }
      if (i < letters[k]) ids[k][a++] = lab[k][i];
    }
    for (int i = 0; i < rank[k]; i++) {
      if (map[ids[k][i]] < 0) map[ids[k][i]] = n_labels++;
    }
  }
  lw_p(x, n_in);
  lw_p(x, n_labels);
  for (uint32_t k = 0; k < n_in; k++) {
    lw_p(x, rank[k]);
    for (int i = 0; i < rank[k]; i++) lw_p(x, map[ids[k][i]]);
  }
  lw_p(x, n_out);
  for (int a = 0; a < n_out; a++) {
    if (map[out[a]] < 0) return lw_unsup(x, "an output label on no operand");
    lw_p(x, map[out[a]]);
  }
  return MP_OK;
}

static mp_status lw_select(lw *x, const char *t);

/* Attention (opset 23). The scores go to qk_matmul_output before the
 * mask (mode 0, refused with a softcap: ONNX's text and its reference
 * disagree on where the softcap falls) or after the softmax (mode 3); the
 * masked modes 1 and 2 are refused for the same reason. */
static mp_status lw_attention(lw *x, uint32_t rank) {
  bool qk = x->op->n_outputs > 3;
  int64_t mode = lw_int(x, "qk_matmul_output_mode", 0);
  double softcap = lw_float(x, "softcap", 0), scale = lw_float(x, "scale", 0);
  if (qk && (mode == 1 || mode == 2 || mode < 0 || mode > 3 ||
             (mode == 0 && softcap > 0))) {
    return lw_unsup(x,
                    "qk_matmul_output_mode %lld%s (0 without a softcap, or "
                    "3)",
                    (long long)mode, softcap > 0 ? " with a softcap" : "");
  }
  if (lw_attr(x, "scale") && !(scale != 0 && isfinite(scale))) {
    return lw_unsup(x, "scale %g", scale);
  }
  if (!(softcap >= 0 && isfinite(softcap))) {
    return lw_unsup(x, "softcap %g", softcap);
  }
  x->o->kernel = MP_BOP_ATTENTION;
  lw_copy_inputs(x);
  lw_p(x, rank == 3 ? lw_int(x, "q_num_heads", 0) : 0);
  lw_p(x, rank == 3 ? lw_int(x, "kv_num_heads", 0) : 0);
  lw_p(x, lw_int(x, "is_causal", 0) != 0);
  lw_pf(x, scale);
  lw_pf(x, softcap);
  lw_p(x, qk ? mode : 0);
  return MP_OK;
}

/* The normalisations and losses of runtime/ops_stats.c, the window fills,
 * Einsum, Det and ReverseSequence. */
static mp_status lw_stats(lw *x, const char *t, uint32_t rank) {
  if (strcmp(t, "InstanceNormalization") == 0) {
    x->o->kernel = MP_BOP_INSTANCENORM;
    lw_copy_inputs(x);
    lw_pf(x, lw_float(x, "epsilon", 1e-5));
    return MP_OK;
  }
  if (strcmp(t, "GroupNormalization") == 0) {
    /* opset 18 scales per group; 21 per channel (18 is deprecated) */
    x->o->kernel = MP_BOP_GROUPNORM;
    lw_copy_inputs(x);
    lw_pf(x, lw_float(x, "epsilon", 1e-5));
    lw_p(x, lw_int(x, "num_groups", 0));
    lw_p(x, mp_graph_opset(x->g) <= 0 || mp_graph_opset(x->g) >= 21);
    return MP_OK;
  }
  if (strcmp(t, "LRN") == 0) {
    x->o->kernel = MP_BOP_LRN;
    lw_in(x, x->op->inputs[0]);
    lw_p(x, lw_int(x, "size", 0));
    lw_pf(x, lw_float(x, "alpha", 1e-4));
    lw_pf(x, lw_float(x, "beta", 0.75));
    lw_pf(x, lw_float(x, "bias", 1.0));
    return MP_OK;
  }
  if (strcmp(t, "LpNormalization") == 0) {
    int64_t p = lw_int(x, "p", 2), a = lw_axis(lw_int(x, "axis", -1), rank);
    if ((p != 1 && p != 2) || a < 0 || a >= (int64_t)rank) {
      return lw_unsup(x, "p %lld on axis %lld (p 1 or 2 on an axis)",
                      (long long)p, (long long)lw_int(x, "axis", -1));
    }
    x->o->kernel = MP_BOP_LPNORM;
    lw_in(x, x->op->inputs[0]);
    lw_p(x, a);
    lw_p(x, p);
    return MP_OK;
  }
  if (strcmp(t, "RMSNormalization") == 0) {
    x->o->kernel = MP_BOP_RMSNORM;
    lw_copy_inputs(x);
    lw_p(x, lw_axis(lw_int(x, "axis", -1), rank));
    lw_pf(x, lw_float(x, "epsilon", 1e-5));
    return MP_OK;
  }
  if (strcmp(t, "RotaryEmbedding") == 0) {
    x->o->kernel = MP_BOP_ROTARY;
    lw_copy_inputs(x);
    lw_p(x, lw_int(x, "interleaved", 0) != 0);
    lw_p(x, rank == 3 ? lw_int(x, "num_heads", 0) : 0);
    lw_p(x, lw_int(x, "rotary_embedding_dim", 0));
    return MP_OK;
  }
  if (strcmp(t, "Attention") == 0) return lw_attention(x, rank);
  if (strcmp(t, "TensorScatter") == 0) {
    const char *m = lw_str(x, "mode", "linear");
    int64_t a = lw_axis(lw_int(x, "axis", -2), rank);
    if ((strcmp(m, "linear") != 0 && strcmp(m, "circular") != 0) || a < 1 ||
        a >= (int64_t)rank) {
      return lw_unsup(x,
                      "mode '%s' on axis %lld (linear or circular, on an "
                      "axis after the batch)",
                      m, (long long)lw_int(x, "axis", -2));
    }
    x->o->kernel = MP_BOP_TENSOR_SCATTER;
    lw_copy_inputs(x);
    lw_p(x, a);
    lw_p(x, m[0] == 'c');
    return MP_OK;
  }
  if (strcmp(t, "ImageScaler") == 0) {
    const mp_attr *b = lw_attr(x, "bias");
    const mp_tensor *in = lw_t(x, 0);
    if (b && (b->kind != MP_ATTR_FLOATS || !in || in->rank < 2 ||
              (int64_t)b->n != lw_dim(x, in, 1))) {
      return lw_unsup(x, "a bias that is not one float per channel");
    }
    x->o->kernel = MP_BOP_IMAGE_SCALER;
    lw_in(x, x->op->inputs[0]);
    lw_pf(x, lw_float(x, "scale", 1.0));
    lw_p(x, b ? (int64_t)b->n : 0);
    for (uint32_t k = 0; b && k < b->n; k++) lw_pf(x, b->floats[k]);
    return MP_OK;
  }
  if (strcmp(t, "MeanVarianceNormalization") == 0) {
    int64_t axes[MP_MAX_RANK], def[] = {0, 2, 3};
    int n = lw_ints(x, "axes", axes, MP_MAX_RANK);
    if (n < 0) {
      n = 3;
      memcpy(axes, def, sizeof def);
    }
    mp_status st = lw_axes(x, axes, n, rank);
    if (st != MP_OK) return st;
    int64_t mask = 0;
    for (int i = 0; i < n; i++) mask |= (int64_t)1 << axes[i];
    x->o->kernel = MP_BOP_MVN;
    lw_in(x, x->op->inputs[0]);
    lw_p(x, mask);
    return MP_OK;
  }
  if (strcmp(t, "NegativeLogLikelihoodLoss") == 0) {
    return lw_loss(x, MP_BOP_NLL_LOSS);
  }
  if (strcmp(t, "SoftmaxCrossEntropyLoss") == 0) {
    return lw_loss(x, MP_BOP_SCE_LOSS);
  }
  if (strcmp(t, "HannWindow") == 0 || strcmp(t, "HammingWindow") == 0 ||
      strcmp(t, "BlackmanWindow") == 0) {
    return lw_window_fill(x, t);
  }
  if (strcmp(t, "Einsum") == 0) return lw_einsum(x);
  if (strcmp(t, "Det") == 0) {
    x->o->kernel = MP_BOP_DET;
    lw_in(x, x->op->inputs[0]);
    return MP_OK;
  }
  if (strcmp(t, "ReverseSequence") == 0) {
    int64_t ta = lw_int(x, "time_axis", 0), ba = lw_int(x, "batch_axis", 1);
    if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0))) {
      return lw_unsup(x, "time_axis %lld with batch_axis %lld", (long long)ta,
                      (long long)ba);
    }
    x->o->kernel = MP_BOP_REVERSE_SEQUENCE;
    lw_copy_inputs(x);
    lw_p(x, ta);
    return MP_OK;
  }
  if (strcmp(t, "NonZero") == 0 || strcmp(t, "Compress") == 0 ||
      strcmp(t, "Unique") == 0 || strcmp(t, "NonMaxSuppression") == 0) {
    return lw_select(x, t);
  }
  return lw_unsup(x, "the runtime has no kernel for this op");
}

/* The ops whose output shape depends on the data. The runtime runs the
 * shapes of the plan, so each run checks that the op selects exactly the
 * count the plan holds (runtime/ops_select.c): a declared shape or one
 * the input's known value gives passes; a plan at the op's bound fails
 * unless the data fills it. */
static mp_status lw_select(lw *x, const char *t) {
  const mp_tensor *in = lw_t(x, 0);
  uint32_t rank = in ? in->rank : 0;
  lw_copy_inputs(x);
  if (strcmp(t, "NonZero") == 0) {
    x->o->kernel = MP_BOP_NON_ZERO;
  } else if (strcmp(t, "Compress") == 0) {
    x->o->kernel = MP_BOP_COMPRESS;
    lw_p(x, lw_attr(x, "axis") ? lw_axis(lw_int(x, "axis", 0), rank) : -1);
  } else if (strcmp(t, "Unique") == 0) {
    x->o->kernel = MP_BOP_UNIQUE;
    lw_p(x, lw_int(x, "sorted", 1) != 0);
    lw_p(x, lw_attr(x, "axis") ? lw_axis(lw_int(x, "axis", 0), rank) : -1);
  } else {
    x->o->kernel = MP_BOP_NMS;
    lw_p(x, lw_int(x, "center_point_box", 0));
  }
  return MP_OK;
}

/* The index, layout and selection ops (runtime/ops_index.c). */
static mp_status lw_index(lw *x, const char *t, uint32_t rank) {
  if (strcmp(t, "ArgMax") == 0 || strcmp(t, "ArgMin") == 0) {
    x->o->kernel = MP_BOP_ARG;
    lw_in(x, x->op->inputs[0]);
    lw_p(x, t[4] == 'i');
    lw_p(x, lw_axis(lw_int(x, "axis", 0), rank));
    lw_p(x, lw_int(x, "keepdims", 1) != 0);
    lw_p(x, lw_int(x, "select_last_index", 0) != 0);
    return MP_OK;
  }
  if (strcmp(t, "GatherElements") == 0) {
    x->o->kernel = MP_BOP_GATHER_ELEMENTS;
    lw_copy_inputs(x);
    lw_p(x, lw_axis(lw_int(x, "axis", 0), rank));
    return MP_OK;
  }
  if (strcmp(t, "ScatterElements") == 0 || strcmp(t, "Scatter") == 0) {
    int red = lw_scatter_reduction(x);
    if (red < 0)
      return lw_unsup(x, "reduction '%s'", lw_str(x, "reduction", ""));
    x->o->kernel = MP_BOP_SCATTER_ELEMENTS;
    lw_copy_inputs(x);
    lw_p(x, lw_axis(lw_int(x, "axis", 0), rank));
    lw_p(x, red);
    return MP_OK;
  }
  if (strcmp(t, "GatherND") == 0 || strcmp(t, "ScatterND") == 0) {
    bool scatter = t[0] == 'S';
    int red = scatter ? lw_scatter_reduction(x) : 0;
    if (red < 0)
      return lw_unsup(x, "reduction '%s'", lw_str(x, "reduction", ""));
    x->o->kernel = scatter ? MP_BOP_SCATTER_ND : MP_BOP_GATHER_ND;
    lw_copy_inputs(x);
    lw_p(x, scatter ? red : lw_int(x, "batch_dims", 0));
    return MP_OK;
  }
  if (strcmp(t, "Trilu") == 0) {
    x->o->kernel = MP_BOP_TRILU;
    lw_copy_inputs(x);
    lw_p(x, lw_int(x, "upper", 1) != 0);
    return MP_OK;
  }
  if (strcmp(t, "CumSum") == 0) {
    x->o->kernel = MP_BOP_CUMSUM;
    lw_copy_inputs(x);
    lw_p(x, lw_int(x, "exclusive", 0) != 0);
    lw_p(x, lw_int(x, "reverse", 0) != 0);
    return MP_OK;
  }
  if (strcmp(t, "Hardmax") == 0) {
    bool old = mp_graph_opset(x->g) > 0 && mp_graph_opset(x->g) < 13;
    x->o->kernel = MP_BOP_HARDMAX;
    lw_in(x, x->op->inputs[0]);
    lw_p(x, lw_axis(lw_int(x, "axis", old ? 1 : -1), rank));
    lw_p(x, old);
    return MP_OK;
  }
  if (strcmp(t, "DepthToSpace") == 0 || strcmp(t, "SpaceToDepth") == 0) {
    bool to_space = t[0] == 'D';
    x->o->kernel = MP_BOP_DEPTH_SPACE;
    lw_in(x, x->op->inputs[0]);
    lw_p(x, to_space);
    lw_p(x, to_space && strcmp(lw_str(x, "mode", "DCR"), "CRD") == 0);
    lw_p(x, lw_int(x, "blocksize", 0));
    return MP_OK;
  }
  if (strcmp(t, "Tile") == 0 || strcmp(t, "Expand") == 0) {
    x->o->kernel = t[0] == 'T' ? MP_BOP_TILE : MP_BOP_EXPAND;
    lw_copy_inputs(x);
    return MP_OK;
  }
  if (strcmp(t, "OneHot") == 0) {
    const mp_tensor *y = lw_out(x, 0);
    x->o->kernel = MP_BOP_ONEHOT;
    lw_in(x, x->op->inputs[0]);
    lw_in(x, x->op->n_inputs > 2 ? x->op->inputs[2] : -1);
    lw_p(x, lw_axis(lw_int(x, "axis", -1), y->rank));
    return MP_OK;
  }
  if (strcmp(t, "TopK") == 0) {
    if (x->op->n_outputs != 2) return lw_unsup(x, "one output");
    x->o->kernel = MP_BOP_TOPK;
    lw_in(x, x->op->inputs[0]);
    lw_p(x, lw_axis(lw_int(x, "axis", -1), rank));
    lw_p(x, lw_int(x, "largest", 1) != 0);
    return MP_OK;
  }
  if (strcmp(t, "IsNaN") == 0 || strcmp(t, "IsInf") == 0) {
    x->o->kernel = MP_BOP_FPCLASS;
    lw_in(x, x->op->inputs[0]);
    lw_p(x, t[2] == 'N');
    lw_p(x, lw_int(x, "detect_negative", 1) != 0);
    lw_p(x, lw_int(x, "detect_positive", 1) != 0);
    return MP_OK;
  }
  if (strcmp(t, "CastLike") == 0) {
    x->o->kernel = MP_BOP_CAST;
    lw_in(x, x->op->inputs[0]);
    return MP_OK;
  }
  if (strcmp(t, "EyeLike") == 0) return lw_eye_like(x);
  if (strcmp(t, "GridSample") == 0) {
    const char *m = lw_str(x, "mode", "bilinear");
    const char *pm = lw_str(x, "padding_mode", "zeros");
    int mode = strcmp(m, "bilinear") == 0 || strcmp(m, "linear") == 0
                   ? MP_KGRID_BILINEAR
               : strcmp(m, "nearest") == 0 ? MP_KGRID_NEAREST
               : strcmp(m, "bicubic") == 0 || strcmp(m, "cubic") == 0
                   ? MP_KGRID_BICUBIC
                   : -1;
    int pad = strcmp(pm, "zeros") == 0        ? MP_KGRID_ZEROS
              : strcmp(pm, "border") == 0     ? MP_KGRID_BORDER
              : strcmp(pm, "reflection") == 0 ? MP_KGRID_REFLECTION
                                              : -1;
    if (mode < 0 || pad < 0) {
      return lw_unsup(x, "mode '%s' with padding_mode '%s'", m, pm);
    }
    x->o->kernel = MP_BOP_GRID_SAMPLE;
    lw_copy_inputs(x);
    lw_p(x, mode);
    lw_p(x, pad);
    lw_p(x, lw_int(x, "align_corners", 0) != 0);
    return MP_OK;
  }
  return lw_stats(x, t, rank);
}

/* Scan's axes attribute at k (default 0), made non-negative for rank. */
static int64_t lw_scan_axis(const lw *x, const char *name, uint32_t k,
                            uint32_t rank) {
  const mp_attr *a = lw_attr(x, name);
  int64_t v = a && a->kind == MP_ATTR_INTS && k < a->n ? a->ints[k] : 0;
  return lw_axis(v, rank);
}

static int64_t lw_scan_dir(const lw *x, const char *name, uint32_t k) {
  const mp_attr *a = lw_attr(x, name);
  return a && a->kind == MP_ATTR_INTS && k < a->n && a->ints[k] != 0;
}

/* Loop and Scan as the ONNX importer flattens them (mplan.LoopEnter,
 * mplan.ScanEnter, then the node): LOOP_ENTER and LOOP (bundle.h). The
 * LOOP's params[1] is its enter op's graph index here; bundle_write.c
 * makes it a step. */
static mp_status lw_loop(lw *x, const char *t) {
  bool scan = strstr(t, "Scan") != NULL;
  if (scan && mp_graph_opset(x->g) > 0 && mp_graph_opset(x->g) < 9) {
    return lw_unsup(x, "a Scan of opset 8 (with a batch axis)");
  }
  if (strncmp(t, "mplan.", 6) == 0) {
    x->o->kernel = MP_BOP_LOOP_ENTER;
    lw_copy_inputs(x);
    lw_p(x, scan);
    if (scan) {
      int64_t m = lw_int(x, "num_scan_inputs", 0);
      if (m < 1 || m > x->op->n_inputs) return lw_unsup(x, "num_scan_inputs");
      uint32_t states = x->op->n_inputs - (uint32_t)m;
      lw_p(x, m);
      for (uint32_t k = 0; k < (uint32_t)m; k++) {
        const mp_tensor *in = lw_t(x, states + k);
        if (!in) return lw_unsup(x, "scan input %u is omitted", k);
        lw_p(x, lw_scan_axis(x, "scan_input_axes", k, in->rank));
      }
      for (uint32_t k = 0; k < (uint32_t)m; k++) {
        lw_p(x, lw_scan_dir(x, "scan_input_directions", k));
      }
    }
    return MP_OK;
  }
  int64_t orig = lw_int(x, "mplan.orig_inputs", -1);
  int64_t body = lw_int(x, "mplan.body_outputs", -1);
  int64_t at = lw_int(x, "mplan.enter_input", -1);
  if (orig < 0 || body < 0 || at < 0 || at >= x->op->n_inputs ||
      orig + body > x->op->n_inputs || x->op->inputs[at] < 0) {
    return lw_unsup(x, "not imported with its body");
  }
  int32_t e = mp_graph_tensor(x->g, (size_t)x->op->inputs[at])->producer;
  if (e < 0) return lw_unsup(x, "its enter op is missing");
  const mp_op *enter = mp_graph_op(x->g, (size_t)e);
  int64_t carried = scan ? orig - lw_int(x, "num_scan_inputs", 0) : orig - 2;
  if (carried < 0 || carried > x->op->n_outputs) {
    return lw_unsup(x, "carried values");
  }
  x->o->kernel = MP_BOP_LOOP;
  for (int64_t k = 0; k < orig + body; k++) lw_in(x, x->op->inputs[k]);
  for (uint32_t k = 0; k < enter->n_outputs; k++) lw_in(x, enter->outputs[k]);
  int64_t scans = (int64_t)x->op->n_outputs - carried;
  lw_p(x, scan);
  lw_p(x, e);
  lw_p(x, orig);
  lw_p(x, body);
  lw_p(x, carried);
  lw_p(x, scans);
  for (int64_t k = 0; scan && k < scans; k++) {
    lw_p(x, lw_scan_axis(x, "scan_output_axes", (uint32_t)k,
                         lw_out(x, (uint32_t)(carried + k))->rank));
  }
  for (int64_t k = 0; scan && k < scans; k++) {
    lw_p(x, lw_scan_dir(x, "scan_output_directions", (uint32_t)k));
  }
  return MP_OK;
}

/* Adagrad, Momentum and Adam of ai.onnx.preview.training (OPTIM in
 * bundle.h): R, T, then n tensors X, n gradients G and n of each state;
 * n follows from the outputs (X and each state for each tensor). */
static mp_status lw_optim(lw *x, const char *t) {
  int kind = strcmp(t, "Adagrad") == 0    ? MP_KOPT_ADAGRAD
             : strcmp(t, "Adam") == 0     ? MP_KOPT_ADAM
             : strcmp(t, "Momentum") == 0 ? MP_KOPT_MOMENTUM
                                          : -1;
  if (kind < 0) return lw_unsup(x, "the runtime has no kernel for this op");
  uint32_t states = kind == MP_KOPT_ADAM ? 2 : 1;
  uint32_t n = x->op->n_outputs / (1 + states);
  if (n == 0 || x->op->n_outputs != n * (1 + states) ||
      x->op->n_inputs != 2 + n * (2 + states)) {
    return lw_unsup(x,
                    "takes R, T, then %u groups of n inputs for %u "
                    "groups of n outputs",
                    2 + states, 1 + states);
  }
  if (kind == MP_KOPT_MOMENTUM) {
    const char *mode = lw_str(x, "mode", "");
    if (strcmp(mode, "nesterov") == 0) {
      kind = MP_KOPT_NESTEROV;
    } else if (strcmp(mode, "standard") != 0) {
      return lw_unsup(x, "mode '%s' is neither standard nor nesterov", mode);
    }
  }
  bool adam = kind == MP_KOPT_ADAM;
  if ((kind == MP_KOPT_MOMENTUM || kind == MP_KOPT_NESTEROV) &&
      (!lw_attr(x, "alpha") || !lw_attr(x, "beta") ||
       !lw_attr(x, "norm_coefficient"))) {
    return lw_unsup(x, "Momentum needs alpha, beta and norm_coefficient");
  }
  x->o->kernel = MP_BOP_OPTIM;
  lw_copy_inputs(x);
  lw_p(x, kind);
  lw_p(x, n);
  lw_pf(x, lw_float(x, "alpha", adam ? 0.9 : 0));
  lw_pf(x, lw_float(x, "beta", adam ? 0.999 : 0));
  lw_pf(x, lw_float(x, "epsilon", adam ? 1e-6 : 0));
  lw_pf(x, lw_float(x, "norm_coefficient", 0));
  lw_pf(x, adam ? lw_float(x, "norm_coefficient_post", 0) : 0);
  lw_pf(x, kind == MP_KOPT_ADAGRAD ? lw_float(x, "decay_factor", 0) : 0);
  return MP_OK;
}

/* TfIdfVectorizer with an integer pool (TFIDF in bundle.h). */
static mp_status lw_tfidf(lw *x) {
  static const char *const modes[] = {"TF", "IDF", "TFIDF"};
  const char *mode = lw_str(x, "mode", "");
  int m = -1;
  for (int k = 0; k < 3; k++) {
    if (strcmp(mode, modes[k]) == 0) m = k;
  }
  const mp_attr *counts = lw_attr(x, "ngram_counts");
  const mp_attr *pool = lw_attr(x, "pool_int64s");
  const mp_attr *index = lw_attr(x, "ngram_indexes");
  const mp_attr *w = lw_attr(x, "weights");
  if (lw_attr(x, "pool_strings")) return lw_unsup(x, "a pool of strings");
  if (m < 0 || !counts || counts->kind != MP_ATTR_INTS || !pool ||
      pool->kind != MP_ATTR_INTS || !index || index->kind != MP_ATTR_INTS ||
      (w && w->kind != MP_ATTR_FLOATS)) {
    return lw_unsup(x,
                    "mode, ngram_counts, pool_int64s and ngram_indexes "
                    "(and weights as floats)");
  }
  x->o->kernel = MP_BOP_TFIDF;
  lw_in(x, x->op->inputs[0]);
  lw_p(x, lw_int(x, "min_gram_length", 0));
  lw_p(x, lw_int(x, "max_gram_length", 0));
  lw_p(x, lw_int(x, "max_skip_count", 0));
  lw_p(x, m);
  const mp_attr *lists[] = {counts, pool, index};
  for (int k = 0; k < 3; k++) {
    lw_p(x, (int64_t)lists[k]->n);
    for (size_t i = 0; i < lists[k]->n; i++) lw_p(x, lists[k]->ints[i]);
  }
  lw_p(x, w ? (int64_t)w->n : 0);
  for (size_t i = 0; w && i < w->n; i++) lw_pf(x, w->floats[i]);
  return MP_OK;
}

static mp_status lw_misc(lw *x, const char *t) {
  const mp_tensor *in = lw_t(x, 0);
  uint32_t rank = in ? in->rank : 0;
  if (strcmp(t, "Softmax") == 0 || strcmp(t, "LogSoftmax") == 0) {
    bool old = mp_graph_opset(x->g) > 0 && mp_graph_opset(x->g) < 13;
    x->o->kernel = MP_BOP_SOFTMAX;
    lw_in(x, x->op->inputs[0]);
    lw_p(x, lw_axis(lw_int(x, "axis", old ? 1 : -1), rank));
    lw_p(x, t[0] == 'L');
    lw_p(x, old);
    return MP_OK;
  }
  if (strcmp(t, "BatchNormalization") == 0) {
    /* training_mode (opset 14): Y and the optional running mean and
     * variance. The outputs of the older training forms (saved mean and
     * variance) are not computed. */
    bool train = lw_int(x, "training_mode", 0) != 0;
    if (train ? x->op->n_outputs != 1 && x->op->n_outputs != 3
              : x->op->n_outputs != 1) {
      return lw_unsup(x, "the training outputs of opset < 14");
    }
    if (lw_int(x, "spatial", 1) == 0) {
      return lw_unsup(
          x,
          "spatial=0 (statistics per activation, before opset 9) is not "
          "supported");
    }
    x->o->kernel = MP_BOP_BATCHNORM;
    /* a DequantizeLinear prologue on X (absorb.c rule 9): the tail
     * follows epsilon and brings the inputs */
    if (lw_attr(x, "mplan.prologue")) {
      if (train) return lw_unsup(x, "a prologue in training mode");
      lw_pf(x, lw_float(x, "epsilon", 1e-5));
      return lw_tail(x, 5);
    }
    lw_copy_inputs(x);
    lw_pf(x, lw_float(x, "epsilon", 1e-5));
    if (train) lw_pf(x, lw_float(x, "momentum", 0.9));
    return MP_OK;
  }
  if (strcmp(t, "LayerNormalization") == 0) {
    x->o->kernel = MP_BOP_LAYERNORM;
    lw_copy_inputs(x);
    lw_p(x, lw_axis(lw_int(x, "axis", -1), rank));
    lw_pf(x, lw_float(x, "epsilon", 1e-5));
    return MP_OK;
  }
  if (strcmp(t, "Concat") == 0 || strcmp(t, "Split") == 0) {
    bool split = t[0] == 'S';
    const mp_tensor *w = split ? in : lw_out(x, 0);
    x->o->kernel = split ? MP_BOP_SPLIT : MP_BOP_CONCAT;
    /* a Concat of two with DequantizeLinear prologues (absorb.c rule 9):
     * its tail follows the axis and brings the inputs */
    bool tail = !split && lw_attr(x, "mplan.prologue");
    if (split) {
      lw_in(x, x->op->inputs[0]);
    } else if (!tail) {
      lw_copy_inputs(x);
    }
    lw_p(x, lw_axis(lw_int(x, "axis", 0), w->rank));
    return tail ? lw_tail(x, 2) : MP_OK;
  }
  if (strcmp(t, "Gather") == 0) {
    x->o->kernel = MP_BOP_GATHER;
    lw_copy_inputs(x);
    lw_p(x, lw_axis(lw_int(x, "axis", 0), rank));
    return MP_OK;
  }
  if (strcmp(t, "Transpose") == 0) {
    int64_t perm[MP_MAX_RANK];
    int n = lw_ints(x, "perm", perm, MP_MAX_RANK);
    x->o->kernel = MP_BOP_TRANSPOSE;
    lw_in(x, x->op->inputs[0]);
    for (uint32_t i = 0; i < rank; i++) {
      lw_p(x, n == (int)rank ? perm[i] : (int64_t)(rank - 1 - i));
    }
    return MP_OK;
  }
  if (strcmp(t, "QuantizeLinear") == 0 || strcmp(t, "DequantizeLinear") == 0) {
    /* opset 23's precision: the dtype the division runs in; the
     * kernel's is the scale's own (ONNX codes 1 f32, 10 f16, 11 f64, 16
     * bf16) */
    const mp_tensor *sc = lw_t(x, 1);
    int64_t pr = lw_int(x, "precision", 0);
    mp_dtype sd = sc ? sc->dtype : MP_DTYPE_F32;
    int64_t own = sd == MP_DTYPE_F64    ? 11
                  : sd == MP_DTYPE_F16  ? 10
                  : sd == MP_DTYPE_BF16 ? 16
                                        : 1;
    if (pr != 0 && pr != own) {
      return lw_unsup(x,
                      "precision %lld (the scale's own dtype, %s, is "
                      "supported)",
                      (long long)pr, mp_dtype_name(sd));
    }
    x->o->kernel = t[0] == 'Q' ? MP_BOP_QUANTIZE : MP_BOP_DEQUANTIZE;
    lw_copy_inputs(x);
    lw_p(x, rank ? lw_axis(lw_int(x, "axis", 1), rank) : 0);
    /* opset 21's block_size, a second parameter only when blocked
     * (checked against the scale's shape by shape inference) */
    if (lw_int(x, "block_size", 0) > 0) lw_p(x, lw_int(x, "block_size", 0));
    return MP_OK;
  }
  if (strcmp(t, "LSTM") == 0) return lw_rnn(x, MP_KCELL_LSTM);
  if (strcmp(t, "GRU") == 0) return lw_rnn(x, MP_KCELL_GRU);
  if (strcmp(t, "RNN") == 0) return lw_rnn(x, MP_KCELL_RNN);
  if (strcmp(t, "If") == 0) {
    /* Imported with its taken branch only (import_onnx.c, mplan.branch):
     * that branch ran before it, and the If copies its outputs. */
    int64_t orig = lw_int(x, "mplan.orig_inputs", -1);
    if (lw_int(x, "mplan.branch", -1) < 0 || orig < 0 ||
        (uint64_t)orig + x->op->n_outputs > x->op->n_inputs) {
      return lw_unsup(x,
                      "an If whose condition is not known (bind the inputs "
                      "it depends on with --value)");
    }
    x->o->kernel = MP_BOP_COPY;
    for (uint32_t k = 0; k < x->op->n_outputs; k++) {
      lw_in(x, x->op->inputs[orig + k]);
    }
    return MP_OK;
  }
  if (strcmp(t, "TfIdfVectorizer") == 0) return lw_tfidf(x);
  if (strncmp(t, "ai.onnx.preview.training::", 26) == 0) {
    return lw_optim(x, t + 26);
  }
  if (strcmp(t, "mplan.LoopEnter") == 0 || strcmp(t, "mplan.ScanEnter") == 0 ||
      strcmp(t, "Loop") == 0 || strcmp(t, "Scan") == 0) {
    return lw_loop(x, t);
  }
  if (strcmp(t, "MatMulInteger") == 0 || strcmp(t, "QLinearMatMul") == 0) {
    x->o->kernel = t[0] == 'Q' ? MP_BOP_QLINEAR_MATMUL : MP_BOP_MATMUL_INTEGER;
    lw_copy_inputs(x);
    return MP_OK;
  }
  if (strcmp(t, "DynamicQuantizeLinear") == 0) {
    x->o->kernel = MP_BOP_DYNAMIC_QUANTIZE;
    lw_copy_inputs(x);
    return MP_OK;
  }
  if (strcmp(t, "Cast") == 0) {
    x->o->kernel = MP_BOP_CAST;
    lw_in(x, x->op->inputs[0]);
    return MP_OK;
  }
  if (strcmp(t, "Where") == 0) {
    x->o->kernel = MP_BOP_WHERE;
    lw_copy_inputs(x);
    return MP_OK;
  }
  return lw_index(x, t, rank);
}

/* Dropout in training mode (a training_mode input not known to be 0)
 * is random: not an identity. */
static bool lw_dropout_trains(const lw *x) {
  int64_t v[1];
  if (x->op->n_inputs < 3 || !lw_t(x, 2)) return false;
  return lw_const_ints(x, 2, v, 1) != 1 || v[0] != 0;
}

/* The stream of a random op (bundle.h RANDOM, DROPOUT): its seed
 * attribute when it has one, else (has_seed 0) the op's name. */
static mp_status lw_seed(lw *x) {
  const mp_attr *seed = lw_attr(x, "seed");
  double v = seed ? lw_float(x, "seed", 0) : 0;
  if (!isfinite(v)) return lw_unsup(x, "seed %g is not finite", v);
  lw_p(x, seed != NULL);
  lw_pf(x, v);
  return MP_OK;
}

/* Dropout in inference with one output is a view. With its mask, or with
 * a training_mode input not known to be false, the DROPOUT kernel reads
 * training_mode and the ratio when it runs: in training mode it drops at
 * random from the op's stream. A constant true training_mode with a
 * constant ratio outside [0, 1) is refused here. */
static mp_status lw_dropout(lw *x) {
  if (x->op->n_outputs == 1 && !lw_dropout_trains(x)) {
    x->o->kernel = MP_BOP_VIEW; /* inference: the input itself */
    lw_in(x, x->op->inputs[0]);
    return MP_OK;
  }
  int64_t tm[1];
  double r[1] = {0.5};
  bool trains = x->op->n_inputs >= 3 && lw_t(x, 2) &&
                lw_const_ints(x, 2, tm, 1) == 1 && tm[0] != 0;
  bool ratio_known =
      !(x->op->n_inputs >= 2 && lw_t(x, 1)) || lw_const_floats(x, 1, r, 1) == 1;
  if (trains && ratio_known && !(r[0] >= 0 && r[0] < 1)) {
    return lw_unsup(x, "training mode with ratio %g, outside [0, 1)", r[0]);
  }
  if (x->op->n_outputs > 2) return lw_unsup(x, "more than 2 outputs");
  x->o->kernel = MP_BOP_DROPOUT;
  lw_copy_inputs(x);
  return lw_seed(x);
}

/* RandomUniform, RandomNormal, their Like forms, Bernoulli and
 * Multinomial (bundle.h RANDOM). */
static mp_status lw_random(lw *x, const char *t) {
  bool normal = strstr(t, "Normal") != NULL;
  bool bern = strcmp(t, "Bernoulli") == 0;
  bool multi = strcmp(t, "Multinomial") == 0;
  bool like = bern || multi || strstr(t, "Like") != NULL;
  /* in a Loop body, an input that only orders it (onnx import) */
  bool order = !like && lw_attr(x, "mplan.order_input") != NULL;
  if (x->op->n_outputs != 1 || x->op->n_inputs != (like || order ? 1u : 0u)) {
    return lw_unsup(x, like ? "takes one input" : "takes no input");
  }
  double a = 0, b = 0; /* low and high, or mean and scale */
  if (!bern && !multi) {
    a = normal ? lw_float(x, "mean", 0) : lw_float(x, "low", 0);
    b = normal ? lw_float(x, "scale", 1) : lw_float(x, "high", 1);
  }
  if (!(isfinite(a) && isfinite(b))) {
    return lw_unsup(x, "%s %g and %s %g must be finite",
                    normal ? "mean" : "low", a, normal ? "scale" : "high", b);
  }
  if ((bern || multi) && !lw_is_float(lw_t(x, 0)->dtype)) {
    return lw_unsup(x, "its input '%s' is %s, not a float tensor",
                    lw_t(x, 0)->name, mp_dtype_name(lw_t(x, 0)->dtype));
  }
  x->o->kernel = MP_BOP_RANDOM;
  if (!order) lw_copy_inputs(x);
  lw_p(x, multi    ? MP_KRAND_MULTINOMIAL
          : bern   ? MP_KRAND_BERNOULLI
          : normal ? MP_KRAND_NORMAL
                   : MP_KRAND_UNIFORM);
  mp_status st = lw_seed(x);
  lw_pf(x, a);
  lw_pf(x, b);
  return st;
}

static mp_status lw_dispatch(lw *x) {
  const char *t = x->op->type;
  int u = lw_find(lw_unary, t), b = lw_find(lw_binary, t);
  if (strcmp(t, "Conv") == 0) return lw_conv(x, MP_BOP_CONV);
  if (strcmp(t, "ConvTranspose") == 0) return lw_conv(x, MP_BOP_CONV_TRANSPOSE);
  if (strcmp(t, "ConvInteger") == 0) return lw_conv(x, MP_BOP_CONV_INTEGER);
  if (strcmp(t, "QLinearConv") == 0) return lw_conv(x, MP_BOP_QLINEAR_CONV);
  if (strcmp(t, "Gemm") == 0) return lw_gemm(x, true);
  if (strcmp(t, "MatMul") == 0) return lw_gemm(x, false);
  if (lw_attr(x, "fused_activation") && b < 0) {
    return lw_unsup(x,
                    "fused_activation on a %s (only Conv, ConvTranspose, "
                    "Gemm, MatMul and binary elementwise ops carry one)",
                    t);
  }
  if (strcmp(t, "com.microsoft::MatMulNBits") == 0) return lw_matmul_nbits(x);
  if (strcmp(t, "MaxPool") == 0) return lw_pool(x, MP_BOP_MAXPOOL, false);
  if (strcmp(t, "AveragePool") == 0) return lw_pool(x, MP_BOP_AVGPOOL, false);
  if (strcmp(t, "GlobalAveragePool") == 0)
    return lw_pool(x, MP_BOP_AVGPOOL, true);
  if (strcmp(t, "GlobalMaxPool") == 0) return lw_pool(x, MP_BOP_MAXPOOL, true);
  if (strcmp(t, "LpPool") == 0) return lw_pool(x, MP_BOP_LPPOOL, false);
  if (strcmp(t, "GlobalLpPool") == 0) return lw_pool(x, MP_BOP_LPPOOL, true);
  if (strcmp(t, "Resize") == 0) return lw_resize(x); /* (its own tail) */
  /* an elementwise head: DequantizeLinear prologues, maybe a
   * QuantizeLinear epilogue (absorb.c rule 9; lw_tail checks the rest) */
  const char *pro = lw_str(x, "mplan.prologue", NULL);
  bool ew = ((u >= 0 || b >= 0 || strcmp(t, "Concat") == 0 ||
              strcmp(t, "BatchNormalization") == 0) &&
             pro && strncmp(pro, "DequantizeLinear:", 17) == 0) ||
            (b >= 0 && !pro); /* an f32 head (fuse.c condition 9) */
  if ((lw_attr(x, "mplan.epilogue") && !ew) || (pro && b < 0 && !ew) ||
      lw_attr(x, "mplan.horizontal")) {
    return lw_unsup(
        x,
        "only Conv, ConvTranspose, Gemm, MatMul and MatMulNBits "
        "carry fused ops (an elementwise op DequantizeLinear prologues "
        "and a QuantizeLinear, a binary one a Resize prologue)");
  }
  if (u >= 0) return lw_unary_op(x, u);
  if (b >= 0) return lw_binary_op(x, b);
  if (strcmp(t, "Dropout") == 0) return lw_dropout(x);
  if (strcmp(t, "RandomUniform") == 0 || strcmp(t, "RandomNormal") == 0 ||
      strcmp(t, "RandomUniformLike") == 0 ||
      strcmp(t, "RandomNormalLike") == 0 || strcmp(t, "Bernoulli") == 0 ||
      strcmp(t, "Multinomial") == 0) {
    return lw_random(x, t);
  }
  if (strcmp(t, "MaxUnpool") == 0) return lw_max_unpool(x);
  if (strcmp(t, "RoiAlign") == 0) return lw_roi_align(x);
  if (strcmp(t, "Upsample") == 0) return lw_upsample(x);
  if (strcmp(t, "DFT") == 0) return lw_dft(x);
  if (strcmp(t, "STFT") == 0) {
    x->o->kernel = MP_BOP_STFT;
    lw_copy_inputs(x);
    lw_p(x, lw_int(x, "onesided", 1) != 0);
    return MP_OK;
  }
  if (strcmp(t, "MelWeightMatrix") == 0) {
    x->o->kernel = MP_BOP_MEL_WEIGHT_MATRIX;
    lw_copy_inputs(x);
    return MP_OK;
  }
  if (strcmp(t, "Reshape") == 0 || strcmp(t, "Flatten") == 0 ||
      strcmp(t, "Squeeze") == 0 || strcmp(t, "Unsqueeze") == 0 ||
      strcmp(t, "Identity") == 0) {
    x->o->kernel = MP_BOP_VIEW;
    lw_in(x, x->op->inputs[0]);
    return MP_OK;
  }
  if (strcmp(t, "Sum") == 0 || strcmp(t, "Max") == 0 || strcmp(t, "Min") == 0 ||
      strcmp(t, "Mean") == 0) {
    x->o->kernel = MP_BOP_VARIADIC;
    lw_p(x, t[1] == 'u' ? 0 : t[1] == 'a' ? 1 : t[1] == 'i' ? 2 : 3);
    lw_copy_inputs(x);
    return MP_OK;
  }
  static const lw_name reduces[] = {{"ReduceMean", MP_KR_MEAN},
                                    {"ReduceSum", MP_KR_SUM},
                                    {"ReduceMax", MP_KR_MAX},
                                    {"ReduceMin", MP_KR_MIN},
                                    {"ReduceProd", MP_KR_PROD},
                                    {"ReduceL1", MP_KR_L1},
                                    {"ReduceL2", MP_KR_L2},
                                    {"ReduceSumSquare", MP_KR_SUM_SQUARE},
                                    {"ReduceLogSum", MP_KR_LOG_SUM},
                                    {"ReduceLogSumExp", MP_KR_LOG_SUM_EXP},
                                    {NULL, 0}};
  int r = lw_find(reduces, t);
  if (r >= 0) return lw_reduce(x, r);
  if (strcmp(t, "Slice") == 0) return lw_slice(x);
  if (strcmp(t, "Pad") == 0) return lw_pad(x);
  if (strcmp(t, "ConstantOfShape") == 0) {
    return lw_fill_value(x) ? MP_OK : lw_constant_of_shape(x);
  }
  if (strcmp(t, "Shape") == 0 || strcmp(t, "Size") == 0 ||
      strcmp(t, "Range") == 0) {
    if (lw_fill_value(x)) return MP_OK;
    return lw_unsup(x, "the output is not a known constant");
  }
  return lw_misc(x, t);
}

/* The 4-bit types run in the ops ONNX defines them for that compute or
 * move elements: Cast, QuantizeLinear, DequantizeLinear, Transpose, the
 * views and the If's copy (a Constant is a weight). The other kernels
 * address whole bytes. */
static mp_status lw_nibbles(lw *x) {
  static const int ok[] = {MP_BOP_CAST,      MP_BOP_QUANTIZE, MP_BOP_DEQUANTIZE,
                           MP_BOP_TRANSPOSE, MP_BOP_VIEW,     MP_BOP_COPY};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    if (x->o->kernel == ok[i]) return MP_OK;
  }
  const mp_op *op = x->op;
  /* a MatMul's, a Gemm's or a Conv's DequantizeLinear prologue reads its
   * input and zero point (the last input) by element (runtime/ops.c,
   * op_run_gemm_panels and op_weight_rows) */
  int kn = x->o->kernel;
  const char *pro =
      kn == MP_BOP_MATMUL || kn == MP_BOP_GEMM || kn == MP_BOP_CONV
          ? lw_str(x, "mplan.prologue", NULL)
          : NULL;
  /* the inputs of its DequantizeLinear entries and the trailing zero
   * points (every other trailing input is an f32 scale) */
  mp_prologue pe[2];
  uint32_t n_dq = 0;
  int n_pro = pro ? mp_op_prologues(op, pe, &n_dq) : 0;
  int32_t pro_in[2] = {-1, -1};
  uint32_t tail = 2 * n_dq;
  for (int j = 0; j < n_pro; j++) {
    if (strcmp(pe[j].kind, "DequantizeLinear") == 0 && pe[j].input < 2 &&
        pe[j].input < op->n_inputs) {
      pro_in[j] = op->inputs[pe[j].input];
    }
  }
  for (uint32_t k = 0; k < op->n_inputs + op->n_outputs; k++) {
    int32_t t =
        k < op->n_inputs ? op->inputs[k] : op->outputs[k - op->n_inputs];
    bool trailing = tail && k < op->n_inputs && k + tail >= op->n_inputs;
    if (t < 0 ||
        (k < op->n_inputs && (t == pro_in[0] || t == pro_in[1] || trailing))) {
      continue;
    }
    const mp_tensor *y = mp_graph_tensor(x->g, (size_t)t);
    if (mp_dtype_bits(y->dtype) == 4) {
      return lw_unsup(x,
                      "'%s' is %s: the runtime computes 4-bit tensors in "
                      "Cast, QuantizeLinear, DequantizeLinear, Transpose "
                      "and the reshaping ops only",
                      y->name, mp_dtype_name(y->dtype));
    }
  }
  return MP_OK;
}

mp_status lw_lower(const mp_graph *g, const mp_op *op, lw_op *out,
                   mp_error *err) {
  lw x = {g, op, out, err, false};
  memset(out, 0, sizeof *out);
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    const mp_tensor *t = mp_graph_tensor(g, (size_t)op->outputs[k]);
    if (!lw_kdtype(t->dtype)) {
      return lw_unsup(&x,
                      "output '%s' is %s, which the runtime does not "
                      "compute with",
                      t->name, mp_dtype_name(t->dtype));
    }
  }
  /* Every op the runtime runs reads its first input (a graph that planned
   * may still hold an op without one: plans only need its outputs), but
   * for a Loop's optional trip count, the random ops that take their
   * shape from an attribute and a fill the tile pass made for a patch
   * (a ConstantOfShape of its output's shape). */
  bool loop =
      strcmp(op->type, "Loop") == 0 || strcmp(op->type, "mplan.LoopEnter") == 0;
  bool no_input = strcmp(op->type, "RandomUniform") == 0 ||
                  strcmp(op->type, "RandomNormal") == 0 ||
                  strcmp(op->type, "ConstantOfShape") == 0;
  if (!(no_input && op->n_inputs == 0) &&
      (op->n_inputs == 0 || (op->inputs[0] < 0 && !loop))) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: op '%s' (%s): has no first input, so it cannot "
                        "run",
                        mp_graph_source(g), op->name, op->type);
  }
  mp_status st = lw_dispatch(&x);
  if (st == MP_OK) st = lw_nibbles(&x);
  if (st == MP_OK && x.overflow) {
    st = lw_unsup(&x, "more than %d parameters or inputs", LW_MAX_PARAMS);
  }
  return st;
}
