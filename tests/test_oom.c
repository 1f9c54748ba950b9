#define _POSIX_C_SOURCE 200809L
/*
 * test_oom.c -- allocation failure injection, SQLite style: run the whole
 * pipeline (load, solve, plan JSON, explanation, memory map) with an
 * allocator that fails at its k-th call, for every k until the run
 * succeeds. Every failure must surface as MP_ERR_NOMEM and leave no block
 * allocated.
 *
 * usage: test_oom SOURCE_DIR
 */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "mplan/check.h"
#include "mplan/file.h"
#include "mplan/model.h"
#include "mplan/report.h"
#include "mplan/report_db.h"
#include "mplan/verify.h"

typedef struct oom_state {
  long calls, fail_at, live;
} oom_state;

static void *oom_fn(void *ud, void *ptr, size_t size) {
  oom_state *s = ud;
  if (size == 0) {
    if (ptr) s->live--;
    free(ptr);
    return NULL;
  }
  if (s->calls++ == s->fail_at) return NULL;
  void *p = realloc(ptr, size);
  if (p && !ptr) s->live++;
  return p;
}

static mp_status oom_run(const char *path, const mp_load_opts *o,
                         const mp_alloc *a) {
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_buf out;
  mp_buf_init(&out, a);
  mp_status st = mp_model_load(path, o, a, &m, &err);
  if (st == MP_OK) st = mp_plan_solve(mp_model_problem(m), NULL, &plan, &err);
  if (st == MP_OK) st = mp_report_plan_json(m, plan, &out, &err);
  if (st == MP_OK) st = mp_report_explain(m, plan, NULL, &out, &err);
  if (st == MP_OK) st = mp_report_memmap(m, plan, NULL, &out, &err);
  if (st != MP_OK && st != MP_ERR_NOMEM) {
    fprintf(stderr, "unexpected status %d: %s\n", st, err.msg);
  }
  mp_buf_free(&out);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return st;
}

/* The report files of issue 5 on top: lifetime dumps, DOT, HTML (with the
 * SVG drawing) and an SQLite append. Graphviz, SQLite and cJSON allocate
 * with malloc; what mplan allocates goes through a. */
static const char *oom_db;
static mp_graphviz *oom_gv;

static mp_status oom_reports(const char *path, const mp_load_opts *o,
                             const mp_alloc *a) {
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_report_db *db = NULL;
  mp_buf out;
  mp_buf_init(&out, a);
  mp_status st = mp_model_load(path, o, a, &m, &err);
  if (st == MP_OK) st = mp_plan_solve(mp_model_problem(m), NULL, &plan, &err);
  if (st == MP_OK) st = mp_report_lifetimes_yaml(m, plan, &out, &err);
  if (st == MP_OK) st = mp_report_lifetimes_json(m, plan, &out, &err);
  if (st == MP_OK) st = mp_report_dot(m, plan, &out, &err);
  mp_html_opts ho = {0, oom_gv, NULL};
  if (st == MP_OK) st = mp_report_html(m, plan, NULL, &ho, &out, &err);
  if (st == MP_OK) st = mp_report_db_open(oom_db, a, &db, &err);
  if (st == MP_OK) st = mp_report_db_stage(db, m, plan, NULL, NULL, &err);
  if (st != MP_OK && st != MP_ERR_NOMEM) {
    fprintf(stderr, "unexpected status %d: %s\n", st, err.msg);
  }
  mp_report_db_destroy(db); /* rolls the staged run back */
  mp_buf_free(&out);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return st;
}

/* The CI gate of issue 8 on top: a snapshot, its baseline text, a
 * baseline read back, a diff and a check report in every format. */
static const char *oom_baseline;

static mp_status oom_check(const char *path, const mp_load_opts *o,
                           const mp_alloc *a) {
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_snapshot *now = NULL, *base = NULL;
  mp_diff *d = NULL;
  mp_check_report *r = NULL;
  mp_check_opts co = {.has_budget = true,
                      .budget_bytes = 1 << 20,
                      .has_baseline = true,
                      .tolerance_ppm = 30000};
  mp_run_options ro = {.strategy = "linear"};
  mp_plan_opts po = {.strategy = "linear"};
  mp_buf out;
  mp_buf_init(&out, a);
  mp_status st = mp_model_load(path, o, a, &m, &err);
  if (st == MP_OK) st = mp_plan_solve(mp_model_problem(m), &po, &plan, &err);
  if (st == MP_OK) st = mp_snapshot_of_plan(m, plan, &ro, a, &now, &err);
  if (st == MP_OK) st = mp_snapshot_baseline_json(now, &out, &err);
  if (st == MP_OK) st = mp_snapshot_load(oom_baseline, a, &base, &err);
  if (st == MP_OK) st = mp_diff_create(base, now, a, &d, &err);
  if (st == MP_OK) st = mp_diff_text(d, NULL, &out, &err);
  if (st == MP_OK) st = mp_diff_markdown(d, NULL, &out, &err);
  mp_diff_destroy(d);
  if (st == MP_OK) st = mp_check_report_create(&co, a, &r, &err);
  if (st == MP_OK) {
    st = mp_check_report_add(r, path, now, base, oom_baseline, NULL, &err);
    now = base = NULL; /* taken, also on failure */
  }
  if (st == MP_OK) st = mp_check_report_error(r, "x.json", "x: gone", &err);
  if (st == MP_OK) st = mp_check_report_text(r, &out, &err);
  if (st == MP_OK) st = mp_check_report_junit(r, &out, &err);
  if (st == MP_OK) st = mp_check_report_markdown(r, &out, &err);
  if (st != MP_OK && st != MP_ERR_NOMEM) {
    fprintf(stderr, "unexpected status %d: %s\n", st, err.msg);
  }
  mp_check_report_destroy(r);
  mp_snapshot_destroy(now);
  mp_snapshot_destroy(base);
  mp_buf_free(&out);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return st;
}

/* mplan verify (issue 6): compile, load, run paranoid with red zones, the
 * no-reuse run and the comparison, all through a. */
static mp_status oom_verify(const char *path, const mp_load_opts *o,
                            const mp_alloc *a) {
  mp_error err = {0};
  mp_model *m = NULL;
  mp_verify_result r;
  mp_verify_opts vo = {.paranoid = true, .redzone = 8, .seed = 1};
  mp_status st = mp_model_load(path, o, a, &m, &err);
  if (st == MP_OK) st = mp_verify_run(m, &vo, a, &r, &err);
  if (st == MP_OK) mp_verify_result_release(&r, a);
  if (st != MP_OK && st != MP_ERR_NOMEM) {
    fprintf(stderr, "unexpected status %d: %s\n", st, err.msg);
  }
  mp_model_destroy(m);
  return st;
}

/* Writes the baseline of rel (strategy auto) that oom_check reads. */
static void oom_write_baseline(const char *root, const char *rel,
                               const char *to) {
  char path[1200];
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_snapshot *s = NULL;
  mp_run_options ro = {0};
  mp_buf b;
  mp_buf_init(&b, NULL);
  snprintf(path, sizeof path, "%s/%s", root, rel);
  CHECK(mp_model_load(path, NULL, NULL, &m, &err) == MP_OK);
  CHECK(mp_plan_solve(mp_model_problem(m), NULL, &plan, &err) == MP_OK);
  CHECK(mp_snapshot_of_plan(m, plan, &ro, NULL, &s, &err) == MP_OK);
  CHECK(s && mp_snapshot_baseline_json(s, &b, &err) == MP_OK);
  CHECK(mp_file_write(to, b.data, b.len, &err) == MP_OK);
  mp_buf_free(&b);
  mp_snapshot_destroy(s);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
}

typedef mp_status (*oom_pipeline)(const char *, const mp_load_opts *,
                                  const mp_alloc *);

static void oom_model_with(const char *root, const char *rel,
                           const mp_load_opts *o, oom_pipeline run) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  long k = 0, failures = 0;
  for (;; k++) {
    oom_state s = {0, k, 0};
    mp_alloc a = {oom_fn, &s};
    mp_status st = run(path, o, &a);
    if (s.live != 0) {
      fprintf(stderr, "%s: %ld blocks leaked when failing call %ld\n", rel,
              s.live, k);
    }
    CHECK_EQ_I(s.live, 0);
    if (st == MP_OK) break;
    CHECK_EQ_I(st, MP_ERR_NOMEM);
    failures++;
    if (k > 200000) break;
  }
  fprintf(stderr, "%s: %ld injected failures, all reported, no leaks\n", rel,
          failures);
  CHECK(failures > 10);
}

static void oom_model(const char *root, const char *rel) {
  oom_model_with(root, rel, NULL, oom_run);
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : ".";
  oom_model(root, "models/seed_example.json");
  oom_model(root, "models/mobilenet_v1.json");
  oom_model(root, "tests/data/input.12.csv");
  /* ONNX: the protobuf decoder, the importer, shape inference with values
   * (Shape -> Gather -> Concat -> Reshape) and a warning. */
  mp_shape_binding sb = {"x", 4, {1, 3, 8, 8}};
  mp_load_opts o = {.shapes = &sb, .n_shapes = 1};
  oom_model_with(root, "tests/data/dynamic.onnx.bin", &o, oom_run);
  oom_model(root, "tests/data/opset_new.onnx.bin");
  oom_model(root, "tests/data/control.onnx.bin"); /* If and Loop bodies */
  /* Known If conditions: inferred going past failures, imported again with
   * the taken branches only (model.c, model_onnx). */
  mp_value_binding vb = {"sr", 16000};
  mp_load_opts known = {.values = &vb, .n_values = 1};
  oom_model_with(root, "tests/data/branch.onnx.bin", &known, oom_run);
  /* weights that are graph outputs: copied by made-up Identity ops */
  oom_model(root, "tests/data/weight_outputs.onnx.bin");
  oom_model(root, "tests/data/pipeline.json"); /* two models, merged */
  /* Issue 9: every pass (the rewrite, the re-analysis after each pass,
   * the buffer map) and the memory-aware scheduler (candidates, splits,
   * the exact search). */
  mp_load_opts passes = {.passes = MP_PASSES_ALL, .order = MP_ORDER_MEMORY};
  oom_model_with(root, "tests/data/passes/convnet.json", &passes, oom_run);
  oom_model_with(root, "tests/data/passes/ops.onnx.bin", &passes, oom_run);
  /* An integer Sum in production order, and the manager's rounds that
   * rerun accumulate with the order it made (manager.c invariant 8). */
  oom_model_with(root, "tests/data/passes/sum_late_i8.json", &passes, oom_run);
  /* Concat placements and moves into slices: trials, their journal and
   * the live bytes per step (share.c invariants 3 and 4). */
  oom_model_with(root, "tests/data/passes/concat_add_guard.json", &passes,
                 oom_run);
  mp_load_opts memory = {.order = MP_ORDER_MEMORY};
  oom_model_with(root, "tests/data/passes/branches.json", &memory, oom_run);
  /* The verification runtime: graph JSON and ONNX weights. */
  oom_model_with(root, "tests/data/tiny_net.json", NULL, oom_verify);
  oom_model_with(root, "tests/data/dynamic.onnx.bin", &o, oom_verify);
  /* Constant groups too large to evaluate while planning: the fold pass's
   * groups and constants graph (fold.c invariant 4), and compile running
   * that graph (bundle_write.c invariant 4). */
  oom_model_with(root, "tests/data/passes/fold_large.onnx.bin", &passes,
                 oom_verify);
  /* The report files on top. */
  char db[] = "/tmp/mplan_oom_XXXXXX";
  int fd = mkstemp(db);
  if (fd >= 0) close(fd);
  remove(db); /* a fresh database, created and migrated on every pass */
  oom_db = db;
  mp_error err = {0};
  CHECK(mp_graphviz_create(NULL, &oom_gv, &err) == MP_OK);
  oom_model_with(root, "models/seed_example.json", NULL, oom_reports);
  oom_model_with(root, "tests/data/input.12.csv", NULL, oom_reports);
  remove(db);
  mp_graphviz_destroy(oom_gv);
  /* The CI gate: baselines (made with other options: the diff shows it),
   * diffs and check reports. */
  char bl[] = "/tmp/mplan_oom_bl_XXXXXX";
  fd = mkstemp(bl);
  if (fd >= 0) close(fd);
  oom_baseline = bl;
  oom_write_baseline(root, "models/seed_example.json", bl);
  oom_model_with(root, "models/seed_example.json", NULL, oom_check);
  oom_write_baseline(root, "models/mobilenet_v1.json", bl);
  oom_model_with(root, "models/mobilenet_v1.json", NULL, oom_check);
  remove(bl);
  return check_exit("test_oom");
}
