/*
 * report_util.c -- shared report queries.
 *
 * Invariants:
 *   1. Orders are total (ties by index): the same plan always renders the
 *      same text, byte for byte, which golden tests rely on.
 */
#include "report_util.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct util_item {
  size_t padded;
  size_t index;
} util_item;

static int util_item_cmp(const void *a, const void *b) {
  const util_item *x = a, *y = b;
  if (x->padded != y->padded) return x->padded > y->padded ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

size_t report_live_at(const mp_problem *p, int64_t t, size_t *idx) {
  size_t n = 0;
  for (size_t i = 0; i < mp_problem_count(p); i++) {
    const mp_buffer *b = mp_problem_buffer(p, i);
    if (b->cls == MP_CLASS_ACTIVATION && b->first <= t && t <= b->last) {
      idx[n++] = i;
    }
  }
  /* Insertion sort on (size desc, index): live sets are small. */
  for (size_t i = 1; i < n; i++) {
    size_t v = idx[i], j = i;
    util_item kv = {mp_problem_buffer(p, v)->padded, v};
    while (j > 0) {
      util_item kj = {mp_problem_buffer(p, idx[j - 1])->padded, idx[j - 1]};
      if (util_item_cmp(&kj, &kv) <= 0) break;
      idx[j] = idx[j - 1];
      j--;
    }
    idx[j] = v;
  }
  return n;
}

const char *report_time_word(const mp_model *m) {
  return mp_model_format_of(m) == MP_FORMAT_MINIMALLOC ? "t" : "step";
}

void report_step_op(const mp_model *m, int64_t t, char *buf, size_t cap) {
  const char *op = t >= 0 ? mp_model_step_op(m, (size_t)t) : NULL;
  const char *type = t >= 0 ? mp_model_step_type(m, (size_t)t) : NULL;
  if (!op) {
    snprintf(buf, cap, "%s", "");
  } else if (type && *type) {
    snprintf(buf, cap, "'%s' (%s)", op, type);
  } else {
    snprintf(buf, cap, "'%s'", op);
  }
}

double report_pct(size_t part, size_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

size_t report_activation_base(const mp_plan *plan) {
  const mp_problem *p = mp_plan_problem(plan);
  const mp_placement *pl = mp_plan_placements(plan);
  size_t base = mp_plan_summary_of(plan)->resident_bytes;
  for (size_t i = 0; i < mp_problem_count(p); i++) {
    if (mp_problem_buffer(p, i)->cls == MP_CLASS_ACTIVATION &&
        pl[i].offset < base) {
      base = pl[i].offset;
    }
  }
  return base;
}
