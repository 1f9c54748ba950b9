/*
 * ops_train.c -- the optimizers of ai.onnx.preview.training (Adagrad,
 * Momentum, Adam; bundle.h OPTIM): check and run, over the kernel of
 * k_train.c. BatchNormalization's training mode is with its inference
 * form in ops.c. And the random ops (bundle.h RANDOM: RandomUniform,
 * RandomNormal, their Like forms, Bernoulli, Multinomial) over
 * k_random.c, whose stream Dropout in training mode shares
 * (ops_index.c).
 *
 * Invariants:
 *   1. R is one f32 and T one int64, read when the op runs; every X, G,
 *      state and output is f32, and a tensor's gradient, states and
 *      outputs have its shape.
 *   2. Every output is written out of place: it shares no input's bytes
 *      (the planner has no rule that writes them in place).
 */
#include <math.h>

#include "op_ctx.h"

typedef struct tr_params {
  mp_koptim k;
  uint32_t n, states;
} tr_params;

static bool tr_read(op_ctx *c, tr_params *p) {
  op_rd r = op_reader(c);
  memset(p, 0, sizeof *p);
  p->k.kind = (int)rd_range(&r, MP_KOPT_ADAGRAD, MP_KOPT_ADAM);
  p->n = (uint32_t)rd_range(&r, 1, 1 << 20);
  p->k.alpha = rd_f(&r);
  p->k.beta = rd_f(&r);
  p->k.epsilon = rd_f(&r);
  p->k.norm = rd_f(&r);
  p->k.norm_post = rd_f(&r);
  p->k.decay = rd_f(&r);
  if (r.bad || r.at != r.n) return op_fail(c, "bad parameters");
  p->states = p->k.kind == MP_KOPT_ADAM ? 2 : 1;
  return true;
}

static bool tr_check(op_ctx *c) {
  tr_params p;
  if (!tr_read(c, &p)) return false;
  const mp_bopr *o = c->op;
  if (o->n_in != 2 + p.n * (2 + p.states) || o->n_out != p.n * (1 + p.states)) {
    return op_fail(c, "takes R, T and %u groups of %u tensors for %u groups",
                   2 + p.states, p.n, 1 + p.states);
  }
  const mp_btensor *rr = op_in(c, 0), *t = op_in(c, 1);
  if (!rr || rr->dtype != MP_KD_F32 || op_count(rr) != 1) {
    return op_fail(c, "R must be one f32");
  }
  if (!t || t->dtype != MP_KD_I64 || op_count(t) != 1) {
    return op_fail(c, "T must be one int64");
  }
  for (uint32_t i = 0; i < p.n; i++) {
    const mp_btensor *x = op_in(c, 2 + i);
    if (!x || x->dtype != MP_KD_F32) {
      return op_fail(c, "X %u must be an f32 tensor", i);
    }
    for (uint32_t g = 1; g < 2 + p.states; g++) {
      const mp_btensor *v = op_in(c, 2 + g * p.n + i);
      if (!v || v->dtype != MP_KD_F32 || !op_same_shape(&v->shape, &x->shape)) {
        return op_fail(c, "input %u must be f32 of X %u's shape",
                       2 + g * p.n + i, i);
      }
    }
    for (uint32_t g = 0; g < 1 + p.states; g++) {
      const mp_btensor *y = op_out(c, g * p.n + i);
      if (y->dtype != MP_KD_F32) {
        return op_fail(c, "output '%s' must be f32", y->name);
      }
      if (!op_out_of_place(c, y, &x->shape)) return false;
    }
  }
  return true;
}

static bool tr_run(op_ctx *c) {
  tr_params p;
  if (!tr_read(c, &p)) return false;
  p.k.r = *(const float *)op_pin(c, 0);
  p.k.t = *(const int64_t *)op_pin(c, 1);
  for (uint32_t i = 0; i < p.n; i++) {
    uint32_t s = 2 + 2 * p.n + i; /* the first state */
    bool two = p.states == 2;
    mp_k_optim_f32(&p.k, op_count(op_in(c, 2 + i)), op_pin(c, 2 + i),
                   op_pin(c, 2 + p.n + i), op_pin(c, s),
                   two ? op_pin(c, s + p.n) : NULL, op_pout(c, i),
                   op_pout(c, p.n + i), two ? op_pout(c, 2 * p.n + i) : NULL);
  }
  return true;
}

/* ---- the random ops ------------------------------------------------------ */

bool op_random_key(op_ctx *c, op_rd *r, uint64_t *key) {
  bool has_seed = rd_range(r, 0, 1) == 1;
  double seed = rd_f(r);
  if (r->bad || (has_seed && !isfinite(seed))) {
    return op_fail(c, "bad parameters");
  }
  *key = mp_k_rand_key(has_seed, seed, c->op->name, c->visit);
  return true;
}

static bool rn_read(op_ctx *c, mp_krandom *k) {
  op_rd r = op_reader(c);
  memset(k, 0, sizeof *k);
  k->kind = (int)rd_range(&r, MP_KRAND_UNIFORM, MP_KRAND_MULTINOMIAL);
  if (k->kind == MP_KRAND_DROPOUT) r.bad = true; /* the DROPOUT op's */
  if (!op_random_key(c, &r, &k->key)) return false;
  k->a = rd_f(&r);
  k->b = rd_f(&r);
  if (r.bad || r.at != r.n || !isfinite(k->a) || !isfinite(k->b)) {
    return op_fail(c, "bad parameters");
  }
  return true;
}

/* Multinomial: x [batch, classes] float, y [batch, samples] int32 or
 * int64, out of place. */
static bool rn_check_multinomial(op_ctx *c) {
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  if (!x || c->op->n_in != 1 || c->op->n_out != 1) {
    return op_fail(c, "bad arity");
  }
  if (!mp_kd_is_float(x->dtype) || x->shape.rank != 2) {
    return op_fail(c, "the log-probabilities must be a float matrix");
  }
  if ((y->dtype != MP_KD_I32 && y->dtype != MP_KD_I64) || y->shape.rank != 2) {
    return op_fail(c, "output '%s' must be an int32 or int64 matrix", y->name);
  }
  mp_kshape want = y->shape;
  want.dims[0] = x->shape.dims[0];
  c->need_ws += (size_t)x->shape.dims[1] * sizeof(double); /* running sums */
  return op_out_of_place(c, y, &want);
}

/* RANDOM: no input (the shape is the output's), or one whose shape the
 * output has: the Like forms' template, Bernoulli's probabilities (a
 * float tensor, read element by element, so the output may be it); or
 * Multinomial's rows. */
static bool rn_check(op_ctx *c) {
  mp_krandom k;
  if (!rn_read(c, &k)) return false;
  if (k.kind == MP_KRAND_MULTINOMIAL) return rn_check_multinomial(c);
  const mp_bopr *o = c->op;
  bool bern = k.kind == MP_KRAND_BERNOULLI;
  if (o->n_out != 1 || o->n_in > 1 || (bern && o->n_in != 1)) {
    return op_fail(c, "bad arity");
  }
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  if (!bern && !mp_kd_is_float(y->dtype)) {
    return op_fail(c, "output '%s' must be a float tensor", y->name);
  }
  if (bern && (!x || !mp_kd_is_float(x->dtype))) {
    return op_fail(c, "the probabilities must be a float tensor");
  }
  if (!x) return true;
  /* element i is read before element i is written: in place is safe
   * at the same offset with the same element size */
  if (op_aliases(x, y) && (x->offset != y->offset ||
                           mp_kd_size(x->dtype) != mp_kd_size(y->dtype))) {
    return op_fail(c, "output '%s' overlaps input '%s'", y->name, x->name);
  }
  return op_expect_shape(c, y, &x->shape);
}

static bool rn_run(op_ctx *c) {
  mp_krandom k;
  if (!rn_read(c, &k)) return false;
  const mp_btensor *x = op_in(c, 0), *y = op_out(c, 0);
  if (k.kind == MP_KRAND_MULTINOMIAL) {
    mp_k_multinomial(k.key, x->shape.dims[0], x->shape.dims[1],
                     y->shape.dims[1], op_pin(c, 0), x->dtype, op_pout(c, 0),
                     y->dtype, (double *)(void *)c->ws);
    return true;
  }
  mp_k_random(&k, op_count(y), op_pin(c, 0), x ? x->dtype : 0, op_pout(c, 0),
              y->dtype, NULL);
  return true;
}

bool op_random_dispatch(op_ctx *c, bool run, bool *handled) {
  *handled = c->op->kernel == MP_BOP_RANDOM;
  if (!*handled) return false;
  return run ? rn_run(c) : rn_check(c);
}

bool op_train_dispatch(op_ctx *c, bool run, bool *handled) {
  *handled = c->op->kernel == MP_BOP_OPTIM;
  if (!*handled) return false;
  return run ? tr_run(c) : tr_check(c);
}
