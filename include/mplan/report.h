/*
 * mplan/report.h -- turning a model and its plan into things people read.
 *
 * Renderers append to an mp_buf; they never print or write files
 * themselves. The plan must have been made from the model's problem.
 */
#ifndef MPLAN_REPORT_H
#define MPLAN_REPORT_H

#include "mplan/buf.h"
#include "mplan/model.h"
#include "mplan/plan.h"

typedef struct mp_report_opts {
  size_t top;       /* rows in ranked tables; 0: 10 */
  size_t map_width; /* columns of the memory map; 0: 64 */
  size_t map_rows;  /* most rows in the memory map; 0: 200 */
} mp_report_opts;

/* A few lines: model, arena breakdown, lower bound, overhead, strategy. */
mp_status mp_report_summary(const mp_model *m, const mp_plan *plan, mp_buf *out,
                            mp_error *err);

/* The plan as a plan/1 JSON document (DESIGN.md). */
mp_status mp_report_plan_json(const mp_model *m, const mp_plan *plan,
                              mp_buf *out, mp_error *err);

/* The peak explanation of seed 001 section 5: the peak interval and its
 * ops, the tensors live there ranked by bytes with why each is alive,
 * alignment waste, and a footer with lower bound, arena and overhead. */
mp_status mp_report_explain(const mp_model *m, const mp_plan *plan,
                            const mp_report_opts *o, mp_buf *out,
                            mp_error *err);

/* An ASCII memory map: a row per step (or per change of the live set for
 * problems whose times are not steps), a glyph per buffer across the
 * activation tier's address range, the live bytes at the end of each row. */
mp_status mp_report_memmap(const mp_model *m, const mp_plan *plan,
                           const mp_report_opts *o, mp_buf *out, mp_error *err);

#endif /* MPLAN_REPORT_H */
