/*
 * mplan/runtime.h -- executing a loaded bundle in its planned regions,
 * optionally in poison mode (DESIGN.md "Verification runtime").
 *
 * Every region is allocated once, when the runtime is created (persistent
 * and scratch tiers, seed 002 section 2.4), together with everything a
 * run needs: checksums, shadow copies, the kernels' workspace and the
 * event list. mp_rt_run performs no allocation at all.
 *
 * Poison mode (opts.poison):
 *   - every region (and a guard past its end) is filled with the poison
 *     byte before the run; after each op every buffer whose planned
 *     lifetime ended is re-poisoned;
 *   - a checksum of each tensor is recorded when it is produced and
 *     re-checked before every op that reads it;
 *   - red zones (bytes the plan reserved around a buffer) and region
 *     guards are checked after every op;
 *   - opts.paranoid also re-checks every live tensor after every op and
 *     after every release, and checks that no byte outside the live
 *     buffers changed: the event then names the exact op.
 * A violation is an event (kind, step, culprit op, victim tensor, byte
 * range in plan coordinates); the run goes on (or stops, fail_fast).
 */
#ifndef MPLAN_RUNTIME_H
#define MPLAN_RUNTIME_H

#include "mplan/bundle.h"

typedef enum mp_event_kind {
  MP_EV_CLOBBER = 0,     /* a live tensor's bytes changed */
  MP_EV_EARLY_FREE,      /* a live tensor was poisoned: its buffer's planned
                            lifetime ended before the tensor's last use */
  MP_EV_USE_AFTER_FREE,  /* an op read a tensor whose buffer was released */
  MP_EV_REDZONE,         /* a red zone of a live buffer was written */
  MP_EV_FREE_WRITE,      /* a byte of no live buffer was written */
  MP_EV_GUARD,           /* the guard past a region's end was written */
  MP_EV_OUTPUT_MISMATCH, /* an output differs from the no-reuse run */
  MP_EV_COUNT
} mp_event_kind;

const char *mp_event_kind_name(mp_event_kind k);
bool mp_event_kind_parse(const char *name, mp_event_kind *out);

#define MP_EVENT_DETAIL 160

typedef struct mp_rt_event {
  mp_event_kind kind;
  int32_t step;   /* the step after (or before) which it was found */
  int32_t op;     /* culprit op index, or -1 */
  int32_t tensor; /* victim tensor index, or -1 */
  int32_t buffer; /* victim buffer index (red zones, releases), or -1 */
  uint32_t region;
  uint64_t first, last; /* inclusive byte range, plan coordinates */
  char detail[MP_EVENT_DETAIL];
} mp_rt_event;

typedef struct mp_rt_opts {
  bool poison;
  bool paranoid;       /* implies poison */
  bool fail_fast;      /* stop at the first event */
  int32_t oob_op;      /* inject: this op writes one element past output 0
                          (-1: none) */
  uint8_t poison_byte; /* 0: 0xA5 */
  size_t max_events;   /* kept; later ones are counted only. 0: 256 */
  uint64_t max_ops;    /* ops a run may execute, each loop iteration and
                          its body ops counted again; past it the run fails in one
                          line (MP_ERR_BAD_INPUT). 0: no limit but the
                          MP_RT_LOOP_MAX iterations of each Loop */
} mp_rt_opts;

typedef struct mp_rt mp_rt;

/* Allocates every region and all run state for b (borrowed; must outlive
 * the runtime). Returns an owned runtime (release with mp_rt_destroy). */
mp_status mp_rt_create(const mp_bundle *b, const mp_rt_opts *o,
                       const mp_alloc *a, mp_rt **out, mp_error *err);
void mp_rt_destroy(mp_rt *rt);

/* Stages graph input i (copies len bytes, which must be its size). Inputs
 * never set are zero. */
mp_status mp_rt_set_input(mp_rt *rt, size_t i, const void *data, size_t len,
                          mp_error *err);

/* Runs the program once. No allocation. Fails only on a data-dependent
 * kernel error or on running more than opts.max_ops ops
 * (MP_ERR_BAD_INPUT); violations are events, not failures. */
mp_status mp_rt_run(mp_rt *rt, mp_error *err);

/* The last run's events, owned by the runtime (valid until the next run
 * or mp_rt_destroy). */
size_t mp_rt_event_count(const mp_rt *rt);
const mp_rt_event *mp_rt_event_at(const mp_rt *rt, size_t i);
size_t mp_rt_events_dropped(const mp_rt *rt);
/* Checks made in the last run (checksums, red zones, free bytes). */
uint64_t mp_rt_check_count(const mp_rt *rt);

/* Tensor t's bytes after the run (borrowed from the runtime). */
const void *mp_rt_tensor_data(const mp_rt *rt, uint32_t t);

#endif /* MPLAN_RUNTIME_H */
