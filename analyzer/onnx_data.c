/*
 * onnx_data.c -- the bytes of an ONNX model's weights (initializers and
 * Constant nodes, in the graph and in every subgraph) and of serialized
 * TensorProtos (test data), as raw
 * little-endian elements: what the bundle writer copies into a bundle.
 *
 * Invariants:
 *   1. Every returned blob holds exactly dims x dtype-size bytes, from
 *      raw_data, converted from the typed field, or read from an external
 *      file inside the model's folder (mp_onnx_external); anything else
 *      (strings, a count that disagrees with the dims, an external file
 *      too short) is an error naming the tensor.
 *   2. Allocation goes through the caller's mp_alloc (protobuf-c too).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/file.h"
#include "mplan/onnx.h"
#include "onnx.pb-c.h"
#include "onnx_external.h"

typedef struct od_entry {
  char *name;
  mp_dtype dtype;
  void *bytes;
  size_t len;
} od_entry;

struct mp_onnx_data {
  const mp_alloc *a;
  od_entry *e;
  size_t n, cap;
};

typedef struct od_pb {
  const mp_alloc *a;
  bool failed;
} od_pb;

static void *od_pb_alloc(void *ud, size_t size) {
  od_pb *pb = ud;
  void *p = mp_malloc(pb->a, size ? size : 1);
  if (!p) pb->failed = true;
  return p;
}

static void od_pb_free(void *ud, void *p) {
  mp_free(((od_pb *)ud)->a, p);
}

bool mp_onnx_is_external(const Onnx__TensorProto *tp) {
  return tp->n_external_data ||
         (tp->has_data_location &&
          tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL);
}

/* A decimal entry value: false when it is not one. */
static bool od_u64(const char *s, uint64_t *v) {
  if (!s || *s < '0' || *s > '9') return false;
  char *end;
  errno = 0;
  unsigned long long u = strtoull(s, &end, 10);
  if (*end || errno) return false;
  *v = u;
  return true;
}

/* true when location is relative and no component of it is "..". */
static bool od_inside(const char *loc) {
  if (!loc[0] || loc[0] == '/') return false;
  for (const char *p = loc; *p;) {
    size_t n = strcspn(p, "/");
    if (n == 2 && p[0] == '.' && p[1] == '.') return false;
    p += n;
    while (*p == '/') p++;
  }
  return true;
}

mp_status mp_onnx_external(const char *file, const Onnx__TensorProto *tp,
                           const char *name, size_t need, const mp_alloc *a,
                           void **out, mp_error *err) {
  const char *loc = NULL, *off = NULL, *len = NULL;
  for (size_t k = 0; k < tp->n_external_data; k++) {
    const Onnx__StringStringEntryProto *e = tp->external_data[k];
    if (!e || !e->key) continue;
    if (strcmp(e->key, "location") == 0) loc = e->value;
    if (strcmp(e->key, "offset") == 0) off = e->value;
    if (strcmp(e->key, "length") == 0) len = e->value;
  }
  uint64_t o = 0, l = need;
  if (!loc) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: tensor '%s': external data without a location",
                        file, name);
  }
  if (!od_inside(loc)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: tensor '%s': external data location '%s' is not "
                        "a relative path inside the model's folder",
                        file, name, loc);
  }
  if ((off && !od_u64(off, &o)) || (len && !od_u64(len, &l))) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: tensor '%s': external data offset '%s' or length "
                        "'%s' is not a number",
                        file, name, off ? off : "", len ? len : "");
  }
  if (l != need) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: tensor '%s': external data length %llu, where "
                        "its dims and dtype need %zu bytes",
                        file, name, (unsigned long long)l, need);
  }
  char path[4096];
  const char *slash = strrchr(file, '/');
  int dir = slash ? (int)(slash - file) : 1;
  int n = snprintf(path, sizeof path, "%.*s/%s", dir, slash ? file : ".", loc);
  if (n < 0 || (size_t)n >= sizeof path) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: tensor '%s': external data location is too long",
                        file, name);
  }
  mp_error fe;
  if (mp_file_read_range(path, o, need, a, out, &fe) != MP_OK) {
    return mp_error_set(err, fe.status, "%s: tensor '%s': external data %s",
                        file, name, fe.msg);
  }
  return MP_OK;
}

/* Raw bytes of tp (invariant 1). Returns owned bytes. */
static mp_status od_bytes(const char *file, const Onnx__TensorProto *tp,
                          const char *name, const mp_alloc *a, mp_dtype *dt,
                          uint32_t *rank, int64_t *dims, void **out,
                          size_t *len, mp_error *err) {
  if (!mp_onnx_dtype(tp->data_type, dt) || *dt == MP_DTYPE_STRING) {
    return mp_error_set(err, MP_ERR_UNSUPPORTED,
                        "%s: tensor '%s': element type %d has no fixed size",
                        file, name, (int)tp->data_type);
  }
  if (tp->n_dims > MP_MAX_RANK) {
    return mp_error_set(err, MP_ERR_UNSUPPORTED,
                        "%s: tensor '%s': rank above %d", file, name,
                        MP_MAX_RANK);
  }
  size_t n = 1, es = mp_dtype_size(*dt), bytes;
  for (size_t k = 0; k < tp->n_dims; k++) {
    if (tp->dims[k] < 0 || !mp_size_mul(n, (size_t)tp->dims[k], &n)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: tensor '%s': bad dims",
                          file, name);
    }
    dims[k] = tp->dims[k];
  }
  *rank = (uint32_t)tp->n_dims;
  if (!mp_dtype_bytes(*dt, n, &bytes)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: tensor '%s': too large",
                        file, name);
  }
  if (mp_onnx_is_external(tp)) {
    /* the bytes of another file, checked to be there before allocating */
    *len = bytes;
    return mp_onnx_external(file, tp, name, bytes, a, out, err);
  }
  /* The values the file holds, checked before anything is allocated: a
   * small file declaring a huge tensor is refused, not allocated. */
  size_t have;
  bool nib = mp_dtype_bits(*dt) == 4; /* two to a byte, raw or int32_data */
  if (tp->has_raw_data) {
    have = nib ? tp->raw_data.len * 2 : tp->raw_data.len / (es ? es : 1);
  } else {
    switch (*dt) {
      case MP_DTYPE_F32:
      case MP_DTYPE_C64:
        have = tp->n_float_data / (*dt == MP_DTYPE_C64 ? 2 : 1);
        break;
      case MP_DTYPE_F64:
      case MP_DTYPE_C128:
        have = tp->n_double_data / (*dt == MP_DTYPE_C128 ? 2 : 1);
        break;
      case MP_DTYPE_I64:
        have = tp->n_int64_data;
        break;
      case MP_DTYPE_U32:
      case MP_DTYPE_U64:
        have = tp->n_uint64_data;
        break;
      default: /* int32_data carries the narrow types, f16 and bf16 */
        have = tp->n_int32_data;
        break;
    }
    if (nib) have *= 2;
    if (n == 0) have = 0;
  }
  if ((tp->has_raw_data && tp->raw_data.len != bytes) ||
      (!tp->has_raw_data && have != (nib ? bytes * 2 : n))) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: tensor '%s' holds %zu values where its dims need "
                        "%zu",
                        file, name, have, n);
  }
  unsigned char *p = mp_malloc(a, bytes + 1);
  if (!p) return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", file);
  if (tp->has_raw_data) {
    if (bytes) memcpy(p, tp->raw_data.data, bytes);
  } else if (nib) {
    for (size_t k = 0; k < bytes; k++) p[k] = (unsigned char)tp->int32_data[k];
  } else {
    for (size_t k = 0; k < n; k++) {
      unsigned char *q = p + k * es;
      switch (*dt) {
        case MP_DTYPE_F32:
        case MP_DTYPE_C64:
          memcpy(q, tp->float_data + k * (es / 4), es);
          break;
        case MP_DTYPE_F64:
        case MP_DTYPE_C128:
          memcpy(q, tp->double_data + k * (es / 8), es);
          break;
        case MP_DTYPE_I64:
          memcpy(q, &tp->int64_data[k], 8);
          break;
        case MP_DTYPE_U32:
        case MP_DTYPE_U64:
          memcpy(q, &tp->uint64_data[k], es);
          break;
        default: /* int32_data carries the narrow types, f16 and bf16 */
          memcpy(q, &tp->int32_data[k], es);
          break;
      }
    }
  }
  *out = p;
  *len = bytes;
  return MP_OK;
}

static mp_status od_add(mp_onnx_data *d, const char *file,
                        const Onnx__TensorProto *tp, const char *name,
                        mp_error *err) {
  if (d->n == d->cap) {
    void *p = d->e;
    size_t cap = d->cap;
    mp_status st = mp_grow(d->a, &p, &cap, d->n + 1, sizeof *d->e, file, err);
    if (st != MP_OK) return st;
    d->e = p;
    d->cap = cap;
  }
  od_entry *e = &d->e[d->n];
  uint32_t rank;
  int64_t dims[MP_MAX_RANK];
  e->name = mp_strdup(d->a, name);
  if (!e->name)
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", file);
  mp_status st = od_bytes(file, tp, name, d->a, &e->dtype, &rank, dims,
                          &e->bytes, &e->len, err);
  if (st != MP_OK) {
    mp_free(d->a, e->name);
    return st;
  }
  d->n++;
  return MP_OK;
}

static mp_status od_constant(mp_onnx_data *d, const char *file,
                             const Onnx__NodeProto *n, mp_error *err) {
  if (n->n_output != 1 || n->n_attribute != 1) return MP_OK;
  const Onnx__AttributeProto *at = n->attribute[0];
  const char *an = at->name ? at->name : "";
  if (strcmp(an, "value") == 0 && at->t)
    return od_add(d, file, at->t, n->output[0], err);
  Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
  int64_t dim;
  if (strcmp(an, "value_float") == 0 || strcmp(an, "value_floats") == 0) {
    bool one = an[11] == '\0';
    tp.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tp.n_float_data = one ? 1 : at->n_floats;
    tp.float_data = one ? (float *)(uintptr_t)&at->f : at->floats;
    dim = (int64_t)tp.n_float_data;
    tp.n_dims = one ? 0 : 1;
  } else if (strcmp(an, "value_int") == 0 || strcmp(an, "value_ints") == 0) {
    bool one = an[9] == '\0';
    tp.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    tp.n_int64_data = one ? 1 : at->n_ints;
    tp.int64_data = one ? (int64_t *)(uintptr_t)&at->i : at->ints;
    dim = (int64_t)tp.n_int64_data;
    tp.n_dims = one ? 0 : 1;
  } else {
    return MP_OK; /* the importer already refused it */
  }
  tp.dims = &dim;
  return od_add(d, file, &tp, n->output[0], err);
}

/* The initializers and Constant nodes of graph g and of every subgraph
 * in it (If, Loop and Scan bodies, which the importer flattens into the
 * graph with their weights under their own names). */
static mp_status od_graph(mp_onnx_data *d, const char *file,
                          const Onnx__GraphProto *g, int depth, mp_error *err) {
  if (depth > 64) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: subgraphs nested more than 64 deep", file);
  }
  mp_status st = MP_OK;
  for (size_t k = 0; st == MP_OK && k < g->n_initializer; k++) {
    const Onnx__TensorProto *tp = g->initializer[k];
    st = od_add(d, file, tp, tp->name ? tp->name : "", err);
  }
  for (size_t k = 0; st == MP_OK && k < g->n_node; k++) {
    const Onnx__NodeProto *n = g->node[k];
    if (n->op_type && strcmp(n->op_type, "Constant") == 0) {
      st = od_constant(d, file, n, err);
    }
    for (size_t a = 0; st == MP_OK && a < n->n_attribute; a++) {
      const Onnx__AttributeProto *at = n->attribute[a];
      if (at->g) st = od_graph(d, file, at->g, depth + 1, err);
      for (size_t j = 0; st == MP_OK && j < at->n_graphs; j++) {
        st = od_graph(d, file, at->graphs[j], depth + 1, err);
      }
    }
  }
  return st;
}

mp_status mp_onnx_data_load(const char *file, const void *data, size_t len,
                            const mp_alloc *a, mp_onnx_data **out,
                            mp_error *err) {
  od_pb pb = {a, false};
  ProtobufCAllocator pa = {od_pb_alloc, od_pb_free, &pb};
  Onnx__ModelProto *m = onnx__model_proto__unpack(&pa, len, data);
  if (!m || !m->graph) {
    if (m) onnx__model_proto__free_unpacked(m, &pa);
    return mp_error_set(err, pb.failed ? MP_ERR_NOMEM : MP_ERR_BAD_INPUT,
                        "%s: the ONNX model does not parse", file);
  }
  mp_onnx_data *d = mp_calloc(a, 1, sizeof *d);
  mp_status st =
      d ? MP_OK : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", file);
  if (d) d->a = a;
  if (st == MP_OK) st = od_graph(d, file, m->graph, 0, err);
  onnx__model_proto__free_unpacked(m, &pa);
  if (st != MP_OK) {
    mp_onnx_data_destroy(d);
    return st;
  }
  *out = d;
  return MP_OK;
}

void mp_onnx_data_destroy(mp_onnx_data *d) {
  if (!d) return;
  for (size_t i = 0; i < d->n; i++) {
    mp_free(d->a, d->e[i].name);
    mp_free(d->a, d->e[i].bytes);
  }
  mp_free(d->a, d->e);
  mp_free(d->a, d);
}

bool mp_onnx_data_find(const mp_onnx_data *d, const char *name,
                       const void **bytes, size_t *len, mp_dtype *dtype) {
  for (size_t i = 0; d && i < d->n; i++) {
    if (strcmp(d->e[i].name, name) == 0) {
      *bytes = d->e[i].bytes;
      *len = d->e[i].len;
      *dtype = d->e[i].dtype;
      return true;
    }
  }
  return false;
}

mp_status mp_onnx_tensor_decode(const char *file, const void *data, size_t len,
                                const mp_alloc *a, mp_dtype *dtype,
                                uint32_t *rank, int64_t *dims, void **bytes,
                                size_t *n, mp_error *err) {
  od_pb pb = {a, false};
  ProtobufCAllocator pa = {od_pb_alloc, od_pb_free, &pb};
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&pa, len, data);
  if (!tp) {
    return mp_error_set(err, pb.failed ? MP_ERR_NOMEM : MP_ERR_BAD_INPUT,
                        "%s: the TensorProto does not parse", file);
  }
  mp_status st = od_bytes(file, tp, tp->name && tp->name[0] ? tp->name : file,
                          a, dtype, rank, dims, bytes, n, err);
  onnx__tensor_proto__free_unpacked(tp, &pa);
  return st;
}
