/*
 * what_if.c -- the lower bound of a model under the settings not asked
 * for (DESIGN: explain says what a different order or tiling saves):
 * the memory order, every pass, both, the tile pass's patches, and those
 * in the memory order. Each setting loads the model again with its own
 * options; the memory order's search gets at most WI_ORDER_WORK each
 * (deterministic). And, when
 * the plan's activation arena is above its lower bound, what the auto
 * strategy and the exact search (WI_EXACT_WORK) place for the same model.
 *
 * Invariants:
 *   1. A setting equal to the one asked for (same passes, memory order or
 *      not), or to an earlier row's, is skipped: its figure is already
 *      there.
 *   2. The rows borrow from the models kept in the cli_what_if, which
 *      must outlive every report made from them.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mplan/passes.h"
#include "mplan/plan.h"

/* the exact placement search's work in a what-if row: 2/3 of exact's
 * default (0.3 to 3.5 s on minimalloc's problems here) */
#define WI_EXACT_WORK (MP_EXACT_WORK / 3 * 2)
/* the memory order's work in a what-if row: a fifth of the default */
#define WI_ORDER_WORK (MP_SCHEDULE_BUDGET_WORK / 5)
#define WI_BOUNDS 5 /* rows of order and passes */

/* "none", "all", "all,tile", or the pass names of mask. */
static void wi_passes(uint32_t mask, char *buf, size_t cap) {
  uint32_t tile = 1u << MP_PASS_TILE;
  if (mask == 0) {
    snprintf(buf, cap, "none");
  } else if (mask == MP_PASSES_ALL) {
    snprintf(buf, cap, "all");
  } else if (mask == (MP_PASSES_ALL | tile)) {
    snprintf(buf, cap, "all,tile");
  } else {
    size_t n = 0;
    buf[0] = '\0';
    for (int p = 0; p < MP_PASS_COUNT; p++) {
      if (!(mask & (1u << p))) continue;
      int w = snprintf(buf + n, cap - n, "%s%s", n ? "," : "",
                       mp_pass_name((mp_pass_id)p));
      if (w < 0 || (size_t)w >= cap - n) break;
      n += (size_t)w;
    }
  }
}

void cli_what_if_release(cli_what_if *w) {
  for (size_t k = 0; k < w->n; k++) mp_model_destroy(w->models[k]);
  memset(w, 0, sizeof *w);
}

/* Placement rows: the same model placed by auto (when another strategy
 * was asked for) and by the exact search with WI_EXACT_WORK, when the
 * plan's activation arena is above its lower bound. */
static mp_status wi_places(const cli_opts *o, const mp_model *m,
                           const mp_plan *plan, cli_what_if *w, mp_error *err) {
  static const char *const names[] = {"auto", "exact"};
  const mp_plan_summary *s = mp_plan_summary_of(plan);
  const char *asked = o->strategy ? o->strategy : MP_STRATEGY_DEFAULT;
  if (s->activation_peak_bytes <= s->lower_bound_bytes) return MP_OK;
  mp_status st = MP_OK;
  for (size_t k = 0; st == MP_OK && k < 2 && w->n < CLI_WHAT_IF_MAX; k++) {
    bool exact = k == 1;
    /* exact without a budget gets MP_EXACT_WORK (strategy_auto.c) */
    if (strcmp(asked, names[k]) == 0 &&
        (!exact || (o->budget_ms <= 0 &&
                    (!o->budget_work || o->budget_work >= WI_EXACT_WORK)))) {
      continue; /* asked for (exact with as much work or more) */
    }
    cli_opts o2 = *o;
    o2.strategy = names[k];
    o2.budget_ms = 0;
    o2.budget_work = exact ? WI_EXACT_WORK : 0;
    mp_plan *p2 = NULL;
    st = cli_solve(&o2, m, &p2, err);
    if (st != MP_OK) break;
    const mp_plan_summary *s2 = mp_plan_summary_of(p2);
    size_t i = w->n++;
    snprintf(w->setting[i], sizeof w->setting[i], "--strategy %s", names[k]);
    if (exact) {
      size_t len = strlen(w->setting[i]);
      snprintf(w->setting[i] + len, sizeof w->setting[i] - len,
               " --budget-work %llu", (unsigned long long)WI_EXACT_WORK);
    }
    if (mp_model_graph(m))
      wi_passes(o->passes, w->passes[i], sizeof w->passes[i]);
    w->rows[i] =
        (mp_report_what_if){.setting = w->setting[i],
                            .passes = w->passes[i],
                            .order = mp_model_order_name(m),
                            .lower_bound_bytes = s2->lower_bound_bytes,
                            .strategy = names[k],
                            .arena_bytes = s2->arena_bytes,
                            .activation_arena_bytes = s2->activation_peak_bytes,
                            .proven_lb_bytes = s2->proven_lb_bytes};
    mp_plan_destroy(p2);
  }
  return st;
}

mp_status cli_what_if_run(const cli_opts *o, const mp_model *m,
                          const mp_plan *plan, cli_what_if *w, mp_error *err) {
  static const struct {
    uint32_t passes; /* 0: as asked */
    bool memory;
  } alt[WI_BOUNDS] = {
      {0, true},
      {MP_PASSES_ALL, false},
      {MP_PASSES_ALL, true},
      {MP_PASSES_ALL | 1u << MP_PASS_TILE, false},
      {MP_PASSES_ALL | 1u << MP_PASS_TILE, true},
  };
  memset(w, 0, sizeof *w);
  if (mp_model_format_of(m) == MP_FORMAT_PLAN) {
    return MP_OK; /* nothing to plan again */
  }
  bool memory = o->order == MP_ORDER_MEMORY;
  mp_status st = MP_OK;
  for (size_t k = 0; st == MP_OK && mp_model_graph(m) && k < WI_BOUNDS; k++) {
    cli_opts o2 = *o;
    if (alt[k].passes) o2.passes = alt[k].passes;
    if (alt[k].memory) o2.order = MP_ORDER_MEMORY;
    bool mem2 = o2.order == MP_ORDER_MEMORY, seen = false;
    for (size_t j = 0; j < k; j++) { /* as asked, or as an earlier row */
      uint32_t pj = alt[j].passes ? alt[j].passes : o->passes;
      seen = seen || (pj == o2.passes && (alt[j].memory || memory) == mem2);
    }
    if (seen || (o2.passes == o->passes && mem2 == memory)) {
      continue; /* invariant 1 */
    }
    if (o2.order == MP_ORDER_MEMORY &&
        (o2.order_work == 0 || o2.order_work > WI_ORDER_WORK)) {
      o2.order_work = WI_ORDER_WORK;
    }
    mp_model *m2 = NULL;
    st = cli_load(&o2, false, &m2, err);
    mp_plan *p2 = NULL;
    if (st == MP_OK) st = cli_solve(&o2, m2, &p2, err);
    size_t lb = p2 ? mp_plan_summary_of(p2)->lower_bound_bytes : 0;
    size_t arena = p2 ? mp_plan_summary_of(p2)->arena_bytes : 0;
    mp_plan_destroy(p2);
    if (st != MP_OK) {
      mp_model_destroy(m2);
      break;
    }
    size_t i = w->n++;
    w->models[i] = m2;
    char names[sizeof w->passes[i]];
    wi_passes(o2.passes, names, sizeof names);
    memcpy(w->passes[i], names, sizeof names);
    if (o2.passes) {
      snprintf(w->setting[i], sizeof w->setting[i], "--passes %s%s", names,
               mem2 ? " --order memory" : "");
    } else {
      snprintf(w->setting[i], sizeof w->setting[i], "%s",
               mem2 ? "--order memory" : "--passes none");
    }
    const mp_pass_report *r = mp_model_pass_report(m2);
    w->rows[i] = (mp_report_what_if){.setting = w->setting[i],
                                     .passes = w->passes[i],
                                     .order = mp_model_order_name(m2),
                                     .lower_bound_bytes = lb,
                                     .arena_bytes = arena,
                                     .tile = r ? mp_pass_report_tile(r) : NULL};
  }
  if (st == MP_OK) st = wi_places(o, m, plan, w, err);
  if (st != MP_OK) cli_what_if_release(w);
  return st;
}
