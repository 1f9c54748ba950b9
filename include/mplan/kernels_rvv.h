/*
 * mplan/kernels_rvv.h -- the RISC-V Vector kernels (kernels/rvv/), built
 * only for riscv64 with the V extension (RVV 1.0 intrinsics).
 *
 * Every mp_kv_* function has the signature and the contract of the scalar
 * mp_k_* kernel of the same name (mplan/kernels.h), which stays the
 * specification and the fallback: a case a vector kernel does not cover
 * is handed to the scalar kernel, and the *_vector predicates below say
 * which cases those are, so that the runtime can report them.
 *
 * The kernels are vector-length agnostic: every loop is strip-mined with
 * __riscv_vsetvl_* on the count that remains, and nothing assumes a VLEN
 * (tested at 128, 256 and 512 bits). Integer and data-movement kernels
 * give the scalar kernel's bytes exactly; float kernels may differ from it
 * by the reassociation and fused multiply-adds that kernels/README.md
 * states per kernel (the tests' tolerance).
 */
#ifndef MPLAN_KERNELS_RVV_H
#define MPLAN_KERNELS_RVV_H

#include "mplan/kernels.h"

/* The vector register length in bits (VLEN) of the machine running. */
unsigned mp_kv_vlen(void);

void mp_kv_conv_f32(const mp_kconv *p, const float *x, const float *w,
                    const float *b, float *y, void *scratch);
void mp_kv_conv_i8(const mp_kconv *p, const int8_t *x, const int8_t *w,
                   const int32_t *b, int8_t *y, void *scratch);
/* ConvTranspose f32, the scalar kernel's terms in its order (kv_conv.c
 * invariant 3), with fused multiply-adds. */
void mp_kv_conv_transpose_f32(const mp_kconv *p, const float *x, const float *w,
                              const float *b, float *y);

void mp_kv_gemm_f32(const mp_kgemm *p, const float *a, const float *b,
                    const float *c, float *y);
void mp_kv_gemm_i8(const mp_kgemm *p, const int8_t *a, const int8_t *b,
                   const int32_t *c, int8_t *y);

/* Unary: f32 Relu, Clip, LeakyRelu, HardSigmoid, HardSwish, Sigmoid,
 * Swish, Tanh, Exp, Neg, Abs, Identity; int8 Relu and Clip. */
bool mp_kv_unary_vector(mp_kunary op, int d);
void mp_kv_unary(mp_kunary op, const mp_kunary_params *p, int d, const void *x,
                 void *y, size_t n);

/* Binary with broadcasting: f32 Add, Sub, Mul, Div, PRelu, Max, Min and
 * the comparisons (bool out); int8 Add, Sub, Mul (wrapping, or Add/Sub
 * saturating with sat). */
bool mp_kv_binary_vector(mp_kbinary op, int d, int dy, bool sat);
void mp_kv_binary(mp_kbinary op, const mp_kbcast *bc, int d, const void *a,
                  const void *b, int dy, void *y, bool sat);

void mp_kv_batchnorm_f32(int64_t n, int64_t c, int64_t rest, const float *x,
                         const float *scale, const float *bias,
                         const float *mean, const float *var, double eps,
                         float *y);
void mp_kv_layernorm_f32(int64_t outer, int64_t inner, const float *x,
                         const float *scale, const float *bias, double eps,
                         float *y, float *mean, float *inv_std);
void mp_kv_softmax_f32(int64_t outer, int64_t axis, int64_t inner,
                       const float *x, float *y, bool log);
void mp_kv_softmax_i8(int64_t outer, int64_t axis, int64_t inner,
                      const int8_t *x, int8_t *y);

/* The transformer ops of opsets 23 and 24 (kv_attn.c), f32: the scalar kernels'
 * contracts (mp_k_rmsnorm, mp_k_rotary, mp_k_attention with d f32). */
void mp_kv_rmsnorm_f32(int64_t outer, int64_t inner, const float *x,
                       const float *scale, double eps, float *y);
void mp_kv_rotary_f32(const mp_krope *p, const float *x, const float *cos_c,
                      const float *sin_c, const int64_t *pos, float *y);
void mp_kv_attention_f32(const mp_kattn *p, const float *q, const float *k,
                         const float *v, const void *mask, const float *past_k,
                         const float *past_v, float *y, float *qk, double *row);

/* MaxPool on f32 and int8, AveragePool on f32. */
bool mp_kv_pool_vector(bool max, int d);
void mp_kv_maxpool(const mp_kpool *p, int d, const void *x, void *y);
void mp_kv_avgpool(const mp_kpool *p, int d, const void *x, void *y);

/* Element sizes 1, 2, 4 and 8; Pad in constant mode. */
bool mp_kv_move_vector(size_t es);
void mp_kv_transpose(size_t es, const mp_kshape *xs, const uint32_t *perm,
                     const void *x, void *y);
void mp_kv_copy_block(size_t es, int64_t outer, int64_t inner, const void *src,
                      int64_t src_len, int64_t src_off, void *dst,
                      int64_t dst_len, int64_t dst_off, int64_t len);
void mp_kv_pad(size_t es, const mp_kshape *xs, const mp_kshape *ys,
               const int64_t *pad_begin, mp_kpad_mode mode, const void *value,
               const void *x, void *y);

/* Quantize f32 to int8/uint8; dequantize int8/uint8 (int32 is scalar). */
bool mp_kv_dequantize_vector(int dx);
/* A matrix's columns dequantized (a MatMul's weight panel): int8, uint8,
 * int4, uint4, every parameter layout (int32 is scalar). */
bool mp_kv_dequantize_cols_vector(int dx);
void mp_kv_dequantize_cols(int64_t rows, int64_t cols, int64_t c0, int64_t nc,
                           int axis, int64_t block, int dx, const void *x,
                           const float *scale, int n_scale, const void *zp,
                           float *y);
/* A run of a tensor's elements dequantized (mp_k_dequantize_range): the
 * same dtypes and layouts as the columns kernel. */
void mp_kv_dequantize_range(int64_t ch, int64_t inner, int64_t block, int dx,
                            const void *x, const float *scale, int n_scale,
                            const void *zp, int64_t e0, int64_t n, float *y);
void mp_kv_quantize(int64_t outer, int64_t ch, int64_t inner, const float *x,
                    const float *scale, int n_scale, const void *zp, int dy,
                    void *y);
void mp_kv_dequantize(int64_t outer, int64_t ch, int64_t inner, int dx,
                      const void *x, const float *scale, int n_scale,
                      const void *zp, float *y);
/* MatMulNBits' weight rows unpacked (mp_k_dequantize_nbits): 2, 4 and 8
 * bits, integer or float zero points, g_idx. */
void mp_kv_dequantize_nbits(const mp_knbits *w, int64_t n0, int64_t nn,
                            float *y);

/* memmove with vector loads and stores (overlap handled). */
void mp_kv_memmove(void *dst, const void *src, size_t n);

#endif /* MPLAN_KERNELS_RVV_H */
