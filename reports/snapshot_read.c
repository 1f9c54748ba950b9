/*
 * snapshot_read.c -- reading baselines {"mplan": "baseline/1"} and plans
 * {"mplan": "plan/1"} into snapshots, for mplan check and mplan diff.
 *
 * A baseline decides whether a pull request passes, and it is a file in
 * the repository that anyone may edit or break, so nothing in it is
 * trusted.
 *
 * Invariants:
 *   1. Every error names the file and the element, and says what is
 *      wrong: "b.json: tensors[3] ('x').size: expected an integer >= 1".
 *   2. A baseline is read strictly: unknown keys, wrong types, missing
 *      fields, a lower bound or total its tensors contradict, and any
 *      version other than baseline/1 are refused.
 *   3. Plans are read for the fields a diff needs (buffers, regions,
 *      execution order, provenance); the rest is derived data and ignored.
 *      Plans are compared, not proven: mplan validate proves them.
 *   4. Integers are exact: a JSON number that is not an integer, or whose
 *      magnitude exceeds 2^53, is refused rather than rounded.
 */
#include <cJSON.h>
#include <stdio.h>
#include <string.h>

#include "mplan/file.h"
#include "report_util.h"
#include "snapshot_internal.h"

#define RD_EXACT ((double)((int64_t)1 << 53))

typedef struct rd_ctx {
  mp_snapshot *s;
  const char *file;
  mp_error *err;
} rd_ctx;

static mp_status rd_bad(rd_ctx *c, const char *where, const char *key,
                        const char *what) {
  return mp_error_set(c->err, MP_ERR_BAD_INPUT, "%s: %s%s%s: %s", c->file,
                      where, *where && key ? "." : "", key ? key : "", what);
}

/* Parses text; syntax errors carry line:column (invariant 1). */
static mp_status rd_parse(const char *file, const char *text, size_t len,
                          cJSON **out, mp_error *err) {
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
  if (root) {
    while (end < text + len &&
           (*end == ' ' || *end == '\n' || *end == '\t' || *end == '\r')) {
      end++;
    }
    if (end == text + len) {
      *out = root;
      return MP_OK;
    }
    cJSON_Delete(root);
  }
  const char *at = end && end >= text && end <= text + len ? end : text + len;
  bool at_end = true;
  for (const char *p = at; p < text + len && at_end; p++) {
    at_end = *p == ' ' || *p == '\n' || *p == '\t' || *p == '\r';
  }
  size_t line = 1, col = 1;
  for (const char *p = text; p < at; p++) {
    if (*p == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  return mp_error_set(err, MP_ERR_BAD_INPUT, "%s:%zu:%zu: %s", file, line, col,
                      root     ? "data after the end of the document"
                      : at_end ? "malformed JSON (unexpected end of input)"
                               : "malformed JSON");
}

static const cJSON *rd_get(const cJSON *o, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(o, key);
}

static mp_status rd_keys(rd_ctx *c, const cJSON *o, const char *where,
                         const char *const *allowed) {
  for (const cJSON *v = o->child; v; v = v->next) {
    bool known = false;
    for (size_t k = 0; allowed[k] && !known; k++) {
      known = strcmp(v->string, allowed[k]) == 0;
    }
    if (!known) return rd_bad(c, where, v->string, "unknown field");
    for (const cJSON *w = o->child; w != v; w = w->next) {
      if (strcmp(w->string, v->string) == 0) {
        return rd_bad(c, where, v->string, "appears twice");
      }
    }
  }
  return MP_OK;
}

static mp_status rd_str(rd_ctx *c, const cJSON *o, const char *where,
                        const char *key, bool required, const char **out) {
  const cJSON *v = rd_get(o, key);
  if (!v && !required) return MP_OK;
  if (!v) return rd_bad(c, where, key, "missing");
  if (!cJSON_IsString(v)) return rd_bad(c, where, key, "expected a string");
  *out = v->valuestring;
  return MP_OK;
}

static mp_status rd_i64(rd_ctx *c, const cJSON *o, const char *where,
                        const char *key, bool required, int64_t *out) {
  const cJSON *v = rd_get(o, key);
  if (!v && !required) return MP_OK;
  if (!v) return rd_bad(c, where, key, "missing");
  double d = cJSON_IsNumber(v) ? v->valuedouble : 0.5;
  if (!(d >= -RD_EXACT && d <= RD_EXACT) || d != (double)(int64_t)d) {
    return rd_bad(c, where, key, "expected an integer (at most 2^53)");
  }
  *out = (int64_t)d;
  return MP_OK;
}

static mp_status rd_size(rd_ctx *c, const cJSON *o, const char *where,
                         const char *key, bool required, size_t *out) {
  int64_t v = 0;
  mp_status st = rd_i64(c, o, where, key, required, &v);
  if (st != MP_OK || !rd_get(o, key)) return st;
  if (v < 0) return rd_bad(c, where, key, "expected an integer >= 0");
  *out = (size_t)v;
  return MP_OK;
}

static mp_status rd_type(rd_ctx *c, const cJSON *o, const char *where,
                         const char *key, bool required, bool array,
                         const cJSON **out) {
  const cJSON *v = rd_get(o, key);
  if (!v && !required) return MP_OK;
  if (!v) return rd_bad(c, where, key, "missing");
  if (array ? !cJSON_IsArray(v) : !cJSON_IsObject(v)) {
    return rd_bad(c, where, key,
                  array ? "expected an array" : "expected an object");
  }
  *out = v;
  return MP_OK;
}

static mp_status rd_nomem(rd_ctx *c) {
  return mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->file);
}

/* "tensors[3] ('conv1_out')" into buf. */
static void rd_where(char *buf, size_t cap, const char *list, size_t i,
                     const cJSON *o) {
  const cJSON *n = rd_get(o, "name");
  if (cJSON_IsString(n)) {
    snprintf(buf, cap, "%s[%zu] ('%.64s')", list, i, n->valuestring);
  } else {
    snprintf(buf, cap, "%s[%zu]", list, i);
  }
}

static mp_status rd_element(rd_ctx *c, const cJSON *e, const char *where) {
  if (!cJSON_IsObject(e)) return rd_bad(c, where, NULL, "expected an object");
  return MP_OK;
}

static mp_status rd_steps(rd_ctx *c, const cJSON *arr, const char *list,
                          const char *key) {
  size_t k = 0;
  mp_status st = MP_OK;
  for (const cJSON *e = arr ? arr->child : NULL; st == MP_OK && e;
       e = e->next, k++) {
    char where[64];
    const char *op = NULL;
    snprintf(where, sizeof where, "%s[%zu]", list, k);
    if (!key) {
      if (!cJSON_IsString(e))
        return rd_bad(c, where, NULL, "expected a string");
      op = e->valuestring;
    } else {
      st = rd_element(c, e, where);
      if (st == MP_OK) st = rd_str(c, e, where, key, true, &op);
    }
    if (st == MP_OK) st = snap_step(c->s, op, c->err);
  }
  return st;
}

/* ---- baseline/1 -----------------------------------------------------------
 */

static const char *const rd_top_keys[] = {
    "mplan", "tool",    "model", "options", "plan",    "total_bytes", "regions",
    "steps", "tensors", "fused", "removed", "patches", NULL};
static const char *const rd_model_keys[] = {"path", "name", "format", "sha256",
                                            NULL};
static const char *const rd_plan_keys[] = {
    "strategy", "strategy_detail", "order", "backend", "time", NULL};
static const char *const rd_region_keys[] = {
    "name",    "arena_bytes", "resident_bytes", "lower_bound_bytes",
    "tensors", NULL};
static const char *const rd_tensor_keys[] = {"name", "class",  "region",
                                             "size", "padded", "first",
                                             "last", "holds",  NULL};
static const char *const rd_fused_keys[] = {"op", "tensors", NULL};
static const char *const rd_removed_keys[] = {"pass", "tensors", NULL};
static const char *const rd_patch_keys[] = {"tensor", "patch", NULL};

static mp_status rd_bl_info(rd_ctx *c, const cJSON *root) {
  const cJSON *m = NULL, *p = NULL, *o = NULL;
  mp_snap_info *in = &c->s->info;
  const char *tool = NULL, *path = NULL, *name = NULL, *format = NULL,
             *sha = NULL, *strategy = NULL, *detail = NULL, *order = NULL,
             *backend = NULL, *time = NULL;
  bool ok = true;
  mp_status st = rd_str(c, root, "", "tool", true, &tool);
  if (st == MP_OK) st = rd_type(c, root, "", "model", true, false, &m);
  if (st == MP_OK) st = rd_keys(c, m, "model", rd_model_keys);
  if (st == MP_OK) st = rd_str(c, m, "model", "path", true, &path);
  if (st == MP_OK) st = rd_str(c, m, "model", "name", false, &name);
  if (st == MP_OK) st = rd_str(c, m, "model", "format", false, &format);
  if (st == MP_OK) st = rd_str(c, m, "model", "sha256", false, &sha);
  if (st == MP_OK) st = rd_type(c, root, "", "options", true, false, &o);
  if (st == MP_OK) st = rd_type(c, root, "", "plan", true, false, &p);
  if (st == MP_OK) st = rd_keys(c, p, "plan", rd_plan_keys);
  if (st == MP_OK) st = rd_str(c, p, "plan", "strategy", false, &strategy);
  if (st == MP_OK) st = rd_str(c, p, "plan", "strategy_detail", false, &detail);
  if (st == MP_OK) st = rd_str(c, p, "plan", "order", false, &order);
  if (st == MP_OK) st = rd_str(c, p, "plan", "backend", false, &backend);
  if (st == MP_OK) st = rd_str(c, p, "plan", "time", false, &time);
  if (st != MP_OK) return st;
  if (time && strcmp(time, "step") != 0 && strcmp(time, "t") != 0) {
    return rd_bad(c, "plan", "time", "expected \"step\" or \"t\"");
  }
  char *opts = cJSON_PrintUnformatted(o);
  in->tool = snap_str(c->s, tool, &ok);
  in->model_path = snap_str(c->s, path, &ok);
  in->model_name = snap_str(c->s, name, &ok);
  in->model_format = snap_str(c->s, format, &ok);
  in->model_sha256 = snap_str(c->s, sha, &ok);
  in->strategy = snap_str(c->s, strategy, &ok);
  in->strategy_detail = snap_str(c->s, detail, &ok);
  in->order = snap_str(c->s, order, &ok);
  in->backend = snap_str(c->s, backend, &ok);
  in->options = snap_str(c->s, opts, &ok);
  if (time && strcmp(time, "t") == 0) in->time_word = "t";
  if (!opts) ok = false;
  cJSON_free(opts);
  return ok ? MP_OK : rd_nomem(c);
}

static mp_status rd_bl_regions(rd_ctx *c, const cJSON *root) {
  const cJSON *arr = NULL;
  size_t k = 0;
  mp_status st = rd_type(c, root, "", "regions", true, true, &arr);
  if (st == MP_OK && !arr->child) {
    return rd_bad(c, "", "regions", "the list is empty");
  }
  for (const cJSON *e = arr ? arr->child : NULL; st == MP_OK && e;
       e = e->next, k++) {
    char where[128];
    const char *name = NULL;
    uint32_t idx = 0;
    snap_region_rec r = {{0}, true, true, true};
    rd_where(where, sizeof where, "regions", k, e);
    st = rd_element(c, e, where);
    if (st == MP_OK) st = rd_keys(c, e, where, rd_region_keys);
    if (st == MP_OK) st = rd_str(c, e, where, "name", true, &name);
    if (st == MP_OK)
      st = rd_size(c, e, where, "arena_bytes", true, &r.r.arena_bytes);
    if (st == MP_OK)
      st = rd_size(c, e, where, "resident_bytes", true, &r.r.resident_bytes);
    if (st == MP_OK) {
      st = rd_size(c, e, where, "lower_bound_bytes", true,
                   &r.r.lower_bound_bytes);
    }
    if (st == MP_OK) st = rd_size(c, e, where, "tensors", true, &r.r.tensors);
    if (st == MP_OK && !*name) st = rd_bad(c, where, "name", "empty");
    if (st == MP_OK) st = snap_region(c->s, name, &idx, c->err);
    if (st == MP_OK && idx != k) {
      st = rd_bad(c, where, "name", "the region is listed twice");
    }
    if (st == MP_OK) {
      r.r.name = c->s->regions[idx].r.name;
      c->s->regions[idx] = r;
    }
  }
  return st;
}

static mp_status rd_class(rd_ctx *c, const char *where, const char *name,
                          mp_class *out) {
  if (mp_class_parse(name, out)) return MP_OK;
  char what[128];
  snprintf(what, sizeof what, "unknown class '%.64s'", name);
  return rd_bad(c, where, "class", what);
}

static mp_status rd_region_of(rd_ctx *c, const char *where, const char *name,
                              uint32_t *out) {
  for (size_t k = 0; k < c->s->n_regions; k++) {
    if (strcmp(c->s->regions[k].r.name, name) == 0) {
      *out = (uint32_t)k;
      return MP_OK;
    }
  }
  char what[160];
  snprintf(what, sizeof what, "unknown region '%.64s' (not in \"regions\")",
           name);
  return rd_bad(c, where, "region", what);
}

/* e.<key>[]: the tensors that live in the buffer of the tensor just added
 * (named self, which a plan's list includes). */
static mp_status rd_members(rd_ctx *c, const cJSON *e, const char *where,
                            const char *key, const char *self) {
  const cJSON *arr = NULL;
  mp_status st = rd_type(c, e, where, key, false, true, &arr);
  size_t k = 0;
  for (const cJSON *m = arr ? arr->child : NULL; st == MP_OK && m;
       m = m->next, k++) {
    if (!cJSON_IsString(m) || !*m->valuestring) {
      char at[160];
      snprintf(at, sizeof at, "%s.%s[%zu]", where, key, k);
      st = rd_bad(c, at, NULL, "expected a tensor name");
    } else if (strcmp(m->valuestring, self) != 0) {
      st = snap_member(c->s, m->valuestring, c->s->n_tensors - 1, c->err);
    }
  }
  return st;
}

static mp_status rd_bl_tensor(rd_ctx *c, const cJSON *e, const char *where) {
  const char *cls = NULL, *region = NULL;
  mp_snap_tensor t = {0};
  mp_status st = rd_element(c, e, where);
  if (st == MP_OK) st = rd_keys(c, e, where, rd_tensor_keys);
  if (st == MP_OK) st = rd_str(c, e, where, "name", true, &t.name);
  if (st == MP_OK) st = rd_str(c, e, where, "class", true, &cls);
  if (st == MP_OK) st = rd_str(c, e, where, "region", true, &region);
  if (st == MP_OK) st = rd_size(c, e, where, "size", true, &t.size);
  if (st == MP_OK) st = rd_size(c, e, where, "padded", true, &t.padded);
  if (st == MP_OK) st = rd_i64(c, e, where, "first", true, &t.first);
  if (st == MP_OK) st = rd_i64(c, e, where, "last", true, &t.last);
  if (st == MP_OK) st = rd_class(c, where, cls, &t.cls);
  if (st == MP_OK) st = rd_region_of(c, where, region, &t.region);
  if (st == MP_OK && t.size == 0) {
    st = rd_bad(c, where, "size", "expected an integer >= 1");
  }
  if (st == MP_OK) st = snap_tensor(c->s, &t, where, c->err);
  /* the tensors in its buffer (written with --passes) */
  if (st == MP_OK) st = rd_members(c, e, where, "holds", t.name);
  return st;
}

/* <at>.<list>[]: for each element, the tensors named (comma separated)
 * in its key names went away by the op or pass in its key by -- a
 * fusion's intermediates (fused) or a pass's removed tensors. keys (when
 * not NULL) are an element's only keys, and names is then required. */
static mp_status rd_gone(rd_ctx *c, const cJSON *obj, const char *at,
                         const char *list, const char *by, const char *names,
                         bool fused, const char *const *keys) {
  const cJSON *arr = NULL;
  mp_status st = rd_type(c, obj, at, list, false, true, &arr);
  size_t k = 0;
  for (const cJSON *e = arr ? arr->child : NULL; st == MP_OK && e;
       e = e->next, k++) {
    char where[128];
    const char *who = NULL, *gone = NULL;
    snprintf(where, sizeof where, "%s%s%s[%zu]", at, *at ? "." : "", list, k);
    st = rd_element(c, e, where);
    if (st == MP_OK && keys) st = rd_keys(c, e, where, keys);
    if (st == MP_OK) st = rd_str(c, e, where, by, true, &who);
    if (st == MP_OK) st = rd_str(c, e, where, names, fused || keys, &gone);
    if (st == MP_OK && gone) st = snap_gone(c->s, gone, who, fused, c->err);
  }
  return st;
}

static mp_status rd_bl_tensors(rd_ctx *c, const cJSON *root) {
  const cJSON *arr = NULL;
  size_t k = 0;
  /* empty: the plan of a graph the passes emptied (no buffer at all) */
  mp_status st = rd_type(c, root, "", "tensors", true, true, &arr);
  for (const cJSON *e = arr ? arr->child : NULL; st == MP_OK && e;
       e = e->next, k++) {
    char where[128];
    rd_where(where, sizeof where, "tensors", k, e);
    st = rd_bl_tensor(c, e, where);
  }
  return st;
}

/* Figures the tensors decide, checked once they are all in. */
static mp_status rd_bl_totals(rd_ctx *c, size_t total, const size_t *recorded) {
  for (size_t k = 0; k < c->s->n_regions; k++) {
    const mp_snap_region *r = &c->s->regions[k].r;
    if (r->tensors != recorded[k]) {
      return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                          "%s: regions[%zu] ('%s').tensors: %zu, but %zu "
                          "tensors name the region (edited by hand?)",
                          c->file, k, r->name, recorded[k], r->tensors);
    }
  }
  if (total != mp_snapshot_total_bytes(c->s)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: total_bytes: %zu, but the regions add up to %zu "
                        "(edited by hand?)",
                        c->file, total, mp_snapshot_total_bytes(c->s));
  }
  return MP_OK;
}

/* baseline/1 "patches": [{"tensor", "patch"}]: the tile pass's tensors. */
static mp_status rd_bl_patches(rd_ctx *c, const cJSON *root) {
  const cJSON *arr = NULL;
  mp_status st = rd_type(c, root, "", "patches", false, true, &arr);
  size_t k = 0;
  for (const cJSON *e = arr ? arr->child : NULL; st == MP_OK && e;
       e = e->next, k++) {
    char where[64];
    const char *t = NULL, *what = NULL;
    snprintf(where, sizeof where, "patches[%zu]", k);
    st = rd_element(c, e, where);
    if (st == MP_OK) st = rd_keys(c, e, where, rd_patch_keys);
    if (st == MP_OK) st = rd_str(c, e, where, "tensor", true, &t);
    if (st == MP_OK) st = rd_str(c, e, where, "patch", true, &what);
    if (st == MP_OK) st = snap_patch(c->s, t, what, c->err);
  }
  return st;
}

/* plan/1 "execution"[]: a step with "patch" (the tile pass's op) makes a
 * tensor of the patches, its first output. */
static mp_status rd_plan_patches(rd_ctx *c, const cJSON *ex) {
  size_t k = 0;
  mp_status st = MP_OK;
  for (const cJSON *e = ex ? ex->child : NULL; st == MP_OK && e;
       e = e->next, k++) {
    const cJSON *p = NULL, *outs = NULL;
    const char *role = NULL, *of = NULL;
    int64_t band = -1, col = -1;
    char where[64];
    snprintf(where, sizeof where, "execution[%zu]", k);
    st = rd_type(c, e, where, "patch", false, false, &p);
    if (st != MP_OK || !p) continue;
    snprintf(where, sizeof where, "execution[%zu].patch", k);
    st = rd_str(c, p, where, "role", true, &role);
    if (st == MP_OK) st = rd_str(c, p, where, "of", true, &of);
    if (st == MP_OK) st = rd_i64(c, p, where, "band", false, &band);
    if (st == MP_OK) st = rd_i64(c, p, where, "column", false, &col);
    snprintf(where, sizeof where, "execution[%zu]", k);
    if (st == MP_OK) st = rd_type(c, e, where, "outputs", true, true, &outs);
    if (st == MP_OK && (!outs->child || !cJSON_IsString(outs->child))) {
      st = rd_bad(c, where, "outputs", "expected a tensor name");
    }
    char what[300];
    if (st == MP_OK) {
      report_patch_what(what, sizeof what, role, of, band, col);
      st = snap_patch(c->s, outs->child->valuestring, what, c->err);
    }
  }
  return st;
}

static mp_status rd_baseline(rd_ctx *c, const cJSON *root) {
  const cJSON *steps = NULL;
  size_t total = 0, *recorded = NULL;
  mp_status st = rd_keys(c, root, "", rd_top_keys);
  if (st == MP_OK) st = rd_bl_info(c, root);
  if (st == MP_OK) st = rd_size(c, root, "", "total_bytes", true, &total);
  if (st == MP_OK) st = rd_bl_regions(c, root);
  if (st == MP_OK) st = rd_type(c, root, "", "steps", true, true, &steps);
  if (st == MP_OK) st = rd_steps(c, steps, "steps", NULL);
  if (st == MP_OK) st = rd_bl_tensors(c, root);
  /* what fusions and passes removed (written with --passes) */
  if (st == MP_OK) {
    st = rd_gone(c, root, "", "fused", "op", "tensors", true, rd_fused_keys);
  }
  if (st == MP_OK) {
    st = rd_gone(c, root, "", "removed", "pass", "tensors", false,
                 rd_removed_keys);
  }
  if (st == MP_OK) st = rd_bl_patches(c, root);
  if (st == MP_OK) {
    recorded = mp_calloc(c->s->alloc, c->s->n_regions, sizeof *recorded);
    if (!recorded) st = rd_nomem(c);
  }
  for (size_t k = 0; st == MP_OK && k < c->s->n_regions; k++) {
    recorded[k] = c->s->regions[k].r.tensors;
  }
  if (st == MP_OK) st = snap_finish(c->s, c->err);
  if (st == MP_OK) st = rd_bl_totals(c, total, recorded);
  mp_free(c->s->alloc, recorded);
  return st;
}

/* ---- plan/1 (invariant 3) -------------------------------------------------
 */

static mp_status rd_plan_info(rd_ctx *c, const cJSON *root) {
  const cJSON *m = NULL, *s = NULL;
  mp_snap_info *in = &c->s->info;
  const char *tool = NULL, *path = NULL, *name = NULL, *format = NULL,
             *backend = NULL, *strategy = NULL, *detail = NULL, *order = NULL;
  bool ok = true;
  mp_status st = rd_str(c, root, "", "tool", false, &tool);
  if (st == MP_OK) st = rd_type(c, root, "", "model", false, false, &m);
  if (st == MP_OK && m) st = rd_str(c, m, "model", "path", false, &path);
  if (st == MP_OK && m) st = rd_str(c, m, "model", "name", false, &name);
  if (st == MP_OK && m) st = rd_str(c, m, "model", "format", false, &format);
  if (st == MP_OK && m) st = rd_str(c, m, "model", "backend", false, &backend);
  if (st == MP_OK) st = rd_type(c, root, "", "summary", true, false, &s);
  if (st == MP_OK) st = rd_str(c, s, "summary", "strategy", false, &strategy);
  if (st == MP_OK)
    st = rd_str(c, s, "summary", "strategy_detail", false, &detail);
  if (st == MP_OK) st = rd_str(c, s, "summary", "order", false, &order);
  if (st != MP_OK) return st;
  in->tool = snap_str(c->s, tool, &ok);
  in->model_path = snap_str(c->s, path, &ok);
  in->model_name = snap_str(c->s, name, &ok);
  in->model_format = snap_str(c->s, format, &ok);
  in->backend = snap_str(c->s, backend, &ok);
  in->strategy = snap_str(c->s, strategy, &ok);
  in->strategy_detail = snap_str(c->s, detail, &ok);
  in->order = snap_str(c->s, order, &ok);
  if (format && strcmp(format, "minimalloc-csv") == 0) in->time_word = "t";
  return ok ? MP_OK : rd_nomem(c);
}

static mp_status rd_plan_regions(rd_ctx *c, const cJSON *root) {
  const cJSON *arr = NULL;
  size_t k = 0;
  mp_status st = rd_type(c, root, "", "regions", false, true, &arr);
  for (const cJSON *e = arr ? arr->child : NULL; st == MP_OK && e;
       e = e->next, k++) {
    char where[128];
    const char *name = NULL;
    uint32_t idx = 0;
    size_t size = 0;
    rd_where(where, sizeof where, "regions", k, e);
    st = rd_element(c, e, where);
    if (st == MP_OK) st = rd_str(c, e, where, "name", true, &name);
    if (st == MP_OK) st = rd_size(c, e, where, "size", true, &size);
    if (st == MP_OK) st = snap_region(c->s, name, &idx, c->err);
    if (st == MP_OK && idx != k) {
      st = rd_bad(c, where, "name", "the region is listed twice");
    }
    if (st == MP_OK) {
      c->s->regions[idx].r.arena_bytes = size;
      c->s->regions[idx].has_arena = true;
    }
  }
  if (st == MP_OK && c->s->n_regions == 0) {
    uint32_t idx;
    st = snap_region(c->s, "arena", &idx, c->err);
  }
  return st;
}

static mp_status rd_plan_padded(rd_ctx *c, const cJSON *e, const char *where,
                                mp_snap_tensor *t) {
  size_t align = 1;
  mp_status st = rd_size(c, e, where, "alignment", false, &align);
  if (st == MP_OK && !mp_is_pow2(align)) {
    st = rd_bad(c, where, "alignment", "expected a power of two");
  }
  if (st == MP_OK && !mp_align_up(t->size, align, &t->padded)) {
    st = rd_bad(c, where, "size", "overflows when aligned");
  }
  if (st == MP_OK) st = rd_size(c, e, where, "padded_size", false, &t->padded);
  return st;
}

static mp_status rd_plan_buffer(rd_ctx *c, const cJSON *e, const char *where) {
  const char *cls = NULL, *region = c->s->regions[0].r.name;
  mp_snap_tensor t = {.placed = true};
  mp_status st = rd_element(c, e, where);
  if (st == MP_OK) st = rd_str(c, e, where, "name", true, &t.name);
  if (st == MP_OK) st = rd_str(c, e, where, "class", true, &cls);
  if (st == MP_OK) st = rd_str(c, e, where, "region", false, &region);
  if (st == MP_OK) st = rd_size(c, e, where, "offset", true, &t.offset);
  if (st == MP_OK) st = rd_size(c, e, where, "size", true, &t.size);
  if (st == MP_OK) st = rd_i64(c, e, where, "first_use", true, &t.first);
  if (st == MP_OK) st = rd_i64(c, e, where, "last_use", true, &t.last);
  if (st == MP_OK) st = rd_plan_padded(c, e, where, &t);
  if (st == MP_OK) st = rd_class(c, where, cls, &t.cls);
  if (st == MP_OK) st = rd_region_of(c, where, region, &t.region);
  if (st == MP_OK) st = snap_tensor(c->s, &t, where, c->err);
  /* The tensors sharing the buffer (plan JSON version 5). */
  if (st == MP_OK) st = rd_members(c, e, where, "tensors", t.name);
  return st;
}

/* What the passes removed: each fusion's intermediates (into its op) and
 * each pass row's removed tensors. */
static mp_status rd_plan_fusions(rd_ctx *c, const cJSON *root) {
  const cJSON *passes = NULL;
  mp_status st = rd_type(c, root, "", "passes", false, false, &passes);
  if (st == MP_OK && passes) {
    st = rd_gone(c, passes, "passes", "fusions", "op", "intermediates", true,
                 NULL);
  }
  if (st == MP_OK && passes) {
    st = rd_gone(c, passes, "passes", "rows", "pass", "removed", false, NULL);
  }
  return st;
}

/* "what_if" (plan --what-if): each row's setting, lower bound and arena;
 * the rest of a row (its tile record, a strategy row's figures) is for
 * the other reports. */
static mp_status rd_plan_what_if(rd_ctx *c, const cJSON *root) {
  const cJSON *arr = NULL;
  mp_status st = rd_type(c, root, "", "what_if", false, true, &arr);
  size_t k = 0;
  for (const cJSON *e = arr ? arr->child : NULL; st == MP_OK && e;
       e = e->next, k++) {
    char where[128];
    const char *setting = NULL;
    size_t lb = 0, arena = 0;
    rd_where(where, sizeof where, "what_if", k, e);
    st = rd_element(c, e, where);
    if (st == MP_OK) st = rd_str(c, e, where, "setting", true, &setting);
    if (st == MP_OK) st = rd_size(c, e, where, "lower_bound_bytes", true, &lb);
    if (st == MP_OK) st = rd_size(c, e, where, "arena_bytes", false, &arena);
    if (st == MP_OK) st = snap_what_if(c->s, setting, lb, arena, c->err);
  }
  return st;
}

static mp_status rd_plan(rd_ctx *c, const cJSON *root) {
  const cJSON *bufs = NULL, *ex = NULL;
  size_t k = 0;
  mp_status st = rd_plan_info(c, root);
  if (st == MP_OK) st = rd_plan_regions(c, root);
  /* empty: as a baseline's tensors */
  if (st == MP_OK) st = rd_type(c, root, "", "buffers", true, true, &bufs);
  for (const cJSON *e = bufs ? bufs->child : NULL; st == MP_OK && e;
       e = e->next, k++) {
    char where[128];
    rd_where(where, sizeof where, "buffers", k, e);
    st = rd_plan_buffer(c, e, where);
  }
  if (st == MP_OK) st = rd_plan_fusions(c, root);
  if (st == MP_OK) st = rd_type(c, root, "", "execution", false, true, &ex);
  if (st == MP_OK) st = rd_steps(c, ex, "execution", "op");
  if (st == MP_OK) st = rd_plan_patches(c, ex);
  if (st == MP_OK) st = rd_plan_what_if(c, root);
  if (st == MP_OK) st = snap_finish(c->s, c->err);
  return st;
}

/* ---- entry ----------------------------------------------------------------
 */

static mp_status rd_document(rd_ctx *c, const cJSON *root) {
  const cJSON *f = rd_get(root, "mplan");
  if (!cJSON_IsObject(root) || !cJSON_IsString(f)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: not a baseline or a plan (no \"mplan\" format "
                        "field)",
                        c->file);
  }
  const char *v = f->valuestring;
  if (strcmp(v, "baseline/1") == 0) return rd_baseline(c, root);
  if (strcmp(v, "plan/1") == 0) return rd_plan(c, root);
  if (strncmp(v, "baseline/", 9) == 0 || strncmp(v, "plan/", 5) == 0) {
    return mp_error_set(c->err, MP_ERR_UNSUPPORTED,
                        "%s: unsupported format '%.64s' (this mplan reads "
                        "baseline/1 and plan/1)",
                        c->file, v);
  }
  return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                      "%s: is a %.64s, not a baseline or a plan", c->file, v);
}

mp_status mp_snapshot_load(const char *path, const mp_alloc *a,
                           mp_snapshot **out, mp_error *err) {
  char *text = NULL;
  size_t len = 0;
  cJSON *root = NULL;
  mp_snapshot *s = NULL;
  mp_status st = mp_file_read(path, a, &text, &len, err);
  if (st == MP_OK) st = rd_parse(path, text, len, &root, err);
  const cJSON *f = root ? rd_get(root, "mplan") : NULL;
  const char *kind = cJSON_IsString(f) ? f->valuestring : "?";
  if (st == MP_OK) st = snap_create(a, kind, path, &s, err);
  if (st == MP_OK) {
    rd_ctx c = {s, s->info.source, err};
    st = rd_document(&c, root);
  }
  cJSON_Delete(root);
  mp_free(a, text);
  if (st != MP_OK) {
    mp_snapshot_destroy(s);
    return st;
  }
  *out = s;
  return MP_OK;
}
