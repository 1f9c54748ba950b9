/*
 * import_backend.c -- reader of backend descriptions {"mplan": "backend/1"}.
 *
 * Invariants:
 *   1. Every alignment is a power of two >= 1.
 *   2. Every field is honoured or refused: a plan that silently disregards
 *      a hardware constraint would be wrong, not merely worse.
 *   3. Presets are the repository's backends/NAME.json, embedded at build
 *      time, read by the same parser as any file.
 */
#include <stdio.h>
#include <string.h>

#include "backend_presets.h"
#include "json_util.h"
#include "mplan/backend.h"
#include "mplan/file.h"
#include "mplan/units.h"

void mp_backend_default(mp_backend *b) {
  memset(b, 0, sizeof *b);
  snprintf(b->name, sizeof b->name, "default");
  b->alignment = 16;
}

size_t mp_backend_align(const mp_backend *b, mp_tensor_kind k) {
  size_t a = (unsigned)k < MP_TENSOR_KIND_COUNT ? b->kind_alignment[k] : 0;
  return a ? a : b->alignment;
}

static const char *const be_keys[] = {
    "mplan", "name",    "description", "alignment", "class_alignment",
    "vlen",  "regions", "banks",       NULL};

static mp_status be_align(const char *file, const char *where, int64_t v,
                          size_t *out, mp_error *err) {
  if (v <= 0 || !mp_is_pow2((size_t)v) || v > (1 << 30)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %s: %lld is not a power of two between 1 and "
                        "2^30",
                        file, where, (long long)v);
  }
  *out = (size_t)v;
  return MP_OK;
}

static mp_status be_classes(const char *file, const cJSON *root, mp_backend *b,
                            mp_error *err) {
  const cJSON *ca = NULL;
  mp_status st =
      json_object(file, root, "", "class_alignment", false, &ca, err);
  for (const cJSON *it = ca ? ca->child : NULL; st == MP_OK && it;
       it = it->next) {
    mp_tensor_kind k;
    int64_t v;
    char where[96];
    snprintf(where, sizeof where, "class_alignment.%.48s", it->string);
    if (!mp_tensor_kind_parse(it->string, &k)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: %s: unknown class (known: input weight "
                          "activation output retained)",
                          file, where);
    }
    if (!json_exact_int(it, &v)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: %s: expected an integer",
                          file, where);
    }
    st = be_align(file, where, v, &b->kind_alignment[k], err);
  }
  return st;
}

/* A capacity: an integer or a size string ("512KiB"). */
static mp_status be_size(const char *file, const char *where, const cJSON *v,
                         size_t *out, mp_error *err) {
  int64_t n;
  if (json_exact_int(v, &n)) {
    if (n <= 0) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: %s: capacity %lld must be >= 1", file, where,
                          (long long)n);
    }
    *out = (size_t)n;
    return MP_OK;
  }
  if (cJSON_IsString(v)) {
    mp_status st = mp_parse_size(v->valuestring, out, err);
    if (st == MP_OK && *out == 0) {
      st = mp_error_set(err, MP_ERR_BAD_INPUT, "capacity 0");
    }
    if (st != MP_OK) mp_error_prefix(err, "%s: %s", file, where);
    return st;
  }
  return mp_error_set(err, MP_ERR_BAD_INPUT,
                      "%s: %s: expected a byte count (4096 or \"512KiB\")",
                      file, where);
}

/* Region classes use the tensor kinds' words: weights and inputs are the
 * resident class, outputs are activations. */
static bool be_class_bit(const char *word, unsigned *bits) {
  static const struct {
    const char *word;
    mp_class cls;
  } map[] = {
      {"activation", MP_CLASS_ACTIVATION}, {"output", MP_CLASS_ACTIVATION},
      {"weight", MP_CLASS_RESIDENT},       {"input", MP_CLASS_RESIDENT},
      {"resident", MP_CLASS_RESIDENT},     {"retained", MP_CLASS_RETAINED}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
    if (strcmp(word, map[i].word) == 0) {
      *bits |= 1u << map[i].cls;
      return true;
    }
  }
  return false;
}

static const char *const be_region_keys[] = {"name", "capacity", "classes",
                                             "description", NULL};

static mp_status be_region(const char *file, const cJSON *r, size_t k,
                           mp_backend_region *out, mp_error *err) {
  char where[64];
  const char *name = NULL;
  const cJSON *cap = NULL, *classes = NULL;
  snprintf(where, sizeof where, "regions[%zu]", k);
  if (!cJSON_IsObject(r)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: %s: expected an object",
                        file, where);
  }
  mp_status st = json_keys(file, r, where, be_region_keys, err);
  if (st == MP_OK) st = json_string(file, r, where, "name", true, &name, err);
  if (st == MP_OK)
    st = json_array(file, r, where, "classes", false, &classes, err);
  if (st != MP_OK) return st;
  if (!*name || strlen(name) >= sizeof out->name) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %s.name: must have 1 to %zu characters", file,
                        where, sizeof out->name - 1);
  }
  snprintf(out->name, sizeof out->name, "%s", name);
  snprintf(where, sizeof where, "regions[%zu] ('%.24s')", k, name);
  cap = cJSON_GetObjectItemCaseSensitive(r, "capacity");
  out->capacity = 0;
  if (cap && !cJSON_IsNull(cap)) {
    char w[96];
    snprintf(w, sizeof w, "%s.capacity", where);
    st = be_size(file, w, cap, &out->capacity, err);
    if (st != MP_OK) return st;
  }
  out->classes = classes ? 0 : MP_REGION_ALL_CLASSES;
  size_t i = 0;
  for (const cJSON *c = classes ? classes->child : NULL; c; c = c->next, i++) {
    if (!cJSON_IsString(c) || !be_class_bit(c->valuestring, &out->classes)) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: %s.classes[%zu]: expected one of weight, input, "
                          "activation, output, retained",
                          file, where, i);
    }
  }
  if (!out->classes) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: %s.classes: the list is empty", file, where);
  }
  return MP_OK;
}

static mp_status be_regions(const char *file, const cJSON *root, mp_backend *b,
                            mp_error *err) {
  const cJSON *regions = NULL;
  mp_status st = json_array(file, root, "", "regions", false, &regions, err);
  if (st != MP_OK || !regions) return st;
  size_t k = 0;
  for (const cJSON *r = regions->child; r; r = r->next, k++) {
    if (k == MP_BACKEND_MAX_REGIONS) {
      return mp_error_set(err, MP_ERR_BAD_INPUT,
                          "%s: regions: more than %d regions", file,
                          MP_BACKEND_MAX_REGIONS);
    }
    st = be_region(file, r, k, &b->regions[k], err);
    if (st != MP_OK) return st;
    for (size_t j = 0; j < k; j++) {
      if (strcmp(b->regions[j].name, b->regions[k].name) == 0) {
        return mp_error_set(err, MP_ERR_BAD_INPUT,
                            "%s: regions[%zu]: region '%s' is declared twice",
                            file, k, b->regions[k].name);
      }
    }
  }
  if (k == 0) {
    return mp_error_set(err, MP_ERR_BAD_INPUT, "%s: regions: the list is empty",
                        file);
  }
  b->n_regions = k;
  return MP_OK;
}

static const char *const be_bank_keys[] = {"count", "width", NULL};

static mp_status be_banks(const char *file, const cJSON *root, mp_backend *b,
                          mp_error *err) {
  const cJSON *banks = NULL;
  int64_t count = 0, width = 0;
  mp_status st = json_object(file, root, "", "banks", false, &banks, err);
  if (st != MP_OK || !banks) return st;
  st = json_keys(file, banks, "banks", be_bank_keys, err);
  if (st == MP_OK)
    st = json_int(file, banks, "banks", "count", true, &count, err);
  if (st == MP_OK)
    st = json_int(file, banks, "banks", "width", true, &width, err);
  if (st != MP_OK) return st;
  if (count < 1 || count > 1024) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: banks.count: %lld is not between 1 and 1024", file,
                        (long long)count);
  }
  if (width < 1 || !mp_is_pow2((size_t)width) || width > (1 << 20)) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: banks.width: %lld is not a power of two up to "
                        "1 MiB",
                        file, (long long)width);
  }
  b->banks = (mp_bank_desc){(uint32_t)count, (size_t)width};
  return MP_OK;
}

static mp_status be_parse(const char *file, const cJSON *root, mp_backend *b,
                          mp_error *err) {
  const char *name = NULL;
  int64_t align = 0, vlen = 0;
  mp_status st = json_format(file, root, "backend/1", err);
  if (st == MP_OK) st = json_keys(file, root, "", be_keys, err);
  if (st == MP_OK) st = json_string(file, root, "", "name", false, &name, err);
  if (st == MP_OK)
    st = json_int(file, root, "", "alignment", true, &align, err);
  if (st == MP_OK) st = json_int(file, root, "", "vlen", false, &vlen, err);
  if (st != MP_OK) return st;
  st = be_align(file, "alignment", align, &b->alignment, err);
  if (st == MP_OK) st = be_classes(file, root, b, err);
  if (st == MP_OK) st = be_regions(file, root, b, err);
  if (st == MP_OK) st = be_banks(file, root, b, err);
  if (st != MP_OK) return st;
  if (vlen < 0 || vlen > 65536 || (vlen && !mp_is_pow2((size_t)vlen))) {
    return mp_error_set(err, MP_ERR_BAD_INPUT,
                        "%s: vlen: %lld is not a power of two up to 65536",
                        file, (long long)vlen);
  }
  b->vlen = (uint32_t)vlen;
  if (name) snprintf(b->name, sizeof b->name, "%s", name);
  return MP_OK;
}

static mp_status be_text(const char *file, const char *text, size_t len,
                         mp_backend *out, mp_error *err) {
  cJSON *root = NULL;
  mp_backend b;
  mp_backend_default(&b);
  snprintf(b.name, sizeof b.name, "%s", file);
  mp_status st = json_parse(file, text, len, &root, err);
  if (st == MP_OK) st = be_parse(file, root, &b, err);
  cJSON_Delete(root);
  if (st == MP_OK) *out = b;
  return st;
}

mp_status mp_backend_load(const char *path, mp_backend *out, mp_error *err) {
  char *text = NULL;
  size_t len;
  mp_status st = mp_file_read(path, NULL, &text, &len, err);
  if (st == MP_OK) st = be_text(path, text, len, out, err);
  mp_free(NULL, text);
  return st;
}

/* ---- presets: backends/NAME.json, embedded at build time --------------------
 */

typedef struct be_preset {
  const char *name;
  const char *text;
  const size_t *len;
} be_preset;

static const be_preset be_presets[] = {
    {"cpu", mp_preset_cpu, &mp_preset_cpu_len},
    {"gpu", mp_preset_gpu, &mp_preset_gpu_len},
    {"npu", mp_preset_npu, &mp_preset_npu_len},
    {"rv64-vlen128", mp_preset_rv64_vlen128, &mp_preset_rv64_vlen128_len},
    {"rv64-vlen256", mp_preset_rv64_vlen256, &mp_preset_rv64_vlen256_len},
    {"rv64-vlen512", mp_preset_rv64_vlen512, &mp_preset_rv64_vlen512_len},
};

#define BE_N_PRESETS (sizeof be_presets / sizeof *be_presets)

const char *mp_backend_preset_name(size_t i) {
  return i < BE_N_PRESETS ? be_presets[i].name : NULL;
}

mp_status mp_backend_preset(const char *name, mp_backend *out, mp_error *err) {
  for (size_t i = 0; i < BE_N_PRESETS; i++) {
    if (strcmp(name, be_presets[i].name) != 0) continue;
    char file[96];
    snprintf(file, sizeof file, "backends/%s.json", name);
    return be_text(file, be_presets[i].text, *be_presets[i].len, out, err);
  }
  return mp_error_set(err, MP_ERR_BAD_INPUT,
                      "--backend %s: no such file and no such preset "
                      "(presets: cpu, gpu, npu, rv64-vlen128, rv64-vlen256, "
                      "rv64-vlen512)",
                      name);
}

mp_status mp_backend_resolve(const char *spec, mp_backend *out, mp_error *err) {
  FILE *f = fopen(spec, "rb");
  if (f) {
    fclose(f);
    return mp_backend_load(spec, out, err);
  }
  if (strchr(spec, '/') || strstr(spec, ".json")) {
    return mp_backend_load(spec, out, err); /* names the file it can't open */
  }
  return mp_backend_preset(spec, out, err);
}

size_t mp_backend_regions(const mp_backend *b, mp_region_desc *regions) {
  for (size_t r = 0; r < b->n_regions; r++) {
    regions[r] = (mp_region_desc){b->regions[r].name, b->regions[r].capacity,
                                  b->regions[r].classes};
  }
  return b->n_regions;
}
