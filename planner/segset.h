/*
 * segset.h -- the set of placed buffers, queried by time: "which placed
 * buffers are live at some time in [a, b]?" in O(log n + leaves + k).
 *
 * All intervals are known before any is placed, so the structure is a
 * static segment tree over the compressed time axis: every interval is
 * stored, once placed, in the O(log n) canonical nodes that tile it. A
 * query visits the nodes that meet [a, b] -- their ancestors and the nodes
 * inside it -- and reports each stored buffer once. For the short intervals
 * that dominate real graphs that is a few dozen nodes, where an augmented
 * search tree pays O(log n) per reported buffer. Private to the planner.
 */
#ifndef MPLAN_SEGSET_H
#define MPLAN_SEGSET_H

#include "strategy.h"

typedef struct segset segset;

/* Prepares an empty set for the buffers of ctx (slots are their indices).
 * Returns an owned set (release with segset_destroy). */
mp_status segset_create(const mp_strategy_ctx *ctx, segset **out,
                        mp_error *err);
void segset_destroy(segset *s);

/* Adds buffer slot (once). */
void segset_insert(segset *s, uint32_t slot);

/* Calls visit(arg, slot) once for every inserted buffer live at some time
 * of [first, last], which must be the interval of one of the buffers. */
void segset_query(segset *s, int64_t first, int64_t last,
                  void (*visit)(void *arg, uint32_t slot), void *arg);

#endif /* MPLAN_SEGSET_H */
