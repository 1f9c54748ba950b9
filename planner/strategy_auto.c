/*
 * strategy_auto.c -- the meta strategies: `auto` and `exact`.
 *
 * auto:  runs every fast heuristic on the same buffers (above AUTO_LARGE
 *        buffers, three of them) and keeps the smallest arena (ties: the
 *        earlier heuristic in the list); when a
 *        budget is given and the result is above the lower bound, hands it
 *        to the exact search to improve or prove.
 * exact: the same start, then always the exact search within the budget
 *        (MP_EXACT_WORK when none is given): it either proves the
 *        optimum or returns the best arena found and the gap to the lower
 *        bound it proved. It starts from the best heuristic and is never
 *        worse than it.
 *
 * Invariants:
 *   1. ctx->offsets always holds a complete, conflict-free placement: the
 *      heuristic result, replaced only by a better exact solution.
 *   2. The optimisation keeps lo <= optimum <= best: lo rises only on a
 *      proof of infeasibility, best falls only on a found solution.
 *   3. A budget in work (mp_plan_opts.budget_work: search nodes, each
 *      costing its partition's buffers) gives the same placement on
 *      every machine: the long first look gets 30% of the work, each
 *      probe its doubling node limit and at most the work left, and the
 *      search stops when none is left. Only a time budget
 *      (budget_ms) makes a result depend on the machine.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "exact.h"
#include "mplan/plan.h"
#include "mplan/units.h"
#include "strategy.h"

static const mp_strategy *const auto_heuristics[] = {
    &mp_strategy_best_fit_size,     &mp_strategy_best_fit_duration,
    &mp_strategy_best_fit_conflict, &mp_strategy_greedy_breadth,
    &mp_strategy_seed_first_fit,    &mp_strategy_online_best_fit,
    &mp_strategy_canonical,
};

#define AUTO_N (sizeof auto_heuristics / sizeof *auto_heuristics)

/* Above this many buffers auto runs only the heuristics that still do well
 * at scale, so that a huge graph plans in seconds, not tens of them. */
#define AUTO_LARGE 50000

static bool auto_wanted(const mp_strategy *h, size_t n) {
  return n <= AUTO_LARGE || h == &mp_strategy_best_fit_size ||
         h == &mp_strategy_best_fit_duration ||
         h == &mp_strategy_online_best_fit;
}

static size_t auto_extent(const mp_strategy_ctx *ctx, const size_t *off) {
  size_t top = 0;
  for (size_t i = 0; i < ctx->n; i++) {
    if (off[i] + ctx->bufs[i].size > top) top = off[i] + ctx->bufs[i].size;
  }
  return top;
}

/* One worker's share of the wanted heuristics: with two lanes, the first
 * (best-fit-size, the slowest) on lane 0 and the others on lane 1, which
 * about evens their time at scale. Each keeps its offsets when it beats
 * the worker's best so far (ties: the earlier heuristic). */
typedef struct auto_lane {
  mp_strategy_ctx *ctx;
  unsigned lane, lanes;
  size_t *trial, *best; /* n offsets each */
  size_t arena;         /* best's extent; SIZE_MAX: none */
  size_t winner;        /* index in auto_heuristics */
  mp_status st;
  mp_error err;
} auto_lane;

static void *auto_lane_run(void *arg) {
  auto_lane *l = arg;
  mp_strategy_ctx *ctx = l->ctx;
  l->arena = SIZE_MAX;
  l->st = MP_OK;
  for (size_t h = 0, k = 0; h < AUTO_N && l->st == MP_OK; h++) {
    if (!auto_wanted(auto_heuristics[h], ctx->n)) continue;
    unsigned lane = l->lanes == 1 || k == 0 ? 0 : 1;
    k++;
    if (lane != l->lane) continue;
    mp_strategy_ctx sub = *ctx;
    sub.offsets = l->trial;
    l->st = auto_heuristics[h]->solve(&sub, &l->err);
    size_t a = l->st == MP_OK ? auto_extent(ctx, l->trial) : SIZE_MAX;
    if (a < l->arena) {
      l->arena = a;
      l->winner = h;
      size_t *t = l->best;
      l->best = l->trial, l->trial = t;
    }
  }
  return NULL;
}

/* Runs every heuristic; leaves the winner's offsets in ctx->offsets.
 * Above AUTO_LARGE buffers two threads share the heuristics, when the
 * caller allows it (ctx->threads, mp_plan_opts): by default only with the
 * C library's allocator, which is thread-safe; the winner is the same as one
 * thread would pick: the smallest arena, ties to the earlier heuristic. */
static mp_status auto_heuristics_run(mp_strategy_ctx *ctx, size_t *arena,
                                     const char **winner, mp_error *err) {
  bool libc = !ctx->alloc || ctx->alloc == mp_alloc_libc();
  bool two = ctx->threads >= 2 || (ctx->threads == 0 && libc);
  unsigned lanes = ctx->n > AUTO_LARGE && two ? 2 : 1;
  auto_lane l[2] = {0};
  mp_status st = MP_OK;
  for (unsigned k = 0; k < lanes; k++) {
    l[k] = (auto_lane){ctx, k, lanes, NULL, NULL, SIZE_MAX, 0, MP_OK, {0}};
    l[k].trial = mp_calloc(ctx->alloc, ctx->n + 1, sizeof *l[k].trial);
    l[k].best = mp_calloc(ctx->alloc, ctx->n + 1, sizeof *l[k].best);
    if (!l[k].trial || !l[k].best) {
      st = mp_error_set(err, MP_ERR_NOMEM, "auto: out of memory");
    }
  }
  pthread_t thread;
  bool threaded = false;
  if (st == MP_OK && lanes == 2) {
    threaded = pthread_create(&thread, NULL, auto_lane_run, &l[1]) == 0;
  }
  if (st == MP_OK) {
    auto_lane_run(&l[0]);
    if (threaded) {
      pthread_join(thread, NULL);
    } else if (lanes == 2) {
      auto_lane_run(&l[1]); /* no thread: the same work, in turn */
    }
  }
  /* The first failure in heuristic order wins, as in one thread. */
  for (unsigned k = 0; st == MP_OK && k < lanes; k++) {
    if (l[k].st != MP_OK) {
      if (err) *err = l[k].err;
      st = l[k].st;
    }
  }
  *arena = SIZE_MAX;
  size_t win = AUTO_N;
  for (unsigned k = 0; st == MP_OK && k < lanes; k++) {
    if (l[k].arena == SIZE_MAX) continue;
    if (win == AUTO_N || l[k].arena < *arena ||
        (l[k].arena == *arena && l[k].winner < win)) {
      *arena = l[k].arena;
      win = l[k].winner;
      memcpy(ctx->offsets, l[k].best, ctx->n * sizeof *l[k].best);
    }
  }
  if (st == MP_OK && win < AUTO_N) *winner = auto_heuristics[win]->name;
  for (unsigned k = 0; k < lanes; k++) {
    mp_free(ctx->alloc, l[k].trial);
    mp_free(ctx->alloc, l[k].best);
  }
  return st;
}

static bool auto_pinned(const mp_strategy_ctx *ctx) {
  for (size_t i = 0; i < ctx->n; i++) {
    if (ctx->bufs[i].pinned) return true;
  }
  return false;
}

typedef struct auto_search {
  size_t best; /* the smallest arena found: an upper bound on the optimum */
  size_t lo;   /* the next capacity worth asking about */
  size_t lb;   /* proven: no arena below it exists */
  uint64_t nodes, work;
} auto_search;

/* The search's budget: work (invariant 3) and a deadline (ms; 1e300:
 * none). */
typedef struct auto_budget {
  uint64_t work; /* UINT64_MAX: none */
  double deadline;
} auto_budget;

static bool auto_left(const auto_budget *b, const auto_search *s) {
  return s->work < b->work && mp_now_ms() < b->deadline;
}

/* The work the next ex_decide may spend: part/10 of what is left (0:
 * no limit). */
static uint64_t auto_work(const auto_budget *b, const auto_search *s,
                          unsigned part) {
  if (b->work == UINT64_MAX) return 0;
  uint64_t w = (b->work - s->work) / 10 * part;
  return w ? w : 1;
}

static void auto_count(auto_search *s, const ex_problem *ex) {
  s->nodes += ex_nodes(ex);
  s->work += ex_work(ex);
}

/* Invariant 2. The search is heavy-tailed: a capacity that takes seconds
 * may have a neighbour solved in milliseconds. So after one long look at
 * the lower bound come many short probes rather than a few long ones, with
 * a node limit that doubles from pass to pass (restarts, in SAT-solver
 * terms). */
static mp_status auto_ladder(mp_strategy_ctx *ctx, ex_problem *ex, size_t *sol,
                             auto_search *s, const auto_budget *b,
                             mp_error *err) {
  uint64_t limit = 20 * (uint64_t)ctx->n > 8000 ? 20 * (uint64_t)ctx->n : 8000;
  /* First the lower bound with a long look: on most real problems it is
   * the optimum, found within a second or so. */
  double now = mp_now_ms();
  if (auto_left(b, s)) {
    ex_result r;
    double until =
        b->deadline >= 1e300 ? 1e300 : now + 0.3 * (b->deadline - now);
    mp_status st =
        ex_decide(ex, s->lo, until, 0, auto_work(b, s, 3), sol, &r, err);
    auto_count(s, ex);
    if (st != MP_OK) return st;
    if (r == EX_FOUND) {
      s->best = auto_extent(ctx, sol);
      memcpy(ctx->offsets, sol, ctx->n * sizeof *sol);
    } else if (r == EX_INFEASIBLE) {
      s->lb = ++s->lo;
    }
  }
  /* Then passes down a grid of capacities from the best found to the
   * proven bound, each probe limited in nodes (the same on every machine),
   * the limit doubling from pass to pass. */
  while (s->lo < s->best && auto_left(b, s)) {
    size_t step = (s->best - s->lo) / 32 ? (s->best - s->lo) / 32 : 1;
    for (size_t cap = s->best - 1; cap >= s->lo && auto_left(b, s);) {
      ex_result r;
      mp_status st = ex_decide(ex, cap, b->deadline, limit, auto_work(b, s, 10),
                               sol, &r, err);
      auto_count(s, ex);
      if (st != MP_OK) return st;
      if (r == EX_FOUND) {
        s->best = auto_extent(ctx, sol);
        memcpy(ctx->offsets, sol, ctx->n * sizeof *sol);
        cap = s->best - 1;
      } else if (r == EX_INFEASIBLE) {
        s->lo = s->lb = cap + 1; /* every smaller capacity fails too */
        break;
      } else if (cap < s->lo + step) {
        break;
      } else {
        cap -= step;
      }
    }
    limit *= 2;
  }
  return MP_OK;
}

static void auto_describe(mp_strategy_ctx *ctx, const auto_search *s,
                          const auto_budget *bud, const char *prefix) {
  char a[MP_FMT_MAX], b[MP_FMT_MAX], c[MP_FMT_MAX], w[MP_FMT_MAX];
  char spent[96];
  size_t len = strlen(ctx->detail);
  snprintf(spent, sizeof spent, "%llu nodes, work %s%s",
           (unsigned long long)s->nodes, mp_fmt_count(w, s->work),
           s->best <= s->lb        ? ""
           : s->work >= bud->work  ? ", work budget reached"
           : bud->deadline < 1e300 ? ", time budget reached"
                                   : "");
  if (s->best <= s->lb) {
    snprintf(ctx->detail + len, sizeof ctx->detail - len,
             "%s: %s B is optimal (proven; %s)", prefix,
             mp_fmt_count(a, s->best), spent);
  } else {
    snprintf(ctx->detail + len, sizeof ctx->detail - len,
             "%s: best %s B, proven lower bound %s B, gap %s B (%.2f%%; %s)",
             prefix, mp_fmt_count(a, s->best), mp_fmt_count(b, s->lb),
             mp_fmt_count(c, s->best - s->lb),
             100.0 * (double)(s->best - s->lb) / (double)s->lb, spent);
  }
  ctx->proven_lb = s->lb;
}

/* Tries to improve (or prove) the placement in ctx->offsets within the
 * budget. Leaves a sentence in ctx->detail. */
static mp_status auto_exact(mp_strategy_ctx *ctx, size_t arena,
                            double budget_ms, uint64_t budget_work,
                            mp_error *err) {
  size_t len = strlen(ctx->detail);
  if (auto_pinned(ctx)) {
    snprintf(ctx->detail + len, sizeof ctx->detail - len,
             "exact search skipped: pinned buffers");
    return MP_OK;
  }
  ex_problem *ex = NULL;
  mp_error why;
  mp_status st = ex_create(ctx, &ex, &why);
  if (st == MP_ERR_UNSUPPORTED) {
    snprintf(ctx->detail + len, sizeof ctx->detail - len,
             "exact search skipped: %s", why.msg);
    return MP_OK;
  }
  if (st != MP_OK) {
    if (err) *err = why;
    return st;
  }
  auto_budget b = {budget_work ? budget_work : UINT64_MAX,
                   budget_ms > 0 ? mp_now_ms() + budget_ms : 1e300};
  auto_search s = {arena, ex_lower_bound(ex), ex_lower_bound(ex), 0, 0};
  size_t *sol = mp_calloc(ctx->alloc, ctx->n + 1, sizeof *sol);
  st = sol ? auto_ladder(ctx, ex, sol, &s, &b, err)
           : mp_error_set(err, MP_ERR_NOMEM, "exact: out of memory");
  if (st == MP_OK) auto_describe(ctx, &s, &b, "exact");
  mp_free(ctx->alloc, sol);
  ex_destroy(ex);
  return st;
}

static mp_status auto_solve(mp_strategy_ctx *ctx, mp_error *err) {
  size_t arena;
  const char *winner = "none";
  mp_status st = auto_heuristics_run(ctx, &arena, &winner, err);
  if (st != MP_OK) return st;
  snprintf(ctx->detail, sizeof ctx->detail, "%s won; ", winner);
  if (ctx->budget_ms <= 0 && !ctx->budget_work) {
    size_t len = strlen(ctx->detail);
    snprintf(ctx->detail + len, sizeof ctx->detail - len,
             "no exact search (give --budget-work or --budget-ms)");
    return MP_OK;
  }
  return auto_exact(ctx, arena, ctx->budget_ms, ctx->budget_work, err);
}

static mp_status exact_solve(mp_strategy_ctx *ctx, mp_error *err) {
  size_t arena;
  const char *winner = "none";
  mp_status st = auto_heuristics_run(ctx, &arena, &winner, err);
  if (st != MP_OK) return st;
  snprintf(ctx->detail, sizeof ctx->detail, "started from %s; ", winner);
  bool none = ctx->budget_ms <= 0 && !ctx->budget_work;
  return auto_exact(ctx, arena, ctx->budget_ms,
                    none ? MP_EXACT_WORK : ctx->budget_work, err);
}

const mp_strategy mp_strategy_auto = {
    "auto",
    "every fast heuristic, the smallest kept; then the exact search when "
    "--budget-ms is given and the lower bound is not met",
    auto_solve};

const mp_strategy mp_strategy_exact = {
    "exact",
    "branch and bound over canonical placements (MiniMalloc-style) from the "
    "best heuristic: proves the optimum or reports the gap, within the "
    "budget (default 5 s)",
    exact_solve};
