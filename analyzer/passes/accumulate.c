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
 * = 1 .. n-1 in input order with the binary Add kernel in y's dtype.
 * Float: the chain is the same operations in the same order, so outputs
 * are bit for bit the same (rounding included). Integers: every integer
 * Add of the runtime wraps (modulo 2^bits, kernels/README.md), and
 * addition modulo 2^bits is associative and commutative, so any order of
 * the inputs gives the same bits; the chain then adds the inputs in the
 * order the measured order produces them (graph inputs and weights
 * first, ties in input order), so each Add can run as soon as its input
 * exists instead of waiting for the inputs listed before it.
 *
 * A Sum qualifies when it has one output, no attributes (no fused
 * activation, no mplan.*), and every input has the output's dtype, dims
 * and layout (no broadcasting, so every partial sum has the output's
 * shape).
 *
 * Invariants:
 *   1. A float chain keeps the Sum's input order; an integer chain adds
 *      in production order (exactness above).
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

/* Wrapping integer dtypes, whose Adds may be reordered (exactness). */
static bool ac_wraps(mp_dtype d) {
  switch (d) {
    case MP_DTYPE_I8:
    case MP_DTYPE_U8:
    case MP_DTYPE_I16:
    case MP_DTYPE_U16:
    case MP_DTYPE_I32:
    case MP_DTYPE_U32:
    case MP_DTYPE_I64:
    case MP_DTYPE_U64:
      return true;
    default:
      return false;
  }
}

/* The order the chain adds op's inputs in: input order, or for an integer
 * Sum the order they are produced (made: per tensor, 0 for a graph input
 * or weight, else 1 + its producer's step; stable: ties keep input
 * order). */
static void ac_chain_order(const pass_ctx *c, const uint32_t *made,
                           const mp_op *op, int32_t *in) {
  for (uint32_t k = 0; k < op->n_inputs; k++) in[k] = op->inputs[k];
  if (!ac_wraps(mp_graph_tensor(c->g, op->outputs[0])->dtype)) return;
  for (uint32_t k = 1; k < op->n_inputs; k++) {
    int32_t t = in[k];
    uint32_t j = k;
    for (; j > 0 && made[in[j - 1]] > made[t]; j--) in[j] = in[j - 1];
    in[j] = t;
  }
}

static mp_status ac_rewrite(pass_ctx *c, const uint32_t *made, uint32_t o,
                            mp_error *err) {
  const mp_op *op = mp_graph_op(c->g, o);
  int32_t *ins = rw_alloc(c->rw, op->n_inputs, sizeof *ins, err);
  if (!ins) return MP_ERR_NOMEM;
  ac_chain_order(c, made, op, ins);
  if (memcmp(ins, op->inputs, op->n_inputs * sizeof *ins) != 0) {
    c->reordered++;
  }
  int32_t acc = ins[0];
  mp_status st = MP_OK;
  char suffix[32];
  for (uint32_t k = 1; st == MP_OK && k < op->n_inputs; k++) {
    int32_t out = op->outputs[0];
    if (k + 1 < op->n_inputs) {
      snprintf(suffix, sizeof suffix, ".acc%u", k);
      st = rw_new_tensor(c->rw, op->outputs[0], suffix, &out, err);
    }
    snprintf(suffix, sizeof suffix, ".add%u", k);
    int32_t in[2] = {acc, ins[k]};
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
  size_t adds = 0, n = mp_graph_op_count(c->g);
  size_t n_t = mp_graph_tensor_count(c->g);
  const uint32_t *made = c->made;
  mp_status st = MP_OK;
  if (!made) {
    uint32_t *m = rw_alloc(c->rw, n_t + 1, sizeof *m, err);
    st = m ? MP_OK : MP_ERR_NOMEM;
    for (size_t k = 0; st == MP_OK && k < n; k++) {
      const mp_op *op = mp_graph_op(c->g, c->order[k]);
      for (uint32_t j = 0; j < op->n_outputs; j++) {
        if (op->outputs[j] >= 0) m[op->outputs[j]] = (uint32_t)k + 1;
      }
    }
    made = m;
  }
  for (size_t o = 0; st == MP_OK && o < n; o++) {
    const mp_op *op = mp_graph_op(c->g, o);
    if (!ac_qualifies(c, op)) continue;
    st = ac_rewrite(c, made, (uint32_t)o, err);
    adds += op->n_inputs - 1;
  }
  if (st == MP_OK && adds) {
    mp_buf_printf(&c->note, "%zu Adds", adds);
    if (c->reordered) {
      mp_buf_printf(&c->note, ", %zu integer Sum%s in production order",
                    c->reordered, c->reordered == 1 ? "" : "s");
    }
  }
  return st;
}
