/*
 * lifetime.c -- lifetimes of tensors under an order, as a problem.
 *
 * Invariants:
 *   1. step_of[order[k]] == k for every step k.
 *   2. For every activation: step_of[producer] <= last_use, since a valid
 *      order runs every consumer after the producer.
 *   3. Buffer b is named after its root tensor; without an alias map
 *      buffer i is tensor i, with the same name.
 *   4. A buffer's interval is the hull of its tensors' intervals: the
 *      bytes are in use from the first write of any of them to the last
 *      read of any of them.
 */
#include "mplan/lifetime.h"

mp_class mp_lifetime_class(const mp_tensor *t, bool inputs_as_act) {
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

void mp_lifetime_interval(const mp_tensor *t, const uint32_t *step_of,
                          int64_t n_steps, int64_t *first, int64_t *last) {
  *first = t->producer >= 0 ? step_of[t->producer] : 0;
  *last = *first;
  for (uint32_t c = 0; c < t->n_consumers; c++) {
    int64_t s = step_of[t->consumers[c]];
    if (s > *last) *last = s;
  }
  if (t->kind == MP_TENSOR_OUTPUT) *last = n_steps - 1;
}

size_t mp_lifetime_buffer_count(const mp_graph *g, const mp_lifetime_opts *o) {
  return o && o->alias ? o->alias->n_buffers : mp_graph_tensor_count(g);
}

size_t mp_lifetime_size(const mp_tensor *t) {
  return t->bytes ? t->bytes : 1;
}

void mp_lifetime_buffer_desc(const mp_graph *g, const mp_lifetime_opts *o,
                             size_t b, mp_buffer_desc *d) {
  mp_backend def;
  const mp_backend *be = o && o->backend ? o->backend : NULL;
  bool in_act = o && o->inputs_as_activations;
  if (!be) {
    mp_backend_default(&def);
    be = &def;
  }
  const mp_alias *al = o ? o->alias : NULL;
  const mp_tensor *root = mp_graph_tensor(g, al ? al->root[b] : b);
  *d = (mp_buffer_desc){
      .name = root->name,
      .size = mp_lifetime_size(root),
      .alignment = mp_backend_align(be, root->kind),
      .cls = mp_lifetime_class(root, in_act),
      .pinned = root->pinned, /* the share rule never merges a pinned one */
      .pin = root->pin,
  };
  for (uint32_t k = al ? al->start[b] : 0; al && k < al->start[b + 1]; k++) {
    const mp_tensor *t = mp_graph_tensor(g, al->members[k]);
    size_t align = mp_backend_align(be, t->kind);
    /* A member ends inside a tensor of the buffer (a slice inside its
     * Concat's output), so this stays below the largest tensor size. */
    size_t end = (size_t)al->offset[al->members[k]] + mp_lifetime_size(t);
    if (end > d->size) d->size = end;
    if (align > d->alignment) d->alignment = align;
  }
}

/* Buffer b's interval (invariant 4). */
static void lifetime_buffer_interval(const mp_graph *g, const mp_alias *al,
                                     size_t b, const uint32_t *step_of,
                                     int64_t n_steps, int64_t *first,
                                     int64_t *last) {
  if (!al) {
    mp_lifetime_interval(mp_graph_tensor(g, b), step_of, n_steps, first, last);
    return;
  }
  for (uint32_t k = al->start[b]; k < al->start[b + 1]; k++) {
    int64_t f, l;
    mp_lifetime_interval(mp_graph_tensor(g, al->members[k]), step_of, n_steps,
                         &f, &l);
    if (k == al->start[b] || f < *first) *first = f;
    if (k == al->start[b] || l > *last) *last = l;
  }
}

/* Every op that reads two or more buffers is an access group: a banked
 * memory should not serve its inputs from one bank. Tensors are mapped to
 * their buffers first (a view reads its source's bytes). */
static mp_status lifetime_groups(const mp_graph *g, const mp_alias *al,
                                 mp_problem *p, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  mp_status st = MP_OK;
  for (size_t o = 0; st == MP_OK && o < mp_graph_op_count(g); o++) {
    const mp_op *op = mp_graph_op(g, o);
    size_t *idx = mp_calloc(a, op->n_inputs + 1, sizeof *idx), n = 0;
    if (!idx) return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (op->inputs[k] < 0) continue;
      size_t t = (size_t)op->inputs[k], b = al ? al->buffer_of[t] : t;
      bool seen = false;
      for (size_t j = 0; j < n && !seen; j++) seen = idx[j] == b;
      if (!seen) idx[n++] = b;
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
  const mp_alias *al = o ? o->alias : NULL;
  if (al && al->n_tensors != mp_graph_tensor_count(g)) {
    return mp_error_set(err, MP_ERR_INTERNAL,
                        "%s: the alias map covers %zu tensors, the graph has "
                        "%zu",
                        mp_graph_source(g), al->n_tensors,
                        mp_graph_tensor_count(g));
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
  size_t n = mp_lifetime_buffer_count(g, o);
  for (size_t b = 0; st == MP_OK && b < n; b++) {
    mp_buffer_desc d;
    mp_lifetime_buffer_desc(g, o, b, &d);
    lifetime_buffer_interval(g, al, b, step_of, (int64_t)n_ops, &d.first,
                             &d.last);
    st = mp_problem_add(p, &d, NULL, err);
    if (st != MP_OK) mp_error_prefix(err, "%s", mp_graph_source(g));
  }
  if (st == MP_OK) st = lifetime_groups(g, al, p, err);
  if (st == MP_OK) st = mp_problem_seal(p, err);
  mp_free(a, step_of);
  if (st != MP_OK) {
    mp_problem_destroy(p);
    return st;
  }
  *out = p;
  return MP_OK;
}
