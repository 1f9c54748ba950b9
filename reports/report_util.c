/*
 * report_util.c -- shared report queries.
 *
 * Invariants:
 *   1. Orders are total (ties by index): the same plan always renders the
 *      same text, byte for byte, which golden tests rely on.
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "report_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct util_item {
  size_t padded;
  size_t index;
} util_item;

static int util_item_cmp(const void *a, const void *b) {
  const util_item *x = a, *y = b;
  if (x->padded != y->padded) return x->padded > y->padded ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

size_t report_idle(const mp_model *m, const mp_problem *p, size_t b, int64_t t,
                   size_t *in_use, int64_t *next, const char **writer) {
  const mp_buffer *x = mp_problem_buffer(p, b);
  if (!mp_model_graph(m) || x->cls != MP_CLASS_ACTIVATION || x->first > t ||
      x->last < t) {
    return 0;
  }
  size_t w = mp_model_buffer_in_use(m, b, t, next, writer);
  if (in_use) *in_use = w;
  return w < x->size ? x->size - w : 0;
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

size_t report_peak_mask(const mp_plan *plan, bool *mask) {
  const mp_problem *p = mp_plan_problem(plan);
  const mp_profile *prof = mp_plan_profile(plan);
  size_t set = 0;
  for (size_t i = 0; i < mp_problem_count(p); i++) {
    const mp_buffer *b = mp_problem_buffer(p, i);
    mask[i] = false;
    if (b->cls != MP_CLASS_ACTIVATION || prof->peak == 0) continue;
    /* The first peak segment that ends at or after b->first. */
    size_t lo = 0, hi = prof->n_peaks;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (prof->segs[prof->peaks[mid]].last < b->first) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo < prof->n_peaks && prof->segs[prof->peaks[lo]].first <= b->last) {
      mask[i] = true;
      set++;
    }
  }
  return set;
}

const mp_tensor *report_tensor(const mp_model *m, size_t i) {
  const mp_graph *g = mp_model_graph(m);
  return g ? mp_graph_tensor(g, mp_model_buffer_tensor(m, i)) : NULL;
}

bool report_holds_output(const mp_model *m, size_t i) {
  const mp_graph *g = mp_model_graph(m);
  const uint32_t *members = NULL;
  size_t n = g ? mp_model_buffer_tensors(m, i, &members) : 0;
  for (size_t k = 0; k < n; k++) {
    if (mp_graph_tensor(g, members[k])->kind == MP_TENSOR_OUTPUT) return true;
  }
  return false;
}

size_t report_members(const mp_model *m, size_t i, mp_buf *out) {
  const mp_graph *g = mp_model_graph(m);
  const uint32_t *members = NULL;
  size_t n = g ? mp_model_buffer_tensors(m, i, &members) : 0, listed = 0;
  size_t root = g ? mp_model_buffer_tensor(m, i) : 0;
  for (size_t k = 0; k < n; k++) {
    if (members[k] == root) continue;
    uint64_t at = mp_model_tensor_offset(m, members[k]);
    mp_buf_printf(out, "%s%s (%s", listed ? ", " : "",
                  mp_graph_tensor(g, members[k])->name,
                  mp_alias_rule_name(mp_model_tensor_rule(m, members[k])));
    if (at) mp_buf_printf(out, " at +%" PRIu64, at);
    mp_buf_puts(out, ")");
    listed++;
  }
  return listed;
}

const char *report_kind(const mp_model *m, size_t i) {
  const mp_tensor *t = report_tensor(m, i);
  if (t) return mp_tensor_kind_name(t->kind);
  return mp_class_name(mp_problem_buffer(mp_model_problem(m), i)->cls);
}

void report_shape(const mp_model *m, size_t i, char *buf, size_t cap) {
  const mp_tensor *t = report_tensor(m, i);
  if (!t) {
    snprintf(buf, cap, "%s", "");
    return;
  }
  mp_graph_shape_str(mp_model_graph(m), t, buf, cap);
}

const char *report_dtype(const mp_model *m, size_t i) {
  const mp_tensor *t = report_tensor(m, i);
  return t ? mp_dtype_name(t->dtype) : NULL;
}

void report_utc_now(char *buf, size_t cap) {
  time_t now = time(NULL);
  struct tm tm;
  /* gmtime_r is POSIX; C11's gmtime would share a static buffer. */
  if (!gmtime_r(&now, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
    snprintf(buf, cap, "%s", "1970-01-01T00:00:00Z");
  }
}

void report_patch_what(char *buf, size_t cap, const char *role,
                       const char *origin, int64_t band, int64_t column) {
  if (strcmp(role, "copy") == 0) {
    snprintf(buf, cap, "patch (%lld, %lld) of op '%s'", (long long)band,
             (long long)column, origin);
  } else if (strcmp(role, "crop") == 0) {
    snprintf(buf, cap, "the part of '%s' patch (%lld, %lld) reads", origin,
             (long long)band, (long long)column);
  } else if (band >= 0) {
    snprintf(buf, cap, "band %lld of '%s'", (long long)band, origin);
  } else {
    snprintf(buf, cap, "the patches of '%s'", origin);
  }
}

void report_step_patch(const mp_model *m, int64_t t, char *buf, size_t cap) {
  const mp_pass_report *r = mp_model_pass_report(m);
  const mp_tile_info *ti = r ? mp_pass_report_tile(r) : NULL;
  const char *op = t >= 0 && ti ? mp_model_step_op(m, (size_t)t) : NULL;
  buf[0] = '\0';
  for (size_t k = 0; op && k < ti->n_ops; k++) {
    const mp_tile_op *e = &ti->ops[k];
    if (strcmp(e->op, op) != 0) continue;
    report_patch_what(buf, cap, mp_tile_role_name(e->role), e->origin, e->band,
                      e->column);
    return;
  }
}
