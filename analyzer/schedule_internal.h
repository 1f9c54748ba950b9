/*
 * schedule_internal.h -- what schedule.c and schedule_memory.c share.
 * Private to the analyzer.
 */
#ifndef MPLAN_SCHEDULE_INTERNAL_H
#define MPLAN_SCHEDULE_INTERNAL_H

#include "mplan/schedule.h"

/* file, topo, auto, dfs or rpo (no sizes needed). Owned order. */
mp_status sched_basic(const mp_graph *g, mp_order_kind want, uint32_t **order,
                      mp_order_kind *used, mp_error *err);

/* Kahn's order running the ready op of lowest rank[op] first (ties: the
 * lower index) into order (n ops, caller's); a cycle is an error. */
mp_status sched_ranked(const mp_graph *g, const uint32_t *rank, uint32_t *order,
                       mp_error *err);

/* The memory-aware order (schedule_memory.c). Owned order; fills info. */
mp_status sched_memory(const mp_graph *g, const mp_schedule_opts *o,
                       uint32_t **order, mp_schedule_info *info, mp_error *err);

/* Milliseconds on the monotonic clock the memory order's wall-clock cap
 * runs on (the pass manager shares that cap on it too). */
double sched_now_ms(void);

#endif /* MPLAN_SCHEDULE_INTERNAL_H */
