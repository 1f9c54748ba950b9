/*
 * passes.c -- the per-pass table, the fusions and the scheduling table as
 * terminal text (mplan plan, mplan report).
 *
 * Invariants:
 *   1. Every row shows before -> after for ops, buffers, the activation
 *      lower bound and the arena, so a plan that differs from the
 *      unoptimised one differs only where a row says so.
 *   2. "peak moved" is stated separately from saved_bytes (seed 000
 *      section 4): memory traffic saved is not memory saved.
 *   3. Output is deterministic for a given model (times aside).
 */
#include <stdio.h>
#include <string.h>

#include "mplan/report.h"
#include "mplan/units.h"
#include "report_util.h"

#define RP_TOP_FUSIONS 8

static void rp_change(char *buf, size_t cap, size_t before, size_t after) {
  if (after == before) {
    snprintf(buf, cap, "=");
  } else if (after < before) {
    snprintf(buf, cap, "-%.1f%%", report_pct(before - after, before));
  } else {
    snprintf(buf, cap, "+%.1f%%", report_pct(after - before, before));
  }
}

static void rp_row(const mp_pass_row *r, mp_buf *out) {
  char a[MP_FMT_MAX], b[MP_FMT_MAX], c[MP_FMT_MAX], d[MP_FMT_MAX];
  char lb[96], arena[96], ops[48], bufs[48], chg[32], saved[MP_FMT_MAX];
  snprintf(ops, sizeof ops, "%zu->%zu", r->ops_before, r->ops_after);
  snprintf(bufs, sizeof bufs, "%zu->%zu", r->buffers_before, r->buffers_after);
  rp_change(chg, sizeof chg, r->lb_before, r->lb_after);
  snprintf(lb, sizeof lb, "%s -> %s (%s)", mp_fmt_count(a, r->lb_before),
           mp_fmt_count(b, r->lb_after), chg);
  if (r->arena_before || r->arena_after) {
    rp_change(chg, sizeof chg, r->arena_before, r->arena_after);
    snprintf(arena, sizeof arena, "%s -> %s (%s)",
             mp_fmt_count(c, r->arena_before), mp_fmt_count(d, r->arena_after),
             chg);
  } else {
    snprintf(arena, sizeof arena, "-");
  }
  mp_buf_printf(out, "  %-10s %-11s %-11s %-32s %-34s %-5s %12s  %s\n",
                mp_pass_name(r->pass), ops, bufs, lb, arena,
                r->lb_after != r->lb_before ? "yes" : "no",
                mp_fmt_count(saved, r->saved_bytes), r->detail);
}

/* The fusions saving the most traffic, first found first among equals. */
static void rp_fusions(const mp_pass_report *r, mp_buf *out) {
  size_t n = mp_pass_report_fusions(r);
  if (n == 0) return;
  size_t shown = n < RP_TOP_FUSIONS ? n : RP_TOP_FUSIONS, at_peak = 0;
  for (size_t i = 0; i < n; i++)
    at_peak += mp_pass_report_fusion(r, i)->at_peak;
  mp_buf_printf(out,
                "fusions     %zu (%zu touch a peak step); largest saved_bytes "
                "= 2 x size(intermediate) x steps (a shared prologue: 1 "
                "a reader, 2 the last):\n",
                n, at_peak);
  size_t pick[RP_TOP_FUSIONS];
  for (size_t k = 0; k < shown; k++) {
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
      bool taken = false;
      for (size_t j = 0; j < k; j++) taken = taken || pick[j] == i;
      if (taken) continue;
      if (best == n || mp_pass_report_fusion(r, i)->saved_bytes >
                           mp_pass_report_fusion(r, best)->saved_bytes) {
        best = i;
      }
    }
    pick[k] = best;
  }
  for (size_t k = 0; k < shown; k++) {
    const mp_fusion *f = mp_pass_report_fusion(r, pick[k]);
    char a[MP_FMT_MAX], b[MP_FMT_MAX], regs[48] = "";
    if (f->spills >= 0) {
      snprintf(regs, sizeof regs, ", %u vregs, %d spills%s", f->registers,
               f->spills, f->capped ? ", capped" : "");
    }
    /* 2 (a write and a read eliminated a step), or 1 for a reader of a
     * shared prologue but the last (absorb.c rule 8) */
    size_t unit = f->intermediate_bytes * f->steps;
    size_t times =
        unit && f->saved_bytes % unit == 0 ? f->saved_bytes / unit : 2;
    if (times > 2 || (times == 2 && unit * 2 != f->saved_bytes)) {
      /* intermediates of different sizes (f32 and 8-bit ones of a chain
       * through QDQ pairs, fuse.c condition 8): 2 x their sum */
      char c[MP_FMT_MAX];
      mp_buf_printf(out,
                    "  %-10s %s %s + %s: 2 x %s B in %u intermediates = "
                    "%s B%s%s\n",
                    mp_fusion_kind_name(f->kind), f->op, f->head_type,
                    f->absorbed, mp_fmt_count(c, f->saved_bytes / 2), f->steps,
                    mp_fmt_count(b, f->saved_bytes),
                    f->at_peak ? ", at a peak step" : "", regs);
      continue;
    }
    mp_buf_printf(out, "  %-10s %s %s + %s: %zu x %s x %u = %s B%s%s\n",
                  mp_fusion_kind_name(f->kind), f->op, f->head_type,
                  f->absorbed, times, mp_fmt_count(a, f->intermediate_bytes),
                  f->steps, mp_fmt_count(b, f->saved_bytes),
                  f->at_peak ? ", at a peak step" : "", regs);
  }
  if (n > shown) {
    mp_buf_printf(out, "  ... %zu more (plan JSON \"passes\".\"fusions\")\n",
                  n - shown);
  }
}

static void rp_passes(const mp_pass_report *r, mp_buf *out) {
  size_t n = mp_pass_report_rows(r);
  mp_buf_puts(out, "passes     ");
  for (size_t i = 0; i < n; i++) {
    mp_buf_printf(out, "%s%s", i ? ", " : " ",
                  mp_pass_name(mp_pass_report_row(r, i)->pass));
  }
  if (mp_pass_report_vlen(r)) {
    mp_buf_printf(out, " (register estimates for VLEN %u)",
                  mp_pass_report_vlen(r));
  }
  mp_buf_puts(out, "\n");
  mp_buf_printf(out, "  %-10s %-11s %-11s %-32s %-34s %-5s %12s  %s\n", "pass",
                "ops", "buffers", "lower bound before -> after",
                "arena before -> after", "peak", "saved B", "what");
  for (size_t i = 0; i < n; i++) rp_row(mp_pass_report_row(r, i), out);
  rp_fusions(r, out);
}

static void rp_schedule(const mp_schedule_info *s, mp_buf *out) {
  char a[MP_FMT_MAX], w[MP_FMT_MAX], wb[MP_FMT_MAX];
  size_t base = s->n_cand ? s->cand[0].peak : 0;
  mp_buf_printf(
      out,
      "schedule    memory: %zu segment%s (largest %zu ops), %zu met "
      "the step bound, %zu the branch bound, exact search finished "
      "%zu, improved %zu (%zu by a branch order, %zu by the beam, %zu "
      "by moving ops), "
      "%zu states, work %s of %s, %.1f ms; %s\n",
      s->segments, s->segments == 1 ? "" : "s", s->largest_segment,
      s->bound_segments, s->branch_segments, s->dp_segments, s->dp_improved,
      s->branch_improved, s->beam_improved, s->move_improved, s->dp_states,
      mp_fmt_count(w, s->work), mp_fmt_count(wb, s->work_budget), s->ms,
      s->peak_bound ? "optimal for this graph: its peak meets a "
                      "bound every order has (not every segment "
                      "below it was proven)"
      : s->exact    ? "optimal for this graph"
      : s->time_hit ? "the wall-clock cap stopped the search: best "
                      "found on this machine"
      : s->work_hit ? "work budget reached: best found"
                    : "search cut to its state budget: best found");
  for (size_t k = 0; k < s->n_cand; k++) {
    mp_buf_printf(out, "  %-12s %s\n", s->cand[k].name,
                  mp_fmt_bytes(a, s->cand[k].peak));
  }
  mp_buf_printf(out, "  %-12s %s", "memory", mp_fmt_bytes(a, s->peak));
  if (base && base == s->peak) {
    mp_buf_printf(out, "  (the same as %s)", s->cand[0].name);
  } else if (s->peak && base) {
    mp_buf_printf(out, "  (%.3fx lower than %s)",
                  (double)base / (double)s->peak, s->cand[0].name);
  }
  mp_buf_puts(out, "\n");
  if (!s->exact && s->bound) {
    mp_buf_printf(out,
                  "  %-12s %s: no order is lower; this one is at most %.2f%% "
                  "above the optimum\n",
                  "bound", mp_fmt_bytes(a, s->bound),
                  100.0 * (double)(s->peak - s->bound) / (double)s->bound);
  }
}

mp_status mp_report_passes(const mp_model *m, mp_buf *out, mp_error *err) {
  const mp_pass_report *r = mp_model_pass_report(m);
  const mp_schedule_info *s = mp_model_schedule_info(m);
  if (r) rp_passes(r, out);
  if (s && s->used == MP_ORDER_MEMORY) rp_schedule(s, out);
  return mp_buf_status(out, "passes", err);
}
