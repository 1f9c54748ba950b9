/*
 * mplan/bundle.h -- the program bundle (`mplan compile`, format mpk/1) and
 * its loader.
 *
 * A bundle is everything a target needs to run a planned graph: memory
 * regions, buffers with their planned offsets and lifetimes, tensors
 * (dtype, shape, buffer), ops in execution order with kernel ids and
 * parameters, and weight data. Little-endian, fixed-size records, in this
 * order after a 96-byte header (every section 8-byte aligned, the weights
 * 64-byte aligned):
 *
 *   header   magic "MPLANPK\0", u32 version (1), u32 header bytes (96),
 *            u64 file bytes, u32 CRC-32 (IEEE) of the whole file with this
 *            field read as 0, u32 flags, u32 string bytes, u32 regions,
 *            u32 buffers, u32 tensors, u32 ops, u32 refs, u32 params,
 *            u32 inputs, u32 outputs, u32 reserved (0), u64 weight bytes,
 *            u64 reserved (0), u64 reserved (0)
 *   strings  NUL-terminated names; a name is a u32 offset into this blob
 *   regions  32 B: u32 name, u32 kind (0 persistent, 1 scratch), u64 size,
 *            u64 base (offset of the region in its plan region), u32
 *            alignment, u32 plan region name
 *   buffers  48 B: u32 name, u32 region, u64 offset (of the data), u64
 *            size, u32 red zone before, u32 red zone after, i32 first
 *            step, i32 last step, u32 class (0 activation, 1 resident,
 *            2 retained), u32 flags (1: graph output)
 *   tensors  128 B: u32 name, u32 buffer, u64 offset in buffer, u64 bytes,
 *            u8 dtype (mp_kdtype), u8 kind (mp_bt_kind), u8 rank, u8 0,
 *            u32 flags, i32 first step, i32 last step (producer .. last
 *            reader; -1 for inputs and weights), u64 weight data offset,
 *            u64 weight data bytes (a weight's contents; for a graph
 *            input, 0 or the value it was planned for, which a run
 *            without an inputs file feeds), i64 dims[8], u64 reserved (0)
 *   ops      32 B: u32 name, u32 type name (the ONNX op type), u16
 *            kernel (mp_bop), u16 flags, u16 inputs, u16 outputs, u32
 *            first ref (inputs then outputs), u32 first param, u32 params,
 *            u32 loop (0, or 1 + the step of the innermost LOOP op whose
 *            body runs this op again on every iteration)
 *   refs     u32 tensor indices (MP_BUNDLE_NONE: an omitted input)
 *   params   i64 (a double is stored as its bit pattern)
 *   io       u32 graph input tensors, then u32 graph output tensors
 *   weights  raw little-endian element data
 *
 * The loader trusts nothing: every count, offset, index, size, shape and
 * parameter is checked before anything runs (see runtime/bundle_load.c
 * for the list). A bundle it accepts can be executed without any access
 * outside the regions the runtime allocates -- that is memory safety.
 * Whether the plan is *right* (no live buffer shares bytes) is what a
 * poison-mode run then checks with data.
 */
#ifndef MPLAN_BUNDLE_H
#define MPLAN_BUNDLE_H

#include "mplan/base.h"
#include "mplan/kernels.h"

#define MP_BUNDLE_MAGIC "MPLANPK"
#define MP_BUNDLE_VERSION 1
#define MP_BUNDLE_HEADER 96
#define MP_BUNDLE_REGION_REC 32
#define MP_BUNDLE_BUFFER_REC 48
#define MP_BUNDLE_TENSOR_REC 128
#define MP_BUNDLE_OP_REC 32
#define MP_BUNDLE_NONE 0xFFFFFFFFu
#define MP_BUNDLE_WEIGHT_ALIGN 64

/* Limits that keep every derived size far from overflow. */
#define MP_BUNDLE_MAX_COUNT (1u << 24)
#define MP_BUNDLE_MAX_REGION ((uint64_t)1 << 40)

typedef enum mp_bregion_kind {
  MP_BREGION_PERSISTENT = 0, /* weights, graph inputs, retained state */
  MP_BREGION_SCRATCH = 1     /* activations, shared by reuse */
} mp_bregion_kind;

typedef enum mp_bt_kind {
  MP_BT_ACTIVATION = 0,
  MP_BT_INPUT,
  MP_BT_WEIGHT,
  MP_BT_OUTPUT,
  MP_BT_RETAINED,
  MP_BT_KIND_COUNT
} mp_bt_kind;

/* Kernels (the op record's kernel id). Parameter layouts, as i64 values:
 *   CONV, CONV_TRANSPOSE: nd, group, shift, k[3], stride[3], dil[3],
 *       pad_begin[3], pad_end[3], output_padding[3], then the head tail
 *   GEMM: trans_a, trans_b, alpha, beta, shift, horizontal, head tail
 *   MATMUL: shift, horizontal, head tail
 *     head tail: prologue count P (0 to 2), then P entries of kind (1
 *       DequantizeLinear, 2 Cast, 3 DequantizeLinear blocked), input (0
 *       or 1, one entry each at most), axis and for kind 3 the block
 *       size (each DequantizeLinear's scale and zero point or NONE are
 *       the last inputs, in the entries' order); epilogue count E, then E
 *       entries
 *       of 4: code (MP_BEPI_* | op), extra inputs, alpha, beta (TAP:
 *       extra 0, alpha the entry whose input value is the operand)
 *   UNARY: op (mp_kunary), alpha, beta
 *   BINARY: op (mp_kbinary), activation applied to the result (0 none,
 *       1 Relu, 2 Relu6: the graphs' fused_activation); optionally 1 + the
 *       input a Resize prologue replicates, or 3 and the unit dims
 *       appended to input 1's before broadcasting (ONNX before opset 7:
 *       input 1 aligned from an axis on, PRelu's slope per channel)
 *   VARIADIC: op (Sum/Max/Min/Mean)
 *   WHERE, CAST, VIEW: none
 *   BATCHNORM: epsilon; in training mode then momentum (outputs: y, and
 *       optionally the running mean and variance)
 *   SOFTMAX: axis, log, coerce_2d     LAYERNORM: axis, epsilon
 *   MAXPOOL, AVGPOOL: nd, k[3], stride[3], dil[3], pad_begin[3],
 *       pad_end[3], count_include_pad; a MAXPOOL with an Indices output
 *       (its second) then storage_order
 *   REDUCE: op (mp_kreduce), axes mask
 *   CONCAT, SPLIT, GATHER: axis      TRANSPOSE: perm[rank]
 *   SLICE: start[rank], step[rank]    PAD: mode, pad_begin[rank], value
 *   RESIZE: mode (0 nearest, 1 linear, 2 cubic, 3 and 4 linear and
 *       cubic antialiased), coord, nearest, scale[rank], then for cubic a and
 *       exclude_outside, then for tf_crop_and_resize extrapolation_value
 *       (and the roi as a second input)
 *   QUANTIZE, DEQUANTIZE: axis, and block_size when blocked
 *                                     FILL: values (one per element, or
 *       one repeated), as the output dtype's value in a double or i64
 *   ARG: is_min, axis, keepdims, select_last_index
 *   GATHER_ELEMENTS: axis             SCATTER_ELEMENTS: axis, reduction
 *   GATHER_ND: batch_dims             SCATTER_ND: reduction (mp_kscatter)
 *   TRILU: upper (input 1, when present: k)
 *   CUMSUM: exclusive, reverse (input 1: the axis)
 *   HARDMAX: axis, coerce_2d          DEPTH_SPACE: to_space, crd, block
 *   TILE, EXPAND: none (the output shape says it)
 *   ONEHOT: axis (inputs: indices, values [off, on])
 *   TOPK: axis, largest (outputs: values, indices; k from their shape)
 *   FPCLASS: nan, detect_negative, detect_positive
 *   INSTANCENORM: epsilon             LRN: size, alpha, beta, bias
 *   IMAGE_SCALER: scale, the bias count B (0 or C), B biases
 *   GROUPNORM: epsilon, num_groups, scale and B per channel (1, opset 21)
 *       or per group (0, opset 18)
 *   LPPOOL: AVGPOOL's parameters (count_include_pad 0), then p (a double)
 *   LPNORM: axis, p (1 or 2)
 *   RMSNORM: axis, epsilon (inputs: x, scale)
 *   ROTARY: interleaved, num_heads (a 3-D input; 0 for 4-D), the rotated
 *       dims (0: all) (inputs: x, cos_cache, sin_cache, position_ids)
 *   ATTENTION: q_num_heads, kv_num_heads (0 for 4-D inputs), is_causal,
 *       scale (a double; 0: 1/sqrt(head size)), softcap (a double),
 *       qk_matmul_output_mode (0 or 3) (inputs: Q, K, V, attn_mask,
 *       past_key, past_value; outputs: Y, present_key, present_value,
 *       qk_matmul_output; opset 24: nonpad_kv_seqlen, a 7th input)
 *       (runtime/ops_attn.c)
 *   TENSOR_SCATTER: axis (>= 1), circular (inputs: past_cache, update,
 *       write_indices)
 *   MATMUL_NBITS: K, N, bits (2, 4 or 8), block_size, then the head
 *       tail with no prologue (com.microsoft's MatMulNBits; inputs A, B,
 *       scales, zero points (packed uint8 or f32) or NONE, g_idx (int32
 *       [K]) or NONE, bias or NONE, then the
 *       epilogue's: Y = A W^T + bias, W [N, K] unpacked from B a panel
 *       of rows at a time, mp_k_dequantize_nbits)
 *   ATTN_ROWS: the scale's op (0 none, 1 Mul, 2 Div) (inputs: Q, Kt, V,
 *       scale, mask: the attention pass's MatMul, a query row at a time
 *       with the f32 kernels of MatMul, Mul/Div, Add and Softmax)
 *   MVN: axes mask
 *   NLL_LOSS, SCE_LOSS: reduction (mp_kloss), has_ignore, ignore_index
 *   EINSUM: n_in, n_labels, per operand rank and its labels, the output's
 *       rank and labels (runtime/ops_linalg.c)
 *   DET, POW_MIXED: none              REVERSE_SEQUENCE: time_axis
 *   GRID_SAMPLE: mode (mp_kgrid_mode), padding (mp_kgrid_padding), align
 *   MAX_UNPOOL: nd, k[nd], stride[nd], pad_begin[nd], pad_end[nd]
 *       (inputs: x, indices, optional output_shape)
 *   ROI_ALIGN: max, output_height, output_width, sampling_ratio,
 *       spatial_scale, half_pixel (inputs: x, rois, batch_indices)
 *   DROPOUT: has_seed, seed (the stream when training_mode is true and
 *       the ratio not 0, RANDOM's) (inputs: x, optional ratio and
 *       training_mode; outputs: y, optional mask)
 *   DFT: axis, dft_length, onesided, inverse (input: the signal)
 *   STFT: onesided (inputs: signal, frame_step, optional window and
 *       frame_length)
 *   MEL_WEIGHT_MATRIX: none (inputs: its five scalars)
 *   The selection ops, whose output shape depends on the data: the run
 *   finds how many elements they select and fails unless that is the
 *   count the plan holds (runtime/ops_select.c):
 *   NON_ZERO: none                    COMPRESS: axis (-1: flattened)
 *   UNIQUE: sorted, axis (-1: flattened) (outputs: y, optional indices,
 *       inverse_indices, counts)
 *   NMS: center_point_box (inputs: boxes, scores, optional
 *       max_output_boxes_per_class, iou_threshold, score_threshold)
 *   TFIDF: min_gram_length, max_gram_length, max_skip_count, mode (0
 *       TF, 1 IDF, 2 TFIDF), then ngram_counts, pool_int64s and
 *       ngram_indexes, each as its length and its values, then the
 *       number of weights (0 or one per n-gram) and the weights
 *   OPTIM: kind (mp_kopt_kind), n, then alpha, beta, epsilon,
 *       norm_coefficient, norm_coefficient_post, decay_factor (inputs:
 *       R, T, then n each of X, G and the states: Adam V and H, the
 *       others one; outputs: n each of the new X and the new states)
 *   RANDOM: kind (mp_krand_kind: uniform, normal, Bernoulli or
 *       multinomial), has_seed, seed, then a and b (low and high, or mean
 *       and scale; 0 otherwise). The stream is the seed's when has_seed is
 *       1, else the op name's; each run of the op draws anew
 *       (k_random.c). Inputs: none, or the Like forms' template,
 *       Bernoulli's probabilities or Multinomial's log-probabilities
 *       [batch, classes] (its output [batch, sample_size])
 *   LOOP_ENTER: kind (0 Loop, 1 Scan); a Scan then n_scan_in, its
 *       scan_input_axes, its directions (1 reverse). Inputs: the Loop's
 *       or Scan's own; outputs: the body's inputs (Loop: iteration
 *       number, condition, carried values; Scan: states, then the first
 *       slice of each scan input)
 *   LOOP: kind, the step of its LOOP_ENTER, n_orig, n_body, n_carried
 *       (Loop: carried values; Scan: states), n_scan_out; a Scan then
 *       its scan_output_axes and their directions. Inputs: the node's own
 *       (n_orig), the body's outputs (n_body), the enter op's outputs.
 *       The body ran once before it; it writes the iteration's slice of
 *       each scan output, and either feeds the body's outputs back to
 *       the enter op's and runs the body's ops again (those whose op
 *       record names it), or writes its outputs. A run of a different
 *       count than a scan output holds fails in one line, as does one of
 *       more than MP_RT_LOOP_MAX iterations */
typedef enum mp_bop {
  MP_BOP_CONV = 1,
  MP_BOP_CONV_TRANSPOSE,
  MP_BOP_GEMM,
  MP_BOP_MATMUL,
  MP_BOP_UNARY,
  MP_BOP_BINARY,
  MP_BOP_VARIADIC,
  MP_BOP_WHERE,
  MP_BOP_CAST,
  MP_BOP_VIEW,
  MP_BOP_SOFTMAX,
  MP_BOP_BATCHNORM,
  MP_BOP_LAYERNORM,
  MP_BOP_MAXPOOL,
  MP_BOP_AVGPOOL,
  MP_BOP_REDUCE,
  MP_BOP_CONCAT,
  MP_BOP_SPLIT,
  MP_BOP_SLICE,
  MP_BOP_GATHER,
  MP_BOP_PAD,
  MP_BOP_TRANSPOSE,
  MP_BOP_RESIZE,
  MP_BOP_QUANTIZE,
  MP_BOP_DEQUANTIZE,
  MP_BOP_FILL,
  MP_BOP_CONV_INTEGER,
  MP_BOP_DYNAMIC_QUANTIZE,
  MP_BOP_MATMUL_INTEGER,
  MP_BOP_QLINEAR_CONV,
  MP_BOP_QLINEAR_MATMUL,
  MP_BOP_COPY,
  MP_BOP_RNN,
  MP_BOP_ARG,
  MP_BOP_GATHER_ELEMENTS,
  MP_BOP_SCATTER_ELEMENTS,
  MP_BOP_GATHER_ND,
  MP_BOP_SCATTER_ND,
  MP_BOP_TRILU,
  MP_BOP_CUMSUM,
  MP_BOP_HARDMAX,
  MP_BOP_DEPTH_SPACE,
  MP_BOP_TILE,
  MP_BOP_EXPAND,
  MP_BOP_ONEHOT,
  MP_BOP_TOPK,
  MP_BOP_FPCLASS,
  MP_BOP_INSTANCENORM,
  MP_BOP_LRN,
  MP_BOP_MVN,
  MP_BOP_NLL_LOSS,
  MP_BOP_SCE_LOSS,
  MP_BOP_EINSUM,
  MP_BOP_DET,
  MP_BOP_REVERSE_SEQUENCE,
  MP_BOP_POW_MIXED,
  MP_BOP_GRID_SAMPLE,
  MP_BOP_MAX_UNPOOL,
  MP_BOP_ROI_ALIGN,
  MP_BOP_DROPOUT,
  MP_BOP_DFT,
  MP_BOP_STFT,
  MP_BOP_MEL_WEIGHT_MATRIX,
  MP_BOP_NON_ZERO,
  MP_BOP_COMPRESS,
  MP_BOP_UNIQUE,
  MP_BOP_NMS,
  MP_BOP_LOOP_ENTER,
  MP_BOP_LOOP,
  MP_BOP_TFIDF,
  MP_BOP_OPTIM,
  MP_BOP_RANDOM,
  MP_BOP_IMAGE_SCALER,
  MP_BOP_GROUPNORM,
  MP_BOP_LPPOOL,
  MP_BOP_LPNORM,
  MP_BOP_RMSNORM,
  MP_BOP_ROTARY,
  MP_BOP_ATTENTION,
  MP_BOP_TENSOR_SCATTER,
  MP_BOP_ATTN_ROWS,
  MP_BOP_MATMUL_NBITS,
  MP_BOP_COUNT
} mp_bop;

const char *mp_bop_name(int kernel);

/* Epilogue entry classes (high byte of the code). */
#define MP_BEPI_UNARY 0x000
#define MP_BEPI_BINARY 0x100
#define MP_BEPI_BATCHNORM 0x200
/* A binary op whose operand is the value that entered entry alpha
 * (0 <= alpha <= this entry's index), not an input: x * f(x) diamonds
 * (docs/ir-conventions.md, "Add@j, Mul@j"). */
#define MP_BEPI_TAP 0x300
/* QuantizeLinear ending a Conv's, Gemm's or MatMul's epilogue (extra
 * inputs: scale, f32, one value or, for a Conv, one per output channel;
 * zero point or NONE, the output's type, as many): the entries before it
 * run in f32, the result is quantized into the int8 or uint8 output a
 * plane, a band's row or a product's row at a time. */
#define MP_BEPI_QUANTIZE 0x400
/* A QuantizeLinear inside an elementwise head's epilogue is followed by
 * a DequantizeLinear (code MP_BEPI_DEQUANTIZE | the 8-bit type, MP_KD_I8
 * or MP_KD_U8; extra inputs: scale, f32, one value; zero point or NONE,
 * of that type): the pair rounds each f32 value through that type, as
 * a QDQ pair between two ops does (docs/ir-conventions.md). */
#define MP_BEPI_DEQUANTIZE 0x500

/* Op flags. */
#define MP_BOPF_FUSED 1u /* carries a prologue or an epilogue */

/* ---- the loaded, validated bundle ---------------------------------------- */

typedef struct mp_bregion {
  const char *name;
  const char *plan_region;
  mp_bregion_kind kind;
  uint64_t size, base;
  uint32_t alignment;
} mp_bregion;

typedef struct mp_bbuffer {
  const char *name;
  uint32_t region;
  uint64_t offset, size;
  uint32_t rz_before, rz_after;
  int32_t first, last;
  uint32_t cls; /* 0 activation, 1 resident, 2 retained */
  bool output;
} mp_bbuffer;

typedef struct mp_btensor {
  const char *name;
  uint32_t buffer;
  uint64_t offset, bytes;
  int dtype; /* mp_kdtype */
  mp_bt_kind kind;
  mp_kshape shape;
  int32_t first, last;
  uint64_t data_offset, data_bytes;
} mp_btensor;

typedef struct mp_bopr {
  const char *name;
  const char *type;
  uint16_t kernel, flags;
  uint16_t n_in, n_out;
  const uint32_t *in; /* n_in tensor indices (MP_BUNDLE_NONE: omitted) */
  const uint32_t *out;
  const int64_t *params;
  uint32_t n_params;
  uint32_t loop; /* 0, or 1 + the step of the innermost LOOP repeating it */
} mp_bopr;

/* Iterations one run of a LOOP op may take, and how deep loops nest. */
#define MP_RT_LOOP_MAX (1 << 24)
#define MP_RT_LOOP_DEPTH 16

typedef struct mp_bundle mp_bundle;

/* Validates data[0..len) as a bundle and returns an owned, read-only view
 * of it (release with mp_bundle_destroy). Copies what it keeps (the
 * weights are referenced from an owned copy). Every error is one line
 * naming the record and the problem, prefixed with source. */
mp_status mp_bundle_load(const char *source, const void *data, size_t len,
                         const mp_alloc *a, mp_bundle **out, mp_error *err);
void mp_bundle_destroy(mp_bundle *b);

/* Accessors: every pointer returned (records, names, weights) is owned by
 * the bundle and valid until mp_bundle_destroy. */
size_t mp_bundle_region_count(const mp_bundle *b);
size_t mp_bundle_buffer_count(const mp_bundle *b);
size_t mp_bundle_tensor_count(const mp_bundle *b);
size_t mp_bundle_op_count(const mp_bundle *b);
const mp_bregion *mp_bundle_region(const mp_bundle *b, size_t i);
const mp_bbuffer *mp_bundle_buffer(const mp_bundle *b, size_t i);
const mp_btensor *mp_bundle_tensor(const mp_bundle *b, size_t i);
const mp_bopr *mp_bundle_op(const mp_bundle *b, size_t i);
size_t mp_bundle_input_count(const mp_bundle *b);
size_t mp_bundle_output_count(const mp_bundle *b);
uint32_t mp_bundle_input(const mp_bundle *b, size_t i);
uint32_t mp_bundle_output(const mp_bundle *b, size_t i);
const unsigned char *mp_bundle_weights(const mp_bundle *b);
/* Index of the named tensor, or false. */
bool mp_bundle_find_tensor(const mp_bundle *b, const char *name, uint32_t *t);
/* Index of the named op, or false. */
bool mp_bundle_find_op(const mp_bundle *b, const char *name, uint32_t *op);

/* Scratch bytes the heaviest op needs (its kernel workspace), computed at
 * load. */
size_t mp_bundle_workspace(const mp_bundle *b);
/* The step of the op that needs it (0 when none needs any). */
size_t mp_bundle_workspace_op(const mp_bundle *b);

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32) of n bytes, continuing
 * from crc (0 to start). */
uint32_t mp_crc32(uint32_t crc, const void *data, size_t n);

#endif /* MPLAN_BUNDLE_H */
