/*
 * cmd_validate.c -- mplan validate PLAN.json
 *
 * Re-proves a plan file independently of how it was made: every pair of
 * buffers live at the same time has disjoint bytes, every offset is
 * aligned, every buffer lies inside its region. Exit 1 naming both
 * tensors, their intervals and byte ranges when it is not.
 */
#include <stdio.h>

#include "cli.h"
#include "mplan/units.h"

static const char validate_usage[] =
    "usage: mplan validate PLAN.json\n"
    "Proves that no two buffers live at the same step share a byte, that\n"
    "every offset is aligned and that every buffer fits in its region.\n"
    "Exit status 0 when valid, 1 when not, 2 when the file is unreadable.\n";

int cli_validate(int argc, char **argv) {
  cli_opts o;
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  if (cli_wants_help(argc, argv)) return cli_print(validate_usage) ? 0 : 2;
  mp_status st = cli_parse(argc, argv, 2, "validate", 0, &o, &err);
  if (st == MP_OK) st = cli_load(&o, true, &m, &err);
  if (st == MP_OK && mp_model_format_of(m) != MP_FORMAT_PLAN) {
    st = mp_error_set(&err, MP_ERR_BAD_INPUT,
                      "%s: is a model (%s), not a plan (make one with "
                      "mplan plan MODEL -o PLAN.json)",
                      o.model, mp_model_format_name(mp_model_format_of(m)));
  }
  if (st == MP_OK) st = cli_solve(&o, m, &plan, &err);
  int rc = 0;
  if (st == MP_OK) {
    char a[MP_FMT_MAX];
    printf(
        "%s: valid: %zu buffers in an arena of %s; no two live buffers "
        "share a byte, every offset is aligned, every buffer fits\n",
        o.model, mp_problem_count(mp_model_problem(m)),
        mp_fmt_bytes(a, mp_model_arena_bytes(m)));
  } else {
    rc = cli_fail(st, &err);
  }
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return rc;
}
