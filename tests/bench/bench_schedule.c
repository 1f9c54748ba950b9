/*
 * bench_schedule.c -- the scheduling benchmark of issue 9: for every graph
 * given, the activation lower bound under the file order and under
 * --order memory, the reduction, the time, and whether the search proved
 * the result optimal; then the mean (arithmetic and geometric) reduction.
 *
 * usage: bench_schedule [--budget-ms N] [--states N] [--passes LIST]
 *                       [--inputs activation] GRAPH...
 * Prints counts and ratios (tests/bench is not a timed test).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/model.h"
#include "mplan/passes.h"

/* The search work each graph gets: about a minute here (docs/schedule.md). */
#define BENCH_WORK ((uint64_t)1000000000)

typedef struct bench_opts {
  uint64_t work;
  double budget_ms;
  size_t states;
  uint32_t passes;
  bool inputs_act;
} bench_opts;

static int bench_load(const char *path, const bench_opts *b, mp_order_kind k,
                      mp_model **m) {
  mp_error err = {0};
  mp_load_opts o = {.order = k,
                    .passes = b->passes,
                    .order_work = b->work,
                    .order_budget_ms = b->budget_ms,
                    .order_states = b->states,
                    .inputs_as_activations = b->inputs_act};
  if (mp_model_load(path, &o, NULL, m, &err) != MP_OK) {
    fprintf(stderr, "bench_schedule: %s\n", err.msg);
    return 1;
  }
  return 0;
}

static size_t bench_lb(const mp_model *m) {
  mp_profile prof;
  mp_error err = {0};
  if (mp_problem_profile(mp_model_problem(m), &prof, &err) != MP_OK) return 0;
  size_t peak = prof.peak;
  mp_profile_release(&prof);
  return peak;
}

int main(int argc, char **argv) {
  bench_opts b = {BENCH_WORK, 0, 0, 0, false};
  int first = 1, failed = 0;
  for (; first < argc && strncmp(argv[first], "--", 2) == 0; first++) {
    mp_error err = {0};
    if (strcmp(argv[first], "--work") == 0 && first + 1 < argc) {
      b.work = (uint64_t)strtoull(argv[++first], NULL, 10);
    } else if (strcmp(argv[first], "--budget-ms") == 0 && first + 1 < argc) {
      b.budget_ms = atof(argv[++first]);
    } else if (strcmp(argv[first], "--states") == 0 && first + 1 < argc) {
      b.states = (size_t)atoll(argv[++first]);
    } else if (strcmp(argv[first], "--passes") == 0 && first + 1 < argc &&
               mp_passes_parse(argv[first + 1], &b.passes, &err) == MP_OK) {
      first++;
    } else if (strcmp(argv[first], "--inputs") == 0 && first + 1 < argc) {
      b.inputs_act = strcmp(argv[++first], "activation") == 0;
    } else {
      fprintf(stderr, "bench_schedule: bad option %s %s\n", argv[first],
              err.msg);
      return 2;
    }
  }
  printf("%-28s %5s %14s %14s %8s %9s %8s %s\n", "graph", "ops", "file B",
         "memory B", "ratio", "ms", "segments", "optimal");
  double sum = 0, logsum = 0, worst_ms = 0;
  int n = 0;
  for (int i = first; i < argc; i++) {
    mp_model *fm = NULL, *mm = NULL;
    if (bench_load(argv[i], &b, MP_ORDER_FILE, &fm) ||
        bench_load(argv[i], &b, MP_ORDER_MEMORY, &mm)) {
      mp_model_destroy(fm);
      failed++;
      continue;
    }
    const mp_schedule_info *s = mp_model_schedule_info(mm);
    size_t lf = bench_lb(fm), lm = bench_lb(mm);
    double r = lm ? (double)lf / (double)lm : 1;
    const char *name = strrchr(argv[i], '/');
    printf("%-28s %5zu %14zu %14zu %7.3fx %9.1f %8zu %s%s\n",
           name ? name + 1 : argv[i], mp_graph_op_count(mp_model_graph(mm)), lf,
           lm, r, s->ms, s->segments, s->exact ? "yes" : "no",
           s->time_hit   ? " (wall-clock cap)"
           : s->work_hit ? " (work budget)"
                         : "");
    if (lm > lf || lm != s->peak) {
      printf(
          "  ERROR: memory order worse than file, or its reported peak "
          "%zu is not the lifetimes' %zu\n",
          s->peak, lm);
      failed++;
    }
    sum += r;
    logsum += log(r);
    worst_ms = s->ms > worst_ms ? s->ms : worst_ms;
    n++;
    mp_model_destroy(fm);
    mp_model_destroy(mm);
  }
  if (n) {
    printf(
        "mean reduction %.3fx (geometric %.3fx) over %d graphs; slowest "
        "%.1f ms\n",
        sum / n, exp(logsum / n), n, worst_ms);
  }
  return failed ? 1 : 0;
}
