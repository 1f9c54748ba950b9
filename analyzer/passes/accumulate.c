/*
 * accumulate.c -- the accumulate pass, an identity graph rewrite in the
 * spirit of SERENITY (MLSys 2020, section 3.3): a Sum of n >= 2 inputs
 * becomes a chain of n - 1 binary Adds, t1 = x0 + x1, t2 = t1 + x2, ...,
 * the last writing the Sum's output (n = 2: one Add, which fusion can
 * absorb into the Conv before it and inplace can write over either
 * input, where a Sum has no epilogue form and runs in place only over
 * x0).
 *
 * Why: a Sum runs only when all n inputs exist, so all of them are live
 * together, and each input of a RandWire node stays live until the
 * latest of its siblings is computed. In the chain, an Add can run as
 * soon as its input exists; the inplace pass then lets every Add after
 * the first write over the running sum, and --order memory decides when
 * each Add runs. Placed where the Sum was (every new op takes the Sum's
 * key), the chain gives the file order the same peak or a lower one.
 *
 * Exactness: the runtime computes a Sum as y = x0, then y = y + xk for k
 * = 1 .. n-1 in input order with the binary Add kernel in y's dtype; the
 * chain is the same operations in the same order on the same dtypes, so
 * outputs are bit for bit the same (integer saturation and float
 * rounding included).
 *
 * A Sum qualifies when it has one output, no attributes (no fused
 * activation, no mplan.*), and every input has the output's dtype, dims
 * and layout (no broadcasting, so every partial sum has the output's
 * shape).
 *
 * Invariants:
 *   1. The chain keeps the Sum's input order (exactness above).
 *   2. The Sum's output keeps its name and kind (a graph output stays
 *      one); the partial sums are new intermediate activations named
 *      after it (".acc1", ...), ops after the Sum (".add1", ...).
 *   3. The manager keeps the rewrite only if the graph's lower bound does
 *      not rise under the order being planned (the pass is guarded):
 *      with a search budget the memory order can miss on the larger
 *      graph what it found on the smaller one.
 */
#include <stdio.h>
#include <string.h>

#include "pass.h"

static bool ac_qualifies(const pass_ctx *c, const mp_op *op) {
  if (strcmp(op->type, "Sum") != 0 || op->n_inputs < 2 || op->n_outputs != 1 ||
      op->n_attrs != 0) {
    return false;
  }
  int32_t y = op->outputs[0];
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    int32_t x = op->inputs[k];
    if (x < 0 || !pass_same_type(c->g, x, y) || !pass_same_layout(c->g, x, y))
      return false;
  }
  return true;
}

static mp_status ac_rewrite(pass_ctx *c, uint32_t o, mp_error *err) {
  const mp_op *op = mp_graph_op(c->g, o);
  int32_t acc = op->inputs[0];
  mp_status st = MP_OK;
  char suffix[32];
  for (uint32_t k = 1; st == MP_OK && k < op->n_inputs; k++) {
    int32_t out = op->outputs[0];
    if (k + 1 < op->n_inputs) {
      snprintf(suffix, sizeof suffix, ".acc%u", k);
      st = rw_new_tensor(c->rw, op->outputs[0], suffix, &out, err);
    }
    snprintf(suffix, sizeof suffix, ".add%u", k);
    int32_t in[2] = {acc, op->inputs[k]};
    if (st == MP_OK) {
      st = rw_new_op(c->rw, o, op->name, suffix, "Add", in, 2, &out, 1, err);
    }
    acc = out;
  }
  if (st == MP_OK) {
    rw_kill(c->rw, o);
    pass_tally(c, "Sum");
  }
  return st;
}

mp_status pass_accumulate(pass_ctx *c, mp_error *err) {
  size_t adds = 0;
  mp_status st = MP_OK;
  for (size_t o = 0; st == MP_OK && o < mp_graph_op_count(c->g); o++) {
    const mp_op *op = mp_graph_op(c->g, o);
    if (!ac_qualifies(c, op)) continue;
    st = ac_rewrite(c, (uint32_t)o, err);
    adds += op->n_inputs - 1;
  }
  if (st == MP_OK && adds) mp_buf_printf(&c->note, "%zu Adds", adds);
  return st;
}
