/*
 * import_pipeline.c -- reader of pipeline files {"mplan": "pipeline/1"}:
 * several models run one after the other, and the tensors that connect
 * them, planned as one global problem.
 *
 * {"mplan": "pipeline/1", "name": "...",
 *  "models": [{"name": "enc", "path": "encoder.onnx",
 *              "shapes": {"x": [1, 3, 48, 320]}, "dims": {"N": 1}}, ...],
 *  "connect": [{"from": "enc/feat", "to": "dec/feat_in"}]}
 *
 * Each member is loaded on its own (ONNX or graph JSON, through the whole
 * analyzer: bound, inferred, resolved), in file order; a connected input
 * takes the shape of the tensor feeding it. The members are then merged
 * into one graph whose tensors and ops are named MODEL/NAME.
 *
 * Invariants:
 *   1. A "to" input is replaced by its "from" tensor, which must come from
 *      an earlier model and have the same dtype and shape: the connecting
 *      tensor is produced by the first model and read by the second, so it
 *      is retained from its producer to its last reader across the phase
 *      boundary, while the first model's internals die before the second
 *      model runs and may be overwritten by it.
 *   2. A connected graph output is no longer a graph output (it lives as
 *      long as its readers need it); other graph outputs still live to the
 *      end of the whole pipeline.
 *   3. Paths are relative to the pipeline file's folder; members may not
 *      be pipelines themselves.
 */
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "json_util.h"
#include "mplan/model.h"

#define PL_MAX_MODELS 16

typedef struct pl_member {
  const char *name;
  mp_model *model;
  int32_t *map; /* member tensor index -> merged tensor index */
} pl_member;

typedef struct pl_ctx {
  const char *file;
  const mp_alloc *a;
  mp_error *err;
  pl_member m[PL_MAX_MODELS];
  size_t n;
  const cJSON *connect;
  mp_graph *g;
} pl_ctx;

static const char *const pl_root_keys[] = {"mplan",  "name",    "description",
                                           "models", "connect", NULL};
static const char *const pl_model_keys[] = {"name", "path", "shapes", "dims",
                                            NULL};

/* Splits "model/tensor" at its first '/' into the member index and the
 * tensor name. */
static bool pl_split(const pl_ctx *c, const char *ref, size_t upto,
                     size_t *member, const char **tensor) {
  const char *slash = strchr(ref, '/');
  if (!slash) return false;
  for (size_t i = 0; i < upto; i++) {
    size_t len = strlen(c->m[i].name);
    if ((size_t)(slash - ref) == len && strncmp(ref, c->m[i].name, len) == 0) {
      *member = i;
      *tensor = slash + 1;
      return true;
    }
  }
  return false;
}

/* The "from" tensor feeding input `input` of member i, or NULL. */
static const cJSON *pl_feed(const pl_ctx *c, size_t i, const char *input) {
  for (const cJSON *e = c->connect ? c->connect->child : NULL; e; e = e->next) {
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(e, "to");
    size_t mi;
    const char *t;
    if (cJSON_IsString(to) && pl_split(c, to->valuestring, c->n, &mi, &t) &&
        mi == i && strcmp(t, input) == 0) {
      return cJSON_GetObjectItemCaseSensitive(e, "from");
    }
  }
  return NULL;
}

static mp_status pl_bad(pl_ctx *c, const char *fmt, const char *a1,
                        const char *a2) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a1, a2);
  return mp_error_set(c->err, MP_ERR_BAD_INPUT, "%s: %s", c->file, msg);
}

/* Shapes of member i's options: its own, plus connected inputs. */
static mp_status pl_shapes(pl_ctx *c, size_t i, const cJSON *entry,
                           mp_shape_binding *sb, size_t *n_sb,
                           mp_dim_binding *db, size_t *n_db) {
  const cJSON *shapes = cJSON_GetObjectItemCaseSensitive(entry, "shapes");
  const cJSON *dims = cJSON_GetObjectItemCaseSensitive(entry, "dims");
  *n_sb = *n_db = 0;
  if ((shapes && !cJSON_IsObject(shapes)) || (dims && !cJSON_IsObject(dims))) {
    return pl_bad(c, "models[%s].%s: expected an object of names", c->m[i].name,
                  shapes && !cJSON_IsObject(shapes) ? "shapes" : "dims");
  }
  for (const cJSON *s = shapes ? shapes->child : NULL; s; s = s->next) {
    if (*n_sb == PL_MAX_MODELS * 4 || !cJSON_IsArray(s) ||
        cJSON_GetArraySize(s) > MP_MAX_RANK) {
      return pl_bad(c, "models[%s].shapes.%s: expected a list of dims",
                    c->m[i].name, s->string);
    }
    mp_shape_binding *b = &sb[(*n_sb)++];
    *b = (mp_shape_binding){.name = s->string};
    for (const cJSON *d = s->child; d; d = d->next) {
      if (!json_exact_int(d, &b->dims[b->rank]) || b->dims[b->rank] < 1) {
        return pl_bad(c, "models[%s].shapes.%s: dims must be integers >= 1",
                      c->m[i].name, s->string);
      }
      b->rank++;
    }
  }
  for (const cJSON *d = dims ? dims->child : NULL; d; d = d->next) {
    int64_t v;
    if (*n_db == PL_MAX_MODELS * 4 || !json_exact_int(d, &v) || v < 1) {
      return pl_bad(c, "models[%s].dims.%s: expected an integer >= 1",
                    c->m[i].name, d->string);
    }
    db[(*n_db)++] = (mp_dim_binding){d->string, v};
  }
  return MP_OK;
}

/* Connected inputs of member i take the shape of what feeds them. */
static mp_status pl_connected_shapes(pl_ctx *c, size_t i, mp_shape_binding *sb,
                                     size_t *n_sb) {
  for (const cJSON *e = c->connect ? c->connect->child : NULL; e; e = e->next) {
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(e, "to");
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(e, "from");
    size_t mi = 0, fi = 0;
    const char *tn = "", *fn = "";
    int32_t ft;
    if (!cJSON_IsString(to) || !cJSON_IsString(from)) {
      return pl_bad(c, "connect: every entry needs \"from\" and \"to\"%s%s", "",
                    "");
    }
    if (!pl_split(c, to->valuestring, c->n, &mi, &tn) || mi != i) continue;
    if (!pl_split(c, from->valuestring, i, &fi, &fn)) {
      return pl_bad(c,
                    "connect: '%s' is not MODEL/TENSOR of an earlier "
                    "model (feeding '%s')",
                    from->valuestring, to->valuestring);
    }
    const mp_graph *fg = mp_model_graph(c->m[fi].model);
    if (!mp_graph_find_tensor(fg, fn, &ft)) {
      return pl_bad(c, "connect: model '%s' has no tensor '%s'", c->m[fi].name,
                    fn);
    }
    const mp_tensor *t = mp_graph_tensor(fg, (size_t)ft);
    if (*n_sb == PL_MAX_MODELS * 4)
      return pl_bad(c, "too many shapes%s%s", "", "");
    mp_shape_binding *b = &sb[(*n_sb)++];
    *b = (mp_shape_binding){.name = tn, .rank = t->rank};
    for (uint32_t k = 0; k < t->rank; k++) {
      b->dims[k] = mp_graph_dim_of(fg, &t->shape[k]);
    }
  }
  return MP_OK;
}

static mp_status pl_load_member(pl_ctx *c, size_t i, const cJSON *entry,
                                const char *dir) {
  const char *path = NULL;
  char full[2048];
  mp_shape_binding sb[PL_MAX_MODELS * 4];
  mp_dim_binding db[PL_MAX_MODELS * 4];
  size_t n_sb, n_db;
  char where[64];
  snprintf(where, sizeof where, "models[%zu]", i);
  mp_status st = json_keys(c->file, entry, where, pl_model_keys, c->err);
  if (st == MP_OK) {
    st =
        json_string(c->file, entry, where, "name", true, &c->m[i].name, c->err);
  }
  if (st == MP_OK) {
    st = json_string(c->file, entry, where, "path", true, &path, c->err);
  }
  if (st != MP_OK) return st;
  if (strchr(c->m[i].name, '/') || !c->m[i].name[0]) {
    return pl_bad(c, "%s.name '%s': a model name is non-empty, without '/'",
                  where, c->m[i].name);
  }
  for (size_t j = 0; j < i; j++) {
    if (strcmp(c->m[j].name, c->m[i].name) == 0) {
      return pl_bad(c, "%s: model name '%s' is used twice", where,
                    c->m[i].name);
    }
  }
  snprintf(full, sizeof full, "%s%s", path[0] == '/' ? "" : dir, path);
  c->n = i + 1;
  st = pl_shapes(c, i, entry, sb, &n_sb, db, &n_db);
  if (st == MP_OK) st = pl_connected_shapes(c, i, sb, &n_sb);
  if (st != MP_OK) return st;
  mp_load_opts o = {.dims = db,
                    .n_dims = n_db,
                    .shapes = sb,
                    .n_shapes = n_sb,
                    .member = true};
  st = mp_model_load(full, &o, c->a, &c->m[i].model, c->err);
  if (st != MP_OK) {
    mp_error_prefix(c->err, "%s: model '%s'", c->file, c->m[i].name);
    return st;
  }
  mp_model_format f = mp_model_format_of(c->m[i].model);
  if (f != MP_FORMAT_GRAPH && f != MP_FORMAT_ONNX) {
    return pl_bad(c, "model '%s' is a %s; members must be graph JSON or ONNX",
                  c->m[i].name, mp_model_format_name(f));
  }
  return MP_OK;
}

/* true when tensor name of member i is connected to a later model. */
static bool pl_is_source(const pl_ctx *c, size_t i, const char *name) {
  for (const cJSON *e = c->connect ? c->connect->child : NULL; e; e = e->next) {
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(e, "from");
    size_t mi;
    const char *t;
    if (cJSON_IsString(from) && pl_split(c, from->valuestring, c->n, &mi, &t) &&
        mi == i && strcmp(t, name) == 0) {
      return true;
    }
  }
  return false;
}

static mp_status pl_merge_tensor(pl_ctx *c, size_t i, size_t k) {
  const mp_graph *g = mp_model_graph(c->m[i].model);
  const mp_tensor *t = mp_graph_tensor(g, k);
  const cJSON *from =
      t->kind == MP_TENSOR_INPUT ? pl_feed(c, i, t->name) : NULL;
  if (from) {
    size_t fi = 0;
    const char *fn = "";
    int32_t ft;
    (void)pl_split(c, from->valuestring, i, &fi, &fn);
    (void)mp_graph_find_tensor(mp_model_graph(c->m[fi].model), fn, &ft);
    const mp_tensor *src =
        mp_graph_tensor(mp_model_graph(c->m[fi].model), (size_t)ft);
    if (src->dtype != t->dtype || src->bytes != t->bytes) {
      return pl_bad(c,
                    "connect: '%s' and its input '%s' differ in dtype or "
                    "size",
                    from->valuestring, t->name);
    }
    c->m[i].map[k] = c->m[fi].map[ft];
    return MP_OK;
  }
  char name[1024];
  snprintf(name, sizeof name, "%s/%s", c->m[i].name, t->name);
  mp_tensor_desc d = {.name = name,
                      .dtype = t->dtype,
                      .kind = t->kind,
                      .rank = t->rank,
                      .layout = t->layout};
  if (d.kind == MP_TENSOR_OUTPUT) d.kind = MP_TENSOR_ACTIVATION;
  for (uint32_t j = 0; j < t->rank; j++) {
    d.shape[j] = (mp_dim){mp_graph_dim_of(g, &t->shape[j]), MP_NO_SYM};
  }
  mp_status st = mp_graph_add_tensor(c->g, &d, &c->m[i].map[k], c->err);
  if (st == MP_OK && t->kind == MP_TENSOR_OUTPUT &&
      !pl_is_source(c, i, t->name)) {
    st = mp_graph_mark_output(c->g, c->m[i].map[k], c->err);
  }
  return st;
}

static mp_status pl_merge_op(pl_ctx *c, size_t i, size_t o) {
  const mp_op *op = mp_graph_op(mp_model_graph(c->m[i].model), o);
  char name[1024];
  uint32_t n = op->n_inputs + op->n_outputs;
  int32_t *ids = mp_calloc(c->a, n + 1, sizeof *ids);
  if (!ids)
    return mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->file);
  for (uint32_t k = 0; k < op->n_inputs; k++) {
    ids[k] = op->inputs[k] < 0 ? -1 : c->m[i].map[op->inputs[k]];
  }
  for (uint32_t k = 0; k < op->n_outputs; k++) {
    ids[op->n_inputs + k] = c->m[i].map[op->outputs[k]];
  }
  snprintf(name, sizeof name, "%s/%s", c->m[i].name, op->name);
  mp_op_desc d = {name,        op->type, op->n_inputs,       op->n_outputs,
                  op->n_attrs, ids,      ids + op->n_inputs, op->attrs};
  mp_status st = mp_graph_add_op(c->g, &d, NULL, c->err);
  mp_free(c->a, ids);
  return st;
}

static mp_status pl_merge(pl_ctx *c, const char *name) {
  mp_status st = mp_graph_create(c->a, c->file, name, &c->g, c->err);
  for (size_t i = 0; st == MP_OK && i < c->n; i++) {
    const mp_graph *g = mp_model_graph(c->m[i].model);
    c->m[i].map =
        mp_calloc(c->a, mp_graph_tensor_count(g) + 1, sizeof *c->m[i].map);
    if (!c->m[i].map) {
      st = mp_error_set(c->err, MP_ERR_NOMEM, "%s: out of memory", c->file);
    }
    for (size_t k = 0; st == MP_OK && k < mp_graph_tensor_count(g); k++) {
      st = pl_merge_tensor(c, i, k);
    }
    /* In the member's planned order, so the phases run one after another. */
    for (size_t s = 0; st == MP_OK && s < mp_model_steps(c->m[i].model); s++) {
      st = pl_merge_op(c, i, mp_model_step_op_index(c->m[i].model, s));
    }
  }
  if (st == MP_OK) st = mp_graph_link(c->g, c->err);
  return st;
}

mp_status mp_import_pipeline(const char *file, const cJSON *root,
                             const mp_alloc *a, mp_graph **out, mp_error *err) {
  pl_ctx c = {.file = file, .a = a, .err = err};
  const char *name = NULL;
  const cJSON *models = NULL;
  char dir[1024] = "";
  const char *slash = strrchr(file, '/');
  if (slash) snprintf(dir, sizeof dir, "%.*s/", (int)(slash - file), file);
  mp_status st = json_format(file, root, "pipeline/1", err);
  if (st == MP_OK) st = json_keys(file, root, "", pl_root_keys, err);
  if (st == MP_OK) st = json_string(file, root, "", "name", false, &name, err);
  if (st == MP_OK)
    st = json_array(file, root, "", "models", true, &models, err);
  if (st == MP_OK) {
    st = json_array(file, root, "", "connect", false, &c.connect, err);
  }
  int n = models ? cJSON_GetArraySize(models) : 0;
  if (st == MP_OK && (n < 1 || n > PL_MAX_MODELS)) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: models: expected 1 to %d models", file,
                      PL_MAX_MODELS);
  }
  size_t i = 0;
  for (const cJSON *e = models ? models->child : NULL; st == MP_OK && e;
       e = e->next, i++) {
    st = pl_load_member(&c, i, e, dir);
  }
  if (st == MP_OK) st = pl_merge(&c, name ? name : "pipeline");
  for (size_t k = 0; k < PL_MAX_MODELS; k++) {
    mp_free(a, c.m[k].map);
    mp_model_destroy(c.m[k].model);
  }
  if (st != MP_OK) {
    mp_graph_destroy(c.g);
    return st;
  }
  *out = c.g;
  return MP_OK;
}
