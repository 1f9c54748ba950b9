/*
 * mplan/runner.h -- the runner protocol: one bundle, its inputs, a run,
 * its outputs and events, all in simple documented formats, so that the
 * host `mplan verify` and a runner on another target (riscv64 under QEMU)
 * exchange exactly the same bytes (runtime/README.md).
 *
 * tensors/1 (binary, little-endian): magic "MPTENSOR", u32 version (1),
 *   u32 count, then per tensor: u32 name length, the name (no NUL), u8
 *   dtype (mp_kdtype), u8 rank, u16 0, u32 0, i64 dims[rank], u64 data
 *   bytes, the data, zero padding to a multiple of 8.
 * events/1 (text, one line each, tab-separated): a first line
 *   "mplan-events/1", then per event
 *   "event KIND STEP OP TENSOR REGION FIRST LAST DETAIL" (OP and TENSOR
 *   are names or "-"; FIRST..LAST the inclusive byte range in the plan
 *   region REGION), then "target ARCH KERNELS VLEN" (ARCH "host" or
 *   "rv64", KERNELS "scalar" or "rvv", VLEN the vector length in bits, 0
 *   without vector kernels), then on a target with vector kernels one
 *   line "scalar OP TYPE KERNEL DTYPE" per op that fell back to a scalar
 *   kernel (OP its name, TYPE its ONNX op type, KERNEL the bundle kernel,
 *   DTYPE its output's), and a last line "end EVENTS DROPPED CHECKS OPS".
 *   The target and scalar lines came with the rv64 runner; a reader
 *   accepts files without them.
 */
#ifndef MPLAN_RUNNER_H
#define MPLAN_RUNNER_H

#include "mplan/buf.h"
#include "mplan/runtime.h"

/* ---- tensors/1 --------------------------------------------------------- */

typedef struct mp_tensor_rec {
  const char *name; /* borrowed from the parsed bytes' copy */
  int dtype;
  mp_kshape shape;
  const void *data;
  size_t bytes;
} mp_tensor_rec;

/* Appends one record to out; the header is written by mp_tensors_begin. */
void mp_tensors_begin(mp_buf *out, uint32_t count);
void mp_tensors_add(mp_buf *out, const char *name, int dtype,
                    const mp_kshape *shape, const void *data, size_t bytes);

/* Parses a tensors/1 file. Returns an owned array (release with mp_free
 * of *recs, which also holds the names; each data points into the bytes
 * given, which must outlive the array). */
mp_status mp_tensors_parse(const char *source, const void *data, size_t len,
                           const mp_alloc *a, mp_tensor_rec **recs,
                           size_t *count, mp_error *err);

/* ---- events/1 ----------------------------------------------------------- */

typedef struct mp_event_rec {
  mp_event_kind kind;
  int64_t step;
  char op[256];
  char tensor[256];
  char region[64];
  uint64_t first, last;
  char detail[MP_EVENT_DETAIL];
} mp_event_rec;

/* Parses events/1 text. Returns an owned array (mp_free) and the totals
 * of the end line. */
mp_status mp_events_parse(const char *source, const char *text, size_t len,
                          const mp_alloc *a, mp_event_rec **recs, size_t *count,
                          uint64_t *checks, mp_error *err);

/* Where a run executed: the events' target line and its scalar lines. */
typedef struct mp_scalar_rec {
  char op[256];
  char type[64];
  char kernel[32];
  char dtype[16];
} mp_scalar_rec;

typedef struct mp_run_target {
  char arch[16];         /* "host", "rv64"; "" when the file names none */
  char kernels[16];      /* "scalar", "rvv" */
  unsigned vlen;         /* bits; 0 without vector kernels */
  mp_scalar_rec *scalar; /* owned (mp_free): the ops that fell back */
  size_t n_scalar;
} mp_run_target;

/* Parses the target and scalar lines of events/1 text (the rest is
 * mp_events_parse's). Fills *out (release out->scalar with mp_free). */
mp_status mp_events_parse_target(const char *source, const char *text,
                                 size_t len, const mp_alloc *a,
                                 mp_run_target *out, mp_error *err);

/* ---- seeded inputs ---------------------------------------------------------
 */

/* Fills n elements of dtype d with deterministic pseudo-random values of
 * stream (seed, index): floats uniform in [-1, 1), int8 in [-128, 127],
 * uint8 in [0, 255], wider integers in [0, 16), bool 0/1. */
void mp_seed_fill(int d, void *p, size_t n, uint64_t seed, uint64_t index);

/* ---- the run ------------------------------------------------------------- */

typedef struct mp_runner_opts {
  bool poison, paranoid, fail_fast;
  const char *oob_op;  /* inject: this op writes one element past its output */
  uint64_t seed;       /* for inputs not given */
  mp_buf *inputs_used; /* when not NULL, receives the inputs bound
                          (tensors/1): what another runtime must be fed */
  uint64_t max_ops;    /* mp_rt_opts.max_ops; 0: no limit */
} mp_runner_opts;

typedef struct mp_runner_result {
  size_t events;
  size_t ops;
} mp_runner_result;

/* Loads the bundle, binds the inputs (a tensors/1 file by name, or NULL:
 * seeded), runs, and appends the graph outputs (tensors/1) to outputs and
 * the events (events/1) to events. Borrows everything. Errors: a bad
 * bundle, bad inputs, a kernel's data error, memory. */
mp_status mp_runner_run(const char *source, const void *bundle, size_t len,
                        const void *inputs, size_t in_len,
                        const mp_runner_opts *o, const mp_alloc *a,
                        mp_buf *outputs, mp_buf *events, mp_runner_result *res,
                        mp_error *err);

#endif /* MPLAN_RUNNER_H */
