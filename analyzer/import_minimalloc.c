/*
 * import_minimalloc.c -- reader of MiniMalloc's CSV problem format.
 *
 *   id,lower,upper,size[,alignment][,offset]
 *
 * Columns are found by header name, in any order. A buffer lives on the
 * half-open interval [lower, upper) in this format; everywhere else in
 * mplan intervals are inclusive, so the edge conversion is done here, once:
 * first = lower, last = upper - 1. "offset" pins the buffer there.
 *
 * Invariants:
 *   1. Every row has exactly as many fields as the header.
 *   2. Every error names the file, the line and the column.
 *   3. upper > lower, size >= 1, alignment a power of two, offset >= 0.
 */
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "mplan/units.h"

enum { MM_ID, MM_LOWER, MM_UPPER, MM_SIZE, MM_ALIGN, MM_OFFSET, MM_NCOL };

static const char *const mm_names[MM_NCOL] = {"id",   "lower",     "upper",
                                              "size", "alignment", "offset"};

#define MM_MAX_FIELDS 16
#define MM_MAX_FIELD 256

typedef struct mm_ctx {
  const char *file;
  size_t line;
  int col_of[MM_NCOL]; /* field index of each column, -1 if absent */
  int n_fields;
  size_t min_align;
  mp_error *err;
} mm_ctx;

/* Splits one line (without its newline) into trimmed fields. */
static mp_status mm_split(mm_ctx *c, const char *s, size_t len,
                          char fields[MM_MAX_FIELDS][MM_MAX_FIELD], int *n) {
  size_t i = 0;
  *n = 0;
  for (;;) {
    size_t start = i;
    while (i < len && s[i] != ',') i++;
    size_t a = start, b = i;
    while (a < b && (s[a] == ' ' || s[a] == '\t')) a++;
    while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r'))
      b--;
    if (*n == MM_MAX_FIELDS) {
      return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                          "%s:%zu: more than %d fields", c->file, c->line,
                          MM_MAX_FIELDS);
    }
    if (b - a >= MM_MAX_FIELD) {
      return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                          "%s:%zu: field %d is longer than %d characters",
                          c->file, c->line, *n + 1, MM_MAX_FIELD - 1);
    }
    memcpy(fields[*n], s + a, b - a);
    fields[*n][b - a] = '\0';
    ++*n;
    if (i >= len) break;
    i++; /* skip ',' */
  }
  return MP_OK;
}

static mp_status mm_header(mm_ctx *c, char f[MM_MAX_FIELDS][MM_MAX_FIELD],
                           int n) {
  for (int k = 0; k < MM_NCOL; k++) c->col_of[k] = -1;
  for (int i = 0; i < n; i++) {
    int k = 0;
    while (k < MM_NCOL && strcmp(f[i], mm_names[k]) != 0) k++;
    if (k == MM_NCOL) {
      return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                          "%s:%zu: unknown column '%s' (known: id, lower, "
                          "upper, size, alignment, offset)",
                          c->file, c->line, f[i]);
    }
    if (c->col_of[k] >= 0) {
      return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                          "%s:%zu: column '%s' appears twice", c->file, c->line,
                          f[i]);
    }
    c->col_of[k] = i;
  }
  for (int k = 0; k <= MM_SIZE; k++) {
    if (c->col_of[k] < 0) {
      return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                          "%s:%zu: the header lacks column '%s' (need id, "
                          "lower, upper, size)",
                          c->file, c->line, mm_names[k]);
    }
  }
  c->n_fields = n;
  return MP_OK;
}

static mp_status mm_int(mm_ctx *c, char f[MM_MAX_FIELDS][MM_MAX_FIELD], int col,
                        int64_t *out) {
  if (!mp_parse_i64(f[c->col_of[col]], out)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s:%zu: column '%s': '%s' is not an integer", c->file,
                        c->line, mm_names[col], f[c->col_of[col]]);
  }
  return MP_OK;
}

static mp_status mm_row(mm_ctx *c, char f[MM_MAX_FIELDS][MM_MAX_FIELD], int n,
                        mp_problem *p) {
  int64_t lower, upper, size, align = 1, offset = -1;
  mp_status st = MP_OK;
  if (n != c->n_fields) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s:%zu: %d fields where the header has %d", c->file,
                        c->line, n, c->n_fields);
  }
  if (f[c->col_of[MM_ID]][0] == '\0') {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s:%zu: column 'id' is empty", c->file, c->line);
  }
  if (st == MP_OK) st = mm_int(c, f, MM_LOWER, &lower);
  if (st == MP_OK) st = mm_int(c, f, MM_UPPER, &upper);
  if (st == MP_OK) st = mm_int(c, f, MM_SIZE, &size);
  if (st == MP_OK && c->col_of[MM_ALIGN] >= 0)
    st = mm_int(c, f, MM_ALIGN, &align);
  if (st == MP_OK && c->col_of[MM_OFFSET] >= 0)
    st = mm_int(c, f, MM_OFFSET, &offset);
  if (st != MP_OK) return st;
  const char *id = f[c->col_of[MM_ID]];
  if (size <= 0) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s:%zu: buffer '%s': size is %lld; it must be >= 1",
                        c->file, c->line, id, (long long)size);
  }
  if (upper <= lower) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s:%zu: buffer '%s': upper %lld must be greater than "
                        "lower %lld (the interval [lower, upper) is "
                        "half-open)",
                        c->file, c->line, id, (long long)upper,
                        (long long)lower);
  }
  if (align <= 0 || !mp_is_pow2((size_t)align)) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s:%zu: buffer '%s': alignment %lld is not a power "
                        "of two",
                        c->file, c->line, id, (long long)align);
  }
  if (c->col_of[MM_OFFSET] >= 0 && offset < 0) {
    return mp_error_set(c->err, MP_ERR_BAD_INPUT,
                        "%s:%zu: buffer '%s': offset %lld is negative", c->file,
                        c->line, id, (long long)offset);
  }
  mp_buffer_desc d = {
      .name = id,
      .size = (size_t)size,
      .alignment = (size_t)align > c->min_align ? (size_t)align : c->min_align,
      .first = lower,
      .last = upper - 1,
      .cls = MP_CLASS_ACTIVATION,
      .pinned = offset >= 0,
      .pin = offset >= 0 ? (size_t)offset : 0,
  };
  st = mp_problem_add(p, &d, NULL, c->err);
  if (st != MP_OK) mp_error_prefix(c->err, "%s:%zu", c->file, c->line);
  return st;
}

mp_status mp_import_minimalloc(const char *file, const char *text, size_t len,
                               size_t min_align, const mp_alloc *a,
                               mp_problem **out, mp_error *err) {
  char fields[MM_MAX_FIELDS][MM_MAX_FIELD];
  mm_ctx c = {.file = file, .min_align = min_align ? min_align : 1, .err = err};
  mp_problem *p = NULL;
  mp_status st = mp_problem_create(a, file, &p, err);
  size_t pos = 0, rows = 0;
  bool header = false;
  while (st == MP_OK && pos < len) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    c.line++;
    size_t b = end;
    while (b > pos && (text[b - 1] == '\r' || text[b - 1] == ' ')) b--;
    if (b > pos) {
      int n;
      st = mm_split(&c, text + pos, b - pos, fields, &n);
      if (st == MP_OK && !header) {
        st = mm_header(&c, fields, n);
        header = true;
      } else if (st == MP_OK) {
        st = mm_row(&c, fields, n, p);
        rows++;
      }
    }
    pos = end + 1;
  }
  if (st == MP_OK && rows == 0) {
    st = mp_error_set(err, MP_ERR_BAD_INPUT, "%s: no buffers (%s)", file,
                      header ? "only a header" : "empty file");
  }
  if (st == MP_OK) st = mp_problem_seal(p, err);
  if (st != MP_OK) {
    mp_problem_destroy(p);
    return st;
  }
  *out = p;
  return MP_OK;
}
