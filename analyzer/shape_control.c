/*
 * shape_control.c -- shape rules of control flow: If, Loop, Scan and the
 * enter ops (mplan.LoopEnter, mplan.ScanEnter) that the ONNX importer adds
 * when it flattens their bodies into the enclosing graph (import_onnx.c).
 *
 * The node's inputs are its own (attribute mplan.orig_inputs of them), then
 * its body outputs (mplan.body_outputs; then-branch before else-branch for
 * If), then captured tensors.
 *
 * Invariants:
 *   1. If: an output's shape is the taken branch's when the condition's
 *      value is known (--value, shape math), the common one when both
 *      branches agree, and otherwise the dim-wise maximum of the two: an
 *      upper bound, so that a plan is valid for either branch. An ONNX
 *      model whose If conditions are known is imported again with the
 *      taken branches only (attribute mplan.branch, model.c): then the If
 *      reads that branch's outputs alone.
 *   2. Loop: carried values keep the body's shapes; a scan output is the
 *      body's per-iteration value stacked M times, M being the trip count,
 *      which must be known (it is an upper bound when the condition may
 *      stop the loop earlier).
 *   3. Scan (opset >= 9): scan inputs are sliced along scan_input_axes;
 *      scan outputs stack the body's along scan_output_axes.
 */
#include <string.h>

#include "shape_rules.h"

static mp_status ct_counts(sh_ctx *c, uint32_t *orig, uint32_t *body) {
  int64_t o = sh_attr_i(c, "mplan.orig_inputs", -1);
  int64_t b = sh_attr_i(c, "mplan.body_outputs", -1);
  if (o < 0 || b < 0 || o + b > c->n_in) {
    return sh_fail(c, "not imported with its body (no mplan.orig_inputs)");
  }
  *orig = (uint32_t)o;
  *body = (uint32_t)b;
  return MP_OK;
}

mp_status sh_if(sh_ctx *c) {
  uint32_t orig = 0, body = 0;
  mp_status st = ct_counts(c, &orig, &body);
  if (st != MP_OK) return st;
  if (sh_attr_i(c, "mplan.branch", -1) >= 0) {
    /* Imported with its taken branch only (import_onnx.c). */
    if (body < c->n_out) {
      return sh_fail(c, "the branch gives %u outputs for %u", body, c->n_out);
    }
    for (uint32_t k = 0; k < c->n_out; k++) {
      const sh_fact *t = sh_in(c, orig + k);
      if (!t) return sh_fail(c, "branch output %u is missing", k);
      sh_set(c, k, t->dt, t->rank, t->d);
    }
    return MP_OK;
  }
  uint32_t half = body / 2;
  if (half * 2 != body || half < c->n_out) {
    return sh_fail(c, "the branches give %u outputs for %u", body, c->n_out);
  }
  size_t n;
  const int64_t *cond = sh_ints(c, 0, &n);
  for (uint32_t k = 0; k < c->n_out; k++) {
    const sh_fact *a = sh_in(c, orig + k), *b = sh_in(c, orig + half + k);
    if (!a || !b) return sh_fail(c, "branch output %u is missing", k);
    if (cond && n == 1) {
      const sh_fact *t = cond[0] ? a : b;
      sh_set(c, k, t->dt, t->rank, t->d);
      continue;
    }
    if (a->rank != b->rank || a->dt != b->dt) return MP_ERR_UNSUPPORTED;
    int64_t d[MP_MAX_RANK];
    for (uint32_t j = 0; j < a->rank; j++) {
      d[j] = a->d[j] > b->d[j] ? a->d[j] : b->d[j];
    }
    sh_set(c, k, a->dt, a->rank, d);
  }
  return MP_OK;
}

mp_status sh_loop_enter(sh_ctx *c) {
  sh_set(c, 0, MP_DTYPE_I64, 0, NULL);
  sh_set(c, 1, MP_DTYPE_BOOL, 0, NULL);
  for (uint32_t k = 2; k < c->n_out; k++) {
    const sh_fact *v = sh_in(c, k);
    if (!v) return sh_fail(c, "loop-carried input %u is missing", k);
    sh_set(c, k, v->dt, v->rank, v->d);
  }
  return MP_OK;
}

mp_status sh_loop(sh_ctx *c) {
  uint32_t orig = 0, body = 0;
  mp_status st = ct_counts(c, &orig, &body);
  if (st != MP_OK) return st;
  uint32_t carried = orig >= 2 ? orig - 2 : 0;
  if (body < 1 + carried || c->n_out > body - 1) {
    return sh_fail(c, "the body gives %u outputs for %u carried values", body,
                   carried);
  }
  size_t n;
  const int64_t *trip = sh_ints(c, 0, &n);
  for (uint32_t k = 0; k < c->n_out; k++) {
    const sh_fact *b = sh_in(c, orig + 1 + k);
    if (!b) return sh_fail(c, "body output %u is missing", k + 1);
    if (k < carried) {
      sh_set(c, k, b->dt, b->rank, b->d);
      continue;
    }
    if (!trip || n != 1 || trip[0] < 0) return MP_ERR_UNSUPPORTED;
    if (b->rank + 1 > MP_MAX_RANK) return sh_fail(c, "scan output rank");
    int64_t d[MP_MAX_RANK] = {trip[0]};
    memcpy(d + 1, b->d, b->rank * sizeof *d);
    sh_set(c, k, b->dt, b->rank + 1, d);
  }
  return MP_OK;
}

static int64_t ct_axis_of(const sh_ctx *c, const char *attr, uint32_t k) {
  size_t n = 0;
  const int64_t *v = sh_attr_ints(c, attr, &n);
  return v && k < n ? v[k] : 0;
}

mp_status sh_scan_enter(sh_ctx *c) {
  if (c->opset > 0 && c->opset < 9) return MP_ERR_UNSUPPORTED;
  int64_t m = sh_attr_i(c, "num_scan_inputs", 0);
  if (m < 1 || m > c->n_in) return sh_fail(c, "bad num_scan_inputs");
  uint32_t states = c->n_in - (uint32_t)m;
  for (uint32_t k = 0; k < c->n_out && k < c->n_in; k++) {
    const sh_fact *v = sh_in(c, k);
    if (!v) return sh_fail(c, "input %u is missing", k);
    if (k < states) {
      sh_set(c, k, v->dt, v->rank, v->d);
      continue;
    }
    uint32_t ax;
    mp_status st =
        sh_axis(c, ct_axis_of(c, "scan_input_axes", k - states), v->rank, &ax);
    if (st != MP_OK) return st;
    int64_t d[MP_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t j = 0; j < v->rank; j++) {
      if (j != ax) d[r++] = v->d[j];
    }
    sh_set(c, k, v->dt, r, d);
  }
  return MP_OK;
}

mp_status sh_scan(sh_ctx *c) {
  uint32_t orig = 0, body = 0;
  if (c->opset > 0 && c->opset < 9) return MP_ERR_UNSUPPORTED;
  mp_status st = ct_counts(c, &orig, &body);
  if (st != MP_OK) return st;
  int64_t m = sh_attr_i(c, "num_scan_inputs", 0);
  if (m < 1 || m > orig) return sh_fail(c, "bad num_scan_inputs");
  uint32_t states = orig - (uint32_t)m;
  const sh_fact *first = sh_in(c, states);
  uint32_t ax;
  if (!first) return sh_fail(c, "scan input 0 is missing");
  st = sh_axis(c, ct_axis_of(c, "scan_input_axes", 0), first->rank, &ax);
  if (st != MP_OK) return st;
  int64_t seq = first->d[ax];
  for (uint32_t k = 0; k < c->n_out && k < body; k++) {
    const sh_fact *b = sh_in(c, orig + k);
    if (!b) return sh_fail(c, "body output %u is missing", k);
    if (k < states) {
      sh_set(c, k, b->dt, b->rank, b->d);
      continue;
    }
    if (b->rank + 1 > MP_MAX_RANK) {
      return sh_fail(c, "scan output %u would have rank %u (at most %d)", k,
                     b->rank + 1, MP_MAX_RANK);
    }
    uint32_t oax;
    st = sh_axis(c, ct_axis_of(c, "scan_output_axes", k - states), b->rank + 1,
                 &oax);
    if (st != MP_OK) return st;
    int64_t d[MP_MAX_RANK];
    for (uint32_t j = 0, from = 0; j < b->rank + 1; j++) {
      d[j] = j == oax ? seq : b->d[from++];
    }
    sh_set(c, k, b->dt, b->rank + 1, d);
  }
  return MP_OK;
}
