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
    "tile pass's patches would make of the lower bound (each search given\n"
    "at most 2 s; --no-what-if skips it); then draws the memory map.\n"
    "--json prints the plan/1 JSON.\n";

/* The activation lower bound of a loaded model. */
static mp_status explain_lb(const mp_model *m, size_t *lb, mp_error *err) {
  mp_profile prof = {0};
  mp_status st = mp_problem_profile(mp_model_problem(m), &prof, err);
  if (st == MP_OK) *lb = prof.peak;
  mp_profile_release(&prof);
  return st;
}

/* What the tile pass did ("patches 8; 4 x 2 of 13 ops up to 'T' (28 x
 * 28), Conv MACs +6.0%"), "no patches kept", or "" when it did not run. */
static void explain_tile_note(const mp_model *m, char *buf, size_t cap) {
  const mp_pass_report *r = mp_model_pass_report(m);
  buf[0] = '\0';
  for (size_t k = 0; r && k < mp_pass_report_rows(r); k++) {
    const mp_pass_row *row = mp_pass_report_row(r, k);
    if (row->pass != MP_PASS_TILE) continue;
    if (strncmp(row->detail, "patches ", 8) != 0) {
      snprintf(buf, cap, "no patches kept");
      return;
    }
    const char *end = strstr(row->detail, "; bound");
    const char *macs = strstr(row->detail, "Conv MACs ");
    int n = end ? (int)(end - row->detail) : (int)strlen(row->detail);
    int nm = macs ? 10 + (int)strcspn(macs + 10, " ") : 0;
    snprintf(buf, cap, "%.*s%s%.*s", n, row->detail, macs ? ", " : "", nm,
             macs ? macs : "");
  }
}

/* DESIGN: explain says what a different order or tiling saves. Each
 * setting not asked for is loaded like the model, its memory order
 * searched for at most 2 s. */
static mp_status explain_what_if(const cli_opts *o, const mp_model *m,
                                 mp_buf *out, mp_error *err) {
  static const struct {
    const char *label;
    uint32_t passes; /* 0: as asked */
    bool memory;
  } alt[] = {
      {"--order memory", 0, true},
      {"--passes all", MP_PASSES_ALL, false},
      {"--passes all --order memory", MP_PASSES_ALL, true},
      {"--passes all,tile", MP_PASSES_ALL | 1u << MP_PASS_TILE, false},
      {"--passes all,tile --order memory", MP_PASSES_ALL | 1u << MP_PASS_TILE,
       true},
  };
  size_t now = 0;
  mp_status st = explain_lb(m, &now, err);
  if (st != MP_OK) return st;
  char a[MP_FMT_MAX], b[MP_FMT_MAX], note[256];
  mp_buf_printf(out,
                "\nWhat else lowers the bound (this model's activation lower "
                "bound, %s B now, under other settings):\n",
                mp_fmt_count(a, now));
  bool memory = o->order == MP_ORDER_MEMORY;
  for (size_t k = 0; st == MP_OK && k < sizeof alt / sizeof *alt; k++) {
    cli_opts o2 = *o;
    if (alt[k].passes) o2.passes = alt[k].passes;
    if (alt[k].memory) o2.order = MP_ORDER_MEMORY;
    if (o2.passes == o->passes && (o2.order == MP_ORDER_MEMORY) == memory) {
      continue; /* what was asked for */
    }
    if (o2.order == MP_ORDER_MEMORY &&
        (o2.order_budget_ms <= 0 || o2.order_budget_ms > 2000)) {
      o2.order_budget_ms = 2000;
    }
    mp_model *m2 = NULL;
    size_t lb = 0;
    st = cli_load(&o2, false, &m2, err);
    if (st == MP_OK) st = explain_lb(m2, &lb, err);
    if (st == MP_OK) {
      char delta[32];
      if (lb == now) {
        snprintf(delta, sizeof delta, "(=)");
      } else {
        snprintf(delta, sizeof delta, "(%+.1f%%)",
                 100.0 * ((double)lb - (double)now) / (double)now);
      }
      explain_tile_note(m2, note, sizeof note);
      mp_buf_printf(out, "  %-34s %14s B  %s%s%s\n", alt[k].label,
                    mp_fmt_count(b, lb), delta, note[0] ? "  " : "", note);
    }
    mp_model_destroy(m2);
  }
  return st;
}

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
  if (st == MP_OK) st = cli_load_and_plan(&o, true, &m, &plan, &err);
  if (st == MP_OK && o.json) {
    st = mp_report_plan_json(m, plan, &out, &err);
  } else if (st == MP_OK) {
    st = mp_report_explain(m, plan, &o.report, &out, &err);
    if (st == MP_OK && !o.no_what_if &&
        mp_model_format_of(m) != MP_FORMAT_PLAN && mp_model_graph(m)) {
      st = explain_what_if(&o, m, &out, &err);
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
  mp_buf_free(&out);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return rc;
}
