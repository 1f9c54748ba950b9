/*
 * check.c -- the verdicts of the CI gate (mplan/check.h): the budget, the
 * two-sided tolerance band around a baseline, and the report that
 * collects them for many models.
 *
 * Invariants:
 *   1. The band is computed in integers: w = floor(old * ppm / 10^6)
 *      exactly, and a region passes iff |new - old| <= w. No rounding of
 *      a double decides a gate.
 *   2. A model's verdict is error if it could not be planned or its
 *      baseline could not be used; otherwise fail if any check failed;
 *      otherwise pass. The report's verdict is the worst of its entries.
 *   3. Each entry's messages are built once, when it is added, so every
 *      renderer says the same thing.
 *   4. The report owns every snapshot handed to it, from the call on.
 */
#include <stdio.h>
#include <string.h>

#include "check_internal.h"
#include "diff_internal.h"
#include "mplan/units.h"

#define CK_MILLION 1000000u
#define CK_MAX_PPM 10000000u /* 1000% */

static const char *const ck_verdict_names[] = {"pass", "fail", "error"};

const char *mp_verdict_name(mp_verdict v) {
  return v <= MP_VERDICT_ERROR ? ck_verdict_names[v] : "?";
}

/* ---- the band (invariant 1) -----------------------------------------------
 */

size_t mp_check_band(size_t old, uint32_t ppm) {
  size_t q = old / CK_MILLION, r = old % CK_MILLION, hi, w;
  if (!mp_size_mul(q, ppm, &hi)) return SIZE_MAX;
  if (!mp_size_add(hi, (size_t)((uint64_t)r * ppm / CK_MILLION), &w)) {
    return SIZE_MAX;
  }
  return w;
}

mp_status mp_check_parse_tolerance(const char *text, uint32_t *ppm,
                                   mp_error *err) {
  const char *s = text;
  uint64_t whole = 0, frac = 0;
  unsigned digits = 0, decimals = 0;
  for (; *s >= '0' && *s <= '9' && whole <= CK_MAX_PPM; s++, digits++) {
    whole = whole * 10 + (uint64_t)(*s - '0');
  }
  if (*s == '.') {
    for (s++; *s >= '0' && *s <= '9' && decimals < 5; s++, decimals++) {
      frac = frac * 10 + (uint64_t)(*s - '0');
    }
  }
  if (*s == '%') s++;
  for (unsigned k = decimals; k < 4; k++) frac *= 10;
  uint64_t v = whole * 10000 + frac; /* percent * 10^4 = ppm */
  if (digits == 0 || *s != '\0' || decimals > 4 || v > CK_MAX_PPM) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "tolerance '%s': expected a percentage like 3%% or "
                        "0.5%% (at most 4 decimals, at most 1000%%)",
                        text);
  }
  *ppm = (uint32_t)v;
  return MP_OK;
}

void ck_fmt_tolerance(char *buf, size_t cap, uint32_t ppm) {
  int n = snprintf(buf, cap, "%u.%04u", ppm / 10000, ppm % 10000);
  size_t len = n > 0 && (size_t)n < cap ? (size_t)n : 0;
  while (len > 0 && buf[len - 1] == '0') buf[--len] = '\0';
  if (len > 0 && buf[len - 1] == '.') buf[--len] = '\0';
  if (len + 1 < cap) {
    buf[len] = '%';
    buf[len + 1] = '\0';
  }
}

/* ---- the report -----------------------------------------------------------
 */

mp_status mp_check_report_create(const mp_check_opts *o, const mp_alloc *a,
                                 mp_check_report **out, mp_error *err) {
  mp_check_report *r = mp_calloc(a, 1, sizeof *r);
  if (!r) return mp_error_set(err, MP_ERR_NOMEM, "check: out of memory");
  r->alloc = a;
  r->opts = *o;
  *out = r;
  return MP_OK;
}

static void ck_settings_free(const mp_alloc *a, ck_setting *s, size_t n) {
  for (size_t k = 0; k < n; k++) mp_free(a, s[k].setting);
  mp_free(a, s);
}

static void ck_entry_free(const mp_alloc *a, ck_entry *e) {
  mp_free(a, e->model);
  mp_free(a, e->error);
  mp_diff_destroy(e->diff);
  mp_snapshot_destroy(e->now);
  mp_snapshot_destroy(e->base);
  mp_free(a, e->baseline_path);
  mp_free(a, e->budget_msg);
  mp_free(a, e->hint);
  ck_settings_free(a, e->settings, e->n_settings);
  mp_free(a, e->baseline_msg);
}

void mp_check_report_destroy(mp_check_report *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) ck_entry_free(r->alloc, &r->entries[i]);
  mp_free(r->alloc, r->entries);
  mp_free(r->alloc, r);
}

static mp_status ck_nomem(mp_error *err) {
  return mp_error_set(err, MP_ERR_NOMEM, "check: out of memory");
}

/* Room for one more entry, zeroed; NULL when out of memory. */
static ck_entry *ck_new_entry(mp_check_report *r, mp_error *err) {
  void *p = r->entries;
  if (mp_grow(r->alloc, &p, &r->cap, r->n + 1, sizeof *r->entries, "check",
              err) != MP_OK) {
    return NULL;
  }
  r->entries = p;
  memset(&r->entries[r->n], 0, sizeof *r->entries);
  return &r->entries[r->n];
}

/* Counts a complete entry in (invariant 2). */
static void ck_commit(mp_check_report *r, ck_entry *e) {
  if (e->error || (e->has_baseline && e->baseline == MP_VERDICT_ERROR)) {
    e->verdict = MP_VERDICT_ERROR;
    r->counts.errors++;
  } else if ((e->has_budget && e->budget == MP_VERDICT_FAIL) ||
             (e->has_baseline && e->baseline == MP_VERDICT_FAIL)) {
    e->verdict = MP_VERDICT_FAIL;
    r->counts.failed++;
  } else {
    e->verdict = MP_VERDICT_PASS;
    r->counts.passed++;
  }
  r->counts.models++;
  r->n++;
}

mp_status mp_check_report_error(mp_check_report *r, const char *model,
                                const char *message, mp_error *err) {
  ck_entry *e = ck_new_entry(r, err);
  if (!e) return MP_ERR_NOMEM;
  e->model = mp_strdup(r->alloc, model);
  e->error = mp_strdup(r->alloc, message);
  if (!e->model || !e->error) {
    ck_entry_free(r->alloc, e);
    return ck_nomem(err);
  }
  ck_commit(r, e);
  return MP_OK;
}

/* ---- messages (invariant 3) -----------------------------------------------
 */

static void ck_budget(const mp_check_report *r, ck_entry *e, mp_buf *b) {
  size_t arena = mp_snapshot_total_bytes(e->now), budget = r->opts.budget_bytes;
  char x[MP_FMT_MAX], y[MP_FMT_MAX], z[MP_FMT_MAX];
  e->has_budget = true;
  e->budget = arena <= budget ? MP_VERDICT_PASS : MP_VERDICT_FAIL;
  if (e->budget == MP_VERDICT_PASS) {
    mp_buf_printf(b, "arena %s is %.2f%% of the budget %s",
                  mp_fmt_bytes(x, arena),
                  budget ? 100.0 * (double)arena / (double)budget : 0.0,
                  mp_fmt_bytes(y, budget));
  } else {
    mp_buf_printf(b, "arena %s exceeds the budget %s by %s",
                  mp_fmt_bytes(x, arena), mp_fmt_bytes(y, budget),
                  mp_fmt_bytes(z, arena - budget));
  }
}

/* One region's band verdict and words; returns the verdict. */
static mp_verdict ck_band_region(const mp_check_report *r,
                                 const mp_diff_region *g, bool named,
                                 mp_buf *b) {
  char x[MP_FMT_MAX], y[MP_FMT_MAX], w[MP_FMT_MAX], t[32];
  size_t old = g->arena[0], now = g->arena[1];
  size_t width = mp_check_band(old, r->opts.tolerance_ppm);
  size_t dist = now > old ? now - old : old - now;
  ck_fmt_tolerance(t, sizeof t, r->opts.tolerance_ppm);
  if (named) mp_buf_printf(b, "region '%s': ", g->name);
  if (!g->a || !g->b) {
    mp_buf_printf(b, "the region is %s the baseline",
                  g->a ? "gone since" : "not in");
    return MP_VERDICT_FAIL;
  }
  mp_verdict v = dist <= width ? MP_VERDICT_PASS : MP_VERDICT_FAIL;
  if (dist == 0) {
    mp_buf_printf(b, "arena %s = baseline (band +-%s, %s)",
                  mp_fmt_bytes(x, now), mp_fmt_bytes(w, width), t);
    return v;
  }
  char d[DIFF_FMT], p[DIFF_FMT];
  diff_fmt_delta(d, (int64_t)now - (int64_t)old);
  diff_fmt_pct(p, old, now);
  mp_buf_printf(b, "arena %s vs baseline %s: %s (%s), %s the band +-%s (%s)",
                mp_fmt_bytes(x, now), mp_fmt_bytes(y, old), d, p,
                v == MP_VERDICT_PASS ? "within" : "outside",
                mp_fmt_bytes(w, width), t);
  if (v == MP_VERDICT_FAIL && now < old) {
    mp_buf_puts(b,
                ": an unexpected saving; refresh the baseline "
                "(--update-baseline)");
  }
  return v;
}

static void ck_band(const mp_check_report *r, ck_entry *e, mp_buf *b) {
  size_t n = mp_diff_region_count(e->diff);
  e->baseline = MP_VERDICT_PASS;
  for (size_t k = 0; k < n; k++) {
    if (k) mp_buf_puts(b, "; ");
    if (ck_band_region(r, mp_diff_region_at(e->diff, k), n > 1, b) ==
        MP_VERDICT_FAIL) {
      e->baseline = MP_VERDICT_FAIL;
    }
  }
}

static void ck_updated(ck_entry *e, mp_buf *b) {
  char x[MP_FMT_MAX], y[MP_FMT_MAX], d[DIFF_FMT], p[DIFF_FMT];
  size_t now = mp_snapshot_total_bytes(e->now);
  e->baseline = MP_VERDICT_PASS;
  if (!e->diff) {
    mp_buf_printf(b, "baseline written: arena %s", mp_fmt_bytes(x, now));
    return;
  }
  size_t old = mp_diff_summary_of(e->diff)->total[0];
  if (old == now && !ck_changed(e)) {
    mp_buf_printf(b, "baseline rewritten: arena unchanged at %s",
                  mp_fmt_bytes(x, now));
    return;
  }
  mp_buf_printf(b, "baseline updated: arena %s -> %s: %s (%s)",
                mp_fmt_bytes(x, old), mp_fmt_bytes(y, now),
                diff_fmt_delta(d, (int64_t)now - (int64_t)old),
                diff_fmt_pct(p, old, now));
}

bool ck_changed(const ck_entry *e) {
  if (!e->diff) return false;
  const mp_diff_summary *s = mp_diff_summary_of(e->diff);
  if (s->delta || s->peak_moved || s->order_changed) return true;
  if (mp_diff_tensor_count(e->diff)) return true;
  for (size_t k = 0; k < mp_diff_region_count(e->diff); k++) {
    const mp_diff_region *g = mp_diff_region_at(e->diff, k);
    if (g->by_resident || g->by_sizes || g->by_order || g->by_fragmentation) {
      return true;
    }
  }
  return false;
}

/* Builds the entry's checks and messages; the entry owns now and base. */
static mp_status ck_judge(mp_check_report *r, ck_entry *e,
                          const char *base_error, mp_error *err) {
  mp_buf b1, b2;
  mp_status st = MP_OK;
  mp_buf_init(&b1, r->alloc);
  mp_buf_init(&b2, r->alloc);
  if (e->base) st = mp_diff_create(e->base, e->now, r->alloc, &e->diff, err);
  if (st == MP_OK && r->opts.has_budget) ck_budget(r, e, &b1);
  if (st == MP_OK && r->opts.has_baseline) {
    e->has_baseline = true;
    if (base_error) {
      e->baseline = MP_VERDICT_ERROR;
      e->baseline_error = true;
      mp_buf_puts(&b2, base_error);
    } else if (r->opts.update) {
      ck_updated(e, &b2);
    } else if (e->diff) {
      ck_band(r, e, &b2);
    } else {
      st = mp_error_set(err, MP_ERR_INTERNAL,
                        "check: %s: no baseline and no reason given", e->model);
    }
  }
  if (st == MP_OK && (b1.failed || b2.failed)) st = ck_nomem(err);
  if (st == MP_OK && e->has_budget &&
      !(e->budget_msg = mp_strdup(r->alloc, mp_buf_str(&b1)))) {
    st = ck_nomem(err);
  }
  if (st == MP_OK && e->has_baseline &&
      !(e->baseline_msg = mp_strdup(r->alloc, mp_buf_str(&b2)))) {
    st = ck_nomem(err);
  }
  mp_buf_free(&b1);
  mp_buf_free(&b2);
  return st;
}

mp_status mp_check_report_add(mp_check_report *r, const char *model,
                              mp_snapshot *now, mp_snapshot *base,
                              const char *baseline_path, const char *base_error,
                              mp_error *err) {
  ck_entry *e = ck_new_entry(r, err);
  if (!e) {
    mp_snapshot_destroy(now);
    mp_snapshot_destroy(base);
    return MP_ERR_NOMEM;
  }
  e->now = now;
  e->base = base;
  e->model = mp_strdup(r->alloc, model);
  e->baseline_path = baseline_path ? mp_strdup(r->alloc, baseline_path) : NULL;
  mp_status st = MP_OK;
  if (!e->model || (baseline_path && !e->baseline_path)) st = ck_nomem(err);
  if (st == MP_OK) st = ck_judge(r, e, base_error, err);
  if (st != MP_OK) {
    ck_entry_free(r->alloc, e);
    return st;
  }
  ck_commit(r, e);
  return MP_OK;
}

const mp_check_counts *mp_check_report_counts(const mp_check_report *r) {
  return &r->counts;
}

mp_status mp_check_report_hint(mp_check_report *r, size_t i, const char *hint,
                               mp_error *err) {
  if (i >= r->n) {
    return mp_error_set(err, MP_ERR_INTERNAL, "check: no entry %zu", i);
  }
  char *copy = mp_strdup(r->alloc, hint);
  if (!copy) return ck_nomem(err);
  mp_free(r->alloc, r->entries[i].hint);
  r->entries[i].hint = copy;
  return MP_OK;
}

mp_status mp_check_report_settings(mp_check_report *r, size_t i,
                                   const mp_check_setting *s, size_t n,
                                   mp_error *err) {
  if (i >= r->n) {
    return mp_error_set(err, MP_ERR_INTERNAL, "check: no entry %zu", i);
  }
  ck_entry *e = &r->entries[i];
  ck_setting *copy = mp_calloc(r->alloc, n ? n : 1, sizeof *copy);
  if (!copy) return ck_nomem(err);
  for (size_t k = 0; k < n; k++) {
    copy[k].arena_bytes = s[k].arena_bytes;
    copy[k].setting = mp_strdup(r->alloc, s[k].setting);
    if (!copy[k].setting) {
      ck_settings_free(r->alloc, copy, k);
      return ck_nomem(err);
    }
  }
  ck_settings_free(r->alloc, e->settings, e->n_settings);
  e->settings = copy;
  e->n_settings = n;
  return MP_OK;
}

mp_verdict mp_check_report_entry_verdict(const mp_check_report *r, size_t i) {
  return r->entries[i].verdict;
}

mp_verdict mp_check_report_verdict(const mp_check_report *r) {
  if (r->counts.errors) return MP_VERDICT_ERROR;
  return r->counts.failed ? MP_VERDICT_FAIL : MP_VERDICT_PASS;
}
