/*
 * schedule.c -- deterministic topological ordering and cycle reports.
 *
 * Invariants:
 *   1. indeg[o] counts the distinct input tensors of op o that some op
 *      produces and that are not yet produced by a scheduled op.
 *   2. The ready set is a min-heap of op indices, so among ready ops the
 *      earliest in the file always runs first (file order is preserved
 *      when valid).
 *   3. If fewer than all ops get scheduled, every unscheduled op has an
 *      unscheduled predecessor, so walking predecessors must revisit an op:
 *      that closed walk is the cycle we report.
 */
#include "mplan/schedule.h"

#include <string.h>

#include "mplan/buf.h"

const char *mp_order_name(mp_order_kind k) {
  switch (k) {
    case MP_ORDER_AUTO:
      return "auto";
    case MP_ORDER_FILE:
      return "file";
    case MP_ORDER_TOPO:
      return "topo";
  }
  return "?";
}

bool mp_order_parse(const char *name, mp_order_kind *out) {
  static const mp_order_kind kinds[] = {MP_ORDER_AUTO, MP_ORDER_FILE,
                                        MP_ORDER_TOPO};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    if (strcmp(name, mp_order_name(kinds[i])) == 0) {
      *out = kinds[i];
      return true;
    }
  }
  return false;
}

typedef struct sched_heap {
  uint32_t *v;
  size_t n;
} sched_heap;

static void sched_push(sched_heap *h, uint32_t x) {
  size_t i = h->n++;
  while (i > 0 && h->v[(i - 1) / 2] > x) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = x;
}

static uint32_t sched_pop(sched_heap *h) {
  uint32_t top = h->v[0], x = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->v[c + 1] < h->v[c]) c++;
    if (h->v[c] >= x) break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n) h->v[i] = x;
  return top;
}

/* An unscheduled producer of one of op's inputs (invariant 3). */
static int32_t sched_pending_pred(const mp_graph *g, uint32_t op,
                                  const bool *done) {
  const mp_op *o = mp_graph_op(g, op);
  for (uint32_t k = 0; k < o->n_inputs; k++) {
    if (o->inputs[k] < 0) continue;
    int32_t p = mp_graph_tensor(g, (size_t)o->inputs[k])->producer;
    if (p >= 0 && !done[p]) return p;
  }
  return -1;
}

static mp_status sched_cycle(const mp_graph *g, const bool *done,
                             mp_error *err) {
  size_t n = mp_graph_op_count(g);
  const mp_alloc *a = mp_graph_alloc(g);
  int32_t *pos = mp_calloc(a, n, sizeof *pos); /* position on the walk + 1 */
  uint32_t *walk = mp_calloc(a, n, sizeof *walk);
  mp_buf b;
  mp_buf_init(&b, a);
  if (!pos || !walk) {
    mp_free(a, pos);
    mp_free(a, walk);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(g));
  }
  uint32_t cur = 0;
  while (done[cur]) cur++;
  size_t len = 0;
  while (!pos[cur]) {
    pos[cur] = (int32_t)++len;
    walk[len - 1] = cur;
    cur = (uint32_t)sched_pending_pred(g, cur, done);
  }
  /* The walk runs against the edges: walk[start..len) reversed is the cycle
   * along them. Print it from its earliest op in the file, so the report
   * does not depend on where the walk began. */
  size_t start = (size_t)pos[cur] - 1, cyc = len - start, first = start;
  for (size_t k = start; k < len; k++) {
    if (walk[k] < walk[first]) first = k;
  }
  for (size_t j = 0; j <= cyc; j++) {
    /* Position first, then the next op along the edges, wrapping. */
    size_t k = start + (first - start + cyc - j % cyc) % cyc;
    mp_buf_printf(&b, "%s'%s'", j ? " -> " : "", mp_graph_op(g, walk[k])->name);
  }
  mp_status st = mp_buf_status(&b, mp_graph_source(g), err);
  if (st == MP_OK) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT, "%s: the graph has a cycle: %s",
                      mp_graph_source(g), mp_buf_str(&b));
  }
  mp_buf_free(&b);
  mp_free(a, pos);
  mp_free(a, walk);
  return st;
}

static mp_status sched_kahn(const mp_graph *g, uint32_t *order, uint32_t *indeg,
                            bool *done, uint32_t *heap, mp_error *err) {
  size_t n = mp_graph_op_count(g), n_done = 0;
  sched_heap h = {heap, 0};
  for (uint32_t o = 0; o < n; o++) {
    const mp_op *op = mp_graph_op(g, o);
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (!mp_op_first_read(op, k)) continue;
      if (mp_graph_tensor(g, (size_t)op->inputs[k])->producer >= 0) indeg[o]++;
    }
    if (indeg[o] == 0) sched_push(&h, o);
  }
  while (h.n) {
    uint32_t o = sched_pop(&h);
    const mp_op *op = mp_graph_op(g, o);
    done[o] = true;
    order[n_done++] = o;
    for (uint32_t k = 0; k < op->n_outputs; k++) {
      const mp_tensor *t = mp_graph_tensor(g, (size_t)op->outputs[k]);
      for (uint32_t c = 0; c < t->n_consumers; c++) {
        if (--indeg[t->consumers[c]] == 0) sched_push(&h, t->consumers[c]);
      }
    }
  }
  if (n_done < n) return sched_cycle(g, done, err);
  return MP_OK;
}

/* The first op that reads a tensor produced later in the file, if any. */
static bool sched_file_ok(const mp_graph *g, mp_error *err) {
  for (uint32_t o = 0; o < mp_graph_op_count(g); o++) {
    const mp_op *op = mp_graph_op(g, o);
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (op->inputs[k] < 0) continue;
      const mp_tensor *t = mp_graph_tensor(g, (size_t)op->inputs[k]);
      if (t->producer >= (int32_t)o) {
        mp_error_set(err, MP_ERR_BAD_INPUT,
                     "%s: file order is not topological: op '%s' (ops[%u]) "
                     "reads '%s' before op '%s' (ops[%d]) produces it; use "
                     "--order topo",
                     mp_graph_source(g), op->name, o, t->name,
                     mp_graph_op(g, (size_t)t->producer)->name, t->producer);
        return false;
      }
    }
  }
  return true;
}

mp_status mp_schedule(const mp_graph *g, mp_order_kind want, uint32_t **order,
                      mp_order_kind *used, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  size_t n = mp_graph_op_count(g);
  size_t m = n ? n : 1;
  uint32_t *out = mp_calloc(a, m, sizeof *out);
  uint32_t *indeg = mp_calloc(a, m, sizeof *indeg);
  uint32_t *heap = mp_calloc(a, m, sizeof *heap);
  bool *done = mp_calloc(a, m, sizeof *done);
  mp_status st = MP_OK;
  if (!out || !indeg || !heap || !done) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                      mp_graph_source(g));
    goto done;
  }
  /* Kahn first: a cycle must be reported as a cycle, whatever was asked. */
  st = sched_kahn(g, out, indeg, done, heap, err);
  if (st != MP_OK) goto done;
  mp_order_kind got = MP_ORDER_TOPO;
  mp_error file_err;
  if (want != MP_ORDER_TOPO && sched_file_ok(g, &file_err)) {
    for (uint32_t o = 0; o < n; o++) out[o] = o;
    got = MP_ORDER_FILE;
  } else if (want == MP_ORDER_FILE) {
    if (err) *err = file_err;
    st = file_err.status;
    goto done;
  }
  *order = out;
  out = NULL;
  *used = got;
done:
  mp_free(a, done);
  mp_free(a, heap);
  mp_free(a, indeg);
  mp_free(a, out);
  return st;
}
