/*
 * html.c -- the self-contained HTML report: the viewer of viewer/ (its
 * page, stylesheet and script, embedded into the binary at build time by
 * cmake/embed.cmake), the plan as one JSON document, and the graph drawn
 * by Graphviz, all inline in one file that makes no network request.
 *
 * The page template carries markers that are replaced in order:
 *   <!--MPLAN:TITLE-->  the model name, HTML-escaped
 *   <!--MPLAN:CSS-->    viewer.css inside <style>
 *   <!--MPLAN:SVG-->    the graph's <svg> element (or a note)
 *   <!--MPLAN:DATA-->   the data as <script type="application/json">
 *   <!--MPLAN:JS-->     viewer.js inside <script>
 *
 * Invariants:
 *   1. Nothing the page loads comes from outside the file: the template's
 *      Content-Security-Policy allows no source but inline, and the
 *      browser test counts requests.
 *   2. No data can end a <script> element early: every '<' in the JSON
 *      is written as \u003c (valid JSON, invisible to the HTML parser),
 *      and an embedded script containing "</script" is refused.
 *   3. The data is columnar (one array per field) so that a 10,000-op
 *      graph stays a few MB and parses in milliseconds.
 *   4. Buffer order in the data is the problem's buffer order, the same
 *      as in plan JSON, the SQLite tables and the lifetime dump.
 */
#include <cJSON.h>
#include <stdio.h>
#include <string.h>

#include "json_out.h"
#include "mplan/report.h"
#include "mplan/units.h"
#include "report_util.h"
#include "viewer_assets.h"

#define HTML_SVG_MAX_DEFAULT 600
#define HTML_PEAK_IDLE 20 /* peak intervals with in-use figures */

typedef struct html_ctx {
  const mp_model *m;
  const mp_plan *plan;
  const mp_problem *p;
  const mp_report_meta *meta;
  bool *peak;
  bool ok;
} html_ctx;

/* ---- the data document --------------------------------------------------- */

static void html_model(html_ctx *c, cJSON *root) {
  const mp_report_meta *meta = c->meta;
  char utc[32];
  rj_str(&c->ok, root, "mplan", "report/1");
  rj_str(&c->ok, root, "tool", "mplan " MP_VERSION);
  if (meta && meta->created_utc) {
    snprintf(utc, sizeof utc, "%s", meta->created_utc);
  } else {
    report_utc_now(utc, sizeof utc);
  }
  rj_str(&c->ok, root, "created_utc", utc);
  rj_str(&c->ok, root, "options", meta ? meta->options : NULL);
  rj_str(&c->ok, root, "time_unit", report_time_word(c->m));
  cJSON *m = rj_obj(&c->ok, root, "model");
  if (!m) return;
  rj_str(&c->ok, m, "path", mp_model_path(c->m));
  rj_str(&c->ok, m, "name", mp_model_name(c->m));
  rj_str(&c->ok, m, "format", mp_model_format_name(mp_model_format_of(c->m)));
  rj_str(&c->ok, m, "sha256", meta ? meta->model_sha256 : NULL);
  rj_str(&c->ok, m, "backend", mp_model_backend_name(c->m));
  rj_str(&c->ok, m, "order", mp_model_order_name(c->m));
  const mp_graph *g = mp_model_graph(c->m);
  rj_num(&c->ok, m, "ops", g ? (double)mp_graph_op_count(g) : 0);
  cJSON *dims = rj_obj(&c->ok, m, "dims");
  for (size_t i = 0; dims && g && i < mp_graph_dim_count(g); i++) {
    rj_num(&c->ok, dims, mp_graph_dim_name(g, i),
           (double)mp_graph_dim_value(g, i));
  }
}

static void html_summary(html_ctx *c, cJSON *root) {
  const mp_plan_summary *s = mp_plan_summary_of(c->plan);
  cJSON *o = rj_obj(&c->ok, root, "summary");
  int64_t t0, t1;
  if (!o) return;
  mp_problem_span(c->p, &t0, &t1);
  rj_summary_bytes(&c->ok, o, s);
  rj_num(&c->ok, o, "activation_base", (double)report_activation_base(c->plan));
  rj_num(&c->ok, o, "plan_ms", s->plan_ms);
  rj_str(&c->ok, o, "strategy", s->strategy);
  rj_num(&c->ok, o, "span_first", (double)t0);
  rj_num(&c->ok, o, "span_last", (double)t1);
  rj_num(&c->ok, o, "buffers", (double)mp_problem_count(c->p));
}

static void html_steps(html_ctx *c, cJSON *root) {
  cJSON *o = rj_obj(&c->ok, root, "steps");
  cJSON *op = rj_arr(&c->ok, o, "op"), *type = rj_arr(&c->ok, o, "type");
  for (size_t k = 0; c->ok && k < mp_model_steps(c->m); k++) {
    rj_push_str(&c->ok, op, mp_model_step_op(c->m, k));
    rj_push_str(&c->ok, type, mp_model_step_type(c->m, k));
  }
}

static void html_profile(html_ctx *c, cJSON *root) {
  const mp_profile *prof = mp_plan_profile(c->plan);
  cJSON *o = rj_obj(&c->ok, root, "segments");
  cJSON *first = rj_arr(&c->ok, o, "first"), *last = rj_arr(&c->ok, o, "last");
  cJSON *live = rj_arr(&c->ok, o, "live"), *count = rj_arr(&c->ok, o, "count");
  for (size_t k = 0; c->ok && k < prof->n_segs; k++) {
    rj_push_num(&c->ok, first, (double)prof->segs[k].first);
    rj_push_num(&c->ok, last, (double)prof->segs[k].last);
    rj_push_num(&c->ok, live, (double)prof->segs[k].live);
    rj_push_num(&c->ok, count, (double)prof->segs[k].count);
  }
  cJSON *pk = rj_obj(&c->ok, root, "peak");
  rj_num(&c->ok, pk, "bytes", (double)prof->peak);
  cJSON *iv = rj_arr(&c->ok, pk, "intervals");
  /* per interval (the first HTML_PEAK_IDLE, which the viewer offers):
   * [buffer, bytes in use] of each live buffer with idle bytes at its
   * first step (mp_model_buffer_in_use) */
  cJSON *use = rj_arr(&c->ok, pk, "in_use");
  for (size_t k = 0; c->ok && prof->peak && k < prof->n_peaks; k++) {
    const mp_segment *s = &prof->segs[prof->peaks[k]];
    cJSON *pair = cJSON_CreateArray();
    rj_push(&c->ok, iv, pair);
    rj_push_num(&c->ok, pair, (double)s->first);
    rj_push_num(&c->ok, pair, (double)s->last);
    if (k >= HTML_PEAK_IDLE) continue;
    cJSON *list = cJSON_CreateArray();
    rj_push(&c->ok, use, list); /* on failure c->ok stops the loop */
    for (size_t b = 0; c->ok && b < mp_problem_count(c->p); b++) {
      size_t w;
      if (!report_idle(c->m, c->p, b, s->first, &w, NULL, NULL)) continue;
      cJSON *e = cJSON_CreateArray();
      rj_push(&c->ok, list, e);
      if (!c->ok) break; /* e was freed */
      rj_push_num(&c->ok, e, (double)b);
      rj_push_num(&c->ok, e, (double)w);
    }
  }
}

enum {
  HB_NAME,
  HB_KIND,
  HB_CLASS,
  HB_DTYPE,
  HB_SHAPE,
  HB_SIZE,
  HB_PADDED,
  HB_ALIGN,
  HB_OFFSET,
  HB_FIRST,
  HB_LAST,
  HB_PRODUCER,
  HB_CONSUMER,
  HB_PEAK,
  HB_HOLDS,
  HB_COUNT
};

static const char *const html_buffer_keys[HB_COUNT] = {
    "name", "kind",     "cls",      "dtype",  "shape",
    "size", "padded",   "align",    "offset", "first",
    "last", "producer", "consumer", "peak",   "holds"};

static void html_buffer(html_ctx *c, cJSON **col, size_t i) {
  const mp_buffer *b = mp_problem_buffer(c->p, i);
  char shape[256];
  report_shape(c->m, i, shape, sizeof shape);
  rj_push_str(&c->ok, col[HB_NAME], b->name);
  rj_push_str(&c->ok, col[HB_KIND], report_kind(c->m, i));
  rj_push_str(&c->ok, col[HB_CLASS], mp_class_name(b->cls));
  rj_push_str(&c->ok, col[HB_DTYPE], report_dtype(c->m, i));
  rj_push_str(&c->ok, col[HB_SHAPE], *shape ? shape : NULL);
  rj_push_num(&c->ok, col[HB_SIZE], (double)b->size);
  rj_push_num(&c->ok, col[HB_PADDED], (double)b->padded);
  rj_push_num(&c->ok, col[HB_ALIGN], (double)b->alignment);
  rj_push_num(&c->ok, col[HB_OFFSET],
              (double)mp_plan_placements(c->plan)[i].offset);
  rj_push_num(&c->ok, col[HB_FIRST], (double)b->first);
  rj_push_num(&c->ok, col[HB_LAST], (double)b->last);
  rj_push_str(&c->ok, col[HB_PRODUCER], mp_model_producer(c->m, i));
  rj_push_str(&c->ok, col[HB_CONSUMER], mp_model_last_consumer(c->m, i));
  rj_push_num(&c->ok, col[HB_PEAK], c->peak[i] ? 1 : 0);
  /* What else the buffer holds (views, in place, Concat slices). */
  mp_buf holds;
  mp_buf_init(&holds, NULL);
  if (report_members(c->m, i, &holds) && !holds.failed) {
    rj_push_str(&c->ok, col[HB_HOLDS], mp_buf_str(&holds));
  } else {
    rj_push_str(&c->ok, col[HB_HOLDS], NULL);
  }
  c->ok &= !holds.failed;
  mp_buf_free(&holds);
}

static void html_buffers(html_ctx *c, cJSON *root) {
  cJSON *o = rj_obj(&c->ok, root, "buffers");
  cJSON *col[HB_COUNT];
  for (int k = 0; k < HB_COUNT; k++)
    col[k] = rj_arr(&c->ok, o, html_buffer_keys[k]);
  report_peak_mask(c->plan, c->peak);
  for (size_t i = 0; c->ok && i < mp_problem_count(c->p); i++) {
    html_buffer(c, col, i);
  }
}

/* What the tile pass chose, and the ops of its patches that are in the
 * final graph (the ones later passes fused away are not). */
static void html_tile(html_ctx *c, cJSON *o, const mp_pass_report *r) {
  const mp_tile_info *t = mp_pass_report_tile(r);
  const mp_graph *g = mp_model_graph(c->m);
  if (!t || !c->ok) return;
  rj_tile(&c->ok, o, "tile", t);
  cJSON *arr = rj_arr(&c->ok, cJSON_GetObjectItem(o, "tile"), "ops");
  for (size_t k = 0; c->ok && g && k < t->n_ops; k++) {
    const mp_tile_op *p = &t->ops[k];
    int32_t i;
    if (!mp_graph_find_op(g, p->op, &i)) continue;
    cJSON *e = rj_push_obj(&c->ok, arr);
    if (!e) break;
    rj_str(&c->ok, e, "op", p->op);
    rj_str(&c->ok, e, "role", mp_tile_role_name(p->role));
    rj_str(&c->ok, e, "of", p->origin);
    rj_num(&c->ok, e, "band", p->band);
    rj_num(&c->ok, e, "column", p->column);
  }
}

/* The per-pass table, the fusions and the memory scheduler's candidates
 * (row objects: they are few). */
static void html_passes(html_ctx *c, cJSON *root) {
  const mp_pass_report *r = mp_model_pass_report(c->m);
  const mp_schedule_info *si = mp_model_schedule_info(c->m);
  if (r) {
    cJSON *o = rj_obj(&c->ok, root, "passes");
    rj_num(&c->ok, o, "vlen", mp_pass_report_vlen(r));
    cJSON *rows = rj_arr(&c->ok, o, "rows");
    for (size_t i = 0; c->ok && i < mp_pass_report_rows(r); i++) {
      const mp_pass_row *w = mp_pass_report_row(r, i);
      cJSON *e = rj_push_obj(&c->ok, rows);
      if (!e) break;
      rj_str(&c->ok, e, "pass", mp_pass_name(w->pass));
      rj_num(&c->ok, e, "ops_before", (double)w->ops_before);
      rj_num(&c->ok, e, "ops_after", (double)w->ops_after);
      rj_num(&c->ok, e, "buffers_before", (double)w->buffers_before);
      rj_num(&c->ok, e, "buffers_after", (double)w->buffers_after);
      rj_num(&c->ok, e, "lb_before", (double)w->lb_before);
      rj_num(&c->ok, e, "lb_after", (double)w->lb_after);
      rj_num(&c->ok, e, "arena_before", (double)w->arena_before);
      rj_num(&c->ok, e, "arena_after", (double)w->arena_after);
      rj_num(&c->ok, e, "saved_bytes", (double)w->saved_bytes);
      rj_str(&c->ok, e, "detail", w->detail);
    }
    cJSON *fus = rj_arr(&c->ok, o, "fusions");
    for (size_t i = 0; c->ok && i < mp_pass_report_fusions(r); i++) {
      const mp_fusion *f = mp_pass_report_fusion(r, i);
      cJSON *e = rj_push_obj(&c->ok, fus);
      if (!e) break;
      rj_str(&c->ok, e, "kind", mp_fusion_kind_name(f->kind));
      rj_str(&c->ok, e, "op", f->op);
      rj_str(&c->ok, e, "head", f->head_type);
      rj_str(&c->ok, e, "absorbed", f->absorbed);
      rj_num(&c->ok, e, "intermediate_bytes", (double)f->intermediate_bytes);
      rj_num(&c->ok, e, "steps", f->steps);
      rj_num(&c->ok, e, "saved_bytes", (double)f->saved_bytes);
      rj_num(&c->ok, e, "at_peak", f->at_peak);
      rj_num(&c->ok, e, "spills", f->spills);
    }
    html_tile(c, o, r);
  }
  if (si && si->used == MP_ORDER_MEMORY) {
    cJSON *o = rj_obj(&c->ok, root, "schedule");
    rj_num(&c->ok, o, "peak", (double)si->peak);
    rj_num(&c->ok, o, "segments", (double)si->segments);
    rj_num(&c->ok, o, "bound_segments", (double)si->bound_segments);
    rj_num(&c->ok, o, "branch_bound_segments", (double)si->branch_segments);
    rj_num(&c->ok, o, "exact_segments", (double)si->dp_segments);
    rj_num(&c->ok, o, "improved_segments", (double)si->dp_improved);
    rj_num(&c->ok, o, "branch_improved_segments", (double)si->branch_improved);
    rj_num(&c->ok, o, "beam_improved_segments", (double)si->beam_improved);
    rj_num(&c->ok, o, "move_improved_segments", (double)si->move_improved);
    rj_num(&c->ok, o, "budget_hit", si->budget_hit);
    rj_num(&c->ok, o, "time_hit", si->time_hit);
    rj_num(&c->ok, o, "work", (double)si->work);
    rj_num(&c->ok, o, "work_budget", (double)si->work_budget);
    rj_num(&c->ok, o, "optimal", si->exact);
    rj_num(&c->ok, o, "optimal_by_bound", si->peak_bound);
    rj_num(&c->ok, o, "bound_bytes", (double)si->bound);
    cJSON *cand = rj_arr(&c->ok, o, "candidates");
    for (size_t k = 0; c->ok && k < si->n_cand; k++) {
      cJSON *e = rj_push_obj(&c->ok, cand);
      if (!e) break;
      rj_str(&c->ok, e, "name", si->cand[k].name);
      rj_num(&c->ok, e, "peak", (double)si->cand[k].peak);
    }
  }
}

/* The events of a verification run (null when none ran). */
static void html_verification(html_ctx *c, cJSON *root) {
  if (!c->meta || !c->meta->verified) {
    rj_str(&c->ok, root, "verification", NULL);
    return;
  }
  cJSON *arr = rj_arr(&c->ok, root, "verification");
  for (size_t k = 0; c->ok && k < c->meta->n_events; k++) {
    const mp_report_event *e = &c->meta->events[k];
    cJSON *o = rj_push_obj(&c->ok, arr);
    if (!o) break;
    rj_str(&c->ok, o, "kind", e->kind);
    rj_str(&c->ok, o, "tensor", e->tensor);
    rj_str(&c->ok, o, "op", e->op);
    rj_num(&c->ok, o, "step", (double)e->step);
    rj_num(&c->ok, o, "byte_first", (double)e->byte_first);
    rj_num(&c->ok, o, "byte_last", (double)e->byte_last);
    rj_str(&c->ok, o, "detail", e->detail);
  }
}

/* Where the verification ran and the ops on scalar kernels; null when no
 * verification (or one that does not say) is recorded. */
static void html_target(html_ctx *c, cJSON *root) {
  const mp_report_meta *m = c->meta;
  if (!m || !m->verified || !m->target_arch) {
    rj_str(&c->ok, root, "verification_target", NULL);
    return;
  }
  cJSON *t = rj_obj(&c->ok, root, "verification_target");
  if (!t) return;
  rj_str(&c->ok, t, "arch", m->target_arch);
  rj_str(&c->ok, t, "kernels", m->target_kernels);
  rj_num(&c->ok, t, "vlen", (double)m->target_vlen);
  cJSON *arr = rj_arr(&c->ok, t, "scalar_ops");
  for (size_t k = 0; c->ok && k < m->n_scalar_ops; k++) {
    const mp_report_scalar_op *s = &m->scalar_ops[k];
    cJSON *o = rj_push_obj(&c->ok, arr);
    if (!o) break;
    rj_str(&c->ok, o, "op", s->op);
    rj_str(&c->ok, o, "type", s->type);
    rj_str(&c->ok, o, "kernel", s->kernel);
    rj_str(&c->ok, o, "dtype", s->dtype);
  }
}

/* The whole data document as text (owned, release with cJSON_free). */
static char *html_data(html_ctx *c, const char *graph_note) {
  cJSON *root = cJSON_CreateObject();
  c->ok = root != NULL;
  if (c->ok) html_model(c, root);
  if (c->ok) html_summary(c, root);
  if (c->ok) html_steps(c, root);
  if (c->ok) html_profile(c, root);
  if (c->ok) html_buffers(c, root);
  if (c->ok) html_passes(c, root);
  if (c->ok && c->meta && c->meta->n_what_if) {
    cJSON *arr = rj_arr(&c->ok, root, "what_if");
    for (size_t k = 0; c->ok && k < c->meta->n_what_if; k++) {
      cJSON *e = rj_push_obj(&c->ok, arr);
      if (e) rj_what_if(&c->ok, e, &c->meta->what_if[k]);
    }
  }
  if (c->ok) rj_str(&c->ok, root, "graph_note", graph_note);
  /* null: no verification ran; a list (maybe empty): its events. */
  if (c->ok) html_verification(c, root);
  if (c->ok) html_target(c, root);
  char *text = c->ok ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  return text;
}

/* ---- assembly ------------------------------------------------------------ */

static void html_escape(mp_buf *out, const char *s) {
  for (; *s; s++) {
    switch (*s) {
      case '<':
        mp_buf_puts(out, "&lt;");
        break;
      case '>':
        mp_buf_puts(out, "&gt;");
        break;
      case '&':
        mp_buf_puts(out, "&amp;");
        break;
      case '"':
        mp_buf_puts(out, "&quot;");
        break;
      default:
        mp_buf_append(out, s, 1);
    }
  }
}

/* Appends JSON text with every '<' as \u003c (invariant 2). */
static void html_json(mp_buf *out, const char *json) {
  const char *p = json;
  for (const char *lt; (lt = strchr(p, '<')); p = lt + 1) {
    mp_buf_append(out, p, (size_t)(lt - p));
    mp_buf_puts(out, "\\u003c");
  }
  mp_buf_puts(out, p);
}

/* The <svg> element of Graphviz's output, without the XML prolog. */
static void html_svg(mp_buf *out, const mp_buf *svg) {
  const char *start = strstr(mp_buf_str(svg), "<svg");
  if (start) mp_buf_puts(out, start);
}

typedef struct html_part {
  const char *marker;
  int what;
} html_part;

enum { HP_TITLE, HP_CSS, HP_SVG, HP_DATA, HP_JS };

static void html_fill(html_ctx *c, int what, const char *data,
                      const mp_buf *svg, const char *note, mp_buf *out) {
  switch (what) {
    case HP_TITLE:
      html_escape(out, mp_model_name(c->m));
      break;
    case HP_CSS:
      mp_buf_puts(out, "<style>\n");
      mp_buf_append(out, mp_viewer_css, mp_viewer_css_len);
      mp_buf_puts(out, "</style>");
      break;
    case HP_DATA:
      mp_buf_puts(out, "<script type=\"application/json\" id=\"mplan-data\">");
      html_json(out, data);
      mp_buf_puts(out, "</script>");
      break;
    case HP_SVG:
      if (svg->len) {
        html_svg(out, svg);
      } else {
        mp_buf_puts(out, "<p class=\"note\">");
        html_escape(out, note);
        mp_buf_puts(out, "</p>");
      }
      break;
    default:
      mp_buf_puts(out, "<script>\n");
      mp_buf_append(out, mp_viewer_js, mp_viewer_js_len);
      mp_buf_puts(out, "</script>");
  }
}

static mp_status html_assemble(html_ctx *c, const char *data, const mp_buf *svg,
                               const char *note, mp_buf *out, mp_error *err) {
  static const html_part parts[] = {{"<!--MPLAN:TITLE-->", HP_TITLE},
                                    {"<!--MPLAN:CSS-->", HP_CSS},
                                    {"<!--MPLAN:SVG-->", HP_SVG},
                                    {"<!--MPLAN:DATA-->", HP_DATA},
                                    {"<!--MPLAN:JS-->", HP_JS}};
  const char *p = mp_viewer_html;
  if (strstr(mp_viewer_js, "</script") || strstr(mp_viewer_css, "</style")) {
    return mp_error_set(err, MP_ERR_INTERNAL,
                        "viewer: the embedded script or style closes its own "
                        "element");
  }
  for (size_t k = 0; k < sizeof parts / sizeof *parts; k++) {
    const char *at = strstr(p, parts[k].marker);
    if (!at) {
      return mp_error_set(err, MP_ERR_INTERNAL,
                          "viewer/index.html: marker %s is missing or out of "
                          "order",
                          parts[k].marker);
    }
    mp_buf_append(out, p, (size_t)(at - p));
    html_fill(c, parts[k].what, data, svg, note, out);
    p = at + strlen(parts[k].marker);
  }
  mp_buf_puts(out, p);
  return MP_OK;
}

/* The graph drawing, unless the graph is too big to be worth laying out
 * (then *note says so). A layout failure is not fatal to the page. */
static mp_status html_graph(html_ctx *c, const mp_html_opts *o, mp_buf *svg,
                            char *note, size_t cap, mp_error *err) {
  const mp_graph *g = mp_model_graph(c->m);
  size_t size = g ? mp_graph_op_count(g) : mp_problem_count(c->p);
  size_t max = o && o->svg_max_ops ? o->svg_max_ops : HTML_SVG_MAX_DEFAULT;
  if (!o || !o->graphviz) {
    snprintf(note, cap, "The graph was not drawn for this report.");
    return MP_OK;
  }
  if (size > max) {
    snprintf(note, cap,
             "The graph has %zu %s, more than the %zu drawn inline; write "
             "it with --dot or --svg to view it on its own.",
             size, g ? "ops" : "buffers", max);
    return MP_OK;
  }
  if (o->svg) {
    mp_buf_append(svg, mp_buf_str(o->svg), o->svg->len);
    return MP_OK;
  }
  mp_error gv = {0};
  mp_status st = mp_report_svg(o->graphviz, c->m, c->plan, svg, &gv);
  if (st == MP_ERR_NOMEM) {
    *err = gv;
    return st;
  }
  if (st != MP_OK) {
    svg->len = 0;
    snprintf(note, cap, "The graph could not be drawn: %.400s", gv.msg);
  }
  return MP_OK;
}

mp_status mp_report_html(const mp_model *m, const mp_plan *plan,
                         const mp_report_meta *meta, const mp_html_opts *o,
                         mp_buf *out, mp_error *err) {
  const mp_problem *p = mp_plan_problem(plan);
  const mp_alloc *a = mp_problem_alloc(p);
  html_ctx c = {m, plan, p, meta, NULL, true};
  char note[512] = "";
  char *data = NULL;
  mp_buf svg;
  mp_buf_init(&svg, a);
  size_t n = mp_problem_count(p);
  c.peak = mp_calloc(a, n ? n : 1, sizeof *c.peak);
  mp_status st =
      c.peak ? MP_OK
             : mp_error_set(err, MP_ERR_NOMEM, "%s: HTML: out of memory",
                            mp_model_path(m));
  if (st == MP_OK) st = html_graph(&c, o, &svg, note, sizeof note, err);
  if (st == MP_OK) st = mp_buf_status(&svg, "HTML graph", err);
  if (st == MP_OK) {
    data = html_data(&c, *note ? note : NULL);
    if (!data) {
      st = mp_error_set(err, MP_ERR_NOMEM, "%s: HTML: out of memory",
                        mp_model_path(m));
    }
  }
  if (st == MP_OK) st = html_assemble(&c, data, &svg, note, out, err);
  cJSON_free(data);
  mp_buf_free(&svg);
  mp_free(a, c.peak);
  if (st != MP_OK) return st;
  return mp_buf_status(out, "HTML", err);
}
