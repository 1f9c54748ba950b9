/*
 * import.h -- the readers behind mp_model_load. Private to the analyzer.
 *
 * JSON readers receive the parsed tree so that the document is parsed once
 * and its "mplan" field decides the reader. Every reader names the file,
 * the element and the problem in its errors, and returns nothing partial.
 */
#ifndef MPLAN_IMPORT_H
#define MPLAN_IMPORT_H

#include <cJSON.h>

#include "mplan/graph.h"
#include "mplan/plan.h"
#include "mplan/problem.h"

/* graph/1 -> a linked graph (dims unbound, sizes unresolved). */
mp_status mp_import_graph_json(const char *file, const cJSON *root,
                               const mp_alloc *a, mp_graph **out,
                               mp_error *err);

/* lifetimes/1 -> a sealed problem. min_align raises every alignment. */
mp_status mp_import_lifetimes(const char *file, const cJSON *root,
                              size_t min_align, const mp_alloc *a,
                              mp_problem **out, mp_error *err);

/* minimalloc CSV -> a sealed problem (half-open [lower, upper) converted to
 * inclusive [lower, upper - 1]). */
mp_status mp_import_minimalloc(const char *file, const char *text, size_t len,
                               size_t min_align, const mp_alloc *a,
                               mp_problem **out, mp_error *err);

/* What a plan/1 file carries besides the problem: placements, region size
 * and the names that let a report explain it without the model. */
typedef struct mp_plan_file {
  mp_placement *placements; /* one per buffer */
  size_t arena_bytes;
  char *strategy;
  char *order;
  char *model;
  double plan_ms;
  size_t n_steps;
  char **step_op;      /* n_steps op names, or NULL */
  char **step_type;    /* n_steps op types, or NULL */
  char **buf_producer; /* per buffer, entries may be NULL */
  char **buf_consumer; /* per buffer, entries may be NULL */
  size_t n_buffers;    /* length of the three per-buffer arrays */
  size_t n_regions;    /* at least one: "arena" when the file has none */
  char **region_names;
  size_t *region_capacity; /* 0: unbounded */
  size_t *region_limit;    /* what validate holds each region to: its
                              capacity, else its stated size */
} mp_plan_file;

/* plan/1 -> a sealed problem and its placements. */
mp_status mp_import_plan(const char *file, const cJSON *root, const mp_alloc *a,
                         mp_problem **problem, mp_plan_file *pf, mp_error *err);
void mp_plan_file_release(mp_plan_file *pf, const mp_alloc *a);

/* pipeline/1 -> one linked, resolved graph merging the member models
 * (tensors and ops named MODEL/NAME; connected inputs replaced by the
 * tensors feeding them). Loads the members with mp_model_load. */
mp_status mp_import_pipeline(const char *file, const cJSON *root,
                             const mp_alloc *a, mp_graph **out, mp_error *err);

#endif /* MPLAN_IMPORT_H */
