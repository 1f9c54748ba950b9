#define _POSIX_C_SOURCE 199309L /* clock_gettime */
/*
 * schedule_memory.c -- the memory-aware order (--order memory).
 *
 * The cost of an order is its activation peak under the lifetime rules of
 * lifetime.c, over buffers (mplan/alias.h), simulated op by op: before op
 * u runs, the live bytes are those of every buffer born and not yet freed;
 * u adds the buffers it creates; that sum is the step's live bytes; after
 * u, every buffer whose last user was u (and that holds no graph output)
 * is freed. A buffer several ops create without reading it (the slices
 * of a Concat placed in its output, mplan/alias.h) is born with the
 * first of them to run: in a state, with the first of its makers in the
 * set. Buffer sizes, alignments and classes come from
 * mp_lifetime_buffer_desc, so the simulation counts exactly the bytes the
 * problem will.
 *
 * Candidates: the file order (topo when the file is not topological),
 * dfs, rpo, and two greedy list schedules (always the ready op that makes
 * the step smallest / that grows the live bytes least). Then the graph is
 * split at split ops -- ops that are ordered (ancestor or descendant) with
 * respect to every other op. Every order runs exactly the same ops before
 * a split op, so the live set after it is the same in every order and the
 * pieces between split ops (segments) can be ordered independently: the
 * peak of an order is the largest of its segments' peaks. Each segment
 * takes the best candidate's sub-order, then an exact dynamic program over
 * the sets of ops already run (SERENITY, MLSys 2020) tries to beat it.
 *
 * The dynamic program: a state is the set S of a segment's ops already
 * run; the live bytes after S depend on S only, while the peak on the way
 * there depends on the order, so each state keeps the lowest peak of any
 * order reaching it. Level k holds the states with |S| = k; a state
 * expands by every ready op. Transitions whose peak reaches the best
 * known peak are cut (they cannot improve on it): if no full state
 * survives, the heuristic was already optimal. Only predecessor links
 * (8 bytes a state) are kept for earlier levels.
 *
 * Invariants:
 *   1. Every candidate and the result is a topological order, and the
 *      peak the scheduler reports for it equals the lower bound the
 *      lifetimes of that order give (checked by the property tests).
 *   2. A split op sits at the same step in every topological order: it
 *      has exactly as many ancestors as ops before it in the reference
 *      order. So segments are the same step ranges in every order.
 *   3. The result's peak <= every candidate's peak, in particular the
 *      file order's: per segment the result is never worse than the
 *      file order's sub-order.
 *   4. Deterministic: ties go to the earlier candidate, the earlier state
 *      and the op that comes first in the reference order, and the
 *      budget counts work, not time: every transition of a search (beam
 *      or exact) costs its state's words, and a search stops at the
 *      transition that spends the run's last unit, at the same state on
 *      every machine. Only a wall-clock cap (none by default) can make a
 *      result depend on the machine; info->time_hit says when it did.
 *   5. exact is true only when the peak is proven the lowest: every
 *      segment with more than one op was proven (bounds 7 or 11, or an
 *      exact search run to the end with no level cut to max_states), or
 *      the peak equals a lower bound of the whole graph: a segment's
 *      proven bound, or the step of a split op (the same in every
 *      order, 2). Every order's peak is at least each of these, so
 *      segments below it need no proof (peak_bound says so). The
 *      largest of them is info->bound, proven or not: how far above the
 *      optimum an order not proven can be.
 *   6. A state with a ready op u that creates at most the bytes it
 *      frees, and whose step (live bytes + what u creates) stays within
 *      the state's peak, expands only by the first such op: take any
 *      order from the state and move u to its front. u's step does not
 *      raise the peak; every step u jumped over gains at most what u
 *      creates (its outputs are born earlier) and loses at least what u
 *      frees now (those buffers die earlier), and no buffer dies later
 *      (u can only move last reads earlier). So some optimal order runs
 *      u first, and the search stays exact. Views and ops written in
 *      place (creating nothing) and a running sum's Adds qualify.
 *   7. Before a segment is searched, a step bound: at op u's step every
 *      order holds the buffers u creates, and every buffer born by then
 *      in every order (live into the segment, made by an ancestor of u,
 *      or one of the makers of a shared buffer is u) that no order has
 *      freed yet (a graph output, or read by u, a descendant of u or an
 *      op after the segment). The largest such sum over the segment's ops
 *      is at most any order's peak. So are the first and the last
 *      step: the first op has no predecessor in the segment and its step
 *      holds what was live before it plus what it creates; the last has
 *      no successor and its step holds what is live after the segment
 *      (the same in every order) plus what it frees; the least over the
 *      possible first (last) ops bounds every order. A best candidate
 *      that meets the bound is optimal and the search is skipped. A
 *      candidate below it would mean the bound is wrong: an internal
 *      error, never a result.
 *   8. Before any exact search, a beam over every segment: the same
 *      search keeping only the SM_BEAM states of lowest peak (then live
 *      bytes) a level. Any order it finds is a real order of the segment,
 *      so it can only lower the bound the exact search must beat (which
 *      then cuts more states), and every segment has its beam's order
 *      when the budget stops an exact search. It never makes a
 *      result exact: that takes the step bound, the branch bound (11)
 *      or an exact search run to the end.
 *  10. Each state of the current and the next level carries its ready
 *      ops (every local predecessor run, itself not): the empty set's are
 *      the ops with no local predecessor, and S + {j}'s are S's without j
 *      plus the successors of j whose predecessors are all in S + {j}.
 *      An expansion walks these bits, in increasing op order as a scan
 *      of all ops would, so the states, ties and results are the same;
 *      assert builds recompute every state's set from its bits.
 *  11. When the step bound (7) does not meet the best candidate, a bound
 *      across branches. Pick designated ops d_1..d_k (k <= 64) no two of
 *      which are ordered (an antichain: from a seed, greedily by the live
 *      bytes 7 finds at their steps; a few seeds, the best bound wins,
 *      since the op of most bytes is often one every branch reaches).
 *      In any order, let d_g be the last of them
 *      to run: every other d_h has run, and a path from d_h along its
 *      outputs' readers to a reader after the segment or a graph output
 *      has a last run op w, whose output on the path is still to be read
 *      (or is never freed): that buffer is live at d_g's step. A path
 *      also ends at a descendant of d_g, which has not run then either
 *      (while the segment's budget of such passes lasts). So d_g's
 *      step holds 7's bytes for d_g plus, for each h != g, the smallest
 *      charge on the path (the widest path: the largest such smallest
 *      charge). A buffer's charge is its size divided by the number of
 *      designated ops whose descendants write it (so that a buffer two
 *      branches reach is counted once), and 0 when it is born before the
 *      segment, or when an op creating it is (or is an ancestor of) a
 *      designated op and the buffer is not that op's branch's alone:
 *      those bytes may be in 7's count for d_g already. The smallest
 *      such sum over g, for the best prefix of the designated ops,
 *      bounds every order's peak. Patches side by side (tile) and
 *      parallel cells are its case: the branch that peaks last finds the
 *      others' outputs live. The branch order goes with it: the
 *      designated ops by their live bytes less what they leave, each
 *      with its unrun ancestors first and then every descendant it makes
 *      ready. It competes as one more order of the segment, before the
 *      beam (8).
 *      When neither meets the best candidate, the frontier bound: at any
 *      op v's step, take the ops a unordered with v whose every local
 *      ancestor is one of v's (the frontier: each could be the next of
 *      its branch to run). If a has not run, the buffers it reads are
 *      born (their makers are v's ancestors) and still to be read:
 *      live. If it has run, a buffer on any path from it is live, as
 *      above, where a path also ends at a descendant of v (which has not
 *      run either). So v's step holds 7's bytes at v plus, for each a,
 *      the smaller of the two; a buffer is charged its size divided by
 *      the frontier ops that may claim it (reading it, or whose
 *      descendants write it), and 0 when born before the segment, when
 *      shared (a Concat's, whose makers may be v's ancestors), when 7
 *      counts it at v, or, for a read buffer, when a path may claim it.
 *      The largest such sum over the ops of most step-bound bytes bounds
 *      every order's peak, counted with the branch bound.
 *  12. Sinking: an op u whose every created buffer is read (or kept) and
 *      whose every activation input is kept or read by another op at or
 *      after u's first reader c moves to just before c (to the segment's
 *      end when c comes after it). No step rises: the ops u jumps over
 *      lose u's outputs (born later) and no buffer dies later; u's new
 *      step holds exactly what c's old step held before c's outputs (u
 *      frees nothing), and at the segment's end what is live after it,
 *      which the split op after it holds too. The best candidate is sunk
 *      before the bounds are met against it, and a branch order, the
 *      beam's order and an exact search cut short are sunk again; a
 *      sunk order is kept only when the segment's peak falls, so an
 *      order that was optimal stays as it was. Constants the passes did
 *      not fold (a bias reshaped at run time) are its case: every
 *      candidate makes them early and holds them through the peak.
 *  13. Single moves: a segment still above its bound after the exact
 *      search (or with none: the budget was spent) is improved one op at
 *      a time: each op in turn tries every position between its last
 *      predecessor and its first reader (a topological order again), the
 *      whole graph simulated, and the first position that lowers the
 *      segment's peak is kept; this repeats until no single move lowers
 *      it, the peak meets the bound, or SM_MOVE_WORK ops simulated (a
 *      segment; four times that for all) are spent. Only strict
 *      improvements are kept, the counts are deterministic, and each
 *      order is simulated exactly, so it is a heuristic that never
 *      claims more than it measured. BlazeFace in patches is its case:
 *      moving a few zero-filled crops of the channel padding into the
 *      patches that read them reaches the step bound, 450,560 B, where
 *      the cut search stopped at 465,344 B.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mplan/lifetime.h"
#include "schedule_internal.h"

#define SM_DEFAULT_STATES ((size_t)1 << 19)
/* States a level of the beam search keeps (invariant 8). */
#define SM_BEAM ((size_t)64)
/* Predecessor links kept for one segment's search (8 bytes each). */
#define SM_MAX_HISTORY ((size_t)1 << 23)
/* Segments larger than this are ordered by the heuristics alone: a state
 * holds one bit per op and every expansion scans all of them. */
#define SM_MAX_DP_OPS 4096
/* Bytes of state bits one level may hold while it is built (up to four
 * times max_states states): caps the default max_states for wide
 * segments. A max_states the caller gives is kept, and the history may
 * then hold 16 times as many links (memory is the caller's choice). */
#define SM_LEVEL_BYTES ((size_t)32 << 20)

typedef struct sm_model {
  const mp_graph *g;
  const mp_schedule_opts *o;
  const mp_alloc *a;
  size_t n_ops, n_buf;
  uint32_t *pred_start, *preds;   /* distinct predecessor ops */
  uint32_t *use_start, *uses;     /* distinct buffers an op reads */
  uint32_t *born_start, *born;    /* buffers an op creates */
  uint32_t *user_start, *users;   /* per buffer: distinct ops reading it */
  size_t *size;                   /* padded activation bytes; 0 otherwise */
  size_t *born_bytes;             /* per op: buffers only it creates */
  uint32_t *maker_start, *makers; /* per buffer: the ops creating it */
  bool *shared;                   /* created by several ops (first one) */
  bool *keep;                     /* holds a graph output: never freed */
  size_t start_mem;               /* activation buffers live before step 0 */
  size_t start_free;              /* ... of which nobody reads (die at 0) */
} sm_model;

static void sm_release(sm_model *m) {
  void *arrays[] = {m->pred_start, m->preds,      m->use_start,   m->uses,
                    m->born_start, m->born,       m->user_start,  m->users,
                    m->size,       m->born_bytes, m->maker_start, m->makers,
                    m->shared,     m->keep};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) {
    mp_free(m->a, arrays[i]);
  }
}

static mp_status sm_nomem(const sm_model *m, mp_error *err) {
  return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                      mp_graph_source(m->g));
}

static uint32_t sm_buf(const sm_model *m, size_t t) {
  return m->o->alias ? m->o->alias->buffer_of[t] : (uint32_t)t;
}

/* Buffer sizes and classes through the lifetime rules (header). */
static mp_status sm_sizes(sm_model *m, const mp_lifetime_opts *lo,
                          mp_error *err) {
  size_t total = 0;
  for (size_t b = 0; b < m->n_buf; b++) {
    mp_buffer_desc d;
    size_t padded;
    mp_lifetime_buffer_desc(m->g, lo, b, &d);
    if (d.cls != MP_CLASS_ACTIVATION) continue;
    if (!mp_align_up(d.size, d.alignment, &padded) ||
        !mp_size_add(total, padded, &total)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: the activations' sizes add up to more than "
                          "SIZE_MAX",
                          mp_graph_source(m->g));
    }
    m->size[b] = padded;
  }
  return MP_OK;
}

/* Fills a CSR (start, items) from pairs (key, value) counted twice: the
 * emit callback is run once to count and once to fill. */
typedef void (*sm_emit_fn)(sm_model *m, uint32_t *stamp, uint32_t *count,
                           uint32_t *start, uint32_t *items);

static mp_status sm_csr(sm_model *m, size_t n_keys, sm_emit_fn emit,
                        uint32_t **start, uint32_t **items, mp_error *err) {
  uint32_t *stamp = mp_calloc(m->a, m->n_buf + m->n_ops + 1, sizeof *stamp);
  *start = mp_calloc(m->a, n_keys + 1, sizeof **start);
  if (!stamp || !*start) {
    mp_free(m->a, stamp);
    return sm_nomem(m, err);
  }
  emit(m, stamp, *start + 1, NULL, NULL);
  for (size_t k = 0; k < n_keys; k++) (*start)[k + 1] += (*start)[k];
  *items = mp_calloc(m->a, (*start)[n_keys] + 1, sizeof **items);
  uint32_t *fill = mp_calloc(m->a, n_keys + 1, sizeof *fill);
  if (!*items || !fill) {
    mp_free(m->a, fill);
    mp_free(m->a, stamp);
    return sm_nomem(m, err);
  }
  memset(stamp, 0, (m->n_buf + m->n_ops + 1) * sizeof *stamp);
  emit(m, stamp, fill, *start, *items);
  mp_free(m->a, fill);
  mp_free(m->a, stamp);
  return MP_OK;
}

/* The stamp arrays de-duplicate within one op: stamp[x] == op + 1 means x
 * was seen for this op already. */
static void sm_put(uint32_t key, uint32_t val, uint32_t *stamp,
                   uint32_t stamp_v, uint32_t *count, uint32_t *start,
                   uint32_t *items) {
  if (stamp[val] == stamp_v) return;
  stamp[val] = stamp_v;
  if (items) {
    items[start[key] + count[key]] = val;
  }
  count[key]++;
}

static void sm_emit_preds(sm_model *m, uint32_t *stamp, uint32_t *count,
                          uint32_t *start, uint32_t *items) {
  for (uint32_t o = 0; o < m->n_ops; o++) {
    const mp_op *op = mp_graph_op(m->g, o);
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (op->inputs[k] < 0) continue;
      int32_t p = mp_graph_tensor(m->g, (size_t)op->inputs[k])->producer;
      if (p >= 0) sm_put(o, (uint32_t)p, stamp, o + 1, count, start, items);
    }
  }
}

static void sm_emit_uses(sm_model *m, uint32_t *stamp, uint32_t *count,
                         uint32_t *start, uint32_t *items) {
  for (uint32_t o = 0; o < m->n_ops; o++) {
    const mp_op *op = mp_graph_op(m->g, o);
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (op->inputs[k] < 0) continue;
      uint32_t b = sm_buf(m, (size_t)op->inputs[k]);
      sm_put(o, b, stamp, o + 1, count, start, items);
    }
  }
}

/* An op creates buffer b when it writes a tensor of b and reads none:
 * writers that read b (views, in place) extend a buffer born earlier. */
static bool sm_reads(const sm_model *m, uint32_t o, uint32_t b) {
  for (uint32_t k = m->use_start[o]; k < m->use_start[o + 1]; k++) {
    if (m->uses[k] == b) return true;
  }
  return false;
}

static void sm_emit_born(sm_model *m, uint32_t *stamp, uint32_t *count,
                         uint32_t *start, uint32_t *items) {
  for (uint32_t o = 0; o < m->n_ops; o++) {
    const mp_op *op = mp_graph_op(m->g, o);
    for (uint32_t k = 0; k < op->n_outputs; k++) {
      uint32_t b = sm_buf(m, (size_t)op->outputs[k]);
      if (!sm_reads(m, o, b)) sm_put(o, b, stamp, o + 1, count, start, items);
    }
  }
}

/* Inverts a per-op buffer list (op_start, list) into per-buffer ops. */
static void sm_invert(const sm_model *m, const uint32_t *op_start,
                      const uint32_t *list, uint32_t *count, uint32_t *start,
                      uint32_t *items) {
  for (uint32_t o = 0; o < m->n_ops; o++) {
    for (uint32_t k = op_start[o]; k < op_start[o + 1]; k++) {
      uint32_t b = list[k];
      if (items) items[start[b] + count[b]] = o;
      count[b]++;
    }
  }
}

static void sm_emit_users(sm_model *m, uint32_t *stamp, uint32_t *count,
                          uint32_t *start, uint32_t *items) {
  (void)stamp;
  sm_invert(m, m->use_start, m->uses, count, start, items);
}

static void sm_emit_makers(sm_model *m, uint32_t *stamp, uint32_t *count,
                           uint32_t *start, uint32_t *items) {
  (void)stamp;
  sm_invert(m, m->born_start, m->born, count, start, items);
}

static mp_status sm_build(sm_model *m, const mp_graph *g,
                          const mp_schedule_opts *o, mp_error *err) {
  mp_lifetime_opts lo = {.inputs_as_activations = o->inputs_as_activations,
                         .backend = o->backend,
                         .alias = o->alias};
  memset(m, 0, sizeof *m);
  m->g = g;
  m->o = o;
  m->a = mp_graph_alloc(g);
  m->n_ops = mp_graph_op_count(g);
  m->n_buf = mp_lifetime_buffer_count(g, &lo);
  if (o->alias && o->alias->n_tensors != mp_graph_tensor_count(g)) {
    return mp_error_set(err, MP_ERR_INTERNAL,
                        "%s: the alias map does not match the graph",
                        mp_graph_source(g));
  }
  m->size = mp_calloc(m->a, m->n_buf + 1, sizeof *m->size);
  m->keep = mp_calloc(m->a, m->n_buf + 1, sizeof *m->keep);
  m->born_bytes = mp_calloc(m->a, m->n_ops + 1, sizeof *m->born_bytes);
  m->shared = mp_calloc(m->a, m->n_buf + 1, sizeof *m->shared);
  if (!m->size || !m->keep || !m->born_bytes || !m->shared) {
    return sm_nomem(m, err);
  }
  mp_status st = sm_sizes(m, &lo, err);
  if (st == MP_OK)
    st = sm_csr(m, m->n_ops, sm_emit_preds, &m->pred_start, &m->preds, err);
  if (st == MP_OK)
    st = sm_csr(m, m->n_ops, sm_emit_uses, &m->use_start, &m->uses, err);
  if (st == MP_OK)
    st = sm_csr(m, m->n_ops, sm_emit_born, &m->born_start, &m->born, err);
  if (st == MP_OK)
    st = sm_csr(m, m->n_buf, sm_emit_users, &m->user_start, &m->users, err);
  if (st == MP_OK)
    st = sm_csr(m, m->n_buf, sm_emit_makers, &m->maker_start, &m->makers, err);
  if (st != MP_OK) return st;
  for (size_t b = 0; b < m->n_buf; b++) {
    m->shared[b] = m->maker_start[b + 1] - m->maker_start[b] > 1;
  }
  bool *has_birth = mp_calloc(m->a, m->n_buf + 1, sizeof *has_birth);
  if (!has_birth) return sm_nomem(m, err);
  for (size_t u = 0; u < m->n_ops; u++) {
    for (uint32_t k = m->born_start[u]; k < m->born_start[u + 1]; k++) {
      if (!m->shared[m->born[k]]) m->born_bytes[u] += m->size[m->born[k]];
      has_birth[m->born[k]] = true;
    }
  }
  for (size_t t = 0; t < mp_graph_tensor_count(g); t++) {
    if (mp_graph_tensor(g, t)->kind == MP_TENSOR_OUTPUT) {
      m->keep[sm_buf(m, t)] = true;
    }
  }
  /* Activation buffers no op creates: graph inputs planned as
   * activations, live from step 0. */
  for (size_t b = 0; b < m->n_buf; b++) {
    if (has_birth[b] || !m->size[b]) continue;
    m->start_mem += m->size[b];
    if (m->user_start[b] == m->user_start[b + 1] && !m->keep[b]) {
      m->start_free += m->size[b];
    }
  }
  mp_free(m->a, has_birth);
  return MP_OK;
}

/* The buffers op u reads (pass 0) or creates (pass 1): list[*s .. *e). */
static const uint32_t *sm_touched(const sm_model *m, uint32_t u, int pass,
                                  uint32_t *s, uint32_t *e) {
  *s = pass ? m->born_start[u] : m->use_start[u];
  *e = pass ? m->born_start[u + 1] : m->use_start[u + 1];
  return pass ? m->born : m->uses;
}

/* ---- simulation ---------------------------------------------------------- */

/* The scratch of a simulation is remain[0 .. 2 n_buf): remaining users
 * per buffer, then whether each buffer is born. */

/* Bytes u creates, given which buffers are born already. */
static size_t sm_grow(const sm_model *m, uint32_t u, const uint32_t *remain) {
  size_t g = m->born_bytes[u];
  const uint32_t *alive = remain + m->n_buf;
  for (uint32_t k = m->born_start[u]; k < m->born_start[u + 1]; k++) {
    uint32_t b = m->born[k];
    if (m->shared[b] && !alive[b]) g += m->size[b];
  }
  return g;
}

/* Bytes freed after u runs, given remaining users per buffer (before u). */
static size_t sm_freed(const sm_model *m, uint32_t u, const uint32_t *remain) {
  size_t f = 0;
  for (uint32_t k = m->use_start[u]; k < m->use_start[u + 1]; k++) {
    uint32_t b = m->uses[k];
    if (remain[b] == 1 && !m->keep[b]) f += m->size[b];
  }
  for (uint32_t k = m->born_start[u]; k < m->born_start[u + 1]; k++) {
    uint32_t b = m->born[k];
    bool now = !m->shared[b] || !remain[m->n_buf + b];
    if (m->user_start[b] == m->user_start[b + 1] && !m->keep[b] && now)
      f += m->size[b];
  }
  return f;
}

static void sm_run_op(const sm_model *m, uint32_t u, uint32_t *remain) {
  for (uint32_t k = m->use_start[u]; k < m->use_start[u + 1]; k++) {
    remain[m->uses[k]]--;
  }
  for (uint32_t k = m->born_start[u]; k < m->born_start[u + 1]; k++) {
    remain[m->n_buf + m->born[k]] = 1;
  }
}

static void sm_reset(const sm_model *m, uint32_t *remain) {
  for (size_t b = 0; b < m->n_buf; b++) {
    remain[b] = m->user_start[b + 1] - m->user_start[b];
    remain[m->n_buf + b] = 0;
  }
}

/* The peak of order; step[k] (when not NULL) gets the live bytes of step
 * k and after[k] those left after it. */
static size_t sm_sim(const sm_model *m, const uint32_t *order, uint32_t *remain,
                     size_t *step, size_t *after) {
  size_t live = m->start_mem, peak = 0;
  sm_reset(m, remain);
  for (size_t k = 0; k < m->n_ops; k++) {
    uint32_t u = order[k];
    live += sm_grow(m, u, remain);
    if (live > peak) peak = live;
    if (step) step[k] = live;
    live -= sm_freed(m, u, remain);
    sm_run_op(m, u, remain);
    if (k == 0) live -= m->start_free;
    if (after) after[k] = live;
  }
  return peak;
}

/* ---- greedy list schedules ----------------------------------------------- */

typedef enum { SM_GREEDY_PEAK, SM_GREEDY_NET } sm_greedy_kind;

/* true when candidate (peak p, net n, position i) beats the best so far. */
static bool sm_greedy_better(sm_greedy_kind kind, size_t p, size_t grow,
                             size_t shrink, size_t bp, size_t bgrow,
                             size_t bshrink) {
  /* net = grow - shrink compared without signed overflow:
   * grow - shrink < bgrow - bshrink <=> grow + bshrink < bgrow + shrink */
  size_t l = grow + bshrink, r = bgrow + shrink;
  if (kind == SM_GREEDY_PEAK) {
    if (p != bp) return p < bp;
    return l < r;
  }
  if (l != r) return l < r;
  return p < bp;
}

static mp_status sm_greedy(const sm_model *m, const uint32_t *rank,
                           sm_greedy_kind kind, uint32_t *out, uint32_t *remain,
                           mp_error *err) {
  size_t n = m->n_ops, n_ready = 0;
  uint32_t *indeg = mp_calloc(m->a, n + 1, sizeof *indeg);
  uint32_t *ready = mp_calloc(m->a, n + 1, sizeof *ready);
  if (!indeg || !ready) {
    mp_free(m->a, indeg);
    mp_free(m->a, ready);
    return sm_nomem(m, err);
  }
  sm_reset(m, remain);
  for (size_t u = 0; u < n; u++) {
    indeg[u] = m->pred_start[u + 1] - m->pred_start[u];
    if (!indeg[u]) ready[n_ready++] = (uint32_t)u;
  }
  size_t live = m->start_mem;
  for (size_t k = 0; k < n; k++) {
    size_t best = 0, bp = 0, bgrow = 0, bshrink = 0;
    for (size_t r = 0; r < n_ready; r++) {
      uint32_t u = ready[r];
      size_t grow = sm_grow(m, u, remain), shrink = sm_freed(m, u, remain);
      size_t p = live + grow;
      if (r == 0 ||
          sm_greedy_better(kind, p, grow, shrink, bp, bgrow, bshrink) ||
          (p == bp && grow + bshrink == bgrow + shrink &&
           rank[u] < rank[ready[best]])) {
        best = r, bp = p, bgrow = grow, bshrink = shrink;
      }
    }
    uint32_t u = ready[best];
    ready[best] = ready[--n_ready];
    out[k] = u;
    live = live + bgrow - bshrink;
    sm_run_op(m, u, remain);
    if (k == 0) live -= m->start_free;
    const mp_op *op = mp_graph_op(m->g, u);
    for (uint32_t j = 0; j < op->n_outputs; j++) {
      const mp_tensor *t = mp_graph_tensor(m->g, (size_t)op->outputs[j]);
      for (uint32_t c = 0; c < t->n_consumers; c++) {
        uint32_t v = t->consumers[c];
        /* indeg counts distinct predecessors: decrement once per op. */
        bool first = true;
        for (uint32_t q = 0; q < j && first; q++) {
          const mp_tensor *s = mp_graph_tensor(m->g, (size_t)op->outputs[q]);
          for (uint32_t d = 0; d < s->n_consumers; d++) {
            if (s->consumers[d] == v) first = false;
          }
        }
        if (first && --indeg[v] == 0) ready[n_ready++] = v;
      }
    }
  }
  mp_free(m->a, indeg);
  mp_free(m->a, ready);
  return MP_OK;
}

/* ---- segments ------------------------------------------------------------ */

/* Marks split ops of the reference order (invariant 2): position p holds
 * a split op when every op before it reaches it and it reaches every op
 * after it, which (in a topological order) is: every op before p has a
 * successor at or before p, and every op after p a predecessor at or
 * after p. Linear time with prefix maxima and suffix minima. */
static mp_status sm_splits(const sm_model *m, const uint32_t *ref,
                           const uint32_t *pos, bool *split, mp_error *err) {
  size_t n = m->n_ops;
  size_t *minsucc = mp_calloc(m->a, n + 1, sizeof *minsucc);
  int64_t *maxpred = mp_calloc(m->a, n + 1, sizeof *maxpred);
  if (!minsucc || !maxpred) {
    mp_free(m->a, minsucc);
    mp_free(m->a, maxpred);
    return sm_nomem(m, err);
  }
  for (size_t u = 0; u < n; u++) {
    minsucc[u] = n;
    maxpred[u] = -1;
  }
  for (size_t u = 0; u < n; u++) {
    for (uint32_t k = m->pred_start[u]; k < m->pred_start[u + 1]; k++) {
      uint32_t p = m->preds[k];
      if (pos[u] < minsucc[p]) minsucc[p] = pos[u];
      if ((int64_t)pos[p] > maxpred[u]) maxpred[u] = pos[p];
    }
  }
  size_t pre = 0; /* max minsucc over positions < p */
  for (size_t p = 0; p < n; p++) {
    split[p] = pre <= p;
    if (minsucc[ref[p]] > pre) pre = minsucc[ref[p]];
  }
  int64_t suf = INT64_MAX; /* min maxpred over positions > p */
  for (size_t p = n; p-- > 0;) {
    split[p] = split[p] && suf >= (int64_t)p;
    if (maxpred[ref[p]] < suf) suf = maxpred[ref[p]];
  }
  mp_free(m->a, minsucc);
  mp_free(m->a, maxpred);
  return MP_OK;
}

/* ---- the exact search over one segment ----------------------------------- */

/* The run's search budget (invariant 4): work counts each transition of
 * a search by its state's words, the same on every machine; the
 * wall-clock cap, only when one is set, is not. */
typedef struct sm_budget {
  uint64_t work, cap; /* spent, allowed */
  bool timed;         /* a wall-clock cap is set */
  struct timespec deadline;
  bool work_out, time_out; /* which one stopped a search */
} sm_budget;

typedef struct sm_dp {
  const sm_model *m;
  const uint32_t *ref;         /* reference order */
  const uint32_t *pos;         /* op -> position in ref */
  size_t lo, n;                /* the segment: positions lo .. lo + n - 1 */
  size_t words;                /* 64-bit words per state */
  size_t base;                 /* live bytes before the segment */
  uint64_t *pred_mask;         /* per local op: local predecessors */
  uint32_t *succ_start, *succ; /* per local op: local successors, CSR */
  bool *makes_shared;          /* per local op: creates a shared buffer */
  /* per local op: buffers that may be freed in the segment, CSR */
  uint32_t *fb_start, *fb;
  /* per such buffer: local users, CSR (indexed like fb) */
  uint32_t *fu_start, *fu;
  bool *fb_born;   /* the op creates it (freed now if nobody reads it) */
  size_t *fb_size; /* its bytes */
  /* per local op: the shared buffers it creates that no maker before the
   * segment has created, CSR; per such buffer its bytes and its makers
   * in the segment (local), CSR */
  uint32_t *sg_start, *sg_mk_start, *sg_mk;
  size_t *sg_size;
  /* scratch of one state's expansion, per local op: the bytes it creates
   * and (SIZE_MAX: not computed) those it frees */
  size_t *grow_at, *freed_at;
  /* history (every level) */
  uint32_t *h_parent, *h_op;
  size_t h_n, h_cap;
  /* current and next level; ready[]: each state's ready ops (invariant
   * 10), words per state like bits[] */
  uint64_t *bits[2], *ready[2];
  size_t *peak[2], *mem[2];
  uint64_t *id[2]; /* next level: parent index * n + op; current: history */
  size_t count[2], cap[2];
  uint32_t *table; /* open addressing over the next level (index + 1) */
  size_t table_cap;
  size_t ub;          /* a transition must beat this peak */
  size_t max_states;  /* per level */
  size_t max_history; /* predecessor links */
  sm_budget *budget;  /* the run's (shared by its searches) */
  bool cut;           /* a level was cut to max_states */
  bool timed_out;     /* the budget ran out */
  bool too_big;       /* history or state memory would exceed its cap */
  size_t expansions;
  mp_error *err;
} sm_dp;

static void sm_dp_release(sm_dp *d) {
  const mp_alloc *a = d->m->a;
  void *arrays[] = {
      d->pred_mask,   d->fb_start, d->fb,           d->fu_start, d->fu,
      d->fb_born,     d->fb_size,  d->h_parent,     d->h_op,     d->bits[0],
      d->bits[1],     d->peak[0],  d->peak[1],      d->mem[0],   d->mem[1],
      d->id[0],       d->id[1],    d->table,        d->ready[0], d->ready[1],
      d->succ_start,  d->succ,     d->makes_shared, d->sg_start, d->sg_size,
      d->sg_mk_start, d->sg_mk,    d->grow_at,      d->freed_at};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) {
    mp_free(a, arrays[i]);
  }
}

static size_t sm_local(const sm_dp *d, uint32_t op) {
  return d->pos[op] - d->lo;
}

static bool sm_in_seg(const sm_dp *d, uint32_t op) {
  return d->pos[op] >= d->lo && d->pos[op] < d->lo + d->n;
}

/* Can buffer b be freed inside the segment: no graph output, and no user
 * after the segment? (Users before it have run.) */
static bool sm_freeable(const sm_dp *d, uint32_t b) {
  const sm_model *m = d->m;
  if (m->keep[b] || !m->size[b]) return false;
  for (uint32_t k = m->user_start[b]; k < m->user_start[b + 1]; k++) {
    if (d->pos[m->users[k]] >= d->lo + d->n) return false;
  }
  return true;
}

/* The per-op buffer lists of the segment: counted first (fill false,
 * *nf and *nu receive the sizes), then filled. */
static void sm_dp_lists(sm_dp *d, bool fill, size_t *nf_out, size_t *nu_out) {
  const sm_model *m = d->m;
  size_t nf = 0, nu = 0;
  for (size_t i = 0; i < d->n; i++) {
    uint32_t u = d->ref[d->lo + i];
    if (fill) d->fb_start[i] = (uint32_t)nf;
    for (int pass = 0; pass < 2; pass++) {
      uint32_t s, e;
      const uint32_t *list = sm_touched(m, u, pass, &s, &e);
      for (uint32_t k = s; k < e; k++) {
        uint32_t b = list[k];
        /* A shared buffer is read by the op that placed its makers (the
         * Concat), so it is freed by a reader, never at birth. */
        if (!sm_freeable(d, b) || (pass == 1 && m->shared[b])) continue;
        if (fill) {
          d->fb[nf] = b;
          d->fb_born[nf] = pass == 1;
          d->fb_size[nf] = m->size[b];
          d->fu_start[nf] = (uint32_t)nu;
        }
        for (uint32_t j = m->user_start[b]; j < m->user_start[b + 1]; j++) {
          uint32_t v = m->users[j];
          if (!sm_in_seg(d, v)) continue;
          if (fill) d->fu[nu] = (uint32_t)sm_local(d, v);
          nu++;
        }
        nf++;
      }
    }
  }
  if (fill) {
    d->fb_start[d->n] = (uint32_t)nf;
    d->fu_start[nf] = (uint32_t)nu;
  }
  *nf_out = nf;
  *nu_out = nu;
}

/* The per-op lists of shared buffers sm_dp_grow walks: counted first
 * (fill false, *ns and *nm receive the sizes), then filled. A buffer a
 * maker before the segment created is born in every state: left out. */
static void sm_dp_shared(sm_dp *d, bool fill, size_t *ns_out, size_t *nm_out) {
  const sm_model *m = d->m;
  size_t ns = 0, nm = 0;
  for (size_t i = 0; i < d->n; i++) {
    uint32_t u = d->ref[d->lo + i];
    if (fill) d->sg_start[i] = (uint32_t)ns;
    for (uint32_t k = m->born_start[u];
         d->makes_shared[i] && k < m->born_start[u + 1]; k++) {
      uint32_t b = m->born[k];
      if (!m->shared[b]) continue;
      bool before = false;
      for (uint32_t j = m->maker_start[b]; j < m->maker_start[b + 1]; j++) {
        before = before || d->pos[m->makers[j]] < d->lo;
      }
      if (before) continue;
      if (fill) {
        d->sg_size[ns] = m->size[b];
        d->sg_mk_start[ns] = (uint32_t)nm;
      }
      for (uint32_t j = m->maker_start[b]; j < m->maker_start[b + 1]; j++) {
        uint32_t v = m->makers[j];
        if (!sm_in_seg(d, v)) continue; /* after the segment: never run */
        if (fill) d->sg_mk[nm] = (uint32_t)sm_local(d, v);
        nm++;
      }
      ns++;
    }
  }
  if (fill) {
    d->sg_start[d->n] = (uint32_t)ns;
    d->sg_mk_start[ns] = (uint32_t)nm;
  }
  *ns_out = ns;
  *nm_out = nm;
}

static bool sm_has(const uint64_t *s, size_t i) {
  return (s[i / 64] >> (i % 64)) & 1;
}

static mp_status sm_dp_init(sm_dp *d, mp_error *err) {
  const sm_model *m = d->m;
  const mp_alloc *a = m->a;
  d->words = (d->n + 63) / 64;
  d->pred_mask = mp_calloc(a, d->n * d->words, sizeof *d->pred_mask);
  d->succ_start = mp_calloc(a, d->n + 2, sizeof *d->succ_start);
  d->makes_shared = mp_calloc(a, d->n + 1, sizeof *d->makes_shared);
  if (!d->pred_mask || !d->succ_start || !d->makes_shared) {
    return sm_nomem(m, err);
  }
  /* The local edges, walked twice (the predecessor lists are distinct):
   * pass 0 sets the masks and counts each op's successors, pass 1 fills
   * the successor lists, using succ_start[j + 1] as j's cursor. */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < d->n; i++) {
      uint32_t u = d->ref[d->lo + i];
      for (uint32_t k = m->pred_start[u]; k < m->pred_start[u + 1]; k++) {
        uint32_t p = m->preds[k];
        if (!sm_in_seg(d, p)) continue;
        size_t j = sm_local(d, p);
        if (pass == 1) {
          d->succ[d->succ_start[j + 1]++] = (uint32_t)i;
          continue;
        }
        d->pred_mask[i * d->words + j / 64] |= (uint64_t)1 << (j % 64);
        d->succ_start[j + 2]++;
      }
      for (uint32_t k = m->born_start[u]; pass == 0 && k < m->born_start[u + 1];
           k++) {
        d->makes_shared[i] = d->makes_shared[i] || m->shared[m->born[k]];
      }
    }
    if (pass == 1) break;
    for (size_t j = 0; j < d->n; j++) {
      d->succ_start[j + 2] += d->succ_start[j + 1];
    }
    d->succ = mp_calloc(a, d->succ_start[d->n + 1] + 1, sizeof *d->succ);
    if (!d->succ) return sm_nomem(m, err);
  }
  size_t nf = 0, nu = 0;
  sm_dp_lists(d, false, &nf, &nu);
  d->fb_start = mp_calloc(a, d->n + 1, sizeof *d->fb_start);
  d->fb = mp_calloc(a, nf + 1, sizeof *d->fb);
  d->fb_born = mp_calloc(a, nf + 1, sizeof *d->fb_born);
  d->fb_size = mp_calloc(a, nf + 1, sizeof *d->fb_size);
  d->fu_start = mp_calloc(a, nf + 1, sizeof *d->fu_start);
  d->fu = mp_calloc(a, nu + 1, sizeof *d->fu);
  if (!d->fb_start || !d->fb || !d->fb_born || !d->fb_size || !d->fu_start ||
      !d->fu) {
    return sm_nomem(m, err);
  }
  sm_dp_lists(d, true, &nf, &nu);
  size_t ns = 0, nm = 0;
  sm_dp_shared(d, false, &ns, &nm);
  d->sg_start = mp_calloc(a, d->n + 1, sizeof *d->sg_start);
  d->sg_size = mp_calloc(a, ns + 1, sizeof *d->sg_size);
  d->sg_mk_start = mp_calloc(a, ns + 1, sizeof *d->sg_mk_start);
  d->sg_mk = mp_calloc(a, nm + 1, sizeof *d->sg_mk);
  d->grow_at = mp_calloc(a, d->n + 1, sizeof *d->grow_at);
  d->freed_at = mp_calloc(a, d->n + 1, sizeof *d->freed_at);
  if (!d->sg_start || !d->sg_size || !d->sg_mk_start || !d->sg_mk ||
      !d->grow_at || !d->freed_at) {
    return sm_nomem(m, err);
  }
  sm_dp_shared(d, true, &ns, &nm);
  return MP_OK;
}

#ifndef NDEBUG
/* Recomputes ready op i of set s: checks invariant 10 in assert builds. */
static bool sm_ready(const sm_dp *d, const uint64_t *s, size_t i) {
  if (sm_has(s, i)) return false;
  const uint64_t *p = &d->pred_mask[i * d->words];
  for (size_t w = 0; w < d->words; w++) {
    if (p[w] & ~s[w]) return false;
  }
  return true;
}
#endif

/* Bytes freed when local op i runs after set s (i not in s). */
static size_t sm_dp_freed(const sm_dp *d, const uint64_t *s, size_t i) {
  size_t f = 0;
  for (uint32_t k = d->fb_start[i]; k < d->fb_start[i + 1]; k++) {
    bool all = true;
    for (uint32_t j = d->fu_start[k]; j < d->fu_start[k + 1] && all; j++) {
      uint32_t v = d->fu[j];
      all = v == i || sm_has(s, v);
    }
    /* A buffer both read and created by i cannot occur (it would not be
     * created by i), so no buffer is counted twice. */
    if (all) f += d->fb_size[k];
  }
  return f;
}

/* Bytes op i of the segment creates in state s: its own buffers, and
 * each shared one none of whose makers has run (makers before the
 * segment all have, makers after it none: sm_dp_shared's lists). */
static size_t sm_dp_grow(const sm_dp *d, const uint64_t *s, size_t i) {
  size_t g = d->m->born_bytes[d->ref[d->lo + i]];
  for (uint32_t k = d->sg_start[i]; k < d->sg_start[i + 1]; k++) {
    bool born = false;
    for (uint32_t j = d->sg_mk_start[k]; j < d->sg_mk_start[k + 1] && !born;
         j++) {
      born = sm_has(s, d->sg_mk[j]);
    }
    if (!born) g += d->sg_size[k];
  }
  return g;
}

static uint64_t sm_hash(const uint64_t *s, size_t words) {
  uint64_t h = 0x9e3779b97f4a7c15u;
  for (size_t w = 0; w < words; w++) {
    h ^= s[w] + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdu;
  }
  return h ^ (h >> 33);
}

static mp_status sm_grow_level(sm_dp *d, int l, size_t need, mp_error *err) {
  if (need <= d->cap[l]) return MP_OK;
  const mp_alloc *a = d->m->a;
  size_t cap = d->cap[l] ? d->cap[l] : 256;
  while (cap < need) cap *= 2;
  uint64_t *bits = mp_realloc(a, d->bits[l], cap * d->words * sizeof *bits);
  if (bits) d->bits[l] = bits;
  size_t *peak = mp_realloc(a, d->peak[l], cap * sizeof *peak);
  if (peak) d->peak[l] = peak;
  size_t *mem = mp_realloc(a, d->mem[l], cap * sizeof *mem);
  if (mem) d->mem[l] = mem;
  uint64_t *id = mp_realloc(a, d->id[l], cap * sizeof *id);
  if (id) d->id[l] = id;
  uint64_t *rdy = mp_realloc(a, d->ready[l], cap * d->words * sizeof *rdy);
  if (rdy) d->ready[l] = rdy;
  if (!bits || !peak || !mem || !id || !rdy) return sm_nomem(d->m, err);
  d->cap[l] = cap;
  return MP_OK;
}

static mp_status sm_table(sm_dp *d, size_t need, mp_error *err) {
  size_t cap = 1024;
  while (cap < 2 * need) cap *= 2;
  if (cap != d->table_cap) {
    mp_free(d->m->a, d->table);
    d->table = mp_calloc(d->m->a, cap, sizeof *d->table);
    if (!d->table) {
      d->table_cap = 0;
      return sm_nomem(d->m, err);
    }
    d->table_cap = cap;
  } else {
    memset(d->table, 0, cap * sizeof *d->table);
  }
  return MP_OK;
}

/* Rebuilds the table over the next level, with room for need states. */
static mp_status sm_rehash(sm_dp *d, size_t need, mp_error *err) {
  mp_status st = sm_table(d, need, err);
  if (st != MP_OK) return st;
  for (size_t i = 0; i < d->count[1]; i++) {
    size_t h =
        sm_hash(&d->bits[1][i * d->words], d->words) & (d->table_cap - 1);
    while (d->table[h]) h = (h + 1) & (d->table_cap - 1);
    d->table[h] = (uint32_t)(i + 1);
  }
  return MP_OK;
}

/* Adds (or improves) state s of the next level; parent is the index in
 * the current level. The history entry is written when the level is
 * final; until then id[] holds parent * n + op. */
static mp_status sm_offer(sm_dp *d, const uint64_t *s, const uint64_t *rdy,
                          size_t peak, size_t mem, size_t parent, size_t op,
                          mp_error *err) {
  int l = 1;
  if (2 * (d->count[l] + 1) > d->table_cap) {
    mp_status st = sm_rehash(d, d->count[l] + 1, err);
    if (st != MP_OK) return st;
  }
  size_t h = sm_hash(s, d->words) & (d->table_cap - 1);
  while (d->table[h]) {
    size_t i = d->table[h] - 1;
    const uint64_t *t = &d->bits[l][i * d->words];
    size_t w = 0;
    while (w < d->words && t[w] == s[w]) w++;
    if (w == d->words) {
      if (peak < d->peak[l][i]) {
        d->peak[l][i] = peak;
        d->id[l][i] = (uint64_t)parent * d->n + op;
      }
      return MP_OK;
    }
    h = (h + 1) & (d->table_cap - 1);
  }
  size_t i = d->count[l];
  mp_status st = sm_grow_level(d, l, i + 1, err);
  if (st != MP_OK) return st;
  memcpy(&d->bits[l][i * d->words], s, d->words * sizeof *s);
  memcpy(&d->ready[l][i * d->words], rdy, d->words * sizeof *rdy);
  d->peak[l][i] = peak;
  d->mem[l][i] = mem;
  d->id[l][i] = (uint64_t)parent * d->n + op;
  d->table[h] = (uint32_t)(i + 1);
  d->count[l]++;
  return MP_OK;
}

double sched_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static bool sm_late(const struct timespec *deadline) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec > deadline->tv_sec ||
         (t.tv_sec == deadline->tv_sec && t.tv_nsec >= deadline->tv_nsec);
}

/* The budget is gone: its work (and the wall-clock cap, when one is set,
 * found passed now). */
static bool sm_spent(sm_budget *b) {
  if (b->work >= b->cap) b->work_out = true;
  if (b->timed && !b->time_out && !b->work_out && sm_late(&b->deadline)) {
    b->time_out = true;
  }
  return b->work_out || b->time_out;
}

/* A state of the next level as sorted when the level must be cut:
 * lowest peak, then lowest live bytes, then first found (invariant 4). */
typedef struct sm_rank {
  size_t peak, mem;
  uint32_t i;
} sm_rank;

/* a ranks before b (peak, then live bytes, then index: a total order) */
static bool sm_before(const sm_rank *a, const sm_rank *b) {
  if (a->peak != b->peak) return a->peak < b->peak;
  if (a->mem != b->mem) return a->mem < b->mem;
  return a->i < b->i;
}

/* Rearranges r[0..n) so that its first k entries are the k first in
 * rank (in any order): a quickselect with the median of three as pivot.
 * The order is total, so the set is the same whatever the pivots. */
static void sm_select(sm_rank *r, size_t n, size_t k) {
  size_t lo = 0, hi = n; /* the k-th in rank lies in r[lo..hi) */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    sm_rank a = r[lo], b = r[mid], c = r[hi - 1], pv;
    if (sm_before(&a, &b)) {
      pv = sm_before(&b, &c) ? b : sm_before(&a, &c) ? c : a;
    } else {
      pv = sm_before(&a, &c) ? a : sm_before(&b, &c) ? c : b;
    }
    /* three ways: [lo, lt) before pv, [lt, gt) pv itself, [gt, hi) after */
    size_t lt = lo, i = lo, gt = hi;
    while (i < gt) {
      if (sm_before(&r[i], &pv)) {
        sm_rank t = r[i];
        r[i++] = r[lt], r[lt++] = t;
      } else if (sm_before(&pv, &r[i])) {
        sm_rank t = r[i];
        r[i] = r[--gt], r[gt] = t;
      } else {
        i++;
      }
    }
    if (k < lt) {
      hi = lt;
    } else if (k >= gt) {
      lo = gt;
    } else {
      return;
    }
  }
}

/* Keeps the best max_states states of the next level (in place). */
static mp_status sm_cut(sm_dp *d, mp_error *err) {
  size_t n = d->count[1], k = d->max_states, w = d->words;
  sm_rank *r = mp_calloc(d->m->a, n, sizeof *r);
  uint8_t *keep = mp_calloc(d->m->a, n, 1);
  if (!r || !keep) {
    mp_free(d->m->a, r);
    mp_free(d->m->a, keep);
    return sm_nomem(d->m, err);
  }
  for (size_t i = 0; i < n; i++) {
    r[i] = (sm_rank){d->peak[1][i], d->mem[1][i], (uint32_t)i};
  }
  sm_select(r, n, k);
#ifndef NDEBUG
  /* every survivor ranks before every state dropped (what a sort keeps) */
  size_t last = 0, first = k;
  for (size_t j = 1; j < k; j++) last = sm_before(&r[last], &r[j]) ? j : last;
  for (size_t j = k + 1; j < n; j++)
    first = sm_before(&r[j], &r[first]) ? j : first;
  assert(sm_before(&r[last], &r[first]));
#endif
  for (size_t j = 0; j < k; j++) keep[r[j].i] = 1;
  /* The survivors keep their discovery order, so that compacting them
   * in place only ever moves a state to a lower index. */
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    if (!keep[i]) continue;
    if (i != j) {
      memcpy(&d->bits[1][j * w], &d->bits[1][i * w], w * sizeof *d->bits[1]);
      memcpy(&d->ready[1][j * w], &d->ready[1][i * w], w * sizeof *d->ready[1]);
      d->peak[1][j] = d->peak[1][i];
      d->mem[1][j] = d->mem[1][i];
      d->id[1][j] = d->id[1][i];
    }
    j++;
  }
  d->count[1] = k;
  d->cut = true;
  mp_free(d->m->a, r);
  mp_free(d->m->a, keep);
  return MP_OK;
}

/* The first ready op of state s (live bytes mem, peak so far peak) that
 * frees at least what it creates and whose step stays within the peak,
 * or d->n. Running it at once is never worse than running it later
 * (invariant 6), so the state needs no other successor. Leaves in
 * d->grow_at (and d->freed_at, or SIZE_MAX) what it computed for each
 * ready op it looked at: every one when it returns d->n. */
static size_t sm_free_step(sm_dp *d, const uint64_t *s, const uint64_t *rdy,
                           size_t mem, size_t peak) {
  for (size_t w = 0; w < d->words; w++) {
    for (uint64_t b = rdy[w]; b; b &= b - 1) {
      size_t j = w * 64 + (size_t)__builtin_ctzll(b);
      size_t grow = d->grow_at[j] = sm_dp_grow(d, s, j);
      d->freed_at[j] = SIZE_MAX;
      if (mem + grow > peak) continue;
      size_t freed = d->freed_at[j] = sm_dp_freed(d, s, j);
      if (grow <= freed) return j;
    }
  }
  return d->n;
}

/* The ready ops of cur + {j} from cur's (invariant 10): j leaves, and a
 * successor of j joins when its last local predecessor was j. */
static void sm_next_ready(const sm_dp *d, const uint64_t *rdy,
                          const uint64_t *s, size_t j, uint64_t *out) {
  memcpy(out, rdy, d->words * sizeof *out);
  out[j / 64] &= ~((uint64_t)1 << (j % 64));
  for (uint32_t k = d->succ_start[j]; k < d->succ_start[j + 1]; k++) {
    uint32_t v = d->succ[k];
    const uint64_t *p = &d->pred_mask[(size_t)v * d->words];
    bool all = true;
    for (size_t w = 0; w < d->words && all; w++) all = !(p[w] & ~s[w]);
    if (all) out[v / 64] |= (uint64_t)1 << (v % 64);
  }
}

/* Offers state i of the current level (set cur, ready ops rdy) plus op
 * j to the next level unless the transition cannot beat d->ub; s and nr
 * are scratch for the new set and its ready ops. What j creates and
 * frees comes from sm_free_step (d->grow_at, d->freed_at). */
static mp_status sm_expand(sm_dp *d, size_t level, size_t i,
                           const uint64_t *cur, const uint64_t *rdy, size_t j,
                           uint64_t *s, uint64_t *nr, mp_error *err) {
  assert(d->grow_at[j] == sm_dp_grow(d, cur, j));
  size_t mem = d->mem[0][i] + d->grow_at[j];
  size_t peak = mem > d->peak[0][i] ? mem : d->peak[0][i];
  if (peak >= d->ub) return MP_OK;
  size_t freed = d->freed_at[j];
  if (freed == SIZE_MAX) freed = sm_dp_freed(d, cur, j);
  assert(freed == sm_dp_freed(d, cur, j));
  mem -= freed;
  if (d->lo == 0 && level == 0) mem -= d->m->start_free;
  memcpy(s, cur, d->words * sizeof *s);
  s[j / 64] |= (uint64_t)1 << (j % 64);
  sm_next_ready(d, rdy, s, j, nr);
  mp_status st = sm_offer(d, s, nr, peak, mem, i, j, err);
  if (st == MP_OK && d->count[1] >= 4 * d->max_states) {
    st = sm_cut(d, err);
    if (st == MP_OK) st = sm_rehash(d, d->count[1] + 1, err);
  }
  d->budget->work += d->words;
  if (d->budget->work >= d->budget->cap) {
    d->budget->work_out = d->timed_out = true;
  } else if (d->budget->timed && ++d->expansions % 1024 == 0 &&
             sm_late(&d->budget->deadline)) {
    d->budget->time_out = d->timed_out = true;
  }
  return st;
}

/* Expands every state of the current level by every ready op into the
 * next level, cutting transitions that cannot beat d->ub. scratch holds
 * 3 x words. */
static mp_status sm_level(sm_dp *d, size_t level, uint64_t *scratch,
                          mp_error *err) {
  size_t w = d->words;
  uint64_t *s = scratch, *nr = scratch + w, *rdy = scratch + 2 * w;
  mp_status st = sm_table(d, d->count[0] * 4 + 16, err);
  d->count[1] = 0;
  for (size_t i = 0; st == MP_OK && !d->timed_out && i < d->count[0]; i++) {
    const uint64_t *cur = &d->bits[0][i * w];
    /* A copy: sm_offer may move the level's arrays. */
    memcpy(rdy, &d->ready[0][i * w], w * sizeof *rdy);
#ifndef NDEBUG
    for (size_t j = 0; j < d->n; j++) {
      assert(sm_has(rdy, j) == sm_ready(d, cur, j));
    }
#endif
    size_t only = sm_free_step(d, cur, rdy, d->mem[0][i], d->peak[0][i]);
    if (only < d->n) {
      st = sm_expand(d, level, i, cur, rdy, only, s, nr, err);
      continue;
    }
    for (size_t k = 0; st == MP_OK && !d->timed_out && k < w; k++) {
      for (uint64_t b = rdy[k]; st == MP_OK && !d->timed_out && b; b &= b - 1) {
        size_t j = k * 64 + (size_t)__builtin_ctzll(b);
        st = sm_expand(d, level, i, cur, rdy, j, s, nr, err);
      }
    }
  }
  if (d->timed_out) return st;
  if (st == MP_OK && d->count[1] > d->max_states) st = sm_cut(d, err);
  return st;
}

/* Makes room for need history entries. */
static mp_status sm_history(sm_dp *d, size_t need, mp_error *err) {
  if (need <= d->h_cap) return MP_OK;
  size_t cap = d->h_cap ? d->h_cap : 1024;
  while (cap < need) cap *= 2;
  uint32_t *par = mp_realloc(d->m->a, d->h_parent, cap * sizeof *par);
  if (par) d->h_parent = par;
  uint32_t *op = mp_realloc(d->m->a, d->h_op, cap * sizeof *op);
  if (op) d->h_op = op;
  if (!par || !op) return sm_nomem(d->m, err);
  d->h_cap = cap;
  return MP_OK;
}

/* Appends the next level's predecessor links to the history and makes it
 * the current level. Before: id[0][i] is current state i's history
 * entry, id[1][j] is parent * n + op. After: id[0][j] is the history
 * entry of (former next) state j. */
static mp_status sm_advance(sm_dp *d, mp_error *err) {
  size_t n = d->count[1];
  if (d->h_n + n > d->max_history) {
    d->too_big = true;
    return MP_OK;
  }
  mp_status st = sm_history(d, d->h_n + n, err);
  if (st != MP_OK) return st;
  for (size_t i = 0; i < n; i++) {
    uint64_t id = d->id[1][i];
    d->h_parent[d->h_n + i] = (uint32_t)d->id[0][id / d->n];
    d->h_op[d->h_n + i] = (uint32_t)(id % d->n);
    d->id[1][i] = d->h_n + i;
  }
  d->h_n += n;
  uint64_t *b = d->bits[0];
  d->bits[0] = d->bits[1], d->bits[1] = b;
  b = d->ready[0];
  d->ready[0] = d->ready[1], d->ready[1] = b;
  size_t *p = d->peak[0];
  d->peak[0] = d->peak[1], d->peak[1] = p;
  size_t *mm = d->mem[0];
  d->mem[0] = d->mem[1], d->mem[1] = mm;
  uint64_t *id = d->id[0];
  d->id[0] = d->id[1], d->id[1] = id;
  size_t c = d->cap[0];
  d->cap[0] = d->cap[1], d->cap[1] = c;
  d->count[0] = n;
  d->count[1] = 0;
  return MP_OK;
}

/* The search over one segment. *found: an order beating d->ub was found
 * and written to out (d->n ops, global indices), its peak in *peak_out. */
static mp_status sm_dp_run(sm_dp *d, uint32_t *out, size_t *peak_out,
                           bool *found, mp_error *err) {
  *found = false;
  uint64_t *s = mp_calloc(d->m->a, 3 * d->words, sizeof *s);
  mp_status st = s ? sm_grow_level(d, 0, 1, err) : sm_nomem(d->m, err);
  if (st == MP_OK) st = sm_history(d, 1, err);
  if (st != MP_OK) {
    mp_free(d->m->a, s);
    return st;
  }
  /* History entry 0 is the empty set, the only state of level 0. */
  d->h_parent[0] = d->h_op[0] = 0;
  d->h_n = 1;
  memset(d->bits[0], 0, d->words * sizeof *d->bits[0]);
  memset(d->ready[0], 0, d->words * sizeof *d->ready[0]);
  for (size_t i = 0; i < d->n; i++) {
    bool none = true;
    for (size_t w = 0; w < d->words; w++)
      none = none && !d->pred_mask[i * d->words + w];
    if (none) d->ready[0][i / 64] |= (uint64_t)1 << (i % 64);
  }
  d->peak[0][0] = 0;
  d->mem[0][0] = d->base;
  d->id[0][0] = 0;
  d->count[0] = 1;
  size_t level = 0;
  for (; st == MP_OK && level < d->n; level++) {
    st = sm_level(d, level, s, err);
    if (st != MP_OK || d->timed_out || d->count[1] == 0) break;
    st = sm_advance(d, err);
    if (d->too_big) break;
  }
  if (st == MP_OK && level == d->n) {
    size_t h = d->id[0][0]; /* the full set: the only state left */
    for (size_t k = d->n; k-- > 0;) {
      out[k] = d->ref[d->lo + d->h_op[h]];
      h = d->h_parent[h];
    }
    *peak_out = d->peak[0][0];
    *found = true;
  }
  mp_free(d->m->a, s);
  return st;
}

/* ---- the driver ---------------------------------------------------------- */

enum { SM_REF, SM_DFS, SM_RPO, SM_GREEDY_P, SM_GREEDY_N, SM_HINT, SM_NCAND };

typedef struct sm_run {
  sm_model m;
  int n_cand;               /* SM_NCAND with a hint, else one less */
  uint32_t *cand[SM_NCAND]; /* candidate orders */
  size_t *step[SM_NCAND];   /* their live bytes per step */
  size_t peak[SM_NCAND];
  size_t *after;    /* live bytes after each step of the reference order */
  uint32_t *pos;    /* op -> position in the reference order */
  bool *split;      /* position -> split op */
  uint32_t *remain; /* scratch: users left and born flags (sm_grow) */
  uint32_t *res;    /* the result */
  uint32_t *rank;   /* op -> position (greedy ties) */
  /* Sinking and single moves (invariants 12 and 13): the reference order
   * with one segment's order in it (restored after each use: the
   * segment's steps do not depend on the other segments' orders,
   * invariant 2), op positions in that segment, and its steps. */
  uint32_t *mv_full, *mv_loc;
  size_t *mv_step;
  sm_budget budget;
} sm_run;

static void sm_run_release(sm_run *r) {
  const mp_alloc *a = r->m.a;
  for (int c = 0; c < SM_NCAND; c++) {
    mp_free(a, r->cand[c]);
    mp_free(a, r->step[c]);
  }
  mp_free(a, r->after);
  mp_free(a, r->pos);
  mp_free(a, r->split);
  mp_free(a, r->remain);
  mp_free(a, r->res);
  mp_free(a, r->rank);
  mp_free(a, r->mv_full);
  mp_free(a, r->mv_loc);
  mp_free(a, r->mv_step);
  sm_release(&r->m);
}

static mp_status sm_candidates(sm_run *r, mp_order_kind *ref_kind,
                               mp_error *err) {
  const sm_model *m = &r->m;
  size_t n = m->n_ops;
  mp_order_kind used;
  mp_status st =
      sched_basic(m->g, MP_ORDER_AUTO, &r->cand[SM_REF], ref_kind, err);
  if (st == MP_OK)
    st = sched_basic(m->g, MP_ORDER_DFS, &r->cand[SM_DFS], &used, err);
  if (st == MP_OK)
    st = sched_basic(m->g, MP_ORDER_RPO, &r->cand[SM_RPO], &used, err);
  if (st != MP_OK) return st;
  for (size_t k = 0; k < n; k++) r->rank[r->cand[SM_REF][k]] = (uint32_t)k;
  for (int c = SM_GREEDY_P; c <= SM_GREEDY_N; c++) {
    r->cand[c] = mp_calloc(m->a, n, sizeof *r->cand[c]);
    if (!r->cand[c]) return sm_nomem(m, err);
    st =
        sm_greedy(m, r->rank, c == SM_GREEDY_P ? SM_GREEDY_PEAK : SM_GREEDY_NET,
                  r->cand[c], r->remain, err);
    if (st != MP_OK) return st;
  }
  r->n_cand = m->o->hint_rank ? SM_NCAND : SM_HINT;
  if (r->n_cand == SM_NCAND) {
    r->cand[SM_HINT] = mp_calloc(m->a, n, sizeof *r->cand[SM_HINT]);
    if (!r->cand[SM_HINT]) return sm_nomem(m, err);
    st = sched_ranked(m->g, m->o->hint_rank, r->cand[SM_HINT], err);
    if (st != MP_OK) return st;
  }
  for (int c = 0; c < r->n_cand; c++) {
    r->step[c] = mp_calloc(m->a, n, sizeof *r->step[c]);
    if (!r->step[c]) return sm_nomem(m, err);
    r->peak[c] = sm_sim(m, r->cand[c], r->remain, r->step[c],
                        c == SM_REF ? r->after : NULL);
  }
  return MP_OK;
}

/* ---- a lower bound on a segment's peak (invariants 7 and 11) ------------ */

typedef struct sm_bound {
  const sm_run *r;
  size_t lo, n, words;
  uint64_t *anc;  /* per local op: its local ancestors */
  bool *has_succ; /* per local op: a successor in the segment */
  size_t *live;   /* per local op: bytes live at its step in every order */
  uint32_t *bufs; /* activation buffers the segment's ops read or create */
  uint32_t n_bufs;
  uint32_t *bix; /* buffer -> 1 + its index in bufs; 0: not there */
} sm_bound;

static bool sm_bound_in(const sm_bound *b, uint32_t op) {
  return b->r->pos[op] >= b->lo && b->r->pos[op] < b->lo + b->n;
}

/* Is local op j an ancestor of local op i? */
static bool sm_anc(const sm_bound *b, size_t i, size_t j) {
  return (b->anc[i * b->words + j / 64] >> (j % 64)) & 1;
}

/* Does op v run at or after local op i in every order: v is i, comes
 * after the segment, or descends from i? */
static bool sm_bound_reaches(const sm_bound *b, size_t i, uint32_t v) {
  size_t p = b->r->pos[v];
  if (p >= b->lo + b->n) return true;
  if (p < b->lo) return false;
  size_t j = p - b->lo;
  return j == i || sm_anc(b, j, i);
}

/* Does op v run before local op i in every order: it comes before the
 * segment or is an ancestor of i? */
static bool sm_bound_before(const sm_bound *b, size_t i, uint32_t v) {
  size_t p = b->r->pos[v];
  if (p < b->lo) return true;
  if (p >= b->lo + b->n) return false;
  return sm_anc(b, i, p - b->lo);
}

/* Is buffer x live at local op i's step in every order? */
static bool sm_bound_live(const sm_bound *b, uint32_t x, size_t i) {
  const sm_model *m = &b->r->m;
  uint32_t u = b->r->cand[SM_REF][b->lo + i];
  bool born = m->maker_start[x] == m->maker_start[x + 1]; /* from step 0 */
  for (uint32_t k = m->maker_start[x]; k < m->maker_start[x + 1]; k++) {
    uint32_t v = m->makers[k];
    if (v == u && !m->shared[x]) return true; /* u creates it */
    if (v == u || sm_bound_before(b, i, v)) born = true;
  }
  if (!born) return false;
  if (m->keep[x]) return true;
  for (uint32_t k = m->user_start[x]; k < m->user_start[x + 1]; k++) {
    if (sm_bound_reaches(b, i, m->users[k])) return true;
  }
  return false;
}

/* Is buffer x live as the segment starts (in every order)? */
static bool sm_bound_live_in(const sm_bound *b, uint32_t x) {
  const sm_model *m = &b->r->m;
  bool born = m->maker_start[x] == m->maker_start[x + 1];
  for (uint32_t k = m->maker_start[x]; k < m->maker_start[x + 1]; k++) {
    if (b->r->pos[m->makers[k]] < b->lo) born = true;
  }
  if (!born) return false;
  if (m->keep[x]) return true;
  for (uint32_t k = m->user_start[x]; k < m->user_start[x + 1]; k++) {
    if (b->r->pos[m->users[k]] >= b->lo) return true;
  }
  return false;
}

/* Bytes op u frees when it is the segment's last op: the buffers it
 * reads that nothing after the segment reads, and those it alone creates
 * that nobody reads (never a graph output). */
static size_t sm_bound_last_frees(const sm_bound *b, uint32_t u) {
  const sm_model *m = &b->r->m;
  size_t f = 0;
  for (int pass = 0; pass < 2; pass++) {
    uint32_t s, e;
    const uint32_t *list = sm_touched(m, u, pass, &s, &e);
    for (uint32_t k = s; k < e; k++) {
      uint32_t x = list[k];
      bool kept = m->keep[x] || !m->size[x];
      /* created (not read) by u: its readers can only come after the
       * segment, which keeps it, as for the buffers u reads */
      if (pass) kept = kept || m->shared[x] || sm_reads(m, u, x);
      for (uint32_t j = m->user_start[x]; !kept && j < m->user_start[x + 1];
           j++) {
        kept = b->r->pos[m->users[j]] >= b->lo + b->n;
      }
      if (!kept) f += m->size[x];
    }
  }
  return f;
}

/* The first and last steps (invariant 7): the first op of any order has
 * no predecessor in the segment, and its step holds what was live before
 * the segment plus what it creates; the last op has no successor in it,
 * and its step holds what is live after the segment (the same in every
 * order) plus what it frees. The smallest of these over the candidates
 * for first and last bound every order's peak. */
static size_t sm_bound_ends(const sm_bound *b) {
  const sm_run *r = b->r;
  const sm_model *m = &r->m;
  size_t before = b->lo ? r->after[b->lo - 1] : m->start_mem;
  size_t after = r->after[b->lo + b->n - 1];
  size_t first = SIZE_MAX, last = SIZE_MAX;
  for (size_t i = 0; i < b->n; i++) {
    uint32_t u = r->cand[SM_REF][b->lo + i];
    bool has_pred = false;
    for (size_t w = 0; w < b->words; w++) has_pred |= b->anc[i * b->words + w];
    if (!has_pred && m->born_bytes[u] < first) first = m->born_bytes[u];
    size_t f = b->has_succ[i] ? SIZE_MAX : sm_bound_last_frees(b, u);
    if (f < last) last = f;
  }
  size_t lo = first == SIZE_MAX ? 0 : before + first;
  size_t hi = last == SIZE_MAX ? 0 : after + last;
  return lo > hi ? lo : hi;
}

static void sm_bound_release(sm_bound *b) {
  const mp_alloc *a = b->r->m.a;
  mp_free(a, b->anc);
  mp_free(a, b->has_succ);
  mp_free(a, b->live);
  mp_free(a, b->bufs);
  mp_free(a, b->bix);
}

/* The segment's ancestor sets and the activation buffers its ops touch. */
static mp_status sm_bound_init(sm_bound *b, const sm_run *r, size_t lo,
                               size_t n, mp_error *err) {
  const sm_model *m = &r->m;
  const uint32_t *ref = r->cand[SM_REF];
  *b = (sm_bound){.r = r, .lo = lo, .n = n, .words = (n + 63) / 64};
  b->has_succ = mp_calloc(m->a, n + 1, sizeof *b->has_succ);
  b->live = mp_calloc(m->a, n + 1, sizeof *b->live);
  b->bix = mp_calloc(m->a, m->n_buf + 1, sizeof *b->bix);
  b->anc = mp_calloc(m->a, n * b->words + 1, sizeof *b->anc);
  if (!b->has_succ || !b->live || !b->bix || !b->anc) return sm_nomem(m, err);
  size_t cap = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t u = ref[lo + i];
    cap += m->use_start[u + 1] - m->use_start[u];
    cap += m->born_start[u + 1] - m->born_start[u];
    for (uint32_t k = m->pred_start[u]; k < m->pred_start[u + 1]; k++) {
      uint32_t p = m->preds[k];
      if (!sm_bound_in(b, p)) continue;
      size_t j = r->pos[p] - lo;
      for (size_t w = 0; w < b->words; w++)
        b->anc[i * b->words + w] |= b->anc[j * b->words + w];
      b->anc[i * b->words + j / 64] |= (uint64_t)1 << (j % 64);
      b->has_succ[j] = true;
    }
  }
  b->bufs = mp_calloc(m->a, cap + 1, sizeof *b->bufs);
  if (!b->bufs) return sm_nomem(m, err);
  for (size_t i = 0; i < n; i++) {
    uint32_t u = ref[lo + i];
    for (int pass = 0; pass < 2; pass++) {
      uint32_t s, e;
      const uint32_t *list = sm_touched(m, u, pass, &s, &e);
      for (uint32_t k = s; k < e; k++) {
        uint32_t x = list[k];
        if (b->bix[x] || !m->size[x]) continue;
        b->bufs[b->n_bufs++] = x;
        b->bix[x] = b->n_bufs;
      }
    }
  }
  return MP_OK;
}

/* The largest, over the segment's ops, of the bytes live at that op's
 * step in every order (invariant 7), each op's in b->live. The buffers
 * the segment's ops read or create are tested one by one; every other
 * buffer live into the segment is read by nobody in it, so it stays live
 * throughout. */
static size_t sm_step_bound(sm_bound *b) {
  const sm_run *r = b->r;
  const sm_model *m = &r->m;
  /* live into the segment and untouched by it: live at every step */
  size_t through = b->lo ? r->after[b->lo - 1] : m->start_mem - m->start_free;
  for (uint32_t k = 0; k < b->n_bufs; k++) {
    if (!sm_bound_live_in(b, b->bufs[k])) continue;
    size_t s = m->size[b->bufs[k]];
    through = through > s ? through - s : 0;
  }
  size_t lb = 0;
  for (size_t i = 0; i < b->n; i++) {
    size_t live = through;
    for (uint32_t k = 0; k < b->n_bufs; k++) {
      if (sm_bound_live(b, b->bufs[k], i)) live += m->size[b->bufs[k]];
    }
    b->live[i] = live;
    if (live > lb) lb = live;
  }
  size_t ends = sm_bound_ends(b);
  return ends > lb ? ends : lb;
}

/* ---- branches: a bound across them and an order (invariant 11) --------- */

/* Designated ops a branch bound uses at most (one bit each). */
#define SM_MAX_BRANCHES 64
/* Ops and reader edges the branch bound's paths that end at the last
 * op's descendants may visit in one segment (sm_branch_bound). */
#define SM_LAST_WORK ((size_t)1 << 24)

typedef struct sm_branches {
  size_t k;                    /* designated ops: pairwise unordered */
  uint32_t d[SM_MAX_BRANCHES]; /* local ops, by live bytes (greedy) */
  size_t v[SM_MAX_BRANCHES];   /* bytes each leaves live (all k) */
  size_t bound, bound_k;       /* the best bound: the first bound_k */
  uint64_t *down, *up;         /* per local op: the designated ops it
                                  descends from / is an ancestor of (or is) */
  size_t *reach;               /* per local op: the widest path's bytes */
  uint64_t *writers, *makers;  /* per bufs entry: down of the ops writing
                                  it / up of the ops creating it */
  bool *early;                 /* per bufs entry: born before the segment */
  size_t *charge;              /* per bufs entry */
  size_t path_cost;            /* ops and reader edges one path pass visits */
  size_t last_work;            /* path visits left for the last-op paths */
} sm_branches;

static void sm_branches_release(const sm_model *m, sm_branches *br) {
  void *arrays[] = {br->down,   br->up,    br->reach, br->writers,
                    br->makers, br->early, br->charge};
  for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++) {
    mp_free(m->a, arrays[k]);
  }
}

typedef struct sm_live_op {
  size_t live;
  uint32_t i;
} sm_live_op;

static int sm_live_cmp(const void *pa, const void *pb) {
  const sm_live_op *a = pa, *b = pb;
  if (a->live != b->live) return a->live > b->live ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

/* Is every op of d[0..k) unordered with local op i? */
static bool sm_unordered(const sm_bound *b, const uint32_t *d, size_t k,
                         size_t i) {
  for (size_t j = 0; j < k; j++) {
    if (d[j] == i || sm_anc(b, i, d[j]) || sm_anc(b, d[j], i)) return false;
  }
  return true;
}

/* The widest path's bytes from every local op (invariant 11), with the
 * first k designated ops: reach[i] is the largest, over paths from op i
 * along its outputs' readers to a reader after the segment or a graph
 * output, of the smallest charge on the path. */
static void sm_reach_masks(const sm_bound *b, sm_branches *br, size_t k) {
  const sm_run *r = b->r;
  const sm_model *m = &r->m;
  const uint32_t *ref = r->cand[SM_REF];
  uint64_t all = k == 64 ? ~(uint64_t)0 : ((uint64_t)1 << k) - 1;
  for (uint32_t q = 0; q < b->n_bufs; q++) br->writers[q] = br->makers[q] = 0;
  for (size_t i = 0; i < b->n; i++) {
    uint32_t u = ref[b->lo + i];
    const mp_op *op = mp_graph_op(m->g, u);
    for (uint32_t o = 0; o < op->n_outputs; o++) {
      uint32_t q = b->bix[sm_buf(m, (size_t)op->outputs[o])];
      if (q) br->writers[q - 1] |= br->down[i] & all;
    }
    for (uint32_t k2 = m->born_start[u]; k2 < m->born_start[u + 1]; k2++) {
      uint32_t q = b->bix[m->born[k2]];
      if (q) br->makers[q - 1] |= br->up[i] & all;
    }
  }
}

/* reach[] from charge[]: the widest path's bytes from every local op;
 * a path also ends at a descendant of local op v (none: SIZE_MAX). */
static void sm_reach_paths(const sm_bound *b, sm_branches *br, size_t v) {
  const sm_run *r = b->r;
  const sm_model *m = &r->m;
  const uint32_t *ref = r->cand[SM_REF];
  for (size_t i = b->n; i-- > 0;) {
    const mp_op *op = mp_graph_op(m->g, ref[b->lo + i]);
    size_t best = 0;
    for (uint32_t o = 0; o < op->n_outputs; o++) {
      const mp_tensor *t = mp_graph_tensor(m->g, (size_t)op->outputs[o]);
      uint32_t x = sm_buf(m, (size_t)op->outputs[o]);
      size_t c = b->bix[x] ? br->charge[b->bix[x] - 1] : 0;
      if (c <= best) continue;
      size_t cont = m->keep[x] ? SIZE_MAX : 0;
      for (uint32_t j = 0; j < t->n_consumers; j++) {
        size_t p = r->pos[t->consumers[j]];
        if (p >= b->lo + b->n ||
            (v != SIZE_MAX && p >= b->lo && sm_anc(b, p - b->lo, v))) {
          cont = SIZE_MAX; /* it runs after the segment, or after v */
        } else if (p > b->lo + i && br->reach[p - b->lo] > cont) {
          cont = br->reach[p - b->lo];
        }
      }
      if (cont < c) c = cont;
      if (c > best) best = c;
    }
    br->reach[i] = best;
  }
}

static void sm_reach(const sm_bound *b, sm_branches *br, size_t k) {
  const sm_model *m = &b->r->m;
  sm_reach_masks(b, br, k);
  for (uint32_t q = 0; q < b->n_bufs; q++) {
    uint64_t w = br->writers[q], up = br->makers[q];
    int c = __builtin_popcountll(w);
    bool alone = up == 0 || (up == w && c == 1);
    br->charge[q] =
        br->early[q] || !c || !alone ? 0 : m->size[b->bufs[q]] / (size_t)c;
  }
  sm_reach_paths(b, br, SIZE_MAX);
}

/* The bound of the first k designated ops: the last of them to run finds
 * every other one's bytes live (invariant 11). Fills br->v with the
 * widest paths to the segment's end. While br->last_work lasts, the
 * paths for each last op d_g also end at d_g's descendants (none has
 * run at d_g's step), which can only widen them: a chain whose result
 * waits for a join with d_g's branch counts its result, not the join's
 * small output after it. */
static size_t sm_branch_bound(const sm_bound *b, sm_branches *br, size_t k) {
  sm_reach(b, br, k);
  size_t sum = 0, least = SIZE_MAX;
  for (size_t j = 0; j < k; j++) {
    br->v[j] = br->reach[br->d[j]];
    sum += br->v[j];
  }
  bool last = br->last_work >= k * br->path_cost;
  if (last) br->last_work -= k * br->path_cost;
  for (size_t g = 0; g < k; g++) {
    size_t t = b->live[br->d[g]];
    if (last) {
      sm_reach_paths(b, br, br->d[g]);
      for (size_t h = 0; h < k; h++) t += h == g ? 0 : br->reach[br->d[h]];
    } else {
      t += sum - br->v[g];
    }
    if (t < least) least = t;
  }
  return least;
}

/* The designated ops from seed: it, then greedily by live bytes every op
 * unordered with the ones picked. */
static size_t sm_branch_pick(const sm_bound *b, const sm_live_op *by,
                             uint32_t seed, uint32_t *d) {
  size_t k = 1;
  d[0] = seed;
  for (size_t s = 0; s < b->n && k < SM_MAX_BRANCHES; s++) {
    if (by[s].i != seed && sm_unordered(b, d, k, by[s].i)) d[k++] = by[s].i;
  }
  return k;
}

/* The best bound over the prefixes of br->d[0..k), with down and up
 * rebuilt for them. */
static void sm_branch_prefixes(const sm_bound *b, sm_branches *br) {
  memset(br->down, 0, b->n * sizeof *br->down);
  memset(br->up, 0, b->n * sizeof *br->up);
  br->bound = br->bound_k = 0;
  for (size_t j = 0; j < br->k; j++) {
    uint64_t bit = (uint64_t)1 << j;
    size_t dj = br->d[j];
    for (size_t i = 0; i < b->n; i++) {
      if (i == dj || sm_anc(b, i, dj)) br->down[i] |= bit;
      if (i == dj || sm_anc(b, dj, i)) br->up[i] |= bit;
    }
    if (j == 0) continue;
    size_t t = sm_branch_bound(b, br, j + 1);
    if (t > br->bound) br->bound = t, br->bound_k = j + 1;
  }
}

/* Seeds of the designated ops tried: the op of most live bytes, and the
 * ops among the SM_SEED_POOL of most live bytes whose best unordered
 * partner has the most (the smaller of the two counts): the op of most
 * live bytes is often a join every branch reaches, unordered with few. */
#define SM_SEEDS 4
#define SM_SEED_POOL 32

static size_t sm_branch_seeds(const sm_bound *b, const sm_live_op *by,
                              uint32_t *seeds) {
  sm_live_op pool[SM_SEED_POOL];
  size_t n_pool = b->n < SM_SEED_POOL ? b->n : SM_SEED_POOL, n_seeds = 1;
  seeds[0] = by[0].i;
  for (size_t s = 0; s < n_pool; s++) {
    size_t partner = 0; /* by is by live bytes: the first unordered one */
    for (size_t t = 0; t < b->n && !partner; t++) {
      if (sm_unordered(b, &by[s].i, 1, by[t].i)) partner = by[t].live;
    }
    pool[s] =
        (sm_live_op){partner < by[s].live ? partner : by[s].live, by[s].i};
  }
  qsort(pool, n_pool, sizeof *pool, sm_live_cmp);
  for (size_t s = 0; s < n_pool && n_seeds < SM_SEEDS; s++) {
    if (pool[s].live && pool[s].i != seeds[0]) seeds[n_seeds++] = pool[s].i;
  }
  return n_seeds;
}

/* The arrays of br, and which buffers are born before the segment. */
static bool sm_branches_alloc(const sm_bound *b, sm_branches *br) {
  const sm_model *m = &b->r->m;
  size_t n = b->n;
  br->down = mp_calloc(m->a, n + 1, sizeof *br->down);
  br->up = mp_calloc(m->a, n + 1, sizeof *br->up);
  br->reach = mp_calloc(m->a, n + 1, sizeof *br->reach);
  br->writers = mp_calloc(m->a, b->n_bufs + 1, sizeof *br->writers);
  br->makers = mp_calloc(m->a, b->n_bufs + 1, sizeof *br->makers);
  br->early = mp_calloc(m->a, b->n_bufs + 1, sizeof *br->early);
  br->charge = mp_calloc(m->a, b->n_bufs + 1, sizeof *br->charge);
  if (!br->down || !br->up || !br->reach || !br->writers || !br->makers ||
      !br->early || !br->charge) {
    return false;
  }
  br->path_cost = n;
  for (size_t i = 0; i < n; i++) {
    const mp_op *op = mp_graph_op(m->g, b->r->cand[SM_REF][b->lo + i]);
    for (uint32_t o = 0; o < op->n_outputs; o++) {
      br->path_cost +=
          mp_graph_tensor(m->g, (size_t)op->outputs[o])->n_consumers + 1;
    }
  }
  br->last_work = SM_LAST_WORK;
  for (uint32_t q = 0; q < b->n_bufs; q++) {
    uint32_t x = b->bufs[q];
    br->early[q] = m->maker_start[x] == m->maker_start[x + 1];
    for (uint32_t k = m->maker_start[x]; k < m->maker_start[x + 1]; k++) {
      if (!sm_bound_in(b, m->makers[k])) br->early[q] = true;
    }
  }
  return true;
}

/* Ops v the frontier bound looks at, by the step bound's bytes. */
#define SM_FRONT_OPS 256

/* The frontier bound's term for frontier op j at local op v's step: the
 * smaller of the widest path's bytes and the charges of the buffers it
 * reads that no path counts (rd: frontier ops reading each; seen:
 * scratch stamps). */
static size_t sm_front_term(const sm_bound *b, const sm_branches *br,
                            const uint32_t *rd, uint32_t *seen, size_t j,
                            size_t v) {
  const sm_model *m = &b->r->m;
  size_t a = br->d[j], t = br->reach[a];
  uint32_t u = b->r->cand[SM_REF][b->lo + a];
  size_t ns = 0;
  for (uint32_t k = m->use_start[u]; k < m->use_start[u + 1] && ns < t; k++) {
    uint32_t x = m->uses[k], q = b->bix[x];
    if (!q || br->writers[q - 1] || m->shared[x] || seen[q - 1] == j + 1) {
      continue;
    }
    seen[q - 1] = (uint32_t)j + 1;
    if (!sm_bound_live(b, x, v)) ns += m->size[x] / rd[q - 1];
  }
  return ns < t ? ns : t;
}

/* The frontier bound at local op v (invariant 11); scratch: br's arrays,
 * rd and seen (n_bufs each). */
static size_t sm_front_at(const sm_bound *b, sm_branches *br, uint32_t *rd,
                          uint32_t *seen, size_t v) {
  const sm_model *m = &b->r->m;
  size_t n = b->n, k = 0, w = b->words;
  const uint64_t *av = &b->anc[v * w];
  for (size_t i = 0; i < n && k < SM_MAX_BRANCHES; i++) {
    if (i == v || sm_anc(b, v, i) || sm_anc(b, i, v)) continue;
    bool front = true; /* every local ancestor of i is one of v */
    for (size_t x = 0; x < w && front; x++)
      front = !(b->anc[i * w + x] & ~av[x]);
    if (front) br->d[k++] = (uint32_t)i;
  }
  if (!k) return b->live[v];
  memset(br->down, 0, n * sizeof *br->down); /* br->up stays 0: unused */
  memset(rd, 0, b->n_bufs * sizeof *rd);
  memset(seen, 0, b->n_bufs * sizeof *seen);
  for (size_t j = 0; j < k; j++) {
    uint64_t bit = (uint64_t)1 << j;
    for (size_t i = 0; i < n; i++) {
      if (i == br->d[j] || sm_anc(b, i, br->d[j])) br->down[i] |= bit;
    }
  }
  sm_reach_masks(b, br, k);
  for (size_t j = 0; j < k; j++) {
    uint32_t u = b->r->cand[SM_REF][b->lo + br->d[j]];
    for (uint32_t e = m->use_start[u]; e < m->use_start[u + 1]; e++) {
      uint32_t q = b->bix[m->uses[e]];
      if (!q || seen[q - 1] == j + 1) continue;
      seen[q - 1] = (uint32_t)j + 1;
      rd[q - 1]++;
    }
  }
  for (uint32_t q = 0; q < b->n_bufs; q++) {
    uint32_t x = b->bufs[q];
    int c = __builtin_popcountll(br->writers[q]);
    br->charge[q] = br->early[q] || !c || m->shared[x] || sm_bound_live(b, x, v)
                        ? 0
                        : m->size[x] / (size_t)c;
    seen[q] = 0;
  }
  sm_reach_paths(b, br, v);
  size_t sum = b->live[v];
  for (size_t j = 0; j < k; j++) sum += sm_front_term(b, br, rd, seen, j, v);
  return sum;
}

/* The frontier bound (invariant 11): the largest, over the first
 * SM_FRONT_OPS ops v by the step bound's bytes, of sm_front_at. Stops
 * once it meets stop (an order's peak). */
static mp_status sm_front_bound(const sm_bound *b, size_t stop, size_t *out,
                                mp_error *err) {
  const sm_model *m = &b->r->m;
  size_t n = b->n;
  *out = 0;
  sm_branches br;
  memset(&br, 0, sizeof br);
  uint32_t *rd = mp_calloc(m->a, 2 * (size_t)b->n_bufs + 1, sizeof *rd);
  sm_live_op *by = mp_calloc(m->a, n + 1, sizeof *by);
  mp_status st = MP_OK;
  if (!rd || !by || !sm_branches_alloc(b, &br)) {
    st = sm_nomem(m, err);
  } else {
    for (size_t i = 0; i < n; i++) {
      by[i] = (sm_live_op){b->live[i], (uint32_t)i};
    }
    qsort(by, n, sizeof *by, sm_live_cmp);
    size_t best = 0;
    for (size_t s = 0; s < n && s < SM_FRONT_OPS && best < stop; s++) {
      size_t t = sm_front_at(b, &br, rd, rd + b->n_bufs, by[s].i);
      if (t > best) best = t;
    }
    *out = best;
  }
  mp_free(m->a, rd);
  mp_free(m->a, by);
  sm_branches_release(m, &br);
  return st;
}

/* Picks the designated ops (the seed whose antichain gives the best
 * bound) and the best bound over their prefixes. */
static mp_status sm_branches_run(const sm_bound *b, sm_branches *br,
                                 mp_error *err) {
  const sm_model *m = &b->r->m;
  size_t n = b->n;
  memset(br, 0, sizeof *br);
  if (n < 2) return MP_OK;
  sm_live_op *by = mp_calloc(m->a, n + 1, sizeof *by);
  if (!by || !sm_branches_alloc(b, br)) {
    mp_free(m->a, by);
    return sm_nomem(m, err);
  }
  for (size_t i = 0; i < n; i++) by[i] = (sm_live_op){b->live[i], (uint32_t)i};
  qsort(by, n, sizeof *by, sm_live_cmp);
  uint32_t seeds[SM_SEEDS], best_d[SM_MAX_BRANCHES];
  size_t n_seeds = sm_branch_seeds(b, by, seeds), best_k = 0, best = 0;
  for (size_t s = 0; s < n_seeds; s++) {
    br->k = sm_branch_pick(b, by, seeds[s], br->d);
    if (br->k < 2) continue;
    sm_branch_prefixes(b, br);
    if (br->bound > best || !best_k) {
      best = br->bound;
      best_k = br->k;
      memcpy(best_d, br->d, br->k * sizeof *br->d);
    }
  }
  mp_free(m->a, by);
  br->k = best_k;
  if (best_k < 2) return MP_OK;
  memcpy(br->d, best_d, best_k * sizeof *br->d);
  sm_branch_prefixes(b, br);
  /* br->v for every designated op, as the branch order wants them */
  if (br->bound_k != br->k) sm_branch_bound(b, br, br->k);
  return MP_OK;
}

/* The branch order of the first k designated ops (invariant 11): by
 * live bytes less what each leaves, each op's unrun ancestors, the op,
 * then every descendant it makes ready; then the rest. out gets local
 * ops. */
static void sm_branch_order(const sm_bound *b, const sm_branches *br, size_t k,
                            bool *run, uint32_t *out) {
  uint32_t by[SM_MAX_BRANCHES];
  for (size_t j = 0; j < k; j++) by[j] = (uint32_t)j;
  for (size_t j = 1; j < k; j++) { /* insertion sort: k <= 64 */
    uint32_t x = by[j];
    size_t p = j;
    while (p > 0) {
      uint32_t y = by[p - 1];
      size_t ax = b->live[br->d[x]] + br->v[y],
             ay = b->live[br->d[y]] + br->v[x];
      if (ax < ay || (ax == ay && br->d[x] > br->d[y])) break;
      by[p] = y;
      p--;
    }
    by[p] = x;
  }
  const sm_model *m = &b->r->m;
  const uint32_t *ref = b->r->cand[SM_REF];
  size_t n = b->n, n_out = 0;
  memset(run, 0, n * sizeof *run);
  for (size_t s = 0; s < k; s++) {
    size_t d = br->d[by[s]];
    if (run[d]) continue;
    for (size_t i = 0; i < d; i++) {
      if (!run[i] && sm_anc(b, d, i)) run[i] = true, out[n_out++] = (uint32_t)i;
    }
    run[d] = true;
    out[n_out++] = (uint32_t)d;
    for (size_t i = d + 1; i < n; i++) {
      if (run[i] || !sm_anc(b, i, d)) continue;
      uint32_t u = ref[b->lo + i];
      bool ready = true;
      for (uint32_t q = m->pred_start[u]; ready && q < m->pred_start[u + 1];
           q++) {
        uint32_t p = m->preds[q];
        ready = !sm_bound_in(b, p) || run[b->r->pos[p] - b->lo];
      }
      if (ready) run[i] = true, out[n_out++] = (uint32_t)i;
    }
  }
  for (size_t i = 0; i < n; i++) {
    if (!run[i]) out[n_out++] = (uint32_t)i;
  }
}

static size_t sm_range_max(const size_t *v, size_t lo, size_t hi) {
  size_t best = 0;
  for (size_t k = lo; k <= hi; k++) best = v[k] > best ? v[k] : best;
  return best;
}

/* One search over the segment at positions lo .. lo + n - 1 against the
 * upper bound *ub, keeping at most max_states states a level (0: the
 * default, capped for wide segments): the exact search (a cut is
 * reported in info), or with a small max_states a beam.
 * An order beating *ub goes to r->res and lowers *ub; *finished (when
 * not NULL) is set when an exact search ran to the end. */
static mp_status sm_search(sm_run *r, size_t lo, size_t n, size_t max_states,
                           bool beam, size_t *ub, bool *finished,
                           mp_schedule_info *info, mp_error *err) {
  sm_dp d;
  memset(&d, 0, sizeof d);
  d.m = &r->m;
  d.ref = r->cand[SM_REF];
  d.pos = r->pos;
  d.lo = lo;
  d.n = n;
  d.base = lo ? r->after[lo - 1] : r->m.start_mem;
  d.ub = *ub;
  d.max_states = max_states ? max_states : SM_DEFAULT_STATES;
  d.max_history = SM_MAX_HISTORY;
  if (!max_states) {
    size_t fit = SM_LEVEL_BYTES / (4 * sizeof(uint64_t) * ((n + 63) / 64));
    if (d.max_states > fit) d.max_states = fit ? fit : 1;
  } else if (max_states > SM_MAX_HISTORY / 16) {
    d.max_history = max_states * 16;
  }
  d.budget = &r->budget;
  size_t peak = 0;
  bool found = false;
  uint32_t *out = mp_calloc(r->m.a, n, sizeof *out);
  mp_status st = out ? sm_dp_init(&d, err) : sm_nomem(&r->m, err);
  if (st == MP_OK) st = sm_dp_run(&d, out, &peak, &found, err);
  if (st == MP_OK) {
    info->dp_states += d.h_n;
    if (beam) {
      info->beam_improved += found && peak < *ub;
    } else if (d.cut || d.timed_out || d.too_big) {
      info->exact = false;
    } else {
      info->dp_segments++;
      if (finished) *finished = true;
    }
    if (found && peak < *ub) {
      memcpy(&r->res[lo], out, n * sizeof *out);
      *ub = peak;
    }
  }
  mp_free(r->m.a, out);
  sm_dp_release(&d);
  return st;
}

/* A segment (positions lo..hi) between the two phases of sm_order. */
typedef struct sm_seg {
  size_t lo, hi;
  size_t ub;        /* the peak of the best order found */
  size_t lb;        /* a peak every order of the segment reaches */
  size_t heuristic; /* ... of the best candidate */
  bool open;        /* neither proven optimal nor given up */
  bool moved;       /* sinking or single moves lowered its peak (12, 13) */
} sm_seg;

/* Tries the branch orders of all the designated ops and of the prefix
 * that gave the bound; keeps one that beats the best order so far. */
static mp_status sm_branch_try(sm_run *r, const sm_bound *b, sm_branches *br,
                               size_t *ub, mp_schedule_info *info,
                               mp_error *err) {
  const sm_model *m = &r->m;
  size_t n = b->n, lo = b->lo, n_ops = m->n_ops;
  bool *run = mp_calloc(m->a, n + 1, sizeof *run);
  uint32_t *loc = mp_calloc(m->a, n + 1, sizeof *loc);
  uint32_t *full = mp_calloc(m->a, n_ops + 1, sizeof *full);
  size_t *step = mp_calloc(m->a, n_ops + 1, sizeof *step);
  mp_status st = MP_OK;
  if (!run || !loc || !full || !step) {
    st = sm_nomem(m, err);
  } else {
    const uint32_t *ref = r->cand[SM_REF];
    memcpy(full, ref, n_ops * sizeof *full);
    bool better = false;
    size_t ks[2] = {br->k, br->bound_k};
    for (int t = 0; t < 2; t++) {
      size_t k = ks[t];
      if (k < 2 || (t == 1 && k == br->k)) continue;
      if (t == 1) sm_branch_bound(b, br, k); /* this prefix's bytes */
      sm_branch_order(b, br, k, run, loc);
      for (size_t i = 0; i < n; i++) full[lo + i] = ref[lo + loc[i]];
      sm_sim(m, full, r->remain, step, NULL);
      size_t p = sm_range_max(step, lo, lo + n - 1);
      if (p < *ub) {
        memcpy(&r->res[lo], &full[lo], n * sizeof *full);
        *ub = p;
        better = true;
      }
    }
    info->branch_improved += better;
  }
  mp_free(m->a, run);
  mp_free(m->a, loc);
  mp_free(m->a, full);
  mp_free(m->a, step);
  return st;
}

/* ---- sinking ops to their first reader (invariant 12) ------------------ */

/* May op u, at local position i of the segment's order, run just before
 * position q instead: every buffer it creates is read (or kept), and
 * every activation buffer it reads is kept or read at or after q by
 * another op (so none lives longer)? loc: op -> position in the order
 * for the segment's ops; other ops keep their reference positions. */
static bool sm_sinkable(const sm_run *r, const uint32_t *loc, size_t lo,
                        size_t hi, uint32_t u, size_t q) {
  const sm_model *m = &r->m;
  for (uint32_t k = m->born_start[u]; k < m->born_start[u + 1]; k++) {
    uint32_t x = m->born[k];
    if (m->size[x] && !m->keep[x] && m->user_start[x] == m->user_start[x + 1])
      return false; /* dies at u's step */
  }
  for (uint32_t k = m->use_start[u]; k < m->use_start[u + 1]; k++) {
    uint32_t x = m->uses[k];
    if (!m->size[x] || m->keep[x]) continue;
    bool later = false;
    for (uint32_t j = m->user_start[x]; j < m->user_start[x + 1] && !later;
         j++) {
      uint32_t w = m->users[j];
      size_t p = r->pos[w];
      if (p >= lo && p <= hi) p = loc[w];
      later = w != u && p >= q;
    }
    if (!later) return false;
  }
  return true;
}

/* The position in the segment's order of op u's first reader there
 * (loc: positions); SIZE_MAX when none is in the segment. */
static size_t sm_first_reader(const sm_run *r, const uint32_t *loc, size_t lo,
                              size_t hi, uint32_t u) {
  const mp_op *op = mp_graph_op(r->m.g, u);
  size_t q = SIZE_MAX;
  for (uint32_t o = 0; o < op->n_outputs; o++) {
    if (op->outputs[o] < 0) continue;
    const mp_tensor *t = mp_graph_tensor(r->m.g, (size_t)op->outputs[o]);
    for (uint32_t j = 0; j < t->n_consumers; j++) {
      uint32_t c = t->consumers[j];
      size_t p = r->pos[c];
      if (p >= lo && p <= hi && loc[c] < q) q = loc[c];
    }
  }
  return q;
}

/* Moves, from the segment's last op back, every op that may (sm_sinkable)
 * to just before its first reader in the segment (to its end when none
 * is in it), in res[lo..hi]; loc gets positions. Returns the ops moved. */
static size_t sm_sink_order(const sm_run *r, uint32_t *res, size_t lo,
                            size_t hi, uint32_t *loc) {
  size_t moved = 0;
  for (size_t p = lo; p <= hi; p++) loc[res[p]] = (uint32_t)p;
  for (size_t i = hi; i-- > lo;) {
    uint32_t u = res[i];
    size_t q = sm_first_reader(r, loc, lo, hi, u);
    if (q == SIZE_MAX) q = hi + 1; /* read after the segment (or never) */
    if (q == i + 1 || !sm_sinkable(r, loc, lo, hi, u, q)) continue;
    for (size_t k = i; k + 1 < q; k++) {
      res[k] = res[k + 1];
      loc[res[k]] = (uint32_t)k;
    }
    res[q - 1] = u;
    loc[u] = (uint32_t)(q - 1);
    moved++;
  }
  return moved;
}

/* Puts the segment's order from r->res into r->mv_full. */
static void sm_seg_load(sm_run *r, const sm_seg *sg) {
  memcpy(&r->mv_full[sg->lo], &r->res[sg->lo],
         (sg->hi - sg->lo + 1) * sizeof *r->mv_full);
}

/* Keeps r->mv_full's segment order when its peak p is below sg->ub,
 * then puts the reference order back into r->mv_full. */
static void sm_seg_keep(sm_run *r, sm_seg *sg, size_t p) {
  size_t n = sg->hi - sg->lo + 1;
  if (p < sg->ub) {
    sg->ub = p;
    sg->moved = true;
    memcpy(&r->res[sg->lo], &r->mv_full[sg->lo], n * sizeof *r->res);
  }
  memcpy(&r->mv_full[sg->lo], &r->cand[SM_REF][sg->lo], n * sizeof *r->mv_full);
}

/* Sinks the segment's order in r->res (invariant 12) and keeps the
 * result when its peak is lower than sg->ub, the peak of that order. */
static void sm_sink(sm_run *r, sm_seg *sg) {
  sm_seg_load(r, sg);
  size_t p = SIZE_MAX;
  if (sm_sink_order(r, r->mv_full, sg->lo, sg->hi, r->mv_loc)) {
    sm_sim(&r->m, r->mv_full, r->remain, r->mv_step, NULL);
    p = sm_range_max(r->mv_step, sg->lo, sg->hi);
    /* invariant 12: an op moved to the end holds what is live after the
     * segment, no more than the split op after it */
    assert(p <= sg->ub || p <= r->after[sg->hi]);
  }
  sm_seg_keep(r, sg, p);
}

/* ---- moving single ops (invariant 13) ------------------------------------ */

/* Simulations of the whole graph one segment's moves may run, in ops
 * simulated (the moves of all segments share SM_MOVE_WORK * 4). */
#define SM_MOVE_WORK ((size_t)1 << 18)

/* Rotates full[i] to position t (the ops between shift by one). */
static void sm_rotate(uint32_t *full, size_t i, size_t t) {
  uint32_t u = full[i];
  if (t > i) {
    memmove(&full[i], &full[i + 1], (t - i) * sizeof *full);
  } else {
    memmove(&full[t + 1], &full[t], (i - t) * sizeof *full);
  }
  full[t] = u;
}

/* The positions op u may move to in full[lo..hi]: after its last
 * predecessor and before its first reader there (loc: positions). */
static void sm_window(const sm_run *r, const uint32_t *loc, size_t lo,
                      size_t hi, uint32_t u, size_t *a, size_t *b) {
  const sm_model *m = &r->m;
  *a = lo;
  *b = hi;
  for (uint32_t k = m->pred_start[u]; k < m->pred_start[u + 1]; k++) {
    size_t p = r->pos[m->preds[k]];
    if (p >= lo && p <= hi && loc[m->preds[k]] + 1 > *a)
      *a = loc[m->preds[k]] + 1;
  }
  size_t q = sm_first_reader(r, loc, lo, hi, u);
  if (q != SIZE_MAX) *b = q - 1; /* q > u's position >= lo */
}

/* Invariant 13: while the segment's order is above its bound, moves one
 * op at a time to the first position (in its window) where the
 * segment's peak falls, simulated; stops when no single move lowers it
 * or the work (*work: ops simulated, shared) runs out. */
static void sm_move(sm_run *r, sm_seg *sg, size_t *work) {
  const sm_model *m = &r->m;
  size_t lo = sg->lo, hi = sg->hi, n_ops = m->n_ops;
  size_t cap = *work < SM_MOVE_WORK ? *work : SM_MOVE_WORK, spent = 0;
  uint32_t *full = r->mv_full, *loc = r->mv_loc;
  sm_seg_load(r, sg);
  for (size_t p = lo; p <= hi; p++) loc[full[p]] = (uint32_t)p;
  size_t best = sg->ub;
  bool improved = true;
  while (improved && best > sg->lb && spent < cap) {
    improved = false;
    for (size_t i = lo; i <= hi && best > sg->lb && spent < cap; i++) {
      size_t a, b;
      sm_window(r, loc, lo, hi, full[i], &a, &b);
      for (size_t t = a; t <= b && spent < cap; t++) {
        if (t == i) continue;
        sm_rotate(full, i, t);
        sm_sim(m, full, r->remain, r->mv_step, NULL);
        spent += n_ops;
        size_t pk = sm_range_max(r->mv_step, lo, hi);
        if (pk < best) {
          best = pk;
          improved = true;
          for (size_t p = lo; p <= hi; p++) loc[full[p]] = (uint32_t)p;
          break; /* positions changed: the next op's window anew */
        }
        sm_rotate(full, t, i);
      }
    }
  }
  *work -= spent < *work ? spent : *work;
  sm_seg_keep(r, sg, best);
}

/* Phase 1 for one segment: the best candidate's sub-order; unless it
 * meets the step bound, the branch orders and the branch bound, then
 * unless it meets that, a beam search (invariants 7, 8 and 11). */
static mp_status sm_seg_start(sm_run *r, const mp_schedule_opts *o, sm_seg *sg,
                              mp_schedule_info *info, mp_error *err) {
  size_t lo = sg->lo, hi = sg->hi, n = hi - lo + 1, best = 0;
  for (int c = 0; c < r->n_cand; c++) {
    size_t p = sm_range_max(r->step[c], lo, hi);
    if (c == 0 || p < sg->ub) best = (size_t)c, sg->ub = p;
  }
  memcpy(&r->res[lo], &r->cand[best][lo], n * sizeof *r->res);
  info->segments++;
  if (n > info->largest_segment) info->largest_segment = n;
  sg->heuristic = sg->ub;
  if (n == 1) {
    sg->lb = sg->ub; /* one op has one order */
    return MP_OK;
  }
  sm_sink(r, sg);
  if (n > SM_MAX_DP_OPS) {
    info->exact = false; /* too large to search: heuristics only */
    return MP_OK;
  }
  sm_bound b;
  sm_branches br;
  memset(&br, 0, sizeof br);
  size_t lb = 0, branch0 = info->branch_improved;
  mp_status st = sm_bound_init(&b, r, lo, n, err);
  if (st == MP_OK) lb = sm_step_bound(&b);
  if (st == MP_OK && sg->ub < lb) {
    st = mp_error_set(err, MP_ERR_INTERNAL,
                      "%s: memory order: the step bound %zu exceeds the "
                      "peak %zu of an order (steps %zu..%zu)",
                      mp_graph_source(r->m.g), lb, sg->ub, lo, hi);
  }
  if (st == MP_OK && sg->ub > lb) st = sm_branches_run(&b, &br, err);
  if (st == MP_OK && sg->ub > lb && br.k >= 2) {
    st = sm_branch_try(r, &b, &br, &sg->ub, info, err);
  }
  size_t front = 0;
  if (st == MP_OK && sg->ub > lb && sg->ub > br.bound) {
    st = sm_front_bound(&b, sg->ub, &front, err);
    if (front > br.bound) br.bound = front;
  }
  sm_branches_release(&r->m, &br);
  sm_bound_release(&b);
  if (st != MP_OK) return st;
  if (sg->ub < br.bound) {
    return mp_error_set(err, MP_ERR_INTERNAL,
                        "%s: memory order: the branch bound %zu exceeds the "
                        "peak %zu of an order (steps %zu..%zu)",
                        mp_graph_source(r->m.g), br.bound, sg->ub, lo, hi);
  }
  bool by_branches = br.bound > lb;
  if (by_branches) lb = br.bound;
  sg->lb = lb;
  /* a branch order may leave ops to sink */
  if (st == MP_OK && sg->ub > lb && info->branch_improved > branch0) {
    sm_sink(r, sg);
  }
  size_t states = o->max_states ? o->max_states : SM_DEFAULT_STATES;
  if (st == MP_OK && sg->ub > lb && SM_BEAM < states && !sm_spent(&r->budget)) {
    size_t before = sg->ub;
    st = sm_search(r, lo, n, SM_BEAM, true, &sg->ub, NULL, info, err);
    if (st == MP_OK && sg->ub < before && sg->ub > lb) sm_sink(r, sg);
  }
  if (st == MP_OK && sg->ub == lb) {
    /* optimal (invariants 7 and 11) */
    if (by_branches) {
      info->branch_segments++;
    } else {
      info->bound_segments++;
    }
  } else {
    sg->open = true;
  }
  return st;
}

/* Phase 2 for one open segment: the exact search against the best order
 * so far, while the budget lasts. */
static mp_status sm_seg_exact(sm_run *r, const mp_schedule_opts *o, sm_seg *sg,
                              mp_schedule_info *info, mp_error *err) {
  if (sm_spent(&r->budget)) {
    info->exact = false;
    return MP_OK;
  }
  bool finished = false;
  mp_status st = sm_search(r, sg->lo, sg->hi - sg->lo + 1, o->max_states, false,
                           &sg->ub, &finished, info, err);
  if (finished) sg->lb = sg->ub; /* the optimum */
  return st;
}

static void sm_budget_start(sm_budget *b, const mp_schedule_opts *o) {
  b->cap = o->budget_work ? o->budget_work : MP_SCHEDULE_BUDGET_WORK;
  b->timed = o->budget_ms > 0;
  if (!b->timed) return;
  clock_gettime(CLOCK_MONOTONIC, &b->deadline);
  long long ns =
      (long long)b->deadline.tv_nsec + (long long)(o->budget_ms * 1e6);
  b->deadline.tv_sec += (time_t)(ns / 1000000000LL);
  b->deadline.tv_nsec = (long)(ns % 1000000000LL);
}

static const char *const sm_names[SM_NCAND] = {
    "file", "dfs", "rpo", "greedy-peak", "greedy-net", "previous"};

static mp_status sm_order(sm_run *r, const mp_schedule_opts *o,
                          mp_schedule_info *info, mp_error *err) {
  size_t n = r->m.n_ops;
  mp_order_kind ref_kind = MP_ORDER_FILE;
  mp_status st = sm_candidates(r, &ref_kind, err);
  if (st != MP_OK) return st;
  for (int c = 0; c < r->n_cand; c++) {
    info->cand[c].name = c == SM_REF ? mp_order_name(ref_kind) : sm_names[c];
    info->cand[c].peak = r->peak[c];
  }
  info->n_cand = (size_t)r->n_cand;
  for (size_t k = 0; k < n; k++) r->pos[r->cand[SM_REF][k]] = (uint32_t)k;
  st = sm_splits(&r->m, r->cand[SM_REF], r->pos, r->split, err);
  memcpy(r->mv_full, r->cand[SM_REF], n * sizeof *r->mv_full);
  info->exact = true;
  /* Phase 1 over every segment, then phase 2: a budget spent on one
   * segment's exact search leaves the others their beam (invariant 8). */
  sm_seg *segs = st == MP_OK ? mp_calloc(r->m.a, n, sizeof *segs) : NULL;
  if (st == MP_OK && !segs) st = sm_nomem(&r->m, err);
  size_t n_seg = 0;
  for (size_t p = 0; st == MP_OK && p < n;) {
    if (r->split[p]) {
      r->res[p] = r->cand[SM_REF][p];
      p++;
      continue;
    }
    size_t q = p;
    while (q + 1 < n && !r->split[q + 1]) q++;
    segs[n_seg] = (sm_seg){.lo = p, .hi = q};
    st = sm_seg_start(r, o, &segs[n_seg++], info, err);
    p = q + 1;
  }
  size_t move_work = 4 * SM_MOVE_WORK;
  for (size_t k = 0; st == MP_OK && k < n_seg; k++) {
    if (segs[k].open) st = sm_seg_exact(r, o, &segs[k], info, err);
    if (st == MP_OK && segs[k].open && segs[k].ub > segs[k].lb) {
      sm_sink(r, &segs[k]);
    }
    if (st == MP_OK && segs[k].open && segs[k].ub > segs[k].lb) {
      sm_move(r, &segs[k], &move_work);
    }
  }
  /* a peak every order of the graph reaches (invariant 5) */
  size_t lb = 0;
  for (size_t k = 0; st == MP_OK && k < n_seg; k++) {
    info->dp_improved += segs[k].ub < segs[k].heuristic;
    info->move_improved += segs[k].moved;
    if (segs[k].lb > lb) lb = segs[k].lb;
  }
  for (size_t p = 0; st == MP_OK && p < n; p++) {
    if (r->split[p] && r->step[SM_REF][p] > lb) lb = r->step[SM_REF][p];
  }
  mp_free(r->m.a, segs);
  if (st != MP_OK) return st;
  info->peak = sm_sim(&r->m, r->res, r->remain, NULL, NULL);
  if (info->peak < lb) {
    return mp_error_set(err, MP_ERR_INTERNAL,
                        "%s: memory order: peak %zu is below the bound %zu "
                        "every order has",
                        mp_graph_source(r->m.g), info->peak, lb);
  }
  info->bound = lb;
  if (!info->exact && info->peak == lb) {
    info->exact = true;
    info->peak_bound = true;
  }
  for (int c = 0; c < r->n_cand; c++) {
    if (info->peak > r->peak[c]) {
      return mp_error_set(err, MP_ERR_INTERNAL,
                          "%s: memory order: peak %zu is worse than the %s "
                          "order's %zu",
                          mp_graph_source(r->m.g), info->peak,
                          info->cand[c].name, r->peak[c]);
    }
  }
  return MP_OK;
}

mp_status sched_memory(const mp_graph *g, const mp_schedule_opts *o,
                       uint32_t **order, mp_schedule_info *info,
                       mp_error *err) {
  double t0 = sched_now_ms();
  sm_run r;
  memset(&r, 0, sizeof r);
  mp_status st = sm_build(&r.m, g, o, err);
  size_t n = r.m.n_ops, m1 = n ? n : 1;
  if (st == MP_OK) {
    r.after = mp_calloc(r.m.a, m1, sizeof *r.after);
    r.pos = mp_calloc(r.m.a, m1, sizeof *r.pos);
    r.split = mp_calloc(r.m.a, m1, sizeof *r.split);
    r.remain = mp_calloc(r.m.a, 2 * r.m.n_buf + 1, sizeof *r.remain);
    r.res = mp_calloc(r.m.a, m1, sizeof *r.res);
    r.rank = mp_calloc(r.m.a, m1, sizeof *r.rank);
    r.mv_full = mp_calloc(r.m.a, m1, sizeof *r.mv_full);
    r.mv_loc = mp_calloc(r.m.a, m1, sizeof *r.mv_loc);
    r.mv_step = mp_calloc(r.m.a, m1, sizeof *r.mv_step);
    if (!r.after || !r.pos || !r.split || !r.remain || !r.res || !r.rank ||
        !r.mv_full || !r.mv_loc || !r.mv_step) {
      st = sm_nomem(&r.m, err);
    }
  }
  sm_budget_start(&r.budget, o);
  if (st == MP_OK && n) st = sm_order(&r, o, info, err);
  info->work = r.budget.work;
  info->work_budget = r.budget.cap;
  info->work_hit = r.budget.work_out;
  info->time_hit = r.budget.time_out;
  info->budget_hit = info->work_hit || info->time_hit;
  if (st == MP_OK && !n) info->exact = true;
  if (st != MP_OK) {
    sm_run_release(&r);
    return st;
  }
  info->used = MP_ORDER_MEMORY;
  info->ms = sched_now_ms() - t0;
  *order = r.res;
  r.res = NULL;
  sm_run_release(&r);
  return MP_OK;
}
