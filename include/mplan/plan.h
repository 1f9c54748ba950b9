/*
 * mplan/plan.h -- solving an allocation problem into a proven plan.
 *
 * The arena is laid out in tiers (seed 000 section 6, seed 002 section 2.4):
 *   [ resident: weights, inputs ][ retained ][ activations, shared by reuse ]
 * Resident and retained buffers are stacked without reuse; a strategy packs
 * the activations. Every plan mp_plan_solve returns has passed the
 * independent validator (mplan/validate.h).
 */
#ifndef MPLAN_PLAN_H
#define MPLAN_PLAN_H

#include "mplan/problem.h"

typedef struct mp_placement {
  size_t offset;   /* absolute byte offset in its region */
  uint32_t region; /* index into the plan's regions (one, "arena", today) */
} mp_placement;

typedef struct mp_plan_summary {
  size_t arena_bytes;           /* whole arena: resident + activations */
  size_t lower_bound_bytes;     /* max live activation bytes */
  size_t resident_bytes;        /* end of the resident + retained tiers */
  size_t retained_bytes;        /* retained buffers' padded bytes */
  size_t activation_peak_bytes; /* arena_bytes - resident_bytes */
  size_t no_reuse_bytes;        /* sum of padded activation sizes */
  size_t alignment_waste_bytes; /* sum of padded - size over all buffers */
  double plan_ms;               /* wall time of the strategy + validation */
  const char *strategy;         /* owned by the plan */
  const char *detail;           /* what the strategy reports ("" if none) */
  size_t proven_lb_bytes;       /* a lower bound on the activation tier the
                                   exact search proved (0: none) */
} mp_plan_summary;

/* A memory region of the backend, fastest first. Activations go to the
 * first region that holds their class and spill to the next when it is
 * full; resident and retained buffers fill regions in the same order. */
typedef struct mp_region_desc {
  const char *name; /* copied into the plan */
  size_t capacity;  /* bytes; 0: unbounded */
  unsigned classes; /* bit (1u << mp_class) for every class it may hold */
} mp_region_desc;

#define MP_REGION_ALL_CLASSES                                \
  ((1u << MP_CLASS_ACTIVATION) | (1u << MP_CLASS_RESIDENT) | \
   (1u << MP_CLASS_RETAINED))

/* Interleaved banks: address a is in bank (a / width) % count. Buffers of
 * one access group (mp_problem_add_group) that start in the same bank
 * conflict; the planner moves one of them when there is room. */
typedef struct mp_bank_desc {
  uint32_t count; /* 0 or 1: no banks */
  size_t width;   /* bytes per bank line */
} mp_bank_desc;

typedef struct mp_plan_opts {
  const char *strategy;          /* NULL: MP_STRATEGY_DEFAULT */
  double budget_ms;              /* for searching strategies; 0: no budget */
  const mp_region_desc *regions; /* NULL/0: one unbounded region "arena" */
  size_t n_regions;
  mp_bank_desc banks;
  /* Threads the auto strategy may use above 50,000 buffers. 0: two with
   * the C library's allocator, one with any other (it may not be
   * thread-safe); 1: one; 2 or more: two, and the caller's allocator
   * must be thread-safe. The plan is the same with any number. */
  unsigned threads;
  /* The exact search's budget in work (search nodes, each costing the
   * buffers of its partition): the same placement on every machine
   * (budget_ms, when also set, can stop it sooner). auto searches when
   * either is set; exact without either gets MP_EXACT_WORK. 0: none. */
  uint64_t budget_work;
} mp_plan_opts;

/* The exact strategy's default work: 1.2 to 5.2 s of searching on the
 * minimalloc benchmark problems it does not prove here (6 to 25 M work a
 * second; docs/planner.md). */
#define MP_EXACT_WORK ((uint64_t)30000000)

/* What a plan put in one region. */
typedef struct mp_plan_region {
  const char *name;
  size_t capacity;         /* 0: unbounded */
  size_t used_bytes;       /* end of the highest buffer in it */
  size_t fixed_bytes;      /* end of its resident and retained tiers */
  size_t activation_bytes; /* used_bytes - fixed_bytes */
  size_t spilled_in;       /* activations that came here because an
                              earlier region was full */
} mp_plan_region;

/* A pair of an access group that still starts in one bank. */
typedef struct mp_bank_conflict {
  size_t group;
  size_t a, b; /* buffer indices */
  uint32_t bank;
} mp_bank_conflict;

#define MP_STRATEGY_DEFAULT "auto"

typedef struct mp_plan mp_plan;

/* Solves a sealed problem. Borrows p, which must outlive the plan. Returns
 * an owned plan (release with mp_plan_destroy). Fails with
 * MP_ERR_BAD_INPUT for an unknown strategy or conflicting pins, and with
 * MP_ERR_INTERNAL if the strategy's result fails validation. */
mp_status mp_plan_solve(const mp_problem *p, const mp_plan_opts *opts,
                        mp_plan **out, mp_error *err);

/* Wraps offsets decided elsewhere (a plan file) without validating them:
 * run mp_validate on the result. Copies offsets, strategy and regions
 * (NULL/0: one region "arena" as large as the highest buffer); borrows
 * p. */
mp_status mp_plan_adopt(const mp_problem *p, const mp_placement *placements,
                        const char *strategy, double plan_ms, mp_plan **out,
                        mp_error *err);
mp_status mp_plan_adopt_regions(const mp_problem *p,
                                const mp_placement *placements,
                                const char *strategy, double plan_ms,
                                const mp_region_desc *regions, size_t n_regions,
                                mp_plan **out, mp_error *err);

void mp_plan_destroy(mp_plan *plan);

const mp_problem *mp_plan_problem(const mp_plan *plan);
const mp_plan_summary *mp_plan_summary_of(const mp_plan *plan);
const mp_placement *mp_plan_placements(const mp_plan *plan);
const mp_profile *mp_plan_profile(const mp_plan *plan);

/* The plan's regions (at least one). */
size_t mp_plan_region_count(const mp_plan *plan);
const mp_plan_region *mp_plan_region_at(const mp_plan *plan, size_t i);

/* Bank conflicts that remain (borrowed array), and how many the layout had
 * before the planner moved buffers to avoid them. */
size_t mp_plan_bank_conflicts(const mp_plan *plan, const mp_bank_conflict **out,
                              size_t *before);

/* Strategy names in a stable order, for help texts and `auto`. */
size_t mp_strategy_count(void);
const char *mp_strategy_name(size_t i);
const char *mp_strategy_description(size_t i);

#endif /* MPLAN_PLAN_H */
