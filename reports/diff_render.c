/*
 * diff_render.c -- a diff for people (terminal text, Markdown) and tools
 * (JSON, {"mplan": "diff/1"}).
 *
 * Invariants:
 *   1. Bytes are exact with thousands separators (plus KiB/MiB); deltas
 *      carry their sign; percentages are of the old value.
 *   2. Output is deterministic: no times, no addresses, sorted lists.
 *   3. Text from inputs (tensor, op, region and file names) reaches
 *      Markdown only through diff_md_text, and JSON only through cJSON.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "diff_internal.h"
#include "json_out.h"
#include "mplan/units.h"

#define DIFF_TOP 10
#define DIFF_PEAKS_SHOWN 3

/* ---- small formatters ---------------------------------------------------- */

char *diff_fmt_delta(char *buf, int64_t v) {
  char b[MP_FMT_MAX];
  uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  snprintf(buf, DIFF_FMT, "%s%s",
           v > 0   ? "+"
           : v < 0 ? "-"
                   : "",
           mp_fmt_bytes(b, mag));
  return buf;
}

char *diff_fmt_pct(char *buf, size_t old, size_t now) {
  if (old == 0) {
    snprintf(buf, DIFF_FMT, "%s", now ? "new" : "-");
  } else {
    double p = 100.0 * ((double)now - (double)old) / (double)old;
    snprintf(buf, DIFF_FMT, "%s%.2f%%",
             now > old   ? "+"
             : now < old ? "-"
                         : "",
             p < 0 ? -p : p);
  }
  return buf;
}

static double diff_pct_value(size_t old, size_t now) {
  return 100.0 * ((double)now - (double)old) / (double)old;
}

typedef struct diff_term {
  const char *name;
  int64_t v;
} diff_term;

static void diff_terms(const mp_diff *d, diff_term t[4]) {
  const mp_diff_summary *s = mp_diff_summary_of(d);
  t[0] = (diff_term){"resident", s->by_resident};
  t[1] = (diff_term){"sizes", s->by_sizes};
  t[2] = (diff_term){"order", s->by_order};
  t[3] = (diff_term){"fragmentation", s->by_fragmentation};
}

void diff_why(const mp_diff *d, mp_buf *out) {
  diff_term t[4];
  diff_terms(d, t);
  for (size_t k = 0; k < 4; k++) {
    char b[DIFF_FMT];
    mp_buf_printf(out, "%s%s %s", k ? ", " : "", t[k].name,
                  diff_fmt_delta(b, t[k].v));
  }
}

const char *diff_main_cause(const mp_diff *d) {
  diff_term t[4];
  const char *best = NULL;
  int64_t mag = 0;
  diff_terms(d, t);
  for (size_t k = 0; k < 4; k++) {
    int64_t m = t[k].v < 0 ? -t[k].v : t[k].v;
    if (m > mag) {
      mag = m;
      best = t[k].name;
    }
  }
  return best;
}

/* The op name of step t of s, or NULL. */
static const char *diff_op(const mp_snapshot *s, int64_t t) {
  if (t < 0 || (uint64_t)t >= mp_snapshot_step_count(s)) return NULL;
  return mp_snapshot_step_op(s, (size_t)t);
}

static void diff_interval(const mp_snapshot *s, const mp_snap_interval *iv,
                          mp_buf *out) {
  const char *word = mp_snapshot_info(s)->time_word;
  const char *p = diff_op(s, iv->first), *q = diff_op(s, iv->last);
  if (iv->first == iv->last) {
    mp_buf_printf(out, "%s %" PRId64, word, iv->first);
  } else {
    mp_buf_printf(out, "%s%s %" PRId64 "..%" PRId64, word,
                  strcmp(word, "step") == 0 ? "s" : "", iv->first, iv->last);
  }
  if (p && iv->first == iv->last) {
    mp_buf_printf(out, " ('%s')", p);
  } else if (p && q) {
    mp_buf_printf(out, " ('%s'..'%s')", p, q);
  }
}

void diff_peak_where(const mp_diff *d, const mp_diff_region *r, int side,
                     mp_buf *out) {
  const mp_snapshot *s = side ? mp_diff_new(d) : mp_diff_old(d);
  const mp_snap_region *g = side ? r->b : r->a;
  char b[MP_FMT_MAX];
  if (!g) {
    mp_buf_puts(out, "no such region");
    return;
  }
  if (g->n_peaks == 0) {
    mp_buf_puts(out, "no activations");
    return;
  }
  mp_buf_printf(out, "%s at ", mp_fmt_bytes(b, g->lower_bound_bytes));
  for (size_t k = 0; k < g->n_peaks && k < DIFF_PEAKS_SHOWN; k++) {
    if (k) mp_buf_puts(out, ", ");
    diff_interval(s, &g->peaks[k], out);
  }
  if (g->n_peaks > DIFF_PEAKS_SHOWN) {
    mp_buf_printf(out, " and %zu more", g->n_peaks - DIFF_PEAKS_SHOWN);
  }
}

void diff_counts(const mp_diff *d, mp_buf *out) {
  const mp_diff_summary *s = mp_diff_summary_of(d);
  for (int c = 0; c < MP_CHANGE_COUNT; c++) {
    mp_buf_printf(out, "%s%zu %s", c ? ", " : "", s->count[c],
                  mp_change_name((mp_change)c));
  }
}

void diff_order_line(const mp_diff *d, mp_buf *out) {
  const mp_diff_summary *s = mp_diff_summary_of(d);
  if (s->steps[0] == 0 && s->steps[1] == 0) {
    mp_buf_puts(out, "no ops (an allocation problem)");
  } else if (!s->order_changed) {
    mp_buf_printf(out, "unchanged (%zu ops)", s->steps[0]);
  } else {
    mp_buf_printf(out,
                  "changed: %zu ops at another step, %zu added, %zu removed "
                  "(%zu -> %zu ops)",
                  s->ops_moved, s->ops_added, s->ops_removed, s->steps[0],
                  s->steps[1]);
  }
}

/* ---- text ---------------------------------------------------------------- */

static void diff_source(const mp_snapshot *s, const char *label, mp_buf *out) {
  const mp_snap_info *in = mp_snapshot_info(s);
  mp_buf_printf(out, "  %s: %s (%s", label, in->source, in->kind);
  if (in->model_path && strcmp(in->model_path, in->source) != 0) {
    mp_buf_printf(out, " of %s", in->model_path);
  }
  if (in->tool) mp_buf_printf(out, ", %s", in->tool);
  if (in->strategy) mp_buf_printf(out, ", strategy %s", in->strategy);
  if (in->order) mp_buf_printf(out, ", order %s", in->order);
  if (in->backend) mp_buf_printf(out, ", backend %s", in->backend);
  mp_buf_puts(out, ")\n");
}

static void diff_model_line(const mp_diff *d, mp_buf *out) {
  const char *ha = mp_snapshot_info(mp_diff_old(d))->model_sha256;
  const char *hb = mp_snapshot_info(mp_diff_new(d))->model_sha256;
  if (!ha || !hb) {
    mp_buf_puts(out, "  model: not recorded on both sides\n");
  } else if (mp_diff_summary_of(d)->same_model) {
    mp_buf_printf(out, "  model: the same file (sha256 %.12s)\n", ha);
  } else {
    mp_buf_printf(out, "  model: changed (sha256 %.12s -> %.12s)\n", ha, hb);
  }
}

static void diff_row(mp_buf *out, const char *label, size_t old, size_t now) {
  char a[MP_FMT_MAX], b[MP_FMT_MAX], c[DIFF_FMT], p[DIFF_FMT];
  mp_buf_printf(out, "  %-14s %28s %28s %28s %9s\n", label,
                mp_fmt_bytes(a, old), mp_fmt_bytes(b, now),
                diff_fmt_delta(c, (int64_t)now - (int64_t)old),
                diff_fmt_pct(p, old, now));
}

static void diff_region_text(const mp_diff *d, const mp_diff_region *r,
                             mp_buf *out) {
  mp_buf_printf(out, "region '%s'%s\n", r->name,
                !r->a   ? " (new)"
                : !r->b ? " (gone)"
                        : "");
  diff_row(out, "arena", r->arena[0], r->arena[1]);
  diff_row(out, "resident", r->resident[0], r->resident[1]);
  diff_row(out, "activations", r->arena[0] - r->resident[0],
           r->arena[1] - r->resident[1]);
  diff_row(out, "lower bound", r->lower_bound[0], r->lower_bound[1]);
  diff_row(out, "fragmentation", (size_t)r->fragmentation[0],
           (size_t)r->fragmentation[1]);
  mp_buf_printf(out, "  peak: ");
  diff_peak_where(d, r, 0, out);
  mp_buf_puts(out, " -> ");
  diff_peak_where(d, r, 1, out);
  mp_buf_printf(out, ": %s\n", r->peak_moved ? "moved" : "did not move");
}

static void diff_tensor_line(const mp_diff *d, const mp_diff_tensor *t,
                             const char *indent, mp_buf *out) {
  char a[MP_FMT_MAX], b[MP_FMT_MAX], c[DIFF_FMT];
  const mp_snap_tensor *x = t->a, *y = t->b;
  mp_buf_printf(out, "%s%-9s %-*s ", indent, mp_change_name(t->change),
                mp_text_pad(t->name, 24), t->name);
  if (t->change == MP_CHANGE_LIFETIME) {
    mp_buf_printf(out, "live %" PRId64 "..%" PRId64 " -> %" PRId64 "..%" PRId64,
                  x->first, x->last, y->first, y->last);
  } else if (t->change == MP_CHANGE_MOVED) {
    mp_buf_printf(out, "%s in '%s' -> %s in '%s'", mp_class_name(x->cls),
                  mp_snapshot_region(mp_diff_old(d), x->region)->name,
                  mp_class_name(y->cls),
                  mp_snapshot_region(mp_diff_new(d), y->region)->name);
  } else {
    mp_buf_printf(out, "%s -> %s  %s", x ? mp_fmt_bytes(a, x->padded) : "-",
                  y ? mp_fmt_bytes(b, y->padded) : "-",
                  diff_fmt_delta(c, t->delta));
  }
  if (t->host) {
    static const char *const how[] = {"now in buffer",   "was in buffer",
                                      "fused into op",   "was fused into op",
                                      "removed by pass", "was removed by pass"};
    mp_buf_printf(out, "  (%s '%s')", how[t->change - MP_CHANGE_JOINED],
                  t->host);
  }
  if (t->patch) mp_buf_printf(out, "  (%s, pass 'tile')", t->patch);
  mp_buf_puts(out, "\n");
}

void diff_tensor_lines(const mp_diff *d, size_t top, const char *indent,
                       mp_buf *out) {
  size_t shown[MP_CHANGE_COUNT] = {0};
  for (size_t i = 0; i < mp_diff_tensor_count(d); i++) {
    const mp_diff_tensor *t = mp_diff_tensor_at(d, i);
    if (shown[t->change]++ < top) diff_tensor_line(d, t, indent, out);
  }
  for (int c = 0; c < MP_CHANGE_COUNT; c++) {
    if (shown[c] > top) {
      mp_buf_printf(out, "%s... and %zu more %s\n", indent, shown[c] - top,
                    mp_change_name((mp_change)c));
    }
  }
}

/* ---- what-if: the settings plans and runs made with --what-if were
 * compared with, matched by setting (A's in its order, then B's own). */

typedef void (*dw_fn)(void *ud, const char *setting, const mp_snap_what_if *a,
                      const mp_snap_what_if *b);

static const mp_snap_what_if *dw_find(const mp_snapshot *s,
                                      const char *setting) {
  const mp_snap_what_if *w;
  size_t n = mp_snapshot_what_if(s, &w);
  for (size_t k = 0; k < n; k++) {
    if (strcmp(w[k].setting, setting) == 0) return &w[k];
  }
  return NULL;
}

/* Calls fn for each setting either side recorded; returns how many. */
static size_t dw_each(const mp_diff *d, dw_fn fn, void *ud) {
  const mp_snapshot *sa = mp_diff_old(d), *sb = mp_diff_new(d);
  const mp_snap_what_if *wa, *wb;
  size_t na = mp_snapshot_what_if(sa, &wa), nb = mp_snapshot_what_if(sb, &wb);
  for (size_t k = 0; k < na; k++) {
    if (dw_find(sa, wa[k].setting) != &wa[k]) continue; /* a repeat */
    if (fn) fn(ud, wa[k].setting, &wa[k], dw_find(sb, wa[k].setting));
  }
  size_t n = na;
  for (size_t k = 0; k < nb; k++) {
    if (dw_find(sb, wb[k].setting) != &wb[k] || dw_find(sa, wb[k].setting)) {
      continue;
    }
    if (fn) fn(ud, wb[k].setting, NULL, &wb[k]);
    n++;
  }
  return n;
}

/* A row's lower bound or (arena) its arena, 0 when w is NULL or (the
 * arena) not recorded. */
static size_t dw_value(const mp_snap_what_if *w, bool arena) {
  return !w ? 0 : arena ? w->arena_bytes : w->lower_bound_bytes;
}

/* Whether either side has the figure: a side without the row has no
 * lower bound, and a recorded arena is never 0. */
static bool dw_has(const mp_snap_what_if *a, const mp_snap_what_if *b,
                   bool arena) {
  return arena ? dw_value(a, true) || dw_value(b, true) : a || b;
}

/* "1,505,280 -> 1,404,928 B (-100,352 B (98.00 KiB))", or one side's
 * figure with "only old"/"only new". */
static void dw_figure(mp_buf *out, const mp_snap_what_if *a,
                      const mp_snap_what_if *b, bool arena) {
  char x[MP_FMT_MAX], y[MP_FMT_MAX], z[DIFF_FMT];
  size_t va = dw_value(a, arena), vb = dw_value(b, arena);
  bool has_a = arena ? va != 0 : a != NULL;
  bool has_b = arena ? vb != 0 : b != NULL;
  if (has_a && has_b) {
    mp_buf_printf(out, "%s -> %s B (%s)", mp_fmt_count(x, va),
                  mp_fmt_count(y, vb),
                  diff_fmt_delta(z, (int64_t)vb - (int64_t)va));
  } else {
    mp_buf_printf(out, "%s B (only %s)", mp_fmt_count(x, has_a ? va : vb),
                  has_a ? "old" : "new");
  }
}

static void dw_text_row(void *ud, const char *setting, const mp_snap_what_if *a,
                        const mp_snap_what_if *b) {
  mp_buf *out = ud;
  mp_buf_printf(out, "  %-*s lower bound ", mp_text_pad(setting, 34), setting);
  dw_figure(out, a, b, false);
  if (dw_has(a, b, true)) {
    mp_buf_puts(out, "; arena ");
    dw_figure(out, a, b, true);
  }
  mp_buf_puts(out, "\n");
}

mp_status mp_diff_text(const mp_diff *d, const mp_diff_opts *o, mp_buf *out,
                       mp_error *err) {
  const mp_diff_summary *s = mp_diff_summary_of(d);
  size_t top = o && o->top ? o->top : DIFF_TOP;
  mp_buf_puts(out, "mplan diff\n");
  diff_source(mp_diff_old(d), "old", out);
  diff_source(mp_diff_new(d), "new", out);
  diff_model_line(d, out);
  mp_buf_printf(out, "\n  %-14s %28s %28s %28s %9s\n", "", "old", "new",
                "delta", "%");
  for (size_t k = 0; k < mp_diff_region_count(d); k++) {
    diff_region_text(d, mp_diff_region_at(d, k), out);
  }
  mp_buf_puts(out, "total\n");
  diff_row(out, "arena", s->total[0], s->total[1]);
  char b[DIFF_FMT];
  const char *cause = diff_main_cause(d);
  mp_buf_printf(out, "\nwhy: %s = ", diff_fmt_delta(b, s->delta));
  diff_why(d, out);
  if (cause) mp_buf_printf(out, "; mostly %s", cause);
  mp_buf_puts(out, "\norder: ");
  diff_order_line(d, out);
  mp_buf_puts(out, "\n");
  if (dw_each(d, NULL, NULL)) {
    mp_buf_puts(out,
                "what-if (the other settings, as recorded by --what-if):\n");
    dw_each(d, dw_text_row, out);
  }
  mp_buf_puts(out, "tensors: ");
  diff_counts(d, out);
  mp_buf_puts(out, "\n");
  diff_tensor_lines(d, top, "    ", out);
  return mp_buf_status(out, "diff", err);
}

/* ---- JSON ---------------------------------------------------------------- */

typedef struct dj_ctx {
  const mp_diff *d;
  bool ok;
} dj_ctx;

static void dj_figure(dj_ctx *c, cJSON *o, const char *key, int64_t old,
                      int64_t now) {
  cJSON *f = rj_obj(&c->ok, o, key);
  if (!f) return;
  rj_num(&c->ok, f, "old", (double)old);
  rj_num(&c->ok, f, "new", (double)now);
  rj_num(&c->ok, f, "delta", (double)(now - old));
  if (old > 0 && now >= 0) {
    rj_num(&c->ok, f, "pct", diff_pct_value((size_t)old, (size_t)now));
  } else {
    rj_str(&c->ok, f, "pct", NULL);
  }
}

static void dj_why(dj_ctx *c, cJSON *o, int64_t res, int64_t sizes,
                   int64_t order, int64_t frag) {
  cJSON *w = rj_obj(&c->ok, o, "why");
  if (!w) return;
  rj_num(&c->ok, w, "resident", (double)res);
  rj_num(&c->ok, w, "sizes", (double)sizes);
  rj_num(&c->ok, w, "order", (double)order);
  rj_num(&c->ok, w, "fragmentation", (double)frag);
}

static void dj_source(dj_ctx *c, cJSON *root, const char *key,
                      const mp_snapshot *s) {
  const mp_snap_info *in = mp_snapshot_info(s);
  cJSON *o = rj_obj(&c->ok, root, key);
  if (!o) return;
  rj_str(&c->ok, o, "source", in->source);
  rj_str(&c->ok, o, "kind", in->kind);
  rj_str(&c->ok, o, "tool", in->tool);
  rj_str(&c->ok, o, "model", in->model_path);
  rj_str(&c->ok, o, "model_sha256", in->model_sha256);
  rj_str(&c->ok, o, "strategy", in->strategy);
  rj_str(&c->ok, o, "order", in->order);
  rj_str(&c->ok, o, "backend", in->backend);
  if (in->run_id) rj_num(&c->ok, o, "run", (double)in->run_id);
}

static void dj_peaks(dj_ctx *c, cJSON *o, const char *key, const mp_snapshot *s,
                     const mp_snap_region *g) {
  cJSON *arr = rj_arr(&c->ok, o, key);
  for (size_t k = 0; arr && g && k < g->n_peaks; k++) {
    cJSON *e = rj_push_obj(&c->ok, arr);
    if (!e) return;
    rj_num(&c->ok, e, "first", (double)g->peaks[k].first);
    rj_num(&c->ok, e, "last", (double)g->peaks[k].last);
    const char *p = diff_op(s, g->peaks[k].first);
    const char *q = diff_op(s, g->peaks[k].last);
    if (p) rj_str(&c->ok, e, "first_op", p);
    if (q) rj_str(&c->ok, e, "last_op", q);
  }
}

static void dj_region(dj_ctx *c, cJSON *arr, const mp_diff_region *r) {
  cJSON *o = rj_push_obj(&c->ok, arr);
  if (!o) return;
  rj_str(&c->ok, o, "name", r->name);
  dj_figure(c, o, "arena", (int64_t)r->arena[0], (int64_t)r->arena[1]);
  dj_figure(c, o, "resident", (int64_t)r->resident[0], (int64_t)r->resident[1]);
  dj_figure(c, o, "activations", (int64_t)(r->arena[0] - r->resident[0]),
            (int64_t)(r->arena[1] - r->resident[1]));
  dj_figure(c, o, "lower_bound", (int64_t)r->lower_bound[0],
            (int64_t)r->lower_bound[1]);
  dj_figure(c, o, "fragmentation", r->fragmentation[0], r->fragmentation[1]);
  dj_why(c, o, r->by_resident, r->by_sizes, r->by_order, r->by_fragmentation);
  cJSON *p = rj_obj(&c->ok, o, "peak");
  if (!p) return;
  rj_bool(&c->ok, p, "moved", r->peak_moved);
  dj_peaks(c, p, "old", mp_diff_old(c->d), r->a);
  dj_peaks(c, p, "new", mp_diff_new(c->d), r->b);
}

static void dj_tensor_side(dj_ctx *c, cJSON *o, const char *key,
                           const mp_snapshot *s, const mp_snap_tensor *t) {
  if (!t) {
    rj_str(&c->ok, o, key, NULL);
    return;
  }
  cJSON *x = rj_obj(&c->ok, o, key);
  if (!x) return;
  rj_num(&c->ok, x, "size", (double)t->size);
  rj_num(&c->ok, x, "padded", (double)t->padded);
  rj_num(&c->ok, x, "first", (double)t->first);
  rj_num(&c->ok, x, "last", (double)t->last);
  rj_str(&c->ok, x, "class", mp_class_name(t->cls));
  rj_str(&c->ok, x, "region", mp_snapshot_region(s, t->region)->name);
}

static void dj_tensors(dj_ctx *c, cJSON *root) {
  const mp_diff_summary *s = mp_diff_summary_of(c->d);
  cJSON *o = rj_obj(&c->ok, root, "tensors");
  cJSON *counts = o ? rj_obj(&c->ok, o, "counts") : NULL;
  for (int k = 0; counts && k < MP_CHANGE_COUNT; k++) {
    rj_num(&c->ok, counts, mp_change_name((mp_change)k), (double)s->count[k]);
  }
  cJSON *arr = o ? rj_arr(&c->ok, o, "changed") : NULL;
  for (size_t i = 0; arr && i < mp_diff_tensor_count(c->d); i++) {
    const mp_diff_tensor *t = mp_diff_tensor_at(c->d, i);
    cJSON *e = rj_push_obj(&c->ok, arr);
    if (!e) return;
    rj_str(&c->ok, e, "name", t->name);
    rj_str(&c->ok, e, "change", mp_change_name(t->change));
    rj_num(&c->ok, e, "delta", (double)t->delta);
    if (t->host) rj_str(&c->ok, e, "host", t->host);
    if (t->patch) rj_str(&c->ok, e, "patch", t->patch);
    dj_tensor_side(c, e, "old", mp_diff_old(c->d), t->a);
    dj_tensor_side(c, e, "new", mp_diff_new(c->d), t->b);
  }
}

static void dj_summary(dj_ctx *c, cJSON *root) {
  const mp_diff_summary *s = mp_diff_summary_of(c->d);
  cJSON *t = rj_obj(&c->ok, root, "total");
  if (t) {
    rj_num(&c->ok, t, "old", (double)s->total[0]);
    rj_num(&c->ok, t, "new", (double)s->total[1]);
    rj_num(&c->ok, t, "delta", (double)s->delta);
    if (s->total[0]) {
      rj_num(&c->ok, t, "pct", diff_pct_value(s->total[0], s->total[1]));
    } else {
      rj_str(&c->ok, t, "pct", NULL);
    }
    dj_why(c, t, s->by_resident, s->by_sizes, s->by_order, s->by_fragmentation);
    rj_str(&c->ok, t, "main_cause", diff_main_cause(c->d));
  }
  rj_bool(&c->ok, root, "peak_moved", s->peak_moved);
  cJSON *o = rj_obj(&c->ok, root, "order");
  if (!o) return;
  rj_bool(&c->ok, o, "changed", s->order_changed);
  rj_num(&c->ok, o, "old_steps", (double)s->steps[0]);
  rj_num(&c->ok, o, "new_steps", (double)s->steps[1]);
  rj_num(&c->ok, o, "moved", (double)s->ops_moved);
  rj_num(&c->ok, o, "added", (double)s->ops_added);
  rj_num(&c->ok, o, "removed", (double)s->ops_removed);
}

typedef struct dj_what_if_ctx {
  dj_ctx *c;
  cJSON *arr;
} dj_what_if_ctx;

static void dj_what_if_side(dj_ctx *c, cJSON *o, const char *key,
                            const mp_snap_what_if *w) {
  if (!w) {
    if (!cJSON_AddNullToObject(o, key)) c->ok = false;
    return;
  }
  cJSON *s = rj_obj(&c->ok, o, key);
  if (!s) return;
  rj_num(&c->ok, s, "lower_bound_bytes", (double)w->lower_bound_bytes);
  if (w->arena_bytes) rj_num(&c->ok, s, "arena_bytes", (double)w->arena_bytes);
}

/* {"setting", "old": {lower_bound_bytes, arena_bytes} or null, "new"} */
static void dj_what_if_row(void *ud, const char *setting,
                           const mp_snap_what_if *a, const mp_snap_what_if *b) {
  dj_what_if_ctx *w = ud;
  cJSON *o = rj_push_obj(&w->c->ok, w->arr);
  if (!o) return;
  rj_str(&w->c->ok, o, "setting", setting);
  dj_what_if_side(w->c, o, "old", a);
  dj_what_if_side(w->c, o, "new", b);
}

cJSON *diff_json_tree(const mp_diff *d) {
  dj_ctx c = {d, true};
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  rj_str(&c.ok, root, "mplan", "diff/1");
  rj_str(&c.ok, root, "tool", "mplan " MP_VERSION);
  dj_source(&c, root, "old", mp_diff_old(d));
  dj_source(&c, root, "new", mp_diff_new(d));
  rj_bool(&c.ok, root, "same_model", mp_diff_summary_of(d)->same_model);
  cJSON *regions = rj_arr(&c.ok, root, "regions");
  for (size_t k = 0; regions && k < mp_diff_region_count(d); k++) {
    dj_region(&c, regions, mp_diff_region_at(d, k));
  }
  dj_summary(&c, root);
  dj_tensors(&c, root);
  if (dw_each(d, NULL, NULL)) {
    dj_what_if_ctx w = {&c, rj_arr(&c.ok, root, "what_if")};
    if (w.arr) dw_each(d, dj_what_if_row, &w);
  }
  if (!c.ok) {
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

mp_status mp_diff_json(const mp_diff *d, mp_buf *out, mp_error *err) {
  cJSON *root = diff_json_tree(d);
  char *text = root ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  if (!text) return mp_error_set(err, MP_ERR_NOMEM, "diff JSON: out of memory");
  mp_buf_puts(out, text);
  mp_buf_puts(out, "\n");
  cJSON_free(text);
  return mp_buf_status(out, "diff JSON", err);
}

/* ---- Markdown (invariant 3) ------------------------------------------------
 */

void diff_md_text(mp_buf *out, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
      case '&':
        mp_buf_puts(out, "&amp;");
        break;
      case '<':
        mp_buf_puts(out, "&lt;");
        break;
      case '>':
        mp_buf_puts(out, "&gt;");
        break;
      case '"':
        mp_buf_puts(out, "&quot;");
        break;
      case '|':
      case '\\':
      case '*':
      case '_':
      case '`':
      case '[':
      case ']':
      case '~':
      case '#':
      case '!':
      case '$':
        mp_buf_printf(out, "&#%d;", *s);
        break;
      case '\n':
      case '\r':
      case '\t':
        mp_buf_puts(out, " ");
        break;
      default:
        mp_buf_append(out, s, 1);
    }
  }
}

/* region is text from the input, or NULL for the total row. */
static void md_row(mp_buf *out, const char *region, const char *label,
                   size_t old, size_t now) {
  char a[MP_FMT_MAX], b[MP_FMT_MAX], c[DIFF_FMT], p[DIFF_FMT];
  mp_buf_puts(out, "| ");
  if (region) {
    diff_md_text(out, region);
  } else {
    mp_buf_puts(out, "**total**");
  }
  mp_buf_printf(out, " | %s | %s | %s | %s | %s |\n", label,
                mp_fmt_bytes(a, old), mp_fmt_bytes(b, now),
                diff_fmt_delta(c, (int64_t)now - (int64_t)old),
                diff_fmt_pct(p, old, now));
}

static void md_regions(const mp_diff *d, mp_buf *out) {
  const mp_diff_summary *s = mp_diff_summary_of(d);
  mp_buf_puts(out,
              "| region | figure | old | new | Δ | % |\n"
              "| --- | --- | ---: | ---: | ---: | ---: |\n");
  for (size_t k = 0; k < mp_diff_region_count(d); k++) {
    const mp_diff_region *r = mp_diff_region_at(d, k);
    md_row(out, r->name, "arena", r->arena[0], r->arena[1]);
    md_row(out, "", "resident", r->resident[0], r->resident[1]);
    md_row(out, "", "activations", r->arena[0] - r->resident[0],
           r->arena[1] - r->resident[1]);
    md_row(out, "", "lower bound", r->lower_bound[0], r->lower_bound[1]);
    md_row(out, "", "fragmentation", (size_t)r->fragmentation[0],
           (size_t)r->fragmentation[1]);
  }
  md_row(out, NULL, "arena", s->total[0], s->total[1]);
}

static void md_peaks(const mp_diff *d, mp_buf *out) {
  for (size_t k = 0; k < mp_diff_region_count(d); k++) {
    const mp_diff_region *r = mp_diff_region_at(d, k);
    mp_buf b;
    mp_buf_init(&b, out->alloc);
    diff_peak_where(d, r, 0, &b);
    mp_buf_puts(&b, " → ");
    diff_peak_where(d, r, 1, &b);
    mp_buf_puts(out, "**Peak** (");
    diff_md_text(out, r->name);
    mp_buf_printf(out, "): %s: ", r->peak_moved ? "moved" : "did not move");
    diff_md_text(out, mp_buf_str(&b));
    mp_buf_puts(out, "  \n");
    if (b.failed) out->failed = true;
    mp_buf_free(&b);
  }
}

static void md_tensor_row(const mp_diff *d, const mp_diff_tensor *t,
                          mp_buf *out) {
  char a[MP_FMT_MAX], b[MP_FMT_MAX], c[DIFF_FMT];
  const mp_snap_tensor *x = t->a, *y = t->b;
  mp_buf_printf(out, "| %s | ", mp_change_name(t->change));
  diff_md_text(out, t->name);
  if (t->patch) {
    mp_buf_puts(out, " (");
    diff_md_text(out, t->patch);
    mp_buf_puts(out, ")");
  }
  mp_buf_puts(out, " | ");
  if (t->change == MP_CHANGE_LIFETIME) {
    mp_buf_printf(out,
                  "live %" PRId64 "..%" PRId64 " | live %" PRId64 "..%" PRId64
                  " | 0 B |\n",
                  x->first, x->last, y->first, y->last);
    return;
  }
  if (t->change == MP_CHANGE_MOVED) {
    mp_buf_printf(out, "%s in ", mp_class_name(x->cls));
    diff_md_text(out, mp_snapshot_region(mp_diff_old(d), x->region)->name);
    mp_buf_printf(out, " | %s in ", mp_class_name(y->cls));
    diff_md_text(out, mp_snapshot_region(mp_diff_new(d), y->region)->name);
    mp_buf_puts(out, " | 0 B |\n");
    return;
  }
  /* With a host, the side that lacks the tensor says where it went:
   * JOINED, FUSED, REMOVED on the new side, their reverses on the old. */
  bool where = t->host != NULL;
  bool on_new = where && (t->change - MP_CHANGE_JOINED) % 2 == 0;
  static const char *const to[] = {"in ", "fused into ", "removed by "};
  for (int side = 0; side < 2; side++) {
    const mp_snap_tensor *v = side ? y : x;
    if (where && on_new == (side == 1)) {
      mp_buf_puts(out, to[(t->change - MP_CHANGE_JOINED) / 2]);
      diff_md_text(out, t->host);
    } else {
      mp_buf_puts(out, v ? mp_fmt_bytes(side ? b : a, v->padded) : "-");
    }
    mp_buf_puts(out, " | ");
  }
  mp_buf_printf(out, "%s |\n", diff_fmt_delta(c, t->delta));
}

static void md_what_if_row(void *ud, const char *setting,
                           const mp_snap_what_if *a, const mp_snap_what_if *b) {
  mp_buf *out = ud;
  mp_buf_puts(out, "| ");
  diff_md_text(out, setting);
  mp_buf_puts(out, " | ");
  dw_figure(out, a, b, false);
  mp_buf_puts(out, " | ");
  if (dw_has(a, b, true)) {
    dw_figure(out, a, b, true);
  } else {
    mp_buf_puts(out, "–");
  }
  mp_buf_puts(out, " |\n");
}

static void md_tensors(const mp_diff *d, size_t top, mp_buf *out) {
  size_t shown[MP_CHANGE_COUNT] = {0}, hidden = 0;
  if (mp_diff_tensor_count(d) == 0) {
    mp_buf_puts(out, "**Tensors**: none changed.\n");
    return;
  }
  mp_buf_puts(out, "<details><summary>Tensors: ");
  diff_counts(d, out);
  mp_buf_puts(out,
              "</summary>\n\n"
              "| change | tensor | old | new | Δ |\n"
              "| --- | --- | ---: | ---: | ---: |\n");
  for (size_t i = 0; i < mp_diff_tensor_count(d); i++) {
    const mp_diff_tensor *t = mp_diff_tensor_at(d, i);
    if (shown[t->change]++ < top) {
      md_tensor_row(d, t, out);
    } else {
      hidden++;
    }
  }
  if (hidden) {
    mp_buf_printf(out, "\n%zu more (mplan diff --json lists them all)\n",
                  hidden);
  }
  mp_buf_puts(out, "\n</details>\n");
}

void diff_markdown_body(const mp_diff *d, size_t top, mp_buf *out) {
  const mp_diff_summary *s = mp_diff_summary_of(d);
  char b[DIFF_FMT];
  const char *cause = diff_main_cause(d);
  md_regions(d, out);
  mp_buf_printf(out, "\n**Why**: %s = ", diff_fmt_delta(b, s->delta));
  diff_why(d, out);
  if (cause) mp_buf_printf(out, "; mostly **%s**", cause);
  mp_buf_puts(out, "  \n");
  md_peaks(d, out);
  mp_buf_puts(out, "**Order**: ");
  diff_order_line(d, out);
  mp_buf_puts(out, "\n\n");
  if (dw_each(d, NULL, NULL)) {
    mp_buf_puts(out,
                "**What-if** (the other settings, as recorded by "
                "--what-if):\n\n| setting | lower bound | arena |\n"
                "|---|---|---|\n");
    dw_each(d, md_what_if_row, out);
    mp_buf_puts(out, "\n");
  }
  md_tensors(d, top, out);
}

mp_status mp_diff_markdown(const mp_diff *d, const mp_diff_opts *o, mp_buf *out,
                           mp_error *err) {
  mp_buf_puts(out, "### mplan diff: ");
  diff_md_text(out, mp_snapshot_info(mp_diff_old(d))->source);
  mp_buf_puts(out, " → ");
  diff_md_text(out, mp_snapshot_info(mp_diff_new(d))->source);
  mp_buf_puts(out, "\n\n");
  diff_markdown_body(d, o && o->top ? o->top : DIFF_TOP, out);
  return mp_buf_status(out, "diff Markdown", err);
}
