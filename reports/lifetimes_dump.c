/*
 * lifetimes_dump.c -- the lifetime dump of seed 001 section 2, as YAML and
 * as JSON: for every buffer, the op that creates it, the op that reads it
 * last and its size, plus its steps, padded size, offset and class, so
 * that "which tensors are alive together" can be answered with grep, yq
 * or jq without mplan.
 *
 * Invariants:
 *   1. One entry per buffer, in buffer order (graph tensor order), keyed by
 *      the buffer's (unique) name; YAML and JSON hold the same values.
 *   2. Unknown ops (weights, inputs, problem files) are null, never "".
 *   3. YAML scalars are plain only when they cannot be read as anything
 *      but the string (no YAML 1.1 booleans or nulls, no leading digit or
 *      indicator); everything else is double-quoted with escapes, so any
 *      name survives a YAML parser (tested with PyYAML).
 *   4. The JSON is built as a cJSON tree, never printed by hand.
 */
#include <cJSON.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "mplan/report.h"
#include "report_util.h"

/* ---- YAML ---------------------------------------------------------------- */

static bool ld_plain(const char *s) {
  static const char *const reserved[] = {"true", "false", "yes", "no", "on",
                                         "off",  "null",  "y",   "n",  "~"};
  if (!*s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++) {
    if (strcasecmp(s, reserved[i]) == 0) return false;
  }
  for (const char *p = s; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    if (!isalnum(ch) && ch != '_' && ch != '.' && ch != '-' && ch != '/') {
      return false;
    }
  }
  return true;
}

static void ld_yaml_str(mp_buf *out, const char *s) {
  if (!s) {
    mp_buf_puts(out, "null");
    return;
  }
  if (ld_plain(s)) {
    mp_buf_puts(out, s);
    return;
  }
  mp_buf_puts(out, "\"");
  for (const char *p = s; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    if (ch == '"' || ch == '\\') {
      mp_buf_printf(out, "\\%c", ch);
    } else if (ch < 0x20 || ch == 0x7f) {
      mp_buf_printf(out, "\\x%02x", ch);
    } else {
      mp_buf_append(out, p, 1);
    }
  }
  mp_buf_puts(out, "\"");
}

static void ld_yaml_key(mp_buf *out, const char *indent, const char *key,
                        const char *value) {
  mp_buf_printf(out, "%s%s: ", indent, key);
  ld_yaml_str(out, value);
  mp_buf_puts(out, "\n");
}

mp_status mp_report_lifetimes_yaml(const mp_model *m, const mp_plan *plan,
                                   mp_buf *out, mp_error *err) {
  const mp_problem *p = mp_plan_problem(plan);
  const mp_placement *pl = mp_plan_placements(plan);
  mp_buf_puts(out, "# mplan lifetime dump (seed 001 section 2): model ");
  ld_yaml_str(out, mp_model_name(m));
  mp_buf_puts(out, " from ");
  ld_yaml_str(out, mp_model_path(m));
  mp_buf_printf(out,
                "\n# first_use/last_use are inclusive %ss; offset is the "
                "byte offset in the arena.\ntensor_lifetime:\n",
                report_time_word(m));
  for (size_t i = 0; i < mp_problem_count(p); i++) {
    const mp_buffer *b = mp_problem_buffer(p, i);
    mp_buf_puts(out, "  ");
    ld_yaml_str(out, b->name);
    mp_buf_puts(out, ":\n");
    ld_yaml_key(out, "    ", "birth_op", mp_model_producer(m, i));
    ld_yaml_key(out, "    ", "last_use_op", mp_model_last_consumer(m, i));
    mp_buf_printf(out, "    size_bytes: %zu\n", b->size);
    mp_buf_printf(out, "    padded_bytes: %zu\n", b->padded);
    mp_buf_printf(out, "    first_use: %" PRId64 "\n", b->first);
    mp_buf_printf(out, "    last_use: %" PRId64 "\n", b->last);
    mp_buf_printf(out, "    offset: %zu\n", pl[i].offset);
    mp_buf_printf(out, "    class: %s\n", mp_class_name(b->cls));
    mp_buf_printf(out, "    kind: %s\n", report_kind(m, i));
  }
  return mp_buf_status(out, "lifetime dump", err);
}

/* ---- JSON ---------------------------------------------------------------- */

static bool ld_num(cJSON *o, const char *key, double v) {
  return cJSON_AddNumberToObject(o, key, v) != NULL;
}

static bool ld_str(cJSON *o, const char *key, const char *v) {
  return v ? cJSON_AddStringToObject(o, key, v) != NULL
           : cJSON_AddNullToObject(o, key) != NULL;
}

static bool ld_entry(const mp_model *m, const mp_plan *plan, cJSON *all,
                     size_t i) {
  const mp_buffer *b = mp_problem_buffer(mp_plan_problem(plan), i);
  cJSON *e = cJSON_AddObjectToObject(all, b->name);
  return e && ld_str(e, "birth_op", mp_model_producer(m, i)) &&
         ld_str(e, "last_use_op", mp_model_last_consumer(m, i)) &&
         ld_num(e, "size_bytes", (double)b->size) &&
         ld_num(e, "padded_bytes", (double)b->padded) &&
         ld_num(e, "first_use", (double)b->first) &&
         ld_num(e, "last_use", (double)b->last) &&
         ld_num(e, "offset", (double)mp_plan_placements(plan)[i].offset) &&
         ld_str(e, "class", mp_class_name(b->cls)) &&
         ld_str(e, "kind", report_kind(m, i));
}

mp_status mp_report_lifetimes_json(const mp_model *m, const mp_plan *plan,
                                   mp_buf *out, mp_error *err) {
  const mp_problem *p = mp_plan_problem(plan);
  cJSON *root = cJSON_CreateObject();
  cJSON *model = root ? cJSON_AddObjectToObject(root, "model") : NULL;
  bool ok =
      root && ld_str(root, "mplan", "lifetime-dump/1") && model &&
      ld_str(model, "path", mp_model_path(m)) &&
      ld_str(model, "name", mp_model_name(m)) &&
      ld_str(model, "format", mp_model_format_name(mp_model_format_of(m))) &&
      ld_str(root, "time_unit", report_time_word(m));
  cJSON *all = ok ? cJSON_AddObjectToObject(root, "tensor_lifetime") : NULL;
  ok = ok && all;
  for (size_t i = 0; ok && i < mp_problem_count(p); i++) {
    ok = ld_entry(m, plan, all, i);
  }
  char *text = ok ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  if (!text) {
    return mp_error_set(err, MP_ERR_NOMEM, "%s: lifetime dump: out of memory",
                        mp_model_path(m));
  }
  mp_buf_puts(out, text);
  mp_buf_puts(out, "\n");
  cJSON_free(text);
  return mp_buf_status(out, "lifetime dump", err);
}
