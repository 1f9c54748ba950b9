/*
 * report_util.h -- small queries every report needs. Private to reports/.
 */
#ifndef MPLAN_REPORT_UTIL_H
#define MPLAN_REPORT_UTIL_H

#include "mplan/buf.h"
#include "mplan/model.h"
#include "mplan/plan.h"

/* Fills idx (room for every buffer) with the activation buffers live at
 * time t, largest padded size first (ties by index); returns the count. */
size_t report_live_at(const mp_problem *p, int64_t t, size_t *idx);

/* The idle bytes of buffer b at time t: for an activation buffer of a
 * graph live at t, its size minus the bytes holding a live tensor
 * (mp_model_buffer_in_use, which fills *in_use, *next and *writer; each
 * may be NULL); 0 for any other buffer, which leaves them unset. */
size_t report_idle(const mp_model *m, const mp_problem *p, size_t b, int64_t t,
                   size_t *in_use, int64_t *next, const char **writer);

/* "step 5" for step-based models, "t=5" for minimalloc times. */
const char *report_time_word(const mp_model *m);

/* "'b2_dw' (Conv)" for a step with a known op, "" otherwise. */
void report_step_op(const mp_model *m, int64_t t, char *buf, size_t cap);

/* What an op of the tile pass computes (mplan/passes.h: role, origin,
 * band, column; -1 for none) into buf: "patch (1, 0) of op 'b2_expand'",
 * "the part of 'input' patch (0, 1) reads", "band 1 of 'T'", "the
 * patches of 'T'". */
void report_patch_what(char *buf, size_t cap, const char *role,
                       const char *origin, int64_t band, int64_t column);

/* The same for the op model m runs at step t, or "" when it is not one
 * of the tile pass's. */
void report_step_patch(const mp_model *m, int64_t t, char *buf, size_t cap);

/* 100 * part / whole, 0 when whole is 0. */
double report_pct(size_t part, size_t whole);

/* Start of the activation tier: the end of the resident tiers, or the
 * lowest activation offset if one lies below it (adopted plans). */
size_t report_activation_base(const mp_plan *plan);

/* Sets mask[i] for every activation buffer live at some time of some peak
 * interval (mask has room for every buffer); returns how many were set.
 * O(n log P) by binary search over the sorted peak segments. */
size_t report_peak_mask(const mp_plan *plan, bool *mask);

/* The graph tensor naming buffer i (its root: a buffer may hold several
 * tensors, mplan/alias.h), or NULL for problem and plan files. */
const mp_tensor *report_tensor(const mp_model *m, size_t i);

/* Buffer i holds a graph output (graphs only). */
bool report_holds_output(const mp_model *m, size_t i);

/* Appends to out what else buffer i holds besides its root tensor and
 * why: "b (in place (concat slice) at +2048), c (own)". Appends nothing
 * for a buffer of one tensor; returns how many it listed. */
size_t report_members(const mp_model *m, size_t i, mp_buf *out);

/* A per-buffer kind word: the graph tensor kind ("weight", "output"...)
 * for graphs, the buffer class otherwise. */
const char *report_kind(const mp_model *m, size_t i);

/* Buffer i's shape as "[1,112,112,32]" (graphs), or "" when unknown. */
void report_shape(const mp_model *m, size_t i, char *buf, size_t cap);

/* The dtype name of buffer i, or NULL when unknown. */
const char *report_dtype(const mp_model *m, size_t i);

/* The current UTC time as "2025-01-31T12:00:00Z" into buf (cap >= 21). */
void report_utc_now(char *buf, size_t cap);

#endif /* MPLAN_REPORT_UTIL_H */
