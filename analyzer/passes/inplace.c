/*
 * inplace.c -- the inplace pass: an elementwise op writes its output over
 * an input nobody reads later, a depthwise Conv over its input
 * (TinyEngine), a fused op over its epilogue's operand (a residual), a
 * row-wise op over its input and a Cast between dtypes of one element
 * size, per rules 2, 3, 4, 7 and 8 of share_rule. When the output is a Concat
 * slice (the concat pass ran), the input moves into the slice instead (rule 6,
 * share_move_into_slice): a DARTS node's Add then writes the Concat in place
 * over its first branch's result, and that result needs no bytes of its
 * own.
 *
 * A move into a slice is not free: the Concat's buffer is then live from
 * the input's birth (or the birth of the first tensor of its buffer), so
 * each move is kept only when the activation lower bound under the
 * graph's order before the pass does not rise. Most moves are made by
 * the concat pass already, which judges a placement together with the
 * moves it enables when this pass is to run; here come the ones it
 * could not keep together.
 *
 * Invariants:
 *   1. Ops are offered in topological order (share.c invariant 1), so a
 *      chain of in-place ops (Conv -> Add -> Relu) ends up in one buffer.
 *   2. Views are not made here (the views pass runs first when asked for);
 *      a buffer that views already share is checked as a whole.
 *   3. After a move into a slice the input is the slice (rule
 *      MP_ALIAS_CONCAT, at the slice's offset) and the output is written
 *      over it (the rule share_move_into_slice returned); a rejected move
 *      leaves the buffers exactly as they were (share_restore).
 *   4. A union whose output is smaller than its input is kept only when
 *      the lower bound under the graph's order before the pass does not
 *      rise (ip_union); a rejected one is restored as in invariant 3.
 *   5. Judged under that order, such a union often ties (another peak,
 *      one this pass removes, dominates), and the buffer then keeps the
 *      input's size while the smaller output lives. The pass manager
 *      marks in c->inplace_apart the outputs whose buffer is so idle at
 *      the final peak (manager.c invariant 9), and a marked one is never
 *      written over its input.
 */
#include "share.h"

typedef struct ip_state {
  share_ctx s;
  size_t lb; /* with the moves kept so far; measured at the first op */
  bool measured;
  size_t apart; /* unions not made (invariant 5) */
} ip_state;

/* Op o's output y is a Concat slice: moves input k's buffer into it if
 * the lower bound does not rise (invariant 3). */
static mp_status ip_into_slice(pass_ctx *c, ip_state *z, uint32_t o,
                               mp_error *err) {
  const mp_op *op = mp_graph_op(c->g, o);
  if (op->n_outputs != 1 || op->outputs[0] < 0) return MP_OK;
  mp_status st = MP_OK;
  if (!z->measured) st = share_lb(&z->s, &z->lb, err);
  z->measured = true;
  if (st != MP_OK) return st;
  share_save(&z->s);
  if (share_move_into_slice(&z->s, (uint32_t)op->outputs[0]) == MP_ALIAS_OWN) {
    share_restore(&z->s); /* nothing moved (the rule's finds compressed) */
    return MP_OK;
  }
  size_t lb = 0;
  st = share_lb(&z->s, &lb, err);
  if (st != MP_OK || lb > z->lb) {
    share_restore(&z->s);
    return st;
  }
  share_keep(&z->s);
  z->lb = lb;
  pass_tally(c, "into a Concat slice");
  return MP_OK;
}

/* Writes op's output over its input k (rule r). An output smaller than
 * the input (a stride-2 depthwise Conv) keeps the input's bytes while it
 * lives, which can raise the peak where the input alone would have died:
 * that union is kept only when the lower bound does not rise (invariant
 * 4). One of equal size never raises it: the two were live together at
 * the op, and the union is one of them over the hull of both. */
static mp_status ip_union(pass_ctx *c, ip_state *z, const mp_op *op, uint32_t k,
                          mp_alias_rule r, bool *kept, mp_error *err) {
  uint32_t in = (uint32_t)op->inputs[k], out = (uint32_t)op->outputs[0];
  *kept = true;
  if (mp_graph_tensor(c->g, out)->bytes >= mp_graph_tensor(c->g, in)->bytes) {
    share_union(&z->s, in, out, r);
    return MP_OK;
  }
  if (c->inplace_apart && c->inplace_apart[out]) { /* invariant 5 */
    *kept = false;
    z->apart++;
    return MP_OK;
  }
  size_t before = 0, after = 0;
  mp_status st = share_lb(&z->s, &before, err);
  if (st != MP_OK) return st;
  share_save(&z->s);
  share_union(&z->s, in, out, r);
  st = share_lb(&z->s, &after, err);
  *kept = st == MP_OK && after <= before;
  if (!*kept) {
    share_restore(&z->s);
    return st;
  }
  share_keep(&z->s);
  return MP_OK;
}

mp_status pass_inplace(pass_ctx *c, mp_error *err) {
  const mp_graph *g = c->g;
  uint32_t *order = NULL;
  mp_order_kind used;
  ip_state z = {0};
  mp_status st = mp_schedule(g, MP_ORDER_TOPO, &order, &used, err);
  if (st == MP_OK) st = share_init(&z.s, c, err);
  bool shared = st == MP_OK;
  for (size_t i = 0; st == MP_OK && i < mp_graph_op_count(g); i++) {
    uint32_t o = order[i], k = 0;
    const mp_op *op = mp_graph_op(g, o);
    mp_alias_rule r = share_rule(&z.s, o, &k);
    if (r == MP_ALIAS_OWN) st = ip_into_slice(c, &z, o, err);
    if (r == MP_ALIAS_OWN || r == MP_ALIAS_VIEW) continue;
    bool kept = true;
    st = ip_union(c, &z, op, k, r, &kept, err);
    if (st != MP_OK || !kept) continue;
    pass_tally(c, r == MP_ALIAS_DEPTHWISE  ? "depthwise Conv"
                  : r == MP_ALIAS_EPILOGUE ? "fused epilogue"
                                           : op->type);
  }
  if (st == MP_OK && z.apart) {
    mp_buf_printf(&c->note,
                  "%zu smaller output%s kept apart from %s input (idle at "
                  "the final peak, or the bound is lower without)",
                  z.apart, z.apart == 1 ? "" : "s",
                  z.apart == 1 ? "its" : "their");
  }
  if (shared) share_release(&z.s);
  mp_free(mp_graph_alloc(g), order);
  return st;
}
