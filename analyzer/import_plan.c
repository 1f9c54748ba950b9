/*
 * import_plan.c -- reader of plans {"mplan": "plan/1"} for validate and
 * explain.
 *
 * A plan file may have been edited by hand, so nothing in it is trusted:
 * every buffer is re-checked as a problem buffer (size, alignment, interval)
 * and the placements are handed to the validator by the caller. Only the
 * fields needed to rebuild the problem and to name things are read; the
 * rest of the document (peak, reuse, derived summary numbers) is derived
 * data that the reader ignores.
 *
 * Invariants:
 *   1. buffers[i] becomes problem buffer i and placement i.
 *   2. A stated padded_size must equal align_up(size, alignment).
 *   3. Each region's limit is its capacity, else its stated size; a file
 *      without regions has one, "arena", of summary.arena_bytes.
 */
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "json_util.h"

static const char *const pl_buf_keys[] = {
    "name",          "class",    "kind",           "dtype",     "shape",
    "offset",        "size",     "padded_size",    "alignment", "waste",
    "first_use",     "last_use", "region",         "pinned",    "producer",
    "last_consumer", "tensors",  "tensor_offsets", NULL};

typedef struct pl_ctx {
  const char *file;
  const mp_alloc *a;
  mp_problem *p;
  mp_plan_file *pf;
  size_t cap;
  mp_error *err;
} pl_ctx;

static char *pl_dup(pl_ctx *c, const char *s, bool *ok) {
  if (!s) return NULL;
  char *d = mp_strdup(c->a, s);
  if (!d) *ok = false;
  return d;
}

static mp_status pl_nonneg(pl_ctx *c, const char *where, const char *key,
                           int64_t v) {
  if (v >= 0) return MP_OK;
  return mp_error_set(c->err, MP_ERR_BAD_INPUT, "%s: %s.%s: %lld is negative",
                      c->file, where, key, (long long)v);
}

static bool pl_region_index(const mp_plan_file *pf, const char *name,
                            uint32_t *out) {
  for (size_t r = 0; r < pf->n_regions; r++) {
    if (strcmp(pf->region_names[r], name) == 0) {
      *out = (uint32_t)r;
      return true;
    }
  }
  return false;
}

static mp_status pl_fields(pl_ctx *c, const cJSON *b, const char *where,
                           mp_buffer_desc *d, int64_t *offset,
                           uint32_t *region_idx) {
  const char *cls = NULL, *region = NULL;
  int64_t size = 0, align = 1, padded = -1;
  const char *f = c->file;
  mp_status st = json_keys(f, b, where, pl_buf_keys, c->err);
  if (st == MP_OK) st = json_string(f, b, where, "class", true, &cls, c->err);
  if (st == MP_OK) st = json_int(f, b, where, "offset", true, offset, c->err);
  if (st == MP_OK) st = json_int(f, b, where, "size", true, &size, c->err);
  if (st == MP_OK)
    st = json_int(f, b, where, "alignment", false, &align, c->err);
  if (st == MP_OK)
    st = json_int(f, b, where, "padded_size", false, &padded, c->err);
  if (st == MP_OK)
    st = json_int(f, b, where, "first_use", true, &d->first, c->err);
  if (st == MP_OK)
    st = json_int(f, b, where, "last_use", true, &d->last, c->err);
  if (st == MP_OK)
    st = json_string(f, b, where, "region", false, &region, c->err);
  if (st == MP_OK)
    st = json_bool(f, b, where, "pinned", false, &d->pinned, c->err);
  if (st == MP_OK) st = pl_nonneg(c, where, "offset", *offset);
  if (st == MP_OK) st = pl_nonneg(c, where, "size", size);
  if (st == MP_OK) st = pl_nonneg(c, where, "alignment", align);
  if (st != MP_OK) return st;
  if (!mp_class_parse(cls, &d->cls)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: %s.class: unknown class '%s'", f, where, cls);
  }
  *region_idx = 0;
  if (region && !pl_region_index(c->pf, region, region_idx)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: %s.region: unknown region '%s' (not in "
                        "\"regions\")",
                        f, where, region);
  }
  d->size = (size_t)size;
  d->alignment = (size_t)align;
  d->pin = (size_t)*offset;
  size_t want;
  if (padded >= 0 && mp_is_pow2(d->alignment) &&
      mp_align_up(d->size, d->alignment, &want) && (size_t)padded != want) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: %s.padded_size: %lld, but size %zu aligned to "
                        "%zu is %zu",
                        f, where, (long long)padded, d->size, d->alignment,
                        want);
  }
  return MP_OK;
}

/* "tensor_offsets" (optional, informational): one whole number per entry
 * of "tensors", each inside the buffer. */
static mp_status pl_offsets(pl_ctx *c, const cJSON *b, const char *where,
                            size_t size) {
  const cJSON *off = cJSON_GetObjectItemCaseSensitive(b, "tensor_offsets");
  const cJSON *names = cJSON_GetObjectItemCaseSensitive(b, "tensors");
  if (!off) return MP_OK;
  if (!cJSON_IsArray(off) || !cJSON_IsArray(names) ||
      cJSON_GetArraySize(off) != cJSON_GetArraySize(names)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: %s.tensor_offsets: expected an array as long as "
                        "\"tensors\"",
                        c->file, where);
  }
  size_t k = 0;
  for (const cJSON *e = off->child; e; e = e->next, k++) {
    double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
    /* range first: converting an out-of-range double is undefined */
    if (v < 0 || v >= (double)size || v != (double)(int64_t)v) {
      return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                          "%s: %s.tensor_offsets[%zu]: expected a whole "
                          "number below the size %zu",
                          c->file, where, k, size);
    }
  }
  return MP_OK;
}

static mp_status pl_buffer(pl_ctx *c, const cJSON *b, size_t i) {
  char where[128];
  mp_buffer_desc d = {0};
  int64_t offset = 0;
  uint32_t region = 0;
  const char *prod = NULL, *cons = NULL;
  bool ok = true;
  snprintf(where, sizeof where, "buffers[%zu]", i);
  if (!cJSON_IsObject(b)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT, "%s: %s: expected an object",
                        c->file, where);
  }
  mp_status st = json_string(c->file, b, where, "name", true, &d.name, c->err);
  if (st != MP_OK) return st;
  snprintf(where, sizeof where, "buffers[%zu] ('%.64s')", i, d.name);
  st = pl_fields(c, b, where, &d, &offset, &region);
  if (st == MP_OK) st = pl_offsets(c, b, where, d.size);
  if (st == MP_OK)
    st = json_string(c->file, b, where, "producer", false, &prod, c->err);
  if (st == MP_OK)
    st = json_string(c->file, b, where, "last_consumer", false, &cons, c->err);
  if (st == MP_OK) st = mp_problem_add(c->p, &d, NULL, c->err);
  if (st != MP_OK) {
    if (st != MP_ERR_NOMEM && c->err &&
        strncmp(c->err->msg, c->file, strlen(c->file)) != 0) {
      mp_error_prefix(c->err, "%s: %s", c->file, where);
    }
    return st;
  }
  c->pf->placements[i] = (mp_placement){(size_t)offset, region};
  c->pf->buf_producer[i] = pl_dup(c, prod, &ok);
  c->pf->buf_consumer[i] = pl_dup(c, cons, &ok);
  if (!ok)
    return mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->file);
  return MP_OK;
}

static mp_status pl_execution(pl_ctx *c, const cJSON *root) {
  const cJSON *ex = NULL;
  mp_status st = json_array(c->file, root, "", "execution", false, &ex, c->err);
  if (st != MP_OK || !ex || cJSON_GetArraySize(ex) == 0) return st;
  size_t n = (size_t)cJSON_GetArraySize(ex), k = 0;
  bool ok = true;
  c->pf->step_op = mp_calloc(c->a, n, sizeof *c->pf->step_op);
  c->pf->step_type = mp_calloc(c->a, n, sizeof *c->pf->step_type);
  if (!c->pf->step_op || !c->pf->step_type) ok = false;
  c->pf->n_steps = ok ? n : 0;
  for (const cJSON *e = ex->child; ok && e; e = e->next, k++) {
    char where[64];
    const char *op = NULL, *type = NULL;
    int64_t step = -1;
    snprintf(where, sizeof where, "execution[%zu]", k);
    if (!cJSON_IsObject(e)) {
      return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                          "%s: %s: expected an object", c->file, where);
    }
    st = json_int(c->file, e, where, "step", true, &step, c->err);
    if (st == MP_OK)
      st = json_string(c->file, e, where, "op", true, &op, c->err);
    if (st == MP_OK)
      st = json_string(c->file, e, where, "type", false, &type, c->err);
    if (st != MP_OK) return st;
    if (step != (int64_t)k) {
      return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                          "%s: %s.step: %lld, expected %zu (steps in order)",
                          c->file, where, (long long)step, k);
    }
    c->pf->step_op[k] = pl_dup(c, op, &ok);
    c->pf->step_type[k] = pl_dup(c, type, &ok);
  }
  if (!ok)
    return mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->file);
  return MP_OK;
}

/* summary.span = [first, last]: the run's time span, inclusive. */
static mp_status pl_span(pl_ctx *c, const cJSON *s, int64_t span[2]) {
  const cJSON *arr = NULL;
  mp_status st = json_array(c->file, s, "summary", "span", false, &arr, c->err);
  if (st != MP_OK || !arr) return st;
  if (cJSON_GetArraySize(arr) != 2 || !json_exact_int(arr->child, &span[0]) ||
      !json_exact_int(arr->child->next, &span[1]) || span[0] > span[1]) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: summary.span: expected [first, last] with first "
                        "<= last",
                        c->file);
  }
  return MP_OK;
}

/* One region: its name, capacity (null or absent: unbounded) and size. */
static mp_status pl_region(pl_ctx *c, const cJSON *r, size_t k, bool *ok) {
  char where[32];
  const char *name = NULL;
  int64_t size = -1, cap = 0;
  snprintf(where, sizeof where, "regions[%zu]", k);
  if (!cJSON_IsObject(r)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT, "%s: %s: expected an object",
                        c->file, where);
  }
  mp_status st = json_string(c->file, r, where, "name", true, &name, c->err);
  if (st == MP_OK)
    st = json_int(c->file, r, where, "size", true, &size, c->err);
  const cJSON *capj = cJSON_GetObjectItemCaseSensitive(r, "capacity");
  if (st == MP_OK && capj && !cJSON_IsNull(capj)) {
    st = json_int(c->file, r, where, "capacity", true, &cap, c->err);
  }
  if (st == MP_OK) st = pl_nonneg(c, where, "size", size);
  if (st == MP_OK) st = pl_nonneg(c, where, "capacity", cap);
  if (st != MP_OK) return st;
  uint32_t dup;
  if (pl_region_index(c->pf, name, &dup)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s: %s: region '%s' is listed twice", c->file, where,
                        name);
  }
  c->pf->region_names[k] = pl_dup(c, name, ok);
  c->pf->region_capacity[k] = (size_t)cap;
  c->pf->region_limit[k] = cap ? (size_t)cap : (size_t)size;
  c->pf->n_regions = k + 1;
  return MP_OK;
}

/* The plan's regions; a file without them has one "arena" as large as
 * summary.arena_bytes. */
static mp_status pl_regions(pl_ctx *c, const cJSON *regions) {
  size_t n = regions ? (size_t)cJSON_GetArraySize(regions) : 0, k = 0;
  bool ok = true;
  mp_plan_file *pf = c->pf;
  pf->region_names = mp_calloc(c->a, n ? n : 1, sizeof *pf->region_names);
  pf->region_capacity = mp_calloc(c->a, n ? n : 1, sizeof *pf->region_capacity);
  pf->region_limit = mp_calloc(c->a, n ? n : 1, sizeof *pf->region_limit);
  if (!pf->region_names || !pf->region_capacity || !pf->region_limit) {
    return mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->file);
  }
  if (n == 0) {
    pf->region_names[0] = pl_dup(c, "arena", &ok);
    pf->region_limit[0] = c->cap;
    pf->n_regions = 1;
  }
  mp_status st = MP_OK;
  for (const cJSON *r = n ? regions->child : NULL; st == MP_OK && r;
       r = r->next, k++) {
    st = pl_region(c, r, k, &ok);
  }
  if (st == MP_OK && !ok) {
    st = mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->file);
  }
  return st;
}

static mp_status pl_summary(pl_ctx *c, const cJSON *root, int64_t span[2]) {
  const cJSON *s = NULL, *regions = NULL;
  const char *strategy = NULL, *order = NULL;
  int64_t arena = -1;
  bool ok = true;
  mp_status st = json_object(c->file, root, "", "summary", true, &s, c->err);
  if (st == MP_OK)
    st = json_int(c->file, s, "summary", "arena_bytes", true, &arena, c->err);
  if (st == MP_OK) st = pl_span(c, s, span);
  if (st == MP_OK)
    st = json_string(c->file, s, "summary", "strategy", false, &strategy,
                     c->err);
  if (st == MP_OK)
    st = json_string(c->file, s, "summary", "order", false, &order, c->err);
  if (st == MP_OK)
    st = json_array(c->file, root, "", "regions", false, &regions, c->err);
  if (st == MP_OK) st = pl_nonneg(c, "summary", "arena_bytes", arena);
  if (st != MP_OK) return st;
  const cJSON *plan_ms = cJSON_GetObjectItemCaseSensitive(s, "plan_ms");
  if (cJSON_IsNumber(plan_ms)) c->pf->plan_ms = plan_ms->valuedouble;
  c->cap = (size_t)arena;
  st = pl_regions(c, regions);
  if (st != MP_OK) return st;
  c->pf->arena_bytes = c->cap;
  c->pf->strategy = pl_dup(c, strategy ? strategy : "", &ok);
  c->pf->order = pl_dup(c, order ? order : "file", &ok);
  if (!ok)
    return mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->file);
  return MP_OK;
}

static mp_status pl_buffers(pl_ctx *c, const cJSON *root) {
  const cJSON *bufs = NULL;
  mp_status st = json_array(c->file, root, "", "buffers", true, &bufs, c->err);
  if (st != MP_OK) return st;
  /* A plan may have no buffer: a graph the passes emptied (every op
   * dead) plans to an arena of 0 B, and its plan must read back. */
  size_t n = (size_t)cJSON_GetArraySize(bufs), i = 0;
  c->pf->placements = mp_calloc(c->a, n + 1, sizeof *c->pf->placements);
  c->pf->buf_producer = mp_calloc(c->a, n + 1, sizeof *c->pf->buf_producer);
  c->pf->buf_consumer = mp_calloc(c->a, n + 1, sizeof *c->pf->buf_consumer);
  c->pf->n_buffers = n;
  if (!c->pf->placements || !c->pf->buf_producer || !c->pf->buf_consumer) {
    return mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->file);
  }
  for (const cJSON *b = bufs->child; st == MP_OK && b; b = b->next, i++) {
    st = pl_buffer(c, b, i);
  }
  return st;
}

mp_status mp_import_plan(const char *file, const cJSON *root, const mp_alloc *a,
                         mp_problem **problem, mp_plan_file *pf,
                         mp_error *err) {
  pl_ctx c = {file, a, NULL, pf, 0, err};
  int64_t span[2] = {0, -1};
  const char *name = "", *path = NULL;
  bool ok = true;
  const cJSON *model = NULL;
  memset(pf, 0, sizeof *pf);
  mp_status st = json_format(file, root, "plan/1", err);
  if (st == MP_OK)
    st = json_object(file, root, "", "model", false, &model, err);
  if (st == MP_OK && model)
    st = json_string(file, model, "model", "name", false, &name, err);
  if (st == MP_OK && model)
    st = json_string(file, model, "model", "path", false, &path, err);
  if (st == MP_OK) {
    pf->model = pl_dup(&c, path ? path : file, &ok);
    if (!ok) st = mp_error_set(err, MP_ERR_NOMEM, "%s: out of memory", file);
  }
  if (st == MP_OK) st = mp_problem_create(a, name, &c.p, err);
  if (st == MP_OK) st = pl_summary(&c, root, span);
  if (st == MP_OK) st = pl_buffers(&c, root);
  if (st == MP_OK) st = pl_execution(&c, root);
  if (st == MP_OK && span[0] <= span[1]) {
    st = mp_problem_set_span(c.p, span[0], span[1], err);
  }
  if (st == MP_OK) st = mp_problem_seal(c.p, err);
  if (st != MP_OK) {
    mp_plan_file_release(pf, a);
    mp_problem_destroy(c.p);
    return st;
  }
  *problem = c.p;
  return MP_OK;
}

void mp_plan_file_release(mp_plan_file *pf, const mp_alloc *a) {
  for (size_t r = 0; pf->region_names && r < pf->n_regions; r++) {
    mp_free(a, pf->region_names[r]);
  }
  mp_free(a, pf->region_names);
  mp_free(a, pf->region_capacity);
  mp_free(a, pf->region_limit);
  for (size_t i = 0; i < pf->n_buffers; i++) {
    if (pf->buf_producer) mp_free(a, pf->buf_producer[i]);
    if (pf->buf_consumer) mp_free(a, pf->buf_consumer[i]);
  }
  mp_free(a, pf->buf_producer);
  mp_free(a, pf->buf_consumer);
  for (size_t k = 0; k < pf->n_steps; k++) {
    if (pf->step_op) mp_free(a, pf->step_op[k]);
    if (pf->step_type) mp_free(a, pf->step_type[k]);
  }
  mp_free(a, pf->step_op);
  mp_free(a, pf->step_type);
  mp_free(a, pf->placements);
  mp_free(a, pf->strategy);
  mp_free(a, pf->order);
  mp_free(a, pf->model);
  memset(pf, 0, sizeof *pf);
}
