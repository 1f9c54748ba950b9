/*
 * mplan/schedule.h -- execution order of a graph's ops.
 *
 * file: the order of the file, which must be topological.
 * topo: Kahn's algorithm, always taking the ready op that comes first in
 *       the file, so the result is deterministic and equals file order
 *       whenever file order is already topological.
 * auto: file when it is topological, else topo.
 * A cycle is always an error that names the ops on it.
 */
#ifndef MPLAN_SCHEDULE_H
#define MPLAN_SCHEDULE_H

#include "mplan/graph.h"

typedef enum mp_order_kind {
  MP_ORDER_AUTO = 0,
  MP_ORDER_FILE,
  MP_ORDER_TOPO
} mp_order_kind;

const char *mp_order_name(mp_order_kind k);
bool mp_order_parse(const char *name, mp_order_kind *out);

/* Computes the order of a linked graph: (*order)[step] = op index, with
 * mp_graph_op_count(g) steps. Returns an owned array (release with
 * mp_free(mp_graph_alloc(g), ...)) and the order actually used (file or
 * topo). */
mp_status mp_schedule(const mp_graph *g, mp_order_kind want, uint32_t **order,
                      mp_order_kind *used, mp_error *err);

#endif /* MPLAN_SCHEDULE_H */
