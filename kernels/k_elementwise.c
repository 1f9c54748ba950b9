/*
 * k_elementwise.c -- unary and binary elementwise kernels, Where, Cast.
 *
 * Invariants:
 *   1. Float math is done in double and rounded once to the output type,
 *      so f32 results are within one rounding of the exact value.
 *   2. Integer arithmetic is done in 64-bit unsigned (wrapping, never
 *      undefined) and stored with the output type's conversion.
 *   3. Every loop writes y[i] only after reading the operands of element
 *      i, so y may alias an operand of the same shape (in place).
 */
#include <math.h>
#include <string.h>

#include "mplan/kernels.h"

static double ku_f(mp_kunary op, const mp_kunary_params *p, double x) {
  switch (op) {
    case MP_KU_RELU:
      /* max(x, +0) as ONNX and numpy: NaN stays, a negative or -0
       * gives +0 (0 * x would give -0, and 1 / Relu(x) -inf) */
      return x > 0 || x != x ? x : 0.0;
    case MP_KU_SIGMOID:
      return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
    case MP_KU_TANH:
      return tanh(x);
    case MP_KU_EXP:
      return exp(x);
    case MP_KU_SQRT:
      return sqrt(x);
    case MP_KU_ERF:
      return erf(x);
    case MP_KU_GELU:
      return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case MP_KU_GELU_TANH:
      return 0.5 * x *
             (1 + tanh(sqrt(2.0 / 3.14159265358979323846) *
                       (x + 0.044715 * x * x * x)));
    case MP_KU_HARDSIGMOID: {
      double v = p->alpha * x + p->beta;
      return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case MP_KU_HARDSWISH: {
      double v = x / 6 + 0.5;
      return x * (v < 0 ? 0 : v > 1 ? 1 : v);
    }
    case MP_KU_LEAKYRELU:
      return x < 0 ? p->alpha * x : x;
    case MP_KU_CLIP:
      return x < p->alpha ? p->alpha : x > p->beta ? p->beta : x;
    case MP_KU_NEG:
      return -x;
    case MP_KU_ABS:
      return fabs(x);
    case MP_KU_FLOOR:
      return floor(x);
    case MP_KU_CEIL:
      return ceil(x);
    case MP_KU_RECIPROCAL:
      return 1 / x;
    case MP_KU_LOG:
      return log(x);
    case MP_KU_SIN:
      return sin(x);
    case MP_KU_COS:
      return cos(x);
    case MP_KU_TAN:
      return tan(x);
    case MP_KU_ASIN:
      return asin(x);
    case MP_KU_ACOS:
      return acos(x);
    case MP_KU_ATAN:
      return atan(x);
    case MP_KU_SINH:
      return sinh(x);
    case MP_KU_COSH:
      return cosh(x);
    case MP_KU_ASINH:
      return asinh(x);
    case MP_KU_ACOSH:
      return acosh(x);
    case MP_KU_ATANH:
      return atanh(x);
    case MP_KU_ELU:
      return x < 0 ? p->alpha * (exp(x) - 1) : x;
    case MP_KU_SELU:
      return p->beta * (x <= 0 ? p->alpha * (exp(x) - 1) : x);
    case MP_KU_CELU:
      return (x > 0 ? x : 0) + fmin(0, p->alpha * (exp(x / p->alpha) - 1));
    case MP_KU_SOFTPLUS:
      return x > 30 ? x : log1p(exp(x));
    case MP_KU_SOFTSIGN:
      return x / (1 + fabs(x));
    case MP_KU_MISH:
      return x * tanh(x > 30 ? x : log1p(exp(x)));
    case MP_KU_SWISH: { /* x sigmoid(alpha x), the sigmoid as above */
      double z = p->alpha * x;
      return x * (z >= 0 ? 1 / (1 + exp(-z)) : exp(z) / (1 + exp(z)));
    }
    case MP_KU_THRESHOLDEDRELU:
      return x > p->alpha ? x : 0;
    case MP_KU_SHRINK:
      return x < -p->alpha ? x + p->beta : x > p->alpha ? x - p->beta : 0;
    case MP_KU_NOT:
      return x == 0;
    case MP_KU_SIGN:
      return x > 0 ? 1 : x < 0 ? -1 : 0;
    case MP_KU_ROUND:
      return nearbyint(x); /* half to even under the default mode */
    default:
      return x;
  }
}

/* Integer forms of the ops that are exact on integers. */
static bool ku_int(mp_kunary op, const mp_kunary_params *p, int64_t x,
                   int64_t *y) {
  switch (op) {
    case MP_KU_RELU:
      *y = x > 0 ? x : 0;
      return true;
    case MP_KU_NEG:
      *y = (int64_t)(0 - (uint64_t)x);
      return true;
    case MP_KU_ABS:
      *y = x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
      return true;
    case MP_KU_SIGN:
      *y = x > 0 ? 1 : x < 0 ? -1 : 0;
      return true;
    case MP_KU_IDENTITY:
    case MP_KU_FLOOR:
    case MP_KU_CEIL:
    case MP_KU_ROUND:
      *y = x;
      return true;
    case MP_KU_NOT:
      *y = x == 0;
      return true;
    case MP_KU_BITNOT:
      *y = (int64_t)~(uint64_t)x; /* stored truncated to the width */
      return true;
    case MP_KU_CLIP: {
      double v = (double)x;
      *y = v < p->alpha  ? (int64_t)p->alpha
           : v > p->beta ? (int64_t)p->beta
                         : x;
      return true;
    }
    default:
      return false;
  }
}

static void k_store_i(void *p, int d, size_t k, int64_t v) {
  unsigned char *b = (unsigned char *)p + k * mp_kd_size(d);
  uint64_t u = (uint64_t)v;
  /* Little-endian truncation to the element width (ONNX integer
   * arithmetic wraps); the host is little-endian, as the bundle is. */
  memcpy(b, &u, mp_kd_size(d));
}

void mp_k_unary(mp_kunary op, const mp_kunary_params *p, int d, const void *x,
                void *y, size_t n) {
  if (d == MP_KD_F32) {
    const float *xf = x;
    float *yf = y;
    for (size_t i = 0; i < n; i++) yf[i] = (float)ku_f(op, p, xf[i]);
    return;
  }
  if (!mp_kd_is_float(d) && d != MP_KD_BOOL) {
    int64_t v;
    if (ku_int(op, p, 0, &v)) {
      for (size_t i = 0; i < n; i++) {
        (void)ku_int(op, p, mp_k_load_i(x, d, i), &v);
        if (op == MP_KU_CLIP) {
          mp_k_store(y, d, i, (double)v);
        } else {
          k_store_i(y, d, i, v);
        }
      }
      return;
    }
  }
  for (size_t i = 0; i < n; i++) {
    mp_k_store(y, d, i, ku_f(op, p, mp_k_load(x, d, i)));
  }
}

static double kb_f(mp_kbinary op, double a, double b) {
  switch (op) {
    case MP_KB_ADD:
      return a + b;
    case MP_KB_SUB:
      return a - b;
    case MP_KB_MUL:
      return a * b;
    case MP_KB_DIV:
      return a / b;
    case MP_KB_POW:
      return pow(a, b);
    case MP_KB_PRELU:
      return a < 0 ? a * b : a;
    case MP_KB_MAX:
      return a != a || b != b ? NAN : a > b ? a : b;
    case MP_KB_MIN:
      return a != a || b != b ? NAN : a < b ? a : b;
    case MP_KB_EQUAL:
      return a == b;
    case MP_KB_LESS:
      return a < b;
    case MP_KB_LESS_EQUAL:
      return a <= b;
    case MP_KB_GREATER:
      return a > b;
    case MP_KB_GREATER_EQUAL:
      return a >= b;
    case MP_KB_AND:
      return a != 0 && b != 0;
    case MP_KB_OR:
      return a != 0 || b != 0;
    case MP_KB_XOR:
      return (a != 0) != (b != 0);
    case MP_KB_MOD: {
      double r = fmod(a, b);
      return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
    }
    case MP_KB_FMOD:
      return fmod(a, b);
    default:
      return 0;
  }
}

static int64_t kb_i(mp_kbinary op, int64_t a, int64_t b, bool is_unsigned) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
    case MP_KB_SHL:
      return ub >= 64 ? 0 : (int64_t)(ua << ub);
    case MP_KB_SHR:
      return ub >= 64 ? 0 : (int64_t)(ua >> ub);
    case MP_KB_BITAND:
      return (int64_t)(ua & ub);
    case MP_KB_BITOR:
      return (int64_t)(ua | ub);
    case MP_KB_BITXOR:
      return (int64_t)(ua ^ ub);
    case MP_KB_ADD:
      return (int64_t)(ua + ub);
    case MP_KB_SUB:
      return (int64_t)(ua - ub);
    case MP_KB_MUL:
      return (int64_t)(ua * ub);
    case MP_KB_DIV:
      if (b == 0) return 0;
      if (is_unsigned) return (int64_t)(ua / ub);
      if (a == INT64_MIN && b == -1) return a;
      return a / b;
    case MP_KB_POW: {
      double r = pow((double)a, (double)b);
      return r != r         ? 0
             : r >= 9.2e18  ? INT64_MAX
             : r <= -9.2e18 ? INT64_MIN
                            : (int64_t)r;
    }
    case MP_KB_PRELU:
      return a < 0 ? (int64_t)(ua * ub) : a;
    case MP_KB_MAX:
      return is_unsigned ? (ua > ub ? a : b) : (a > b ? a : b);
    case MP_KB_MIN:
      return is_unsigned ? (ua < ub ? a : b) : (a < b ? a : b);
    case MP_KB_EQUAL:
      return a == b;
    case MP_KB_LESS:
      return is_unsigned ? ua < ub : a < b;
    case MP_KB_LESS_EQUAL:
      return is_unsigned ? ua <= ub : a <= b;
    case MP_KB_GREATER:
      return is_unsigned ? ua > ub : a > b;
    case MP_KB_GREATER_EQUAL:
      return is_unsigned ? ua >= ub : a >= b;
    case MP_KB_AND:
      return a && b;
    case MP_KB_OR:
      return a || b;
    case MP_KB_XOR:
      return !a != !b;
    case MP_KB_MOD:
    case MP_KB_FMOD: {
      if (b == 0) return 0;
      if (is_unsigned) return (int64_t)(ua % ub);
      if (b == -1) return 0;
      int64_t r = a % b;
      if (op == MP_KB_MOD && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
    default:
      return 0;
  }
}

static bool kb_is_unsigned(int d) {
  return d == MP_KD_U8 || d == MP_KD_U16 || d == MP_KD_U32 || d == MP_KD_U64 ||
         d == MP_KD_BOOL;
}

/* Calls body(i, ia, ib, ic) for every output element i, with the operand
 * element indices of the broadcast. */
typedef struct kb_iter {
  int64_t idx[MP_K_MAX_RANK];
  int64_t ia, ib, ic;
} kb_iter;

static void kb_next(const mp_kbcast *bc, kb_iter *it) {
  for (uint32_t d = bc->rank; d-- > 0;) {
    it->ia += bc->sa[d];
    it->ib += bc->sb[d];
    it->ic += bc->sc[d];
    if (++it->idx[d] < bc->dims[d]) return;
    it->ia -= bc->sa[d] * bc->dims[d];
    it->ib -= bc->sb[d] * bc->dims[d];
    it->ic -= bc->sc[d] * bc->dims[d];
    it->idx[d] = 0;
  }
}

static int64_t kb_count(const mp_kbcast *bc) {
  int64_t n = 1;
  for (uint32_t d = 0; d < bc->rank; d++) n *= bc->dims[d];
  return n;
}

static void kb_f32(mp_kbinary op, const mp_kbcast *bc, const float *a,
                   const float *b, float *y) {
  int64_t n = kb_count(bc);
  kb_iter it = {{0}, 0, 0, 0};
  for (int64_t i = 0; i < n; i++) {
    y[i] = (float)kb_f(op, a[it.ia], b[it.ib]);
    kb_next(bc, &it);
  }
}

void mp_k_binary(mp_kbinary op, const mp_kbcast *bc, int d, const void *a,
                 const void *b, int dy, void *y, bool sat) {
  if (d == MP_KD_F32 && dy == MP_KD_F32) {
    kb_f32(op, bc, a, b, y);
    return;
  }
  int64_t n = kb_count(bc);
  kb_iter it = {{0}, 0, 0, 0};
  bool fl = mp_kd_is_float(d), us = kb_is_unsigned(d);
  for (int64_t i = 0; i < n; i++) {
    if (fl) {
      mp_k_store(y, dy, (size_t)i,
                 kb_f(op, mp_k_load(a, d, (size_t)it.ia),
                      mp_k_load(b, d, (size_t)it.ib)));
    } else {
      int64_t va = mp_k_load_i(a, d, (size_t)it.ia);
      int64_t vb = mp_k_load_i(b, d, (size_t)it.ib);
      if (sat) {
        mp_k_store(y, dy, (size_t)i, kb_f(op, (double)va, (double)vb));
      } else {
        k_store_i(y, dy, (size_t)i, kb_i(op, va, vb, us));
      }
    }
    kb_next(bc, &it);
  }
}

void mp_k_where(const mp_kbcast *bc, int d, const void *cond, const void *a,
                const void *b, void *y) {
  size_t es = mp_kd_size(d);
  int64_t n = kb_count(bc);
  kb_iter it = {{0}, 0, 0, 0};
  const unsigned char *c = cond, *pa = a, *pb = b;
  unsigned char *py = y;
  for (int64_t i = 0; i < n; i++) {
    const unsigned char *src =
        c[it.ia] ? pa + it.ib * (int64_t)es : pb + it.ic * (int64_t)es;
    memmove(py + i * (int64_t)es, src, es);
    kb_next(bc, &it);
  }
}

void mp_k_cast(int dx, const void *x, int dy, void *y, size_t n) {
  bool xi = !mp_kd_is_float(dx), yi = !mp_kd_is_float(dy);
  for (size_t i = 0; i < n; i++) {
    if (xi && mp_kd_bits(dy) == 4) {
      /* integers saturate into 4 bits, as ONNX's reference Cast does
       * (ONNX Runtime 1.30 wraps them to the low 4 bits instead) */
      mp_k_store_nibble(y, dy, i, mp_k_load_i(x, dx, i));
    } else if (xi && yi && dy != MP_KD_BOOL) {
      k_store_i(y, dy, i, mp_k_load_i(x, dx, i));
    } else {
      mp_k_store(y, dy, i, mp_k_load(x, dx, i));
    }
  }
  mp_k_nibble_pad(y, dy, n);
}

void mp_k_pow_mixed(const mp_kbcast *bc, int da, const void *a, int db,
                    const void *b, int dy, void *y) {
  int64_t n = kb_count(bc);
  kb_iter it = {{0}, 0, 0, 0};
  for (int64_t i = 0; i < n; i++) {
    double v =
        pow(mp_k_load(a, da, (size_t)it.ia), mp_k_load(b, db, (size_t)it.ib));
    mp_k_store(y, dy, (size_t)i, v);
    kb_next(bc, &it);
  }
}
