/*
 * cmd_compile.c -- mplan compile MODEL -o BUNDLE.mpk [planning flags]
 *                  [--seed N] [--plan PLAN.json]
 *
 * Invariants:
 *   1. The bundle is written only when it was built completely (one
 *      atomic write), and with --plan only when the plan's file could be
 *      written too (the plan's file is removed again otherwise).
 *   2. The bundle is checked by the runtime's own loader before it is
 *      written: mplan never writes a bundle its runtime would refuse.
 *   3. --plan writes the plan/1 JSON of the very plan the bundle holds
 *      (a second mplan plan could differ under a wall-clock budget), built
 *      before either file is written.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mplan/bundle.h"
#include "mplan/compile.h"
#include "mplan/file.h"
#include "mplan/units.h"

static const char compile_usage[] =
    "usage: mplan compile MODEL -o BUNDLE.mpk [--seed N] [--plan PLAN.json]\n"
    "                     [planning flags of mplan plan]\n"
    "Plans the model and writes its program bundle: regions, buffers with\n"
    "their planned offsets and lifetimes, tensors, ops with kernel ids and\n"
    "parameters, and weights (the model's, or deterministic pseudo-random\n"
    "ones from --seed when it carries none), with a CRC-32. The runtime's\n"
    "loader checks the bundle before it is written. --plan also writes the\n"
    "plan/1 JSON of the plan the bundle holds (what mplan plan -o writes).\n";

int cli_compile(int argc, char **argv) {
  cli_opts o;
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_bundle *b = NULL;
  mp_buf out, json;
  int rc = 0;
  if (cli_wants_help(argc, argv)) return cli_print(compile_usage) ? 0 : 2;
  mp_buf_init(&out, NULL);
  mp_buf_init(&json, NULL);
  mp_status st = cli_parse(
      argc, argv, 2, "compile",
      CLI_F_OUTPUT | CLI_F_PLANNING | CLI_F_VERIFY | CLI_F_PLAN_OUT, &o, &err);
  if (st == MP_OK &&
      (o.poison || o.paranoid || o.inject || o.target || o.vlen || o.redzone ||
       o.fail_fast || o.max_bytes || o.max_ops)) {
    st = mp_error_set(&err, MP_ERR_BAD_INPUT,
                      "mplan compile: --poison, --paranoid, --redzone, "
                      "--inject, --target, --vlen, --fail-fast, --max-bytes "
                      "and --max-ops belong to mplan verify");
  }
  if (st == MP_OK && !o.output) {
    st = mp_error_set(&err, MP_ERR_BAD_INPUT,
                      "mplan compile: give the bundle's path with -o");
  }
  if (st == MP_OK) st = cli_load_and_plan(&o, false, &m, &plan, &err);
  mp_compile_opts co = {.seed = o.seed};
  if (st == MP_OK) {
    st = mp_compile_model(m, mp_model_problem(m), mp_plan_placements(plan), &co,
                          NULL, &out, &err);
  }
  /* loaded back as the runtime would: an op it cannot run is named with
   * the model, not with the file not yet written */
  char label[1100];
  snprintf(label, sizeof label, "%.1000s (compiled bundle)",
           m ? mp_model_path(m) : "");
  if (st == MP_OK)
    st = mp_bundle_load(label, out.data, out.len, NULL, &b, &err);
  if (st == MP_OK && o.plan_out) st = mp_report_plan_json(m, plan, &json, &err);
  /* The plan first: when the bundle cannot be written, it goes again, so
   * a failure leaves neither file (invariant 1). */
  if (st == MP_OK && o.plan_out)
    st = mp_file_write(o.plan_out, json.data, json.len, &err);
  if (st == MP_OK) {
    st = mp_file_write(o.output, out.data, out.len, &err);
    if (st != MP_OK && o.plan_out) remove(o.plan_out);
  }
  if (st == MP_OK) {
    char human[MP_FMT_MAX];
    mp_buf log;
    mp_buf_init(&log, NULL);
    mp_buf_printf(&log, "%s: %zu ops, %zu tensors, %zu regions, arena %zu B\n",
                  mp_model_path(m), mp_bundle_op_count(b),
                  mp_bundle_tensor_count(b), mp_bundle_region_count(b),
                  mp_plan_summary_of(plan)->arena_bytes);
    if (mp_bundle_workspace(b)) {
      /* The reference runtime's scratch, allocated next to the arena:
       * the heaviest op's (docs/ir-conventions.md says which fused ops
       * need one). */
      mp_buf_printf(&log, "workspace %s for the reference kernels (op '%s')\n",
                    mp_fmt_bytes(human, mp_bundle_workspace(b)),
                    mp_bundle_op(b, mp_bundle_workspace_op(b))->name);
    }
    mp_buf_printf(&log, "wrote %s (%s)\n", o.output,
                  mp_fmt_bytes(human, out.len));
    if (o.plan_out) mp_buf_printf(&log, "wrote %s\n", o.plan_out);
    if (!cli_print(mp_buf_str(&log))) rc = 2;
    mp_buf_free(&log);
  } else {
    rc = cli_fail(st, &err);
  }
  mp_bundle_destroy(b);
  mp_buf_free(&out);
  mp_buf_free(&json);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return rc;
}
