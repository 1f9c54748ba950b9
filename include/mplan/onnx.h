/*
 * mplan/onnx.h -- reading ONNX models (ModelProto, protobuf) into the graph
 * IR, with protobuf-c code generated at build time from the system's
 * onnx.proto.
 *
 * Initializers and Constant nodes become weights sized from dims x dtype
 * (small ones keep their values for shape math); graph inputs keep their
 * dims (numbers, named dim_params, or unknown); graph outputs and
 * value_info become declarations that shape inference is checked against;
 * every other tensor is pending until shape inference. External tensor
 * data is refused by name.
 */
#ifndef MPLAN_ONNX_H
#define MPLAN_ONNX_H

#include "mplan/graph.h"

/* The newest default-domain opset whose rules this mplan knows: ONNX 1.12's
 * 17, and what 18 to 21 changed (axes inputs of the reductions and Pad,
 * Resize's axes, Split's num_outputs, GroupNormalization per group and
 * per channel, Pad's wrap, bool ReduceMax/Min, AveragePool's dilations,
 * LpPool's ceil_mode, Mish, the Bitwise ops, QuantizeLinear's
 * output_dtype, Resize's antialias, keep_aspect_ratio_policy and
 * half_pixel_symmetric; blocked quantization is refused in one line;
 * tests/data/gen_onnx_extra.py's newer_opsets), 22 (bfloat16 for more
 * ops: types only) and 23 (Attention, RMSNormalization, RotaryEmbedding;
 * QuantizeLinear's precision; the 4-bit float and integer types are
 * refused as every unknown dtype is; gen_onnx_extra.py's opset23) and 24
 * (Swish, TensorScatter, Attention's nonpad_kv_seqlen; FLOAT8E8M0 is
 * refused; opset24). A newer model loads with a warning. */
#define MP_ONNX_OPSET_MAX 24

/* Parses data[0..len) (the bytes of file) into a linked graph. Borrows
 * data; copies what it keeps. Returns an owned graph (release with
 * mp_graph_destroy). Every error names file, the element and the problem. */
mp_status mp_onnx_import(const char *file, const void *data, size_t len,
                         const mp_alloc *a, mp_graph **out, mp_error *err);

/* An If node whose condition is known (--value, shape math): an earlier
 * inference of the same model found its value. */
typedef struct mp_onnx_branch {
  const char *op; /* the If's op name in the graph ("outer/then/inner") */
  bool then;      /* the condition's value */
} mp_onnx_branch;

/* mp_onnx_import, with every If named in taken[0..n_taken) flattened with
 * its taken branch only: the other branch never runs, so its nodes are
 * neither inferred (a shape that holds only for other inputs is no error)
 * nor planned. Such an If gets attribute mplan.branch (1 then, 0 else)
 * and reads that branch's outputs alone; the graph warns once per If. */
mp_status mp_onnx_import_taken(const char *file, const void *data, size_t len,
                               const mp_alloc *a, const mp_onnx_branch *taken,
                               size_t n_taken, mp_graph **out, mp_error *err);

/* A list of If ops with a known condition, to import again with. */
typedef struct mp_onnx_ifs {
  mp_onnx_branch *v; /* names owned by the list */
  size_t n, cap;
} mp_onnx_ifs;

/* Appends to f every If op of g (imported by mp_onnx_import*) whose
 * condition has a value (--value, shape math, bound test data) and that
 * still holds both branches and is not in f already. Release with
 * mp_onnx_ifs_free (g's allocator). */
mp_status mp_onnx_known_ifs(const mp_graph *g, mp_onnx_ifs *f, mp_error *err);
void mp_onnx_ifs_free(const mp_alloc *a, mp_onnx_ifs *f);

/* The mp_dtype of an ONNX TensorProto.DataType code (Cast's "to"). */
bool mp_onnx_dtype(int32_t code, mp_dtype *out);

/* Binds graph input `name` of g to a serialized TensorProto (the
 * input_*.pb files of ONNX test data): its dims become the input's shape
 * and, when small, its contents the input's value. Borrows data. */
mp_status mp_onnx_bind_input(mp_graph *g, const char *name, const void *data,
                             size_t len, mp_error *err);

/* true when data looks like an ONNX ModelProto (a cheap check of the first
 * fields, not a parse). */
bool mp_onnx_sniff(const void *data, size_t len);

/* ---- weight data (the bundle writer, issue 6) ------------------------- */

/* The raw little-endian bytes of every initializer and Constant node of
 * the model's main graph, by name. Returns an owned table (release with
 * mp_onnx_data_destroy). Borrows data. */
typedef struct mp_onnx_data mp_onnx_data;
mp_status mp_onnx_data_load(const char *file, const void *data, size_t len,
                            const mp_alloc *a, mp_onnx_data **out,
                            mp_error *err);
void mp_onnx_data_destroy(mp_onnx_data *d);

/* The bytes of the named weight (borrowed from d), or false. */
bool mp_onnx_data_find(const mp_onnx_data *d, const char *name,
                       const void **bytes, size_t *len, mp_dtype *dtype);

/* Decodes a serialized TensorProto (the input_*.pb / output_*.pb files of
 * ONNX test data) into its dtype, dims and raw little-endian bytes
 * (owned; release with mp_free). dims holds MP_MAX_RANK entries. */
mp_status mp_onnx_tensor_decode(const char *file, const void *data, size_t len,
                                const mp_alloc *a, mp_dtype *dtype,
                                uint32_t *rank, int64_t *dims, void **bytes,
                                size_t *n, mp_error *err);

#endif /* MPLAN_ONNX_H */
