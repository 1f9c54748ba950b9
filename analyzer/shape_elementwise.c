/*
 * shape_elementwise.c -- shape rules of elementwise ops: unary, binary and
 * variadic with numpy broadcasting, comparisons, Where, Cast, Dropout and
 * the quantize/dequantize family.
 *
 * Invariants:
 *   1. Outputs broadcast all (non-optional) operands; the dtype is the first
 *      operand's, bool for comparisons and logic, the "to" type for Cast.
 *      A binary op of opset < 7 with broadcast=1 and an axis, and PRelu's
 *      per-channel slope, read input 1 with the unit dims appended that
 *      mp_op_legacy_pad gives, values included.
 *   2. Values are evaluated only when every operand has values and the
 *      result is small (shape math); integer arithmetic is checked and a
 *      result that would overflow or divide by zero is simply not kept.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "mplan/onnx.h"
#include "shape_rules.h"

/* Flat index into operand f of the output element at flat index k of an
 * output of rank r and dims d (numpy broadcasting). */
static size_t ew_index(uint32_t r, const int64_t *d, const sh_fact *f,
                       size_t k) {
  size_t idx = 0, stride = 1;
  for (uint32_t j = r; j-- > 0;) {
    size_t coord = k % (size_t)d[j];
    k /= (size_t)d[j];
    if (j + f->rank < r) continue;
    uint32_t fj = j + f->rank - r;
    if (f->d[fj] != 1) idx += coord * stride;
    stride *= (size_t)f->d[fj];
  }
  return idx;
}

static double ew_get(const sh_fact *f, size_t i) {
  return f->v->f ? f->v->f[i] : (double)f->v->i[i];
}

static bool ew_int_op(const char *t, int64_t a, int64_t b, int64_t *r) {
  if (strcmp(t, "Add") == 0 || strcmp(t, "Sum") == 0) {
    return !__builtin_add_overflow(a, b, r);
  }
  if (strcmp(t, "Sub") == 0) return !__builtin_sub_overflow(a, b, r);
  if (strcmp(t, "Mul") == 0) return !__builtin_mul_overflow(a, b, r);
  if (strcmp(t, "Div") == 0 || strcmp(t, "Mod") == 0) {
    if (b == 0 || (a == INT64_MIN && b == -1)) return false;
    /* ONNX integer Div truncates like C; Mod (fmod=0) takes the sign of
     * the divisor like Python. */
    if (t[0] == 'D') {
      *r = a / b;
    } else {
      int64_t m = a % b;
      *r = (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
    }
    return true;
  }
  if (strcmp(t, "Max") == 0) return *r = a > b ? a : b, true;
  if (strcmp(t, "Min") == 0) return *r = a < b ? a : b, true;
  if (strcmp(t, "Equal") == 0) return *r = a == b, true;
  if (strcmp(t, "Less") == 0) return *r = a < b, true;
  if (strcmp(t, "Greater") == 0) return *r = a > b, true;
  if (strcmp(t, "LessOrEqual") == 0) return *r = a <= b, true;
  if (strcmp(t, "GreaterOrEqual") == 0) return *r = a >= b, true;
  if (strcmp(t, "And") == 0) return *r = a && b, true;
  if (strcmp(t, "Or") == 0) return *r = a || b, true;
  if (strcmp(t, "Xor") == 0) return *r = !a != !b, true;
  return false;
}

static bool ew_float_op(const char *t, double a, double b, double *r) {
  if (strcmp(t, "Add") == 0 || strcmp(t, "Sum") == 0) return *r = a + b, true;
  if (strcmp(t, "Sub") == 0) return *r = a - b, true;
  if (strcmp(t, "Mul") == 0) return *r = a * b, true;
  if (strcmp(t, "Div") == 0) return *r = a / b, true;
  if (strcmp(t, "Pow") == 0) return *r = pow(a, b), true;
  if (strcmp(t, "Max") == 0) return *r = a > b ? a : b, true;
  if (strcmp(t, "Min") == 0) return *r = a < b ? a : b, true;
  if (strcmp(t, "Equal") == 0) return *r = a == b, true;
  if (strcmp(t, "Less") == 0) return *r = a < b, true;
  if (strcmp(t, "Greater") == 0) return *r = a > b, true;
  if (strcmp(t, "LessOrEqual") == 0) return *r = a <= b, true;
  if (strcmp(t, "GreaterOrEqual") == 0) return *r = a >= b, true;
  return false;
}

/* Values of a broadcasting op over inputs first..last (invariant 2). The
 * arithmetic is integer when the operands are (int_math). */
static void ew_values(sh_ctx *c, uint32_t first, uint32_t last, bool int_math,
                      bool float_out) {
  sh_out *o = &c->out[0];
  int64_t n = sh_dims_elems(o->rank, o->d);
  if (n > MP_VALUE_MAX) return;
  for (uint32_t k = first; k <= last; k++) {
    if (!sh_in(c, k) || !c->in[k].v) return;
    int_math = int_math && c->in[k].v->i;
  }
  for (size_t e = 0; e < (size_t)n; e++) {
    const sh_fact *f0 = &c->in[first];
    size_t i0 = ew_index(o->rank, o->d, f0, e);
    int64_t iacc = int_math ? f0->v->i[i0] : 0;
    double facc = ew_get(f0, i0);
    for (uint32_t k = first + 1; k <= last; k++) {
      size_t ik = ew_index(o->rank, o->d, &c->in[k], e);
      bool ok =
          int_math
              ? ew_int_op(c->op->type, iacc, c->in[k].v->i[ik], &iacc)
              : ew_float_op(c->op->type, facc, ew_get(&c->in[k], ik), &facc);
      if (!ok) return;
    }
    if (float_out) {
      o->f[e] = int_math ? (double)iacc : facc;
    } else if (int_math) {
      o->i[e] = iacc;
    } else if (!(facc > -9.2e18 && facc < 9.2e18)) {
      return; /* NaN or out of int64's range: no value */
    } else {
      o->i[e] = (int64_t)facc;
    }
  }
  o->has_value = true;
  o->is_float = float_out;
  o->n = (size_t)n;
}

/* Output 0 = the broadcast of inputs first..last, dtype dt. */
static mp_status ew_broadcast(sh_ctx *c, uint32_t first, uint32_t last,
                              mp_dtype dt) {
  uint32_t r = 0;
  int64_t d[MP_MAX_RANK];
  for (uint32_t k = first; k <= last; k++) {
    const sh_fact *f = sh_in(c, k);
    if (!f) return sh_fail(c, "input %u is missing", k);
    mp_status st = sh_broadcast(c, r, d, f->rank, f->d, &r, d);
    if (st != MP_OK) return st;
  }
  sh_set(c, 0, dt, r, d);
  return MP_OK;
}

/* Input 1 as ONNX read it before opset 7 (mp_op_legacy_pad): c's facts
 * copied into in2 with unit dims appended to input 1's, in the context
 * *c2. false when op follows numpy's rules. */
static bool ew_legacy(const sh_ctx *c, sh_ctx *c2, sh_fact in2[2]) {
  const sh_fact *a = sh_in(c, 0), *b = sh_in(c, 1);
  if (c->n_in != 2 || !a || !b) return false;
  uint32_t pad =
      mp_op_legacy_pad(c->op, c->opset, a->rank, a->d, b->rank, b->d);
  if (!pad || b->rank + pad > MP_MAX_RANK) return false;
  in2[0] = *a;
  in2[1] = *b;
  for (uint32_t k = 0; k < pad; k++) in2[1].d[in2[1].rank++] = 1;
  *c2 = *c;
  c2->in = in2;
  return true;
}

mp_status sh_binary(sh_ctx *c) {
  if (c->n_in < 2) return sh_fail(c, "expects two inputs");
  sh_fact in2[2];
  sh_ctx c2;
  if (ew_legacy(c, &c2, in2)) c = &c2;
  mp_status st = ew_broadcast(c, 0, 1, c->in[0].dt);
  if (st == MP_OK) ew_values(c, 0, 1, true, sh_is_float(c->in[0].dt));
  return st;
}

mp_status sh_compare(sh_ctx *c) {
  if (c->n_in < 2) return sh_fail(c, "expects two inputs");
  sh_fact in2[2];
  sh_ctx c2;
  if (ew_legacy(c, &c2, in2)) c = &c2;
  mp_status st = ew_broadcast(c, 0, 1, MP_DTYPE_BOOL);
  if (st == MP_OK) ew_values(c, 0, 1, true, false);
  return st;
}

mp_status sh_variadic(sh_ctx *c) {
  if (c->n_in < 1) return sh_fail(c, "expects at least one input");
  mp_status st = ew_broadcast(c, 0, c->n_in - 1, c->in[0].dt);
  if (st == MP_OK && strcmp(c->op->type, "Mean") != 0) {
    ew_values(c, 0, c->n_in - 1, true, sh_is_float(c->in[0].dt));
  }
  return st;
}

mp_status sh_prelu(sh_ctx *c) {
  if (c->n_in < 2) return sh_fail(c, "expects two inputs");
  sh_fact in2[2];
  sh_ctx c2;
  if (ew_legacy(c, &c2, in2)) c = &c2;
  return ew_broadcast(c, 0, 1, c->in[0].dt);
}

mp_status sh_where(sh_ctx *c) {
  if (c->n_in < 3) return sh_fail(c, "expects three inputs");
  mp_status st = ew_broadcast(c, 0, 2, c->in[1].dt);
  sh_out *o = &c->out[0];
  if (st != MP_OK) return st;
  int64_t n = sh_dims_elems(o->rank, o->d);
  if (n > MP_VALUE_MAX || !c->in[0].v || !c->in[1].v || !c->in[2].v) {
    return MP_OK;
  }
  bool fl = sh_is_float(c->in[1].dt);
  for (size_t e = 0; e < (size_t)n; e++) {
    size_t ic = ew_index(o->rank, o->d, &c->in[0], e);
    uint32_t pick = c->in[0].v->i && c->in[0].v->i[ic] ? 1 : 2;
    size_t ix = ew_index(o->rank, o->d, &c->in[pick], e);
    if (fl) {
      o->f[e] = ew_get(&c->in[pick], ix);
    } else if (c->in[pick].v->i) {
      o->i[e] = c->in[pick].v->i[ix];
    } else {
      return MP_OK;
    }
  }
  o->has_value = true;
  o->is_float = fl;
  o->n = (size_t)n;
  return MP_OK;
}

static bool ew_unary_int(const char *t, int64_t a, int64_t *r) {
  if (strcmp(t, "Identity") == 0 || strcmp(t, "Floor") == 0 ||
      strcmp(t, "Ceil") == 0) {
    return *r = a, true;
  }
  if (strcmp(t, "Relu") == 0) return *r = a > 0 ? a : 0, true;
  if (a == INT64_MIN) return false;
  if (strcmp(t, "Neg") == 0) return *r = -a, true;
  if (strcmp(t, "Abs") == 0) return *r = a < 0 ? -a : a, true;
  return false;
}

static bool ew_unary_float(const char *t, double a, double *r) {
  if (strcmp(t, "Identity") == 0) return *r = a, true;
  if (strcmp(t, "Neg") == 0) return *r = -a, true;
  if (strcmp(t, "Abs") == 0) return *r = fabs(a), true;
  if (strcmp(t, "Floor") == 0) return *r = floor(a), true;
  if (strcmp(t, "Ceil") == 0) return *r = ceil(a), true;
  if (strcmp(t, "Sqrt") == 0) return *r = sqrt(a), true;
  if (strcmp(t, "Relu") == 0) return *r = a > 0 ? a : 0, true;
  return false;
}

/* Same shape and dtype as input 0; a few ops of shape math keep values. */
mp_status sh_unary(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  sh_set(c, 0, x->dt, x->rank, x->d);
  if (!x->v) return MP_OK;
  sh_out *o = &c->out[0];
  for (size_t e = 0; e < x->v->n; e++) {
    bool ok = x->v->i ? ew_unary_int(c->op->type, x->v->i[e], &o->i[e])
                      : ew_unary_float(c->op->type, x->v->f[e], &o->f[e]);
    if (!ok) return MP_OK;
  }
  if (x->v->i) {
    sh_set_ints(c, 0, o->i, x->v->n);
  } else {
    sh_set_floats(c, 0, o->f, x->v->n);
  }
  return MP_OK;
}

mp_status sh_unary_bool(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  sh_set(c, 0, MP_DTYPE_BOOL, x->rank, x->d);
  if (x->v && x->v->i) {
    for (size_t e = 0; e < x->v->n; e++) c->out[0].i[e] = !x->v->i[e];
    sh_set_ints(c, 0, c->out[0].i, x->v->n);
  }
  return MP_OK;
}

mp_status sh_isx(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  sh_set(c, 0, MP_DTYPE_BOOL, x->rank, x->d);
  return MP_OK;
}

static void ew_convert(sh_ctx *c, const sh_fact *x, mp_dtype to) {
  sh_out *o = &c->out[0];
  if (!x->v) return;
  bool fl = sh_is_float(to);
  for (size_t e = 0; e < x->v->n; e++) {
    double v = ew_get(x, e);
    if (fl) {
      o->f[e] = v;
    } else if (to == MP_DTYPE_BOOL) {
      o->i[e] = v != 0;
    } else if (mp_dtype_bits(to) == 4) {
      /* rounded half to even, then saturated (mp_k_cast) */
      double lo = to == MP_DTYPE_I4 ? -8 : 0, hi = to == MP_DTYPE_I4 ? 7 : 15;
      if (v != v) return;
      v = x->v->i ? v : nearbyint(v);
      o->i[e] = (int64_t)(v < lo ? lo : v > hi ? hi : v);
    } else if (x->v->i) {
      o->i[e] = x->v->i[e];
    } else if (!(v > -9.2e18 && v < 9.2e18)) {
      return; /* NaN or out of range: no value */
    } else {
      o->i[e] = (int64_t)v;
    }
  }
  o->has_value = true;
  o->is_float = fl;
  o->n = x->v->n;
}

mp_status sh_cast(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  mp_dtype to;
  if (!x) return sh_fail(c, "input 0 is missing");
  if (!mp_onnx_dtype((int32_t)sh_attr_i(c, "to", 0), &to)) {
    return sh_fail(c, "attribute 'to' is not a known element type");
  }
  sh_set(c, 0, to, x->rank, x->d);
  ew_convert(c, x, to);
  return MP_OK;
}

mp_status sh_castlike(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *like = sh_in(c, 1);
  if (!x || !like) return sh_fail(c, "expects two inputs");
  sh_set(c, 0, like->dt, x->rank, x->d);
  ew_convert(c, x, like->dt);
  return MP_OK;
}

mp_status sh_dropout(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  sh_set(c, 0, x->dt, x->rank, x->d);
  sh_set(c, 1, MP_DTYPE_BOOL, x->rank, x->d);
  return MP_OK;
}

/* Blocked quantization (opset 21's block_size): the scale and the zero
 * point have x's rank and dims, but ceil(x_axis / block_size) along axis,
 * each value covering a run of block_size elements there. */
static mp_status ew_quant_params(sh_ctx *c, const sh_fact *x) {
  int64_t block = sh_attr_i(c, "block_size", 0);
  const sh_fact *s = sh_in(c, 1), *zp = sh_in(c, 2);
  if (!s) return sh_fail(c, "input 1 (scale) is missing");
  /* blocked: the zero point has the scale's shape; otherwise its count
   * (exporters write a scalar scale with a [1] zero point, and the
   * runtime reads both as one value) */
  bool same = zp && zp->rank == s->rank &&
              memcmp(zp->d, s->d, s->rank * sizeof *s->d) == 0;
  if (zp && !same &&
      (block != 0 ||
       sh_dims_elems(zp->rank, zp->d) != sh_dims_elems(s->rank, s->d))) {
    return sh_fail(c, "the zero point's shape is not the scale's");
  }
  if (block == 0) return MP_OK;
  int64_t axis = sh_attr_i(c, "axis", 1);
  if (block < 0) {
    return sh_fail(c, "block_size %" PRId64 " is negative", block);
  }
  if (axis < -(int64_t)x->rank || axis >= (int64_t)x->rank) {
    return sh_fail(c, "axis %" PRId64 " is out of range for rank %u", axis,
                   x->rank);
  }
  if (axis < 0) axis += x->rank;
  if (s->rank != x->rank) {
    return sh_fail(c,
                   "block_size %" PRId64
                   ": the scale has rank %u, the input "
                   "%u (blocked scales have the input's rank)",
                   block, s->rank, x->rank);
  }
  for (uint32_t k = 0; k < x->rank; k++) {
    int64_t want = k == (uint32_t)axis
                       ? x->d[k] / block + (x->d[k] % block != 0)
                       : x->d[k];
    if (s->d[k] != want) {
      return sh_fail(c,
                     "block_size %" PRId64 ": the scale's dim %u is %" PRId64
                     " where the input's %" PRId64 " needs %" PRId64,
                     block, k, s->d[k], x->d[k], want);
    }
  }
  return MP_OK;
}

mp_status sh_quantize(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0), *zp = sh_in(c, 2);
  if (!x) return sh_fail(c, "input 0 is missing");
  mp_status st = ew_quant_params(c, x);
  if (st != MP_OK) return st;
  /* the zero point's type, else opset 21's output_dtype, else uint8 */
  mp_dtype dt = MP_DTYPE_U8;
  int64_t od = sh_attr_i(c, "output_dtype", 0);
  if (zp) {
    if (od != 0 && (!mp_onnx_dtype((int32_t)od, &dt) || dt != zp->dt)) {
      return sh_fail(c, "output_dtype %" PRId64 " is not the zero point's %s",
                     od, mp_dtype_name(zp->dt));
    }
    dt = zp->dt;
  } else if (od != 0 && !mp_onnx_dtype((int32_t)od, &dt)) {
    return sh_fail(c, "output_dtype %" PRId64 " is not a known element type",
                   od);
  }
  sh_set(c, 0, dt, x->rank, x->d);
  return MP_OK;
}

/* The values of a DequantizeLinear to f32 whose input, scale and zero
 * point are known and whose parameters are one value or one per channel
 * of axis (not blocked): each element is the runtime's own expression
 * (kernels/k_quant.c), (float)((double)(v - z) * s), so a weight folded
 * from them holds the bytes the op would have computed. A bias that
 * ONNX Runtime's quantizer writes as DequantizeLinear(int32) then has
 * known values, which rules that depend on them (eliminate rule 9's -0
 * test) can read. */
static void ew_dequantize_values(sh_ctx *c, const sh_fact *x, mp_dtype dt) {
  const sh_fact *s = sh_in(c, 1), *zp = sh_in(c, 2);
  bool runs = x->dt == MP_DTYPE_I8 || x->dt == MP_DTYPE_U8 ||
              x->dt == MP_DTYPE_I4 || x->dt == MP_DTYPE_U4 ||
              x->dt == MP_DTYPE_I32; /* what the runtime dequantizes */
  if (!runs || dt != MP_DTYPE_F32 || s->dt != MP_DTYPE_F32 || !x->v ||
      !x->v->i || !s->v || !s->v->f ||
      (zp && (zp->dt != x->dt || !zp->v || !zp->v->i || zp->v->n != s->v->n)) ||
      sh_attr_i(c, "block_size", 0) != 0) {
    return; /* unknown, or refused at compile: no values */
  }
  size_t ns = s->v->n, n = x->v->n;
  int64_t outer = 1, ch = 1, inner = (int64_t)n;
  if (ns != 1) {
    if (c->opset != 0 && c->opset < 13) return; /* per tensor only */
    int64_t axis = sh_attr_i(c, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= (int64_t)x->rank || s->rank != 1 ||
        (int64_t)ns != x->d[axis]) {
      return;
    }
    ch = x->d[axis];
    for (int64_t k = 0; k < axis; k++) outer *= x->d[k];
    inner = ch && outer ? (int64_t)n / (outer * ch) : 0;
  }
  double *y = c->out[0].f;
  for (size_t e = 0; e < n; e++) {
    size_t q = ns == 1 ? 0 : (size_t)((int64_t)e / inner % ch);
    int64_t z = zp ? zp->v->i[q] : 0; /* (as many as scales) */
    y[e] = (float)((double)(x->v->i[e] - z) * (float)s->v->f[q]);
  }
  sh_set_floats(c, 0, y, n);
}

mp_status sh_dequantize(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  mp_status st = ew_quant_params(c, x);
  if (st != MP_OK) return st;
  /* opset 23's output_dtype, else the scale's type (opset 19 on) */
  const sh_fact *s = sh_in(c, 1);
  mp_dtype dt = sh_is_float(s->dt) ? s->dt : MP_DTYPE_F32;
  int64_t od = sh_attr_i(c, "output_dtype", 0);
  if (od != 0 && (!mp_onnx_dtype((int32_t)od, &dt) || !sh_is_float(dt))) {
    return sh_fail(c, "output_dtype %" PRId64 " is not a float type", od);
  }
  sh_set(c, 0, dt, x->rank, x->d);
  ew_dequantize_values(c, x, dt);
  return MP_OK;
}

mp_status sh_dyn_quantize(sh_ctx *c) {
  const sh_fact *x = sh_in(c, 0);
  if (!x) return sh_fail(c, "input 0 is missing");
  sh_set(c, 0, MP_DTYPE_U8, x->rank, x->d);
  sh_set(c, 1, MP_DTYPE_F32, 0, NULL);
  sh_set(c, 2, MP_DTYPE_U8, 0, NULL);
  return MP_OK;
}
