/*
 * memmap.c -- an ASCII memory map of the activation tier, in the spirit of
 * TFLite Micro's PrintMemoryPlan.
 *
 * One row per step (or per change of the live set when times are not
 * steps); the activation tier's address range is cut into equal columns;
 * a column shows the glyph of the buffer that occupies it, '+' when
 * several live buffers touch it, '.' when it is free. Each row ends with
 * the live bytes at that time and, when known, the op.
 *
 * Invariants:
 *   1. Glyphs follow the order of first use, so a reader sees 'A' first.
 *   2. Rows are visited in increasing time with an active list, so the map
 *      costs O(n log n + rows * live) rather than O(rows * n).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mplan/report.h"
#include "mplan/units.h"
#include "report_util.h"

static const char mm_glyphs[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
#define MM_NGLYPHS (sizeof mm_glyphs - 1)

typedef struct mm_key {
  int64_t first;
  size_t index;
} mm_key;

static int mm_key_cmp(const void *a, const void *b) {
  const mm_key *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

static int mm_time_cmp(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return (*x > *y) - (*x < *y);
}

typedef struct mm_ctx {
  const mp_model *m;
  const mp_problem *p;
  const mp_placement *pl;
  size_t base, range, cell, width;
  mm_key *order; /* activation buffers by first use */
  size_t n_act;
  char *glyph; /* per buffer */
  size_t *active;
  size_t n_active;
  char *row;
  mp_buf *out;
} mm_ctx;

/* Row times: every step of the span, or every time the live set changes. */
static size_t mm_rows(const mm_ctx *c, int64_t *times, size_t cap) {
  int64_t t0, t1;
  size_t n = 0;
  mp_problem_span(c->p, &t0, &t1);
  if (mp_model_format_of(c->m) != MP_FORMAT_MINIMALLOC) {
    for (int64_t t = t0; t <= t1 && n < cap; t++) times[n++] = t;
    return n;
  }
  for (size_t k = 0; k < c->n_act; k++) {
    const mp_buffer *b = mp_problem_buffer(c->p, c->order[k].index);
    times[n++] = b->first;
    if (b->last < t1) times[n++] = b->last + 1;
  }
  qsort(times, n, sizeof *times, mm_time_cmp);
  size_t u = 0;
  for (size_t k = 0; k < n; k++) {
    if (u == 0 || times[u - 1] != times[k]) times[u++] = times[k];
  }
  return u < cap ? u : cap;
}

/* A buffer owns the columns whose middle byte it covers; one too small to
 * cover any middle still shows in the column where it starts, so no live
 * buffer disappears from the map. '+' marks a column two buffers claim. */
static void mm_paint(mm_ctx *c, size_t i) {
  const mp_buffer *b = mp_problem_buffer(c->p, i);
  size_t lo = c->pl[i].offset - c->base, hi = lo + b->padded;
  size_t first = lo / c->cell, painted = 0;
  for (size_t k = first; k < c->width && k * c->cell < hi; k++) {
    size_t mid = k * c->cell + c->cell / 2;
    if (mid < lo || mid >= hi) continue;
    c->row[k] = c->row[k] == '.' ? c->glyph[i] : '+';
    painted++;
  }
  if (!painted && first < c->width) {
    c->row[first] = c->row[first] == '.' ? c->glyph[i] : '+';
  }
}

static void mm_row(mm_ctx *c, int64_t t, size_t *next) {
  size_t live = 0, kept = 0;
  while (*next < c->n_act && c->order[*next].first <= t) {
    c->active[c->n_active++] = c->order[(*next)++].index;
  }
  memset(c->row, '.', c->width);
  for (size_t k = 0; k < c->n_active; k++) {
    size_t i = c->active[k];
    const mp_buffer *b = mp_problem_buffer(c->p, i);
    if (b->last < t) continue;
    c->active[kept++] = i;
    if (b->first > t) continue;
    live += b->padded;
    mm_paint(c, i);
  }
  c->n_active = kept;
  char bytes[MP_FMT_MAX], op[160];
  report_step_op(c->m, t, op, sizeof op);
  mp_buf_printf(c->out, "%8" PRId64 " |", t);
  mp_buf_append(c->out, c->row, c->width);
  mp_buf_printf(c->out, "| %13s %s\n", mp_fmt_count(bytes, live), op);
}

static void mm_legend(mm_ctx *c) {
  size_t col = 0;
  for (size_t k = 0; k < c->n_act; k++) {
    size_t i = c->order[k].index;
    const char *name = mp_problem_buffer(c->p, i)->name;
    size_t len = strlen(name) + 4;
    if (col && col + len > 78) {
      mp_buf_puts(c->out, "\n");
      col = 0;
    }
    mp_buf_printf(c->out, "%s%c=%s", col ? "  " : "  ", c->glyph[i], name);
    col += len;
  }
  mp_buf_puts(c->out, "\n");
  if (c->n_act > MM_NGLYPHS) {
    mp_buf_printf(c->out,
                  "  (glyphs repeat every %zu buffers, in order of first "
                  "use)\n",
                  (size_t)MM_NGLYPHS);
  }
}

static void mm_header(mm_ctx *c, size_t rows, size_t all_rows) {
  char a[MP_FMT_MAX], b[MP_FMT_MAX], d[MP_FMT_MAX], e[MP_FMT_MAX];
  mp_buf_printf(c->out,
                "Memory map of the activation tier: offsets %s..%s (%s), "
                "one column = %s B\n",
                mp_fmt_count(a, c->base),
                mp_fmt_count(b, c->base + c->range - (c->range ? 1 : 0)),
                mp_fmt_bytes(d, c->range), mp_fmt_count(e, c->cell));
  mm_legend(c);
  mp_buf_printf(c->out, "%8s |", report_time_word(c->m));
  mp_buf_repeat(c->out, '-', c->width);
  mp_buf_printf(c->out, "| %13s %s\n", "live bytes", "op");
  if (rows < all_rows) {
    mp_buf_printf(c->out, "  (showing the first %zu of %zu rows)\n", rows,
                  all_rows);
  }
}

static mp_status mm_prepare(mm_ctx *c, const mp_alloc *a, size_t n) {
  c->order = mp_calloc(a, n ? n : 1, sizeof *c->order);
  c->glyph = mp_calloc(a, n ? n : 1, 1);
  c->active = mp_calloc(a, n ? n : 1, sizeof *c->active);
  c->row = mp_calloc(a, c->width, 1);
  if (!c->order || !c->glyph || !c->active || !c->row) return MP_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    const mp_buffer *b = mp_problem_buffer(c->p, i);
    if (b->cls != MP_CLASS_ACTIVATION) continue;
    c->order[c->n_act++] = (mm_key){b->first, i};
  }
  qsort(c->order, c->n_act, sizeof *c->order, mm_key_cmp);
  for (size_t k = 0; k < c->n_act; k++) {
    c->glyph[c->order[k].index] = mm_glyphs[k % MM_NGLYPHS];
  }
  return MP_OK;
}

mp_status mp_report_memmap(const mp_model *m, const mp_plan *plan,
                           const mp_report_opts *o, mp_buf *out,
                           mp_error *err) {
  const mp_problem *p = mp_plan_problem(plan);
  const mp_alloc *a = mp_problem_alloc(p);
  size_t n = mp_problem_count(p),
         max_rows = o && o->map_rows ? o->map_rows : 200;
  mm_ctx c = {.m = m, .p = p, .pl = mp_plan_placements(plan), .out = out};
  c.width = o && o->map_width ? o->map_width : 64;
  c.base = report_activation_base(plan);
  c.range = mp_plan_summary_of(plan)->arena_bytes - c.base;
  if (c.range && c.range < c.width) c.width = c.range;
  c.cell = c.range / c.width + (c.range % c.width != 0);
  if (c.cell == 0) c.cell = 1;
  size_t cap = 2 * n + 1 > max_rows ? 2 * n + 1 : max_rows;
  int64_t *times = mp_calloc(a, cap, sizeof *times);
  int64_t t0, t1;
  mp_problem_span(p, &t0, &t1);
  mp_status st = times ? mm_prepare(&c, a, n) : MP_ERR_NOMEM;
  if (st == MP_OK) {
    size_t all = mp_model_format_of(m) == MP_FORMAT_MINIMALLOC
                     ? mm_rows(&c, times, cap)
                     : (size_t)((uint64_t)t1 - (uint64_t)t0 + 1);
    size_t rows = mm_rows(&c, times, all < max_rows ? all : max_rows);
    size_t next = 0;
    mm_header(&c, rows, all);
    for (size_t r = 0; r < rows; r++) mm_row(&c, times[r], &next);
  }
  mp_free(a, c.row);
  mp_free(a, c.active);
  mp_free(a, c.glyph);
  mp_free(a, c.order);
  mp_free(a, times);
  if (st != MP_OK)
    return mp_error_set(err, MP_ERR_NOMEM, "memory map: out of memory");
  return mp_buf_status(out, "memory map", err);
}
