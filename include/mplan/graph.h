/*
 * mplan/graph.h -- the graph IR (DESIGN.md, seed 002 section 2.2).
 *
 * Tensors carry a dtype, a shape whose dims are numbers or named symbols, a
 * layout tag and a kind; ops carry an ONNX op type, attributes, inputs and
 * outputs. Everything is addressed by index; names are interned in the
 * graph. The graph owns all of its strings and arrays.
 *
 * Life cycle: create -> add dims, tensors, ops -> link (producer/consumer
 * links and structural checks) -> bind dims -> resolve sizes.
 */
#ifndef MPLAN_GRAPH_H
#define MPLAN_GRAPH_H

#include "mplan/base.h"

typedef enum mp_dtype {
  MP_DTYPE_F32 = 0,
  MP_DTYPE_F16,
  MP_DTYPE_BF16,
  MP_DTYPE_I8,
  MP_DTYPE_U8,
  MP_DTYPE_I32,
  MP_DTYPE_I64,
  MP_DTYPE_BOOL,
  /* Added for ONNX models; the first eight keep their values. */
  MP_DTYPE_F64,
  MP_DTYPE_I16,
  MP_DTYPE_U16,
  MP_DTYPE_U32,
  MP_DTYPE_U64,
  MP_DTYPE_C64,    /* two f32 */
  MP_DTYPE_C128,   /* two f64 */
  MP_DTYPE_STRING, /* no fixed size: such a tensor cannot be planned */
  MP_DTYPE_I4,     /* 4-bit, two per byte, the first in the low nibble */
  MP_DTYPE_U4,
  MP_DTYPE_COUNT
} mp_dtype;

/* Bytes per element (0 for strings and the 4-bit types), the canonical
 * name ("f32"), and its parser. */
size_t mp_dtype_size(mp_dtype t);

/* Bits per element: 8 x the size, 4 for int4/uint4, 0 for strings. */
unsigned mp_dtype_bits(mp_dtype t);

/* The bytes n elements of t take, ceil(n x bits / 8): the 4-bit types
 * pack two per byte, the first in the low nibble, as ONNX stores them.
 * false on overflow or a type without a size. */
bool mp_dtype_bytes(mp_dtype t, size_t n, size_t *out);
/* f32, f64, f16 or bf16: values read and kept as doubles. */
bool mp_dtype_is_float(mp_dtype t);
const char *mp_dtype_name(mp_dtype t);
bool mp_dtype_parse(const char *name, mp_dtype *out);

typedef enum mp_tensor_kind {
  MP_TENSOR_ACTIVATION = 0, /* produced by an op, consumed by others */
  MP_TENSOR_INPUT,          /* graph input: provided before step 0 */
  MP_TENSOR_WEIGHT,         /* constant data */
  MP_TENSOR_OUTPUT,         /* graph output: produced, lives to the end */
  MP_TENSOR_RETAINED,       /* state that survives across invocations */
  MP_TENSOR_KIND_COUNT
} mp_tensor_kind;

const char *mp_tensor_kind_name(mp_tensor_kind k);
bool mp_tensor_kind_parse(const char *name, mp_tensor_kind *out);

#define MP_MAX_RANK 8
#define MP_NO_SYM (-1)

/* One dimension: a number, or a named symbol (sym >= 0) whose value comes
 * from the graph's dim table once bound. */
typedef struct mp_dim {
  int64_t value; /* fixed value, or the bound value of sym (-1: unbound) */
  int32_t sym;   /* index into the dim table, or MP_NO_SYM */
} mp_dim;

/* Small constant contents of a tensor, kept for shape math (the values
 * flowing through Shape -> Gather -> Concat -> Reshape chains). Exactly one
 * of i (integer and bool dtypes) and f (floating dtypes) is set; n is the
 * element count, at most MP_VALUE_MAX. */
typedef struct mp_value {
  size_t n;
  const int64_t *i;
  const double *f;
} mp_value;

#define MP_VALUE_MAX 4096

/* Where a tensor's shape came from. */
typedef enum mp_shape_origin {
  MP_SHAPE_GIVEN = 0, /* written in the file for this tensor (inputs,
                         weights, graph JSON shapes) */
  MP_SHAPE_INFERRED,  /* derived by shape inference */
  MP_SHAPE_DECLARED,  /* taken from a declaration (ONNX value_info or a
                         graph output's type) because no rule applied */
  MP_SHAPE_PENDING    /* not known yet: dtype and shape are placeholders */
} mp_shape_origin;

const char *mp_shape_origin_name(mp_shape_origin o);

typedef struct mp_tensor {
  const char *name;
  mp_dtype dtype;
  mp_tensor_kind kind;
  uint32_t rank;
  mp_dim shape[MP_MAX_RANK];
  const char *layout; /* "NCHW", "NHWC", ... or NULL when unspecified */
  int32_t producer;   /* op index, or -1 */
  uint32_t n_consumers;
  const uint32_t *consumers; /* op indices, ascending; valid after link */
  size_t bytes;              /* elements x dtype size; valid after resolve */
  /* Shape inference (mplan/shape.h). */
  mp_shape_origin origin;
  const mp_value *value; /* small constant contents, or NULL */
  bool has_decl;         /* a declared type to check inference against */
  mp_dtype decl_dtype;
  uint32_t decl_rank;
  mp_dim decl[MP_MAX_RANK]; /* dims with value -1 and no sym are unknown */
  bool pinned;              /* an offline-planned offset (graph JSON "pin") */
  size_t pin;
} mp_tensor;

typedef enum mp_attr_kind {
  MP_ATTR_INT = 0,
  MP_ATTR_FLOAT,
  MP_ATTR_STRING,
  MP_ATTR_INTS,
  MP_ATTR_FLOATS
} mp_attr_kind;

typedef struct mp_attr {
  const char *name;
  mp_attr_kind kind;
  int64_t i;
  double f;
  const char *s;
  const int64_t *ints;  /* MP_ATTR_INTS */
  const double *floats; /* MP_ATTR_FLOATS */
  size_t n;             /* list length */
} mp_attr;

typedef struct mp_op {
  const char *name;
  const char *type; /* ONNX spelling: "Conv", "Relu", ... */
  uint32_t n_inputs, n_outputs, n_attrs;
  const int32_t *inputs; /* tensor indices; -1 for an omitted optional input */
  const int32_t *outputs;
  const mp_attr *attrs;
} mp_op;

/* true when input k of op is present and is the first occurrence of its
 * tensor among the op's inputs (an op reading x twice consumes it once). */
static inline bool mp_op_first_read(const mp_op *op, uint32_t k) {
  if (op->inputs[k] < 0) return false;
  for (uint32_t j = 0; j < k; j++) {
    if (op->inputs[j] == op->inputs[k]) return false;
  }
  return true;
}

typedef struct mp_graph mp_graph;

/* Returns an owned, empty graph (release with mp_graph_destroy). source
 * (a file path, copied) prefixes every error message about the graph. */
mp_status mp_graph_create(const mp_alloc *a, const char *source,
                          const char *name, mp_graph **out, mp_error *err);
void mp_graph_destroy(mp_graph *g);

/* Declares a named dim with a default value (-1: unbound). Copies name. */
mp_status mp_graph_add_dim(mp_graph *g, const char *name, int64_t value,
                           int32_t *index, mp_error *err);

/* Index of the named dim, declaring it unbound when unknown. */
mp_status mp_graph_dim_index(mp_graph *g, const char *name, int32_t *index,
                             mp_error *err);

typedef struct mp_tensor_desc {
  const char *name;
  mp_dtype dtype;
  mp_tensor_kind kind;
  uint32_t rank;
  mp_dim shape[MP_MAX_RANK]; /* value ignored where sym >= 0 */
  const char *layout;        /* may be NULL */
  bool pending;              /* dtype and shape left to shape inference */
  bool pinned;               /* placed at `pin` by the user (graph JSON) */
  size_t pin;                /* absolute offset in its region */
} mp_tensor_desc;

/* The index of a declared dim; false when there is none by that name. */
bool mp_graph_find_dim(const mp_graph *g, const char *name, int32_t *index);

/* Adds a tensor; rejects duplicate names. Copies d. */
mp_status mp_graph_add_tensor(mp_graph *g, const mp_tensor_desc *d,
                              int32_t *index, mp_error *err);

typedef struct mp_op_desc {
  const char *name;
  const char *type;
  uint32_t n_inputs, n_outputs, n_attrs;
  const int32_t *inputs;
  const int32_t *outputs;
  const mp_attr *attrs;
} mp_op_desc;

/* Adds an op; rejects duplicate op names, out-of-range tensor indices and
 * an op with no outputs. Copies d, its arrays and its attributes. */
mp_status mp_graph_add_op(mp_graph *g, const mp_op_desc *d, int32_t *index,
                          mp_error *err);

/* Marks tensor t as a graph output (it lives to the last step). Inputs
 * and weights cannot be outputs. */
mp_status mp_graph_mark_output(mp_graph *g, int32_t t, mp_error *err);

/* Builds producer/consumer links and checks the structure: every tensor is
 * produced at most once; inputs and weights are not produced; activations,
 * outputs and retained state produced by no op are errors, as are tensors
 * no op touches (except inputs, weights and retained state). */
mp_status mp_graph_link(mp_graph *g, mp_error *err);

/* Binds a named dim (overriding its default). Unknown names are errors. */
mp_status mp_graph_bind_dim(mp_graph *g, const char *name, int64_t value,
                            mp_error *err);

/* Computes every tensor's byte size. Fails on an unbound dim, a dim <= 0,
 * or a product that overflows 64 bits, naming the tensor. */
mp_status mp_graph_resolve(mp_graph *g, mp_error *err);

const char *mp_graph_name(const mp_graph *g);
const char *mp_graph_source(const mp_graph *g);
size_t mp_graph_tensor_count(const mp_graph *g);
size_t mp_graph_op_count(const mp_graph *g);
const mp_tensor *mp_graph_tensor(const mp_graph *g, size_t i);
const mp_op *mp_graph_op(const mp_graph *g, size_t i);
bool mp_graph_find_tensor(const mp_graph *g, const char *name, int32_t *index);
bool mp_graph_find_op(const mp_graph *g, const char *name, int32_t *index);
size_t mp_graph_dim_count(const mp_graph *g);
const char *mp_graph_dim_name(const mp_graph *g, size_t i);
int64_t mp_graph_dim_value(const mp_graph *g, size_t i);
const mp_alloc *mp_graph_alloc(const mp_graph *g);

/* ---- shape inference support (analyzer/shape.c, importers) -------------- */

/* Sets tensor t's dtype and shape, as found by origin. A dim is a number
 * (>= 0) or a symbol; copies shape. */
mp_status mp_graph_set_shape(mp_graph *g, int32_t t, mp_dtype dtype,
                             uint32_t rank, const mp_dim *shape,
                             mp_shape_origin origin, mp_error *err);

/* Records a declared type for t (ONNX value_info, graph output types)
 * that inference must agree with. Copies shape. */
mp_status mp_graph_declare(mp_graph *g, int32_t t, mp_dtype dtype,
                           uint32_t rank, const mp_dim *shape, mp_error *err);

/* Stores small constant contents for t (n <= MP_VALUE_MAX elements; one of
 * i and f). Copies the values. */
mp_status mp_graph_set_value(mp_graph *g, int32_t t, const int64_t *i,
                             const double *f, size_t n, mp_error *err);

/* Sets dim sym's value (from inference or --shape, not a user --dim). */
void mp_graph_set_dim_value(mp_graph *g, int32_t sym, int64_t value);

/* The value of a dim: its number, or its symbol's bound value (-1). */
int64_t mp_graph_dim_of(const mp_graph *g, const mp_dim *d);

/* The default-domain opset the model was written for (0: unknown). */
void mp_graph_set_opset(mp_graph *g, int64_t opset);
int64_t mp_graph_opset(const mp_graph *g);

/* Op's attribute of that name, or NULL. */
const mp_attr *mp_op_attr(const mp_op *op, const char *name);

/* One entry of an op's mplan.prologue (docs/ir-conventions.md): the
 * absorbed op's type and the head input it widens. */
typedef struct mp_prologue {
  char kind[24];
  uint32_t input;
} mp_prologue;

/* The entries of op's mplan.prologue, "<kind>:<i>" separated by commas, at
 * most two and on distinct inputs: their count (0: none), or -1 when the
 * attribute is not such a list. *n_dq: how many are DequantizeLinear
 * (each brings its scale and zero point), when not NULL. */
int mp_op_prologues(const mp_op *op, mp_prologue out[2], uint32_t *n_dq);

/* The inputs a fusion head owns before its epilogue's (docs/
 * ir-conventions.md), absent ones counted: MatMul 2 (A, B);
 * com.microsoft::MatMulNBits 6 (A, B, scales, zero points, g_idx, bias);
 * Conv, ConvTranspose and Gemm 3; the elementwise heads of absorb.c rule
 * 9: Add, Sub, Mul, Div and a Concat of two 2, Clip 3 (x, min, max), a
 * Resize 4 (x, roi, scales, sizes), a unary op or a pool 1. */
uint32_t mp_op_head_arity(const mp_op *op);

/* Resize's keep_aspect_ratio_policy (opset 18) not_larger (largest
 * false) or not_smaller: the one scale of the axes at[0..n), the least
 * (or greatest) of sizes[k] / dims[at[k]] over the axes whose dim is not
 * 0 (1 when none is). Shape inference and the compiler share it. */
double mp_resize_aspect_scale(const int64_t *dims, const uint32_t *at,
                              const int64_t *sizes, size_t n, bool largest);

/* Before opset 7, ONNX had no numpy broadcasting: a binary op with
 * broadcast=1 and an axis aligned input 1 with input 0's dims from that
 * axis on (Add(x[N,C,H,W], b[C]), axis=1, adds per channel), and PRelu's
 * slope of C > 1 values applied per channel (axis 1) of an x of rank >= 3.
 * The number of unit dims to append to input 1's dims (a of rank ra, b
 * of rank rb) so that numpy broadcasting reads it that way; 0 when op
 * follows numpy's rules (opset 0, unknown, follows the newest). */
uint32_t mp_op_legacy_pad(const mp_op *op, int64_t opset, uint32_t ra,
                          const int64_t *a, uint32_t rb, const int64_t *b);
/* The same for an op of g, from its inputs' resolved dims. */
uint32_t mp_graph_legacy_pad(const mp_graph *g, const mp_op *op);

/* Warnings collected while importing and inferring (the library never
 * prints; the command line shows them). Copies the formatted text; fails
 * only when memory runs out. */
mp_status mp_graph_warn(mp_graph *g, mp_error *err, const char *fmt, ...)
    MP_PRINTF(3, 4);
size_t mp_graph_warning_count(const mp_graph *g);
const char *mp_graph_warning(const mp_graph *g, size_t i);

/* Renders a tensor's shape as "[N=1,32,112,112]" into buf (cap bytes). */
char *mp_graph_shape_str(const mp_graph *g, const mp_tensor *t, char *buf,
                         size_t cap);

/* The ops a Loop or Scan runs again on every iteration: those that depend
 * on its enter op (mplan.enter_input, docs/ir-conventions.md) and that it
 * depends on. A body op that reads nothing the enter op writes computes
 * the same value every time and keeps it (the plan holds every body
 * tensor until the node); an op of nested bodies belongs to the
 * innermost, the one entered last. loop_of[op] gets 1 + the step
 * (step_of[node]) of that node, or 0. */
mp_status mp_graph_loop_of(const mp_graph *g, const uint32_t *step_of,
                           const mp_alloc *a, uint32_t *loop_of, mp_error *err);

#endif /* MPLAN_GRAPH_H */
