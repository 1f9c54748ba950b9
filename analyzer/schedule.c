/*
 * schedule.c -- deterministic topological orders (file, topo, dfs, rpo),
 * cycle reports, and the dispatch to the memory-aware scheduler
 * (schedule_memory.c).
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
 *   4. dfs and rpo walk with an explicit stack (a 10,000-op chain must not
 *      overflow the C stack) and visit inputs, consumers and roots in file
 *      order, so that both are deterministic.
 */
#include "mplan/schedule.h"

#include <string.h>

#include "mplan/buf.h"
#include "schedule_internal.h"

const char *mp_order_name(mp_order_kind k) {
  switch (k) {
    case MP_ORDER_AUTO:
      return "auto";
    case MP_ORDER_FILE:
      return "file";
    case MP_ORDER_TOPO:
      return "topo";
    case MP_ORDER_DFS:
      return "dfs";
    case MP_ORDER_RPO:
      return "rpo";
    case MP_ORDER_MEMORY:
      return "memory";
  }
  return "?";
}

bool mp_order_parse(const char *name, mp_order_kind *out) {
  static const mp_order_kind kinds[] = {MP_ORDER_AUTO, MP_ORDER_FILE,
                                        MP_ORDER_TOPO, MP_ORDER_DFS,
                                        MP_ORDER_RPO,  MP_ORDER_MEMORY};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    if (strcmp(name, mp_order_name(kinds[i])) == 0) {
      *out = kinds[i];
      return true;
    }
  }
  return false;
}

/* A min-heap of (rank << 32 | op). */
typedef struct sched_heap {
  uint64_t *v;
  size_t n;
} sched_heap;

static void sched_push(sched_heap *h, uint64_t x) {
  size_t i = h->n++;
  while (i > 0 && h->v[(i - 1) / 2] > x) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = x;
}

static uint64_t sched_pop(sched_heap *h) {
  uint64_t top = h->v[0], x = h->v[--h->n];
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

/* Kahn's algorithm, the ready op of lowest rank first (rank NULL: all
 * equal), ties to the lower index. */
static mp_status sched_kahn(const mp_graph *g, const uint32_t *rank,
                            uint32_t *order, uint32_t *indeg, bool *done,
                            uint64_t *heap, mp_error *err) {
  size_t n = mp_graph_op_count(g), n_done = 0;
  sched_heap h = {heap, 0};
#define SCHED_KEY(o) ((uint64_t)(rank ? rank[o] : 0) << 32 | (o))
  for (uint32_t o = 0; o < n; o++) {
    const mp_op *op = mp_graph_op(g, o);
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (!mp_op_first_read(op, k)) continue;
      if (mp_graph_tensor(g, (size_t)op->inputs[k])->producer >= 0) indeg[o]++;
    }
    if (indeg[o] == 0) sched_push(&h, SCHED_KEY(o));
  }
  while (h.n) {
    uint32_t o = (uint32_t)(sched_pop(&h) & 0xffffffffu);
    const mp_op *op = mp_graph_op(g, o);
    done[o] = true;
    order[n_done++] = o;
    for (uint32_t k = 0; k < op->n_outputs; k++) {
      const mp_tensor *t = mp_graph_tensor(g, (size_t)op->outputs[k]);
      for (uint32_t c = 0; c < t->n_consumers; c++) {
        uint32_t r = t->consumers[c];
        if (--indeg[r] == 0) sched_push(&h, SCHED_KEY(r));
      }
    }
  }
#undef SCHED_KEY
  if (n_done < n) return sched_cycle(g, done, err);
  return MP_OK;
}

mp_status sched_ranked(const mp_graph *g, const uint32_t *rank, uint32_t *order,
                       mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  size_t m = mp_graph_op_count(g) + 1;
  uint32_t *indeg = mp_calloc(a, m, sizeof *indeg);
  uint64_t *heap = mp_calloc(a, m, sizeof *heap);
  bool *done = mp_calloc(a, m, sizeof *done);
  mp_status st = indeg && heap && done
                     ? sched_kahn(g, rank, order, indeg, done, heap, err)
                     : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                                    mp_graph_source(g));
  mp_free(a, indeg);
  mp_free(a, heap);
  mp_free(a, done);
  return st;
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

/* ---- depth-first orders (invariant 4) ----------------------------------- */

typedef struct sched_frame {
  uint32_t op;
  uint32_t next; /* next input (dfs) or successor (rpo) to look at */
} sched_frame;

/* The k-th predecessor of op (the producer of input k), or -1. */
static int32_t sched_pred(const mp_graph *g, uint32_t op, uint32_t k) {
  const mp_op *o = mp_graph_op(g, op);
  if (k >= o->n_inputs || o->inputs[k] < 0) return -1;
  return mp_graph_tensor(g, (size_t)o->inputs[k])->producer;
}

static bool sched_is_sink(const mp_graph *g, uint32_t op) {
  const mp_op *o = mp_graph_op(g, op);
  for (uint32_t k = 0; k < o->n_outputs; k++) {
    if (mp_graph_tensor(g, (size_t)o->outputs[k])->n_consumers) return false;
  }
  return true;
}

/* dfs: post-order over predecessors from every sink, in file order. */
static void sched_dfs(const mp_graph *g, uint32_t *out, bool *seen,
                      sched_frame *stack) {
  size_t n = mp_graph_op_count(g), n_out = 0;
  for (uint32_t s = 0; s < n; s++) {
    if (seen[s] || !sched_is_sink(g, s)) continue;
    size_t top = 0;
    stack[top++] = (sched_frame){s, 0};
    seen[s] = true;
    while (top) {
      sched_frame *f = &stack[top - 1];
      uint32_t n_in = mp_graph_op(g, f->op)->n_inputs;
      if (f->next == n_in) {
        out[n_out++] = f->op;
        top--;
        continue;
      }
      int32_t p = sched_pred(g, f->op, f->next++);
      if (p >= 0 && !seen[p]) {
        seen[p] = true;
        stack[top++] = (sched_frame){(uint32_t)p, 0};
      }
    }
  }
}

/* The k-th successor of op: consumers of its outputs, outputs in order,
 * consumers ascending; -1 past the end. */
static int32_t sched_succ(const mp_graph *g, uint32_t op, uint32_t k) {
  const mp_op *o = mp_graph_op(g, op);
  for (uint32_t j = 0; j < o->n_outputs; j++) {
    const mp_tensor *t = mp_graph_tensor(g, (size_t)o->outputs[j]);
    if (k < t->n_consumers) return (int32_t)t->consumers[k];
    k -= t->n_consumers;
  }
  return -1;
}

static bool sched_is_source(const mp_graph *g, uint32_t op) {
  for (uint32_t k = 0; k < mp_graph_op(g, op)->n_inputs; k++) {
    if (sched_pred(g, op, k) >= 0) return false;
  }
  return true;
}

/* rpo: reverse post-order along consumers. Sources are started last to
 * first so that, reversed, the first source's walk comes first. */
static void sched_rpo(const mp_graph *g, uint32_t *out, bool *seen,
                      sched_frame *stack) {
  size_t n = mp_graph_op_count(g), n_out = 0;
  for (size_t i = n; i-- > 0;) {
    uint32_t s = (uint32_t)i;
    if (seen[s] || !sched_is_source(g, s)) continue;
    size_t top = 0;
    stack[top++] = (sched_frame){s, 0};
    seen[s] = true;
    while (top) {
      sched_frame *f = &stack[top - 1];
      int32_t c = sched_succ(g, f->op, f->next++);
      if (c < 0) {
        out[n_out++] = f->op;
        top--;
      } else if (!seen[c]) {
        seen[c] = true;
        stack[top++] = (sched_frame){(uint32_t)c, 0};
      }
    }
  }
  for (size_t i = 0; i < n_out / 2; i++) {
    uint32_t t = out[i];
    out[i] = out[n_out - 1 - i];
    out[n_out - 1 - i] = t;
  }
}

mp_status sched_basic(const mp_graph *g, mp_order_kind want, uint32_t **order,
                      mp_order_kind *used, mp_error *err) {
  const mp_alloc *a = mp_graph_alloc(g);
  size_t n = mp_graph_op_count(g);
  size_t m = n ? n : 1;
  uint32_t *out = mp_calloc(a, m, sizeof *out);
  uint32_t *indeg = mp_calloc(a, m, sizeof *indeg);
  uint64_t *heap = mp_calloc(a, m, sizeof *heap);
  bool *done = mp_calloc(a, m, sizeof *done);
  sched_frame *stack = NULL;
  mp_status st = MP_OK;
  if (!out || !indeg || !heap || !done) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                      mp_graph_source(g));
    goto done;
  }
  /* Kahn first: a cycle must be reported as a cycle, whatever was asked. */
  st = sched_kahn(g, NULL, out, indeg, done, heap, err);
  if (st != MP_OK) goto done;
  mp_order_kind got = MP_ORDER_TOPO;
  mp_error file_err;
  if (want == MP_ORDER_DFS || want == MP_ORDER_RPO) {
    stack = mp_calloc(a, m, sizeof *stack);
    if (!stack) {
      st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(g));
      goto done;
    }
    memset(done, 0, m * sizeof *done);
    if (want == MP_ORDER_DFS) {
      sched_dfs(g, out, done, stack);
    } else {
      sched_rpo(g, out, done, stack);
    }
    got = want;
  } else if (want != MP_ORDER_TOPO && sched_file_ok(g, &file_err)) {
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
  mp_free(a, stack);
  mp_free(a, done);
  mp_free(a, heap);
  mp_free(a, indeg);
  mp_free(a, out);
  return st;
}

mp_status mp_schedule(const mp_graph *g, mp_order_kind want, uint32_t **order,
                      mp_order_kind *used, mp_error *err) {
  if (want == MP_ORDER_MEMORY) {
    mp_schedule_opts o = {.order = MP_ORDER_MEMORY};
    mp_schedule_info info;
    mp_status st = mp_schedule_run(g, &o, order, &info, err);
    if (st == MP_OK) *used = MP_ORDER_MEMORY;
    return st;
  }
  return sched_basic(g, want, order, used, err);
}

mp_status mp_schedule_run(const mp_graph *g, const mp_schedule_opts *o,
                          uint32_t **order, mp_schedule_info *info,
                          mp_error *err) {
  mp_schedule_info local;
  if (!info) info = &local;
  memset(info, 0, sizeof *info);
  if (o->order == MP_ORDER_MEMORY) return sched_memory(g, o, order, info, err);
  return sched_basic(g, o->order, order, &info->used, err);
}
