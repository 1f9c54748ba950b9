/*
 * cmd_bench.c -- mplan bench DIR|FILE... [--json] [--strategies LIST]
 *                            [--budget-work N] [--budget-ms N]
 *                            [--backend B]
 *
 * Plans every model (minimalloc CSVs above all) with every strategy and
 * reports, per file: buffers, the lower bound, the best known arena when a
 * side file gives one (best_known.csv beside the inputs: file,best_known),
 * and per strategy the arena, its ratio to the lower bound and to the best
 * known, and the planning time. A figure, not a test: it never fails on a
 * ratio, only on bad input.
 *
 * Invariants:
 *   1. Every plan it reports has passed the validator (mp_plan_solve).
 *   2. Files are visited in sorted order, strategies in the order given, so
 *      two runs print the same table apart from the times.
 */
#define _POSIX_C_SOURCE 200809L /* opendir */
#include <cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mplan/file.h"
#include "mplan/units.h"

static const char bench_usage[] =
    "usage: mplan bench DIR|FILE... [--json] [--strategies LIST]\n"
    "                   [--budget-work N] [--budget-ms N]\n"
    "                   [--backend FILE|PRESET]\n"
    "Plans every model (a directory means its *.csv files) with every\n"
    "strategy (default: all but exact; auto searches only with a budget:\n"
    "--budget-work N, search work, the same arenas on every machine, or\n"
    "--budget-ms N) and prints arena, ratio to the lower bound and to the "
    "best\n"
    "known arena (from best_known.csv beside the files: file,best_known),\n"
    "and time.\n";

#define BENCH_MAX_FILES 4096
#define BENCH_MAX_STRATEGIES 16

typedef struct bench_opts {
  const char *files[BENCH_MAX_FILES];
  size_t n_files;
  const char *strategies[BENCH_MAX_STRATEGIES];
  size_t n_strategies;
  double budget_ms;
  uint64_t budget_work;
  bool json;
  const char *backend;
} bench_opts;

static int bench_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Adds the CSV files of a directory, or a file; names live for the run. */
static mp_status bench_add(bench_opts *o, const char *arg, char **owned,
                           size_t *n_owned, mp_error *err) {
  DIR *d = opendir(arg);
  if (!d) {
    if (o->n_files == BENCH_MAX_FILES) goto full;
    o->files[o->n_files++] = arg;
    return MP_OK;
  }
  size_t first = o->n_files;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".csv") != 0) continue;
    if (strcmp(e->d_name, "best_known.csv") == 0) continue;
    if (o->n_files == BENCH_MAX_FILES) {
      closedir(d);
      goto full;
    }
    char *path = malloc(strlen(arg) + len + 2);
    if (!path) {
      closedir(d);
      return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
    }
    sprintf(path, "%s/%s", arg, e->d_name);
    owned[(*n_owned)++] = path;
    o->files[o->n_files++] = path;
  }
  closedir(d);
  qsort(o->files + first, o->n_files - first, sizeof *o->files, bench_cmp);
  if (o->n_files == first) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: no *.csv files in it", arg);
  }
  return MP_OK;
full:
  return mp_error_set(err, MP_ERR_BAD_INPUT, "more than %d files",
                      BENCH_MAX_FILES);
}

static mp_status bench_strategies(bench_opts *o, char *list, mp_error *err) {
  o->n_strategies = 0;
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    bool known = false;
    for (size_t i = 0; i < mp_strategy_count() && !known; i++) {
      known = strcmp(tok, mp_strategy_name(i)) == 0;
    }
    if (!known) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "mplan bench: --strategies: unknown strategy '%s'",
                          tok);
    }
    if (o->n_strategies == BENCH_MAX_STRATEGIES) break;
    o->strategies[o->n_strategies++] = tok;
  }
  return MP_OK;
}

static mp_status bench_parse(int argc, char **argv, bench_opts *o, char **owned,
                             size_t *n_owned, mp_error *err) {
  mp_status st = MP_OK;
  memset(o, 0, sizeof *o);
  for (int i = 2; st == MP_OK && i < argc; i++) {
    const char *a = argv[i];
    bool has_value = i + 1 < argc;
    if (strcmp(a, "--json") == 0) {
      o->json = true;
    } else if (strcmp(a, "--strategies") == 0 && has_value) {
      st = bench_strategies(o, argv[++i], err);
    } else if (strcmp(a, "--budget-ms") == 0 && has_value) {
      char *end;
      o->budget_ms = strtod(argv[++i], &end);
      if (*end || !(o->budget_ms >= 0)) {
        st = mp_error_set(err, MP_ERR_BAD_INPUT,
                          "mplan bench: --budget-ms '%s': expected a number "
                          ">= 0",
                          argv[i]);
      }
    } else if (strcmp(a, "--budget-work") == 0 && has_value) {
      st = cli_work_value("bench", a, argv[++i], &o->budget_work, err);
    } else if (strcmp(a, "--backend") == 0 && has_value) {
      o->backend = argv[++i];
    } else if (a[0] == '-') {
      st = mp_error_set(err, MP_ERR_BAD_INPUT,
                        "mplan bench: unknown option or missing value '%s'", a);
    } else {
      st = bench_add(o, a, owned, n_owned, err);
    }
  }
  if (st == MP_OK && o->n_files == 0) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "mplan bench: no files (see mplan bench --help)");
  }
  if (st == MP_OK && o->n_strategies == 0) {
    for (size_t i = 0; i < mp_strategy_count(); i++) {
      const char *s = mp_strategy_name(i);
      if (strcmp(s, "exact") == 0) continue;
      if (strcmp(s, "auto") == 0 && o->budget_ms <= 0 && !o->budget_work) {
        continue;
      }
      o->strategies[o->n_strategies++] = s;
    }
  }
  return st;
}

/* The best known arena for path from best_known.csv in its directory. */
static size_t bench_best_known(const char *path) {
  char side[4096];
  const char *slash = strrchr(path, '/');
  size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
  if (dir + 16 >= sizeof side) return 0;
  memcpy(side, path, dir);
  strcpy(side + dir, "best_known.csv");
  char *text = NULL;
  size_t len, best = 0;
  mp_error err;
  if (mp_file_read(side, NULL, &text, &len, &err) != MP_OK) return 0;
  const char *base = path + dir;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char *comma = strchr(line, ',');
    if (!comma) continue;
    *comma = '\0';
    if (strcmp(line, base) == 0) best = strtoull(comma + 1, NULL, 10);
  }
  free(text);
  return best;
}

typedef struct bench_row {
  const char *strategy;
  size_t arena;
  double ms;
  char detail[256];
} bench_row;

static mp_status bench_file(const bench_opts *o, const char *path,
                            bench_row *rows, size_t *n_buffers, size_t *lb,
                            mp_error *err) {
  cli_opts co;
  memset(&co, 0, sizeof co);
  co.model = path;
  co.backend = o->backend;
  co.budget_ms = o->budget_ms;
  co.budget_work = o->budget_work;
  mp_model *m = NULL;
  mp_status st = cli_load(&co, false, &m, err);
  for (size_t k = 0; st == MP_OK && k < o->n_strategies; k++) {
    mp_plan *plan = NULL;
    co.strategy = o->strategies[k];
    st = cli_solve(&co, m, &plan, err);
    if (st != MP_OK) break;
    const mp_plan_summary *s = mp_plan_summary_of(plan);
    rows[k].strategy = o->strategies[k];
    rows[k].arena = s->activation_peak_bytes;
    rows[k].ms = s->plan_ms;
    snprintf(rows[k].detail, sizeof rows[k].detail, "%s", s->detail);
    *lb = s->lower_bound_bytes;
    mp_plan_destroy(plan);
  }
  if (m) *n_buffers = mp_problem_count(mp_model_problem(m));
  mp_model_destroy(m);
  return st;
}

static void bench_text_row(mp_buf *out, const bench_row *r, size_t lb,
                           size_t best) {
  char a[MP_FMT_MAX];
  mp_buf_printf(out, "    %-18s %13s  %6.3f", r->strategy,
                mp_fmt_count(a, r->arena), lb ? (double)r->arena / lb : 0.0);
  if (best) {
    mp_buf_printf(out, "  %6.3f", (double)r->arena / best);
  } else {
    mp_buf_printf(out, "  %6s", "-");
  }
  mp_buf_printf(out, "  %10.3f%s%s\n", r->ms, r->detail[0] ? "  " : "",
                r->detail);
}

static void bench_json_file(cJSON *files, const char *path, size_t n, size_t lb,
                            size_t best, const bench_row *rows, size_t n_rows) {
  cJSON *f = cJSON_CreateObject();
  cJSON_AddItemToArray(files, f);
  cJSON_AddStringToObject(f, "file", path);
  cJSON_AddNumberToObject(f, "buffers", (double)n);
  cJSON_AddNumberToObject(f, "lower_bound_bytes", (double)lb);
  if (best) cJSON_AddNumberToObject(f, "best_known_bytes", (double)best);
  cJSON *res = cJSON_AddArrayToObject(f, "results");
  for (size_t k = 0; k < n_rows; k++) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToArray(res, r);
    cJSON_AddStringToObject(r, "strategy", rows[k].strategy);
    cJSON_AddNumberToObject(r, "arena_bytes", (double)rows[k].arena);
    cJSON_AddNumberToObject(r, "ratio_lower_bound",
                            lb ? (double)rows[k].arena / lb : 0);
    if (best) {
      cJSON_AddNumberToObject(r, "ratio_best_known",
                              (double)rows[k].arena / best);
    }
    cJSON_AddNumberToObject(r, "plan_ms", rows[k].ms);
    if (rows[k].detail[0]) cJSON_AddStringToObject(r, "detail", rows[k].detail);
  }
}

/* Per strategy over all files: the worst ratio to the best known and how
 * often it was reached. */
static void bench_text_summary(mp_buf *out, const bench_opts *o,
                               const double *worst, const size_t *reached,
                               size_t with_best) {
  if (!with_best) return;
  mp_buf_printf(out, "\nover %zu files with a best known arena:\n", with_best);
  for (size_t k = 0; k < o->n_strategies; k++) {
    mp_buf_printf(out,
                  "    %-18s worst %6.3f x best known; reached it on %zu\n",
                  o->strategies[k], worst[k], reached[k]);
  }
}

static mp_status bench_run(const bench_opts *o, mp_buf *out, mp_error *err) {
  bench_row rows[BENCH_MAX_STRATEGIES];
  double worst[BENCH_MAX_STRATEGIES] = {0};
  size_t reached[BENCH_MAX_STRATEGIES] = {0}, with_best = 0;
  cJSON *root = o->json ? cJSON_CreateObject() : NULL;
  cJSON *files = NULL;
  if (root) {
    cJSON_AddStringToObject(root, "mplan", "bench/1");
    files = cJSON_AddArrayToObject(root, "files");
  }
  mp_status st = MP_OK;
  for (size_t f = 0; st == MP_OK && f < o->n_files; f++) {
    size_t n = 0, lb = 0, best = bench_best_known(o->files[f]);
    char a[MP_FMT_MAX], b[MP_FMT_MAX];
    memset(rows, 0, sizeof rows);
    st = bench_file(o, o->files[f], rows, &n, &lb, err);
    if (st != MP_OK) break;
    with_best += best != 0;
    for (size_t k = 0; best && k < o->n_strategies; k++) {
      double r = (double)rows[k].arena / best;
      if (r > worst[k]) worst[k] = r;
      reached[k] += rows[k].arena <= best;
    }
    if (root) {
      bench_json_file(files, o->files[f], n, lb, best, rows, o->n_strategies);
      continue;
    }
    mp_buf_printf(out, "%s: %zu buffers, lower bound %s B, best known %s\n",
                  o->files[f], n, mp_fmt_count(a, lb),
                  best ? mp_fmt_count(b, best) : "-");
    mp_buf_printf(out, "    %-18s %13s  %6s  %6s  %10s\n", "strategy",
                  "arena B", "xLB", "xbest", "ms");
    for (size_t k = 0; k < o->n_strategies; k++) {
      bench_text_row(out, &rows[k], lb, best);
    }
  }
  if (st == MP_OK && root) {
    char *text = cJSON_Print(root);
    if (text) {
      mp_buf_puts(out, text);
      mp_buf_puts(out, "\n");
      cJSON_free(text);
    } else {
      st = mp_error_set(err, MP_ERR_NOMEM, "out of memory");
    }
  } else if (st == MP_OK) {
    bench_text_summary(out, o, worst, reached, with_best);
  }
  cJSON_Delete(root);
  return st;
}

int cli_bench(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) return cli_print(bench_usage) ? 0 : 2;
  bench_opts o;
  char *owned[BENCH_MAX_FILES];
  size_t n_owned = 0;
  mp_error err = {0};
  mp_buf out;
  mp_buf_init(&out, NULL);
  mp_status st = bench_parse(argc, argv, &o, owned, &n_owned, &err);
  if (st == MP_OK) st = bench_run(&o, &out, &err);
  int rc =
      st == MP_OK ? (cli_print(mp_buf_str(&out)) ? 0 : 2) : cli_fail(st, &err);
  mp_buf_free(&out);
  for (size_t k = 0; k < n_owned; k++) free(owned[k]);
  return rc;
}
