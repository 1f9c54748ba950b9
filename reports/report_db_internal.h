/*
 * report_db_internal.h -- for tests of the schema migrations only.
 */
#ifndef MPLAN_REPORT_DB_INTERNAL_H
#define MPLAN_REPORT_DB_INTERNAL_H

#include "mplan/report_db.h"

/* mp_report_db_open, migrating no further than version (1..current), so
 * that a test can make an old database and watch it being upgraded. */
mp_status report_db_open_version(const char *path, const mp_alloc *a,
                                 int version, mp_report_db **out,
                                 mp_error *err);

#endif /* MPLAN_REPORT_DB_INTERNAL_H */
