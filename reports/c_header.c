/*
 * c_header.c -- the plan as a C11 header an embedded runtime includes:
 * the arena's and every region's size and alignment as macros, each
 * tensor's offset, bytes and region as macros, and static inline
 * accessors to tables of every tensor (name, kind, dtype, region,
 * offset, bytes, buffer, its buffer's steps and its own, why it is in
 * its buffer, shape), of the regions, and of the steps (op, type, the
 * table indices of its inputs and outputs, and its attributes): enough
 * for a runtime with kernels of its own to run the plan.
 *
 * Invariants:
 *   1. Every identifier starts with the caller's prefix (macros upper
 *      case, types and functions lower case); global macros never start
 *      with PREFIX_T_ or PREFIX_R_, which only tensor and region macros
 *      do, so no tensor or region name can produce a global's name.
 *   2. A tensor's or region's identifier is its name upper-cased, every
 *      run of other characters than letters and digits one '_' (leading
 *      and trailing ones dropped; "X" when nothing is left); a name that
 *      maps onto one taken earlier (in tensor order), or whose macros
 *      (the identifier with _OFFSET, _BYTES, _REGION; a region's with
 *      _BYTES, _ALIGN, _CAPACITY) would meet one defined earlier, gets
 *      "_2", "_3", ... until all are free. The string table keeps the
 *      exact name.
 *   3. Strings are C string literals with every byte outside printable
 *      ASCII, '"', '\\' and '?' (trigraphs) escaped in octal or with a
 *      backslash; comments hold only printable ASCII without '*', '?' or
 *      '\\' (a name cannot close a comment or splice a line).
 *   4. A tensor's offset is its buffer's placement plus its offset inside
 *      the buffer (mp_model_tensor_offset); its steps are its buffer's
 *      (the hull over the tensors the buffer holds). Two tensors whose
 *      bytes and steps overlap in one region share a buffer: the header
 *      alone re-proves the plan (tests/cli/c_header_check.c).
 *   5. The tables are static objects inside static inline functions, so a
 *      translation unit that includes the header and uses none of them
 *      compiles without an unused-variable warning, and two headers of
 *      different prefixes can be included together.
 *   6. Numbers are exact: sizes use UINT64_C (they are below 2^48),
 *      integers INT64_C, doubles 17 significant digits (a zero keeps
 *      its sign; NaN and infinities come from <math.h>, included only
 *      when an attribute holds one).
 *   7. A step's attributes are its op's after the passes, in the op's
 *      order, with their kinds; lists point into one array per kind.
 *      A tensor's shape is its resolved dims; its own steps
 *      (live_first, live_last) lie inside its buffer's.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mplan/report.h"
#include "mplan/strmap.h"
#include "mplan/units.h"
#include "report_util.h"

typedef struct ch_ctx {
  const mp_model *m;
  const mp_plan *plan;
  const mp_problem *p;
  const mp_graph *g;
  mp_buf *out;
  char up[128], low[128]; /* the prefix */
  mp_strmap *ids;         /* identifiers taken (tensors and regions) */
  const mp_alloc *alloc;  /* the output's */
  size_t *align;          /* per region: its buffers' largest alignment */
  mp_strmap *bases;       /* "T_X" -> index into next[] */
  unsigned *next;         /* per base: the suffix to try first */
  size_t n_next, cap_next;
  mp_strpool *pool;
  const unsigned char *const *data; /* per graph tensor, or NULL */
} ch_ctx;

/* One entry of the tensor table. */
typedef struct ch_entry {
  const char *name;
  size_t buffer;
  uint64_t offset, bytes;
  const char *kind, *dtype;
  const char *id;                /* identifier (pool) */
  int64_t tensor;                /* graph tensor index, or -1 */
  int64_t live_first, live_last; /* the tensor's own steps */
  const char *rule;              /* why it is in its buffer */
  uint32_t rank;
  const mp_dim *shape;
  const unsigned char *data; /* its initial bytes, or NULL */
} ch_entry;

/* The identifier part of name (invariant 2, before uniqueness). */
static void ch_ident(const char *name, char *buf, size_t cap) {
  size_t n = 0;
  bool gap = false;
  for (const unsigned char *s = (const unsigned char *)name; *s && n + 2 < cap;
       s++) {
    if (isalnum(*s) && *s < 0x80) {
      if (gap && n) buf[n++] = '_';
      buf[n++] = (char)toupper(*s);
      gap = false;
    } else {
      gap = true;
    }
  }
  if (!n) buf[n++] = 'X';
  buf[n] = '\0';
}

/* The suffixes of the macros of a tensor ('T') or a region ('R'). */
static const char *const ch_suffix[2][4] = {
    {"", "_OFFSET", "_BYTES", "_REGION"},
    {"", "_BYTES", "_ALIGN", "_CAPACITY"}};

/* A unique identifier for name in kind's space ('T' or 'R'), pooled: the
 * first of ID, ID_2, ... whose macros (ID and ID with each suffix) are
 * all free, so that tensor 'x' and tensor 'x_offset' cannot both define
 * T_X_OFFSET (invariant 2). */
static const char *ch_unique(ch_ctx *c, char kind, const char *name,
                             mp_status *st, mp_error *err) {
  char base[160], id[200], full[240];
  const char *const *suf = ch_suffix[kind == 'R'];
  base[0] = kind;
  base[1] = '_';
  ch_ident(name, base + 2, sizeof base - 2);
  /* names meeting on one base resume where the last one stopped, so n
   * such names cost O(n), not O(n^2) */
  int64_t slot = -1;
  mp_error e;
  if (!mp_strmap_get(c->bases, base, &slot)) {
    const char *kb = mp_strpool_cstr(c->pool, base);
    if (!kb ||
        mp_grow(c->alloc, (void **)&c->next, &c->cap_next, c->n_next + 1,
                sizeof *c->next, "C header", &e) != MP_OK ||
        mp_strmap_put(c->bases, kb, (int64_t)c->n_next, NULL, &e) != MP_OK) {
      *st = mp_error_set(err, MP_ERR_NOMEM, "%s: C header: out of memory",
                         mp_model_path(c->m));
      return NULL;
    }
    slot = (int64_t)c->n_next;
    c->next[c->n_next++] = 1;
  }
  for (unsigned k = c->next[slot];; k++) {
    if (k == 1) {
      snprintf(id, sizeof id, "%s", base);
    } else {
      snprintf(id, sizeof id, "%s_%u", base, k);
    }
    bool unused = true;
    for (size_t s = 0; unused && s < 4; s++) {
      snprintf(full, sizeof full, "%s%s", id, suf[s]);
      unused = !mp_strmap_get(c->ids, full, NULL);
    }
    if (unused) {
      c->next[slot] = k + 1;
      break;
    }
  }
  const char *kept = NULL;
  for (size_t s = 0; s < 4; s++) {
    snprintf(full, sizeof full, "%s%s", id, suf[s]);
    const char *f = mp_strpool_cstr(c->pool, full);
    if (!f || mp_strmap_put(c->ids, f, 0, NULL, &e) != MP_OK) {
      *st = mp_error_set(err, MP_ERR_NOMEM, "%s: C header: out of memory",
                         mp_model_path(c->m));
      return NULL;
    }
    if (s == 0) kept = f;
  }
  return kept;
}

/* A C string literal (invariant 3). */
static void ch_str(mp_buf *out, const char *s) {
  mp_buf_puts(out, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\' || *p == '?') {
      mp_buf_printf(out, "\\%c", *p);
    } else if (*p < 0x20 || *p >= 0x7f) {
      mp_buf_printf(out, "\\%03o", *p);
    } else {
      mp_buf_append(out, (const char *)p, 1);
    }
  }
  mp_buf_puts(out, "\"");
}

/* Text for a comment (invariant 3). */
static void ch_comment(mp_buf *out, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    bool ok = *p >= 0x20 && *p < 0x7f && *p != '*' && *p != '?' && *p != '\\';
    mp_buf_append(out, ok ? (const char *)p : "_", 1);
  }
}

/* The prefix, upper and lower case, from a C identifier or anything. */
static void ch_prefix(ch_ctx *c, const char *prefix) {
  /* a leading digit gets a 'P' before it */
  c->up[0] = 'P';
  ch_ident(prefix && *prefix ? prefix : "plan", c->up + 1, sizeof c->up - 1);
  if (!isdigit((unsigned char)c->up[1])) {
    memmove(c->up, c->up + 1, strlen(c->up + 1) + 1);
  }
  for (size_t i = 0; i < sizeof c->low; i++) {
    c->low[i] = (char)tolower((unsigned char)c->up[i]);
    if (!c->up[i]) break;
  }
}

static void ch_define(ch_ctx *c, const char *name, uint64_t v,
                      const char *comment) {
  mp_buf_printf(c->out, "#define %s_%s UINT64_C(%" PRIu64 ")", c->up, name, v);
  if (comment) mp_buf_printf(c->out, " /* %s */", comment);
  mp_buf_puts(c->out, "\n");
}

static bool ch_needs_math(const ch_ctx *c);

static void ch_head(ch_ctx *c) {
  const mp_plan_summary *s = mp_plan_summary_of(c->plan);
  mp_buf *o = c->out;
  char h[4][MP_FMT_MAX];
  mp_buf_puts(o, "/*\n * The memory plan of '");
  ch_comment(o, mp_model_name(c->m));
  mp_buf_puts(o, "' (");
  ch_comment(o, mp_model_path(c->m));
  mp_buf_printf(o,
                ", %s),\n * written by mplan " MP_VERSION
                "; regenerate it rather than edit it.\n *\n",
                mp_model_format_name(mp_model_format_of(c->m)));
  mp_buf_printf(o, " * order %s, strategy %s, backend '",
                mp_model_order_name(c->m), s->strategy);
  ch_comment(o, mp_model_backend_name(c->m));
  mp_buf_printf(o,
                "'\n * arena %s = resident %s\n *   + activations %s; "
                "activation lower bound %s\n",
                mp_fmt_bytes(h[0], s->arena_bytes),
                mp_fmt_bytes(h[1], s->resident_bytes),
                mp_fmt_bytes(h[2], s->activation_peak_bytes),
                mp_fmt_bytes(h[3], s->lower_bound_bytes));
  mp_buf_printf(
      o,
      " *\n"
      " * Offsets are bytes from the start of the tensor's region, whose\n"
      " * base must be aligned to its %s_R_<REGION>_ALIGN. A tensor's\n"
      " * bytes are [offset, offset + bytes); its steps (which index\n"
      " * %s_steps()) are its buffer's, whose tensors (views, in-place\n"
      " * results, Concat slices) share bytes by design; live_first and\n"
      " * live_last are its own. No two tensors of different buffers share\n"
      " * a byte at a common step.\n"
      " */\n",
      c->up, c->low);
  mp_buf_printf(o, "#ifndef MPLAN_%s_H\n#define MPLAN_%s_H\n\n", c->up, c->up);
  mp_buf_puts(o, ch_needs_math(c) ? "#include <math.h>\n#include <stdint.h>\n\n"
                                  : "#include <stdint.h>\n\n");
  ch_define(c, "ARENA_BYTES", s->arena_bytes, "every region's bytes");
  ch_define(c, "RESIDENT_BYTES", s->resident_bytes,
            "weights, inputs, retained");
  ch_define(c, "ACTIVATION_BYTES", s->activation_peak_bytes, NULL);
  ch_define(c, "LOWER_BOUND_BYTES", s->lower_bound_bytes,
            "the most activation bytes live at one step");
  mp_buf_printf(o, "#define %s_REGION_COUNT %zuu\n", c->up,
                mp_plan_region_count(c->plan));
  mp_buf_printf(o, "#define %s_BUFFER_COUNT %zuu\n", c->up,
                mp_problem_count(c->p));
  mp_buf_printf(o, "#define %s_STEP_COUNT %zuu%s\n", c->up,
                mp_model_steps(c->m),
                mp_model_steps(c->m) ? "" : " /* no op order */");
  const mp_graph *g = mp_model_graph(c->m);
  int64_t opset = g ? mp_graph_opset(g) : 0;
  mp_buf_printf(o, "#define %s_OPSET %" PRId64 "%s\n", c->up, opset,
                opset ? " /* the ONNX opset the ops follow */"
                      : " /* no ONNX opset: the newest rules */");
}

/* Fills c->align (room for every region, all 1): the largest alignment
 * of a buffer in each region, in one pass over the buffers. */
static void ch_region_align(ch_ctx *c) {
  const mp_placement *pl = mp_plan_placements(c->plan);
  for (size_t i = 0; i < mp_problem_count(c->p); i++) {
    const mp_buffer *b = mp_problem_buffer(c->p, i);
    size_t *a = &c->align[pl[i].region];
    if (b->alignment > *a) *a = b->alignment;
  }
}

static mp_status ch_regions(ch_ctx *c, const char **rid, mp_error *err) {
  mp_status st = MP_OK;
  mp_buf_puts(c->out, "\n/* Regions, fastest first. */\n");
  for (size_t r = 0; r < mp_plan_region_count(c->plan) && st == MP_OK; r++) {
    const mp_plan_region *pr = mp_plan_region_at(c->plan, r);
    rid[r] = ch_unique(c, 'R', pr->name, &st, err);
    if (!rid[r]) break;
    char name[240];
    mp_buf_printf(c->out, "#define %s_%s %zuu\n", c->up, rid[r], r);
    snprintf(name, sizeof name, "%s_BYTES", rid[r]);
    ch_define(c, name, pr->used_bytes, NULL);
    snprintf(name, sizeof name, "%s_ALIGN", rid[r]);
    ch_define(c, name, c->align[r], NULL);
    snprintf(name, sizeof name, "%s_CAPACITY", rid[r]);
    ch_define(c, name, pr->capacity, pr->capacity ? NULL : "unbounded");
  }
  return st;
}

/* The table's entries: per buffer, every tensor it holds (graphs), or
 * the buffer itself. */
static size_t ch_entries(ch_ctx *c, ch_entry *e) {
  size_t n = 0;
  const mp_placement *pl = mp_plan_placements(c->plan);
  for (size_t i = 0; i < mp_problem_count(c->p); i++) {
    const mp_buffer *b = mp_problem_buffer(c->p, i);
    const uint32_t *members = NULL;
    size_t k = c->g ? mp_model_buffer_tensors(c->m, i, &members) : 0;
    if (!k) {
      e[n++] = (ch_entry){.name = b->name,
                          .buffer = i,
                          .offset = pl[i].offset,
                          .bytes = b->size,
                          .kind = report_kind(c->m, i),
                          .dtype = "",
                          .tensor = -1,
                          .live_first = b->first,
                          .live_last = b->last,
                          .rule = ""};
      continue;
    }
    for (size_t j = 0; j < k; j++) {
      const mp_tensor *t = mp_graph_tensor(c->g, members[j]);
      ch_entry x = {
          .name = t->name,
          .buffer = i,
          .offset = pl[i].offset + mp_model_tensor_offset(c->m, members[j]),
          .bytes = t->bytes,
          .kind = mp_tensor_kind_name(t->kind),
          .dtype = mp_dtype_name(t->dtype),
          .tensor = members[j],
          .rule = mp_alias_rule_name(mp_model_tensor_rule(c->m, members[j])),
          .rank = t->rank,
          .shape = t->shape,
          .data = c->data ? c->data[members[j]] : NULL};
      mp_model_tensor_steps(c->m, members[j], &x.live_first, &x.live_last);
      e[n++] = x;
    }
  }
  return n;
}

static void ch_tensor_macros(ch_ctx *c, const ch_entry *e, size_t n,
                             const char **rid) {
  const mp_placement *pl = mp_plan_placements(c->plan);
  mp_buf_puts(c->out,
              "\n/* Tensors: index in the table, offset in the region, "
              "bytes, region. */\n");
  for (size_t k = 0; k < n; k++) {
    char name[240];
    mp_buf_printf(c->out, "#define %s_%s %zuu\n", c->up, e[k].id, k);
    snprintf(name, sizeof name, "%s_OFFSET", e[k].id);
    ch_define(c, name, e[k].offset, NULL);
    snprintf(name, sizeof name, "%s_BYTES", e[k].id);
    ch_define(c, name, e[k].bytes, NULL);
    mp_buf_printf(c->out, "#define %s_%s_REGION %s_%s\n", c->up, e[k].id, c->up,
                  rid[pl[e[k].buffer].region]);
  }
}

/* Writes "  static const TYPE NAME[n] = {TEXT};" (one 0 when empty). */
static void ch_array(mp_buf *o, const char *type, const char *name,
                     const mp_buf *text, size_t n) {
  mp_buf_printf(o, "  static const %s %s[%zu] = {", type, name, n ? n : 1);
  if (n) {
    mp_buf_append(o, text->data, text->len);
    mp_buf_puts(o, "\n  ");
  } else {
    mp_buf_puts(o, "0");
  }
  mp_buf_puts(o, "};\n");
}

/* Writes "  static const TYPE NAME[n] = {" and the rows, a row each
 * line (the row `empty` alone when there are none). */
static void ch_rows(mp_buf *o, const char *type, const char *name,
                    const mp_buf *rows, size_t n, const char *empty) {
  mp_buf_printf(o, "  static const %s %s[%zu] = {\n", type, name, n ? n : 1);
  if (n) {
    mp_buf_append(o, rows->data, rows->len);
  } else {
    mp_buf_printf(o, "      %s,\n", empty);
  }
  mp_buf_puts(o, "  };\n");
}

/* Writes "  static const uint8_t w[total] = {...};": the initial bytes
 * of every entry that has them, in table order, 24 to a line. */
static void ch_data(mp_buf *o, const ch_entry *e, size_t n, uint64_t total) {
  mp_buf_printf(o, "  static const uint8_t w[%" PRIu64 "] = {", total);
  /* " 0," .. " 255,": a weight can be hundreds of MB of text */
  char text[256][6];
  uint8_t tlen[256];
  for (int v = 0; v < 256; v++) {
    tlen[v] = (uint8_t)snprintf(text[v], sizeof text[v], " %d,", v);
  }
  char line[24 * 5 + 16];
  for (size_t k = 0; k < n; k++) {
    if (!e[k].data) continue;
    mp_buf_puts(o, "\n      /* ");
    ch_comment(o, e[k].name);
    mp_buf_puts(o, " */");
    for (uint64_t i = 0; i < e[k].bytes;) {
      size_t len = 6;
      memcpy(line, "\n     ", 6);
      for (int j = 0; j < 24 && i < e[k].bytes; j++, i++) {
        memcpy(line + len, text[e[k].data[i]], tlen[e[k].data[i]]);
        len += tlen[e[k].data[i]];
      }
      mp_buf_append(o, line, len);
    }
  }
  mp_buf_puts(o, "\n  };\n");
}

static void ch_tables(ch_ctx *c, const ch_entry *e, size_t n,
                      const char **rid) {
  const mp_placement *pl = mp_plan_placements(c->plan);
  mp_buf *o = c->out;
  mp_buf_printf(
      o,
      "\nstruct %s_region {\n"
      "  const char *name;\n"
      "  uint64_t bytes;    /* the plan's end of its highest buffer */\n"
      "  uint64_t align;    /* its base's alignment */\n"
      "  uint64_t capacity; /* the backend's; 0: unbounded */\n"
      "};\n\n"
      "/* The regions, fastest first. */\n"
      "static inline const struct %s_region *%s_regions(void) {\n"
      "  static const struct %s_region r[%zu] = {\n",
      c->low, c->low, c->low, c->low, mp_plan_region_count(c->plan));
  for (size_t r = 0; r < mp_plan_region_count(c->plan); r++) {
    const mp_plan_region *pr = mp_plan_region_at(c->plan, r);
    mp_buf_puts(o, "      {");
    ch_str(o, pr->name);
    mp_buf_printf(o, ", UINT64_C(%zu), UINT64_C(%zu), UINT64_C(%zu)},\n",
                  pr->used_bytes, c->align[r], pr->capacity);
  }
  mp_buf_puts(o, "  };\n  return r;\n}\n");
  mp_buf_printf(o, "\n#define %s_TENSOR_COUNT %zuu\n\n", c->up, n);
  mp_buf_printf(
      o,
      "struct %s_tensor {\n"
      "  const char *name;  /* as in the model */\n"
      "  const char *kind;  /* a graph's: input, weight, activation,\n"
      "                        output, retained; else the class */\n"
      "  const char *dtype; /* \"\" when the model has no graph */\n"
      "  uint32_t region;   /* %s_R_... */\n"
      "  uint32_t buffer;   /* tensors of one buffer share bytes */\n"
      "  uint64_t offset;   /* bytes from the region's base */\n"
      "  uint64_t bytes;\n"
      "  int64_t first_step, last_step; /* its buffer's, inclusive */\n"
      "  int64_t live_first, live_last; /* its own: the step writing it\n"
      "                                    (0: none) to its last reader's\n"
      "                                    (the last step: an output) */\n"
      "  const char *rule;  /* why it is in its buffer: \"own\", \"view\",\n"
      "                        \"in place (...)\"; \"\" without a graph */\n"
      "  uint32_t rank;     /* dims in shape[] (0: a scalar or no graph) */\n"
      "  const int64_t *shape;\n"
      "  const uint8_t *data; /* its bytes before the first step (weights,\n"
      "                          bound inputs) with --c-header-weights;\n"
      "                          else NULL */\n"
      "};\n\n",
      c->low, c->up);
  /* the dims of every tensor in one array, each shape a pointer into it */
  mp_buf dims, rows;
  mp_buf_init(&dims, o->alloc);
  mp_buf_init(&rows, o->alloc);
  size_t at = 0;
  uint64_t n_data = 0;
  for (size_t k = 0; k < n; k++) {
    const mp_buffer *b = mp_problem_buffer(c->p, e[k].buffer);
    if (e[k].rank) mp_buf_puts(&dims, "\n     ");
    for (uint32_t d = 0; d < e[k].rank; d++) {
      mp_buf_printf(&dims, " INT64_C(%" PRId64 "),", e[k].shape[d].value);
    }
    mp_buf_puts(&rows, "      {");
    ch_str(&rows, e[k].name);
    mp_buf_puts(&rows, ", ");
    ch_str(&rows, e[k].kind);
    mp_buf_puts(&rows, ", ");
    ch_str(&rows, e[k].dtype);
    mp_buf_printf(
        &rows,
        ", %s_%s, %zuu, UINT64_C(%" PRIu64 "), UINT64_C(%" PRIu64
        "),\n       %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", ",
        c->up, rid[pl[e[k].buffer].region], e[k].buffer, e[k].offset,
        e[k].bytes, b->first, b->last, e[k].live_first, e[k].live_last);
    ch_str(&rows, e[k].rule);
    mp_buf_printf(&rows, ", %" PRIu32 "u, d + %zu, ", e[k].rank, at);
    if (e[k].data) {
      mp_buf_printf(&rows, "w + %" PRIu64 "},\n", n_data);
      n_data += e[k].bytes;
    } else {
      mp_buf_puts(&rows, "0},\n");
    }
    at += e[k].rank;
  }
  mp_buf_printf(o,
                "/* Every tensor the plan places, buffer by buffer. */\n"
                "static inline const struct %s_tensor *%s_tensors(void) {\n",
                c->low, c->low);
  char type[160];
  snprintf(type, sizeof type, "struct %s_tensor", c->low);
  ch_array(o, "int64_t", "d", &dims, at);
  if (n_data) ch_data(o, e, n, n_data);
  ch_rows(o, type, "t", &rows, n,
          "{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, d, 0}");
  mp_buf_puts(o, "  return t;\n}\n\n");
  if (dims.failed || rows.failed) o->failed = true;
  mp_buf_free(&dims);
  mp_buf_free(&rows);
}

/* The operands of an op as table indices (PREFIX_NONE: omitted or not
 * placed), appended to out as items of a C list, a space before each but
 * the line's first; returns how many. */
static uint32_t ch_operands(const ch_ctx *c, const uint32_t *tix,
                            const int32_t *ids, uint32_t n, bool *first,
                            mp_buf *out) {
  for (uint32_t i = 0; i < n; i++) {
    const char *sep = *first ? "" : " ";
    *first = false;
    if (ids[i] >= 0 && tix[ids[i]] != UINT32_MAX) {
      mp_buf_printf(out, "%s%" PRIu32 "u,", sep, tix[ids[i]]);
    } else {
      mp_buf_printf(out, "%s%s_NONE,", sep, c->up);
    }
  }
  return n;
}

/* A double as a C constant that reads back exactly (invariant 6):
 * non-finite values through <math.h>, a sign kept on zero. */
static void ch_double(mp_buf *out, double v) {
  if (isnan(v)) {
    mp_buf_puts(out, "(double)NAN");
  } else if (isinf(v)) {
    mp_buf_puts(out, v < 0 ? "-(double)INFINITY" : "(double)INFINITY");
  } else {
    char t[40];
    snprintf(t, sizeof t, "%.17g", v);
    mp_buf_puts(out, t);
    if (!strpbrk(t, ".e")) mp_buf_puts(out, ".0");
  }
}

static void ch_int64(mp_buf *out, int64_t v) {
  if (v == INT64_MIN) {
    mp_buf_puts(out, "(-INT64_C(9223372036854775807) - 1)");
  } else {
    mp_buf_printf(out, "INT64_C(%" PRId64 ")", v);
  }
}

/* Does an attribute of a step hold a value only <math.h> can spell? */
static bool ch_needs_math(const ch_ctx *c) {
  for (size_t k = 0; c->g && k < mp_model_steps(c->m); k++) {
    const mp_op *op = mp_graph_op(c->g, mp_model_step_op_index(c->m, k));
    for (uint32_t a = 0; a < op->n_attrs; a++) {
      const mp_attr *x = &op->attrs[a];
      if (x->kind == MP_ATTR_FLOAT && !isfinite(x->f)) return true;
      for (size_t i = 0; x->kind == MP_ATTR_FLOATS && i < x->n; i++) {
        if (!isfinite(x->floats[i])) return true;
      }
    }
  }
  return false;
}

/* The C tables' text of one step's attributes. */
typedef struct ch_attr_text {
  mp_buf rows, ints, floats;
  size_t n, n_ints, n_floats;
} ch_attr_text;

/* A list's items on a line of their own: the integers iv, or else the
 * doubles fv. */
static void ch_list(mp_buf *out, const int64_t *iv, const double *fv,
                    size_t n) {
  if (n) mp_buf_puts(out, "\n     ");
  for (size_t i = 0; i < n; i++) {
    mp_buf_puts(out, " ");
    if (iv) {
      ch_int64(out, iv[i]);
    } else {
      ch_double(out, fv[i]);
    }
    mp_buf_puts(out, ",");
  }
}

/* Appends op's attributes to the attribute table (invariant 7). */
static void ch_attrs(const ch_ctx *c, const mp_op *op, ch_attr_text *a) {
  static const char *const kinds[] = {"INT", "FLOAT", "STRING", "INTS",
                                      "FLOATS"};
  for (uint32_t k = 0; k < op->n_attrs; k++) {
    const mp_attr *x = &op->attrs[k];
    bool list = x->kind == MP_ATTR_INTS || x->kind == MP_ATTR_FLOATS;
    mp_buf_puts(&a->rows, "      {");
    ch_str(&a->rows, x->name);
    mp_buf_printf(&a->rows, ", %s_ATTR_%s, %zuu, ", c->up, kinds[x->kind],
                  list ? x->n : (size_t)0);
    ch_int64(&a->rows, x->kind == MP_ATTR_INT ? x->i : 0);
    mp_buf_puts(&a->rows, ", ");
    ch_double(&a->rows, x->kind == MP_ATTR_FLOAT ? x->f : 0.0);
    mp_buf_puts(&a->rows, ", ");
    if (x->kind == MP_ATTR_STRING) {
      ch_str(&a->rows, x->s ? x->s : "");
    } else {
      mp_buf_puts(&a->rows, "0");
    }
    mp_buf_printf(&a->rows, ", ai + %zu, af + %zu},\n", a->n_ints, a->n_floats);
    if (x->kind == MP_ATTR_INTS) {
      ch_list(&a->ints, x->ints, NULL, x->n);
      a->n_ints += x->n;
    }
    if (x->kind == MP_ATTR_FLOATS) {
      ch_list(&a->floats, NULL, x->floats, x->n);
      a->n_floats += x->n;
    }
    a->n++;
  }
}

/* The steps: op, type, operands and attributes (graphs; a plan file's
 * steps have none). tix maps a graph tensor to its table index. */
static void ch_steps(ch_ctx *c, const uint32_t *tix) {
  mp_buf *o = c->out;
  size_t steps = mp_model_steps(c->m);
  mp_buf io, rows;
  ch_attr_text at_ = {0};
  mp_buf_init(&io, o->alloc);
  mp_buf_init(&rows, o->alloc);
  mp_buf_init(&at_.rows, o->alloc);
  mp_buf_init(&at_.ints, o->alloc);
  mp_buf_init(&at_.floats, o->alloc);
  /* per op: 1 + the step of the Loop or Scan that repeats it, or 0 */
  size_t nops = c->g ? mp_graph_op_count(c->g) : 0;
  const uint32_t *step_of = mp_model_step_of(c->m);
  uint32_t *loop_of = mp_calloc(o->alloc, nops + 1, sizeof *loop_of);
  mp_error lerr;
  if (!loop_of || (step_of && mp_graph_loop_of(c->g, step_of, o->alloc, loop_of,
                                               &lerr) != MP_OK)) {
    o->failed = true;
  }
  size_t at = 0;
  for (size_t k = 0; k < steps; k++) {
    uint32_t ni = 0, no = 0;
    size_t a0 = at_.n;
    int64_t loop = -1;
    if (c->g) {
      const mp_op *op = mp_graph_op(c->g, mp_model_step_op_index(c->m, k));
      bool first = true;
      if (op->n_inputs + op->n_outputs) mp_buf_puts(&io, "\n      ");
      ni = ch_operands(c, tix, op->inputs, op->n_inputs, &first, &io);
      no = ch_operands(c, tix, op->outputs, op->n_outputs, &first, &io);
      ch_attrs(c, op, &at_);
      uint32_t l = loop_of ? loop_of[mp_model_step_op_index(c->m, k)] : 0;
      loop = (int64_t)l - 1;
    }
    mp_buf_puts(&rows, "      {");
    ch_str(&rows, mp_model_step_op(c->m, k));
    mp_buf_puts(&rows, ", ");
    const char *type = mp_model_step_type(c->m, k);
    ch_str(&rows, type ? type : "");
    mp_buf_printf(&rows,
                  ", %" PRIu32 "u, %" PRIu32
                  "u, io + %zu, io + %zu, %zuu, "
                  "a + %zu, %" PRId64 "},\n",
                  ni, no, at, at + ni, at_.n - a0, a0, loop);
    at += ni + no;
  }
  mp_buf_printf(
      o,
      "\n/* Table index of an omitted operand. */\n"
      "#define %s_NONE UINT32_C(0xffffffff)\n\n"
      "/* Attribute kinds. */\n"
      "#define %s_ATTR_INT 0u\n"
      "#define %s_ATTR_FLOAT 1u\n"
      "#define %s_ATTR_STRING 2u\n"
      "#define %s_ATTR_INTS 3u\n"
      "#define %s_ATTR_FLOATS 4u\n\n"
      "/* An op's attribute as the model gives it, after mplan's passes\n"
      " * (docs/ir-conventions.md: mplan.epilogue, mplan.e<k>.<a>, ...). */\n"
      "struct %s_attr {\n"
      "  const char *name;\n"
      "  uint32_t kind; /* %s_ATTR_... */\n"
      "  uint32_t n;    /* list length: INTS, FLOATS */\n"
      "  int64_t i;     /* INT */\n"
      "  double f;      /* FLOAT */\n"
      "  const char *s; /* STRING */\n"
      "  const int64_t *ints;   /* INTS */\n"
      "  const double *floats;  /* FLOATS */\n"
      "};\n\n"
      "struct %s_step {\n"
      "  const char *op;\n"
      "  const char *type; /* ONNX spelling */\n"
      "  uint32_t n_inputs, n_outputs;\n"
      "  const uint32_t *inputs, *outputs; /* %s_tensors() indices */\n"
      "  uint32_t n_attrs;\n"
      "  const struct %s_attr *attrs;\n"
      "  int64_t loop; /* the step of the innermost Loop or Scan that runs\n"
      "                   it again each iteration (docs/ir-conventions.md);\n"
      "                   -1: it runs once */\n"
      "};\n\n"
      "/* The op each step runs, in the planned order. */\n"
      "static inline const struct %s_step *%s_steps(void) {\n",
      c->up, c->up, c->up, c->up, c->up, c->up, c->low, c->up, c->low, c->low,
      c->low, c->low, c->low);
  char type[160];
  ch_array(o, "int64_t", "ai", &at_.ints, at_.n_ints);
  ch_array(o, "double", "af", &at_.floats, at_.n_floats);
  snprintf(type, sizeof type, "struct %s_attr", c->low);
  ch_rows(o, type, "a", &at_.rows, at_.n, "{0, 0, 0, 0, 0, 0, ai, af}");
  ch_array(o, "uint32_t", "io", &io, at);
  snprintf(type, sizeof type, "struct %s_step", c->low);
  ch_rows(o, type, "s", &rows, steps, "{0, 0, 0, 0, io, io, 0, a, -1}");
  mp_buf_puts(o, "  return s;\n}\n");
  if (io.failed || rows.failed || at_.rows.failed || at_.ints.failed ||
      at_.floats.failed) {
    o->failed = true;
  }
  mp_free(o->alloc, loop_of);
  mp_buf_free(&io);
  mp_buf_free(&rows);
  mp_buf_free(&at_.rows);
  mp_buf_free(&at_.ints);
  mp_buf_free(&at_.floats);
}

mp_status mp_report_c_header(const mp_model *m, const mp_plan *plan,
                             const char *prefix, const mp_c_header_opts *o,
                             mp_buf *out, mp_error *err) {
  ch_ctx c = {.m = m,
              .plan = plan,
              .p = mp_plan_problem(plan),
              .g = mp_model_graph(m),
              .out = out,
              .data = o ? o->data : NULL};
  ch_prefix(&c, prefix);
  size_t nb = mp_problem_count(c.p), n = 0;
  if (c.g) {
    for (size_t i = 0; i < nb; i++) {
      const uint32_t *members;
      size_t k = mp_model_buffer_tensors(m, i, &members);
      n += k ? k : 1;
    }
  } else {
    n = nb;
  }
  const mp_alloc *a = out->alloc;
  size_t nr = mp_plan_region_count(plan);
  size_t nt = c.g ? mp_graph_tensor_count(c.g) : 0;
  c.alloc = a;
  ch_entry *e = mp_calloc(a, n ? n : 1, sizeof *e);
  const char **rid = mp_calloc(a, nr + 1, sizeof *rid);
  c.align = mp_calloc(a, nr + 1, sizeof *c.align);
  uint32_t *tix = mp_calloc(a, nt + 1, sizeof *tix);
  mp_status st = e && rid && c.align && tix ? mp_strmap_create(a, &c.ids, err)
                                            : MP_ERR_NOMEM;
  if (st == MP_OK) st = mp_strmap_create(a, &c.bases, err);
  if (st == MP_OK) st = mp_strpool_create(a, &c.pool, err);
  if (st == MP_ERR_NOMEM) {
    mp_error_set(err, st, "%s: C header: out of memory", mp_model_path(m));
  }
  if (st == MP_OK) {
    for (size_t r = 0; r < nr; r++) c.align[r] = 1;
    ch_region_align(&c);
    ch_head(&c);
    st = ch_regions(&c, rid, err);
  }
  if (st == MP_OK) n = ch_entries(&c, e);
  for (size_t k = 0; st == MP_OK && k < n; k++) {
    e[k].id = ch_unique(&c, 'T', e[k].name, &st, err);
  }
  if (st == MP_OK) {
    for (size_t t = 0; t < nt; t++) tix[t] = UINT32_MAX;
    for (size_t k = 0; k < n; k++) {
      if (e[k].tensor >= 0) tix[e[k].tensor] = (uint32_t)k;
    }
    ch_tensor_macros(&c, e, n, rid);
    ch_tables(&c, e, n, rid);
    ch_steps(&c, tix);
    mp_buf_printf(out, "\n#endif /* MPLAN_%s_H */\n", c.up);
    st = mp_buf_status(out, "C header", err);
  }
  mp_free(a, tix);
  mp_strmap_destroy(c.ids);
  mp_strmap_destroy(c.bases);
  mp_strpool_destroy(c.pool);
  mp_free(a, c.next);
  mp_free(a, e);
  mp_free(a, rid);
  mp_free(a, c.align);
  return st;
}
