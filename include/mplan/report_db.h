/*
 * mplan/report_db.h -- the SQLite run history (docs/report-schema.md).
 *
 * One database accumulates runs. Each run is appended in ONE transaction:
 * a crash, an error or a second writer never leaves half a run, and no run
 * is ever updated or deleted. The database is in WAL mode with a busy
 * timeout, so several CI jobs appending to one file all land. The schema
 * is versioned (table schema_version) and migrated forward on open; a
 * database written by a newer mplan is refused, never downgraded.
 *
 * Life cycle: open -> stage (BEGIN IMMEDIATE + every row) -> commit, or
 * destroy (rolls a staged run back). Staging and committing are separate
 * so that a caller can write its other files between the two and commit
 * only when all of them succeeded.
 *
 * SQLite manages its own memory; mplan's allocator covers mplan's part.
 */
#ifndef MPLAN_REPORT_DB_H
#define MPLAN_REPORT_DB_H

#include "mplan/report.h"

/* The schema version this mplan writes (and migrates older files to). */
#define MP_REPORT_DB_VERSION 14

typedef struct mp_report_db mp_report_db;

/* Opens or creates the database at path, sets WAL mode and a busy timeout
 * and migrates the schema to MP_REPORT_DB_VERSION. Fails naming the file
 * for a file that is not an SQLite database, a database without mplan's
 * schema_version table, or a newer schema. Copies path; borrows a for the
 * handle's lifetime. Returns an owned handle (mp_report_db_destroy). */
mp_status mp_report_db_open(const char *path, const mp_alloc *a,
                            mp_report_db **out, mp_error *err);

/* Rolls back a staged, uncommitted run and closes. NULL is a no-op. */
void mp_report_db_destroy(mp_report_db *db);

/* The schema version of the open database. */
int mp_report_db_version(const mp_report_db *db);

/* Begins the write transaction and inserts the run and all of its rows:
 * tensors, steps, placements, live sets, peak intervals. *run_id (when
 * not NULL) receives the new run's id. Nothing is visible to readers
 * before mp_report_db_commit. Borrows everything; meta may be NULL. */
mp_status mp_report_db_stage(mp_report_db *db, const mp_model *m,
                             const mp_plan *plan, const mp_report_meta *meta,
                             int64_t *run_id, mp_error *err);

/* Commits the staged run. */
mp_status mp_report_db_commit(mp_report_db *db, mp_error *err);

/* Stage and commit in one call. */
mp_status mp_report_db_append(mp_report_db *db, const mp_model *m,
                              const mp_plan *plan, const mp_report_meta *meta,
                              int64_t *run_id, mp_error *err);

#endif /* MPLAN_REPORT_DB_H */
