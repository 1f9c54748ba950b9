/*
 * mplan/backend.h -- what the target hardware demands of a plan.
 *
 * Read from {"mplan": "backend/1", ...} (DESIGN.md): a default alignment,
 * per-class alignments, memory regions (fastest first, each with a
 * capacity and the classes it may hold), interleaved banks, and the vector
 * length. Presets (cpu, gpu, npu, rv64-vlen128/256/512) are the files of
 * backends/ in the repository, built into the binary.
 */
#ifndef MPLAN_BACKEND_H
#define MPLAN_BACKEND_H

#include "mplan/graph.h"
#include "mplan/plan.h"

#define MP_BACKEND_MAX_REGIONS 16

typedef struct mp_backend_region {
  char name[32];
  size_t capacity;  /* bytes; 0: unbounded */
  unsigned classes; /* bit (1u << mp_class) per class it may hold */
} mp_backend_region;

typedef struct mp_backend {
  char name[64];
  size_t alignment; /* default for every tensor; power of two */
  size_t kind_alignment[MP_TENSOR_KIND_COUNT]; /* 0: use alignment */
  uint32_t vlen;    /* vector length in bits, 0 when not a vector target */
  size_t n_regions; /* 0: one unbounded arena */
  mp_backend_region regions[MP_BACKEND_MAX_REGIONS];
  mp_bank_desc banks;
} mp_backend;

/* The backend used when none is given: "default", 16-byte alignment. */
void mp_backend_default(mp_backend *b);

/* Alignment of tensors of kind k. */
size_t mp_backend_align(const mp_backend *b, mp_tensor_kind k);

/* Reads a backend/1 JSON file. Errors name the file and the field. */
mp_status mp_backend_load(const char *path, mp_backend *out, mp_error *err);

/* Reads a preset by name ("npu"); MP_ERR_BAD_INPUT listing the presets
 * when there is none by that name. */
mp_status mp_backend_preset(const char *name, mp_backend *out, mp_error *err);

/* A preset when spec names one and is not a path to a file, else the
 * file. */
mp_status mp_backend_resolve(const char *spec, mp_backend *out, mp_error *err);

/* The preset names, NULL after the last. */
const char *mp_backend_preset_name(size_t i);

/* Fills regions[] (room for MP_BACKEND_MAX_REGIONS) for mp_plan_opts;
 * returns how many (0: the default single arena). Borrows b. */
size_t mp_backend_regions(const mp_backend *b, mp_region_desc *regions);

#endif /* MPLAN_BACKEND_H */
