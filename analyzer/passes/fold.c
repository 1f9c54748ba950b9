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
 *   4. Constant subgraphs too large for inference to know their values
 *      (more than MP_VALUE_MAX elements: an LSTM's gate matrices sliced
 *      and concatenated into ONNX's gate order, a transposed weight) fold
 *      as a whole: after the op-by-op rule, the ops left whose every
 *      input is constant or made by another such op form groups (joined
 *      through the tensors they share, constants included), and a group
 *      folds when the weights it makes (its outputs read by other ops)
 *      are no larger than the constants only it reads, which die with
 *      it: the resident tier does not grow (invariant 1), and the
 *      activations the group made are gone. Its ops go into the graph of
 *      mp_pass_report_constants, which compile runs with mplan's own
 *      runtime to get the folded weights' bytes, so they are the bytes
 *      the unfolded graph would have computed. A constant a group reads
 *      that an op outside it reads too must have a known value (its
 *      bytes then do not depend on which op reads it first: pseudo-random
 *      weights of graph JSON take their scale from their first reader).
 *   5. A DequantizeLinear of 8 or fewer bits stays an op even when its
 *      values are known and its output tiny: the absorb pass gives its
 *      reader the integers (and a 4-bit weight stays packed). One of
 *      int32, a bias as ONNX Runtime's quantizer writes it, folds by its
 *      values (shape inference computes them with the runtime's own
 *      arithmetic), the same size in f32.
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
  if (strcmp(op->type, "DequantizeLinear") == 0 &&
      mp_dtype_size(mp_graph_tensor(g, (size_t)op->inputs[0])->dtype) < 4) {
    return false; /* invariant 5: absorb's, however small */
  }
  return out_bytes <= freed || out_bytes <= FOLD_TINY;
}

/* ---- invariant 4: constant groups -------------------------------------- */

typedef struct fold_groups {
  pass_ctx *c;
  const mp_graph *g;
  const mp_alloc *a;
  const bool *killed;   /* per op: folded one by one (invariant 1) */
  const bool *constant; /* per tensor: a weight, or folded one by one */
  bool *cand;           /* per op: every input constant or a cand's */
  uint32_t *up;         /* per op: union-find parent */
  int32_t *reader;      /* per tensor: the first cand op reading it */
  int32_t *map;         /* per tensor: its index in the constants graph */
} fold_groups;

static uint32_t fg_find(uint32_t *up, uint32_t o) {
  while (up[o] != o) o = up[o] = up[up[o]];
  return o;
}

static void fg_union(uint32_t *up, uint32_t a, uint32_t b) {
  a = fg_find(up, a);
  b = fg_find(up, b);
  if (a != b) up[a < b ? b : a] = a < b ? a : b;
}

/* True when t, read by a cand op, has a reader outside group r that still
 * runs (not folded one by one). */
static bool fg_read_outside(const fold_groups *z, int32_t t, uint32_t r) {
  const mp_tensor *x = mp_graph_tensor(z->g, (size_t)t);
  for (uint32_t k = 0; k < x->n_consumers; k++) {
    uint32_t q = x->consumers[k];
    if (z->killed[q]) continue;
    if (!z->cand[q] || fg_find(z->up, q) != r) return true;
  }
  return false;
}

/* Invariant 4 for every group at once, in one pass over the cand ops
 * (indexed by the group's root): made and freed bytes, bad when a shared
 * constant's value is unknown (or a sum overflows), run when some tensor
 * the group makes has no known value (compile must run it). */
static void fg_judge(const fold_groups *z, size_t *made, size_t *freed,
                     bool *bad, bool *run) {
  const mp_graph *g = z->g;
  for (size_t o = 0; o < mp_graph_op_count(g); o++) {
    if (!z->cand[o]) continue;
    uint32_t r = fg_find(z->up, (uint32_t)o);
    const mp_op *op = mp_graph_op(g, o);
    for (uint32_t k = 0; k < op->n_outputs; k++) {
      int32_t t = op->outputs[k];
      const mp_tensor *x = mp_graph_tensor(g, (size_t)t);
      if (!x->value || x->value->n * mp_dtype_size(x->dtype) != x->bytes) {
        run[r] = true;
      }
      if (fg_read_outside(z, t, r) &&
          !mp_size_add(made[r], x->bytes, &made[r])) {
        bad[r] = true;
      }
    }
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      int32_t t = op->inputs[k];
      if (!mp_op_first_read(op, k) || !z->constant[t] ||
          z->reader[t] != (int32_t)o) {
        continue; /* counted once, at its first reader in the group */
      }
      const mp_tensor *x = mp_graph_tensor(g, (size_t)t);
      if (!fg_read_outside(z, t, r)) {
        bad[r] = bad[r] || !mp_size_add(freed[r], x->bytes, &freed[r]);
      } else if (!x->value) {
        bad[r] = true; /* its bytes could depend on its reader */
      }
    }
  }
}

/* Tensor t of g in the constants graph (added on first use). */
static mp_status fg_tensor(fold_groups *z, mp_graph *ig, int32_t t, bool made,
                           mp_error *err) {
  if (t < 0 || z->map[t] >= 0) return MP_OK;
  const mp_tensor *x = mp_graph_tensor(z->g, (size_t)t);
  mp_tensor_desc d = {.name = x->name,
                      .dtype = x->dtype,
                      .kind = made ? MP_TENSOR_ACTIVATION : MP_TENSOR_WEIGHT,
                      .rank = x->rank,
                      .layout = x->layout};
  for (uint32_t i = 0; i < x->rank; i++) {
    d.shape[i] = (mp_dim){mp_graph_dim_of(z->g, &x->shape[i]), MP_NO_SYM};
  }
  mp_status st = mp_graph_add_tensor(ig, &d, &z->map[t], err);
  if (st == MP_OK && x->value) {
    st = mp_graph_set_value(ig, z->map[t], x->value->i, x->value->f,
                            x->value->n, err);
  }
  if (st == MP_OK && made) st = mp_graph_mark_output(ig, z->map[t], err);
  return st;
}

/* Op o of g into the constants graph. */
static mp_status fg_op(fold_groups *z, mp_graph *ig, uint32_t o,
                       mp_error *err) {
  const mp_op *op = mp_graph_op(z->g, o);
  int32_t *in = mp_calloc(z->a, op->n_inputs + 1, sizeof *in);
  int32_t *out = mp_calloc(z->a, op->n_outputs + 1, sizeof *out);
  mp_status st = in && out
                     ? MP_OK
                     : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                                    mp_graph_source(z->g));
  for (uint32_t k = 0; st == MP_OK && k < op->n_inputs; k++) {
    st = fg_tensor(z, ig, op->inputs[k], false, err);
    in[k] = op->inputs[k] < 0 ? -1 : z->map[op->inputs[k]];
  }
  for (uint32_t k = 0; st == MP_OK && k < op->n_outputs; k++) {
    st = fg_tensor(z, ig, op->outputs[k], true, err);
    out[k] = z->map[op->outputs[k]];
  }
  mp_op_desc d = {op->name,    op->type, op->n_inputs, op->n_outputs,
                  op->n_attrs, in,       out,          op->attrs};
  if (st == MP_OK) st = mp_graph_add_op(ig, &d, NULL, err);
  mp_free(z->a, in);
  mp_free(z->a, out);
  return st;
}

/* The groups of invariant 4, over ops in topological order. */
static mp_status fold_groups_run(fold_groups *z, const uint32_t *order,
                                 mp_error *err) {
  const mp_graph *g = z->g;
  size_t n = mp_graph_op_count(g), n_t = mp_graph_tensor_count(g);
  bool *made = mp_calloc(z->a, n_t + 1, sizeof *made);
  size_t *mb = mp_calloc(z->a, n + 1, sizeof *mb); /* per root: made */
  size_t *fb = mp_calloc(z->a, n + 1, sizeof *fb); /* per root: freed */
  bool *bad = mp_calloc(z->a, n + 1, sizeof *bad);
  bool *run = mp_calloc(z->a, n + 1, sizeof *run);
  mp_status st = made && mb && fb && bad && run
                     ? MP_OK
                     : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                                    mp_graph_source(g));
  for (size_t t = 0; st == MP_OK && t < n_t; t++) {
    z->reader[t] = z->map[t] = -1;
  }
  for (size_t s = 0; st == MP_OK && s < n; s++) {
    uint32_t o = order[s];
    const mp_op *op = mp_graph_op(g, o);
    z->up[o] = o;
    bool ok = !z->killed[o] && !fold_denied(op->type) &&
              !fold_keeps_output(g, op) && op->n_outputs > 0;
    bool any = false;
    for (uint32_t k = 0; ok && k < op->n_inputs; k++) {
      int32_t t = op->inputs[k];
      if (t < 0) continue;
      any = true;
      ok = z->constant[t] || made[t];
    }
    if (!ok || !any) continue;
    z->cand[o] = true;
    for (uint32_t k = 0; k < op->n_outputs; k++) made[op->outputs[k]] = true;
  }
  for (size_t s = 0; st == MP_OK && s < n; s++) {
    uint32_t o = order[s];
    const mp_op *op = mp_graph_op(g, o);
    if (!z->cand[o]) continue;
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      int32_t t = op->inputs[k];
      if (t < 0) continue;
      int32_t p = mp_graph_tensor(g, (size_t)t)->producer;
      if (made[t] && p >= 0) fg_union(z->up, o, (uint32_t)p);
      if (z->reader[t] < 0) {
        z->reader[t] = (int32_t)o;
      } else {
        fg_union(z->up, o, (uint32_t)z->reader[t]);
      }
    }
  }
  if (st == MP_OK) fg_judge(z, mb, fb, bad, run);
  mp_graph **ig = pass_constants(z->c);
  for (size_t s = 0; st == MP_OK && s < n; s++) {
    uint32_t o = order[s];
    const mp_op *op = mp_graph_op(g, o);
    if (!z->cand[o]) continue;
    uint32_t r = fg_find(z->up, o);
    if (bad[r] || (mb[r] > fb[r] && mb[r] > FOLD_TINY)) continue;
    if (run[r] && !*ig) {
      st = mp_graph_create(z->a, mp_graph_source(g), "constants", ig, err);
      if (st == MP_OK) mp_graph_set_opset(*ig, mp_graph_opset(g));
    }
    if (st == MP_OK && run[r]) st = fg_op(z, *ig, o, err);
    rw_kill(z->c->rw, o);
    for (uint32_t k = 0; k < op->n_outputs; k++) {
      rw_fold(z->c->rw, op->outputs[k]);
    }
    pass_tally(z->c, op->type);
    if (run[r]) z->c->folded_large++;
  }
  if (st == MP_OK && *ig) st = mp_graph_link(*ig, err);
  if (st == MP_OK && *ig) st = mp_graph_resolve(*ig, err);
  mp_free(z->a, made);
  mp_free(z->a, mb);
  mp_free(z->a, fb);
  mp_free(z->a, bad);
  mp_free(z->a, run);
  return st;
}

mp_status pass_fold(pass_ctx *c, mp_error *err) {
  const mp_graph *g = c->g;
  const mp_alloc *a = mp_graph_alloc(g);
  size_t n_t = mp_graph_tensor_count(g), n = mp_graph_op_count(g);
  uint32_t *order = NULL;
  mp_order_kind used;
  bool *constant = mp_calloc(a, n_t + 1, sizeof *constant);
  fold_groups z = {.c = c, .g = g, .a = a, .constant = constant};
  bool *killed = mp_calloc(a, n + 1, sizeof *killed);
  z.killed = killed;
  z.cand = mp_calloc(a, n + 1, sizeof *z.cand);
  z.up = mp_calloc(a, n + 1, sizeof *z.up);
  z.reader = mp_calloc(a, n_t + 1, sizeof *z.reader);
  z.map = mp_calloc(a, n_t + 1, sizeof *z.map);
  mp_status st = constant && killed && z.cand && z.up && z.reader && z.map
                     ? mp_schedule(g, MP_ORDER_TOPO, &order, &used, err)
                     : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                                    mp_graph_source(g));
  for (size_t t = 0; st == MP_OK && t < n_t; t++) {
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
    killed[o] = true;
    for (uint32_t k = 0; k < op->n_outputs; k++) {
      rw_fold(c->rw, op->outputs[k]);
      constant[op->outputs[k]] = true;
    }
    pass_tally(c, op->type);
  }
  if (st == MP_OK) st = fold_groups_run(&z, order, err);
  if (st == MP_OK && c->folded_large) {
    mp_buf_printf(&c->note,
                  "%zu op%s of constant subgraphs too large to evaluate "
                  "here: compile runs them",
                  c->folded_large, c->folded_large == 1 ? "" : "s");
  }
  mp_free(a, order);
  mp_free(a, constant);
  mp_free(a, killed);
  mp_free(a, z.cand);
  mp_free(a, z.up);
  mp_free(a, z.reader);
  mp_free(a, z.map);
  return st;
}
