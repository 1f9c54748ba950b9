/*
 * cmd_explain.c -- mplan explain MODEL|PLAN.json [planning flags]
 *
 * Prints the peak explanation and the ASCII memory map of the plan made
 * for MODEL (or stored in PLAN.json, re-validated first).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mplan/passes.h"
#include "mplan/units.h"

static const char explain_usage[] =
    "usage: mplan explain MODEL|PLAN.json [planning flags of mplan plan]\n"
    "                     [--top N] [--no-map] [--map-width N] [--map-rows N]\n"
    "                     [--no-what-if] [--json]\n"
    "Explains where the peak is, which tensors make it and why each is\n"
    "alive, what alignment wastes and how far the arena is from the lower\n"
    "bound; then, for a MODEL, what the memory order, every pass and the\n"
    "tile pass's patches would make of the lower bound, and when the\n"
    "activation arena is above the bound what auto and the exact search\n"
    "would place (each order search given a fifth of the default work,\n"
    "each placement search 2 s; --no-what-if skips it);\n"
    "then draws the memory map.\n"
    "--json prints the plan/1 JSON (with the same figures as \"what_if\").\n";

int cli_explain(int argc, char **argv) {
  cli_opts o;
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_buf out;
  int rc = 0;
  if (cli_wants_help(argc, argv)) return cli_print(explain_usage) ? 0 : 2;
  mp_buf_init(&out, NULL);
  mp_status st =
      cli_parse(argc, argv, 2, "explain",
                CLI_F_PLANNING | CLI_F_REPORT | CLI_F_JSON, &o, &err);
  cli_what_if wi = {0};
  if (st == MP_OK) st = cli_load_and_plan(&o, true, &m, &plan, &err);
  if (st == MP_OK && !o.no_what_if)
    st = cli_what_if_run(&o, m, plan, &wi, &err);
  if (st == MP_OK && o.json) {
    mp_report_meta meta = {.what_if = wi.rows, .n_what_if = wi.n};
    st = mp_report_plan_json_meta(m, plan, &meta, &out, &err);
  } else if (st == MP_OK) {
    st = mp_report_explain(m, plan, &o.report, &out, &err);
    if (st == MP_OK && wi.n) {
      mp_buf_puts(&out, "\n");
      st = mp_report_what_if_text(plan, wi.rows, wi.n, &out, &err);
    }
    if (st == MP_OK && !o.no_map) {
      mp_buf_puts(&out, "\n");
      st = mp_report_memmap(m, plan, &o.report, &out, &err);
    }
  }
  if (st == MP_OK) {
    if (!cli_print(mp_buf_str(&out))) rc = 2;
  } else {
    rc = cli_fail(st, &err);
  }
  cli_what_if_release(&wi);
  mp_buf_free(&out);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return rc;
}
