/*
 * plan_json.c -- the plan as a plan/1 JSON document.
 *
 * {"mplan": "plan/1", "tool", "model", "summary", "regions", "peak",
 *  "execution", "buffers", "reuse"}, plus "passes" (the per-pass table
 *  and the fusions) when passes ran and "schedule" (every candidate
 *  order's peak) for --order memory.
 *
 * Invariants:
 *   1. Everything mplan validate needs to re-prove the plan is here:
 *      per buffer its class, offset, size, alignment, padded size and
 *      inclusive interval, plus the region size and the run's span.
 *   2. The reuse table lists each pair of buffers that share bytes once,
 *      the earlier-live one first; it is found by a sweep over offsets,
 *      O(n log n + pairs), and capped at MP_REUSE_MAX pairs (flagged).
 *   3. The document is built as a cJSON tree: no JSON is printed by hand.
 */
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "mplan/report.h"
#include "mplan/strmap.h"
#include "report_util.h"

#define MP_REUSE_MAX 100000

typedef struct pj_ctx {
  const mp_model *m;
  const mp_plan *plan;
  const mp_problem *p;
  const mp_placement *pl;
  bool ok;
} pj_ctx;

static void pj_str(pj_ctx *c, cJSON *o, const char *key, const char *v) {
  rj_str(&c->ok, o, key, v ? v : "");
}

static void pj_model(pj_ctx *c, cJSON *root) {
  cJSON *m = rj_obj(&c->ok, root, "model");
  if (!m) return;
  pj_str(c, m, "path", mp_model_path(c->m));
  pj_str(c, m, "format", mp_model_format_name(mp_model_format_of(c->m)));
  pj_str(c, m, "name", mp_model_name(c->m));
  pj_str(c, m, "backend", mp_model_backend_name(c->m));
  const mp_graph *g = mp_model_graph(c->m);
  if (!g || mp_graph_dim_count(g) == 0) return;
  cJSON *dims = rj_obj(&c->ok, m, "dims");
  for (size_t i = 0; dims && i < mp_graph_dim_count(g); i++) {
    rj_num(&c->ok, dims, mp_graph_dim_name(g, i),
           (double)mp_graph_dim_value(g, i));
  }
}

static void pj_summary(pj_ctx *c, cJSON *root) {
  const mp_plan_summary *s = mp_plan_summary_of(c->plan);
  cJSON *o = rj_obj(&c->ok, root, "summary");
  int64_t t0, t1;
  if (!o) return;
  size_t frag = s->activation_peak_bytes - s->lower_bound_bytes;
  size_t saved = s->no_reuse_bytes > s->activation_peak_bytes
                     ? s->no_reuse_bytes - s->activation_peak_bytes
                     : 0;
  rj_summary_bytes(&c->ok, o, s);
  rj_num(&c->ok, o, "fragmentation_bytes", (double)frag);
  rj_num(&c->ok, o, "overhead_pct", report_pct(frag, s->lower_bound_bytes));
  rj_num(&c->ok, o, "saved_by_reuse_pct", report_pct(saved, s->no_reuse_bytes));
  pj_str(c, o, "strategy", s->strategy);
  if (s->detail && *s->detail) pj_str(c, o, "strategy_detail", s->detail);
  if (s->proven_lb_bytes) {
    rj_num(&c->ok, o, "proven_lower_bound_bytes", (double)s->proven_lb_bytes);
  }
  pj_str(c, o, "order", mp_model_order_name(c->m));
  rj_num(&c->ok, o, "plan_ms", s->plan_ms);
  mp_problem_span(c->p, &t0, &t1);
  if (mp_model_steps(c->m))
    rj_num(&c->ok, o, "steps", (double)mp_model_steps(c->m));
  cJSON *span = rj_arr(&c->ok, o, "span");
  rj_push_num(&c->ok, span, (double)t0);
  rj_push_num(&c->ok, span, (double)t1);
  rj_num(&c->ok, o, "buffers", (double)mp_problem_count(c->p));
}

/* Capped dims (so that a runtime can refuse a larger value) and the cost
 * of the capped plan at 1/4, 1/2 and the full cap. */
static void pj_dynamic(pj_ctx *c, cJSON *root) {
  size_t n = mp_model_cap_count(c->m);
  if (n == 0) return;
  cJSON *o = rj_obj(&c->ok, root, "dynamic");
  cJSON *caps = o ? rj_arr(&c->ok, o, "caps") : NULL;
  for (size_t i = 0; caps && i < n; i++) {
    cJSON *e = rj_push_obj(&c->ok, caps);
    if (!e) return;
    pj_str(c, e, "dim", mp_model_cap_name(c->m, i));
    rj_num(&c->ok, e, "max", (double)mp_model_cap_value(c->m, i));
  }
  if (!o) return;
  rj_num(&c->ok, o, "arena_at_cap_bytes",
         (double)mp_plan_summary_of(c->plan)->arena_bytes);
  cJSON *pts = rj_arr(&c->ok, o, "waste");
  const mp_cap_point *p = mp_model_cap_points(c->m);
  for (size_t k = 0; pts && k < mp_model_cap_point_count(c->m); k++) {
    cJSON *e = rj_push_obj(&c->ok, pts);
    if (!e) return;
    rj_num(&c->ok, e, "fraction", p[k].fraction);
    rj_num(&c->ok, e, "arena_bytes", (double)p[k].arena_bytes);
    rj_num(&c->ok, e, "needed_bytes", (double)p[k].needed_bytes);
    rj_num(&c->ok, e, "waste_bytes", (double)p[k].waste_bytes);
  }
}

/* Every region: its capacity (null: unbounded), what the plan uses of it
 * ("size", the limit mplan validate holds an unbounded region to) and how
 * that splits into the fixed tiers and the activations. */
static void pj_regions(pj_ctx *c, cJSON *root) {
  cJSON *arr = rj_arr(&c->ok, root, "regions");
  for (size_t i = 0; arr && i < mp_plan_region_count(c->plan); i++) {
    const mp_plan_region *reg = mp_plan_region_at(c->plan, i);
    cJSON *r = rj_push_obj(&c->ok, arr);
    if (!r) return;
    pj_str(c, r, "name", reg->name);
    if (reg->capacity) {
      rj_num(&c->ok, r, "capacity", (double)reg->capacity);
    } else {
      rj_str(&c->ok, r, "capacity", NULL);
    }
    rj_num(&c->ok, r, "size", (double)reg->used_bytes);
    rj_num(&c->ok, r, "fixed_bytes", (double)reg->fixed_bytes);
    rj_num(&c->ok, r, "activation_bytes", (double)reg->activation_bytes);
    if (reg->spilled_in)
      rj_num(&c->ok, r, "spilled_in", (double)reg->spilled_in);
  }
}

/* Bank conflicts the planner could not move apart. */
static void pj_banks(pj_ctx *c, cJSON *root) {
  const mp_bank_conflict *bc;
  size_t before, n = mp_plan_bank_conflicts(c->plan, &bc, &before);
  if (!before) return;
  cJSON *o = rj_obj(&c->ok, root, "bank_conflicts");
  if (!o) return;
  rj_num(&c->ok, o, "before", (double)before);
  cJSON *arr = rj_arr(&c->ok, o, "remaining");
  for (size_t k = 0; arr && k < n; k++) {
    const size_t *idx;
    size_t m;
    cJSON *e = rj_push_obj(&c->ok, arr);
    if (!e) return;
    pj_str(c, e, "group", mp_problem_group(c->p, bc[k].group, &idx, &m));
    pj_str(c, e, "a", mp_problem_buffer(c->p, bc[k].a)->name);
    pj_str(c, e, "b", mp_problem_buffer(c->p, bc[k].b)->name);
    rj_num(&c->ok, e, "bank", (double)bc[k].bank);
  }
}

static void pj_peak(pj_ctx *c, cJSON *root, size_t *idx) {
  const mp_profile *prof = mp_plan_profile(c->plan);
  cJSON *o = rj_obj(&c->ok, root, "peak");
  if (!o) return;
  rj_num(&c->ok, o, "bytes", (double)prof->peak);
  cJSON *iv = rj_arr(&c->ok, o, "intervals");
  for (size_t k = 0; iv && k < prof->n_peaks; k++) {
    const mp_segment *s = &prof->segs[prof->peaks[k]];
    cJSON *e = rj_push_obj(&c->ok, iv);
    if (!e) return;
    rj_num(&c->ok, e, "first", (double)s->first);
    rj_num(&c->ok, e, "last", (double)s->last);
    if (!mp_model_steps(c->m)) continue;
    cJSON *ops = rj_arr(&c->ok, e, "ops");
    for (int64_t t = s->first; ops && t <= s->last; t++) {
      const char *op = mp_model_step_op(c->m, (size_t)t);
      if (op) rj_push_str(&c->ok, ops, op);
    }
  }
  if (prof->peak == 0) return;
  size_t n = report_live_at(c->p, prof->segs[prof->peaks[0]].first, idx);
  int64_t t = prof->segs[prof->peaks[0]].first;
  size_t idle = 0;
  cJSON *live = rj_arr(&c->ok, o, "live");
  for (size_t k = 0; live && k < n; k++) {
    const mp_buffer *b = mp_problem_buffer(c->p, idx[k]);
    cJSON *e = rj_push_obj(&c->ok, live);
    if (!e) return;
    pj_str(c, e, "name", b->name);
    rj_num(&c->ok, e, "bytes", (double)b->padded);
    if (!mp_model_graph(c->m)) continue;
    size_t w = mp_model_buffer_in_use(c->m, idx[k], t, NULL, NULL);
    rj_num(&c->ok, e, "in_use_bytes", (double)w);
    if (w < b->size) idle += b->size - w;
  }
  /* bytes of the live buffers that hold no live tensor at the peak's
   * first step (mp_model_buffer_in_use) */
  if (mp_model_graph(c->m)) rj_num(&c->ok, o, "idle_bytes", (double)idle);
}

static void pj_names(pj_ctx *c, cJSON *o, const char *key, const mp_graph *g,
                     const int32_t *ids, uint32_t n) {
  cJSON *arr = rj_arr(&c->ok, o, key);
  for (uint32_t k = 0; arr && k < n; k++) {
    rj_push_str(&c->ok, arr,
                ids[k] >= 0 ? mp_graph_tensor(g, (size_t)ids[k])->name : "");
  }
}

/* The mplan.* attributes of a fused op (docs/ir-conventions.md). */
static void pj_fused(pj_ctx *c, cJSON *e, const mp_op *op) {
  for (uint32_t k = 0; k < op->n_attrs; k++) {
    const mp_attr *a = &op->attrs[k];
    if (strcmp(a->name, "mplan.epilogue") == 0 && a->s) {
      pj_str(c, e, "epilogue", a->s);
    } else if (strcmp(a->name, "mplan.prologue") == 0 && a->s) {
      pj_str(c, e, "prologue", a->s);
    } else if (strcmp(a->name, "mplan.horizontal") == 0) {
      rj_num(&c->ok, e, "horizontal", (double)a->i);
    } else if (strcmp(a->name, "mplan.p.resize") == 0) {
      rj_num(&c->ok, e, "replicated", (double)a->i); /* absorb.c rule 11 */
    }
  }
}

/* Which op of the tile pass each op is (NULL: not one), from the pass's
 * record; the map goes from op name to its entry. */
static const mp_tile_op *pj_tile_op(const mp_tile_info *t, const mp_strmap *map,
                                    const char *op) {
  int64_t k;
  return t && map && mp_strmap_get(map, op, &k) ? &t->ops[k] : NULL;
}

static void pj_patch(pj_ctx *c, cJSON *e, const mp_tile_op *p) {
  cJSON *o = rj_obj(&c->ok, e, "patch");
  pj_str(c, o, "role", mp_tile_role_name(p->role));
  pj_str(c, o, "of", p->origin);
  if (p->band >= 0) rj_num(&c->ok, o, "band", p->band);
  if (p->column >= 0) rj_num(&c->ok, o, "column", p->column);
}

static void pj_execution(pj_ctx *c, cJSON *root) {
  size_t n = mp_model_steps(c->m);
  const mp_graph *g = mp_model_graph(c->m);
  const mp_profile *prof = mp_plan_profile(c->plan);
  if (n == 0) return;
  const mp_tile_info *t = mp_model_pass_report(c->m)
                              ? mp_pass_report_tile(mp_model_pass_report(c->m))
                              : NULL;
  mp_strmap *map = NULL;
  if (t && t->n_ops) {
    mp_error e2 = {0};
    if (mp_strmap_create(mp_problem_alloc(c->p), &map, &e2) != MP_OK) {
      c->ok = false;
    }
    for (size_t k = 0; map && k < t->n_ops; k++) {
      if (mp_strmap_put(map, t->ops[k].op, (int64_t)k, NULL, &e2) ==
          MP_ERR_NOMEM) {
        c->ok = false;
      }
    }
  }
  cJSON *arr = rj_arr(&c->ok, root, "execution");
  for (size_t k = 0; arr && k < n; k++) {
    cJSON *e = rj_push_obj(&c->ok, arr);
    if (!e) return;
    rj_num(&c->ok, e, "step", (double)k);
    pj_str(c, e, "op", mp_model_step_op(c->m, k));
    pj_str(c, e, "type", mp_model_step_type(c->m, k));
    if (g) {
      const mp_op *op = mp_graph_op(g, mp_model_step_op_index(c->m, k));
      pj_names(c, e, "inputs", g, op->inputs, op->n_inputs);
      pj_names(c, e, "outputs", g, op->outputs, op->n_outputs);
      pj_fused(c, e, op);
      const mp_tile_op *p = pj_tile_op(t, map, op->name);
      if (p) pj_patch(c, e, p);
    }
    size_t seg = mp_profile_find(prof, (int64_t)k);
    rj_num(&c->ok, e, "live_bytes",
           seg < prof->n_segs ? (double)prof->segs[seg].live : 0);
  }
  mp_strmap_destroy(map);
}

/* "tensors": every tensor a shared buffer holds (views, in place, Concat
 * slices), the buffer's own name first, and "tensor_offsets": where each
 * starts inside the buffer. Absent for a buffer of one tensor. */
static void pj_members(pj_ctx *c, cJSON *e, size_t i) {
  const mp_graph *g = mp_model_graph(c->m);
  const uint32_t *members = NULL;
  size_t n = g ? mp_model_buffer_tensors(c->m, i, &members) : 0;
  if (n < 2) return;
  cJSON *arr = rj_arr(&c->ok, e, "tensors");
  for (size_t k = 0; arr && k < n; k++) {
    rj_push_str(&c->ok, arr, mp_graph_tensor(g, members[k])->name);
  }
  cJSON *off = rj_arr(&c->ok, e, "tensor_offsets");
  for (size_t k = 0; off && k < n; k++) {
    rj_push_num(&c->ok, off, (double)mp_model_tensor_offset(c->m, members[k]));
  }
}

static void pj_buffer(pj_ctx *c, cJSON *e, size_t i) {
  const mp_buffer *b = mp_problem_buffer(c->p, i);
  const mp_graph *g = mp_model_graph(c->m);
  pj_str(c, e, "name", b->name);
  pj_str(c, e, "class", mp_class_name(b->cls));
  if (g) {
    const mp_tensor *t = report_tensor(c->m, i);
    char shape[256];
    pj_str(c, e, "kind", mp_tensor_kind_name(t->kind));
    pj_str(c, e, "dtype", mp_dtype_name(t->dtype));
    pj_str(c, e, "shape", mp_graph_shape_str(g, t, shape, sizeof shape));
  }
  rj_num(&c->ok, e, "offset", (double)c->pl[i].offset);
  rj_num(&c->ok, e, "size", (double)b->size);
  rj_num(&c->ok, e, "padded_size", (double)b->padded);
  rj_num(&c->ok, e, "alignment", (double)b->alignment);
  rj_num(&c->ok, e, "waste", (double)(b->padded - b->size));
  rj_num(&c->ok, e, "first_use", (double)b->first);
  rj_num(&c->ok, e, "last_use", (double)b->last);
  pj_str(c, e, "region", mp_plan_region_at(c->plan, c->pl[i].region)->name);
  if (b->pinned && !cJSON_AddTrueToObject(e, "pinned")) c->ok = false;
  const char *prod = mp_model_producer(c->m, i);
  const char *cons = mp_model_last_consumer(c->m, i);
  if (prod) pj_str(c, e, "producer", prod);
  if (cons) pj_str(c, e, "last_consumer", cons);
  pj_members(c, e, i);
}

static void pj_buffers(pj_ctx *c, cJSON *root) {
  cJSON *arr = rj_arr(&c->ok, root, "buffers");
  for (size_t i = 0; arr && i < mp_problem_count(c->p); i++) {
    cJSON *e = rj_push_obj(&c->ok, arr);
    if (!e) return;
    pj_buffer(c, e, i);
  }
}

typedef struct pj_span {
  size_t lo, hi, index;
} pj_span;

static int pj_span_cmp(const void *a, const void *b) {
  const pj_span *x = a, *y = b;
  if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

static void pj_pair(pj_ctx *c, cJSON *arr, const pj_span *x, const pj_span *y) {
  const mp_buffer *a = mp_problem_buffer(c->p, x->index);
  const mp_buffer *b = mp_problem_buffer(c->p, y->index);
  if (b->first < a->first || (b->first == a->first && y->index < x->index)) {
    const pj_span *t = x;
    x = y;
    y = t;
    a = mp_problem_buffer(c->p, x->index);
    b = mp_problem_buffer(c->p, y->index);
  }
  size_t lo = x->lo > y->lo ? x->lo : y->lo;
  size_t hi = x->hi < y->hi ? x->hi : y->hi;
  cJSON *e = rj_push_obj(&c->ok, arr);
  if (!e) return;
  pj_str(c, e, "earlier", a->name);
  pj_str(c, e, "later", b->name);
  rj_num(&c->ok, e, "offset", (double)lo);
  rj_num(&c->ok, e, "bytes", (double)(hi - lo));
}

/* Pairs of activation buffers whose byte ranges intersect (invariant 2). */
static void pj_reuse(pj_ctx *c, cJSON *root) {
  const mp_alloc *al = mp_problem_alloc(c->p);
  size_t n = 0, pairs = 0;
  pj_span *s = mp_calloc(al, mp_problem_count(c->p) + 1, sizeof *s);
  cJSON *arr = rj_arr(&c->ok, root, "reuse");
  if (!s || !arr) {
    mp_free(al, s);
    c->ok = false;
    return;
  }
  for (size_t i = 0; i < mp_problem_count(c->p); i++) {
    const mp_buffer *b = mp_problem_buffer(c->p, i);
    if (b->cls != MP_CLASS_ACTIVATION) continue;
    s[n++] = (pj_span){c->pl[i].offset, c->pl[i].offset + b->padded, i};
  }
  qsort(s, n, sizeof *s, pj_span_cmp);
  for (size_t i = 0; i < n && c->ok && pairs < MP_REUSE_MAX; i++) {
    for (size_t j = i + 1; j < n && s[j].lo < s[i].hi; j++) {
      if (pairs++ == MP_REUSE_MAX) break;
      pj_pair(c, arr, &s[i], &s[j]);
    }
  }
  if (pairs > MP_REUSE_MAX && !cJSON_AddTrueToObject(root, "reuse_truncated")) {
    c->ok = false;
  }
  mp_free(al, s);
}

static void pj_pass_row(pj_ctx *c, cJSON *e, const mp_pass_row *r) {
  pj_str(c, e, "pass", mp_pass_name(r->pass));
  rj_num(&c->ok, e, "ops_before", (double)r->ops_before);
  rj_num(&c->ok, e, "ops_after", (double)r->ops_after);
  rj_num(&c->ok, e, "tensors_before", (double)r->tensors_before);
  rj_num(&c->ok, e, "tensors_after", (double)r->tensors_after);
  rj_num(&c->ok, e, "buffers_before", (double)r->buffers_before);
  rj_num(&c->ok, e, "buffers_after", (double)r->buffers_after);
  rj_num(&c->ok, e, "lower_bound_before", (double)r->lb_before);
  rj_num(&c->ok, e, "lower_bound_after", (double)r->lb_after);
  rj_num(&c->ok, e, "arena_before", (double)r->arena_before);
  rj_num(&c->ok, e, "arena_after", (double)r->arena_after);
  rj_bool(&c->ok, e, "peak_moved", r->lb_before != r->lb_after);
  rj_num(&c->ok, e, "saved_bytes", (double)r->saved_bytes);
  rj_num(&c->ok, e, "rewrites", (double)r->rewrites);
  pj_str(c, e, "detail", r->detail);
  pj_str(c, e, "removed", r->removed ? r->removed : "");
}

static void pj_fusion(pj_ctx *c, cJSON *e, const mp_fusion *f) {
  pj_str(c, e, "pass", mp_pass_name(f->pass));
  pj_str(c, e, "kind", mp_fusion_kind_name(f->kind));
  pj_str(c, e, "op", f->op);
  pj_str(c, e, "head_type", f->head_type);
  pj_str(c, e, "absorbed", f->absorbed);
  pj_str(c, e, "absorbed_ops", f->absorbed_ops);
  pj_str(c, e, "intermediates", f->intermediates);
  rj_num(&c->ok, e, "steps", f->steps);
  rj_num(&c->ok, e, "intermediate_bytes", (double)f->intermediate_bytes);
  rj_num(&c->ok, e, "saved_bytes", (double)f->saved_bytes);
  rj_bool(&c->ok, e, "at_peak", f->at_peak);
  if (f->spills >= 0) {
    rj_num(&c->ok, e, "registers", f->registers);
    rj_num(&c->ok, e, "spills", f->spills);
    rj_bool(&c->ok, e, "capped", f->capped);
  }
}

/* "passes": {"vlen", "rows": [...], "fusions": [...]} (issue 9). */
static void pj_passes(pj_ctx *c, cJSON *root) {
  const mp_pass_report *r = mp_model_pass_report(c->m);
  if (!r) return;
  cJSON *o = rj_obj(&c->ok, root, "passes");
  if (!o) return;
  if (mp_pass_report_vlen(r)) rj_num(&c->ok, o, "vlen", mp_pass_report_vlen(r));
  cJSON *rows = rj_arr(&c->ok, o, "rows");
  for (size_t i = 0; rows && i < mp_pass_report_rows(r); i++) {
    cJSON *e = rj_push_obj(&c->ok, rows);
    if (e) pj_pass_row(c, e, mp_pass_report_row(r, i));
  }
  cJSON *fus = rj_arr(&c->ok, o, "fusions");
  for (size_t i = 0; fus && i < mp_pass_report_fusions(r); i++) {
    cJSON *e = rj_push_obj(&c->ok, fus);
    if (e) pj_fusion(c, e, mp_pass_report_fusion(r, i));
  }
  const mp_tile_info *t = mp_pass_report_tile(r);
  if (t) rj_tile(&c->ok, o, "tile", t);
}

/* "schedule": what --order memory considered and found. */
static void pj_schedule(pj_ctx *c, cJSON *root) {
  const mp_schedule_info *s = mp_model_schedule_info(c->m);
  if (!s || s->used != MP_ORDER_MEMORY) return;
  cJSON *o = rj_obj(&c->ok, root, "schedule");
  if (!o) return;
  pj_str(c, o, "order", mp_order_name(s->used));
  rj_num(&c->ok, o, "peak_bytes", (double)s->peak);
  cJSON *arr = rj_arr(&c->ok, o, "candidates");
  for (size_t k = 0; arr && k < s->n_cand; k++) {
    cJSON *e = rj_push_obj(&c->ok, arr);
    if (!e) return;
    pj_str(c, e, "name", s->cand[k].name);
    rj_num(&c->ok, e, "peak_bytes", (double)s->cand[k].peak);
  }
  rj_num(&c->ok, o, "segments", (double)s->segments);
  rj_num(&c->ok, o, "largest_segment", (double)s->largest_segment);
  rj_num(&c->ok, o, "bound_segments", (double)s->bound_segments);
  rj_num(&c->ok, o, "branch_bound_segments", (double)s->branch_segments);
  rj_num(&c->ok, o, "exact_segments", (double)s->dp_segments);
  rj_num(&c->ok, o, "improved_segments", (double)s->dp_improved);
  rj_num(&c->ok, o, "branch_improved_segments", (double)s->branch_improved);
  rj_num(&c->ok, o, "beam_improved_segments", (double)s->beam_improved);
  rj_num(&c->ok, o, "move_improved_segments", (double)s->move_improved);
  rj_num(&c->ok, o, "states", (double)s->dp_states);
  rj_bool(&c->ok, o, "optimal", s->exact);
  rj_bool(&c->ok, o, "optimal_by_bound", s->peak_bound);
  rj_num(&c->ok, o, "bound_bytes", (double)s->bound);
  rj_bool(&c->ok, o, "budget_hit", s->budget_hit);
  rj_bool(&c->ok, o, "work_hit", s->work_hit);
  rj_bool(&c->ok, o, "time_hit", s->time_hit);
  rj_num(&c->ok, o, "work", (double)s->work);
  rj_num(&c->ok, o, "work_budget", (double)s->work_budget);
  rj_num(&c->ok, o, "ms", s->ms);
}

/* "what_if": the lower bound under the settings not asked for. */
static void pj_what_if(pj_ctx *c, cJSON *root, const mp_report_meta *meta) {
  if (!meta || !meta->n_what_if) return;
  cJSON *arr = rj_arr(&c->ok, root, "what_if");
  for (size_t k = 0; c->ok && k < meta->n_what_if; k++) {
    cJSON *e = rj_push_obj(&c->ok, arr);
    if (e) rj_what_if(&c->ok, e, &meta->what_if[k]);
  }
}

mp_status mp_report_plan_json(const mp_model *m, const mp_plan *plan,
                              mp_buf *out, mp_error *err) {
  return mp_report_plan_json_meta(m, plan, NULL, out, err);
}

mp_status mp_report_plan_json_meta(const mp_model *m, const mp_plan *plan,
                                   const mp_report_meta *meta, mp_buf *out,
                                   mp_error *err) {
  pj_ctx c = {m, plan, mp_plan_problem(plan), mp_plan_placements(plan), true};
  const mp_alloc *a = mp_problem_alloc(c.p);
  size_t *idx = mp_calloc(a, mp_problem_count(c.p) + 1, sizeof *idx);
  cJSON *root = cJSON_CreateObject();
  if (!idx || !root) c.ok = false;
  if (c.ok) {
    pj_str(&c, root, "mplan", "plan/1");
    pj_str(&c, root, "tool", "mplan " MP_VERSION);
    pj_model(&c, root);
    pj_summary(&c, root);
    pj_dynamic(&c, root);
    pj_passes(&c, root);
    pj_schedule(&c, root);
    pj_what_if(&c, root, meta);
    pj_regions(&c, root);
    pj_banks(&c, root);
    pj_peak(&c, root, idx);
    pj_execution(&c, root);
    pj_buffers(&c, root);
    pj_reuse(&c, root);
  }
  char *text = c.ok ? cJSON_Print(root) : NULL;
  if (text) {
    mp_buf_puts(out, text);
    mp_buf_puts(out, "\n");
    cJSON_free(text);
  }
  cJSON_Delete(root);
  mp_free(a, idx);
  if (!text) return mp_error_set(err, MP_ERR_NOMEM, "plan JSON: out of memory");
  return mp_buf_status(out, "plan JSON", err);
}
