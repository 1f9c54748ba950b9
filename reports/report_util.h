/*
 * report_util.h -- small queries every report needs. Private to reports/.
 */
#ifndef MPLAN_REPORT_UTIL_H
#define MPLAN_REPORT_UTIL_H

#include "mplan/model.h"
#include "mplan/plan.h"

/* Fills idx (room for every buffer) with the activation buffers live at
 * time t, largest padded size first (ties by index); returns the count. */
size_t report_live_at(const mp_problem *p, int64_t t, size_t *idx);

/* "step 5" for step-based models, "t=5" for minimalloc times. */
const char *report_time_word(const mp_model *m);

/* "'b2_dw' (Conv)" for a step with a known op, "" otherwise. */
void report_step_op(const mp_model *m, int64_t t, char *buf, size_t cap);

/* 100 * part / whole, 0 when whole is 0. */
double report_pct(size_t part, size_t whole);

/* Start of the activation tier: the end of the resident tiers, or the
 * lowest activation offset if one lies below it (adopted plans). */
size_t report_activation_base(const mp_plan *plan);

#endif /* MPLAN_REPORT_UTIL_H */
