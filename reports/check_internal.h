/*
 * check_internal.h -- the check report's entries, shared by check.c
 * (verdicts) and check_render.c (text, JSON, JUnit, Markdown). Private to
 * reports/.
 */
#ifndef MPLAN_CHECK_INTERNAL_H
#define MPLAN_CHECK_INTERNAL_H

#include "mplan/check.h"

/* A setting of the what-if, owned by its entry. */
typedef struct ck_setting {
  char *setting;
  size_t arena_bytes;
} ck_setting;

typedef struct ck_entry {
  char *model;
  char *error; /* the model could not be planned: nothing else is set */
  mp_snapshot *now;
  mp_snapshot *base; /* the baseline read, or NULL */
  mp_diff *diff;     /* base -> now, when base is set */
  char *baseline_path;
  bool has_budget, has_baseline;
  mp_verdict budget, baseline, verdict;
  char *budget_msg;     /* one line */
  char *hint;           /* what would fit the budget (one line), or NULL */
  ck_setting *settings; /* what the hint compared (owned strings) */
  size_t n_settings;
  char *baseline_msg; /* one line; the error when the baseline is unusable */
  bool baseline_error;
} ck_entry;

struct mp_check_report {
  const mp_alloc *alloc;
  mp_check_opts opts;
  ck_entry *entries;
  size_t n, cap;
  mp_check_counts counts;
};

/* "3%", "0.5%", "0%" for a tolerance in ppm, into buf (>= 32 bytes). */
void ck_fmt_tolerance(char *buf, size_t cap, uint32_t ppm);

/* true when the entry's arena differs from its baseline in anything a
 * reader wants to see (a figure, a tensor, the peak or the order). */
bool ck_changed(const ck_entry *e);

#endif /* MPLAN_CHECK_INTERNAL_H */
