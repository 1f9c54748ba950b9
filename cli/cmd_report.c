/*
 * cmd_report.c -- mplan report MODEL|PLAN.json [--html F] [--sqlite DB]
 *                 [--dot F] [--svg F] [--lifetimes F.yaml|F.json]
 *                 [--c-header F.h [--c-header-weights]]
 * and the same report files for mplan plan (cli_write_files).
 *
 * Invariants:
 *   1. All or nothing: every file is rendered in memory first; the SQLite
 *      run is staged (its transaction open) next; then all files are
 *      written as one group (mp_file_write_many); the run is committed
 *      last. Any failure before the commit leaves no file and no run.
 *   2. Two report flags naming the same file are a usage error: one would
 *      silently replace the other.
 *   3. A database file that this invocation created is left in place
 *      (with its schema and no run) when a later step fails: another
 *      process may have opened the new file meanwhile, and deleting it
 *      could lose that writer's run.
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "mplan/bundle.h"
#include "mplan/compile.h"
#include "mplan/file.h"
#include "mplan/report_db.h"
#include "mplan/sha256.h"
#include "mplan/units.h"

static const char report_usage[] =
    "usage: mplan report MODEL|PLAN.json [--html F] [--sqlite DB] [--dot F]\n"
    "                    [--svg F] [--lifetimes F.yaml|F.json]\n"
    "                    [--c-header F.h [--c-header-weights]] [--what-if]\n"
    "                    [planning flags of mplan plan]\n"
    "Writes the plan's reports: --html a self-contained interactive page,\n"
    "--sqlite appends the run to a history database (created if needed),\n"
    "--dot and --svg the graph with the peak highlighted, --lifetimes the\n"
    "lifetime dump (YAML or JSON by extension), --c-header the plan as a\n"
    "C11 header (macros for the arena, regions and every tensor's offset\n"
    "and bytes, and tables of tensors with shapes and of steps with\n"
    "attributes; identifiers start with the file's name: plan_v2.h gives\n"
    "PLAN_V2_ARENA_BYTES and plan_v2_tensors()); --c-header-weights puts\n"
    "every weight's bytes (as mplan compile has them) into it too.\n"
    "--what-if adds the lower\n"
    "bound under the settings not asked for (the memory order, --passes\n"
    "all, both, all,tile, and that in the memory order) to the HTML page\n"
    "and the history (table what_if). Nothing is written unless\n"
    "everything succeeds.\n";

#define REPORT_FILES 7

typedef struct report_job {
  mp_file_out files[REPORT_FILES];
  mp_buf bufs[REPORT_FILES];
  size_t n;
} report_job;

bool cli_wants_files(const cli_opts *o) {
  return o->html || o->sqlite || o->dot || o->svg || o->lifetimes ||
         o->c_header;
}

static void report_utc(char *buf, size_t cap) {
  time_t now = time(NULL);
  struct tm tm;
  if (!gmtime_r(&now, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
    snprintf(buf, cap, "%s", "1970-01-01T00:00:00Z");
  }
}

static mp_status report_distinct(const cli_opts *o, mp_error *err) {
  const char *paths[] = {o->output, o->html,      o->sqlite,  o->dot,
                         o->svg,    o->lifetimes, o->c_header};
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
    for (size_t j = i + 1; paths[i] && j < sizeof paths / sizeof *paths; j++) {
      if (paths[j] && mp_file_same(paths[i], paths[j])) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "mplan %s: '%s' is named by two output options",
                            o->cmd, paths[i]);
      }
    }
  }
  return MP_OK;
}

/* Adds an output file whose text the caller renders into the returned
 * buffer, or NULL when path is NULL. */
static mp_buf *report_add(report_job *j, const char *path) {
  if (!path) return NULL;
  mp_buf *b = &j->bufs[j->n];
  j->files[j->n++].path = path;
  return b;
}

/* The weights of --c-header-weights: the bytes `mplan compile` gives
 * each tensor that starts with data (the same seed, ONNX data and
 * folded constants), per graph tensor in *data (NULL: none). The
 * pointers point into the loaded bundle *b, which the caller destroys
 * after the header, with *data and the bundle's bytes. */
static mp_status report_weights(const cli_opts *o, const mp_model *m,
                                const mp_plan *plan, mp_buf *bundle,
                                mp_bundle **bp, const unsigned char ***data,
                                mp_error *err) {
  const mp_graph *g = mp_model_graph(m);
  mp_bundle *b = NULL;
  *data = NULL;
  if (!g) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: --c-header-weights needs a graph (a model, not "
                        "a lifetime table or a plan)",
                        mp_model_path(m));
  }
  mp_compile_opts co = {.seed = o->seed};
  mp_status st = mp_compile_model(
      m, mp_model_problem(m), mp_plan_placements(plan), &co, NULL, bundle, err);
  if (st == MP_OK) {
    st = mp_bundle_load(mp_model_path(m), bundle->data, bundle->len, NULL, &b,
                        err);
  }
  size_t nt = mp_graph_tensor_count(g);
  if (st == MP_OK && !(*data = calloc(nt + 1, sizeof **data))) {
    st = mp_error_set(err, MP_ERR_NOMEM, "%s: C header weights: out of memory",
                      mp_model_path(m));
  }
  for (size_t t = 0; st == MP_OK && t < nt; t++) {
    const mp_tensor *x = mp_graph_tensor(g, t);
    uint32_t k;
    if (!mp_bundle_find_tensor(b, x->name, &k)) continue;
    const mp_btensor *bt = mp_bundle_tensor(b, k);
    if (!bt->data_bytes) continue;
    if (bt->data_bytes != x->bytes) {
      st = mp_error_set(err, MP_ERR_INTERNAL,
                        "%s: tensor '%s': the bundle holds %llu bytes of it, "
                        "the graph %zu",
                        mp_model_path(m), x->name,
                        (unsigned long long)bt->data_bytes, x->bytes);
      break;
    }
    (*data)[t] = mp_bundle_weights(b) + bt->data_offset;
  }
  *bp = b;
  return st;
}

/* One Graphviz context serves the process (see mp_graphviz_create). */
static mp_status report_render(const cli_opts *o, const mp_model *m,
                               const mp_plan *plan, const mp_report_meta *meta,
                               report_job *j, mp_error *err) {
  mp_graphviz *gv = NULL;
  mp_status st = MP_OK;
  mp_buf *b;
  if (o->html || o->svg) st = mp_graphviz_create(NULL, &gv, err);
  /* one layout serves --svg and the page's drawing */
  mp_buf *html = report_add(j, o->html), *svg = NULL;
  if (st == MP_OK && (b = report_add(j, o->dot))) {
    st = mp_report_dot(m, plan, b, err);
  }
  if (st == MP_OK && (svg = report_add(j, o->svg))) {
    st = mp_report_svg(gv, m, plan, svg, err);
  }
  if (st == MP_OK && html) {
    mp_html_opts ho = {.graphviz = gv, .svg = svg};
    st = mp_report_html(m, plan, meta, &ho, html, err);
  }
  if (st == MP_OK && (b = report_add(j, o->lifetimes))) {
    const char *ext = strrchr(o->lifetimes, '.');
    st = strcmp(ext, ".json") == 0 ? mp_report_lifetimes_json(m, plan, b, err)
                                   : mp_report_lifetimes_yaml(m, plan, b, err);
  }
  if (st == MP_OK && (b = report_add(j, o->c_header))) {
    char prefix[256];
    const char *slash = strrchr(o->c_header, '/');
    const char *base = slash ? slash + 1 : o->c_header;
    snprintf(prefix, sizeof prefix, "%.*s", (int)(strrchr(base, '.') - base),
             base);
    mp_buf bundle;
    mp_bundle *bd = NULL;
    const unsigned char **data = NULL;
    mp_buf_init(&bundle, NULL);
    if (o->c_header_weights) {
      st = report_weights(o, m, plan, &bundle, &bd, &data, err);
    }
    mp_c_header_opts co = {.data = data};
    if (st == MP_OK) st = mp_report_c_header(m, plan, prefix, &co, b, err);
    free(data);
    mp_bundle_destroy(bd);
    mp_buf_free(&bundle);
  }
  mp_graphviz_destroy(gv);
  return st;
}

static void report_log(report_job *j, int64_t run_id, const cli_opts *o,
                       mp_buf *log) {
  char human[MP_FMT_MAX];
  for (size_t k = 0; k < j->n; k++) {
    mp_buf_printf(log, "wrote %s", j->files[k].path);
    if (j->files[k].path != o->output) {
      mp_buf_printf(log, " (%s)", mp_fmt_bytes(human, j->files[k].len));
    }
    mp_buf_puts(log, "\n");
  }
  if (o->sqlite) {
    mp_buf_printf(log, "appended run %lld to %s\n", (long long)run_id,
                  o->sqlite);
  }
}

mp_status cli_write_files(const cli_opts *o, const mp_model *m,
                          const mp_plan *plan, const mp_buf *plan_json,
                          mp_buf *log, mp_error *err) {
  report_job j;
  const mp_buf *options = cli_command_line();
  char sha[MP_SHA256_HEX], utc[32];
  mp_report_db *db = NULL;
  int64_t run_id = 0;
  memset(&j, 0, sizeof j);
  for (size_t k = 0; k < REPORT_FILES; k++) mp_buf_init(&j.bufs[k], NULL);
  mp_status st = report_distinct(o, err);
  if (st == MP_OK) st = mp_buf_status(options, "options", err);
  if (st == MP_OK && (o->html || o->sqlite)) {
    st = mp_sha256_file(mp_model_path(m), NULL, sha, err);
  }
  report_utc(utc, sizeof utc);
  cli_what_if wi = {0};
  const mp_report_what_if *rows = o->what_if_rows;
  size_t n_rows = o->n_what_if;
  if (st == MP_OK && o->what_if && !rows) {
    st = cli_what_if_run(o, m, plan, &wi, err);
    rows = wi.rows;
    n_rows = wi.n;
  }
  mp_buf plan_opts;
  mp_buf_init(&plan_opts, NULL);
  if (st == MP_OK && o->sqlite) {
    mp_run_options ro = cli_run_options(o);
    st = mp_snapshot_options_text(&ro, mp_model_backend_name(m), &plan_opts,
                                  err);
  }
  mp_report_meta meta = {sha,
                         mp_buf_str(options),
                         o->sqlite ? mp_buf_str(&plan_opts) : NULL,
                         utc,
                         o->verified,
                         o->events,
                         o->n_events,
                         o->target_arch,
                         o->target_kernels,
                         o->target_vlen,
                         o->scalar_ops,
                         o->n_scalar_ops,
                         rows,
                         n_rows};
  if (st == MP_OK) st = report_render(o, m, plan, &meta, &j, err);
  if (st == MP_OK && o->output) {
    j.files[j.n].path = o->output;
    j.files[j.n].data = plan_json->data;
    j.files[j.n++].len = plan_json->len;
  }
  for (size_t k = 0; k < j.n && j.files[k].path != o->output; k++) {
    j.files[k].data = j.bufs[k].data;
    j.files[k].len = j.bufs[k].len;
  }
  if (st == MP_OK && o->sqlite)
    st = mp_report_db_open(o->sqlite, NULL, &db, err);
  if (st == MP_OK && db) {
    st = mp_report_db_stage(db, m, plan, &meta, &run_id, err);
  }
  if (st == MP_OK) st = mp_file_write_many(j.files, j.n, err);
  if (st == MP_OK && db) st = mp_report_db_commit(db, err);
  if (st == MP_OK && log) report_log(&j, run_id, o, log);
  mp_report_db_destroy(db);
  cli_what_if_release(&wi);
  for (size_t k = 0; k < REPORT_FILES; k++) mp_buf_free(&j.bufs[k]);
  mp_buf_free(&plan_opts);
  return st;
}

int cli_report(int argc, char **argv) {
  cli_opts o;
  mp_error err = {0};
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_buf log;
  int rc = 0;
  if (cli_wants_help(argc, argv)) return cli_print(report_usage) ? 0 : 2;
  mp_buf_init(&log, NULL);
  mp_status st = cli_parse(argc, argv, 2, "report",
                           CLI_F_PLANNING | CLI_F_FILES, &o, &err);
  if (st == MP_OK && !cli_wants_files(&o)) {
    st = mp_error_set(&err, MP_ERR_BAD_INPUT,
                      "mplan report: nothing to write: give --html, "
                      "--sqlite, --dot, --svg, --lifetimes or --c-header");
  }
  if (st == MP_OK) st = cli_load_and_plan(&o, true, &m, &plan, &err);
  if (st == MP_OK) st = mp_report_summary(m, plan, &log, &err);
  if (st == MP_OK) {
    st = cli_write_files(&o, m, plan, NULL, &log, &err);
  }
  if (st == MP_OK) {
    if (!cli_print(mp_buf_str(&log))) rc = 2;
  } else {
    rc = cli_fail(st, &err);
  }
  mp_buf_free(&log);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return rc;
}
