/*
 * plan_impl.h -- the plan object shared by plan.c (API, summary, proof),
 * layout.c (regions, tiers, spilling) and banks.c (bank conflicts).
 * Private to the planner.
 */
#ifndef MPLAN_PLAN_IMPL_H
#define MPLAN_PLAN_IMPL_H

#include "mplan/plan.h"
#include "strategy.h"

struct mp_plan {
  const mp_alloc *alloc;
  const mp_problem *problem;
  mp_placement *pl;
  mp_plan_summary summary;
  char *strategy;
  char detail[256];
  mp_profile profile;
  mp_plan_region *regions; /* names owned by the plan */
  unsigned *region_classes;
  size_t n_regions;
  mp_bank_conflict *conflicts;
  size_t n_conflicts, conflicts_before;
  unsigned threads;     /* mp_plan_opts.threads */
  uint64_t budget_work; /* mp_plan_opts.budget_work */
};

/* Copies the region descriptions (none: one unbounded "arena" for every
 * class) into the plan. */
mp_status plan_set_regions(mp_plan *plan, const mp_region_desc *regions,
                           size_t n, mp_error *err);

/* Places every buffer: resident and retained tiers stacked, activations
 * packed by strategy s region by region, spilling when a region is full.
 * Fails with MP_ERR_NO_FIT naming the region, the shortfall and the
 * buffers live at the step that does not fit. */
mp_status plan_layout(mp_plan *plan, const mp_strategy *s, double budget_ms,
                      mp_error *err);

/* Moves buffers of an access group out of each other's bank where the
 * room allows, and records the conflicts that remain. */
mp_status plan_banks(mp_plan *plan, const mp_bank_desc *banks, mp_error *err);

/* Appends "; text" (or "text" when empty) to the plan's detail. */
void plan_note(mp_plan *plan, const char *text);

#endif /* MPLAN_PLAN_IMPL_H */
