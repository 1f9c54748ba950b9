/*
 * dtype.c -- element types and tensor kinds: names and sizes.
 *
 * Invariants:
 *   1. The tables are indexed by the enum values and cover every value
 *      below the _COUNT sentinel.
 *   2. Parsing accepts the canonical short name and the ONNX-style long
 *      name ("f32" and "float32"), nothing else.
 */
#include <string.h>

#include "mplan/graph.h"

typedef struct dtype_info {
  const char *name;
  const char *alias;
  unsigned bits;
} dtype_info;

static const dtype_info dtype_table[MP_DTYPE_COUNT] = {
    [MP_DTYPE_F32] = {"f32", "float32", 32},
    [MP_DTYPE_F16] = {"f16", "float16", 16},
    [MP_DTYPE_BF16] = {"bf16", "bfloat16", 16},
    [MP_DTYPE_I8] = {"i8", "int8", 8},
    [MP_DTYPE_U8] = {"u8", "uint8", 8},
    [MP_DTYPE_I32] = {"i32", "int32", 32},
    [MP_DTYPE_I64] = {"i64", "int64", 64},
    [MP_DTYPE_BOOL] = {"bool", "boolean", 8},
    [MP_DTYPE_F64] = {"f64", "float64", 64},
    [MP_DTYPE_I16] = {"i16", "int16", 16},
    [MP_DTYPE_U16] = {"u16", "uint16", 16},
    [MP_DTYPE_U32] = {"u32", "uint32", 32},
    [MP_DTYPE_U64] = {"u64", "uint64", 64},
    [MP_DTYPE_C64] = {"c64", "complex64", 64},
    [MP_DTYPE_C128] = {"c128", "complex128", 128},
    /* Strings have no element size: planning refuses them by name. */
    [MP_DTYPE_STRING] = {"string", "str", 0},
    [MP_DTYPE_I4] = {"i4", "int4", 4},
    [MP_DTYPE_U4] = {"u4", "uint4", 4},
};

size_t mp_dtype_size(mp_dtype t) {
  return mp_dtype_bits(t) % 8 ? 0 : mp_dtype_bits(t) / 8;
}

unsigned mp_dtype_bits(mp_dtype t) {
  return (unsigned)t < MP_DTYPE_COUNT ? dtype_table[t].bits : 0;
}

bool mp_dtype_bytes(mp_dtype t, size_t n, size_t *out) {
  unsigned bits = mp_dtype_bits(t);
  if (bits == 0) return false;
  if (bits % 8 == 0) return mp_size_mul(n, bits / 8, out);
  *out = n / (8 / bits) + (n % (8 / bits) != 0); /* bits divides 8 */
  return true;
}

bool mp_dtype_is_float(mp_dtype t) {
  return t == MP_DTYPE_F32 || t == MP_DTYPE_F64 || t == MP_DTYPE_F16 ||
         t == MP_DTYPE_BF16;
}

const char *mp_dtype_name(mp_dtype t) {
  return (unsigned)t < MP_DTYPE_COUNT ? dtype_table[t].name : "?";
}

bool mp_dtype_parse(const char *name, mp_dtype *out) {
  for (int t = 0; t < MP_DTYPE_COUNT; t++) {
    if (strcmp(name, dtype_table[t].name) == 0 ||
        strcmp(name, dtype_table[t].alias) == 0) {
      *out = (mp_dtype)t;
      return true;
    }
  }
  return false;
}

static const char *const kind_names[MP_TENSOR_KIND_COUNT] = {
    [MP_TENSOR_ACTIVATION] = "activation", [MP_TENSOR_INPUT] = "input",
    [MP_TENSOR_WEIGHT] = "weight",         [MP_TENSOR_OUTPUT] = "output",
    [MP_TENSOR_RETAINED] = "retained",
};

const char *mp_tensor_kind_name(mp_tensor_kind k) {
  return (unsigned)k < MP_TENSOR_KIND_COUNT ? kind_names[k] : "?";
}

bool mp_tensor_kind_parse(const char *name, mp_tensor_kind *out) {
  for (int k = 0; k < MP_TENSOR_KIND_COUNT; k++) {
    if (strcmp(name, kind_names[k]) == 0) {
      *out = (mp_tensor_kind)k;
      return true;
    }
  }
  return false;
}
