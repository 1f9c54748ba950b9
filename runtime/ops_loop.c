/*
 * ops_loop.c -- ONNX Loop and Scan: the enter op (LOOP_ENTER), the check
 * of the LOOP op, and what it does at the end of each iteration
 * (mp_rt_loop_end). The executor (exec.c) runs the body's ops again.
 *
 * The ONNX importer flattens a body between its enter op and the node
 * (analyzer/import_onnx.c): the enter op writes the body's inputs, the
 * body's ops run once in the order of the plan, and the node reads every
 * body tensor, so that the plan keeps all of them (and every tensor the
 * body captures) from one iteration to the next. The node writes its
 * scan outputs, slice by slice, at its own step only, where every body
 * tensor is live: no body op of a later iteration can share their bytes,
 * and the ops of the enclosing graph placed between the enter op and the
 * node (which may) run in the first iteration only.
 *
 * Invariants:
 *   1. Every byte moved is inside the tensors the load checked: carried
 *      values, states and their outputs have one dtype and shape, a scan
 *      slice is the whole tensor less its axis, and an iteration beyond a
 *      scan output's planned count fails before it writes.
 *   2. A Loop whose trip count is 0 or whose first condition is false
 *      runs no iteration: the body ran once in the flattened order, but
 *      its values are dropped and the outputs are the initial values.
 *   3. A run of another number of iterations than a scan output holds,
 *      or of more than MP_RT_LOOP_MAX, fails in one line.
 */
#include "op_ctx.h"

#ifdef MPLAN_RVV
#include "mplan/kernels_rvv.h"
#define LP_MEMMOVE mp_kv_memmove
#else
#define LP_MEMMOVE memmove
#endif

enum { LP_LOOP = 0, LP_SCAN = 1 };

/* The parts of a LOOP op's inputs and outputs (bundle.h). */
typedef struct lp_shape {
  int kind;
  size_t enter;
  uint32_t n_orig, n_body, n_carried, n_scan_out, n_scan_in;
  const mp_bopr *e; /* the enter op */
} lp_shape;

static bool lp_same(const mp_btensor *a, const mp_btensor *b) {
  return a && b && a->dtype == b->dtype && op_same_shape(&a->shape, &b->shape);
}

/* A tensor of one element of dtype dt. */
static bool lp_scalar(const mp_btensor *t, int dt) {
  return t && t->dtype == dt && op_count(t) == 1;
}

/* whole's shape with `len` at axis removed equals part's. */
static bool lp_slice_of(const mp_btensor *whole, const mp_btensor *part,
                        int64_t axis) {
  if (!whole || !part || whole->dtype != part->dtype ||
      whole->shape.rank != part->shape.rank + 1 || axis < 0 ||
      axis > (int64_t)part->shape.rank) {
    return false;
  }
  for (uint32_t i = 0, j = 0; i < whole->shape.rank; i++) {
    if ((int64_t)i != axis && whole->shape.dims[i] != part->shape.dims[j++]) {
      return false;
    }
  }
  return true;
}

/* Copies slice idx along axis between whole and part (to_whole: part into
 * whole). */
static void lp_slice(const mp_btensor *whole, unsigned char *pw, int64_t axis,
                     int64_t idx, unsigned char *pp, bool to_whole) {
  int64_t outer, len, inner;
  op_split3(&whole->shape, axis, false, &outer, &len, &inner);
  size_t row = (size_t)inner * mp_kd_size(whole->dtype);
  for (int64_t o = 0; o < outer; o++) {
    unsigned char *w = pw + ((size_t)(o * len + idx)) * row;
    unsigned char *p = pp + (size_t)o * row;
    if (to_whole) {
      LP_MEMMOVE(w, p, row);
    } else {
      LP_MEMMOVE(p, w, row);
    }
  }
}

/* ---- LOOP_ENTER ---------------------------------------------------------- */

/* A Scan enter op's scan input k: axis and direction (params 2 + k and
 * 2 + n + k). */
static int64_t lp_in_axis(const mp_bopr *e, uint32_t k) {
  return e->params[2 + k];
}
static bool lp_in_reverse(const mp_bopr *e, uint32_t k) {
  return e->params[2 + e->params[1] + k] != 0;
}

static bool lp_enter_check(op_ctx *c) {
  const mp_bopr *o = c->op;
  if (o->n_params < 1 || o->params[0] < LP_LOOP || o->params[0] > LP_SCAN) {
    return op_fail(c, "bad parameters");
  }
  if (o->params[0] == LP_LOOP) {
    if (o->n_params != 1 || o->n_in < 2 || o->n_out != o->n_in) {
      return op_fail(c, "bad arity");
    }
    if ((op_in(c, 0) && !lp_scalar(op_in(c, 0), MP_KD_I64)) ||
        (op_in(c, 1) && !lp_scalar(op_in(c, 1), MP_KD_BOOL)) ||
        !lp_scalar(op_out(c, 0), MP_KD_I64) ||
        !lp_scalar(op_out(c, 1), MP_KD_BOOL)) {
      return op_fail(c,
                     "the trip count and the iteration number must be one "
                     "int64, the conditions one bool");
    }
    for (uint32_t k = 2; k < o->n_in; k++) {
      if (!lp_same(op_in(c, k), op_out(c, k))) {
        return op_fail(c,
                       "carried value '%s' is not its input's type and shape",
                       op_out(c, k)->name);
      }
    }
    return true;
  }
  if (o->n_params < 2 || o->params[1] < 1 || o->params[1] > o->n_in ||
      o->n_params != 2 + 2 * (uint64_t)o->params[1] || o->n_out != o->n_in) {
    return op_fail(c, "bad arity or parameters");
  }
  uint32_t m = (uint32_t)o->params[1], states = o->n_in - m;
  int64_t len = -1;
  for (uint32_t k = 0; k < o->n_in; k++) {
    const mp_btensor *x = op_in(c, k), *y = op_out(c, k);
    if (k < states) {
      if (!lp_same(x, y)) {
        return op_fail(c, "state '%s' is not its input's type and shape",
                       y->name);
      }
      continue;
    }
    int64_t ax = lp_in_axis(o, k - states), rev = o->params[2 + m + k - states];
    if (!x || !lp_slice_of(x, y, ax) || (rev != 0 && rev != 1)) {
      return op_fail(c, "scan input slice '%s' is not its input less axis %lld",
                     y->name, (long long)ax);
    }
    if (len >= 0 && x->shape.dims[ax] != len) {
      return op_fail(c, "the scan inputs differ in length");
    }
    len = x->shape.dims[ax];
  }
  return true;
}

static bool lp_enter_run(op_ctx *c) {
  const mp_bopr *o = c->op;
  if (o->params[0] == LP_LOOP) {
    int64_t zero = 0;
    unsigned char cond = 1;
    if (op_pin(c, 1)) cond = *(unsigned char *)op_pin(c, 1) != 0;
    memcpy(op_pout(c, 0), &zero, sizeof zero);
    memcpy(op_pout(c, 1), &cond, 1);
    for (uint32_t k = 2; k < o->n_in; k++) {
      LP_MEMMOVE(op_pout(c, k), op_pin(c, k), (size_t)op_in(c, k)->bytes);
    }
    return true;
  }
  uint32_t m = (uint32_t)o->params[1], states = o->n_in - m;
  for (uint32_t k = 0; k < o->n_in; k++) {
    const mp_btensor *x = op_in(c, k);
    if (k < states) {
      LP_MEMMOVE(op_pout(c, k), op_pin(c, k), (size_t)x->bytes);
      continue;
    }
    int64_t ax = lp_in_axis(o, k - states);
    int64_t idx = lp_in_reverse(o, k - states) ? x->shape.dims[ax] - 1 : 0;
    lp_slice(x, op_pin(c, k), ax, idx, op_pout(c, k), false);
  }
  return true;
}

/* ---- LOOP ---------------------------------------------------------------- */

static bool lp_parts(const mp_bundle *b, const mp_bopr *o, size_t step,
                     lp_shape *s) {
  if (o->n_params < 6) return false;
  const int64_t *p = o->params;
  if (p[0] < LP_LOOP || p[0] > LP_SCAN || p[1] < 0 || p[1] >= (int64_t)step)
    return false;
  for (int i = 2; i < 6; i++) {
    if (p[i] < 0 || p[i] > o->n_in) return false;
  }
  s->kind = (int)p[0];
  s->enter = (size_t)p[1];
  s->n_orig = (uint32_t)p[2];
  s->n_body = (uint32_t)p[3];
  s->n_carried = (uint32_t)p[4];
  s->n_scan_out = (uint32_t)p[5];
  s->e = mp_bundle_op(b, s->enter);
  if (s->e->kernel != MP_BOP_LOOP_ENTER || s->e->params[0] != p[0]) {
    return false;
  }
  s->n_scan_in = s->kind == LP_SCAN ? (uint32_t)s->e->params[1] : 0;
  uint64_t want = 6 + (s->kind == LP_SCAN ? 2 * (uint64_t)s->n_scan_out : 0);
  return o->n_params == want &&
         (uint64_t)s->n_orig + s->n_body + s->e->n_out == o->n_in &&
         s->e->n_in == s->n_orig && o->n_out == s->n_carried + s->n_scan_out;
}

/* The LOOP's parts: body output k, enter output k. */
static const mp_btensor *lp_body(const op_ctx *c, const lp_shape *s,
                                 uint32_t k) {
  return op_in(c, s->n_orig + k);
}
static const mp_btensor *lp_entered(const op_ctx *c, const lp_shape *s,
                                    uint32_t k) {
  return op_in(c, s->n_orig + s->n_body + k);
}

/* The number of iterations the scan outputs hold (-1: no scan output),
 * or -2 when they disagree. */
static int64_t lp_planned(const op_ctx *c, const lp_shape *s) {
  int64_t n = -1;
  for (uint32_t k = 0; k < s->n_scan_out; k++) {
    const mp_btensor *y = op_out(c, s->n_carried + k);
    int64_t ax = s->kind == LP_SCAN ? c->op->params[6 + k] : 0;
    int64_t len =
        ax >= 0 && ax < (int64_t)y->shape.rank ? y->shape.dims[ax] : -2;
    if (n != -1 && len != n) return -2;
    n = len;
  }
  return n;
}

static bool lp_check(op_ctx *c) {
  const mp_bopr *o = c->op;
  lp_shape s;
  if (!lp_parts(c->b, o, c->step, &s)) {
    return op_fail(c, "bad parameters, arity or enter op");
  }
  for (uint32_t k = 0; k < s.n_orig; k++) {
    if (o->in[k] != s.e->in[k]) {
      return op_fail(c, "input %u is not its enter op's", k);
    }
  }
  for (uint32_t k = 0; k < s.e->n_out; k++) {
    if (o->in[s.n_orig + s.n_body + k] != s.e->out[k]) {
      return op_fail(c, "does not read its enter op's output %u", k);
    }
  }
  /* Loop: body outputs cond, carried, scans; Scan: states, scans. */
  uint32_t lead = s.kind == LP_LOOP ? 1 : 0;
  uint32_t entered0 = s.kind == LP_LOOP ? 2 : 0;
  if (s.n_body != lead + s.n_carried + s.n_scan_out ||
      s.e->n_out != entered0 + s.n_carried + s.n_scan_in) {
    return op_fail(c, "the body's outputs do not match the node's");
  }
  if (s.kind == LP_LOOP && !lp_scalar(lp_body(c, &s, 0), MP_KD_BOOL)) {
    return op_fail(c, "the body's condition must be one bool");
  }
  for (uint32_t k = 0; k < s.n_carried; k++) {
    const mp_btensor *v = lp_body(c, &s, lead + k);
    if (!lp_same(v, lp_entered(c, &s, entered0 + k)) ||
        !lp_same(v, op_out(c, k))) {
      return op_fail(c,
                     "carried value '%s' changes type or shape from one "
                     "iteration to the next",
                     op_out(c, k)->name);
    }
  }
  for (uint32_t k = 0; k < s.n_scan_out; k++) {
    const mp_btensor *v = lp_body(c, &s, lead + s.n_carried + k);
    const mp_btensor *y = op_out(c, s.n_carried + k);
    int64_t ax = s.kind == LP_SCAN ? o->params[6 + k] : 0;
    int64_t rev = s.kind == LP_SCAN ? o->params[6 + s.n_scan_out + k] : 0;
    if (!lp_slice_of(y, v, ax) || (rev != 0 && rev != 1)) {
      return op_fail(c, "scan output '%s' does not stack '%s' along axis %lld",
                     y->name, v ? v->name : "?", (long long)ax);
    }
  }
  int64_t planned = lp_planned(c, &s);
  if (planned == -2) return op_fail(c, "the scan outputs differ in length");
  if (s.kind == LP_SCAN && s.n_scan_out) {
    const mp_bopr *e = s.e;
    uint32_t states = e->n_in - s.n_scan_in;
    const mp_btensor *x = mp_bundle_tensor(c->b, e->in[states]);
    if (x->shape.dims[lp_in_axis(e, 0)] != planned) {
      return op_fail(c, "the scan outputs are not as long as the inputs");
    }
  }
  return true;
}

bool op_loop_dispatch(op_ctx *c, bool run, bool *handled) {
  *handled = true;
  /* Bytes move as they are: never through f32 copies (ops.c invariant 5),
   * which would let a dtype change through. */
  if (c->wide) return op_fail(c, "a dtype changes from input to output");
  switch (c->op->kernel) {
    case MP_BOP_LOOP_ENTER:
      return run ? lp_enter_run(c) : lp_enter_check(c);
    case MP_BOP_LOOP:
      /* The executor runs it (mp_rt_loop_end). */
      return run ? true : lp_check(c);
    default:
      *handled = false;
      return false;
  }
}

/* Scan output k (y) of LOOP o: the axis it stacks along (*ax) and the
 * index iteration iter writes along it (from the end when reversed). */
static int64_t lp_out_index(const mp_bopr *o, const lp_shape *s, uint32_t k,
                            const mp_btensor *y, int64_t iter, int64_t *ax) {
  *ax = s->kind == LP_SCAN ? o->params[6 + k] : 0;
  bool rev = s->kind == LP_SCAN && o->params[6 + s->n_scan_out + k];
  return rev ? y->shape.dims[*ax] - 1 - iter : iter;
}

size_t mp_rt_loop_enter(const mp_bundle *b, size_t step) {
  return (size_t)mp_bundle_op(b, step)->params[1];
}

bool mp_rt_loop_span(const mp_bundle *b, size_t step, uint32_t out,
                     int64_t iter, uint64_t *lo, uint64_t *hi) {
  const mp_bopr *o = mp_bundle_op(b, step);
  lp_shape s;
  lp_parts(b, o, step, &s); /* checked at load */
  if (out < s.n_carried || out >= s.n_carried + s.n_scan_out) return false;
  uint32_t k = out - s.n_carried;
  const mp_btensor *y = mp_bundle_tensor(b, o->out[out]);
  int64_t ax, idx = lp_out_index(o, &s, k, y, iter, &ax);
  int64_t outer, len, inner;
  op_split3(&y->shape, ax, false, &outer, &len, &inner);
  if (outer <= 0 || idx < 0 || idx >= len) return false;
  uint64_t row = (uint64_t)inner * mp_kd_size(y->dtype);
  /* lp_slice's rows: the first of the first block to the last's end */
  *lo = (uint64_t)idx * row;
  *hi = ((uint64_t)(outer - 1) * (uint64_t)len + (uint64_t)idx + 1) * row;
  return true;
}

bool mp_rt_loop_end(const mp_bundle *b, size_t step, unsigned char *const *ptr,
                    int64_t iter, bool *more, char *why, size_t cap) {
  op_ctx cx = {b, mp_bundle_op(b, step), step, why, cap, ptr, NULL, 0, NULL, 0};
  op_ctx *c = &cx;
  const mp_bopr *o = c->op;
  lp_shape s;
  lp_parts(b, o, step, &s); /* checked at load */
  int64_t planned = lp_planned(c, &s);
  uint32_t lead = s.kind == LP_LOOP ? 1 : 0;
  uint32_t entered0 = s.kind == LP_LOOP ? 2 : 0;
  *more = false;
  if (s.kind == LP_LOOP) {
    const int64_t *trip = op_pin(c, 0);
    const unsigned char *cond0 = op_pin(c, 1);
    if (iter == 0 && ((trip && *trip <= 0) || (cond0 && !*cond0))) {
      /* Invariant 2: no iteration. */
      if (planned >= 0) {
        return op_fail(c, "runs 0 iterations where the plan holds %lld",
                       (long long)planned);
      }
      for (uint32_t k = 0; k < s.n_carried; k++) {
        LP_MEMMOVE(op_pout(c, k), op_pin(c, 2 + k),
                   (size_t)op_out(c, k)->bytes);
      }
      return true;
    }
  }
  if (planned >= 0 && iter >= planned) {
    return op_fail(c, "runs more than the %lld iterations the plan holds",
                   (long long)planned);
  }
  for (uint32_t k = 0; k < s.n_scan_out; k++) {
    const mp_btensor *y = op_out(c, s.n_carried + k);
    int64_t ax, idx = lp_out_index(o, &s, k, y, iter, &ax);
    lp_slice(y, op_pout(c, s.n_carried + k), ax, idx,
             op_pin(c, s.n_orig + lead + s.n_carried + k), true);
  }
  bool next;
  if (s.kind == LP_LOOP) {
    const int64_t *trip = op_pin(c, 0);
    bool cond = *(const unsigned char *)op_pin(c, s.n_orig) != 0;
    next = (!trip || iter + 1 < *trip) && (!op_pin(c, 1) || cond);
    if (next) {
      int64_t i1 = iter + 1;
      unsigned char cv = cond;
      memcpy(op_pin(c, s.n_orig + s.n_body), &i1, sizeof i1);
      memcpy(op_pin(c, s.n_orig + s.n_body + 1), &cv, 1);
    }
  } else {
    const mp_bopr *e = s.e;
    const mp_btensor *x0 = mp_bundle_tensor(b, e->in[e->n_in - s.n_scan_in]);
    int64_t len = x0->shape.dims[lp_in_axis(e, 0)];
    next = iter + 1 < len;
    for (uint32_t k = 0; next && k < s.n_scan_in; k++) {
      uint32_t j = e->n_in - s.n_scan_in + k;
      const mp_btensor *x = mp_bundle_tensor(b, e->in[j]);
      int64_t ax = lp_in_axis(e, k);
      int64_t idx = lp_in_reverse(e, k) ? len - 2 - iter : iter + 1;
      lp_slice(x, ptr[e->in[j]], ax, idx, ptr[e->out[j]], false);
    }
  }
  if (next && iter + 1 >= MP_RT_LOOP_MAX) {
    return op_fail(c,
                   "runs more than %d iterations, the runtime's cap per Loop "
                   "(--max-ops N stops a run sooner)",
                   MP_RT_LOOP_MAX);
  }
  if (!next && planned >= 0 && iter + 1 != planned) {
    return op_fail(c,
                   "stops after %lld iterations where the plan holds %lld "
                   "(the runtime runs the planned shapes)",
                   (long long)(iter + 1), (long long)planned);
  }
  for (uint32_t k = 0; k < s.n_carried; k++) {
    const mp_btensor *v = lp_body(c, &s, lead + k);
    void *to =
        next ? op_pin(c, s.n_orig + s.n_body + entered0 + k) : op_pout(c, k);
    void *from = op_pin(c, s.n_orig + lead + k);
    if (to != from) LP_MEMMOVE(to, from, (size_t)v->bytes);
  }
  *more = next;
  return true;
}
