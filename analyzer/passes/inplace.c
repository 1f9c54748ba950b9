/*
 * inplace.c -- the inplace pass: an elementwise op writes its output over
 * an input nobody reads later, a depthwise Conv over its input
 * (TinyEngine), and a fused op over its epilogue's operand (a residual),
 * per rules 2, 3 and 4 of share_rule.
 *
 * Invariants:
 *   1. Ops are offered in topological order (share.c invariant 1), so a
 *      chain of in-place ops (Conv -> Add -> Relu) ends up in one buffer.
 *   2. Views are not made here (the views pass runs first when asked for);
 *      a buffer that views already share is checked as a whole.
 */
#include "share.h"

mp_status pass_inplace(pass_ctx *c, mp_error *err) {
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
    mp_alias_rule r = share_rule(&s, o, &k);
    if (r == MP_ALIAS_OWN || r == MP_ALIAS_VIEW) continue;
    share_union(&s, (uint32_t)op->inputs[k], (uint32_t)op->outputs[0], r);
    pass_tally(c, r == MP_ALIAS_DEPTHWISE  ? "depthwise Conv"
                  : r == MP_ALIAS_EPILOGUE ? "fused epilogue"
                                           : op->type);
  }
  share_release(&s);
  mp_free(mp_graph_alloc(g), order);
  return MP_OK;
}
