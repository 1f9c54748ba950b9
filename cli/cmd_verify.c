/*
 * cmd_verify.c -- mplan verify MODEL [--poison] [--paranoid] [--redzone N]
 *                 [--inject SPEC] [--target host|rv64] [--vlen N]
 *                 [--seed N] [--fail-fast] [planning flags] [--html F]
 *                 [--sqlite DB]
 *
 * Invariants:
 *   1. Exit status: 0 a clean run, 1 any event, 2 an error.
 *   2. Every event is printed as one line; report files get the same
 *      events.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mplan/units.h"
#include "mplan/verify.h"

static const char verify_usage[] =
    "usage: mplan verify MODEL [--poison] [--paranoid] [--redzone N]\n"
    "                    [--inject SPEC] [--target host|rv64] [--vlen N]\n"
    "                    [--seed N] [--fail-fast] [--max-bytes N]\n"
    "                    [--max-ops N]\n"
    "                    [--html F] [--sqlite DB]\n"
    "                    [planning flags of mplan plan]\n"
    "Plans the model, compiles it and runs it with the reference kernels in\n"
    "its planned arena; compares the outputs bit for bit with a no-reuse\n"
    "run on the same seeded inputs.\n"
    "  --target rv64  run on riscv64 with the RVV kernels: the cross-built\n"
    "                 runner under qemu-riscv64 (both runs on the target)\n"
    "  --vlen N       the vector length in bits for rv64: 128, 256 (the\n"
    "                 default) or 512\n"
    "  --poison       poison free bytes, checksum every tensor when it is\n"
    "                 produced and before every read\n"
    "  --paranoid     also re-check every live tensor and every free byte\n"
    "                 after every op: names the exact op that wrote\n"
    "  --redzone N    plan N bytes of red zone around every buffer\n"
    "  --inject SPEC  overlap:A,B | early-free:T | oob:OP (a fault to find;\n"
    "                 implies --poison)\n"
    "  --fail-fast    stop at the first event\n"
    "  --max-bytes N  run models whose no-reuse tensors take up to N bytes\n"
    "                 (such as 4GiB; default 1 GiB; never above a quarter\n"
    "                 of memory)\n"
    "  --max-ops N    stop a run that executes more than N ops, each loop\n"
    "                 iteration and its body ops counted again (a Loop\n"
    "                 whose condition stays true on the seeded inputs);\n"
    "                 default: no limit but 16,777,216 iterations a Loop\n"
    "Exit 0: no event; 1: a violation (each printed as an event line).\n";

static void verify_event(mp_buf *out, const mp_event_rec *e) {
  mp_buf_printf(out,
                "event %s step %" PRId64 " op %s tensor %s %s bytes %" PRIu64
                "..%" PRIu64 ": %s\n",
                mp_event_kind_name(e->kind), e->step, e->op[0] ? e->op : "-",
                e->tensor[0] ? e->tensor : "-", e->region[0] ? e->region : "-",
                e->first, e->last, e->detail);
}

/* Where the run executed, and the ops that fell back to scalar kernels
 * on a target with vector kernels. */
static void verify_target(mp_buf *out, const mp_run_target *t, size_t ops) {
  if (strcmp(t->kernels, "rvv") == 0) {
    mp_buf_printf(out,
                  "target      %s under qemu-riscv64, VLEN %u: RVV kernels, "
                  "%zu op%s on scalar kernels (no RVV kernel)\n",
                  t->arch, t->vlen, t->n_scalar, t->n_scalar == 1 ? "" : "s");
  } else {
    mp_buf_printf(out, "target      %s: scalar reference kernels\n",
                  t->arch[0] ? t->arch : "host");
  }
  (void)ops;
  for (size_t i = 0; i < t->n_scalar; i++) {
    const mp_scalar_rec *r = &t->scalar[i];
    mp_buf_printf(out, "scalar op   %s (%s): kernel %s, %s\n", r->op, r->type,
                  r->kernel, r->dtype[0] ? r->dtype : "-");
  }
}

/* The run's events into the SQLite history and the HTML report. */
static mp_status verify_files(cli_opts *o, const mp_model *m,
                              const mp_verify_result *res, mp_buf *log,
                              mp_error *err) {
  mp_report_event *ev = mp_calloc(NULL, res->n_events + 1, sizeof *ev);
  if (!ev) return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < res->n_events; i++) {
    const mp_event_rec *e = &res->events[i];
    ev[i] = (mp_report_event){mp_event_kind_name(e->kind),
                              e->step,
                              e->op[0] ? e->op : NULL,
                              e->tensor[0] ? e->tensor : NULL,
                              e->first,
                              e->last,
                              e->detail};
  }
  const mp_run_target *t = &res->target;
  mp_report_scalar_op *so = mp_calloc(NULL, t->n_scalar + 1, sizeof *so);
  if (!so) {
    mp_free(NULL, ev);
    return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < t->n_scalar; i++) {
    const mp_scalar_rec *r = &t->scalar[i];
    so[i] = (mp_report_scalar_op){r->op, r->type, r->kernel, r->dtype};
  }
  o->verified = true;
  o->events = ev;
  o->n_events = res->n_events;
  o->target_arch = t->arch[0] ? t->arch : "host";
  o->target_kernels = t->kernels[0] ? t->kernels : "scalar";
  o->target_vlen = t->vlen;
  o->scalar_ops = so;
  o->n_scalar_ops = t->n_scalar;
  mp_status st = cli_write_files(o, m, res->plan, NULL, log, err);
  mp_free(NULL, ev);
  mp_free(NULL, so);
  return st;
}

int cli_verify(int argc, char **argv) {
  cli_opts o;
  mp_error err = {0};
  mp_model *m = NULL;
  mp_verify_result res;
  mp_buf log;
  int rc = 0;
  memset(&res, 0, sizeof res);
  if (cli_wants_help(argc, argv)) return cli_print(verify_usage) ? 0 : 2;
  mp_buf_init(&log, NULL);
  mp_status st =
      cli_parse(argc, argv, 2, "verify",
                CLI_F_PLANNING | CLI_F_VERIFY | CLI_F_FILES, &o, &err);
  mp_verify_opts vo;
  memset(&vo, 0, sizeof vo);
  if (st == MP_OK && o.inject) st = mp_inject_parse(o.inject, &vo.inject, &err);
  /* a plain run poisons nothing: an early free would go unseen */
  if (o.inject && !o.paranoid && !o.redzone) o.poison = true;
  bool rv64 = o.target && strcmp(o.target, "rv64") == 0;
  mp_qemu_target qt;
  if (st == MP_OK && o.vlen && !rv64) {
    st = mp_error_set(&err, MP_ERR_BAD_INPUT,
                      "mplan verify: --vlen applies to --target rv64");
  }
  if (st == MP_OK && rv64) {
    st = mp_qemu_target_init(&qt, o.vlen ? (unsigned)o.vlen : 256, &err);
    if (st != MP_OK) mp_error_prefix(&err, "mplan verify");
    vo.target = mp_target_qemu;
    vo.target_ud = &qt;
  }
  if (st == MP_OK && (o.dot || o.svg || o.lifetimes || o.c_header)) {
    st = mp_error_set(&err, MP_ERR_BAD_INPUT,
                      "mplan verify: only --html and --sqlite record a "
                      "verification (use mplan report for the others)");
  }
  if (st == MP_OK) st = cli_load(&o, false, &m, &err);
  if (st == MP_OK) {
    cli_warnings(m);
    vo.poison = o.poison;
    vo.paranoid = o.paranoid;
    vo.fail_fast = o.fail_fast;
    vo.redzone = o.redzone;
    vo.max_bytes = o.max_bytes;
    vo.max_ops = o.max_ops;
    vo.seed = o.seed;
    vo.strategy = o.strategy;
    vo.budget_ms = o.budget_ms;
    vo.budget_work = o.budget_work;
    st = mp_verify_run(m, &vo, NULL, &res, &err);
  }
  if (st == MP_OK) {
    const mp_plan_summary *s = mp_plan_summary_of(res.plan);
    char human[MP_FMT_MAX];
    mp_buf_printf(&log, "%s: %zu ops on %s; arena %s (%s); %s%s",
                  mp_model_path(m), res.ops, rv64 ? "rv64" : "host",
                  mp_fmt_bytes(human, s->arena_bytes), s->strategy,
                  o.paranoid              ? "paranoid"
                  : o.poison || o.redzone ? "poison"
                                          : "plain run",
                  o.inject ? ", injected " : "");
    if (o.inject) mp_buf_puts(&log, o.inject);
    if (o.redzone) mp_buf_printf(&log, ", red zones %zu B", o.redzone);
    mp_buf_printf(&log,
                  "\nchecks      %" PRIu64
                  "\noutputs     %zu of %zu "
                  "identical to the no-reuse run (bit for bit)\n",
                  res.checks, res.outputs_equal, res.outputs);
    verify_target(&log, &res.target, res.ops);
    for (size_t i = 0; i < res.n_events; i++)
      verify_event(&log, &res.events[i]);
    if (cli_wants_files(&o)) {
      st = verify_files(&o, m, &res, &log, &err);
    }
  }
  if (st == MP_OK) {
    if (res.n_events) {
      mp_buf_printf(&log, "verification FAILED: %zu event%s\n", res.n_events,
                    res.n_events == 1 ? "" : "s");
      rc = 1;
    } else {
      mp_buf_puts(&log, "verified: no event\n");
    }
    if (!cli_print(mp_buf_str(&log))) rc = 2;
  } else {
    rc = cli_fail(st, &err);
  }
  mp_buf_free(&log);
  mp_verify_result_release(&res, NULL);
  mp_model_destroy(m);
  return rc;
}
