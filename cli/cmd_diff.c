/*
 * cmd_diff.c -- mplan diff A B [--json] [--markdown F] [planning flags]
 *
 * A and B are each a plan (plan/1), a baseline (baseline/1), a run of a
 * report database (DB:ID, or DB:-1 for the latest run, DB:-2 the one
 * before), or a model, planned with the planning flags. The diff says
 * what changed from A to B and why (mplan/diff.h).
 *
 * Invariants:
 *   1. Exit status: 0 when the diff was made (whatever it shows; a diff
 *      is a report, not a check: use mplan check to gate), 2 usage or
 *      input error.
 *   2. A database is only read (mp_snapshot_load_run): diffing two runs
 *      never changes the history.
 *   3. An existing file is taken as it is; only a name that is not a file
 *      is split at its last ':' into DB and run.
 *   4. With --what-if a model is also planned under the settings not
 *      asked for (cli_what_if_run), as plan --what-if records them in a
 *      plan file, so two models compare those rows as two plans do.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "mplan/diff.h"
#include "mplan/file.h"

static const char diff_usage[] =
    "usage: mplan diff A B [--json] [--markdown FILE] [--what-if]\n"
    "                  [planning flags]\n"
    "What changed from A to B, and why. A and B are each a plan (plan/1),\n"
    "a baseline (baseline/1, from mplan check --update-baseline), a run of\n"
    "a report database (DB:ID, DB:-1 the latest run, DB:-2 the one before)\n"
    "or a model (planned with the planning flags of mplan plan). Shows\n"
    "old/new/delta/% per region and in total, the tensors that grew,\n"
    "shrank, appeared or vanished (or joined or left another's buffer,\n"
    "or were fused into an op or back out of it),\n"
    "whether the peak moved, the op order,\n"
    "and how much of the change comes from sizes, order and fragmentation;\n"
    "the other settings' lower bounds and arenas when both sides have them\n"
    "(plans and runs made with --what-if; models with --what-if here).\n"
    "--json prints {\"mplan\": \"diff/1\"}; --markdown also writes Markdown.\n"
    "Exit status: 0 the diff was made, 2 usage or input error.\n";

static bool diff_is_file(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static mp_status diff_model(const cli_opts *o, const char *path,
                            mp_snapshot **out, mp_error *err) {
  cli_opts one = *o;
  mp_model *m = NULL;
  mp_plan *plan = NULL;
  mp_run_options ro = cli_run_options(o);
  one.model = path;
  mp_status st = cli_load_and_plan(&one, false, &m, &plan, err);
  if (st == MP_OK) st = mp_snapshot_of_plan(m, plan, &ro, NULL, out, err);
  if (st == MP_OK && o->what_if) { /* invariant 4 */
    cli_what_if wi = {0};
    st = cli_what_if_run(&one, m, plan, &wi, err);
    for (size_t k = 0; st == MP_OK && k < wi.n; k++) {
      const mp_report_what_if *w = &wi.rows[k];
      st = mp_snapshot_add_what_if(*out, w->setting, w->lower_bound_bytes,
                                   w->arena_bytes, err);
    }
    cli_what_if_release(&wi);
    if (st != MP_OK) {
      mp_snapshot_destroy(*out);
      *out = NULL;
    }
  }
  mp_plan_destroy(plan);
  mp_model_destroy(m);
  return st;
}

/* A DB:RUN argument (invariant 3); path is not a file. */
static mp_status diff_run(const char *arg, mp_snapshot **out, mp_error *err) {
  const char *colon = strrchr(arg, ':');
  char db[4096];
  if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof db) {
    return mp_error_set(err, MP_ERR_IO,
                        "%s: no such file (nor DB:RUN of a report database)",
                        arg);
  }
  snprintf(db, sizeof db, "%.*s", (int)(colon - arg), arg);
  mp_snap_source kind;
  mp_status st = mp_snapshot_detect(db, NULL, &kind, err);
  if (st == MP_OK && kind != MP_SNAP_DATABASE) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: not a report database, so '%s' names no run", db,
                        arg);
  }
  if (st == MP_OK) st = mp_snapshot_load_run(db, colon + 1, NULL, out, err);
  return st;
}

static mp_status diff_side(const cli_opts *o, const char *arg,
                           mp_snapshot **out, mp_error *err) {
  mp_snap_source kind;
  if (!diff_is_file(arg)) return diff_run(arg, out, err);
  mp_status st = mp_snapshot_detect(arg, NULL, &kind, err);
  if (st != MP_OK) return st;
  switch (kind) {
    case MP_SNAP_DATABASE:
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: a report database: name one of its runs, "
                          "%s:ID or %s:-1 for the latest",
                          arg, arg, arg);
    case MP_SNAP_BASELINE:
    case MP_SNAP_PLAN:
      return mp_snapshot_load(arg, NULL, out, err);
    case MP_SNAP_MODEL:
      break;
  }
  return diff_model(o, arg, out, err);
}

static mp_status diff_run_all(const cli_opts *o, mp_buf *out, mp_error *err) {
  mp_snapshot *a = NULL, *b = NULL;
  mp_diff *d = NULL;
  mp_buf md;
  mp_buf_init(&md, NULL);
  mp_status st = MP_OK;
  if (o->n_models != 2) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "mplan diff: expected two arguments, A and B (%zu "
                      "given)",
                      o->n_models);
  }
  if (st == MP_OK) st = diff_side(o, o->models[0], &a, err);
  if (st == MP_OK) st = diff_side(o, o->models[1], &b, err);
  if (st == MP_OK) st = mp_diff_create(a, b, NULL, &d, err);
  if (st == MP_OK) {
    st = o->json ? mp_diff_json(d, out, err) : mp_diff_text(d, NULL, out, err);
  }
  if (st == MP_OK && o->markdown) st = mp_diff_markdown(d, NULL, &md, err);
  if (st == MP_OK && o->markdown) {
    st = mp_file_write(o->markdown, md.data, md.len, err);
  }
  mp_buf_free(&md);
  mp_diff_destroy(d);
  mp_snapshot_destroy(a);
  mp_snapshot_destroy(b);
  return st;
}

int cli_diff(int argc, char **argv) {
  cli_opts o;
  mp_error err = {0};
  mp_buf out;
  int rc = 0;
  if (cli_wants_help(argc, argv)) return cli_print(diff_usage) ? 0 : 2;
  mp_buf_init(&out, NULL);
  mp_status st = cli_parse(argc, argv, 2, "diff",
                           CLI_F_PLANNING | CLI_F_JSON | CLI_F_MODELS |
                               CLI_F_MARKDOWN | CLI_F_WHAT_IF,
                           &o, &err);
  if (st == MP_OK) st = diff_run_all(&o, &out, &err);
  if (st == MP_OK) {
    if (!cli_print(mp_buf_str(&out))) rc = 2;
  } else {
    cli_fail(st, &err); /* never MP_ERR_CHECK: exit 2 */
    rc = 2;
  }
  mp_buf_free(&out);
  return rc;
}
