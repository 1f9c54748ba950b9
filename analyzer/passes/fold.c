/*
 * fold.c -- constant folding (seed 000 section 3.1).
 *
 * An op folds when it is deterministic, writes no graph output or
 * retained state, and shape inference knows the whole value of every
 * output: constant subgraphs small enough for inference to evaluate,
 * and shape math (Shape of an activation, Gather/Concat/Slice over such
 * values). The bundle writes those values as the weight's bytes; an op
 * whose result inference does not know stays an op, since nothing else
 * could produce its bytes.
 * Its outputs become weights and the op disappears; a constant nobody
 * reads any more is dropped by the commit. (b) is why folding shortens
 * lifetimes: a Shape op reading a big activation late keeps it alive, and
 * once folded that read is gone.
 *
 * Invariants:
 *   1. Folding never grows the resident tier by more than it frees: the
 *      outputs must be no larger than the constant inputs that die with
 *      the op (read by nothing else), unless they are tiny (FOLD_TINY
 *      bytes: scalars, shapes). A ConstantOfShape of known value still
 *      stays an op when its result is large: making it a weight would
 *      trade a short-lived activation for resident bytes forever.
 *   2. Control flow (If, Loop, Scan, the importer's mplan.* ops), random
 *      generators and ops without inputs never fold.
 *   3. A folded tensor keeps its name, dtype, shape and known value; it
 *      is a weight whose contents are the folded subgraph's result.
 */
#include <string.h>

#include "pass.h"

#define FOLD_TINY 256

static bool fold_denied(const char *type) {
  static const char *const deny[] = {"If",
                                     "Loop",
                                     "Scan",
                                     "RandomNormal",
                                     "RandomUniform",
                                     "RandomNormalLike",
                                     "RandomUniformLike",
                                     "Multinomial",
                                     "Bernoulli",
                                     NULL};
  if (strncmp(type, "mplan.", 6) == 0) return true;
  for (size_t i = 0; deny[i]; i++) {
    if (strcmp(deny[i], type) == 0) return true;
  }
  return false;
}

static bool fold_keeps_output(const mp_graph *g, const mp_op *op) {
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    mp_tensor_kind kind = mp_graph_tensor(g, (size_t)op->outputs[k])->kind;
    if (kind == MP_TENSOR_OUTPUT || kind == MP_TENSOR_RETAINED) return true;
  }
  return false;
}

/* Rule (a) and (b) of the header, and invariant 1. */
static bool fold_ok(const mp_graph *g, const mp_op *op, const bool *constant) {
  size_t out_bytes = 0, freed = 0;
  bool valued = true, any_input = false;
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    const mp_tensor *t = mp_graph_tensor(g, (size_t)op->outputs[k]);
    size_t esize = mp_dtype_size(t->dtype);
    valued = valued && t->value && esize && t->value->n * esize == t->bytes;
    if (!mp_size_add(out_bytes, t->bytes, &out_bytes)) return false;
  }
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    if (!mp_op_first_read(op, k)) continue;
    const mp_tensor *t = mp_graph_tensor(g, (size_t)op->inputs[k]);
    any_input = true;
    if (constant[op->inputs[k]] && t->n_consumers == 1 &&
        !mp_size_add(freed, t->bytes, &freed)) {
      return false;
    }
  }
  /* The bundle needs the folded bytes: only an op whose every output's
   * whole value inference knows can become a weight (before, a constant
   * subgraph with unknown values folded, and compile filled the weight
   * with pseudo-random bytes: wrong outputs on ONNX models). */
  if (!any_input || !valued) return false;
  return out_bytes <= freed || out_bytes <= FOLD_TINY;
}

mp_status pass_fold(pass_ctx *c, mp_error *err) {
  const mp_graph *g = c->g;
  const mp_alloc *a = mp_graph_alloc(g);
  size_t n_t = mp_graph_tensor_count(g), n = mp_graph_op_count(g);
  uint32_t *order = NULL;
  mp_order_kind used;
  bool *constant = mp_calloc(a, n_t + 1, sizeof *constant);
  if (!constant) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(g));
  }
  mp_status st = mp_schedule(g, MP_ORDER_TOPO, &order, &used, err);
  for (size_t t = 0; t < n_t; t++) {
    constant[t] = mp_graph_tensor(g, t)->kind == MP_TENSOR_WEIGHT;
  }
  for (size_t s = 0; st == MP_OK && s < n; s++) {
    uint32_t o = order[s];
    const mp_op *op = mp_graph_op(g, o);
    if (fold_denied(op->type) || fold_keeps_output(g, op) ||
        !fold_ok(g, op, constant)) {
      continue;
    }
    rw_kill(c->rw, o);
    for (uint32_t k = 0; k < op->n_outputs; k++) {
      rw_fold(c->rw, op->outputs[k]);
      constant[op->outputs[k]] = true;
    }
    pass_tally(c, op->type);
  }
  mp_free(a, order);
  mp_free(a, constant);
  return st;
}
