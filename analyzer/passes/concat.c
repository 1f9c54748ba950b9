/*
 * concat.c -- the concat pass: the inputs of a Concat along its outermost
 * non-unit axis become slices of the output's buffer (rule 5 of
 * share.h), so the ops producing them write the concatenation directly
 * and the Concat copies nothing (docs/ir-conventions.md). DARTS/NASNet
 * cells and feature-pyramid necks end in such Concats; without this the
 * output and all of its inputs are live together when it runs.
 *
 * A slice is not free: the output's buffer is live from the first slice
 * written, so placing an input produced long before the Concat can raise
 * the peak elsewhere. Each placement is therefore kept only when the
 * activation lower bound under the graph's order before the pass does
 * not rise: first all of a Concat's inputs together, else one at a time,
 * the input produced last first. When the inplace pass is to run, each
 * trial is made first with the moves of rule 6 (share.h: the op writing
 * a slice in place over an input gets that input moved into the slice),
 * which can turn a placement that raises the bound into one that lowers
 * it, and then without them.
 *
 * Invariants:
 *   1. Ops are offered in topological order, so an inner Concat's buffer
 *      (its output with its slices) is complete when an outer Concat
 *      places that output as one of its own slices, and moves whole.
 *   2. Runs after views (a view of a slice is placed with it) and before
 *      inplace, whose rule 0 keeps a slice where it is (rule 6 moves an
 *      input written over into the slice instead) and whose readers
 *      rule sees every slice's readers.
 *   3. A rejected trial leaves parent, rel, rule, the member lists and
 *      the slice flags exactly as they were (share_restore undoes its
 *      journal, share.c invariant 4).
 *   4. An input c->concat_keep_out marks is never placed. The pass
 *      manager marks the inputs written early into a Concat buffer whose
 *      later slices leave it idle at the final peak (manager.c invariant
 *      9): judged under the order before the pass, those placements tie,
 *      and only the order after inplace shows what they cost.
 */
#include <string.h>

#include "mplan/backend.h"
#include "share.h"

typedef struct cc_state {
  pass_ctx *c;
  share_ctx s;
  size_t lb; /* the lower bound with the placements kept so far */
} cc_state;

/* Places input only of op (UINT32_MAX: every input with a slot), with
 * the moves of rule 6 when with_moves (*moved: how many were made), and
 * keeps it all if the lower bound does not rise; *kept says whether, and
 * the tally counts what was kept. */
static mp_status cc_try(cc_state *z, const mp_op *op, const int64_t *slot,
                        uint32_t only, bool with_moves, size_t *moved,
                        bool *kept, mp_error *err) {
  size_t lb = 0;
  share_save(&z->s);
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    if (slot[k] < 0 || (only != UINT32_MAX && k != only)) continue;
    share_union_at(&z->s, (uint32_t)op->outputs[0], (uint32_t)op->inputs[k],
                   slot[k], MP_ALIAS_CONCAT);
  }
  /* With the inplace pass to come, a slice its op will write in place
   * (rule 6) is judged with that move made: a placement that pays off
   * only then is kept, and so is the move. */
  *moved = 0;
  for (uint32_t k = 0; with_moves && k < op->n_inputs; k++) {
    if (slot[k] < 0 || (only != UINT32_MAX && k != only)) continue;
    *moved +=
        share_move_into_slice(&z->s, (uint32_t)op->inputs[k]) != MP_ALIAS_OWN;
  }
  mp_status st = share_lb(&z->s, &lb, err);
  *kept = st == MP_OK && lb <= z->lb;
  if (!*kept) {
    share_restore(&z->s);
    return st;
  }
  share_keep(&z->s);
  z->lb = lb;
  for (size_t i = 0; i < *moved; i++) pass_tally(z->c, "into a Concat slice");
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    if (slot[k] < 0 || (only != UINT32_MAX && k != only)) continue;
    pass_tally(z->c, "Concat input");
    /* the copy read and wrote these bytes */
    z->c->saved_bytes +=
        2 * mp_graph_tensor(z->c->g, (size_t)op->inputs[k])->bytes;
  }
  return MP_OK;
}

/* Input only (UINT32_MAX: all), first with the moves of rule 6 when the
 * inplace pass is to run, then without (unless no move was made: the
 * same trial). */
static mp_status cc_try_both(cc_state *z, const mp_op *op, const int64_t *slot,
                             uint32_t only, bool *kept, mp_error *err) {
  mp_status st = MP_OK;
  size_t moved = 1;
  *kept = false;
  if (z->c->mask & (1u << MP_PASS_INPLACE)) {
    st = cc_try(z, op, slot, only, true, &moved, kept, err);
  }
  if (st == MP_OK && !*kept && moved > 0) {
    st = cc_try(z, op, slot, only, false, &moved, kept, err);
  }
  return st;
}

/* One Concat: all of its placeable inputs together, else one at a time
 * from the one produced last (cand: scratch, one per input). */
static mp_status cc_concat(cc_state *z, const mp_op *op, const int64_t *slot,
                           const uint32_t *step_of, uint32_t *cand,
                           mp_error *err) {
  bool kept = false;
  mp_status st = cc_try_both(z, op, slot, UINT32_MAX, &kept, err);
  if (st != MP_OK || kept) return st;
  size_t n = 0;
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    if (slot[k] < 0) continue;
    uint32_t at =
        step_of[mp_graph_tensor(z->c->g, (size_t)op->inputs[k])->producer];
    size_t i = n++;
    for (; i > 0; i--) { /* insertion sort, latest producer first */
      uint32_t prev =
          step_of[mp_graph_tensor(z->c->g, (size_t)op->inputs[cand[i - 1]])
                      ->producer];
      if (prev >= at) break;
      cand[i] = cand[i - 1];
    }
    cand[i] = k;
  }
  for (size_t i = 0; st == MP_OK && n > 1 && i < n; i++) {
    st = cc_try_both(z, op, slot, cand[i], &kept, err);
  }
  return st;
}

mp_status pass_concat(pass_ctx *c, mp_error *err) {
  const mp_graph *g = c->g;
  const mp_alloc *a = mp_graph_alloc(g);
  size_t n_ops = mp_graph_op_count(g), most = 1;
  uint32_t *topo = NULL;
  mp_order_kind used;
  size_t align = mp_backend_align(c->backend, MP_TENSOR_ACTIVATION);
  for (size_t o = 0; o < n_ops; o++) {
    if (mp_graph_op(g, o)->n_inputs > most) most = mp_graph_op(g, o)->n_inputs;
  }
  cc_state z = {.c = c};
  int64_t *slot = mp_calloc(a, most, sizeof *slot);
  uint32_t *cand = mp_calloc(a, most, sizeof *cand);
  uint32_t *step_of = mp_calloc(a, n_ops + 1, sizeof *step_of);
  mp_status st = MP_OK;
  if (!slot || !cand || !step_of) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                      mp_graph_source(g));
  }
  if (st == MP_OK) st = mp_schedule(g, MP_ORDER_TOPO, &topo, &used, err);
  if (st == MP_OK) st = share_init(&z.s, c, err);
  bool shared = st == MP_OK;
  for (size_t k = 0; st == MP_OK && k < n_ops; k++) {
    step_of[c->order[k]] = (uint32_t)k;
  }
  size_t kept_out = 0;
  bool measured = false; /* the lower bound is measured at the first
                            candidate: a graph without one costs nothing */
  for (size_t i = 0; st == MP_OK && i < n_ops; i++) {
    const mp_op *op = mp_graph_op(g, topo[i]);
    if (share_concat(&z.s, topo[i], align, slot) == 0) continue;
    for (uint32_t k = 0; c->concat_keep_out && k < op->n_inputs; k++) {
      if (slot[k] >= 0 && c->concat_keep_out[op->inputs[k]]) {
        slot[k] = -1; /* invariant 4 */
        kept_out++;
      }
    }
    if (!measured) st = share_lb(&z.s, &z.lb, err);
    measured = true;
    if (st == MP_OK) st = cc_concat(&z, op, slot, step_of, cand, err);
  }
  if (st == MP_OK && kept_out) {
    mp_buf_printf(&c->note,
                  "%zu early input%s kept out of %s Concat slice (idle at the "
                  "final peak)",
                  kept_out, kept_out == 1 ? "" : "s",
                  kept_out == 1 ? "its" : "their");
  }
  if (shared) share_release(&z.s);
  mp_free(a, topo);
  mp_free(a, slot);
  mp_free(a, cand);
  mp_free(a, step_of);
  return st;
}
