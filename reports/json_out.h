/*
 * json_out.h -- building a cJSON document with one sticky flag. Private
 * to reports/.
 *
 * Every call does nothing once *ok is false, and sets it false when cJSON
 * cannot allocate or the object or array to add to is NULL (an earlier
 * failure). A writer checks *ok once, at the end, instead of after each
 * call.
 */
#ifndef MPLAN_JSON_OUT_H
#define MPLAN_JSON_OUT_H

#include <stdbool.h>

#include <cJSON.h>

#include "mplan/passes.h"
#include "mplan/plan.h"
#include "mplan/report.h"

/* A new object or array as member key of parent; NULL on failure. */
cJSON *rj_obj(bool *ok, cJSON *parent, const char *key);
cJSON *rj_arr(bool *ok, cJSON *parent, const char *key);

/* Members of o: a number, a string (NULL: JSON null), a boolean. */
void rj_num(bool *ok, cJSON *o, const char *key, double v);
void rj_str(bool *ok, cJSON *o, const char *key, const char *v);
void rj_bool(bool *ok, cJSON *o, const char *key, bool v);

/* Appends item to arr, which then owns it (deleted on failure, and when
 * *ok is already false). */
void rj_push(bool *ok, cJSON *arr, cJSON *item);
/* Appends a new object to arr; NULL on failure. */
cJSON *rj_push_obj(bool *ok, cJSON *arr);
void rj_push_num(bool *ok, cJSON *arr, double v);
/* NULL: JSON null. */
void rj_push_str(bool *ok, cJSON *arr, const char *v);

/* The byte figures of a plan summary every summary object has:
 * arena_bytes, lower_bound_bytes, resident_bytes, retained_bytes,
 * activation_peak_bytes, no_reuse_bytes, alignment_waste_bytes. */
void rj_summary_bytes(bool *ok, cJSON *o, const mp_plan_summary *s);

/* The tile pass's record as member key of o (docs/report-schema.md,
 * "passes"."tile"), without its list of ops. */
void rj_tile(bool *ok, cJSON *o, const char *key, const mp_tile_info *t);

/* One what-if row's members into o: setting, passes, order,
 * lower_bound_bytes, arena_bytes, tile (its record) when the tile pass ran, and
 * for a placement row strategy, activation_arena_bytes and
 * proven_lower_bound_bytes (when the search proved one). */
void rj_what_if(bool *ok, cJSON *o, const mp_report_what_if *w);

#endif /* MPLAN_JSON_OUT_H */
