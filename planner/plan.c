/*
 * plan.c -- strategy dispatch, the summary of a plan and its proof.
 *
 * Invariants:
 *   1. No plan leaves mp_plan_solve without passing mp_validate, with every
 *      region's capacity (or, when unbounded, its used size) as its limit.
 *   2. summary.arena_bytes is the sum over regions of their used bytes,
 *      resident_bytes the sum of their fixed tiers, and
 *      activation_peak_bytes the difference, so solved and adopted plans are
 *      summarised by the same rule.
 *   3. A plan owns copies of everything it reports (names, detail); it
 *      borrows only its problem.
 */
#include "mplan/plan.h"

#include <stdio.h>
#include <string.h>

#include "exact.h"
#include "mplan/validate.h"
#include "plan_impl.h"

static const mp_strategy *const plan_strategies[] = {
    &mp_strategy_auto,
    &mp_strategy_exact,
    &mp_strategy_seed_first_fit,
    &mp_strategy_best_fit_size,
    &mp_strategy_best_fit_duration,
    &mp_strategy_best_fit_conflict,
    &mp_strategy_greedy_breadth,
    &mp_strategy_canonical,
    &mp_strategy_online_best_fit,
    &mp_strategy_linear,
};

#define PLAN_N_STRATEGIES (sizeof plan_strategies / sizeof *plan_strategies)

size_t mp_strategy_count(void) {
  return PLAN_N_STRATEGIES;
}

const char *mp_strategy_name(size_t i) {
  return i < PLAN_N_STRATEGIES ? plan_strategies[i]->name : NULL;
}

const char *mp_strategy_description(size_t i) {
  return i < PLAN_N_STRATEGIES ? plan_strategies[i]->description : NULL;
}

static const mp_strategy *plan_find_strategy(const char *name) {
  for (size_t i = 0; i < PLAN_N_STRATEGIES; i++) {
    if (strcmp(plan_strategies[i]->name, name) == 0) return plan_strategies[i];
  }
  return NULL;
}

void plan_note(mp_plan *plan, const char *text) {
  size_t len = strlen(plan->detail);
  if (strstr(plan->detail, text)) return; /* once per plan, not per region */
  snprintf(plan->detail + len, sizeof plan->detail - len, "%s%s",
           len ? "; " : "", text);
}

static mp_status plan_alloc(const mp_problem *p, const char *strategy,
                            mp_plan **out, mp_error *err) {
  const mp_alloc *a = mp_problem_alloc(p);
  size_t n = mp_problem_count(p);
  mp_plan *plan = mp_calloc(a, 1, sizeof *plan);
  if (!plan) return mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
  plan->alloc = a;
  plan->problem = p;
  plan->pl = mp_calloc(a, n ? n : 1, sizeof *plan->pl);
  plan->strategy = mp_strdup(a, strategy);
  if (!plan->pl || !plan->strategy) {
    mp_plan_destroy(plan);
    return mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
  }
  mp_status st = mp_problem_profile(p, &plan->profile, err);
  if (st != MP_OK) {
    mp_plan_destroy(plan);
    return st;
  }
  *out = plan;
  return MP_OK;
}

void mp_plan_destroy(mp_plan *plan) {
  if (!plan) return;
  for (size_t r = 0; r < plan->n_regions; r++) {
    mp_free(plan->alloc, (void *)(uintptr_t)plan->regions[r].name);
  }
  mp_free(plan->alloc, plan->regions);
  mp_free(plan->alloc, plan->region_classes);
  mp_free(plan->alloc, plan->conflicts);
  mp_profile_release(&plan->profile);
  mp_free(plan->alloc, plan->strategy);
  mp_free(plan->alloc, plan->pl);
  mp_free(plan->alloc, plan);
}

mp_status plan_set_regions(mp_plan *plan, const mp_region_desc *regions,
                           size_t n, mp_error *err) {
  static const mp_region_desc arena = {"arena", 0, MP_REGION_ALL_CLASSES};
  if (!regions || n == 0) {
    regions = &arena;
    n = 1;
  }
  plan->regions = mp_calloc(plan->alloc, n, sizeof *plan->regions);
  plan->region_classes =
      mp_calloc(plan->alloc, n, sizeof *plan->region_classes);
  if (!plan->regions || !plan->region_classes) {
    return mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
  }
  for (size_t r = 0; r < n; r++) {
    const char *name =
        mp_strdup(plan->alloc, regions[r].name ? regions[r].name : "region");
    if (!name) return mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
    plan->regions[r].name = name;
    plan->regions[r].capacity = regions[r].capacity;
    plan->region_classes[r] = regions[r].classes;
    plan->n_regions = r + 1;
  }
  return MP_OK;
}

/* Per-region use from the placements (adopted plans), then invariant 2. */
static void plan_summarize(mp_plan *plan, bool from_placements) {
  const mp_problem *p = plan->problem;
  mp_plan_summary *s = &plan->summary;
  if (from_placements) {
    for (size_t i = 0; i < mp_problem_count(p); i++) {
      const mp_buffer *b = mp_problem_buffer(p, i);
      uint32_t r = plan->pl[i].region;
      size_t end;
      if (r >= plan->n_regions) continue; /* the validator says so */
      if (!mp_size_add(plan->pl[i].offset, b->padded, &end)) end = SIZE_MAX;
      mp_plan_region *reg = &plan->regions[r];
      if (end > reg->used_bytes) reg->used_bytes = end;
      if (b->cls != MP_CLASS_ACTIVATION && end > reg->fixed_bytes) {
        reg->fixed_bytes = end;
      }
    }
    for (size_t r = 0; r < plan->n_regions; r++) {
      mp_plan_region *reg = &plan->regions[r];
      reg->activation_bytes = reg->used_bytes - reg->fixed_bytes;
    }
  }
  s->arena_bytes = s->resident_bytes = 0;
  for (size_t r = 0; r < plan->n_regions; r++) {
    s->arena_bytes += plan->regions[r].used_bytes;
    s->resident_bytes += plan->regions[r].fixed_bytes;
  }
  s->retained_bytes = plan->profile.retained;
  s->activation_peak_bytes = s->arena_bytes - s->resident_bytes;
  s->lower_bound_bytes = plan->profile.peak;
  s->no_reuse_bytes = plan->profile.no_reuse;
  s->alignment_waste_bytes = plan->profile.waste;
  s->strategy = plan->strategy;
  s->detail = plan->detail;
}

/* The limit the validator holds each region to (invariant 1). */
static mp_status plan_limits(const mp_plan *plan, size_t **out, mp_error *err) {
  size_t *cap = mp_calloc(plan->alloc, plan->n_regions, sizeof *cap);
  if (!cap) return mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
  for (size_t r = 0; r < plan->n_regions; r++) {
    const mp_plan_region *reg = &plan->regions[r];
    cap[r] = reg->capacity ? reg->capacity : reg->used_bytes;
  }
  *out = cap;
  return MP_OK;
}

/* A violation between two pinned buffers is the user's doing; anything
 * else means the planner is broken. */
static mp_status plan_check(mp_plan *plan, const mp_strategy *s,
                            mp_error *err) {
  mp_violation v;
  size_t *cap = NULL;
  mp_status st = plan_limits(plan, &cap, err);
  if (st != MP_OK) return st;
  st = mp_validate(plan->problem, plan->pl, cap, plan->n_regions, &v, err);
  mp_free(plan->alloc, cap);
  if (st != MP_ERR_CHECK) return st;
  const mp_buffer *a = mp_problem_buffer(plan->problem, v.a);
  const mp_buffer *b = mp_problem_buffer(plan->problem, v.b);
  if (v.kind == MP_VIOLATION_OVERLAP && a->pinned && b->pinned) {
    mp_error_prefix(err, "pinned buffers conflict");
    if (err) err->status = MP_ERR_BAD_INPUT;
    return MP_ERR_BAD_INPUT;
  }
  mp_error_prefix(err, "strategy '%s' produced an unsafe plan (a bug)",
                  s->name);
  if (err) err->status = MP_ERR_INTERNAL;
  return MP_ERR_INTERNAL;
}

static mp_status plan_unknown(const char *name, mp_error *err) {
  char names[320] = "";
  size_t len = 0;
  for (size_t i = 0; i < PLAN_N_STRATEGIES && len < sizeof names; i++) {
    len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                            i ? ", " : "", plan_strategies[i]->name);
  }
  return mp_error_set(err, MP_ERR_BAD_INPUT,
                      "unknown strategy '%s' (known: %s)", name, names);
}

mp_status mp_plan_solve(const mp_problem *p, const mp_plan_opts *opts,
                        mp_plan **out, mp_error *err) {
  static const mp_plan_opts none = {0};
  if (!opts) opts = &none;
  const char *name = opts->strategy ? opts->strategy : MP_STRATEGY_DEFAULT;
  const mp_strategy *s = plan_find_strategy(name);
  mp_plan *plan;
  if (!mp_problem_sealed(p)) {
    return mp_error_set(err, MP_ERR_INTERNAL, "plan: problem not sealed");
  }
  if (!s) return plan_unknown(name, err);
  mp_status st = plan_alloc(p, s->name, &plan, err);
  if (st != MP_OK) return st;
  double t0 = mp_now_ms();
  plan->threads = opts->threads;
  plan->budget_work = opts->budget_work;
  st = plan_set_regions(plan, opts->regions, opts->n_regions, err);
  if (st == MP_OK) st = plan_layout(plan, s, opts->budget_ms, err);
  if (st == MP_OK) st = plan_banks(plan, &opts->banks, err);
  if (st == MP_OK) {
    plan_summarize(plan, false);
    st = plan_check(plan, s, err);
  }
  if (st != MP_OK) {
    mp_plan_destroy(plan);
    return st;
  }
  plan->summary.plan_ms = mp_now_ms() - t0;
  *out = plan;
  return MP_OK;
}

mp_status mp_plan_adopt_regions(const mp_problem *p,
                                const mp_placement *placements,
                                const char *strategy, double plan_ms,
                                const mp_region_desc *regions, size_t n_regions,
                                mp_plan **out, mp_error *err) {
  mp_plan *plan;
  if (!mp_problem_sealed(p)) {
    return mp_error_set(err, MP_ERR_INTERNAL, "plan: problem not sealed");
  }
  mp_status st = plan_alloc(p, strategy ? strategy : "", &plan, err);
  if (st == MP_OK) st = plan_set_regions(plan, regions, n_regions, err);
  if (st != MP_OK) {
    mp_plan_destroy(plan);
    return st;
  }
  for (size_t i = 0; i < mp_problem_count(p); i++) plan->pl[i] = placements[i];
  plan_summarize(plan, true);
  plan->summary.plan_ms = plan_ms;
  *out = plan;
  return MP_OK;
}

mp_status mp_plan_adopt(const mp_problem *p, const mp_placement *placements,
                        const char *strategy, double plan_ms, mp_plan **out,
                        mp_error *err) {
  return mp_plan_adopt_regions(p, placements, strategy, plan_ms, NULL, 0, out,
                               err);
}

const mp_problem *mp_plan_problem(const mp_plan *plan) {
  return plan->problem;
}

const mp_plan_summary *mp_plan_summary_of(const mp_plan *plan) {
  return &plan->summary;
}

const mp_placement *mp_plan_placements(const mp_plan *plan) {
  return plan->pl;
}

const mp_profile *mp_plan_profile(const mp_plan *plan) {
  return &plan->profile;
}

size_t mp_plan_region_count(const mp_plan *plan) {
  return plan->n_regions;
}

const mp_plan_region *mp_plan_region_at(const mp_plan *plan, size_t i) {
  return &plan->regions[i];
}

size_t mp_plan_bank_conflicts(const mp_plan *plan, const mp_bank_conflict **out,
                              size_t *before) {
  if (out) *out = plan->conflicts;
  if (before) *before = plan->conflicts_before;
  return plan->n_conflicts;
}
