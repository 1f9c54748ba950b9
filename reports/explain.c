/*
 * explain.c -- the peak explanation (seed 001 section 5) as terminal text.
 *
 * It answers, in this order: how big is the arena and of what; where is the
 * peak (interval, steps, ops); which tensors make it, largest first, and
 * why each is still alive; what alignment wastes; and how far the plan is
 * from the lower bound. Under --order memory, the header says whether
 * the order is proven optimal and by what.
 *
 * Invariants:
 *   1. Bytes are printed exactly with thousands separators, plus KiB/MiB.
 *   2. The tensors listed at the peak sum to the lower bound (they are the
 *      live set of the first peak step).
 *   3. Output is deterministic for a given model and plan.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mplan/report.h"
#include "mplan/schedule.h"
#include "mplan/units.h"
#include "report_util.h"

typedef struct ex_ctx {
  const mp_model *m;
  const mp_plan *plan;
  const mp_problem *p;
  const mp_plan_summary *s;
  size_t top;
  mp_buf *out;
} ex_ctx;

/* With more than one region: what each holds, and the bank conflicts. */
static void ex_regions(const mp_plan *plan, mp_buf *out) {
  char a[MP_FMT_MAX], b[MP_FMT_MAX], d[MP_FMT_MAX], e[MP_FMT_MAX];
  size_t n = mp_plan_region_count(plan);
  for (size_t r = 0; n > 1 && r < n; r++) {
    const mp_plan_region *reg = mp_plan_region_at(plan, r);
    mp_buf_printf(out, "%s %-7s %s of %s: resident %s B, activations %s B",
                  r ? "           " : "regions    ", reg->name,
                  mp_fmt_count(a, reg->used_bytes),
                  reg->capacity ? mp_fmt_bytes(b, reg->capacity) : "unbounded",
                  mp_fmt_count(d, reg->fixed_bytes),
                  mp_fmt_count(e, reg->activation_bytes));
    if (reg->spilled_in) {
      mp_buf_printf(out, " (%zu spilled in)", reg->spilled_in);
    }
    mp_buf_puts(out, "\n");
  }
  size_t before, left = mp_plan_bank_conflicts(plan, NULL, &before);
  if (before) {
    mp_buf_printf(out,
                  "banks       %zu inputs of one op started in one bank; %zu "
                  "remain\n",
                  before, left);
  }
}

/* Under --order memory: how good the order is, and what proves it. */
static void ex_order(ex_ctx *c) {
  const mp_schedule_info *si = mp_model_schedule_info(c->m);
  if (!si || si->used != MP_ORDER_MEMORY || !si->n_cand) return;
  char a[MP_FMT_MAX], b[MP_FMT_MAX];
  size_t file = si->cand[0].peak;
  if (si->peak != file) {
    mp_buf_printf(c->out, "memory order %s, %.3fx lower than %s (%s B); ",
                  mp_fmt_bytes(a, si->peak),
                  si->peak ? (double)file / (double)si->peak : 1.0,
                  si->cand[0].name, mp_fmt_count(b, file));
  } else {
    mp_buf_printf(c->out, "memory order %s, the same as %s; ",
                  mp_fmt_bytes(a, si->peak), si->cand[0].name);
  }
  if (si->peak_bound) {
    mp_buf_puts(c->out, "optimal: its peak meets a bound every order has\n");
  } else if (si->exact) {
    mp_buf_printf(c->out,
                  "optimal: of %zu segment%s, %zu met the step bound, %zu "
                  "the branch bound, %zu were searched to the end\n",
                  si->segments, si->segments == 1 ? "" : "s",
                  si->bound_segments, si->branch_segments, si->dp_segments);
  } else {
    mp_buf_printf(c->out, "best found, not proven: %s",
                  si->time_hit   ? "the wall-clock cap stopped the search"
                  : si->work_hit ? "the work budget ran out (--order-work)"
                                 : "a search was cut to its states a level "
                                   "(--order-states)");
    if (si->bound) {
      char l[MP_FMT_MAX];
      mp_buf_printf(c->out,
                    "; no order is below %s, so this one is at most %.2f%% "
                    "above the optimum",
                    mp_fmt_bytes(l, si->bound),
                    100.0 * (double)(si->peak - si->bound) / (double)si->bound);
    }
    mp_buf_puts(c->out, "\n");
  }
}

static void ex_header(ex_ctx *c) {
  const mp_model *m = c->m;
  int64_t t0, t1;
  mp_problem_span(c->p, &t0, &t1);
  mp_buf_printf(c->out, "mplan explain: %s\n", mp_model_path(m));
  mp_buf_printf(
      c->out, "model '%s' (%s) | %zu buffers | %s %" PRId64 "..%" PRId64 "\n",
      mp_model_name(m), mp_model_format_name(mp_model_format_of(m)),
      mp_problem_count(c->p),
      mp_model_format_of(m) == MP_FORMAT_MINIMALLOC ? "times" : "steps", t0,
      t1);
  mp_buf_printf(c->out,
                "strategy %s | order %s | backend %s | planned in %.3f ms\n",
                c->s->strategy, mp_model_order_name(m),
                mp_model_backend_name(m), c->s->plan_ms);
  if (c->s->detail && *c->s->detail) {
    mp_buf_printf(c->out, "%s\n", c->s->detail);
  }
  ex_order(c);
  ex_regions(c->plan, c->out);
  mp_buf_puts(c->out, "\n");
}

static void ex_totals(ex_ctx *c) {
  const mp_plan_summary *s = c->s;
  char a[MP_FMT_MAX], b[MP_FMT_MAX], d[MP_FMT_MAX];
  mp_buf_printf(c->out, "Arena            %s\n",
                mp_fmt_bytes(a, s->arena_bytes));
  mp_buf_printf(c->out, "  resident       %s%s\n",
                mp_fmt_bytes(b, s->resident_bytes),
                s->retained_bytes ? " (includes retained state)" : "");
  if (s->retained_bytes) {
    mp_buf_printf(c->out, "  retained       %s\n",
                  mp_fmt_bytes(b, s->retained_bytes));
  }
  mp_buf_printf(c->out, "  activations    %s\n",
                mp_fmt_bytes(d, s->activation_peak_bytes));
  size_t saved = s->no_reuse_bytes > s->activation_peak_bytes
                     ? s->no_reuse_bytes - s->activation_peak_bytes
                     : 0;
  mp_buf_printf(c->out, "No reuse         %s; reuse saves %s, %.1f%%\n\n",
                mp_fmt_bytes(a, s->no_reuse_bytes), mp_fmt_bytes(b, saved),
                report_pct(saved, s->no_reuse_bytes));
}

/* ", patch (1, 0) of op 'b2_expand'" when step t runs an op of the tile
 * pass's patches, else "". */
static void ex_patch(ex_ctx *c, int64_t t, char *buf, size_t cap) {
  char what[300];
  report_step_patch(c->m, t, what, sizeof what);
  snprintf(buf, cap, "%s%s", *what ? ", " : "", what);
}

static void ex_interval(ex_ctx *c, const mp_segment *seg) {
  char op[160], patch[320];
  const char *w = report_time_word(c->m);
  if (seg->first == seg->last) {
    report_step_op(c->m, seg->first, op, sizeof op);
    ex_patch(c, seg->first, patch, sizeof patch);
    mp_buf_printf(c->out, "  %s %" PRId64 "%s%s%s\n", w, seg->first,
                  *op ? " " : "", op, patch);
    return;
  }
  mp_buf_printf(c->out, "  %ss %" PRId64 "..%" PRId64 "\n", w, seg->first,
                seg->last);
  if (mp_model_steps(c->m) == 0) return;
  int64_t shown = 0;
  for (int64_t t = seg->first; t <= seg->last && shown < 8; t++, shown++) {
    report_step_op(c->m, t, op, sizeof op);
    ex_patch(c, t, patch, sizeof patch);
    mp_buf_printf(c->out, "    %s %" PRId64 "%s%s%s\n", w, t, *op ? " " : "",
                  op, patch);
  }
  if (seg->last - seg->first + 1 > shown) {
    mp_buf_printf(c->out, "    ... %" PRId64 " more\n",
                  seg->last - seg->first + 1 - shown);
  }
}

static void ex_peak(ex_ctx *c) {
  const mp_profile *prof = mp_plan_profile(c->plan);
  char a[MP_FMT_MAX];
  if (prof->peak == 0) {
    mp_buf_puts(c->out, "Peak: no activation is ever live.\n\n");
    return;
  }
  const mp_segment *first = &prof->segs[prof->peaks[0]];
  mp_buf_printf(c->out, "Peak %s in %zu tensors, %s:\n",
                mp_fmt_bytes(a, prof->peak), first->count,
                prof->n_peaks == 1 ? "one interval"
                                   : "several intervals (first detailed)");
  for (size_t k = 0; k < prof->n_peaks && k < c->top; k++) {
    ex_interval(c, &prof->segs[prof->peaks[k]]);
  }
  if (prof->n_peaks > c->top) {
    mp_buf_printf(c->out, "  ... %zu more intervals\n", prof->n_peaks - c->top);
  }
  mp_buf_puts(c->out, "\n");
}

/* Why buffer i is still live at time t: what keeps it. */
static void ex_why(ex_ctx *c, size_t i, int64_t t, char *buf, size_t cap) {
  const mp_buffer *b = mp_problem_buffer(c->p, i);
  const char *cons = mp_model_last_consumer(c->m, i);
  const char *w = report_time_word(c->m);
  if (report_holds_output(c->m, i)) {
    snprintf(buf, cap, "graph output: kept to the end");
  } else if (b->last == t && b->first == t) {
    snprintf(buf, cap, "born here%s%s", cons ? ", read by " : "",
             cons ? cons : "");
  } else if (b->last == t) {
    snprintf(buf, cap, "last read here%s%s", cons ? " by " : "",
             cons ? cons : "");
  } else if (cons) {
    snprintf(buf, cap, "read later by %s (%s %" PRId64 ")", cons, w, b->last);
  } else {
    snprintf(buf, cap, "live until %s %" PRId64, w, b->last);
  }
}

static void ex_born(ex_ctx *c, size_t i, char *buf, size_t cap) {
  const mp_buffer *b = mp_problem_buffer(c->p, i);
  const char *prod = mp_model_producer(c->m, i);
  if (prod) {
    snprintf(buf, cap, "%s", prod);
  } else if (mp_model_graph(c->m)) {
    snprintf(buf, cap, "(graph input)");
  } else {
    snprintf(buf, cap, "%s %" PRId64, report_time_word(c->m), b->first);
  }
}

/* Buffers at the peak that hold several tensors (views, in place): what
 * else lives in their bytes and why. */
static void ex_shared(ex_ctx *c, const size_t *idx, size_t n) {
  for (size_t k = 0; mp_model_graph(c->m) && k < n && k < c->top; k++) {
    const uint32_t *members;
    if (mp_model_buffer_tensors(c->m, idx[k], &members) < 2) continue;
    mp_buf_printf(c->out, "  %s also holds ",
                  mp_problem_buffer(c->p, idx[k])->name);
    report_members(c->m, idx[k], c->out);
    mp_buf_puts(c->out, "\n");
  }
}

/* Buffers at the peak with bytes that hold no live tensor
 * (mp_model_buffer_in_use): a Concat's slices still to come, or the rest
 * of an input a smaller output was written over. The lower bound counts
 * them: a buffer is one rectangle in the plan. */
static void ex_idle(ex_ctx *c, const size_t *idx, size_t n, int64_t t) {
  const mp_profile *prof = mp_plan_profile(c->plan);
  size_t total = 0, count = 0;
  for (size_t k = 0; k < n; k++) {
    size_t idle = report_idle(c->m, c->p, idx[k], t, NULL, NULL, NULL);
    total += idle;
    count += idle > 0;
  }
  if (!count) return;
  char a[MP_FMT_MAX], d[MP_FMT_MAX], e[MP_FMT_MAX];
  mp_buf_printf(c->out,
                "  idle in live buffers: %s, %.1f%% of the peak, in %zu "
                "buffer%s (a buffer spans all its tensors; these bytes hold "
                "none live at this %s):\n",
                mp_fmt_bytes(a, total), report_pct(total, prof->peak), count,
                count == 1 ? "" : "s", report_time_word(c->m));
  for (size_t k = 0, shown = 0; k < n && shown < c->top; k++) {
    const mp_buffer *b = mp_problem_buffer(c->p, idx[k]);
    int64_t next;
    const char *writer;
    size_t w;
    if (!report_idle(c->m, c->p, idx[k], t, &w, &next, &writer)) continue;
    shown++;
    mp_buf_printf(c->out, "    %s: %s of %s in use", b->name,
                  mp_fmt_bytes(d, w), mp_fmt_bytes(e, b->size));
    if (next >= 0) {
      mp_buf_printf(c->out, "; the rest is written at %s %" PRId64 " (%s)\n",
                    report_time_word(c->m), next, writer);
    } else {
      mp_buf_puts(c->out, "; the rest held tensors no longer read\n");
    }
  }
}

/* Appends "+name bytes" (born) or "-name bytes" (freed) for the
 * activation buffers born at t (born) or freed after t (!born), at most
 * EX_STEP_NAMES of them; returns how many there are. */
#define EX_STEP_NAMES 4
static size_t ex_step_changes(ex_ctx *c, int64_t t, bool born, size_t listed) {
  size_t n = 0;
  for (size_t i = 0; i < mp_problem_count(c->p); i++) {
    const mp_buffer *b = mp_problem_buffer(c->p, i);
    if (b->cls != MP_CLASS_ACTIVATION || (born ? b->first : b->last) != t)
      continue;
    if (n++ >= EX_STEP_NAMES) continue;
    char bytes[MP_FMT_MAX];
    mp_buf_printf(c->out, "%s%c%s %s", listed + n > 1 ? ", " : " ",
                  born ? '+' : '-', b->name, mp_fmt_bytes(bytes, b->padded));
  }
  if (n > EX_STEP_NAMES) {
    mp_buf_printf(c->out, ", %zu more %s", n - EX_STEP_NAMES,
                  born ? "born" : "freed");
  }
  return n;
}

/* A peak interval of several steps: what is born and freed at each later
 * step (the live bytes stay at the peak, so every change is a swap). To
 * lower the peak, every step of the interval must fall. */
static void ex_peak_swaps(ex_ctx *c, int64_t first, int64_t last) {
  if (last <= first) return;
  const char *w = report_time_word(c->m);
  mp_buf_printf(c->out,
                "  the interval goes on to %s %" PRId64
                ", each %s a swap at the peak (+ born there, - freed after "
                "the %s before):\n",
                w, last, w, w);
  size_t shown = 0;
  for (int64_t t = first + 1; t <= last && shown < c->top; t++, shown++) {
    char op[160];
    report_step_op(c->m, t, op, sizeof op);
    mp_buf_printf(c->out, "    %s %" PRId64 "%s%s:", w, t, *op ? " " : "", op);
    size_t n = ex_step_changes(c, t, true, 0);
    n += ex_step_changes(c, t - 1, false, n);
    mp_buf_puts(c->out, n ? "\n" : " no change\n");
  }
  if (last - first > (int64_t)shown) {
    mp_buf_printf(c->out, "    ... %" PRId64 " more %ss\n",
                  last - first - (int64_t)shown, w);
  }
}

static void ex_live(ex_ctx *c, size_t *idx) {
  const mp_profile *prof = mp_plan_profile(c->plan);
  if (prof->peak == 0) return;
  int64_t t = prof->segs[prof->peaks[0]].first;
  size_t n = report_live_at(c->p, t, idx);
  mp_buf_printf(c->out,
                "Live at %s %" PRId64
                ", largest first (why alive = what "
                "keeps it):\n",
                report_time_word(c->m), t);
  mp_buf_printf(c->out, "  %3s  %-28s %24s %6s  %-17s %-20s %s\n", "#",
                "tensor", "bytes", "peak%", "live", "born in", "why alive");
  for (size_t k = 0; k < n && k < c->top; k++) {
    const mp_buffer *b = mp_problem_buffer(c->p, idx[k]);
    char bytes[MP_FMT_MAX], live[48], born[96], why[160];
    snprintf(live, sizeof live, "%" PRId64 "..%" PRId64, b->first, b->last);
    ex_born(c, idx[k], born, sizeof born);
    ex_why(c, idx[k], t, why, sizeof why);
    mp_buf_printf(c->out, "  %3zu  %-*s %24s %5.1f%%  %-17s %-*s %s\n", k + 1,
                  mp_text_pad(b->name, 28), b->name,
                  mp_fmt_bytes(bytes, b->padded),
                  report_pct(b->padded, prof->peak), live,
                  mp_text_pad(born, 20), born, why);
  }
  if (n > c->top) {
    size_t rest = 0;
    for (size_t k = c->top; k < n; k++)
      rest += mp_problem_buffer(c->p, idx[k])->padded;
    char bytes[MP_FMT_MAX];
    mp_buf_printf(c->out, "  ...  %zu more tensors, %s\n", n - c->top,
                  mp_fmt_bytes(bytes, rest));
  }
  ex_idle(c, idx, n, t);
  ex_shared(c, idx, n);
  ex_peak_swaps(c, t, prof->segs[prof->peaks[0]].last);
  mp_buf_puts(c->out, "\n");
}

static void ex_waste(ex_ctx *c, size_t *idx) {
  size_t n = 0, total = 0;
  char a[MP_FMT_MAX], b[MP_FMT_MAX];
  for (size_t i = 0; i < mp_problem_count(c->p); i++) {
    const mp_buffer *bf = mp_problem_buffer(c->p, i);
    if (bf->padded == bf->size) continue;
    total += bf->padded - bf->size;
    /* Keep idx sorted by waste (desc, then index): insertion. */
    size_t j = n++;
    while (j > 0) {
      const mp_buffer *o = mp_problem_buffer(c->p, idx[j - 1]);
      if (o->padded - o->size >= bf->padded - bf->size) break;
      idx[j] = idx[j - 1];
      j--;
    }
    idx[j] = i;
  }
  mp_buf_printf(c->out, "Alignment waste  %s in %zu tensors",
                mp_fmt_bytes(a, total), n);
  mp_buf_puts(c->out, n ? ", largest:\n" : "\n");
  for (size_t k = 0; k < n && k < c->top; k++) {
    const mp_buffer *bf = mp_problem_buffer(c->p, idx[k]);
    mp_buf_printf(c->out, "  %-*s %s -> %s (+%zu, align %zu, %s)\n",
                  mp_text_pad(bf->name, 28), bf->name,
                  mp_fmt_count(a, bf->size), mp_fmt_count(b, bf->padded),
                  bf->padded - bf->size, bf->alignment, mp_class_name(bf->cls));
  }
  mp_buf_puts(c->out, "\n");
}

static void ex_footer(ex_ctx *c) {
  const mp_plan_summary *s = c->s;
  char a[MP_FMT_MAX], b[MP_FMT_MAX], d[MP_FMT_MAX];
  size_t over = s->activation_peak_bytes > s->lower_bound_bytes
                    ? s->activation_peak_bytes - s->lower_bound_bytes
                    : 0;
  mp_buf_printf(c->out, "Lower bound      %s\n",
                mp_fmt_bytes(a, s->lower_bound_bytes));
  mp_buf_printf(c->out, "Activation arena %s\n",
                mp_fmt_bytes(b, s->activation_peak_bytes));
  mp_buf_printf(c->out, "Overhead         %s, %.2f%% above the lower bound\n",
                mp_fmt_bytes(d, over), report_pct(over, s->lower_bound_bytes));
}

mp_status mp_report_explain(const mp_model *m, const mp_plan *plan,
                            const mp_report_opts *o, mp_buf *out,
                            mp_error *err) {
  ex_ctx c = {m,
              plan,
              mp_plan_problem(plan),
              mp_plan_summary_of(plan),
              o && o->top ? o->top : 10,
              out};
  size_t n = mp_problem_count(c.p);
  size_t *idx = mp_calloc(mp_problem_alloc(c.p), n ? n : 1, sizeof *idx);
  if (!idx) return mp_error_set(err, MP_ERR_NOMEM, "explain: out of memory");
  ex_header(&c);
  ex_totals(&c);
  ex_peak(&c);
  ex_live(&c, idx);
  ex_waste(&c, idx);
  ex_footer(&c);
  mp_free(mp_problem_alloc(c.p), idx);
  return mp_buf_status(out, "explain", err);
}

/* Capped dims: the plan made at the cap, and what it wastes below it. */
static void report_caps(const mp_model *m, const mp_plan_summary *s,
                        mp_buf *out) {
  char a[MP_FMT_MAX], b[MP_FMT_MAX];
  size_t n = mp_model_cap_count(m);
  if (n == 0) return;
  mp_buf_printf(out, "capped     ");
  for (size_t i = 0; i < n; i++) {
    mp_buf_printf(out, " %s<=%lld", mp_model_cap_name(m, i),
                  (long long)mp_model_cap_value(m, i));
  }
  mp_buf_printf(out, "; arena at the cap %s, valid for every smaller value\n",
                mp_fmt_bytes(a, s->arena_bytes));
  const mp_cap_point *p = mp_model_cap_points(m);
  for (size_t k = 0; k < mp_model_cap_point_count(m); k++) {
    mp_buf_printf(out, "%s at %-4g of the cap: needs %s, waste %s B (%.1f%%)\n",
                  k ? "           " : "waste      ", p[k].fraction,
                  mp_fmt_bytes(a, p[k].needed_bytes),
                  mp_fmt_count(b, p[k].waste_bytes),
                  report_pct(p[k].waste_bytes, s->arena_bytes));
  }
}

mp_status mp_report_summary(const mp_model *m, const mp_plan *plan, mp_buf *out,
                            mp_error *err) {
  const mp_plan_summary *s = mp_plan_summary_of(plan);
  const mp_graph *g = mp_model_graph(m);
  char a[MP_FMT_MAX], b[MP_FMT_MAX], d[MP_FMT_MAX];
  mp_buf_printf(out, "%s: %s '%s'", mp_model_path(m),
                mp_model_format_name(mp_model_format_of(m)), mp_model_name(m));
  if (g) {
    mp_buf_printf(out, ", %zu ops, %zu tensors", mp_graph_op_count(g),
                  mp_graph_tensor_count(g));
  } else {
    mp_buf_printf(out, ", %zu buffers",
                  mp_problem_count(mp_plan_problem(plan)));
  }
  mp_buf_printf(out, ", order %s, backend %s\n", mp_model_order_name(m),
                mp_model_backend_name(m));
  mp_buf_printf(out, "arena       %s = resident %s B + activations %s B\n",
                mp_fmt_bytes(a, s->arena_bytes),
                mp_fmt_count(b, s->resident_bytes),
                mp_fmt_count(d, s->activation_peak_bytes));
  size_t over = s->activation_peak_bytes - s->lower_bound_bytes;
  size_t saved = s->no_reuse_bytes > s->activation_peak_bytes
                     ? s->no_reuse_bytes - s->activation_peak_bytes
                     : 0;
  mp_buf_printf(out, "lower bound %s; overhead %s B (%.2f%%)\n",
                mp_fmt_bytes(a, s->lower_bound_bytes), mp_fmt_count(b, over),
                report_pct(over, s->lower_bound_bytes));
  mp_buf_printf(
      out, "no reuse    %s; reuse saves %.1f%%; alignment waste %s B\n",
      mp_fmt_bytes(a, s->no_reuse_bytes), report_pct(saved, s->no_reuse_bytes),
      mp_fmt_count(b, s->alignment_waste_bytes));
  mp_buf_printf(out,
                "strategy    %s in %.3f ms; validated: no two live buffers "
                "share a byte\n",
                s->strategy, s->plan_ms);
  if (s->detail && *s->detail)
    mp_buf_printf(out, "            %s\n", s->detail);
  ex_regions(plan, out);
  report_caps(m, s, out);
  return mp_report_passes(m, out, err);
}

/* What the tile pass did under a what-if setting ("patches 4 x 2 of 13
 * ops up to 'T' (28 x 28), Conv MACs +6.0%", and "; also joins 'X'" for
 * its exports), or why none were kept. */
static void ex_tile_note(const mp_tile_info *t, mp_buf *out) {
  if (!t) return;
  if (t->outcome != MP_TILE_KEPT) {
    mp_buf_printf(out, "  no patches kept (%s)",
                  mp_tile_outcome_name(t->outcome));
    return;
  }
  mp_buf_printf(
      out,
      "  patches %u x %u of %u ops up to '%s' (%lld x %lld), Conv "
      "MACs +%.1f%%",
      t->bands, t->columns, t->stage_ops, t->cut, (long long)t->height,
      (long long)t->width,
      t->graph_macs > 0 ? 100.0 * t->extra_macs / t->graph_macs : 0.0);
  for (uint32_t k = 0; k < t->n_exports; k++) {
    mp_buf_printf(out, "%s'%s'", k ? ", " : "; also joins ", t->exports[k]);
  }
}

static void ex_change(char *buf, size_t cap, size_t now, size_t v) {
  if (v == now || now == 0) {
    snprintf(buf, cap, "(=)");
  } else {
    snprintf(buf, cap, "(%+.1f%%)",
             100.0 * ((double)v - (double)now) / (double)now);
  }
}

/* The placement rows: what another strategy makes of the activation
 * arena (the bound rows' lower bound is the plan's own here). */
static void ex_what_if_places(const mp_plan *plan,
                              const mp_report_what_if *rows, size_t n,
                              mp_buf *out) {
  const mp_plan_summary *s = mp_plan_summary_of(plan);
  char a[MP_FMT_MAX], b[MP_FMT_MAX], delta[32];
  size_t places = 0;
  for (size_t k = 0; k < n; k++) places += rows[k].strategy != NULL;
  if (s->activation_peak_bytes <= s->lower_bound_bytes) {
    mp_buf_printf(out,
                  "No strategy places the activations lower: the activation "
                  "arena is at the lower bound.\n");
    return;
  }
  if (!places) return;
  mp_buf_printf(out,
                "What another strategy places (activation arena %s B now, "
                "lower bound %s B):\n",
                mp_fmt_count(a, s->activation_peak_bytes),
                mp_fmt_count(b, s->lower_bound_bytes));
  for (size_t k = 0; k < n; k++) {
    const mp_report_what_if *w = &rows[k];
    if (!w->strategy) continue;
    ex_change(delta, sizeof delta, s->activation_peak_bytes,
              w->activation_arena_bytes);
    mp_buf_printf(out, "  %-34s %14s B  %s", w->setting,
                  mp_fmt_count(a, w->activation_arena_bytes), delta);
    if (w->activation_arena_bytes <= w->lower_bound_bytes) {
      mp_buf_puts(out, "  at the lower bound");
    } else if (w->proven_lb_bytes >= w->activation_arena_bytes) {
      mp_buf_puts(out, "  proven optimal");
    } else if (w->proven_lb_bytes) {
      mp_buf_printf(out, "  no placement below %s B (proven)",
                    mp_fmt_count(a, w->proven_lb_bytes));
    }
    mp_buf_puts(out, "\n");
  }
}

mp_status mp_report_what_if_text(const mp_plan *plan,
                                 const mp_report_what_if *rows, size_t n,
                                 mp_buf *out, mp_error *err) {
  size_t now = mp_plan_summary_of(plan)->lower_bound_bytes;
  char a[MP_FMT_MAX], delta[32];
  size_t bounds = 0;
  for (size_t k = 0; k < n; k++) bounds += rows[k].strategy == NULL;
  if (bounds) {
    mp_buf_printf(out,
                  "What else lowers the bound (this model's activation lower "
                  "bound, %s B now, under other settings):\n",
                  mp_fmt_count(a, now));
  }
  for (size_t k = 0; k < n; k++) {
    const mp_report_what_if *w = &rows[k];
    if (w->strategy) continue;
    ex_change(delta, sizeof delta, now, w->lower_bound_bytes);
    mp_buf_printf(out, "  %-34s %14s B  %s", w->setting,
                  mp_fmt_count(a, w->lower_bound_bytes), delta);
    ex_tile_note(w->tile, out);
    mp_buf_puts(out, "\n");
  }
  if (bounds) mp_buf_puts(out, "\n");
  ex_what_if_places(plan, rows, n, out);
  return mp_buf_status(out, "explain", err);
}
