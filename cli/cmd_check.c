/*
 * cmd_check.c -- mplan check MODEL... [--budget SIZE] [--baseline F |
 *                --baseline-dir D] [--tolerance P%] [--update-baseline]
 *                [--json] [--junit F] [--markdown F] [planning flags]
 *
 * The CI gate (mplan/check.h): every model is planned with the same
 * options, its arena checked against the budget and against its baseline
 * (a two-sided band), and the verdicts reported.
 *
 * Invariants:
 *   1. Exit status: 0 every check passed; 1 a check failed; 2 a usage
 *      error, or some model or baseline could not be checked (missing,
 *      corrupt, made with other options, of another model).
 *   2. Every model is checked and reported, whatever happened to the
 *      others; each error is also one "mplan: error:" line on stderr.
 *   3. Files are written all or nothing: baselines (--update-baseline)
 *      only when every model was planned, as one group; --junit and
 *      --markdown as one group, complete, also when the verdict is fail
 *      or error (CI wants the report most then).
 *   4. With --baseline-dir, MODEL's baseline is DIR/STEM.baseline.json,
 *      STEM being MODEL's file name without its last extension; two
 *      models with one baseline file are a usage error.
 *   5. --baseline DB, a report database (mplan report --sqlite DB), takes
 *      for each model the latest run of a model file of the same name
 *      planned with the same canonical options
 *      (mp_snapshot_load_latest): the history a CI job keeps is the
 *      baseline, for any number of models. It is only read.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "mplan/check.h"
#include "mplan/file.h"
#include "mplan/units.h"

static const char check_usage[] =
    "usage: mplan check MODEL... [--budget SIZE] [--baseline FILE |\n"
    "                   --baseline-dir DIR] [--tolerance P%]\n"
    "                   [--update-baseline] [--json] [--junit FILE]\n"
    "                   [--markdown FILE] [planning flags of mplan plan]\n"
    "The CI gate. Plans every MODEL with the same options and checks its\n"
    "arena: --budget fails a model whose arena (all regions) exceeds SIZE\n"
    "(512KiB, 1.5MiB, ...) and hints at the setting of mplan explain's\n"
    "what-if (order, passes, patches, strategy) with the smallest arena;\n"
    "--baseline/--baseline-dir fails a model whose\n"
    "arena, in any region, leaves the band baseline +-P% (default 0%: the\n"
    "exact bytes) in EITHER direction -- an unexpected saving fails too,\n"
    "so that baselines stay current. --baseline-dir DIR reads\n"
    "DIR/STEM.baseline.json for MODEL STEM.EXT. --baseline DB, a report\n"
    "database (mplan report MODEL --sqlite DB), compares each MODEL with\n"
    "its latest run there planned with the same options. --update-baseline\n"
    "writes the baseline files instead (all or none). Output: text, or\n"
    "--json; --junit\n"
    "and --markdown write a JUnit XML and a Markdown report as well.\n"
    "Exit status: 0 pass, 1 a check failed, 2 usage error, or a model or\n"
    "baseline could not be checked (missing, corrupt, other options).\n";

#define CHECK_SETTINGS 32

typedef struct check_model {
  char path[4096];   /* the baseline file */
  bool db;           /* ... is a report database (invariant 5) */
  mp_snapshot *now;  /* NULL when the model could not be planned */
  mp_snapshot *base; /* the baseline read */
  mp_error error;    /* why the model could not be planned */
  mp_error base_err; /* why the baseline cannot be used */
  char hint[256];    /* over budget: what would fit it ("" none) */
  char setting_text[CHECK_SETTINGS][128];
  mp_check_setting settings[CHECK_SETTINGS]; /* the what-if rows with an
                                                arena; text in the above */
  size_t n_settings;
  bool failed, base_failed;
  mp_buf baseline; /* --update-baseline: the new baseline/1 text */
} check_model;

mp_run_options cli_run_options(const cli_opts *o) {
  return (mp_run_options){
      .strategy = o->strategy,
      .budget_ms = o->budget_ms,
      .budget_work = o->budget_work,
      .order_work = o->order_work,
      .order = o->order,
      .inputs_as_activations = o->inputs_as_activations,
      .dims = o->dims,
      .n_dims = o->n_dims,
      .caps = o->caps,
      .n_caps = o->n_caps,
      .shapes = o->shapes,
      .n_shapes = o->n_shapes,
      .values = o->values,
      .n_values = o->n_values,
      .passes = o->passes,
  };
}

static const char *check_base(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* --baseline names a report database (invariant 5). */
static bool check_is_db(const char *path) {
  mp_snap_source kind;
  mp_error e;
  return mp_snapshot_detect(path, NULL, &kind, &e) == MP_OK &&
         kind == MP_SNAP_DATABASE;
}

/* DIR/STEM.baseline.json (invariant 4). */
static mp_status check_baseline_path(const cli_opts *o, const char *model,
                                     char *out, size_t cap, mp_error *err) {
  if (o->baseline) {
    snprintf(out, cap, "%s", o->baseline);
    return MP_OK;
  }
  const char *name = check_base(model), *dot = strrchr(name, '.');
  int stem = (int)(dot && dot != name ? (size_t)(dot - name) : strlen(name));
  const char *dir = o->baseline_dir;
  size_t dl = strlen(dir);
  int n = snprintf(out, cap, "%s%s%.*s.baseline.json", dir,
                   dl && dir[dl - 1] == '/' ? "" : "/", stem, name);
  if (n < 0 || (size_t)n >= cap) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "mplan check: %s: the baseline path is too long",
                        model);
  }
  return MP_OK;
}

static mp_status check_usage_errors(const cli_opts *o, check_model *cm,
                                    mp_error *err) {
  const char *cmd = "mplan check";
  if (o->baseline && o->baseline_dir) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: give --baseline FILE or --baseline-dir DIR, "
                        "not both",
                        cmd);
  }
  bool base = o->baseline || o->baseline_dir;
  if (!base && !o->has_budget) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: nothing to check: give --budget SIZE, "
                        "--baseline FILE or --baseline-dir DIR",
                        cmd);
  }
  if (!base && (o->update_baseline || o->has_tolerance)) {
    return mp_error_set(
        err, MP_ERR_BAD_INPUT,
        "%s: %s needs --baseline FILE or --baseline-dir DIR", cmd,
        o->update_baseline ? "--update-baseline" : "--tolerance");
  }
  bool db = o->baseline && check_is_db(o->baseline);
  if (db && o->update_baseline) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %s is a report database: mplan report MODEL "
                        "--sqlite %s records runs in it; --update-baseline "
                        "writes baseline files",
                        cmd, o->baseline, o->baseline);
  }
  if (o->baseline && o->n_models > 1 && !db) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: --baseline FILE takes one model (%zu given); "
                        "use --baseline-dir DIR for several",
                        cmd, o->n_models);
  }
  if (o->junit && o->markdown && mp_file_same(o->junit, o->markdown)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: '%s' is named by --junit and --markdown", cmd,
                        o->junit);
  }
  for (size_t i = 0; base && i < o->n_models; i++) {
    mp_status st = check_baseline_path(o, o->models[i], cm[i].path,
                                       sizeof cm[i].path, err);
    cm[i].db = db;
    for (size_t j = 0; st == MP_OK && !db && j < i; j++) {
      if (mp_file_same(cm[i].path, cm[j].path)) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "%s: '%s' and '%s' would share the baseline "
                            "'%s'; check them in separate calls",
                            cmd, o->models[j], o->models[i], cm[i].path);
      }
    }
    if (st != MP_OK) return st;
    const char *report =
        o->junit && mp_file_same(o->junit, cm[i].path)         ? o->junit
        : o->markdown && mp_file_same(o->markdown, cm[i].path) ? o->markdown
                                                               : NULL;
    if (report) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: '%s' is both a report and the baseline of '%s'",
                          cmd, report, o->models[i]);
    }
  }
  return MP_OK;
}

/* The baseline must be of this model and made with these options. */
static mp_status check_same_run(check_model *c, mp_error *err) {
  const char *was = mp_snapshot_info(c->base)->model_path;
  const char *now = mp_snapshot_info(c->now)->model_path;
  if (strcmp(check_base(was), check_base(now)) != 0) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: is the baseline of '%s', not of '%s'", c->path,
                        was, now);
  }
  return mp_snapshot_same_options(c->base, c->now, err);
}

static void check_read_baseline(const cli_opts *o, check_model *c) {
  struct stat sb;
  bool exists = stat(c->path, &sb) == 0;
  mp_status st = MP_OK;
  if (o->update_baseline && !exists) return;
  if (!exists) {
    mp_error_set(&c->base_err, MP_ERR_BAD_INPUT,
                 "%s: no baseline (%s); create it with --update-baseline",
                 c->path, strerror(errno));
    c->base_failed = true;
    return;
  }
  if (c->db) {
    st = mp_snapshot_load_latest(
        c->path, check_base(mp_snapshot_info(c->now)->model_path),
        mp_snapshot_info(c->now)->options, NULL, &c->base, &c->base_err);
  } else {
    st = mp_snapshot_load(c->path, NULL, &c->base, &c->base_err);
  }
  if (st == MP_OK && !o->update_baseline) st = check_same_run(c, &c->base_err);
  if (st != MP_OK && o->update_baseline) {
    /* Replacing a broken or foreign baseline is what updating is for;
     * there is just nothing to compare with. */
    mp_snapshot_destroy(c->base);
    c->base = NULL;
    return;
  }
  c->base_failed = st != MP_OK;
  if (c->base_failed) {
    /* A baseline of other options or of another model: comparing with
     * it would explain a difference nobody asked about. */
    mp_snapshot_destroy(c->base);
    c->base = NULL;
  }
}

/* Over budget: the what-if settings (cli_what_if_run) planned with the
 * same strategy, and the one with the smallest arena named, whether it
 * fits or not. A what-if that fails leaves no hint. */
static void check_hint(const cli_opts *o, const mp_model *m,
                       const mp_plan *plan, check_model *c) {
  const mp_plan_summary *s = mp_plan_summary_of(plan);
  size_t arena = s->arena_bytes;
  char a[MP_FMT_MAX], b[MP_FMT_MAX];
  if (!o->has_budget || arena <= o->budget) return;
  if (s->resident_bytes >= o->budget) {
    snprintf(c->hint, sizeof c->hint,
             "the resident tensors (weights) alone take %s B, over the "
             "budget of %s B: no order, pass list or strategy fits",
             mp_fmt_count(a, s->resident_bytes), mp_fmt_count(b, o->budget));
    return;
  }
  cli_what_if wi = {0};
  mp_error err = {0};
  if (cli_what_if_run(o, m, plan, &wi, &err) != MP_OK) return;
  const mp_report_what_if *best = NULL;
  for (size_t k = 0; k < wi.n && c->n_settings < CHECK_SETTINGS; k++) {
    if (!wi.rows[k].arena_bytes) continue;
    char *text = c->setting_text[c->n_settings];
    snprintf(text, sizeof c->setting_text[0], "%s", wi.rows[k].setting);
    c->settings[c->n_settings++] =
        (mp_check_setting){text, wi.rows[k].arena_bytes};
  }
  for (size_t k = 0; k < wi.n; k++) {
    if (wi.rows[k].arena_bytes && wi.rows[k].arena_bytes < arena &&
        (!best || wi.rows[k].arena_bytes < best->arena_bytes)) {
      best = &wi.rows[k];
    }
  }
  if (best && best->arena_bytes <= o->budget) {
    snprintf(c->hint, sizeof c->hint,
             "%s fits: arena %s B, within the budget of %s B", best->setting,
             mp_fmt_count(a, best->arena_bytes), mp_fmt_count(b, o->budget));
  } else if (best) {
    snprintf(c->hint, sizeof c->hint,
             "%s gives the smallest arena of the other settings, %s B: still "
             "over the budget of %s B",
             best->setting, mp_fmt_count(a, best->arena_bytes),
             mp_fmt_count(b, o->budget));
  } else {
    snprintf(c->hint, sizeof c->hint,
             "no other order, pass list or strategy gives a smaller arena");
  }
  cli_what_if_release(&wi);
}

static void check_one(const cli_opts *o, size_t i, check_model *c) {
  cli_opts one = *o;
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  one.model = o->models[i];
  mp_run_options ro = cli_run_options(o);
  mp_status st = cli_load_and_plan(&one, false, &m, &plan, &c->error);
  if (st == MP_OK) {
    st = mp_snapshot_of_plan(m, plan, &ro, NULL, &c->now, &c->error);
  }
  if (st == MP_OK) check_hint(&one, m, plan, c);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  c->failed = st != MP_OK;
  if (c->failed || !(o->baseline || o->baseline_dir)) return;
  check_read_baseline(o, c);
  if (o->update_baseline) {
    st = mp_snapshot_baseline_json(c->now, &c->baseline, &c->error);
    c->failed = st != MP_OK;
  }
}

static mp_status check_mkdir(const char *dir, mp_error *err) {
  struct stat sb;
  if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) return MP_OK;
  if (mkdir(dir, 0777) != 0) {
    return mp_error_set(err, MP_ERR_IO, "%s: cannot create the directory: %s",
                        dir, strerror(errno));
  }
  return MP_OK;
}

/* --update-baseline: all baselines or none (invariant 3). */
static mp_status check_write_baselines(const cli_opts *o, check_model *cm,
                                       mp_error *err) {
  size_t failed = 0;
  for (size_t i = 0; i < o->n_models; i++) failed += cm[i].failed;
  if (failed) {
    for (size_t i = 0; i < o->n_models; i++) {
      if (cm[i].failed) continue;
      mp_error_set(&cm[i].base_err, MP_ERR_BAD_INPUT,
                   "%s: not written: %zu model%s could not be planned "
                   "(baselines are written all or none)",
                   cm[i].path, failed, failed == 1 ? "" : "s");
      cm[i].base_failed = true;
    }
    return MP_OK;
  }
  mp_file_out *files = mp_calloc(NULL, o->n_models, sizeof *files);
  if (!files) return mp_error_set(err, MP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < o->n_models; i++) {
    files[i] = (mp_file_out){.path = cm[i].path,
                             .data = cm[i].baseline.data,
                             .len = cm[i].baseline.len};
  }
  mp_status st = o->baseline_dir ? check_mkdir(o->baseline_dir, err) : MP_OK;
  if (st == MP_OK) st = mp_file_write_many(files, o->n_models, err);
  mp_free(NULL, files);
  return st;
}

static mp_status check_report(const cli_opts *o, check_model *cm,
                              mp_check_report *r, mp_error *err) {
  mp_status st = MP_OK;
  for (size_t i = 0; st == MP_OK && i < o->n_models; i++) {
    check_model *c = &cm[i];
    if (c->failed) {
      cli_message("error", c->error.msg);
      st = mp_check_report_error(r, o->models[i], c->error.msg, err);
      continue;
    }
    if (c->base_failed) cli_message("error", c->base_err.msg);
    bool base = o->baseline || o->baseline_dir;
    st = mp_check_report_add(r, o->models[i], c->now, c->base,
                             base ? c->path : NULL,
                             c->base_failed ? c->base_err.msg : NULL, err);
    c->now = c->base = NULL; /* the report owns them now */
    size_t at = mp_check_report_counts(r)->models - 1;
    if (st == MP_OK && c->hint[0]) {
      st = mp_check_report_hint(r, at, c->hint, err);
    }
    if (st == MP_OK && c->n_settings) {
      st = mp_check_report_settings(r, at, c->settings, c->n_settings, err);
    }
  }
  return st;
}

static mp_status check_outputs(const cli_opts *o, const mp_check_report *r,
                               mp_buf *out, mp_error *err) {
  mp_buf junit, md;
  mp_file_out files[2];
  size_t n = 0;
  mp_buf_init(&junit, NULL);
  mp_buf_init(&md, NULL);
  mp_status st = o->json ? mp_check_report_json(r, out, err)
                         : mp_check_report_text(r, out, err);
  if (st == MP_OK && o->junit) {
    st = mp_check_report_junit(r, &junit, err);
    files[n++] =
        (mp_file_out){.path = o->junit, .data = junit.data, .len = junit.len};
  }
  if (st == MP_OK && o->markdown) {
    st = mp_check_report_markdown(r, &md, err);
    files[n++] =
        (mp_file_out){.path = o->markdown, .data = md.data, .len = md.len};
  }
  if (st == MP_OK && n) st = mp_file_write_many(files, n, err);
  mp_buf_free(&junit);
  mp_buf_free(&md);
  return st;
}

static mp_status check_run(const cli_opts *o, check_model *cm,
                           mp_check_report **r, mp_buf *out, mp_error *err) {
  mp_check_opts co = {
      .has_budget = o->has_budget,
      .budget_bytes = o->budget,
      .has_baseline = o->baseline || o->baseline_dir,
      .tolerance_ppm = o->tolerance_ppm,
      .update = o->update_baseline,
      .baseline_where = o->baseline ? o->baseline : o->baseline_dir,
  };
  mp_status st = check_usage_errors(o, cm, err);
  for (size_t i = 0; st == MP_OK && i < o->n_models; i++) {
    check_one(o, i, &cm[i]);
  }
  if (st == MP_OK && o->update_baseline) {
    st = check_write_baselines(o, cm, err);
  }
  if (st == MP_OK) st = mp_check_report_create(&co, NULL, r, err);
  if (st == MP_OK) st = check_report(o, cm, *r, err);
  if (st == MP_OK) st = check_outputs(o, *r, out, err);
  return st;
}

int cli_check(int argc, char **argv) {
  cli_opts o;
  check_model *cm = NULL;
  mp_error err = {0};
  mp_check_report *r = NULL;
  mp_buf out;
  int rc = 2;
  if (cli_wants_help(argc, argv)) return cli_print(check_usage) ? 0 : 2;
  mp_buf_init(&out, NULL);
  mp_status st = cli_parse(
      argc, argv, 2, "check",
      CLI_F_PLANNING | CLI_F_JSON | CLI_F_MODELS | CLI_F_CHECK | CLI_F_MARKDOWN,
      &o, &err);
  if (st == MP_OK && !(cm = mp_calloc(NULL, o.n_models, sizeof *cm))) {
    st = mp_error_set(&err, MP_ERR_NOMEM, "mplan check: out of memory");
  }
  for (size_t i = 0; cm && i < o.n_models; i++) {
    mp_buf_init(&cm[i].baseline, NULL);
  }
  if (st == MP_OK) st = check_run(&o, cm, &r, &out, &err);
  if (st == MP_OK && cli_print(mp_buf_str(&out))) {
    mp_verdict v = mp_check_report_verdict(r);
    const mp_check_counts *c = mp_check_report_counts(r);
    rc = v == MP_VERDICT_PASS ? 0 : v == MP_VERDICT_FAIL ? 1 : 2;
    /* One model's error line already says everything: no summary. */
    if (rc == 1 || (rc == 2 && c->models > 1)) {
      fprintf(
          stderr, "mplan: check %s: %zu failed, %zu error%s of %zu model%s\n",
          v == MP_VERDICT_FAIL ? "failed" : "incomplete", c->failed, c->errors,
          c->errors == 1 ? "" : "s", c->models, c->models == 1 ? "" : "s");
    }
  } else if (st != MP_OK) {
    cli_fail(st, &err); /* never MP_ERR_CHECK here: exit 2 */
  }
  for (size_t i = 0; cm && i < o.n_models; i++) {
    mp_snapshot_destroy(cm[i].now);
    mp_snapshot_destroy(cm[i].base);
    mp_buf_free(&cm[i].baseline);
  }
  mp_free(NULL, cm);
  mp_check_report_destroy(r);
  mp_buf_free(&out);
  return rc;
}
