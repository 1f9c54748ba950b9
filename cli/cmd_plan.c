/*
 * cmd_plan.c -- mplan plan MODEL [-o PLAN.json] [planning flags] [--json]
 *
 * Invariants:
 *   1. The output file is written only after the plan is solved and
 *      validated, and atomically (nothing partial on any failure).
 */
#include <stdio.h>

#include "cli.h"
#include "mplan/file.h"

static const char plan_usage[] =
    "usage: mplan plan MODEL [-o PLAN.json] [--json]\n"
    "                  [--strategy NAME] [--budget-work N] [--budget-ms N]\n"
    "                  [--backend FILE|cpu|gpu|npu|rv64-vlen128|256|512]\n"
    "                  [--order auto|file|topo|dfs|rpo|memory]\n"
    "                  [--order-work N] [--order-budget-ms N]\n"
    "                  [--order-states N]\n"
    "                  [--passes LIST|all|none]\n"
    "                  [--dim NAME=VALUE]...\n"
    "                  [--inputs resident|activation]\n"
    "                  [--shape INPUT=1x3x48x320]... [--dim NAME<=MAX]...\n"
    "                  [--value INPUT=V]...\n"
    "                  [--html F] [--sqlite DB] [--dot F] [--svg F]\n"
    "                  [--lifetimes F.yaml|F.json] [--c-header F.h]\n"
    "                  [--c-header-weights] [--what-if]\n"
    "Plans MODEL (ONNX, graph JSON, pipeline, lifetime table or minimalloc\n"
    "CSV), proves the plan safe and prints its summary; -o writes the plan/1\n"
    "JSON, --json prints it on stdout instead of the summary. --shape binds\n"
    "a graph input's whole shape, --dim NAME<=MAX plans at the cap and\n"
    "reports the waste at 1/4, 1/2 and the cap, --value binds a scalar\n"
    "input's value (shape math, If). The report flags write the files of\n"
    "mplan report (see mplan report --help). --what-if also plans MODEL\n"
    "under the settings not asked for (the memory order, --passes all,\n"
    "both, all,tile, and that in the memory order; each memory search at\n"
    "most a fifth of the default work) and prints their lower bounds;\n"
    "-o, --json, --html and --sqlite keep them too (\"what_if\").\n"
    "--strategy: auto (default: the best of the heuristics; with\n"
    "--budget-work N or --budget-ms N also an exact search that can prove\n"
    "the arena optimal; work, search nodes weighted by their buffers,\n"
    "gives the same plan on every machine, a time budget does not),\n"
    "exact, best-fit-size, best-fit-duration, best-fit-conflict,\n"
    "greedy-breadth, canonical, online-best-fit, seed-first-fit, linear\n"
    "(no reuse). --backend: alignments, memory regions with capacities\n"
    "(fastest first; activations spill to the next) and SRAM banks.\n"
    "--passes runs graph passes (comma-separated, always in this order):\n"
    "fold, eliminate, tile, accumulate, attention, fuse, hfuse, absorb,\n"
    "views, concat, inplace; all is every pass but tile, which runs a CNN's\n"
    "first stage patch by patch, recomputing halos (all,tile adds it;\n"
    "docs/tile.md); the summary then shows every pass's ops, buffers,\n"
    "lower bound and arena before and after. --order memory picks the\n"
    "lowest-peak order of file, dfs, rpo, two greedy orders, a beam and\n"
    "an exact search over sets of scheduled ops, proved optimal by a\n"
    "step bound or by the search (docs/schedule.md), and prints what it\n"
    "compared. --order-work N bounds the searches' work (transitions\n"
    "weighted by state size; 200000000 by default, about 10 s), so the\n"
    "order is the same on every machine; --order-budget-ms N adds a\n"
    "wall-clock cap (none by default; reaching it makes the order depend\n"
    "on the machine, and the summary says so). --order-states N keeps N\n"
    "states a level, 524288 by default: more proves larger graphs\n"
    "optimal, at 50-100 bytes of memory each.\n";

int cli_plan(int argc, char **argv) {
  cli_opts o;
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_buf json, text;
  int rc = 0;
  if (cli_wants_help(argc, argv)) return cli_print(plan_usage) ? 0 : 2;
  mp_status st = cli_parse(
      argc, argv, 2, "plan",
      CLI_F_OUTPUT | CLI_F_PLANNING | CLI_F_JSON | CLI_F_FILES, &o, &err);
  if (st == MP_OK) st = cli_load_and_plan(&o, false, &m, &plan, &err);
  mp_buf_init(&json, NULL);
  mp_buf_init(&text, NULL);
  cli_what_if wi = {0};
  if (st == MP_OK && o.what_if) {
    st = cli_what_if_run(&o, m, plan, &wi, &err);
    o.what_if_rows = wi.rows;
    o.n_what_if = wi.n;
  }
  if (st == MP_OK && (o.output || o.json)) {
    mp_report_meta meta = {.what_if = wi.rows, .n_what_if = wi.n};
    st = mp_report_plan_json_meta(m, plan, &meta, &json, &err);
  }
  if (st == MP_OK && !o.json) st = mp_report_summary(m, plan, &text, &err);
  if (st == MP_OK && o.what_if && !o.json) {
    mp_buf_puts(&text, "\n");
    st = mp_report_what_if_text(plan, wi.rows, wi.n, &text, &err);
  }
  if (st == MP_OK && (o.output || cli_wants_files(&o))) {
    st = cli_write_files(&o, m, plan, &json, o.json ? NULL : &text, &err);
  }
  if (st == MP_OK) {
    if (!cli_print(mp_buf_str(o.json ? &json : &text))) rc = 2;
  } else {
    rc = cli_fail(st, &err);
  }
  cli_what_if_release(&wi);
  mp_buf_free(&text);
  mp_buf_free(&json);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return rc;
}
