#define _POSIX_C_SOURCE 200809L
/*
 * test_reports.c -- the report files of issue 5: lifetime dumps (YAML and
 * JSON), DOT read back with cgraph, SVG, the HTML page and its embedded
 * data, and the SQLite history (rows, views, migrations, refusals, a
 * crash in the middle of a run, two processes appending at once).
 *
 * usage: test_reports SOURCE_DIR
 */
#include <cJSON.h>
#include <graphviz/cgraph.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dot_internal.h"
#include "mplan/file.h"
#include "mplan/model.h"
#include "mplan/passes.h"
#include "mplan/report.h"
#include "mplan/report_db.h"
#include "report_db_internal.h"

static const char *root_dir;
static mp_graphviz *gv; /* one per process (see mp_graphviz_create) */
static char tmp_dir[] = "/tmp/mplan_reports_XXXXXX";

/* x (input) and w (weight) -> mm -> a; relu(a) -> b; sq = b*b -> c;
 * add(c, a) -> y (output). 32 bytes each; live: a 0..3, b 1..2, c 2..3,
 * y 3..3, so the peak is 96 bytes on steps 2..3 (one interval). */
static const char tiny_graph[] =
    "{\"mplan\":\"graph/1\",\"name\":\"tiny\",\"tensors\":["
    "{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[1,8],\"kind\":\"input\"},"
    "{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[8,8],\"kind\":\"weight\"},"
    "{\"name\":\"a\",\"dtype\":\"f32\",\"shape\":[1,8]},"
    "{\"name\":\"b\",\"dtype\":\"f32\",\"shape\":[1,8]},"
    "{\"name\":\"c\",\"dtype\":\"f32\",\"shape\":[1,8]},"
    "{\"name\":\"y\",\"dtype\":\"f32\",\"shape\":[1,8],\"kind\":\"output\"}],"
    "\"ops\":["
    "{\"name\":\"mm\",\"op\":\"MatMul\",\"inputs\":[\"x\",\"w\"],"
    "\"outputs\":[\"a\"]},"
    "{\"name\":\"relu\",\"op\":\"Relu\",\"inputs\":[\"a\"],\"outputs\":[\"b\"]}"
    ","
    "{\"name\":\"sq\",\"op\":\"Mul\",\"inputs\":[\"b\",\"b\"],"
    "\"outputs\":[\"c\"]},"
    "{\"name\":\"add\",\"op\":\"Add\",\"inputs\":[\"c\",\"a\"],"
    "\"outputs\":[\"y\"]}],"
    "\"outputs\":[\"y\"]}";

/* Names a YAML or HTML writer could get wrong. */
static const char odd_table[] =
    "{\"mplan\":\"lifetimes/1\",\"steps\":3,\"tensors\":["
    "{\"name\":\"yes\",\"first_use\":0,\"last_use\":1,\"size\":16},"
    "{\"name\":\"a b: c\",\"first_use\":1,\"last_use\":2,\"size\":16},"
    "{\"name\":\"q\\\"uote\\\\\",\"first_use\":0,\"last_use\":2,\"size\":8},"
    "{\"name\":\"</script><b>x\",\"first_use\":2,\"last_use\":2,\"size\":4},"
    "{\"name\":\"1st\",\"first_use\":0,\"last_use\":0,\"size\":4}]}";

typedef struct fixture {
  mp_model *m;
  mp_plan *plan;
} fixture;

static char *tmp_path(const char *name) {
  static char buf[8][512];
  static int k;
  char *p = buf[k++ % 8];
  snprintf(p, 512, "%s/%s", tmp_dir, name);
  return p;
}

static bool load(const char *path, fixture *f) {
  mp_error err = {0};
  f->m = NULL;
  f->plan = NULL;
  if (mp_model_load(path, NULL, NULL, &f->m, &err) != MP_OK ||
      mp_plan_solve(mp_model_problem(f->m), NULL, &f->plan, &err) != MP_OK) {
    fprintf(stderr, "load %s: %s\n", path, err.msg);
    mp_model_destroy(f->m);
    return false;
  }
  return true;
}

static void unload(fixture *f) {
  mp_plan_destroy(f->plan);
  mp_model_destroy(f->m);
}

static bool load_text(const char *name, const char *text, fixture *f) {
  mp_error err = {0};
  const char *path = tmp_path(name);
  if (mp_file_write(path, text, strlen(text), &err) != MP_OK) return false;
  return load(path, f);
}

static bool load_model(const char *rel, fixture *f) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", root_dir, rel);
  return load(path, f);
}

/* ---- lifetime dumps ------------------------------------------------------ */

static void test_lifetimes(void) {
  fixture f;
  mp_error err = {0};
  mp_buf y, j;
  if (!load_text("tiny.json", tiny_graph, &f)) {
    CHECK(false);
    return;
  }
  mp_buf_init(&y, NULL);
  mp_buf_init(&j, NULL);
  CHECK(mp_report_lifetimes_yaml(f.m, f.plan, &y, &err) == MP_OK);
  CHECK(mp_report_lifetimes_json(f.m, f.plan, &j, &err) == MP_OK);
  const mp_placement *pl = mp_plan_placements(f.plan);
  char want[256];
  /* The seed's form, then the extra fields. */
  snprintf(want, sizeof want,
           "  a:\n    birth_op: mm\n    last_use_op: add\n    size_bytes: 32\n"
           "    padded_bytes: 32\n    first_use: 0\n    last_use: 3\n"
           "    offset: %zu\n    class: activation\n    kind: activation\n",
           pl[2].offset);
  CHECK_HAS(y.data, want);
  CHECK_HAS(y.data, "  w:\n    birth_op: null\n    last_use_op: mm\n");
  CHECK_HAS(y.data, "tensor_lifetime:\n  x:\n");
  cJSON *doc = cJSON_Parse(j.data);
  CHECK(doc != NULL);
  const cJSON *all = cJSON_GetObjectItem(doc, "tensor_lifetime");
  CHECK_EQ_U(cJSON_GetArraySize(all), 6);
  const cJSON *b = cJSON_GetObjectItem(all, "b");
  CHECK_STR(cJSON_GetObjectItem(b, "birth_op")->valuestring, "relu");
  CHECK_STR(cJSON_GetObjectItem(b, "last_use_op")->valuestring, "sq");
  CHECK_EQ_U(cJSON_GetObjectItem(b, "offset")->valuedouble, pl[3].offset);
  CHECK(cJSON_IsNull(
      cJSON_GetObjectItem(cJSON_GetObjectItem(all, "x"), "birth_op")));
  CHECK_STR(cJSON_GetObjectItem(doc, "mplan")->valuestring, "lifetime-dump/1");
  cJSON_Delete(doc);
  unload(&f);
  mp_buf_free(&y);
  mp_buf_free(&j);

  /* Awkward names are quoted and escaped; plain ones stay plain. */
  if (!load_text("odd.json", odd_table, &f)) {
    CHECK(false);
    return;
  }
  mp_buf_init(&y, NULL);
  CHECK(mp_report_lifetimes_yaml(f.m, f.plan, &y, &err) == MP_OK);
  CHECK_HAS(y.data, "\n  \"yes\":\n");
  CHECK_HAS(y.data, "\n  \"a b: c\":\n");
  CHECK_HAS(y.data, "\n  \"q\\\"uote\\\\\":\n");
  CHECK_HAS(y.data, "\n  \"1st\":\n");
  CHECK_HAS(y.data, "    class: activation\n");
  mp_buf_free(&y);
  unload(&f);
}

/* ---- DOT and SVG --------------------------------------------------------- */

static const char *dot_attr(void *obj, const char *name) {
  return agget(obj, (char *)(uintptr_t)name);
}

static void test_dot(void) {
  fixture f;
  mp_error err = {0};
  mp_buf d, s;
  if (!load_text("tiny.json", tiny_graph, &f)) {
    CHECK(false);
    return;
  }
  mp_buf_init(&d, NULL);
  mp_buf_init(&s, NULL);
  CHECK(mp_report_dot(f.m, f.plan, &d, &err) == MP_OK);
  Agraph_t *g = agmemread(d.data);
  CHECK(g != NULL);
  if (g) {
    /* 4 ops, source nodes for x and w, a sink for the output y. */
    CHECK_EQ_I(agnnodes(g), 7);
    /* x->mm, w->mm, a->relu, a->add, b->sq (read twice, one edge),
     * c->add, y->out:y. */
    CHECK_EQ_I(agnedges(g), 7);
    Agnode_t *sq = agnode(g, (char *)(uintptr_t)"op:sq", 0);
    Agnode_t *mm = agnode(g, (char *)(uintptr_t)"op:mm", 0);
    CHECK(sq && mm);
    if (sq && mm) {
      CHECK_STR(dot_attr(sq, "fillcolor"), "#fde0dd"); /* in the peak */
      CHECK(strcmp(dot_attr(mm, "fillcolor"), "#fde0dd") != 0);
      CHECK_EQ_I(agdegree(g, sq, 1, 0), 1);
      CHECK_HAS(dot_attr(sq, "label"), "sq\\nMul (step 2)");
    }
    int red = 0, dimmed = 0;
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
      for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e)) {
        const char *key = agnameof(e);
        const char *color = dot_attr(e, "color");
        bool peak = strcmp(key, "a") == 0 || strcmp(key, "b") == 0 ||
                    strcmp(key, "c") == 0 || strcmp(key, "y") == 0;
        if (peak) {
          CHECK_STR(color, "#d62728");
          red++;
        }
        if (strcmp(key, "w") == 0 || strcmp(key, "x") == 0) {
          CHECK_STR(dot_attr(e, "style"), "dashed");
          dimmed++;
        }
        if (strcmp(key, "b") == 0) {
          CHECK_HAS(dot_attr(e, "label"), "b\\n[1,8] f32\\n32 B");
        }
      }
    }
    CHECK_EQ_I(red, 5);
    CHECK_EQ_I(dimmed, 2);
    agclose(g);
  }
  CHECK(mp_report_svg(gv, f.m, f.plan, &s, &err) == MP_OK);
  CHECK(strncmp(mp_buf_str(&s), "<?xml", 5) == 0);
  CHECK_HAS(s.data, "<svg");
  CHECK_HAS(s.data, "</svg>");
  CHECK_HAS(s.data, "<title>op:sq</title>");
  mp_buf_free(&d);
  mp_buf_free(&s);
  unload(&f);

  /* A problem file: one node per event time, one edge per buffer. */
  if (!load_model("tests/data/input.12.csv", &f)) {
    CHECK(false);
    return;
  }
  mp_buf_init(&d, NULL);
  CHECK(mp_report_dot(f.m, f.plan, &d, &err) == MP_OK);
  g = agmemread(d.data);
  CHECK(g != NULL);
  if (g) {
    CHECK_EQ_I(agnedges(g), (int)mp_problem_count(mp_model_problem(f.m)));
    CHECK(agnode(g, (char *)(uintptr_t)"t:0", 0) != NULL);
    agclose(g);
  }
  mp_buf_free(&d);
  unload(&f);
}

/* A layout that crashes (dot.c invariant 8): Graphviz 2.42 aborted mplan
 * on some cluster layouts. The child that lays out is killed here
 * (dot_test_crash_layouts); mplan goes on. */
static void test_svg_crash(void) {
  fixture f;
  mp_error err = {0};
  mp_buf s, h;
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/passes/qdq_conv.json", root_dir);
  mp_load_opts lo = {.passes = MP_PASSES_ALL};
  f.plan = NULL;
  if (mp_model_load(path, &lo, NULL, &f.m, &err) != MP_OK ||
      mp_plan_solve(mp_model_problem(f.m), NULL, &f.plan, &err) != MP_OK) {
    fprintf(stderr, "load %s: %s\n", path, err.msg);
    CHECK(false);
    return;
  }
  /* with its fusions boxed */
  mp_buf_init(&s, NULL);
  CHECK(mp_report_svg(gv, f.m, f.plan, &s, &err) == MP_OK);
  CHECK_HAS(s.data, "<g id=\"clust");
  CHECK(strstr(s.data, "fusions not boxed") == NULL);
  mp_buf_free(&s);
  /* one crash: drawn again without the clusters, and the title says so */
  dot_test_crash_layouts(1);
  mp_buf_init(&s, NULL);
  CHECK(mp_report_svg(gv, f.m, f.plan, &s, &err) == MP_OK);
  CHECK_HAS(s.data, "</svg>");
  CHECK_HAS(s.data, "fusions not boxed: Graphviz could not lay out their");
  CHECK(strstr(s.data, "<g id=\"clust") == NULL);
  CHECK_HAS(s.data, "<title>op:c1</title>"); /* the ops and their notes */
  CHECK_HAS(s.data, "<title>fused:0</title>");
  mp_buf_free(&s);
  /* two: an error naming the signal, nothing appended */
  dot_test_crash_layouts(2);
  mp_buf_init(&s, NULL);
  memset(&err, 0, sizeof err);
  CHECK(mp_report_svg(gv, f.m, f.plan, &s, &err) == MP_ERR_INTERNAL);
  CHECK_HAS(err.msg,
            "qdq_conv.json: graphviz could not lay out the graph: "
            "the layout crashed (signal 9)");
  CHECK_EQ_U(s.len, 0);
  mp_buf_free(&s);
  /* the page is still written, with a note for the drawing */
  dot_test_crash_layouts(2);
  mp_html_opts ho = {0, gv, NULL};
  mp_buf_init(&h, NULL);
  CHECK(mp_report_html(f.m, f.plan, NULL, &ho, &h, &err) == MP_OK);
  CHECK_HAS(h.data, "The graph could not be drawn: ");
  CHECK_HAS(h.data, "the layout crashed (signal 9)");
  CHECK(strstr(h.data, "<title>op:c1</title>") == NULL);
  mp_buf_free(&h);
  unload(&f);
  /* a graph without clusters is not tried twice: the crash is the error,
   * and the next drawing is whole again */
  if (!load_text("tiny.json", tiny_graph, &f)) {
    CHECK(false);
    return;
  }
  dot_test_crash_layouts(1);
  mp_buf_init(&s, NULL);
  CHECK(mp_report_svg(gv, f.m, f.plan, &s, &err) == MP_ERR_INTERNAL);
  mp_buf_free(&s);
  mp_buf_init(&s, NULL);
  CHECK(mp_report_svg(gv, f.m, f.plan, &s, &err) == MP_OK);
  CHECK_HAS(s.data, "<title>op:sq</title>");
  mp_buf_free(&s);
  unload(&f);
}

/* ---- HTML ---------------------------------------------------------------- */

/* The page's data document, parsed (release with cJSON_Delete). */
static cJSON *html_data(const char *html) {
  const char *open = "<script type=\"application/json\" id=\"mplan-data\">";
  const char *a = strstr(html, open);
  if (!a) return NULL;
  a += strlen(open);
  const char *b = strstr(a, "</script>");
  if (!b) return NULL;
  return cJSON_ParseWithLength(a, (size_t)(b - a));
}

static void test_html(void) {
  fixture f;
  mp_error err = {0};
  mp_buf h;
  mp_report_meta meta = {.model_sha256 = "ab12",
                         .options = "report tiny.json --html x.html",
                         .created_utc = "2025-01-02T03:04:05Z"};
  if (!load_text("tiny.json", tiny_graph, &f)) {
    CHECK(false);
    return;
  }
  mp_html_opts draw = {0, gv, NULL};
  mp_buf_init(&h, NULL);
  CHECK(mp_report_html(f.m, f.plan, &meta, &draw, &h, &err) == MP_OK);
  CHECK(strncmp(h.data, "<!doctype html>", 15) == 0);
  CHECK_HAS(h.data, "Content-Security-Policy");
  CHECK_HAS(h.data, "default-src 'none'");
  CHECK(strstr(h.data, "<!--MPLAN:") == NULL);
  CHECK(strstr(h.data, "<script src") == NULL);
  CHECK(strstr(h.data, "http://") == NULL || strstr(h.data, "http://www.w3"));
  CHECK_HAS(h.data, "<title>mplan report: tiny</title>");
  CHECK_HAS(h.data, "<title>op:sq</title>"); /* the graph, inline */
  cJSON *d = html_data(h.data);
  CHECK(d != NULL);
  if (d) {
    const cJSON *s = cJSON_GetObjectItem(d, "summary");
    const cJSON *bufs = cJSON_GetObjectItem(d, "buffers");
    CHECK_EQ_U(cJSON_GetObjectItem(s, "arena_bytes")->valuedouble,
               mp_plan_summary_of(f.plan)->arena_bytes);
    CHECK_EQ_U(cJSON_GetArraySize(cJSON_GetObjectItem(bufs, "name")), 6);
    CHECK_EQ_U(cJSON_GetArraySize(cJSON_GetObjectItem(bufs, "peak")), 6);
    const cJSON *iv =
        cJSON_GetObjectItem(cJSON_GetObjectItem(d, "peak"), "intervals");
    CHECK_EQ_U(cJSON_GetArraySize(iv), 1);
    CHECK_EQ_I(cJSON_GetArrayItem(cJSON_GetArrayItem(iv, 0), 0)->valueint, 2);
    CHECK_EQ_I(cJSON_GetArrayItem(cJSON_GetArrayItem(iv, 0), 1)->valueint, 3);
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "model"), "sha256")
                  ->valuestring,
              "ab12");
    CHECK_STR(cJSON_GetObjectItem(d, "created_utc")->valuestring,
              "2025-01-02T03:04:05Z");
    CHECK_EQ_U(cJSON_GetArraySize(
                   cJSON_GetObjectItem(cJSON_GetObjectItem(d, "steps"), "op")),
               4);
    cJSON_Delete(d);
  }
  mp_buf_free(&h);

  /* A drawing made already (mplan report --html --svg lays out once):
   * embedded as given, not laid out again. */
  mp_buf given;
  mp_buf_init(&given, NULL);
  mp_buf_puts(&given, "<?xml version=\"1.0\"?>\n<svg id=\"given\"></svg>\n");
  mp_html_opts reuse = {0, gv, &given};
  mp_buf_init(&h, NULL);
  CHECK(mp_report_html(f.m, f.plan, NULL, &reuse, &h, &err) == MP_OK);
  CHECK_HAS(h.data, "<svg id=\"given\"></svg>");
  CHECK(strstr(h.data, "<title>op:sq</title>") == NULL);
  mp_buf_free(&h);
  mp_buf_free(&given);

  /* Too big to draw: a note instead of the drawing. */
  mp_html_opts small = {2, gv, NULL};
  mp_buf_init(&h, NULL);
  CHECK(mp_report_html(f.m, f.plan, NULL, &small, &h, &err) == MP_OK);
  CHECK(strstr(h.data, "<title>op:sq</title>") == NULL);
  CHECK_HAS(h.data, "The graph has 4 ops, more than the 2 drawn inline");
  mp_buf_free(&h);
  unload(&f);

  /* A name that would close the data's <script> element early. */
  if (!load_text("odd.json", odd_table, &f)) {
    CHECK(false);
    return;
  }
  mp_buf_init(&h, NULL);
  CHECK(mp_report_html(f.m, f.plan, NULL, NULL, &h, &err) == MP_OK);
  CHECK_HAS(h.data, "The graph was not drawn for this report.");
  CHECK(strstr(h.data, "</script><b>x") == NULL);
  CHECK_HAS(h.data, "\\u003c/script>\\u003cb>x");
  d = html_data(h.data);
  CHECK(d != NULL);
  if (d) {
    const cJSON *names =
        cJSON_GetObjectItem(cJSON_GetObjectItem(d, "buffers"), "name");
    CHECK_STR(cJSON_GetArrayItem(names, 3)->valuestring, "</script><b>x");
    cJSON_Delete(d);
  }
  mp_buf_free(&h);
  unload(&f);
}

/* ---- SQLite -------------------------------------------------------------- */

static int64_t q_int(const char *db_path, const char *sql) {
  sqlite3 *db = NULL;
  sqlite3_stmt *s = NULL;
  int64_t v = -1;
  if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    v = sqlite3_column_int64(s, 0);
  } else {
    fprintf(stderr, "query failed: %s: %s\n", sql, sqlite3_errmsg(db));
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

static bool q_exec(const char *db_path, const char *sql) {
  sqlite3 *db = NULL;
  bool ok = sqlite3_open(db_path, &db) == SQLITE_OK &&
            sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

static mp_status append(const char *path, const fixture *f, int64_t *id) {
  mp_report_db *db = NULL;
  mp_error err = {0};
  mp_report_meta meta = {.model_sha256 = "00ff", .options = "test"};
  mp_status st = mp_report_db_open(path, NULL, &db, &err);
  if (st == MP_OK) st = mp_report_db_append(db, f->m, f->plan, &meta, id, &err);
  if (st != MP_OK) fprintf(stderr, "append: %s\n", err.msg);
  mp_report_db_destroy(db);
  return st;
}

static void test_sqlite_rows(void) {
  fixture f;
  const char *path = tmp_path("rows.db");
  int64_t id = 0;
  if (!load_text("tiny.json", tiny_graph, &f)) {
    CHECK(false);
    return;
  }
  CHECK(append(path, &f, &id) == MP_OK);
  CHECK_EQ_I(id, 1);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM run"), 1);
  CHECK_EQ_I(q_int(path, "SELECT max(version) FROM schema_version"),
             MP_REPORT_DB_VERSION);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM tensor"), 6);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM placement"), 6);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM step"), 4);
  /* a 0..3, b 1..2, c 2..3, y 3..3: 4 + 2 + 2 + 1 rows. */
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM live_set"), 9);
  CHECK_EQ_I(q_int(path, "SELECT live_bytes FROM step WHERE step = 2"), 96);
  CHECK_EQ_I(q_int(path, "SELECT live_count FROM step WHERE step = 2"), 3);
  CHECK_EQ_I(q_int(path,
                   "SELECT count(*) FROM peak_interval WHERE "
                   "first_step = 2 AND last_step = 3 AND bytes = 96"),
             1);
  CHECK_EQ_I(q_int(path, "SELECT sum(bytes) FROM live_at_peak"), 96);
  CHECK_EQ_I(q_int(path,
                   "SELECT count(*) FROM live_at_peak WHERE tensor = "
                   "'b' AND why_alive = 'last read here by sq'"),
             1);
  CHECK_EQ_I(q_int(path,
                   "SELECT count(*) FROM live_at_peak WHERE tensor = "
                   "'a' AND why_alive = 'read later by add (step 3)'"),
             1);
  CHECK_EQ_I(q_int(path,
                   "SELECT count(*) FROM tensor WHERE name = 'a' AND "
                   "consumers = '[\"relu\",\"add\"]' AND producer = "
                   "'mm' AND dtype = 'f32' AND shape = '[1,8]'"),
             1);
  CHECK_EQ_I(q_int(path, "SELECT arena_bytes FROM run_summary"),
             (int64_t)mp_plan_summary_of(f.plan)->arena_bytes);
  CHECK_EQ_I(q_int(path,
                   "SELECT count(*) FROM top_tensors WHERE rank = 1 "
                   "AND tensor = 'w'"),
             1);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM pass"), 0);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM verification_event"), 0);
  /* A second run appends; the first is untouched. */
  CHECK(append(path, &f, &id) == MP_OK);
  CHECK_EQ_I(id, 2);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM tensor WHERE run_id = 1"), 6);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM live_set WHERE run_id = 2"), 9);
  /* A staged run that is never committed leaves nothing. */
  mp_report_db *db = NULL;
  mp_error err = {0};
  CHECK(mp_report_db_open(path, NULL, &db, &err) == MP_OK);
  CHECK(mp_report_db_stage(db, f.m, f.plan, NULL, &id, &err) == MP_OK);
  CHECK(mp_report_db_stage(db, f.m, f.plan, NULL, &id, &err) ==
        MP_ERR_INTERNAL);
  mp_report_db_destroy(db);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM run"), 2);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM tensor"), 12);
  mp_report_db_destroy(NULL);
  unload(&f);

  /* Problem files record a row at every time the live set changes. */
  const char *csv_db = tmp_path("csv.db");
  if (!load_model("tests/data/input.12.csv", &f)) {
    CHECK(false);
    return;
  }
  CHECK(append(csv_db, &f, &id) == MP_OK);
  CHECK_EQ_I(q_int(csv_db, "SELECT sum(bytes) FROM live_at_peak"),
             (int64_t)mp_plan_profile(f.plan)->peak);
  CHECK_EQ_I(q_int(csv_db,
                   "SELECT count(*) FROM step s WHERE live_bytes != "
                   "(SELECT coalesce(sum(p.padded_size), 0) FROM "
                   "live_set l JOIN placement p ON p.run_id = "
                   "l.run_id AND p.tensor_idx = l.tensor_idx WHERE "
                   "l.run_id = s.run_id AND l.step = s.step)"),
             0);
  CHECK_EQ_I(q_int(csv_db, "SELECT count(*) FROM step WHERE op IS NOT NULL"),
             0);
  unload(&f);
}

static void test_sqlite_schema(void) {
  fixture f;
  mp_report_db *db = NULL;
  mp_error err = {0};
  int64_t id;
  if (!load_text("tiny.json", tiny_graph, &f)) {
    CHECK(false);
    return;
  }
  /* An old (version 1) database is migrated forward on open. */
  const char *old = tmp_path("v1.db");
  CHECK(report_db_open_version(old, NULL, 1, &db, &err) == MP_OK);
  CHECK_EQ_I(mp_report_db_version(db), 1);
  CHECK(mp_report_db_append(db, f.m, f.plan, NULL, &id, &err) == MP_OK);
  mp_report_db_destroy(db);
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM sqlite_schema WHERE type = "
                   "'view'"),
             0);
  CHECK(mp_report_db_open(old, NULL, &db, &err) == MP_OK);
  CHECK_EQ_I(mp_report_db_version(db), MP_REPORT_DB_VERSION);
  mp_report_db_destroy(db);
  CHECK_EQ_I(q_int(old, "SELECT count(*) FROM schema_version"),
             MP_REPORT_DB_VERSION);
  /* Version 3 added columns to pass and the issue 9 tables, version 4
   * the verification target tables, version 5 tensor_buffer.offset,
   * version 6 pass.removed, version 7 peak_interval.idle_bytes and
   * peak_in_use, version 8 tile and tile_op, version 9 schedule, version
   * 10 the tile pass's ranked patchings, version 11 tile_export,
   * version 12 the schedule's branch columns, version 13
   * schedule.bound_bytes, version 14 schedule.move_improved_segments. */
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM pragma_table_info('pass') WHERE "
                   "name IN ('lower_bound_before', 'arena_after', "
                   "'peak_moved')"),
             3);
  CHECK_EQ_I(q_int(old, "SELECT count(*) FROM tensor_buffer"), 0);
  /* Version 5: where a tensor starts inside its buffer. */
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM pragma_table_info('tensor_buffer') "
                   "WHERE name = 'offset'"),
             1);
  /* Version 6: the tensors each pass removed. */
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM pragma_table_info('pass') "
                   "WHERE name = 'removed'"),
             1);
  CHECK_EQ_I(q_int(old, "SELECT count(*) FROM run_summary"), 1);
  CHECK_EQ_I(q_int(old, "SELECT sum(bytes) FROM live_at_peak"), 96);
  /* Version 7: idle bytes at the peak; the run written at version 1 has
   * none recorded (0), and live_at_peak shows every byte in use. */
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM pragma_table_info('peak_interval') "
                   "WHERE name = 'idle_bytes'"),
             1);
  CHECK_EQ_I(q_int(old, "SELECT count(*) FROM peak_in_use"), 0);
  CHECK_EQ_I(q_int(old, "SELECT sum(in_use_bytes) FROM live_at_peak"), 96);
  /* Version 8: the tile record and the ops of its patches, empty for the
   * old run. */
  CHECK_EQ_I(q_int(old, "SELECT count(*) FROM tile"), 0);
  CHECK_EQ_I(q_int(old, "SELECT count(*) FROM tile_op"), 0);
  /* Version 9: the memory order's search, none for the old run. */
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM pragma_table_info('schedule') "
                   "WHERE name IN ('optimal', 'work', 'work_budget', "
                   "'work_hit', 'time_hit')"),
             5);
  CHECK_EQ_I(q_int(old, "SELECT count(*) FROM schedule"), 0);
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM pragma_table_info('run') "
                   "WHERE name = 'plan_options'"),
             1);
  CHECK_EQ_I(q_int(old, "SELECT count(*) FROM run WHERE plan_options IS NULL"),
             1);

  /* Version 10: which ranked patching the tile pass built. */
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM pragma_table_info('tile') WHERE "
                   "name IN ('ranked', 'picked', 'built', "
                   "'lower_bound_picked_file', 'lower_bound_first_file')"),
             5);
  /* Version 11: the tensors the patches join besides the cut one. */
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM pragma_table_info('tile_export') "
                   "WHERE name IN ('run_id', 'seq', 'tensor')"),
             3);
  CHECK_EQ_I(q_int(old, "SELECT count(*) FROM tile_export"), 0);
  /* Version 12: the segments the branch bound proved and a branch order
   * improved. */
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM pragma_table_info('schedule') WHERE "
                   "name IN ('branch_bound_segments', "
                   "'branch_improved_segments', 'optimal_by_bound')"),
             3);
  /* Version 13: the bound every order has. */
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM pragma_table_info('schedule') WHERE "
                   "name = 'bound_bytes'"),
             1);
  /* Version 14: the segments moving single ops improved. */
  CHECK_EQ_I(q_int(old,
                   "SELECT count(*) FROM pragma_table_info('schedule') WHERE "
                   "name = 'move_improved_segments'"),
             1);

  /* A newer schema is refused, and the file is left alone. */
  CHECK(q_exec(old, "INSERT INTO schema_version VALUES (15, 'x', '9.9')"));
  CHECK(mp_report_db_open(old, NULL, &db, &err) == MP_ERR_UNSUPPORTED);
  CHECK_HAS(err.msg, "schema version 15 is newer than this mplan");
  CHECK_HAS(err.msg, old);
  CHECK_EQ_I(q_int(old, "SELECT count(*) FROM run"), 1);

  /* Not a database; someone else's database. */
  const char *text = tmp_path("notes.db");
  CHECK(mp_file_write(text, "just some notes, not a database\n", 32, &err) ==
        MP_OK);
  CHECK(mp_report_db_open(text, NULL, &db, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "not an SQLite database");
  char *data = NULL;
  size_t len = 0;
  CHECK(mp_file_read(text, NULL, &data, &len, &err) == MP_OK);
  CHECK_EQ_U(len, 32);
  free(data);
  const char *other = tmp_path("other.db");
  CHECK(q_exec(other, "CREATE TABLE t(x)"));
  CHECK(mp_report_db_open(other, NULL, &db, &err) == MP_ERR_BAD_INPUT);
  CHECK_HAS(err.msg, "not an mplan report database");
  CHECK(mp_report_db_open("/nonexistent-dir/h.db", NULL, &db, &err) ==
        MP_ERR_IO);
  CHECK_HAS(err.msg, "/nonexistent-dir/h.db");
  unload(&f);
}

/* Two processes append runs to one fresh database at the same time; a
 * third dies in the middle of a run. Every committed run lands whole. */
static void test_sqlite_concurrent(void) {
  enum { WRITERS = 2, RUNS = 6 };
  const char *path = tmp_path("shared.db");
  char mv1[1024];
  snprintf(mv1, sizeof mv1, "%s/models/mobilenet_v1.json", root_dir);
  pid_t kids[WRITERS];
  for (int w = 0; w < WRITERS; w++) {
    kids[w] = fork();
    if (kids[w] == 0) {
      fixture f;
      int bad = 0;
      if (!load(mv1, &f)) _exit(3);
      for (int r = 0; r < RUNS; r++) bad += append(path, &f, NULL) != MP_OK;
      unload(&f);
      _exit(bad ? 1 : 0);
    }
    CHECK(kids[w] > 0);
  }
  for (int w = 0; w < WRITERS; w++) {
    int status = 0;
    CHECK(waitpid(kids[w], &status, 0) == kids[w]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM run"), WRITERS * RUNS);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM schema_version"),
             MP_REPORT_DB_VERSION);
  CHECK_EQ_I(q_int(path,
                   "SELECT count(*) FROM run r WHERE r.buffers != "
                   "(SELECT count(*) FROM tensor t WHERE t.run_id = "
                   "r.id)"),
             0);
  /* A writer killed between stage and commit: no trace of its run. */
  pid_t crash = fork();
  if (crash == 0) {
    fixture f;
    mp_report_db *db = NULL;
    mp_error err = {0};
    if (!load(mv1, &f) || mp_report_db_open(path, NULL, &db, &err) != MP_OK ||
        mp_report_db_stage(db, f.m, f.plan, NULL, NULL, &err) != MP_OK) {
      _exit(3);
    }
    _exit(0); /* no commit, no rollback, no close: as if killed */
  }
  int status = 0;
  CHECK(waitpid(crash, &status, 0) == crash);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM run"), WRITERS * RUNS);
  CHECK_EQ_I(q_int(path, "SELECT count(*) FROM tensor"),
             q_int(path, "SELECT sum(buffers) FROM run"));
  fixture f;
  if (load(mv1, &f)) {
    int64_t id = 0;
    CHECK(append(path, &f, &id) == MP_OK);
    CHECK_EQ_I(id, WRITERS * RUNS + 1);
    unload(&f);
  }
  sqlite3 *db = NULL;
  sqlite3_stmt *s = NULL;
  CHECK(sqlite3_open(path, &db) == SQLITE_OK);
  CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL) ==
        SQLITE_OK);
  CHECK(sqlite3_step(s) == SQLITE_ROW);
  CHECK_STR((const char *)sqlite3_column_text(s, 0), "ok");
  sqlite3_finalize(s);
  CHECK(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL) ==
        SQLITE_OK);
  CHECK(sqlite3_step(s) == SQLITE_ROW);
  CHECK_STR((const char *)sqlite3_column_text(s, 0), "wal");
  sqlite3_finalize(s);
  sqlite3_close(db);
}

/* ---- group writes -------------------------------------------------------- */

static void test_write_many(void) {
  mp_error err = {0};
  const char *a = tmp_path("a.txt"), *b = tmp_path("b.txt");
  mp_file_out ok[2] = {{a, "A", 1}, {b, "BB", 2}};
  CHECK(mp_file_write_many(ok, 2, &err) == MP_OK);
  /* The second cannot be created: the first is not replaced either. */
  mp_file_out bad[2] = {{a, "new", 3}, {"/nonexistent-dir/x", "x", 1}};
  CHECK(mp_file_write_many(bad, 2, &err) == MP_ERR_IO);
  CHECK_HAS(err.msg, "/nonexistent-dir/x");
  char *data = NULL;
  size_t len = 0;
  CHECK(mp_file_read(a, NULL, &data, &len, &err) == MP_OK);
  CHECK_STR(data, "A");
  free(data);
  CHECK(access(tmp_path("a.txt.tmp~"), F_OK) != 0);
}

int main(int argc, char **argv) {
  root_dir = argc > 1 ? argv[1] : ".";
  if (!mkdtemp(tmp_dir)) {
    perror("mkdtemp");
    return 1;
  }
  mp_error err = {0};
  if (mp_graphviz_create(NULL, &gv, &err) != MP_OK) {
    fprintf(stderr, "graphviz: %s\n", err.msg);
    return 1;
  }
  test_lifetimes();
  test_dot();
  test_svg_crash();
  test_html();
  test_sqlite_rows();
  test_sqlite_schema();
  test_sqlite_concurrent();
  test_write_many();
  mp_graphviz_destroy(gv);
  mp_graphviz_destroy(NULL);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
  return check_exit("test_reports");
}
