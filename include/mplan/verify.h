/*
 * mplan/verify.h -- `mplan verify`: plan a model, compile it, run it in
 * poison mode on a target, compare its outputs bit for bit with a
 * no-reuse (linear) run, and collect the events.
 *
 * The run goes through the runner protocol (mplan/runner.h): the host
 * target calls mp_runner_run in-process; another target (riscv64 under
 * QEMU, mp_target_qemu) runs the same bundle and inputs bytes elsewhere
 * and returns the same outputs and events bytes.
 *
 * Red zones (--redzone N) are planned: every buffer of the problem is
 * enlarged by N bytes after its data and N rounded up to its alignment
 * before it, so that the planner keeps the zones free of other buffers
 * and the data keeps its alignment; the bundle records the zones.
 *
 * Fault injection (--inject) mutates the plan or the run:
 *   overlap:A,B    B is placed on A's bytes (both must be live together);
 *   early-free:T   T's buffer's lifetime ends one step early (re-planned);
 *   oob:OP         OP's kernel writes one element past its output.
 */
#ifndef MPLAN_VERIFY_H
#define MPLAN_VERIFY_H

#include "mplan/model.h"
#include "mplan/runner.h"

typedef enum mp_inject_kind {
  MP_INJECT_NONE = 0,
  MP_INJECT_OVERLAP,
  MP_INJECT_EARLY_FREE,
  MP_INJECT_OOB
} mp_inject_kind;

typedef struct mp_inject {
  mp_inject_kind kind;
  char a[256], b[256]; /* tensor names (overlap, early-free) or op (oob) */
} mp_inject;

/* Parses SPEC ("overlap:A,B", "early-free:T", "oob:OP"). */
mp_status mp_inject_parse(const char *spec, mp_inject *out, mp_error *err);

/* Runs one bundle on a target: the runner protocol's bytes in and out. */
typedef mp_status (*mp_target_fn)(void *ud, const char *source,
                                  const mp_buf *bundle, const void *inputs,
                                  size_t in_len, const mp_runner_opts *o,
                                  mp_buf *outputs, mp_buf *events,
                                  mp_error *err);

typedef struct mp_verify_opts {
  bool poison, paranoid, fail_fast;
  size_t redzone;
  mp_inject inject;
  uint64_t seed;
  const char *strategy; /* NULL: the default */
  double budget_ms;
  uint64_t budget_work; /* mp_plan_opts.budget_work */
  const void *inputs;   /* tensors/1 bytes, or NULL: seeded */
  size_t in_len;
  bool no_reference;   /* skip the no-reuse run and the comparison */
  mp_target_fn target; /* NULL: the host, in-process */
  void *target_ud;
  size_t max_bytes; /* tensors the no-reuse run may hold; 0:
                       MP_VERIFY_MAX_BYTES (never more than a quarter of
                       the machine's memory) */
  uint64_t max_ops; /* ops each run may execute (mp_rt_opts.max_ops); 0:
                       no limit */
} mp_verify_opts;

/* verify's default cap on the no-reuse run's tensors: 1 GiB. The
 * reference kernels are scalar and both runs touch every byte; a file
 * declaring a 2 GiB tensor took minutes to verify. */
#define MP_VERIFY_MAX_BYTES ((size_t)1 << 30)

typedef struct mp_verify_result {
  mp_event_rec *events; /* owned (mp_free) */
  size_t n_events;
  uint64_t checks;
  size_t ops;
  size_t outputs, outputs_equal;
  size_t bundle_bytes;
  mp_run_target target; /* where the planned run executed, and the ops
                           that fell back to scalar kernels (owned) */
  mp_plan *plan;        /* the plan that ran (owned) */
  mp_problem *problem;  /* the problem it solved when it differs from the
                           model's (red zones, injection; owned) */
} mp_verify_result;

/* Verifies model m (a graph or ONNX model). Borrows m and o. Fills res
 * (release with mp_verify_result_release) on success; events are results,
 * not errors. */
mp_status mp_verify_run(const mp_model *m, const mp_verify_opts *o,
                        const mp_alloc *a, mp_verify_result *res,
                        mp_error *err);
void mp_verify_result_release(mp_verify_result *r, const mp_alloc *a);

/* The host target: mp_runner_run in-process. */
mp_status mp_target_host(void *ud, const char *source, const mp_buf *bundle,
                         const void *inputs, size_t in_len,
                         const mp_runner_opts *o, mp_buf *outputs,
                         mp_buf *events, mp_error *err);

/* The rv64 target: the riscv64 mplan-runner (RVV kernels) under
 * qemu-riscv64 -cpu rv64,v=true,vlen=VLEN (compile/target_qemu.c). */
typedef struct mp_qemu_target {
  char qemu[1024];   /* the emulator */
  char runner[1024]; /* the cross-built runner */
  unsigned vlen;     /* bits */
} mp_qemu_target;

/* Finds qemu-riscv64 (MPLAN_QEMU, else on PATH) and the riscv64 runner
 * (MPLAN_RV64_RUNNER, else the one this build cross-built) and checks
 * vlen (a power of two from 128 to 1024). Errors say how to install or
 * build what is missing (MP_ERR_UNSUPPORTED) or what vlen may be. */
mp_status mp_qemu_target_init(mp_qemu_target *t, unsigned vlen, mp_error *err);

/* The target function for mp_verify_opts.target; ud is an initialised
 * mp_qemu_target. Writes the bundle and inputs into a private temporary
 * folder (TMPDIR, else /tmp), runs the runner under QEMU, reads its
 * outputs and events back and removes the folder. */
mp_status mp_target_qemu(void *ud, const char *source, const mp_buf *bundle,
                         const void *inputs, size_t in_len,
                         const mp_runner_opts *o, mp_buf *outputs,
                         mp_buf *events, mp_error *err);

#endif /* MPLAN_VERIFY_H */
