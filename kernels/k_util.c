/*
 * k_util.c -- element types, element loads and stores, broadcasting.
 *
 * Invariants:
 *   1. Element access goes through memcpy, so that a kernel never makes an
 *      unaligned typed access even on a bundle the loader accepted with a
 *      packed layout.
 *   2. Float to integer stores saturate (C leaves out-of-range conversion
 *      undefined; a reference kernel must not have undefined behaviour on
 *      any input), NaN stores 0.
 */
#include <math.h>
#include <string.h>

#include "mplan/kernels.h"

static const struct {
  const char *name;
  unsigned bits;
} kd_info[MP_KD_COUNT] = {
    [MP_KD_F32] = {"f32", 32},   [MP_KD_F64] = {"f64", 64},
    [MP_KD_I8] = {"i8", 8},      [MP_KD_U8] = {"u8", 8},
    [MP_KD_I16] = {"i16", 16},   [MP_KD_U16] = {"u16", 16},
    [MP_KD_I32] = {"i32", 32},   [MP_KD_U32] = {"u32", 32},
    [MP_KD_I64] = {"i64", 64},   [MP_KD_U64] = {"u64", 64},
    [MP_KD_BOOL] = {"bool", 8},  [MP_KD_F16] = {"f16", 16},
    [MP_KD_BF16] = {"bf16", 16}, [MP_KD_I4] = {"i4", 4},
    [MP_KD_U4] = {"u4", 4},
};

unsigned mp_kd_bits(int code) {
  return code > 0 && code < MP_KD_COUNT ? kd_info[code].bits : 0;
}

size_t mp_kd_size(int code) {
  return mp_kd_bits(code) % 8 ? 0 : mp_kd_bits(code) / 8;
}

uint64_t mp_kd_bytes(int code, uint64_t n) {
  return mp_kd_bits(code) == 4 ? n / 2 + n % 2 : n * mp_kd_size(code);
}

/* Element k of 4-bit data: byte k / 2, low nibble first; int4
 * sign-extended. */
static int64_t k_nibble_load(const void *p, int d, size_t k) {
  unsigned char b = ((const unsigned char *)p)[k / 2];
  int v = k % 2 ? b >> 4 : b & 0xf;
  return d == MP_KD_I4 && v >= 8 ? v - 16 : v;
}

/* Stores v (in the type's range) into element k's nibble, leaving the
 * other nibble of its byte as it was. */
static void k_nibble_store(void *p, size_t k, int64_t v) {
  unsigned char *b = (unsigned char *)p + k / 2;
  unsigned n = (unsigned)v & 0xfu;
  *b = (unsigned char)(k % 2 ? (*b & 0x0fu) | n << 4 : (*b & 0xf0u) | n);
}

void mp_k_nibble_pad(void *p, int d, size_t n) {
  if (mp_kd_bits(d) == 4 && n % 2) ((unsigned char *)p)[n / 2] &= 0x0fu;
}

void mp_k_store_nibble(void *p, int d, size_t k, int64_t v) {
  int64_t lo = d == MP_KD_I4 ? -8 : 0, hi = d == MP_KD_I4 ? 7 : 15;
  k_nibble_store(p, k, v < lo ? lo : v > hi ? hi : v);
}

const char *mp_kd_name(int code) {
  return code > 0 && code < MP_KD_COUNT ? kd_info[code].name : "?";
}

/* One element of any kernel dtype, for loads and stores by code. */
typedef union k_scalar {
  int8_t i8;
  uint8_t u8;
  int16_t i16;
  uint16_t u16;
  int32_t i32;
  uint32_t u32;
  int64_t i64;
  uint64_t u64;
  float f32;
  double f64;
} k_scalar;

bool mp_kd_is_float(int code) {
  return code == MP_KD_F32 || code == MP_KD_F64 || code == MP_KD_F16 ||
         code == MP_KD_BF16;
}

/* The two 16-bit float formats: fraction bits, the smallest normal
 * exponent and the exponent bias. */
typedef struct k_half_fmt {
  int frac, emin, bias;
} k_half_fmt;

static const k_half_fmt k_f16 = {10, -14, 15}, k_bf16 = {7, -126, 127};

static double k_half_load(uint16_t h, const k_half_fmt *f) {
  int ebits = 15 - f->frac;
  unsigned e = (h >> f->frac) & ((1u << ebits) - 1u);
  unsigned m = h & ((1u << f->frac) - 1u);
  double v;
  if (e == 0) {
    v = ldexp((double)m, f->emin - f->frac); /* zero or subnormal */
  } else if (e == (1u << ebits) - 1u) {
    v = m ? NAN : INFINITY;
  } else {
    v = ldexp((double)(m | (1u << f->frac)), (int)e - f->bias - f->frac);
  }
  return h & 0x8000u ? -v : v;
}

/* v rounded to nearest even into the format, in one rounding: scaled so
 * the format's last fraction bit is 1, rounded by rint (the default
 * rounding mode is to nearest even), scaled back. */
static uint16_t k_half_store(double v, const k_half_fmt *f) {
  int ebits = 15 - f->frac;
  uint16_t sign = signbit(v) ? 0x8000u : 0;
  uint16_t inf = (uint16_t)(((1u << ebits) - 1u) << f->frac);
  if (v != v) return (uint16_t)(sign | inf | (1u << (f->frac - 1)));
  double a = fabs(v);
  if (a == INFINITY) return (uint16_t)(sign | inf);
  int e;
  (void)frexp(a, &e); /* a in [2^(e-1), 2^e) */
  int ex = a == 0 || e - 1 < f->emin ? f->emin : e - 1;
  double n = rint(ldexp(a, f->frac - ex)); /* at most 2^(frac+1) */
  if (n >= ldexp(1.0, f->frac + 1)) {      /* carried into the next binade */
    n /= 2;
    ex++;
  }
  if (ex > f->bias) return (uint16_t)(sign | inf);
  if (n < ldexp(1.0, f->frac)) return (uint16_t)(sign | (uint16_t)n);
  return (uint16_t)(sign | (unsigned)(ex + f->bias) << f->frac |
                    ((unsigned)n - (1u << f->frac)));
}

int64_t mp_k_load_i(const void *p, int d, size_t k) {
  if (mp_kd_bits(d) == 4) return k_nibble_load(p, d, k);
  const unsigned char *b = (const unsigned char *)p + k * mp_kd_size(d);
  k_scalar u;
  memset(&u, 0, sizeof u); /* an unknown code (size 0) reads as zero */
  memcpy(&u, b, mp_kd_size(d));
  switch (d) {
    case MP_KD_I8:
      return u.i8;
    case MP_KD_U8:
    case MP_KD_BOOL:
      return u.u8;
    case MP_KD_I16:
      return u.i16;
    case MP_KD_U16:
      return u.u16;
    case MP_KD_I32:
      return u.i32;
    case MP_KD_U32:
      return u.u32;
    case MP_KD_I64:
      return u.i64;
    case MP_KD_U64:
      return (int64_t)u.u64;
    case MP_KD_F32:
      return (int64_t)u.f32;
    case MP_KD_F16:
    case MP_KD_BF16: {
      double v = mp_k_load(p, d, k);
      return v != v                        ? 0
             : v >= 9223372036854775808.0  ? INT64_MAX
             : v <= -9223372036854775808.0 ? INT64_MIN
                                           : (int64_t)v;
    }
    default:
      return (int64_t)u.f64;
  }
}

double mp_k_load(const void *p, int d, size_t k) {
  const unsigned char *b = (const unsigned char *)p + k * mp_kd_size(d);
  if (d == MP_KD_F32) {
    float f;
    memcpy(&f, b, sizeof f);
    return f;
  }
  if (d == MP_KD_F64) {
    double f;
    memcpy(&f, b, sizeof f);
    return f;
  }
  if (d == MP_KD_F16 || d == MP_KD_BF16) {
    uint16_t h;
    memcpy(&h, b, sizeof h);
    return k_half_load(h, d == MP_KD_F16 ? &k_f16 : &k_bf16);
  }
  if (d == MP_KD_U64) {
    uint64_t u;
    memcpy(&u, b, sizeof u);
    return (double)u;
  }
  return (double)mp_k_load_i(p, d, k);
}

/* v clamped to [lo, hi], NaN to 0, truncated toward zero. */
static double k_sat(double v, double lo, double hi) {
  if (v != v) return 0;
  v = trunc(v);
  return v < lo ? lo : v > hi ? hi : v;
}

void mp_k_store(void *p, int d, size_t k, double v) {
  if (mp_kd_bits(d) == 4) {
    /* rounded half to even, then saturated; NaN stores 0 */
    mp_k_store_nibble(p, d, k,
                      v != v ? 0 : (int64_t)k_sat(nearbyint(v), -8, 15));
    return;
  }
  unsigned char *b = (unsigned char *)p + k * mp_kd_size(d);
  k_scalar u;
  switch (d) {
    case MP_KD_F32:
      u.f32 = (float)v;
      break;
    case MP_KD_F64:
      u.f64 = v;
      break;
    case MP_KD_F16:
      u.u16 = k_half_store(v, &k_f16);
      break;
    case MP_KD_BF16:
      u.u16 = k_half_store(v, &k_bf16);
      break;
    case MP_KD_I8:
      u.i8 = (int8_t)k_sat(v, -128, 127);
      break;
    case MP_KD_U8:
      u.u8 = (uint8_t)k_sat(v, 0, 255);
      break;
    case MP_KD_BOOL:
      u.u8 = v != 0;
      break;
    case MP_KD_I16:
      u.i16 = (int16_t)k_sat(v, -32768, 32767);
      break;
    case MP_KD_U16:
      u.u16 = (uint16_t)k_sat(v, 0, 65535);
      break;
    case MP_KD_I32:
      u.i32 = (int32_t)k_sat(v, -2147483648.0, 2147483647.0);
      break;
    case MP_KD_U32:
      u.u32 = (uint32_t)k_sat(v, 0, 4294967295.0);
      break;
    case MP_KD_I64:
      /* 2^63 is the first double past INT64_MAX. */
      u.i64 = v != v                        ? 0
              : v >= 9223372036854775808.0  ? INT64_MAX
              : v <= -9223372036854775808.0 ? INT64_MIN
                                            : (int64_t)v;
      break;
    default:
      u.u64 = v != v || v <= 0              ? 0
              : v >= 18446744073709551616.0 ? UINT64_MAX
                                            : (uint64_t)v;
      break;
  }
  memcpy(b, &u, mp_kd_size(d));
}

void mp_kshape_strides(const mp_kshape *s, int64_t *st) {
  int64_t v = 1;
  for (uint32_t i = s->rank; i-- > 0;) {
    st[i] = v;
    v *= s->dims[i];
  }
}

int64_t mp_kshape_count(const mp_kshape *s) {
  int64_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= s->dims[i];
  return n;
}

/* Element strides of operand x right-aligned to out (0 where broadcast). */
static bool k_strides(const mp_kshape *out, const mp_kshape *x, int64_t *st) {
  if (!x) {
    for (uint32_t i = 0; i < out->rank; i++) st[i] = 0;
    return true;
  }
  if (x->rank > out->rank) return false;
  int64_t s = 1;
  for (uint32_t i = out->rank; i-- > 0;) {
    uint32_t off = out->rank - x->rank;
    if (i < off) {
      st[i] = 0;
      continue;
    }
    int64_t d = x->dims[i - off];
    if (d != out->dims[i] && d != 1) return false;
    st[i] = d == 1 ? 0 : s;
    s *= d;
  }
  return true;
}

bool mp_k_bcast_init(mp_kbcast *bc, const mp_kshape *out, const mp_kshape *a,
                     const mp_kshape *b, const mp_kshape *c) {
  memset(bc, 0, sizeof *bc);
  bc->rank = out->rank;
  memcpy(bc->dims, out->dims, sizeof bc->dims);
  return k_strides(out, a, bc->sa) && k_strides(out, b, bc->sb) &&
         k_strides(out, c, bc->sc);
}

int mp_k_compare(int d, const void *a, size_t i, const void *b, size_t j) {
  if (mp_kd_is_float(d)) {
    double x = mp_k_load(a, d, i), y = mp_k_load(b, d, j);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (d == MP_KD_U64) {
    uint64_t x = (uint64_t)mp_k_load_i(a, d, i),
             y = (uint64_t)mp_k_load_i(b, d, j);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  int64_t x = mp_k_load_i(a, d, i), y = mp_k_load_i(b, d, j);
  return x < y ? -1 : x > y ? 1 : 0;
}
