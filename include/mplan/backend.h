/*
 * mplan/backend.h -- what the target hardware demands of a plan.
 *
 * Read from {"mplan": "backend/1", ...} (DESIGN.md). This version honours
 * name, alignment, class_alignment and vlen; regions and banks are
 * recognised and refused with a clear error until the planner supports
 * them, rather than silently ignored.
 */
#ifndef MPLAN_BACKEND_H
#define MPLAN_BACKEND_H

#include "mplan/graph.h"

typedef struct mp_backend {
  char name[64];
  size_t alignment; /* default for every tensor; power of two */
  size_t kind_alignment[MP_TENSOR_KIND_COUNT]; /* 0: use alignment */
  uint32_t vlen; /* vector length in bits, 0 when not a vector target */
} mp_backend;

/* The backend used when none is given: "default", 16-byte alignment. */
void mp_backend_default(mp_backend *b);

/* Alignment of tensors of kind k. */
size_t mp_backend_align(const mp_backend *b, mp_tensor_kind k);

/* Reads a backend/1 JSON file. Errors name the file and the field. */
mp_status mp_backend_load(const char *path, mp_backend *out, mp_error *err);

#endif /* MPLAN_BACKEND_H */
