/*
 * diff_internal.h -- pieces of the diff renderers that the check report
 * (check_render.c) reuses. Private to reports/.
 */
#ifndef MPLAN_DIFF_INTERNAL_H
#define MPLAN_DIFF_INTERNAL_H

#include <cJSON.h>

#include "mplan/diff.h"

#define DIFF_FMT 96

/* "+12,288 B (12.00 KiB)", "-512 B", "0 B". Returns buf (DIFF_FMT). */
char *diff_fmt_delta(char *buf, int64_t v);

/* "+1.97%", "-0.50%", "0.00%"; "new" when old is 0 and now is not, "-"
 * when both are 0. Returns buf (DIFF_FMT). */
char *diff_fmt_pct(char *buf, size_t old, size_t now);

/* "resident +0 B, sizes +12,288 B (12.00 KiB), order -4,096 B (4.00 KiB),
 * fragmentation +0 B" for the totals of d. */
void diff_why(const mp_diff *d, mp_buf *out);

/* The largest term of the attribution ("sizes", "order", "resident",
 * "fragmentation"), or NULL when every term is 0. */
const char *diff_main_cause(const mp_diff *d);

/* "1,505,280 B at step 4 ('b2_dw')" for region r of the old (side 0) or
 * new (side 1) snapshot; "no activations" without a peak. */
void diff_peak_where(const mp_diff *d, const mp_diff_region *r, int side,
                     mp_buf *out);

/* "2 grew, 0 shrank, 1 appeared, 0 vanished, 0 moved, 3 lifetime". */
void diff_counts(const mp_diff *d, mp_buf *out);

/* "unchanged (66 ops)", "changed: 2 ops at another step, ...". */
void diff_order_line(const mp_diff *d, mp_buf *out);

/* A line per changed tensor, at most top per kind of change (then "...
 * and N more"), each starting with indent. */
void diff_tensor_lines(const mp_diff *d, size_t top, const char *indent,
                       mp_buf *out);

/* The diff as a cJSON object (owned, cJSON_Delete), or NULL when out of
 * memory. */
cJSON *diff_json_tree(const mp_diff *d);

/* The Markdown body of mp_diff_markdown, without its heading. */
void diff_markdown_body(const mp_diff *d, size_t top, mp_buf *out);

/* Appends s with every character Markdown or HTML could read as markup
 * replaced by an entity, so it renders as text in a table cell, a
 * paragraph or inside <summary>. Newlines become spaces. */
void diff_md_text(mp_buf *out, const char *s);

#endif /* MPLAN_DIFF_INTERNAL_H */
