/*
 * kv_elementwise.c -- RVV unary and binary elementwise kernels with the
 * scalar kernels' signatures (mplan/kernels_rvv.h).
 *
 * Unary f32 ops are computed in double, as the scalar kernel does, and
 * rounded once: f32 elements at LMUL 2 are widened to f64 at LMUL 4.
 * LMUL 2 is chosen for register pressure (seed 000 section 4): the vector
 * exp behind Exp, Sigmoid and Tanh keeps about six f64 m4 values live (24
 * of the 32 registers); m4 f32 would need m8 doubles, 48 registers.
 *
 * Binary ops run along the innermost run of the broadcast after merging
 * the dims that are contiguous for both operands (a [1,C,H,W] + [1,C,1,1]
 * bias becomes C runs of H*W against one scalar). An operand's run is
 * unit stride, a broadcast scalar or strided. LMUL 4 for f32 and 4 for
 * int8: two operands and a result are 12 registers, leaving room for the
 * masks and temporaries of Max, Min and PRelu; m8 would need 24 before
 * them.
 *
 * Invariants:
 *   1. Add, Sub, Mul, Div, PRelu, Max, Min, the comparisons, Relu, Clip,
 *      Neg, Abs and Identity give the scalar kernel's bits (f32 arithmetic
 *      on f32 operands rounds like double arithmetic rounded to f32; Max
 *      and Min keep the scalar rule for NaN and signed zeros). The exp
 *      based ops are within one f32 rounding of it (kv_exp_f64m4).
 *   2. Each chunk is loaded before it is stored, so y may alias an operand
 *      of its shape (in place), as for the scalar kernels.
 */
#include <math.h>
#include <riscv_vector.h>

#include "kv_util.h"
#include "mplan/kernels_rvv.h"

/* ---- unary --------------------------------------------------------------- */

bool mp_kv_unary_vector(mp_kunary op, int d) {
  if (d == MP_KD_I8) return op == MP_KU_RELU || op == MP_KU_CLIP;
  if (d != MP_KD_F32) return false;
  switch (op) {
    case MP_KU_RELU:
    case MP_KU_CLIP:
    case MP_KU_LEAKYRELU:
    case MP_KU_HARDSIGMOID:
    case MP_KU_HARDSWISH:
    case MP_KU_SIGMOID:
    case MP_KU_SWISH:
    case MP_KU_TANH:
    case MP_KU_EXP:
    case MP_KU_NEG:
    case MP_KU_ABS:
    case MP_KU_IDENTITY:
      return true;
    default:
      return false;
  }
}

/* x >= 0: 1 / (1 + e^-x); else e^x / (1 + e^x) (the scalar kernel's). */
static vfloat64m4_t kv_sigmoid(vfloat64m4_t x, size_t vl) {
  vfloat64m4_t e =
      kv_exp_f64m4(__riscv_vfneg_v_f64m4(__riscv_vfabs_v_f64m4(x, vl), vl), vl);
  vfloat64m4_t den = __riscv_vfadd_vf_f64m4(e, 1.0, vl);
  vfloat64m4_t pos = __riscv_vfrdiv_vf_f64m4(den, 1.0, vl);
  vfloat64m4_t neg = __riscv_vfdiv_vv_f64m4(e, den, vl);
  return __riscv_vmerge_vvm_f64m4(neg, pos,
                                  __riscv_vmfge_vf_f64m4_b16(x, 0, vl), vl);
}

static vfloat64m4_t kv_clamp01(vfloat64m4_t v, size_t vl) {
  v = __riscv_vfmerge_vfm_f64m4(v, 0.0, __riscv_vmflt_vf_f64m4_b16(v, 0, vl),
                                vl);
  return __riscv_vfmerge_vfm_f64m4(v, 1.0, __riscv_vmfgt_vf_f64m4_b16(v, 1, vl),
                                   vl);
}

/* tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2|x|); near 0 the odd
 * series x - x^3/3 + 2x^5/15, whose next term is below 1e-15 relative. */
static vfloat64m4_t kv_tanh(vfloat64m4_t x, size_t vl) {
  vfloat64m4_t ax = __riscv_vfabs_v_f64m4(x, vl);
  vfloat64m4_t e = kv_exp_f64m4(__riscv_vfmul_vf_f64m4(ax, -2.0, vl), vl);
  vfloat64m4_t t =
      __riscv_vfdiv_vv_f64m4(__riscv_vfrsub_vf_f64m4(e, 1.0, vl),
                             __riscv_vfadd_vf_f64m4(e, 1.0, vl), vl);
  t = __riscv_vfsgnj_vv_f64m4(t, x, vl);
  vfloat64m4_t x2 = __riscv_vfmul_vv_f64m4(x, x, vl);
  vfloat64m4_t s = __riscv_vfmv_v_f_f64m4(2.0 / 15, vl);
  s = __riscv_vfmadd_vv_f64m4(s, x2, __riscv_vfmv_v_f_f64m4(-1.0 / 3, vl), vl);
  s = __riscv_vfmadd_vv_f64m4(s, x2, __riscv_vfmv_v_f_f64m4(1.0, vl), vl);
  s = __riscv_vfmul_vv_f64m4(s, x, vl);
  return __riscv_vmerge_vvm_f64m4(
      t, s, __riscv_vmflt_vf_f64m4_b16(ax, 0.004, vl), vl);
}

static vfloat64m4_t kv_unary_f64(mp_kunary op, const mp_kunary_params *p,
                                 vfloat64m4_t x, size_t vl) {
  switch (op) {
    case MP_KU_RELU: /* x > 0 or NaN ? x : +0 (the scalar kernel's) */
      return __riscv_vmerge_vvm_f64m4(
          __riscv_vfmv_v_f_f64m4(0.0, vl), x,
          __riscv_vmor_mm_b16(__riscv_vmfgt_vf_f64m4_b16(x, 0, vl),
                              __riscv_vmfne_vv_f64m4_b16(x, x, vl), vl),
          vl);
    case MP_KU_CLIP: { /* x < lo ? lo : x > hi ? hi : x */
      vfloat64m4_t r = __riscv_vfmerge_vfm_f64m4(
          x, p->beta, __riscv_vmfgt_vf_f64m4_b16(x, p->beta, vl), vl);
      return __riscv_vfmerge_vfm_f64m4(
          r, p->alpha, __riscv_vmflt_vf_f64m4_b16(x, p->alpha, vl), vl);
    }
    case MP_KU_LEAKYRELU:
      return __riscv_vmerge_vvm_f64m4(x,
                                      __riscv_vfmul_vf_f64m4(x, p->alpha, vl),
                                      __riscv_vmflt_vf_f64m4_b16(x, 0, vl), vl);
    case MP_KU_HARDSIGMOID: {
      vfloat64m4_t v = __riscv_vfmul_vf_f64m4(x, p->alpha, vl);
      return kv_clamp01(__riscv_vfadd_vf_f64m4(v, p->beta, vl), vl);
    }
    case MP_KU_HARDSWISH: {
      vfloat64m4_t v = __riscv_vfdiv_vf_f64m4(x, 6.0, vl);
      v = kv_clamp01(__riscv_vfadd_vf_f64m4(v, 0.5, vl), vl);
      return __riscv_vfmul_vv_f64m4(x, v, vl);
    }
    case MP_KU_EXP:
      return kv_exp_f64m4(x, vl);
    case MP_KU_SIGMOID:
      return kv_sigmoid(x, vl);
    case MP_KU_SWISH: /* x sigmoid(alpha x) */
      return __riscv_vfmul_vv_f64m4(
          x, kv_sigmoid(__riscv_vfmul_vf_f64m4(x, p->alpha, vl), vl), vl);
    case MP_KU_TANH:
      return kv_tanh(x, vl);
    case MP_KU_NEG:
      return __riscv_vfneg_v_f64m4(x, vl);
    case MP_KU_ABS:
      return __riscv_vfabs_v_f64m4(x, vl);
    default:
      return x;
  }
}

/* Clip on int8 when both bounds are integers in range (or beyond it on
 * their side, as the -inf/inf of an absent bound): then it is a compare
 * and merge; other bounds go to the scalar kernel. */
static bool kv_clip_i8_bounds(const mp_kunary_params *p, int *lo, int *hi) {
  double a = p->alpha <= -128 ? -128 : p->alpha;
  double b = p->beta >= 127 ? 127 : p->beta;
  if (!(a >= -128 && a <= 127 && b >= -128 && b <= 127)) return false;
  if (a != floor(a) || b != floor(b)) return false;
  *lo = (int)a;
  *hi = (int)b;
  return true;
}

static void kv_unary_i8(mp_kunary op, int lo, int hi, const int8_t *x,
                        int8_t *y, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e8m4(n - i);
    vint8m4_t v = __riscv_vle8_v_i8m4(x + i, vl);
    if (op == MP_KU_RELU) {
      v = __riscv_vmax_vx_i8m4(v, 0, vl);
    } else {
      vint8m4_t r = __riscv_vmerge_vxm_i8m4(
          v, (int8_t)hi, __riscv_vmsgt_vx_i8m4_b2(v, (int8_t)hi, vl), vl);
      v = __riscv_vmerge_vxm_i8m4(
          r, (int8_t)lo, __riscv_vmslt_vx_i8m4_b2(v, (int8_t)lo, vl), vl);
    }
    __riscv_vse8_v_i8m4(y + i, v, vl);
    i += vl;
  }
}

void mp_kv_unary(mp_kunary op, const mp_kunary_params *p, int d, const void *x,
                 void *y, size_t n) {
  int lo = 0, hi = 0;
  if (d == MP_KD_I8 && mp_kv_unary_vector(op, d) &&
      (op == MP_KU_RELU || kv_clip_i8_bounds(p, &lo, &hi))) {
    kv_unary_i8(op, lo, hi, x, y, n);
    return;
  }
  if (d != MP_KD_F32 || !mp_kv_unary_vector(op, d)) {
    mp_k_unary(op, p, d, x, y, n);
    return;
  }
  const float *xf = x;
  float *yf = y;
  for (size_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e32m2(n - i);
    vfloat64m4_t v =
        __riscv_vfwcvt_f_f_v_f64m4(__riscv_vle32_v_f32m2(xf + i, vl), vl);
    v = kv_unary_f64(op, p, v, vl);
    __riscv_vse32_v_f32m2(yf + i, __riscv_vfncvt_f_f_w_f32m2(v, vl), vl);
    i += vl;
  }
}

/* ---- binary -------------------------------------------------------------- */

bool mp_kv_binary_vector(mp_kbinary op, int d, int dy, bool sat) {
  if (d == MP_KD_I8 && dy == MP_KD_I8) {
    return op == MP_KB_ADD || op == MP_KB_SUB || (op == MP_KB_MUL && !sat);
  }
  if (d != MP_KD_F32) return false;
  switch (op) {
    case MP_KB_ADD:
    case MP_KB_SUB:
    case MP_KB_MUL:
    case MP_KB_DIV:
    case MP_KB_PRELU:
    case MP_KB_MAX:
    case MP_KB_MIN:
      return dy == MP_KD_F32;
    case MP_KB_EQUAL:
    case MP_KB_LESS:
    case MP_KB_LESS_EQUAL:
    case MP_KB_GREATER:
    case MP_KB_GREATER_EQUAL:
      return dy == MP_KD_BOOL;
    default:
      return false;
  }
}

typedef void (*kv_run_fn)(mp_kbinary op, bool sat, const void *a, int64_t sa,
                          const void *b, int64_t sb, void *y, int64_t sy,
                          size_t n);

static vfloat32m4_t kv_ld_f32(const float *p, int64_t s, size_t vl) {
  if (s == 1) return __riscv_vle32_v_f32m4(p, vl);
  if (s == 0) return __riscv_vfmv_v_f_f32m4(*p, vl);
  return __riscv_vlse32_v_f32m4(p, (ptrdiff_t)(s * (int64_t)sizeof(float)), vl);
}

static vbool8_t kv_cmp_f32(mp_kbinary op, vfloat32m4_t a, vfloat32m4_t b,
                           size_t vl) {
  switch (op) {
    case MP_KB_EQUAL:
      return __riscv_vmfeq_vv_f32m4_b8(a, b, vl);
    case MP_KB_LESS:
      return __riscv_vmflt_vv_f32m4_b8(a, b, vl);
    case MP_KB_LESS_EQUAL:
      return __riscv_vmfle_vv_f32m4_b8(a, b, vl);
    case MP_KB_GREATER:
      return __riscv_vmfgt_vv_f32m4_b8(a, b, vl);
    default:
      return __riscv_vmfge_vv_f32m4_b8(a, b, vl);
  }
}

static vfloat32m4_t kv_bin_f32(mp_kbinary op, vfloat32m4_t a, vfloat32m4_t b,
                               size_t vl) {
  switch (op) {
    case MP_KB_ADD:
      return __riscv_vfadd_vv_f32m4(a, b, vl);
    case MP_KB_SUB:
      return __riscv_vfsub_vv_f32m4(a, b, vl);
    case MP_KB_MUL:
      return __riscv_vfmul_vv_f32m4(a, b, vl);
    case MP_KB_DIV:
      return __riscv_vfdiv_vv_f32m4(a, b, vl);
    case MP_KB_PRELU:
      return __riscv_vmerge_vvm_f32m4(a, __riscv_vfmul_vv_f32m4(a, b, vl),
                                      __riscv_vmflt_vf_f32m4_b8(a, 0, vl), vl);
    default: { /* Max, Min: NaN if either is; else a > b ? a : b */
      vbool8_t pick_a = op == MP_KB_MAX ? __riscv_vmfgt_vv_f32m4_b8(a, b, vl)
                                        : __riscv_vmflt_vv_f32m4_b8(a, b, vl);
      vfloat32m4_t r = __riscv_vmerge_vvm_f32m4(b, a, pick_a, vl);
      vbool8_t nan =
          __riscv_vmor_mm_b8(__riscv_vmfne_vv_f32m4_b8(a, a, vl),
                             __riscv_vmfne_vv_f32m4_b8(b, b, vl), vl);
      return __riscv_vfmerge_vfm_f32m4(r, NAN, nan, vl);
    }
  }
}

static void kv_run_f32(mp_kbinary op, bool sat, const void *a, int64_t sa,
                       const void *b, int64_t sb, void *y, int64_t sy,
                       size_t n) {
  (void)sat;
  const float *pa = a, *pb = b;
  bool cmp = op >= MP_KB_EQUAL;
  for (size_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e32m4(n - i);
    vfloat32m4_t va = kv_ld_f32(pa + (int64_t)i * sa, sa, vl);
    vfloat32m4_t vb = kv_ld_f32(pb + (int64_t)i * sb, sb, vl);
    if (cmp) {
      vuint8m1_t r = __riscv_vmerge_vxm_u8m1(__riscv_vmv_v_x_u8m1(0, vl), 1,
                                             kv_cmp_f32(op, va, vb, vl), vl);
      if (sy == 1) {
        __riscv_vse8_v_u8m1((uint8_t *)y + i, r, vl);
      } else {
        __riscv_vsse8_v_u8m1((uint8_t *)y + (int64_t)i * sy, (ptrdiff_t)sy, r,
                             vl);
      }
    } else if (sy == 1) {
      __riscv_vse32_v_f32m4((float *)y + i, kv_bin_f32(op, va, vb, vl), vl);
    } else {
      __riscv_vsse32_v_f32m4((float *)y + (int64_t)i * sy,
                             (ptrdiff_t)(sy * (int64_t)sizeof(float)),
                             kv_bin_f32(op, va, vb, vl), vl);
    }
    i += vl;
  }
}

static vint8m4_t kv_ld_i8(const int8_t *p, int64_t s, size_t vl) {
  if (s == 1) return __riscv_vle8_v_i8m4(p, vl);
  if (s == 0) return __riscv_vmv_v_x_i8m4(*p, vl);
  return __riscv_vlse8_v_i8m4(p, (ptrdiff_t)s, vl);
}

static void kv_run_i8(mp_kbinary op, bool sat, const void *a, int64_t sa,
                      const void *b, int64_t sb, void *y, int64_t sy,
                      size_t n) {
  const int8_t *pa = a, *pb = b;
  for (size_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e8m4(n - i);
    vint8m4_t va = kv_ld_i8(pa + (int64_t)i * sa, sa, vl);
    vint8m4_t vb = kv_ld_i8(pb + (int64_t)i * sb, sb, vl);
    vint8m4_t r;
    if (op == MP_KB_ADD) {
      r = sat ? __riscv_vsadd_vv_i8m4(va, vb, vl)
              : __riscv_vadd_vv_i8m4(va, vb, vl);
    } else if (op == MP_KB_SUB) {
      r = sat ? __riscv_vssub_vv_i8m4(va, vb, vl)
              : __riscv_vsub_vv_i8m4(va, vb, vl);
    } else {
      r = __riscv_vmul_vv_i8m4(va, vb, vl);
    }
    if (sy == 1) {
      __riscv_vse8_v_i8m4((int8_t *)y + i, r, vl);
    } else {
      __riscv_vsse8_v_i8m4((int8_t *)y + (int64_t)i * sy, (ptrdiff_t)sy, r, vl);
    }
    i += vl;
  }
}

/* An innermost dim shorter than this under a longer one is run across
 * (mp_kv_binary). */
#define KV_SHORT 8

/* The broadcast with dims of extent 1 dropped and neighbours merged
 * where both operands are contiguous across them. */
static uint32_t kv_coalesce(const mp_kbcast *bc, int64_t *dims, int64_t *sa,
                            int64_t *sb) {
  uint32_t r = 0;
  for (uint32_t d = 0; d < bc->rank; d++) {
    if (bc->dims[d] == 1) continue;
    if (r > 0 && sa[r - 1] == bc->sa[d] * bc->dims[d] &&
        sb[r - 1] == bc->sb[d] * bc->dims[d]) {
      dims[r - 1] *= bc->dims[d];
      sa[r - 1] = bc->sa[d];
      sb[r - 1] = bc->sb[d];
      continue;
    }
    dims[r] = bc->dims[d];
    sa[r] = bc->sa[d];
    sb[r] = bc->sb[d];
    r++;
  }
  if (r == 0) {
    dims[0] = 1;
    sa[0] = sb[0] = 0;
    r = 1;
  }
  return r;
}

void mp_kv_binary(mp_kbinary op, const mp_kbcast *bc, int d, const void *a,
                  const void *b, int dy, void *y, bool sat) {
  if (!mp_kv_binary_vector(op, d, dy, sat)) {
    mp_k_binary(op, bc, d, a, b, dy, y, sat);
    return;
  }
  for (uint32_t i = 0; i < bc->rank; i++) {
    if (bc->dims[i] == 0) return;
  }
  int64_t dims[MP_K_MAX_RANK], sa[MP_K_MAX_RANK], sb[MP_K_MAX_RANK];
  int64_t sy[MP_K_MAX_RANK], idx[MP_K_MAX_RANK] = {0}, ia = 0, ib = 0, iy = 0;
  uint32_t r = kv_coalesce(bc, dims, sa, sb);
  size_t es = mp_kd_size(d), esy = mp_kd_size(dy);
  kv_run_fn run = d == MP_KD_F32 ? kv_run_f32 : kv_run_i8;
  sy[r - 1] = 1;
  for (uint32_t k = r - 1; k-- > 0;) sy[k] = sy[k + 1] * dims[k + 1];
  /* A short innermost dim under a longer one (an operand read replicated,
   * [.., W, f] with f = 2): the vectors run along the longer one, y
   * written with a stride. Every element is the same operation either
   * way. */
  if (r >= 2 && dims[r - 1] < KV_SHORT && dims[r - 2] > dims[r - 1]) {
    int64_t *sw[] = {dims, sa, sb, sy};
    for (size_t j = 0; j < sizeof sw / sizeof *sw; j++) {
      int64_t t = sw[j][r - 1];
      sw[j][r - 1] = sw[j][r - 2];
      sw[j][r - 2] = t;
    }
  }
  int64_t inner = dims[r - 1], outer = 1;
  for (uint32_t i = 0; i + 1 < r; i++) outer *= dims[i];
  for (int64_t o = 0; o < outer; o++) {
    run(op, sat, (const char *)a + (size_t)ia * es, sa[r - 1],
        (const char *)b + (size_t)ib * es, sb[r - 1],
        (char *)y + (size_t)iy * esy, sy[r - 1], (size_t)inner);
    for (uint32_t k = r - 1; k-- > 0;) {
      ia += sa[k];
      ib += sb[k];
      iy += sy[k];
      if (++idx[k] < dims[k]) break;
      ia -= sa[k] * dims[k];
      ib -= sb[k] * dims[k];
      iy -= sy[k] * dims[k];
      idx[k] = 0;
    }
  }
}
