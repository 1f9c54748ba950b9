/*
 * plan.c -- tiers, strategy dispatch, and the summary of a plan.
 *
 * Invariants:
 *   1. Tier order is fixed: resident, then retained, then activations. Each
 *      tier starts at the end of the previous one rounded up to the largest
 *      alignment in the tier, so tier-relative offsets that a strategy
 *      aligns stay aligned once shifted.
 *   2. Pins are absolute; a strategy sees them relative to its tier base.
 *   3. No plan leaves mp_plan_solve without passing mp_validate.
 *   4. summary.activation_peak_bytes = arena_bytes - resident_bytes and
 *      resident_bytes is the end of the last fixed buffer, so solved and
 *      adopted plans are summarised by the same rule.
 */
#include "mplan/plan.h"

#include <stdio.h>
#include <string.h>

#include "exact.h"
#include "mplan/validate.h"
#include "strategy.h"

struct mp_plan {
  const mp_alloc *alloc;
  const mp_problem *problem;
  mp_placement *pl;
  mp_plan_summary summary;
  char *strategy;
  char detail[256];
  mp_profile profile;
};

static const mp_strategy *const plan_strategies[] = {
    &mp_strategy_auto,
    &mp_strategy_exact,
    &mp_strategy_seed_first_fit,
    &mp_strategy_best_fit_size,
    &mp_strategy_best_fit_duration,
    &mp_strategy_best_fit_conflict,
    &mp_strategy_greedy_breadth,
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
    const char *a = plan_strategies[i]->name, *b = name;
    while (*a && *a == *b) a++, b++;
    if (*a == *b) return plan_strategies[i];
  }
  return NULL;
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
  mp_profile_release(&plan->profile);
  mp_free(plan->alloc, plan->strategy);
  mp_free(plan->alloc, plan->pl);
  mp_free(plan->alloc, plan);
}

static size_t plan_extent(const mp_strategy_ctx *ctx, const size_t *off) {
  size_t top = 0;
  for (size_t i = 0; i < ctx->n; i++) {
    if (off[i] + ctx->bufs[i].size > top) top = off[i] + ctx->bufs[i].size;
  }
  return top;
}

/* No strategy may do worse than no reuse at all. With mixed alignments a
 * packing order can strand more padding than stacking does; then the
 * linear placement is kept, and the detail says so. */
static mp_status plan_guard(mp_strategy_ctx *ctx, mp_error *err) {
  size_t *lin = mp_calloc(ctx->alloc, ctx->n + 1, sizeof *lin);
  if (!lin) return mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
  mp_strategy_ctx l = *ctx;
  l.offsets = lin;
  mp_status st = mp_strategy_linear.solve(&l, err);
  size_t mine = plan_extent(ctx, ctx->offsets), base = plan_extent(ctx, lin);
  if (st == MP_OK && base < mine) {
    memcpy(ctx->offsets, lin, ctx->n * sizeof *lin);
    size_t len = strlen(ctx->detail);
    snprintf(ctx->detail + len, sizeof ctx->detail - len,
             "%sthe no-reuse stack was %zu B smaller and was kept",
             len ? "; " : "", mine - base);
  }
  mp_free(ctx->alloc, lin);
  return st;
}

/* Runs strategy s over the buffers of class cls, placing them from base.
 * *end receives the end of the highest buffer of the tier (base if none). */
static mp_status plan_tier(mp_plan *plan, mp_class cls, const mp_strategy *s,
                           size_t base, size_t *end, double budget_ms,
                           mp_error *err) {
  const mp_problem *p = plan->problem;
  size_t n = mp_problem_count(p), m = 0;
  mp_sbuf *sb = mp_calloc(plan->alloc, n ? n : 1, sizeof *sb);
  size_t *off = mp_calloc(plan->alloc, n ? n : 1, sizeof *off);
  mp_status st = MP_OK;
  if (!sb || !off) {
    st = mp_error_set(err, MP_ERR_NOMEM, "plan: out of memory");
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    const mp_buffer *b = mp_problem_buffer(p, i);
    if (b->cls != cls) continue;
    if (b->pinned && b->pin < base) {
      st = mp_error_set(err, MP_ERR_BAD_INPUT,
                        "'%s' is pinned at offset %zu, below the start of "
                        "the %s tier at %zu",
                        b->name, b->pin, mp_class_name(cls), base);
      goto done;
    }
    sb[m++] = (mp_sbuf){b->padded,
                        b->alignment,
                        b->first,
                        b->last,
                        (uint32_t)i,
                        b->pinned,
                        b->pinned ? b->pin - base : 0};
  }
  mp_strategy_ctx ctx = {plan->alloc, sb, m, off, budget_ms, "", 0};
  st = s->solve(&ctx, err);
  if (st == MP_OK && s != &mp_strategy_linear) st = plan_guard(&ctx, err);
  if (st == MP_OK && cls == MP_CLASS_ACTIVATION) {
    memcpy(plan->detail, ctx.detail, sizeof plan->detail);
    plan->summary.proven_lb_bytes = ctx.proven_lb;
  }
  *end = base;
  for (size_t k = 0; st == MP_OK && k < m; k++) {
    mp_placement *pl = &plan->pl[sb[k].id];
    if (!mp_size_add(base, off[k], &pl->offset)) {
      st = mp_error_set(err, MP_ERR_BAD_INPUT,
                        "the arena would exceed the addressable memory");
    } else if (pl->offset + sb[k].size > *end) {
      *end = pl->offset + sb[k].size;
    }
  }
done:
  mp_free(plan->alloc, off);
  mp_free(plan->alloc, sb);
  return st;
}

static void plan_summarize(mp_plan *plan) {
  const mp_problem *p = plan->problem;
  mp_plan_summary *s = &plan->summary;
  size_t arena = 0, fixed_end = 0;
  for (size_t i = 0; i < mp_problem_count(p); i++) {
    const mp_buffer *b = mp_problem_buffer(p, i);
    size_t end;
    if (!mp_size_add(plan->pl[i].offset, b->padded, &end)) end = SIZE_MAX;
    if (end > arena) arena = end;
    if (b->cls != MP_CLASS_ACTIVATION && end > fixed_end) fixed_end = end;
  }
  s->arena_bytes = arena;
  s->resident_bytes = fixed_end;
  s->retained_bytes = plan->profile.retained;
  s->activation_peak_bytes = arena - fixed_end;
  s->lower_bound_bytes = plan->profile.peak;
  s->no_reuse_bytes = plan->profile.no_reuse;
  s->alignment_waste_bytes = plan->profile.waste;
  s->strategy = plan->strategy;
  s->detail = plan->detail;
}

/* The largest alignment among buffers of class cls (1 when none). */
static size_t plan_class_align(const mp_problem *p, mp_class cls) {
  size_t a = 1;
  for (size_t i = 0; i < mp_problem_count(p); i++) {
    const mp_buffer *b = mp_problem_buffer(p, i);
    if (b->cls == cls && b->alignment > a) a = b->alignment;
  }
  return a;
}

static mp_status plan_layout(mp_plan *plan, const mp_strategy *s,
                             double budget_ms, mp_error *err) {
  static const mp_class tiers[] = {MP_CLASS_RESIDENT, MP_CLASS_RETAINED,
                                   MP_CLASS_ACTIVATION};
  size_t end = 0, base;
  mp_status st = MP_OK;
  for (size_t k = 0; st == MP_OK && k < sizeof tiers / sizeof *tiers; k++) {
    bool act = tiers[k] == MP_CLASS_ACTIVATION;
    /* Invariant 1: a tier starts at a multiple of its largest alignment. */
    if (!mp_align_up(end, plan_class_align(plan->problem, tiers[k]), &base)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "the arena would exceed the addressable memory");
    }
    st = plan_tier(plan, tiers[k], act ? s : &mp_strategy_linear, base, &end,
                   act ? budget_ms : 0, err);
  }
  return st;
}

/* A violation between two pinned buffers is the user's doing; anything
 * else means the strategy is broken. */
static mp_status plan_check(mp_plan *plan, const mp_strategy *s,
                            mp_error *err) {
  mp_violation v;
  size_t cap = plan->summary.arena_bytes;
  mp_status st = mp_validate(plan->problem, plan->pl, &cap, 1, &v, err);
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

mp_status mp_plan_solve(const mp_problem *p, const mp_plan_opts *opts,
                        mp_plan **out, mp_error *err) {
  const char *name =
      opts && opts->strategy ? opts->strategy : MP_STRATEGY_DEFAULT;
  const mp_strategy *s = plan_find_strategy(name);
  mp_plan *plan;
  if (!mp_problem_sealed(p)) {
    return mp_error_set(err, MP_ERR_INTERNAL, "plan: problem not sealed");
  }
  if (!s) {
    char names[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < PLAN_N_STRATEGIES && len < sizeof names; i++) {
      len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                              i ? ", " : "", plan_strategies[i]->name);
    }
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "unknown strategy '%s' (known: %s)", name, names);
  }
  mp_status st = plan_alloc(p, s->name, &plan, err);
  if (st != MP_OK) return st;
  double t0 = mp_now_ms();
  st = plan_layout(plan, s, opts ? opts->budget_ms : 0, err);
  if (st == MP_OK) {
    plan_summarize(plan);
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

mp_status mp_plan_adopt(const mp_problem *p, const mp_placement *placements,
                        const char *strategy, double plan_ms, mp_plan **out,
                        mp_error *err) {
  mp_plan *plan;
  if (!mp_problem_sealed(p)) {
    return mp_error_set(err, MP_ERR_INTERNAL, "plan: problem not sealed");
  }
  mp_status st = plan_alloc(p, strategy ? strategy : "", &plan, err);
  if (st != MP_OK) return st;
  for (size_t i = 0; i < mp_problem_count(p); i++) plan->pl[i] = placements[i];
  plan_summarize(plan);
  plan->summary.plan_ms = plan_ms;
  *out = plan;
  return MP_OK;
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
