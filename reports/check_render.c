/*
 * check_render.c -- the check report as terminal text, JSON
 * ({"mplan": "check/1"}), JUnit XML and Markdown.
 *
 * Invariants:
 *   1. Every renderer shows the same verdicts and messages (built once by
 *      check.c) and lists the models in the order they were checked.
 *   2. JUnit XML is well-formed whatever the input: every text and
 *      attribute goes through ck_xml, which escapes markup, drops the
 *      control characters XML 1.0 forbids and replaces invalid UTF-8
 *      (and U+FFFE, U+FFFF) with U+FFFD. One <testsuite> per model, one
 *      <testcase> per check; a model that could not be planned has one
 *      testcase, "plan", in error.
 *   3. Markdown renders inputs as text only (diff_md_text) and is
 *      deterministic (no times), so that it can be compared to a
 *      snapshot.
 */
#include <stdio.h>
#include <string.h>

#include "check_internal.h"
#include "diff_internal.h"
#include "json_out.h"
#include "mplan/units.h"

#define CK_TOP_TEXT 5
#define CK_TOP_MD 10

static const char *ck_upper(mp_verdict v) {
  return v == MP_VERDICT_PASS   ? "PASS"
         : v == MP_VERDICT_FAIL ? "FAIL"
                                : "ERROR";
}

/* A setting the hint compared fits the budget. */
static bool ck_fits(size_t budget, const ck_setting *s) {
  return s->arena_bytes <= budget;
}

static const char *ck_emoji(mp_verdict v) {
  return v == MP_VERDICT_PASS ? "✅" : v == MP_VERDICT_FAIL ? "❌" : "⚠️";
}

/* "budget 6,291,456 B (6.00 MiB) | baseline dir baselines/, tolerance 3%" */
static void ck_settings(const mp_check_report *r, const char *sep,
                        bool markdown, mp_buf *out) {
  const mp_check_opts *o = &r->opts;
  char b[MP_FMT_MAX], t[32];
  size_t n = 0;
  if (o->has_budget) {
    mp_buf_printf(out, "budget %s", mp_fmt_bytes(b, o->budget_bytes));
    n++;
  }
  if (o->has_baseline) {
    ck_fmt_tolerance(t, sizeof t, o->tolerance_ppm);
    mp_buf_printf(out, "%sbaseline ", n++ ? sep : "");
    if (markdown) {
      diff_md_text(out, o->baseline_where ? o->baseline_where : "");
    } else {
      mp_buf_puts(out, o->baseline_where ? o->baseline_where : "");
    }
    if (o->update) {
      mp_buf_puts(out, " (updating)");
    } else {
      mp_buf_printf(out, "%stolerance %s", sep, t);
    }
  }
}

static void ck_counts_line(const mp_check_report *r, mp_buf *out) {
  const mp_check_counts *c = &r->counts;
  mp_buf_printf(out, "%zu passed, %zu failed, %zu error%s of %zu model%s",
                c->passed, c->failed, c->errors, c->errors == 1 ? "" : "s",
                c->models, c->models == 1 ? "" : "s");
}

/* ---- text ---------------------------------------------------------------- */

static void ck_text_details(const ck_entry *e, mp_buf *out) {
  const mp_diff *d = e->diff;
  char b[DIFF_FMT];
  const char *cause = diff_main_cause(d);
  mp_buf_printf(out, "         why: %s = ",
                diff_fmt_delta(b, mp_diff_summary_of(d)->delta));
  diff_why(d, out);
  if (cause) mp_buf_printf(out, "; mostly %s", cause);
  mp_buf_puts(out, "\n");
  for (size_t k = 0; k < mp_diff_region_count(d); k++) {
    const mp_diff_region *g = mp_diff_region_at(d, k);
    mp_buf_printf(out, "         peak '%s': ", g->name);
    diff_peak_where(d, g, 0, out);
    mp_buf_puts(out, " -> ");
    diff_peak_where(d, g, 1, out);
    mp_buf_printf(out, ": %s\n", g->peak_moved ? "moved" : "did not move");
  }
  mp_buf_puts(out, "         order: ");
  diff_order_line(d, out);
  mp_buf_puts(out, "\n         tensors: ");
  diff_counts(d, out);
  mp_buf_puts(out, "\n");
  diff_tensor_lines(d, CK_TOP_TEXT, "           ", out);
}

static void ck_text_entry(const ck_entry *e, size_t budget, mp_buf *out) {
  char b[MP_FMT_MAX];
  mp_buf_printf(out, "%-6s %s", ck_upper(e->verdict), e->model);
  if (e->error) {
    mp_buf_printf(out, ": %s\n", e->error);
    return;
  }
  mp_buf_printf(out, ": arena %s\n",
                mp_fmt_bytes(b, mp_snapshot_total_bytes(e->now)));
  if (e->has_budget) {
    mp_buf_printf(out, "       budget    %-5s %s\n", mp_verdict_name(e->budget),
                  e->budget_msg);
  }
  if (e->hint) mp_buf_printf(out, "       hint            %s\n", e->hint);
  for (size_t k = 0; k < e->n_settings; k++) {
    const ck_setting *s = &e->settings[k];
    mp_buf_printf(out, "       what-if   %-5s %s B with %s\n",
                  ck_fits(budget, s) ? "fits" : "over",
                  mp_fmt_count(b, s->arena_bytes), s->setting);
  }
  if (e->has_baseline) {
    mp_buf_printf(out, "       baseline  %-5s %s\n",
                  mp_verdict_name(e->baseline), e->baseline_msg);
  }
  if (ck_changed(e)) ck_text_details(e, out);
}

mp_status mp_check_report_text(const mp_check_report *r, mp_buf *out,
                               mp_error *err) {
  mp_buf_printf(out, "mplan check: %zu model%s | ", r->counts.models,
                r->counts.models == 1 ? "" : "s");
  ck_settings(r, " | ", false, out);
  mp_buf_puts(out, "\n");
  for (size_t i = 0; i < r->n; i++) {
    ck_text_entry(&r->entries[i], r->opts.budget_bytes, out);
  }
  mp_buf_printf(out, "result: %s: ", ck_upper(mp_check_report_verdict(r)));
  ck_counts_line(r, out);
  mp_buf_puts(out, "\n");
  return mp_buf_status(out, "check", err);
}

/* ---- JSON ---------------------------------------------------------------- */

typedef struct cj_ctx {
  const mp_check_report *r;
  bool ok;
} cj_ctx;

static void cj_bands(cj_ctx *c, cJSON *chk, const ck_entry *e) {
  cJSON *arr = rj_arr(&c->ok, chk, "regions");
  for (size_t k = 0; arr && k < mp_diff_region_count(e->diff); k++) {
    const mp_diff_region *g = mp_diff_region_at(e->diff, k);
    size_t w = mp_check_band(g->arena[0], c->r->opts.tolerance_ppm);
    size_t dist = g->arena[1] > g->arena[0] ? g->arena[1] - g->arena[0]
                                            : g->arena[0] - g->arena[1];
    cJSON *o = rj_push_obj(&c->ok, arr);
    if (!o) return;
    rj_str(&c->ok, o, "name", g->name);
    rj_num(&c->ok, o, "baseline_bytes", (double)g->arena[0]);
    rj_num(&c->ok, o, "arena_bytes", (double)g->arena[1]);
    rj_num(&c->ok, o, "delta_bytes", (double)g->delta);
    rj_num(&c->ok, o, "band_bytes", (double)w);
    rj_str(&c->ok, o, "status", g->a && g->b && dist <= w ? "pass" : "fail");
  }
}

static void cj_checks(cj_ctx *c, cJSON *m, const ck_entry *e) {
  cJSON *arr = rj_arr(&c->ok, m, "checks");
  if (arr && e->has_budget) {
    cJSON *o = rj_push_obj(&c->ok, arr);
    if (!o) return;
    rj_str(&c->ok, o, "name", "budget");
    rj_str(&c->ok, o, "status", mp_verdict_name(e->budget));
    rj_str(&c->ok, o, "message", e->budget_msg);
    rj_num(&c->ok, o, "budget_bytes", (double)c->r->opts.budget_bytes);
    rj_num(&c->ok, o, "arena_bytes", (double)mp_snapshot_total_bytes(e->now));
    if (e->hint) rj_str(&c->ok, o, "hint", e->hint);
    cJSON *wi = e->n_settings ? rj_arr(&c->ok, o, "what_if") : NULL;
    for (size_t k = 0; wi && k < e->n_settings; k++) {
      const ck_setting *s = &e->settings[k];
      cJSON *w = rj_push_obj(&c->ok, wi);
      if (!w) return;
      rj_str(&c->ok, w, "setting", s->setting);
      rj_num(&c->ok, w, "arena_bytes", (double)s->arena_bytes);
      if (!cJSON_AddBoolToObject(w, "fits",
                                 ck_fits(c->r->opts.budget_bytes, s))) {
        c->ok = false;
      }
    }
  }
  if (arr && e->has_baseline) {
    cJSON *o = rj_push_obj(&c->ok, arr);
    if (!o) return;
    rj_str(&c->ok, o, "name", "baseline");
    rj_str(&c->ok, o, "status", mp_verdict_name(e->baseline));
    rj_str(&c->ok, o, "message", e->baseline_msg);
    rj_str(&c->ok, o, "baseline", e->baseline_path);
    rj_num(&c->ok, o, "tolerance_pct", c->r->opts.tolerance_ppm / 10000.0);
    if (c->ok && !cJSON_AddBoolToObject(o, "updated", c->r->opts.update))
      c->ok = false;
    if (e->diff && !c->r->opts.update) cj_bands(c, o, e);
  }
}

static void cj_regions(cj_ctx *c, cJSON *m, const mp_snapshot *s) {
  cJSON *arr = rj_arr(&c->ok, m, "regions");
  for (size_t k = 0; arr && k < mp_snapshot_region_count(s); k++) {
    const mp_snap_region *g = mp_snapshot_region(s, k);
    cJSON *o = rj_push_obj(&c->ok, arr);
    if (!o) return;
    rj_str(&c->ok, o, "name", g->name);
    rj_num(&c->ok, o, "arena_bytes", (double)g->arena_bytes);
    rj_num(&c->ok, o, "resident_bytes", (double)g->resident_bytes);
    rj_num(&c->ok, o, "lower_bound_bytes", (double)g->lower_bound_bytes);
  }
}

static void cj_entry(cj_ctx *c, cJSON *arr, const ck_entry *e) {
  cJSON *m = rj_push_obj(&c->ok, arr);
  if (!m) return;
  rj_str(&c->ok, m, "model", e->model);
  rj_str(&c->ok, m, "status", mp_verdict_name(e->verdict));
  if (e->error) {
    rj_str(&c->ok, m, "error", e->error);
    return;
  }
  rj_num(&c->ok, m, "arena_bytes", (double)mp_snapshot_total_bytes(e->now));
  cj_regions(c, m, e->now);
  cj_checks(c, m, e);
  if (!c->ok || !e->diff) return;
  cJSON *d = diff_json_tree(e->diff);
  if (!d || !cJSON_AddItemToObject(m, "diff", d)) {
    cJSON_Delete(d);
    c->ok = false;
  }
}

mp_status mp_check_report_json(const mp_check_report *r, mp_buf *out,
                               mp_error *err) {
  cj_ctx c = {r, true};
  cJSON *root = cJSON_CreateObject();
  if (!root) c.ok = false;
  rj_str(&c.ok, root, "mplan", "check/1");
  rj_str(&c.ok, root, "tool", "mplan " MP_VERSION);
  rj_str(&c.ok, root, "status", mp_verdict_name(mp_check_report_verdict(r)));
  cJSON *o = rj_obj(&c.ok, root, "options");
  if (o && r->opts.has_budget) {
    rj_num(&c.ok, o, "budget_bytes", (double)r->opts.budget_bytes);
  }
  if (o && r->opts.has_baseline) {
    rj_str(&c.ok, o, "baseline", r->opts.baseline_where);
    rj_num(&c.ok, o, "tolerance_pct", r->opts.tolerance_ppm / 10000.0);
    if (c.ok && !cJSON_AddBoolToObject(o, "update", r->opts.update))
      c.ok = false;
  }
  cJSON *counts = rj_obj(&c.ok, root, "counts");
  if (counts) {
    rj_num(&c.ok, counts, "models", (double)r->counts.models);
    rj_num(&c.ok, counts, "passed", (double)r->counts.passed);
    rj_num(&c.ok, counts, "failed", (double)r->counts.failed);
    rj_num(&c.ok, counts, "errors", (double)r->counts.errors);
  }
  cJSON *models = rj_arr(&c.ok, root, "models");
  for (size_t i = 0; models && i < r->n; i++) {
    cj_entry(&c, models, &r->entries[i]);
  }
  char *text = c.ok ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  if (!text)
    return mp_error_set(err, MP_ERR_NOMEM, "check JSON: out of memory");
  mp_buf_puts(out, text);
  mp_buf_puts(out, "\n");
  cJSON_free(text);
  return mp_buf_status(out, "check JSON", err);
}

/* ---- JUnit XML (invariant 2) -----------------------------------------------
 */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid, or
 * for U+FFFE/U+FFFF (not XML characters). */
static size_t ck_utf8(const unsigned char *s) {
  uint32_t cp;
  size_t n;
  if (s[0] < 0x80) return 1;
  if (s[0] >= 0xC2 && s[0] <= 0xDF) {
    n = 2;
    cp = s[0] & 0x1Fu;
  } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
    n = 3;
    cp = s[0] & 0x0Fu;
  } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
    n = 4;
    cp = s[0] & 0x07u;
  } else {
    return 0;
  }
  for (size_t k = 1; k < n; k++) {
    if ((s[k] & 0xC0) != 0x80) return 0; /* also stops at the NUL */
    cp = (cp << 6) | (s[k] & 0x3Fu);
  }
  static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ||
      cp == 0xFFFE || cp == 0xFFFF) {
    return 0;
  }
  return n;
}

static void ck_xml(mp_buf *out, const char *text) {
  const unsigned char *s = (const unsigned char *)(text ? text : "");
  while (*s) {
    size_t n = ck_utf8(s);
    if (n == 0) {
      mp_buf_puts(out, "\xEF\xBF\xBD"); /* U+FFFD */
      s++;
      continue;
    }
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
      case '\'':
        mp_buf_puts(out, "&apos;");
        break;
      case '\n':
        mp_buf_puts(out, "&#10;");
        break;
      case '\t':
        mp_buf_puts(out, "&#9;");
        break;
      case '\r':
        mp_buf_puts(out, "&#13;");
        break;
      default:
        if (*s < 0x20) {
          mp_buf_puts(out, "\xEF\xBF\xBD"); /* not an XML 1.0 character */
        } else {
          mp_buf_append(out, (const char *)s, n);
        }
    }
    s += n;
  }
}

static size_t ck_tests(const ck_entry *e) {
  return e->error ? 1 : (size_t)e->has_budget + (size_t)e->has_baseline;
}

static void ck_junit_case(mp_buf *out, const ck_entry *e, const char *name,
                          mp_verdict v, const char *msg, const char *details) {
  mp_buf_puts(out, "    <testcase classname=\"");
  ck_xml(out, e->model);
  mp_buf_printf(out, "\" name=\"%s\">\n", name);
  if (v == MP_VERDICT_PASS) {
    mp_buf_puts(out, "      <system-out>");
    ck_xml(out, msg);
    mp_buf_puts(out, "</system-out>\n");
  } else {
    const char *tag = v == MP_VERDICT_FAIL ? "failure" : "error";
    mp_buf_printf(out, "      <%s type=\"%s\" message=\"", tag, name);
    ck_xml(out, msg);
    mp_buf_puts(out, "\">");
    ck_xml(out, details ? details : msg);
    mp_buf_printf(out, "</%s>\n", tag);
  }
  mp_buf_puts(out, "    </testcase>\n");
}

static void ck_junit_entry(mp_buf *out, const ck_entry *e, mp_buf *scratch) {
  size_t fails = (e->has_budget && e->budget == MP_VERDICT_FAIL) +
                 (e->has_baseline && e->baseline == MP_VERDICT_FAIL);
  size_t errors = e->error ? 1 : e->has_baseline && e->baseline_error;
  mp_buf_puts(out, "  <testsuite name=\"");
  ck_xml(out, e->model);
  mp_buf_printf(out,
                "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
                "skipped=\"0\">\n",
                ck_tests(e), fails, errors);
  if (e->error) {
    ck_junit_case(out, e, "plan", MP_VERDICT_ERROR, e->error, NULL);
  }
  if (!e->error && e->has_budget) {
    scratch->len = 0;
    if (e->hint) mp_buf_printf(scratch, "%s\nhint: %s", e->budget_msg, e->hint);
    ck_junit_case(out, e, "budget", e->budget, e->budget_msg,
                  e->hint ? mp_buf_str(scratch) : NULL);
  }
  if (!e->error && e->has_baseline) {
    scratch->len = 0;
    mp_buf_printf(scratch, "%s\n", e->baseline_msg);
    if (ck_changed(e)) ck_text_details(e, scratch);
    ck_junit_case(out, e, "baseline", e->baseline, e->baseline_msg,
                  mp_buf_str(scratch));
  }
  mp_buf_puts(out, "  </testsuite>\n");
}

mp_status mp_check_report_junit(const mp_check_report *r, mp_buf *out,
                                mp_error *err) {
  size_t tests = 0, fails = 0, errors = 0;
  mp_buf scratch;
  mp_buf_init(&scratch, r->alloc);
  for (size_t i = 0; i < r->n; i++) {
    const ck_entry *e = &r->entries[i];
    tests += ck_tests(e);
    fails += (e->has_budget && e->budget == MP_VERDICT_FAIL) +
             (e->has_baseline && e->baseline == MP_VERDICT_FAIL);
    errors += e->error ? 1 : e->has_baseline && e->baseline_error;
  }
  mp_buf_printf(out,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<testsuites name=\"mplan check\" tests=\"%zu\" "
                "failures=\"%zu\" errors=\"%zu\">\n",
                tests, fails, errors);
  for (size_t i = 0; i < r->n; i++) {
    ck_junit_entry(out, &r->entries[i], &scratch);
  }
  mp_buf_puts(out, "</testsuites>\n");
  if (scratch.failed) out->failed = true;
  mp_buf_free(&scratch);
  return mp_buf_status(out, "JUnit XML", err);
}

/* ---- Markdown (invariant 3) ------------------------------------------------
 */

static void ck_md_row(const mp_check_report *r, const ck_entry *e,
                      mp_buf *out) {
  char a[MP_FMT_MAX], d[DIFF_FMT], p[DIFF_FMT];
  mp_buf_printf(out, "| %s | ", ck_emoji(e->verdict));
  diff_md_text(out, e->model);
  if (e->error) {
    mp_buf_puts(out, " | – | error | – |\n");
    return;
  }
  size_t now = mp_snapshot_total_bytes(e->now);
  mp_buf_printf(out, " | %s | ", mp_fmt_bytes(a, now));
  if (!e->has_baseline) {
    mp_buf_puts(out, "–");
  } else if (e->baseline_error) {
    mp_buf_puts(out, "error");
  } else if (!e->diff) {
    mp_buf_puts(out, "written");
  } else {
    size_t old = mp_diff_summary_of(e->diff)->total[0];
    if (old == now) {
      mp_buf_puts(out, "=");
    } else {
      mp_buf_printf(out, "%s (%s)",
                    diff_fmt_delta(d, (int64_t)now - (int64_t)old),
                    diff_fmt_pct(p, old, now));
    }
    if (r->opts.update) mp_buf_puts(out, ", updated");
  }
  if (e->has_budget && r->opts.budget_bytes) {
    mp_buf_printf(out, " | %.2f%% |\n",
                  100.0 * (double)now / (double)r->opts.budget_bytes);
  } else {
    mp_buf_puts(out, e->has_budget ? " | over |\n" : " | – |\n");
  }
}

static void ck_md_check(mp_buf *out, const char *name, mp_verdict v,
                        const char *msg) {
  mp_buf_printf(out, "- %s **%s**: ", ck_emoji(v), name);
  diff_md_text(out, msg);
  mp_buf_puts(out, "\n");
}

static void ck_md_details(const ck_entry *e, size_t budget, mp_buf *out) {
  mp_buf_printf(out, "<details><summary>%s ", ck_emoji(e->verdict));
  diff_md_text(out, e->model);
  mp_buf_printf(out, ": %s</summary>\n\n", mp_verdict_name(e->verdict));
  if (e->error) {
    ck_md_check(out, "plan", MP_VERDICT_ERROR, e->error);
  } else {
    if (e->has_budget) ck_md_check(out, "budget", e->budget, e->budget_msg);
    if (e->hint) {
      mp_buf_puts(out, "- \xF0\x9F\x92\xA1 **hint**: ");
      diff_md_text(out, e->hint);
      mp_buf_puts(out, "\n");
    }
    if (e->n_settings) {
      char b[MP_FMT_MAX];
      mp_buf_puts(out,
                  "\n| other setting | arena | budget |\n|---|---:|---|\n");
      for (size_t k = 0; k < e->n_settings; k++) {
        const ck_setting *s = &e->settings[k];
        mp_buf_puts(out, "| ");
        diff_md_text(out, s->setting);
        mp_buf_printf(out, " | %s B | %s |\n", mp_fmt_count(b, s->arena_bytes),
                      ck_fits(budget, s) ? "fits" : "over");
      }
    }
    if (e->has_baseline) {
      ck_md_check(out, "baseline", e->baseline, e->baseline_msg);
    }
  }
  if (e->diff) {
    mp_buf_puts(out, "\n");
    diff_markdown_body(e->diff, CK_TOP_MD, out);
  }
  mp_buf_puts(out, "\n</details>\n\n");
}

mp_status mp_check_report_markdown(const mp_check_report *r, mp_buf *out,
                                   mp_error *err) {
  mp_verdict v = mp_check_report_verdict(r);
  mp_buf_printf(out, "## mplan check: %s %s\n\n", ck_emoji(v),
                mp_verdict_name(v));
  ck_counts_line(r, out);
  mp_buf_puts(out, " · ");
  ck_settings(r, " · ", true, out);
  mp_buf_puts(out,
              "\n\n| | model | arena | vs baseline | of budget |\n"
              "| :-: | --- | ---: | ---: | ---: |\n");
  for (size_t i = 0; i < r->n; i++) ck_md_row(r, &r->entries[i], out);
  mp_buf_puts(out, "\n");
  for (size_t i = 0; i < r->n; i++) {
    ck_md_details(&r->entries[i], r->opts.budget_bytes, out);
  }
  return mp_buf_status(out, "check Markdown", err);
}
