/*
 * mplan/kernels.h -- pure compute functions: the scalar reference kernels.
 *
 * A kernel knows nothing of plans, arenas or bundles: it reads its inputs
 * and writes its output through the pointers it is given, and never
 * allocates. Shapes and parameters arrive already validated (the runtime's
 * loader checks every one against the tensors before a kernel runs), so a
 * kernel does no input checking of its own. Pointers may alias where a
 * kernel says so (in place); no pointer is `restrict`, because a wrong
 * plan may overlap buffers and the kernel must still stay inside them.
 *
 * Ownership: every kernel borrows its pointers for the duration of the
 * call and keeps nothing; parameter structs are plain values.
 *
 * These scalar kernels are the specification: vector kernels (kernels/rvv/)
 * keep the same signatures and are tested against them.
 *
 * Integer convention (graphs without quantization parameters, such as the
 * bundled int8 MobileNets): int8 Conv/Gemm/MatMul accumulate exactly
 * (int32 range, checked by the loader), add the int32 bias, then divide by
 * 2^shift rounding half away from zero and saturate to int8 (the
 * compiler picks shift = 5 + ceil(log2 K / 2) for K products, which keeps
 * post-Relu6 activations spread over 0..6); int8 Softmax writes
 * round(127 exp(x - max)).
 */
#ifndef MPLAN_KERNELS_H
#define MPLAN_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MP_K_MAX_RANK 8

/* Element types, with their on-disk codes (bundle format). */
typedef enum mp_kdtype {
  MP_KD_F32 = 1,
  MP_KD_F64 = 2,
  MP_KD_I8 = 3,
  MP_KD_U8 = 4,
  MP_KD_I16 = 5,
  MP_KD_U16 = 6,
  MP_KD_I32 = 7,
  MP_KD_U32 = 8,
  MP_KD_I64 = 9,
  MP_KD_U64 = 10,
  MP_KD_BOOL = 11,
  MP_KD_F16 = 12,  /* IEEE 754 binary16 */
  MP_KD_BF16 = 13, /* bfloat16: the upper half of an f32 */
  MP_KD_I4 = 14,   /* 4-bit, two per byte, element 2j in byte j's low nibble */
  MP_KD_U4 = 15,
  MP_KD_COUNT
} mp_kdtype;

/* Bytes per element (0 for an unknown code and for the 4-bit types) and a
 * short name ("f32"). */
size_t mp_kd_size(int code);
/* Bits per element (0 for an unknown code), and the bytes n elements take
 * (rounded up: a 4-bit tensor of n elements is ceil(n / 2) bytes). */
unsigned mp_kd_bits(int code);
uint64_t mp_kd_bytes(int code, uint64_t n);
const char *mp_kd_name(int code);
bool mp_kd_is_float(int code);

/* Element k of p (of dtype d) as a double, and the store of a double into
 * element k with the ONNX Cast conversion (float->int truncates toward
 * zero; out-of-range is saturated, as the host's behaviour for it is
 * undefined; bool is v != 0; f16 and bf16 round to nearest even from the
 * double, once, overflowing to infinity; int4 and uint4 round half to even
 * and saturate, as ONNX's Cast to 4 bits does, and a store rewrites only
 * its own nibble). f16 and bf16 are float dtypes:
 * every kernel that computes through these (in double) takes them. */
double mp_k_load(const void *p, int d, size_t k);
void mp_k_store(void *p, int d, size_t k, double v);
int64_t mp_k_load_i(const void *p, int d, size_t k);
/* An integer into element k of a 4-bit tensor (d MP_KD_I4 or MP_KD_U4),
 * saturated to the type's range; the byte's other nibble is kept. */
void mp_k_store_nibble(void *p, int d, size_t k, int64_t v);
/* After n elements of a 4-bit tensor are written: an odd n leaves the
 * last byte's high nibble as padding, set to 0 (ONNX's packing), so that
 * a tensor's bytes depend on its values only. Other dtypes: nothing. */
void mp_k_nibble_pad(void *p, int d, size_t n);
/* -1, 0, 1: element i of a against element j of b, both of dtype d:
 * integers exactly (u64 unsigned), floats as double (-0 equals +0; NaN
 * compares equal to everything, so it never replaces a candidate). */
int mp_k_compare(int d, const void *a, size_t i, const void *b, size_t j);

/* ---- shapes and broadcasting --------------------------------------------- */

typedef struct mp_kshape {
  uint32_t rank;
  int64_t dims[MP_K_MAX_RANK];
} mp_kshape;

int64_t mp_kshape_count(const mp_kshape *s);
/* Row-major element strides of s into st[rank]. */
void mp_kshape_strides(const mp_kshape *s, int64_t *st);

/* Iteration of an output shape with per-operand element strides (0 on a
 * broadcast dim), built by mp_k_bcast_init. */
typedef struct mp_kbcast {
  uint32_t rank;
  int64_t dims[MP_K_MAX_RANK];
  int64_t sa[MP_K_MAX_RANK];
  int64_t sb[MP_K_MAX_RANK];
  int64_t sc[MP_K_MAX_RANK];
} mp_kbcast;

/* Numpy broadcasting of up to three operands (c may be NULL) to out. The
 * operands are right-aligned; a dim of 1 broadcasts. Returns false when
 * the shapes do not broadcast to out. */
bool mp_k_bcast_init(mp_kbcast *bc, const mp_kshape *out, const mp_kshape *a,
                     const mp_kshape *b, const mp_kshape *c);

/* ---- elementwise ----------------------------------------------------------
 */

typedef enum mp_kunary {
  MP_KU_RELU = 0,
  MP_KU_SIGMOID,
  MP_KU_TANH,
  MP_KU_EXP,
  MP_KU_SQRT,
  MP_KU_ERF,
  MP_KU_GELU,      /* exact: x/2 (1 + erf(x/sqrt 2)) */
  MP_KU_GELU_TANH, /* approximate = "tanh" */
  MP_KU_HARDSIGMOID,
  MP_KU_HARDSWISH,
  MP_KU_LEAKYRELU,
  MP_KU_CLIP,
  MP_KU_NEG,
  MP_KU_ABS,
  MP_KU_FLOOR,
  MP_KU_CEIL,
  MP_KU_RECIPROCAL,
  MP_KU_LOG,
  MP_KU_SIN,
  MP_KU_COS,
  MP_KU_ELU,
  MP_KU_SELU,
  MP_KU_SOFTPLUS,
  MP_KU_SOFTSIGN,
  MP_KU_IDENTITY,
  MP_KU_NOT,
  MP_KU_SIGN,
  MP_KU_ROUND,
  MP_KU_TAN,
  MP_KU_ASIN,
  MP_KU_ACOS,
  MP_KU_ATAN,
  MP_KU_SINH,
  MP_KU_COSH,
  MP_KU_ASINH,
  MP_KU_ACOSH,
  MP_KU_ATANH,
  MP_KU_THRESHOLDEDRELU,
  MP_KU_CELU,
  MP_KU_SHRINK, /* alpha = lambd, beta = bias */
  MP_KU_MISH,   /* opset 18: x tanh(softplus(x)) */
  MP_KU_BITNOT, /* BitwiseNot (opset 18): integers only */
  MP_KU_SWISH,  /* opset 24: x sigmoid(alpha x) */
  MP_KU_COUNT
} mp_kunary;

/* The parameters a unary op reads: alpha, beta (HardSigmoid, LeakyRelu,
 * Elu, Selu, ThresholdedRelu, Celu) or lo, hi (Clip). */
typedef struct mp_kunary_params {
  double alpha, beta;
} mp_kunary_params;

/* y[i] = f(x[i]) for n elements of dtype d (in place allowed: y == x). */
void mp_k_unary(mp_kunary op, const mp_kunary_params *p, int d, const void *x,
                void *y, size_t n);

typedef enum mp_kbinary {
  MP_KB_ADD = 0,
  MP_KB_SUB,
  MP_KB_MUL,
  MP_KB_DIV,
  MP_KB_POW,
  MP_KB_PRELU, /* x < 0 ? x * slope : x */
  MP_KB_MAX,
  MP_KB_MIN,
  MP_KB_EQUAL, /* comparisons and logic write bool */
  MP_KB_LESS,
  MP_KB_LESS_EQUAL,
  MP_KB_GREATER,
  MP_KB_GREATER_EQUAL,
  MP_KB_AND,
  MP_KB_OR,
  MP_KB_XOR,
  MP_KB_MOD,    /* Python-style (sign of the divisor) */
  MP_KB_FMOD,   /* C fmod (sign of the dividend) */
  MP_KB_SHL,    /* BitShift LEFT: unsigned, 0 from a shift of the width on */
  MP_KB_SHR,    /* BitShift RIGHT */
  MP_KB_BITAND, /* BitwiseAnd, Or, Xor (opset 18): integers only */
  MP_KB_BITOR,
  MP_KB_BITXOR,
  MP_KB_COUNT
} mp_kbinary;

/* y = a op b with broadcasting (bc from mp_k_bcast_init with y, a, b).
 * a and b have dtype d, y dtype dy (d, or bool for comparisons). In place
 * is allowed where y has a's (or b's) full shape and the same bytes.
 * Integer arithmetic wraps (computed in unsigned 64 bits), integer
 * division truncates and a division by zero gives 0; saturating int8 Add
 * is selected with sat. */
void mp_k_binary(mp_kbinary op, const mp_kbcast *bc, int d, const void *a,
                 const void *b, int dy, void *y, bool sat);

/* Where: y = cond ? a : b, bool cond, dtype d (bc from y, cond, a, b as
 * a = cond, b = a, c = b). */
void mp_k_where(const mp_kbcast *bc, int d, const void *cond, const void *a,
                const void *b, void *y);

/* Cast n elements from dtype dx to dtype dy. */
void mp_k_cast(int dx, const void *x, int dy, void *y, size_t n);

/* ---- convolution and products -------------------------------------------- */

/* 1 to 3 spatial dims, always stored as three (leading ones are 1). */
typedef struct mp_kconv {
  int64_t n, c, m, group; /* batch, input channels, output channels */
  int64_t in[3], out[3], k[3], stride[3], dil[3], pad[3];
  int shift; /* int8: requantization shift */
} mp_kconv;

/* Conv: x [n, c, in], w [m, c/group, k], b [m] or NULL, y [n, m, out].
 * scratch holds out[0]*out[1]*out[2] elements (4 bytes each). y may
 * equal x for depthwise convolution (group == c == m) only: each output
 * channel is computed into scratch and then copied down, channels in
 * increasing order, which overwrites only input channels already read. */
void mp_k_conv_f32(const mp_kconv *p, const float *x, const float *w,
                   const float *b, float *y, void *scratch);
void mp_k_conv_i8(const mp_kconv *p, const int8_t *x, const int8_t *w,
                  const int32_t *b, int8_t *y, void *scratch);

/* ConvInteger: y [n, m, out] int32, each element the sum over its window
 * of (x - xzp) * (w - wzp); x and w int8 or uint8 (dx, dw: MP_KD_I8 or
 * MP_KD_U8), wzp NULL (0), one value or one per output channel (n_wzp),
 * of w's dtype. Padding contributes nothing (ONNX pads with xzp). Exact:
 * integer sums, in any order. */
void mp_k_conv_integer(const mp_kconv *p, int dx, const void *x, int32_t xzp,
                       int dw, const void *w, const void *wzp, int64_t n_wzp,
                       int32_t *y);

/* MatMulInteger of one matrix pair: y [m, n] int32 = sum over k of
 * (a[i, k] - azp[i]) * (b[k, j] - bzp[j]); a and b int8 or uint8 (da, db),
 * azp NULL, one value or one per row (n_azp 1 or m), bzp NULL, one value
 * or one per column (n_bzp 1 or n), of a's and b's dtypes. Exact, sums
 * wrapping in 32 bits. */
void mp_k_matmul_integer(int64_t m, int64_t k, int64_t n, int da, const void *a,
                         const void *azp, int64_t n_azp, int db, const void *b,
                         const void *bzp, int64_t n_bzp, int32_t *y);

/* The ONNX recurrent cells, default activations: LSTM (4 gates i, o, f,
 * c; Sigmoid, Tanh, Tanh; peepholes i, o, f; a cell state), GRU (3 gates
 * z, r, h; Sigmoid, Tanh; linear_before_reset) and RNN (1 gate; Tanh).
 * dirs directions (1: forward, or backward when reverse; 2: both), layout
 * 0 (x [seq, batch, in], y [seq, dirs, batch, hidden], yh and yc [dirs,
 * batch, hidden]) or 1 (x [batch, seq, in], y [batch, seq, dirs, hidden],
 * yh and yc [batch, dirs, hidden]). w [dirs, G hidden, in], r [dirs, G
 * hidden, hidden], b [dirs, 2 G hidden] (W's biases then R's) or NULL, G
 * gates; h0 (and c0, LSTM) in yh's layout or NULL (zeros), peep [dirs, 3
 * hidden] or NULL (LSTM); clip > 0 clamps every activation's input to
 * [-clip, clip]. lens [batch] (int32) or NULL: sequence n has lens[n]
 * steps (clamped to [0, seq]), a backward direction starts at its last
 * one, and y is 0 past its end. y, yh, yc may be NULL. Each gate's input
 * is summed in double in a fixed order (biases, x, h); the state is kept
 * in f32 between steps. scratch holds (2 batch + G) hidden floats. */
typedef enum mp_kcell { MP_KCELL_LSTM, MP_KCELL_GRU, MP_KCELL_RNN } mp_kcell;
typedef struct mp_krnn {
  int64_t seq, batch, input, hidden;
  int dirs, reverse, layout, cell, linear_before_reset;
  double clip;
} mp_krnn;
int mp_k_rnn_gates(int cell);
void mp_k_rnn(const mp_krnn *p, const float *x, const float *w, const float *r,
              const float *b, const int32_t *lens, const float *h0,
              const float *c0, const float *peep, float *y, float *yh,
              float *yc, float *scratch);

/* ConvTranspose: x [n, c, in], w [c, m/group, k], y [n, m, out]; pad is
 * the begin padding. */
void mp_k_conv_transpose_f32(const mp_kconv *p, const float *x, const float *w,
                             const float *b, float *y);

/* Gemm: y[M,N] = alpha * op(A) op(B) + beta * C, C broadcast to [M,N]
 * through cstride (row stride, col stride; 0 for a broadcast dim) or NULL. */
typedef struct mp_kgemm {
  int64_t m, n, k;
  bool trans_a, trans_b;
  double alpha, beta;
  int64_t c_rs, c_cs;
  int shift; /* int8 */
} mp_kgemm;

void mp_k_gemm_f32(const mp_kgemm *p, const float *a, const float *b,
                   const float *c, float *y);
void mp_k_gemm_i8(const mp_kgemm *p, const int8_t *a, const int8_t *b,
                  const int32_t *c, int8_t *y);

/* ---- normalisation, softmax, pooling, reductions ------------------------- */

/* BatchNormalization (inference): x [n, c, rest], per-channel parameters.
 * In place allowed. */
void mp_k_batchnorm_f32(int64_t n, int64_t c, int64_t rest, const float *x,
                        const float *scale, const float *bias,
                        const float *mean, const float *var, double eps,
                        float *y);

/* BatchNormalization in training mode: the mean and the population
 * variance (divided by n x rest) of each of the c channels of x [n, c,
 * rest], summed in double and rounded once (k_train.c). */
void mp_k_batchnorm_stats_f32(int64_t n, int64_t c, int64_t rest,
                              const float *x, float *mean, float *var);

/* One step of an optimizer of ai.onnx.preview.training on `count`
 * elements (k_train.c). With g' = norm * x + g:
 *   Adagrad:  r' = r / (1 + t decay); h' = h + g'^2 (state s1);
 *             x' = x - r' g' / (sqrt(h') + epsilon)
 *   Momentum: v' = alpha v + b g' (s1), b = beta, or 1 when t is 0;
 *             x' = x - r v', or with Nesterov x - r (g' + alpha v')
 *   Adam:     v' = alpha v + (1 - alpha) g' (s1); h' = beta h +
 *             (1 - beta) g'^2 (s2); r' = r sqrt(1 - beta^t) /
 *             (1 - alpha^t) when t > 0, else r; x' = (1 - norm_post)
 *             (x - r' v' / (sqrt(h') + epsilon))
 * s2 and s2_new are Adam's only. */
typedef enum mp_kopt_kind {
  MP_KOPT_ADAGRAD,
  MP_KOPT_MOMENTUM,
  MP_KOPT_NESTEROV,
  MP_KOPT_ADAM
} mp_kopt_kind;

typedef struct mp_koptim {
  int kind;  /* mp_kopt_kind */
  double r;  /* the learning rate R */
  int64_t t; /* the step count T */
  double alpha, beta, epsilon, norm, norm_post, decay;
} mp_koptim;

void mp_k_optim_f32(const mp_koptim *p, int64_t count, const float *x,
                    const float *g, const float *s1, const float *s2,
                    float *x_new, float *s1_new, float *s2_new);

/* The random ops (k_random.c): one counter-based stream per op run.
 * mp_k_rand_key: the stream of a run of an op, from its seed attribute
 * when it has one, else from its name; visit counts the op's earlier runs
 * in this run (an op in a Loop body draws anew each iteration).
 * mp_k_rand_bits: draw i of the stream; mp_k_rand_uniform: its top 53
 * bits as a double in [0, 1); mp_k_rand_normal: a standard normal value
 * from draws 2i and 2i + 1 (Box-Muller). */
uint64_t mp_k_rand_key(bool has_seed, double seed, const char *name,
                       uint64_t visit);
uint64_t mp_k_rand_bits(uint64_t key, uint64_t i);
double mp_k_rand_uniform(uint64_t key, uint64_t i);
double mp_k_rand_normal(uint64_t key, uint64_t i);

/* count values of a random op into y (dtype yd), element i from draw i
 * (normal: 2i and 2i + 1):
 *   UNIFORM:   a + (b - a) u                (a low, b high)
 *   NORMAL:    a + b n                      (a mean, b scale)
 *   BERNOULLI: 1 if u < x[i] else 0         (x the probabilities, dtype xd)
 *   DROPOUT:   x[i] / (1 - a) if u >= a else 0 (a the ratio, below 1);
 *              mask[i] (may be NULL) is whether element i was kept
 * Elementwise: y may be x. */
typedef enum mp_krand_kind {
  MP_KRAND_UNIFORM,
  MP_KRAND_NORMAL,
  MP_KRAND_BERNOULLI,
  MP_KRAND_DROPOUT,
  MP_KRAND_MULTINOMIAL /* mp_k_multinomial, not mp_k_random */
} mp_krand_kind;

typedef struct mp_krandom {
  int kind; /* mp_krand_kind */
  uint64_t key;
  double a, b;
} mp_krandom;

void mp_k_random(const mp_krandom *r, int64_t count, const void *x, int xd,
                 void *y, int yd, bool *mask);
/* Multinomial: samples classes of each of batch rows of x [batch,
 * classes] (unnormalised log-probabilities, dtype xd) into y [batch,
 * samples] (an integer dtype yd), sample s of row b from uniform
 * b x samples + s of stream key. NaN weights are never drawn. run is
 * scratch for classes doubles (a row's running sums). */
void mp_k_multinomial(uint64_t key, int64_t batch, int64_t classes,
                      int64_t samples, const void *x, int xd, void *y, int yd,
                      double *run);

/* LayerNormalization over the inner `inner` elements of `outer` rows;
 * scale and bias broadcast over rows (sizes inner, or bias NULL). mean and
 * inv_std (may be NULL) receive one value per row. In place allowed. */
void mp_k_layernorm_f32(int64_t outer, int64_t inner, const float *x,
                        const float *scale, const float *bias, double eps,
                        float *y, float *mean, float *inv_std);

/* Softmax (or LogSoftmax) along an axis: x viewed as [outer, axis, inner].
 * In place allowed. */
void mp_k_softmax_f32(int64_t outer, int64_t axis, int64_t inner,
                      const float *x, float *y, bool log);
void mp_k_softmax_i8(int64_t outer, int64_t axis, int64_t inner,
                     const int8_t *x, int8_t *y);

typedef struct mp_kpool {
  int64_t n, c;
  int64_t in[3], out[3], k[3], stride[3], dil[3], pad[3], pad_end[3];
  bool count_include_pad;
  double lp; /* LpPool's p (mp_k_lppool), else 0 */
} mp_kpool;

/* MaxPool on any ordered dtype; AveragePool on f32 and i8 (rounded half
 * away from zero). Windows are clipped to the input. */
void mp_k_maxpool(const mp_kpool *p, int d, const void *x, void *y);
void mp_k_avgpool(const mp_kpool *p, int d, const void *x, void *y);
/* LpPool (f32, f64): (sum over the window's elements inside the input of
 * |x|^lp)^(1/lp). */
void mp_k_lppool(const mp_kpool *p, int d, const void *x, void *y);
/* MaxPool with ONNX's Indices output: idx receives, per output element,
 * the flat index into the whole input x of the first element holding the
 * window's maximum (n and c included: plane * H * W + position), the
 * position row major, or with col_major the innermost spatial dim
 * slowest (2-D: h + H * w); -1 when no element lies in the window. */
void mp_k_maxpool_idx(const mp_kpool *p, int d, const void *x, void *y,
                      int64_t *idx, bool col_major);

typedef enum mp_kreduce {
  MP_KR_MEAN = 0,
  MP_KR_SUM,
  MP_KR_MAX,
  MP_KR_MIN,
  MP_KR_PROD,
  MP_KR_L1,
  MP_KR_L2,
  MP_KR_SUM_SQUARE,
  MP_KR_LOG_SUM,
  MP_KR_LOG_SUM_EXP,
  MP_KR_COUNT
} mp_kreduce;

/* Reduction over the axes set in mask of x (shape xs); y has the kept
 * dims (keepdims does not change the element order). Floats accumulate in
 * double; integer mean rounds half away from zero. */
void mp_k_reduce(mp_kreduce op, int d, const mp_kshape *xs, uint32_t mask,
                 const void *x, void *y);

/* ---- data movement (dtype-agnostic, element size es) --------------------- */

/* Transpose: y[i] = x[perm-ordered index]. */
void mp_k_transpose(size_t es, const mp_kshape *xs, const uint32_t *perm,
                    const void *x, void *y);
/* The same for a 4-bit dtype d4 (MP_KD_I4 or MP_KD_U4; es ignored), or
 * for es-byte elements when d4 is 0. */
void mp_k_transpose_dtype(int d4, size_t es, const mp_kshape *xs,
                          const uint32_t *perm, const void *x, void *y);

/* Concat / Split along axis: x viewed as [outer, len, inner]; the piece
 * of length len_i is copied to/from offset off_i along the axis of a
 * [outer, total, inner] tensor. */
void mp_k_copy_block(size_t es, int64_t outer, int64_t inner, const void *src,
                     int64_t src_len, int64_t src_off, void *dst,
                     int64_t dst_len, int64_t dst_off, int64_t len);

/* Slice: y[j] = x[start + j * step] per axis (steps may be negative). */
void mp_k_slice(size_t es, const mp_kshape *xs, const mp_kshape *ys,
                const int64_t *start, const int64_t *step, const void *x,
                void *y);

/* Gather along axis: x viewed as [outer, axis_len, inner], idx holds
 * n_idx indices already normalised to [0, axis_len). */
void mp_k_gather(size_t es, int64_t outer, int64_t axis_len, int64_t inner,
                 const int64_t *idx, int64_t n_idx, const void *x, void *y);

/* GridSample of a 4-D x [n, c, h, w] at grid [n, ho, wo, 2] (x, y in
 * [-1, 1]) to y [n, c, ho, wo]: the position un-normalised (align_corners
 * or not), rounded half to even for nearest, clamped (border) or
 * reflected (reflection) when outside, then each tap read with the
 * padding mode (zeros: 0 outside). Bicubic with border padding clamps each
 * tap, not the position, as ONNX Runtime and PyTorch do (clamping the
 * position first moves taps inside; test_ort's grid_ops found it). Floats,
 * in double (k_move.c). */
typedef enum mp_kgrid_mode {
  MP_KGRID_BILINEAR = 0,
  MP_KGRID_NEAREST,
  MP_KGRID_BICUBIC
} mp_kgrid_mode;
typedef enum mp_kgrid_padding {
  MP_KGRID_ZEROS = 0,
  MP_KGRID_BORDER,
  MP_KGRID_REFLECTION
} mp_kgrid_padding;
typedef struct mp_kgrid {
  int64_t n, c, h, w, ho, wo;
  mp_kgrid_mode mode;
  mp_kgrid_padding padding;
  bool align;
} mp_kgrid;
void mp_k_grid_sample(const mp_kgrid *p, int d, const void *x, int dg,
                      const void *grid, void *y);

/* MaxUnpool: y (shape `to`) is zeroed, then x[i] goes to the element of
 * y at the position that idx[i] has in shape `from` (the window's
 * output shape; every to[k] >= from[k], so a larger output_shape pads at
 * the end of each dim, as ONNX's reference and node tests do; ONNX
 * Runtime reads the indices in the larger shape instead). Every idx[i]
 * must lie in [0, prod(from)) (the caller checks). A later x wins where
 * indices repeat. */
void mp_k_max_unpool(size_t es, int64_t nx, const void *x, const int64_t *idx,
                     uint32_t rank, const int64_t *from, const int64_t *to,
                     void *y);

/* ---- selection: output sizes that depend on the data (k_select.c) ------ */

/* NonZero: the nonzero elements of x (n elements, dtype d), and their
 * coordinates in s's row-major order into y [rank, count] (count: what
 * mp_k_count_nonzero returned). */
int64_t mp_k_count_nonzero(int d, const void *x, int64_t n);
void mp_k_nonzero(int d, const void *x, const mp_kshape *s, int64_t count,
                  int64_t *y);

/* Compress: of x seen as [outer, len, inner], the slices j < min(len,
 * clen) whose condition element (dtype cd) is nonzero, in order, into y
 * [outer, count, inner] (count: what mp_k_compress_count returned). */
int64_t mp_k_compress_count(int cd, const void *cond, int64_t clen,
                            int64_t len);
void mp_k_compress(size_t es, const void *x, int64_t outer, int64_t len,
                   int64_t inner, int cd, const void *cond, int64_t clen,
                   int64_t count, void *y);

/* Unique: the distinct slices along the middle dim of x [outer, len,
 * inner] (dtype d), ascending when sorted (lexicographic over the other
 * dims), else in order of first occurrence. Returns their count K and
 * fills, each when not NULL (room for len): first[K] (each one's first
 * index), inverse[len] (each slice's position in the output), counts[K].
 * ws: 6 * len int64. */
int64_t mp_k_unique(int d, const void *x, int64_t outer, int64_t len,
                    int64_t inner, bool sorted, int64_t *ws, int64_t *first,
                    int64_t *inverse, int64_t *counts);
/* y [outer, count, inner] = slices which[0..count) of x [outer, len,
 * inner] (es bytes an element). */
void mp_k_gather_slices(size_t es, const void *x, int64_t outer, int64_t len,
                        int64_t inner, const int64_t *which, int64_t count,
                        void *y);

/* NonMaxSuppression (ONNX, as ONNX Runtime selects): boxes [batches,
 * boxes, 4] and scores [batches, classes, boxes], f32. */
typedef struct mp_knms {
  int64_t batches, classes, boxes;
  int64_t max_per_class; /* at most this many boxes a class */
  float iou_threshold;
  bool has_score_threshold; /* candidates need score > score_threshold */
  float score_threshold;
  bool center; /* center_point_box: [xc, yc, w, h], else two corners */
} mp_knms;

/* The selected [batch, class, box] triples in order into sel (NULL: only
 * count them); returns how many. ws: 3 * boxes int64. */
int64_t mp_k_nms(const mp_knms *p, const float *boxes, const float *scores,
                 int64_t *ws, int64_t *sel);

/* TfIdfVectorizer (ONNX, integer pool): each of `rows` rows of len
 * tokens x (int32 or int64, dtype) becomes a row of `width` floats in y.
 * The pool holds the n-grams of each length n (1 <= n <= n_counts) back
 * to back, those of length n from element counts[n-1] on; ngram g of the
 * pool lands at y column index[g]. For n from min_n to max_n, an n-gram
 * is n tokens at i, i + d, ..., i + (n-1) d with d = 1 + skip, skip from
 * 0 to max_skip (a 1-gram is counted once per token). mode 0 (TF): the
 * count; 1 (IDF): weight[g] when the count is not 0; 2 (TFIDF): count x
 * weight[g]. ws: n_grams int64. */
typedef struct mp_ktfidf {
  int64_t rows, len, width;
  int dtype; /* MP_KD_I32 or MP_KD_I64 */
  int64_t min_n, max_n, max_skip, mode;
  int64_t n_counts, n_pool, n_grams;
  const int64_t *counts, *pool, *index;
  const double *weight; /* n_grams, or NULL: all 1 */
} mp_ktfidf;

void mp_k_tfidf(const mp_ktfidf *p, const void *x, float *y, int64_t *ws);

/* RoiAlign (Mask R-CNN; ONNX opset 10/16, ONNX Runtime's sampling): for
 * each roi r of rois [R, 4] (x1, y1, x2, y2, times spatial_scale, minus
 * 0.5 with half_pixel) on image batch[r] of x [n, c, h, w], each of the
 * oh x ow bins averages (or, with max, takes the largest weighted corner
 * of) grid_h x grid_w bilinear samples at the sub-bin centres; grid is
 * sampling_ratio, or when 0 ceil(bin size). Without half_pixel a roi is
 * at least 1 x 1. Samples beyond one pixel outside the image count 0.
 * Floats, in double; y is [R, c, oh, ow]. */
/* The most samples a side of a bin (sampling_ratio, or the adaptive
 * grid) the compiler and the runtime accept. */
#define MP_K_ROI_MAX_GRID 256
typedef struct mp_kroi {
  int64_t n, c, h, w, rois, oh, ow, sampling;
  double scale;
  bool half_pixel, max;
} mp_kroi;
void mp_k_roi_align(const mp_kroi *p, int d, const void *x, int dr,
                    const void *rois, const int64_t *batch, void *y);

/* ---- Einsum and Det (k_linalg.c): floats, in double ---------------------- */

#define MP_K_MAX_LABELS 64
#define MP_K_MAX_OPERANDS 8

/* Einsum as strides per label: operand k's element for a label assignment
 * is at sum(stride[k][l] * index[l]) (a label on two axes of one operand,
 * a diagonal, has the sum of their strides; a broadcast dim has 0), the
 * output's at sum(ystride[l] * index[l]) (0 for a summed label). */
typedef struct mp_keinsum {
  uint32_t n_in, n_labels;
  int64_t dim[MP_K_MAX_LABELS];
  int64_t stride[MP_K_MAX_OPERANDS][MP_K_MAX_LABELS];
  int64_t ystride[MP_K_MAX_LABELS];
  int64_t n_out;
} mp_keinsum;

/* acc holds n_out doubles. */
void mp_k_einsum(int d, const mp_keinsum *p, const void *const *x, void *y,
                 double *acc);

/* Det of batches square n x n matrices; a holds n * n doubles. */
void mp_k_det(int d, int64_t batches, int64_t n, const void *x, void *y,
              double *a);

/* ---- DFT, STFT, MelWeightMatrix (k_linalg.c): floats, in double -------- */

/* DFT along one axis: x viewed as [outer, len, inner, cx] (cx 1: real, 2:
 * complex), y as [outer, n_out, inner, 2]. The transform has length n
 * (the signal zero-padded or cut to n) and y keeps its bins 0 .. n_out-1
 * (onesided: n / 2 + 1). inverse: conjugate twiddles and a 1 / n scale.
 * O(n * n_out) a transform, each twiddle from its exact angle
 * (k * j mod n). */
typedef struct mp_kdft {
  int64_t outer, len, inner, cx, n, n_out;
  bool inverse;
} mp_kdft;
/* ws: NULL, or mp_k_dft_workspace(n, len) doubles: the twiddles and
 * the samples are then computed once per call (the same bits). */
size_t mp_k_dft_workspace(int64_t n, int64_t len);
void mp_k_dft(const mp_kdft *p, int d, const void *x, void *y, double *ws);

/* STFT: signal [batch, len, cx]; frame f (0 .. frames-1) is the `frame`
 * samples from f * step times the window (NULL: ones), transformed as
 * mp_k_dft with n = frame into y [batch, frames, n_out, 2]. The caller
 * checks (frames - 1) * step + frame <= len. */
typedef struct mp_kstft {
  int64_t batch, len, cx, frames, step, frame, n_out;
} mp_kstft;
void mp_k_stft(const mp_kstft *p, int d, const void *x, int dw,
               const void *window, void *y, double *ws);

/* MelWeightMatrix y [dft_length / 2 + 1, bins] (triangular filters on the
 * mel scale, with ONNX's reference rounding of the band edges to bins).
 * False when a band edge falls outside the spectrogram's bins (nothing
 * is then written past y). */
bool mp_k_mel_weight_matrix(int64_t bins, int64_t dft_length,
                            double sample_rate, double lo_hz, double hi_hz,
                            int d, void *y);

/* ReverseSequence: x [T, B, rest] (time_major) or [B, T, rest]; batch b's
 * first lens[b] steps reversed (lens checked: 1..T), the rest copied. */
void mp_k_reverse_sequence(size_t es, bool time_major, int64_t t, int64_t b,
                           int64_t rest, const int64_t *lens, const void *x,
                           void *y);

/* Pow of operands of two dtypes (da, db) to dy, in double (a numpy-style
 * bc from mp_k_bcast_init). */
void mp_k_pow_mixed(const mp_kbcast *bc, int da, const void *a, int db,
                    const void *b, int dy, void *y);

/* ---- transformer ops of opsets 23 and 24 (k_attn.c): f32 or f64 (d) ----- */

/* RMSNormalization of `outer` rows of `inner` elements: x / sqrt(mean of
 * x^2 + eps) * scale[i]. In place allowed. */
void mp_k_rmsnorm(int d, int64_t outer, int64_t inner, const void *x,
                  const void *scale, double eps, void *y);

/* RotaryEmbedding: element (b, s, h, e) of x and y at b sb + s ss + h sh +
 * e; the first rot (even) of each head's `head` elements rotated in pairs
 * (e, e + rot/2), or (2i, 2i + 1) when interleaved, by the cos and sin of
 * row pos[b seq + s] of [rows, rot/2] caches (pos checked), or of row (b,
 * s) of [batch, seq, rot/2] caches when pos is NULL; the rest copied. In
 * place allowed. */
typedef struct mp_krope {
  int64_t batch, seq, heads, head, rot;
  int64_t sb, ss, sh;
  bool interleaved;
} mp_krope;

void mp_k_rotary(int d, const mp_krope *p, const void *x, const void *cos_c,
                 const void *sin_c, const int64_t *pos, void *y);

#define MP_KATTN_MASK_NONE 0
#define MP_KATTN_MASK_BOOL 1  /* true: the key is attended */
#define MP_KATTN_MASK_FLOAT 2 /* added to the scores (x's dtype) */

/* Attention: per batch b, query head h (key/value head h / (q_heads /
 * kv_heads)) and query i, the scores q.k_j * scale over the past rows then
 * the new ones (j < past + kv_seq), softcap c > 0: c tanh(s / c), plus the
 * mask (and -inf where causal and j > i + past, or j >= mask_len), a
 * softmax, and y the weighted sum of the value rows. Element strides (b,
 * h, row) of q, k, v and y (the last dim contiguous); past_k/past_v
 * [batch, kv_heads, past, head or v_head]; the mask's strides over (b, h,
 * i, j) are 0 on broadcast dims. qk (or NULL): [batch, q_heads, q_seq,
 * past + kv_seq], the scaled (and softcapped) scores (qk_mode 0) or the
 * softmax (3). row: past + kv_seq doubles of scratch. */
typedef struct mp_kattn {
  int64_t batch, q_heads, kv_heads, q_seq, kv_seq, past, head, v_head;
  int64_t q_st[3], k_st[3], v_st[3], y_st[3];
  int64_t m_st[4], mask_len;
  int mask_kind, qk_mode;
  bool causal;
  double scale, softcap;
  /* opset 24's nonpad_kv_seqlen (or NULL): batch b attends its first
   * nonpad[b] keys (checked: 0..past + kv_seq); without a past cache its
   * causal cut is bottom-right aligned, j > i + nonpad[b] - q_seq */
  const int64_t *nonpad;
} mp_kattn;

/* What nonpad_kv_seqlen, causality and the mask add to score (i, j) of
 * batch b, query head h: 0, -inf, or the float mask's value (dtype d);
 * shared by the scalar and the RVV kernel. */
double mp_k_attention_bias(int d, const mp_kattn *p, const void *mask,
                           int64_t b, int64_t h, int64_t i, int64_t j);

void mp_k_attention(int d, const mp_kattn *p, const void *q, const void *k,
                    const void *v, const void *mask, const void *past_k,
                    const void *past_v, void *y, void *qk, double *row);

/* TensorScatter (opset 24): y = past, then update's rows written at rows
 * (w[b] + s) of y's axis (mod rows when circular), for past viewed as
 * [batch, pre, rows, inner] and update as [batch, pre, seq, inner], es
 * bytes an element; w (or NULL: zeros) checked: linear w[b] + seq <=
 * rows, circular w[b] < rows. y may be past (in place). */
void mp_k_tensor_scatter(size_t es, int64_t batch, int64_t pre, int64_t rows,
                         int64_t seq, int64_t inner, bool circular,
                         const int64_t *w, const void *past, const void *update,
                         void *y);

/* present_key (value false) or present_value: [batch, kv_heads, past +
 * kv_seq, dim], the past rows then the new ones of x (strides of p). */
void mp_k_attention_present(int d, const mp_kattn *p, bool value,
                            const void *past, const void *x, void *out);

/* ---- statistics (k_stats.c): f32 or f64 (d), in double ------------------ */

/* LpNormalization of [outer, len, inner] along the middle axis: x / (sum
 * of |x|^p)^(1/p), p 1 or 2; a slice whose norm is 0 gives zeros (as ONNX
 * Runtime does, where ONNX's reference divides by 0). */
void mp_k_lpnorm(int d, int64_t outer, int64_t len, int64_t inner, int p,
                 const void *x, void *y);

/* GroupNormalization of [n, c, rest] in groups of c / groups channels:
 * per (n, group) mean and variance; scale and bias per channel (opset 21)
 * or per group (opset 18). groups == c with scale and bias per channel is
 * InstanceNormalization. */
void mp_k_groupnorm(int d, int64_t n, int64_t c, int64_t rest, int64_t groups,
                    bool per_channel, const void *x, const void *scale,
                    const void *bias, double eps, void *y);

/* LRN across channels of [n, c, rest]: x / (bias + alpha / size * the sum
 * of squares over channels c - floor((size-1)/2) .. c + ceil((size-1)/2))
 * ^ beta. */
void mp_k_lrn(int d, int64_t n, int64_t c, int64_t rest, int64_t size,
              double alpha, double beta, double bias, const void *x, void *y);

/* ImageScaler (opsets 1 to 9) of [n, c, rest]: x * scale + bias[c]. */
void mp_k_image_scaler(int d, int64_t n, int64_t c, int64_t rest, double scale,
                       const double *bias, const void *x, void *y);

/* MeanVarianceNormalization over the axes in mask, as ONNX's function
 * body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9). ws holds 2 doubles
 * per kept index. */
void mp_k_mvn(int d, const mp_kshape *xs, uint32_t mask, const void *x, void *y,
              double *ws);

typedef enum mp_kloss {
  MP_KLOSS_NONE = 0,
  MP_KLOSS_SUM,
  MP_KLOSS_MEAN
} mp_kloss;

/* NegativeLogLikelihoodLoss of input [n, c, rest] and target [n, rest]
 * (checked: in [0, c) or the ignore index). */
typedef struct mp_knll {
  int64_t n, c, rest;
  mp_kloss reduction;
  bool has_ignore;
  int64_t ignore;
} mp_knll;

/* loss: [n, rest] (none) or one value (sum; mean: divided by the sum of
 * the weights applied); weight [c] or NULL (all 1). */
void mp_k_nll_loss(int d, const mp_knll *p, const void *input,
                   const int64_t *target, const void *weight, void *loss);

/* LogSoftmax along axis 1 of [n, c, rest] (SoftmaxCrossEntropyLoss). */
void mp_k_log_softmax_axis1(int d, int64_t n, int64_t c, int64_t rest,
                            const void *x, void *y);

/* ---- index, layout and selection (k_index.c) ----------------------------
 * Indices arrive normalised to [0, len) (the runtime checks them first). */

/* ArgMax (ArgMin with is_min) along the middle axis of x viewed as
 * [outer, len, inner]; ties to the lower index, or the higher with last
 * (select_last_index). */
void mp_k_arg(int d, bool is_min, bool last, int64_t outer, int64_t len,
              int64_t inner, const void *x, int64_t *y);

/* GatherElements: y (indices' shape is) at multi-index i reads x at i with
 * axis coordinate idx[i]. is has xs's rank, no dim larger. */
void mp_k_gather_elements(size_t es, const mp_kshape *xs, const mp_kshape *is,
                          uint32_t axis, const int64_t *idx, const void *x,
                          void *y);

typedef enum mp_kscatter {
  MP_KSCATTER_NONE = 0,
  MP_KSCATTER_ADD,
  MP_KSCATTER_MUL,
  MP_KSCATTER_MAX,
  MP_KSCATTER_MIN
} mp_kscatter;

/* ScatterElements: y = x, then for every multi-index i of the updates
 * (indices' shape is), y at i with axis coordinate idx[i] becomes
 * updates[i] (or is combined with it: red), in increasing i. y may be
 * x. */
void mp_k_scatter_elements(int d, mp_kscatter red, const mp_kshape *xs,
                           const mp_kshape *is, uint32_t axis,
                           const int64_t *idx, const void *x,
                           const void *updates, void *y);

/* GatherND: for each of batches x tuples index tuples, the block of
 * `block` elements at element offset offs[i] (within its batch of
 * per_batch elements) is copied to y in order. */
void mp_k_gather_nd(size_t es, int64_t batches, int64_t per_batch,
                    int64_t tuples, int64_t block, const int64_t *offs,
                    const void *x, void *y);

/* ScatterND: y = x (n_x elements), then update block t (block elements)
 * goes to element offset offs[t], in increasing t. y may be x. */
void mp_k_scatter_nd(int d, mp_kscatter red, int64_t n_x, int64_t tuples,
                     int64_t block, const int64_t *offs, const void *x,
                     const void *updates, void *y);

/* Trilu over batches of rows x cols matrices: keeps element (i, j) where
 * j - i >= k (upper) or j - i <= k (lower), zeros the rest. y may be x. */
void mp_k_trilu(size_t es, int64_t batches, int64_t rows, int64_t cols,
                bool upper, int64_t k, const void *x, void *y);

/* CumSum along the middle axis of [outer, len, inner]: floats summed in
 * double and rounded once per output, integers wrapping. y may be x. */
void mp_k_cumsum(int d, bool exclusive, bool reverse, int64_t outer,
                 int64_t len, int64_t inner, const void *x, void *y);

/* Hardmax along the middle axis: 1 at the first largest element, else 0. */
void mp_k_hardmax(int d, int64_t outer, int64_t len, int64_t inner,
                  const void *x, void *y);

/* DepthToSpace (to_space) or SpaceToDepth between [n, c * b * b, h, w] and
 * [n, c, h * b, w * b]; crd: the CRD channel order (DepthToSpace only). */
void mp_k_depth_space(size_t es, bool to_space, bool crd, int64_t n, int64_t c,
                      int64_t h, int64_t w, int64_t b, const void *x, void *y);

/* Tile: y[i] = x[i mod xs] per dim (ys a whole multiple of xs). */
void mp_k_tile(size_t es, const mp_kshape *xs, const mp_kshape *ys,
               const void *x, void *y);

/* Expand: x broadcast (numpy) to ys. */
void mp_k_expand(size_t es, const mp_kshape *xs, const mp_kshape *ys,
                 const void *x, void *y);

/* OneHot: y [outer, depth, inner] is on where idx[outer, inner] equals
 * the depth index (idx already made non-negative; one out of range
 * matches nothing), else off. */
void mp_k_onehot(size_t es, int64_t outer, int64_t depth, int64_t inner,
                 const int64_t *idx, const void *off, const void *on, void *y);

/* TopK along the middle axis: the k largest (smallest) elements, best
 * first, ties to the lower index, with their indices. ws holds k. */
void mp_k_topk(int d, bool largest, int64_t outer, int64_t len, int64_t inner,
               int64_t k, const void *x, void *values, int64_t *indices,
               int64_t *ws);

/* IsNaN (nan) or IsInf (neg, pos: which infinities) of n floats, to
 * bool. */
void mp_k_fpclass(int d, bool nan, bool neg, bool pos, const void *x,
                  uint8_t *y, size_t n);

typedef enum mp_kpad_mode {
  MP_KPAD_CONSTANT = 0,
  MP_KPAD_REFLECT,
  MP_KPAD_EDGE,
  MP_KPAD_WRAP /* opset 19: the axis repeated, x[(o - pad) mod n] */
} mp_kpad_mode;

/* Pad: pads[d] (begin) may be negative (a crop); value is the constant
 * as an element of x's dtype (es bytes). */
void mp_k_pad(size_t es, const mp_kshape *xs, const mp_kshape *ys,
              const int64_t *pad_begin, mp_kpad_mode mode, const void *value,
              const void *x, void *y);

/* Resize (nearest or n-linear) with ONNX coordinate transformation. */
typedef enum mp_kcoord {
  MP_KC_HALF_PIXEL = 0,
  MP_KC_ASYMMETRIC,
  MP_KC_ALIGN_CORNERS,
  MP_KC_PYTORCH_HALF_PIXEL,
  MP_KC_TF_HALF_PIXEL_FOR_NN,
  MP_KC_TF_CROP_AND_RESIZE,  /* roi (start per axis, then end per axis, as
                                fractions of in - 1); a position outside
                                [0, in - 1] on any axis writes
                                extrapolation */
  MP_KC_HALF_PIXEL_SYMMETRIC /* opset 19: half_pixel, shifted so that the
                                centre of the input maps to the centre of
                                the output when out != in x scale */
} mp_kcoord;

typedef enum mp_knearest {
  MP_KN_ROUND_PREFER_FLOOR = 0,
  MP_KN_ROUND_PREFER_CEIL,
  MP_KN_FLOOR,
  MP_KN_CEIL
} mp_knearest;

typedef struct mp_kresize {
  mp_kshape in, out;
  double scale[MP_K_MAX_RANK];
  bool linear;
  bool cubic; /* ONNX's cubic: 4 taps per axis with cubic_a, taps
                 beyond the edge read the edge (or, exclude_outside,
                 weigh 0 and the rest are renormalised) */
  double cubic_a;
  bool exclude_outside;
  mp_kcoord coord;
  mp_knearest nearest;
  double roi[2 * MP_K_MAX_RANK]; /* tf_crop_and_resize only */
  double extrapolation;
  bool antialias; /* opset 18, linear and cubic: on an axis whose scale is
                     below 1 the filter is stretched by 1 / scale (its
                     taps span 2 / scale, cubic 4 / scale, inputs) and its
                     weights normalised to sum 1; scale >= 1 /
                     MP_K_RESIZE_MIN_INV (the runtime checks) */
} mp_kresize;

/* The smallest antialiased scale is 1 / this: at most 2 x 32 + 2 linear
 * or 4 x 32 + 2 cubic taps per axis. */
#define MP_K_RESIZE_MIN_INV 32
#define MP_K_RESIZE_TAPS (4 * MP_K_RESIZE_MIN_INV + 2)

/* Nearest works on any dtype (es bytes); linear and cubic on floats. */
void mp_k_resize(const mp_kresize *p, int d, const void *x, void *y);

/* The ONNX attribute values by name (coordinate_transformation_mode,
 * nearest_mode); -1 for a name the kernel does not know. */
int mp_k_coord_named(const char *name);
int mp_k_nearest_named(const char *name);

/* Nearest: the input index along axis d that output index o reads. */
int64_t mp_k_resize_nearest_src(const mp_kresize *p, uint32_t d, int64_t o);

/* ---- quantization ---------------------------------------------------------
 */

/* QuantizeLinear: y = saturate(round_half_even(x / scale) + zp), per
 * tensor (n_scale 1) or per channel of axis (x viewed as [outer, ch,
 * inner]). y dtype i8, u8, i4 or u4; zp of y's dtype or NULL. */
void mp_k_quantize(int64_t outer, int64_t ch, int64_t inner, const float *x,
                   const float *scale, int n_scale, const void *zp, int dy,
                   void *y);

/* DynamicQuantizeLinear (uint8): scale = (max(0, max x) - min(0, min x))
 * / 255 in f32, zp = saturate(round_half_even(-min(0, min x) / scale)),
 * then y as mp_k_quantize with them. NaNs are left out of the range.
 * When every x is 0 (scale 0) y, zp and scale are 0. */
void mp_k_dynamic_quantize(size_t n, const float *x, uint8_t *y, float *scale,
                           uint8_t *zp);

/* Requantization of n int32 sums (QLinearConv, QLinearMatMul) as ONNX
 * Runtime does it, in f32: y = saturate(round_half_even((float)(acc[i] +
 * bias) * mult) + zp), y int8 or uint8 (dy), elements y[0..n). */
void mp_k_requantize(int64_t n, const int32_t *acc, int32_t bias, float mult,
                     int32_t zp, int dy, void *y);

/* DequantizeLinear: y = (x - zp) * scale; x i8, u8, i4, u4 or i32. */
void mp_k_dequantize(int64_t outer, int64_t ch, int64_t inner, int dx,
                     const void *x, const float *scale, int n_scale,
                     const void *zp, float *y);

/* Blocked quantization (opset 21's block_size): as above with the scale
 * and zero point of shape [outer, ceil(ch / block), inner], element (o,
 * c, i) using (o, c / block, i). */
void mp_k_quantize_blocked(int64_t outer, int64_t ch, int64_t inner,
                           int64_t block, const float *x, const float *scale,
                           const void *zp, int dy, void *y);
void mp_k_dequantize_blocked(int64_t outer, int64_t ch, int64_t inner,
                             int64_t block, int dx, const void *x,
                             const float *scale, const void *zp, float *y);

/* Elements [e0, e0 + n) of x (the [outer, ch, inner] view above;
 * block 0 per tensor or per axis by n_scale, else blocked) into y[0..n),
 * each as the whole tensor's dequantization computes it. A Conv's
 * DequantizeLinear prologue widens its weight a few output channels at a
 * time with it. */
void mp_k_dequantize_range(int64_t ch, int64_t inner, int64_t block, int dx,
                           const void *x, const float *scale, int n_scale,
                           const void *zp, int64_t e0, int64_t n, float *y);

/* Columns [c0, c0 + nc) of a matrix x [rows, cols] dequantized into y
 * [rows, nc], each element as mp_k_dequantize computes it: parameters per
 * tensor (n_scale 1), per axis (block 0: one per row for axis 0, one per
 * column for axis 1) or blocked along axis (block > 0, n_scale ignored).
 * A MatMul's DequantizeLinear prologue widens its weight a panel at a
 * time with it. */
void mp_k_dequantize_cols(int64_t rows, int64_t cols, int64_t c0, int64_t nc,
                          int axis, int64_t block, int dx, const void *x,
                          const float *scale, int n_scale, const void *zp,
                          float *y);

/* MatMulNBits' (com.microsoft) weight W [N, K]: b holds N rows of kb =
 * ceil(K / block) blocks of block * bits / 8 bytes (bits 2, 4 or 8, the
 * lowest bits first: element i of a row is bits [i * bits, (i + 1) * bits)
 * of its bytes), scale N * kb values. zp_dt: 0, no zero points (2^(bits -
 * 1)); MP_KD_U8, N rows of ceil(kb * bits / 8) bytes packed as b is;
 * MP_KD_F32, N * kb values. g_idx (NULL: element i of a row is in block
 * i / block) gives each of the K elements its block, each in [0, kb). */
typedef struct mp_knbits {
  int64_t k, block;
  int bits, zp_dt;
  const uint8_t *b;
  const float *scale;
  const void *zp;
  const int32_t *g_idx;
} mp_knbits;

/* Rows [n0, n0 + nn) of W into y [nn, K]: with integer zero points each
 * element is (q - zp) * scale rounded once to f32; with float ones
 * ((float)q - zp) * scale, each operation in f32. */
void mp_k_dequantize_nbits(const mp_knbits *w, int64_t n0, int64_t nn,
                           float *y);

#endif /* MPLAN_KERNELS_H */
