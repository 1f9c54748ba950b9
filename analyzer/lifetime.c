/*
 * lifetime.c -- lifetimes of tensors under an order, as a problem.
 *
 * Invariants:
 *   1. step_of[order[k]] == k for every step k.
 *   2. For every activation: step_of[producer] <= last_use, since a valid
 *      order runs every consumer after the producer.
 *   3. Buffer i is tensor i, with the same name.
 */
#include "mplan/lifetime.h"

static mp_class lifetime_class(const mp_tensor *t, bool inputs_as_act) {
  switch (t->kind) {
    case MP_TENSOR_WEIGHT:
      return MP_CLASS_RESIDENT;
    case MP_TENSOR_INPUT:
      return inputs_as_act ? MP_CLASS_ACTIVATION : MP_CLASS_RESIDENT;
    case MP_TENSOR_RETAINED:
      return MP_CLASS_RETAINED;
    default:
      return MP_CLASS_ACTIVATION;
  }
}

static void lifetime_interval(const mp_tensor *t, const uint32_t *step_of,
                              int64_t n_steps, int64_t *first, int64_t *last) {
  *first = t->producer >= 0 ? step_of[t->producer] : 0;
  *last = *first;
  for (uint32_t c = 0; c < t->n_consumers; c++) {
    int64_t s = step_of[t->consumers[c]];
    if (s > *last) *last = s;
  }
  if (t->kind == MP_TENSOR_OUTPUT) *last = n_steps - 1;
}

/* Every op that reads two or more tensors is an access group: a banked
 * memory should not serve its inputs from one bank. */
static mp_status lifetime_groups(const mp_graph *g, mp_problem *p,
                                 mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  mp_status st = MP_OK;
  for (size_t o = 0; st == MP_OK && o < mp_graph_op_count(g); o++) {
    const mp_op *op = mp_graph_op(g, o);
    size_t *idx = mp_calloc(a, op->n_inputs + 1, sizeof *idx), n = 0;
    if (!idx) return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (mp_op_first_read(op, k)) idx[n++] = (size_t)op->inputs[k];
    }
    if (n >= 2) st = mp_problem_add_group(p, op->name, idx, n, err);
    mp_free(a, idx);
  }
  return st;
}

mp_status mp_lifetimes_build(const mp_graph *g, const uint32_t *order,
                             const mp_lifetime_opts *o, mp_problem **out,
                             mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  size_t n_ops = mp_graph_op_count(g);
  mp_backend def;
  const mp_backend *be = o && o->backend ? o->backend : NULL;
  if (!be) {
    mp_backend_default(&def);
    be = &def;
  }
  uint32_t *step_of = mp_calloc(a, n_ops ? n_ops : 1, sizeof *step_of);
  mp_problem *p = NULL;
  mp_status st;
  if (!step_of) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(g));
  }
  for (size_t k = 0; k < n_ops; k++) step_of[order[k]] = (uint32_t)k;
  st = mp_problem_create(a, mp_graph_name(g), &p, err);
  if (st == MP_OK) {
    st = mp_problem_set_span(p, 0, n_ops ? (int64_t)n_ops - 1 : 0, err);
  }
  for (size_t i = 0; st == MP_OK && i < mp_graph_tensor_count(g); i++) {
    const mp_tensor *t = mp_graph_tensor(g, i);
    mp_buffer_desc d = {
        .name = t->name,
        /* An empty tensor (ONNX allows them) still gets an address of its
         * own: one byte, so that no buffer has size 0. */
        .size = t->bytes ? t->bytes : 1,
        .alignment = mp_backend_align(be, t->kind),
        .cls = lifetime_class(t, o && o->inputs_as_activations),
        .pinned = t->pinned,
        .pin = t->pin,
    };
    lifetime_interval(t, step_of, (int64_t)n_ops, &d.first, &d.last);
    st = mp_problem_add(p, &d, NULL, err);
    if (st != MP_OK) mp_error_prefix(err, "%s", mp_graph_source(g));
  }
  if (st == MP_OK) st = lifetime_groups(g, p, err);
  if (st == MP_OK) st = mp_problem_seal(p, err);
  mp_free(a, step_of);
  if (st != MP_OK) {
    mp_problem_destroy(p);
    return st;
  }
  *out = p;
  return MP_OK;
}
