/*
 * share.c -- the one predicate that decides when an op's output may live
 * in the bytes of one of its inputs (STYLE rule 13), and the buffer
 * bookkeeping the views and inplace passes share.
 *
 * Buffers under construction are a union-find over tensors (c->parent,
 * with the root being the smallest tensor index only after
 * mp_alias_build renumbers; here a root is any member), with a member
 * list per root so that the predicate can look at every tensor already in
 * a buffer.
 *
 * Invariants:
 *   1. Ops are offered in a topological order, so when op o is offered,
 *      its output's buffer holds only the output and its own views, and
 *      every tensor of its inputs' buffers is written already.
 *   2. "Every other reader is an ancestor of o" is checked on the graph,
 *      not on an order: it holds in every order, so a memory-aware
 *      scheduler can reorder freely without breaking an in-place write.
 *   3. When the pass has an order (c->order), every representative has
 *      a summary (share_sum) of its buffer, and a tree over the steps
 *      holds the padded activation bytes live at each step under that
 *      order, over the buffers as they stand: share_union_at takes out
 *      the two buffers it joins and puts in the joint one. So share_lb
 *      is the tree's root, not a rebuild of the lifetimes (a graph with
 *      thousands of Concats made the concat pass quadratic), and it
 *      equals the lifetimes' bound (checked in assert builds).
 *   4. Between share_save and share_restore every write to the buffers
 *      under construction (parent, rel, rule, slice, next, summaries,
 *      and tree adds) is journaled, and share_restore undoes them in
 *      reverse order (a tree add by the opposite add): a rejected trial
 *      costs what it changed, not a copy of every array. A journal that
 *      cannot grow makes the next share_lb fail with out of memory.
 *   5. The readers rule (2b) uses the order's positions too: a reader
 *      after o in it is no ancestor of o, and the search for ancestors
 *      never goes before the earliest reader it looks for.
 */
#include "share.h"

#include "mplan/backend.h"
#include "mplan/lifetime.h"

#include <assert.h>
#include <string.h>

/* Searches at most this many ops back from an op before giving up (and
 * refusing to share): keeps a pathological graph linear in practice. */
#define SHARE_SEARCH_MAX 100000

/* ---- the journal (invariant 4) ------------------------------------------ */

enum { SJ_PARENT, SJ_REL, SJ_RULE, SJ_SLICE, SJ_NEXT, SJ_SUM, SJ_TREE };

struct share_jentry {
  uint8_t kind;
  uint32_t i, j; /* the index (SJ_TREE: the steps i..j) */
  int64_t v;     /* the old value (SJ_TREE: the bytes added) */
  share_sum sum; /* SJ_SUM: the old summary */
};

static void share_log(share_ctx *s, const share_jentry *e) {
  if (!s->jon) return;
  if (s->jn == s->jcap) {
    size_t cap = s->jcap ? 2 * s->jcap : 256;
    share_jentry *j =
        mp_realloc(mp_graph_alloc(s->g), s->jour, cap * sizeof *j);
    if (!j) {
      s->jfail = true; /* share_lb reports it before any restore */
      return;
    }
    s->jour = j;
    s->jcap = cap;
  }
  s->jour[s->jn++] = *e;
}

static void share_set_parent(share_ctx *s, uint32_t t, uint32_t v) {
  share_log(s,
            &(share_jentry){.kind = SJ_PARENT, .i = t, .v = s->c->parent[t]});
  s->c->parent[t] = v;
}

static void share_set_rel(share_ctx *s, uint32_t t, int64_t v) {
  share_log(s, &(share_jentry){.kind = SJ_REL, .i = t, .v = s->c->rel[t]});
  s->c->rel[t] = v;
}

static void share_set_rule(share_ctx *s, uint32_t t, mp_alias_rule v) {
  share_log(s, &(share_jentry){.kind = SJ_RULE, .i = t, .v = s->c->rule[t]});
  s->c->rule[t] = (uint8_t)v;
}

static void share_set_slice(share_ctx *s, uint32_t t, uint8_t v) {
  share_log(s, &(share_jentry){.kind = SJ_SLICE, .i = t, .v = s->slice[t]});
  s->slice[t] = v;
}

static void share_set_next(share_ctx *s, uint32_t t, uint32_t v) {
  share_log(s, &(share_jentry){.kind = SJ_NEXT, .i = t, .v = s->next[t]});
  s->next[t] = v;
}

/* ---- live bytes per step (invariant 3) ----------------------------------- */

/* Adds v bytes to the steps lo..hi of node k (covering nl..nr). */
static void share_tree_add(share_ctx *s, size_t k, size_t nl, size_t nr,
                           size_t lo, size_t hi, int64_t v) {
  if (hi < nl || nr < lo) return;
  if (lo <= nl && nr <= hi) {
    s->mx[k] += v;
    s->tg[k] += v;
    return;
  }
  size_t mid = nl + (nr - nl) / 2;
  share_tree_add(s, 2 * k, nl, mid, lo, hi, v);
  share_tree_add(s, 2 * k + 1, mid + 1, nr, lo, hi, v);
  int64_t a = s->mx[2 * k], b = s->mx[2 * k + 1];
  s->mx[k] = (a > b ? a : b) + s->tg[k];
}

static void share_live_add(share_ctx *s, int64_t first, int64_t last,
                           int64_t v) {
  share_tree_add(s, 1, 0, s->tn - 1, (size_t)first, (size_t)last, v);
  share_log(
      s,
      &(share_jentry){
          .kind = SJ_TREE, .i = (uint32_t)first, .j = (uint32_t)last, .v = v});
}

/* The summary of tensor t alone: its interval under c->order, its bytes
 * (at offset 0), alignment and index. */
static share_sum share_sum_of(share_ctx *s, uint32_t t) {
  const mp_tensor *x = mp_graph_tensor(s->g, t);
  int64_t f, l;
  mp_lifetime_interval(x, s->step_of, (int64_t)s->n_steps, &f, &l);
  return (share_sum){0, (int64_t)mp_lifetime_size(x),
                     f, l,
                     t, (uint32_t)mp_backend_align(s->c->backend, x->kind)};
}

/* Puts the buffer summarised by m, whose first byte is at bytes after
 * u's representative's, into u. */
static void share_sum_join(share_sum *u, const share_sum *m, int64_t at) {
  if (at + m->lo < u->lo) u->lo = at + m->lo;
  if (at + m->hi > u->hi) u->hi = at + m->hi;
  if (m->first < u->first) u->first = m->first;
  if (m->last > u->last) u->last = m->last;
  if (m->least < u->least) u->least = m->least;
  if (m->align > u->align) u->align = m->align;
}

/* Buffer r's padded activation bytes, as mp_lifetime_buffer_desc makes
 * them from its summary: from the lowest member's first byte to the
 * furthest end, aligned as its strictest member, 0 unless the member
 * with the smallest index (the map's root) is an activation. */
static int64_t share_padded(share_ctx *s, const share_sum *m) {
  size_t padded = 0;
  const mp_tensor *root = mp_graph_tensor(s->g, m->least);
  if (mp_lifetime_class(root, s->c->inputs_act) != MP_CLASS_ACTIVATION ||
      !mp_align_up((size_t)(m->hi - m->lo), m->align, &padded)) {
    return 0;
  }
  return (int64_t)padded;
}

/* Invariant 3: summaries of every buffer and the live bytes of every
 * step under c->order (a tree over the steps: range add, largest
 * value), kept by share_union_at. */
static mp_status share_live_init(share_ctx *s, mp_error *err) {
  const mp_graph *g = s->g;
  const mp_alloc *a = mp_graph_alloc(g);
  size_t n = mp_graph_op_count(g), n_t = mp_graph_tensor_count(g);
  if (!s->c->order || n == 0) return MP_OK;
  s->n_steps = n;
  for (s->tn = 1; s->tn < n;) s->tn *= 2;
  s->step_of = mp_calloc(a, n, sizeof *s->step_of);
  s->sum = mp_calloc(a, n_t + 1, sizeof *s->sum);
  s->mx = mp_calloc(a, 2 * s->tn, sizeof *s->mx);
  s->tg = mp_calloc(a, 2 * s->tn, sizeof *s->tg);
  if (!s->step_of || !s->sum || !s->mx || !s->tg) {
    share_release(s);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(g));
  }
  for (size_t k = 0; k < n; k++) s->step_of[s->c->order[k]] = (uint32_t)k;
  for (size_t t = 0; t < n_t; t++) s->sum[t] = share_sum_of(s, (uint32_t)t);
  /* buffers the map has already: fold each member into its root */
  for (size_t t = 0; t < n_t; t++) {
    uint32_t r = share_find(s, (uint32_t)t);
    if (r == t) continue;
    share_sum m = share_sum_of(s, (uint32_t)t);
    share_sum_join(&s->sum[r], &m, share_offset(s, (uint32_t)t));
  }
  for (size_t t = 0; t < n_t; t++) {
    if (share_find(s, (uint32_t)t) != t) continue;
    int64_t v = share_padded(s, &s->sum[t]);
    if (v) share_live_add(s, s->sum[t].first, s->sum[t].last, v);
  }
  return MP_OK;
}

mp_status share_init(share_ctx *s, pass_ctx *c, mp_error *err) {
  const mp_graph *g = c->g;
  const mp_alloc *a = mp_graph_alloc(g);
  size_t n_t = mp_graph_tensor_count(g), n = mp_graph_op_count(g);
  memset(s, 0, sizeof *s);
  s->c = c;
  s->g = g;
  s->next = mp_calloc(a, n_t + 1, sizeof *s->next);
  s->stamp = mp_calloc(a, n + 1, sizeof *s->stamp);
  s->want = mp_calloc(a, n + 1, sizeof *s->want);
  s->queue = mp_calloc(a, n + 1, sizeof *s->queue);
  s->slice = mp_calloc(a, n_t + 1, sizeof *s->slice);
  if (!s->next || !s->stamp || !s->want || !s->queue || !s->slice) {
    share_release(s);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(g));
  }
  /* Member lists from the buffers the map has already (invariant 1). */
  for (size_t t = 0; t < n_t; t++) s->next[t] = UINT32_MAX;
  for (size_t t = n_t; t-- > 0;) {
    uint32_t r = share_find(s, (uint32_t)t);
    if (r != t) {
      s->next[t] = s->next[r];
      s->next[r] = (uint32_t)t;
    }
    if (c->rule[t] == MP_ALIAS_CONCAT) s->slice[r] = 1;
  }
  return share_live_init(s, err);
}

void share_release(share_ctx *s) {
  const mp_alloc *a = mp_graph_alloc(s->g);
  mp_free(a, s->next);
  mp_free(a, s->stamp);
  mp_free(a, s->want);
  mp_free(a, s->queue);
  mp_free(a, s->slice);
  mp_free(a, s->step_of);
  mp_free(a, s->sum);
  mp_free(a, s->mx);
  mp_free(a, s->tg);
  mp_free(a, s->jour);
  memset(s, 0, sizeof *s);
}

/* The root of t's buffer and t's first byte relative to the root's
 * (weighted union-find: rel[t] is relative to parent[t]; compressing a
 * path re-bases each tensor on it onto the root). */
static uint32_t share_find_at(share_ctx *s, uint32_t t, int64_t *at) {
  uint32_t *p = s->c->parent, r = t;
  int64_t *rel = s->c->rel, d = 0;
  while (p[r] != r) {
    d += rel[r];
    r = p[r];
  }
  for (int64_t left = d; p[t] != r;) {
    uint32_t up = p[t];
    int64_t next = left - rel[t];
    share_set_parent(s, t, r);
    share_set_rel(s, t, left);
    t = up;
    left = next;
  }
  if (at) *at = d;
  return r;
}

uint32_t share_find(share_ctx *s, uint32_t t) {
  return share_find_at(s, t, NULL);
}

int64_t share_offset(share_ctx *s, uint32_t t) {
  int64_t d;
  (void)share_find_at(s, t, &d);
  return d;
}

void share_union_at(share_ctx *s, uint32_t into, uint32_t y, int64_t delta,
                    mp_alias_rule why) {
  int64_t da, db;
  uint32_t a = share_find_at(s, into, &da), b = share_find_at(s, y, &db);
  share_set_rule(s, y, why);
  share_set_slice(s, a, s->slice[a] | s->slice[b] | (why == MP_ALIAS_CONCAT));
  if (a == b) return;
  int64_t at = da + delta - db; /* y lands at into's first byte + delta */
  share_set_parent(s, b, a);
  share_set_rel(s, b, at);
  /* Splice b's member list (b first) after a. */
  uint32_t tail = b;
  while (s->next[tail] != UINT32_MAX) tail = s->next[tail];
  share_set_next(s, tail, s->next[a]);
  share_set_next(s, a, b);
  if (!s->sum) return;
  /* invariant 3: out go a and b, in goes the joint buffer */
  share_sum *u = &s->sum[a], m = s->sum[b], was = *u;
  share_log(s, &(share_jentry){.kind = SJ_SUM, .i = a, .sum = was});
  int64_t pa = share_padded(s, u), pb = share_padded(s, &m);
  if (pa) share_live_add(s, u->first, u->last, -pa);
  if (pb) share_live_add(s, m.first, m.last, -pb);
  share_sum_join(u, &m, at);
  int64_t pu = share_padded(s, u);
  if (pu) share_live_add(s, u->first, u->last, pu);
}

void share_union(share_ctx *s, uint32_t into, uint32_t y, mp_alias_rule why) {
  share_union_at(s, into, y, 0, why);
}

/* ---- trials ---------------------------------------------------------------
 */

void share_save(share_ctx *s) {
  s->jn = 0;
  s->jon = true;
  s->jfail = false;
}

void share_keep(share_ctx *s) {
  s->jon = false;
  s->jn = 0;
}

void share_restore(share_ctx *s) {
  s->jon = false;
  while (s->jn > 0) {
    const share_jentry *e = &s->jour[--s->jn];
    switch (e->kind) {
      case SJ_PARENT:
        s->c->parent[e->i] = (uint32_t)e->v;
        break;
      case SJ_REL:
        s->c->rel[e->i] = e->v;
        break;
      case SJ_RULE:
        s->c->rule[e->i] = (uint8_t)e->v;
        break;
      case SJ_SLICE:
        s->slice[e->i] = (uint8_t)e->v;
        break;
      case SJ_NEXT:
        s->next[e->i] = (uint32_t)e->v;
        break;
      case SJ_SUM:
        s->sum[e->i] = e->sum;
        break;
      default: /* SJ_TREE: integer adds undo exactly */
        share_tree_add(s, 1, 0, s->tn - 1, e->i, e->j, -e->v);
        break;
    }
  }
}

/* The lower bound from the buffers' lifetimes, built from scratch. */
static mp_status share_lb_full(share_ctx *s, size_t *lb, mp_error *err) {
  pass_ctx *c = s->c;
  const mp_alloc *a = mp_graph_alloc(c->g);
  mp_alias al;
  mp_problem *p = NULL;
  mp_profile prof = {0};
  mp_status st = mp_alias_build(a, mp_graph_tensor_count(c->g), c->parent,
                                c->rel, c->rule, &al, err);
  if (st != MP_OK) return st;
  mp_lifetime_opts lo = {.inputs_as_activations = c->inputs_act,
                         .backend = c->backend,
                         .alias = &al};
  st = mp_lifetimes_build(c->g, c->order, &lo, &p, err);
  if (st == MP_OK) st = mp_problem_profile(p, &prof, err);
  if (st == MP_OK) *lb = prof.peak;
  mp_profile_release(&prof);
  mp_problem_destroy(p);
  mp_alias_release(&al);
  return st;
}

/* Invariant 3 checked against the lifetimes, run inside assert(). */
MP_CHECKER static bool share_live_check(share_ctx *s, size_t lb) {
  size_t full = 0;
  mp_error err;
  return share_lb_full(s, &full, &err) != MP_OK || full == lb;
}

mp_status share_lb(share_ctx *s, size_t *lb, mp_error *err) {
  if (s->jfail) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory",
                        mp_graph_source(s->g));
  }
  if (!s->sum) return share_lb_full(s, lb, err);
  *lb = s->mx[1] > 0 ? (size_t)s->mx[1] : 0;
  assert(share_live_check(s, *lb));
  return MP_OK;
}

/* ---- the readers rule (invariant 2) -------------------------------------- */

/* true when every op in want[0..n) (marked in s->want with the current
 * epoch) is an ancestor of op o. Breadth first over producers; with a
 * topological position per op (s->step_of), only ops at or after lo, the
 * earliest wanted one's, can lie on a path from one of them to o. */
static bool share_ancestors(share_ctx *s, uint32_t o, size_t n_want,
                            uint32_t lo) {
  const mp_graph *g = s->g;
  uint32_t epoch = ++s->epoch;
  size_t head = 0, tail = 0, found = 0, visited = 0;
  s->queue[tail++] = o;
  s->stamp[o] = epoch;
  while (head < tail && found < n_want && visited < SHARE_SEARCH_MAX) {
    const mp_op *op = mp_graph_op(g, s->queue[head++]);
    visited++;
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (op->inputs[k] < 0) continue;
      int32_t p = mp_graph_tensor(g, (size_t)op->inputs[k])->producer;
      if (p < 0 || s->stamp[p] == epoch) continue;
      if (s->step_of && s->step_of[p] < lo) continue;
      s->stamp[p] = epoch;
      s->queue[tail++] = (uint32_t)p;
      if (s->want[p] == epoch - 1) found++;
    }
  }
  return found == n_want;
}

/* Rule 2b of share.h: every other reader of buffer(x) runs before o in
 * every order, and nothing in the buffer may not be overwritten. */
static bool share_writable(share_ctx *s, uint32_t o, int32_t x) {
  const mp_graph *g = s->g;
  uint32_t r = share_find(s, (uint32_t)x);
  uint32_t mark = ++s->epoch; /* want[] stamp; the search uses mark + 1 */
  uint32_t lo = UINT32_MAX;
  size_t n_want = 0;
  for (uint32_t t = r; t != UINT32_MAX; t = s->next[t]) {
    const mp_tensor *m = mp_graph_tensor(g, t);
    if (m->kind != MP_TENSOR_ACTIVATION) return false;
    for (uint32_t k = 0; k < m->n_consumers; k++) {
      uint32_t q = m->consumers[k];
      if (q == o || s->want[q] == mark) continue;
      /* an ancestor comes before o in every topological order */
      if (s->step_of && s->step_of[q] >= s->step_of[o]) return false;
      if (s->step_of && s->step_of[q] < lo) lo = s->step_of[q];
      s->want[q] = mark;
      n_want++;
    }
  }
  return n_want == 0 || share_ancestors(s, o, n_want, lo);
}

/* No other input of o is another tensor of x's buffer (o would read
 * bytes it is overwriting through a different shape). */
static bool share_alone(share_ctx *s, const mp_op *op, int32_t x) {
  uint32_t r = share_find(s, (uint32_t)x);
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    int32_t t = op->inputs[k];
    if (t >= 0 && t != x && share_find(s, (uint32_t)t) == r) return false;
  }
  return true;
}

/* ---- the rules ----------------------------------------------------------- */

bool share_is_view(const char *type) {
  return strcmp(type, "Reshape") == 0 || strcmp(type, "Flatten") == 0 ||
         strcmp(type, "Squeeze") == 0 || strcmp(type, "Unsqueeze") == 0 ||
         strcmp(type, "Identity") == 0;
}

/* Rule 1. */
static bool share_view_ok(share_ctx *s, const mp_op *op, int32_t y) {
  const mp_graph *g = s->g;
  int32_t x = op->inputs[0];
  const mp_tensor *xt = mp_graph_tensor(g, (size_t)x);
  const mp_tensor *yt = mp_graph_tensor(g, (size_t)y);
  if (xt->dtype != yt->dtype || xt->bytes != yt->bytes) return false;
  const mp_tensor *root = mp_graph_tensor(g, share_find(s, (uint32_t)x));
  if (root->kind == MP_TENSOR_RETAINED) return false;
  if (yt->kind == MP_TENSOR_OUTPUT) {
    return root->kind == MP_TENSOR_ACTIVATION || root->kind == MP_TENSOR_OUTPUT;
  }
  return true;
}

/* Rule 3: depthwise, one channel per group, batch 1, output no larger; a
 * DequantizeLinear prologue on the weight is allowed (the runtime widens
 * the weight a channel at a time, runtime/ops.c op_weight_rows), and one
 * on the input when the epilogue ends in a QuantizeLinear: the runtime
 * then widens input channel c, computes output channel c in f32 in the
 * workspace and quantizes it into y's channel c, whose bytes lie in the
 * input's channels 0..c, all read by then (op_run_conv_planes). */
static bool share_quant_tail(const mp_op *op) {
  const mp_attr *e = mp_op_attr(op, "mplan.epilogue");
  if (!e || e->kind != MP_ATTR_STRING) return false;
  const char *last = strrchr(e->s, ',');
  return strcmp(last ? last + 1 : e->s, "QuantizeLinear") == 0;
}

/* An mplan.* attribute other than a fused epilogue's and a
 * DequantizeLinear prologue on the weight (input 1), or on the input too
 * before a QuantizeLinear, with its parameters: the widening of either
 * is read before y's bytes over it are written. */
static bool share_other_mplan_attr(const mp_op *op) {
  const mp_attr *pro = mp_op_attr(op, "mplan.prologue");
  bool str = pro && pro->kind == MP_ATTR_STRING;
  bool wpro =
      str &&
      (strcmp(pro->s, "DequantizeLinear:1") == 0 ||
       (share_quant_tail(op) && (strcmp(pro->s, "DequantizeLinear:0") == 0 ||
                                 strcmp(pro->s,
                                        "DequantizeLinear:0,"
                                        "DequantizeLinear:1") == 0)));
  for (uint32_t k = 0; k < op->n_attrs; k++) {
    const char *n = op->attrs[k].name;
    bool entry = strncmp(n, "mplan.e", 7) == 0 && n[7] >= '0' && n[7] <= '9';
    bool pro_attr = wpro && (strcmp(n, "mplan.prologue") == 0 ||
                             strncmp(n, "mplan.p.", 8) == 0);
    if (strncmp(n, "mplan.", 6) == 0 && strcmp(n, "mplan.epilogue") != 0 &&
        !entry && !pro_attr) {
      return true;
    }
  }
  return false;
}

static bool share_depthwise_ok(share_ctx *s, uint32_t o, const mp_op *op,
                               int32_t y) {
  const mp_graph *g = s->g;
  if (strcmp(op->type, "Conv") != 0 || share_other_mplan_attr(op) ||
      op->n_inputs < 2 || op->inputs[1] < 0) {
    return false;
  }
  int32_t x = op->inputs[0];
  const mp_tensor *xt = mp_graph_tensor(g, (size_t)x);
  const mp_tensor *yt = mp_graph_tensor(g, (size_t)y);
  const mp_tensor *wt = mp_graph_tensor(g, (size_t)op->inputs[1]);
  if (xt->rank != 4 || yt->rank != 4 || wt->rank != 4) return false;
  int64_t ch = mp_graph_dim_of(g, &xt->shape[1]);
  return pass_attr_int(op, "group", 1) == ch && ch > 1 &&
         mp_graph_dim_of(g, &yt->shape[1]) == ch &&
         mp_graph_dim_of(g, &wt->shape[0]) == ch &&
         mp_graph_dim_of(g, &wt->shape[1]) == 1 &&
         mp_graph_dim_of(g, &xt->shape[0]) == 1 && xt->dtype == yt->dtype &&
         yt->bytes <= xt->bytes && pass_same_layout(g, x, y) &&
         share_alone(s, op, x) && share_writable(s, o, x);
}

/* Rule 8: a Cast between dtypes of one element size (int32 -> f32 after
 * a ConvInteger, f32 -> int32, int8 <-> uint8) converts element i in
 * place: the kernel reads it before it writes it (kernels/k_elementwise.c
 * mp_k_cast), and the runtime accepts y at x's offset. */
static bool share_cast_ok(share_ctx *s, uint32_t o, const mp_op *op,
                          int32_t y) {
  const mp_graph *g = s->g;
  int32_t x = op->inputs[0];
  const mp_tensor *xt = mp_graph_tensor(g, (size_t)x);
  const mp_tensor *yt = mp_graph_tensor(g, (size_t)y);
  return !rw_has_mplan_attr(op) && op->n_inputs == 1 &&
         mp_dtype_size(xt->dtype) == mp_dtype_size(yt->dtype) &&
         mp_dtype_size(xt->dtype) != 0 && xt->bytes == yt->bytes &&
         pass_same_dims(g, x, y) && pass_same_layout(g, x, y) &&
         share_alone(s, op, x) && share_writable(s, o, x);
}

/* Rule 7: a row-wise op over input 0 (Softmax, LogSoftmax,
 * LayerNormalization with one output, RMSNormalization, RotaryEmbedding). */
static bool share_row_ok(share_ctx *s, uint32_t o, const mp_op *op, int32_t y) {
  static const char *const row[] = {
      "Softmax",          "LogSoftmax",      "LayerNormalization",
      "RMSNormalization", "RotaryEmbedding", "TensorScatter"};
  bool known = false;
  for (size_t i = 0; i < sizeof row / sizeof *row; i++) {
    known = known || strcmp(op->type, row[i]) == 0;
  }
  int32_t x = op->inputs[0];
  return known && !rw_has_mplan_attr(op) && pass_same_type(s->g, x, y) &&
         pass_same_layout(s->g, x, y) && share_alone(s, op, x) &&
         share_writable(s, o, x);
}

/* Rule 4: input k of a fused op, one its epilogue added. */
static bool share_epilogue_ok(share_ctx *s, uint32_t o, const mp_op *op,
                              uint32_t k, int32_t y) {
  const mp_graph *g = s->g;
  uint32_t own = mp_op_head_arity(op);
  int32_t x = op->inputs[k];
  if (k < own || x < 0 || !mp_op_first_read(op, k) ||
      !pass_same_type(g, x, y) || !pass_same_layout(g, x, y)) {
    return false;
  }
  uint32_t r = share_find(s, (uint32_t)x);
  for (uint32_t j = 0; j < own && j < op->n_inputs; j++) {
    if (op->inputs[j] >= 0 && share_find(s, (uint32_t)op->inputs[j]) == r) {
      return false;
    }
  }
  return share_alone(s, op, x) && share_writable(s, o, x);
}

/* Rule 0: some tensor of t's buffer is a Concat slice. */
static bool share_has_slice(share_ctx *s, int32_t t) {
  return s->slice[share_find(s, (uint32_t)t)];
}

/* Rule 5c: every tensor of x's buffer lies inside x's bytes and is an
 * activation. */
static bool share_fits(share_ctx *s, int32_t x) {
  const mp_graph *g = s->g;
  int64_t at = share_offset(s, (uint32_t)x);
  int64_t bytes = (int64_t)mp_graph_tensor(g, (size_t)x)->bytes;
  for (uint32_t m = share_find(s, (uint32_t)x); m != UINT32_MAX;
       m = s->next[m]) {
    const mp_tensor *mt = mp_graph_tensor(g, m);
    int64_t off = share_offset(s, m) - at;
    if (mt->kind != MP_TENSOR_ACTIVATION || mt->pinned || off < 0 ||
        off + (int64_t)mt->bytes > bytes) {
      return false;
    }
  }
  return true;
}

size_t share_concat(share_ctx *s, uint32_t o, size_t align, int64_t *slot) {
  const mp_graph *g = s->g;
  const mp_op *op = mp_graph_op(g, o);
  for (uint32_t k = 0; k < op->n_inputs; k++) slot[k] = -1;
  if (strcmp(op->type, "Concat") != 0 || rw_has_mplan_attr(op) ||
      op->n_outputs != 1 || op->outputs[0] < 0 || op->n_inputs < 2) {
    return 0;
  }
  int32_t y = op->outputs[0];
  const mp_tensor *yt = mp_graph_tensor(g, (size_t)y);
  if ((yt->kind != MP_TENSOR_ACTIVATION && yt->kind != MP_TENSOR_OUTPUT) ||
      yt->pinned || yt->rank == 0 || mp_dtype_size(yt->dtype) == 0) {
    return 0; /* 4-bit elements: a slice may start inside a byte */
  }
  int64_t axis = pass_attr_int(op, "axis", 0);
  if (axis < 0) axis += yt->rank;
  if (axis < 0 || axis >= yt->rank) return 0;
  for (int64_t d = 0; d < axis; d++) {
    if (mp_graph_dim_of(g, &yt->shape[d]) != 1) return 0;
  }
  /* 5a: the inputs tile the output exactly. */
  size_t total = 0;
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    if (op->inputs[k] < 0) return 0;
    const mp_tensor *xt = mp_graph_tensor(g, (size_t)op->inputs[k]);
    if (xt->pinned || !mp_size_add(total, xt->bytes, &total)) return 0;
  }
  if (total != yt->bytes) return 0;
  size_t placed = 0;
  uint32_t yr = share_find(s, (uint32_t)y);
  int64_t at = 0;
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    int32_t x = op->inputs[k];
    const mp_tensor *xt = mp_graph_tensor(g, (size_t)x);
    int64_t here = at;
    at += (int64_t)xt->bytes;
    uint32_t xr = share_find(s, (uint32_t)x);
    bool ok = xt->kind == MP_TENSOR_ACTIVATION && xt->producer >= 0 &&
              xt->dtype == yt->dtype && xt->rank == yt->rank &&
              pass_same_layout(g, x, y) && xr != yr &&
              (align < 2 || here % (int64_t)align == 0) && share_fits(s, x);
    for (uint32_t j = 0; ok && j < k; j++) {
      ok = slot[j] < 0 || share_find(s, (uint32_t)op->inputs[j]) != xr;
    }
    if (!ok) continue;
    slot[k] = here;
    placed++;
  }
  return placed;
}

static bool share_is_fused(const mp_op *op) {
  return mp_op_attr(op, "mplan.epilogue") &&
         !mp_op_attr(op, "mplan.horizontal");
}

/* Rule 0, alignment: in a buffer holding Concat slices a tensor may start
 * away from the buffer's first byte, and the buffer is aligned for that
 * byte only; y, placed at x's first byte, needs its own alignment there. */
static bool share_aligned(share_ctx *s, int32_t x, int32_t y) {
  uint32_t r = share_find(s, (uint32_t)x);
  if (!s->slice[r]) return true; /* every member starts the buffer */
  int64_t low = 0;
  for (uint32_t m = r; m != UINT32_MAX; m = s->next[m]) {
    int64_t at = share_offset(s, m);
    if (m == r || at < low) low = at;
  }
  size_t align =
      mp_backend_align(s->c->backend, mp_graph_tensor(s->g, (size_t)y)->kind);
  return (uint64_t)(share_offset(s, (uint32_t)x) - low) % align == 0;
}

static mp_alias_rule share_pick(share_ctx *s, uint32_t o, uint32_t *k_out,
                                bool into_slice);

mp_alias_rule share_rule(share_ctx *s, uint32_t o, uint32_t *k_out) {
  mp_alias_rule r = share_pick(s, o, k_out, false);
  const mp_op *op = mp_graph_op(s->g, o);
  if (r != MP_ALIAS_OWN &&
      !share_aligned(s, op->inputs[*k_out], op->outputs[0])) {
    return MP_ALIAS_OWN;
  }
  return r;
}

/* Rule 6 for op o (share.h, share_move_into_slice): by which rule its
 * output, a Concat slice, may be written over input *k_out moved into it. */
static mp_alias_rule share_rule_slice(share_ctx *s, uint32_t o,
                                      uint32_t *k_out) {
  const mp_op *op = mp_graph_op(s->g, o);
  if (op->n_outputs != 1 || op->outputs[0] < 0 ||
      s->c->rule[op->outputs[0]] != MP_ALIAS_CONCAT) {
    return MP_ALIAS_OWN;
  }
  return share_pick(s, o, k_out, true);
}

mp_alias_rule share_move_into_slice(share_ctx *s, uint32_t y) {
  int32_t o = mp_graph_tensor(s->g, y)->producer;
  uint32_t k = 0;
  mp_alias_rule r = o < 0 ? MP_ALIAS_OWN : share_rule_slice(s, (uint32_t)o, &k);
  if (r == MP_ALIAS_OWN) return r;
  share_union(s, y, (uint32_t)mp_graph_op(s->g, (size_t)o)->inputs[k],
              MP_ALIAS_CONCAT);
  share_set_rule(s, y, r);
  return r;
}

/* Rule 6 for input x of o's output y (a Concat slice): x's buffer may
 * move into y's bytes. */
static bool share_slice_ok(share_ctx *s, int32_t x, int32_t y) {
  const mp_graph *g = s->g;
  return !share_has_slice(s, x) && share_fits(s, x) &&
         mp_graph_tensor(g, (size_t)x)->bytes ==
             mp_graph_tensor(g, (size_t)y)->bytes;
}

/* Rules 0-4 and 7 but alignment; into_slice: rule 6 (y is a Concat slice and
 * the input would move into it). */
static mp_alias_rule share_pick(share_ctx *s, uint32_t o, uint32_t *k_out,
                                bool into_slice) {
  const mp_graph *g = s->g;
  const mp_op *op = mp_graph_op(g, o);
  if (op->n_outputs != 1 || op->n_inputs < 1 || op->inputs[0] < 0) {
    return MP_ALIAS_OWN;
  }
  int32_t y = op->outputs[0];
  mp_tensor_kind yk = mp_graph_tensor(g, (size_t)y)->kind;
  if (yk != MP_TENSOR_ACTIVATION && yk != MP_TENSOR_OUTPUT) return MP_ALIAS_OWN;
  /* Rule 0: a tensor the user pinned keeps bytes of its own; a Concat
   * slice keeps its place. */
  if (mp_graph_tensor(g, (size_t)y)->pinned ||
      share_has_slice(s, y) != into_slice) {
    return MP_ALIAS_OWN;
  }
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    if (op->inputs[k] >= 0 &&
        mp_graph_tensor(g, (size_t)op->inputs[k])->pinned) {
      return MP_ALIAS_OWN;
    }
  }
  if (share_is_view(op->type)) {
    if (into_slice) return MP_ALIAS_OWN; /* the concat pass moves views */
    *k_out = 0;
    return share_view_ok(s, op, y) ? MP_ALIAS_VIEW : MP_ALIAS_OWN;
  }
  if (strcmp(op->type, "Cast") == 0) {
    *k_out = 0;
    int32_t x = op->inputs[0];
    return share_cast_ok(s, o, op, y) &&
                   (!into_slice || share_slice_ok(s, x, y))
               ? MP_ALIAS_ELEMENTWISE
               : MP_ALIAS_OWN;
  }
  const pass_ew *ew = pass_ew_op(g, op);
  if (ew) {
    /* A variadic op copies x0 into y first: only x0's bytes can be y's. */
    uint32_t n = ew->kind == PASS_EW_VARIADIC ? 1 : op->n_inputs;
    for (uint32_t k = 0; k < n; k++) {
      int32_t x = op->inputs[k];
      if (x < 0 || !mp_op_first_read(op, k) || !pass_same_type(g, x, y) ||
          !pass_same_layout(g, x, y) || !share_alone(s, op, x) ||
          (into_slice && !share_slice_ok(s, x, y)) ||
          !share_writable(s, o, x)) {
        continue;
      }
      *k_out = k;
      return MP_ALIAS_ELEMENTWISE;
    }
    return MP_ALIAS_OWN;
  }
  if (share_is_fused(op)) {
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      if (!share_epilogue_ok(s, o, op, k, y) ||
          (into_slice && !share_slice_ok(s, op->inputs[k], y))) {
        continue;
      }
      *k_out = k;
      return MP_ALIAS_EPILOGUE;
    }
    /* no operand to write over: a fused depthwise Conv may still write
     * over its input (rule 3, below; rule 7 takes no fused op) */
  }
  *k_out = 0;
  if (into_slice && !share_slice_ok(s, op->inputs[0], y)) return MP_ALIAS_OWN;
  if (share_row_ok(s, o, op, y)) return MP_ALIAS_ROW;
  return share_depthwise_ok(s, o, op, y) ? MP_ALIAS_DEPTHWISE : MP_ALIAS_OWN;
}
