#define _POSIX_C_SOURCE 200809L
/*
 * test_ci.c -- the CI gate and plan diffs (issue 8): snapshots of plans
 * (their figures against the planner's own summary), baselines written
 * and read back, corrupt baselines refused naming the element, options
 * compared, the tolerance band exact at its edges on both sides, diffs
 * whose attribution sums exactly to the change (property test, seed
 * printed), peak and order changes, runs read from a report database,
 * and the check report's verdicts and escaping.
 *
 * usage: test_ci SOURCE_DIR
 */
#include <cJSON.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mplan/check.h"
#include "mplan/diff.h"
#include "mplan/file.h"
#include "mplan/report_db.h"
#include "mplan/sha256.h"
#include "mplan/snapshot.h"

static const char *root_dir;
static char tmp_dir[] = "/tmp/mplan_ci_XXXXXX";

static char *tmp_path(const char *name) {
  static char buf[8][512];
  static int k;
  char *p = buf[k++ % 8];
  snprintf(p, 512, "%s/%s", tmp_dir, name);
  return p;
}

static char *src_path(const char *rel) {
  static char buf[4][1024];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 1024, "%s/%s", root_dir, rel);
  return p;
}

/* Plans path with strategy (NULL: default) and returns its snapshot with
 * the options recorded, or NULL (reported). */
static mp_snapshot *snap_model(const char *path, const char *strategy,
                               const mp_dim_binding *dims, size_t n_dims) {
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_snapshot *s = NULL;
  mp_load_opts lo = {.dims = dims, .n_dims = n_dims};
  mp_plan_opts po = {.strategy = strategy};
  mp_run_options ro = {.strategy = strategy, .dims = dims, .n_dims = n_dims};
  mp_status st = mp_model_load(path, &lo, NULL, &m, &err);
  if (st == MP_OK) st = mp_plan_solve(mp_model_problem(m), &po, &plan, &err);
  if (st == MP_OK) st = mp_snapshot_of_plan(m, plan, &ro, NULL, &s, &err);
  if (st != MP_OK) fprintf(stderr, "snap_model %s: %s\n", path, err.msg);
  CHECK(st == MP_OK);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return s;
}

static mp_snapshot *snap_text(const char *name, const char *text,
                              const char *strategy) {
  mp_error err = {0};
  const char *path = tmp_path(name);
  if (mp_file_write(path, text, strlen(text), &err) != MP_OK) {
    fprintf(stderr, "%s\n", err.msg);
    CHECK(false);
    return NULL;
  }
  return snap_model(path, strategy, NULL, 0);
}

/* A lifetimes/1 table, alignment 1, from "name:first:last:size[:r]"
 * items separated by spaces (r: resident). */
static void table(char *out, size_t cap, int steps, const char *items) {
  size_t n = (size_t)snprintf(out, cap,
                              "{\"mplan\":\"lifetimes/1\",\"steps\":%d,"
                              "\"tensors\":[",
                              steps);
  char copy[2048];
  snprintf(copy, sizeof copy, "%s", items);
  bool first = true;
  for (char *save = NULL, *tok = strtok_r(copy, " ", &save); tok;
       tok = strtok_r(NULL, " ", &save)) {
    char name[64], res = 0;
    int f, l;
    long size;
    int got = sscanf(tok, "%63[^:]:%d:%d:%ld:%c", name, &f, &l, &size, &res);
    CHECK(got >= 4);
    n += (size_t)snprintf(out + n, cap - n,
                          "%s{\"name\":\"%s\",\"first_use\":%d,\"last_use\":"
                          "%d,\"size\":%ld%s}",
                          first ? "" : ",", name, f, l, size,
                          res == 'r' ? ",\"resident\":true" : "");
    first = false;
  }
  snprintf(out + n, cap - n, "]}");
}

static mp_snapshot *snap_table(const char *name, int steps, const char *items,
                               const char *strategy) {
  char text[8192];
  table(text, sizeof text, steps, items);
  return snap_text(name, text, strategy);
}

/* ---- the band and the tolerance ------------------------------------------ */

static void test_band(void) {
  CHECK_EQ_U(mp_check_band(1000, 30000), 30); /* 3% */
  CHECK_EQ_U(mp_check_band(1000, 30999), 30); /* floor */
  CHECK_EQ_U(mp_check_band(1000, 31000), 31);
  CHECK_EQ_U(mp_check_band(5197792, 0), 0);
  CHECK_EQ_U(mp_check_band(5197792, 10000), 51977); /* 1%: floor(51977.92) */
  CHECK_EQ_U(mp_check_band(3000001, 1), 3);         /* no double involved */
  CHECK_EQ_U(mp_check_band(SIZE_MAX, 1000000), SIZE_MAX);
  CHECK_EQ_U(mp_check_band(SIZE_MAX, 10000000), SIZE_MAX); /* saturates */
  uint32_t ppm = 7;
  mp_error err = {0};
  CHECK(mp_check_parse_tolerance("3%", &ppm, &err) == MP_OK);
  CHECK_EQ_U(ppm, 30000);
  CHECK(mp_check_parse_tolerance("3", &ppm, &err) == MP_OK);
  CHECK_EQ_U(ppm, 30000);
  CHECK(mp_check_parse_tolerance("0.5%", &ppm, &err) == MP_OK);
  CHECK_EQ_U(ppm, 5000);
  CHECK(mp_check_parse_tolerance("0.0001%", &ppm, &err) == MP_OK);
  CHECK_EQ_U(ppm, 1);
  CHECK(mp_check_parse_tolerance("0", &ppm, &err) == MP_OK);
  CHECK_EQ_U(ppm, 0);
  CHECK(mp_check_parse_tolerance("1000%", &ppm, &err) == MP_OK);
  CHECK_EQ_U(ppm, 10000000);
  const char *bad[] = {"",   "%",    "-1%",      "3%%",         "0.00001%",
                       "3x", "1001", "1000.01%", "99999999999", ".5"};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    ppm = 7;
    CHECK(mp_check_parse_tolerance(bad[k], &ppm, &err) == MP_ERR_BAD_INPUT);
    CHECK_EQ_U(ppm, 7);
    CHECK_HAS(err.msg, "expected a percentage");
  }
}

/* ---- snapshots of plans -------------------------------------------------- */

/* The snapshot's figures are the planner's: arena, resident and lower
 * bound equal the summary, and the merged peak intervals cover exactly
 * the profile's peak segments. */
static void check_against_plan(const char *rel) {
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_snapshot *s = NULL;
  CHECK(mp_model_load(src_path(rel), NULL, NULL, &m, &err) == MP_OK);
  CHECK(mp_plan_solve(mp_model_problem(m), NULL, &plan, &err) == MP_OK);
  CHECK(mp_snapshot_of_plan(m, plan, NULL, NULL, &s, &err) == MP_OK);
  if (!s) goto done;
  const mp_plan_summary *sum = mp_plan_summary_of(plan);
  const mp_profile *prof = mp_plan_profile(plan);
  CHECK_EQ_U(mp_snapshot_region_count(s), 1);
  const mp_snap_region *r = mp_snapshot_region(s, 0);
  CHECK_STR(r->name, "arena");
  CHECK_EQ_U(r->arena_bytes, sum->arena_bytes);
  CHECK_EQ_U(r->resident_bytes, sum->resident_bytes);
  CHECK_EQ_U(r->lower_bound_bytes, sum->lower_bound_bytes);
  CHECK_EQ_U(mp_snapshot_total_bytes(s), sum->arena_bytes);
  CHECK_EQ_U(mp_snapshot_tensor_count(s),
             mp_problem_count(mp_plan_problem(plan)));
  CHECK_EQ_U(mp_snapshot_step_count(s), mp_model_steps(m));
  CHECK(mp_snapshot_info(s)->options == NULL); /* none given */
  /* Every profile peak segment lies in one merged interval, and every
   * merged interval is a union of them. */
  int64_t covered = 0, total = 0;
  for (size_t k = 0; k < prof->n_peaks; k++) {
    const mp_segment *g = &prof->segs[prof->peaks[k]];
    bool inside = false;
    for (size_t j = 0; j < r->n_peaks; j++) {
      inside |= r->peaks[j].first <= g->first && g->last <= r->peaks[j].last;
    }
    CHECK(inside);
    covered += g->last - g->first + 1;
  }
  for (size_t j = 0; j < r->n_peaks; j++) {
    total += r->peaks[j].last - r->peaks[j].first + 1;
    if (j) CHECK(r->peaks[j - 1].last + 1 < r->peaks[j].first); /* merged */
  }
  CHECK_EQ_I(covered, total);
done:
  mp_snapshot_destroy(s);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
}

static void test_snapshot_of_plan(void) {
  check_against_plan("models/mobilenet_v2.json");
  check_against_plan("models/seed_example.json");
  /* Three adjacent profile segments at the peak: one merged interval. */
  check_against_plan("tests/bench/minimalloc/A.1048576.csv");
  check_against_plan("tests/data/pipeline.json");
}

/* ---- baselines ----------------------------------------------------------- */

static void same_snapshot(const mp_snapshot *x, const mp_snapshot *y) {
  CHECK_EQ_U(mp_snapshot_region_count(x), mp_snapshot_region_count(y));
  for (size_t k = 0;
       k < mp_snapshot_region_count(x) && k < mp_snapshot_region_count(y);
       k++) {
    const mp_snap_region *a = mp_snapshot_region(x, k);
    const mp_snap_region *b = mp_snapshot_region(y, k);
    CHECK_STR(a->name, b->name);
    CHECK_EQ_U(a->arena_bytes, b->arena_bytes);
    CHECK_EQ_U(a->resident_bytes, b->resident_bytes);
    CHECK_EQ_U(a->lower_bound_bytes, b->lower_bound_bytes);
    CHECK_EQ_U(a->n_peaks, b->n_peaks);
  }
  CHECK_EQ_U(mp_snapshot_tensor_count(x), mp_snapshot_tensor_count(y));
  for (size_t i = 0;
       i < mp_snapshot_tensor_count(x) && i < mp_snapshot_tensor_count(y);
       i++) {
    const mp_snap_tensor *a = mp_snapshot_tensor(x, i);
    const mp_snap_tensor *b = mp_snapshot_tensor(y, i);
    CHECK_STR(a->name, b->name);
    CHECK(a->cls == b->cls && a->region == b->region);
    CHECK_EQ_U(a->size, b->size);
    CHECK_EQ_U(a->padded, b->padded);
    CHECK_EQ_I(a->first, b->first);
    CHECK_EQ_I(a->last, b->last);
  }
  CHECK_EQ_U(mp_snapshot_step_count(x), mp_snapshot_step_count(y));
  for (size_t k = 0;
       k < mp_snapshot_step_count(x) && k < mp_snapshot_step_count(y); k++) {
    CHECK_STR(mp_snapshot_step_op(x, k), mp_snapshot_step_op(y, k));
  }
}

/* Writes s as a baseline at name; returns its text (owned by buf). */
static const char *write_baseline(const mp_snapshot *s, const char *name,
                                  mp_buf *buf) {
  mp_error err = {0};
  mp_buf_init(buf, NULL);
  CHECK(mp_snapshot_baseline_json(s, buf, &err) == MP_OK);
  CHECK(mp_file_write(tmp_path(name), buf->data, buf->len, &err) == MP_OK);
  return mp_buf_str(buf);
}

static void test_baseline_roundtrip(void) {
  mp_dim_binding dims[] = {{"N", 1}};
  mp_snapshot *s =
      snap_model(src_path("models/mobilenet_v2.json"), NULL, dims, 1);
  mp_snapshot *t = NULL, *u = NULL;
  mp_error err = {0};
  mp_buf text;
  if (!s) return;
  const char *doc = write_baseline(s, "mnv2.baseline.json", &text);
  /* One tensor a line, for reviews. */
  CHECK_HAS(doc,
            "\n    {\"name\":\"b2_expand_out\",\"class\":\"activation\","
            "\"region\":\"arena\",\"size\":1204224,\"padded\":1204224,"
            "\"first\":3,\"last\":4},\n");
  CHECK_HAS(doc, "\"tool\": \"mplan " MP_VERSION "\"");
  CHECK_HAS(doc, "\"dims\":{\"N\":1}");
  CHECK_HAS(doc, "\"strategy\":\"auto\"");
  cJSON *j = cJSON_Parse(doc);
  CHECK(j != NULL);
  CHECK_EQ_U(cJSON_GetObjectItem(j, "total_bytes")->valuedouble,
             mp_snapshot_total_bytes(s));
  cJSON_Delete(j);
  CHECK(mp_snapshot_load(tmp_path("mnv2.baseline.json"), NULL, &t, &err) ==
        MP_OK);
  if (t) {
    same_snapshot(s, t);
    CHECK_STR(mp_snapshot_info(t)->kind, "baseline/1");
    CHECK_STR(mp_snapshot_info(t)->options, mp_snapshot_info(s)->options);
    CHECK_STR(mp_snapshot_info(t)->model_sha256,
              mp_snapshot_info(s)->model_sha256);
    CHECK(mp_snapshot_same_options(t, s, &err) == MP_OK);
  }
  /* A plan file reads to the same snapshot. */
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_buf pj;
  mp_buf_init(&pj, NULL);
  CHECK(mp_model_load(src_path("models/mobilenet_v2.json"), NULL, NULL, &m,
                      &err) == MP_OK);
  CHECK(mp_plan_solve(mp_model_problem(m), NULL, &plan, &err) == MP_OK);
  CHECK(mp_report_plan_json(m, plan, &pj, &err) == MP_OK);
  CHECK(mp_file_write(tmp_path("mnv2.plan.json"), pj.data, pj.len, &err) ==
        MP_OK);
  CHECK(mp_snapshot_load(tmp_path("mnv2.plan.json"), NULL, &u, &err) == MP_OK);
  if (u) same_snapshot(s, u);
  mp_snap_source kind = MP_SNAP_MODEL;
  CHECK(mp_snapshot_detect(tmp_path("mnv2.plan.json"), NULL, &kind, &err) ==
        MP_OK);
  CHECK(kind == MP_SNAP_PLAN);
  CHECK(mp_snapshot_detect(tmp_path("mnv2.baseline.json"), NULL, &kind, &err) ==
        MP_OK);
  CHECK(kind == MP_SNAP_BASELINE);
  CHECK(mp_snapshot_detect(src_path("models/mobilenet_v2.json"), NULL, &kind,
                           &err) == MP_OK);
  CHECK(kind == MP_SNAP_MODEL);
  CHECK(mp_snapshot_detect(tmp_path("absent"), NULL, &kind, &err) == MP_ERR_IO);
  const char *others[] = {"tests/data/input.12.csv",
                          "tests/data/control.onnx.bin",
                          "tests/data/pipeline.json"};
  for (size_t k = 0; k < 3; k++) {
    kind = MP_SNAP_PLAN;
    CHECK(mp_snapshot_detect(src_path(others[k]), NULL, &kind, &err) == MP_OK);
    CHECK(kind == MP_SNAP_MODEL);
  }
  /* A plan records no options: it cannot become a baseline. */
  mp_buf no;
  mp_buf_init(&no, NULL);
  CHECK(u && mp_snapshot_baseline_json(u, &no, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "a baseline must record the planning options");
  CHECK_EQ_U(no.len, 0);
  mp_buf_free(&no);
  mp_buf_free(&pj);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  mp_buf_free(&text);
  mp_snapshot_destroy(u);
  mp_snapshot_destroy(t);
  mp_snapshot_destroy(s);
}

/* Replaces the first from in text by to, into out. */
static bool mutate(const char *text, const char *from, const char *to,
                   mp_buf *out) {
  const char *at = strstr(text, from);
  out->len = 0;
  if (!at) return false;
  mp_buf_append(out, text, (size_t)(at - text));
  mp_buf_puts(out, to);
  mp_buf_puts(out, at + strlen(from));
  return true;
}

static void test_corrupt_baselines(void) {
  mp_snapshot *s =
      snap_model(src_path("models/seed_example.json"), NULL, NULL, 0);
  mp_buf text, bad;
  mp_error err = {0};
  if (!s) return;
  write_baseline(s, "seed.baseline.json", &text);
  static const struct {
    const char *from, *to, *want;
    mp_status st;
  } cases[] = {
      {"baseline/1", "baseline/2", "unsupported format 'baseline/2'",
       MP_ERR_UNSUPPORTED},
      {"baseline/1", "graph/1", "is a graph/1, not a baseline or a plan",
       MP_ERR_BAD_INPUT},
      {"\"lower_bound_bytes\":20480", "\"lower_bound_bytes\":20000",
       "region 'arena': lower_bound_bytes is 20000, but its tensors give "
       "20480",
       MP_ERR_BAD_INPUT},
      {"\"total_bytes\": 352256", "\"total_bytes\": 352257",
       "total_bytes: 352257, but the regions add up to 352256",
       MP_ERR_BAD_INPUT},
      {"\"tensors\":8", "\"tensors\":7", "regions[0] ('arena').tensors: 7",
       MP_ERR_BAD_INPUT},
      {"\"arena_bytes\":352256", "\"arena_bytes\":340000",
       "region 'arena': arena 340000 B and resident 331776 B cannot hold",
       MP_ERR_BAD_INPUT},
      {"\"size\":8192", "\"size\":8192.5",
       "tensors[2] ('conv_y').size: expected an integer", MP_ERR_BAD_INPUT},
      {"\"size\":8192", "\"size\":-8192",
       "tensors[2] ('conv_y').size: expected an integer >= 0",
       MP_ERR_BAD_INPUT},
      {"\"size\":8192", "\"size\":0",
       "tensors[2] ('conv_y').size: expected an integer >= 1",
       MP_ERR_BAD_INPUT},
      {"\"name\":\"res\"", "\"name\":\"conv_y\"",
       "tensors[4] ('conv_y'): tensor 'conv_y' is listed twice",
       MP_ERR_BAD_INPUT},
      {"\"region\":\"arena\"", "\"region\":\"sram\"",
       "tensors[0] ('input').region: unknown region 'sram'", MP_ERR_BAD_INPUT},
      {"\"class\":\"activation\"", "\"class\":\"scratch\"",
       "class: unknown class 'scratch'", MP_ERR_BAD_INPUT},
      {"\"first\":1,\"last\":2", "\"first\":3,\"last\":2",
       "first use is after last use", MP_ERR_BAD_INPUT},
      {"\"tool\":", "\"colour\": 1, \"tool\":", "colour: unknown field",
       MP_ERR_BAD_INPUT},
      {"\"padded\":4096", "\"pad\":4096", "pad: unknown field",
       MP_ERR_BAD_INPUT},
      {"\"options\": {", "\"optionz\": {", "optionz: unknown field",
       MP_ERR_BAD_INPUT},
      {"\"steps\": []", "\"steps\": {}", "steps: expected an array",
       MP_ERR_BAD_INPUT},

      {"\n}\n", "\n", "unexpected end of input", MP_ERR_BAD_INPUT},
      {"\n}\n", "\n}\n{}", "data after the end of the document",
       MP_ERR_BAD_INPUT},
  };
  mp_buf_init(&bad, NULL);
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    mp_snapshot *t = NULL;
    err.msg[0] = '\0';
    CHECK(mutate(text.data, cases[k].from, cases[k].to, &bad));
    CHECK(mp_file_write(tmp_path("bad.json"), bad.data, bad.len, &err) ==
          MP_OK);
    mp_status st = mp_snapshot_load(tmp_path("bad.json"), NULL, &t, &err);
    CHECK_EQ_I(st, cases[k].st);
    CHECK(t == NULL);
    CHECK_HAS(err.msg, tmp_path("bad.json"));
    CHECK_HAS(err.msg, cases[k].want);
    mp_snapshot_destroy(t);
  }
  mp_buf_free(&bad);
  mp_buf_free(&text);
  mp_snapshot_destroy(s);
}

static void test_options(void) {
  mp_dim_binding ab[] = {{"A", 1}, {"B", 2}}, ba[] = {{"B", 2}, {"A", 1}};
  mp_dim_binding n2[] = {{"N", 2}};
  const char *m = src_path("models/seed_example.json");
  mp_snapshot *auto1 = snap_model(m, NULL, NULL, 0);
  mp_snapshot *lin = snap_model(m, "linear", NULL, 0);
  mp_snapshot *auto2 = snap_model(m, "auto", NULL, 0);
  mp_error err = {0};
  if (!auto1 || !lin || !auto2) return;
  CHECK(mp_snapshot_same_options(auto1, auto2, &err) == MP_OK);
  CHECK(mp_snapshot_same_options(lin, auto1, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg,
            "baseline made with other options: strategy 'linear' "
            "(now 'auto')");
  /* Other dims are other options. */
  const char *g = src_path("models/mobilenet_v2.json");
  mp_snapshot *x = snap_model(g, NULL, NULL, 0);
  mp_snapshot *y = snap_model(g, NULL, n2, 1);
  if (x && y) {
    CHECK(mp_snapshot_same_options(x, y, &err) == MP_ERR_BAD_INPUT);
    CHECK_HAS(err.msg, "dims {} (now {\"N\":2})");
  }
  mp_snapshot_destroy(x);
  mp_snapshot_destroy(y);
  /* Dims are a set: their order on the command line does not matter
   * (recorded on a table, which does not use them). */
  mp_run_options r1 = {.dims = ab, .n_dims = 2}, r2 = {.dims = ba, .n_dims = 2};
  mp_model *mm = NULL;
  mp_plan *pp = NULL;
  mp_snapshot *s1 = NULL, *s2 = NULL;
  CHECK(mp_model_load(m, NULL, NULL, &mm, &err) == MP_OK);
  CHECK(mp_plan_solve(mp_model_problem(mm), NULL, &pp, &err) == MP_OK);
  CHECK(mp_snapshot_of_plan(mm, pp, &r1, NULL, &s1, &err) == MP_OK);
  CHECK(mp_snapshot_of_plan(mm, pp, &r2, NULL, &s2, &err) == MP_OK);
  if (s1 && s2) {
    CHECK_STR(mp_snapshot_info(s1)->options, mp_snapshot_info(s2)->options);
    CHECK_HAS(mp_snapshot_info(s1)->options, "\"dims\":{\"A\":1,\"B\":2}");
    CHECK(mp_snapshot_same_options(s1, auto1, &err) == MP_ERR_BAD_INPUT);
    CHECK_HAS(err.msg, "dims {\"A\":1,\"B\":2} (now {})");
  }
  mp_snapshot_destroy(s1);
  mp_snapshot_destroy(s2);
  mp_plan_destroy(pp);
  mp_model_destroy(mm);
  mp_snapshot_destroy(auto1);
  mp_snapshot_destroy(auto2);
  mp_snapshot_destroy(lin);
}

/* ---- diffs --------------------------------------------------------------- */

/* The attribution sums to the change, per region and in total. */
static void check_sums(const mp_diff *d) {
  const mp_diff_summary *s = mp_diff_summary_of(d);
  int64_t sum[4] = {0};
  for (size_t k = 0; k < mp_diff_region_count(d); k++) {
    const mp_diff_region *r = mp_diff_region_at(d, k);
    CHECK_EQ_I(r->by_resident + r->by_sizes + r->by_order + r->by_fragmentation,
               r->delta);
    CHECK_EQ_I(r->delta, (int64_t)r->arena[1] - (int64_t)r->arena[0]);
    sum[0] += r->by_resident;
    sum[1] += r->by_sizes;
    sum[2] += r->by_order;
    sum[3] += r->by_fragmentation;
  }
  CHECK_EQ_I(s->by_resident, sum[0]);
  CHECK_EQ_I(s->by_sizes, sum[1]);
  CHECK_EQ_I(s->by_order, sum[2]);
  CHECK_EQ_I(s->by_fragmentation, sum[3]);
  CHECK_EQ_I(s->delta, (int64_t)s->total[1] - (int64_t)s->total[0]);
  size_t n = 0;
  for (int c = 0; c < MP_CHANGE_COUNT; c++) n += s->count[c];
  CHECK_EQ_U(n, mp_diff_tensor_count(d));
}

static mp_diff *diff_of(const mp_snapshot *a, const mp_snapshot *b) {
  mp_diff *d = NULL;
  mp_error err = {0};
  CHECK(a && b && mp_diff_create(a, b, NULL, &d, &err) == MP_OK);
  if (d) check_sums(d);
  return d;
}

static void test_diff_kinds(void) {
  const char *base = "w:0:3:1000:r a:0:1:100 b:2:3:100";
  mp_snapshot *a = snap_table("a.json", 4, base, "linear");
  mp_snapshot *sizes = snap_table("s.json", 4,
                                  "w:0:3:1000:r a:0:1:100 "
                                  "b:2:3:300",
                                  "linear");
  mp_snapshot *order = snap_table("o.json", 4,
                                  "w:0:3:1000:r a:0:1:100 "
                                  "b:1:3:100",
                                  "linear");
  mp_snapshot *res = snap_table("r.json", 4,
                                "w:0:3:2000:r a:0:1:100 "
                                "b:2:3:100",
                                "linear");
  mp_snapshot *ren = snap_table("n.json", 4,
                                "w:0:3:1000:r a:0:1:100 "
                                "c:2:3:100",
                                "linear");
  mp_snapshot *same = snap_table("same.json", 4, base, "linear");
  mp_diff *d;
  /* Sizes only: b grew by 200; the lower bound 100 -> 300. */
  if ((d = diff_of(a, sizes))) {
    const mp_diff_region *r = mp_diff_region_at(d, 0);
    CHECK_EQ_I(r->by_sizes, 200);
    CHECK_EQ_I(r->by_order, 0);
    CHECK_EQ_I(r->by_resident, 0);
    CHECK_EQ_U(mp_diff_summary_of(d)->count[MP_CHANGE_GREW], 1);
    CHECK_STR(mp_diff_tensor_at(d, 0)->name, "b");
    CHECK_EQ_I(mp_diff_tensor_at(d, 0)->delta, 200);
    CHECK(r->peak_moved); /* step 0..1 and 2..3 at 100 -> 2..3 at 300 */
  }
  mp_diff_destroy(d);
  /* Order only: b now overlaps a at step 1; the lower bound doubles. */
  if ((d = diff_of(a, order))) {
    const mp_diff_region *r = mp_diff_region_at(d, 0);
    CHECK_EQ_I(r->by_order, 100);
    CHECK_EQ_I(r->by_sizes, 0);
    CHECK_EQ_U(mp_diff_summary_of(d)->count[MP_CHANGE_LIFETIME], 1);
    CHECK_EQ_I(r->lower_bound[1], 200);
    CHECK(r->peak_moved);
    CHECK_EQ_I(r->b->peaks[0].first, 1);
    CHECK_EQ_I(r->b->peaks[0].last, 1);
  }
  mp_diff_destroy(d);
  /* The resident tier. */
  if ((d = diff_of(a, res))) {
    CHECK_EQ_I(mp_diff_region_at(d, 0)->by_resident, 1000);
    CHECK_EQ_I(mp_diff_summary_of(d)->delta, 1000);
    CHECK(!mp_diff_region_at(d, 0)->peak_moved);
  }
  mp_diff_destroy(d);
  /* Renamed: one appeared, one vanished; same bytes. */
  if ((d = diff_of(a, ren))) {
    const mp_diff_summary *s = mp_diff_summary_of(d);
    CHECK_EQ_U(s->count[MP_CHANGE_APPEARED], 1);
    CHECK_EQ_U(s->count[MP_CHANGE_VANISHED], 1);
    CHECK_EQ_I(s->delta, 0);
    CHECK_STR(mp_diff_tensor_at(d, 0)->name, "c"); /* appeared first */
    CHECK_EQ_I(mp_diff_tensor_at(d, 0)->delta, 100);
    CHECK_EQ_I(mp_diff_tensor_at(d, 1)->delta, -100);
  }
  mp_diff_destroy(d);
  /* The same table in another file: nothing changed. */
  if ((d = diff_of(a, same))) {
    const mp_diff_summary *s = mp_diff_summary_of(d);
    CHECK_EQ_U(mp_diff_tensor_count(d), 0);
    CHECK_EQ_I(s->delta, 0);
    CHECK(!s->peak_moved && !s->order_changed);
  }
  mp_diff_destroy(d);
  mp_snapshot_destroy(a);
  mp_snapshot_destroy(sizes);
  mp_snapshot_destroy(order);
  mp_snapshot_destroy(res);
  mp_snapshot_destroy(ren);
  mp_snapshot_destroy(same);
}

/* Two graphs: a chain, and the same chain with an op inserted and two
 * ops swapped (both orders are valid). */
static const char chain_a[] =
    "{\"mplan\":\"graph/1\",\"name\":\"chain\",\"tensors\":["
    "{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[1,64],\"kind\":\"input\"},"
    "{\"name\":\"p\",\"dtype\":\"f32\",\"shape\":[1,64]},"
    "{\"name\":\"q\",\"dtype\":\"f32\",\"shape\":[1,64]},"
    "{\"name\":\"y\",\"dtype\":\"f32\",\"shape\":[1,64],\"kind\":\"output\"}],"
    "\"ops\":["
    "{\"name\":\"r1\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"p\"]},"
    "{\"name\":\"r2\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"q\"]},"
    "{\"name\":\"add\",\"op\":\"Add\",\"inputs\":[\"p\",\"q\"],"
    "\"outputs\":[\"y\"]}],\"outputs\":[\"y\"]}";
static const char chain_b[] =
    "{\"mplan\":\"graph/1\",\"name\":\"chain\",\"tensors\":["
    "{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[1,64],\"kind\":\"input\"},"
    "{\"name\":\"p\",\"dtype\":\"f32\",\"shape\":[1,64]},"
    "{\"name\":\"q\",\"dtype\":\"f32\",\"shape\":[1,64]},"
    "{\"name\":\"s\",\"dtype\":\"f32\",\"shape\":[1,64]},"
    "{\"name\":\"y\",\"dtype\":\"f32\",\"shape\":[1,64],\"kind\":\"output\"}],"
    "\"ops\":["
    "{\"name\":\"r2\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"q\"]},"
    "{\"name\":\"r1\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"p\"]},"
    "{\"name\":\"neg\",\"op\":\"Neg\",\"inputs\":[\"q\"],\"outputs\":[\"s\"]},"
    "{\"name\":\"add\",\"op\":\"Add\",\"inputs\":[\"p\",\"s\"],"
    "\"outputs\":[\"y\"]}],\"outputs\":[\"y\"]}";

static void test_diff_order(void) {
  mp_snapshot *a = snap_text("chain_a.json", chain_a, NULL);
  mp_snapshot *b = snap_text("chain_b.json", chain_b, NULL);
  mp_diff *d = diff_of(a, b);
  mp_error err = {0};
  if (d) {
    const mp_diff_summary *s = mp_diff_summary_of(d);
    CHECK(s->order_changed);
    CHECK_EQ_U(s->steps[0], 3);
    CHECK_EQ_U(s->steps[1], 4);
    CHECK_EQ_U(s->ops_added, 1); /* neg */
    CHECK_EQ_U(s->ops_removed, 0);
    CHECK_EQ_U(s->ops_moved, 3); /* r1 0->1, r2 1->0, add 2->3 */
    CHECK_EQ_U(s->count[MP_CHANGE_APPEARED], 1);
    CHECK(!s->same_model);
    mp_buf t, j, md;
    mp_buf_init(&t, NULL);
    mp_buf_init(&j, NULL);
    mp_buf_init(&md, NULL);
    CHECK(mp_diff_text(d, NULL, &t, &err) == MP_OK);
    CHECK_HAS(t.data,
              "order: changed: 3 ops at another step, 1 added, 0 "
              "removed (3 -> 4 ops)");
    CHECK_HAS(t.data, "appeared  s ");
    CHECK(mp_diff_json(d, &j, &err) == MP_OK);
    cJSON *doc = cJSON_Parse(j.data);
    CHECK(doc != NULL);
    const cJSON *o = cJSON_GetObjectItem(doc, "order");
    CHECK_EQ_U(cJSON_GetObjectItem(o, "added")->valuedouble, 1);
    const cJSON *tot = cJSON_GetObjectItem(doc, "total");
    const cJSON *why = cJSON_GetObjectItem(tot, "why");
    double sum = 0;
    for (const cJSON *v = why ? why->child : NULL; v; v = v->next) {
      sum += v->valuedouble;
    }
    CHECK_EQ_I((int64_t)sum,
               (int64_t)cJSON_GetObjectItem(tot, "delta")->valuedouble);
    cJSON_Delete(doc);
    CHECK(mp_diff_markdown(d, NULL, &md, &err) == MP_OK);
    CHECK_HAS(md.data, "**Order**: changed: 3 ops at another step");
    CHECK_HAS(md.data, "| **total** | arena |");
    mp_buf_free(&t);
    mp_buf_free(&j);
    mp_buf_free(&md);
  }
  mp_diff_destroy(d);
  mp_snapshot_destroy(a);
  mp_snapshot_destroy(b);
}

/* Property: random tables and random edits; the attribution always sums
 * to the change, and a term is 0 when its cause did not change. */
static uint64_t rng_state;
static uint32_t rng(uint32_t n) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng_state >> 33) % n;
}

static void random_items(char *out, size_t cap, int steps, int n,
                         const int *first, const int *last, const long *size,
                         const bool *present, const bool *resident) {
  size_t len = 0;
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (!present[i]) continue;
    len += (size_t)snprintf(out + len, cap - len, "%st%d:%d:%d:%ld%s",
                            len ? " " : "", i, resident[i] ? 0 : first[i],
                            resident[i] ? steps - 1 : last[i], size[i],
                            resident[i] ? ":r" : "");
  }
}

static void test_diff_property(void) {
  enum { N = 14, STEPS = 10 };
  for (uint64_t seed = 1; seed <= 150; seed++) {
    int first[N], last[N], f2[N], l2[N];
    long size[N], s2[N];
    bool present[N], p2[N], resident[N];
    int n = 3 + (int)((seed * 7) % (N - 3));
    bool sizes_changed = false, lives_changed = false, set_changed = false;
    int failures = check_failures;
    rng_state = seed;
    for (int i = 0; i < n; i++) {
      first[i] = (int)rng(STEPS);
      last[i] = first[i] + (int)rng((uint32_t)(STEPS - first[i]));
      size[i] = 16 * (1 + (long)rng(64));
      present[i] = i < n - 2; /* the last two may appear */
      resident[i] = rng(5) == 0;
      f2[i] = first[i];
      l2[i] = last[i];
      s2[i] = size[i];
      p2[i] = present[i];
    }
    int kind = (int)(seed % 4); /* 0 sizes, 1 lifetimes, 2 set, 3 all */
    for (int i = 0; i < n; i++) {
      if ((kind == 0 || kind == 3) && rng(3) == 0) {
        s2[i] = 16 * (1 + (long)rng(64));
        sizes_changed |= present[i] && s2[i] != size[i];
      }
      if ((kind == 1 || kind == 3) && rng(3) == 0 && !resident[i]) {
        f2[i] = (int)rng(STEPS);
        l2[i] = f2[i] + (int)rng((uint32_t)(STEPS - f2[i]));
        lives_changed |= present[i] && (f2[i] != first[i] || l2[i] != last[i]);
      }
      if ((kind == 2 || kind == 3) && rng(4) == 0) {
        p2[i] = !p2[i];
        set_changed = true;
      }
    }
    bool any = false;
    for (int i = 0; i < n; i++) any |= p2[i];
    if (!any) p2[0] = true, set_changed = true;
    char ta[2048], tb[2048];
    random_items(ta, sizeof ta, STEPS, n, first, last, size, present, resident);
    random_items(tb, sizeof tb, STEPS, n, f2, l2, s2, p2, resident);
    mp_snapshot *a = snap_table("pa.json", STEPS, ta, NULL);
    mp_snapshot *b = snap_table("pb.json", STEPS, tb, NULL);
    mp_diff *d = diff_of(a, b);
    if (d) {
      const mp_diff_summary *s = mp_diff_summary_of(d);
      if (!lives_changed && !set_changed) CHECK_EQ_I(s->by_order, 0);
      if (!sizes_changed && !set_changed) CHECK_EQ_I(s->by_sizes, 0);
      if (!sizes_changed && !set_changed) CHECK_EQ_I(s->by_resident, 0);
      if (!set_changed) {
        CHECK_EQ_U(s->count[MP_CHANGE_APPEARED], 0);
        CHECK_EQ_U(s->count[MP_CHANGE_VANISHED], 0);
      }
    }
    mp_diff *self = diff_of(b, b);
    if (self) {
      CHECK_EQ_U(mp_diff_tensor_count(self), 0);
      CHECK_EQ_I(mp_diff_summary_of(self)->delta, 0);
      CHECK(!mp_diff_summary_of(self)->peak_moved);
    }
    if (check_failures != failures) {
      fprintf(stderr, "diff property: seed %llu\n  A: %s\n  B: %s\n",
              (unsigned long long)seed, ta, tb);
    }
    mp_diff_destroy(self);
    mp_diff_destroy(d);
    mp_snapshot_destroy(a);
    mp_snapshot_destroy(b);
  }
}

/* ---- the check report ---------------------------------------------------- */

static mp_snapshot *one_tensor(long size) {
  char items[64];
  snprintf(items, sizeof items, "t:0:0:%ld", size);
  return snap_table("one.json", 1, items, "linear");
}

static void test_check_report(void) {
  mp_check_opts o = {.has_budget = true,
                     .budget_bytes = 515,
                     .has_baseline = true,
                     .tolerance_ppm = 30000,
                     .baseline_where = "baselines/"};
  mp_check_report *r = NULL;
  mp_error err = {0};
  CHECK(mp_check_report_create(&o, NULL, &r, &err) == MP_OK);
  if (!r) return;
  /* The band of 3% around 500 is [485, 515], both ends included. */
  static const long sizes[] = {515, 516, 485, 484, 500};
  static const mp_verdict want[] = {MP_VERDICT_PASS, MP_VERDICT_FAIL,
                                    MP_VERDICT_PASS, MP_VERDICT_FAIL,
                                    MP_VERDICT_PASS};
  for (size_t k = 0; k < 5; k++) {
    char name[32];
    snprintf(name, sizeof name, "m%ld.json", sizes[k]);
    CHECK(mp_check_report_add(r, name, one_tensor(sizes[k]), one_tensor(500),
                              "b.json", NULL, &err) == MP_OK);
    CHECK_EQ_I(mp_check_report_entry_verdict(r, k), want[k]);
  }
  CHECK_EQ_I(mp_check_report_verdict(r), MP_VERDICT_FAIL);
  CHECK(mp_check_report_add(r, "nobase.json", one_tensor(10), NULL, "nb.json",
                            "nb.json: no baseline", &err) == MP_OK);
  CHECK(mp_check_report_error(r, "we<ird&\"'\xff\x01.json",
                              "we<ird: cannot open", &err) == MP_OK);
  const mp_check_counts *c = mp_check_report_counts(r);
  CHECK_EQ_U(c->models, 7);
  CHECK_EQ_U(c->passed, 3);
  CHECK_EQ_U(c->failed, 2);
  CHECK_EQ_U(c->errors, 2);
  CHECK_EQ_I(mp_check_report_verdict(r), MP_VERDICT_ERROR);
  mp_buf t, j, x, md;
  mp_buf_init(&t, NULL);
  mp_buf_init(&j, NULL);
  mp_buf_init(&x, NULL);
  mp_buf_init(&md, NULL);
  CHECK(mp_check_report_text(r, &t, &err) == MP_OK);
  CHECK_HAS(t.data, "FAIL   m516.json: arena 516 B\n");
  CHECK_HAS(t.data,
            "budget    fail  arena 516 B exceeds the budget 515 B by "
            "1 B");
  CHECK_HAS(t.data,
            "arena 516 B vs baseline 500 B: +16 B (+3.20%), outside "
            "the band +-15 B (3%)");
  CHECK_HAS(t.data,
            "arena 515 B vs baseline 500 B: +15 B (+3.00%), within "
            "the band +-15 B (3%)");
  CHECK_HAS(t.data,
            "arena 485 B vs baseline 500 B: -15 B (-3.00%), within "
            "the band +-15 B (3%)");
  CHECK_HAS(t.data,
            "arena 484 B vs baseline 500 B: -16 B (-3.20%), outside "
            "the band +-15 B (3%): an unexpected saving");
  CHECK_HAS(t.data, "arena 500 B = baseline (band +-15 B, 3%)");
  CHECK_HAS(t.data, "ERROR  nobase.json: arena 10 B\n");
  CHECK_HAS(t.data, "result: ERROR: 3 passed, 2 failed, 2 errors of 7 models");
  CHECK(mp_check_report_json(r, &j, &err) == MP_OK);
  cJSON *doc = cJSON_Parse(j.data);
  CHECK(doc != NULL);
  CHECK_STR(cJSON_GetObjectItem(doc, "status")->valuestring, "error");
  const cJSON *models = cJSON_GetObjectItem(doc, "models");
  CHECK_EQ_U(cJSON_GetArraySize(models), 7);
  const cJSON *m1 = cJSON_GetArrayItem(models, 1);
  const cJSON *band = cJSON_GetArrayItem(
      cJSON_GetObjectItem(
          cJSON_GetArrayItem(cJSON_GetObjectItem(m1, "checks"), 1), "regions"),
      0);
  CHECK_EQ_U(cJSON_GetObjectItem(band, "band_bytes")->valuedouble, 15);
  CHECK_STR(cJSON_GetObjectItem(band, "status")->valuestring, "fail");
  cJSON_Delete(doc);
  CHECK(mp_check_report_junit(r, &x, &err) == MP_OK);
  CHECK_HAS(x.data,
            "<testsuites name=\"mplan check\" tests=\"13\" "
            "failures=\"3\" errors=\"2\">");
  CHECK_HAS(x.data,
            "classname=\"we&lt;ird&amp;&quot;&apos;\xEF\xBF\xBD"
            "\xEF\xBF\xBD.json\" name=\"plan\"");
  CHECK(strchr(x.data, '\x01') == NULL);
  CHECK(strstr(x.data, "\xff") == NULL);
  CHECK(mp_check_report_markdown(r, &md, &err) == MP_OK);
  CHECK_HAS(md.data, "## mplan check: ⚠️ error\n");
  CHECK_HAS(md.data, "| ❌ | m516.json | 516 B | +16 B (+3.20%) | 100.19% |");
  CHECK_HAS(md.data, "| ⚠️ | we&lt;ird&amp;&quot;'");
  CHECK_HAS(md.data, "<details><summary>❌ m484.json: fail</summary>");
  mp_buf_free(&t);
  mp_buf_free(&j);
  mp_buf_free(&x);
  mp_buf_free(&md);
  mp_check_report_destroy(r);
  /* Updating: the rewrite is reported, not judged. */
  o.update = true;
  o.has_budget = false;
  CHECK(mp_check_report_create(&o, NULL, &r, &err) == MP_OK);
  if (!r) return;
  CHECK(mp_check_report_add(r, "a.json", one_tensor(1000), one_tensor(500),
                            "b.json", NULL, &err) == MP_OK);
  CHECK(mp_check_report_add(r, "n.json", one_tensor(5), NULL, "c.json", NULL,
                            &err) == MP_OK);
  CHECK_EQ_I(mp_check_report_verdict(r), MP_VERDICT_PASS);
  mp_buf_init(&t, NULL);
  CHECK(mp_check_report_text(r, &t, &err) == MP_OK);
  CHECK_HAS(t.data,
            "baseline updated: arena 500 B -> 1,000 B: +500 B "
            "(+100.00%)");
  CHECK_HAS(t.data, "baseline written: arena 5 B");
  mp_buf_free(&t);
  mp_check_report_destroy(r);
}

/* ---- runs of a report database ------------------------------------------- */

static void test_db_runs(void) {
  const char *db = tmp_path("history.db");
  const char *model = src_path("models/seed_example.json");
  mp_error err = {0};
  mp_report_db *h = NULL;
  size_t arena[2] = {0};
  CHECK(mp_report_db_open(db, NULL, &h, &err) == MP_OK);
  for (int k = 0; h && k < 2; k++) {
    mp_model *m = NULL;
    mp_plan *plan = NULL;
    mp_plan_opts po = {.strategy = k ? "linear" : NULL};
    CHECK(mp_model_load(model, NULL, NULL, &m, &err) == MP_OK);
    CHECK(mp_plan_solve(mp_model_problem(m), &po, &plan, &err) == MP_OK);
    arena[k] = plan ? mp_plan_summary_of(plan)->arena_bytes : 0;
    char sha[MP_SHA256_HEX];
    CHECK(mp_sha256_file(model, NULL, sha, &err) == MP_OK);
    mp_report_meta meta = {.model_sha256 = sha, .options = "test"};
    CHECK(mp_report_db_append(h, m, plan, &meta, NULL, &err) == MP_OK);
    mp_plan_destroy(plan);
    mp_model_destroy(m);
  }
  mp_report_db_destroy(h);
  CHECK(arena[0] < arena[1]);
  mp_snapshot *r1 = NULL, *r2 = NULL, *x = NULL;
  CHECK(mp_snapshot_load_run(db, "1", NULL, &r1, &err) == MP_OK);
  CHECK(mp_snapshot_load_run(db, "-1", NULL, &r2, &err) == MP_OK);
  if (r1 && r2) {
    CHECK_EQ_U(mp_snapshot_total_bytes(r1), arena[0]);
    CHECK_EQ_U(mp_snapshot_total_bytes(r2), arena[1]);
    CHECK_EQ_I(mp_snapshot_info(r2)->run_id, 2);
    CHECK_STR(mp_snapshot_info(r2)->strategy, "linear");
    CHECK_HAS(mp_snapshot_info(r2)->source, "history.db:2");
    mp_snapshot *m = snap_model(model, NULL, NULL, 0);
    if (m) same_snapshot(m, r1);
    mp_snapshot_destroy(m);
    mp_diff *d = diff_of(r1, r2);
    if (d) {
      const mp_diff_summary *s = mp_diff_summary_of(d);
      CHECK_EQ_I(s->delta, (int64_t)(arena[1] - arena[0]));
      CHECK_EQ_I(s->by_fragmentation, s->delta); /* same sizes and order */
      CHECK(s->same_model);
    }
    mp_diff_destroy(d);
  }
  static const struct {
    const char *run, *want;
  } bad[] = {{"0", "expected a run id"},
             {"x", "expected a run id"},
             {"3", "no run 3"},
             {"-3", "no run -3 (counting back from the latest)"}};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    CHECK(mp_snapshot_load_run(db, bad[k].run, NULL, &x, &err) ==
          MP_ERR_BAD_INPUT);
    CHECK_HAS(err.msg, bad[k].want);
    CHECK_HAS(err.msg, db);
  }
  /* An SQLite database that is not mplan's, and a file that is none. */
  sqlite3 *other = NULL;
  const char *op = tmp_path("other.db");
  CHECK(sqlite3_open(op, &other) == SQLITE_OK);
  CHECK(sqlite3_exec(other, "CREATE TABLE t (x)", NULL, NULL, NULL) ==
        SQLITE_OK);
  sqlite3_close(other);
  CHECK(mp_snapshot_load_run(op, "1", NULL, &x, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "not an mplan report database");
  CHECK(mp_snapshot_load_run(model, "1", NULL, &x, &err) != MP_OK);
  CHECK_HAS(err.msg, model);
  CHECK(x == NULL);
  mp_snap_source kind = MP_SNAP_MODEL;
  CHECK(mp_snapshot_detect(db, NULL, &kind, &err) == MP_OK);
  CHECK(kind == MP_SNAP_DATABASE);
  mp_snapshot_destroy(r1);
  mp_snapshot_destroy(r2);
}

int main(int argc, char **argv) {
  root_dir = argc > 1 ? argv[1] : ".";
  if (!mkdtemp(tmp_dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_band();
  test_snapshot_of_plan();
  test_baseline_roundtrip();
  test_corrupt_baselines();
  test_options();
  test_diff_kinds();
  test_diff_order();
  test_diff_property();
  test_check_report();
  test_db_runs();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
  return check_exit("test_ci");
}
