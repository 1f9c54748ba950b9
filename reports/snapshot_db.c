/*
 * snapshot_db.c -- reading one run of a report database (reports/sqlite.c,
 * docs/report-schema.md) into a snapshot, for mplan diff.
 *
 * Invariants:
 *   1. The database is opened read-only: diffing never creates, migrates
 *      or locks out a writer (WAL readers do not block writers).
 *   2. Only databases with mplan's schema_version table, at a version
 *      this mplan knows, are read; anything else is refused naming the
 *      file.
 *   3. A run's placements give every tensor's region and offset, so the
 *      arena of every region is derived from them; a one-region run whose
 *      derived arena differs from run.arena_bytes is refused (damaged).
 *   4. Every value is bound as a parameter; no SQL is built from input.
 *   5. The latest run of a model with given options (a baseline for mplan
 *      check) is the one of highest id whose plan_options (schema 9) is
 *      exactly the canonical text and whose model_path is the model's
 *      file name or ends in '/' and it; its snapshot carries those
 *      options.
 */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "mplan/report_db.h"
#include "mplan/units.h"
#include "report_util.h"
#include "snapshot_internal.h"

typedef struct sd_ctx {
  sqlite3 *db;
  mp_snapshot *s;
  const char *path;
  int64_t run;
  mp_error *err;
  const char *model, *options; /* mp_snapshot_load_latest: what to match */
  int64_t version;             /* the database's schema version */
} sd_ctx;

static mp_status sd_fail(sd_ctx *c, const char *what) {
  int code = sqlite3_errcode(c->db);
  if (code == SQLITE_NOMEM) {
    return mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->path);
  }
  if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: not a readable SQLite database (%s)", c->path,
                        sqlite3_errmsg(c->db));
  }
  return mp_error_set(c->err, MP_ERR_IO, "%s: sqlite: %s: %s", c->path, what,
                      sqlite3_errmsg(c->db));
}

static mp_status sd_prepare(sd_ctx *c, const char *sql, sqlite3_stmt **s) {
  if (sqlite3_prepare_v2(c->db, sql, -1, s, NULL) != SQLITE_OK) {
    return sd_fail(c, "reading the run");
  }
  return MP_OK;
}

static const char *sd_text(sqlite3_stmt *s, int k) {
  return (const char *)sqlite3_column_text(s, k);
}

/* A non-negative integer column (sizes); false when negative or NULL. */
static bool sd_size(sqlite3_stmt *s, int k, size_t *out) {
  if (sqlite3_column_type(s, k) != SQLITE_INTEGER) return false;
  int64_t v = sqlite3_column_int64(s, k);
  if (v < 0) return false;
  *out = (size_t)v;
  return true;
}

/* Invariant 2. */
static mp_status sd_schema(sd_ctx *c) {
  sqlite3_stmt *s = NULL;
  mp_status st = MP_OK;
  int rc = sqlite3_prepare_v2(c->db, "SELECT max(version) FROM schema_version",
                              -1, &s, NULL);
  if (rc != SQLITE_OK) {
    st = sqlite3_errcode(c->db) == SQLITE_ERROR
             ? mp_error_set(c->err, MP_ERR_BAD_INPUT,
                            "%s: not an mplan report database (no "
                            "schema_version table)",
                            c->path)
             : sd_fail(c, "reading the schema");
  } else if ((rc = sqlite3_step(s)) != SQLITE_ROW) {
    st = sd_fail(c, "reading the schema");
  } else {
    int64_t v = c->version = sqlite3_column_int64(s, 0);
    if (v < 1 || v > MP_REPORT_DB_VERSION) {
      st = mp_error_set(c->err, MP_ERR_UNSUPPORTED,
                        "%s: schema version %" PRId64
                        " is not one this mplan reads (1..%d)",
                        c->path, v, MP_REPORT_DB_VERSION);
    }
  }
  sqlite3_finalize(s);
  return st;
}

/* run: an id, or -k for the k-th latest. */
static mp_status sd_resolve(sd_ctx *c, const char *run) {
  int64_t v;
  if (!mp_parse_i64(run, &v) || v == 0) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: run '%s': expected a run id (1, 2, ...) or -1 "
                        "for the latest run, -2 for the one before",
                        c->path, run);
  }
  sqlite3_stmt *s = NULL;
  mp_status st = sd_prepare(
      c,
      v > 0 ? "SELECT id FROM run WHERE id = ?1"
            : "SELECT id FROM run ORDER BY id DESC LIMIT 1 OFFSET ?1",
      &s);
  if (st != MP_OK) return st;
  sqlite3_bind_int64(s, 1, v > 0 ? v : -(v + 1));
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    c->run = sqlite3_column_int64(s, 0);
  } else if (rc == SQLITE_DONE) {
    st = mp_error_set(c->err, MP_ERR_BAD_INPUT, "%s: no run %s%s", c->path, run,
                      v < 0 ? " (counting back from the latest)" : "");
  } else {
    st = sd_fail(c, "finding the run");
  }
  sqlite3_finalize(s);
  return st;
}

static mp_status sd_info(sd_ctx *c, size_t *arena, size_t *steps) {
  static const char sql[] =
      "SELECT tool_version, model_path, model_name, model_format, "
      "model_sha256, backend, strategy, order_name, options, time_unit, "
      "arena_bytes, coalesce(steps, 0) FROM run WHERE id = ?1";
  sqlite3_stmt *s = NULL;
  mp_snap_info *in = &c->s->info;
  bool ok = true;
  char tool[96];
  mp_status st = sd_prepare(c, sql, &s);
  if (st != MP_OK) return st;
  sqlite3_bind_int64(s, 1, c->run);
  if (sqlite3_step(s) != SQLITE_ROW) {
    st = sd_fail(c, "reading the run");
  } else if (!sd_size(s, 10, arena) || !sd_size(s, 11, steps)) {
    st = mp_error_set(c->err, MP_ERR_BAD_INPUT,
                      "%s: run %" PRId64
                      ": arena_bytes or steps is not a "
                      "count",
                      c->path, c->run);
  } else {
    const char *tv = sd_text(s, 0);
    snprintf(tool, sizeof tool, "mplan %.80s", tv ? tv : "?");
    in->tool = snap_str(c->s, tool, &ok);
    in->model_path = snap_str(c->s, sd_text(s, 1), &ok);
    in->model_name = snap_str(c->s, sd_text(s, 2), &ok);
    in->model_format = snap_str(c->s, sd_text(s, 3), &ok);
    in->model_sha256 = snap_str(c->s, sd_text(s, 4), &ok);
    in->backend = snap_str(c->s, sd_text(s, 5), &ok);
    in->strategy = snap_str(c->s, sd_text(s, 6), &ok);
    in->order = snap_str(c->s, sd_text(s, 7), &ok);
    in->command = snap_str(c->s, sd_text(s, 8), &ok);
    const char *unit = sd_text(s, 9);
    in->time_word = unit && strcmp(unit, "t") == 0 ? "t" : "step";
    in->run_id = c->run;
    if (!ok)
      st = mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->path);
  }
  sqlite3_finalize(s);
  return st;
}

static mp_status sd_tensor_row(sd_ctx *c, sqlite3_stmt *s) {
  mp_snap_tensor t = {.placed = true};
  char where[96];
  const char *cls = sd_text(s, 1), *region = sd_text(s, 2);
  snprintf(where, sizeof where, "run %" PRId64 " tensor %lld", c->run,
           (long long)sqlite3_column_int64(s, 7));
  t.name = sd_text(s, 0);
  t.first = sqlite3_column_int64(s, 5);
  t.last = sqlite3_column_int64(s, 6);
  if (!t.name || !region || !cls || !mp_class_parse(cls, &t.cls) ||
      !sd_size(s, 3, &t.size) || !sd_size(s, 4, &t.padded) ||
      !sd_size(s, 8, &t.offset)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: %s: a NULL, negative or unknown value (damaged "
                        "database?)",
                        c->path, where);
  }
  mp_status st = snap_region(c->s, region, &t.region, c->err);
  if (st == MP_OK) st = snap_tensor(c->s, &t, where, c->err);
  return st;
}

static mp_status sd_tensors(sd_ctx *c) {
  static const char sql[] =
      "SELECT t.name, t.class, p.region, p.size, p.padded_size, t.first_use, "
      "t.last_use, t.idx, p.offset FROM tensor t JOIN placement p ON "
      "p.run_id = t.run_id AND p.tensor_idx = t.idx WHERE t.run_id = ?1 "
      "ORDER BY t.idx";
  sqlite3_stmt *s = NULL;
  mp_status st = sd_prepare(c, sql, &s);
  int rc = SQLITE_DONE;
  if (st == MP_OK) sqlite3_bind_int64(s, 1, c->run);
  while (st == MP_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    st = sd_tensor_row(c, s);
  }
  if (st == MP_OK && rc != SQLITE_DONE) st = sd_fail(c, "reading tensors");
  sqlite3_finalize(s);
  /* no tensor at all: a graph the passes emptied, as in a plan */
  return st;
}

/* Runs sql (run id as ?1) over a table an older schema may not have (then
 * there is nothing to read) and hands every row to row; a row whose first
 * two columns are not both texts is skipped. */
static mp_status sd_pairs(sd_ctx *c, const char *sql, const char *what,
                          mp_status (*row)(sd_ctx *, sqlite3_stmt *)) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) != SQLITE_OK) {
    return MP_OK; /* no such table */
  }
  mp_status st = MP_OK;
  int rc = SQLITE_DONE;
  sqlite3_bind_int64(s, 1, c->run);
  while (st == MP_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (sd_text(s, 0) && sd_text(s, 1)) st = row(c, s);
  }
  if (st == MP_OK && rc != SQLITE_DONE) st = sd_fail(c, what);
  sqlite3_finalize(s);
  return st;
}

static mp_status sd_member_row(sd_ctx *c, sqlite3_stmt *s) {
  size_t buf;
  if (!mp_snapshot_find(c->s, sd_text(s, 1), &buf)) return MP_OK;
  return snap_member(c->s, sd_text(s, 0), buf, c->err);
}

static mp_status sd_fusion_row(sd_ctx *c, sqlite3_stmt *s) {
  return snap_gone(c->s, sd_text(s, 1), sd_text(s, 0), true, c->err);
}

static mp_status sd_removed_row(sd_ctx *c, sqlite3_stmt *s) {
  return snap_gone(c->s, sd_text(s, 1), sd_text(s, 0), false, c->err);
}

/* A tile_op row: tensor, role, origin, band, col (NULL: -1). */
static mp_status sd_patch_row(sd_ctx *c, sqlite3_stmt *s) {
  const char *origin = sd_text(s, 2);
  int64_t rc[2] = {-1, -1};
  for (int k = 0; k < 2; k++) {
    if (sqlite3_column_type(s, 3 + k) == SQLITE_INTEGER) {
      rc[k] = sqlite3_column_int64(s, 3 + k);
    }
  }
  if (!origin) return MP_OK;
  char what[300];
  report_patch_what(what, sizeof what, sd_text(s, 1), origin, rc[0], rc[1]);
  return snap_patch(c->s, sd_text(s, 0), what, c->err);
}

/* Tensors living in another's buffer (tensor_buffer, schema version 5
 * and later) and the tensors each fusion removed (fusion, version 4 and
 * later); an older database has none to report. */
static mp_status sd_members(sd_ctx *c) {
  mp_status st = sd_pairs(
      c,
      "SELECT b.tensor, t.name FROM tensor_buffer b JOIN tensor t ON "
      "t.run_id = b.run_id AND t.idx = b.tensor_idx WHERE b.run_id = ?1 "
      "AND b.tensor <> t.name ORDER BY b.tensor",
      "reading tensor_buffer", sd_member_row);
  if (st == MP_OK) {
    st = sd_pairs(
        c,
        "SELECT op, intermediates FROM fusion WHERE run_id = ?1 ORDER BY seq",
        "reading fusions", sd_fusion_row);
  }
  if (st != MP_OK) return st;
  return sd_pairs(c,
                  "SELECT name, removed FROM pass WHERE run_id = ?1 AND "
                  "removed <> '' ORDER BY seq",
                  "reading passes", sd_removed_row);
}

/* The tile pass's tensors (tile_op, schema version 8): each op's buffer
 * row is the tensor it produces. An older database has none. */
static mp_status sd_patches(sd_ctx *c) {
  return sd_pairs(c,
                  "SELECT t.name, o.role, o.origin, o.band, o.col FROM "
                  "tile_op o JOIN tensor t ON t.run_id = o.run_id AND "
                  "t.producer = o.op WHERE o.run_id = ?1 ORDER BY o.step",
                  "reading tile_op", sd_patch_row);
}

/* A what_if row: setting, lower bound, arena. */
static mp_status sd_what_if_row(sd_ctx *c, sqlite3_stmt *s) {
  size_t lb = 0, arena = 0;
  if (!sd_size(s, 1, &lb)) return MP_OK;
  if (!sd_size(s, 2, &arena)) arena = 0;
  return snap_what_if(c->s, sd_text(s, 0), lb, arena, c->err);
}

/* The settings a run was compared with (what_if, schema version 8). */
static mp_status sd_what_if(sd_ctx *c) {
  return sd_pairs(c,
                  "SELECT setting, lower_bound_bytes, arena_bytes FROM "
                  "what_if WHERE run_id = ?1 ORDER BY seq",
                  "reading what_if", sd_what_if_row);
}

static mp_status sd_steps(sd_ctx *c, size_t steps) {
  static const char sql[] =
      "SELECT step, op FROM step WHERE run_id = ?1 ORDER BY step";
  sqlite3_stmt *s = NULL;
  mp_status st = steps ? sd_prepare(c, sql, &s) : MP_OK;
  int rc = SQLITE_DONE;
  if (!steps) return MP_OK;
  sqlite3_bind_int64(s, 1, c->run);
  while (st == MP_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (sqlite3_column_int64(s, 0) != (int64_t)c->s->n_steps) {
      st = mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: run %" PRId64 ": step %zu is missing", c->path,
                        c->run, c->s->n_steps);
    } else {
      st = snap_step(c->s, sd_text(s, 1), c->err);
    }
  }
  if (st == MP_OK && rc != SQLITE_DONE) st = sd_fail(c, "reading steps");
  sqlite3_finalize(s);
  if (st == MP_OK && c->s->n_steps != steps) {
    st = mp_error_set(c->err, MP_ERR_BAD_INPUT,
                      "%s: run %" PRId64 ": %zu steps recorded, %zu listed",
                      c->path, c->run, steps, c->s->n_steps);
  }
  return st;
}

/* The runs of c->model (invariant 5). */
#define SD_RUNS_OF                                                             \
  " FROM run WHERE (model_path = ?1 OR substr(model_path, -length(?1) - 1) = " \
  "'/' || ?1)"

/* One figure of c->model's runs: the latest id among those planned with
 * c->options when `with` (0: none), else how many there are. */
static mp_status sd_runs_of(sd_ctx *c, bool with, int64_t *out) {
  sqlite3_stmt *s = NULL;
  mp_status st =
      sd_prepare(c,
                 with ? "SELECT max(id)" SD_RUNS_OF " AND plan_options = ?2"
                      : "SELECT count(*)" SD_RUNS_OF,
                 &s);
  if (st != MP_OK) return st;
  sqlite3_bind_text(s, 1, c->model, -1, SQLITE_STATIC);
  if (with) sqlite3_bind_text(s, 2, c->options, -1, SQLITE_STATIC);
  if (sqlite3_step(s) == SQLITE_ROW) {
    *out = sqlite3_column_int64(s, 0); /* max of no row is NULL: 0 */
  } else {
    st = sd_fail(c, "finding the model's runs");
  }
  sqlite3_finalize(s);
  return st;
}

static mp_status sd_latest(sd_ctx *c) {
  int64_t id = 0, all = 0;
  mp_status st = MP_OK;
  if (c->version >= 9) st = sd_runs_of(c, true, &id);
  if (st == MP_OK && id == 0) st = sd_runs_of(c, false, &all);
  if (st == MP_OK && id == 0 && all == 0) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: no run of '%s'; record one with mplan report "
                        "MODEL --sqlite %s",
                        c->path, c->model, c->path);
  }
  if (st == MP_OK && id == 0) {
    return mp_error_set(
        c->err, MP_ERR_BAD_INPUT,
        "%s: no run of '%s' planned with these options (%" PRId64
        " run%s of it with other options, or recorded before "
        "schema version 9); record one with mplan report MODEL "
        "--sqlite %s and the same planning flags",
        c->path, c->model, all, all == 1 ? "" : "s", c->path);
  }
  c->run = id;
  return st;
}

static mp_status sd_read(sd_ctx *c, const char *run, size_t *arena) {
  size_t steps = 0;
  mp_status st = sd_schema(c);
  if (st == MP_OK) st = c->model ? sd_latest(c) : sd_resolve(c, run);
  if (st != MP_OK) return st;
  char label[64];
  snprintf(label, sizeof label, ":%" PRId64, c->run);
  mp_buf src;
  mp_buf_init(&src, c->s->alloc);
  mp_buf_printf(&src, "%s%s", c->path, label);
  bool ok = !src.failed;
  const char *source = ok ? snap_str(c->s, mp_buf_str(&src), &ok) : NULL;
  mp_buf_free(&src);
  if (!ok)
    return mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->path);
  c->s->info.source = source;
  st = sd_info(c, arena, &steps);
  if (st == MP_OK) st = sd_tensors(c);
  if (st == MP_OK) st = sd_members(c);
  if (st == MP_OK) st = sd_patches(c);
  if (st == MP_OK) st = sd_what_if(c);
  if (st == MP_OK) st = sd_steps(c, steps);
  if (st == MP_OK && c->options) {
    c->s->info.options = snap_str(c->s, c->options, &ok);
    if (!ok) {
      st = mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->path);
    }
  }
  if (st == MP_OK) st = snap_finish(c->s, c->err);
  return st;
}

static mp_status sd_load(sd_ctx c, const char *run, const mp_alloc *a,
                         mp_snapshot **out) {
  const char *db_path = c.path;
  mp_error *err = c.err;
  size_t arena = 0;
  mp_status st = snap_create(a, "run", db_path, &c.s, err);
  if (st != MP_OK) return st;
  int rc = sqlite3_open_v2(db_path, &c.db, SQLITE_OPEN_READONLY, NULL);
  if (rc != SQLITE_OK) {
    st = c.db ? mp_error_set(err, MP_ERR_IO, "%s: cannot open: %s", db_path,
                             sqlite3_errmsg(c.db))
              : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", db_path);
  }
  if (st == MP_OK && sqlite3_busy_timeout(c.db, 60000) != SQLITE_OK) {
    st = sd_fail(&c, "setting the busy timeout");
  }
  if (st == MP_OK) st = sd_read(&c, run, &arena);
  if (st == MP_OK && c.s->n_regions == 1 &&
      c.s->regions[0].r.arena_bytes != arena) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: run %" PRId64
                      ": arena_bytes is %zu, but its "
                      "placements end at %zu (damaged database?)",
                      db_path, c.run, arena, c.s->regions[0].r.arena_bytes);
  }
  sqlite3_close(c.db);
  if (st != MP_OK) {
    mp_snapshot_destroy(c.s);
    return st;
  }
  *out = c.s;
  return MP_OK;
}

mp_status mp_snapshot_load_run(const char *db_path, const char *run,
                               const mp_alloc *a, mp_snapshot **out,
                               mp_error *err) {
  sd_ctx c = {.path = db_path, .err = err};
  return sd_load(c, run, a, out);
}

mp_status mp_snapshot_load_latest(const char *db_path, const char *model_base,
                                  const char *options, const mp_alloc *a,
                                  mp_snapshot **out, mp_error *err) {
  sd_ctx c = {
      .path = db_path, .err = err, .model = model_base, .options = options};
  return sd_load(c, NULL, a, out);
}
