/*
 * kv_attn.c -- RVV RMSNormalization, RotaryEmbedding and Attention (f32),
 * with the contracts of the scalar kernels of k_attn.c
 * (mplan/kernels_rvv.h).
 *
 * As there, arithmetic is in double and each output is rounded once: f32
 * at LMUL 2 widened to f64 at LMUL 4.
 *
 * Invariants:
 *   1. RMSNormalization's sum of squares and Attention's dot products are
 *      unordered vector reductions in double (vfredusum): they differ from
 *      the scalar kernel's ordered sums by reassociation only. Attention's
 *      weighted sum of value rows runs across the value's elements, each
 *      accumulating its rows in the scalar kernel's order (with fused
 *      multiply-adds in double); the softmax's exponentials are
 *      kv_exp_f64m4 (kv_util.h invariant 1). So an output differs from the
 *      scalar kernel's by at most one f32 rounding.
 *   2. RotaryEmbedding computes each rotated pair as the scalar kernel
 *      does, a vector of pairs at a time (strided for interleaved pairs);
 *      a chunk is loaded whole before it is stored, so y may equal x.
 *   3. The mask, the causal cut and nonpad_kv_seqlen are the scalar
 *      kernel's own function (mp_k_attention_bias); the softcap and
 *      qk_matmul_output are its code per score (O(total) per query, against the
 *      O(total x head) of the products).
 */
#include <math.h>
#include <riscv_vector.h>
#include <string.h>

#include "kv_util.h"
#include "mplan/kernels_rvv.h"

static vfloat64m4_t at_ldw(const float *p, size_t vl) {
  return __riscv_vfwcvt_f_f_v_f64m4(__riscv_vle32_v_f32m2(p, vl), vl);
}

static void at_stn(float *p, vfloat64m4_t v, size_t vl) {
  __riscv_vse32_v_f32m2(p, __riscv_vfncvt_f_f_w_f32m2(v, vl), vl);
}

/* sum over i < n of a[i] b[i] in double (b NULL: a[i]^2). */
static double at_dot(const float *a, const float *b, int64_t n) {
  vfloat64m1_t acc = __riscv_vfmv_s_f_f64m1(0.0, 1);
  for (int64_t i = 0; i < n;) {
    size_t vl = __riscv_vsetvl_e32m2((size_t)(n - i));
    vfloat64m4_t va = at_ldw(a + i, vl);
    vfloat64m4_t vb = b ? at_ldw(b + i, vl) : va;
    acc = __riscv_vfredusum_vs_f64m4_f64m1(__riscv_vfmul_vv_f64m4(va, vb, vl),
                                           acc, vl);
    i += (int64_t)vl;
  }
  return __riscv_vfmv_f_s_f64m1_f64(acc);
}

void mp_kv_rmsnorm_f32(int64_t outer, int64_t inner, const float *x,
                       const float *scale, double eps, float *y) {
  for (int64_t r = 0; r < outer; r++) {
    const float *xs = x + r * inner;
    float *ys = y + r * inner;
    double inv = 1 / sqrt(at_dot(xs, NULL, inner) / (double)inner + eps);
    for (int64_t i = 0; i < inner;) {
      size_t vl = __riscv_vsetvl_e32m2((size_t)(inner - i));
      vfloat64m4_t v = __riscv_vfmul_vf_f64m4(at_ldw(xs + i, vl), inv, vl);
      at_stn(ys + i, __riscv_vfmul_vv_f64m4(v, at_ldw(scale + i, vl), vl), vl);
      i += (int64_t)vl;
    }
  }
}

void mp_kv_rotary_f32(const mp_krope *p, const float *x, const float *cos_c,
                      const float *sin_c, const int64_t *pos, float *y) {
  int64_t half = p->rot / 2;
  /* the two elements of pair i: contiguous halves, or every other one */
  ptrdiff_t step = p->interleaved ? 2 * (ptrdiff_t)sizeof(float) : 0;
  int64_t second = p->interleaved ? 1 : half, stride = p->interleaved ? 2 : 1;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t s = 0; s < p->seq; s++) {
      int64_t row = pos ? pos[b * p->seq + s] : b * p->seq + s;
      const float *co = cos_c + row * half, *si = sin_c + row * half;
      for (int64_t h = 0; h < p->heads; h++) {
        int64_t at = b * p->sb + s * p->ss + h * p->sh;
        for (int64_t i = 0; i < half;) {
          size_t vl = __riscv_vsetvl_e32m2((size_t)(half - i));
          const float *a1 = x + at + i * stride, *a2 = a1 + second;
          vfloat32m2_t f1 = step ? __riscv_vlse32_v_f32m2(a1, step, vl)
                                 : __riscv_vle32_v_f32m2(a1, vl);
          vfloat32m2_t f2 = step ? __riscv_vlse32_v_f32m2(a2, step, vl)
                                 : __riscv_vle32_v_f32m2(a2, vl);
          vfloat64m4_t x1 = __riscv_vfwcvt_f_f_v_f64m4(f1, vl);
          vfloat64m4_t x2 = __riscv_vfwcvt_f_f_v_f64m4(f2, vl);
          vfloat64m4_t c = at_ldw(co + i, vl), n = at_ldw(si + i, vl);
          vfloat64m4_t r1 =
              __riscv_vfsub_vv_f64m4(__riscv_vfmul_vv_f64m4(c, x1, vl),
                                     __riscv_vfmul_vv_f64m4(n, x2, vl), vl);
          vfloat64m4_t r2 =
              __riscv_vfadd_vv_f64m4(__riscv_vfmul_vv_f64m4(n, x1, vl),
                                     __riscv_vfmul_vv_f64m4(c, x2, vl), vl);
          float *o1 = y + at + i * stride, *o2 = o1 + second;
          vfloat32m2_t n1 = __riscv_vfncvt_f_f_w_f32m2(r1, vl);
          vfloat32m2_t n2 = __riscv_vfncvt_f_f_w_f32m2(r2, vl);
          if (step) {
            __riscv_vsse32_v_f32m2(o1, step, n1, vl);
            __riscv_vsse32_v_f32m2(o2, step, n2, vl);
          } else {
            __riscv_vse32_v_f32m2(o1, n1, vl);
            __riscv_vse32_v_f32m2(o2, n2, vl);
          }
          i += (int64_t)vl;
        }
        if (y != x && p->head > p->rot) {
          memcpy(y + at + p->rot, x + at + p->rot,
                 (size_t)(p->head - p->rot) * sizeof(float));
        }
      }
    }
  }
}

/* Row j of head kvh of batch b of the keys or values: past rows first. */
static const float *at_row(const mp_kattn *p, const int64_t *st,
                           const float *past, const float *x, int64_t b,
                           int64_t kvh, int64_t j, int64_t dim) {
  if (j < p->past) return past + ((b * p->kv_heads + kvh) * p->past + j) * dim;
  return x + b * st[0] + kvh * st[1] + (j - p->past) * st[2];
}

/* row[0..n) = exp(row - mx) / their sum, in double. */
static void at_softmax(double *row, int64_t n, double mx) {
  vfloat64m1_t acc = __riscv_vfmv_s_f_f64m1(0.0, 1);
  for (int64_t j = 0; j < n;) {
    size_t vl = __riscv_vsetvl_e64m4((size_t)(n - j));
    vfloat64m4_t e = kv_exp_f64m4(
        __riscv_vfsub_vf_f64m4(__riscv_vle64_v_f64m4(row + j, vl), mx, vl), vl);
    __riscv_vse64_v_f64m4(row + j, e, vl);
    acc = __riscv_vfredosum_vs_f64m4_f64m1(e, acc, vl);
    j += (int64_t)vl;
  }
  double sum = __riscv_vfmv_f_s_f64m1_f64(acc);
  for (int64_t j = 0; j < n;) {
    size_t vl = __riscv_vsetvl_e64m4((size_t)(n - j));
    __riscv_vse64_v_f64m4(
        row + j,
        __riscv_vfdiv_vf_f64m4(__riscv_vle64_v_f64m4(row + j, vl), sum, vl),
        vl);
    j += (int64_t)vl;
  }
}

void mp_kv_attention_f32(const mp_kattn *p, const float *q, const float *k,
                         const float *v, const void *mask, const float *past_k,
                         const float *past_v, float *y, float *qk,
                         double *row) {
  int64_t total = p->past + p->kv_seq, reps = p->q_heads / p->kv_heads;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->q_heads; h++) {
      int64_t kvh = h / reps;
      for (int64_t i = 0; i < p->q_seq; i++) {
        const float *qr = q + b * p->q_st[0] + h * p->q_st[1] + i * p->q_st[2];
        float *qko =
            qk ? qk + ((b * p->q_heads + h) * p->q_seq + i) * total : NULL;
        double mx = -INFINITY;
        for (int64_t j = 0; j < total; j++) {
          const float *kr = at_row(p, p->k_st, past_k, k, b, kvh, j, p->head);
          double s = at_dot(qr, kr, p->head) * p->scale;
          if (p->softcap > 0) s = p->softcap * tanh(s / p->softcap);
          if (qko && p->qk_mode == 0) qko[j] = (float)s;
          row[j] = s + mp_k_attention_bias(MP_KD_F32, p, mask, b, h, i, j);
          if (row[j] > mx) mx = row[j];
        }
        at_softmax(row, total, mx);
        if (qko && p->qk_mode == 3) {
          for (int64_t j = 0; j < total; j++) qko[j] = (float)row[j];
        }
        float *yr = y + b * p->y_st[0] + h * p->y_st[1] + i * p->y_st[2];
        for (int64_t e = 0; e < p->v_head;) {
          size_t vl = __riscv_vsetvl_e32m2((size_t)(p->v_head - e));
          vfloat64m4_t acc = __riscv_vfmv_v_f_f64m4(0.0, vl);
          for (int64_t j = 0; j < total; j++) {
            const float *vr =
                at_row(p, p->v_st, past_v, v, b, kvh, j, p->v_head);
            acc = __riscv_vfmacc_vf_f64m4(acc, row[j], at_ldw(vr + e, vl), vl);
          }
          at_stn(yr + e, acc, vl);
          e += (int64_t)vl;
        }
      }
    }
  }
}
