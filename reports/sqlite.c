/*
 * sqlite.c -- the SQLite run history: schema, forward migrations and the
 * one-transaction append of a run (docs/report-schema.md).
 *
 * State of a handle:
 *
 *     open --stage--> staged --commit--> open
 *                       |
 *                       +--destroy / error--> rolled back
 *
 * Invariants:
 *   1. A run and all of its rows are written inside one BEGIN IMMEDIATE
 *      transaction; on any error it is rolled back, so readers see whole
 *      runs or nothing. Rows are only ever inserted, never updated.
 *   2. The database is in WAL mode with a busy timeout: a second writer
 *      waits for the first instead of failing (tested with two processes).
 *   3. schema_version holds one row per applied migration; migrations run
 *      in order inside one IMMEDIATE transaction that re-reads the version
 *      first, so two processes opening a fresh file migrate it once.
 *   4. Every value is bound as a parameter; no SQL is assembled from data.
 *   5. live_set rows exist for every activation at every recorded step it
 *      is live; recorded steps are every step for models with ops, and
 *      every time at which some buffer starts or ends being live for
 *      problem files (between two such times nothing changes).
 */
#include <cJSON.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/report_db.h"
#include "report_db_internal.h"
#include "report_util.h"

#define DB_BUSY_MS 60000

struct mp_report_db {
  const mp_alloc *alloc;
  char *path;
  sqlite3 *db;
  int version;
  bool staged; /* a write transaction is open */
};

/* ---- schema -------------------------------------------------------------- */

/* Version 1: the tables. */
static const char db_v1[] =
    "CREATE TABLE run (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  tool_version TEXT NOT NULL,\n"
    "  created_utc TEXT NOT NULL,\n"
    "  model_path TEXT NOT NULL,\n"
    "  model_sha256 TEXT,\n"
    "  model_name TEXT NOT NULL,\n"
    "  model_format TEXT NOT NULL,\n"
    "  backend TEXT NOT NULL,\n"
    "  strategy TEXT NOT NULL,\n"
    "  order_name TEXT NOT NULL,\n"
    "  dims TEXT NOT NULL,\n"
    "  options TEXT,\n"
    "  time_unit TEXT NOT NULL,\n"
    "  steps INTEGER,\n"
    "  span_first INTEGER NOT NULL,\n"
    "  span_last INTEGER NOT NULL,\n"
    "  buffers INTEGER NOT NULL,\n"
    "  arena_bytes INTEGER NOT NULL,\n"
    "  lower_bound_bytes INTEGER NOT NULL,\n"
    "  resident_bytes INTEGER NOT NULL,\n"
    "  retained_bytes INTEGER NOT NULL,\n"
    "  activation_peak_bytes INTEGER NOT NULL,\n"
    "  no_reuse_bytes INTEGER NOT NULL,\n"
    "  alignment_waste_bytes INTEGER NOT NULL,\n"
    "  plan_ms REAL NOT NULL);\n"
    "CREATE TABLE tensor (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  idx INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  kind TEXT NOT NULL,\n"
    "  class TEXT NOT NULL,\n"
    "  dtype TEXT,\n"
    "  shape TEXT,\n"
    "  bytes INTEGER NOT NULL,\n"
    "  producer TEXT,\n"
    "  last_consumer TEXT,\n"
    "  consumers TEXT,\n"
    "  first_use INTEGER NOT NULL,\n"
    "  last_use INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, idx)) WITHOUT ROWID;\n"
    "CREATE TABLE step (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  step INTEGER NOT NULL,\n"
    "  last_step INTEGER NOT NULL,\n"
    "  op TEXT,\n"
    "  op_type TEXT,\n"
    "  kernel TEXT,\n"
    "  live_bytes INTEGER NOT NULL,\n"
    "  live_count INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, step)) WITHOUT ROWID;\n"
    "CREATE TABLE placement (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  tensor_idx INTEGER NOT NULL,\n"
    "  region TEXT NOT NULL,\n"
    "  offset INTEGER NOT NULL,\n"
    "  size INTEGER NOT NULL,\n"
    "  padded_size INTEGER NOT NULL,\n"
    "  alignment INTEGER NOT NULL,\n"
    "  alignment_waste INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, tensor_idx)) WITHOUT ROWID;\n"
    "CREATE TABLE live_set (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  step INTEGER NOT NULL,\n"
    "  tensor_idx INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, step, tensor_idx)) WITHOUT ROWID;\n"
    "CREATE TABLE peak_interval (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  seq INTEGER NOT NULL,\n"
    "  first_step INTEGER NOT NULL,\n"
    "  last_step INTEGER NOT NULL,\n"
    "  bytes INTEGER NOT NULL,\n"
    "  tensors INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;\n"
    "CREATE TABLE pass (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  seq INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  detail TEXT,\n"
    "  ops_before INTEGER,\n"
    "  ops_after INTEGER,\n"
    "  tensors_before INTEGER,\n"
    "  tensors_after INTEGER,\n"
    "  saved_bytes INTEGER,\n"
    "  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;\n"
    "CREATE TABLE verification_event (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  seq INTEGER NOT NULL,\n"
    "  kind TEXT NOT NULL,\n"
    "  tensor TEXT,\n"
    "  op TEXT,\n"
    "  step INTEGER,\n"
    "  byte_first INTEGER,\n"
    "  byte_last INTEGER,\n"
    "  detail TEXT,\n"
    "  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;\n";

/* Version 2: views for the common questions. */
static const char db_v2[] =
    "CREATE VIEW run_summary AS SELECT\n"
    "  r.id AS run_id, r.created_utc, r.model_path,\n"
    "  substr(r.model_sha256, 1, 12) AS sha256_12, r.strategy,\n"
    "  r.order_name, r.backend, r.arena_bytes, r.resident_bytes,\n"
    "  r.activation_peak_bytes, r.lower_bound_bytes,\n"
    "  r.activation_peak_bytes - r.lower_bound_bytes AS overhead_bytes,\n"
    "  round(100.0 * (r.activation_peak_bytes - r.lower_bound_bytes)\n"
    "        / nullif(r.lower_bound_bytes, 0), 2) AS overhead_pct,\n"
    "  r.alignment_waste_bytes, r.plan_ms, r.buffers\n"
    "FROM run r;\n"
    "CREATE VIEW live_at_peak AS SELECT\n"
    "  p.run_id, p.seq AS peak_seq, p.first_step AS peak_step,\n"
    "  s.op AS peak_op, t.name AS tensor, pl.padded_size AS bytes,\n"
    "  round(100.0 * pl.padded_size / p.bytes, 1) AS peak_pct,\n"
    "  t.first_use, t.last_use, t.producer, t.last_consumer,\n"
    "  CASE\n"
    "    WHEN t.kind = 'output' THEN 'graph output: kept to the end'\n"
    "    WHEN t.first_use = p.first_step AND t.last_use = p.first_step\n"
    "      THEN 'born here' || coalesce(', read by ' || t.last_consumer, '')\n"
    "    WHEN t.last_use = p.first_step\n"
    "      THEN 'last read here' || coalesce(' by ' || t.last_consumer, '')\n"
    "    WHEN t.last_consumer IS NOT NULL\n"
    "      THEN 'read later by ' || t.last_consumer || ' (step '\n"
    "           || t.last_use || ')'\n"
    "    ELSE 'live until ' || t.last_use\n"
    "  END AS why_alive\n"
    "FROM peak_interval p\n"
    "JOIN live_set ls ON ls.run_id = p.run_id AND ls.step = p.first_step\n"
    "JOIN tensor t ON t.run_id = ls.run_id AND t.idx = ls.tensor_idx\n"
    "JOIN placement pl ON pl.run_id = t.run_id AND pl.tensor_idx = t.idx\n"
    "LEFT JOIN step s ON s.run_id = p.run_id AND s.step = p.first_step;\n"
    "CREATE VIEW alignment_waste AS SELECT\n"
    "  pl.run_id, t.name AS tensor, t.kind, t.class, pl.size,\n"
    "  pl.padded_size, pl.alignment, pl.alignment_waste AS waste_bytes,\n"
    "  pl.offset\n"
    "FROM placement pl\n"
    "JOIN tensor t ON t.run_id = pl.run_id AND t.idx = pl.tensor_idx\n"
    "WHERE pl.alignment_waste > 0;\n"
    "CREATE VIEW top_tensors AS SELECT\n"
    "  t.run_id, row_number() OVER (PARTITION BY t.run_id\n"
    "    ORDER BY pl.padded_size DESC, t.idx) AS rank,\n"
    "  t.name AS tensor, t.kind, t.class, t.dtype, t.shape,\n"
    "  pl.padded_size AS bytes, t.first_use, t.last_use,\n"
    "  t.last_use - t.first_use + 1 AS lifetime, pl.offset\n"
    "FROM tensor t\n"
    "JOIN placement pl ON pl.run_id = t.run_id AND pl.tensor_idx = t.idx;\n"
    "CREATE INDEX run_by_model ON run(model_sha256, created_utc);\n";

/* Version 3 (issue 9): the per-pass table's measurements, the fusions,
 * which tensors share a buffer, and the memory scheduler's candidates. */
static const char db_v3[] =
    "ALTER TABLE pass ADD COLUMN buffers_before INTEGER;\n"
    "ALTER TABLE pass ADD COLUMN buffers_after INTEGER;\n"
    "ALTER TABLE pass ADD COLUMN lower_bound_before INTEGER;\n"
    "ALTER TABLE pass ADD COLUMN lower_bound_after INTEGER;\n"
    "ALTER TABLE pass ADD COLUMN arena_before INTEGER;\n"
    "ALTER TABLE pass ADD COLUMN arena_after INTEGER;\n"
    "ALTER TABLE pass ADD COLUMN peak_moved INTEGER;\n"
    "CREATE TABLE fusion (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  seq INTEGER NOT NULL,\n"
    "  pass TEXT NOT NULL,\n"
    "  kind TEXT NOT NULL,\n"
    "  op TEXT NOT NULL,\n"
    "  head_type TEXT NOT NULL,\n"
    "  absorbed TEXT NOT NULL,\n"
    "  absorbed_ops TEXT NOT NULL,\n"
    "  intermediates TEXT NOT NULL,\n"
    "  steps INTEGER NOT NULL,\n"
    "  intermediate_bytes INTEGER NOT NULL,\n"
    "  saved_bytes INTEGER NOT NULL,\n"
    "  at_peak INTEGER NOT NULL,\n"
    "  registers INTEGER,\n"
    "  spills INTEGER,\n"
    "  capped INTEGER,\n"
    "  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;\n"
    "CREATE TABLE tensor_buffer (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  tensor TEXT NOT NULL,\n"
    "  tensor_idx INTEGER NOT NULL,\n"
    "  rule TEXT NOT NULL,\n"
    "  PRIMARY KEY (run_id, tensor)) WITHOUT ROWID;\n"
    "CREATE TABLE schedule_candidate (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  seq INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  peak_bytes INTEGER NOT NULL,\n"
    "  chosen INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;\n";

/* Version 4 (issue 7): where a verification ran, and the ops that fell
 * back to scalar kernels on a target with vector kernels. */
static const char db_v4[] =
    "CREATE TABLE verification_target (\n"
    "  run_id INTEGER PRIMARY KEY REFERENCES run(id),\n"
    "  arch TEXT NOT NULL,\n"
    "  kernels TEXT NOT NULL,\n"
    "  vlen INTEGER NOT NULL);\n"
    "CREATE TABLE verification_scalar_op (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  seq INTEGER NOT NULL,\n"
    "  op TEXT NOT NULL,\n"
    "  op_type TEXT,\n"
    "  kernel TEXT,\n"
    "  dtype TEXT,\n"
    "  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;\n";

/* Version 5: where a tensor starts inside its buffer (Concat slices). */
static const char db_v5[] =
    "ALTER TABLE tensor_buffer ADD COLUMN offset INTEGER NOT NULL DEFAULT 0;\n";

/* Version 6: the tensors each pass removed (not its fusions'). */
static const char db_v6[] =
    "ALTER TABLE pass ADD COLUMN removed TEXT NOT NULL DEFAULT '';\n";

/* Version 7: bytes of the buffers live at a peak that hold no live
 * tensor there (mp_model_buffer_in_use): per interval, and per buffer
 * with any, which live_at_peak shows as in_use_bytes. The view is version
 * 2's with that column; a migration is frozen once released, so it is
 * written out again rather than derived from db_v2. */
static const char db_v7[] =
    "ALTER TABLE peak_interval ADD COLUMN idle_bytes INTEGER NOT NULL "
    "DEFAULT 0;\n"
    "CREATE TABLE peak_in_use (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  seq INTEGER NOT NULL,\n"
    "  tensor_idx INTEGER NOT NULL,\n"
    "  in_use_bytes INTEGER NOT NULL,\n"
    "  next_write_step INTEGER,\n"
    "  next_writer TEXT,\n"
    "  PRIMARY KEY (run_id, seq, tensor_idx)) WITHOUT ROWID;\n"
    "DROP VIEW live_at_peak;\n"
    "CREATE VIEW live_at_peak AS SELECT\n"
    "  p.run_id, p.seq AS peak_seq, p.first_step AS peak_step,\n"
    "  s.op AS peak_op, t.name AS tensor, pl.padded_size AS bytes,\n"
    "  coalesce(pu.in_use_bytes, pl.size) AS in_use_bytes,\n"
    "  round(100.0 * pl.padded_size / p.bytes, 1) AS peak_pct,\n"
    "  t.first_use, t.last_use, t.producer, t.last_consumer,\n"
    "  CASE\n"
    "    WHEN t.kind = 'output' THEN 'graph output: kept to the end'\n"
    "    WHEN t.first_use = p.first_step AND t.last_use = p.first_step\n"
    "      THEN 'born here' || coalesce(', read by ' || t.last_consumer, '')\n"
    "    WHEN t.last_use = p.first_step\n"
    "      THEN 'last read here' || coalesce(' by ' || t.last_consumer, '')\n"
    "    WHEN t.last_consumer IS NOT NULL\n"
    "      THEN 'read later by ' || t.last_consumer || ' (step '\n"
    "           || t.last_use || ')'\n"
    "    ELSE 'live until ' || t.last_use\n"
    "  END AS why_alive\n"
    "FROM peak_interval p\n"
    "JOIN live_set ls ON ls.run_id = p.run_id AND ls.step = p.first_step\n"
    "JOIN tensor t ON t.run_id = ls.run_id AND t.idx = ls.tensor_idx\n"
    "JOIN placement pl ON pl.run_id = t.run_id AND pl.tensor_idx = t.idx\n"
    "LEFT JOIN step s ON s.run_id = p.run_id AND s.step = p.first_step\n"
    "LEFT JOIN peak_in_use pu ON pu.run_id = p.run_id AND pu.seq = p.seq\n"
    "  AND pu.tensor_idx = t.idx;\n";

/* Version 8: what the tile pass chose (one row a run it ran in), the ops
 * of its patches in the plan, each with the step it runs at, and the
 * lower bound under the settings not asked for (--what-if). */
static const char db_v8[] =
    "CREATE TABLE tile (\n"
    "  run_id INTEGER PRIMARY KEY REFERENCES run(id),\n"
    "  outcome TEXT NOT NULL,\n"
    "  cuts INTEGER NOT NULL,\n"
    "  candidates INTEGER NOT NULL,\n"
    "  budget_reached INTEGER NOT NULL,\n"
    "  lower_bound_before INTEGER NOT NULL,\n"
    "  lower_bound_after INTEGER,\n"
    "  cut TEXT,\n"
    "  cut_op TEXT,\n"
    "  stage_ops INTEGER,\n"
    "  bands INTEGER,\n"
    "  columns INTEGER,\n"
    "  height INTEGER,\n"
    "  width INTEGER,\n"
    "  graph_macs REAL,\n"
    "  extra_macs REAL,\n"
    "  lower_bound_with INTEGER,\n"
    "  lower_bound_without INTEGER);\n"
    "CREATE TABLE tile_op (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  step INTEGER NOT NULL,\n"
    "  op TEXT NOT NULL,\n"
    "  role TEXT NOT NULL,\n"
    "  origin TEXT NOT NULL,\n"
    "  band INTEGER,\n"
    "  col INTEGER,\n"
    "  PRIMARY KEY (run_id, step)) WITHOUT ROWID;\n"
    "CREATE TABLE what_if (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  seq INTEGER NOT NULL,\n"
    "  setting TEXT NOT NULL,\n"
    "  passes TEXT NOT NULL,\n"
    "  order_name TEXT NOT NULL,\n"
    "  lower_bound_bytes INTEGER NOT NULL,\n"
    "  tile_outcome TEXT,\n"
    "  tile_cut TEXT,\n"
    "  tile_bands INTEGER,\n"
    "  tile_columns INTEGER,\n"
    "  tile_extra_macs REAL,\n"
    "  strategy TEXT,\n"
    "  activation_arena_bytes INTEGER,\n"
    "  proven_lower_bound_bytes INTEGER,\n"
    "  arena_bytes INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;\n";

/* Version 9: how the memory order's search went (one row a run planned
 * with --order memory): proven optimal or not, and the work it spent of
 * its budget, which the same model and flags repeat on any machine; and
 * each run's canonical planning options, so that mplan check can take
 * the latest run of a model with the same options as its baseline. */
static const char db_v9[] =
    "ALTER TABLE run ADD COLUMN plan_options TEXT;\n"
    "CREATE TABLE schedule (\n"
    "  run_id INTEGER PRIMARY KEY REFERENCES run(id),\n"
    "  peak_bytes INTEGER NOT NULL,\n"
    "  segments INTEGER NOT NULL,\n"
    "  largest_segment INTEGER NOT NULL,\n"
    "  bound_segments INTEGER NOT NULL,\n"
    "  exact_segments INTEGER NOT NULL,\n"
    "  improved_segments INTEGER NOT NULL,\n"
    "  states INTEGER NOT NULL,\n"
    "  optimal INTEGER NOT NULL,\n"
    "  work INTEGER NOT NULL,\n"
    "  work_budget INTEGER NOT NULL,\n"
    "  work_hit INTEGER NOT NULL,\n"
    "  time_hit INTEGER NOT NULL,\n"
    "  ms REAL NOT NULL);\n";

/* Version 10: which of the tile pass's ranked patchings was built, after
 * every pass in file order and in the order planned (the pass manager's
 * invariant 13); NULL when fewer than two were ranked. */
static const char db_v10[] =
    "ALTER TABLE tile ADD COLUMN ranked INTEGER;\n"
    "ALTER TABLE tile ADD COLUMN picked INTEGER;\n"
    "ALTER TABLE tile ADD COLUMN built INTEGER;\n"
    "ALTER TABLE tile ADD COLUMN lower_bound_picked_file INTEGER;\n"
    "ALTER TABLE tile ADD COLUMN lower_bound_first_file INTEGER;\n";

/* The tensors besides the cut one the patches join (exports, tile.c), in
 * the order the pass lists them. */
static const char db_v11[] =
    "CREATE TABLE tile_export (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(id),\n"
    "  seq INTEGER NOT NULL,\n"
    "  tensor TEXT NOT NULL,\n"
    "  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;\n";

/* Version 12: the memory order's segments the branch bound proved and
 * those a branch order improved (schedule_memory.c invariant 11), and
 * whether the order is optimal because its peak meets a bound of the
 * whole graph (invariant 5); NULL in rows of earlier versions. */
static const char db_v12[] =
    "ALTER TABLE schedule ADD COLUMN branch_bound_segments INTEGER;\n"
    "ALTER TABLE schedule ADD COLUMN branch_improved_segments INTEGER;\n"
    "ALTER TABLE schedule ADD COLUMN optimal_by_bound INTEGER;\n";

/* Version 13: the peak every order of the graph reaches (invariant 5 of
 * schedule_memory.c), so an order not proven says how far from the
 * optimum it can be; NULL in rows of earlier versions. */
static const char db_v13[] =
    "ALTER TABLE schedule ADD COLUMN bound_bytes INTEGER;\n";

/* Version 14: the memory order's segments that moving single ops (sinking
 * or a move the simulation kept) improved (invariants 12 and 13 of
 * schedule_memory.c); NULL in rows of earlier versions. */
static const char db_v14[] =
    "ALTER TABLE schedule ADD COLUMN move_improved_segments INTEGER;\n";

static const char *const db_migrations[] = {
    db_v1, db_v2, db_v3,  db_v4,  db_v5,  db_v6,  db_v7,
    db_v8, db_v9, db_v10, db_v11, db_v12, db_v13, db_v14};
#define DB_KNOWN ((int)(sizeof db_migrations / sizeof *db_migrations))

_Static_assert(DB_KNOWN == MP_REPORT_DB_VERSION,
               "one migration per schema version");

/* ---- helpers ------------------------------------------------------------- */

static mp_status db_fail(mp_report_db *h, const char *what, mp_error *err) {
  int code = sqlite3_errcode(h->db);
  mp_status st = code == SQLITE_NOMEM ? MP_ERR_NOMEM : MP_ERR_IO;
  if (code == SQLITE_NOTADB) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: not an SQLite database (%s)", h->path,
                        sqlite3_errmsg(h->db));
  }
  return mp_error_set(err, st, "%s: sqlite: %s: %s", h->path, what,
                      sqlite3_errmsg(h->db));
}

static mp_status db_exec(mp_report_db *h, const char *sql, const char *what,
                         mp_error *err) {
  if (sqlite3_exec(h->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
    return db_fail(h, what, err);
  }
  return MP_OK;
}

/* Runs a query returning one integer; *out is 0 when it returns no row. */
static mp_status db_int(mp_report_db *h, const char *sql, int64_t *out,
                        mp_error *err) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(h->db, sql, -1, &s, NULL) != SQLITE_OK) {
    return db_fail(h, "reading the schema", err);
  }
  int rc = sqlite3_step(s);
  *out = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    return db_fail(h, "reading the schema", err);
  }
  return MP_OK;
}

/* ---- open and migrate ---------------------------------------------------- */

/* Switching a fresh file to WAL needs an exclusive lock, and SQLite does
 * not call the busy handler for it (a second process opening the same
 * new file gets SQLITE_BUSY at once): so retry here, for as long as the
 * busy timeout allows. Once the file is in WAL mode the pragma is a
 * no-op that returns "wal". */
static mp_status db_wal(mp_report_db *h, mp_error *err) {
  for (int waited = 0;; waited += 10) {
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(h->db, "PRAGMA journal_mode=WAL", -1, &s, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc == SQLITE_ROW) return MP_OK;
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || waited >= DB_BUSY_MS) {
      return db_fail(h, "setting WAL mode", err);
    }
    sqlite3_sleep(10);
  }
}

/* A corrupt history is refused before anything is written to it: the
 * migration would otherwise commit (and SQLite rewrite the header) before
 * an insert into a damaged page fails. */
static mp_status db_intact(mp_report_db *h, mp_error *err) {
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(h->db, "PRAGMA quick_check(1)", -1, &s, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(s);
  if (rc != SQLITE_ROW) {
    sqlite3_finalize(s);
    return db_fail(h, "checking the database", err);
  }
  const char *res = (const char *)sqlite3_column_text(s, 0);
  mp_status st = MP_OK;
  if (!res || strcmp(res, "ok") != 0) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: the database is damaged (quick_check: %.200s); "
                      "mplan writes nothing to it",
                      h->path, res ? res : "no answer");
  }
  sqlite3_finalize(s);
  return st;
}

static mp_status db_current_version(mp_report_db *h, int64_t *version,
                                    mp_error *err) {
  int64_t has_table = 0, n_objects = 0;
  mp_status st = db_int(h,
                        "SELECT count(*) FROM sqlite_schema WHERE "
                        "type = 'table' AND name = 'schema_version'",
                        &has_table, err);
  if (st == MP_OK && !has_table) {
    st = db_int(h, "SELECT count(*) FROM sqlite_schema", &n_objects, err);
    if (st == MP_OK && n_objects > 0) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: not an mplan report database (it has tables "
                          "but no schema_version table)",
                          h->path);
    }
    *version = 0;
    return st;
  }
  if (st == MP_OK) {
    st = db_int(h, "SELECT max(version) FROM schema_version", version, err);
  }
  return st;
}

static mp_status db_apply(mp_report_db *h, int v, mp_error *err) {
  char utc[32];
  report_utc_now(utc, sizeof utc);
  mp_status st = db_exec(h, db_migrations[v - 1], "migrating the schema", err);
  sqlite3_stmt *s = NULL;
  if (st == MP_OK &&
      sqlite3_prepare_v2(h->db,
                         "INSERT INTO schema_version (version, applied_utc, "
                         "tool_version) VALUES (?, ?, ?)",
                         -1, &s, NULL) != SQLITE_OK) {
    st = db_fail(h, "migrating the schema", err);
  }
  if (st == MP_OK) {
    sqlite3_bind_int(s, 1, v);
    sqlite3_bind_text(s, 2, utc, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, MP_VERSION, -1, SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_DONE) {
      st = db_fail(h, "migrating the schema", err);
    }
  }
  sqlite3_finalize(s);
  return st;
}

/* Migrates to version want inside one IMMEDIATE transaction (invariant 3).
 */
static mp_status db_migrate(mp_report_db *h, int want, mp_error *err) {
  int64_t v = 0;
  mp_status st = db_exec(h, "BEGIN IMMEDIATE", "locking for migration", err);
  if (st != MP_OK) return st;
  st = db_current_version(h, &v, err);
  if (st == MP_OK && v > DB_KNOWN) {
    st = mp_error_set(err, MP_ERR_UNSUPPORTED,
                      "%s: schema version %" PRId64
                      " is newer than this mplan (which knows versions "
                      "1..%d); use a newer mplan",
                      h->path, v, DB_KNOWN);
  }
  if (st == MP_OK && v == 0) {
    st = db_exec(h,
                 "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, "
                 "applied_utc TEXT NOT NULL, tool_version TEXT NOT NULL)",
                 "creating the schema", err);
  }
  for (int k = (int)v + 1; st == MP_OK && k <= want; k++) {
    st = db_apply(h, k, err);
  }
  if (st == MP_OK) st = db_exec(h, "COMMIT", "committing the migration", err);
  if (st != MP_OK) {
    sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
    return st;
  }
  h->version = v > want ? (int)v : want;
  return MP_OK;
}

mp_status report_db_open_version(const char *path, const mp_alloc *a,
                                 int version, mp_report_db **out,
                                 mp_error *err) {
  mp_report_db *h = mp_calloc(a, 1, sizeof *h);
  if (!h) return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", path);
  h->alloc = a;
  h->path = mp_strdup(a, path);
  if (!h->path) {
    mp_free(a, h);
    return mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", path);
  }
  mp_status st = MP_OK;
  int rc = sqlite3_open_v2(path, &h->db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  if (rc != SQLITE_OK) {
    st = h->db ? db_fail(h, "opening", err)
               : mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", path);
  }
  if (st == MP_OK) sqlite3_extended_result_codes(h->db, 0);
  if (st == MP_OK && sqlite3_busy_timeout(h->db, DB_BUSY_MS) != SQLITE_OK) {
    st = db_fail(h, "setting the busy timeout", err);
  }
  if (st == MP_OK) st = db_exec(h, "PRAGMA foreign_keys=ON", "opening", err);
  if (st == MP_OK) st = db_intact(h, err);
  if (st == MP_OK) st = db_wal(h, err);
  if (st == MP_OK) st = db_migrate(h, version, err);
  if (st != MP_OK) {
    mp_report_db_destroy(h);
    return st;
  }
  *out = h;
  return MP_OK;
}

mp_status mp_report_db_open(const char *path, const mp_alloc *a,
                            mp_report_db **out, mp_error *err) {
  return report_db_open_version(path, a, MP_REPORT_DB_VERSION, out, err);
}

void mp_report_db_destroy(mp_report_db *db) {
  if (!db) return;
  if (db->staged) sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
  sqlite3_close(db->db); /* every statement is finalized by now */
  mp_free(db->alloc, db->path);
  mp_free(db->alloc, db);
}

int mp_report_db_version(const mp_report_db *db) {
  return db->version;
}

/* ---- staging a run ------------------------------------------------------- */

typedef struct db_run {
  mp_report_db *h;
  const mp_model *m;
  const mp_plan *plan;
  const mp_problem *p;
  const mp_report_meta *meta;
  int64_t run_id;
  uint32_t *step_of; /* graphs: op index -> step */
  mp_error *err;
} db_run;

static mp_status db_prepare(db_run *r, const char *sql, sqlite3_stmt **s) {
  if (sqlite3_prepare_v2(r->h->db, sql, -1, s, NULL) != SQLITE_OK) {
    return db_fail(r->h, "preparing an insert", r->err);
  }
  return MP_OK;
}

/* Steps the insert s once and resets it for the next row. */
static mp_status db_row(db_run *r, sqlite3_stmt *s, const char *table) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc != SQLITE_DONE) return db_fail(r->h, table, r->err);
  return MP_OK;
}

static void db_text(sqlite3_stmt *s, int k, const char *v) {
  if (v) {
    sqlite3_bind_text(s, k, v, -1, SQLITE_TRANSIENT);
  } else {
    sqlite3_bind_null(s, k);
  }
}

static void db_size(sqlite3_stmt *s, int k, size_t v) {
  /* Sizes above 2^63 cannot come from a validated plan; clamp for SQL. */
  sqlite3_bind_int64(s, k, v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

/* {"N": 1, ...} for a graph's dims, {} otherwise. Owned (cJSON_free). */
static char *db_dims_json(const mp_model *m) {
  const mp_graph *g = mp_model_graph(m);
  cJSON *o = cJSON_CreateObject();
  bool ok = o != NULL;
  for (size_t i = 0; ok && g && i < mp_graph_dim_count(g); i++) {
    ok = cJSON_AddNumberToObject(o, mp_graph_dim_name(g, i),
                                 (double)mp_graph_dim_value(g, i)) != NULL;
  }
  char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return text;
}

/* The run's columns; version 9 added plan_options. */
#define DB_RUN_COLUMNS                                                     \
  "INSERT INTO run (tool_version, created_utc, model_path, model_sha256, " \
  "model_name, model_format, backend, strategy, order_name, dims, "        \
  "options, time_unit, steps, span_first, span_last, buffers, "            \
  "arena_bytes, lower_bound_bytes, resident_bytes, retained_bytes, "       \
  "activation_peak_bytes, no_reuse_bytes, alignment_waste_bytes, plan_ms"
#define DB_RUN_VALUES "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?"

static mp_status db_insert_run(db_run *r) {
  static const char sql[] =
      DB_RUN_COLUMNS ", plan_options) VALUES (" DB_RUN_VALUES ",?)";
  /* a database opened at an older version (report_db_open_version) */
  static const char sql8[] = DB_RUN_COLUMNS ") VALUES (" DB_RUN_VALUES ")";
  bool v9 = r->h->version >= 9;
  const mp_plan_summary *s = mp_plan_summary_of(r->plan);
  const mp_report_meta *meta = r->meta;
  char utc[32];
  int64_t t0, t1;
  sqlite3_stmt *st = NULL;
  char *dims = db_dims_json(r->m);
  if (!dims) {
    return mp_error_set(r->err, MP_ERR_NOMEM, "%s: out of memory", r->h->path);
  }
  mp_status rc = db_prepare(r, v9 ? sql : sql8, &st);
  if (rc == MP_OK) {
    if (meta && meta->created_utc) {
      snprintf(utc, sizeof utc, "%s", meta->created_utc);
    } else {
      report_utc_now(utc, sizeof utc);
    }
    mp_problem_span(r->p, &t0, &t1);
    int k = 1;
    db_text(st, k++, MP_VERSION);
    db_text(st, k++, utc);
    db_text(st, k++, mp_model_path(r->m));
    db_text(st, k++, meta ? meta->model_sha256 : NULL);
    db_text(st, k++, mp_model_name(r->m));
    db_text(st, k++, mp_model_format_name(mp_model_format_of(r->m)));
    db_text(st, k++, mp_model_backend_name(r->m));
    db_text(st, k++, s->strategy);
    db_text(st, k++, mp_model_order_name(r->m));
    db_text(st, k++, dims);
    db_text(st, k++, meta ? meta->options : NULL);
    db_text(st, k++, report_time_word(r->m));
    if (mp_model_steps(r->m)) {
      db_size(st, k++, mp_model_steps(r->m));
    } else {
      sqlite3_bind_null(st, k++);
    }
    sqlite3_bind_int64(st, k++, t0);
    sqlite3_bind_int64(st, k++, t1);
    db_size(st, k++, mp_problem_count(r->p));
    db_size(st, k++, s->arena_bytes);
    db_size(st, k++, s->lower_bound_bytes);
    db_size(st, k++, s->resident_bytes);
    db_size(st, k++, s->retained_bytes);
    db_size(st, k++, s->activation_peak_bytes);
    db_size(st, k++, s->no_reuse_bytes);
    db_size(st, k++, s->alignment_waste_bytes);
    sqlite3_bind_double(st, k++, s->plan_ms);
    if (v9) db_text(st, k++, meta ? meta->plan_options : NULL);
    rc = db_row(r, st, "inserting the run");
  }
  sqlite3_finalize(st);
  cJSON_free(dims);
  if (rc == MP_OK) r->run_id = sqlite3_last_insert_rowid(r->h->db);
  return rc;
}

/* The ops reading buffer i (any tensor it holds) in step order as a JSON
 * array, or NULL (no graph, or out of memory: *oom tells which). Owned
 * (cJSON_free). */
static char *db_consumers(db_run *r, size_t i, bool *oom) {
  const uint32_t *members = NULL;
  *oom = false;
  if (!report_tensor(r->m, i)) return NULL;
  const mp_graph *g = mp_model_graph(r->m);
  size_t n_members = mp_model_buffer_tensors(r->m, i, &members);
  cJSON *arr = cJSON_CreateArray();
  bool ok = arr != NULL;
  /* Readers are few per buffer: a selection by step is fine. */
  uint32_t prev = 0;
  for (bool first = true; ok; first = false) {
    uint32_t best = UINT32_MAX, op = 0;
    for (size_t m = 0; m < n_members; m++) {
      const mp_tensor *t = mp_graph_tensor(g, members[m]);
      for (uint32_t j = 0; j < t->n_consumers; j++) {
        uint32_t sj = r->step_of[t->consumers[j]];
        if ((first || sj > prev) && sj < best) {
          best = sj;
          op = t->consumers[j];
        }
      }
    }
    if (best == UINT32_MAX) break;
    prev = best;
    cJSON *name = cJSON_CreateString(mp_graph_op(g, op)->name);
    ok = name && cJSON_AddItemToArray(arr, name);
    if (name && !ok) cJSON_Delete(name);
  }
  char *text = ok ? cJSON_PrintUnformatted(arr) : NULL;
  cJSON_Delete(arr);
  *oom = text == NULL;
  return text;
}

static mp_status db_insert_tensors(db_run *r) {
  static const char tsql[] =
      "INSERT INTO tensor (run_id, idx, name, kind, class, dtype, shape, "
      "bytes, producer, last_consumer, consumers, first_use, last_use) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)";
  static const char psql[] =
      "INSERT INTO placement (run_id, tensor_idx, region, offset, size, "
      "padded_size, alignment, alignment_waste) VALUES (?,?,?,?,?,?,?,?)";
  sqlite3_stmt *ts = NULL, *ps = NULL;
  const mp_placement *pl = mp_plan_placements(r->plan);
  mp_status st = db_prepare(r, tsql, &ts);
  if (st == MP_OK) st = db_prepare(r, psql, &ps);
  for (size_t i = 0; st == MP_OK && i < mp_problem_count(r->p); i++) {
    const mp_buffer *b = mp_problem_buffer(r->p, i);
    char shape[256];
    bool oom;
    char *cons = db_consumers(r, i, &oom);
    if (oom) {
      st = mp_error_set(r->err, MP_ERR_NOMEM, "%s: out of memory", r->h->path);
      break;
    }
    report_shape(r->m, i, shape, sizeof shape);
    sqlite3_bind_int64(ts, 1, r->run_id);
    db_size(ts, 2, i);
    db_text(ts, 3, b->name);
    db_text(ts, 4, report_kind(r->m, i));
    db_text(ts, 5, mp_class_name(b->cls));
    db_text(ts, 6, report_dtype(r->m, i));
    db_text(ts, 7, *shape ? shape : NULL);
    db_size(ts, 8, b->size);
    db_text(ts, 9, mp_model_producer(r->m, i));
    db_text(ts, 10, mp_model_last_consumer(r->m, i));
    db_text(ts, 11, cons);
    sqlite3_bind_int64(ts, 12, b->first);
    sqlite3_bind_int64(ts, 13, b->last);
    st = db_row(r, ts, "inserting a tensor");
    cJSON_free(cons);
    if (st != MP_OK) break;
    sqlite3_bind_int64(ps, 1, r->run_id);
    db_size(ps, 2, i);
    db_text(ps, 3, mp_plan_region_at(r->plan, pl[i].region)->name);
    db_size(ps, 4, pl[i].offset);
    db_size(ps, 5, b->size);
    db_size(ps, 6, b->padded);
    db_size(ps, 7, b->alignment);
    db_size(ps, 8, b->padded - b->size);
    st = db_row(r, ps, "inserting a placement");
  }
  sqlite3_finalize(ts);
  sqlite3_finalize(ps);
  return st;
}

static int db_time_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The recorded steps (invariant 5), sorted and distinct, into times. */
static size_t db_times(db_run *r, int64_t *times) {
  int64_t t0, t1;
  size_t n = 0, steps = mp_model_steps(r->m);
  mp_problem_span(r->p, &t0, &t1);
  if (steps) {
    for (size_t k = 0; k < steps; k++) times[n++] = (int64_t)k;
    return n;
  }
  times[n++] = t0;
  for (size_t i = 0; i < mp_problem_count(r->p); i++) {
    const mp_buffer *b = mp_problem_buffer(r->p, i);
    if (b->cls != MP_CLASS_ACTIVATION) continue;
    times[n++] = b->first;
    if (b->last < t1) times[n++] = b->last + 1;
  }
  qsort(times, n, sizeof *times, db_time_cmp);
  size_t u = 0;
  for (size_t k = 0; k < n; k++) {
    if (u == 0 || times[u - 1] != times[k]) times[u++] = times[k];
  }
  return u;
}

/* Index of the first time >= t. */
static size_t db_lower(const int64_t *times, size_t n, int64_t t) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (times[mid] < t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

static mp_status db_insert_live(db_run *r, const int64_t *times, size_t n,
                                size_t *count) {
  static const char sql[] =
      "INSERT INTO live_set (run_id, step, tensor_idx) VALUES (?,?,?)";
  sqlite3_stmt *s = NULL;
  mp_status st = db_prepare(r, sql, &s);
  for (size_t i = 0; st == MP_OK && i < mp_problem_count(r->p); i++) {
    const mp_buffer *b = mp_problem_buffer(r->p, i);
    if (b->cls != MP_CLASS_ACTIVATION) continue;
    for (size_t k = db_lower(times, n, b->first);
         st == MP_OK && k < n && times[k] <= b->last; k++) {
      count[k]++;
      sqlite3_bind_int64(s, 1, r->run_id);
      sqlite3_bind_int64(s, 2, times[k]);
      db_size(s, 3, i);
      st = db_row(r, s, "inserting a live set");
    }
  }
  sqlite3_finalize(s);
  return st;
}

static mp_status db_insert_steps(db_run *r, const int64_t *times, size_t n,
                                 const size_t *count) {
  static const char sql[] =
      "INSERT INTO step (run_id, step, last_step, op, op_type, kernel, "
      "live_bytes, live_count) VALUES (?,?,?,?,?,NULL,?,?)";
  const mp_profile *prof = mp_plan_profile(r->plan);
  int64_t t0, t1;
  sqlite3_stmt *s = NULL;
  mp_problem_span(r->p, &t0, &t1);
  mp_status st = db_prepare(r, sql, &s);
  for (size_t k = 0; st == MP_OK && k < n; k++) {
    int64_t t = times[k];
    size_t seg = mp_profile_find(prof, t);
    sqlite3_bind_int64(s, 1, r->run_id);
    sqlite3_bind_int64(s, 2, t);
    sqlite3_bind_int64(s, 3, k + 1 < n ? times[k + 1] - 1 : t1);
    db_text(s, 4, t >= 0 ? mp_model_step_op(r->m, (size_t)t) : NULL);
    db_text(s, 5, t >= 0 ? mp_model_step_type(r->m, (size_t)t) : NULL);
    db_size(s, 6, seg < prof->n_segs ? prof->segs[seg].live : 0);
    db_size(s, 7, count[k]);
    st = db_row(r, s, "inserting a step");
  }
  sqlite3_finalize(s);
  return st;
}

/* The buffers live at step t with idle bytes (version 7): one
 * peak_in_use row each; returns their idle total in *idle. */
static mp_status db_insert_in_use(db_run *r, sqlite3_stmt *s, size_t seq,
                                  int64_t t, size_t *idle) {
  mp_status st = MP_OK;
  *idle = 0;
  for (size_t b = 0; st == MP_OK && b < mp_problem_count(r->p); b++) {
    int64_t next;
    const char *writer;
    size_t w, bytes = report_idle(r->m, r->p, b, t, &w, &next, &writer);
    if (!bytes) continue;
    *idle += bytes;
    sqlite3_bind_int64(s, 1, r->run_id);
    db_size(s, 2, seq);
    db_size(s, 3, b);
    db_size(s, 4, w);
    if (next >= 0) {
      sqlite3_bind_int64(s, 5, next);
    } else {
      sqlite3_bind_null(s, 5);
    }
    db_text(s, 6, writer);
    st = db_row(r, s, "inserting a peak buffer in use");
  }
  return st;
}

static mp_status db_insert_peaks(db_run *r) {
  static const char sql[] =
      "INSERT INTO peak_interval (run_id, seq, first_step, last_step, bytes, "
      "tensors, idle_bytes) VALUES (?,?,?,?,?,?,?)";
  static const char sql_v1[] = /* a handle at an older version (tests) */
      "INSERT INTO peak_interval (run_id, seq, first_step, last_step, bytes, "
      "tensors) VALUES (?,?,?,?,?,?)";
  bool v7 = r->h->version >= 7;
  static const char sql_use[] =
      "INSERT INTO peak_in_use (run_id, seq, tensor_idx, in_use_bytes, "
      "next_write_step, next_writer) VALUES (?,?,?,?,?,?)";
  const mp_profile *prof = mp_plan_profile(r->plan);
  sqlite3_stmt *s = NULL, *u = NULL;
  mp_status st = db_prepare(r, v7 ? sql : sql_v1, &s);
  if (st == MP_OK && v7) st = db_prepare(r, sql_use, &u);
  for (size_t k = 0; st == MP_OK && prof->peak && k < prof->n_peaks; k++) {
    const mp_segment *seg = &prof->segs[prof->peaks[k]];
    size_t idle = 0;
    if (v7) st = db_insert_in_use(r, u, k, seg->first, &idle);
    if (st != MP_OK) break;
    sqlite3_bind_int64(s, 1, r->run_id);
    db_size(s, 2, k);
    sqlite3_bind_int64(s, 3, seg->first);
    sqlite3_bind_int64(s, 4, seg->last);
    db_size(s, 5, prof->peak);
    db_size(s, 6, seg->count);
    if (v7) db_size(s, 7, idle);
    st = db_row(r, s, "inserting a peak interval");
  }
  sqlite3_finalize(s);
  sqlite3_finalize(u);
  return st;
}

static mp_status db_insert_timeline(db_run *r) {
  size_t n = mp_problem_count(r->p), steps = mp_model_steps(r->m);
  size_t cap = steps ? steps : 2 * n + 1;
  int64_t *times = mp_calloc(r->h->alloc, cap, sizeof *times);
  size_t *count = mp_calloc(r->h->alloc, cap, sizeof *count);
  mp_status st = MP_OK;
  if (!times || !count) {
    st = mp_error_set(r->err, MP_ERR_NOMEM, "%s: out of memory", r->h->path);
  }
  size_t n_times = st == MP_OK ? db_times(r, times) : 0;
  if (st == MP_OK) st = db_insert_live(r, times, n_times, count);
  if (st == MP_OK) st = db_insert_steps(r, times, n_times, count);
  if (st == MP_OK) st = db_insert_peaks(r);
  mp_free(r->h->alloc, times);
  mp_free(r->h->alloc, count);
  return st;
}

/* ---- issue 9: passes, fusions, shared buffers, schedule ---------------- */

static mp_status db_insert_pass_rows(db_run *r, const mp_pass_report *pr) {
  static const char sql[] =
      "INSERT INTO pass (run_id, seq, name, detail, ops_before, ops_after, "
      "tensors_before, tensors_after, saved_bytes, buffers_before, "
      "buffers_after, lower_bound_before, lower_bound_after, arena_before, "
      "arena_after, peak_moved, removed) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  sqlite3_stmt *s = NULL;
  mp_status st = db_prepare(r, sql, &s);
  for (size_t i = 0; st == MP_OK && i < mp_pass_report_rows(pr); i++) {
    const mp_pass_row *row = mp_pass_report_row(pr, i);
    int k = 1;
    sqlite3_bind_int64(s, k++, r->run_id);
    db_size(s, k++, i);
    db_text(s, k++, mp_pass_name(row->pass));
    db_text(s, k++, row->detail);
    db_size(s, k++, row->ops_before);
    db_size(s, k++, row->ops_after);
    db_size(s, k++, row->tensors_before);
    db_size(s, k++, row->tensors_after);
    db_size(s, k++, row->saved_bytes);
    db_size(s, k++, row->buffers_before);
    db_size(s, k++, row->buffers_after);
    db_size(s, k++, row->lb_before);
    db_size(s, k++, row->lb_after);
    db_size(s, k++, row->arena_before);
    db_size(s, k++, row->arena_after);
    sqlite3_bind_int(s, k++, row->lb_before != row->lb_after);
    db_text(s, k++, row->removed ? row->removed : "");
    st = db_row(r, s, "inserting a pass");
  }
  sqlite3_finalize(s);
  return st;
}

static mp_status db_insert_fusions(db_run *r, const mp_pass_report *pr) {
  static const char sql[] =
      "INSERT INTO fusion (run_id, seq, pass, kind, op, head_type, absorbed, "
      "absorbed_ops, intermediates, steps, intermediate_bytes, saved_bytes, "
      "at_peak, registers, spills, capped) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  sqlite3_stmt *s = NULL;
  mp_status st = db_prepare(r, sql, &s);
  for (size_t i = 0; st == MP_OK && i < mp_pass_report_fusions(pr); i++) {
    const mp_fusion *f = mp_pass_report_fusion(pr, i);
    int k = 1;
    sqlite3_bind_int64(s, k++, r->run_id);
    db_size(s, k++, i);
    db_text(s, k++, mp_pass_name(f->pass));
    db_text(s, k++, mp_fusion_kind_name(f->kind));
    db_text(s, k++, f->op);
    db_text(s, k++, f->head_type);
    db_text(s, k++, f->absorbed);
    db_text(s, k++, f->absorbed_ops);
    db_text(s, k++, f->intermediates);
    sqlite3_bind_int64(s, k++, f->steps);
    db_size(s, k++, f->intermediate_bytes);
    db_size(s, k++, f->saved_bytes);
    sqlite3_bind_int(s, k++, f->at_peak);
    if (f->spills >= 0) {
      sqlite3_bind_int64(s, k++, f->registers);
      sqlite3_bind_int64(s, k++, f->spills);
      sqlite3_bind_int(s, k++, f->capped);
    } else {
      for (int j = 0; j < 3; j++) sqlite3_bind_null(s, k++);
    }
    st = db_row(r, s, "inserting a fusion");
  }
  sqlite3_finalize(s);
  return st;
}

/* Every graph tensor and the buffer (tensor row) that holds it. */
static mp_status db_insert_tensor_buffers(db_run *r) {
  static const char sql[] =
      "INSERT INTO tensor_buffer (run_id, tensor, tensor_idx, rule, offset) "
      "VALUES (?,?,?,?,?)";
  const mp_graph *g = mp_model_graph(r->m);
  sqlite3_stmt *s = NULL;
  mp_status st = g ? db_prepare(r, sql, &s) : MP_OK;
  for (size_t t = 0; st == MP_OK && g && t < mp_graph_tensor_count(g); t++) {
    sqlite3_bind_int64(s, 1, r->run_id);
    db_text(s, 2, mp_graph_tensor(g, t)->name);
    db_size(s, 3, mp_model_tensor_buffer(r->m, t));
    db_text(s, 4, mp_alias_rule_name(mp_model_tensor_rule(r->m, t)));
    sqlite3_bind_int64(s, 5, (sqlite3_int64)mp_model_tensor_offset(r->m, t));
    st = db_row(r, s, "inserting a tensor buffer");
  }
  sqlite3_finalize(s);
  return st;
}

static mp_status db_insert_search(db_run *r, const mp_schedule_info *info) {
  static const char sql[] =
      "INSERT INTO schedule (run_id, peak_bytes, segments, largest_segment, "
      "bound_segments, exact_segments, improved_segments, states, optimal, "
      "work, work_budget, work_hit, time_hit, ms, branch_bound_segments, "
      "branch_improved_segments, optimal_by_bound, bound_bytes, "
      "move_improved_segments) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  sqlite3_stmt *s = NULL;
  mp_status st = db_prepare(r, sql, &s);
  if (st != MP_OK) return st;
  int k = 1;
  sqlite3_bind_int64(s, k++, r->run_id);
  size_t counts[] = {
      info->peak,           info->segments,    info->largest_segment,
      info->bound_segments, info->dp_segments, info->dp_improved,
      info->dp_states};
  for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
    db_size(s, k++, counts[i]);
  }
  sqlite3_bind_int(s, k++, info->exact);
  sqlite3_bind_int64(s, k++, (sqlite3_int64)info->work);
  sqlite3_bind_int64(s, k++, (sqlite3_int64)info->work_budget);
  sqlite3_bind_int(s, k++, info->work_hit);
  sqlite3_bind_int(s, k++, info->time_hit);
  sqlite3_bind_double(s, k++, info->ms);
  db_size(s, k++, info->branch_segments);
  db_size(s, k++, info->branch_improved);
  sqlite3_bind_int(s, k++, info->peak_bound);
  db_size(s, k++, info->bound);
  db_size(s, k++, info->move_improved);
  st = db_row(r, s, "inserting the schedule");
  sqlite3_finalize(s);
  return st;
}

static mp_status db_insert_schedule(db_run *r) {
  static const char sql[] =
      "INSERT INTO schedule_candidate (run_id, seq, name, peak_bytes, chosen) "
      "VALUES (?,?,?,?,?)";
  const mp_schedule_info *info = mp_model_schedule_info(r->m);
  if (!info || info->used != MP_ORDER_MEMORY) return MP_OK;
  sqlite3_stmt *s = NULL;
  mp_status st = r->h->version >= 9 ? db_insert_search(r, info) : MP_OK;
  if (st == MP_OK) st = db_prepare(r, sql, &s);
  for (size_t k = 0; st == MP_OK && k <= info->n_cand; k++) {
    bool result = k == info->n_cand;
    sqlite3_bind_int64(s, 1, r->run_id);
    db_size(s, 2, k);
    db_text(s, 3, result ? "memory" : info->cand[k].name);
    db_size(s, 4, result ? info->peak : info->cand[k].peak);
    sqlite3_bind_int(s, 5, result);
    st = db_row(r, s, "inserting a schedule candidate");
  }
  sqlite3_finalize(s);
  return st;
}

/* Binds a count, or NULL when it is negative (no band or column). */
static void db_int_or_null(sqlite3_stmt *s, int k, int64_t v) {
  if (v < 0) {
    sqlite3_bind_null(s, k);
  } else {
    sqlite3_bind_int64(s, k, v);
  }
}

static mp_status db_insert_tile(db_run *r, const mp_tile_info *t) {
  static const char sql[] =
      "INSERT INTO tile (run_id, outcome, cuts, candidates, budget_reached, "
      "lower_bound_before, lower_bound_after, cut, cut_op, stage_ops, bands, "
      "columns, height, width, graph_macs, extra_macs, lower_bound_with, "
      "lower_bound_without, ranked, picked, built, lower_bound_picked_file, "
      "lower_bound_first_file) VALUES "
      "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  static const char sql_op[] =
      "INSERT INTO tile_op (run_id, step, op, role, origin, band, col) "
      "VALUES (?,?,?,?,?,?,?)";
  static const char sql_x[] =
      "INSERT INTO tile_export (run_id, seq, tensor) VALUES (?,?,?)";
  sqlite3_stmt *s = NULL;
  mp_status st = db_prepare(r, sql, &s);
  if (st == MP_OK) {
    int k = 1;
    sqlite3_bind_int64(s, k++, r->run_id);
    db_text(s, k++, mp_tile_outcome_name(t->outcome));
    sqlite3_bind_int64(s, k++, t->cuts);
    db_size(s, k++, t->candidates);
    sqlite3_bind_int(s, k++, t->budget_reached);
    db_size(s, k++, t->lb_before);
    if (t->cut) {
      db_size(s, k++, t->lb_after);
      db_text(s, k++, t->cut);
      db_text(s, k++, t->cut_op);
      sqlite3_bind_int64(s, k++, t->stage_ops);
      sqlite3_bind_int64(s, k++, t->bands);
      sqlite3_bind_int64(s, k++, t->columns);
      sqlite3_bind_int64(s, k++, t->height);
      sqlite3_bind_int64(s, k++, t->width);
      sqlite3_bind_double(s, k++, t->graph_macs);
      sqlite3_bind_double(s, k++, t->extra_macs);
    } else {
      for (int j = 0; j < 10; j++) sqlite3_bind_null(s, k++);
    }
    if (t->lb_with) {
      db_size(s, k++, t->lb_with);
      db_size(s, k++, t->lb_without);
    } else {
      for (int j = 0; j < 2; j++) sqlite3_bind_null(s, k++);
    }
    if (t->picks > 1) {
      sqlite3_bind_int64(s, k++, t->picks);
      sqlite3_bind_int64(s, k++, t->picked);
      sqlite3_bind_int64(s, k++, t->pick);
      db_size(s, k++, t->lb_pick);
      db_size(s, k++, t->lb_first);
    } else {
      for (int j = 0; j < 5; j++) sqlite3_bind_null(s, k++);
    }
    st = db_row(r, s, "inserting the tile record");
  }
  sqlite3_finalize(s);
  s = NULL;
  if (st == MP_OK && t->n_exports && r->h->version >= 11)
    st = db_prepare(r, sql_x, &s);
  for (uint32_t k = 0; st == MP_OK && s && k < t->n_exports; k++) {
    sqlite3_bind_int64(s, 1, r->run_id);
    sqlite3_bind_int64(s, 2, k);
    db_text(s, 3, t->exports[k]);
    st = db_row(r, s, "inserting a tile export");
  }
  sqlite3_finalize(s);
  s = NULL;
  const mp_graph *g = mp_model_graph(r->m);
  if (st == MP_OK && t->n_ops && g && r->step_of)
    st = db_prepare(r, sql_op, &s);
  for (size_t k = 0; st == MP_OK && s && k < t->n_ops; k++) {
    const mp_tile_op *o = &t->ops[k];
    int32_t i;
    if (!mp_graph_find_op(g, o->op, &i)) continue; /* fused away */
    sqlite3_bind_int64(s, 1, r->run_id);
    sqlite3_bind_int64(s, 2, r->step_of[i]);
    db_text(s, 3, o->op);
    db_text(s, 4, mp_tile_role_name(o->role));
    db_text(s, 5, o->origin);
    db_int_or_null(s, 6, o->band);
    db_int_or_null(s, 7, o->column);
    st = db_row(r, s, "inserting a tile op");
  }
  sqlite3_finalize(s);
  return st;
}

static mp_status db_insert_what_if(db_run *r) {
  static const char sql[] =
      "INSERT INTO what_if (run_id, seq, setting, passes, order_name, "
      "lower_bound_bytes, tile_outcome, tile_cut, tile_bands, tile_columns, "
      "tile_extra_macs, strategy, activation_arena_bytes, "
      "proven_lower_bound_bytes, arena_bytes) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  const mp_report_meta *m = r->meta;
  if (!m || !m->n_what_if || r->h->version < 8) return MP_OK;
  sqlite3_stmt *s = NULL;
  mp_status st = db_prepare(r, sql, &s);
  for (size_t k = 0; st == MP_OK && k < m->n_what_if; k++) {
    const mp_report_what_if *w = &m->what_if[k];
    const mp_tile_info *t = w->tile;
    int i = 1;
    sqlite3_bind_int64(s, i++, r->run_id);
    db_size(s, i++, k);
    db_text(s, i++, w->setting);
    db_text(s, i++, w->passes);
    db_text(s, i++, w->order);
    db_size(s, i++, w->lower_bound_bytes);
    db_text(s, i++, t ? mp_tile_outcome_name(t->outcome) : NULL);
    if (t && t->outcome == MP_TILE_KEPT) {
      db_text(s, i++, t->cut);
      sqlite3_bind_int64(s, i++, t->bands);
      sqlite3_bind_int64(s, i++, t->columns);
      sqlite3_bind_double(s, i++, t->extra_macs);
    } else {
      for (int j = 0; j < 4; j++) sqlite3_bind_null(s, i++);
    }
    db_text(s, i++, w->strategy);
    if (w->strategy) {
      db_size(s, i++, w->activation_arena_bytes);
    } else {
      sqlite3_bind_null(s, i++);
    }
    if (w->strategy && w->proven_lb_bytes) {
      db_size(s, i++, w->proven_lb_bytes);
    } else {
      sqlite3_bind_null(s, i++);
    }
    db_size(s, i++, w->arena_bytes);
    st = db_row(r, s, "inserting a what-if row");
  }
  sqlite3_finalize(s);
  return st;
}

static mp_status db_insert_passes(db_run *r) {
  const mp_pass_report *pr = mp_model_pass_report(r->m);
  mp_status st = MP_OK;
  /* A handle opened at an older version (tests of the migrations) has
   * neither the tables nor the columns. */
  if (r->h->version < 3) return MP_OK;
  if (pr) st = db_insert_pass_rows(r, pr);
  if (st == MP_OK && pr) st = db_insert_fusions(r, pr);
  if (st == MP_OK && pr && mp_pass_report_tile(pr) && r->h->version >= 8) {
    st = db_insert_tile(r, mp_pass_report_tile(pr));
  }
  if (st == MP_OK) st = db_insert_tensor_buffers(r);
  if (st == MP_OK) st = db_insert_schedule(r);
  if (st == MP_OK) st = db_insert_what_if(r);
  return st;
}

static mp_status db_step_of(db_run *r) {
  const mp_graph *g = mp_model_graph(r->m);
  if (!g) return MP_OK;
  size_t n_ops = mp_graph_op_count(g);
  r->step_of = mp_calloc(r->h->alloc, n_ops ? n_ops : 1, sizeof *r->step_of);
  if (!r->step_of) {
    return mp_error_set(r->err, MP_ERR_NOMEM, "%s: out of memory", r->h->path);
  }
  for (size_t k = 0; k < n_ops; k++) {
    r->step_of[mp_model_step_op_index(r->m, k)] = (uint32_t)k;
  }
  return MP_OK;
}

/* The events of a verification run (mplan verify), in order. */
static mp_status db_insert_events(db_run *r) {
  static const char sql[] =
      "INSERT INTO verification_event (run_id, seq, kind, tensor, op, step, "
      "byte_first, byte_last, detail) VALUES (?,?,?,?,?,?,?,?,?)";
  if (!r->meta || !r->meta->verified) return MP_OK;
  sqlite3_stmt *s = NULL;
  mp_status st = db_prepare(r, sql, &s);
  for (size_t k = 0; st == MP_OK && k < r->meta->n_events; k++) {
    const mp_report_event *e = &r->meta->events[k];
    sqlite3_bind_int64(s, 1, r->run_id);
    db_size(s, 2, k);
    db_text(s, 3, e->kind);
    db_text(s, 4, e->tensor);
    db_text(s, 5, e->op);
    sqlite3_bind_int64(s, 6, e->step);
    db_size(s, 7, (size_t)e->byte_first);
    db_size(s, 8, (size_t)e->byte_last);
    db_text(s, 9, e->detail);
    st = db_row(r, s, "inserting a verification event");
  }
  sqlite3_finalize(s);
  return st;
}

/* Where the verification ran and the ops on scalar kernels (a record
 * without a target says nothing of it). */
static mp_status db_insert_target(db_run *r) {
  static const char sql_t[] =
      "INSERT INTO verification_target (run_id, arch, kernels, vlen) "
      "VALUES (?,?,?,?)";
  static const char sql_s[] =
      "INSERT INTO verification_scalar_op (run_id, seq, op, op_type, kernel, "
      "dtype) VALUES (?,?,?,?,?,?)";
  const mp_report_meta *m = r->meta;
  if (!m || !m->verified || !m->target_arch) return MP_OK;
  sqlite3_stmt *s = NULL;
  mp_status st = db_prepare(r, sql_t, &s);
  if (st == MP_OK) {
    sqlite3_bind_int64(s, 1, r->run_id);
    db_text(s, 2, m->target_arch);
    db_text(s, 3, m->target_kernels ? m->target_kernels : "scalar");
    sqlite3_bind_int64(s, 4, m->target_vlen);
    st = db_row(r, s, "inserting the verification target");
  }
  sqlite3_finalize(s);
  s = NULL;
  if (st == MP_OK) st = db_prepare(r, sql_s, &s);
  for (size_t k = 0; st == MP_OK && k < m->n_scalar_ops; k++) {
    const mp_report_scalar_op *o = &m->scalar_ops[k];
    sqlite3_bind_int64(s, 1, r->run_id);
    db_size(s, 2, k);
    db_text(s, 3, o->op);
    db_text(s, 4, o->type);
    db_text(s, 5, o->kernel);
    db_text(s, 6, o->dtype);
    st = db_row(r, s, "inserting a scalar-kernel op");
  }
  sqlite3_finalize(s);
  return st;
}

mp_status mp_report_db_stage(mp_report_db *db, const mp_model *m,
                             const mp_plan *plan, const mp_report_meta *meta,
                             int64_t *run_id, mp_error *err) {
  db_run r = {db, m, plan, mp_plan_problem(plan), meta, 0, NULL, err};
  if (db->staged) {
    return mp_error_set(err, MP_ERR_INTERNAL,
                        "%s: a run is staged already; commit it first",
                        db->path);
  }
  mp_status st = db_exec(db, "BEGIN IMMEDIATE", "locking for a new run", err);
  if (st != MP_OK) return st;
  db->staged = true;
  st = db_step_of(&r);
  if (st == MP_OK) st = db_insert_run(&r);
  if (st == MP_OK) st = db_insert_tensors(&r);
  if (st == MP_OK) st = db_insert_timeline(&r);
  if (st == MP_OK) st = db_insert_passes(&r);
  if (st == MP_OK) st = db_insert_events(&r);
  if (st == MP_OK) st = db_insert_target(&r);
  mp_free(db->alloc, r.step_of);
  if (st != MP_OK) {
    sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
    db->staged = false;
    return st;
  }
  if (run_id) *run_id = r.run_id;
  return MP_OK;
}

mp_status mp_report_db_commit(mp_report_db *db, mp_error *err) {
  if (!db->staged) {
    return mp_error_set(err, MP_ERR_INTERNAL, "%s: no staged run to commit",
                        db->path);
  }
  mp_status st = db_exec(db, "COMMIT", "committing the run", err);
  if (st != MP_OK) sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
  db->staged = false;
  return st;
}

mp_status mp_report_db_append(mp_report_db *db, const mp_model *m,
                              const mp_plan *plan, const mp_report_meta *meta,
                              int64_t *run_id, mp_error *err) {
  mp_status st = mp_report_db_stage(db, m, plan, meta, run_id, err);
  if (st == MP_OK) st = mp_report_db_commit(db, err);
  return st;
}
