/*
 * bench_onnx.c -- import + shape inference + plan of an ONNX model, timed
 * over several runs; prints every run and the median. A benchmark, not a
 * test: the target (<= 1 s for the 10.8 MB PP-OCRv4 rec model on
 * the project machine) is read off its output, never asserted.
 *
 * usage: bench_onnx MODEL.onnx [INPUT=DxDx...] [RUNS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mplan/model.h"

static double bench_now_ms(void) {
  struct timespec ts;
  if (timespec_get(&ts, TIME_UTC) != TIME_UTC) return 0.0; /* C11 */
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int bench_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Parses "x=1x3x48x320" into b (in place). */
static int bench_shape(char *arg, mp_shape_binding *b) {
  char *eq = strchr(arg, '=');
  if (!eq) return 0;
  *eq = '\0';
  b->name = arg;
  b->rank = 0;
  for (char *p = eq + 1; *p && b->rank < MP_MAX_RANK;) {
    b->dims[b->rank++] = strtoll(p, &p, 10);
    if (*p == 'x') p++;
  }
  return 1;
}

int main(int argc, char **argv) {
  mp_shape_binding sb = {0};
  mp_load_opts o = {0};
  int runs = argc > 3 ? atoi(argv[3]) : 7;
  if (argc < 2 || runs < 1 || runs > 1000) {
    fprintf(stderr, "usage: bench_onnx MODEL.onnx [INPUT=DxDx...] [RUNS]\n");
    return 2;
  }
  if (argc > 2 && bench_shape(argv[2], &sb)) {
    o.shapes = &sb;
    o.n_shapes = 1;
  }
  double *ms = calloc((size_t)runs, sizeof *ms);
  size_t tensors = 0, arena = 0;
  for (int r = 0; r < runs; r++) {
    mp_model *m = NULL;
    mp_plan *plan = NULL;
    mp_error err = {0};
    double t0 = bench_now_ms();
    mp_status st = mp_model_load(argv[1], &o, NULL, &m, &err);
    if (st == MP_OK) st = mp_plan_solve(mp_model_problem(m), NULL, &plan, &err);
    ms[r] = bench_now_ms() - t0;
    if (st != MP_OK) {
      fprintf(stderr, "bench_onnx: %s\n", err.msg);
      mp_model_destroy(m);
      free(ms);
      return 1;
    }
    tensors = mp_graph_tensor_count(mp_model_graph(m));
    arena = mp_plan_summary_of(plan)->arena_bytes;
    printf("run %d: %.1f ms\n", r + 1, ms[r]);
    mp_plan_destroy(plan);
    mp_model_destroy(m);
  }
  qsort(ms, (size_t)runs, sizeof *ms, bench_cmp);
  printf(
      "%s: %zu tensors, arena %zu B; import + inference + plan: median "
      "%.1f ms over %d runs (min %.1f, max %.1f); target 1000 ms: %s\n",
      argv[1], tensors, arena, ms[runs / 2], runs, ms[0], ms[runs - 1],
      ms[runs / 2] <= 1000 ? "met" : "NOT met");
  free(ms);
  return 0;
}
