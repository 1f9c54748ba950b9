/*
 * views.c -- the views pass: the output of Reshape, Flatten, Squeeze,
 * Unsqueeze (and an Identity the eliminate pass kept, e.g. one that
 * writes a graph output) is the same bytes as its input
 * (docs/ir-conventions.md). Rule 1 of share_rule decides.
 *
 * Invariants:
 *   1. Ops are offered in topological order (share.c invariant 1), so a
 *      chain of views ends up in one buffer with its first input.
 *   2. Only MP_ALIAS_VIEW is applied here; writes in place are the
 *      inplace pass's.
 */
#include "share.h"

mp_status pass_views(pass_ctx *c, mp_error *err) {
  const mp_graph *g = c->g;
  uint32_t *order = NULL;
  mp_order_kind used;
  share_ctx s;
  mp_status st = mp_schedule(g, MP_ORDER_TOPO, &order, &used, err);
  if (st == MP_OK) st = share_init(&s, c, err);
  if (st != MP_OK) {
    mp_free(mp_graph_alloc(g), order);
    return st;
  }
  for (size_t i = 0; i < mp_graph_op_count(g); i++) {
    uint32_t o = order[i], k = 0;
    const mp_op *op = mp_graph_op(g, o);
    if (!share_is_view(op->type) || share_rule(&s, o, &k) != MP_ALIAS_VIEW) {
      continue; /* the other rules' checks cost a search each */
    }
    share_union(&s, (uint32_t)op->inputs[k], (uint32_t)op->outputs[0],
                MP_ALIAS_VIEW);
    pass_tally(c, op->type);
  }
  share_release(&s);
  mp_free(mp_graph_alloc(g), order);
  return MP_OK;
}
