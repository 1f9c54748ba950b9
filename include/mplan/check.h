/*
 * mplan/check.h -- the CI gate: each model's arena checked against a
 * budget and against its baseline with a two-sided tolerance band, many
 * models at once, reported as text, JSON, JUnit XML and Markdown.
 *
 * Checks per model:
 *   budget   -- the total arena (all regions) is at most the budget;
 *   baseline -- every region's arena lies within the band
 *               [old - w, old + w] with w = floor(old * tolerance): an
 *               unexpected saving fails as much as a growth, so that
 *               baselines stay current (TFLite Micro's arena tests do the
 *               same). A region only one side has fails.
 * A model that cannot be planned, and a baseline that is missing, corrupt
 * or was made with other options, are errors (not failures): the gate
 * cannot judge them.
 */
#ifndef MPLAN_CHECK_H
#define MPLAN_CHECK_H

#include "mplan/diff.h"

typedef enum mp_verdict {
  MP_VERDICT_PASS = 0,
  MP_VERDICT_FAIL,
  MP_VERDICT_ERROR
} mp_verdict;

/* "pass", "fail", "error". */
const char *mp_verdict_name(mp_verdict v);

typedef struct mp_check_opts {
  bool has_budget;
  size_t budget_bytes;
  bool has_baseline;          /* every model is checked against a baseline */
  uint32_t tolerance_ppm;     /* the band's half-width, parts per million of
                                 the baseline (3% = 30000) */
  bool update;                /* baselines are being written, not checked */
  const char *baseline_where; /* "baselines/" or a file, for headings;
                                 borrowed for the report's lifetime */
} mp_check_opts;

/* The half-width of the band around old: floor(old * ppm / 10^6),
 * computed exactly (saturating at SIZE_MAX). */
size_t mp_check_band(size_t old, uint32_t ppm);

/* Parses a tolerance "3%", "0.5%" or "3" (percent) into parts per
 * million; at most 4 decimals, at most 1000%. Errors name the text. */
mp_status mp_check_parse_tolerance(const char *text, uint32_t *ppm,
                                   mp_error *err);

typedef struct mp_check_report mp_check_report;

/* Returns an owned, empty report (release with mp_check_report_destroy).
 * Copies o; borrows a for the report's lifetime. */
mp_status mp_check_report_create(const mp_check_opts *o, const mp_alloc *a,
                                 mp_check_report **out, mp_error *err);
void mp_check_report_destroy(mp_check_report *r);

/* A model that could not be loaded or planned (an error entry). Copies
 * model and message. */
mp_status mp_check_report_error(mp_check_report *r, const char *model,
                                const char *message, mp_error *err);

/* A planned model. Takes now (the snapshot of its plan) and base (its
 * baseline, NULL when none was read): both are owned by the report from
 * this call on, also when it fails. Copies model, baseline_path (the
 * baseline file; NULL without a baseline check) and base_error (why the
 * baseline could not be used, NULL when it could). With opts.update the
 * baseline check records the rewrite instead of judging the band. */
mp_status mp_check_report_add(mp_check_report *r, const char *model,
                              mp_snapshot *now, mp_snapshot *base,
                              const char *baseline_path, const char *base_error,
                              mp_error *err);

/* A hint for entry i (in the order added): one line saying what would
 * bring its arena under the budget (mplan check plans a model over
 * budget again under other settings). Copies hint. */
mp_status mp_check_report_hint(mp_check_report *r, size_t i, const char *hint,
                               mp_error *err);

/* The other settings the hint compared (explain's what-if): each one's
 * flags and the whole arena it gives; the renderers say which fit the
 * budget. For entry i (in the order added); copies them. */
typedef struct mp_check_setting {
  const char *setting; /* "--passes all,tile --order memory" */
  size_t arena_bytes;
} mp_check_setting;

mp_status mp_check_report_settings(mp_check_report *r, size_t i,
                                   const mp_check_setting *s, size_t n,
                                   mp_error *err);

typedef struct mp_check_counts {
  size_t models, passed, failed, errors;
} mp_check_counts;

const mp_check_counts *mp_check_report_counts(const mp_check_report *r);

/* The verdict of model i's entry (in the order added) and of the whole
 * report: error if any entry is an error, else fail if any failed. */
mp_verdict mp_check_report_entry_verdict(const mp_check_report *r, size_t i);
mp_verdict mp_check_report_verdict(const mp_check_report *r);

/* Renderers; each appends to out. Text: a line per model and check with
 * why a failing arena changed. JSON: {"mplan": "check/1"}. JUnit: one
 * <testsuite> per model, one <testcase> per check (XML-escaped, valid
 * UTF-8). Markdown: a summary table, then each model's details collapsed
 * (<details>), for $GITHUB_STEP_SUMMARY or a merge-request comment. */
mp_status mp_check_report_text(const mp_check_report *r, mp_buf *out,
                               mp_error *err);
mp_status mp_check_report_json(const mp_check_report *r, mp_buf *out,
                               mp_error *err);
mp_status mp_check_report_junit(const mp_check_report *r, mp_buf *out,
                                mp_error *err);
mp_status mp_check_report_markdown(const mp_check_report *r, mp_buf *out,
                                   mp_error *err);

#endif /* MPLAN_CHECK_H */
