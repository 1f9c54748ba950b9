/*
 * test_schedule.c -- execution orders: dfs and rpo are topological and
 * deterministic; --order memory is never worse than any candidate, its
 * reported peak is the lifetimes' lower bound, and on small random graphs
 * it equals the optimum found by enumerating every topological order
 * (with and without shared buffers, graph inputs resident or not). The
 * seed of every random graph is printed on failure.
 *
 * usage: test_schedule SOURCE_DIR
 */
#include <stdlib.h>

#include "check.h"
#include "mplan/lifetime.h"
#include "mplan/model.h"
#include "mplan/passes.h"
#include "mplan/schedule.h"

/* ---- random graphs ------------------------------------------------------- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
  return (uint32_t)((rng_state >> 33) % n);
}

/* A random DAG of n_ops ops over u8 tensors of random sizes: every op
 * reads 1-3 earlier tensors (graph inputs included) and writes 1-2; some
 * tensors nobody reads become graph outputs. With `ew`, ops are Relu/Add
 * over same-sized tensors, so that the inplace pass has work; with `cat`
 * as well, every third op is a Concat of 2-3 distinct earlier tensors
 * (its output their sum), for the concat pass. */
static mp_graph *rnd_graph_cat(uint64_t seed, size_t n_ops, bool ew, bool cat);
/* With ew: every third op is a Sum of three inputs when it can be. */
static bool rnd_sums;

static mp_graph *rnd_graph(uint64_t seed, size_t n_ops, bool ew) {
  return rnd_graph_cat(seed, n_ops, ew, false);
}

static mp_graph *rnd_graph_cat(uint64_t seed, size_t n_ops, bool ew, bool cat) {
  mp_graph *g = NULL;
  mp_error err = {0};
  rng_state = seed;
  if (mp_graph_create(NULL, "random", "random", &g, &err) != MP_OK) return NULL;
  size_t n_t = 0;
  int32_t ids[256];
  char name[32];
  size_t n_in = 1 + rnd(2);
  for (size_t i = 0; i < n_in; i++, n_t++) {
    snprintf(name, sizeof name, "in%zu", i);
    mp_tensor_desc d = {
        .name = name, .dtype = MP_DTYPE_U8, .kind = MP_TENSOR_INPUT, .rank = 1};
    d.shape[0] = (mp_dim){ew ? 256 : 16 * (1 + rnd(64)), MP_NO_SYM};
    mp_graph_add_tensor(g, &d, &ids[n_t], &err);
  }
  int64_t len[256];
  for (size_t i = 0; i < n_t; i++)
    len[i] = mp_graph_tensor(g, i)->shape[0].value;
  for (size_t o = 0; o < n_ops; o++) {
    int32_t in[3], out[2];
    bool is_cat = cat && o % 3 == 2 && n_t >= 2;
    bool is_sum = ew && rnd_sums && !is_cat && o % 3 == 1;
    uint32_t ni = is_cat   ? 2 + rnd(2)
                  : is_sum ? 3
                  : ew     ? 1 + rnd(2)
                           : 1 + rnd(3);
    uint32_t no = ew ? 1 : 1 + rnd(2);
    if (is_cat && ni > n_t) ni = (uint32_t)n_t;
    int64_t sum = 0;
    for (uint32_t k = 0; k < ni; k++) {
      /* Prefer recent tensors, sometimes reach far back. */
      size_t back =
          rnd(4) == 0 ? rnd((uint32_t)n_t) : rnd(n_t < 4 ? (uint32_t)n_t : 4);
      in[k] = ids[n_t - 1 - back];
      /* A Concat reads distinct tensors (the k-th latest otherwise); an
       * Add two of one length. */
      bool dup = false;
      for (uint32_t j = 0; is_cat && j < k; j++) dup |= in[j] == in[k];
      for (size_t c = n_t; dup && c-- > 0;) { /* the latest unused one */
        bool used = false;
        for (uint32_t j = 0; j < k; j++) used |= in[j] == ids[c];
        if (!used) in[k] = ids[c], dup = false;
      }
      if (ew && !is_cat && k > 0 && len[in[k]] != len[in[0]]) in[k] = in[0];
    }
    for (uint32_t k = 0; k < ni; k++) sum += len[in[k]];
    for (uint32_t k = 0; k < no; k++, n_t++) {
      snprintf(name, sizeof name, "t%zu", n_t);
      mp_tensor_desc d = {.name = name,
                          .dtype = MP_DTYPE_U8,
                          .kind = MP_TENSOR_ACTIVATION,
                          .rank = 1};
      len[n_t] = is_cat ? sum : ew ? len[in[0]] : 16 * (1 + rnd(64));
      d.shape[0] = (mp_dim){len[n_t], MP_NO_SYM};
      mp_graph_add_tensor(g, &d, &ids[n_t], &err);
      out[k] = ids[n_t];
    }
    snprintf(name, sizeof name, "op%zu", o);
    const char *type = is_cat    ? "Concat"
                       : is_sum  ? "Sum"
                       : !ew     ? "Op"
                       : ni == 1 ? "Relu"
                                 : "Add";
    mp_op_desc d = {.name = name,
                    .type = type,
                    .n_inputs = ni,
                    .n_outputs = no,
                    .inputs = in,
                    .outputs = out};
    mp_graph_add_op(g, &d, NULL, &err);
  }
  if (mp_graph_link(g, &err) != MP_OK) {
    fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, err.msg);
    mp_graph_destroy(g);
    return NULL;
  }
  for (size_t t = n_in; t < n_t; t++) {
    const mp_tensor *x = mp_graph_tensor(g, t);
    if (x->n_consumers == 0 && rnd(2))
      mp_graph_mark_output(g, (int32_t)t, &err);
  }
  if (mp_graph_link(g, &err) != MP_OK || mp_graph_resolve(g, &err) != MP_OK) {
    fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, err.msg);
    mp_graph_destroy(g);
    return NULL;
  }
  return g;
}

/* The lower bound of order under the lifetime rules (the oracle). */
static size_t lb_of(const mp_graph *g, const uint32_t *order,
                    const mp_alias *al, bool in_act) {
  mp_lifetime_opts lo = {.inputs_as_activations = in_act, .alias = al};
  mp_problem *p = NULL;
  mp_profile prof;
  mp_error err = {0};
  if (mp_lifetimes_build(g, order, &lo, &p, &err) != MP_OK ||
      mp_problem_profile(p, &prof, &err) != MP_OK) {
    fprintf(stderr, "lifetimes: %s\n", err.msg);
    mp_problem_destroy(p);
    return (size_t)-1;
  }
  size_t peak = prof.peak;
  mp_profile_release(&prof);
  mp_problem_destroy(p);
  return peak;
}

static bool topological(const mp_graph *g, const uint32_t *order) {
  size_t n = mp_graph_op_count(g);
  size_t *pos = calloc(n + 1, sizeof *pos);
  bool *seen = calloc(n + 1, sizeof *seen);
  bool ok = pos && seen;
  for (size_t k = 0; ok && k < n; k++) {
    ok = order[k] < n && !seen[order[k]];
    if (ok) seen[order[k]] = true, pos[order[k]] = k;
  }
  for (size_t o = 0; ok && o < n; o++) {
    const mp_op *op = mp_graph_op(g, o);
    for (uint32_t k = 0; k < op->n_inputs; k++) {
      int32_t p = mp_graph_tensor(g, (size_t)op->inputs[k])->producer;
      if (p >= 0 && pos[p] >= pos[o]) ok = false;
    }
  }
  free(pos);
  free(seen);
  return ok;
}

/* ---- brute force --------------------------------------------------------- */

typedef struct brute {
  const mp_graph *g;
  const mp_alias *al;
  bool in_act;
  uint32_t order[16];
  bool done[16];
  size_t best;
  size_t orders;
} brute;

static bool brute_ready(const brute *b, uint32_t o) {
  const mp_op *op = mp_graph_op(b->g, o);
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    int32_t p = mp_graph_tensor(b->g, (size_t)op->inputs[k])->producer;
    if (p >= 0 && !b->done[p]) return false;
  }
  return true;
}

static void brute_walk(brute *b, size_t k) {
  size_t n = mp_graph_op_count(b->g);
  if (k == n) {
    size_t lb = lb_of(b->g, b->order, b->al, b->in_act);
    if (lb < b->best) b->best = lb;
    b->orders++;
    return;
  }
  for (uint32_t o = 0; o < n; o++) {
    if (b->done[o] || !brute_ready(b, o)) continue;
    b->done[o] = true;
    b->order[k] = o;
    brute_walk(b, k + 1);
    b->done[o] = false;
  }
}

static size_t brute_best(const mp_graph *g, const mp_alias *al, bool in_act) {
  brute b = {.g = g, .al = al, .in_act = in_act, .best = (size_t)-1};
  brute_walk(&b, 0);
  return b.best;
}

/* ---- checks -------------------------------------------------------------- */

/* Segments the step bound proved (schedule_memory.c invariant 7),
 * segments searched, and segments the beam improved (invariant 8), over
 * every check_memory call. */
static size_t n_bound, n_searched, n_beam, n_branch_bound, n_branch_order;

/* The memory order of g (with alias al): topological, never worse than a
 * candidate, its reported peak the lifetimes' lower bound, each
 * candidate's reported peak its order's lower bound too. Returns the
 * peak. */
static size_t check_memory(const mp_graph *g, const mp_alias *al, bool in_act,
                           size_t max_states, uint64_t seed) {
  mp_schedule_opts o = {.order = MP_ORDER_MEMORY,
                        .alias = al,
                        .inputs_as_activations = in_act,
                        .max_states = max_states};
  uint32_t *order = NULL, *again = NULL;
  mp_schedule_info info, info2;
  mp_error err = {0};
  if (mp_schedule_run(g, &o, &order, &info, &err) != MP_OK) {
    fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, err.msg);
    CHECK(!"memory order failed");
    return 0;
  }
  size_t lb = lb_of(g, order, al, in_act);
  n_bound += info.bound_segments;
  n_searched += info.dp_segments;
  n_beam += info.beam_improved;
  n_branch_bound += info.branch_segments;
  n_branch_order += info.branch_improved;
  bool ok = topological(g, order) && info.peak == lb;
  for (size_t c = 0; c < info.n_cand; c++) ok = ok && lb <= info.cand[c].peak;
  /* The candidates' peaks are real: dfs and rpo recomputed here. */
  static const mp_order_kind kinds[] = {MP_ORDER_DFS, MP_ORDER_RPO};
  for (size_t k = 0; k < 2; k++) {
    uint32_t *co = NULL;
    mp_schedule_opts bo = {.order = kinds[k]};
    CHECK(mp_schedule_run(g, &bo, &co, NULL, &err) == MP_OK);
    if (co) {
      ok = ok && topological(g, co) &&
           lb_of(g, co, al, in_act) == info.cand[1 + k].peak;
    }
    free(co);
  }
  /* Deterministic. */
  CHECK(mp_schedule_run(g, &o, &again, &info2, &err) == MP_OK);
  for (size_t k = 0; again && k < mp_graph_op_count(g); k++) {
    ok = ok && again[k] == order[k];
  }
  if (!ok) {
    fprintf(stderr, "seed %llu: memory order peak %zu, lifetimes %zu\n",
            (unsigned long long)seed, info.peak, lb);
  }
  CHECK(ok);
  free(order);
  free(again);
  return lb;
}

/* Small random graphs: the memory order is the optimum. */
static void test_optimal(void) {
  size_t graphs = 0, orders_beaten = 0;
  for (uint64_t seed = 1; seed <= 150; seed++) {
    mp_graph *g = rnd_graph(seed, 4 + seed % 5, false);
    CHECK(g != NULL);
    if (!g) continue;
    bool in_act = seed % 3 == 0;
    size_t best = brute_best(g, NULL, in_act);
    size_t got = check_memory(g, NULL, in_act, 0, seed);
    mp_schedule_opts o = {.order = MP_ORDER_MEMORY,
                          .inputs_as_activations = in_act};
    uint32_t *order = NULL;
    mp_schedule_info info;
    mp_error err = {0};
    CHECK(mp_schedule_run(g, &o, &order, &info, &err) == MP_OK);
    if (got != best || !info.exact) {
      fprintf(stderr, "seed %llu: memory %zu, optimum %zu, exact %d\n",
              (unsigned long long)seed, got, best, info.exact);
    }
    CHECK_EQ_U(got, best);
    CHECK(info.exact);
    orders_beaten += info.cand[0].peak > got;
    graphs++;
    free(order);
    mp_graph_destroy(g);
  }
  fprintf(stderr,
          "optimal: %zu graphs, the file order beaten on %zu; segments: %zu "
          "met the step bound, %zu searched, %zu improved by the beam\n",
          graphs, orders_beaten, n_bound, n_searched, n_beam);
  CHECK(orders_beaten > 10); /* the oracle is not trivially the file order */
  /* Both ways to optimality, and the beam's orders, are exercised against
   * the brute force. */
  CHECK(n_bound > 10 && n_searched > 10 && n_beam > 10);
}

/* One small random graph through views and inplace (and concat with
 * cat): the scheduler counts merged buffers exactly as lifetimes do and
 * stays optimal, and the passes never raise the file order's lower
 * bound. Counts graphs with a shared buffer and Concat slices. */
/* Graphs whose bound was checked, and those where it is the optimum. */
static size_t n_bounded, n_tight;

/* With 2 states a level the searches are cut, so what the bounds prove
 * shows: the bound every order has is at most brute force's optimum. */
static size_t check_bound(const mp_graph *g, const mp_alias *al, size_t best,
                          uint64_t seed) {
  mp_schedule_opts o = {.order = MP_ORDER_MEMORY, .alias = al, .max_states = 2};
  uint32_t *order = NULL;
  mp_schedule_info info;
  mp_error err = {0};
  CHECK(mp_schedule_run(g, &o, &order, &info, &err) == MP_OK);
  if (info.bound > best || info.bound > info.peak) {
    fprintf(stderr, "seed %llu: bound %zu, brute force %zu, peak %zu\n",
            (unsigned long long)seed, info.bound, best, info.peak);
  }
  CHECK(info.bound <= best && info.bound <= info.peak);
  n_bounded++;
  n_tight += info.bound == best;
  free(order);
  return info.bound;
}

static void check_passes(mp_graph *g, uint64_t seed, bool cat, size_t *shared,
                         size_t *slices) {
  CHECK(g != NULL);
  if (!g) return;
  uint32_t *file = NULL, *order = NULL;
  mp_order_kind used;
  mp_error err = {0};
  CHECK(mp_schedule(g, MP_ORDER_FILE, &file, &used, &err) == MP_OK);
  size_t before = file ? lb_of(g, file, NULL, false) : 0;
  free(file);
  mp_pass_opts po = {.mask = 1u << MP_PASS_INPLACE | 1u << MP_PASS_VIEWS |
                             (cat ? 1u << MP_PASS_CONCAT : 0) |
                             (rnd_sums ? 1u << MP_PASS_ACCUMULATE : 0),
                     .schedule = {.order = MP_ORDER_FILE}};
  mp_alias al;
  mp_schedule_info info;
  mp_pass_report *r = NULL;
  if (mp_passes_run(&g, &po, &al, &order, &info, &r, &err) != MP_OK) {
    fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, err.msg);
    CHECK(!"passes failed");
    mp_graph_destroy(g);
    return;
  }
  *shared += al.n_buffers < al.n_tensors;
  for (size_t o = 0; rnd_sums && o < mp_graph_op_count(g); o++) {
    *slices += strstr(mp_graph_op(g, o)->name, ".add") != NULL;
  }
  for (size_t t = 0; t < al.n_tensors; t++) {
    *slices += al.rule[t] == MP_ALIAS_CONCAT;
  }
  CHECK(lb_of(g, order, &al, false) <= before);
  size_t best = brute_best(g, &al, false);
  CHECK_EQ_U(check_memory(g, &al, false, 0, seed), best);
  check_bound(g, &al, best, seed);
  free(order);
  mp_alias_release(&al);
  mp_pass_report_destroy(r);
  mp_graph_destroy(g);
}

/* Small random graphs after the views and inplace passes, then with
 * Concats and the concat pass too: Concat slices share their output's
 * buffer, born with the first slice written. */
static void check_shared(uint64_t seed, bool cat, size_t *shared,
                         size_t *slices) {
  check_passes(rnd_graph_cat(seed, 4 + seed % 5, true, cat), seed, cat, shared,
               slices);
}

static void test_optimal_shared(void) {
  size_t shared = 0, slices = 0;
  for (uint64_t seed = 1000; seed < 1100; seed++) {
    check_shared(seed, false, &shared, &slices);
  }
  fprintf(stderr, "optimal with shared buffers: %zu graphs share\n", shared);
  CHECK(shared > 30);
  for (uint64_t seed = 2000; seed < 2150; seed++) {
    check_shared(seed, true, &shared, &slices);
  }
  fprintf(stderr, "optimal with concat slices: %zu slices placed\n", slices);
  CHECK(slices > 50);
  /* Sums of three: the accumulate pass's Adds (counted in adds), run in
   * place by inplace; the passes never raise the file order's bound and
   * the memory order still equals brute force. */
  size_t adds = 0;
  rnd_sums = true;
  for (uint64_t seed = 3000; seed < 3150; seed++) {
    check_shared(seed, false, &shared, &adds);
  }
  rnd_sums = false;
  fprintf(stderr, "optimal with accumulated Sums: %zu Adds\n", adds);
  CHECK(adds > 100);
}

/* Adds a u8 activation `tensor` of len bytes and an op `name` of type
 * reading in[0..n_in) and writing it; returns the tensor. */
static int32_t add_op(mp_graph *g, const char *name, const char *tensor,
                      const char *type, const int32_t *in, uint32_t n_in,
                      int64_t len, mp_error *err) {
  int32_t out = -1;
  mp_tensor_desc td = {.name = tensor,
                       .dtype = MP_DTYPE_U8,
                       .kind = MP_TENSOR_ACTIVATION,
                       .rank = 1};
  td.shape[0] = (mp_dim){len, MP_NO_SYM};
  mp_graph_add_tensor(g, &td, &out, err);
  mp_op_desc d = {.name = name,
                  .type = type,
                  .n_inputs = n_in,
                  .n_outputs = 1,
                  .inputs = in,
                  .outputs = &out};
  mp_graph_add_op(g, &d, NULL, err);
  return out;
}

/* A u8 graph input of len bytes. */
static int32_t add_input(mp_graph *g, int64_t len, mp_error *err) {
  int32_t t = -1;
  mp_tensor_desc td = {
      .name = "in", .dtype = MP_DTYPE_U8, .kind = MP_TENSOR_INPUT, .rank = 1};
  td.shape[0] = (mp_dim){len, MP_NO_SYM};
  mp_graph_add_tensor(g, &td, &t, err);
  return t;
}

/* An empty graph `name` with a u8 input of in_len bytes (*in); NULL
 * when it cannot be made. */
static mp_graph *new_graph(const char *name, int64_t in_len, int32_t *in,
                           mp_error *err) {
  mp_graph *g = NULL;
  if (mp_graph_create(NULL, name, name, &g, err) != MP_OK) return NULL;
  *in = add_input(g, in_len, err);
  return g;
}

/* Makes out the graph's output, links and resolves g; NULL (g destroyed)
 * when that fails. */
static mp_graph *finish_graph(mp_graph *g, int32_t out, uint64_t seed,
                              mp_error *err) {
  if (mp_graph_link(g, err) != MP_OK ||
      mp_graph_mark_output(g, out, err) != MP_OK ||
      mp_graph_link(g, err) != MP_OK || mp_graph_resolve(g, err) != MP_OK) {
    fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, err->msg);
    mp_graph_destroy(g);
    return NULL;
  }
  return g;
}

/* rnd_branchy adds a side op from the branches' source, read with the
 * join by a last op: the join is then inside the segment. */
static bool rnd_side;

/* Branches (invariant 11 of schedule_memory.c): 2-4 chains of 1-3 ops
 * from the input or from a stem op, an op now and then reading the
 * branch's source again, joined by a Concat of their ends (cat) or by an
 * op reading them all, whose output is the graph's. Random sizes. */
static mp_graph *rnd_branchy(uint64_t seed, bool cat) {
  mp_graph *g = NULL;
  mp_error err = {0};
  rng_state = seed;
  if (mp_graph_create(NULL, "branchy", "branchy", &g, &err) != MP_OK)
    return NULL;
  size_t n_ops = 0;
  char name[32];
  int32_t ends[4];
  int64_t end_len[4], total = 0;
  int32_t src = add_input(g, 16 * (1 + rnd(64)), &err);
  if (rnd(2)) { /* a stem */
    int64_t len = 16 * (1 + rnd(64));
    src = add_op(g, "stem", "stem_out", "Op", &src, 1, len, &err);
    n_ops++;
  }
  size_t k = 2 + rnd(3);
  for (size_t b = 0; b < k; b++) {
    int32_t prev = src;
    size_t len = 1 + rnd(3);
    while (n_ops + len + (k - b - 1) > (rnd_side ? 6u : 8u)) {
      len--; /* brute force: <= 9 ops (9 with a side op) */
    }
    for (size_t j = 0; j < len; j++) {
      int32_t in[2] = {prev, src};
      snprintf(name, sizeof name, "b%zu_%zu", b, j);
      /* a Relu (in place when it reads prev last), or a new size: often
       * a small one last, below what the branch held */
      bool relu = rnd(3) == 0;
      end_len[b] = relu ? mp_graph_tensor(g, (size_t)prev)->shape[0].value
                   : j + 1 == len && rnd(2) ? 16 * (1 + rnd(4))
                                            : 16 * (1 + rnd(64));
      uint32_t n_in = !relu && j > 0 && rnd(4) == 0 ? 2 : 1;
      prev = add_op(g, name, name, relu ? "Relu" : "Op", in, n_in, end_len[b],
                    &err);
      n_ops++;
    }
    ends[b] = prev;
    total += end_len[b];
  }
  int64_t len = cat ? total : 16 * (1 + rnd(64));
  int32_t out = add_op(g, "join", "joined", cat ? "Concat" : "Op", ends,
                       (uint32_t)k, len, &err);
  if (rnd_side) {
    int32_t last[2] = {
        out, add_op(g, "side", "side", "Op", &src, 1, 16 * (1 + rnd(4)), &err)};
    out = add_op(g, "last", "last", "Op", last, 2, 16, &err);
  }
  return finish_graph(g, out, seed, &err);
}

/* Three branches in -> Op (1024 B) -> Op (64 B) -> Op (16 B), joined by a
 * Concat whose buffer the concat pass makes the branches write (a larger
 * op after it holds the peak): that buffer (48 B) is what each finished
 * branch leaves, one buffer for all of them. */
static mp_graph *concat_branches(void) {
  mp_error err = {0};
  int32_t in = -1, ends[3];
  mp_graph *g = new_graph("cat3", 64, &in, &err);
  if (!g) return NULL;
  char name[16];
  static const int64_t lens[3] = {1024, 64, 16};
  for (int b = 0; b < 3; b++) {
    int32_t prev = in;
    for (int j = 0; j < 3; j++) {
      snprintf(name, sizeof name, "b%d_%d", b, j);
      prev = add_op(g, name, name, "Op", &prev, 1, lens[j], &err);
    }
    ends[b] = prev;
  }
  int32_t joined = add_op(g, "join", "joined", "Concat", ends, 3, 48, &err);
  /* the peak after the join: the pass places every slice */
  int32_t out = add_op(g, "tail", "tail", "Op", &joined, 1, 2048, &err);
  return finish_graph(g, out, 0, &err);
}

/* A branchy graph (no passes): the memory order is brute force's, and at
 * 2 states a level the bound is at most it. */
static void check_branchy(uint64_t seed, bool cat) {
  mp_graph *g = rnd_branchy(seed, cat);
  CHECK(g != NULL);
  if (!g) return;
  size_t best = brute_best(g, NULL, false);
  CHECK_EQ_U(check_memory(g, NULL, false, 0, seed), best);
  check_bound(g, NULL, best, seed);
  mp_graph_destroy(g);
}

/* Branchy graphs, plain and through the passes with a Concat join: the
 * memory order equals brute force, and the branch bound and orders are
 * exercised (each proves or improves some segments). */
static void test_optimal_branches(void) {
  size_t bound0 = n_branch_bound, order0 = n_branch_order;
  size_t shared = 0, slices = 0;
  for (uint64_t seed = 5000; seed < 5300; seed++) check_branchy(seed, false);
  for (uint64_t seed = 6000; seed < 6300; seed++) {
    check_passes(rnd_branchy(seed, true), seed, true, &shared, &slices);
  }
  for (uint64_t seed = 7000; seed < 7300; seed++) {
    check_passes(rnd_branchy(seed, false), seed, false, &shared, &slices);
  }
  check_passes(concat_branches(), 0, true, &shared, &slices);
  fprintf(stderr,
          "optimal with branches: %zu segments met the branch bound, %zu "
          "improved by a branch order; %zu Concat slices placed, %zu graphs "
          "share a buffer; at 2 states a level the bound is the optimum in "
          "%zu of %zu graphs\n",
          n_branch_bound - bound0, n_branch_order - order0, slices, shared,
          n_tight, n_bounded);
  CHECK(n_branch_bound - bound0 > 20 && n_branch_order - order0 > 10);
  CHECK(slices > 50 && shared > 50);
}

/* Branchy graphs whose searches are cut (2 states a level) where the
 * frontier bound (schedule_memory.c invariant 11) is what reaches the
 * optimum: the step and branch bounds alone stop 16 to 256 B below it
 * (seed 5245: 1,856 B of 2,112). */
static void test_frontier_bound(void) {
  static const uint64_t seeds[] = {5079, 5089, 5161, 5205, 5217, 5245};
  for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
    mp_graph *g = rnd_branchy(seeds[k], false);
    CHECK(g != NULL);
    if (!g) continue;
    size_t best = brute_best(g, NULL, false);
    CHECK_EQ_U(check_bound(g, NULL, best, seeds[k]), best);
    mp_graph_destroy(g);
  }
}

/* k chains in -> two 128 B Slices -> their 256 B Concat -> a 64 B op,
 * joined by an op of 16 B that a side op keeps inside the segment (an
 * LSTM's gate weights reordered at run time when constants are not
 * folded, the LSTM reading them beside other inputs): the last Concat
 * to run finds every other chain's 64 B live, so the optimum is 512 +
 * 64 (k - 1) B. The branch bound's paths that end at the join (a
 * descendant of the last Concat) see it; paths to the segment's end
 * pass the join's 16 B. */
static mp_graph *join_chains(int k) {
  mp_error err = {0};
  int32_t in = -1, ends[3];
  mp_graph *g = new_graph("chains", 64, &in, &err);
  if (!g) return NULL;
  char a[16], b[16], c[16], d[16];
  for (int j = 0; j < k && j < 3; j++) {
    snprintf(a, sizeof a, "c%d_a", j);
    snprintf(b, sizeof b, "c%d_b", j);
    snprintf(c, sizeof c, "c%d_cat", j);
    snprintf(d, sizeof d, "c%d_copy", j);
    int32_t s[2] = {add_op(g, a, a, "Slice", &in, 1, 128, &err),
                    add_op(g, b, b, "Slice", &in, 1, 128, &err)};
    int32_t cat = add_op(g, c, c, "Op", s, 2, 256, &err);
    ends[j] = add_op(g, d, d, "Op", &cat, 1, 64, &err);
  }
  /* a side op unordered with the join keeps it inside the segment */
  int32_t last[2] = {add_op(g, "join", "joined", "Op", ends,
                            (uint32_t)(k < 3 ? k : 3), 16, &err),
                     add_op(g, "side", "side", "Op", &in, 1, 16, &err)};
  int32_t out = add_op(g, "out", "out", "Op", last, 2, 16, &err);
  return finish_graph(g, out, 0, &err);
}

/* ... and random branches whose join is inside the segment: the memory
 * order is brute force's, and at 2 states a level the bound (with the
 * paths that end at the last op's descendants) is at most it. */
static void test_join_chains(void) {
  for (int k = 2; k <= 3; k++) {
    mp_graph *g = join_chains(k);
    CHECK(g != NULL);
    if (!g) continue;
    /* 3 chains have 5 million orders: the exact search's optimum */
    size_t best = k == 2 ? brute_best(g, NULL, false)
                         : check_memory(g, NULL, false, 0, (uint64_t)k);
    CHECK_EQ_U(best, 512 + 64 * (size_t)(k - 1));
    CHECK_EQ_U(check_bound(g, NULL, best, (uint64_t)k), best);
    mp_graph_destroy(g);
  }
  size_t tight0 = n_tight, bounded0 = n_bounded, branch0 = n_branch_bound;
  rnd_side = true;
  for (uint64_t seed = 9000; seed < 9300; seed++) {
    check_branchy(seed, seed % 2 == 0);
  }
  rnd_side = false;
  fprintf(stderr,
          "joins inside a segment: %zu segments met the branch bound; at 2 "
          "states a level the bound is the optimum in %zu of %zu graphs\n",
          n_branch_bound - branch0, n_tight - tight0, n_bounded - bounded0);
}

/* A chain of 1 KiB ops, each but the first also reading a 64 B op of the
 * graph's input (a Reshape of a bias, unfolded): every candidate runs
 * those small ops early, where they wait through the chain's steps. The
 * optimum runs each just before its reader (invariant 12 of
 * schedule_memory.c moves it there), 2,112 B. */
static mp_graph *late_sources(void) {
  mp_error err = {0};
  int32_t in = -1, src[6];
  mp_graph *g = new_graph("late", 64, &in, &err);
  if (!g) return NULL;
  char name[16];
  for (int j = 1; j < 6; j++) {
    snprintf(name, sizeof name, "s%d", j);
    src[j] = add_op(g, name, name, "Reshape", &in, 1, 64, &err);
  }
  int32_t prev = add_op(g, "c0", "c0", "Op", &in, 1, 1024, &err);
  for (int j = 1; j < 6; j++) {
    int32_t two[2] = {src[j], prev}; /* dfs visits the small op first */
    snprintf(name, sizeof name, "c%d", j);
    prev = add_op(g, name, name, "Op", two, 2, 1024, &err);
  }
  return finish_graph(g, prev, 0, &err);
}

/* The late sources, searched in full and cut at 2 states a level: the
 * order is the optimum either way, and proven, before any search or
 * branch order. */
static void test_late_sources(void) {
  mp_graph *g = late_sources();
  CHECK(g != NULL);
  if (!g) return;
  size_t best = brute_best(g, NULL, false);
  CHECK_EQ_U(best, 2112);
  CHECK_EQ_U(check_memory(g, NULL, false, 0, 1), best);
  CHECK_EQ_U(check_memory(g, NULL, false, 2, 2), best);
  mp_schedule_opts o = {.order = MP_ORDER_MEMORY, .max_states = 2};
  uint32_t *order = NULL;
  mp_schedule_info info;
  mp_error err = {0};
  CHECK(mp_schedule_run(g, &o, &order, &info, &err) == MP_OK);
  CHECK(info.exact && info.peak == best);
  /* the best candidate, sunk, meets the step bound: nothing searched */
  CHECK(info.bound_segments == 1 && info.branch_improved == 0 &&
        info.dp_states == 0);
  for (size_t c = 0; c < info.n_cand; c++) CHECK(info.cand[c].peak > best);
  free(order);
  mp_graph_destroy(g);
}

/* The memory order of g at 2 states a level (every search cut). */
static bool run_cut(const mp_graph *g, bool in_act, uint32_t **order,
                    mp_schedule_info *info) {
  mp_schedule_opts o = {.order = MP_ORDER_MEMORY,
                        .inputs_as_activations = in_act,
                        .max_states = 2};
  mp_error err = {0};
  return mp_schedule_run(g, &o, order, info, &err) == MP_OK;
}

/* With 2 states a level every search is cut, but the order is still
 * optimal when its peak meets a bound of the whole graph (a proven
 * segment's, a split op's step; schedule_memory.c invariant 5): each such
 * claim agrees with brute force, and some are made. */
static void test_peak_bound(void) {
  size_t claims = 0, by_bound = 0, tight = 0, at_best = 0;
  for (uint64_t seed = 1; seed <= 600; seed++) {
    /* random DAGs, then branchy graphs (a stem and a join are split ops) */
    mp_graph *g = seed <= 300 ? rnd_graph(seed, 4 + seed % 7, false)
                              : rnd_branchy(8000 + seed, false);
    CHECK(g != NULL);
    if (!g) continue;
    bool in_act = seed % 3 == 0;
    uint32_t *order = NULL;
    mp_schedule_info info;
    CHECK(run_cut(g, in_act, &order, &info));
    CHECK(!info.peak_bound || info.exact);
    size_t best = brute_best(g, NULL, in_act);
    /* the bound holds for every order, and is the peak when proven */
    CHECK(info.bound <= best && info.bound <= info.peak);
    CHECK(!info.exact || info.bound == info.peak);
    if (info.bound > best) {
      fprintf(stderr, "seed %llu: bound %zu above brute force %zu\n",
              (unsigned long long)seed, info.bound, best);
    }
    tight += info.bound == best;
    at_best += info.peak == best;
    if (order && info.exact) {
      if (info.peak != best) {
        fprintf(stderr, "seed %llu: claimed optimal %zu, brute force %zu\n",
                (unsigned long long)seed, info.peak, best);
      }
      CHECK_EQ_U(info.peak, best);
      claims++;
      by_bound += info.peak_bound;
    }
    free(order);
    mp_graph_destroy(g);
  }
  fprintf(stderr,
          "cut searches: %zu orders at the optimum, %zu proven, %zu of them "
          "by the peak's bound; the bound is the optimum in %zu of 600 "
          "graphs\n",
          at_best, claims, by_bound, tight);
  CHECK(by_bound > 10 && tight > claims);
}

/* Random DAGs of test_peak_bound whose search, cut at 2 states a level,
 * ends above the optimum, and single moves (schedule_memory.c invariant
 * 13) reach it: the order equals brute force's, and the moves say so. */
static void test_single_moves(void) {
  static const uint64_t seeds[] = {13, 27, 111, 145, 152, 201};
  for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
    uint64_t seed = seeds[k];
    mp_graph *g = rnd_graph(seed, 4 + seed % 7, false);
    CHECK(g != NULL);
    if (!g) continue;
    bool in_act = seed % 3 == 0;
    uint32_t *order = NULL;
    mp_schedule_info info;
    CHECK(run_cut(g, in_act, &order, &info));
    size_t best = brute_best(g, NULL, in_act);
    if (info.peak != best || !info.move_improved) {
      fprintf(stderr, "seed %llu: peak %zu, brute force %zu, moved %zu\n",
              (unsigned long long)seed, info.peak, best, info.move_improved);
    }
    CHECK_EQ_U(info.peak, best);
    CHECK(info.move_improved > 0);
    CHECK(lb_of(g, order, NULL, in_act) == info.peak);
    free(order);
    mp_graph_destroy(g);
  }
}

/* Larger graphs: never worse than the file order; a tiny state budget
 * gives up the proof, never validity. */
static void test_large(void) {
  for (uint64_t seed = 500; seed < 530; seed++) {
    mp_graph *g = rnd_graph(seed, 30 + seed % 40, false);
    CHECK(g != NULL);
    if (!g) continue;
    uint32_t *file = NULL;
    mp_order_kind used;
    mp_error err = {0};
    CHECK(mp_schedule(g, MP_ORDER_FILE, &file, &used, &err) == MP_OK);
    size_t lf = file ? lb_of(g, file, NULL, false) : 0;
    CHECK(check_memory(g, NULL, false, 0, seed) <= lf);
    CHECK(check_memory(g, NULL, false, 2, seed) <= lf);
    free(file);
    mp_graph_destroy(g);
  }
}

/* dfs finishes a branch before the next; rpo follows chains. */
static void test_dfs_rpo(const char *root) {
  char path[1200];
  snprintf(path, sizeof path, "%s/tests/data/passes/branches.json", root);
  static const struct {
    mp_order_kind kind;
    const char *steps;
  } want[] = {
      {MP_ORDER_FILE, "a1 b1 a2 b2 join"},
      {MP_ORDER_DFS, "a1 a2 b1 b2 join"},
      {MP_ORDER_RPO, "a1 a2 b1 b2 join"},
  };
  for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
    mp_load_opts o = {.order = want[k].kind};
    mp_model *m = NULL;
    mp_error err = {0};
    CHECK(mp_model_load(path, &o, NULL, &m, &err) == MP_OK);
    if (!m) {
      fprintf(stderr, "%s\n", err.msg);
      continue;
    }
    char got[128] = "";
    for (size_t s = 0; s < mp_model_steps(m); s++) {
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s",
               s ? " " : "", mp_model_step_op(m, s));
    }
    CHECK_STR(got, want[k].steps);
    CHECK_STR(mp_model_order_name(m), mp_order_name(want[k].kind));
    mp_model_destroy(m);
  }
  /* The memory order: the interleaved file order keeps a1's and b1's
   * big outputs alive together; finishing one branch first does not. */
  mp_load_opts o = {.order = MP_ORDER_MEMORY};
  mp_model *m = NULL;
  mp_error err = {0};
  CHECK(mp_model_load(path, &o, NULL, &m, &err) == MP_OK);
  if (!m) return;
  const mp_schedule_info *s = mp_model_schedule_info(m);
  CHECK_EQ_U(s->cand[0].peak, 4096 + 4096 + 64);
  CHECK_EQ_U(s->peak, 4096 + 64 + 64);
  CHECK(s->exact);
  CHECK_EQ_U(s->segments, 1);
  CHECK_EQ_U(s->largest_segment, 4);
  mp_model_destroy(m);
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : ".";
  test_optimal();
  test_optimal_shared();
  test_optimal_branches();
  test_peak_bound();
  test_frontier_bound();
  test_join_chains();
  test_late_sources();
  test_single_moves();
  test_large();
  test_dfs_rpo(root);
  return check_exit("test_schedule");
}
