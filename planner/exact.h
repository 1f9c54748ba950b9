/*
 * exact.h -- the decision procedure behind the exact strategy: do these
 * buffers fit in `capacity` bytes? Private to the planner.
 *
 * Learned from MiniMalloc (Moffitt, ASPLOS 2023): only canonical solutions
 * are searched (every buffer at the lowest offset its placed conflicts
 * allow, buffers placed in non-decreasing offset order, ties by a static
 * preorder), each time section's floor plus the unplaced bytes live in it
 * must stay within the capacity, placements that would leave a gap another
 * buffer could fill are dominated, and the problem splits at cut-lines that
 * no unplaced buffer crosses. Several static preorderings are tried in
 * rounds with a doubling node limit.
 */
#ifndef MPLAN_EXACT_H
#define MPLAN_EXACT_H

#include "strategy.h"

typedef enum ex_result {
  EX_FOUND = 0,  /* offsets written: every buffer fits */
  EX_INFEASIBLE, /* proven: no placement fits the capacity */
  EX_TIMEOUT     /* the deadline passed first */
} ex_result;

typedef struct ex_problem ex_problem;

/* Largest problem the exact search takes on (buffers; beyond it the
 * O(n^2) per-path memory of the search stops being reasonable). */
#define EX_MAX_BUFFERS 4000

/* Prepares the sweep (sections, overlaps, cuts) of ctx's buffers, which
 * must be unpinned. Returns an owned problem (release with ex_destroy). */
mp_status ex_create(const mp_strategy_ctx *ctx, ex_problem **out,
                    mp_error *err);
void ex_destroy(ex_problem *ex);

/* The largest bytes live in one section: no capacity below it fits. */
size_t ex_lower_bound(const ex_problem *ex);

/* Decides whether everything fits in capacity bytes before deadline_ms (a
 * mp_now_ms() time), within max_nodes search nodes and max_work work (a
 * node costs the buffers of its partition, about what its candidates
 * take to find; 0: no limit; these two make the outcome independent of
 * the machine's speed). On EX_FOUND writes tier-relative offsets to
 * out[]; EX_TIMEOUT covers every limit. */
mp_status ex_decide(ex_problem *ex, size_t capacity, double deadline_ms,
                    uint64_t max_nodes, uint64_t max_work, size_t *out,
                    ex_result *result, mp_error *err);

/* One greedy descent without backtracking under preorder h (0..
 * ex_orders()-1): every buffer at the lowest offset its placed conflicts
 * allow, lowest first -- a skyline packing. Writes offsets to out[]. */
mp_status ex_dive(ex_problem *ex, int h, size_t *out, mp_error *err);
int ex_orders(void);

/* Nodes visited and work spent by the last ex_decide (for budgets,
 * reports and benchmarks). */
uint64_t ex_nodes(const ex_problem *ex);
uint64_t ex_work(const ex_problem *ex);

/* Milliseconds on a monotonic-enough clock (C11 timespec_get). */
double mp_now_ms(void);

#endif /* MPLAN_EXACT_H */
