/*
 * import_onnx.c -- reader of ONNX models (ModelProto) into the graph IR.
 *
 * The protobuf is decoded by protobuf-c code generated at build time from
 * the system's onnx.proto; protobuf-c allocates through the caller's
 * mp_alloc so that fault injection covers the decoder too.
 *
 * Tensors are declared in this order, so that every name is known before a
 * node refers to it (ONNX files need not be topologically sorted):
 *   initializers (weights), graph inputs that are not initializers,
 *   Constant node outputs (weights), every other node output (pending),
 *   then value_info and graph outputs as declarations.
 *
 * Invariants:
 *   1. A weight's shape comes from its TensorProto dims, and its data, when
 *      present, holds exactly dims x dtype elements (raw_data bytes or
 *      typed fields, or an external file inside the model's folder, read
 *      only for small values: mp_onnx_external checks it holds them).
 *   2. Constant nodes are not ops: their outputs are weights.
 *   3. Negative dims, dim products that overflow, unknown element types and
 *      non-tensor graph inputs are input errors naming the tensor.
 *   4. Every node input is a graph input, an initializer, a Constant or
 *      some node's output; otherwise the error names node and input.
 *   5. Op names are unique in the graph: an empty or repeated ONNX node
 *      name gets a synthesized one (type and index).
 *   6. The returned graph is linked; dims are not bound, nothing inferred.
 *   7. A graph output that is an initializer or a Constant's output keeps
 *      its name as an activation, written by an Identity op from the
 *      weight, which gets a name the graph does not use.
 *   8. Attributes that older opsets named or typed otherwise are written
 *      as the current ones (ox_legacy_attrs), so no later stage looks at
 *      the opset for them. Broadcasting before opset 7 (broadcast, axis)
 *      stays as written: mp_op_legacy_pad reads it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mplan/kernels.h"
#include "mplan/onnx.h"
#include "onnx.pb-c.h"
#include "onnx_external.h"

typedef struct ox {
  const char *file;
  const mp_alloc *a;
  mp_error *err;
  mp_graph *g;
  const mp_onnx_branch *taken; /* Ifs whose condition is known */
  size_t n_taken;
  /* In a Loop or Scan body: the first tensor its enter op writes, else
   * -1 (ox_node: an input-free random op reads it) */
  int32_t iter;
} ox;

/* ---- protobuf-c allocation through mp_alloc ------------------------------ */

typedef struct ox_pb {
  const mp_alloc *a;
  bool failed; /* an allocation failed: a NULL unpack is then no parse error */
} ox_pb;

static void *ox_pb_alloc(void *ud, size_t size) {
  ox_pb *pb = ud;
  void *p = mp_malloc(pb->a, size ? size : 1);
  if (!p) pb->failed = true;
  return p;
}

static void ox_pb_free(void *ud, void *p) {
  mp_free(((ox_pb *)ud)->a, p);
}

bool mp_onnx_sniff(const void *data, size_t len) {
  const unsigned char *p = data;
  /* ModelProto starts with field 1 (ir_version, varint): tag 0x08 and a
   * small version number. */
  return len >= 4 && p[0] == 0x08 && p[1] >= 1 && p[1] < 0x80;
}

/* ---- element types and values -------------------------------------------- */

bool mp_onnx_dtype(int32_t t, mp_dtype *out) {
  static const int8_t map[] = {
      [1] = MP_DTYPE_F32,   [2] = MP_DTYPE_U8,     [3] = MP_DTYPE_I8,
      [4] = MP_DTYPE_U16,   [5] = MP_DTYPE_I16,    [6] = MP_DTYPE_I32,
      [7] = MP_DTYPE_I64,   [8] = MP_DTYPE_STRING, [9] = MP_DTYPE_BOOL,
      [10] = MP_DTYPE_F16,  [11] = MP_DTYPE_F64,   [12] = MP_DTYPE_U32,
      [13] = MP_DTYPE_U64,  [14] = MP_DTYPE_C64,   [15] = MP_DTYPE_C128,
      [16] = MP_DTYPE_BF16, [21] = MP_DTYPE_U4,    [22] = MP_DTYPE_I4,
  };
  if (t < 1 || (size_t)t >= sizeof map / sizeof *map ||
      (t != 1 && map[t] == 0)) {
    return false; /* 17-20: the FLOAT8 types */
  }
  *out = (mp_dtype)map[t];
  return true;
}

static bool ox_is_float(mp_dtype t) {
  return mp_dtype_is_float(t);
}

static double ox_half(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0    ? ldexp(m, -24)
             : e == 31 ? (m ? NAN : INFINITY)
                       : ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

static double ox_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Element k of little-endian raw data of dtype t, as an integer or a
 * double (the host is little-endian, as ONNX raw_data is). */
/* Element k of 4-bit data packed two to a byte, the first in the low
 * nibble; int4 sign-extended. */
static int64_t ox_nibble(uint8_t byte, mp_dtype t, size_t k) {
  return mp_k_load_i(&byte, t == MP_DTYPE_I4 ? MP_KD_I4 : MP_KD_U4, k % 2);
}

static void ox_raw_elem(const uint8_t *raw, mp_dtype t, size_t k, int64_t *i,
                        double *f) {
  if (mp_dtype_bits(t) == 4) {
    *i = ox_nibble(raw[k / 2], t, k);
    return;
  }
  size_t sz = mp_dtype_size(t);
  const uint8_t *p = raw + k * sz;
  union {
    float f32;
    double f64;
    int8_t i8;
    uint8_t u8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
  } u;
  memcpy(&u, p, sz);
  switch (t) {
    case MP_DTYPE_F32:
      *f = u.f32;
      break;
    case MP_DTYPE_F64:
      *f = u.f64;
      break;
    case MP_DTYPE_F16:
      *f = ox_half(u.u16);
      break;
    case MP_DTYPE_BF16:
      *f = ox_bf16(u.u16);
      break;
    case MP_DTYPE_I8:
      *i = u.i8;
      break;
    case MP_DTYPE_U8:
    case MP_DTYPE_BOOL:
      *i = u.u8;
      break;
    case MP_DTYPE_I16:
      *i = u.i16;
      break;
    case MP_DTYPE_U16:
      *i = u.u16;
      break;
    case MP_DTYPE_I32:
      *i = u.i32;
      break;
    case MP_DTYPE_U32:
      *i = u.u32;
      break;
    case MP_DTYPE_U64:
      *i = (int64_t)u.u64;
      break;
    default:
      *i = u.i64;
      break;
  }
}

/* How many elements the typed field for dtype t holds. */
static size_t ox_typed_count(const Onnx__TensorProto *tp, mp_dtype t) {
  switch (t) {
    case MP_DTYPE_F32:
      return tp->n_float_data;
    case MP_DTYPE_C64:
      return tp->n_float_data / 2;
    case MP_DTYPE_F64:
      return tp->n_double_data;
    case MP_DTYPE_C128:
      return tp->n_double_data / 2;
    case MP_DTYPE_I64:
      return tp->n_int64_data;
    case MP_DTYPE_U32:
    case MP_DTYPE_U64:
      return tp->n_uint64_data;
    case MP_DTYPE_STRING:
      return tp->n_string_data;
    default:
      return tp->n_int32_data;
  }
}

/* How many entries of the typed field n elements of dtype t take: the
 * 4-bit types pack two to each int32_data entry, as raw_data does. */
static size_t ox_typed_need(mp_dtype t, size_t n) {
  return mp_dtype_bits(t) == 4 ? n / 2 + n % 2 : n;
}

static void ox_typed_elem(const Onnx__TensorProto *tp, mp_dtype t, size_t k,
                          int64_t *i, double *f) {
  if (mp_dtype_bits(t) == 4) {
    *i = ox_nibble((uint8_t)tp->int32_data[k / 2], t, k);
    return;
  }
  switch (t) {
    case MP_DTYPE_F32:
      *f = tp->float_data[k];
      break;
    case MP_DTYPE_F64:
      *f = tp->double_data[k];
      break;
    case MP_DTYPE_I64:
      *i = tp->int64_data[k];
      break;
    case MP_DTYPE_U32:
    case MP_DTYPE_U64:
      *i = (int64_t)tp->uint64_data[k];
      break;
    case MP_DTYPE_F16:
      *f = ox_half((uint16_t)tp->int32_data[k]);
      break;
    case MP_DTYPE_BF16:
      *f = ox_bf16((uint16_t)tp->int32_data[k]);
      break;
    default:
      *i = tp->int32_data[k];
      break;
  }
}

/* A TensorProto's dtype, shape and element count (invariants 1, 3). */
static mp_status ox_tensor_type(ox *x, const Onnx__TensorProto *tp,
                                const char *what, const char *name,
                                mp_dtype *dt, uint32_t *rank, mp_dim *shape,
                                size_t *elems) {
  int64_t n = 1;
  if (!mp_onnx_dtype(tp->data_type, dt)) {
    return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                        "%s: %s '%s': unknown element type %" PRId32, x->file,
                        what, name, tp->data_type);
  }
  if (tp->n_dims > MP_MAX_RANK) {
    return mp_error_set(x->err, MP_ERR_UNSUPPORTED,
                        "%s: %s '%s': rank %zu exceeds the maximum of %d",
                        x->file, what, name, tp->n_dims, MP_MAX_RANK);
  }
  for (size_t k = 0; k < tp->n_dims; k++) {
    if (tp->dims[k] < 0) {
      return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                          "%s: %s '%s': dims[%zu] is %" PRId64
                          "; dims must be >= 0",
                          x->file, what, name, k, tp->dims[k]);
    }
    if (!mp_i64_mul(n, tp->dims[k], &n) || (uint64_t)n > SIZE_MAX / 16) {
      return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                          "%s: %s '%s': the product of its dims overflows",
                          x->file, what, name);
    }
    shape[k] = (mp_dim){tp->dims[k], MP_NO_SYM};
  }
  *rank = (uint32_t)tp->n_dims;
  *elems = (size_t)n;
  return MP_OK;
}

/* Checks that tp carries its data in full (invariant 1) and, when it is
 * small, stores its values on tensor t. */
static mp_status ox_tensor_data(ox *x, const Onnx__TensorProto *tp,
                                const char *what, const char *name, int32_t t,
                                mp_dtype dt, size_t elems) {
  bool raw = tp->has_raw_data;
  size_t need = 0;
  const uint8_t *bytes = tp->raw_data.data;
  uint8_t *ext = NULL; /* small external data, read for its values */
  if (mp_onnx_is_external(tp)) {
    (void)mp_dtype_bytes(dt, elems, &need); /* checked above */
    if (elems > MP_VALUE_MAX || dt == MP_DTYPE_C64 || dt == MP_DTYPE_C128) {
      /* checked, not read: no value is kept */
      return mp_onnx_external(x->file, tp, name, need, x->a, NULL, x->err);
    }
    void *got = NULL;
    mp_status st =
        mp_onnx_external(x->file, tp, name, need, x->a, &got, x->err);
    if (st != MP_OK) return st;
    bytes = ext = got;
    raw = true;
  } else if (raw && dt != MP_DTYPE_STRING) {
    (void)mp_dtype_bytes(dt, elems, &need); /* checked above */
    if (tp->raw_data.len != need) {
      return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                          "%s: %s '%s': raw_data has %zu bytes where its dims "
                          "and dtype need %zu",
                          x->file, what, name, tp->raw_data.len, need);
    }
  } else if (ox_typed_count(tp, dt) != ox_typed_need(dt, elems)) {
    return mp_error_set(
        x->err, MP_ERR_BAD_INPUT,
        "%s: %s '%s' has %zu values where its dims need %zu%s", x->file, what,
        name, ox_typed_count(tp, dt), ox_typed_need(dt, elems),
        mp_dtype_bits(dt) == 4 ? " (4-bit, two per value)" : "");
  }
  if (elems > MP_VALUE_MAX || dt == MP_DTYPE_STRING || dt == MP_DTYPE_C64 ||
      dt == MP_DTYPE_C128) {
    return MP_OK;
  }
  bool fl = ox_is_float(dt);
  int64_t *iv = fl ? NULL : mp_calloc(x->a, elems + 1, sizeof *iv);
  double *fv = fl ? mp_calloc(x->a, elems + 1, sizeof *fv) : NULL;
  if (!iv && !fv) {
    mp_free(x->a, ext);
    return mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->file);
  }
  int64_t i0 = 0;
  double f0 = 0;
  for (size_t k = 0; k < elems; k++) {
    if (raw) {
      ox_raw_elem(bytes, dt, k, fl ? &i0 : &iv[k], fl ? &fv[k] : &f0);
    } else {
      ox_typed_elem(tp, dt, k, fl ? &i0 : &iv[k], fl ? &fv[k] : &f0);
    }
  }
  mp_status st = mp_graph_set_value(x->g, t, iv, fv, elems, x->err);
  mp_free(x->a, iv);
  mp_free(x->a, fv);
  mp_free(x->a, ext);
  return st;
}

/* Adds a weight for tensor proto tp under name (invariants 1-3). */
static mp_status ox_weight(ox *x, const Onnx__TensorProto *tp, const char *what,
                           const char *name) {
  mp_tensor_desc d = {.name = name, .kind = MP_TENSOR_WEIGHT};
  size_t elems = 0;
  int32_t t = -1;
  mp_status st =
      ox_tensor_type(x, tp, what, name, &d.dtype, &d.rank, d.shape, &elems);
  if (st == MP_OK && tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__STRING) {
    st = mp_error_set(x->err, MP_ERR_UNSUPPORTED,
                      "%s: %s '%s': string tensors have no fixed size", x->file,
                      what, name);
  }
  if (st == MP_OK) st = mp_graph_add_tensor(x->g, &d, &t, x->err);
  if (st == MP_OK) st = ox_tensor_data(x, tp, what, name, t, d.dtype, elems);
  return st;
}

/* ---- value infos: types of inputs, outputs, intermediates ---------------- */

/* The dtype and shape of a ValueInfoProto. *has_shape is false when the
 * type gives no shape at all (rank unknown). */
static mp_status ox_value_type(ox *x, const Onnx__ValueInfoProto *vi,
                               const char *what, mp_tensor_desc *d,
                               bool *has_shape) {
  const Onnx__TypeProto *tp = vi->type;
  *has_shape = false;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
    return mp_error_set(x->err, MP_ERR_UNSUPPORTED,
                        "%s: %s '%s' is not a tensor (sequences, maps and "
                        "optionals are not supported)",
                        x->file, what, vi->name);
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  if (!tt->has_elem_type || !mp_onnx_dtype(tt->elem_type, &d->dtype)) {
    return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                        "%s: %s '%s': unknown element type %" PRId32, x->file,
                        what, vi->name, tt->elem_type);
  }
  if (!tt->shape) return MP_OK;
  if (tt->shape->n_dim > MP_MAX_RANK) {
    return mp_error_set(x->err, MP_ERR_UNSUPPORTED,
                        "%s: %s '%s': rank %zu exceeds the maximum of %d",
                        x->file, what, vi->name, tt->shape->n_dim, MP_MAX_RANK);
  }
  d->rank = (uint32_t)tt->shape->n_dim;
  for (uint32_t k = 0; k < d->rank; k++) {
    const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[k];
    d->shape[k] = (mp_dim){-1, MP_NO_SYM};
    if (dim->value_case ==
        ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (dim->dim_value < 0) {
        return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                            "%s: %s '%s': shape[%u] is %" PRId64
                            "; dims must be >= 0",
                            x->file, what, vi->name, k, dim->dim_value);
      }
      /* Exporters write 0 for "unknown" as often as for "empty". A graph
       * input's 0 is unknown (bound by --shape); elsewhere it is kept. */
      if (dim->dim_value > 0 || d->kind != MP_TENSOR_INPUT) {
        d->shape[k].value = dim->dim_value;
      }
    } else if (dim->value_case ==
                   ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
               dim->dim_param[0]) {
      mp_status st =
          mp_graph_dim_index(x->g, dim->dim_param, &d->shape[k].sym, x->err);
      if (st != MP_OK) return st;
    }
  }
  *has_shape = true;
  return MP_OK;
}

static bool ox_is_tensor(const Onnx__ValueInfoProto *vi) {
  return vi->type &&
         vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
}

static mp_status ox_input(ox *x, const Onnx__ValueInfoProto *vi) {
  if (mp_graph_find_tensor(x->g, vi->name, NULL)) return MP_OK; /* weight */
  mp_tensor_desc d = {.name = vi->name, .kind = MP_TENSOR_INPUT};
  if (vi->type && !ox_is_tensor(vi)) {
    /* A sequence, map or optional has no shape mplan can size: it imports
     * as pending, and planning names it (model.c) if anything needs it. */
    d.pending = true;
    return mp_graph_add_tensor(x->g, &d, NULL, x->err);
  }
  bool has_shape;
  mp_status st = ox_value_type(x, vi, "graph input", &d, &has_shape);
  if (st != MP_OK) return st;
  if (!has_shape) {
    return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                        "%s: graph input '%s' has no shape (give it with "
                        "--shape %s=DxDx...)",
                        x->file, vi->name, vi->name);
  }
  return mp_graph_add_tensor(x->g, &d, NULL, x->err);
}

static mp_status ox_declare(ox *x, const Onnx__ValueInfoProto *vi,
                            const char *what) {
  int32_t t;
  mp_tensor_desc d = {.name = vi->name};
  bool has_shape;
  if (!mp_graph_find_tensor(x->g, vi->name, &t)) {
    if (strcmp(what, "graph output") == 0) {
      return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                          "%s: graph output '%s' is produced by no node",
                          x->file, vi->name);
    }
    /* value_info about a tensor no node touches says nothing useful. */
    return MP_OK;
  }
  if (mp_graph_tensor(x->g, (size_t)t)->origin != MP_SHAPE_PENDING) {
    return MP_OK;
  }
  if (!ox_is_tensor(vi)) return MP_OK;
  mp_status st = ox_value_type(x, vi, what, &d, &has_shape);
  if (st != MP_OK || !has_shape) return st;
  return mp_graph_declare(x->g, t, d.dtype, d.rank, d.shape, x->err);
}

/* ---- nodes --------------------------------------------------------------- */

/* A node's name is optional in ONNX (absent: NULL in protobuf-c). */
static const char *ox_nm(const Onnx__NodeProto *n) {
  return n->name ? n->name : "";
}

static bool ox_is_constant(const Onnx__NodeProto *n) {
  return strcmp(n->op_type, "Constant") == 0 &&
         (!n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0);
}

/* A Constant node's output becomes a weight named out (invariant 2). */
static mp_status ox_constant(ox *x, const Onnx__NodeProto *n, const char *out) {
  if (n->n_output != 1 || n->n_attribute != 1) {
    return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                        "%s: Constant node '%s' must have one output and one "
                        "attribute",
                        x->file, ox_nm(n));
  }
  const Onnx__AttributeProto *at = n->attribute[0];
  const char *an = at->name ? at->name : "";
  Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
  int64_t dim;
  if (strcmp(an, "value") == 0 && at->t)
    return ox_weight(x, at->t, "Constant", out);
  if (strcmp(an, "value_float") == 0 || strcmp(an, "value_floats") == 0) {
    bool one = an[11] == '\0';
    tp.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tp.n_float_data = one ? 1 : at->n_floats;
    tp.float_data = one ? (float *)(uintptr_t)&at->f : at->floats;
    dim = (int64_t)tp.n_float_data;
  } else if (strcmp(an, "value_int") == 0 || strcmp(an, "value_ints") == 0) {
    bool one = an[9] == '\0';
    tp.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    tp.n_int64_data = one ? 1 : at->n_ints;
    tp.int64_data = one ? (int64_t *)(uintptr_t)&at->i : at->ints;
    dim = (int64_t)tp.n_int64_data;
  } else {
    return mp_error_set(x->err, MP_ERR_UNSUPPORTED,
                        "%s: Constant node '%s': attribute '%s' is not "
                        "supported (value, value_float(s), value_int(s) are)",
                        x->file, ox_nm(n), an);
  }
  bool list = an[strlen(an) - 1] == 's';
  tp.n_dims = list ? 1 : 0;
  tp.dims = &dim;
  return ox_weight(x, &tp, "Constant", out);
}

static mp_status ox_outputs(ox *x, const Onnx__NodeProto *n) {
  for (size_t k = 0; k < n->n_output; k++) {
    if (!n->output[k][0]) continue;
    mp_tensor_desc d = {.name = n->output[k], .pending = true};
    mp_status st = mp_graph_add_tensor(x->g, &d, NULL, x->err);
    if (st != MP_OK) {
      mp_error_prefix(x->err, "node '%s' (%s)", ox_nm(n), n->op_type);
      return st;
    }
  }
  return MP_OK;
}

/* A tensor attribute becomes its values (INTS or FLOATS, when small) and
 * an INT attribute NAME.dtype, so that rules such as ConstantOfShape can
 * read both. Returns how many mp_attr entries were filled (0..2). */
static uint32_t ox_attr_tensor(const Onnx__AttributeProto *at, mp_attr *out,
                               int64_t *ibuf, double *fbuf, char *namebuf,
                               size_t namecap) {
  const Onnx__TensorProto *tp = at->t;
  mp_dtype dt;
  size_t elems = 1;
  if (!tp || !mp_onnx_dtype(tp->data_type, &dt) || dt == MP_DTYPE_STRING)
    return 0;
  for (size_t k = 0; k < tp->n_dims; k++) {
    if (tp->dims[k] < 0 || !mp_size_mul(elems, (size_t)tp->dims[k], &elems)) {
      return 0;
    }
  }
  if (elems > 64 || dt == MP_DTYPE_C64 || dt == MP_DTYPE_C128) return 0;
  bool raw = tp->has_raw_data;
  size_t need = 0;
  if (!mp_dtype_bytes(dt, elems, &need) ||
      (raw ? tp->raw_data.len != need
           : ox_typed_count(tp, dt) != ox_typed_need(dt, elems))) {
    return 0;
  }
  bool fl = ox_is_float(dt);
  int64_t i0 = 0;
  double f0 = 0;
  for (size_t k = 0; k < elems; k++) {
    if (raw) {
      ox_raw_elem(tp->raw_data.data, dt, k, fl ? &i0 : &ibuf[k],
                  fl ? &fbuf[k] : &f0);
    } else {
      ox_typed_elem(tp, dt, k, fl ? &i0 : &ibuf[k], fl ? &fbuf[k] : &f0);
    }
  }
  out[0] = (mp_attr){.name = at->name,
                     .kind = fl ? MP_ATTR_FLOATS : MP_ATTR_INTS,
                     .ints = fl ? NULL : ibuf,
                     .floats = fl ? fbuf : NULL,
                     .n = elems};
  snprintf(namebuf, namecap, "%s.dtype", at->name);
  out[1] = (mp_attr){.name = namebuf, .kind = MP_ATTR_INT, .i = dt};
  return 2;
}

typedef struct ox_attrs {
  mp_attr *at;
  int64_t *ints;
  double *floats;
  char (*names)[80];
  char **strs;
  uint32_t n;
} ox_attrs;

static void ox_attrs_free(ox *x, ox_attrs *s, size_t n_attr) {
  for (size_t k = 0; s->strs && k < n_attr; k++) mp_free(x->a, s->strs[k]);
  mp_free(x->a, s->strs);
  mp_free(x->a, s->names);
  mp_free(x->a, s->floats);
  mp_free(x->a, s->ints);
  mp_free(x->a, s->at);
}

static mp_status ox_attr_one(ox *x, const Onnx__AttributeProto *at, size_t k,
                             ox_attrs *s, size_t *used) {
  mp_attr *o = &s->at[s->n];
  int64_t *iv = s->ints + *used;
  double *fv = s->floats + *used;
  *o = (mp_attr){.name = at->name};
  switch (at->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
      o->kind = MP_ATTR_FLOAT;
      o->f = at->f;
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
      o->kind = MP_ATTR_INT;
      o->i = at->i;
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
      s->strs[k] = mp_calloc(x->a, at->s.len + 1, 1);
      if (!s->strs[k]) {
        return mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->file);
      }
      if (at->s.len) memcpy(s->strs[k], at->s.data, at->s.len);
      o->kind = MP_ATTR_STRING;
      o->s = s->strs[k];
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
      o->kind = MP_ATTR_INTS;
      if (at->n_ints) memcpy(iv, at->ints, at->n_ints * sizeof *iv);
      o->ints = iv;
      o->n = at->n_ints;
      *used += at->n_ints;
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
      o->kind = MP_ATTR_FLOATS;
      for (size_t j = 0; j < at->n_floats; j++) fv[j] = at->floats[j];
      o->floats = fv;
      o->n = at->n_floats;
      *used += at->n_floats;
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
      uint32_t m =
          ox_attr_tensor(at, o, iv, fv, s->names[k], sizeof s->names[k]);
      *used += 64;
      s->n += m;
      return MP_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
      /* A list of strings becomes one string, joined with commas (an
       * RNN's activations: "Sigmoid,Tanh,Tanh"). */
      size_t len = 1;
      for (size_t j = 0; j < at->n_strings; j++) len += at->strings[j].len + 1;
      s->strs[k] = mp_calloc(x->a, len, 1);
      if (!s->strs[k]) {
        return mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->file);
      }
      for (size_t j = 0, at_ = 0; j < at->n_strings; j++) {
        if (j) s->strs[k][at_++] = ',';
        if (at->strings[j].len) {
          memcpy(s->strs[k] + at_, at->strings[j].data, at->strings[j].len);
        }
        at_ += at->strings[j].len;
      }
      o->kind = MP_ATTR_STRING;
      o->s = s->strs[k];
      break;
    }
    default:
      /* Graphs, sparse tensors, type protos: no shape rule reads them;
       * subgraph-carrying ops are refused by the caller. */
      return MP_OK;
  }
  s->n++;
  return MP_OK;
}

/* Attributes as the opsets before ONNX renamed or retyped them, written
 * as the current ones (invariant 8): Concat's axis (1 when absent before
 * opset 4), Pad's paddings (pads from opset 2), Cast's to (a type name
 * before opset 6), Upsample's height_scale and width_scale (scales from
 * opset 7; its "bilinear" became "linear"). The attribute table has room
 * for one more; room, spare doubles of s->floats, takes the scales. */
static void ox_legacy_attrs(ox *x, const Onnx__NodeProto *n, ox_attrs *s,
                            double *room, size_t spare) {
  static const char *const types[] = {
      "UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",  "INT16",
      "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16", "DOUBLE",
      "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  int64_t opset = mp_graph_opset(x->g);
  if (opset <= 0 || opset >= 6) return;
  const char *t = n->op_type;
  bool has_axis = false;
  for (uint32_t k = 0; k < s->n; k++) {
    mp_attr *o = &s->at[k];
    has_axis |= strcmp(o->name, "axis") == 0;
    if (strcmp(t, "Pad") == 0 && opset < 2 &&
        strcmp(o->name, "paddings") == 0) {
      o->name = "pads";
    }
    if (strcmp(t, "Cast") == 0 && strcmp(o->name, "to") == 0 &&
        o->kind == MP_ATTR_STRING) {
      for (size_t j = 1; j < sizeof types / sizeof *types; j++) {
        if (strcmp(o->s, types[j]) == 0) {
          *o = (mp_attr){.name = "to", .kind = MP_ATTR_INT, .i = (int64_t)j};
          break;
        }
      }
    }
  }
  if (strcmp(t, "Concat") == 0 && opset < 4 && !has_axis) {
    s->at[s->n++] = (mp_attr){.name = "axis", .kind = MP_ATTR_INT, .i = 1};
  }
  if (strcmp(t, "Upsample") == 0 && opset < 7 && spare >= 4) {
    /* NCHW: scales 1, 1, height_scale, width_scale; no default */
    room[0] = room[1] = 1;
    room[2] = room[3] = NAN;
    mp_attr *hs = NULL;
    for (uint32_t k = 0; k < s->n; k++) {
      mp_attr *o = &s->at[k];
      bool h = strcmp(o->name, "height_scale") == 0;
      if ((h || strcmp(o->name, "width_scale") == 0) &&
          o->kind == MP_ATTR_FLOAT) {
        room[h ? 2 : 3] = o->f;
        if (h) hs = o;
      }
      if (strcmp(o->name, "mode") == 0 && o->kind == MP_ATTR_STRING &&
          strcmp(o->s, "bilinear") == 0) {
        o->s = "linear";
      }
    }
    if (hs && !isnan(room[3])) {
      *hs = (mp_attr){
          .name = "scales", .kind = MP_ATTR_FLOATS, .floats = room, .n = 4};
    }
  }
}

/* Converts a node's attributes into s (owned arrays; release with
 * ox_attrs_free). */
static mp_status ox_attrs_of(ox *x, const Onnx__NodeProto *n, bool std_domain,
                             ox_attrs *s) {
  size_t total = 0, used = 0, na = n->n_attribute;
  memset(s, 0, sizeof *s);
  for (size_t k = 0; k < na; k++) {
    const Onnx__AttributeProto *at = n->attribute[k];
    total += at->n_ints + at->n_floats + 64;
  }
  s->at = mp_calloc(x->a, 2 * na + 1, sizeof *s->at);
  s->ints = mp_calloc(x->a, total + 1, sizeof *s->ints);
  s->floats = mp_calloc(x->a, total + 1, sizeof *s->floats);
  s->names = mp_calloc(x->a, na + 1, sizeof *s->names);
  s->strs = mp_calloc(x->a, na + 1, sizeof *s->strs);
  if (!s->at || !s->ints || !s->floats || !s->names || !s->strs) {
    return mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->file);
  }
  for (size_t k = 0; k < na; k++) {
    if (!n->attribute[k]->name) continue;
    mp_status st = ox_attr_one(x, n->attribute[k], k, s, &used);
    if (st != MP_OK) return st;
  }
  if (std_domain) ox_legacy_attrs(x, n, s, s->floats + used, total + 1 - used);
  return MP_OK;
}

/* A unique op name for node k of the graph at scope (invariant 5). */
static void ox_op_name(ox *x, const Onnx__NodeProto *n, const char *scope,
                       size_t k, char *buf, size_t cap) {
  bool named = n->name && n->name[0];
  snprintf(buf, cap, "%s%s%s", scope, scope[0] ? "/" : "",
           named ? n->name : n->op_type);
  if (named && !mp_graph_find_op(x->g, buf, NULL)) return;
  size_t len = strlen(buf);
  for (size_t extra = 0;; extra++) {
    snprintf(buf + len, cap - len, "#%zu%s", k, extra ? "+" : "");
    if (!mp_graph_find_op(x->g, buf, NULL) || extra > 8) return;
    k += 100000;
  }
}

static mp_status ox_tensor_ids(ox *x, const Onnx__NodeProto *n, const char *op,
                               int32_t *ins, int32_t *outs, uint32_t *n_out) {
  for (size_t k = 0; k < n->n_input; k++) {
    ins[k] = -1;
    if (!n->input[k][0]) continue;
    if (!mp_graph_find_tensor(x->g, n->input[k], &ins[k])) {
      return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                          "%s: node '%s' (%s): input '%s' is not a graph "
                          "input, an initializer, a Constant or any node's "
                          "output (missing initializer?)",
                          x->file, op, n->op_type, n->input[k]);
    }
  }
  /* Omitted trailing outputs are dropped; an omitted one in the middle
   * keeps its position through a placeholder tensor that the op writes. */
  size_t last = n->n_output;
  while (last > 0 && !n->output[last - 1][0]) last--;
  for (size_t k = 0; k < last; k++) {
    if (n->output[k][0]) {
      (void)mp_graph_find_tensor(x->g, n->output[k], &outs[k]);
      continue;
    }
    char name[600];
    snprintf(name, sizeof name, "%s:unused%zu", op, k);
    mp_tensor_desc d = {.name = name, .pending = true};
    mp_status st = mp_graph_add_tensor(x->g, &d, &outs[k], x->err);
    if (st != MP_OK) return st;
  }
  *n_out = (uint32_t)last;
  return MP_OK;
}

static mp_status ox_body(ox *x, const Onnx__GraphProto *gp, const char *scope);
static mp_status ox_subgraph_op(ox *x, const Onnx__NodeProto *n,
                                const char *name, const char *type,
                                const int32_t *ins, const int32_t *outs,
                                uint32_t n_out, const ox_attrs *s);

static mp_status ox_node(ox *x, const Onnx__NodeProto *n, const char *scope,
                         size_t index) {
  char name[512], type[300];
  ox_attrs s = {0};
  ox_op_name(x, n, scope, index, name, sizeof name);
  bool std_domain =
      !n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0;
  snprintf(type, sizeof type, "%s%s%s", std_domain ? "" : n->domain,
           std_domain ? "" : "::", n->op_type);
  if (n->n_output == 0) {
    return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                        "%s: node '%s' (%s) has no outputs", x->file, name,
                        type);
  }
  int32_t *ins = mp_calloc(x->a, n->n_input + 1, sizeof *ins);
  int32_t *outs = mp_calloc(x->a, n->n_output + 1, sizeof *outs);
  uint32_t n_out = 0;
  mp_status st = MP_OK;
  if (!ins || !outs) {
    st = mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->file);
  }
  if (st == MP_OK) st = ox_tensor_ids(x, n, name, ins, outs, &n_out);
  if (st == MP_OK && n_out == 0) {
    st = mp_error_set(x->err, MP_ERR_BAD_INPUT,
                      "%s: node '%s' (%s): every output name is empty", x->file,
                      name, type);
  }
  if (st == MP_OK) st = ox_attrs_of(x, n, std_domain, &s);
  /* If, Loop and Scan always go through their subgraphs, which name a
   * missing one (an attribute of type GRAPH may hold none). */
  if (st == MP_OK && std_domain &&
      (strcmp(n->op_type, "If") == 0 || strcmp(n->op_type, "Loop") == 0 ||
       strcmp(n->op_type, "Scan") == 0)) {
    st = ox_subgraph_op(x, n, name, type, ins, outs, n_out, &s);
  } else if (st == MP_OK) {
    /* A RandomUniform or RandomNormal of a Loop or Scan body reads
     * nothing, so no dependency would keep it in the body: it reads the
     * enter op's first output (mplan.order_input, never passed to the
     * kernel), so it runs again, and draws anew, every iteration. */
    bool drawn = std_domain && (strcmp(n->op_type, "RandomUniform") == 0 ||
                                strcmp(n->op_type, "RandomNormal") == 0);
    uint32_t n_in = (uint32_t)n->n_input, n_at = s.n;
    mp_attr *at = s.at;
    if (drawn && n_in == 0 && x->iter >= 0) {
      at = mp_calloc(x->a, s.n + 1, sizeof *at);
      if (!at) {
        st = mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->file);
      } else {
        if (s.n) memcpy(at, s.at, s.n * sizeof *at);
        at[n_at++] =
            (mp_attr){.name = "mplan.order_input", .kind = MP_ATTR_INT, .i = 1};
        ins[n_in++] = x->iter;
      }
    }
    mp_op_desc d = {.name = name,
                    .type = type,
                    .n_inputs = n_in,
                    .n_outputs = n_out,
                    .n_attrs = n_at,
                    .inputs = ins,
                    .outputs = outs,
                    .attrs = at};
    if (st == MP_OK) st = mp_graph_add_op(x->g, &d, NULL, x->err);
    if (at != s.at) mp_free(x->a, at);
  }
  ox_attrs_free(x, &s, n->n_attribute);
  mp_free(x->a, outs);
  mp_free(x->a, ins);
  return st;
}

/* ---- subgraphs (seed 001 section 3) --------------------------------------
 * If, Loop and Scan bodies are flattened into the enclosing graph, so that
 * their lifetimes are global to it:
 *   - a body's ops run between the node's inputs and the node itself, which
 *     reads every body output, and every outer tensor the body captures, so
 *     that captured tensors live until the node's step;
 *   - If: the then ops, then the else ops; a branch's tensors die inside
 *     it, so the two branches may share bytes; an If named in the taken
 *     list (its condition is known, model.c) has its taken branch only,
 *     and reads nothing captured (only the branch's ops run, and they
 *     read it themselves);
 *   - Loop and Scan: an enter op (mplan.LoopEnter, mplan.ScanEnter) writes
 *     the body's inputs from the node's; every body tensor is also read by
 *     the node, so it lives until the node's step: tensors of one iteration
 *     never share bytes with each other nor with the scan outputs being
 *     accumulated across iterations. An input-free RandomUniform or
 *     RandomNormal of the body reads the enter op's first output
 *     (mplan.order_input): the only tie that keeps it in the body, so
 *     that it runs, and draws, every iteration.
 * The node's inputs are: its own (mplan.orig_inputs of them), the body
 * outputs (mplan.body_outputs, then before else for If), then the rest. */

static mp_status ox_body(ox *x, const Onnx__GraphProto *gp, const char *scope) {
  mp_status st = MP_OK;
  for (size_t k = 0; st == MP_OK && k < gp->n_initializer; k++) {
    const Onnx__TensorProto *tp = gp->initializer[k];
    st = ox_weight(x, tp, "initializer", tp->name ? tp->name : "");
  }
  for (size_t k = 0; st == MP_OK && k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    st = ox_is_constant(n) ? ox_constant(x, n, n->n_output ? n->output[0] : "")
                           : ox_outputs(x, n);
  }
  for (size_t k = 0; st == MP_OK && k < gp->n_value_info; k++) {
    st = ox_declare(x, gp->value_info[k], "value_info");
  }
  for (size_t k = 0; st == MP_OK && k < gp->n_node; k++) {
    if (!ox_is_constant(gp->node[k])) st = ox_node(x, gp->node[k], scope, k);
  }
  return st;
}

static const Onnx__GraphProto *ox_graph_attr(const Onnx__NodeProto *n,
                                             const char *name) {
  for (size_t k = 0; k < n->n_attribute; k++) {
    if (strcmp(n->attribute[k]->name, name) == 0) return n->attribute[k]->g;
  }
  return NULL;
}

typedef struct ox_list {
  int32_t *v;
  uint32_t n, cap;
} ox_list;

static mp_status ox_push(ox *x, ox_list *l, int32_t t) {
  if (l->n == l->cap) {
    void *p = l->v;
    size_t cap = l->cap;
    mp_status st = mp_grow(x->a, &p, &cap, (size_t)l->n + 1, sizeof *l->v,
                           x->file, x->err);
    if (st != MP_OK) return st;
    l->v = p;
    l->cap = (uint32_t)cap;
  }
  l->v[l->n++] = t;
  return MP_OK;
}

/* The enter op of a Loop or Scan: body inputs written from the node's. */
static mp_status ox_enter(ox *x, const Onnx__NodeProto *n, const char *name,
                          const Onnx__GraphProto *body, const int32_t *ins,
                          const ox_attrs *s) {
  char op[600], type[32];
  int32_t *outs = mp_calloc(x->a, body->n_input + 1, sizeof *outs);
  if (!outs)
    return mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->file);
  mp_status st = MP_OK;
  for (size_t k = 0; st == MP_OK && k < body->n_input; k++) {
    mp_tensor_desc d = {.name = body->input[k]->name, .pending = true};
    st = mp_graph_add_tensor(x->g, &d, &outs[k], x->err);
  }
  snprintf(op, sizeof op, "%s/enter", name);
  snprintf(type, sizeof type, "mplan.%sEnter", n->op_type);
  if (st == MP_OK && body->n_input == 0) {
    st = mp_error_set(x->err, MP_ERR_BAD_INPUT,
                      "%s: node '%s' (%s): the body has no inputs", x->file,
                      name, n->op_type);
  }
  if (st == MP_OK) {
    mp_op_desc d = {
        op,   type, (uint32_t)n->n_input, (uint32_t)body->n_input, s->n, ins,
        outs, s->at};
    st = mp_graph_add_op(x->g, &d, NULL, x->err);
  }
  mp_free(x->a, outs);
  return st;
}

/* Body outputs (then before else) into l. */
static mp_status ox_body_outputs(ox *x, const Onnx__GraphProto *body,
                                 const char *name, ox_list *l) {
  for (size_t k = 0; k < body->n_output; k++) {
    int32_t t;
    if (!mp_graph_find_tensor(x->g, body->output[k]->name, &t)) {
      return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                          "%s: node '%s': body output '%s' is produced by "
                          "nothing",
                          x->file, name, body->output[k]->name);
    }
    mp_status st = ox_push(x, l, t);
    if (st != MP_OK) return st;
  }
  return MP_OK;
}

/* Outer tensors read by the body ops (o0..), and for loops every body
 * activation (t0..), appended to l once each. */
static mp_status ox_captured(ox *x, size_t t0, size_t o0, bool hold_body,
                             ox_list *l) {
  size_t nt = mp_graph_tensor_count(x->g);
  bool *seen = mp_calloc(x->a, nt + 1, sizeof *seen);
  mp_status st = MP_OK;
  if (!seen)
    return mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->file);
  for (uint32_t k = 0; k < l->n; k++) {
    if (l->v[k] >= 0) seen[l->v[k]] = true;
  }
  for (size_t o = o0; st == MP_OK && o < mp_graph_op_count(x->g); o++) {
    const mp_op *op = mp_graph_op(x->g, o);
    for (uint32_t k = 0; st == MP_OK && k < op->n_inputs; k++) {
      int32_t t = op->inputs[k];
      if (t < 0 || (size_t)t >= t0 || seen[t]) continue;
      seen[t] = true;
      st = ox_push(x, l, t);
    }
    for (uint32_t k = 0; hold_body && st == MP_OK && k < op->n_outputs; k++) {
      int32_t t = op->outputs[k];
      if ((size_t)t < t0 || seen[t]) continue;
      seen[t] = true;
      st = ox_push(x, l, t);
    }
  }
  mp_free(x->a, seen);
  return st;
}

/* The branch an If named name takes when its condition is known (1 then,
 * 0 else), or -1. */
static int ox_taken(const ox *x, const char *name) {
  for (size_t k = 0; k < x->n_taken; k++) {
    if (strcmp(x->taken[k].op, name) == 0) return x->taken[k].then ? 1 : 0;
  }
  return -1;
}

static mp_status ox_subgraph_op(ox *x, const Onnx__NodeProto *n,
                                const char *name, const char *type,
                                const int32_t *ins, const int32_t *outs,
                                uint32_t n_out, const ox_attrs *s) {
  bool is_if = strcmp(n->op_type, "If") == 0;
  const Onnx__GraphProto *b1 = ox_graph_attr(n, is_if ? "then_branch" : "body");
  const Onnx__GraphProto *b2 = is_if ? ox_graph_attr(n, "else_branch") : NULL;
  size_t t0 = mp_graph_tensor_count(x->g), o0 = mp_graph_op_count(x->g);
  ox_list l = {0};
  char scope[600];
  mp_status st = MP_OK;
  if (!b1 || (is_if && !b2)) {
    return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                        "%s: node '%s' (%s) lacks its subgraph", x->file, name,
                        type);
  }
  /* A known condition: only the taken branch is read (the other never
   * runs). */
  int taken = is_if ? ox_taken(x, name) : -1;
  const Onnx__GraphProto *first = taken == 0 ? NULL : b1;
  const Onnx__GraphProto *second = taken == 1 ? NULL : b2;
  if (taken >= 0) {
    const Onnx__GraphProto *dead = taken ? b2 : b1;
    st = mp_graph_warn(x->g, x->err,
                       "%s: If '%s': the condition is known (%s), so only "
                       "its %s branch is planned; the %s branch never runs "
                       "(%zu node%s left out)",
                       x->file, name, taken ? "true" : "false",
                       taken ? "then" : "else", taken ? "else" : "then",
                       dead->n_node, dead->n_node == 1 ? "" : "s");
  }
  for (uint32_t k = 0; st == MP_OK && k < n->n_input; k++) {
    st = ox_push(x, &l, ins[k]);
  }
  if (st == MP_OK && !is_if) st = ox_enter(x, n, name, b1, ins, s);
  snprintf(scope, sizeof scope, "%s/%s", name, is_if ? "then" : "body");
  int32_t outer_iter = x->iter;
  if (st == MP_OK && !is_if) {
    x->iter = mp_graph_op(x->g, o0)->outputs[0];
  }
  if (st == MP_OK && first) st = ox_body(x, first, scope);
  snprintf(scope, sizeof scope, "%s/else", name);
  if (st == MP_OK && second) st = ox_body(x, second, scope);
  x->iter = outer_iter;
  if (st == MP_OK && first) st = ox_body_outputs(x, first, name, &l);
  if (st == MP_OK && second) st = ox_body_outputs(x, second, name, &l);
  uint32_t body_outs = l.n - (uint32_t)n->n_input;
  /* A known condition: the taken branch's ops are the only ones that
   * run, and they read what they capture themselves; the If only copies
   * the branch's outputs, so it holds nothing captured alive. */
  if (st == MP_OK && taken < 0) st = ox_captured(x, t0, o0, !is_if, &l);
  /* Loop, Scan: an input the enter op wrote, by which the compiler finds
   * the enter op and the ops the node runs again (compile/lower.c). */
  int64_t enter_input = -1;
  if (st == MP_OK && !is_if && mp_graph_op_count(x->g) > o0) {
    const mp_op *e = mp_graph_op(x->g, o0);
    for (uint32_t k = 0; k < l.n && enter_input < 0; k++) {
      for (uint32_t j = 0; j < e->n_outputs; j++) {
        if (l.v[k] == e->outputs[j]) enter_input = k;
      }
    }
  }
  uint32_t n_at = s->n + 2 + (taken >= 0) + (enter_input >= 0);
  mp_attr *at = st == MP_OK ? mp_calloc(x->a, n_at, sizeof *at) : NULL;
  if (st == MP_OK && !at) {
    st = mp_error_set(x->err, MP_ERR_NOMEM, "%s: out of memory", x->file);
  }
  if (st == MP_OK) {
    if (s->n) memcpy(at, s->at, s->n * sizeof *at);
    at[s->n] = (mp_attr){.name = "mplan.orig_inputs",
                         .kind = MP_ATTR_INT,
                         .i = (int64_t)n->n_input};
    at[s->n + 1] = (mp_attr){
        .name = "mplan.body_outputs", .kind = MP_ATTR_INT, .i = body_outs};
    if (taken >= 0) {
      at[s->n + 2] =
          (mp_attr){.name = "mplan.branch", .kind = MP_ATTR_INT, .i = taken};
    }
    if (enter_input >= 0) {
      at[s->n + 2] = (mp_attr){
          .name = "mplan.enter_input", .kind = MP_ATTR_INT, .i = enter_input};
    }
    mp_op_desc d = {name, type, l.n, n_out, n_at, l.v, outs, at};
    st = mp_graph_add_op(x->g, &d, NULL, x->err);
  }
  mp_free(x->a, at);
  mp_free(x->a, l.v);
  return st;
}

/* ---- model --------------------------------------------------------------- */

static mp_status ox_opset(ox *x, const Onnx__ModelProto *m) {
  int64_t opset = 0;
  for (size_t k = 0; k < m->n_opset_import; k++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[k];
    if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0) {
      opset = o->version;
    }
  }
  mp_graph_set_opset(x->g, opset);
  if (opset > MP_ONNX_OPSET_MAX) {
    return mp_graph_warn(
        x->g, x->err,
        "%s: opset %" PRId64
        " is newer than the newest this mplan knows (%d); trying "
        "with the rules of opset %d",
        x->file, opset, MP_ONNX_OPSET_MAX, MP_ONNX_OPSET_MAX);
  }
  return MP_OK;
}

/* The strings ONNX requires (IR: "MUST be present") are present: value
 * info names, op types, attribute names, in the graph and every subgraph.
 * protobuf-c leaves an absent string NULL; nothing after this checks. */
static mp_status ox_check_strings(ox *x, const Onnx__GraphProto *gp,
                                  int depth) {
  if (depth > 64) {
    return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                        "%s: subgraphs nested more than 64 deep", x->file);
  }
  const struct {
    const char *what;
    size_t n;
    Onnx__ValueInfoProto *const *v;
  } lists[] = {{"input", gp->n_input, gp->input},
               {"output", gp->n_output, gp->output},
               {"value_info", gp->n_value_info, gp->value_info}};
  for (size_t l = 0; l < sizeof lists / sizeof *lists; l++) {
    for (size_t k = 0; k < lists[l].n; k++) {
      if (!lists[l].v[k]->name || !lists[l].v[k]->name[0]) {
        return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                            "%s: graph %s[%zu] has no name", x->file,
                            lists[l].what, k);
      }
    }
  }
  for (size_t k = 0; k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    if (!n->op_type || !n->op_type[0]) {
      return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                          "%s: node[%zu] '%s' has no op_type", x->file, k,
                          ox_nm(n));
    }
    for (size_t a = 0; a < n->n_attribute; a++) {
      const Onnx__AttributeProto *at = n->attribute[a];
      mp_status st = MP_OK;
      if (!at->name || !at->name[0]) {
        return mp_error_set(x->err, MP_ERR_BAD_INPUT,
                            "%s: node '%s' (%s): attribute[%zu] has no name",
                            x->file, ox_nm(n), n->op_type, a);
      }
      if (at->g) st = ox_check_strings(x, at->g, depth + 1);
      for (size_t g = 0; st == MP_OK && g < at->n_graphs; g++) {
        st = ox_check_strings(x, at->graphs[g], depth + 1);
      }
      if (st != MP_OK) return st;
    }
  }
  return MP_OK;
}

/* Whether name is one of the graph's outputs. */
static bool ox_is_output(const Onnx__GraphProto *gp, const char *name) {
  for (size_t k = 0; k < gp->n_output; k++) {
    if (strcmp(gp->output[k]->name, name) == 0) return true;
  }
  return false;
}

/* Whether the graph names a tensor name anywhere (so that a name made up
 * for it cannot collide with one declared later). */
static bool ox_name_used(const ox *x, const Onnx__GraphProto *gp,
                         const char *name) {
  if (mp_graph_find_tensor(x->g, name, NULL)) return true;
  for (size_t k = 0; k < gp->n_input; k++) {
    if (strcmp(gp->input[k]->name, name) == 0) return true;
  }
  for (size_t k = 0; k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    for (size_t j = 0; j < n->n_output; j++) {
      if (strcmp(n->output[j], name) == 0) return true;
    }
  }
  return false;
}

/* A weight that is also a graph output (invariant 7): the weight goes
 * under a made-up name, and an Identity op named op copies it into the
 * output, an activation under the output's name. */
static mp_status ox_weight_output(ox *x, const Onnx__GraphProto *gp,
                                  const Onnx__TensorProto *tp,
                                  const Onnx__NodeProto *constant,
                                  const char *name, const char *op) {
  char wname[600];
  snprintf(wname, sizeof wname, "%s.value", name);
  for (unsigned k = 2; ox_name_used(x, gp, wname); k++) {
    snprintf(wname, sizeof wname, "%s.value%u", name, k);
  }
  int32_t w = -1, y = -1;
  mp_status st = constant ? ox_constant(x, constant, wname)
                          : ox_weight(x, tp, "initializer", wname);
  if (st == MP_OK) (void)mp_graph_find_tensor(x->g, wname, &w);
  mp_tensor_desc d = {.name = name, .pending = true};
  if (st == MP_OK) st = mp_graph_add_tensor(x->g, &d, &y, x->err);
  mp_op_desc od = {.name = op,
                   .type = "Identity",
                   .n_inputs = 1,
                   .n_outputs = 1,
                   .inputs = &w,
                   .outputs = &y};
  if (st == MP_OK) st = mp_graph_add_op(x->g, &od, NULL, x->err);
  return st;
}

static mp_status ox_graph(ox *x, const Onnx__GraphProto *gp) {
  mp_status st = ox_check_strings(x, gp, 0);
  char op[600];
  for (size_t k = 0; st == MP_OK && k < gp->n_initializer; k++) {
    const Onnx__TensorProto *tp = gp->initializer[k];
    const char *name = tp->name ? tp->name : "";
    snprintf(op, sizeof op, "%s.copy", name);
    st = ox_is_output(gp, name) ? ox_weight_output(x, gp, tp, NULL, name, op)
                                : ox_weight(x, tp, "initializer", name);
  }
  for (size_t k = 0; st == MP_OK && k < gp->n_input; k++) {
    st = ox_input(x, gp->input[k]);
  }
  for (size_t k = 0; st == MP_OK && k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    if (!ox_is_constant(n)) {
      st = ox_outputs(x, n);
    } else if (n->n_output == 1 && ox_is_output(gp, n->output[0])) {
      ox_op_name(x, n, "", k, op, sizeof op);
      st = ox_weight_output(x, gp, NULL, n, n->output[0], op);
    } else {
      st = ox_constant(x, n, n->n_output ? n->output[0] : "");
    }
  }
  for (size_t k = 0; st == MP_OK && k < gp->n_value_info; k++) {
    st = ox_declare(x, gp->value_info[k], "value_info");
  }
  for (size_t k = 0; st == MP_OK && k < gp->n_output; k++) {
    int32_t t;
    st = ox_declare(x, gp->output[k], "graph output");
    if (st == MP_OK && mp_graph_find_tensor(x->g, gp->output[k]->name, &t)) {
      st = mp_graph_mark_output(x->g, t, x->err);
    }
  }
  for (size_t k = 0; st == MP_OK && k < gp->n_node; k++) {
    if (!ox_is_constant(gp->node[k])) st = ox_node(x, gp->node[k], "", k);
  }
  if (st == MP_OK && mp_graph_op_count(x->g) == 0) {
    st = mp_error_set(x->err, MP_ERR_BAD_INPUT,
                      "%s: the graph has no ops (besides Constants)", x->file);
  }
  if (st == MP_OK) st = mp_graph_link(x->g, x->err);
  return st;
}

mp_status mp_onnx_import(const char *file, const void *data, size_t len,
                         const mp_alloc *a, mp_graph **out, mp_error *err) {
  return mp_onnx_import_taken(file, data, len, a, NULL, 0, out, err);
}

mp_status mp_onnx_import_taken(const char *file, const void *data, size_t len,
                               const mp_alloc *a, const mp_onnx_branch *taken,
                               size_t n_taken, mp_graph **out, mp_error *err) {
  ox_pb pb = {a, false};
  ProtobufCAllocator pa = {ox_pb_alloc, ox_pb_free, &pb};
  ox x = {file, a, err, NULL, taken, n_taken, -1};
  Onnx__ModelProto *m = onnx__model_proto__unpack(&pa, len, data);
  if (!m) {
    if (pb.failed) {
      return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", file);
    }
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: not a valid ONNX model: the protobuf does not "
                        "parse (truncated or corrupt file)",
                        file);
  }
  mp_status st = MP_OK;
  if (!m->graph) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: not an ONNX model: the ModelProto has no graph",
                      file);
  }
  if (st == MP_OK) {
    st = mp_graph_create(a, file, m->graph->name ? m->graph->name : "", &x.g,
                         err);
  }
  if (st == MP_OK) st = ox_opset(&x, m);
  if (st == MP_OK) st = ox_graph(&x, m->graph);
  onnx__model_proto__free_unpacked(m, &pa);
  if (st != MP_OK) {
    mp_graph_destroy(x.g);
    return st;
  }
  *out = x.g;
  return MP_OK;
}

void mp_onnx_ifs_free(const mp_alloc *a, mp_onnx_ifs *f) {
  for (size_t k = 0; k < f->n; k++) mp_free(a, (void *)(uintptr_t)f->v[k].op);
  mp_free(a, f->v);
  *f = (mp_onnx_ifs){0};
}

mp_status mp_onnx_known_ifs(const mp_graph *g, mp_onnx_ifs *f, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  const char *file = mp_graph_source(g);
  for (size_t o = 0; o < mp_graph_op_count(g); o++) {
    const mp_op *op = mp_graph_op(g, o);
    if (strcmp(op->type, "If") != 0 || op->n_inputs < 1 || op->inputs[0] < 0)
      continue;
    bool pruned = false;
    for (uint32_t k = 0; k < op->n_attrs; k++) {
      pruned = pruned || strcmp(op->attrs[k].name, "mplan.branch") == 0;
    }
    const mp_value *v = mp_graph_tensor(g, (size_t)op->inputs[0])->value;
    if (pruned || !v || v->n != 1) continue;
    /* Listed already: importing it with its branch did not prune it (a
     * branch graph that is missing or not a graph), so listing it again
     * would have the caller import the same graph forever. */
    bool listed = false;
    for (size_t k = 0; k < f->n && !listed; k++) {
      listed = strcmp(f->v[k].op, op->name) == 0;
    }
    if (listed) continue;
    void *p = f->v;
    mp_status st = mp_grow(a, &p, &f->cap, f->n + 1, sizeof *f->v, file, err);
    if (st != MP_OK) return st;
    f->v = p;
    char *name = mp_strdup(a, op->name);
    if (!name)
      return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", file);
    f->v[f->n++] =
        (mp_onnx_branch){name, v->i ? v->i[0] != 0 : v->f && v->f[0] != 0.0};
  }
  return MP_OK;
}

mp_status mp_onnx_bind_input(mp_graph *g, const char *name, const void *data,
                             size_t len, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  ox_pb pb = {a, false};
  ProtobufCAllocator pa = {ox_pb_alloc, ox_pb_free, &pb};
  ox x = {mp_graph_source(g), a, err, g, NULL, 0, -1};
  int32_t t;
  if (!mp_graph_find_tensor(g, name, &t) ||
      mp_graph_tensor(g, (size_t)t)->kind != MP_TENSOR_INPUT) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: no graph input named '%s'",
                        x.file, name);
  }
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&pa, len, data);
  if (!tp) {
    return mp_error_set(err, pb.failed ? MP_ERR_NOMEM : MP_ERR_BAD_INPUT,
                        "%s: input '%s': the TensorProto does not parse",
                        x.file, name);
  }
  mp_dtype dt = MP_DTYPE_F32;
  uint32_t rank = 0;
  mp_dim shape[MP_MAX_RANK];
  size_t elems = 0;
  mp_status st =
      ox_tensor_type(&x, tp, "input", name, &dt, &rank, shape, &elems);
  /* ONNX releases before 1.12 wrote bf16 test data as its bits in u16
   * (numpy has no bf16): an input declared bf16 reads them as bf16. */
  if (st == MP_OK && dt == MP_DTYPE_U16 &&
      mp_graph_tensor(g, (size_t)t)->dtype == MP_DTYPE_BF16) {
    dt = MP_DTYPE_BF16;
  }
  if (st == MP_OK) {
    st = mp_graph_set_shape(g, t, dt, rank, shape, MP_SHAPE_GIVEN, err);
  }
  if (st == MP_OK && dt != MP_DTYPE_STRING) {
    st = ox_tensor_data(&x, tp, "input", name, t, dt, elems);
  }
  onnx__tensor_proto__free_unpacked(tp, &pa);
  return st;
}
