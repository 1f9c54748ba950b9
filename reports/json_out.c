/*
 * json_out.c -- cJSON building with a sticky flag (json_out.h).
 */
#include "json_out.h"

#include <stddef.h>

static cJSON *rj_check(bool *ok, cJSON *made) {
  if (!made) *ok = false;
  return made;
}

cJSON *rj_obj(bool *ok, cJSON *parent, const char *key) {
  return rj_check(ok,
                  *ok && parent ? cJSON_AddObjectToObject(parent, key) : NULL);
}

cJSON *rj_arr(bool *ok, cJSON *parent, const char *key) {
  return rj_check(ok,
                  *ok && parent ? cJSON_AddArrayToObject(parent, key) : NULL);
}

void rj_num(bool *ok, cJSON *o, const char *key, double v) {
  rj_check(ok, *ok ? cJSON_AddNumberToObject(o, key, v) : NULL);
}

void rj_str(bool *ok, cJSON *o, const char *key, const char *v) {
  if (!*ok) return;
  rj_check(ok, v ? cJSON_AddStringToObject(o, key, v)
                 : cJSON_AddNullToObject(o, key));
}

void rj_bool(bool *ok, cJSON *o, const char *key, bool v) {
  rj_check(ok, *ok ? cJSON_AddBoolToObject(o, key, v) : NULL);
}

void rj_push(bool *ok, cJSON *arr, cJSON *item) {
  if (!*ok || !arr || !item || !cJSON_AddItemToArray(arr, item)) {
    cJSON_Delete(item);
    *ok = false;
  }
}

cJSON *rj_push_obj(bool *ok, cJSON *arr) {
  cJSON *o = *ok ? cJSON_CreateObject() : NULL;
  rj_push(ok, arr, o);
  return *ok ? o : NULL;
}

void rj_push_num(bool *ok, cJSON *arr, double v) {
  rj_push(ok, arr, *ok ? cJSON_CreateNumber(v) : NULL);
}

void rj_push_str(bool *ok, cJSON *arr, const char *v) {
  if (!*ok) return;
  rj_push(ok, arr, v ? cJSON_CreateString(v) : cJSON_CreateNull());
}

void rj_summary_bytes(bool *ok, cJSON *o, const mp_plan_summary *s) {
  rj_num(ok, o, "arena_bytes", (double)s->arena_bytes);
  rj_num(ok, o, "lower_bound_bytes", (double)s->lower_bound_bytes);
  rj_num(ok, o, "resident_bytes", (double)s->resident_bytes);
  rj_num(ok, o, "retained_bytes", (double)s->retained_bytes);
  rj_num(ok, o, "activation_peak_bytes", (double)s->activation_peak_bytes);
  rj_num(ok, o, "no_reuse_bytes", (double)s->no_reuse_bytes);
  rj_num(ok, o, "alignment_waste_bytes", (double)s->alignment_waste_bytes);
}

void rj_tile(bool *ok, cJSON *o, const char *key, const mp_tile_info *t) {
  cJSON *e = rj_obj(ok, o, key);
  rj_str(ok, e, "outcome", mp_tile_outcome_name(t->outcome));
  rj_num(ok, e, "cuts", t->cuts);
  rj_num(ok, e, "candidates", (double)t->candidates);
  rj_bool(ok, e, "budget_reached", t->budget_reached);
  rj_num(ok, e, "lower_bound_before", (double)t->lb_before);
  if (!t->cut) return;
  rj_num(ok, e, "lower_bound_after", (double)t->lb_after);
  rj_str(ok, e, "cut", t->cut);
  rj_str(ok, e, "cut_op", t->cut_op);
  cJSON *x = rj_arr(ok, e, "exports");
  for (uint32_t k = 0; x && k < t->n_exports; k++) {
    rj_push_str(ok, x, t->exports[k]);
  }
  rj_num(ok, e, "stage_ops", t->stage_ops);
  rj_num(ok, e, "bands", t->bands);
  rj_num(ok, e, "columns", t->columns);
  rj_num(ok, e, "height", (double)t->height);
  rj_num(ok, e, "width", (double)t->width);
  rj_num(ok, e, "graph_macs", t->graph_macs);
  rj_num(ok, e, "extra_macs", t->extra_macs);
  rj_num(ok, e, "extra_macs_pct",
         t->graph_macs > 0 ? 100.0 * t->extra_macs / t->graph_macs : 0.0);
  if (t->lb_with) {
    rj_num(ok, e, "lower_bound_with", (double)t->lb_with);
    rj_num(ok, e, "lower_bound_without", (double)t->lb_without);
  }
  if (t->picks > 1) {
    rj_num(ok, e, "ranked", t->picks);
    rj_num(ok, e, "picked", t->picked);
    rj_num(ok, e, "built", t->pick);
    rj_num(ok, e, "lower_bound_picked_file", (double)t->lb_pick);
    rj_num(ok, e, "lower_bound_first_file", (double)t->lb_first);
  }
}

void rj_what_if(bool *ok, cJSON *o, const mp_report_what_if *w) {
  rj_str(ok, o, "setting", w->setting);
  rj_str(ok, o, "passes", w->passes);
  rj_str(ok, o, "order", w->order);
  rj_num(ok, o, "lower_bound_bytes", (double)w->lower_bound_bytes);
  rj_num(ok, o, "arena_bytes", (double)w->arena_bytes);
  if (w->tile) rj_tile(ok, o, "tile", w->tile);
  if (!w->strategy) return;
  rj_str(ok, o, "strategy", w->strategy);
  rj_num(ok, o, "activation_arena_bytes", (double)w->activation_arena_bytes);
  if (w->proven_lb_bytes) {
    rj_num(ok, o, "proven_lower_bound_bytes", (double)w->proven_lb_bytes);
  }
}
